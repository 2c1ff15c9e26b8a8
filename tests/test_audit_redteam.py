"""Red-team cases an outside reviewer would try on the audit (engineer G, session 13): claims whose
declarations are fair while the evidence is not. Each case is written in the real export formats
(nsys SQLite, Kineto JSON, read back through the parsers: tests/audit_traces.py) and checks three
things: the verdict rests on the evidence (kernel names, recorded device properties), the headline
after a FAIL is the corrected number or none, and a fair twin stays silent."""

from __future__ import annotations

import json

import pytest

from audit_fixtures import claim, side
from audit_traces import calls, kineto_json, load, nsys_sqlite, tclaim, traced, triggered
from profaudit.audit import Severity, Status, audit

FP16_MM = {"dtype": "fp16", "op": "matmul", "shape": [4096, 4096, 4096]}
BF16_MM = {"dtype": "bf16", "op": "matmul", "shape": [4096, 4096, 4096]}
HGEMM = "ampere_h16816gemm_256x128_ldg8_stages_32x3_nn"
E4M3 = "sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"
BF16 = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"
IMMA = "sm80_xmma_gemm_i8i8_i32i32_s32_tn_n_tilesize128x128x64_stage3_imma"
SGEMM = "ampere_sgemm_128x64_nn"
PERIOD = 1_000_000  # ns between calls: every kernel below fits in its call


def _pa301(tmp_path, fmt, meta, base_kernel, cand_kernel, tb=400_000, tc=200_000):
    b = traced(tmp_path, "baseline", tb, calls(20, [(base_kernel, 7, tb, 0)]), fmt=fmt, meta=meta, period_ns=PERIOD)
    c = traced(tmp_path, "candidate", tc, calls(20, [(cand_kernel, 7, tc, 0)]), fmt=fmt, meta=meta, seed=2, period_ns=PERIOD)
    return audit(tclaim(b, c, speedup=round(tb / tc, 2)))


@pytest.mark.parametrize("fmt", ["nsys", "kineto"])
def test_fp16_on_both_sides_while_the_candidate_runs_an_fp8_gemm(tmp_path, fmt):
    report = _pa301(tmp_path, fmt, FP16_MM, HGEMM, E4M3)
    f = triggered(report, "PA301")
    assert f and f[0].severity is Severity.FAIL and f[0].side == "candidate"
    assert "both sides say fp16" in f[0].message and "candidate's kernels read fp8" in f[0].message and "e4m3" in f[0].message
    assert "baseline's kernels read fp16" in f[0].message
    # not comparable: no corrected number can exist, so none is printed
    assert report.verdict == "FAIL" and report.supported.status == "not supported" and report.supported.interval is None


def test_the_baseline_running_fp32_sgemm_under_an_fp16_claim_is_named(tmp_path):
    report = _pa301(tmp_path, "nsys", FP16_MM, SGEMM, HGEMM, tb=800_000)
    f = triggered(report, "PA301")
    assert f and f[0].side == "baseline" and "baseline's kernels read fp32 (ampere_sgemm_128x64_nn)" in f[0].message
    assert report.supported.interval is None


def test_int8_gemm_under_a_bf16_claim(tmp_path):
    f = triggered(_pa301(tmp_path, "kineto", BF16_MM, BF16, IMMA), "PA301")
    assert f and "candidate's kernels read int8" in f[0].message and "imma" in f[0].message


def test_same_traced_precision_on_both_sides_passes_and_a_declared_change_is_a_warning(tmp_path):
    fair = _pa301(tmp_path, "nsys", BF16_MM, BF16, BF16.replace("128x128x64", "256x128x64"))
    assert not triggered(fair, "PA301")
    assert any(f.rule == "PA301" and f.status is Status.PASS and "bf16" in f.message for f in fair.findings)
    b = traced(tmp_path, "baseline", 400_000, calls(20, [(HGEMM, 7, 400_000, 0)]), meta=FP16_MM, period_ns=PERIOD)
    c = traced(tmp_path, "candidate", 200_000, calls(20, [(E4M3, 7, 200_000, 0)]), meta=FP16_MM, seed=2, period_ns=PERIOD)
    f = triggered(audit(tclaim(b, c, speedup=2.0, intended=("dtype",))), "PA301")
    assert f and f[0].severity is Severity.WARN and "declared precision change" in f[0].message


def test_both_sides_reading_another_precision_than_declared_is_information(tmp_path):
    report = _pa301(tmp_path, "nsys", FP16_MM, E4M3, E4M3.replace("128x128x64", "256x128x64"))
    fs = [f for f in report.findings if f.rule == "PA301"]
    assert not triggered(report, "PA301")
    assert any(f.severity is Severity.INFO and "read fp8 although their dtype says fp16" in f.message for f in fs)


def test_fp32_claim_with_tf32_on_one_side_and_fp16_on_the_other(tmp_path):
    # Both sides are "not strict FP32", which the fp32 check alone took as one mode (INFO); the
    # kernels say one side read TF32 and the other FP16: different precisions.
    mm = {"dtype": "fp32", "tf32": True, "op": "matmul", "shape": [4096, 4096, 4096]}
    tf32 = "sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4"
    f = triggered(_pa301(tmp_path, "nsys", mm, tf32, HGEMM), "PA301")
    assert f and f[0].severity is Severity.FAIL and "candidate's kernels read fp16" in f[0].message and "baseline's kernels read tf32" in f[0].message


# ---------------------------------------------------------------------------------------------
# the device the traces recorded
# ---------------------------------------------------------------------------------------------


def _kineto_side(tmp_path, role, per_call, sms, mem, *, seed, name="softmax_kernel"):
    path = kineto_json(tmp_path / f"{role}-{sms}.pt.trace.json", calls(20, [(name, 7, per_call, 0)]), period_ns=PERIOD)
    doc = json.loads(path.read_text())
    doc["deviceProperties"][0].update(numSms=sms, totalGlobalMem=mem)
    path.write_text(json.dumps(doc))
    return side(role, per_call, seed=seed, n=60, runs=1, meta={"timed_range": "call", "profiled_calls": 20}, profiles=load(path))


def test_same_device_name_with_fewer_sms_in_the_baseline_trace_is_a_mig_slice(tmp_path):
    # Both metas and both trace names say H100 80GB HBM3; the baseline's trace records 60 SMs and
    # 40 GB (a 3g.40gb MIG slice reports its parent's name): the speedup measures the slice.
    b = _kineto_side(tmp_path, "baseline", 200_000, 60, 42_949_672_960, seed=1)
    c = _kineto_side(tmp_path, "candidate", 100_000, 132, 85_000_000_000, seed=2)
    report = audit(tclaim(b, c, speedup=2.0))
    f = [x for x in triggered(report, "PA201") if x.severity is Severity.FAIL]
    assert f and "132 SMs" in f[0].message and "60 SMs" in f[0].message and "MIG" in f[0].message
    assert report.verdict == "FAIL" and report.supported.interval is None
    twin = audit(tclaim(_kineto_side(tmp_path, "baseline", 200_000, 132, 85_000_000_000, seed=1), c, speedup=2.0))
    assert not triggered(twin, "PA201")


def test_ranks_on_different_devices_within_one_side_are_a_device_mismatch(tmp_path):
    # one side's job: rank 3 ran on an A100 while the others ran on H100s (PA201 said "both sides
    # ran on NVIDIA H100" from the first rank's metadata)
    from audit_ranks_fixtures import _root, multi_claim, run_folder
    from ranks_synth import make_run, write_run

    docs, _ = make_run(world_size=4, steps=7, ranks_per_host=2, compute_kernels_per_step=4, seed=99)
    for d in docs:
        if d["distributedInfo"]["rank"] == 3:
            d["deviceProperties"][0]["name"] = "NVIDIA A100-SXM4-80GB"
    folder = _root() / "mixed-devices"
    write_run(folder, docs)
    report = audit(multi_claim(run_folder(kernels=6), folder))
    f = [x for x in triggered(report, "PA201") if x.side == "candidate"]
    assert f and "A100" in f[0].message and "rank-3" in f[0].message and "H100" in f[0].message
    assert not any(x.rule == "PA201" and x.status is Status.PASS for x in report.findings)
    assert report.supported.interval is None


# ---------------------------------------------------------------------------------------------
# unknown is coverage, said once
# ---------------------------------------------------------------------------------------------


def test_what_could_not_be_checked_is_listed_once_as_coverage_in_every_render():
    # The text, Markdown and HTML reports printed every "cannot check" twice: as a row of the
    # notes table and again under the assumptions. It is coverage: said once, never as a finding.
    from profaudit.audit.render import render

    b = side("baseline", 1.0e6, seed=1, drop=("shape", "batch_size", "dtype", "power_limit_w"), profiles=None)
    c = side("candidate", 0.5e6, seed=2, drop=("shape", "batch_size", "dtype", "power_limit_w"), profiles=None)
    report = audit(claim(b, c))
    unknown = [f for f in report.findings if f.status is Status.UNKNOWN]
    assert len(unknown) >= 3 and report.verdict == "PASS", report.reasons
    for fmt_ in ("text", "markdown", "html"):
        out = render(report, fmt_, width=400)
        for f in unknown:
            what = f.message.removeprefix("cannot check: ")[:50]
            assert out.count(what) == 1, (fmt_, what)
    text = render(report, "text", width=70)
    # a wrapped "passed:" list breaks between rules, never inside "PA201 device-mismatch"
    assert not any(line.rstrip().endswith(("PA201", "PA202", "PA108")) for line in text.splitlines())


def test_an_idle_second_gpu_in_the_trace_is_not_the_sides_device(tmp_path):
    # a workstation's display card listed in deviceProperties ran none of the side's kernels
    path = kineto_json(tmp_path / "two-gpus.pt.trace.json", calls(20, [("softmax_kernel", 7, 200_000, 0)]), period_ns=PERIOD)
    doc = json.loads(path.read_text())
    doc["deviceProperties"].append({"id": 1, "name": "NVIDIA T400 4GB", "totalGlobalMem": 4_000_000_000, "computeMajor": 7, "computeMinor": 5, "numSms": 6})
    path.write_text(json.dumps(doc))
    b = side("baseline", 200_000, seed=1, n=60, runs=1, meta={"timed_range": "call", "profiled_calls": 20}, profiles=load(path))
    c = side("candidate", 100_000, seed=2, n=60, runs=1, meta={"timed_range": "call", "profiled_calls": 20}, profiles=load(path))
    report = audit(tclaim(b, c, speedup=2.0))
    assert not triggered(report, "PA201"), [f.message for f in triggered(report, "PA201")]
