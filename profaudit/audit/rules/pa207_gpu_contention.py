from __future__ import annotations

from profaudit.audit import stats as st
from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import fmt_time, pct


class GpuContention(Rule):
    """Another workload shared the GPU: foreign processes, prior load, or bimodal times.

    What it detects: other processes on the GPU during the run (meta.other_gpu_processes), GPU
    utilisation above 5 % just before the run (meta.gpu_util_before_pct), and steady-state times
    that split into two separated clusters on one side (an Otsu split on log time with an empty
    valley and medians at least 15 % apart).

    Why it matters: a shared GPU gives a side whatever time the neighbour leaves (nvbench runs on
    every visible GPU by default; one device showed 432 % noise). Bimodal times are the signature
    of a competing job that comes and goes.

    Example: 30 % of the baseline's iterations take 1.9 ms and the rest 1.0 ms, with nothing
    between: WARN.
    """

    code = "PA207"
    name = "gpu-contention"
    severity = Severity.WARN
    pitfalls = ("P13",)
    needs = ("meta.other_gpu_processes / gpu_util_before_pct", "or per-iteration times")

    def check(self, ev: Evidence) -> list[Finding]:
        out, checked = [], []
        for se in ev.sides:
            n = se.fact("other_gpu_processes")
            if n is not None:
                checked.append(f"{se.role} processes")
                if int(n.value) > 0:
                    out.append(self.flag(Severity.WARN, f"{int(n.value)} other process(es) used the GPU during the {se.role}'s run", se.role, other_gpu_processes=n))
            u = se.fact("gpu_util_before_pct")
            if u is not None:
                checked.append(f"{se.role} prior load")
                if float(u.value) > 5:
                    out.append(self.flag(Severity.WARN, f"the GPU was {float(u.value):.0f}% busy before the {se.role}'s run started", se.role, gpu_util_before_pct=u))
            if se.has_samples:
                checked.append(f"{se.role} times")
                bm = st.bimodality(se.steady, sorted_x=se.steady_sorted)
                if bm is not None:
                    out.append(self.flag(Severity.WARN, f"the {se.role}'s times are bimodal: {pct(bm.low_fraction)} near {fmt_time(bm.low_median)} and the rest near {fmt_time(bm.high_median)} ({bm.ratio:.2f}x): a competing workload or a second code path", se.role, bimodality=bm))
        if out:
            return out
        if not checked:
            return [self.cannot("no contention metadata and no per-iteration times")]
        return [self.ok(f"no sign of contention ({', '.join(checked)})")]


RULE = GpuContention()
