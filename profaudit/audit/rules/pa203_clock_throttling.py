from __future__ import annotations

import numpy as np
import polars as pl

from profaudit.audit.evidence import Evidence, SideEvidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import clock_state, pct
from profaudit.samples import is_throttled

class ClockThrottling(Rule):
    """Samples taken while the GPU was throttled (clock below 75 % of default, throttle reasons).

    What it detects: the share of steady-state samples per side whose SM clock is below 0.75x the
    default clock (meta.default_clock_mhz, else the device spec's boost clock, else the highest
    clock seen in either log) or whose NVML throttle reasons name anything other than idle or
    application clocks (power cap, thermal slowdown, HW slowdown, sync boost). A side whose
    clocks were locked (clock_control base/locked) is judged against its own locked clock
    (meta.sm_clock_mhz, else the 95th percentile of its clock column): a deliberately low lock
    is not throttling, a drop below the lock is.

    Why it matters: a throttled side is slower because of its temperature or power budget, not
    its code (flashinfer PR #2899: B200 clocks fell from 1965 to ~1580 MHz under back-to-back
    kernels; nvbench #231: 59 % of the default clock). nvbench uses the same 75 % threshold.

    Example: 30 % of the baseline's samples report `sw_thermal_slowdown`: WARN.
    """

    code = "PA203"
    name = "clock-throttling"
    severity = Severity.WARN
    pitfalls = ("P4",)
    needs = ("per-sample SM clocks or throttle reasons",)

    def check(self, ev: Evidence) -> list[Finding]:
        ref, ref_src = self._reference(ev)
        results = {}
        refs = {}
        for se in ev.sides:
            side_ref, side_src = self._locked_reference(se)
            if side_ref is None:
                side_ref, side_src = ref, ref_src
            refs[se.role] = (side_ref, side_src)
            r = self._side(se, side_ref)
            if r is not None:
                results[se.role] = r
        if not results:
            return [self.cannot("no per-sample SM clock or throttle-reason column in either log")]
        out = []
        for role, r in results.items():
            if r["throttled_share"] > 0.01:
                why = []
                side_ref, side_src = refs[role]
                if r["low_clock_share"]:
                    why.append(f"{pct(r['low_clock_share'])} below 75% of {side_ref:.0f} MHz ({side_src})")
                if r["reason_share"]:
                    why.append(f"{pct(r['reason_share'])} with throttle reasons ({', '.join(r['reasons'][:4])})")
                out.append(self.flag(Severity.WARN, f"{pct(r['throttled_share'])} of the {role}'s samples were throttled: {'; '.join(why)}", role, reference_clock_mhz=side_ref, reference_source=side_src, **r))
        if out:
            return out
        return [self.ok(f"no throttled samples ({', '.join(results)}; reference clock {ref:.0f} MHz from {ref_src})" if ref else "no throttle reasons recorded in the logs", reference_clock_mhz=ref, **results)]

    @staticmethod
    def _locked_reference(se: SideEvidence) -> tuple[float | None, str]:
        """The clock a locked side was locked at: nvbench's 75 % rule is relative to the clock the
        GPU would run at undisturbed, which under a lock is the lock, not the boost clock (ncu's
        --clock-control base locks far below boost on purpose)."""
        cc = se.fact("clock_control")
        if cc is None or clock_state(cc.value) != "locked":
            return None, ""
        f = se.fact("sm_clock_mhz")
        if f is not None and float(f.value) > 0:
            return float(f.value), f"locked clock ({f.source})"
        col = se.steady_column("sm_clock_mhz")
        if col is not None and np.isfinite(col).any():
            # Throttling only lowers clocks: the upper part of the column is the lock level.
            return float(np.nanpercentile(col, 95)), f"locked clock: 95th percentile of the {se.role}'s sm_clock_mhz ({cc.source})"
        return None, ""

    @staticmethod
    def _reference(ev: Evidence) -> tuple[float | None, str]:
        for se in ev.sides:
            f = se.fact("default_clock_mhz")
            if f is not None:
                return float(f.value), f.source
        for se in ev.sides:
            boost = getattr(se.spec, "boost_clock_hz", None) if se.spec is not None else None
            if boost:
                return float(boost) / 1e6, f"device spec boost clock of {getattr(se.spec, 'name', 'the device')}"
        highs = [float(np.nanmax(se.columns["sm_clock_mhz"])) for se in ev.sides if "sm_clock_mhz" in se.columns and np.isfinite(se.columns["sm_clock_mhz"]).any()]
        if highs:
            return max(highs), "highest clock in either log (no default clock or spec)"
        return None, ""

    @staticmethod
    def _side(se: SideEvidence, ref: float | None):
        if not se.has_samples:
            return None
        clocks = se.steady_column("sm_clock_mhz")
        have_clock = clocks is not None and np.isfinite(clocks).any()
        reasons = None
        if se.throttle is not None and se.steady_mask is not None:
            reasons = se.throttle.filter(pl.Series(se.steady_mask))
        if not have_clock and reasons is None:
            return None
        n = int(se.steady.size)
        low = np.zeros(n, dtype=bool)
        if have_clock and ref:
            low = np.nan_to_num(clocks, nan=np.inf) < 0.75 * ref
        why = np.zeros(n, dtype=bool)
        seen: list[str] = []
        if reasons is not None:
            # a log repeats a handful of reason strings: judge each once
            verdict = {r: is_throttled(r) for r in reasons.unique().to_list()}
            why = reasons.replace_strict(verdict, default=False, return_dtype=pl.Boolean).fill_null(False).to_numpy()
            seen = sorted(str(r) for r, w in verdict.items() if w)
        both = low | why
        return {
            "samples": n,
            "throttled_share": float(both.mean()) if n else 0.0,
            "low_clock_share": float(low.mean()) if n else 0.0,
            "reason_share": float(why.mean()) if n else 0.0,
            "reasons": seen,
            "median_clock_mhz": float(np.nanmedian(clocks)) if have_clock else None,
        }


RULE = ClockThrottling()
