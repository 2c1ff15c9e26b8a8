"""FAIRNESS P6 from a size sweep: a median time that stays flat while the work grows >= 10x points at
a timer that stops at the launch (PA103). Claims over CSV sweeps written here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from profaudit import schema
from profaudit.audit import audit, load_claim
from profaudit.samples import params_medians

SIZES = [1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24]


def sweep_csv(path: Path, per_size_us, *, seed: int, n: int = 40, extra_cols: str = "", extra_vals: str = "") -> Path:
    rng = np.random.default_rng(seed)
    lines = ["kernel,n,dtype,time_us" + extra_cols]
    for size in SIZES:
        for t in rng.normal(per_size_us(size), per_size_us(size) * 0.02, n):
            lines.append(f"add,{size},fp32,{t:.4f}{extra_vals}")
    path.write_text("\n".join(lines) + "\n")
    return path


def flat(size):
    return 9.5  # enqueue time: the same at every size


def real(size):
    return 4.0 + size * 12 / 3.35e6  # launch + 12 bytes per element at 3.35 TB/s, in us


def claim(tmp: Path, base_fn, cand_fn, *, meta: str = "") -> Path:
    sweep_csv(tmp / "base.csv", base_fn, seed=1)
    sweep_csv(tmp / "cand.csv", cand_fn, seed=2)
    p = tmp / "claim.yaml"
    p.write_text(
        f"""speedup: 1.2
statistic: median
baseline: {{timings: base.csv, params: {{n: {SIZES[-1]}}}{meta}}}
candidate: {{timings: cand.csv, params: {{n: {SIZES[-1]}}}{meta}}}
"""
    )
    return p


def pa103(path: Path):
    rep = audit(load_claim(path))
    return [f for f in rep.findings if f.rule == "PA103"]


def test_flat_sweep_with_unknown_timer_warns_on_that_side(tmp_path):
    fs = pa103(claim(tmp_path, real, flat))
    assert len(fs) == 1, fs
    f = fs[0]
    assert f.severity.label == "warn" and f.side == "candidate"
    sw = f.evidence["sweep"]
    assert sw["flat"] and sw["size_parameters"] == ["n"] and sw["work_growth"] == pytest.approx(256.0)
    assert sw["parameter_sets"] == 5 and sw["time_cv"] < 0.05
    assert "grows 256x over 5 parameter sets" in f.message and "launch-bound" in f.message


def test_growing_sweep_is_not_flagged(tmp_path):
    fs = pa103(claim(tmp_path, real, real))
    assert len(fs) == 1 and fs[0].status.value == "unknown"  # nothing says how the times were taken
    # the sweep is there and not flat
    from profaudit.audit.rules.pa103_unsynchronized_host_timer import RULE
    from profaudit.audit.evidence import gather

    ev = gather(load_claim(tmp_path / "claim.yaml"))
    info = RULE.flat_sweep(ev.baseline)
    assert info is not None and not info["flat"] and info["time_spread"] > 10


def test_flat_sweep_under_a_device_timer_or_a_synchronised_host_timer_is_not_p6(tmp_path):
    for meta in (", meta: {time_source: cuda_events}", ", meta: {time_source: host, synchronized: true}"):
        fs = pa103(claim(tmp_path, flat, flat, meta=meta))
        assert [f.status.value for f in fs] == ["pass"], (meta, [f.message for f in fs])


def test_flat_sweep_with_unsynchronised_host_timer_fails_and_says_both(tmp_path):
    fs = pa103(claim(tmp_path, flat, real, meta=", meta: {time_source: host, synchronized: false}"))
    bad = [f for f in fs if f.side == "baseline"]
    assert len(bad) == 1 and bad[0].severity.label == "fail"
    assert "without synchronising" in bad[0].message and "256x" in bad[0].message


def test_params_medians_takes_the_right_rows():
    rows = []
    for size, t in ((1024, 100.0), (4096, 300.0)):
        p = json.dumps({"n": size}, separators=(",", ":"))
        rows += [dict(benchmark="k", variant="a", params=p, duration_ns=v, statistic=None, phase="measure", time_source="host") for v in (t, t + 2, t + 4)]
        rows.append(dict(benchmark="k", variant="a", params=p, duration_ns=t * 50, statistic=None, phase="warmup", time_source="host"))
        rows.append(dict(benchmark="k", variant="b", params=p, duration_ns=1.0, statistic=None, phase="measure", time_source="host"))
    # a summary-only parameter set: the median row wins over the mean row
    p = json.dumps({"n": 65536}, separators=(",", ":"))
    rows.append(dict(benchmark="k", variant="a", params=p, duration_ns=999.0, statistic="mean", phase=None, time_source="host"))
    rows.append(dict(benchmark="k", variant="a", params=p, duration_ns=900.0, statistic="median", phase=None, time_source="host"))
    df = schema.conform("samples", pl.DataFrame(rows, schema_overrides={"statistic": pl.Utf8, "phase": pl.Utf8}), "sweep")
    like = df.filter((pl.col("variant") == "a") & (pl.col("params") == '{"n":1024}'))
    out = params_medians(df, like)
    got = dict(zip(out["params"].to_list(), out["median_ns"].to_list()))
    assert got == {'{"n":1024}': 102.0, '{"n":4096}': 302.0, '{"n":65536}': 900.0}
    assert params_medians(df.filter(pl.col("params") == '{"n":1024}'), like) is None
