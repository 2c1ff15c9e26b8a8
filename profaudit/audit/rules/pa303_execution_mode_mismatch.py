from __future__ import annotations

from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import differ_text

_EAGER = {"", "eager", "none", "no", "false", "off", "disabled"}


def _mode(v) -> str:
    s = str(v).strip().lower()
    return "eager" if s in _EAGER else s


class ExecutionModeMismatch(Rule):
    """One side compiled or graph-captured, the other eager.

    What it detects: different `compile_mode` (eager vs torch.compile, max-autotune, XLA jit ...)
    or `cuda_graphs` between the sides. A difference declared in `intended_differences` (the
    claim is "compiling is faster") is reported as information.

    Why it matters: compilation fuses kernels and CUDA graphs remove launch overhead; both change
    time without changing the kernel being claimed. FAIRNESS P3 treats compile/graph-mode
    mismatches as non-comparable unless the claim is about that difference.

    Example: baseline eager, candidate `torch.compile(mode="max-autotune")` with CUDA graphs,
    claim "our kernel is 1.8x faster": FAIL.
    """

    code = "PA303"
    name = "execution-mode-mismatch"
    severity = Severity.FAIL
    pitfalls = ("P3",)
    needs = ("compile_mode and cuda_graphs of both sides",)

    def check(self, ev: Evidence) -> list[Finding]:
        b, c = ev.baseline, ev.candidate
        out, compared = [], []
        for key, norm in (("compile_mode", _mode), ("cuda_graphs", bool)):
            fb, fc = b.fact(key), c.fact(key)
            if fb is None or fc is None:
                continue
            compared.append(key)
            if norm(fb.value) != norm(fc.value):
                if ev.intended(key):
                    out.append(self.flag(Severity.INFO, "declared difference: " + differ_text(key, fb, fc), "both"))
                else:
                    out.append(self.flag(Severity.FAIL, "different execution modes: " + differ_text(key, fb, fc), "both", non_comparable=True, **{f"{key}_baseline": fb, f"{key}_candidate": fc}))
        if out:
            return out
        if not compared:
            return [self.cannot("compile mode and CUDA-graph use are not recorded for both sides")]
        return [self.ok(f"same execution mode ({', '.join(f'{k} {b.get(k)}' for k in compared)})")]


RULE = ExecutionModeMismatch()
