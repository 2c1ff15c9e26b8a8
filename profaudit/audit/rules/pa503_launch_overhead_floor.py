from __future__ import annotations

from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import fmt_time, time_family


class LaunchOverheadFloor(Rule):
    """Calls so short that launch overhead and timer resolution dominate the time.

    What it detects: per call (times divided by meta.calls_per_sample), with a time source that
    includes launches (events, host): under 2 us without CUDA graphs or batching ->
    INCONCLUSIVE (event resolution is ~0.5 us, a trivial kernel measures ~2 us batched); under
    10 us -> WARN (launch-dominated). It also labels a speedup that comes from launching fewer
    kernels per call (meta.kernels_per_call or a trace): real, but a launch saving, not a
    faster kernel.

    Why it matters: host launch costs 4-6 us; trivial kernels measure 5-6 us cold under nvbench.
    Below that floor, the comparison is between launch paths (KernelBench v0.1 resized problems
    for this reason).

    Example: 3.1 us per call timed with CUDA events, no graphs: WARN.
    """

    code = "PA503"
    name = "launch-overhead-floor"
    severity = Severity.INCONCLUSIVE
    pitfalls = ("P11",)
    needs = ("per-call times and the time source",)

    def check(self, ev: Evidence) -> list[Finding]:
        out, checked = [], []
        for se in ev.sides:
            t = se.typical_time_ns()
            if t is None:
                continue
            checked.append(se.role)
            fam = time_family(se.get("time_source"))
            includes_launch = fam in ("events", "host", None) or (fam or "").startswith("other")
            graphs, calls = se.cuda_graphs(), se.calls_per_sample()
            batched = bool(graphs and graphs.value) or (calls.value if calls is not None and calls.value else 1) > 1
            if not includes_launch:
                continue
            if t < 2_000 and not batched:
                out.append(self.flag(Severity.INCONCLUSIVE, f"the {se.role} takes {fmt_time(t)} per call, below the ~2 us launch and timer-resolution floor, without CUDA graphs or batching", se.role, time_per_call_ns=t, time_source=se.fact("time_source")))
            elif t < 10_000:
                out.append(self.flag(Severity.WARN, f"the {se.role} takes {fmt_time(t)} per call: launch overhead (4-6 us) is a large part of it", se.role, time_per_call_ns=t, cuda_graphs=se.fact("cuda_graphs"), time_source=se.fact("time_source")))
        kb, sb = ev.baseline.launches_per_call()
        kc, sc = ev.candidate.launches_per_call()
        if kb is not None and kc is not None and kc < kb and kc >= 1:
            out.append(self.flag(Severity.INFO, f"the candidate launches {kc:g} kernels per call against {kb:g} for the baseline: part of the speedup is saved launches", "both", launches_baseline=kb, launches_candidate=kc, sources=[sb, sc]))
        if any(f.severity > Severity.INFO for f in out):
            return out
        if not checked:
            return [self.cannot("no per-call times")]
        return out + [self.ok(f"calls well above the launch floor ({', '.join(f'{se.role} {fmt_time(se.typical_time_ns())}' for se in ev.sides if se.typical_time_ns() is not None)})")]


RULE = LaunchOverheadFloor()
