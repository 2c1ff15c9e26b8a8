"""Sabotaged torch kernels run through profaudit's own harness on CPU torch (engineer G, session 13):
benchmarks/cpu_torch_sabotage.py holds them (a cache keyed on the buffers' write counter, work
handed to a thread, bfloat16 inside a float32 case, half the rows, a float16 output) beside an
honest variant. Each is caught with one line naming the check; the honest one stays ok. The
harness retires a caught variant and keeps timing the rest, so the file runs one case."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[1]
QUICK = dict(min_samples=20, max_time_s=0.3, min_time_s=0.01, max_warmup_s=0.1, min_warmup_s=0.005, block_target_s=0.005)

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="CPU saboteurs; on a GPU benchmarks/gpu_capture.sh runs gpu_sabotage.py")


# the stopping rule met at once: the spot-check rounds then come back to back, with no timed call
# between a round's restore and the next round's controls
BACK_TO_BACK = dict(min_samples=3, max_time_s=0.001, min_time_s=0.0, max_warmup_s=0.01, min_warmup_s=0.001, block_target_s=0.001)


@pytest.mark.parametrize("regime", [QUICK, BACK_TO_BACK], ids=["quick", "back_to_back"])
def test_sabotaged_torch_variants_are_caught_and_the_honest_one_is_not(tmp_path, monkeypatch, regime):
    from profaudit import bench

    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    from cpu_torch_sabotage import EXPECTED

    m = bench.run_file(REPO / "benchmarks" / "cpu_torch_sabotage.py", tmp_path / "out", options=bench.RunOptions(seed=3, **regime))
    v = m["cases"][0]["variants"]
    assert {n: ve["status"] for n, ve in v.items()} == EXPECTED, {n: ve["error"] for n, ve in v.items()}
    assert all("\n" not in (ve["error"] or "") for ve in v.values())
    # the buffer-version cache passes every value check: only the timing of its spot checks
    # (a control on the untouched inputs against a call on new values) shows the lookup
    assert v["version_cache"]["error"].startswith("during timing: the ") and "memoised on input values or buffers" in v["version_cache"]["error"]
    assert "NaN where the reference is finite" in v["async_worker"]["error"]
    assert "beyond rtol=0.0001" in v["bf16_inside"]["error"]
    assert "elements differ from the reference" in v["half_rows"]["error"]
    # no claim for a caught variant: bench compare refuses to write one
    outs = bench.compare_run(tmp_path / "out", "honest", "version_cache")
    assert outs[0].verdict == "FAIL" and outs[0].claim_path is None


def test_a_lone_variant_answering_a_float32_case_in_float16_is_caught(tmp_path):
    # One variant, so no other's dtype to compare with, and a tolerance loose enough for
    # half-precision values: before, it passed every check and its log said float32.
    from profaudit import bench
    from tests.test_bench import opts, write

    body = """
    B = bench.Benchmark("vadd", backend="fake", inputs=inputs, reference=lambda x, y: x + y, dtype="float32", rtol=1e-2, atol=1e-2,
        variants={"half": bench.Variant(lambda x, y: (x + y).astype(np.float16), model_ns=lambda p: 1e4)}, params=[{"n": 256}])
    """
    m = bench.run_file(write(tmp_path, body), tmp_path / "out", options=opts())
    v = m["cases"][0]["variants"]["half"]
    assert v["status"] == "correctness_failed"
    assert v["error"] == "output 0 is float16, narrower than the float32 the benchmark declares: it computed in a lower precision than the case asks for"
    # the same variant in a float16 case is what was asked for
    m = bench.run_file(write(tmp_path, body.replace('dtype="float32"', 'dtype="float16"')), tmp_path / "out16", options=opts())
    assert m["cases"][0]["variants"]["half"]["status"] == "ok", m["cases"][0]["variants"]["half"]["error"]
