from __future__ import annotations

from profaudit.audit.evidence import Evidence, dtype_of
from profaudit.audit.findings import Finding, Rule, Severity

# Loosest tolerance a dtype warrants for kernel outputs (proposal, FAIRNESS P3: "tolerances
# looser than the dtype warrants"): ~100x torch.testing's defaults, allowing reductions.
MAX_RTOL = {"fp64": 1e-5, "fp32": 1e-3, "fp16": 1e-2, "bf16": 5e-2, "fp8": 0.25, "fp4": 0.5, "int8": 0.0}
MAX_RTOL_TF32 = 1e-2
# atol is absolute, so it only compares with a relative limit for outputs of order one; allow 10x
# (torch.testing's own atol defaults sit at about rtol/10..rtol for fp32/fp16, the other way round).
ATOL_ALLOWANCE = 10.0


class CorrectnessUnchecked(Rule):
    """The candidate's output was not checked, checked only before timing, or too loosely.

    What it detects: `correctness_checked` false or not recorded for the candidate, a check made
    only before the timing loop (before_timing), and rtol/atol looser than the dtype warrants
    (rtol above fp32 1e-3, TF32 1e-2, fp16 1e-2, bf16 5e-2, fp8 0.25; atol above 10x those).

    Why it matters: the fastest kernel is the one that skips work (Sakana's "150x" kernel avoided
    the correctness check and was 3x slower; robust-kbench's average speedup fell from 3.13x to
    1.49x once contaminated tasks were removed). Results can also be cached after a first
    correct call, so the check belongs after timing too (llm.c PR #852).

    Example: candidate `correctness_checked: before_timing` with `rtol: 0.1` on fp32: WARN.
    """

    code = "PA304"
    name = "correctness-unchecked"
    severity = Severity.WARN
    pitfalls = ("P3", "P8")
    needs = ("candidate meta.correctness_checked (+ rtol/atol, dtype)",)
    unknown_severity = Severity.WARN

    def check(self, ev: Evidence) -> list[Finding]:
        c = ev.candidate
        f = c.fact("correctness_checked")
        if f is None:
            return [self.cannot("whether the candidate's output was checked against a reference is not recorded (meta.correctness_checked)")]
        out = []
        if f.value == "no":
            out.append(self.flag(Severity.WARN, "the candidate's output was not checked against a reference", "candidate", correctness_checked=f))
        elif f.value == "before_timing":
            out.append(self.flag(Severity.WARN, "the candidate's output was checked only before the timing loop: cached or skipped work during timing would pass", "candidate", correctness_checked=f))
        dt = dtype_of(c)
        limit = MAX_RTOL_TF32 if dt == "fp32" and c.get("tf32") else MAX_RTOL.get(dt or "")
        for key, allowance in (("rtol", 1.0), ("atol", ATOL_ALLOWANCE)):
            tol = c.fact(key)
            if tol is None or limit is None or limit <= 0:
                continue
            bound = limit * allowance
            if float(tol.value) > bound:
                what = f"{bound:g}" if key == "rtol" else f"{bound:g} for outputs of order one"
                out.append(self.flag(Severity.WARN, f"the candidate's {key} {float(tol.value):g} is looser than {dt} warrants ({what})", "candidate", **{key: tol, "dtype": c.fact("dtype")}))
        if out:
            return out
        return [self.ok(f"the candidate's output was checked ({f.value})")]


RULE = CorrectnessUnchecked()
