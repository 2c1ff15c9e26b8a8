from __future__ import annotations

import math

from profaudit.audit.evidence import Evidence, SideEvidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.stats import Interval
from profaudit.audit.rules._common import clock_state, fmt_time, time_family
from profaudit.audit.trace import call_times

# ncu adds 0.5-2 us of timestamp placement and flushes caches between passes (FAIRNESS P5).
NCU_SLACK_NS = 2_000.0


class TimedBelowKernelTime(Rule):
    """The timed time per call is below the device time of the kernels the call launches.

    What it detects: per side, the steady median time per call against the device time of one
    call in an attached profile (ncu or a trace: total kernel time / profiled calls, or the sum of
    each distinct kernel's median). An ncu duration is first corrected for its base-clock lock
    (x base / boost) and up to 2 us of timestamp and flush overhead; a trace duration is compared
    with a 10 % tolerance.

    Why it matters: a timer that reads less than the kernels' own device time missed part of the
    work: another stream, a helper thread, output computed later, a patched timer (KernelBench
    PR #82, gpu-mode reference-kernels #162). Event time below the ncu duration of the same
    kernel is impossible once clocks and flushing are accounted for.

    With per-call ranges in a trace, more kernel time after the last timed call than during all
    of them means the work was deferred past the timer (lazy outputs computed in the checker).

    Example: the candidate reports 40 us per call while nsys shows 95 us of kernels per call: FAIL.
    """

    code = "PA105"
    name = "timed-below-kernel-time"
    severity = Severity.FAIL
    trace_corrects = True
    pitfalls = ("P7", "P5")
    needs = ("per-call times", "an attached ncu report or trace with kernel durations")

    def check(self, ev: Evidence) -> list[Finding]:
        out, checked = [], []
        for se in ev.sides:
            deferred = self._deferred(ev, se)
            if deferred is not None:
                checked.append(se.role)
                out.append(deferred)
                continue
            res = self._side(se)
            if res is None:
                continue
            checked.append(se.role)
            if res["timed_ns"] < 0.9 * res["kernel_floor_ns"]:
                out.append(
                    self.flag(
                        Severity.FAIL,
                        f"the {se.role} times {fmt_time(res['timed_ns'])} per call but its kernels take {fmt_time(res['kernel_ns'])} per call ({res['how']}): work escapes the timer",
                        se.role,
                        **res,
                    )
                )
        if out:
            return out
        if not checked:
            return [self.cannot("no side has both per-call times and an attached profile with kernel durations from another source")]
        return [self.ok(f"timed time per call covers the profiled kernel time ({', '.join(checked)})")]

    def _deferred(self, ev: Evidence, se: SideEvidence) -> Finding | None:
        """More kernel time after the last timed call than in all the timed calls together: the
        work was deferred past the timer (lazy outputs computed in the checker). A correctness
        check after timing costs a call or two, not the whole loop."""
        ct = call_times(se)
        if ct is None or ct.n < 2 or ct.after_ns <= 0:
            return None
        during = float(ct.values.sum())
        if ct.after_ns < max(during, 1.0):
            return None
        # the call's real cost: its share of all the work, deferred or not; against the other
        # side's traced (else measured) time per call
        real = (during + ct.after_ns) / ct.n
        other = ev.candidate if se is ev.baseline else ev.baseline
        oc = call_times(other)
        ot = oc.median if oc is not None and oc.median > 0 else other.typical_time_ns()
        corr = None
        if ot:
            est = ot / real if se is ev.candidate else real / ot
            corr = Interval(est, math.nan, math.nan, ev.confidence, "mean", "time", "per-call GPU time including the deferred work (no interval)", 0, 0, 0)
        return self.flag(
            Severity.FAIL,
            f"in the {se.role}'s trace, {fmt_time(ct.after_ns)} of kernel time runs after its {ct.n} timed calls against {fmt_time(during)} during them: the work is deferred past the timer (lazy outputs computed outside it)",
            se.role,
            correction=corr,
            correction_note=f"the {se.role}'s per-call GPU time including the work deferred past its timer ({fmt_time(real)})",
            after_ns=ct.after_ns,
            during_ns=during,
            calls=ct.n,
            how=ct.how,
        )

    @staticmethod
    def _side(se: SideEvidence):
        t = se.typical_time_ns()
        ct = call_times(se)
        # a call costs the union of its kernels' intervals: kernels that overlap on two streams
        # cost their span, so a timer reading the span is right, not short
        kt, how = (ct.median, "median per call of the " + ct.how) if ct is not None and ct.median > 0 else se.kernel_time_per_call_ns()
        if t is None or kt is None:
            return None
        ksrc = str(se.get("kernel_source", "") or "").lower()
        ts = str(se.get("time_source", "") or "").lower()
        if ksrc and ts and (ts == ksrc or time_family(ts) == time_family(ksrc)) and time_family(ts) in ("ncu", "trace"):
            return None  # the times are the profile's own kernel durations
        floor = kt
        notes = []
        if time_family(ksrc) == "ncu":
            cc = clock_state(se.get("clock_control", "base"))
            spec = se.spec
            boost = getattr(spec, "boost_clock_hz", None) if spec is not None else None
            base = getattr(spec, "base_clock_hz", None) if spec is not None else None
            if cc == "locked" and boost and base and boost > base:
                floor *= base / boost
                notes.append(f"x base/boost clock {base / 1e6:.0f}/{boost / 1e6:.0f} MHz")
            floor -= NCU_SLACK_NS
            notes.append("- 2 us ncu timestamp and flush overhead")
        return {
            "timed_ns": t,
            "kernel_ns": kt,
            "kernel_floor_ns": max(floor, 0.0),
            "how": how,
            "kernel_source": ksrc or None,
            "adjustments": notes,
        }


RULE = TimedBelowKernelTime()
