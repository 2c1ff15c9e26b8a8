from __future__ import annotations

import math

from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity


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

    Example: 1.02x [0.99, 1.05]: INCONCLUSIVE.
    """

    code = "PA406"
    name = "not-significant"
    severity = Severity.INCONCLUSIVE
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


RULE = NotSignificant()
