"""The compare headline: totals and every speedup over matched cases only; one-sided cases apart.

Google Benchmark pairs are written here in the library's JSON layout (repetitions as iteration
runs) with partly different benchmark sets; the expected numbers are computed from the written
values, not from profaudit.
"""

from __future__ import annotations

import json
import math
import statistics

import numpy as np
import pytest

from profaudit.compare import compare
from tests.conftest import corpus_file


def gbench(path, cases, *, seed=0, reps=8):
    """cases: {name: real_time_ns}; every case gets `reps` repetitions with 1 % noise."""
    rng = np.random.default_rng(seed)
    rows, times = [], {}
    for fam, (name, t) in enumerate(cases.items()):
        vals = [float(round(t * (1 + 0.01 * rng.standard_normal()), 3)) for _ in range(reps)]
        times[name] = vals
        for i, v in enumerate(vals):
            rows.append({
                "name": name, "family_index": fam, "per_family_instance_index": 0, "run_name": name, "run_type": "iteration",
                "repetitions": reps, "repetition_index": i, "threads": 1, "iterations": 1000,
                "real_time": v, "cpu_time": v, "time_unit": "ns",
            })
    doc = {"context": {"date": "2026-01-01T00:00:00", "host_name": "ci", "num_cpus": 8, "mhz_per_cpu": 3000,
                       "cpu_scaling_enabled": False, "library_build_type": "release"}, "benchmarks": rows}
    path.write_text(json.dumps(doc))
    return times


def med(times, names):
    return sum(statistics.median(times[n]) for n in names)


@pytest.fixture
def partly_different(tmp_path):
    # two cases on both sides, two large candidate-only cases: the old Totals summed 2 against 4
    b = gbench(tmp_path / "run0.json", {"BM_copy/64": 1_000, "BM_copy/512": 8_000}, seed=1)
    c = gbench(tmp_path / "run1.json", {"BM_copy/64": 500, "BM_copy/512": 4_000, "BM_fill/64": 90_000, "BM_fill/512": 700_000}, seed=2)
    return tmp_path / "run0.json", tmp_path / "run1.json", b, c


def test_totals_and_speedups_over_matched_cases_only(partly_different):
    pb, pc, b, c = partly_different
    cmp = compare(pb, pc)
    t = cmp.totals
    both = ["BM_copy/64", "BM_copy/512"]
    assert t["matched_cases"] == 2
    assert t["baseline"]["time_ns"] == pytest.approx(med(b, both))
    assert t["candidate"]["time_ns"] == pytest.approx(med(c, both))
    assert t["time_speedup"] == pytest.approx(med(b, both) / med(c, both))
    assert t["time_diff_ns"] == pytest.approx(med(c, both) - med(b, both))
    geo = math.exp(sum(math.log(statistics.median(b[n]) / statistics.median(c[n])) for n in both) / 2)
    assert t["geomean_speedup"] == pytest.approx(geo)
    assert 1.9 < t["time_speedup"] < 2.1  # the whole-set ratio would have been about 0.01x
    # the one-sided cases are listed apart with their own sums
    assert t["added"] == {"cases": 2, "time_ns": pytest.approx(med(c, ["BM_fill/64", "BM_fill/512"]))}
    assert t["removed"] == {"cases": 0, "time_ns": 0.0}
    assert cmp.added["benchmark"].to_list() == ["BM_fill", "BM_fill"] and cmp.added.height == 2
    assert t["baseline"]["cases"] == 2 and t["candidate"]["cases"] == 4
    # where the time went explains the matched difference, 100 % of it
    assert cmp.contributions["kind"].to_list() == ["matched", "matched"]
    assert cmp.contributions["diff_ns"].sum() == pytest.approx(t["time_diff_ns"])
    assert cmp.contributions["share_pct"].sum() == pytest.approx(100.0)
    assert cmp.verdict.startswith("candidate faster")


def test_rendered_headline_names_matched_and_one_sided_sums(partly_different):
    pb, pc, b, c = partly_different
    cmp = compare(pb, pc)
    md = cmp.render("markdown")
    assert "## Totals (matched cases only)" in md
    row = next(line for line in md.splitlines() if line.startswith("| added cases (candidate only)"))
    from profaudit.compare.render import fmt_ns

    assert f"| 2: {fmt_ns(med(c, ['BM_fill/64', 'BM_fill/512']))} |" in row
    assert "| 2: 787 µs |" in row  # about 90 µs + 700 µs (1 % noise)
    speed = next(line for line in md.splitlines() if line.startswith("| sum of case medians"))
    assert speed.rstrip(" |").endswith(f"{cmp.totals['time_speedup']:#.3g}x")


def test_json_carries_a_version_marker_and_matched_totals(partly_different):
    pb, pc, _, _ = partly_different
    cmp = compare(pb, pc)
    d = json.loads(cmp.render("json"))
    assert d["profaudit_comparison"] == 3
    assert d["totals"]["time_speedup"] == pytest.approx(cmp.totals["time_speedup"])
    assert d["totals"]["added"]["cases"] == 2 and d["totals"]["removed"]["cases"] == 0


def test_no_matched_case_has_no_speedup_headline(tmp_path):
    gbench(tmp_path / "a.json", {"BM_sort/1024": 2_000_000_000}, seed=1)
    gbench(tmp_path / "b.json", {"BM_hash/8": 17}, seed=2)
    cmp = compare(tmp_path / "a.json", tmp_path / "b.json")
    t = cmp.totals
    assert t["matched_cases"] == 0
    assert t["time_speedup"] is None and t["geomean_speedup"] is None and t["time_diff_ns"] is None
    assert t["removed"]["cases"] == 1 and t["added"]["cases"] == 1
    assert cmp.verdict.startswith("nothing comparable")
    for fmt in ("markdown", "table"):
        out = cmp.render(fmt)
        assert "nothing comparable" in out
        assert "e+08x" not in out and "1.18e+08" not in out
    assert json.loads(cmp.render("json"))["totals"]["time_speedup"] is None


@pytest.mark.corpus
def test_google_benchmark_fixtures_without_a_common_case():
    """google/benchmark's own compare.py fixtures: 14 cases against 2 others once gave 1.41e+08x."""
    a = corpus_file("google-benchmark", "test1_run1")
    b = corpus_file("google-benchmark", "test3_run0")
    cmp = compare(a, b)
    assert cmp.matched.height == 0 and cmp.totals["time_speedup"] is None
    # the complexity aggregates (BigO, RMS) are not times
    raw_a = [r for r in json.loads(a.read_text())["benchmarks"] if r.get("run_type") != "aggregate"]
    assert cmp.totals["removed"]["cases"] == len({r["name"] for r in raw_a})
    assert "1.41e+08x" not in cmp.render("table")


def test_kernel_profiles_without_a_common_kernel_state_no_speedup():
    from tests.test_compare import profile

    cmp = compare(profile("b", [("alpha", 10, 1_000)]), profile("c", [("beta", 10, 50)]))
    t = cmp.totals
    assert t["gpu_time_speedup"] is None and t["wall_time_speedup"] is None and t["matched_gpu_time_speedup"] is None
    assert t["removed"] == {"kernels": 1, "launches": 10, "gpu_time_ns": pytest.approx(10_000)}
    assert t["added"] == {"kernels": 1, "launches": 10, "gpu_time_ns": pytest.approx(500)}
    assert cmp.verdict.startswith("nothing comparable")
    assert "nothing comparable" in cmp.render("markdown")


def test_kernel_profiles_state_the_matched_kernels_speedup_apart():
    from tests.test_compare import profile

    b = profile("b", [("gemm", 20, 10_000), ("old", 5, 1_000)], noise=0)
    c = profile("c", [("gemm", 20, 5_000), ("new", 5, 40_000)], noise=0)
    t = compare(b, c).totals
    assert t["matched_gpu_time_baseline_ns"] == pytest.approx(200_000)
    assert t["matched_gpu_time_candidate_ns"] == pytest.approx(100_000)
    assert t["matched_gpu_time_speedup"] == pytest.approx(2.0)
    # the whole-program time still counts the new kernel (a fused kernel replaces others)
    assert t["gpu_time_speedup"] == pytest.approx(205_000 / 300_000)
