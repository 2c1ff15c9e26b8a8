"""Statistics for speedup claims: steady state, robust summaries, bootstrap intervals, tests.

Everything here is vectorised numpy and deterministic (fixed seeds). The bootstrap has two paths:

* **direct** (n <= `DIRECT_MAX`): ordinary resampling with replacement, every statistic computed
  on every resample. Cost: resamples x n values, processed in chunks of `_CHUNK_VALUES`.
* **large n**: two exact-or-near-exact shortcuts that cost O(n) plus O(resamples x groups),
  independent of n after one sort:
  - quantile statistics (median, min, max, pNN) use the *exact* bootstrap distribution of an
    order statistic: the j-th smallest of n draws is <= x_(k) exactly when at least j draws fall
    at or below x_(k), and that count is Binomial(n, k/n). Inverting that CDF over a window of k
    gives draws of the bootstrap statistic that are distributed exactly as resampling would give,
    without resampling (the only approximation: an interpolated quantile of even-length data is
    replaced by its nearest order statistic, a shift far below the interval width at this n).
  - mean, trimmed mean and total use a Poisson bootstrap over the sorted data cut into groups
    (`_GROUPS` equal-count groups, group edges aligned with the trimming points, the most extreme
    values as singleton groups): each group receives Poisson(size) draws; the sum of those draws
    is its count x group mean plus a normal term with the group's within-group variance, so the
    first two moments are exact and the skew from outliers is kept by the singletons (groups of
    200 or more values draw their Poisson count from its normal approximation).
  The accuracy of both shortcuts against the direct bootstrap is checked in
  tests/test_audit_stats.py; their cost is measured by benchmarks/bench_audit.py.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

DEFAULT_RESAMPLES = 10_000
DEFAULT_CONFIDENCE = 0.95
DEFAULT_SEED = 20_250_101
# criterion.rs and pyperf treat differences under 1 % as noise.
DEFAULT_NOISE_THRESHOLD = 0.01
DIRECT_MAX = 1_000
_CHUNK_VALUES = 2_000_000
_GROUPS = 64
_SINGLETONS_PER_TAIL = 24
_NORMAL_POISSON_MIN = 200
TRIM_FRACTION = 0.10
MAD_TO_SIGMA = 1.4826
# Trend tests and Theil-Sen run on evenly thinned series: a drift over a run survives thinning,
# and the rank correlation of 20 000 points already resolves rho to about +-0.01.
_TREND_MAX_POINTS = 20_000
_THEILSEN_MAX_POINTS = 800


# ---------------------------------------------------------------------------------------------
# Statistics by name
# ---------------------------------------------------------------------------------------------

_QUANTILE_RE = re.compile(r"^p(\d{1,2}(?:\.\d+)?)$")
_ALIASES = {
    "average": "mean",
    "avg": "mean",
    "arithmetic_mean": "mean",
    "p50": "median",
    "med": "median",
    "minimum": "min",
    "best": "min",
    "fastest": "min",
    "maximum": "max",
    "worst": "max",
    "trimmed": "trimmed_mean",
    "trimmed_mean": "trimmed_mean",
    "tmean": "trimmed_mean",
    "trim_mean": "trimmed_mean",
    "sum": "total",
    "total": "total",
}


@dataclass(frozen=True)
class Statistic:
    """A summary statistic of per-iteration times, by name: mean, median, min, max, pNN, ..."""

    name: str  # canonical: mean, median, min, max, trimmed_mean, total, best_of, p99, p99.9
    kind: str  # mean, quantile, trimmed_mean, total, best_of
    q: float | None = None  # quantile level for kind == quantile

    @property
    def is_central(self) -> bool:
        """Statistics that estimate typical time (sound bases for a speedup)."""
        return self.kind in ("mean", "trimmed_mean", "total") or (self.kind == "quantile" and 0.2 <= (self.q or 0) <= 0.8)

    def __str__(self) -> str:
        return self.name


def parse_statistic(name: str | None) -> Statistic | None:
    """`"mean"`, `"median"`, `"p99"`, `"min"`, `"trimmed"` ... -> Statistic; None for None.

    Raises ValueError with the accepted names when the name is unknown.
    """
    if name is None:
        return None
    key = str(name).strip().lower().replace("-", "_").replace(" ", "_")
    key = _ALIASES.get(key, key)
    if key in ("best_of", "best_of_n"):
        return Statistic("best_of", "best_of", 0.0)
    if key == "mean":
        return Statistic("mean", "mean")
    if key == "trimmed_mean":
        return Statistic("trimmed_mean", "trimmed_mean")
    if key == "total":
        return Statistic("total", "total")
    if key == "median":
        return Statistic("median", "quantile", 0.5)
    if key == "min":
        return Statistic("min", "quantile", 0.0)
    if key == "max":
        return Statistic("max", "quantile", 1.0)
    m = _QUANTILE_RE.match(key)
    if m:
        q = float(m.group(1)) / 100.0
        if q == 0.5:
            return Statistic("median", "quantile", 0.5)
        return Statistic(f"p{m.group(1)}", "quantile", q)
    raise ValueError(
        f"unknown statistic {name!r}; use mean, median, min, max, trimmed_mean, total, best_of or pNN (p90, p99, p99.9)"
    )


MEAN = Statistic("mean", "mean")
MEDIAN = Statistic("median", "quantile", 0.5)
MIN = Statistic("min", "quantile", 0.0)
MAX = Statistic("max", "quantile", 1.0)
TRIMMED = Statistic("trimmed_mean", "trimmed_mean")
ROBUST_SET: tuple[Statistic, ...] = (MEAN, MEDIAN, TRIMMED, MIN)


def trimmed_mean(x: np.ndarray, fraction: float = TRIM_FRACTION, *, is_sorted: bool = False) -> float:
    """Mean after cutting int(fraction * n) values from each end (as scipy.stats.trim_mean)."""
    n = x.size
    if n == 0:
        return math.nan
    cut = int(fraction * n)
    if cut == 0:
        return float(x.mean())
    if is_sorted:
        return float(x[cut : n - cut].mean())
    # After partitioning at both cut points the middle slice holds exactly the kept values.
    part = np.partition(x, (cut, n - cut - 1))
    return float(part[cut : n - cut].mean())


def compute(x: np.ndarray, stat: Statistic, *, sorted_x: np.ndarray | None = None) -> float:
    """The statistic of one sample (numpy's linear-interpolation quantiles)."""
    if x.size == 0:
        return math.nan
    if stat.kind == "mean":
        return float(x.mean())
    if stat.kind == "total":
        return float(x.sum())
    if stat.kind == "trimmed_mean":
        return trimmed_mean(sorted_x if sorted_x is not None else x, is_sorted=sorted_x is not None)
    if stat.kind == "best_of":
        return float(x.min())
    q = float(stat.q)  # type: ignore[arg-type]
    if q == 0.0:
        return float(x.min())
    if q == 1.0:
        return float(x.max())
    if sorted_x is not None:
        return _sorted_quantile(sorted_x, q)
    return float(np.quantile(x, q))


def _sorted_quantile(s: np.ndarray, q: float) -> float:
    h = (s.size - 1) * q
    lo = int(math.floor(h))
    hi = min(lo + 1, s.size - 1)
    return float(s[lo] + (h - lo) * (s[hi] - s[lo]))


# ---------------------------------------------------------------------------------------------
# Dispersion, outliers, noise
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dispersion:
    n: int
    mean: float
    median: float
    std: float
    q1: float
    q3: float
    mad: float  # raw median absolute deviation (multiply by MAD_TO_SIGMA for a sigma)
    cv: float  # std / mean
    rel_iqr: float  # IQR / median
    rel_mad: float  # 1.4826 MAD / median

    def as_dict(self) -> dict:
        return {k: _clean(v) for k, v in self.__dict__.items()}


def _quartiles(x: np.ndarray, sorted_x: np.ndarray | None) -> tuple[float, float, float]:
    if sorted_x is not None:
        return _sorted_quantile(sorted_x, 0.25), _sorted_quantile(sorted_x, 0.5), _sorted_quantile(sorted_x, 0.75)
    q1, med, q3 = np.quantile(x, (0.25, 0.5, 0.75))
    return float(q1), float(med), float(q3)


def dispersion(x: np.ndarray, *, sorted_x: np.ndarray | None = None) -> Dispersion:
    n = int(x.size)
    if n == 0:
        nan = math.nan
        return Dispersion(0, nan, nan, nan, nan, nan, nan, nan, nan, nan)
    q1, med, q3 = _quartiles(x, sorted_x)
    mean = float(x.mean())
    std = float(x.std(ddof=1)) if n > 1 else 0.0
    mad = float(np.median(np.abs(x - med)))
    return Dispersion(
        n,
        mean,
        med,
        std,
        q1,
        q3,
        mad,
        std / mean if mean else math.nan,
        (q3 - q1) / med if med else math.nan,
        MAD_TO_SIGMA * mad / med if med else math.nan,
    )


@dataclass(frozen=True)
class Outliers:
    """Tukey fences: inner at 1.5 x IQR, outer at 3 x IQR beyond the quartiles."""

    q1: float
    q3: float
    high_mild: int  # beyond the inner fence (includes the extreme ones)
    high_extreme: int  # beyond the outer fence
    low_mild: int
    low_extreme: int
    n: int

    @property
    def extreme(self) -> int:
        return self.high_extreme + self.low_extreme

    @property
    def extreme_fraction(self) -> float:
        return self.extreme / self.n if self.n else 0.0

    def as_dict(self) -> dict:
        return {k: _clean(v) for k, v in self.__dict__.items()} | {"extreme_fraction": _clean(self.extreme_fraction)}


def tukey_outliers(x: np.ndarray, *, sorted_x: np.ndarray | None = None) -> Outliers:
    if x.size == 0:
        return Outliers(math.nan, math.nan, 0, 0, 0, 0, 0)
    q1, _, q3 = _quartiles(x, sorted_x)
    iqr = q3 - q1
    return Outliers(
        q1,
        q3,
        int(np.count_nonzero(x > q3 + 1.5 * iqr)),
        int(np.count_nonzero(x > q3 + 3.0 * iqr)),
        int(np.count_nonzero(x < q1 - 1.5 * iqr)),
        int(np.count_nonzero(x < q1 - 3.0 * iqr)),
        int(x.size),
    )


def lag1_autocorrelation(x: np.ndarray, *, sorted_x: np.ndarray | None = None) -> float:
    """Lag-1 autocorrelation of a series, winsorised at the Tukey inner fences (outliers would
    otherwise dominate a Pearson coefficient)."""
    if x.size < 8:
        return math.nan
    q1, _, q3 = _quartiles(x, sorted_x)
    iqr = q3 - q1
    w = np.clip(x, q1 - 1.5 * iqr, q3 + 1.5 * iqr)
    w = w - w.mean()
    den = float(np.dot(w, w))
    if den <= 0:
        return 0.0
    return float(np.dot(w[:-1], w[1:]) / den)


def autocorrelation_inflation(r1: float, cap: float = 10.0) -> float:
    """Factor by which an iid interval understates uncertainty for an AR(1) series with lag-1
    autocorrelation r1: sqrt(n / n_eff) with n_eff = n (1 - r1) / (1 + r1). Never below 1."""
    if not math.isfinite(r1) or r1 <= 0:
        return 1.0
    r1 = min(r1, 0.98)
    return float(min(cap, math.sqrt((1 + r1) / (1 - r1))))


# ---------------------------------------------------------------------------------------------
# Steady state (FAIRNESS P1)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SteadyState:
    """Where the steady state of one run starts, and how it was decided."""

    start: int  # index of the first steady-state sample
    n: int
    median: float  # steady median m (last 50 % of samples)
    mad: float
    threshold: float  # max(1.5 m, m + 5 * 1.4826 * MAD)
    method: str  # "none", "threshold", "change-point" or "threshold+change-point"
    head_median: float  # median of the head (nan when there is none)

    @property
    def head(self) -> int:
        return self.start


def steady_state(x: np.ndarray) -> SteadyState:
    """Detect a leading warm-up head in one run's per-iteration times.

    FAIRNESS P1: the steady median m and MAD come from the last 50 % of samples; the head is the
    leading run of samples above max(1.5 m, m + 5 * 1.4826 * MAD). The run may be interrupted by
    warm samples (autotuning alternates) as long as most of it is slow. A two-segment change
    point on log t also catches slow ramps (clock ramp-up, allocator growth) that never cross
    1.5 m: it must shift the level by at least 3 % with a t statistic of at least 8 (an iid
    series of a million points reaches about 4.5 by chance).
    """
    n = int(x.size)
    if n < 6:
        m = float(np.median(x)) if n else math.nan
        return SteadyState(0, n, m, math.nan, math.nan, "none", math.nan)
    tail = x[n // 2 :]
    m = float(np.median(tail))
    mad = float(np.median(np.abs(tail - m)))
    thr = max(1.5 * m, m + 5 * MAD_TO_SIGMA * mad)
    half = x[: n // 2]
    exceed = half > thr
    start = 0
    method = "none"
    if exceed[0] or exceed.any():
        cum = np.cumsum(exceed)
        frac = cum / np.arange(1, half.size + 1)
        ok = np.flatnonzero(exceed & (frac >= 0.5))
        if ok.size:
            start = int(ok[-1]) + 1
            method = "threshold"
    cp = _change_point_head(x, start)
    if cp > start:
        start = cp
        method = "change-point" if method == "none" else "threshold+change-point"
    head_median = float(np.median(x[:start])) if start else math.nan
    return SteadyState(start, n, m, mad, thr, method, head_median)


def _change_point_head(x: np.ndarray, already: int) -> int:
    """Best split of log t into two constant segments with the split in the first half; returns
    the split when the head is slower by >= 3 % and t >= 8, else 0."""
    n = x.size
    if n < 20:
        return 0
    y = np.log(np.maximum(x, np.finfo(float).tiny))
    # Ignore what the threshold rule already removed: the change point looks for a ramp after it.
    y = y[already:]
    n2 = y.size
    if n2 < 20:
        return 0
    kmax = n2 // 2
    c1 = np.cumsum(y)
    c2 = np.cumsum(y * y)
    k = np.arange(2, kmax + 1)
    s_head = c1[k - 1]
    s_tail = c1[-1] - s_head
    mean_head = s_head / k
    mean_tail = s_tail / (n2 - k)
    sse = (c2[k - 1] - s_head * mean_head) + ((c2[-1] - c2[k - 1]) - s_tail * mean_tail)
    best = int(np.argmin(sse))
    kk = int(k[best])
    diff = mean_head[best] - mean_tail[best]
    if diff < math.log(1.03):
        return 0
    resid_var = max(sse[best] / max(n2 - 2, 1), 1e-300)
    t = diff / math.sqrt(resid_var * (1.0 / kk + 1.0 / (n2 - kk)))
    if t < 8.0:
        return 0
    return already + kk


# ---------------------------------------------------------------------------------------------
# Trend (FAIRNESS P4)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Trend:
    rho: float  # Spearman rank correlation of time with iteration index
    p_value: float
    slope_per_iteration: float  # Theil-Sen, in the series' unit per iteration
    drift_rel: float  # slope x (n - 1) / median: relative change over the whole run
    n: int
    thinned_to: int
    drift_low: float = math.nan  # 95 % confidence bounds of drift_rel (Theil-Sen slope interval)
    drift_high: float = math.nan

    @property
    def drift_significant(self) -> bool:
        """The slope's 95 % interval excludes zero."""
        return (self.drift_low > 0) or (self.drift_high < 0)

    def as_dict(self) -> dict:
        return {k: _clean(v) for k, v in self.__dict__.items()}


def trend(x: np.ndarray, *, median: float | None = None) -> Trend:
    """Spearman rho(t, index) and the Theil-Sen drift over the run (both on thinned series)."""
    from scipy import stats as sps

    n = int(x.size)
    if n < 10:
        return Trend(math.nan, math.nan, math.nan, math.nan, n, n)
    idx = np.arange(n)
    if n > _TREND_MAX_POINTS:
        take = np.linspace(0, n - 1, _TREND_MAX_POINTS).astype(np.int64)
        xi, yi = idx[take], x[take]
    else:
        xi, yi = idx, x
    if np.all(yi == yi[0]):
        return Trend(0.0, 1.0, 0.0, 0.0, n, int(yi.size), 0.0, 0.0)
    res = sps.spearmanr(xi, yi)
    rho, p = float(res.statistic), float(res.pvalue)
    if yi.size > _THEILSEN_MAX_POINTS:
        take = np.linspace(0, yi.size - 1, _THEILSEN_MAX_POINTS).astype(np.int64)
        tx, ty = xi[take], yi[take]
    else:
        tx, ty = xi, yi
    ts = sps.theilslopes(ty, tx)
    slope = float(ts.slope)
    med = float(np.median(x)) if median is None else float(median)
    scale = (n - 1) / med if med else math.nan
    return Trend(rho, p, slope, slope * scale, n, int(yi.size), float(ts.low_slope) * scale, float(ts.high_slope) * scale)


# ---------------------------------------------------------------------------------------------
# Patterns: period-k near-zero calls (P7), bimodality (P8, P13)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Periodic:
    period: int  # one heavy call every `period` calls
    heavy_fraction: float
    light_to_heavy: float  # median light time / median heavy time
    regularity: float  # share of gaps between heavy calls equal to `period`

    def as_dict(self) -> dict:
        return {k: _clean(v) for k, v in self.__dict__.items()}


def periodic_near_zero(x: np.ndarray) -> Periodic | None:
    """One heavy call followed by k-1 near-zero calls (batch-and-skip, lazy work).

    Light calls are those under 0.2 x the heavy level (95th percentile); the pattern needs at
    least 3 heavy calls, light calls forming 30-97 % of the series, and at least 80 % of the
    gaps between consecutive heavy calls equal to one period k >= 2.
    """
    n = int(x.size)
    if n < 12:
        return None
    heavy_level = float(np.quantile(x, 0.95))
    if heavy_level <= 0:
        return None
    light = x < 0.2 * heavy_level
    frac_light = float(light.mean())
    if not (0.3 <= frac_light <= 0.97):
        return None
    heavy_idx = np.flatnonzero(~light)
    if heavy_idx.size < 3:
        return None
    gaps = np.diff(heavy_idx)
    values, counts = np.unique(gaps, return_counts=True)
    k = int(values[np.argmax(counts)])
    regularity = float(counts.max() / gaps.size)
    if k < 2 or regularity < 0.8:
        return None
    return Periodic(k, 1 - frac_light, float(np.median(x[light]) / np.median(x[~light])), regularity)


@dataclass(frozen=True)
class Bimodal:
    low_median: float
    high_median: float
    low_fraction: float
    valley_ratio: float  # density at the split / density at the smaller mode

    @property
    def ratio(self) -> float:
        return self.high_median / self.low_median

    def as_dict(self) -> dict:
        return {k: _clean(v) for k, v in self.__dict__.items()} | {"ratio": _clean(self.ratio)}


def bimodality(x: np.ndarray, *, min_ratio: float = 1.15, min_share: float = 0.05, sorted_x: np.ndarray | None = None) -> Bimodal | None:
    """Two separated clusters of times: an Otsu split on log t, both clusters holding at least
    `min_share` of the samples, medians at least `min_ratio` apart, and an empty valley (the
    density around the split under 20 % of the density at the smaller mode)."""
    n = int(x.size)
    if n < 30:
        return None
    y = np.log(np.maximum(x, np.finfo(float).tiny))
    lo, hi = float(y.min()), float(y.max())
    if hi - lo < math.log(min_ratio):
        return None
    bins = int(min(256, max(16, math.sqrt(n))))
    hist, edges = np.histogram(y, bins=bins, range=(lo, hi))
    centres = 0.5 * (edges[:-1] + edges[1:])
    w = hist.astype(float)
    cw = np.cumsum(w)
    cm = np.cumsum(w * centres)
    total_w, total_m = cw[-1], cm[-1]
    w0 = cw[:-1]
    w1 = total_w - w0
    valid = (w0 > 0) & (w1 > 0)
    if not valid.any():
        return None
    mu0 = np.where(valid, cm[:-1] / np.where(w0 > 0, w0, 1), 0)
    mu1 = np.where(valid, (total_m - cm[:-1]) / np.where(w1 > 0, w1, 1), 0)
    between = np.where(valid, w0 * w1 * (mu0 - mu1) ** 2, -1)
    cut_bin = int(np.argmax(between))
    split = edges[cut_bin + 1]
    low = y < split
    share = float(low.mean())
    if not (min_share <= share <= 1 - min_share):
        return None
    if sorted_x is not None:
        # log is monotone: the clusters are the two runs of the sorted data either side of the split
        k = int(np.count_nonzero(low))
        ys = np.log(np.maximum(sorted_x, np.finfo(float).tiny))
        m_lo, m_hi = _sorted_quantile(ys[:k], 0.5), _sorted_quantile(ys[k:], 0.5)
    else:
        m_lo = float(np.median(y[low]))
        m_hi = float(np.median(y[~low]))
    if m_hi - m_lo < math.log(min_ratio):
        return None
    band = 0.1 * (m_hi - m_lo)

    def density(c: float) -> float:
        return float(np.count_nonzero(np.abs(y - c) <= band / 2)) / band

    valley = density(float(split))
    peak = min(density(m_lo), density(m_hi))
    if peak <= 0:
        return None
    ratio = valley / peak
    if ratio >= 0.2:
        return None
    return Bimodal(math.exp(m_lo), math.exp(m_hi), share, ratio)


# ---------------------------------------------------------------------------------------------
# Mann-Whitney U
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MannWhitney:
    u: float  # U of the first sample (baseline)
    p_value: float  # two-sided
    prob_greater: float  # U / (n1 n2): P(baseline time > candidate time) + half the ties
    n1: int
    n2: int
    method: str

    def as_dict(self) -> dict:
        return {k: _clean(v) for k, v in self.__dict__.items()}


def mann_whitney(a: np.ndarray, b: np.ndarray, *, a_sorted: np.ndarray | None = None, b_sorted: np.ndarray | None = None) -> MannWhitney:
    """Two-sided Mann-Whitney U test of a against b, identical to
    `scipy.stats.mannwhitneyu(a, b)` (asymptotic with continuity and tie correction; scipy's
    exact method for small samples without ties). Large samples use sorted arrays and
    searchsorted instead of ranking the pooled data, which keeps 2 x 1M samples under 0.1 s."""
    from scipy import stats as sps

    n1, n2 = int(a.size), int(b.size)
    if n1 == 0 or n2 == 0:
        return MannWhitney(math.nan, math.nan, math.nan, n1, n2, "none")
    if n1 * n2 <= 250_000:
        res = sps.mannwhitneyu(a, b, alternative="two-sided")
        return MannWhitney(float(res.statistic), float(res.pvalue), float(res.statistic) / (n1 * n2), n1, n2, "scipy")
    sa = a_sorted if a_sorted is not None else np.sort(a)
    sb = b_sorted if b_sorted is not None else np.sort(b)
    less = np.searchsorted(sb, sa, side="left").astype(np.float64)
    leq = np.searchsorted(sb, sa, side="right").astype(np.float64)
    u1 = float(np.sum(less + leq) / 2.0)
    pooled = np.sort(np.concatenate((sa, sb)), kind="stable")
    n = n1 + n2
    change = np.flatnonzero(np.diff(pooled) != 0)
    runs = np.diff(np.concatenate(([-1], change, [n - 1]))).astype(np.float64)
    tie_term = float(np.sum(runs**3 - runs))
    mu = n1 * n2 / 2.0
    var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)))
    u = max(u1, n1 * n2 - u1)
    if var <= 0:
        p = 1.0
    else:
        z = (u - mu - 0.5) / math.sqrt(var)
        p = float(min(1.0, 2.0 * sps.norm.sf(z)))
    return MannWhitney(u1, p, u1 / (n1 * n2), n1, n2, "asymptotic")


# ---------------------------------------------------------------------------------------------
# Bootstrap
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    """A speedup (baseline statistic / candidate statistic) with its confidence interval."""

    estimate: float
    low: float
    high: float
    confidence: float
    statistic: str
    space: str = "time"  # "time" or "cycles"
    method: str = ""
    n_baseline: int = 0
    n_candidate: int = 0
    resamples: int = 0

    @property
    def finite(self) -> bool:
        return all(math.isfinite(v) for v in (self.estimate, self.low, self.high))

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def as_dict(self) -> dict:
        return {k: _clean(v) for k, v in self.__dict__.items()}

    def describe(self) -> str:
        if not math.isfinite(self.estimate):
            return "—"
        from profaudit.fmt import fmt_speedup, fmt_x

        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            return f"{fmt_x(self.estimate)} ({self.statistic}, no interval)"
        # three significant digits with trailing zeros (2.00, not 2): a rounded end never looks exact
        return f"{fmt_speedup(self.estimate, self.low, self.high)} ({self.statistic}, {self.space}, {self.confidence:.0%})"


@dataclass
class SampleSet:
    """One side's steady-state values (times or cycles), with the sort done once."""

    values: np.ndarray
    runs: np.ndarray | None = None  # process-level run index per value, when known
    _sorted: np.ndarray | None = field(default=None, repr=False)

    @property
    def sorted(self) -> np.ndarray:
        if self._sorted is None:
            self._sorted = np.sort(self.values)
        return self._sorted

    @property
    def n(self) -> int:
        return int(self.values.size)

    def stat(self, s: Statistic) -> float:
        return compute(self.values, s, sorted_x=self.sorted)


def bootstrap_draws(
    sample: SampleSet, stats: Sequence[Statistic], resamples: int, rng: np.random.Generator
) -> tuple[dict[str, np.ndarray], str]:
    """`resamples` bootstrap replicates of each statistic for one sample; and the method used."""
    n = sample.n
    if n == 0:
        return {s.name: np.full(resamples, math.nan) for s in stats}, "none"
    if n <= DIRECT_MAX:
        return _direct_draws(sample.values, stats, resamples, rng), "direct bootstrap"
    out: dict[str, np.ndarray] = {}
    linear = [s for s in stats if s.kind in ("mean", "trimmed_mean", "total")]
    if linear:
        out.update(_grouped_poisson_draws(sample.sorted, linear, resamples, rng))
    for s in stats:
        if s.kind == "quantile":
            out[s.name] = _order_statistic_draws(sample.sorted, _order_index(n, float(s.q)), resamples, rng)
        elif s.kind == "best_of":
            out[s.name] = _order_statistic_draws(sample.sorted, 1, resamples, rng)
    return out, "exact order-statistic and grouped Poisson bootstrap"


def _order_index(n: int, q: float) -> int:
    """1-based order statistic nearest numpy's linear quantile position (n - 1) q."""
    return int(min(n, max(1, round((n - 1) * q) + 1)))


def _direct_draws(x: np.ndarray, stats: Sequence[Statistic], resamples: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = x.size
    out = {s.name: np.empty(resamples) for s in stats}
    need_sort = any(s.kind in ("quantile", "trimmed_mean", "best_of") for s in stats)
    chunk = max(1, _CHUNK_VALUES // n)
    cut = int(TRIM_FRACTION * n)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        xs = x[rng.integers(0, n, size=(stop - start, n))]
        if need_sort:
            xs.sort(axis=1)
        for s in stats:
            if s.kind == "mean":
                v = xs.mean(axis=1)
            elif s.kind == "total":
                v = xs.sum(axis=1)
            elif s.kind == "trimmed_mean":
                v = xs[:, cut : n - cut].mean(axis=1) if 2 * cut < n else np.median(xs, axis=1)
            elif s.kind == "best_of":
                v = xs[:, 0]
            else:
                q = float(s.q)  # type: ignore[arg-type]
                h = (n - 1) * q
                lo = int(math.floor(h))
                hi = min(lo + 1, n - 1)
                v = xs[:, lo] + (h - lo) * (xs[:, hi] - xs[:, lo])
            out[s.name][start:stop] = v
    return out


def _order_statistic_draws(s: np.ndarray, j: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Exact bootstrap draws of the j-th order statistic (1-based) of n draws from sorted s."""
    from scipy import stats as sps

    n = s.size
    width = int(12 * math.sqrt(n)) + 40
    lo = max(1, j - width)
    hi = min(n, j + width)
    k = np.arange(lo, hi + 1)
    cdf = sps.binom.sf(j - 1, n, k / n)  # P(#draws <= s_(k) >= j) = P(X*_(j) <= s_(k))
    cdf[-1] = 1.0
    u = rng.random(resamples)
    pos = np.searchsorted(cdf, u, side="left")
    return s[lo - 1 + np.minimum(pos, k.size - 1)]


def _group_edges(n: int) -> np.ndarray:
    """Edges (indices into the sorted data) of the groups the Poisson bootstrap draws from.

    Singletons for the most extreme values on each side, then equal-count groups with edges at
    the trimming points, finer near those points so a trimmed resample cuts close to an edge."""
    tail = min(_SINGLETONS_PER_TAIL, n // 20)
    cut = int(TRIM_FRACTION * n)
    edges = set(range(0, tail + 1)) | set(range(n - tail, n + 1))
    body = np.linspace(tail, n - tail, _GROUPS + 1).round().astype(np.int64)
    edges.update(int(e) for e in body)
    if 0 < cut < n - cut:
        fine = max(1, int(2 * math.sqrt(n)))
        for c in (cut, n - cut):
            edges.update(int(e) for e in np.arange(c - 8 * fine, c + 8 * fine + 1, fine) if tail <= e <= n - tail)
            edges.add(c)
    return np.array(sorted(edges), dtype=np.int64)


def _poisson_counts(sizes: np.ndarray, big: np.ndarray, rows: int, rng: np.random.Generator) -> np.ndarray:
    """Poisson(size) draws per group; groups of >= `_NORMAL_POISSON_MIN` values use the normal
    approximation N(size, size) (skewness 1 / sqrt(size) <= 0.07), which is several times cheaper."""
    counts = np.empty((rows, sizes.size))
    if (~big).any():
        counts[:, ~big] = rng.poisson(sizes[~big], size=(rows, int((~big).sum())))
    if big.any():
        lam = sizes[big]
        counts[:, big] = np.maximum(lam + np.sqrt(lam) * rng.standard_normal((rows, lam.size)), 0.0)
    return counts


def _grouped_poisson_draws(s: np.ndarray, stats: Sequence[Statistic], resamples: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = s.size
    edges = _group_edges(n)
    sizes = np.diff(edges).astype(np.float64)
    keep = sizes > 0
    starts = edges[:-1][keep]
    sizes = sizes[keep]
    csum = np.concatenate(([0.0], np.cumsum(s, dtype=np.float64)))
    csq = np.concatenate(([0.0], np.cumsum((s - s.mean()) ** 2, dtype=np.float64)))
    ends = starts + sizes.astype(np.int64)
    gsum = csum[ends] - csum[starts]
    gmean = gsum / sizes
    # Within-group variance from centred squares (sum (x - mu)^2 - size (gmean - mu)^2).
    mu = s.mean()
    gvar = np.maximum((csq[ends] - csq[starts]) / sizes - (gmean - mu) ** 2, 0.0)
    gsd = np.sqrt(gvar)
    out = {st.name: np.empty(resamples) for st in stats}
    big = sizes >= _NORMAL_POISSON_MIN
    chunk = max(1, 4_000_000 // sizes.size)
    want_trim = any(st.kind == "trimmed_mean" for st in stats)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        counts = _poisson_counts(sizes, big, stop - start, rng)
        z = rng.standard_normal(counts.shape)
        contrib = counts * gmean + np.sqrt(counts) * gsd * z
        total_n = counts.sum(axis=1)
        total_n = np.maximum(total_n, 1.0)
        total = contrib.sum(axis=1)
        if want_trim:
            cut = np.floor(TRIM_FRACTION * total_n)[:, None]
            cum = np.cumsum(counts, axis=1)
            prev = cum - counts
            upper = total_n[:, None] - cut
            kept = np.clip(cum, cut, upper) - np.clip(prev, cut, upper)
            frac = np.divide(kept, counts, out=np.zeros_like(kept), where=counts > 0)
            trim_sum = (contrib * frac).sum(axis=1)
            trim_n = np.maximum(upper[:, 0] - cut[:, 0], 1.0)
        for st in stats:
            if st.kind == "mean":
                out[st.name][start:stop] = total / total_n
            elif st.kind == "total":
                # A resample of a fixed-length log has n values: scale the Poisson total to n.
                out[st.name][start:stop] = total / total_n * n
            elif st.kind == "trimmed_mean":
                out[st.name][start:stop] = trim_sum / trim_n
    return out


def ratio_interval(
    baseline: SampleSet,
    candidate: SampleSet,
    stat: Statistic,
    *,
    draws_b: np.ndarray,
    draws_c: np.ndarray,
    confidence: float = DEFAULT_CONFIDENCE,
    inflate_b: float = 1.0,
    inflate_c: float = 1.0,
    space: str = "time",
    method: str = "",
) -> Interval:
    """Percentile interval of log(stat_b / stat_c), each side's bootstrap deviation scaled by its
    inflation factor (autocorrelation, run-to-run variation) before they are combined."""
    pb, pc = baseline.stat(stat), candidate.stat(stat)
    est = pb / pc if pc > 0 and pb > 0 else math.nan
    if not math.isfinite(est):
        return Interval(est, math.nan, math.nan, confidence, stat.name, space, method, baseline.n, candidate.n, draws_b.size)
    tiny = np.finfo(float).tiny
    db = np.log(np.maximum(draws_b, tiny)) - math.log(pb)
    dc = np.log(np.maximum(draws_c, tiny)) - math.log(pc)
    dev = inflate_b * db - inflate_c * dc
    dev = dev[np.isfinite(dev)]
    if dev.size < 10:
        return Interval(est, math.nan, math.nan, confidence, stat.name, space, method, baseline.n, candidate.n, draws_b.size)
    alpha = 1 - confidence
    q_lo, q_hi = np.quantile(dev, (alpha / 2, 1 - alpha / 2))
    if max(abs(q_lo), abs(q_hi)) + abs(math.log(est)) >= 709.0:
        # a zero-duration sample (a coarse timer) makes a bootstrap draw of 0, whose log deviation
        # of ~708 overflowed math.exp (fuzzing: `compare` on a torch-benchmark log with one raw
        # time of -0.0 exited 3): no interval, as with too few usable draws
        return Interval(est, math.nan, math.nan, confidence, stat.name, space, method, baseline.n, candidate.n, draws_b.size)
    return Interval(
        est,
        float(math.exp(math.log(est) + q_lo)),
        float(math.exp(math.log(est) + q_hi)),
        confidence,
        stat.name,
        space,
        method,
        baseline.n,
        candidate.n,
        int(draws_b.size),
    )


def log_se(draws: np.ndarray, point: float) -> float:
    """Standard error of log(statistic) from its bootstrap draws."""
    if not (point > 0) or draws.size < 2:
        return math.nan
    d = np.log(np.maximum(draws, np.finfo(float).tiny))
    d = d[np.isfinite(d)]
    return float(d.std(ddof=1)) if d.size > 1 else math.nan


def _t_over_z(df: int, confidence: float = DEFAULT_CONFIDENCE) -> float:
    """Student-t over normal quantile: a between-run standard error from few runs is itself
    uncertain (3 runs: t = 4.30 against z = 1.96)."""
    from scipy import stats as sps

    return float(sps.t.ppf(0.5 + confidence / 2, df) / sps.norm.ppf(0.5 + confidence / 2))


def run_inflation(sample: SampleSet, stat: Statistic, within_se: float, *, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, dict]:
    """Factor by which the between-run (process-level) spread of `stat` exceeds what the
    iteration-level bootstrap sees: t-corrected se_between / se_within of log(stat), at least 1.

    se_between is the standard deviation of the per-run values of `stat` over sqrt(runs): the
    standard error of the statistic when runs, not iterations, are the independent units (a
    random-effects view: it contains both the within-run noise and the run-to-run variance).
    Needs >= 2 runs; the factor is capped at 50."""
    if sample.runs is None or within_se != within_se or within_se <= 0:
        return 1.0, {}
    runs = sample.runs
    uniq = np.unique(runs)
    if uniq.size < 2:
        return 1.0, {"runs": int(uniq.size)}
    vals = np.array([compute(sample.values[runs == r], stat) for r in uniq])
    if np.any(~np.isfinite(vals)) or np.any(vals <= 0):
        return 1.0, {"runs": int(uniq.size)}
    se_between = float(np.std(np.log(vals), ddof=1) / math.sqrt(uniq.size))
    factor = max(1.0, se_between * _t_over_z(uniq.size - 1, confidence) / within_se)
    return float(min(factor, 50.0)), {"runs": int(uniq.size), f"run_{stat.name}": [float(v) for v in vals], f"se_between_log_{stat.name}": se_between, f"se_within_log_{stat.name}": within_se}


def paired_run_inflation(b: SampleSet, c: SampleSet, stat: Statistic, within_se: float, *, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, dict] | None:
    """For sides measured in the same process-level runs (the same run ids on both sides, as an
    interleaving harness writes them), the factor by which the spread of the per-run log ratio
    exceeds the iteration-level standard error of the log ratio (t-corrected; capped at 50).
    Conditions that hit both sides of a run alike (contention, clocks, a cold machine) cancel in
    the ratio, so this is the right unit when runs are paired. None when they are not."""
    if b.runs is None or c.runs is None or within_se != within_se or within_se <= 0:
        return None
    ub, uc = np.unique(b.runs), np.unique(c.runs)
    if ub.size < 2 or ub.size != uc.size or not np.array_equal(ub, uc):
        return None
    vb = np.array([compute(b.values[b.runs == r], stat) for r in ub])
    vc = np.array([compute(c.values[c.runs == r], stat) for r in ub])
    if np.any(~np.isfinite(vb)) or np.any(~np.isfinite(vc)) or np.any(vb <= 0) or np.any(vc <= 0):
        return None
    lr = np.log(vb / vc)
    se_between = float(np.std(lr, ddof=1) / math.sqrt(ub.size))
    factor = max(1.0, se_between * _t_over_z(ub.size - 1, confidence) / within_se)
    return float(min(factor, 50.0)), {"runs": int(ub.size), f"run_ratio_{stat.name}": [float(v) for v in np.exp(lr)], f"se_between_log_ratio_{stat.name}": se_between, f"se_within_log_ratio_{stat.name}": within_se}


def summary_ratio_interval(
    b_mean: float, b_sd: float | None, b_n: int | None, c_mean: float, c_sd: float | None, c_n: int | None, *, confidence: float, statistic: str
) -> Interval:
    """Ratio of two reported means with a delta-method interval on the log scale, for sides that
    only give summaries (mean, standard deviation, sample count)."""
    from scipy import stats as sps

    est = b_mean / c_mean if b_mean > 0 and c_mean > 0 else math.nan
    if not math.isfinite(est) or not b_sd or not c_sd or not b_n or not c_n or b_n < 2 or c_n < 2:
        return Interval(est, math.nan, math.nan, confidence, statistic, "time", "reported summaries (no dispersion)", b_n or 0, c_n or 0, 0)
    se = math.sqrt((b_sd / b_mean) ** 2 / b_n + (c_sd / c_mean) ** 2 / c_n)
    zq = float(sps.norm.ppf(0.5 + confidence / 2))
    if zq * se >= 700.0:
        # a reported sd of 2**64 on a mean of milliseconds (fuzzing: KernelBench std) overflowed
        # math.exp and `compare` exited 3: no interval, as with no dispersion at all
        return Interval(est, math.nan, math.nan, confidence, statistic, "time", "reported summaries (dispersion beyond range)", b_n, c_n, 0)
    return Interval(est, est * math.exp(-zq * se), est * math.exp(zq * se), confidence, statistic, "time", "delta method on reported mean, sd and n", b_n, c_n, 0)


def claim_tolerance(text: str | float | None, value: float) -> float:
    """How far a claimed number may sit from the evidence before it counts as overstated: half a
    unit in its last printed digit ("2.1" -> 0.05, "1.37" -> 0.005), capped at 2.5 % of the value
    so that a bare "2x" is not read as "anything from 1.5x"."""
    if not math.isfinite(value):
        return 0.0
    raw = str(text).strip().lower().rstrip("x").strip() if text is not None else repr(float(value))
    m = re.fullmatch(r"[+-]?(\d*)(?:\.(\d*))?(?:e[+-]?\d+)?", raw)
    if not m or "e" in raw:
        half = abs(value) * 5e-3
    else:
        half = 0.5 * 10 ** (-len(m.group(2) or ""))
    return min(half, 0.025 * abs(value))


def _clean(v):
    if isinstance(v, (np.floating, np.integer)):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v
