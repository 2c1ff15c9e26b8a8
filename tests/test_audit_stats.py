"""Statistics behind the verdicts: bootstrap accuracy and coverage, Mann-Whitney against scipy,
steady-state, trend, pattern and outlier detection on synthetic data with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from profaudit.audit import stats as st


def _quantiles(draws: np.ndarray) -> np.ndarray:
    return np.quantile(draws, (0.025, 0.5, 0.975))


@pytest.mark.parametrize("n", [3_000, 40_000])
def test_large_n_bootstrap_matches_direct_resampling(n):
    """The O(n) shortcuts (exact order statistics, grouped Poisson) give the same bootstrap
    distribution as resampling: 2.5/50/97.5 % points within 8 % of the direct interval width."""
    rng = np.random.default_rng(n)
    x = rng.lognormal(0.0, 0.15, n)
    x[rng.choice(n, n // 100, replace=False)] *= 6.0  # 1 % outliers stress the mean
    sample = st.SampleSet(x)
    stats_ = [st.MEAN, st.MEDIAN, st.TRIMMED, st.MIN, st.parse_statistic("p90")]
    fast, method = st.bootstrap_draws(sample, stats_, 20_000, np.random.default_rng(1))
    assert "order-statistic" in method
    direct = st._direct_draws(x, stats_, 4_000, np.random.default_rng(2))
    for s in stats_:
        a, b = _quantiles(fast[s.name]), _quantiles(direct[s.name])
        width = b[2] - b[0]
        if s is st.MIN:  # min's bootstrap is discrete: compare the atoms it takes
            assert a[1] == b[1] and abs(a[2] - b[2]) <= width * 0.25
            continue
        assert np.all(np.abs(a - b) <= 0.08 * width + 1e-12), (s.name, a, b)


def test_direct_bootstrap_matches_numpy_statistics():
    x = np.random.default_rng(3).lognormal(0, 0.3, 101)
    d = st._direct_draws(x, [st.MEAN, st.MEDIAN, st.TRIMMED, st.parse_statistic("p99")], 50, np.random.default_rng(4))
    rng = np.random.default_rng(4)
    idx = rng.integers(0, x.size, size=(50, x.size))
    xs = x[idx]
    np.testing.assert_allclose(d["mean"], xs.mean(axis=1))
    np.testing.assert_allclose(d["median"], np.median(xs, axis=1))
    np.testing.assert_allclose(d["p99"], np.quantile(xs, 0.99, axis=1))
    np.testing.assert_allclose(d["trimmed_mean"], [sps.trim_mean(r, 0.1) for r in xs])


@pytest.mark.parametrize("n,reps,statistic", [(60, 200, "median"), (60, 200, "mean"), (2_500, 120, "median"), (1_500, 80, "mean"), (1_500, 80, "trimmed_mean")])
def test_ratio_interval_coverage_on_known_ratio(n, reps, statistic):
    """95 % intervals of baseline/candidate contain the true ratio about 95 % of the time."""
    stat = st.parse_statistic(statistic)
    true = 1.7
    rng = np.random.default_rng(n + reps)
    hits = 0
    for i in range(reps):
        b = rng.lognormal(math.log(1.0), 0.1, n)
        c = rng.lognormal(math.log(1.0 / true), 0.1, n)
        sb, sc = st.SampleSet(b), st.SampleSet(c)
        db, _ = st.bootstrap_draws(sb, [stat], 1_000, np.random.default_rng(2 * i))
        dc, _ = st.bootstrap_draws(sc, [stat], 1_000, np.random.default_rng(2 * i + 1))
        iv = st.ratio_interval(sb, sc, stat, draws_b=db[stat.name], draws_c=dc[stat.name])
        # The population statistics' ratio: medians and means of lognormals with equal sigma scale alike.
        hits += iv.low <= true <= iv.high
    coverage = hits / reps
    assert 0.89 <= coverage <= 0.99, coverage


def test_interval_is_deterministic():
    x = np.random.default_rng(5).lognormal(0, 0.1, 500)
    y = np.random.default_rng(6).lognormal(-0.5, 0.1, 500)
    out = []
    for _ in range(2):
        sx, sy = st.SampleSet(x), st.SampleSet(y)
        dx, _ = st.bootstrap_draws(sx, [st.MEDIAN], 1000, np.random.default_rng(st.DEFAULT_SEED))
        dy, _ = st.bootstrap_draws(sy, [st.MEDIAN], 1000, np.random.default_rng(st.DEFAULT_SEED + 1))
        out.append(st.ratio_interval(sx, sy, st.MEDIAN, draws_b=dx["median"], draws_c=dy["median"]))
    assert out[0] == out[1]


def test_inflation_widens_the_interval():
    x = np.random.default_rng(7).lognormal(0, 0.1, 300)
    y = np.random.default_rng(8).lognormal(-0.5, 0.1, 300)
    sx, sy = st.SampleSet(x), st.SampleSet(y)
    dx, _ = st.bootstrap_draws(sx, [st.MEDIAN], 2000, np.random.default_rng(1))
    dy, _ = st.bootstrap_draws(sy, [st.MEDIAN], 2000, np.random.default_rng(2))
    a = st.ratio_interval(sx, sy, st.MEDIAN, draws_b=dx["median"], draws_c=dy["median"])
    b = st.ratio_interval(sx, sy, st.MEDIAN, draws_b=dx["median"], draws_c=dy["median"], inflate_b=2.0, inflate_c=2.0)
    assert b.low < a.low < a.estimate < a.high < b.high
    assert math.isclose(math.log(b.high / b.estimate), 2 * math.log(a.high / a.estimate), rel_tol=1e-9)


def test_autocorrelation_factor():
    rng = np.random.default_rng(9)
    e = rng.standard_normal(20_000)
    ar = np.empty_like(e)
    ar[0] = e[0]
    for i in range(1, e.size):
        ar[i] = 0.6 * ar[i - 1] + e[i]
    r1 = st.lag1_autocorrelation(ar + 10)
    assert abs(r1 - 0.6) < 0.03
    assert math.isclose(st.autocorrelation_inflation(r1), math.sqrt((1 + r1) / (1 - r1)))
    assert abs(st.lag1_autocorrelation(rng.standard_normal(20_000))) < 0.03
    assert st.autocorrelation_inflation(-0.2) == 1.0


# ---------------------------------------------------------------------------------------------
# Mann-Whitney U against scipy
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n1,n2,ties", [(7, 6, False), (200, 180, True), (900, 700, False), (1_200, 1_500, True)])
def test_mann_whitney_matches_scipy(n1, n2, ties):
    rng = np.random.default_rng(n1 * n2)
    a = rng.lognormal(0.0, 0.3, n1)
    b = rng.lognormal(0.05, 0.3, n2)
    if ties:
        a, b = np.round(a, 1), np.round(b, 1)
    mine = st.mann_whitney(a, b)
    ref = sps.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic" if n1 * n2 > 250_000 else "auto")
    assert mine.u == pytest.approx(float(ref.statistic), rel=1e-12)
    assert mine.p_value == pytest.approx(float(ref.pvalue), rel=1e-9, abs=1e-300)
    assert mine.method == ("asymptotic" if n1 * n2 > 250_000 else "scipy")


def test_mann_whitney_identical_samples():
    x = np.full(1000, 5.0)
    res = st.mann_whitney(x, x.copy())
    assert res.p_value == 1.0 and res.prob_greater == 0.5


# ---------------------------------------------------------------------------------------------
# steady state, trend, patterns
# ---------------------------------------------------------------------------------------------


def test_steady_state_finds_a_warmup_head():
    rng = np.random.default_rng(10)
    x = rng.lognormal(0, 0.02, 400)
    x[:12] *= np.linspace(20, 2, 12)
    s = st.steady_state(x)
    assert s.start == 12 and s.method == "threshold"
    assert s.head_median > 1.5 * s.median


def test_steady_state_tolerates_interleaved_warm_samples_in_the_head():
    rng = np.random.default_rng(11)
    x = rng.lognormal(0, 0.02, 300)
    x[[0, 1, 3, 4, 6, 7]] *= 5  # autotuning alternates slow configurations with fast ones
    assert st.steady_state(x).start == 8


def test_steady_state_catches_a_slow_ramp_by_change_point():
    rng = np.random.default_rng(12)
    x = rng.lognormal(0, 0.01, 2_000)
    x[:300] *= 1.15  # clocks ramping up: slower, but never 1.5x
    s = st.steady_state(x)
    assert "change-point" in s.method and abs(s.start - 300) <= 3


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("n,sigma", [(20, 0.05), (300, 0.02), (20_000, 0.1)])
def test_no_warmup_on_iid_noise(seed, n, sigma):
    x = np.random.default_rng(seed).lognormal(0, sigma, n)
    assert st.steady_state(x).start <= 1


def test_trend_detects_drift_and_not_noise():
    rng = np.random.default_rng(13)
    x = np.linspace(1.0, 1.1, 5_000) * rng.lognormal(0, 0.02, 5_000)
    t = st.trend(x)
    assert t.rho > 0.3 and t.p_value < 0.01 and t.drift_significant
    assert abs(t.drift_rel - 0.1) < 0.01
    flat = st.trend(rng.lognormal(0, 0.02, 5_000))
    assert abs(flat.rho) < 0.05 and abs(flat.drift_rel) < 0.01


def test_trend_thins_a_million_samples():
    x = np.linspace(1.0, 1.05, 1_000_000) + np.random.default_rng(14).normal(0, 0.01, 1_000_000)
    t = st.trend(x)
    assert t.thinned_to == 20_000 and abs(t.drift_rel - 0.05) < 0.005


def test_periodic_near_zero_calls():
    rng = np.random.default_rng(15)
    x = np.tile([3.0, 0.04, 0.04, 0.04, 0.04], 50) * rng.lognormal(0, 0.03, 250)
    p = st.periodic_near_zero(x)
    assert p is not None and p.period == 5 and 0.18 < p.heavy_fraction < 0.22
    assert st.periodic_near_zero(rng.lognormal(0, 0.3, 250)) is None


def test_bimodality():
    rng = np.random.default_rng(16)
    mix = np.where(rng.random(2_000) < 0.3, 1.9, 1.0) * rng.lognormal(0, 0.02, 2_000)
    b = st.bimodality(mix)
    assert b is not None and abs(b.ratio - 1.9) < 0.05 and abs(b.low_fraction - 0.7) < 0.05
    for sigma in (0.02, 0.1, 0.3):
        assert st.bimodality(rng.lognormal(0, sigma, 2_000)) is None
    assert st.bimodality(rng.gamma(2.0, 1.0, 2_000)) is None


def test_tukey_outliers():
    x = np.concatenate([np.linspace(1, 2, 100), [10.0, 20.0, -20.0]])
    o = st.tukey_outliers(x)
    q1, q3 = np.quantile(x, (0.25, 0.75))
    assert o.high_extreme == int(np.sum(x > q3 + 3 * (q3 - q1))) == 2
    assert o.low_extreme == 1


# ---------------------------------------------------------------------------------------------
# names and small helpers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,name,q",
    [("mean", "mean", None), ("Median", "median", 0.5), ("p50", "median", 0.5), ("p99", "p99", 0.99), ("p99.9", "p99.9", 0.999), ("best", "min", 0.0), ("trimmed", "trimmed_mean", None), ("best-of", "best_of", 0.0)],
)
def test_parse_statistic(text, name, q):
    s = st.parse_statistic(text)
    assert s.name == name and (s.q == q if q is None else s.q == pytest.approx(q))


def test_parse_statistic_rejects_unknown():
    with pytest.raises(ValueError, match="unknown statistic"):
        st.parse_statistic("harmonic")


def test_compute_matches_numpy_and_scipy():
    x = np.random.default_rng(17).lognormal(0, 0.5, 1001)
    s = np.sort(x)
    assert st.compute(x, st.MEAN) == pytest.approx(x.mean())
    assert st.compute(x, st.parse_statistic("p95"), sorted_x=s) == pytest.approx(np.quantile(x, 0.95))
    assert st.compute(x, st.TRIMMED) == pytest.approx(sps.trim_mean(x, 0.1))
    assert st.trimmed_mean(s, is_sorted=True) == pytest.approx(sps.trim_mean(x, 0.1))


@pytest.mark.parametrize("text,value,tol", [("2.1", 2.1, 0.05), ("2.10", 2.1, 0.005), ("2", 2.0, 0.05), ("1.37x", 1.37, 0.005), ("150", 150.0, 0.5)])
def test_claim_tolerance(text, value, tol):
    assert st.claim_tolerance(text, value) == pytest.approx(tol)


def test_summary_ratio_interval_delta_method():
    iv = st.summary_ratio_interval(2.0, 0.2, 100, 1.0, 0.1, 100, confidence=0.95, statistic="mean")
    se = math.sqrt(0.1**2 / 100 * 2)
    assert iv.estimate == 2.0
    assert iv.low == pytest.approx(2.0 * math.exp(-1.959964 * se), rel=1e-5)
    assert not st.summary_ratio_interval(2.0, None, 100, 1.0, 0.1, 100, confidence=0.95, statistic="mean").finite


def test_paired_runs_cancel_shared_contention():
    """Runs slowed by contention hit both sides of an interleaved run alike: the per-run ratio is
    stable, so the paired factor stays ~1 while each side alone varies hugely between runs."""
    rng = np.random.default_rng(18)
    levels = np.array([1.0, 3.0, 1.5, 10.0])
    runs = np.repeat(np.arange(4), 200)
    b = np.repeat(levels, 200) * rng.lognormal(0, 0.03, 800)
    c = np.repeat(levels, 200) * 0.5 * rng.lognormal(0, 0.03, 800)
    sb, sc = st.SampleSet(b, runs), st.SampleSet(c, runs)
    db, _ = st.bootstrap_draws(sb, [st.MEDIAN], 2000, np.random.default_rng(1))
    dc, _ = st.bootstrap_draws(sc, [st.MEDIAN], 2000, np.random.default_rng(2))
    se_b, se_c = st.log_se(db["median"], sb.stat(st.MEDIAN)), st.log_se(dc["median"], sc.stat(st.MEDIAN))
    f_pair, info = st.paired_run_inflation(sb, sc, st.MEDIAN, math.hypot(se_b, se_c))
    assert f_pair < 1.5 and np.allclose(info["run_ratio_median"], 2.0, rtol=0.02)
    f_side, _ = st.run_inflation(sb, st.MEDIAN, se_b)
    assert f_side > 2 and f_side > 2 * f_pair
    # different run ids on the two sides: not paired
    assert st.paired_run_inflation(sb, st.SampleSet(c, runs + 10), st.MEDIAN, 0.01) is None


def test_run_to_run_spread_widens_the_speedup_interval():
    from audit_fixtures import claim, side

    from profaudit.audit import gather

    tight = gather(claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.5e6, seed=2))).comparison.primary_interval
    loose = gather(claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.5e6, seed=2, run_offsets=(1.0, 1.15, 0.9)))).comparison.primary_interval
    assert (loose.high / loose.low) > 3 * (tight.high / tight.low) - 2
    assert loose.low < 1.9 < 2.1 < loose.high


def test_best_of_bootstrap_is_the_resample_minimum():
    x = np.random.default_rng(19).lognormal(0, 0.2, 300)
    best = st.parse_statistic("best_of")
    d = st._direct_draws(x, [best], 200, np.random.default_rng(3))
    rng = np.random.default_rng(3)
    ref = x[rng.integers(0, x.size, size=(200, x.size))].min(axis=1)
    np.testing.assert_allclose(d["best_of"], ref)
