from __future__ import annotations

import re

from profaudit.audit.evidence import Evidence, SideEvidence, dtype_of
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import _call, differ_text, unrecorded
from profaudit.audit.trace import PRECISION_ORDER, call_times, matmul_kernels, reduced_precision_kernels, traced_precisions

# Ops where TF32 (and reduced-precision reductions) apply: matmuls and convolutions. An
# element-wise add or a softmax has no TF32 path, so asking about TF32 there is noise.
_MATMUL_OP = re.compile(r"^(matmul|gemm|mm|bmm|linear|dense|dot|batched_matmul|addmm|baddbmm|conv.*|.*attention.*|sdpa|mha)$", re.IGNORECASE)
_NOT_MATMUL_OP = re.compile(r"^(softmax|layer_?norm|rms_?norm|unary|binary|elementwise.*|add|mul|sub|div|copy|gelu|relu|silu|exp|scale|vector_add|axpy|reduce.*|sum)$", re.IGNORECASE)
# An achieved FP32 rate this far above the FP32 vector peak cannot be strict FP32 (5 % for
# clock and timing slack).
_PEAK_SLACK = 1.05


def matmul_like(se: SideEvidence) -> bool | None:
    """Whether the side's op has a TF32 path: from meta.op, else its kernel names; None unknown."""
    op = se.get("op")
    if op is not None:
        name = re.sub(r"[\s\-]+", "_", str(op).strip().lower())
        if _MATMUL_OP.match(name):
            return True
        if _NOT_MATMUL_OP.match(name):
            return False
    if se.has_kernels:
        return bool(matmul_kernels(se))
    return None


def not_strict_fp32(ev: Evidence, se: SideEvidence) -> list[str]:
    """Evidence that an fp32 side did not compute in strict FP32: kernel names of tensor-core,
    TF32 or FP16 paths, or an achieved FLOP rate above the device's FP32 vector peak."""
    out = []
    for what, names in reduced_precision_kernels(se).items():
        out.append(f"{what} kernels in its trace ({', '.join(names[:2])})")
    # The rate test needs a FLOP count nobody inflated: the one recomputed from op and shape
    # first (a doubled causal count would otherwise read as tensor cores), and an op with a
    # tensor-core path (an element-wise op above the FP32 peak is a physics problem, PA501).
    rec = se.fact("flops_from_shape")
    flops, fsrc = (float(rec.value), rec.source) if rec is not None else ev.workload_value("flops", se)
    ct = call_times(se)
    t = ct.median if ct is not None and ct.median > 0 else se.typical_time_ns()  # the GPU's own time when traced
    peak = _call(se.spec.peak_flops_per_s, "fp32") if se.spec is not None else None
    if flops and t and peak and matmul_like(se) is not False:
        rate = flops / (t * 1e-9)
        if rate > _PEAK_SLACK * peak:
            out.append(f"{rate / 1e12:.3g} TFLOP/s achieved ({fsrc.split(';')[0]}), above the {peak / 1e12:.3g} TFLOP/s FP32 vector peak of {getattr(se.spec, 'name', 'its device')}")
    return out


def _tf32_gain(se: SideEvidence) -> str:
    """What TF32 is worth on this side's device, from its spec (TF32 tensor peak / FP32 peak)."""
    spec = se.spec
    if spec is not None:
        tf, fp = _call(spec.peak_flops_per_s, "tf32_tensor"), _call(spec.peak_flops_per_s, "fp32")
        if tf and fp:
            return f"TF32 tensor cores peak at {tf / fp:.1f}x the FP32 rate on {getattr(spec, 'name', se.get('device'))}"
        return f"{getattr(spec, 'name', se.get('device'))} has no TF32 peak in its spec"
    dev = se.get("device")
    return f"TF32 can be worth several x on a tensor-core GPU ({'device ' + repr(dev) + ' has no spec' if dev else 'device not recorded'})"


class PrecisionMismatch(Rule):
    """The sides compute in different precisions (dtype, TF32, reduced-precision reductions).

    What it detects: different dtypes; for fp32 on both sides, evidence that one side did not
    compute in strict FP32 while the other did (kernel names of tensor-core, TF32 or FP16 paths
    such as xmma/hmma/tf32/h16816gemm/cutlass tensorop, or an achieved FLOP rate above the
    device's FP32 vector peak) whatever its `tf32` says; TF32 allowed on one side only; for fp16,
    reduced-precision reductions on one side only. For every shared dtype, the input precision
    the matmul/convolution kernel names spell (e4m3/fp8, imma/i8, bf16, f16/h16816gemm, tf32,
    sgemm) is read per side: sides whose kernels read different precisions are a FAIL whatever
    both declare (an fp16 claim over an sm90_xmma_gemm_e4m3 kernel); both reading another
    precision than declared is INFO. TF32 is asked about only for matmuls and
    convolutions (meta.op, else the kernel names): not recorded there -> WARN naming what TF32 is
    worth on the side's device; unknown op -> an assumption. A difference the claim declares in
    `intended_differences` is a WARN.

    Why it matters: lower precision is faster by design: a TF32 matmul took 0.016 s against
    0.11 s in FP32 on GA100 with 50x the relative error (PyTorch CUDA notes). Comparing across
    precisions measures the dtype, not the kernel.

    Example: baseline fp32 without TF32, candidate bf16: FAIL. Both "fp32, tf32: false", the
    candidate's trace runs sm80_xmma_gemm_f32f32_tf32f32: FAIL.
    """

    code = "PA301"
    name = "precision-mismatch"
    severity = Severity.FAIL
    pitfalls = ("P3",)
    needs = ("dtype of both sides; tf32 for fp32 matmul work; kernel names or FLOPs for the evidence",)
    unknown_severity = Severity.WARN

    def check(self, ev: Evidence) -> list[Finding]:
        b, c = ev.baseline, ev.candidate
        db, dc = b.fact("dtype"), c.fact("dtype")
        missing = unrecorded(ev, db, dc)
        if missing:
            return [self.cannot(f"the dtype of the {missing} is not recorded (meta.dtype)", dtype_baseline=db, dtype_candidate=dc)]
        evid = {"dtype_baseline": db, "dtype_candidate": dc}
        if dtype_of(b) != dtype_of(c):
            if ev.intended("dtype"):
                return [self.flag(Severity.WARN, "declared precision change: " + differ_text("dtype", db, dc) + "; the speedup includes the precision change and its accuracy cost", "both", **evid)]
            return [self.flag(Severity.FAIL, "different precisions: " + differ_text("dtype", db, dc), "both", non_comparable=True, **evid)]
        out: list[Finding] = []
        if dtype_of(b) == "fp32":
            out.extend(self._fp32(ev, evid))
        if dtype_of(b) == "fp16":
            rb, rc = b.fact("allow_fp16_reduced_precision"), c.fact("allow_fp16_reduced_precision")
            if rb is not None and rc is not None and rb.value != rc.value:
                out.append(self.flag(Severity.FAIL, "reduced-precision fp16 reductions on one side only: " + differ_text("allow_fp16_reduced_precision", rb, rc), "both", non_comparable=True, **evid))
        if not any(f.status.value == "fail" for f in out):
            out.extend(self._traced(ev, evid))
        if any(f.status.value == "fail" for f in out):
            return out
        return out + [self.ok(f"both sides compute in {dtype_of(b)}" + (f" (TF32 {'on' if b.get('tf32') else 'off'})" if dtype_of(b) == "fp32" and b.has("tf32") else ""), **evid)]

    def _traced(self, ev: Evidence, evid: dict) -> list[Finding]:
        """What the sides' matmul/convolution kernel names say they read, against each other and
        the shared declared dtype: the declaration is a claim, the kernel that ran is evidence.
        A side whose names spell no precision keeps its declared dtype."""
        declared = dtype_of(ev.baseline)
        seen = {se.role: traced_precisions(se) for se in ev.sides}
        if not (seen["baseline"] or seen["candidate"]):
            return []
        # the cheapest precision a side's kernels read is the one that can make it faster
        eff = {r: next(iter(seen[r])) if seen[r] else declared for r in seen}

        def said(r: str) -> str:
            if not seen[r]:
                return f"the {r} shows no matmul kernel that names its precision (its dtype says {declared})"
            return f"the {r}'s kernels read {eff[r]} ({', '.join(seen[r][eff[r]])})"

        if eff["baseline"] == eff["candidate"]:
            if eff["baseline"] != declared and declared in PRECISION_ORDER:
                return [self.flag(Severity.INFO, f"both sides' matmul kernels read {eff['baseline']} although their dtype says {declared} ({said('baseline')}; {said('candidate')})", "both", traced_precision=seen, **evid)]
            return []
        off = [r for r in ("baseline", "candidate") if eff[r] != declared] or ["baseline", "candidate"]
        side = off[0] if len(off) == 1 else "both"
        text = f"{said('baseline')}; {said('candidate')}: the speedup includes the precision change"
        if ev.intended("dtype") or ev.intended("precision"):
            return [self.flag(Severity.WARN, f"declared precision change seen in the kernels: {text}", side, traced_precision=seen, **evid)]
        return [self.flag(Severity.FAIL, f"precision mismatch although both sides say {declared}: {text}", side, non_comparable=True, traced_precision=seen, **evid)]

    def _fp32(self, ev: Evidence, evid: dict) -> list[Finding]:
        b, c = ev.baseline, ev.candidate
        seen = {se.role: not_strict_fp32(ev, se) for se in ev.sides}
        tf = {se.role: se.fact("tf32") for se in ev.sides}
        # A side is strict FP32 unless the evidence or its own tf32 says otherwise.
        loose = {r: bool(seen[r]) or bool(tf[r] is not None and tf[r].value) for r in seen}
        if seen["baseline"] or seen["candidate"]:
            if loose["baseline"] != loose["candidate"]:
                role = "baseline" if seen["baseline"] else "candidate"
                other = "candidate" if role == "baseline" else "baseline"
                if ev.intended("tf32") or ev.intended("dtype"):
                    return [self.flag(Severity.WARN, f"declared precision change: the {role} did not compute in strict FP32 ({'; '.join(seen[role])})", role, evidence_of_reduced_precision=seen, **evid)]
                said = f" although its tf32 says {tf[role].value!r} ({tf[role].source})" if tf[role] is not None and not tf[role].value else ""
                return [self.flag(Severity.FAIL, f"precision mismatch: the {role} did not compute in strict FP32{said}: {'; '.join(seen[role])}; the {other} did", role, non_comparable=True, evidence_of_reduced_precision=seen, **evid)]
            conflict = [r for r in seen if seen[r] and tf[r] is not None and not tf[r].value]
            if conflict:
                return [self.flag(Severity.INFO, f"both sides ran reduced-precision paths although {' and '.join(conflict)} record tf32 false: {'; '.join(s for r in seen for s in seen[r])}", "both", evidence_of_reduced_precision=seen, **evid)]
            return []
        tb, tc = tf["baseline"], tf["candidate"]
        if tb is not None and tc is not None and tb.value != tc.value:
            if ev.intended("tf32"):
                return [self.flag(Severity.WARN, "declared TF32 change: " + differ_text("tf32", tb, tc), "both", tf32_baseline=tb, tf32_candidate=tc, **evid)]
            return [self.flag(Severity.FAIL, "TF32 tensor-core math on one side only: " + differ_text("tf32", tb, tc), "both", non_comparable=True, tf32_baseline=tb, tf32_candidate=tc, **evid)]
        if tb is not None and tc is not None:
            return []
        kinds = {matmul_like(se) for se in ev.sides}
        if True in kinds:
            return [self.flag(Severity.WARN, f"fp32 matmul/convolution work but whether TF32 was allowed is not recorded for the {unrecorded(ev, tb, tc)} and no kernel names show which path ran; {_tf32_gain(b)}", "both", tf32_baseline=tb, tf32_candidate=tc, **evid)]
        if kinds == {False}:
            return []  # no matmul or convolution: TF32 does not apply
        return [self.cannot(f"whether TF32 was allowed is not recorded for the {unrecorded(ev, tb, tc)}, and neither meta.op nor kernel names say whether the op is a matmul or convolution (where TF32 applies)")]


RULE = PrecisionMismatch()
