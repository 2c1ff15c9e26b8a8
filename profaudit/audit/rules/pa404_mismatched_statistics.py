from __future__ import annotations

import math

from profaudit.audit import stats as st
from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import fx


def reproduces(claimed: float, tol: float, iv: st.Interval, noise: float) -> bool:
    if not math.isfinite(iv.estimate):
        return False
    lo = iv.low if math.isfinite(iv.low) else iv.estimate
    hi = iv.high if math.isfinite(iv.high) else iv.estimate
    return lo / (1 + noise) - tol <= claimed <= hi * (1 + noise) + tol


def _and(names) -> str:
    """'mean', 'mean and median', 'mean, median and min'."""
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


class MismatchedStatistics(Rule):
    """The claim reproduces only with different statistics per side, or hides its statistic.

    What it detects: a claimed speedup that no same-statistic ratio (mean, median, trimmed mean,
    min, pNN, each with its interval) reproduces but a mixed one does, e.g. baseline mean /
    candidate min -> FAIL; an unstated statistic (WARN, naming the statistics that reproduce
    it); "best of K" with K unknown (WARN); a min-based claim (INFO: the most optimistic
    statistic; the supported speedup uses the median).

    Why it matters: the choice of statistic is a degree of freedom; taking the best statistic
    for the candidate and the ordinary one for the baseline inflates any speedup (FAIRNESS P9).

    Example: claim 2.4x; mean ratio 2.0x, min ratio 2.05x, baseline mean / candidate min 2.41x: FAIL.
    """

    code = "PA404"
    name = "mismatched-statistics"
    severity = Severity.FAIL
    judges_claim_only = True
    pitfalls = ("P9",)
    needs = ("a claimed speedup", "samples or summaries of both sides")

    def check(self, ev: Evidence) -> list[Finding]:
        claimed = ev.claimed_speedup
        cmp = ev.comparison
        out: list[Finding] = []
        stat = ev.statistic
        if stat is not None and stat.kind == "best_of":
            k = [se.get("best_of") for se in ev.sides]
            if any(v is None for v in k):
                out.append(self.flag(Severity.WARN, "the claim reports a best-of-K time and K is not recorded (meta.best_of): the more runs, the better the best", "both"))
        if claimed is None:
            return out or [self.cannot("no claimed speedup to check")]
        if not cmp.available:
            return out or [self.cannot(cmp.reason)]
        tol = st.claim_tolerance(ev.claim.speedup_text, claimed)
        noise = ev.noise_threshold
        spaces = [cmp.intervals] + ([cmp.time_intervals] if cmp.time_intervals is not cmp.intervals else [])
        same = sorted({name for ivs in spaces for name, iv in ivs.items() if reproduces(claimed, tol, iv, noise)})
        cross = sorted(
            ((bs, cs), r) for (bs, cs), r in cmp.cross.items() if bs != cs and abs(r - claimed) <= max(tol, 0.02 * claimed)
        )
        evid = {"claimed": claimed, "reproducing_statistics": same, "mixed_pairs": [f"baseline {bs} / candidate {cs} = {r:.3g}" for (bs, cs), r in cross]}
        claimed_ok = stat is not None and stat.name in same
        # Mixing statistics matters when it inflates: the claim sits above every same-statistic
        # interval it could have come from.
        pool = [cmp.intervals[stat.name]] if stat is not None and stat.name in cmp.intervals else [iv for ivs in spaces for iv in ivs.values()]
        highs = [iv.high if math.isfinite(iv.high) else iv.estimate for iv in pool if math.isfinite(iv.estimate)]
        above = bool(highs) and claimed > max(highs) * (1 + noise) + tol
        if not above:
            cross = []
        if stat is not None and not claimed_ok and not same and cross:
            (bs, cs), r = cross[0]
            return out + [self.flag(Severity.FAIL, f"the claimed {fx(claimed)} reproduces only as baseline {bs} / candidate {cs} ({fx(r)}), not with one statistic on both sides", "both", correction=cmp.primary_interval, correction_note="one statistic on both sides", **evid)]
        if stat is None:
            if same:
                out.append(self.flag(Severity.WARN, f"the claim does not say which statistic it uses; it matches the {_and(same)} {'ratio' if len(same) == 1 else 'ratios'}", "both", **evid))
            elif cross:
                (bs, cs), r = cross[0]
                out.append(self.flag(Severity.FAIL, f"the claim does not say which statistic it uses and reproduces only as baseline {bs} / candidate {cs} ({fx(r)})", "both", correction=cmp.primary_interval, correction_note="one statistic on both sides", **evid))
            else:
                out.append(self.flag(Severity.WARN, "the claim does not say which statistic it uses, and no statistic reproduces it", "both", **evid))
            return out
        if stat.kind in ("best_of",) or (stat.kind == "quantile" and stat.q == 0.0):
            out.append(self.flag(Severity.INFO, f"the claim uses the {stat.name}, the most optimistic statistic; the supported speedup is stated for the {cmp.primary.name if cmp.primary else 'median'}", "both", **evid))
        if out:
            return out
        if claimed_ok:
            return [self.ok(f"the claim reproduces with the {stat.name} on both sides", **evid)]
        return [self.ok("no mixed pair of statistics reproduces the claim either (see PA407)", **evid)]


RULE = MismatchedStatistics()
