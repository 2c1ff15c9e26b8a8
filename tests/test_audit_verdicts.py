"""Verdict-level regressions found by red-teaming `profaudit audit` with fair and unfair claims:
each test pins one defect (a false alarm on fair data, or decisive evidence the audit ignored)."""

from __future__ import annotations

import numpy as np
import polars as pl

from audit_fixtures import FAIR_META, claim, side
from profaudit.audit import Severity, Side, Status, audit, gather
from profaudit.audit import stats as st
from profaudit.audit.rules import BY_CODE


def _problems(findings):
    return [f for f in findings if f.severity > Severity.INFO and f.status is not Status.PASS]


def _check(code, c):
    return BY_CODE[code].check(gather(c))


def test_locked_low_clock_is_not_throttling():
    # Both sides locked at 1095 MHz (far below H100's 1980 MHz boost, on purpose): the 75 % rule
    # applies to the locked clock, not to boost.
    meta = {"clock_control": "locked"}
    c = claim(side("baseline", 1.8e6, seed=1, clock=1095.0, meta=meta), side("candidate", 1.5e6, seed=2, clock=1095.0, meta=meta), speedup=1.2)
    assert not _problems(_check("PA203", c))


def test_drop_below_locked_clock_is_throttling():
    clocks = np.r_[np.full(75, 1095.0), np.full(75, 700.0)]
    meta = {"clock_control": "locked"}
    c = claim(side("baseline", 1.8e6, seed=1, clock=clocks, meta=meta), side("candidate", 1.5e6, seed=2, clock=1095.0, meta=meta), speedup=1.2)
    fs = _problems(_check("PA203", c))
    assert [f.side for f in fs] == ["baseline"] and "locked clock" in fs[0].message


def _cached_candidate(first_ns, *, phase=None):
    """One computing call then 99 calls at 20 us, with no meta.warmup_iterations; `phase` labels
    rows of a log that starts with warm-up rows."""
    rng = np.random.default_rng(5)
    t = rng.lognormal(np.log(20_000), 0.02, 100)
    t[0] = first_ns
    if phase is None:
        return side("candidate", 0, seed=2, values=t, drop=("warmup_iterations",), profiles=None)
    t = np.r_[np.full(len(phase) - t.size, 500_000.0), t]
    meta = {k: v for k, v in FAIR_META.items() if k != "warmup_iterations"}
    return Side.from_durations("candidate", t, label="candidate", meta=meta, phase=phase)


def _baseline_500us():
    return side("baseline", 500_000, seed=1, n=100, runs=1, profiles=None, drop=("warmup_iterations",))


def test_cached_results_seen_through_labelled_warmup_rows():
    # The log labels 3 warm-up rows (no meta.warmup_iterations); then one call at the baseline's
    # time and 99 calls 25x faster: FAIRNESS P8's bimodal first-call pattern.
    phase = ["warmup"] * 3 + ["measure"] * 100
    c = claim(_baseline_500us(), _cached_candidate(490_000, phase=phase), speedup=25)
    fs = _problems(_check("PA305", c))
    assert fs and fs[0].severity is Severity.WARN and "labelled warmup" in fs[0].message


def test_cached_results_without_warmup_record_first_call_like_baseline():
    c = claim(_baseline_500us(), _cached_candidate(480_000), speedup=25)
    fs = _problems(_check("PA305", c))
    assert fs and "about the baseline" in fs[0].message


def test_jit_first_call_is_not_taken_for_caching():
    # A first call of 30 ms (compile) against a 0.5 ms baseline is a warm-up cost, not a computation.
    c = claim(_baseline_500us(), _cached_candidate(30e6), speedup=25)
    assert not _problems(_check("PA305", c))


def test_warmup_head_not_reported_as_inflating_a_steady_state_claim():
    rng = np.random.default_rng(39)
    b = rng.lognormal(np.log(1e6), 0.02, 200)
    b[:3] = [30e6, 5e6, 2e6]
    cc = rng.lognormal(np.log(0.8e6), 0.02, 200)
    steady = round(float(b[3:].mean() / cc.mean()), 2)
    c = claim(side("baseline", 0, seed=1, values=b), side("candidate", 0, seed=2, values=cc), speedup=steady, statistic="mean")
    fs = [f for f in _check("PA101", c) if f.status is Status.FAIL]
    assert fs and all(f.severity is Severity.INFO for f in fs), [(f.severity, f.message) for f in fs]
    # The same log with the head-inflated claim still fails.
    c2 = claim(side("baseline", 0, seed=1, values=b), side("candidate", 0, seed=2, values=cc), speedup=round(float(b.mean() / cc.mean()), 2), statistic="mean")
    assert max(f.severity for f in _check("PA101", c2)) is Severity.FAIL


def _contended_baseline():
    rng = np.random.default_rng(24)
    b = np.where(rng.random(300) < 0.4, 1.9e6, 1.0e6) * rng.lognormal(0, 0.02, 300)
    return side("baseline", 0, seed=1, values=b, meta={"other_gpu_processes": 2})


def test_contention_on_baseline_inflating_mean_claim_fails_with_median_correction():
    bs = _contended_baseline()
    cs = side("candidate", 0.8e6, seed=2)
    mean_ratio = float(bs.samples["duration_ns"].mean() / cs.samples["duration_ns"].mean())
    report = audit(claim(bs, cs, speedup=round(mean_ratio, 2), statistic="mean"))
    fs = [f for f in report.findings if f.rule == "PA207" and f.severity is Severity.FAIL]
    assert fs and fs[0].correction is not None and fs[0].correction.statistic == "median"
    assert report.verdict == "FAIL"
    assert report.supported.interval.estimate < 0.85 * mean_ratio


def test_contention_with_median_claim_stays_warn():
    fs = _problems(_check("PA207", claim(_contended_baseline(), side("candidate", 0.8e6, seed=2), speedup=1.25, statistic="median")))
    assert fs and max(f.severity for f in fs) is Severity.WARN


def test_outliers_not_classified_from_five_samples():
    rng = np.random.default_rng(13)
    b = rng.lognormal(0, 0.02, 5) * 1e6
    b[2] *= 1.5
    c = claim(side("baseline", 0, seed=1, values=b), side("candidate", 0, seed=2, values=rng.lognormal(0, 0.02, 5) * 0.95e6), speedup=1.1, statistic="mean")
    fs = _check("PA403", c)
    assert [f.status for f in fs] == [Status.UNKNOWN]


def test_flat_sweep_judged_against_the_other_sides_growth():
    # Sweep over N only (8x), but the baseline's time grows 512x over the same sets while the
    # candidate stays at 30 us: the parameter product understates the work of an N^3 op.
    params = [f'{{"N":{n}}}' for n in (1024, 2048, 4096, 8192)]
    bs = side("baseline", 1.36e6, seed=1, meta={"time_source": None, "synchronized": None}, profiles=None)
    cs = side("candidate", 30_000, seed=2, meta={"time_source": None, "synchronized": None}, profiles=None)
    bs.sweep = pl.DataFrame({"params": params, "median_ns": [1.36e6 * (n / 4096) ** 3 for n in (1024, 2048, 4096, 8192)], "samples": [50] * 4})
    cs.sweep = pl.DataFrame({"params": params, "median_ns": [30_000.0, 30_500.0, 29_900.0, 29_950.0], "samples": [50] * 4})
    fs = _problems(_check("PA103", claim(bs, cs, speedup=45)))
    assert [f.side for f in fs] == ["candidate"] and "other side's time grows" in fs[0].message


def test_no_drift_warning_for_iid_noise_at_chance_level():
    # iid lognormal noise whose Theil-Sen slope clears its 95 % interval by chance (Spearman p 0.014).
    x = np.random.default_rng(0).lognormal(np.log(30_000), 0.05, 50)
    tr = st.trend(x)
    assert tr.drift_significant and abs(tr.drift_rel) > 0.05 and tr.p_value > 0.01
    c = claim(side("baseline", 0, seed=1, values=np.random.default_rng(1).lognormal(np.log(60_000), 0.01, 50)), side("candidate", 0, seed=2, values=x), speedup=2.0)
    assert not _problems(_check("PA205", c))


def test_run_inflation_info_is_kept_per_statistic():
    rng = np.random.default_rng(3)
    runs = np.repeat(np.arange(3), 100)
    b = st.SampleSet(rng.lognormal(0, 0.02, 300) * np.repeat([1.0, 1.01, 0.99], 100), runs)
    c = st.SampleSet(rng.lognormal(0, 0.02, 300) * 0.8, runs)
    _, info_med = st.paired_run_inflation(b, c, st.MEDIAN, 0.002)
    _, info_mean = st.paired_run_inflation(b, c, st.MEAN, 0.002)
    assert "se_between_log_ratio_median" in info_med and "se_between_log_ratio_mean" in info_mean
