"""Candidates that are right only when checked (issue 17): each is caught with one clear line,
its run is marked correctness_failed, and `bench compare` writes no claim for it. The honest
variant beside it stays ok. Everything is seeded: the harness's spot-check schedule and the
saboteurs' own random draws, so each test has one outcome."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_bench import opts, read_log, write

PLAIN = 'bench.Variant(lambda x, y: x + y, model_ns=lambda p: 3.4e4)'


def _run(tmp_path: Path, body: str, **kw) -> dict:
    from profaudit import bench

    f = write(tmp_path, body)
    return bench.run_file(f, tmp_path / "out", options=opts(**kw))


def _variants(m: dict) -> dict:
    return m["cases"][0]["variants"]


def test_result_memoised_on_input_values_is_caught(tmp_path):
    # a cache keyed on the input *values*: every check (new values) computes and passes, every
    # timed call on repeated values is a lookup (34x faster on the simulated device)
    m = _run(
        tmp_path,
        f"""
        CACHE, LAST = {{}}, {{"hit": False}}
        def memo(x, y):
            key = x.tobytes() + y.tobytes()
            LAST["hit"] = key in CACHE
            if not LAST["hit"]:
                CACHE[key] = x + y
            return CACHE[key].copy()
        B = bench.Benchmark("vadd", backend="fake", inputs=inputs, reference=lambda x, y: x + y,
            variants={{"plain": {PLAIN},
                      "memo": bench.Variant(memo, model_ns=lambda p: 1e3 if LAST["hit"] else 3.4e4)}},
            params=[{{"n": 256}}], baseline="plain")
        """,
    )
    v = _variants(m)
    assert v["plain"]["status"] == "ok"
    assert v["memo"]["status"] == "correctness_failed"
    assert v["memo"]["error"].startswith("during timing: the 8 spot-checked calls") and "memoised on input" in v["memo"]["error"]
    from profaudit import bench

    outs = bench.compare_run(tmp_path / "out", "plain", "memo")
    assert outs[0].verdict == "FAIL" and outs[0].claim_path is None


def test_inputs_mutated_after_the_checks_before_timing_are_caught(tmp_path):
    m = _run(
        tmp_path,
        f"""
        CALLS = [0]
        def sneaky(x, y):
            CALLS[0] += 1
            if CALLS[0] > 5:          # after the checks before timing
                x *= 0.5
            return x + y
        B = bench.Benchmark("vadd", backend="fake", inputs=inputs, reference=lambda x, y: x + y,
            variants={{"plain": {PLAIN}, "sneaky": bench.Variant(sneaky, model_ns=lambda p: 1e4)}},
            params=[{{"n": 256}}])
        """,
    )
    v = _variants(m)
    assert v["plain"]["status"] == "ok"
    assert v["sneaky"]["status"] == "correctness_failed"
    assert v["sneaky"]["error"].startswith("during timing") and "wrote into its inputs" in v["sneaky"]["error"]


def test_inputs_mutated_once_during_timing_are_caught_by_the_final_input_check(tmp_path):
    m = _run(
        tmp_path,
        """
        CALLS = [0]
        def once(x, y):
            CALLS[0] += 1
            if CALLS[0] == 20:        # one timed call, between two spot checks
                x[0] += 1.0
            return x + y
        B = bench.Benchmark("vadd", backend="fake", inputs=inputs, reference=lambda x, y: x + y,
            variants={"once": bench.Variant(once, model_ns=lambda p: 1e4)}, params=[{"n": 256}])
        """,
        spot_checks=1,
    )
    v = _variants(m)["once"]
    assert v["status"] == "correctness_failed"
    assert "wrote into its inputs" in v["error"]


def test_work_done_only_when_the_output_holds_nan_is_caught(tmp_path):
    # computes only when poisoned with NaN (i.e. only when being checked): the spot checks poison
    # with finite values and give new inputs, so the stale output fails
    m = _run(
        tmp_path,
        """
        def lazy(x, y, out):
            if np.isnan(out).any():
                np.add(x, y, out=out)
        B = bench.Benchmark("vadd", backend="fake", inputs=inputs, reference=lambda x, y: x + y,
            output=lambda p, ins: np.empty_like(ins[0]),
            variants={"plain": bench.Variant(lambda x, y, out: np.add(x, y, out=out), model_ns=lambda p: 3.4e4),
                      "lazy": bench.Variant(lazy, model_ns=lambda p: 1e3)},
            params=[{"n": 256}])
        """,
    )
    v = _variants(m)
    assert v["plain"]["status"] == "ok"
    assert v["lazy"]["status"] == "correctness_failed"
    assert v["lazy"]["error"].startswith("during timing (spot check at timed iteration") and "differ from the reference" in v["lazy"]["error"]
    header, _ = read_log(tmp_path / "out" / v["lazy"]["log"])
    assert header["meta"]["correctness_checked"] == "before_timing"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_output_wrong_on_30_percent_of_calls_is_caught(tmp_path, seed):
    # 30 % of calls wrong: the check before timing, two repeat calls, the spot checks and the check
    # after timing are 4 + spot_checks independent looks; with 30 spot checks a miss has
    # probability 0.7**34 ~ 5e-6 whatever the call count, and the saboteur's draws are seeded
    m = _run(
        tmp_path,
        f"""
        RNG = np.random.default_rng({seed})
        def flaky(x, y):
            r = x + y
            return r * 1.5 if RNG.random() < 0.3 else r
        B = bench.Benchmark("vadd", backend="fake", inputs=inputs, reference=lambda x, y: x + y,
            variants={{"plain": {PLAIN}, "flaky": bench.Variant(flaky, model_ns=lambda p: 1e4)}},
            params=[{{"n": 256}}])
        """,
        spot_checks=30,
        seed=seed,
    )
    v = _variants(m)
    assert v["plain"]["status"] == "ok"
    assert v["flaky"]["status"] == "correctness_failed"
    assert "differ" in v["flaky"]["error"]


def test_nondeterminism_is_refused_unless_declared(tmp_path):
    body = """
    RNG = np.random.default_rng(5)
    def racy(x, y):
        # an atomics-style reduction order: last-bit differences between identical calls
        return (x + y) * (1 + 1e-7 * RNG.standard_normal(x.shape)).astype(np.float32)
    B = bench.Benchmark("vadd", backend="fake", inputs=inputs, reference=lambda x, y: x + y,
        variants={"racy": bench.Variant(racy, model_ns=lambda p: 1e4DECL)}, params=[{"n": 256}])
    """
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    refused = _variants(_run(tmp_path / "a", body.replace("DECL", "")))["racy"]
    assert refused["status"] == "correctness_failed"
    assert "repeat call 1 on identical inputs gave different outputs (bit for bit)" in refused["error"] and "nondeterministic=" in refused["error"]
    m = _run(tmp_path / "b", body.replace("DECL", ", nondeterministic=(1e-5, 1e-6)"))
    ok = _variants(m)["racy"]
    assert ok["status"] == "ok", ok["error"]
    header, _ = read_log(tmp_path / "b" / "out" / ok["log"])
    assert header["meta"]["nondeterministic_tolerance"] == [1e-5, 1e-6] and header["meta"]["determinism_checked"] is True


def test_honest_variants_pass_every_check_and_record_them(tmp_path):
    m = _run(
        tmp_path,
        f"""
        B = bench.Benchmark("vadd", backend="fake", inputs=inputs, reference=lambda x, y: x + y,
            variants={{"a": {PLAIN}, "b": bench.Variant(lambda x, y: np.add(x, y), model_ns=lambda p: 2e4)}},
            params=[{{"n": 256}}])
        """,
    )
    for name, ve in _variants(m).items():
        assert ve["status"] == "ok" and ve["correctness"] == "both", (name, ve["error"])
        header, rows = read_log(tmp_path / "out" / ve["log"])
        meta = header["meta"]
        assert meta["spot_checks"] == 8
        its = meta["bench"]["correctness"]["spot_check_iterations"]
        # the checked calls are timed iterations like the others (measure rows), at varying places
        measured = {r["iteration"] for r in rows if r["phase"] == "measure"}
        assert len(its) == 8 and set(its) <= measured and len(set(its)) == 8


def test_bad_nondeterministic_declaration():
    from profaudit import bench
    from profaudit.errors import UsageError

    with pytest.raises(UsageError, match="nondeterministic"):
        bench.Variant(lambda x: x, name="v", nondeterministic="loose")
    assert bench.Variant(lambda x: x, name="v", nondeterministic=1e-3).nondeterministic == (1e-3, 1e-3)


def test_declared_input_mutation_does_not_fail_the_variant_after_it(tmp_path):
    # mutates_inputs=True: every check restores the drawn values before each variant's call, so
    # the in-place variant does not make its neighbour look wrong
    m = _run(
        tmp_path,
        f"""
        def inplace(x, y):
            np.add(x, y, out=x)
            return x.copy()
        B = bench.Benchmark("vadd", backend="fake", inputs=inputs, reference=lambda x, y: x + y, mutates_inputs=True,
            variants={{"inplace": bench.Variant(inplace, model_ns=lambda p: 1e4), "plain": {PLAIN}}},
            params=[{{"n": 256}}])
        """,
    )
    v = _variants(m)
    assert v["inplace"]["status"] == "ok" and v["plain"]["status"] == "ok", (v["inplace"]["error"], v["plain"]["error"])
    assert v["plain"]["correctness"] == "both"
