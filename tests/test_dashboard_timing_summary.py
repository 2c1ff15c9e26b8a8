"""Timing page on a log that kept summary statistics only (Google Benchmark aggregates): each
measurement shown as the interval the tool reported, not "no timing logs"."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("dash")

from profaudit.dashboards.app import create_app  # noqa: E402
from profaudit.dashboards.pages import timing as timing_page  # noqa: E402

CONTEXT = {"date": "2024-01-01T00:00:00", "host_name": "h", "executable": "./b", "num_cpus": 8, "mhz_per_cpu": 3000, "cpu_scaling_enabled": False, "caches": [], "library_build_type": "release"}


def _agg(stat: str, real: float, cpu: float) -> dict:
    return {"name": f"BM_copy/1024_{stat}", "family_index": 0, "per_family_instance_index": 0, "run_name": "BM_copy/1024", "run_type": "aggregate",
            "repetitions": 5, "threads": 1, "aggregate_name": stat, "aggregate_unit": "time", "iterations": 5, "real_time": real, "cpu_time": cpu, "time_unit": "ns"}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    d = tmp_path_factory.mktemp("gb")
    (d / "agg.json").write_text(json.dumps({"context": CONTEXT, "benchmarks": [_agg("mean", 1200.0, 1190.0), _agg("median", 1180.0, 1170.0), _agg("stddev", 50.0, 40.0)]}))
    return create_app([str(d / "agg.json")], upload_dir=tmp_path_factory.mktemp("up") / "u", max_upload_bytes=1000)


def test_summary_only_log_is_shown_as_intervals(app):
    with app.server.test_request_context():
        st = app._profaudit_state
        opts = timing_page.cases(timing_page.samples_of(st, "samples"))
        assert len(opts) == 1 and "summary only (6 statistics)" in opts[0]["label"] and "1 profile" in opts[0]["label"]
        fig, violin, ecdf, stats, msg = timing_page.update("samples", opts[0]["value"])
    assert msg == ""
    trace = fig["data"][0]
    # mean ± stdev of wall time (host) and of CPU time (host_cpu), in µs on the axis
    got = dict(zip(trace["y"], zip(trace["x"], trace["error_x"]["arrayminus"], trace["error_x"]["array"])))
    assert got["host"] == pytest.approx((1.2, 0.05, 0.05)) and got["host_cpu"] == pytest.approx((1.19, 0.04, 0.04))
    text = str(stats)
    assert "mean 1.20 µs" in text and "1.15 µs – 1.25 µs" in text and "not a confidence interval" in text
    assert "summary statistics only" in text
