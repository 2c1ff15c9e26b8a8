from __future__ import annotations

import math

from profaudit.audit import stats as st
from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import fmt_time, fx, pct
from profaudit.fmt import plural


class WarmupInTimedRegion(Rule):
    """Warm-up iterations (compile, autotune, first-touch, clock ramp) inside the timed samples.

    What it detects: a leading run of slow iterations in a per-iteration log, per process-level
    run: samples above max(1.5 m, m + 5 x 1.4826 x MAD), with m and MAD from the last 50 % of
    the run, or a two-segment change point on log t (FAIRNESS P1). It measures how much the head
    moves the claimed statistic on each side and therefore the speedup. With summaries only, a
    mean far above the median (> 1.5x) is the medium-confidence sign. A claim that already equals
    the steady-state speedup (within its interval) left the head out: INFO, not an inflation.

    Why it matters: one-time costs counted as steady-state time inflate whichever side carries
    them. Only an asymmetric head changes the speedup, but it can change it a lot (Neuron FLUX:
    9.35 s first step against 0.83 s warm; KernelBench's early baselines used 3 warm-ups).

    Logs written by `profaudit bench` record whether warm-up reached a steady state
    (`warmup_steady`); a side that never did cannot pass (WARN).

    Example: the baseline log starts with 12 iterations at 5 ms before settling at 1 ms while the
    candidate was warmed up; the mean speedup of 2.5x is 2.08x on steady-state samples (FAIL,
    corrected to the steady-state interval).
    """

    code = "PA101"
    name = "warmup-in-timed-region"
    severity = Severity.FAIL
    pitfalls = ("P1",)
    needs = ("per-iteration times of both sides (or a reported mean and median)",)

    def check(self, ev: Evidence) -> list[Finding]:
        out = self._heads(ev)
        steady = self._harness_steadiness(ev)
        if not steady:
            return out
        flagged = [f for f in steady if f.status.value == "fail"]
        kept = [f for f in out if f.status.value == "fail"]
        return kept + flagged if (kept or flagged) else steady

    def _harness_steadiness(self, ev: Evidence) -> list[Finding]:
        """What the harness recorded about its warm-up (profaudit bench `warmup_steady`): a side
        whose warm-up never became steady was measured before its steady state, whatever the
        log's shape suggests (a slow plateau looks steady too)."""
        out, known = [], []
        for se in ev.sides:
            f = se.fact("warmup_steady")
            if f is None:
                continue
            known.append(se.role)
            if f.value is False:
                stop = se.get("stop_reason")
                out.append(self.flag(Severity.WARN, f"the {se.role}'s warm-up never became steady ({f.source}): it was measured before reaching a steady state" + (f"; measuring stopped on {stop}" if stop else ""), se.role, warmup_steady=f, stop_reason=se.fact("stop_reason")))
        if out:
            return out
        return [self.ok(f"the harness recorded a steady warm-up ({', '.join(known)})")] if known else []

    def _heads(self, ev: Evidence) -> list[Finding]:
        b, c = ev.baseline, ev.candidate
        if not (b.has_samples and c.has_samples):
            return self._summaries(ev)
        cmp = ev.comparison
        stat = ev.statistic if ev.statistic is not None and ev.statistic.name in cmp.time_intervals else st.MEAN
        heads = {}
        for se in ev.sides:
            heads[se.role] = {
                "head_samples": se.head_count,
                "samples": int(se.times.size),
                "runs": len(se.steady_states),
                "steady_median": fmt_time(float(sum(s.median * s.n for s in se.steady_states) / max(1, sum(s.n for s in se.steady_states)))),
                "head_median": fmt_time(next((s.head_median for s in se.steady_states if s.start), None)),
                "method": sorted({s.method for s in se.steady_states if s.start}) or ["none"],
                "labelled_warmup_rows_excluded": se.warmup_rows,
            }
        if b.head_count == 0 and c.head_count == 0:
            return [self.ok("no warm-up head in either per-iteration log", **heads)]
        steady_iv = cmp.time_intervals[stat.name]
        with_head = cmp.with_head.get(stat.name, math.nan)
        inflation = with_head / steady_iv.estimate if steady_iv.estimate > 0 else math.nan
        ev_ = dict(heads, statistic=stat.name, speedup_with_head=with_head, speedup_steady_state=steady_iv, inflation=inflation)
        who = " and ".join(f"{s.role} ({s.head_count} of {s.times.size})" for s in ev.sides if s.head_count)
        noise = ev.noise_threshold
        if not math.isfinite(inflation) or abs(math.log(inflation)) <= math.log1p(noise):
            return [self.flag(Severity.INFO, f"warm-up head in the {who} log; it moves the {stat.name} speedup by {pct(inflation - 1)} (excluded from the recomputation)", **ev_)]
        correction = cmp.intervals.get(stat.name)
        if inflation > 1:
            claimed = ev.claimed_speedup
            if claimed is not None:
                near_head = abs(math.log(claimed / with_head)) < abs(math.log(claimed / steady_iv.estimate))
                tol = st.claim_tolerance(ev.claim.speedup_text, claimed)
                above = claimed - tol > steady_iv.high * (1 + noise)
                within = steady_iv.low / (1 + noise) - tol <= claimed <= steady_iv.high * (1 + noise) + tol
                if within and not near_head:
                    # The claim already is the steady-state speedup: whoever computed it left the
                    # head out, so it inflated nothing (saying "inflates" here would cry wolf).
                    return [self.flag(Severity.INFO, f"warm-up head in the {who} log ({fx(with_head)} with it); the claimed {fx(claimed)} matches the steady-state {steady_iv.describe()}, so the head was left out of it", "baseline", **ev_)]
                if near_head and above:
                    return [
                        self.flag(
                            Severity.FAIL,
                            f"the claimed {fx(claimed)} matches the {stat.name} speedup with the warm-up head ({fx(with_head)}); on steady-state samples it is {steady_iv.describe()}",
                            "baseline",
                            correction=correction, correction_note="steady state: the warm-up head removed from every run",
                            **ev_,
                        )
                    ]
            return [
                self.flag(
                    Severity.WARN,
                    f"warm-up head in the {who} log inflates the {stat.name} speedup by {pct(inflation - 1)} ({fx(with_head)} with it, {fx(steady_iv.estimate)} without); the recomputation uses steady-state samples",
                    "baseline",
                    correction=correction, correction_note="steady state: the warm-up head removed from every run",
                    **ev_,
                )
            ]
        return [
            self.flag(
                Severity.INFO,
                f"warm-up head in the {who} log deflates the {stat.name} speedup by {pct(1 - inflation)}; the recomputation uses steady-state samples",
                "candidate",
                **ev_,
            )
        ]

    def _summaries(self, ev: Evidence) -> list[Finding]:
        out, seen = [], False
        for se in ev.sides:
            if se.has_samples:
                seen = True
                if se.head_count:
                    out.append(self.flag(Severity.WARN, f"warm-up head of {plural(se.head_count, 'sample')} in the {se.role} log (the other side has no per-iteration log to compare)", se.role, head_samples=se.head_count))
                continue
            mean, med = se.summaries.get("mean"), se.summaries.get("median")
            if mean and med:
                seen = True
                if mean / med > 1.5:
                    # A mean-based speedup the baseline's contaminated mean inflates is restated
                    # on the medians both sides report.
                    cmp = ev.comparison
                    stat = ev.statistic
                    corr = cmp.intervals.get("median") if se.role == "baseline" and cmp.available and (stat is None or stat.kind in ("mean", "total")) else None
                    out.append(self.flag(Severity.WARN, f"the {se.role} reports a mean {mean / med:.2f}x its median: a warm-up or compile cost is likely inside the timed region (medium confidence, summaries only)", se.role, correction=corr, correction_note="median instead of the contaminated mean (reported summaries)", mean=fmt_time(mean), median=fmt_time(med)))
        if out:
            return out
        if seen:
            return [self.ok("no sign of a warm-up head (per-iteration log or mean close to median)")]
        return [self.cannot("no per-iteration times and no mean with median on either side")]


RULE = WarmupInTimedRegion()
