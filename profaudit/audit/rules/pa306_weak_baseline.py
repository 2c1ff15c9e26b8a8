from __future__ import annotations

from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import fmt_time, pct, roofline_floor

_EAGER = {"", "eager", "none", "no", "false", "off"}


class WeakBaseline(Rule):
    """The baseline is far from what the hardware or standard tools achieve.

    What it detects (proposals, medium confidence): the baseline reaches under 15 % of its
    roofline bound (device spec and workload FLOPs/bytes), or an eager-mode baseline is the only
    baseline for an operation under 100 us (launch overhead and unfused kernels dominate it).

    Why it matters: beating a strawman proves little; a speedup over eager PyTorch on a tiny op
    often vanishes against torch.compile or a vendor library (FAIRNESS P3, deep-reinforce
    "Hacks and Defenses").

    Example: a 40 us eager baseline for a fused elementwise op: WARN.
    """

    code = "PA306"
    name = "weak-baseline"
    severity = Severity.WARN
    pitfalls = ("P3",)
    needs = ("baseline time with device spec + workload", "or baseline compile_mode with its time")

    def check(self, ev: Evidence) -> list[Finding]:
        b = ev.baseline
        t = b.typical_time_ns()
        if t is None:
            return [self.cannot("no baseline time")]
        out, checked = [], []
        t_min, detail = roofline_floor(ev, b)
        if t_min is not None:
            checked.append("roofline")
            frac = t_min / t
            if frac < 0.15:
                out.append(self.flag(Severity.WARN, f"the baseline reaches {pct(frac)} of its roofline bound ({fmt_time(t)} against a floor of {fmt_time(t_min)}): a stronger baseline may exist", "baseline", roofline_fraction=frac, **detail))
        mode = b.fact("compile_mode")
        if mode is not None:
            checked.append("compile mode")
            if str(mode.value).strip().lower() in _EAGER and t < 100_000:
                out.append(self.flag(Severity.WARN, f"the only baseline is eager mode for a {fmt_time(t)} operation: launch overhead and unfused kernels dominate it; compare against torch.compile or a vendor library too", "baseline", compile_mode=mode, baseline_time_ns=t))
        if out:
            return out
        if not checked:
            return [self.cannot("neither a device spec with workload FLOPs/bytes nor the baseline's compile mode")]
        return [self.ok(f"no sign of a weak baseline ({', '.join(checked)})")]


RULE = WeakBaseline()
