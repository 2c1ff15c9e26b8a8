from __future__ import annotations

from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.fmt import plural


class UndersampledTailStatistic(Rule):
    """A tail statistic (p99, p95, max) computed from too few samples to have a tail.

    What it detects: a claimed quantile q whose tail holds under one sample on a side
    (n (1 - q) < 1: "p99 of 10 samples" is the maximum) -> INCONCLUSIVE; under five samples ->
    WARN. A max-based claim is always a single sample -> WARN.

    Why it matters: `nki.benchmark(warmup=2, iters=10)` reporting P99 reports the slowest of ten
    calls; a ratio of two maxima is a ratio of two outliers (FAIRNESS P9).

    Example: claim on p99 with 20 iterations per side: INCONCLUSIVE.
    """

    code = "PA405"
    name = "undersampled-tail-statistic"
    severity = Severity.INCONCLUSIVE
    pitfalls = ("P9",)
    needs = ("the claimed statistic", "sample counts")

    def check(self, ev: Evidence) -> list[Finding]:
        stat = ev.statistic
        if stat is None:
            return [self.cannot("the claim does not say which statistic it uses")]
        if stat.kind != "quantile" or stat.q in (0.0, 0.5):
            return [self.ok(f"the claimed {stat.name} is not a tail statistic")]
        counts = {se.role: se.n for se in ev.sides}
        if any(n == 0 for n in counts.values()):
            return [self.cannot("sample counts are unknown")]
        if stat.q == 1.0:
            return [self.flag(Severity.WARN, "the claim compares maxima: each is a single sample, the slowest call", "both", samples=counts)]
        q = float(stat.q)
        tail = {r: n * (1 - q) if q > 0.5 else n * q for r, n in counts.items()}
        worst = min(tail.values())
        evid = {"samples": counts, "samples_beyond_quantile": tail}
        if worst < 1:
            return [self.flag(Severity.INCONCLUSIVE, f"the {stat.name} of {plural(min(counts.values()), 'sample')} is the most extreme sample: there is no tail to estimate", "both", **evid)]
        if worst < 5:
            return [self.flag(Severity.WARN, f"only {worst:.1f} samples lie beyond the {stat.name} on one side: the tail estimate rests on a few calls", "both", **evid)]
        return [self.ok(f"{worst:.0f}+ samples beyond the {stat.name} on each side", **evid)]


RULE = UndersampledTailStatistic()
