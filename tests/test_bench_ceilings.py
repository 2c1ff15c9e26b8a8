"""`profaudit bench ceilings`: the ceilings file (numpy on this CPU, tiny sizes), its byte/FLOP
accounting against the array sizes, the best-of-N statistic, the round trip into the roofline,
bad files, and the CUDA plan (torch on CPU posing as a CUDA device; the fake backend for times).
No assertion depends on how fast this machine is: rates are checked against the recorded times."""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest

from conftest import assert_one_line_error
from profaudit.bench import RunOptions
from profaudit.bench.backends import get_backend
from profaudit.bench.ceilings import FMA_A, FMA_B, plan_suite, run_ceilings
from profaudit.errors import InputError, UsageError
from profaudit.measured import BENCH_SOURCE, CEILINGS_FORMAT, measured_device, measured_spec, read_ceilings
from profaudit.roofline import ceilings, roofline
from profaudit.specs import get_spec

from test_rocprof_compute import workload  # noqa: F401 - a self-made MI300X workload folder (profile on disk)

FAST = dict(min_samples=3, max_samples=6, min_time_s=0.0, max_time_s=0.01, min_warmup_calls=1, min_warmup_s=0.0, max_warmup_s=0.01, spot_checks=1,
            repeat_calls=1, telemetry=False)
ARRAY_BYTES, MATMUL_N = 1 << 16, 32


@pytest.fixture(scope="module")
def numpy_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("ceil") / "ceilings.json"
    doc = run_ceilings(path, backend="numpy", device="cpu", opts=RunOptions(**FAST), array_bytes=ARRAY_BYTES, matmul_n=MATMUL_N)
    return path, doc


def test_file_is_written_and_well_formed(numpy_file):
    path, doc = numpy_file
    on_disk = json.loads(path.read_text())
    assert on_disk["format"] == CEILINGS_FORMAT and on_disk["version"] == 1 and on_disk["simulated"] is False
    assert on_disk["device_name"].startswith("cpu") and on_disk["backend"] == "numpy" and on_disk["statistic"].startswith("best of N")
    assert [m["name"] for m in on_disk["measurements"]] == ["copy", "reduce", "matmul_fp32", "matmul_fp64"]
    assert all(m["status"] == "ok" and m["correctness_checked"] == "both" and m["cache_mode"] == "hot" for m in on_disk["measurements"]), on_disk["measurements"]
    # what numpy cannot express is listed with the reason, not silently missing
    assert {s["name"] for s in on_disk["not_measured"]} == {"triad", "fma_fp32"}
    assert on_disk["cache_bytes"] > 0 and on_disk["cache_bytes_source"]


def test_bytes_and_flops_come_from_the_sizes(numpy_file):
    _, doc = numpy_file
    m = {r["name"]: r for r in doc["measurements"]}
    n = ARRAY_BYTES // 4  # a multiple of 1024 already: no rounding up
    assert doc["array_bytes"] == ARRAY_BYTES and m["copy"]["sizes"]["elements"] == n
    assert m["copy"]["bytes_per_call"] == 2 * n * 4 and m["copy"]["flops_per_call"] == 0
    assert m["reduce"]["bytes_per_call"] == n * 4 + 4
    assert m["matmul_fp32"]["flops_per_call"] == 2 * MATMUL_N**3 and m["matmul_fp32"]["bytes_per_call"] == 3 * MATMUL_N**2 * 4
    assert m["matmul_fp64"]["flops_per_call"] == 2 * MATMUL_N**3 and m["matmul_fp64"]["bytes_per_call"] == 3 * MATMUL_N**2 * 8
    for r in doc["measurements"]:
        unit, work = ("bytes_per_s", r["bytes_per_call"]) if r["kind"] == "bandwidth" else ("flops_per_s", r["flops_per_call"])
        # best of N: the shortest sample; the median rate can only be lower
        assert r[f"best_{unit}"] == work / r["best_ns"] * 1e9 and r[f"median_{unit}"] == work / r["median_ns"] * 1e9
        assert r["best_ns"] <= r["median_ns"] and r["samples"] >= FAST["min_samples"]
    roofs = doc["roofs"]
    assert roofs["bandwidth_bytes_per_s"]["dram"]["value"] == max(m["copy"]["best_bytes_per_s"], m["reduce"]["best_bytes_per_s"])
    assert roofs["peak_flops_per_s"] == {"fp32": {"value": m["matmul_fp32"]["best_flops_per_s"], "from": "matmul_fp32"},
                                         "fp64": {"value": m["matmul_fp64"]["best_flops_per_s"], "from": "matmul_fp64"}}


def test_declared_bytes_equal_the_arrays_the_harness_makes():
    # independent of the formulas above: the nbytes of the inputs and outputs each benchmark builds
    be = get_backend("numpy", "cpu")
    for plan in plan_suite(be, array_bytes=ARRAY_BYTES, matmul_n=MATMUL_N).plans:
        case = plan.benchmark.cases()[0]
        ins = plan.benchmark.inputs(case.params, be.generator(0))
        out = plan.benchmark.output(case.params, ins) if plan.benchmark.output else np.asarray(plan.benchmark.variants[plan.name].fn(*ins))
        assert plan.bytes == sum(be.nbytes(x) for x in ins) + out.nbytes, plan.name
        assert case.value(plan.benchmark.min_bytes) == plan.bytes


def test_round_trip_into_the_roofline(numpy_file):
    path, doc = numpy_file
    m = read_ceilings(path)
    assert m.bandwidths_bytes_per_s == {"dram": doc["roofs"]["bandwidth_bytes_per_s"]["dram"]["value"]}
    assert m.peaks_flops_per_s == {k: v["value"] for k, v in doc["roofs"]["peak_flops_per_s"].items()}
    assert m.device_name == doc["device_name"] and m.source.startswith(BENCH_SOURCE)
    spec = measured_spec(m, get_spec("mi300x"))
    c = ceilings(spec)
    assert set(c["ceiling"].to_list()) == {"dram", "fp32", "fp64"}
    assert c["source"].str.starts_with("measured: profaudit bench ceilings").all()
    bw = m.bandwidths_bytes_per_s["dram"]
    k = pl.DataFrame({"profile_id": ["p"], "kernel_id": [0], "name": ["copy"], "short_name": ["copy"], "device_name": ["AMD Instinct MI300X"],
                      "duration_ns": [1e6], "flops_fp32": [1.0], "dram_bytes": [3e6]})
    r = roofline(k, spec, clock="boost").row(0, named=True)
    assert r["device_key"] == "mi300x@measured" and r["bound_at_boost"] == "dram"
    assert r["roof_pct_at_boost"] == pytest.approx(100 * 3e6 / bw / 1e-3, rel=1e-12)


def test_roofline_cli_draws_against_the_file(numpy_file, workload, cli, tmp_path):  # noqa: F811
    path, _ = numpy_file
    # measured on this CPU, the profile ran on an MI300X: refused unless --device says so
    assert_one_line_error(cli("roofline", workload, "--ceilings", path), "measured on cpu")
    res = cli("roofline", workload, "--ceilings", path, "--device", "mi300x", "--clock", "boost", "--format", "csv", "--columns", "device_key")
    assert res.code == 0, res
    assert "mi300x@measured" in res.out
    doc = json.loads(path.read_text())
    doc["device_name"] = "AMD Instinct MI300X"
    same = tmp_path / "mi300x.json"
    same.write_text(json.dumps(doc))
    res = cli("roofline", workload, "--ceilings", same, "--format", "csv", "--columns", "device_key")
    assert res.code == 0 and "mi300x@measured" in res.out, res


@pytest.mark.parametrize("edit, needle", [
    (lambda d: d.update(format="something-else"), 'not a profaudit ceilings file (no "format": "profaudit-ceilings"'),
    (lambda d: d.update(version=99), "version 99 was written by a newer profaudit"),
    (lambda d: d.update(version="1"), "version '1' is not a version number"),
    (lambda d: d.update(simulated=True), "simulated (fake) backend are not measurements"),
    (lambda d: d.pop("roofs"), "has no roofs object"),
    (lambda d: d["roofs"]["bandwidth_bytes_per_s"]["dram"].update(value=-5.0), "roofs.bandwidth_bytes_per_s.dram: value -5.0 is not a positive rate"),
    (lambda d: d["roofs"]["peak_flops_per_s"].update(fp23={"value": 1.0}), "unknown key 'fp23'"),
    (lambda d: d.update(roofs={"bandwidth_bytes_per_s": {}, "peak_flops_per_s": {}}), "holds no roof"),
])
def test_bad_files_give_one_line_errors(numpy_file, workload, cli, tmp_path, edit, needle):  # noqa: F811
    doc = json.loads(numpy_file[0].read_text())
    edit(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=None) as err:
        read_ceilings(bad)
    assert needle in str(err.value) and str(bad) in str(err.value)
    assert_one_line_error(cli("roofline", workload, "--ceilings", bad, "--device", "mi300x"), needle)


def test_cut_json_is_one_line(workload, cli, tmp_path):  # noqa: F811
    bad = tmp_path / "cut.json"
    bad.write_text('{"format": "profaudit-ceilings", "vers')
    assert_one_line_error(cli("roofline", workload, "--ceilings", bad, "--device", "mi300x"), "not a ceilings file: invalid JSON")


def test_cli_writes_the_file(cli, tmp_path):
    out = tmp_path / "c.json"
    res = cli("bench", "ceilings", "--backend", "numpy", "-o", out, "--array-bytes", "65536", "--matmul-n", "32", "--only", "copy", "--only", "matmul_fp32",
              "--min-samples", "3", "--max-time", "0.01", "--no-telemetry")
    assert res.code == 0, res
    doc = json.loads(out.read_text())
    assert [m["name"] for m in doc["measurements"]] == ["copy", "matmul_fp32"] and "copy" in res.out and "best" in res.out
    assert_one_line_error(cli("bench", "ceilings", "--backend", "jax", "-o", out), "--backend 'jax': choose torch or numpy")
    assert_one_line_error(cli("bench", "ceilings", "--backend", "numpy", "--only", "triad", "-o", out), "--only triad: no such microbenchmark here")


def test_fake_device_rates_are_work_over_the_best_time(tmp_path):
    # the simulated device: times are model_ns x hot_factor exactly (no noise), so the rates in
    # the file must be the configured rates / hot_factor to the last bit of rounding
    opts = RunOptions(**FAST, backend_options={"noise": 0.0, "bandwidth_bytes_per_s": 2e12, "fp32_flops_per_s": 5e13, "fp64_flops_per_s": 2.5e13, "hot_factor": 0.8})
    path = tmp_path / "fake.json"
    doc = run_ceilings(path, backend="fake", device="auto", opts=opts, array_bytes=1 << 20, matmul_n=64)
    m = {r["name"]: r for r in doc["measurements"]}
    assert m["copy"]["best_bytes_per_s"] == pytest.approx(2e12 / 0.8, rel=1e-12)
    assert m["reduce"]["best_bytes_per_s"] == pytest.approx(2e12 / 0.8, rel=1e-12)
    assert m["matmul_fp32"]["best_flops_per_s"] == pytest.approx(5e13 / 0.8, rel=1e-12)
    assert m["matmul_fp64"]["best_ns"] == pytest.approx(2 * 64**3 / 2.5e13 * 1e9 * 0.8, rel=1e-12)
    assert doc["simulated"] is True and doc["device_name"] == "fake-device (simulated)"
    with pytest.raises(InputError, match="not measurements"):
        read_ceilings(path)


def test_cuda_plan_sizes_and_precisions(monkeypatch):
    torch = pytest.importorskip("torch")
    be = get_backend("torch", "cpu")
    # the CUDA code path on this CPU: a device reporting a 50 MiB L2 through the driver
    monkeypatch.setattr(be, "device_kind", "cuda")
    monkeypatch.setattr(be, "cache_bytes", lambda: (50 * 2**20, "cudaDevAttrL2CacheSize (stand-in)"))
    suite = plan_suite(be, matmul_n=1024, fma_elements=4096, fma_iters=64)
    names = [p.name for p in suite.plans]
    assert names[:3] == ["copy", "triad", "reduce"] and names[-4:] == ["matmul_fp16_tensor", "matmul_bf16_tensor", "matmul_tf32_tensor", "matmul_fp32"]
    try:
        import triton  # noqa: F401

        assert names[3] == "fma_fp32"
    except ImportError:
        assert [s.name for s in suite.skipped] == ["fma_fp32"]
    n = 8 * 50 * 2**20 // 4  # 8x the L2 per array
    assert suite.array_bytes == n * 4 and "cudaDevAttrL2CacheSize" in suite.plans[0].how
    plans = {p.name: p for p in suite.plans}
    assert plans["triad"].bytes == 3 * n * 4 and plans["triad"].flops == 2 * n
    assert {p.roof for p in suite.plans if p.name.startswith("matmul")} == {"fp16_tensor", "bf16_tensor", "tf32_tensor", "fp32"}
    assert plans["matmul_fp16_tensor"].bytes == 3 * 1024**2 * 2 and plans["matmul_fp16_tensor"].flops == 2 * 1024**3
    # TF32 on for its case only, set before the harness reads the flags and restored after
    before = torch.get_float32_matmul_precision()
    undo = plans["matmul_tf32_tensor"].setup()
    assert torch.get_float32_matmul_precision() == "high" and be.tf32_allowed("float32") is not False
    undo()
    assert torch.get_float32_matmul_precision() == before
    assert plans["matmul_tf32_tensor"].benchmark.variants["matmul_tf32_tensor"].tf32 is True
    assert plans["matmul_fp32"].benchmark.variants["matmul_fp32"].tf32 is False
    if "fma_fp32" in plans:
        p = plans["fma_fp32"]
        assert p.flops == 2 * 64 * 4096 and p.bytes == 2 * 4096 * 4
        # the reference's closed form equals the 64 FMA steps it stands for (in float64)
        x = np.linspace(-3.0, 5.0, 11)
        y = x.copy()
        for _ in range(64):
            y = y * FMA_A + FMA_B
        assert np.allclose(p.benchmark.reference(x), y, rtol=1e-13, atol=1e-13)


def test_triad_and_copy_on_torch_cpu(tmp_path):
    pytest.importorskip("torch")
    doc = run_ceilings(tmp_path / "t.json", backend="torch", device="cpu", opts=RunOptions(**FAST), array_bytes=ARRAY_BYTES, only=["triad", "copy"])
    m = {r["name"]: r for r in doc["measurements"]}
    assert m["triad"]["status"] == "ok" and m["copy"]["status"] == "ok", doc["measurements"]
    n = ARRAY_BYTES // 4
    assert m["triad"]["bytes_per_call"] == 3 * n * 4 and m["triad"]["best_flops_per_s"] == 2 * n / m["triad"]["best_ns"] * 1e9
    assert not math.isnan(doc["roofs"]["bandwidth_bytes_per_s"]["dram"]["value"])
