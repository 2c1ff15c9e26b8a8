from __future__ import annotations

import math
import re

from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity


# Claims of no difference: an A/A run, "no regression", "same speed", "parity", "equivalent".
_NO_DIFFERENCE = re.compile(r"\bA\s*/\s*A\b|\bno (significant |measurable |performance )?(difference|change|regression|slowdown)|\bnot (any )?slower\b|\bsame (speed|performance)\b|\bparity\b|\bequivalen|\bon par\b|\bunchanged\b|\bneutral\b", re.IGNORECASE)
_NON_INFERIORITY = re.compile(r"\bno (significant |measurable |performance )?(regression|slowdown)|\bnot (any )?slower\b", re.IGNORECASE)


def equivalence_claim(ev: Evidence) -> tuple[str, str] | None:
    """("equivalence" or "non-inferiority", why) when the claim says there is no difference: a
    claimed speedup within the noise threshold of 1.0, or a description that says so."""
    text = ev.claim.description or ""
    noise = ev.noise_threshold
    claimed = ev.claimed_speedup
    if _NON_INFERIORITY.search(text) and (claimed is None or abs(math.log(claimed)) <= math.log1p(noise)):
        return "non-inferiority", f"the claim says {_NON_INFERIORITY.search(text).group(0)!r}"
    if _NO_DIFFERENCE.search(text) and (claimed is None or abs(math.log(claimed)) <= math.log1p(noise)):
        return "equivalence", f"the claim says {_NO_DIFFERENCE.search(text).group(0)!r}"
    if claimed is not None and claimed > 0 and abs(math.log(claimed)) <= math.log1p(noise):
        return "equivalence", f"the claimed {claimed:g}x is within the {noise:.1%} noise threshold of 1.0"
    return None


class NotSignificant(Rule):
    """The measured difference does not clear the noise threshold with confidence.

    What it detects: the bootstrap interval (95 % by default) of the speedup in the supported
    statistic: a lower bound at or below 1 + noise threshold (1 %, criterion.rs and pyperf) for a
    speedup, or an upper bound at or above 1 / (1 + threshold) for a slowdown -> INCONCLUSIVE.
    The two-sided Mann-Whitney U test at alpha = 0.05 must agree; if the interval clears the
    threshold and the rank test does not, the evidence is mixed -> INCONCLUSIVE. Sides with only
    one reported number per side have no interval -> INCONCLUSIVE.

    Why it matters: a speedup inside the noise is not a speedup; Google Benchmark's compare.py
    uses the same U test and nvbench-compare requires a clear gap (FAIRNESS P10).

    A claim of no difference (a claimed speedup within the noise threshold of 1.0, an A/A run,
    "no regression", "parity") gets an equivalence answer instead: two one-sided tests (TOST)
    against the threshold t at alpha = 1 - confidence, read off the 1 - 2 alpha interval (90 %
    by default, scaled from the bootstrap interval on the log scale). It lies inside [1/(1+t), 1+t] -> PASS "no
    difference within +-t"; it is wider than that band -> INCONCLUSIVE; it lies wholly outside
    -> FAIL (there is a difference); otherwise it reaches past the band -> WARN. "No regression"
    is one-sided (non-inferiority): only a lower bound under 1/(1+t) counts against it.

    Example: 1.02x [0.99, 1.05]: INCONCLUSIVE. A/A run, 1.001x [0.996, 1.006] with t = 1 %: PASS.
    """

    code = "PA406"
    name = "not-significant"
    severity = Severity.FAIL
    pitfalls = ("P10",)
    needs = ("samples of both sides, or reported mean, standard deviation and count",)
    unknown_severity = Severity.INCONCLUSIVE

    def check(self, ev: Evidence) -> list[Finding]:
        cmp = ev.comparison
        if not cmp.available:
            return [self.cannot(cmp.reason)]
        iv = cmp.primary_interval
        if iv is None or not iv.finite:
            return [self.cannot("the sides report single numbers without dispersion: no confidence interval can be formed")]
        noise = ev.noise_threshold
        mw = cmp.mann_whitney
        evid = {"interval": iv, "noise_threshold": noise, "mann_whitney": mw}
        eq = equivalence_claim(ev)
        if eq is not None:
            return [self._tost(iv, noise, *eq, evid)]
        if iv.estimate >= 1:
            clear = iv.low > 1 + noise
            what = "speedup"
        else:
            clear = iv.high < 1 / (1 + noise)
            what = "slowdown"
        if not clear:
            return [self.flag(Severity.INCONCLUSIVE, f"the {what} {iv.describe()} does not clear the {noise:.1%} noise threshold", "both", **evid)]
        if mw is not None and math.isfinite(mw.p_value) and mw.p_value >= 0.05:
            return [self.flag(Severity.INCONCLUSIVE, f"the interval clears the noise threshold but the Mann-Whitney U test does not (p = {mw.p_value:.3g})", "both", **evid)]
        p = f"; Mann-Whitney p {'< 1e-300' if mw.p_value == 0 else f'= {mw.p_value:.2g}'}" if mw is not None and math.isfinite(mw.p_value) else ""
        return [self.ok(f"significant {what}: {iv.describe()}{p}", **evid)]


    @staticmethod
    def _tost_interval(iv) -> tuple[float, float, float]:
        """(alpha, low, high): the 1 - 2 alpha interval two one-sided tests at alpha = 1 -
        confidence read (90 % for the default 95 %), scaled from the bootstrap interval on the
        log scale around its estimate (each side keeps its own skew)."""
        from statistics import NormalDist

        alpha = 1 - iv.confidence
        scale = NormalDist().inv_cdf(1 - alpha) / NormalDist().inv_cdf(1 - alpha / 2)
        c = math.log(iv.estimate)
        return alpha, math.exp(c - (c - math.log(iv.low)) * scale), math.exp(c + (math.log(iv.high) - c) * scale)

    def _tost(self, iv, noise: float, kind: str, why: str, evid: dict) -> Finding:
        lo_b, hi_b = 1 / (1 + noise), 1 + noise
        band = f"[{lo_b:.4g}, {hi_b:.4g}]"
        alpha, lo, hi = self._tost_interval(iv)
        shown = f"{iv.estimate:.4g}x [{lo:.4g}, {hi:.4g}] ({iv.statistic}, {1 - 2 * alpha:.0%} interval)"
        evid = dict(evid, test=f"TOST ({kind}), alpha {alpha:.3g} per side", tost_interval=[lo, hi], equivalence_bounds=[lo_b, hi_b], reason=why)
        if kind == "non-inferiority":
            if lo >= lo_b:
                return self.ok(f"no regression beyond {noise:.1%}: {shown} stays above {lo_b:.4g} ({why}; one-sided test)", **evid)
            if hi < lo_b:
                return self.flag(Severity.FAIL, f"a regression: {shown} lies wholly below {lo_b:.4g} ({why})", "candidate", **evid)
        else:
            if lo_b <= lo and hi <= hi_b:
                return self.ok(f"no difference within +-{noise:.1%}: {shown} lies inside {band} ({why}; two one-sided tests)", **evid)
            if hi < lo_b or lo > hi_b:
                return self.flag(Severity.FAIL, f"a difference beyond the {noise:.1%} threshold: {shown} lies wholly outside {band} ({why})", "both", **evid)
        if math.log(hi / lo) > math.log(hi_b / lo_b):
            return self.flag(Severity.INCONCLUSIVE, f"the interval {shown} is wider than the +-{noise:.1%} equivalence band {band}: the data cannot show there is no difference ({why})", "both", **evid)
        return self.flag(Severity.WARN, f"not shown equivalent within +-{noise:.1%}: {shown} reaches beyond {band} ({why})", "both", **evid)


RULE = NotSignificant()
