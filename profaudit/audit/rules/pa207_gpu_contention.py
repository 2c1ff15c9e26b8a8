from __future__ import annotations

from profaudit.audit import stats as st
from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import fmt_time, fx, pct
from profaudit.fmt import plural

# A mean moved more than this by one side's contention is an inflated claim (as PA403 does for
# one-sided outliers: the contended iterations measure the neighbour, not the code).
INFLATION_FAIL = 1.10


def _alike(a: st.Bimodal, b: st.Bimodal) -> bool:
    """Two bimodal splits with the same shape: mode shares within 15 points, gaps within 15 %."""
    return abs(a.low_fraction - b.low_fraction) <= 0.15 and abs(a.ratio / b.ratio - 1) <= 0.15


class GpuContention(Rule):
    """Another workload shared the GPU: foreign processes, prior load, or bimodal times.

    What it detects: other processes on the GPU during the run (meta.other_gpu_processes), GPU
    utilisation above 5 % just before the run (meta.gpu_util_before_pct), and steady-state times
    that split into two separated clusters on one side (an Otsu split on log time with an empty
    valley and medians at least 15 % apart) on one side only: when both sides split alike (same
    mode shares and gap), the pattern belongs to the machine or the workload, not to one side.

    Why it matters: a shared GPU gives a side whatever time the neighbour leaves (nvbench runs on
    every visible GPU by default; one device showed 432 % noise). Bimodal times are the signature
    of a competing job that comes and goes.

    When the contended side is the baseline only and the claim uses the mean (or total), the
    slow mode raises the baseline's mean and credits the candidate with the neighbour's load:
    a mean speedup more than 10 % above the median speedup -> FAIL, corrected to the median.

    Example: 30 % of the baseline's iterations take 1.9 ms and the rest 1.0 ms, with nothing
    between: WARN (FAIL if the claim is the mean ratio and it sits >10 % above the median ratio).
    """

    code = "PA207"
    name = "gpu-contention"
    severity = Severity.FAIL
    pitfalls = ("P13",)
    needs = ("meta.other_gpu_processes / gpu_util_before_pct", "or per-iteration times")

    def check(self, ev: Evidence) -> list[Finding]:
        out, checked = [], []
        contended: set[str] = set()
        for se in ev.sides:
            n = se.fact("other_gpu_processes")
            if n is not None:
                checked.append(f"{se.role} processes")
                if int(n.value) > 0:
                    contended.add(se.role)
                    out.append(self.flag(Severity.WARN, f"{plural(int(n.value), 'other process', 'other processes')} used the GPU during the {se.role}'s run", se.role, other_gpu_processes=n))
            u = se.fact("gpu_util_before_pct")
            if u is not None:
                checked.append(f"{se.role} prior load")
                if float(u.value) > 5:
                    contended.add(se.role)
                    out.append(self.flag(Severity.WARN, f"the GPU was {float(u.value):.0f}% busy before the {se.role}'s run started", se.role, gpu_util_before_pct=u))
        modes = {se.role: st.bimodality(se.steady, sorted_x=se.steady_sorted) for se in ev.sides if se.has_samples}
        shared = len(modes) == 2 and all(modes.values()) and _alike(modes["baseline"], modes["candidate"])
        for role, bm in modes.items():
            checked.append(f"{role} times")
            if bm is None:
                continue
            if shared:
                # Both sides split the same way: a property of the machine or the workload both
                # ran (two code paths, a periodic clock event), not contention of one side.
                out.append(self.flag(Severity.INFO, f"the {role}'s times are bimodal ({pct(bm.low_fraction)} near {fmt_time(bm.low_median)}, {bm.ratio:.2f}x apart), and the other side's are alike: a shared pattern, not one side's contention", role, bimodality=bm))
                continue
            contended.add(role)
            out.append(self.flag(Severity.WARN, f"the {role}'s times are bimodal: {pct(bm.low_fraction)} near {fmt_time(bm.low_median)} and the rest near {fmt_time(bm.high_median)} ({bm.ratio:.2f}x): a competing workload or a second code path", role, bimodality=bm))
        if contended == {"baseline"}:
            inflated = self._inflated_mean(ev)
            if inflated is not None:
                out.append(inflated)
        if any(f.severity > Severity.INFO for f in out):
            return out
        if not checked:
            return [self.cannot("no contention metadata and no per-iteration times")]
        if out:
            return out + [self.ok(f"no one-sided sign of contention ({', '.join(checked)})")]
        return [self.ok(f"no sign of contention ({', '.join(checked)})")]

    def _inflated_mean(self, ev: Evidence):
        """FAIL when contention on the baseline alone moves a mean-based claim > 10 % above the
        median speedup (the median sits in the uncontended mode while under half is contended)."""
        stat = ev.statistic
        if stat is None or stat.kind not in ("mean", "total"):
            return None
        cmp = ev.comparison
        if not cmp.available or cmp.mode != "samples":
            return None
        mean_iv, med_iv = cmp.intervals.get(stat.name), cmp.intervals.get("median")
        if mean_iv is None or med_iv is None or not (med_iv.estimate > 0):
            return None
        inflation = mean_iv.estimate / med_iv.estimate
        if inflation <= INFLATION_FAIL:
            return None
        return self.flag(
            Severity.FAIL,
            f"contention on the baseline only raises its {stat.name}: the {stat.name} speedup {fx(mean_iv.estimate)} is {pct(inflation - 1)} above the median speedup {fx(med_iv.estimate)}",
            "baseline",
            correction=med_iv, correction_note="median instead of the contention-inflated mean",
            mean_speedup=mean_iv,
            median_speedup=med_iv,
            inflation=inflation,
        )


RULE = GpuContention()
