"""Cross-check of the whole-trace temporal breakdown and the communication overlap against Holistic
Trace Analysis on the same synthetic traces: with times on whole microseconds (which HTA's reader
keeps as they are) the numbers must be equal; with nanosecond times HTA shrinks every event to
whole microseconds unless HTA_DISABLE_NS_ROUNDING=1, and with that set they must agree to float
precision. Skips when HTA is not installed or cannot run with the installed pandas (HTA 0.5 fails
on pandas 3: it writes int64 indices into an int8 column)."""

from __future__ import annotations

import logging
import os

import polars as pl
import pytest

from profaudit.ranks import load_run

from ranks_synth import make_run, write_run


@pytest.fixture(scope="module", params=["whole_us", "ns"])
def both(request, tmp_path_factory):
    pytest.importorskip("hta")
    from hta.trace_analysis import TraceAnalysis

    whole = request.param == "whole_us"
    docs, _ = make_run(world_size=4, steps=3, ranks_per_host=2, late_rank=2, whole_us=whole, seed=11)
    folder = tmp_path_factory.mktemp(f"hta_run_{request.param}")
    write_run(folder, docs)
    logging.disable(logging.WARNING)
    old = os.environ.get("HTA_DISABLE_NS_ROUNDING")
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "0" if whole else "1"
    try:
        ta = TraceAnalysis(trace_dir=str(folder), include_last_profiler_step=True)
        breakdown = ta.get_temporal_breakdown(visualize=False)
        overlap = ta.get_comm_comp_overlap(visualize=False)
    except (TypeError, ValueError) as exc:
        pytest.skip(f"holistictraceanalysis cannot run with this pandas: {type(exc).__name__}: {str(exc)[:120]}")
    finally:
        logging.disable(logging.NOTSET)
        if old is None:
            os.environ.pop("HTA_DISABLE_NS_ROUNDING", None)
        else:
            os.environ["HTA_DISABLE_NS_ROUNDING"] = old
    ours = load_run(folder, parallel=False).step_breakdown.filter(pl.col("step").is_null()).sort("rank")
    # equal on whole microseconds; HTA's float microseconds of epoch times carry ~1e-4 us of rounding otherwise
    tol = 0.0 if whole else 1e-3
    return ours, breakdown.sort_values("rank"), overlap.sort_values("rank"), tol


def _us(series: pl.Series) -> list[float]:
    return (series / 1000).to_list()


def test_temporal_breakdown_equals_hta(both):
    ours, hta, _, tol = both
    assert ours["rank"].to_list() == hta["rank"].tolist()
    assert _us(ours["window_ns"]) == pytest.approx(hta["kernel_time(us)"].tolist(), abs=tol)
    assert _us(ours["idle_ns"]) == pytest.approx(hta["idle_time(us)"].tolist(), abs=tol)
    assert _us(ours["compute_ns"]) == pytest.approx(hta["compute_time(us)"].tolist(), abs=tol)
    non_compute = ours["exposed_communication_ns"] + ours["exposed_memory_ns"]
    assert _us(non_compute) == pytest.approx(hta["non_compute_time(us)"].tolist(), abs=tol)


def test_comm_overlap_equals_hta(both):
    ours, _, hta, _ = both
    assert [round(v, 2) for v in ours["overlap_pct"].to_list()] == hta["comp_comm_overlap_pctg"].tolist()
