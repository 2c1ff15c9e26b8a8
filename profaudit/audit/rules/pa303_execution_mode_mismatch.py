from __future__ import annotations

from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import differ_text

_EAGER = {"", "eager", "none", "no", "false", "off", "disabled"}


def _mode(v) -> str:
    s = str(v).strip().lower()
    return "eager" if s in _EAGER else s


def _bool(v) -> bool:
    return str(v).strip().lower() not in _EAGER


def _method(v) -> str:
    return str(v).strip().lower().replace("-", "_")


class ExecutionModeMismatch(Rule):
    """One side compiled, graph-captured or batched, the other eager or per call.

    What it detects: different `compile_mode` (eager vs torch.compile, max-autotune, XLA jit ...),
    CUDA-graph use, back-to-back calls per timing sample (`calls_per_sample`: one side per call,
    the other batched; the bench's `timing_method`) between the sides. Graph use comes from the attached trace when it has API
    calls (cudaGraphLaunch / hipGraphLaunch mean graphs whatever the claim says), calls per sample
    from call ranges nested in the timed ranges. A difference declared in
    `intended_differences` (the claim is "compiling is faster") is reported as information.

    Why it matters: compilation fuses kernels and CUDA graphs remove launch overhead; timing
    several calls back to back per sample amortises the launch over them. All change time without
    changing the kernel being claimed. FAIRNESS P3 treats compile/graph-mode mismatches as
    non-comparable unless the claim is about that difference.

    Example: baseline eager, candidate `torch.compile(mode="max-autotune")` with CUDA graphs,
    claim "our kernel is 1.8x faster": FAIL. A candidate whose trace shows cudaGraphLaunch while
    its meta says `cuda_graphs: false`, against an eager baseline: FAIL.
    """

    code = "PA303"
    name = "execution-mode-mismatch"
    severity = Severity.FAIL
    pitfalls = ("P3", "P11")
    needs = ("compile_mode, CUDA-graph use (meta or a trace with API calls) and calls per sample of both sides",)

    def check(self, ev: Evidence) -> list[Finding]:
        b, c = ev.baseline, ev.candidate
        out, compared, notes = [], [], []
        pairs = (
            ("compile_mode", _mode, b.fact("compile_mode"), c.fact("compile_mode")),
            ("cuda_graphs", _bool, b.cuda_graphs(), c.cuda_graphs()),
            ("calls_per_sample", int, b.calls_per_sample(), c.calls_per_sample()),
            ("timing_method", _method, b.fact("timing_method"), c.fact("timing_method")),
        )
        for key, norm, fb, fc in pairs:
            if fb is None or fc is None:
                continue
            compared.append(key)
            if key == "calls_per_sample":
                # both sides batching (a timeit-style autorange picks its own count per side)
                # amortise launches alike; the mismatch is one side per call, the other batched
                lo, hi = sorted((int(fb.value), int(fc.value)))
                differs = lo <= 1 < hi
            else:
                differs = norm(fb.value) != norm(fc.value)
            if differs:
                if ev.intended(key):
                    out.append(self.flag(Severity.INFO, "declared difference: " + differ_text(key, fb, fc), "both"))
                else:
                    why = " (one side amortises launch overhead over several calls per sample)" if key in ("calls_per_sample", "timing_method") else ""
                    out.append(self.flag(Severity.FAIL, "different execution modes: " + differ_text(key, fb, fc) + why, "both", non_comparable=True, **{f"{key}_baseline": fb, f"{key}_candidate": fc}))
        for se in ev.sides:
            tr, meta = se.fact("cuda_graphs_traced"), se.fact("cuda_graphs")
            if tr is not None and meta is not None and _bool(tr.value) != _bool(meta.value):
                notes.append(self.flag(Severity.INFO, f"the {se.role}'s trace contradicts its meta: {tr.source} against cuda_graphs {meta.value!r} ({meta.source}); the trace is used", se.role, traced=tr, meta=meta))
        if out:
            return out + notes
        if not compared:
            return [self.cannot("compile mode, CUDA-graph use and calls per sample are not recorded for both sides")]
        return notes + [self.ok(f"same execution mode ({', '.join(compared)})")]


RULE = ExecutionModeMismatch()
