from __future__ import annotations

import numpy as np

from profaudit.audit.evidence import Evidence, SideEvidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import fmt_time, time_family

_TOLERANCE = 1.10  # FAIRNESS P7 (prop.): the sum of the timed calls may exceed the span by 10 %
_SLACK_NS = 1_000.0  # per iteration: timestamp placement


class TimesExceedWallClock(Rule):
    """The timed calls add up to more time than the wall clock their samples span.

    What it detects: in a log with a per-iteration timestamp, per process-level run, the sum of
    the measured durations (x calls per sample) against the wall-clock span from the first to
    the last timestamp. Sequential calls cannot take longer in total than the time they ran in;
    beyond 10 % (+1 us per iteration) the durations are not the time of one call each. Both
    readings of the timestamp (iteration start or end) are tried; logs whose timestamps are too
    coarse to separate iterations are not judged, nor are kernel durations a profiler recorded
    (ncu, nsys, Kineto: kernels on several streams overlap and each duration is still right).

    Why it matters: overlapping measurements (events recorded on another stream, a timer that
    spans several iterations, asynchronous calls timed from a queue) and patched timers produce
    durations that cannot be sequential (FAIRNESS P7: the wall-clock span of the loop should be
    >= the sum of event times). Such numbers say nothing reliable about one call.

    Example: 100 samples of 1 ms each with timestamps 0.5 ms apart: the calls sum to 100 ms in a
    50 ms span: FAIL.
    """

    code = "PA109"
    name = "times-exceed-wall-clock"
    severity = Severity.FAIL
    trace_corrects = True
    pitfalls = ("P7",)
    needs = ("per-iteration times with a per-iteration timestamp (timestamp_ns)",)

    def check(self, ev: Evidence) -> list[Finding]:
        out, checked, coarse = [], [], []
        for se in ev.sides:
            res = self.span_check(se)
            if res is None:
                continue
            if res.get("coarse"):
                coarse.append(se.role)
                continue
            checked.append(se.role)
            if res["ratio"] > _TOLERANCE:
                out.append(
                    self.flag(
                        Severity.FAIL,
                        f"the {se.role}'s {res['samples']} timed calls add up to {fmt_time(res['sum_ns'])} but their timestamps span only {fmt_time(res['span_ns'])} ({res['ratio']:.2f}x): the durations overlap, so they are not the time of one call each",
                        se.role,
                        non_comparable=True,
                        **res,
                    )
                )
        if out:
            return out
        if not checked:
            why = f"the {' and '.join(coarse)} timestamps are too coarse to separate iterations" if coarse else "no side has a per-iteration timestamp"
            return [self.cannot(why)]
        return [self.ok(f"the timed calls fit in the wall-clock span of their samples ({', '.join(checked)})")]

    @staticmethod
    def span_check(se: SideEvidence) -> dict | None:
        ts_all = se.columns.get("timestamp_ns")
        if se.times is None or ts_all is None or se.times.size < 3:
            return None
        if time_family(se.get("time_source")) in ("ncu", "trace"):
            return None  # kernel durations from a profiler: concurrent kernels overlap legitimately
        cps = se.get("calls_per_sample")
        per_sample = float(cps) if isinstance(cps, (int, float)) and cps and cps > 0 else 1.0
        runs = se.runs if se.runs is not None else np.zeros(se.times.size, dtype=np.int64)
        total_sum = total_span = 0.0
        n = 0
        zero_gaps = 0
        gaps_seen = 0
        for r in np.unique(runs):
            idx = np.flatnonzero(runs == r)
            ts, d = ts_all[idx], se.times[idx] * per_sample
            ok = np.isfinite(ts) & np.isfinite(d)
            ts, d = ts[ok], d[ok]
            if ts.size < 3:
                continue
            order = np.argsort(ts, kind="stable")
            ts, d = ts[order], d[order]
            gaps = np.diff(ts)
            gaps_seen += gaps.size
            zero_gaps += int((gaps <= 0).sum())
            span = float(ts[-1] - ts[0])
            # start stamps: calls 0..n-2 lie inside the span; end stamps: calls 1..n-1 do
            inside = min(float(d[:-1].sum()), float(d[1:].sum()))
            total_sum += inside
            total_span += span + _SLACK_NS * (ts.size - 1)
            n += ts.size
        if n == 0:
            return None
        if gaps_seen and zero_gaps > 0.5 * gaps_seen or total_span <= 0:
            return {"coarse": True}
        return {"samples": n, "sum_ns": total_sum, "span_ns": total_span, "ratio": total_sum / total_span, "calls_per_sample": per_sample}


RULE = TimesExceedWallClock()
