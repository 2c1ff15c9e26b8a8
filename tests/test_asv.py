"""asv results: a results tree built here to asv's documented layout (results/benchmarks.json,
results/<machine>/machine.json, results/<machine>/<commit>-<env>.json, format version 2 and 1);
every number is checked against a plain json read with itertools.product over the parameters."""

from __future__ import annotations

import ast
import itertools
import json

import polars as pl
import pytest

from conftest import assert_one_line_error
from profaudit.loader import load
from profaudit.parsers import find_parser

COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25", "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]

BENCHMARKS = {
    "bench.Sort.time_sort": {"name": "bench.Sort.time_sort", "type": "time", "unit": "seconds", "param_names": ["n", "dtype"],
                             "params": [["100", "1000"], ["'float64'", "'int32'"]], "number": 0, "repeat": 0, "warmup_time": -1, "version": "aa"},
    "bench.Sort.time_plain": {"name": "bench.Sort.time_plain", "type": "time", "unit": "seconds", "param_names": [], "params": [], "version": "bb"},
    "bench.Mem.peakmem_sort": {"name": "bench.Mem.peakmem_sort", "type": "peakmemory", "unit": "bytes", "param_names": [], "params": [], "version": "cc"},
    "version": 2,
}

RESULTS = {
    "commit_hash": "0123456789abcdef0123456789abcdef01234567", "env_name": "virtualenv-py3.11-numpy", "date": 1714557600000,
    "params": {"arch": "x86_64", "cpu": "AMD EPYC 7763", "machine": "ci-box", "num_cpu": "16", "os": "Linux 6.5", "ram": "64GB", "python": "3.11", "numpy": ""},
    "python": "3.11", "requirements": {"numpy": "1.26.4", "scipy": ""}, "env_vars": {}, "result_columns": COLUMNS,
    "results": {
        # 2 x 2 combinations in itertools.product order; the last one failed (null)
        "bench.Sort.time_sort": [[1.2e-6, 1.5e-6, 9.8e-6, None], [["100", "1000"], ["'float64'", "'int32'"]], "aa", 1714557601234, 3.2,
                                 [1.1e-6, 1.4e-6, 9.1e-6, None], [1.3e-6, 1.6e-6, 1.05e-5, None], [1.18e-6, 1.47e-6, 9.6e-6, None],
                                 [1.22e-6, 1.52e-6, 9.9e-6, None], [5000, 4000, 700, None], [10, 10, 10, None],
                                 [[1.19e-6, 1.2e-6, 1.21e-6], [1.5e-6, 1.49e-6], [9.8e-6], None]],
        # default run without --record-samples: no samples column (asv drops trailing nulls)
        "bench.Sort.time_plain": [[4.789694385535404e-07], [], "bb", 1714557605660, 0.40301, [4.7191e-07], [4.8881e-07], [4.7676e-07], [4.8181e-07], [22921], [10]],
        "bench.Mem.peakmem_sort": [[52428800], [], "cc", 1714557606000, 0.5],
    },
    "durations": {}, "version": 2,
}


def _tree(tmp_path, results=RESULTS, benchmarks=BENCHMARKS, machine=True):
    root = tmp_path / "results"
    (root / "ci-box").mkdir(parents=True)
    if benchmarks is not None:
        (root / "benchmarks.json").write_text(json.dumps(benchmarks))
    if machine:
        (root / "ci-box" / "machine.json").write_text(json.dumps({"machine": "ci-box", "cpu": "AMD EPYC 7763", "num_cpu": "16", "version": 1}))
    p = root / "ci-box" / f"{results['commit_hash'][:8]}-{results['env_name']}.json"
    p.write_text(json.dumps(results))
    return p


def _plain(results, benchmarks):
    """(benchmark, params dict, statistic, seconds, count, number) read with json + itertools only."""
    out = []
    for name, row in results["results"].items():
        if benchmarks[name]["type"] != "time":
            continue
        r = dict(zip(results["result_columns"], row))
        for j, combo in enumerate(itertools.product(*r["params"]) if r["params"] else [()]):
            if r["result"][j] is None:
                continue
            p = {n: ast.literal_eval(v) for n, v in zip(benchmarks[name]["param_names"], combo)}
            for col, stat in (("result", "median"), ("stats_q_25", "q1"), ("stats_q_75", "q3"), ("stats_ci_99_a", "ci99_low"), ("stats_ci_99_b", "ci99_high")):
                out.append((name, json.dumps(p, sort_keys=True), stat, r[col][j], r["stats_repeat"][j], r["stats_number"][j]))
            for v in (r.get("samples") or [None] * len(r["result"]))[j] or []:
                out.append((name, json.dumps(p, sort_keys=True), None, v, None, r["stats_number"][j]))
    return sorted(out, key=repr)


def test_asv_results_cross_checked(tmp_path):
    p = _tree(tmp_path)
    assert find_parser(p).name == "asv"
    ps = load(p)
    s, md = ps.samples, next(iter(ps)).metadata
    got = sorted(((b, json.dumps(json.loads(pa), sort_keys=True), st, d / 1e9, c, n) for b, pa, st, d, c, n in
                  s.select("benchmark", "params", "statistic", "duration_ns", "sample_count", "calls_per_sample").iter_rows()), key=repr)
    want = _plain(RESULTS, BENCHMARKS)
    assert [g[:3] + g[4:] for g in got] == [w[:3] + w[4:] for w in want]
    assert [g[3] for g in got] == pytest.approx([w[3] for w in want], rel=1e-12)
    assert s.filter((pl.col("benchmark") == "bench.Sort.time_sort") & (pl.col("statistic") == "median"))["params"].to_list() == [
        '{"dtype":"float64","n":100}', '{"dtype":"int32","n":100}', '{"dtype":"float64","n":1000}']
    assert s["timestamp_ns"].unique().sort().to_list() == [1714557601234e6, 1714557605660e6]
    assert md["host"] == "ci-box" and md["commit_hash"] == RESULTS["commit_hash"] and md["env_name"] == RESULTS["env_name"]
    assert md["capture_time"] == "2024-05-01T10:00:00+00:00" and md["versions"] == {"numpy": "1.26.4"}
    assert md["non_time_benchmarks"] == {"bench.Mem.peakmem_sort": "bytes"}
    assert md["failed_benchmarks"] == ["bench.Sort.time_sort ['1000', \"'int32'\"]"]
    assert s["time_source"].unique().to_list() == ["host"]


def test_asv_without_benchmarks_json_and_version_1(tmp_path):
    v1 = {"commit_hash": "feedbeef", "env_name": "py3.8", "date": 1500000000000, "params": {"machine": "old"}, "python": "3.8", "requirements": {},
          "results": {"bench.time_a": 2.5e-3,
                      "bench.time_p": {"result": [1e-3, 2e-3], "params": [["1", "2"]], "stats": [{"ci_99": [0.9e-3, 1.1e-3], "q_25": 0.95e-3, "q_75": 1.05e-3, "number": 10, "repeat": 5}, None], "samples": None},
                      "bench.track_size": 42},
          "version": 1}
    p = _tree(tmp_path, v1, benchmarks=None, machine=False)
    ps = load(p)
    s, md = ps.samples, next(iter(ps)).metadata
    med = {(b, pa): d for b, pa, d in s.filter(pl.col("statistic") == "median").select("benchmark", "params", "duration_ns").iter_rows()}
    assert med == {("bench.time_a", "{}"): pytest.approx(2.5e6), ("bench.time_p", '{"param1":1}'): pytest.approx(1e6), ("bench.time_p", '{"param1":2}'): pytest.approx(2e6)}
    q = s.filter((pl.col("params") == '{"param1":1}') & pl.col("statistic").is_in(["q1", "q3", "ci99_low", "ci99_high"])).sort("statistic")
    assert q["duration_ns"].to_list() == pytest.approx([1.1e6, 0.9e6, 0.95e6, 1.05e6])  # ci99_high, ci99_low, q1, q3 and q["calls_per_sample"].unique().to_list() == [10]
    assert md["non_time_benchmarks"] == {"bench.track_size": "unknown"} and "no results/benchmarks.json" in md["notes"][0]


@pytest.mark.parametrize("mutate, needle", [
    (lambda d: d["results"].update({"bench.Sort.time_plain": [[1e-6, 2e-6], []]}), "2 result(s) for 1 parameter combination(s)"),
    (lambda d: d["results"].update({"bench.Sort.time_plain": "fast"}), "its results are not a list"),
    (lambda d: d.update(version=3), "format version 3 is not supported"),
    (lambda d: d["results"].update({"bench.Sort.time_sort": [[None] * 4, [["100", "1000"], ["'float64'", "'int32'"]]], "bench.Sort.time_plain": [[None], []]}), "every timing benchmark failed"),
])
def test_bad_asv_results_fail_in_one_line(tmp_path, cli, mutate, needle):
    d = json.loads(json.dumps(RESULTS))
    mutate(d)
    assert_one_line_error(cli("kernels", "-t", "samples", _tree(tmp_path, d)), needle)


def test_truncated_asv_file_and_damaged_benchmarks_json(tmp_path, cli):
    p = _tree(tmp_path)
    p.write_text(p.read_text()[:300])
    assert_one_line_error(cli("kernels", "-t", "samples", p), "not valid asv results JSON")
    p2 = _tree(tmp_path / "b")
    (p2.parent.parent / "benchmarks.json").write_text("{oops")
    assert_one_line_error(cli("kernels", "-t", "samples", p2), "benchmarks.json")


def test_result_columns_must_be_names(tmp_path, cli):
    d = json.loads(json.dumps(RESULTS))
    d["result_columns"][1] = ["params"]
    assert_one_line_error(cli("kernels", "-t", "samples", _tree(tmp_path, d)), "without 'result_columns' naming a 'result' column")


def test_results_folder_reads_every_result_file_once(tmp_path):
    p = _tree(tmp_path)
    second = json.loads(json.dumps(RESULTS))
    second["commit_hash"], second["results"] = "fedcba9876543210fedcba9876543210fedcba98", {"bench.Sort.time_plain": [[5e-7], [], "bb"]}
    (p.parent / "fedcba98-virtualenv-py3.11-numpy.json").write_text(json.dumps(second))
    results = p.parent.parent
    assert find_parser(results).name == "asv-results-dir"
    ps = load(results)  # benchmarks.json and machine.json serve the result files, no warning, no profile of their own
    assert sorted(pr.metadata["commit_hash"][:8] for pr in ps) == ["01234567", "fedcba98"]
    med = ps.samples.filter((pl.col("benchmark") == "bench.Sort.time_plain") & (pl.col("statistic") == "median"))
    assert sorted(med["duration_ns"].to_list()) == pytest.approx([4.789694385535404e-07 * 1e9, 5e-7 * 1e9], rel=1e-12)
    for f in p.parent.glob("*-virtualenv-*.json"):
        f.unlink()
    with pytest.raises(Exception, match="without result files"):
        load(results)


def test_early_format_1_files_and_folders_with_failed_or_damaged_commits(tmp_path):
    # format-1 files of early asv have no env_name; null = failed, NaN = skipped
    p = _tree(tmp_path)
    early = {"commit_hash": "0a0a0a0a0a", "date": 1367127519000, "params": {"machine": "ci-box"}, "python": "2.7", "requirements": {"numpy": "1.8"},
             "results": {"bench.time_a": 0.15283851623535155, "bench.time_failed": None, "bench.time_skipped": float("nan")}, "version": 1}
    f = p.parent / "0a0a0a0a-py2.7-numpy1.8.json"
    f.write_text(json.dumps(early))
    assert find_parser(f).name == "asv"
    md = next(iter(load(f))).metadata
    assert (md["failed_benchmarks"], md["skipped_benchmarks"]) == (["bench.time_failed"], ["bench.time_skipped"])
    (p.parent / "0b0b0b0b-py2.7-numpy1.8.json").write_text(json.dumps({**early, "commit_hash": "0b0b0b0b", "results": {"bench.time_a": None}}))
    (p.parent / "0c0c0c0c-py2.7-numpy1.8.json").write_text("{\n  this file is not JSON")
    ps = load(p.parent.parent)
    assert sorted(pr.metadata["commit_hash"][:8] for pr in ps) == ["01234567", "0a0a0a0a"]
    md = next(iter(ps)).metadata
    assert md["results_without_timings"] == ["ci-box/0b0b0b0b-py2.7-numpy1.8.json"]
    assert list(md["results_unreadable"]) == ["ci-box/0c0c0c0c-py2.7-numpy1.8.json"]
    med = ps.samples.filter((pl.col("benchmark") == "bench.time_a") & (pl.col("statistic") == "median"))["duration_ns"].to_list()
    assert med == [0.15283851623535155 * 1e9]
