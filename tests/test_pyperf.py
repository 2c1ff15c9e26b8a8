"""pyperf JSON: files written by pyperf itself (its Run/Benchmark/BenchmarkSuite writer) and read
back by pyperf's own loader as the independent reader; a hand-built file to the documented layout
where pyperf is absent; bad input in one line."""

from __future__ import annotations

import gzip
import json

import polars as pl
import pytest

from conftest import assert_one_line_error
from profaudit.loader import load
from profaudit.parsers import find_parser

CPU_CONFIG = "0-3=driver:intel_pstate, intel_pstate:no turbo, governor:performance, isolated; 4-7=driver:intel_pstate, intel_pstate:no turbo, governor:performance; idle:intel_idle"


def _suite_file(tmp_path, name="bench.json"):
    pyperf = pytest.importorskip("pyperf")
    common = {"hostname": "bench-host", "cpu_config": CPU_CONFIG, "cpu_affinity": "0-3", "perf_version": "2.11.0", "timer": "clock_gettime(CLOCK_MONOTONIC), resolution: 1.00 ns"}

    def run(name, values, warmups, loops, date, inner=None):
        md = {"name": name, "loops": loops, "date": date, **common}
        if inner:
            md["inner_loops"] = inner
        return pyperf.Run(values, warmups=warmups, metadata=md, collect_metadata=False)

    calib = pyperf.Run([], warmups=[(1, 4e-6), (2, 3e-6), (4, 2.6e-6)], metadata={"name": "sort", "calibrate_loops": 4, **common}, collect_metadata=False)
    sort = pyperf.Benchmark([calib,
                             run("sort", [2.5e-6, 2.45e-6, 2.52e-6], [(4, 2.9e-6)], 4, "2024-05-01 10:00:01"),
                             run("sort", [2.41e-6, 2.47e-6, 2.5e-6], [(4, 2.7e-6)], 4, "2024-05-01 10:00:02")])
    inner = pyperf.Benchmark([run("unrolled", [1.25e-7, 1.3e-7], [(16, 1.5e-7)], 16, "2024-05-01 10:00:03", inner=10),
                              run("unrolled", [1.22e-7, 1.28e-7], [(16, 1.4e-7)], 16, "2024-05-01 10:00:04", inner=10)])
    mem = pyperf.Benchmark([pyperf.Run([1048576], metadata={"name": "rss", "unit": "byte", "loops": 1, **common}, collect_metadata=False)])
    p = tmp_path / name
    pyperf.BenchmarkSuite([sort, inner, mem]).dump(str(p))
    return p


def test_pyperf_written_file_matches_pyperf_reader(tmp_path):
    pyperf = pytest.importorskip("pyperf")
    p = _suite_file(tmp_path)
    assert find_parser(p).name == "pyperf"
    ps = load(p)
    s, md = ps.samples, next(iter(ps)).metadata
    suite = pyperf.BenchmarkSuite.load(str(p))
    for b in suite.get_benchmarks():
        rows = s.filter(pl.col("benchmark") == b.get_name())
        if b.get_unit() != "second":
            assert rows.height == 0
            continue
        for ri, r in enumerate(b.get_runs()):
            meas = rows.filter((pl.col("run") == ri) & (pl.col("phase") == "measure")).sort("iteration")
            assert meas["duration_ns"].to_list() == pytest.approx([v * 1e9 for v in r.values], rel=1e-12)
            if r.values:
                assert meas["calls_per_sample"].unique().to_list() == [r.get_total_loops()]
            warm = rows.filter((pl.col("run") == ri) & (pl.col("phase") == "warmup")).sort("iteration")
            assert warm["duration_ns"].to_list() == pytest.approx([v * 1e9 for _, v in r.warmups], rel=1e-12)
            assert warm["calls_per_sample"].to_list() == [loops * r.get_inner_loops() for loops, _ in r.warmups]
        # pyperf's own mean of the values equals the mean of the measure rows
        allm = rows.filter(pl.col("phase") == "measure")["duration_ns"]
        assert allm.mean() == pytest.approx(b.mean() * 1e9, rel=1e-12)
    assert s["time_source"].unique().to_list() == ["host"] and s["statistic"].null_count() == s.height
    # metadata mapped to the audit's keys
    assert md["host"] == "bench-host" and md["host_governor"] == "performance" and md["cpu_turbo"] is False
    assert md["cpu_affinity"] == "0-3" and md["isolated_cpus"] == "0-3" and md["tool"] == "pyperf"
    assert md["non_time_benchmarks"] == {"rss": "byte"} and md["calibration_runs"] == 1
    assert md["repetitions"] == 2 and md["capture_time"] == "2024-05-01 10:00:01"
    # loops differ between benchmarks (4 vs 16 x 10): no single calls_per_sample for the file
    assert md.get("calls_per_sample") is None


def test_pyperf_facts_reach_the_audit(tmp_path):
    pytest.importorskip("pyperf")
    from profaudit.audit.evidence import _facts_from_profiles, SideEvidence

    ps = load(_suite_file(tmp_path))
    se = SideEvidence.__new__(SideEvidence)
    se.facts = {}
    _facts_from_profiles(se, ps, "baseline")
    assert se.get("host_governor") == "performance" and se.get("cpu_turbo") is False and se.get("repetitions") == 2


def test_pyperf_gzip_and_hand_built_file(tmp_path):
    # documented layout without pyperf: per-loop values, warmups as [loops, value]
    doc = {"version": "1.0", "metadata": {"name": "telco", "loops": 8, "hostname": "h"},
           "benchmarks": [{"runs": [{"metadata": {"date": "2016-10-21 03:14:19"}, "warmups": [[8, 0.0230]], "values": [0.0221, 0.0225, 0.0224]}]}]}
    p = tmp_path / "telco.json.gz"
    with gzip.open(p, "wt") as f:
        json.dump(doc, f)
    ps = load(p)
    s = ps.samples.sort("phase", "iteration")
    assert s.filter(pl.col("phase") == "measure")["duration_ns"].to_list() == pytest.approx([22.1e6, 22.5e6, 22.4e6], rel=1e-12)
    assert s.filter(pl.col("phase") == "warmup")["duration_ns"].to_list() == pytest.approx([23.0e6])
    md = next(iter(ps)).metadata
    assert md["calls_per_sample"] == 8 and md["warmup_iterations"] == 8 and md["repetitions"] == 1


@pytest.mark.parametrize("text, needle", [
    ('{"benchmarks": [{"runs": [{"values": [1e-6, 2e-', "not valid pyperf JSON"),
    ('{"benchmarks": [{"runs": [{"values": [1e-6]}]}], "version": 6}', "format version 6 is not supported"),
    ('{"benchmarks": [{"runs": [{"values": ["fast"]}], "metadata": {"name": "x"}}], "version": "1.0"}', "value 0 is not a number"),
    ('{"benchmarks": [{"runs": [{"values": [1024]}], "metadata": {"name": "m", "unit": "byte"}}], "version": "1.0"}', "non-time unit (m: byte)"),
    ('{"benchmarks": [{"runs": [{"warmups": [[1]], "values": [1e-6]}]}], "version": "1.0"}', "not a [loops, value] pair"),
    ('{"benchmarks": [{"runs": [{"values": 12}]}], "version": "1.0"}', "'values' and 'warmups' must be lists"),
])
def test_bad_pyperf_files_fail_in_one_line(tmp_path, cli, text, needle):
    p = tmp_path / "bad.json"
    p.write_text(text)
    assert_one_line_error(cli("kernels", "-t", "samples", p), needle)


def test_empty_pyperf_file_fails_in_one_line(tmp_path, cli):
    p = tmp_path / "empty.json"
    p.write_text("")
    assert_one_line_error(cli("kernels", "-t", "samples", p))


def test_lone_surrogates_in_names_and_metadata_do_not_fail_the_profile(tmp_path):
    # JSON may spell a lone UTF-16 surrogate; polars refuses such text, so it becomes U+FFFD
    p = tmp_path / "s.json"
    p.write_text('{"benchmarks": [{"runs": [{"values": [1e-6], "metadata": {"loops": 1}}], "metadata": {"name": "b\\ud800"}}],'
                 ' "metadata": {"hostname": "h\\udc00"}, "version": "1.0"}')
    ps = load(p)
    assert ps.samples["benchmark"].to_list() == ["b\ufffd"] and ps.metadata["host"].to_list() == ["h\ufffd"]


def test_audit_fails_a_claim_across_cpu_governors(tmp_path, cli):
    # launch-bound work (5-6 us per call) timed under powersave on one side and performance on the
    # other: the governors pyperf recorded reach PA208 through the profile metadata
    pyperf = pytest.importorskip("pyperf")

    def log(name, seconds, governor):
        md = {"name": "launch", "loops": 16, "hostname": "h", "cpu_config": f"0-7=driver:intel_pstate, intel_pstate:turbo, governor:{governor}"}
        runs = [pyperf.Run([seconds * (1 + 0.01 * i) for i in range(5)], warmups=[(16, seconds * 1.3)], metadata=md, collect_metadata=False) for _ in range(3)]
        p = tmp_path / name
        pyperf.Benchmark(runs).dump(str(p))
        return p

    res = cli("audit", "-b", log("b.json", 6e-6, "powersave"), "-c", log("c.json", 5e-6, "performance"), "--claimed", "1.2")
    assert "PA208" in res.out and "baseline 'powersave'" in res.out and "candidate 'performance'" in res.out, res


def _shipped():
    """The real result files pyperf ships with its own tests (read in place, never copied)."""
    try:
        import pyperf
    except ImportError:
        return []
    from pathlib import Path

    return sorted((Path(pyperf.__file__).parent / "tests").glob("*.json"))


@pytest.mark.parametrize("path", _shipped(), ids=lambda p: p.name)
def test_real_pyperf_files_match_pyperf_reader(path, cli):
    import pyperf

    suite = pyperf.BenchmarkSuite.load(str(path))
    benches = suite.get_benchmarks()
    if all(b.get_unit() != "second" for b in benches):
        assert_one_line_error(cli("kernels", "-t", "samples", path), "non-time unit")
        return
    ps = load(path)
    s = ps.samples
    for b in benches:
        rows = s.filter(pl.col("benchmark") == b.get_name())
        for ri, r in enumerate(b.get_runs()):
            meas = rows.filter((pl.col("run") == ri) & (pl.col("phase") == "measure")).sort("iteration")
            warm = rows.filter((pl.col("run") == ri) & (pl.col("phase") == "warmup")).sort("iteration")
            assert meas["duration_ns"].to_list() == pytest.approx([v * 1e9 for v in r.values], rel=1e-12)
            assert warm["duration_ns"].to_list() == pytest.approx([v * 1e9 for _, v in r.warmups], rel=1e-12)
    md = next(iter(ps)).metadata
    common = suite.get_metadata()
    if "hostname" in common:
        assert md["host"] == common["hostname"]
    if "cpu_config" in common:  # e.g. '2-3=driver:intel_pstate, intel_pstate:turbo, governor:performance, isolated'
        import re

        assert md["host_governor"] == re.search(r"governor:(\w+)", common["cpu_config"]).group(1)
        assert md["cpu_turbo"] is ("intel_pstate:turbo" in common["cpu_config"])
    runs = {sum(1 for r in b.get_runs() if r.values) for b in benches if b.get_unit() == "second"}
    assert md.get("repetitions") == (runs.pop() if len(runs) == 1 else None)  # process-level runs, when every benchmark had as many
