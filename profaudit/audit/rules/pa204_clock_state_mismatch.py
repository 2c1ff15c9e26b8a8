from __future__ import annotations

import numpy as np

from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import clock_state, differ_text, fx, pct


class ClockStateMismatch(Rule):
    """The sides ran at different clocks: the speedup is checked in cycles (time x SM clock).

    What it detects: with SM clocks known on both sides (per-sample column or a locked clock in
    meta), the speedup in cycles against the speedup in time; a cycle speedup more than 5 % below
    the time speedup means part of the "speedup" is a clock difference (FAIL, corrected to the
    cycle-space interval). Without clock values, a locked clock on one side and unlocked on the
    other (meta or ncu --clock-control) makes the sides non-comparable (FAIL).

    Why it matters: nvbench-compare calls a result faster only if the gap holds in cycle space;
    ncu locks clocks to base by default while event timings run at boost. A median-clock
    difference above 3 % changes the time ratio by the same amount.

    Example: baseline at a median 1410 MHz (power capped), candidate at 1980 MHz; time speedup
    1.60x, cycle speedup 1.14x: FAIL.
    """

    code = "PA204"
    name = "clock-state-mismatch"
    severity = Severity.FAIL
    pitfalls = ("P4", "P5")
    needs = ("SM clocks of both sides (sample column or meta.sm_clock_mhz)", "or clock_control of both sides")

    def check(self, ev: Evidence) -> list[Finding]:
        cmp = ev.comparison
        b, c = ev.baseline, ev.candidate
        cb, cc = b.fact("clock_control"), c.fact("clock_control")
        if cmp.available and cmp.space == "cycles" and cmp.primary is not None:
            stat = cmp.primary.name
            t_iv, c_iv = cmp.time_intervals.get(stat), cmp.cycle_intervals.get(stat)
            fb, fc = cmp.clock_mhz.get("baseline"), cmp.clock_mhz.get("candidate")
            evid = {"clock_baseline_mhz": fb, "clock_candidate_mhz": fc, "time_speedup": t_iv, "cycle_speedup": c_iv, "clock_control_baseline": cb, "clock_control_candidate": cc}
            diff = fb / fc - 1 if fb and fc else 0.0
            if c_iv.estimate < 0.95 * t_iv.estimate:
                return [self.flag(Severity.FAIL, f"the baseline ran at {fb:.0f} MHz and the candidate at {fc:.0f} MHz ({pct(-diff)} faster clock): {fx(t_iv.estimate)} in time is {fx(c_iv.estimate)} in cycles", "both", correction=c_iv, correction_note="cycle space (time x SM clock) for the clock difference", **evid)]
            if c_iv.estimate > 1.05 * t_iv.estimate:
                return [self.flag(Severity.WARN, f"the candidate ran at a lower clock ({fc:.0f} vs {fb:.0f} MHz): {fx(t_iv.estimate)} in time is {fx(c_iv.estimate)} in cycles", "both", **evid)]
            if abs(diff) > 0.03:
                return [self.flag(Severity.INFO, f"median clocks differ by {pct(abs(diff))} ({fb:.0f} vs {fc:.0f} MHz); the speedup holds in cycles ({fx(c_iv.estimate)} against {fx(t_iv.estimate)} in time)", "both", **evid)]
            return [self.ok(f"clocks match ({fb:.0f} vs {fc:.0f} MHz); speedup in cycles {fx(c_iv.estimate)}", **evid)]
        (vb, srcb), (vc, srcc) = b.clock_mhz(), c.clock_mhz()
        if vb is not None and vc is not None:
            # Clock values without per-sample times to convert: compare the clocks themselves.
            fb, fc = float(np.median(vb)), float(np.median(vc))
            diff = fb / fc - 1
            evid = {"clock_baseline_mhz": fb, "clock_baseline_source": srcb, "clock_candidate_mhz": fc, "clock_candidate_source": srcc}
            if abs(diff) > 0.03:
                return [self.flag(Severity.WARN, f"the sides ran at different clocks ({fb:.0f} vs {fc:.0f} MHz, {pct(abs(diff))}) and there are no per-call times to recompute the speedup in cycles", "both", **evid)]
            return [self.ok(f"clocks match ({fb:.0f} vs {fc:.0f} MHz)", **evid)]
        if cb is not None and cc is not None:
            sb, sc = clock_state(cb.value), clock_state(cc.value)
            if sb != sc:
                sev = Severity.WARN if ev.intended("clock_control") else Severity.FAIL
                return [self.flag(sev, "clock states differ and no clock values are logged to convert to cycles: " + differ_text("clock_control", cb, cc), "both", non_comparable=True, clock_control_baseline=cb, clock_control_candidate=cc)]
            return [self.ok(f"both sides {sb} ({cb.value} / {cc.value}); no clock values logged to compare", clock_control_baseline=cb, clock_control_candidate=cc)]
        missing = [s.role for s in (b, c) if s.clock_mhz()[0] is None and s.fact("clock_control") is None]
        return [self.cannot(f"neither SM clocks nor clock control recorded for the {' and '.join(missing) or 'sides'}")]


RULE = ClockStateMismatch()
