from __future__ import annotations

import numpy as np

from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import differ_text, pct, unrecorded


class PowerLimitMismatch(Rule):
    """Different board power limits, or a side running against its power cap.

    What it detects: power limits (meta.power_limit_w) that differ by more than 5 % (FAIL) or
    1 % (WARN), and a side whose median logged board power is at 97 % of its limit or more
    (power-capped: its clocks are set by the cap).

    Why it matters: a board with a higher power limit sustains higher clocks under load; cloud
    instances of one SKU ship with different limits (P13). A power-capped side measures its power
    budget, not its code.

    Example: baseline at 300 W, candidate at 400 W on the same GPU model: FAIL.
    """

    code = "PA206"
    name = "power-limit-mismatch"
    severity = Severity.FAIL
    pitfalls = ("P4", "P13")
    needs = ("meta.power_limit_w of both sides", "optional power_w column")

    def check(self, ev: Evidence) -> list[Finding]:
        b, c = ev.baseline, ev.candidate
        pb, pc = b.fact("power_limit_w"), c.fact("power_limit_w")
        out: list[Finding] = []
        if pb is not None and pc is not None:
            rel = abs(float(pb.value) - float(pc.value)) / max(float(pb.value), float(pc.value), 1e-9)
            if rel > 0.05:
                sev = Severity.WARN if ev.intended("power_limit_w") else Severity.FAIL
                out.append(self.flag(sev, f"power limits differ by {pct(rel)}: " + differ_text("power_limit_w", pb, pc), "both", non_comparable=True, power_limit_baseline=pb, power_limit_candidate=pc))
            elif rel > 0.01:
                out.append(self.flag(Severity.WARN, f"power limits differ by {pct(rel)}: " + differ_text("power_limit_w", pb, pc), "both", power_limit_baseline=pb, power_limit_candidate=pc))
        capped = []
        for se, lim in ((b, pb), (c, pc)):
            p = se.steady_column("power_w")
            if lim is None or p is None or not np.isfinite(p).any():
                continue
            med = float(np.nanmedian(p))
            capped.append(se.role)
            if med >= 0.97 * float(lim.value):
                out.append(self.flag(Severity.WARN, f"the {se.role} ran at its power cap (median {med:.0f} W of a {float(lim.value):.0f} W limit): its clocks are set by the cap", se.role, median_power_w=med, power_limit=lim))
        if out:
            return out
        missing = unrecorded(ev, pb, pc)
        if missing:
            return [self.cannot(f"the power limit of the {missing} is not recorded (meta.power_limit_w)")]
        return [self.ok(f"same power limit ({float(pb.value):.0f} W)" + (f"; no side at its cap ({', '.join(capped)})" if capped else ""))]


RULE = PowerLimitMismatch()
