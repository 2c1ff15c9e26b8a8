from __future__ import annotations

import numpy as np

from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import fx, pct


def _differ_p(groups: list[np.ndarray]) -> float:
    """Kruskal-Wallis p that the runs come from one distribution (runs thinned to 5000 values)."""
    from scipy import stats as sps

    thin = [g[:: max(1, g.size // 5000)] for g in groups if g.size]
    if len(thin) < 2 or all(np.all(g == thin[0][0]) for g in thin):
        return 1.0
    return float(sps.kruskal(*thin).pvalue)


class RunToRunVariation(Rule):
    """Process-level runs disagree, or there is only one run per side.

    What it detects: with two or more process-level runs (the samples' `run` column, or several
    timing files on one side), the spread of per-run medians (over 5 %, and beyond within-run
    noise by a Kruskal-Wallis test at p < 0.01 -> WARN) and whether the
    speedup survives the least favourable pairing of runs (fastest baseline run against slowest
    candidate run) above the noise threshold. With a single run per side it cannot check, and
    says so: iterations of one process are autocorrelated and share one allocation, one clock
    history and one binary layout.

    Why it matters: FAIRNESS P10 asks for run-level repetitions; Google Benchmark suggests 9.
    The bootstrap interval is widened by the between-run spread (see the interval method).

    Example: candidate runs at 0.50, 0.51 and 0.62 ms: WARN (24 % spread).
    """

    code = "PA408"
    name = "run-to-run-variation"
    severity = Severity.WARN
    pitfalls = ("P10",)
    needs = ("per-iteration times with a process-level run index, on both sides",)

    def check(self, ev: Evidence) -> list[Finding]:
        meds, pvals = {}, {}
        for se in ev.sides:
            runs = se.steady_runs
            if not se.has_samples or runs is None:
                continue
            vals = se.steady
            uniq = np.unique(runs)
            if uniq.size >= 2:
                groups = [vals[runs == r] for r in uniq]
                meds[se.role] = np.array([np.median(g) for g in groups])
                pvals[se.role] = _differ_p(groups)
        if not meds:
            reps = {se.role: se.get("repetitions") for se in ev.sides}
            return [self.cannot("a single process-level run per side: run-to-run variation is unmeasured", repetitions=reps)]
        out = []
        spreads = {r: float(m.max() / m.min() - 1) for r, m in meds.items()}
        cmp = ev.comparison
        evid = {"run_medians_ns": {r: m.tolist() for r, m in meds.items()}, "spread": spreads, "interval_inflation": cmp.inflation if cmp.available else None}
        evid["kruskal_wallis_p"] = pvals
        for role, s in spreads.items():
            # A spread counts when the runs differ beyond their own sampling noise.
            if s > 0.05 and pvals[role] < 0.01:
                out.append(self.flag(Severity.WARN, f"the {role}'s per-run medians vary by {pct(s)} across {meds[role].size} runs (the interval is widened for it)", role, **evid))
        if len(meds) == 2:
            worst = float(meds["baseline"].min() / meds["candidate"].max())
            best = float(meds["baseline"].max() / meds["candidate"].min())
            evid.update(worst_pairing=worst, best_pairing=best)
            noise = ev.noise_threshold
            iv = cmp.primary_interval if cmp.available else None
            if iv is not None and iv.estimate > 1 + noise and worst <= 1 + noise:
                out.append(self.flag(Severity.WARN, f"the speedup does not hold for every pairing of runs: {fx(worst)} (fastest baseline run / slowest candidate run) to {fx(best)}", "both", **evid))
        if out:
            return out
        return [self.ok(f"runs agree ({', '.join(f'{r}: {meds[r].size} runs within {pct(s)}' for r, s in spreads.items())})", **evid)]


RULE = RunToRunVariation()
