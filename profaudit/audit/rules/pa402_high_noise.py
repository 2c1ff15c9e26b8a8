from __future__ import annotations

from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import pct


class HighNoise(Rule):
    """A side's times are noisy: IQR above 10 % of the median.

    What it detects: per side, the interquartile range relative to the median of the
    steady-state samples (torch.utils.benchmark warns at 10 %, "significant environmental
    influence" at 25 %); for summaries, a standard deviation above 10 % of the mean (pyperf).

    Why it matters: noise that large hides or fakes differences of the same size and usually
    means an unstable environment (shared GPU, clocks, host interference). nvbench's default
    stopping criterion asks for 0.5 % relative noise.

    Logs written by `profaudit bench` record whether the noise target was met
    (`noise_target_met`, `stop_reason`); a side that stopped before it -> WARN.

    Example: candidate median 1.0 ms with quartiles 0.88 and 1.17 ms: WARN.
    """

    code = "PA402"
    name = "high-noise"
    severity = Severity.WARN
    pitfalls = ("P9",)
    needs = ("per-iteration times, or a reported mean and standard deviation",)

    def check(self, ev: Evidence) -> list[Finding]:
        out, checked = [], []
        cmp = ev.comparison
        for se in ev.sides:
            if se.has_samples and cmp.available and se.role in cmp.noise:
                d = cmp.noise[se.role]
                checked.append(se.role)
                if d.rel_iqr > 0.10:
                    level = "significant environmental influence" if d.rel_iqr > 0.25 else "system fluctuation"
                    out.append(self.flag(Severity.WARN, f"the {se.role}'s IQR is {pct(d.rel_iqr)} of its median ({level}; CV {pct(d.cv)})", se.role, dispersion=d))
            elif "mean" in se.summaries and "std" in se.summaries and se.summaries["mean"] > 0:
                checked.append(se.role)
                cv = se.summaries["std"] / se.summaries["mean"]
                if cv > 0.10:
                    out.append(self.flag(Severity.WARN, f"the {se.role}'s standard deviation is {pct(cv)} of its mean", se.role, cv=cv))
        for se in ev.sides:
            met = se.fact("noise_target_met")
            if met is None:
                continue
            checked.append(se.role)
            if met.value is False:
                target, stop = se.get("noise_target"), se.get("stop_reason")
                out.append(self.flag(Severity.WARN, f"the harness stopped measuring the {se.role} before its noise target" + (f" (relative SE of the median {float(target):.2%})" if target is not None else "") + (f" on {stop}" if stop else "") + f" ({met.source})", se.role, noise_target_met=met, noise_target=se.fact("noise_target"), stop_reason=se.fact("stop_reason")))
        if out:
            return out
        if not checked:
            return [self.cannot("no per-iteration times and no reported standard deviation")]
        return [self.ok(f"noise under 10% ({', '.join(f'{r} IQR {pct(cmp.noise[r].rel_iqr)}' for r in dict.fromkeys(checked) if r in cmp.noise)})")]


RULE = HighNoise()
