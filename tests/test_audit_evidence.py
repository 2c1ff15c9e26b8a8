"""The audit judges from the evidence (issue 11): the supported speedup after an invalidating
finding, verdict semantics (coverage, assumptions, equivalence), and inferences read from nsys
SQLite exports and Kineto traces. Every inference has a fixture where it fires and a fair twin
where it stays silent."""

from __future__ import annotations

import json

import numpy as np
import pytest

from audit_fixtures import claim, side
from audit_traces import calls, kineto_json, load, nsys_sqlite
from profaudit.audit import Severity, Status, audit
from profaudit.audit.render import render

FORMATS = {"nsys": (nsys_sqlite, "sqlite"), "kineto": (kineto_json, "pt.trace.json")}


def traced(tmp_path, role, timed_ns, cs, *, fmt="nsys", meta=None, seed=1, n=60, **kw):
    """A side timed at `timed_ns` per call whose attached trace holds the calls `cs`."""
    write, ext = FORMATS[fmt]
    path = write(tmp_path / f"{role}.{ext}", cs)
    m = {"timed_range": "call", "profiled_calls": len(cs)}
    m.update(meta or {})
    return side(role, timed_ns, seed=seed, n=n, runs=1, meta=m, profiles=load(path), **kw)


def tclaim(b, c, **kw):
    """A claim without the softmax fixture's 1 GB workload (these kernels take ~100 us)."""
    return claim(b, c, workload={}, **kw)


def triggered(report, code):
    return [f for f in report.findings if f.rule == code and f.status is Status.FAIL and f.severity > Severity.INFO]


BASE_CALLS = [("softmax_kernel", 7, 100_000, 0)]


# ---------------------------------------------------------------------------------------------
# the supported speedup after an invalidating finding
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["nsys", "kineto"])
def test_work_escaping_the_timer_is_corrected_to_the_traced_gpu_time(tmp_path, fmt):
    # The candidate's events time its 30 us kernel; a helper thread launches 50 us of work on
    # stream 14 that overlaps it. The call costs the union, 50.3 us, not 30 us (nor 80 us).
    b = traced(tmp_path, "baseline", 100_000, calls(20, BASE_CALLS), fmt=fmt)
    c = traced(tmp_path, "candidate", 30_000, calls(20, [("fused_kernel", 7, 30_000, 0)], helper=[("helper_kernel", 14, 50_000)]), fmt=fmt, seed=2)
    report = audit(tclaim(b, c, speedup=3.33))
    assert report.verdict == "FAIL"
    assert triggered(report, "PA105") and triggered(report, "PA105")[0].side == "candidate"
    sup = report.supported
    assert sup.status == "corrected" and "PA105" in sup.corrected_by
    assert any("union of kernel intervals" in c for c in sup.corrected_by)
    assert sup.interval.estimate == pytest.approx(100_000 / 50_300, rel=0.01)
    d = report.as_dict()["supported_speedup"]
    assert d["status"] == "corrected" and any(e.startswith("PA105: per-call GPU time") for e in d["corrected_by"])
    for fmt_ in ("text", "markdown", "html"):
        out = render(report, fmt_)
        assert "corrected by PA105" in out and "3.33" not in out.split("supported speedup", 1)[-1].split("\n", 1)[0].lower()


def test_overlapping_streams_timed_by_their_span_are_fair(tmp_path):
    # Fair twin: the same 30 us + 50 us kernels overlap on two streams and the timer reads their
    # span (50.5 us): the kernel sum (80 us) is not the floor, and nothing is corrected.
    b = traced(tmp_path, "baseline", 100_000, calls(20, BASE_CALLS))
    c = traced(tmp_path, "candidate", 50_500, calls(20, [("fused_kernel", 7, 30_000, 0), ("side_kernel", 14, 50_000, -30_000)]), seed=2)
    report = audit(tclaim(b, c, speedup=1.98))
    assert not triggered(report, "PA105") and not triggered(report, "PA107")
    assert report.verdict == "PASS", report.reasons
    assert report.supported.status == "recomputed" and not report.supported.corrected_by


def test_invalid_timing_without_a_trace_is_not_supported():
    host = {"time_source": "perf_counter", "synchronized": False}
    b = side("baseline", 1.0e6, seed=1, meta=host, profiles=None)
    c = side("candidate", 0.015e6, seed=2, meta=host, profiles=None)
    report = audit(claim(b, c, speedup=66.0))
    assert report.verdict == "FAIL" and triggered(report, "PA103")
    sup = report.supported
    assert sup.status == "not supported" and sup.interval is None and "PA103" in sup.reason
    d = json.loads(render(report, "json"))["supported_speedup"]
    assert d["status"] == "not supported" and d["estimate"] is None and d["supported"] is False
    for fmt_ in ("text", "markdown", "html"):
        line = render(report, fmt_).split("upported speedup", 1)[1].split("\n", 1)[0].split("<br>", 1)[0].split("</p>", 1)[0]
        assert "not supported" in line and "66" not in line


def test_non_comparable_sides_state_no_speedup():
    b = side("baseline", 1.0e6, seed=1)
    c = side("candidate", 0.5e6, seed=2, meta={"dtype": "fp8"})
    report = audit(claim(b, c))
    assert report.supported.status == "not supported" and not report.supported.comparable
    assert "PA301" in report.supported.reason


@pytest.mark.parametrize("rule", ["PA101", "PA403", "PA204", "PA404", "PA407"])
def test_every_correcting_rule_names_its_correction(rule):
    # Each rule that vouches for a corrected interval says how it was corrected.
    from profaudit.audit.rules import BY_CODE

    src = __import__(type(BY_CODE[rule]).__module__, fromlist=["x"])
    text = open(src.__file__).read()
    assert text.count("correction=") == text.count("correction_note=") > 0


def test_fail_never_leaves_the_raw_ratio_supported(tmp_path):
    # A FAIL finding (cached results: under one launch per call) with no correction: the raw
    # ratio must not stand as the supported speedup.
    b = side("baseline", 1.0e6, seed=1, meta={"kernels_per_call": 1})
    c = side("candidate", 0.02e6, seed=2, meta={"kernels_per_call": 0.1})
    report = audit(claim(b, c, speedup=50))
    assert report.verdict == "FAIL" and triggered(report, "PA305")
    assert report.supported.status == "not supported" and "PA305" in report.supported.reason
