from __future__ import annotations

import math

from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import fx

MIN_SAMPLES = 10  # nvbench --min-samples


class TooFewSamples(Rule):
    """Fewer than 10 samples on a side.

    What it detects: the steady-state sample count of each side (or the reported count for
    summaries) under nvbench's minimum of 10. For a small effect (measured speedup within
    0.83-1.2x) that makes the comparison inconclusive; for a large one it is a warning. A side
    that reports a single number without a sample count is inconclusive.

    Why it matters: with a handful of samples the spread is unknown and one outlier moves the
    statistic (KernelBench's early baselines: 3 warm-ups and 100 trials were already too few to
    rank close kernels).

    Example: 5 timings per side and a measured 1.08x: INCONCLUSIVE.
    """

    code = "PA401"
    name = "too-few-samples"
    severity = Severity.INCONCLUSIVE
    pitfalls = ("P9", "P10")
    needs = ("sample counts of both sides",)
    unknown_severity = Severity.INCONCLUSIVE

    def check(self, ev: Evidence) -> list[Finding]:
        short = [se for se in ev.sides if se.get("stopped_short") is True or se.get("minimums_met") is False]
        if short:
            return [
                self.flag(Severity.WARN, f"the harness ran out of its time limit before its minimum warm-up calls and samples for the {se.role} ({(se.fact('stopped_short') or se.fact('minimums_met')).source}): under-sampled, not a measured steady state", se.role, stopped_short=se.fact("stopped_short"), minimums_met=se.fact("minimums_met"))
                for se in short
            ]
        return self._counts(ev)

    def _counts(self, ev: Evidence) -> list[Finding]:
        counts = {}
        for se in ev.sides:
            if not se.has_samples and not se.summary_count:
                if se.summaries:
                    return [self.cannot(f"the {se.role} reports summaries without a sample count", se.role)]
                return [self.cannot(f"no timing samples for the {se.role}", se.role)]
            counts[se.role] = se.n
        low = {r: n for r, n in counts.items() if n < MIN_SAMPLES}
        if not low:
            return [self.ok(f"enough samples ({counts['baseline']} baseline, {counts['candidate']} candidate)", samples=counts)]
        cmp = ev.comparison
        iv = cmp.primary_interval if cmp.available else None
        est = iv.estimate if iv is not None else math.nan
        # "only 1 baseline sample", "only 4 baseline and 7 candidate samples"
        text = " and ".join(f"{n:,} {r}" for r, n in low.items()) + (" sample" if sum(low.values()) == 1 else " samples")
        small = not math.isfinite(est) or abs(math.log(est)) < math.log(1.2)
        if small:
            return [self.flag(Severity.INCONCLUSIVE, f"only {text} (minimum {MIN_SAMPLES}) for a small effect ({fx(est)})", "both", samples=counts, measured=est)]
        return [self.flag(Severity.WARN, f"only {text} (minimum {MIN_SAMPLES}); the effect ({fx(est)}) is large enough to see, but the spread is poorly known", "both", samples=counts, measured=est)]


RULE = TooFewSamples()
