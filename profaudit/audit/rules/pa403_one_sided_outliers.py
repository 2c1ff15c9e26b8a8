from __future__ import annotations

from profaudit.audit import stats as st
from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import fx, pct

# Tukey fences from a handful of points are themselves noise: with 5 lognormal samples one
# lands beyond 3 x IQR often enough that "20 % outliers" means nothing. 20 samples per side
# puts at least 5 between each quartile and its extreme.
MIN_SAMPLES = 20


class OneSidedOutliers(Rule):
    """Extreme outliers on one side only inflate a mean-based speedup.

    What it detects: samples beyond Tukey's outer fences (3 x IQR beyond the quartiles) that are
    at least 0.5 % of one side and under a fifth of that share on the other, combined with a
    mean (or total, or unstated) statistic. Inflation = mean ratio / median ratio: above 10 % ->
    FAIL with the median interval as the correction, above 2 % -> WARN.

    Why it matters: a few 10x iterations on the baseline (a GC pause, a context switch, another
    job) raise its mean, not its typical time; a mean ratio then credits the candidate with the
    baseline's bad luck (criterion.rs classifies outliers the same way).

    Example: 2 % of baseline iterations at 8x the median, none on the candidate; mean speedup
    2.5x against median 2.0x: FAIL.
    """

    code = "PA403"
    name = "one-sided-outliers"
    severity = Severity.FAIL
    pitfalls = ("P9",)
    needs = ("per-iteration times of both sides",)

    def check(self, ev: Evidence) -> list[Finding]:
        b, c = ev.baseline, ev.candidate
        if not (b.has_samples and c.has_samples):
            return [self.cannot("needs per-iteration times on both sides")]
        if min(b.steady.size, c.steady.size) < MIN_SAMPLES:
            return [self.cannot(f"too few steady-state samples to classify outliers ({b.steady.size} baseline, {c.steady.size} candidate; needs {MIN_SAMPLES} per side)")]
        ob, oc = st.tukey_outliers(b.steady, sorted_x=b.steady_sorted), st.tukey_outliers(c.steady, sorted_x=c.steady_sorted)
        fb, fc = ob.extreme_fraction, oc.extreme_fraction
        evid = {"outliers_baseline": ob, "outliers_candidate": oc}
        side = None
        if fb >= 0.005 and fc <= fb / 5:
            side = "baseline"
        elif fc >= 0.005 and fb <= fc / 5:
            side = "candidate"
        if side is None:
            if fb or fc:
                return [self.ok(f"extreme outliers on both sides alike or too few to matter (baseline {pct(fb)}, candidate {pct(fc)})", **evid)]
            return [self.ok("no extreme outliers", **evid)]
        cmp = ev.comparison
        mean_iv, med_iv = cmp.intervals.get("mean"), cmp.intervals.get("median")
        inflation = mean_iv.estimate / med_iv.estimate if mean_iv and med_iv and med_iv.estimate > 0 else float("nan")
        stat = ev.statistic
        share = fb if side == "baseline" else fc
        msg = f"{pct(share)} of the {side}'s samples are extreme outliers (beyond 3 x IQR), none to speak of on the other side"
        evid.update(mean_speedup=mean_iv, median_speedup=med_iv, inflation=inflation)
        mean_based = stat is None or stat.kind in ("mean", "total")
        if not mean_based:
            return [self.flag(Severity.INFO, msg + f"; the claimed {stat.name} is robust to them", side, **evid)]
        moved = inflation if side == "baseline" else 1 / inflation
        if moved > 1.10 and stat is not None:
            return [self.flag(Severity.FAIL, msg + f": they move the mean speedup to {fx(mean_iv.estimate)} against {fx(med_iv.estimate)} for the median ({pct(inflation - 1)})", side, correction=med_iv, correction_note="median instead of the outlier-contaminated mean", **evid)]
        if abs(inflation - 1) > 0.02:
            return [self.flag(Severity.WARN, msg + f": mean speedup {fx(mean_iv.estimate)} against median {fx(med_iv.estimate)}", side, correction=med_iv if moved > 1 else None, correction_note="median instead of the outlier-contaminated mean", **evid)]
        return [self.flag(Severity.INFO, msg + "; they barely move the mean ratio", side, **evid)]


RULE = OneSidedOutliers()
