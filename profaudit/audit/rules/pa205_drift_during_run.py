from __future__ import annotations

import numpy as np

from profaudit.audit import stats as st
from profaudit.audit.evidence import Evidence, SideEvidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import pct


class DriftDuringRun(Rule):
    """Times drift over the run (heating, power management, background load).

    What it detects: in each side's steady-state samples, a monotone trend: Spearman rho between
    time and iteration above 0.3 in size with p < 0.01, or a Theil-Sen drift over the run above
    5 % of the median whose 95 % slope interval excludes zero and whose trend test also reaches
    p < 0.01 (FAIRNESS P4); either way the
    drift over the run must reach the noise threshold (1 %), below which it cannot move the
    claim. It also reports the temperature rise over the run and, for blocked (not interleaved)
    runs, a temperature difference above 5 degC between the sides.

    Why it matters: a GPU that heats during the run slows down (convnet-benchmarks #71: a Titan X
    throttled at 84 degC); running all of A then all of B on a warming GPU gives B the hotter,
    slower part. Interleaved ABAB runs cancel it.

    Example: the candidate's times rise 8 % from first to last iteration while its temperature
    climbs from 55 to 81 degC in a blocked run: WARN.
    """

    code = "PA205"
    name = "drift-during-run"
    severity = Severity.WARN
    pitfalls = ("P4",)
    needs = ("per-iteration times in execution order (>= 20 per side)", "optional temperature column, meta.interleaved")

    def check(self, ev: Evidence) -> list[Finding]:
        out, checked = [], []
        temps = {}
        blocked = any(se.get("interleaved") is False for se in ev.sides)
        for se in ev.sides:
            if not se.has_samples or se.steady.size < 20:
                continue
            checked.append(se.role)
            tr = self._trend(se)
            t = se.steady_column("temperature_c")
            rise = None
            if t is not None and np.isfinite(t).sum() >= 10:
                tt = t[np.isfinite(t)]
                k = max(1, tt.size // 10)
                rise = float(np.median(tt[-k:]) - np.median(tt[:k]))
                temps[se.role] = float(np.median(tt))
            # A drift smaller than the noise threshold cannot move the speedup past it.
            big_enough = abs(tr.drift_rel) >= ev.noise_threshold
            # Both branches need the trend test at p < 0.01: a 95 % Theil-Sen interval alone lets
            # one iid side in twenty through, and short noisy logs (50 samples at 5 % noise) reach a
            # 5 % "drift" by chance often enough to cry wolf on fair runs.
            significant = tr.p_value < 0.01
            flagged = big_enough and significant and (abs(tr.rho) > 0.3 or (abs(tr.drift_rel) > 0.05 and tr.drift_significant))
            if flagged:
                extra = f"; temperature rose {rise:.0f} degC" if rise is not None and rise > 2 else ""
                run = " in a blocked (not interleaved) run" if blocked else ""
                out.append(self.flag(Severity.WARN, f"the {se.role}'s times drift over the run{run}: Spearman rho {tr.rho:+.2f}, Theil-Sen drift {pct(tr.drift_rel)} of the median{extra}", se.role, trend=tr, temperature_rise_c=rise, interleaved=se.fact("interleaved")))
        if blocked and len(temps) == 2 and abs(temps["baseline"] - temps["candidate"]) > 5:
            out.append(self.flag(Severity.WARN, f"blocked runs at different temperatures: baseline {temps['baseline']:.0f} degC, candidate {temps['candidate']:.0f} degC", "both", temperature_c=temps))
        if out:
            return out
        if not checked:
            return [self.cannot("no per-iteration log with at least 20 steady-state samples")]
        return [self.ok(f"no drift over the run ({', '.join(checked)})", temperature_c=temps or None)]

    @staticmethod
    def _trend(se: SideEvidence) -> st.Trend:
        runs = se.steady_runs
        if runs is None:
            return st.trend(se.steady, median=se.typical_time_ns())
        # A drift is judged inside each process-level run; the longest run speaks for the side.
        vals = se.steady
        uniq, counts = np.unique(runs, return_counts=True)
        longest = uniq[np.argmax(counts)]
        return st.trend(vals[runs == longest])


RULE = DriftDuringRun()
