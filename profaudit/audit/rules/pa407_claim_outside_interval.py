from __future__ import annotations

import math

from profaudit.audit import stats as st
from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import fx


class ClaimOutsideInterval(Rule):
    """The claimed speedup lies outside what the evidence supports.

    What it detects: the claimed speedup against the recomputed interval of the claimed
    statistic (steady-state samples, cycle space when clocks are known), widened by the noise
    threshold and by half a unit of the claim's last digit (a "2.1x" claim covers 2.05-2.15,
    capped at 2.5 %). Above it -> FAIL (overstated, corrected to the supported interval); below
    it -> WARN (the evidence supports more than claimed, which suggests the claim was computed
    differently). With an unstated statistic, the claim must fit one of the robust intervals.

    Why it matters: this is the claim itself (FAIRNESS P10: "if the claim lies outside the CI
    -> FAIL").

    Example: claimed 2.1x, recomputed mean speedup 1.52x [1.48, 1.56]: FAIL.
    """

    code = "PA407"
    name = "claim-outside-interval"
    severity = Severity.FAIL
    judges_claim_only = True
    pitfalls = ("P10",)
    needs = ("a claimed speedup", "samples or summaries of both sides")

    def check(self, ev: Evidence) -> list[Finding]:
        claimed = ev.claimed_speedup
        if claimed is None:
            return [self.cannot("no claimed speedup: the measured speedup is reported instead")]
        cmp = ev.comparison
        if not cmp.available:
            return [self.cannot(cmp.reason, severity=Severity.INCONCLUSIVE)]
        stat = ev.statistic
        tol = st.claim_tolerance(ev.claim.speedup_text, claimed)
        noise = ev.noise_threshold
        if stat is not None and stat.name in cmp.intervals:
            candidates = {stat.name: cmp.intervals[stat.name]}
        else:
            candidates = {k: v for k, v in cmp.intervals.items() if k in ("mean", "median", "trimmed_mean")}
        if not candidates:
            return [self.cannot(f"the claimed statistic ({stat.name if stat else 'unstated'}) cannot be recomputed from the evidence", severity=Severity.INCONCLUSIVE)]
        best = None
        for name, iv in candidates.items():
            lo = iv.low if math.isfinite(iv.low) else iv.estimate
            hi = iv.high if math.isfinite(iv.high) else iv.estimate
            if lo / (1 + noise) - tol <= claimed <= hi * (1 + noise) + tol:
                return [self.ok(f"the claimed {fx(claimed)} lies within the recomputed {iv.describe()}", claimed=claimed, interval=iv, tolerance=tol)]
            # a difference of logs, not the log of a ratio: a claimed 5e-324 over an interval near 1
            # underflowed to 0 and math.log raised "math domain error" (fuzz_surfaces seed 4703, batch #837)
            gap = min(abs(math.log(claimed) - math.log(lo)), abs(math.log(claimed) - math.log(hi))) if lo > 0 and hi > 0 and claimed > 0 else math.inf
            if best is None or gap < best[0]:
                best = (gap, name, iv, lo, hi)
        _, name, iv, lo, hi = best
        evid = {"claimed": claimed, "interval": iv, "tolerance": tol, "noise_threshold": noise}
        support = cmp.primary_interval if cmp.primary_interval is not None else iv
        if claimed > hi:
            # one interval named once: the supported one repeats the recomputed one unless they differ
            supports = ", the interval the evidence supports" if support.describe() == iv.describe() else f": the evidence supports {support.describe()}"
            return [self.flag(Severity.FAIL, f"the claimed {fx(claimed)} is above the recomputed {iv.describe()}{supports}", "both", correction=support, correction_note="the interval the evidence supports", **evid)]
        return [self.flag(Severity.WARN, f"the claimed {fx(claimed)} is below the recomputed {iv.describe()}: the evidence supports more than claimed; check how the claim was computed", "both", **evid)]


RULE = ClaimOutsideInterval()
