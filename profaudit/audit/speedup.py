"""The speedup the evidence supports, recomputed from raw samples.

`compare(evidence)` works on steady-state samples (the warm-up head of every run removed), in
cycle space when both sides' SM clocks are known (time x clock, as nvbench-compare does), and
returns the ratio baseline / candidate for the claimed statistic and the robust ones (mean,
median, 10 % trimmed mean, min) with bootstrap intervals (>= 10 000 resamples), Mann-Whitney U,
each side's noise, and the interval inflation applied for autocorrelated iterations and for
run-to-run variation (FAIRNESS P10: consecutive iterations are not independent).
Sides that only report summaries get point ratios, and a delta-method interval where a
standard deviation and a sample count are reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from profaudit.audit import stats as st
from profaudit.audit.stats import Interval, SampleSet, Statistic

if TYPE_CHECKING:  # pragma: no cover
    from profaudit.audit.evidence import Evidence, SideEvidence

# Statistics whose cross pairs (baseline X / candidate Y) PA404 checks a claim against.
CROSS_STATS: tuple[Statistic, ...] = (st.MEAN, st.MEDIAN, st.MIN, st.TRIMMED, st.MAX)


@dataclass
class Comparison:
    available: bool
    reason: str = ""
    mode: str = "none"  # samples, summaries, none
    space: str = "time"  # time or cycles
    space_note: str = ""
    primary: Statistic | None = None
    intervals: dict[str, Interval] = field(default_factory=dict)  # in `space`
    time_intervals: dict[str, Interval] = field(default_factory=dict)
    cycle_intervals: dict[str, Interval] = field(default_factory=dict)
    with_head: dict[str, float] = field(default_factory=dict)  # point ratios including warm-up heads
    cross: dict[tuple[str, str], float] = field(default_factory=dict)  # (baseline stat, candidate stat) -> ratio
    mann_whitney: st.MannWhitney | None = None
    noise: dict[str, st.Dispersion] = field(default_factory=dict)
    inflation: dict[str, dict[str, Any]] = field(default_factory=dict)
    n: dict[str, int] = field(default_factory=dict)
    clock_mhz: dict[str, float] = field(default_factory=dict)  # median SM clock per side
    method: str = ""
    resamples: int = 0

    @property
    def primary_interval(self) -> Interval | None:
        if self.primary is None:
            return None
        return self.intervals.get(self.primary.name)

    def interval(self, stat: Statistic | str | None) -> Interval | None:
        if stat is None:
            return None
        return self.intervals.get(stat if isinstance(stat, str) else stat.name)

    def as_dict(self) -> dict:
        from profaudit.audit.findings import _jsonable

        return _jsonable(
            {
                "available": self.available,
                "reason": self.reason,
                "mode": self.mode,
                "space": self.space,
                "space_note": self.space_note,
                "primary_statistic": self.primary.name if self.primary else None,
                "intervals": {k: v.as_dict() for k, v in self.intervals.items()},
                "time_intervals": {k: v.as_dict() for k, v in self.time_intervals.items()} if self.space != "time" else None,
                "with_warmup_head": self.with_head,
                "mann_whitney": self.mann_whitney.as_dict() if self.mann_whitney else None,
                "noise": {k: v.as_dict() for k, v in self.noise.items()},
                "interval_inflation": self.inflation,
                "n": self.n,
                "clock_mhz": self.clock_mhz,
                "method": self.method,
                "resamples": self.resamples,
            }
        )


def primary_statistic(claimed: Statistic | None, n_min: int) -> Statistic:
    """The statistic a supported speedup is stated in: the claimed one when it estimates typical
    time (mean, median, trimmed mean, total) or is a tail quantile with at least 5 samples beyond
    it; otherwise the median (min, max and best-of are not estimates of a speedup)."""
    if claimed is None:
        return st.MEDIAN
    if claimed.kind in ("mean", "trimmed_mean", "total"):
        return claimed
    if claimed.kind == "quantile" and 0.0 < (claimed.q or 0) < 1.0:
        if n_min * (1 - float(claimed.q)) >= 5 and n_min * float(claimed.q) >= 5:
            return claimed
    return st.MEDIAN


def _stat_list(claimed: Statistic | None, primary: Statistic) -> list[Statistic]:
    out: list[Statistic] = []
    for s in (primary, claimed, *st.ROBUST_SET):
        if s is not None and s.name not in {x.name for x in out}:
            out.append(s)
    return out


def compare(ev: "Evidence", *, resamples: int = st.DEFAULT_RESAMPLES, seed: int = st.DEFAULT_SEED) -> Comparison:
    b, c = ev.baseline, ev.candidate
    claimed = ev.statistic
    if b.has_samples and c.has_samples:
        return _compare_samples(ev, b, c, claimed, resamples, seed)
    if (b.has_samples or b.summaries) and (c.has_samples or c.summaries):
        return _compare_summaries(ev, b, c, claimed)
    missing = [s.role for s in (b, c) if not (s.has_samples or s.summaries)]
    return Comparison(False, f"no timing samples for the {' and '.join(missing)}")


def _space(b: "SideEvidence", c: "SideEvidence") -> tuple[str, np.ndarray | float | None, np.ndarray | float | None, str]:
    fb, sb = b.clock_mhz()
    fc, sc = c.clock_mhz()
    if fb is None or fc is None:
        which = [s.role for s, f in ((b, fb), (c, fc)) if f is None]
        return "time", None, None, f"time space: SM clock unknown for the {' and '.join(which)}"
    return "cycles", fb, fc, f"cycle space: time x SM clock (baseline: {sb}; candidate: {sc})"


def _compare_samples(ev, b, c, claimed, resamples, seed) -> Comparison:
    tb, tc = b.steady, c.steady
    if tb.size == 0 or tc.size == 0:
        return Comparison(False, "no steady-state samples")
    primary = primary_statistic(claimed, min(tb.size, tc.size))
    stats = _stat_list(claimed, primary)
    space, fb, fc, note = _space(b, c)
    cmp = Comparison(True, mode="samples", space=space, space_note=note, primary=primary, resamples=resamples)
    cmp.n = {"baseline": int(tb.size), "candidate": int(tc.size)}
    ss = np.random.SeedSequence(seed)
    time_sets = (SampleSet(tb, b.steady_runs, b.steady_sorted), SampleSet(tc, c.steady_runs, c.steady_sorted))
    cmp.time_intervals, method, infl, ar = _intervals_ar(time_sets, stats, resamples, ss.spawn(2), ev.confidence, "time")
    cmp.inflation = infl
    cmp.method = method
    if space == "cycles":
        # MHz x ns = 1e-3 cycles; the scale cancels in the ratio but keeps numbers readable.
        cyc_b = tb * (fb if np.isscalar(fb) else fb) * 1e-3
        cyc_c = tc * (fc if np.isscalar(fc) else fc) * 1e-3
        cyc_sets = (SampleSet(cyc_b, b.steady_runs), SampleSet(cyc_c, c.steady_runs))
        # Cycles are times scaled by a near-constant clock: reuse the times' autocorrelation.
        cmp.cycle_intervals, _, infl_c, _ = _intervals_ar(cyc_sets, stats, resamples, ss.spawn(2), ev.confidence, "cycles", ar)
        cmp.intervals = cmp.cycle_intervals
        cmp.inflation = infl_c
        cmp.clock_mhz = {"baseline": float(np.median(fb)), "candidate": float(np.median(fc))}
        main_sets = cyc_sets
    else:
        cmp.intervals = cmp.time_intervals
        main_sets = time_sets
    cmp.mann_whitney = st.mann_whitney(main_sets[0].values, main_sets[1].values, a_sorted=main_sets[0].sorted, b_sorted=main_sets[1].sorted)
    cmp.noise = {"baseline": st.dispersion(tb, sorted_x=time_sets[0].sorted), "candidate": st.dispersion(tc, sorted_x=time_sets[1].sorted)}
    all_b, all_c = b.times_sorted, c.times_sorted
    for s in stats:
        wb, wc = st.compute(b.times, s, sorted_x=all_b), st.compute(c.times, s, sorted_x=all_c)
        if wb > 0 and wc > 0:
            cmp.with_head[s.name] = wb / wc
    sb_, sc_ = time_sets
    for xs in CROSS_STATS:
        for ys in CROSS_STATS:
            vb, vc = sb_.stat(xs), sc_.stat(ys)
            if vb > 0 and vc > 0:
                cmp.cross[(xs.name, ys.name)] = vb / vc
    return cmp


def intervals(sets, stats, resamples, seeds, confidence, space, ar_known=None):
    """Bootstrap intervals of baseline / candidate for each statistic, as the audit computes them.

    `sets` is (baseline SampleSet, candidate SampleSet), `seeds` two seeds (or SeedSequences).
    Returns (intervals by statistic name, method text, inflation info). The inflation info holds
    per side `lag1_autocorrelation`, `autocorrelation_factor`, `factor` by statistic and, with
    runs, `runs` and `run_factor` by statistic; paired runs add a `paired_runs` entry.
    `ar_known` reuses (r1, factor) per side from an earlier call (cycle space reuses time's)."""
    out, method, infl, _ = _intervals_ar(sets, stats, resamples, seeds, confidence, space, ar_known)
    return out, method, infl


def _intervals_ar(sets, stats, resamples, seeds, confidence, space, ar_known=None):
    b_set, c_set = sets
    draws_b, method_b = st.bootstrap_draws(b_set, stats, resamples, np.random.default_rng(seeds[0]))
    draws_c, method_c = st.bootstrap_draws(c_set, stats, resamples, np.random.default_rng(seeds[1]))
    infl: dict[str, dict[str, Any]] = {}
    factors: dict[str, dict[str, float]] = {"baseline": {}, "candidate": {}}
    ar: dict[str, float] = {}
    for role, sset in (("baseline", b_set), ("candidate", c_set)):
        if ar_known is not None:
            r1, ar[role] = ar_known[role]
        else:
            r1 = st.lag1_autocorrelation(sset.values, sorted_x=sset.sorted)
            # Widen only for autocorrelation distinguishable from chance (|r1| > 2 / sqrt(n) for iid).
            ar[role] = st.autocorrelation_inflation(r1) if r1 == r1 and r1 > 2 / math.sqrt(max(sset.n, 1)) else 1.0
        infl[role] = {"lag1_autocorrelation": r1, "autocorrelation_factor": ar[role]}
    paired_info: dict[str, Any] = {}
    for s in stats:
        se_b = st.log_se(draws_b[s.name], b_set.stat(s)) * ar["baseline"]
        se_c = st.log_se(draws_c[s.name], c_set.stat(s)) * ar["candidate"]
        paired = st.paired_run_inflation(b_set, c_set, s, math.hypot(se_b, se_c), confidence=confidence)
        if paired is not None:
            f, info = paired
            factors["baseline"][s.name] = ar["baseline"] * f
            factors["candidate"][s.name] = ar["candidate"] * f
            paired_info["runs"] = info.pop("runs")
            paired_info.setdefault("run_factor", {})[s.name] = f
            paired_info.update(info)
            continue
        for role, sset, se in (("baseline", b_set, se_b), ("candidate", c_set, se_c)):
            f_run, run_info = st.run_inflation(sset, s, se, confidence=confidence)
            factors[role][s.name] = ar[role] * f_run
            if run_info:
                infl[role]["runs"] = run_info.pop("runs")
                infl[role].setdefault("run_factor", {})[s.name] = f_run
                infl[role].update(run_info)
    for role in infl:
        infl[role]["factor"] = factors[role]
    if paired_info:
        infl["paired_runs"] = paired_info
    methods = sorted({method_b, method_c})
    method = f"{' + '.join(methods)}, {resamples} resamples, percentile interval of log ratio"
    if any(f > 1.0 for fs in factors.values() for f in fs.values()):
        method += ", widened for autocorrelation / run-to-run variation"
    out = {}
    for s in stats:
        out[s.name] = st.ratio_interval(
            b_set,
            c_set,
            s,
            draws_b=draws_b[s.name],
            draws_c=draws_c[s.name],
            confidence=confidence,
            inflate_b=factors["baseline"][s.name],
            inflate_c=factors["candidate"][s.name],
            space=space,
            method=method,
        )
    return out, method, infl, {r: (infl[r]["lag1_autocorrelation"], ar[r]) for r in ("baseline", "candidate")}


def _side_summary(se: "SideEvidence") -> dict[str, float]:
    """A side's summaries: the reported ones, or computed from its steady samples."""
    if se.has_samples:
        x = se.steady
        d = {"mean": float(x.mean()), "median": float(np.median(x)), "min": float(x.min()), "max": float(x.max()), "total": float(x.sum())}
        if x.size > 1:
            d["std"] = float(x.std(ddof=1))
        return d
    return dict(se.summaries)


def _compare_summaries(ev, b, c, claimed) -> Comparison:
    sb, sc = _side_summary(b), _side_summary(c)
    nb = b.n or None
    nc = c.n or None
    common = [k for k in ("mean", "median", "min", "max", "total") if k in sb and k in sc]
    if not common:
        return Comparison(False, f"the sides report no common statistic (baseline: {', '.join(sb) or 'none'}; candidate: {', '.join(sc) or 'none'})", mode="summaries")
    want = claimed.name if claimed is not None else None
    if want in common:
        primary = st.parse_statistic(want)
    elif "median" in common:
        primary = st.MEDIAN
    else:
        primary = st.parse_statistic(common[0])
    cmp = Comparison(True, mode="summaries", primary=primary, space="time", space_note="time space: reported summaries")
    cmp.n = {"baseline": int(nb or 0), "candidate": int(nc or 0)}
    for k in common:
        s = st.parse_statistic(k)
        if k == "mean":
            iv = st.summary_ratio_interval(sb["mean"], sb.get("std"), nb, sc["mean"], sc.get("std"), nc, confidence=ev.confidence, statistic="mean")
        else:
            est = sb[k] / sc[k] if sb[k] > 0 and sc[k] > 0 else math.nan
            iv = Interval(est, math.nan, math.nan, ev.confidence, s.name, "time", "reported summaries (no interval)", int(nb or 0), int(nc or 0), 0)
        cmp.intervals[s.name] = iv
    cmp.time_intervals = cmp.intervals
    for xs in common:
        for ys in common:
            if sb[xs] > 0 and sc[ys] > 0:
                cmp.cross[(xs, ys)] = sb[xs] / sc[ys]
    cmp.method = "reported summaries"
    return cmp
