"""Notebook displays (short repr, _repr_html_), py.typed, and the entry points as functions."""

from __future__ import annotations

import ast
import html
import inspect
import re
from pathlib import Path

import polars as pl
import pytest

import profaudit
from profaudit.fmt import fmt_interval, fmt_x
from profaudit.profile import Profile, ProfileSet

REPO = Path(__file__).resolve().parents[1]


def _big_profile(pid="run<1>"):
    from tests.test_compare import profile

    return profile(pid, [("gemm<float>", 2_000, 10_000), ("relu", 2_000, 1_000)], noise=0)


def test_profile_repr_is_one_short_line():
    p = _big_profile()
    r = repr(p)
    assert "\n" not in r and len(r) < 300
    assert r.startswith("Profile('run<1>': nsys/nsys, NVIDIA H100 80GB HBM3; kernels 4,000")
    h = p._repr_html_()
    assert "kernels" in h and "4,000" in h and "run&lt;1&gt;" in h and "<script" not in h
    assert len(h) < 5_000


def test_profileset_html_lists_profiles_devices_and_counts():
    ps = ProfileSet([_big_profile("a"), _big_profile("b")], skipped=[("bad.bin", "not a profile")])
    h = ps._repr_html_()
    assert h.count("<tr>") >= 3 and "NVIDIA H100 80GB HBM3" in h
    assert "all profiles: kernels 8,000" in h and "1 input skipped" in h
    assert repr(ps) == "ProfileSet(2 profiles: a, b)"


def test_comparison_and_audit_reports(tmp_path):
    from tests.test_compare_headline import gbench

    gbench(tmp_path / "b.json", {"BM_a": 2_000, "BM_b": 1_000}, seed=1)
    gbench(tmp_path / "c.json", {"BM_a": 1_000, "BM_b": 1_000}, seed=2)
    cmp = profaudit.compare(tmp_path / "b.json", tmp_path / "c.json")
    h = cmp._repr_html_()
    assert html.escape(cmp.verdict) in h and "Totals" not in h  # sections as tables, not the full report
    assert "BM_a" in h and "sum of case medians" in h
    assert repr(cmp).startswith("Comparison(samples: 2 matched, 0 added, 0 removed")

    from tests.test_compare_gate import _bench_logs

    src = _bench_logs(tmp_path / "logs", 1_300, 1_000)
    rep = profaudit.audit(baseline=str(src / "base.jsonl"), candidate=str(src / "fast.jsonl"), claimed=1.3)
    r = repr(rep)
    assert "\n" not in r and len(r) < 400 and r.startswith(f"AuditReport({rep.verdict}: claimed 1.30x, supported ")
    iv = rep.supported.interval
    assert f"{fmt_x(iv.estimate)} {fmt_interval(iv.low, iv.high)} (95% CI" in r  # printed as compare and the CLI print it
    h = rep._repr_html_()
    assert f"pa-{rep.verdict}" in h and html.escape(rep.reasons[0] if rep.reasons else "no finding triggered") in h
    for f in rep.problems[:10]:
        assert html.escape(f.message) in h


def test_roofline_frame_is_a_polars_frame_with_a_summary():
    from profaudit.notebook import RooflineFrame

    k = pl.DataFrame({"name": ["k1", "k2"], "duration_ns": [1e6, 2e6], "flops_fp32": [1e9, 2e9], "dram_bytes": [1e8, 1e9], "device_name": ["NVIDIA H100 80GB HBM3"] * 2})
    rf = profaudit.roofline(k)
    assert isinstance(rf, pl.DataFrame) and isinstance(rf, RooflineFrame)
    bound = rf["bound_at_boost"].to_list()
    r = repr(rf)
    assert r.startswith("<roofline: 2 kernel rows on h100-sxm") and "bound at boost:" in r
    for b in set(bound):
        assert f"{b or 'not placed'} {bound.count(b)}" in r
    assert str(rf) == pl.DataFrame.__str__(rf) and str(rf).startswith("shape: (2, ")  # print shows the table
    h = rf._repr_html_()
    assert "roof_pct_at_boost" in h and "k1" in h
    # cells as `profaudit roofline` prints them: ns exact, rates with an SI prefix, percentages with %
    pct = rf["roof_pct_at_boost"][1]
    assert "<td>2,000,000</td>" in h and "<td>1.00 TFLOP/s</td>" in h and f"<td>{pct:.1f}%</td>" in h


def test_py_typed_is_shipped():
    import tomllib

    assert (REPO / "profaudit" / "py.typed").is_file()
    doc = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "py.typed" in doc["tool"]["setuptools"]["package-data"]["profaudit"]


def test_type_checkers_see_the_entry_points_as_functions():
    tree = ast.parse((REPO / "profaudit" / "__init__.py").read_text())
    guarded = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom):
                    for a in imp.names:
                        guarded[a.asname or a.name] = (imp.module, a.name)
    assert set(guarded) == {"audit", "compare", "roofline"}
    import importlib

    for name, (mod, attr) in guarded.items():
        fn = getattr(importlib.import_module(mod), attr)
        assert inspect.isfunction(fn)
        # at run time the callable module introspects as that function
        assert inspect.signature(getattr(profaudit, name)) == inspect.signature(fn)
    # and the modules stay modules
    rules = importlib.import_module("profaudit.audit.rules")
    assert profaudit.audit.rules is rules and profaudit.compare.match.MATCH_MODES


def test_roofline_still_compares_equal_to_a_plain_frame():
    from polars.testing import assert_frame_equal

    k = pl.DataFrame({"name": ["k1"], "duration_ns": [1e6], "flops_fp32": [1e9], "dram_bytes": [1e8], "device_name": ["NVIDIA H100 80GB HBM3"]})
    rf = profaudit.roofline(k)
    assert_frame_equal(rf, pl.DataFrame(rf.to_dict(as_series=True)))
    assert re.match(r"^shape: \(1, \d+\)", str(rf))
