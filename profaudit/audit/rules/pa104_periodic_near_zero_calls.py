from __future__ import annotations

from profaudit.audit import stats as st
from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import fx


class PeriodicNearZeroCalls(Rule):
    """One heavy call every k calls and near-zero calls between: work batched or deferred.

    What it detects: a per-iteration log in which at least 30 % of the steady-state calls take
    under 0.2x the heavy level and the heavy calls recur with a regular period k >= 2 (80 % of
    the gaps equal k).

    Why it matters: batch-and-skip made 14 of 15 calls no-ops in gpu-mode PR #104 and reported
    about 1/15 of the cost; lazy outputs computed in the untimed checker look the same. A median
    or a minimum then reports a near-zero call; the mean amortises the batched work over k calls
    but still hides that single calls do not do their work.

    Example: the candidate log alternates one 2 ms call with three 0.05 ms calls and the claim
    uses the median: FAIL, corrected to the mean ratio.
    """

    code = "PA104"
    name = "periodic-near-zero-calls"
    severity = Severity.FAIL
    trace_corrects = True
    pitfalls = ("P7",)
    needs = ("per-iteration times (in execution order)",)

    def check(self, ev: Evidence) -> list[Finding]:
        sides = [se for se in ev.sides if se.has_samples]
        if not sides:
            return [self.cannot("no per-iteration log on either side")]
        out = []
        stat = ev.statistic
        for se in sides:
            p = st.periodic_near_zero(se.steady)
            if p is None:
                continue
            robust_claim = stat is None or stat.kind == "best_of" or (stat.kind == "quantile" and (stat.q or 0) <= 0.5)
            evid = {"pattern": p, "statistic": stat.name if stat else None}
            msg = f"the {se.role} log has one heavy call every {p.period} calls and near-zero calls between ({p.light_to_heavy:.2g}x the heavy time, {100 * (1 - p.heavy_fraction):.0f}% of calls): work is batched, deferred or skipped"
            if se.role == "candidate" and robust_claim:
                mean_iv = ev.comparison.intervals.get("mean") if ev.comparison.available else None
                out.append(self.flag(Severity.FAIL, msg + f"; a {stat.name if stat else 'median'} reports a near-zero call (mean ratio: {fx(mean_iv.estimate) if mean_iv else 'n/a'})", se.role, correction=mean_iv, correction_note="mean: the batched work spread over the calls it serves", **evid))
            else:
                out.append(self.flag(Severity.WARN, msg, se.role, **evid))
        if out:
            return out
        return [self.ok("no periodic pattern of near-zero calls in the per-iteration logs")]


RULE = PeriodicNearZeroCalls()
