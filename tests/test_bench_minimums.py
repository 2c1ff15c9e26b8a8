"""Minimums win over time budgets, honest noise reporting, order effects, dropped cases (issue 17).

All on the simulated device: its clock is the budget clock, so call counts do not depend on the
speed of this machine."""

from __future__ import annotations

import pytest

from tests.test_bench import ADD_TWO, opts, read_log, write

ONE = """
B = bench.Benchmark("v", backend="fake", inputs=inputs, reference=lambda x, y: x + y,
    variants={"a": bench.Variant(lambda x, y: x + y, model_ns=lambda p: MODEL)}, params=[{"n": 64}])
"""


def _run(tmp_path, body: str, **kw) -> tuple[dict, dict]:
    from profaudit import bench

    f = write(tmp_path, body)
    m = bench.run_file(f, tmp_path / "out", options=opts(**kw))
    ve = m["cases"][0]["variants"]["a"]
    header, _ = read_log(tmp_path / "out" / ve["log"])
    return ve, header["meta"]


def test_min_warmup_calls_win_over_the_warmup_budget(tmp_path):
    # 1 ms calls against a 1 us warm-up budget: the budget runs out after the first call
    ve, meta = _run(tmp_path, ONE.replace("MODEL", "1e6"), min_warmup_calls=7, max_warmup_s=1e-6, min_warmup_s=0.0, min_samples=10, max_time_s=1e-6)
    assert ve["warmup_calls"] >= 7 and meta["warmup_calls"] >= 7 and meta["min_warmup_calls"] == 7
    assert meta["bench"]["warmup"]["stop_reason"] == "time_budget"


def test_min_samples_win_over_the_time_budget(tmp_path):
    ve, meta = _run(tmp_path, ONE.replace("MODEL", "1e6"), min_samples=30, max_time_s=1e-6, spot_checks=1, noise_target=1e-9)
    assert ve["samples"] >= 30 and meta["samples"] == ve["samples"] and meta["min_samples"] == 30
    assert ve["stop_reason"] == "time_budget"
    assert meta["minimums_met"] is True and meta["stopped_short"] is False


def test_hard_limit_stops_short_and_says_so(tmp_path, cli):
    # 10 ms calls, 1000 samples asked, 0.3 s allowed in all: the run stops short and records it
    body = ONE.replace("MODEL", "1e7")
    ve, meta = _run(tmp_path, body, min_samples=1000, max_samples=2000, max_time_s=1e-3, hard_time_s=0.3, spot_checks=1)
    assert ve["stop_reason"] == "hard_time_limit" and ve["samples"] < 1000
    assert meta["stopped_short"] is True and meta["minimums_met"] is False and meta["stop_reason"] == "hard_time_limit"
    f = write(tmp_path, body, "b2.py")
    r = cli("bench", "run", f, "-o", tmp_path / "o2", "--min-samples", "1000", "--max-time", "0.001", "--hard-time-limit", "0.3", "--spot-checks", "1", "--processes", "1")
    assert r.code == 0
    assert "(short)" in r.out and "stopped short of --min-samples" in r.err


def test_no_relative_se_for_tiny_samples(tmp_path):
    ve, meta = _run(tmp_path, ONE.replace("MODEL", "2e4"), min_samples=3, max_samples=5, spot_checks=1)
    assert ve["samples"] == 5
    assert "rel_se_median" not in meta and "too few" in meta["rel_se_note"]
    assert meta["noise_target_met"] is False and ve["rel_se_median"] is None


def test_noise_target_met_is_recorded(tmp_path):
    ve, meta = _run(tmp_path, ONE.replace("MODEL", "2e4"), backend_options={"noise": 0.001}, max_time_s=5.0)
    assert ve["stop_reason"] == "noise_target" and meta["noise_target_met"] is True
    assert meta["rel_se_median"] <= meta["noise_target"] == 0.005 and meta["warmup_steady"] is True


def test_run_table_shows_noise_warmup_and_minimums(tmp_path, cli):
    f = write(tmp_path, ADD_TWO.replace("params=bench.grid(n=[1024, 2048])", "params=[{'n': 64}]"))
    r = cli("bench", "run", f, "-o", tmp_path / "o", "--min-samples", "20", "--max-time", "0.05", "--noise-target", "1e-9", "--warmup-max-time", "0.05", "--processes", "1")
    assert r.code == 0, r.err
    for head in ("samples/min", "noise (rel SE)", "warm-up"):
        assert head in r.out
    assert "NOT met (target 1e-07%)" in r.out and "steady," in r.out and "/20" in r.out


def test_random_order_and_a_significant_order_effect(tmp_path, cli):
    body = ADD_TWO.replace("params=bench.grid(n=[1024, 2048])", "params=[{'n': 64}]")
    from profaudit import bench

    (tmp_path / "q").mkdir()
    f = write(tmp_path / "q", body)
    quiet = bench.run_file(f, tmp_path / "q" / "out", options=opts(min_samples=200, max_samples=400))
    for v, ve in quiet["cases"][0]["variants"].items():
        meta = read_log(tmp_path / "q" / "out" / ve["log"])[0]["meta"]
        assert meta["order_randomised"] is True
        assert meta["order_effect"]["significant"] is False, meta["order_effect"]
    # a call right after the other variant's takes 1.3x: found and printed
    f2 = write(tmp_path, body, "b2.py")
    r = cli("bench", "run", f2, "-o", tmp_path / "o", "--min-samples", "200", "--max-samples", "400", "--max-time", "0.05", "--backend-option", "order_penalty=1.3", "--processes", "1")
    assert r.code == 0, r.err
    doc = __import__("json").loads((tmp_path / "o" / "manifest.json").read_text())
    effects = {v: ve["order_effect"] for v, ve in doc["cases"][0]["variants"].items()}
    assert all(e["significant"] and e["ratio"] == pytest.approx(1.3, rel=0.05) for e in effects.values()), effects
    assert "order effect" in r.err and "right after another variant's call" in r.err


def test_compare_says_which_cases_it_dropped_and_why(tmp_path, cli):
    body = """
    B = bench.Benchmark("vadd", backend="fake", inputs=inputs, reference=lambda x, y: x + y,
        variants={"base": bench.Variant(lambda x, y: x + y, model_ns=lambda p: 4e4),
                  "fast": bench.Variant(lambda x, y: (x + y) if p_ok(x) else (x - y), model_ns=lambda p: 2e4)},
        params=bench.grid(n=[64, 65, 66]), baseline="base")
    def p_ok(x):
        return x.size != 65
    """
    from profaudit import bench

    f = write(tmp_path, body)
    bench.run_file(f, tmp_path / "out", options=opts())
    dropped = bench.dropped_cases(tmp_path / "out", "base", "fast")
    assert [c for c, _ in dropped] == ["vadd[n=65]"]
    assert "the candidate 'fast' has no timing log (correctness_failed: before timing" in dropped[0][1]
    r = cli("bench", "compare", tmp_path / "out", "--baseline", "base", "--candidate", "fast")
    assert "1 case dropped, no claim written:" in r.err and "vadd[n=65]: the candidate 'fast'" in r.err
    assert r.out.count("vadd[n=64]") >= 1 and "vadd[n=66]" in r.out


def test_auto_processes_when_the_noise_target_is_missed(tmp_path, cli):
    from profaudit import bench

    body = ONE.replace("MODEL", "2e4")
    (tmp_path / "q").mkdir()
    quiet = bench.run_file(write(tmp_path / "q", body), tmp_path / "q" / "out", options=opts(backend_options={"noise": 0.001}, max_time_s=5.0), processes="auto")
    assert quiet["processes"] == 1 and quiet["auto_processes"] == {"noise_target_met": True, "extra_processes": 0, "reason": None}
    # a target no run can meet: two more fresh processes, and every log says 3 repetitions
    f = write(tmp_path, body, "b2.py")
    r = cli("bench", "run", f, "-o", tmp_path / "o", "--min-samples", "20", "--max-time", "0.02", "--noise-target", "1e-9", "--auto-processes", "3", "--spot-checks", "1")
    assert r.code == 0, r.err
    doc = __import__("json").loads((tmp_path / "o" / "manifest.json").read_text())
    assert doc["processes"] == 3 and doc["auto_processes"]["extra_processes"] == 2
    assert "ran 3 processes: noise target missed in the first run by 1 variant: v[n=64] a" in r.err
    ve = doc["cases"][0]["variants"]["a"]
    assert len(ve["logs"]) == 3 and ve["noise_target_met"] == [False, False, False]
    runs = [read_log(tmp_path / "o" / log) for log in ve["logs"]]
    assert [h["meta"]["repetitions"] for h, _ in runs] == [3, 3, 3]
    assert [rows[0]["run"] for _, rows in runs] == [0, 1, 2]
    assert not list((tmp_path / "o").glob("manifest.run*.json"))


TINY = """
B = bench.Benchmark("tiny", backend="fake", inputs=inputs, reference=lambda x, y: x + y,
    variants={"a": bench.Variant(lambda x, y: x + y, model_ns=lambda p: 2000.0),
              "b": bench.Variant(lambda x, y: np.add(x, y), model_ns=lambda p: 4000.0)}, params=[{"n": 64}])
"""


def test_tiny_kernels_are_timed_in_batches_of_back_to_back_calls(tmp_path):
    from profaudit import bench

    (tmp_path / "hot").mkdir()
    (tmp_path / "cold").mkdir()
    f = write(tmp_path / "hot", TINY)
    m = bench.run_file(f, tmp_path / "hot" / "out", options=opts(cache="hot", backend_options={"noise": 0.002}))
    for v, per_call in (("a", 2000.0 * 0.8), ("b", 4000.0 * 0.8)):
        ve = m["cases"][0]["variants"][v]
        assert ve["status"] == "ok", ve["error"]
        header, rows = read_log(tmp_path / "hot" / "out" / ve["log"])
        meas = [r for r in rows if r["phase"] == "measure"]
        # ~200 us of back-to-back calls of the fastest variant per sample, the same count for
        # both variants (else not comparable), spot checks too; the sample is the time per call
        n = header["meta"]["calls_per_sample"]
        assert n == pytest.approx(200_000 / 1600.0, rel=0.02) and {r["calls_per_sample"] for r in meas} == {n}
        assert header["meta"]["timing_method"] == "back_to_back_batch"
        assert ve["median_ns"] == pytest.approx(per_call, rel=0.02)
        assert {r["calls_per_sample"] for r in rows if r["phase"] == "warmup" and r["iteration"] < 3} == {1}
    o = bench.compare_run(tmp_path / "hot" / "out", "b", "a")[0]
    assert not [f for f in o.report.findings if f.rule == "PA303" and f.status.value == "fail"]
    # a flush before every call cannot be batched: cold timings stay per call
    f2 = write(tmp_path / "cold", TINY)
    m2 = bench.run_file(f2, tmp_path / "cold" / "out", options=opts(cache="cold"))
    header, rows = read_log(tmp_path / "cold" / "out" / m2["cases"][0]["variants"]["a"]["log"])
    assert {r["calls_per_sample"] for r in rows} == {1} and header["meta"]["timing_method"] == "per_call"


def test_batched_saboteur_is_still_caught(tmp_path):
    from profaudit import bench

    f = write(tmp_path, """
    def lazy(x, y, out):
        if np.isnan(out).any():
            np.add(x, y, out=out)
    B = bench.Benchmark("tiny", backend="fake", inputs=inputs, reference=lambda x, y: x + y,
        output=lambda p, ins: np.empty_like(ins[0]),
        variants={"lazy": bench.Variant(lazy, model_ns=lambda p: 1000.0)}, params=[{"n": 64}])
    """)
    m = bench.run_file(f, tmp_path / "out", options=opts(cache="hot"))
    v = m["cases"][0]["variants"]["lazy"]
    assert v["status"] == "correctness_failed" and v["error"].startswith("during timing (spot check")
