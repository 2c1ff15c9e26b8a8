from __future__ import annotations

from profaudit.audit.evidence import Evidence, dtype_of
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import differ_text, unrecorded


class PrecisionMismatch(Rule):
    """The sides compute in different precisions (dtype, TF32, reduced-precision reductions).

    What it detects: different dtypes; for fp32 on both sides, TF32 allowed on one side only (or
    not recorded: TF32 alone is worth ~7x on A100); for fp16, reduced-precision reductions
    allowed on one side only. A difference the claim declares in `intended_differences` is a
    WARN (the claim is about the precision change, and precision changes correctness).

    Why it matters: lower precision is faster by design: a TF32 matmul took 0.016 s against
    0.11 s in FP32 on GA100 with 50x the relative error (PyTorch CUDA notes). Comparing across
    precisions measures the dtype, not the kernel.

    Example: baseline fp32 without TF32, candidate bf16: FAIL.
    """

    code = "PA301"
    name = "precision-mismatch"
    severity = Severity.FAIL
    pitfalls = ("P3",)
    needs = ("dtype of both sides; tf32 for fp32 work",)
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
            tb, tc = b.fact("tf32"), c.fact("tf32")
            if tb is not None and tc is not None and tb.value != tc.value:
                if ev.intended("tf32"):
                    out.append(self.flag(Severity.WARN, "declared TF32 change: " + differ_text("tf32", tb, tc), "both", tf32_baseline=tb, tf32_candidate=tc, **evid))
                else:
                    out.append(self.flag(Severity.FAIL, "TF32 tensor-core math on one side only: " + differ_text("tf32", tb, tc), "both", non_comparable=True, tf32_baseline=tb, tf32_candidate=tc, **evid))
            elif tb is None or tc is None:
                out.append(self.flag(Severity.WARN, f"fp32 work but whether TF32 was allowed is not recorded for the {unrecorded(ev, tb, tc)} (TF32 alone is worth up to ~7x on A100)", "both", tf32_baseline=tb, tf32_candidate=tc, **evid))
        if dtype_of(b) == "fp16":
            rb, rc = b.fact("allow_fp16_reduced_precision"), c.fact("allow_fp16_reduced_precision")
            if rb is not None and rc is not None and rb.value != rc.value:
                out.append(self.flag(Severity.FAIL, "reduced-precision fp16 reductions on one side only: " + differ_text("allow_fp16_reduced_precision", rb, rc), "both", non_comparable=True, **evid))
        if out:
            return out
        return [self.ok(f"both sides compute in {dtype_of(b)}" + (f" (TF32 {'on' if b.get('tf32') else 'off'})" if dtype_of(b) == "fp32" else ""), **evid)]


RULE = PrecisionMismatch()
