"""profaudit bench on the fake (simulated) backend: method, correctness traps, outputs, audit."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tests.conftest import assert_one_line_error

FAST = dict(min_samples=20, max_samples=150, min_time_s=0.002, max_time_s=0.05, min_warmup_s=0.002, max_warmup_s=0.05, block_target_s=0.002)

HEADER = """
import numpy as np
from profaudit import bench

def inputs(p, gen):
    return (gen.randn((p["n"],), "float32"), gen.randn((p["n"],), "float32"))
"""


def write(tmp_path: Path, body: str, name: str = "bench_file.py") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(HEADER) + textwrap.dedent(body))
    return p


ADD_TWO = """
ADD = bench.Benchmark(
    "vadd", backend="fake", inputs=inputs, reference=lambda x, y: x + y,
    variants={
        "base": bench.Variant(lambda x, y: np.add(x, y), model_ns=lambda p: 40_000.0),
        "fast": bench.Variant(lambda x, y: x + y, model_ns=lambda p: 20_000.0),
    },
    params=bench.grid(n=[1024, 2048]), flops=lambda p: p["n"], bytes=lambda p: 12 * p["n"], baseline="base")
"""


def opts(**kw):
    from profaudit.bench import RunOptions

    return RunOptions(**{**FAST, **kw})


def read_log(path: Path) -> tuple[dict, list[dict]]:
    """The log read back with the json module alone (independent of profaudit's reader)."""
    lines = path.read_text().splitlines()
    return json.loads(lines[0]), [json.loads(l) for l in lines[1:] if l.strip()]


# ------------------------------------------------------------------------------------------------
# declaration API
# ------------------------------------------------------------------------------------------------


def test_grid_case_ids_and_matching():
    from profaudit import bench
    from profaudit.bench.spec import matches

    g = bench.grid(n=[1, 2], dtype=["float32"])
    assert g == [{"n": 1, "dtype": "float32"}, {"n": 2, "dtype": "float32"}]
    b = bench.Benchmark("mm", backend="fake", inputs=lambda p, g: (), variants={"a": lambda: 0}, params=g)
    ids = [c.id for c in b.cases()]
    assert ids == ["mm[dtype=float32,n=1]", "mm[dtype=float32,n=2]"]
    assert b.cases()[0].slug == "dtype-float32_n-1"
    assert matches(ids[1], "n=2") and not matches(ids[0], "n=2")
    assert matches(ids[0], "mm[*n=1]") and not matches(ids[0], "mm[*n=2]")


@pytest.mark.parametrize(
    "kw, needle",
    [
        (dict(backend="cuda"), "backend 'cuda'"),
        (dict(variants={}), "no variants"),
        (dict(baseline="nope"), "baseline 'nope'"),
        (dict(cache="lukewarm"), "cache 'lukewarm'"),
        (dict(name="has space"), "benchmark name"),
    ],
)
def test_benchmark_declaration_errors(kw, needle):
    from profaudit import bench
    from profaudit.errors import UsageError

    args = dict(name="x", backend="fake", inputs=lambda p, g: (), variants={"a": lambda: 0})
    args.update(kw)
    name = args.pop("name")
    with pytest.raises(UsageError, match=needle.replace("[", r"\[")):
        bench.Benchmark(name, **args)


# ------------------------------------------------------------------------------------------------
# a clean run and its outputs
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    from profaudit import bench

    tmp = tmp_path_factory.mktemp("clean")
    f = write(tmp, ADD_TWO)
    out = tmp / "out"
    manifest = bench.run_file(f, out, options=opts())
    return f, out, manifest


def test_run_writes_logs_and_manifest(clean_run):
    f, out, manifest = clean_run
    doc = json.loads((out / "manifest.json").read_text())
    assert doc["format"] == "profaudit-bench-manifest" and doc["status"] == "complete" and doc["failures"] == 0
    assert [c["id"] for c in doc["cases"]] == ["vadd[n=1024]", "vadd[n=2048]"]
    for c in doc["cases"]:
        assert c["interleaved"] is True and c["cache_mode"] == "cold"
        for v, ve in c["variants"].items():
            assert ve["status"] == "ok" and ve["correctness"] == "both"
            header, rows = read_log(out / ve["log"])
            assert header["format"] == "profaudit-timing" and header["version"] == 1
            measure = [r["duration_ns"] for r in rows if r["phase"] == "measure"]
            # the manifest's median is the median of the log's measure rows (read independently)
            assert ve["median_ns"] == pytest.approx(float(np.median(measure)))
            assert ve["samples"] == len(measure) >= 20
            assert {r["variant"] for r in rows} == {v}
    assert not list(out.rglob("*.tmp"))


def test_log_header_records_every_fact_the_audit_reads(clean_run):
    _, out, manifest = clean_run
    header, rows = read_log(out / manifest["cases"][0]["variants"]["fast"]["log"])
    m = header["meta"]
    expected = {
        "time_source": "fake",
        "synchronized": True,
        "l2_flush": True,
        "clock_control": "none",
        "interleaved": True,
        "dtype": "float32",
        "tf32": False,
        "correctness_checked": "both",
        "calls_per_sample": 1,
        "device_name": "fake-device (simulated)",
        "repetitions": 1,
        "flops": 1024.0,
        "bytes": 12288.0,
    }
    for k, v in expected.items():
        assert m[k] == v, k
    for k in ("warmup_iterations", "rtol", "atol", "shape", "versions", "framework", "default_clock_mhz", "power_limit_w", "gpu_util_before_pct", "other_gpu_processes"):
        assert k in m, k
    warm = [r for r in rows if r["phase"] == "warmup"]
    # warm-up calls + the checked call before timing + its two repeats (determinism check)
    assert m["warmup_iterations"] == len(warm) + 1 + 2
    assert m["determinism_checked"] is True and m["spot_checks"] == 8
    assert m["bench"]["warmup"]["steady"] is True
    assert m["bench"]["cache"]["flush_bytes"] == 2 * m["bench"]["cache"]["cache_bytes"]
    for r in rows:
        assert r["cache_state"] == "cold" and r["sm_clock_mhz"] == 1500.0 and r["throttle_reasons"] == "none"


def test_profaudit_load_reads_the_output_folder(clean_run):
    import profaudit

    _, out, manifest = clean_run
    ps = profaudit.load(str(out))
    s = ps.samples
    assert set(s["variant"].unique()) == {"base", "fast"}
    assert set(s["phase"].unique()) == {"warmup", "measure"}
    assert s["time_source"].unique().to_list() == ["fake"]
    total = sum(len(read_log(out / ve["log"])[1]) for c in manifest["cases"] for ve in c["variants"].values())
    assert s.height == total
    one = s.filter((pl.col("variant") == "fast") & (pl.col("phase") == "measure") & (pl.col("params") == '{"n":1024}'))
    assert one["duration_ns"].median() == pytest.approx(manifest["cases"][0]["variants"]["fast"]["median_ns"])


def test_interleaved_rounds_in_random_order(clean_run):
    _, out, manifest = clean_run
    logs = manifest["cases"][0]["variants"]
    rows = read_log(out / logs["base"]["log"])[1] + read_log(out / logs["fast"]["log"])[1]
    rows.sort(key=lambda r: r["timestamp_ns"])
    seq = [r["variant"][0] for r in rows if r["phase"] == "warmup"][:40]
    # every round runs each variant once, in a seeded random order: never AAAA BBBB, and both
    # orders occur (the measure rows also hold single-call spot checks, so warm-up rounds here)
    pairs = ["".join(seq[i : i + 2]) for i in range(0, len(seq) - 1, 2)]
    assert len(pairs) >= 4 and all(sorted(p) == ["b", "f"] for p in pairs)
    assert set(pairs) == {"bf", "fb"}
    assert read_log(out / logs["base"]["log"])[0]["meta"]["order_randomised"] is True


def test_compare_writes_claim_and_audits_clean(clean_run, tmp_path):
    import yaml

    from profaudit import audit, bench
    from profaudit.audit.findings import Severity, Status

    _, out, _ = clean_run
    outs = bench.compare_run(out, baseline="base", candidate="fast", pattern="n=1024", out_dir=tmp_path / "claims")
    assert len(outs) == 1
    o = outs[0]
    doc = yaml.safe_load(o.claim_path.read_text())
    assert doc["statistic"] == "median" and doc["speedup"] == pytest.approx(2.0, rel=0.01)
    assert "meta" not in doc["baseline"] and "meta" not in doc["candidate"]  # every fact comes from the logs
    report = audit(o.claim_path)
    assert report.verdict == "PASS"
    bad = [f for f in report.findings if f.severity >= Severity.WARN and f.status is not Status.PASS]
    assert bad == [], [f"{f.rule} {f.message}" for f in bad]
    # the rules that need the harness's facts actually checked them (not "cannot check")
    checked = {f.rule for f in report.findings if f.status is Status.PASS}
    for rule in ("PA101", "PA103", "PA106", "PA201", "PA203", "PA204", "PA206", "PA207", "PA209", "PA301", "PA302", "PA304", "PA305", "PA401", "PA402", "PA406", "PA407"):
        assert rule in checked, rule
    assert json.loads(o.audit_json.read_text())["verdict"] == "PASS"
    assert o.audit_md.read_text().strip()


def test_inflated_claim_fails(clean_run, tmp_path):
    from profaudit import bench

    _, out, _ = clean_run
    o = bench.compare_run(out, baseline="base", candidate="fast", pattern="n=1024", claimed=3.0, out_dir=tmp_path)[0]
    assert o.verdict == "FAIL"
    assert any(r.startswith("PA407") for r in o.reasons)


def test_cli_run_and_compare(tmp_path, cli):
    f = write(tmp_path, ADD_TWO)
    out = tmp_path / "o"
    r = cli("bench", "run", f, "-o", out, "-k", "n=2048", "--max-time", "0.03", "--min-samples", "20", "--max-samples", "100", "--warmup-max-time", "0.03", "--min-time", "0.002", "--processes", "1")
    assert r.code == 0, r
    assert "vadd[n=2048]" in r.out
    r = cli("bench", "compare", out, "--baseline", "base", "--candidate", "fast", "-f", "json")
    assert r.code == 0, r
    res = json.loads(r.out)
    assert [x["verdict"] for x in res] == ["PASS"]
    r = cli("audit", res[0]["claim"])
    assert r.code == 0 and "PASS" in r.out


# ------------------------------------------------------------------------------------------------
# correctness traps
# ------------------------------------------------------------------------------------------------


def _run_one(tmp_path, body, **kw):
    from profaudit import bench

    f = write(tmp_path, body)
    return bench.run_file(f, tmp_path / "out", options=opts(**kw))


def test_wrong_kernel_is_caught_before_timing(tmp_path):
    m = _run_one(
        tmp_path,
        """
        B = bench.Benchmark("vadd", backend="fake", inputs=inputs, reference=lambda x, y: x + y,
            variants={"ok": bench.Variant(lambda x, y: x + y, model_ns=lambda p: 3e4),
                      "wrong": bench.Variant(lambda x, y: x - y, model_ns=lambda p: 1e4)},
            params=[{"n": 512}])
        """,
    )
    v = m["cases"][0]["variants"]
    assert v["ok"]["status"] == "ok"
    assert v["wrong"]["status"] == "correctness_failed"
    assert "before timing" in v["wrong"]["error"] and "differ from the reference" in v["wrong"]["error"]
    assert v["wrong"]["log"] is None  # never timed
    assert m["failures"] == 1


def test_kernel_that_writes_nothing_is_caught_by_poisoning(tmp_path):
    m = _run_one(
        tmp_path,
        """
        def lazy(x, y, out):
            pass   # leaves the output buffer as it found it
        B = bench.Benchmark("vadd", backend="fake", inputs=inputs, reference=lambda x, y: x + y,
            output=lambda p, ins: np.zeros_like(ins[0]),
            variants={"lazy": bench.Variant(lazy, model_ns=lambda p: 1e4)}, params=[{"n": 256}])
        """,
    )
    v = m["cases"][0]["variants"]["lazy"]
    assert v["status"] == "correctness_failed"
    assert "NaN" in v["error"] and "poisoned" in v["error"]


def test_output_written_once_per_buffer_is_caught_by_the_repeat_call(tmp_path):
    # correct on the first call into each buffer, then skips work: the repeat call on the same
    # inputs (output poisoned again) leaves NaN
    m = _run_one(
        tmp_path,
        """
        DONE = set()
        def once(x, y, out):
            if id(out) in DONE:
                return
            DONE.add(id(out))
            np.add(x, y, out=out)
        B = bench.Benchmark("vadd", backend="fake", inputs=inputs, reference=lambda x, y: x + y,
            output=lambda p, ins: np.empty_like(ins[0]),
            variants={"once": bench.Variant(once, model_ns=lambda p: 1e4)}, params=[{"n": 256}])
        """,
    )
    v = m["cases"][0]["variants"]["once"]
    assert v["status"] == "correctness_failed"
    assert v["error"].startswith("before timing, repeat call 1 on identical inputs") and "NaN" in v["error"]
    assert v["log"] is None  # never timed


def test_result_cached_by_input_identity_is_caught_during_timing(tmp_path):
    m = _run_one(
        tmp_path,
        """
        CACHE = {}
        def memo(x, y):
            key = (id(x), id(y))
            if key not in CACHE:
                CACHE[key] = x + y
            return CACHE[key]
        B = bench.Benchmark("vadd", backend="fake", inputs=inputs, reference=lambda x, y: x + y,
            variants={"memo": bench.Variant(memo, model_ns=lambda p: 1e4)}, params=[{"n": 256}])
        """,
    )
    v = m["cases"][0]["variants"]["memo"]
    assert v["status"] == "correctness_failed"
    # the first spot check (inputs refilled in place with new values) gets the stale result
    assert v["error"].startswith("during timing (spot check at timed iteration") and "differ from the reference" in v["error"]
    header, _ = read_log(Path(m["file"]).parent / "out" / v["log"])
    # the log is kept (the times happened) but says the result was only checked before timing
    assert header["meta"]["correctness_checked"] == "before_timing"
    assert header["meta"]["bench"]["correctness"]["during_timing"]["ok"] is False


def test_degenerate_reference_is_refused(tmp_path):
    m = _run_one(
        tmp_path,
        """
        B = bench.Benchmark("tiny", backend="fake",
            inputs=lambda p, gen: (gen.randn((64,), "float32", scale=1e-9),),
            reference=lambda x: x, variants={"id": bench.Variant(lambda x: x.copy(), model_ns=lambda p: 1e4)})
        """,
    )
    c = m["cases"][0]
    assert c["status"] == "error" and "all-zero output would match" in c["error"]


def test_constant_input_is_refused(tmp_path):
    m = _run_one(
        tmp_path,
        """
        B = bench.Benchmark("const", backend="fake",
            inputs=lambda p, gen: (np.ones(64, dtype=np.float32),),
            reference=lambda x: x * 2, variants={"x2": bench.Variant(lambda x: x * 2, model_ns=lambda p: 1e4)})
        """,
    )
    assert "constant" in m["cases"][0]["error"]


def test_input_independent_reference_is_refused(tmp_path):
    m = _run_one(
        tmp_path,
        """
        B = bench.Benchmark("k", backend="fake", inputs=inputs,
            reference=lambda x, y: np.arange(8.0), variants={"c": bench.Variant(lambda x, y: np.arange(8.0), model_ns=lambda p: 1e4)},
            params=[{"n": 8}])
        """,
    )
    assert "did not change" in m["cases"][0]["error"]


# ------------------------------------------------------------------------------------------------
# method: warm-up, stopping, cache modes, telemetry
# ------------------------------------------------------------------------------------------------


def test_warmup_runs_until_steady(tmp_path):
    from profaudit.audit.stats import steady_state

    m = _run_one(
        tmp_path,
        """
        B = bench.Benchmark("v", backend="fake", inputs=inputs, reference=lambda x, y: x + y,
            variants={"a": bench.Variant(lambda x, y: x + y, model_ns=lambda p: 5e4)}, params=[{"n": 64}])
        """,
        backend_options={"warmup_calls": 12, "warmup_factor": 6.0, "noise": 0.002},
        min_warmup_s=0.0001,
    )
    v = m["cases"][0]["variants"]["a"]
    header, rows = read_log(Path(m["file"]).parent / "out" / v["log"])
    warm = [r["duration_ns"] for r in rows if r["phase"] == "warmup"]
    meas = np.array([r["duration_ns"] for r in rows if r["phase"] == "measure"])
    assert len(warm) >= 11  # 12 slow calls (one went to the correctness check) were all absorbed
    assert header["meta"]["bench"]["warmup"]["steady"] is True
    assert steady_state(meas).start == 0  # no warm-up head left in the measured samples
    assert meas.max() < 1.2 * np.median(meas)


def test_stops_on_noise_target_or_time_budget(tmp_path):
    body = """
    B = bench.Benchmark("v", backend="fake", inputs=inputs, reference=lambda x, y: x + y,
        variants={"a": bench.Variant(lambda x, y: x + y, model_ns=lambda p: 2e4)}, params=[{"n": 64}])
    """
    (tmp_path / "q").mkdir()
    (tmp_path / "n").mkdir()
    quiet = _run_one(tmp_path / "q", body, backend_options={"noise": 0.001}, max_time_s=5.0)
    assert quiet["cases"][0]["variants"]["a"]["stop_reason"] == "noise_target"
    noisy = _run_one(tmp_path / "n", body, backend_options={"noise": 0.8}, max_time_s=0.01, noise_target=1e-4, max_samples=100_000)
    v = noisy["cases"][0]["variants"]["a"]
    assert v["stop_reason"] == "time_budget" and v["rel_se_median"] > 1e-4


@pytest.mark.parametrize("mode, flush, state", [("cold", True, "cold"), ("hot", False, "hot")])
def test_cache_mode_is_recorded(tmp_path, mode, flush, state):
    m = _run_one(tmp_path, ADD_TWO.replace("params=bench.grid(n=[1024, 2048])", "params=[{'n': 64}]"), cache=mode)
    header, rows = read_log(Path(m["file"]).parent / "out" / m["cases"][0]["variants"]["base"]["log"])
    assert header["meta"]["l2_flush"] is flush
    assert {r["cache_state"] for r in rows} == {state}


def test_rotate_mode_covers_the_cache(tmp_path):
    m = _run_one(tmp_path, ADD_TWO.replace("params=bench.grid(n=[1024, 2048])", "params=[{'n': 4096}]"), cache="rotate", backend_options={"l2_bytes": 200_000})
    header, rows = read_log(Path(m["file"]).parent / "out" / m["cases"][0]["variants"]["base"]["log"])
    c = header["meta"]["bench"]["cache"]
    assert c["input_sets"] * c["input_bytes_per_set"] >= 2 * 200_000 and c["rotation_covers_cache"] is True
    assert "l2_flush" not in header["meta"] and {r["cache_state"] for r in rows} == {"cold"}


def test_hot_vs_cold_comparison_is_flagged_unfair(tmp_path):
    from profaudit import audit
    from profaudit.audit.claim import claim_from_paths

    f = write(tmp_path, ADD_TWO.replace("params=bench.grid(n=[1024, 2048])", "params=[{'n': 64}]"))
    from profaudit import bench

    cold = bench.run_file(f, tmp_path / "cold", options=opts(cache="cold"))
    hot = bench.run_file(f, tmp_path / "hot", options=opts(cache="hot"))
    c = claim_from_paths(tmp_path / "cold" / cold["cases"][0]["variants"]["base"]["log"], tmp_path / "hot" / hot["cases"][0]["variants"]["fast"]["log"], claimed=2.5, statistic="median")
    report = audit(c)
    assert report.verdict == "FAIL"
    assert any(f.rule == "PA209" and f.status.value == "fail" for f in report.findings)


def test_throttled_telemetry_reaches_the_audit(tmp_path):
    from profaudit import bench

    f = write(tmp_path, ADD_TWO.replace("params=bench.grid(n=[1024, 2048])", "params=[{'n': 64}]"))
    bench.run_file(f, tmp_path / "o", options=opts(backend_options={"throttle": "sw_thermal_slowdown"}))
    o = bench.compare_run(tmp_path / "o", "base", "fast")[0]
    assert any(f.rule == "PA203" and f.status.value == "fail" for f in o.report.findings)


def test_precision_flag_changes_are_refused(tmp_path):
    pytest.importorskip("torch")
    m = _run_one(
        tmp_path,
        """
        import torch
        def sneaky(x, y):
            torch.set_float32_matmul_precision("medium")
            return x + y
        B = bench.Benchmark("v", backend="torch", inputs=inputs, reference=lambda x, y: x + y,
            variants={"sneaky": sneaky, "plain": lambda x, y: x + y}, params=[{"n": 64}])
        """,
    )
    import torch

    torch.set_float32_matmul_precision("highest")
    c = m["cases"][0]
    assert c["status"] == "error" and "precision flags" in c["error"]


def test_processes_are_process_level_runs(tmp_path):
    from profaudit import bench

    f = write(tmp_path, ADD_TWO.replace("params=bench.grid(n=[1024, 2048])", "params=[{'n': 64}]"))
    m = bench.run_file(f, tmp_path / "o", options=opts(), processes=2)
    ve = m["cases"][0]["variants"]["fast"]
    assert len(ve["logs"]) == 2 and m["processes"] == 2
    runs = [read_log(tmp_path / "o" / l)[1][0]["run"] for l in ve["logs"]]
    assert runs == [0, 1]
    o = bench.compare_run(tmp_path / "o", "base", "fast")[0]
    assert o.verdict == "PASS"
    assert any(f.rule == "PA408" and f.status.value == "pass" for f in o.report.findings)
    assert not list((tmp_path / "o").glob("manifest.run*.json"))


# ------------------------------------------------------------------------------------------------
# bad input: one line, exit 2
# ------------------------------------------------------------------------------------------------


def test_cli_bad_inputs(tmp_path, cli):
    assert_one_line_error(cli("bench", "run", tmp_path / "missing.py", "-o", tmp_path / "o"), "no such benchmark file")
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    assert_one_line_error(cli("bench", "run", empty, "-o", tmp_path / "o"), "defines no profaudit.bench.Benchmark")
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n")
    assert_one_line_error(cli("bench", "run", broken, "-o", tmp_path / "o"), "syntax error")
    raising = tmp_path / "raising.py"
    raising.write_text("raise RuntimeError('boom')\n")
    assert_one_line_error(cli("bench", "run", raising, "-o", tmp_path / "o"), "RuntimeError: boom")
    f = write(tmp_path, ADD_TWO)
    assert_one_line_error(cli("bench", "run", f, "-o", tmp_path / "o", "-k", "n=3"), "no benchmark case matches")
    assert_one_line_error(cli("bench", "run", f, "-o", tmp_path / "o", "--cache", "warm"), "--cache")
    assert_one_line_error(cli("bench", "compare", tmp_path, "--baseline", "a", "--candidate", "b"), "timing logs")
    assert_one_line_error(cli("bench", "compare", tmp_path / "nope", "--baseline", "a", "--candidate", "b"), "no such file")


def test_compare_without_both_variants(tmp_path, cli, clean_run):
    _, out, _ = clean_run
    assert_one_line_error(cli("bench", "compare", out, "--baseline", "base", "--candidate", "nope"), "no case has both variants")


def test_compare_from_a_shared_log_and_a_folder_without_manifest(clean_run, tmp_path):
    import shutil

    import yaml

    from profaudit import bench
    from profaudit.timinglog import write_timing_log

    _, out, manifest = clean_run
    logs = [out / ve["log"] for ve in manifest["cases"][0]["variants"].values()]
    # one file holding both variants (rows of both logs; the header of the first)
    header, rows_a = read_log(logs[0])
    _, rows_b = read_log(logs[1])
    shared = tmp_path / "both.jsonl"
    write_timing_log(shared, [dict(r, params=json.dumps(r["params"]) if isinstance(r["params"], dict) else r["params"]) for r in rows_a + rows_b], header["meta"])
    o = bench.compare_run(shared, "base", "fast", out_dir=tmp_path / "c1")[0]
    doc = yaml.safe_load(o.claim_path.read_text())
    assert doc["baseline"]["variant"] == "base" and doc["candidate"]["variant"] == "fast" and doc["baseline"]["params"] == {"n": 1024}
    assert o.claimed == pytest.approx(2.0, rel=0.01)
    # a plain folder of logs (no manifest.json)
    folder = tmp_path / "plain"
    folder.mkdir()
    for i, l in enumerate(logs):
        shutil.copy(l, folder / f"log{i}.jsonl")
    o2 = bench.compare_run(folder, "base", "fast")[0]
    assert o2.case_id == "vadd[n=1024]" and o2.verdict == "PASS"


def test_blocked_runs_are_recorded_as_not_interleaved(tmp_path):
    m = _run_one(tmp_path, ADD_TWO.replace("params=bench.grid(n=[1024, 2048])", "params=[{'n': 64}]"), interleave=False)
    out = Path(m["file"]).parent / "out"
    (ha, ra), (hb, rb) = (read_log(out / m["cases"][0]["variants"][v]["log"]) for v in ("base", "fast"))
    assert ha["meta"]["interleaved"] is False and hb["meta"]["interleaved"] is False
    assert max(r["timestamp_ns"] for r in ra) < min(r["timestamp_ns"] for r in rb)  # AAAA then BBBB
    # each block of a variant gets its own spot checks
    assert ha["meta"]["spot_checks"] == hb["meta"]["spot_checks"] == 8
