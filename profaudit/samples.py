"""Timing samples: units, canonical parameters, kernels-as-samples, and row selection.

The `samples` table (see `profaudit.schema.SAMPLES`) holds one row per timed iteration or, where a
tool only kept summaries, one row per summary statistic (`statistic` set, `sample_count` = how many
samples it summarises). Every timing-log parser and the audit share the helpers here, so that a
parameter set written by nvbench and the same one written by a CSV compare equal, and a unit is
converted in exactly one place.

Conventions every parser follows:
- `duration_ns` is nanoseconds, always; `statistic` is null for a raw sample; `params` is the
  canonical JSON of `canonical_params` (sorted keys, compact, `"{}"` when there are none, never
  null, so joins on it never miss on nulls).
- A file may hold several measurements of one benchmark with different `time_source`s (nvbench
  writes GPU-event and host-timer means; Google Benchmark real and CPU time). `preferred()` keeps
  the most direct one per benchmark; `select(time_source=...)` picks one explicitly.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Iterable, Mapping, Sequence

import polars as pl

from profaudit import schema

# --- units ---------------------------------------------------------------------------------------

_NS_PER = {
    "ns": 1.0,
    "nsec": 1.0,
    "nsecs": 1.0,
    "nanosec": 1.0,
    "nanosecond": 1.0,
    "nanoseconds": 1.0,
    "nanos": 1.0,
    "nsecond": 1.0,
    "us": 1e3,
    "µs": 1e3,
    "μs": 1e3,
    "usec": 1e3,
    "usecs": 1e3,
    "microsec": 1e3,
    "microsecond": 1e3,
    "microseconds": 1e3,
    "micros": 1e3,
    "usecond": 1e3,
    "ms": 1e6,
    "msec": 1e6,
    "msecs": 1e6,
    "millisec": 1e6,
    "millisecond": 1e6,
    "milliseconds": 1e6,
    "millis": 1e6,
    "msecond": 1e6,
    "s": 1e9,
    "sec": 1e9,
    "secs": 1e9,
    "second": 1e9,
    "seconds": 1e9,
}

TIME_UNITS: tuple[str, ...] = ("ns", "us", "ms", "s")


def ns_per(unit: str | None) -> float | None:
    """Nanoseconds in one `unit` ("ms" -> 1e6), or None when `unit` is not a time unit.

    "min" is deliberately not a unit: in timing logs it always means the minimum.
    """
    if not unit:
        return None
    return _NS_PER.get(unit.strip().lower())


def to_ns(value: float | None, unit: str) -> float | None:
    f = ns_per(unit)
    if f is None:
        raise ValueError(f"not a time unit: {unit!r}")
    return None if value is None else float(value) * f


# --- parameters ----------------------------------------------------------------------------------

_INT_RE = re.compile(r"[+-]?\d+\Z")
# `\d+(?:\.\d*)?`, not `\d+\.?\d*`: that splits a run of digits between its two halves in every
# way before it fails, so a 1 MB label of digits and one stray byte took minutes (fuzz, s15 final run)
_FLOAT_RE = re.compile(r"[+-]?(\d+(?:\.\d*)?|\.\d+)([eE][+-]?\d+)?\Z")


def parse_scalar(text: Any) -> Any:
    """A cell's value as int, float or stripped string ("1024" -> 1024, "2.5" -> 2.5, "fp16" -> "fp16").

    Parameters from CSV text and from JSON numbers must compare equal, so text that is a number
    becomes that number.
    """
    if not isinstance(text, str):
        return text
    s = text.strip()
    if _INT_RE.match(s):
        try:
            return int(s)
        except ValueError:
            # beyond Python's 4,300-digit limit on int-from-text (fuzzing: a torch-benchmark
            # sub_label of 65,536 digits reached the catch-all): a label, kept as text
            return s
    if _FLOAT_RE.match(s):
        return float(s)
    return s


def _norm_value(v: Any) -> Any:
    if v is None or isinstance(v, (str, bool)):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        # 1024.0 from one tool and 1024 from another are the same parameter value
        if v.is_integer() and abs(v) < 2**53:
            return int(v)
        return v
    if isinstance(v, Mapping):
        return {str(k): _norm_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_norm_value(x) for x in v]
    if hasattr(v, "item"):  # numpy scalar
        return _norm_value(v.item())
    if hasattr(v, "tolist"):
        return _norm_value(v.tolist())
    return str(v)


def canonical_params(params: Mapping[str, Any] | None) -> str:
    """Parameters as canonical JSON: sorted keys, compact separators, `"{}"` when empty."""
    if not params:
        return "{}"
    return json.dumps({str(k): _norm_value(v) for k, v in params.items()}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def params_dict(text: str | None) -> dict:
    return json.loads(text) if text else {}


# --- building frames -----------------------------------------------------------------------------


def frame(columns: Mapping[str, Sequence | pl.Series] | None = None, rows: Iterable[Mapping] | None = None, **constants: Any) -> pl.DataFrame:
    """A samples frame from column lists or from dict rows; undeclared names raise (schema rule).

    `constants` give whole columns one value (`phase="measure"`, `time_source="host"`), cast to
    the declared dtype like every other column.
    """
    sch = schema.SAMPLES.polars_schema
    unknown = [c for c in [*(columns or {}), *constants] if c not in sch]
    if unknown:
        raise ValueError(f"table 'samples' has no column(s) {unknown}; declare them in profaudit.schema")
    if rows is not None:
        df = schema.from_records("samples", list(rows))
    elif not columns:
        return schema.SAMPLES.empty()
    else:
        df = pl.DataFrame([s.alias(n) if isinstance(s, pl.Series) else pl.Series(n, list(s), dtype=sch[n], strict=False) for n, s in columns.items()])
    if constants:
        df = df.with_columns([pl.lit(v).alias(k) for k, v in constants.items()])
    return schema.conform("samples", df)


# --- kernels as samples --------------------------------------------------------------------------

_BY = ("name", "short_name", "mangled_name", "op_name", "nvtx_range")


def samples_from_kernels(ps, *, by: str = "name") -> pl.DataFrame:
    """Kernel executions from any profile parser as `samples` rows, so they can be audited like logs.

    `ps` is a ProfileSet, a Profile, or a kernels frame. One row per kernel execution with a
    duration: `benchmark` = the kernel's `by` column (`name`: the full demangled name, so template
    instances stay apart; `short_name` merges them; `op_name`/`nvtx_range` group by the issuing op
    or range, falling back to the short name where a kernel has none), `iteration` = launch order
    within (profile, benchmark, params), `params` = the launch configuration (grid and block), so
    launches of one kernel on different shapes are not mixed, `time_source` = the profile's tool
    (ncu, nsys, kineto, xla, neuron, ...), `cache_state` = cold where Nsight Compute flushed caches
    before each replay (`--cache-control all`, its default), else unknown.
    """
    if by not in _BY:
        raise ValueError(f"by must be one of {_BY}, not {by!r}")
    cache_of: dict[str, str] = {}
    if isinstance(ps, pl.DataFrame):
        k = ps
    else:
        from profaudit.profile import Profile, ProfileSet

        if isinstance(ps, Profile):
            ps = ProfileSet([ps])
        k = ps.kernels
        md = ps.metadata
        if md.height and "cache_control" in md.columns:
            for pid, cc in md.select("profile_id", "cache_control").iter_rows():
                if cc == "all":
                    cache_of[pid] = "cold"
    k = k.filter(pl.col("duration_ns").is_not_null())
    if k.height == 0:
        return schema.SAMPLES.empty()
    key = pl.col(by)
    if by != "name":
        key = pl.coalesce(pl.col(by), pl.col("short_name"), pl.col("name"))
    else:
        key = pl.coalesce(pl.col("name"), pl.col("short_name"), pl.col("mangled_name"))

    def triple(p: str) -> pl.Expr:
        parts = [pl.col(f"{p}_{a}").cast(pl.Int64).cast(pl.Utf8) for a in "xyz"]
        return pl.concat_str([pl.lit("["), parts[0], pl.lit(","), parts[1], pl.lit(","), parts[2], pl.lit("]")])

    have_launch = pl.all_horizontal([pl.col(f"{p}_{a}").is_not_null() for p in ("grid", "block") for a in "xyz"])
    params = (
        pl.when(have_launch)
        .then(pl.concat_str([pl.lit('{"block":'), triple("block"), pl.lit(',"grid":'), triple("grid"), pl.lit("}")]))
        .otherwise(pl.lit("{}"))
    )
    order = [c for c in ("kernel_id", "start_ns") if c in k.columns]
    out = (
        k.with_columns(key.alias("benchmark"), params.alias("params"))
        .sort(["profile_id", *order], nulls_last=True, maintain_order=True)
        .with_columns(pl.int_range(pl.len()).over(["profile_id", "benchmark", "params"]).cast(pl.Int64).alias("iteration"))
        .select(
            "profile_id",
            "benchmark",
            "params",
            "iteration",
            pl.col("duration_ns").cast(pl.Float64),
            pl.col("start_ns").cast(pl.Float64).alias("timestamp_ns"),
            (pl.col("sm_clock_hz") / 1e6).alias("sm_clock_mhz"),
            (pl.col("mem_clock_hz") / 1e6).alias("mem_clock_mhz"),
            pl.col("source").alias("time_source"),
            pl.col("device_name"),
            pl.col("profile_id").replace_strict(cache_of, default="unknown", return_dtype=pl.Utf8).alias("cache_state"),
            pl.lit(1, dtype=pl.Int64).alias("calls_per_sample"),
        )
    )
    return schema.conform("samples", out)


# --- selection -----------------------------------------------------------------------------------

# Most direct first: device-side timers, then profilers' device timestamps, then host timers.
TIME_SOURCE_RANK: tuple[str, ...] = (
    "nvbench_cold",
    "cuda_events",
    "do_bench",
    "manual",
    "ncu",
    "nsys",
    "kineto",
    "proton",
    "xla",
    "neuron",
    "nki.benchmark",
    "nvbench_batch",
    "nvbench_cpu_only",
    "host",
    "nvbench_cold_cpu",
    "host_cpu",
)


def _match(col: str, value) -> pl.Expr:
    if isinstance(value, (list, tuple, set, frozenset)):
        return pl.col(col).is_in(list(value))
    if isinstance(value, re.Pattern):
        return pl.col(col).str.contains(value.pattern)
    return pl.col(col) == value


def select(
    samples: pl.DataFrame,
    *,
    benchmark=None,
    variant=None,
    params: Mapping[str, Any] | None = None,
    time_source=None,
    statistic: str | None | type(...) = ...,
    phase=None,
    profile_id=None,
    run=None,
) -> pl.DataFrame:
    """Rows matching every given filter.

    Strings match exactly, lists/tuples match any member, compiled regular expressions search.
    `params` matches rows whose parameters include every given key with an equal value (numbers
    compare as numbers, so {"N": 1024} matches a CSV's "1024"). `statistic=None` keeps raw samples
    only, `statistic="mean"` one summary; leave it out to keep both.
    """
    df = samples
    for col, val in (("benchmark", benchmark), ("variant", variant), ("time_source", time_source), ("phase", phase), ("profile_id", profile_id), ("run", run)):
        if val is not None:
            df = df.filter(_match(col, val))
    if statistic is None:
        df = df.filter(pl.col("statistic").is_null())
    elif statistic is not ...:
        df = df.filter(_match("statistic", statistic))
    if params:
        want = {str(k): _norm_value(parse_scalar(v)) for k, v in params.items()}
        keep = []
        for text in df.get_column("params").unique().to_list():
            have = params_dict(text)
            if all(k in have and _norm_value(have[k]) == v for k, v in want.items()):
                keep.append(text)
        df = df.filter(pl.col("params").is_in(keep))
    return df


def raw(samples: pl.DataFrame) -> pl.DataFrame:
    """Raw samples only (rows that are not summary statistics)."""
    return samples.filter(pl.col("statistic").is_null())


def preferred(samples: pl.DataFrame) -> pl.DataFrame:
    """Per (profile, benchmark, variant, params), keep only the most direct time source.

    A source not in `TIME_SOURCE_RANK` ranks after the known device timers and before host timers;
    null (unknown) ranks last.
    """
    if samples.height == 0:
        return samples
    rank = {s: i for i, s in enumerate(TIME_SOURCE_RANK)}
    unknown_rank = rank["host"] - 0.5
    keys = ["profile_id", "benchmark", "variant", "params"]
    r = (
        pl.col("time_source")
        .replace_strict(rank, default=unknown_rank, return_dtype=pl.Float64)
        .fill_null(float(len(rank)))
    )
    return (
        samples.with_columns(r.alias("__rank"))
        .filter(pl.col("__rank") == pl.col("__rank").min().over(keys))
        .drop("__rank")
    )


def params_medians(samples: pl.DataFrame, like: pl.DataFrame) -> pl.DataFrame | None:
    """The sweep a selected benchmark belongs to: per parameter set of the same benchmark, variant
    and time source as the rows in `like`, the median time (ns) of its measured samples, or of its
    median/mean summary row when the log holds summaries only.

    Columns: params, median_ns, samples. None when the log times one parameter set only.
    """
    if samples.height == 0 or like.height == 0 or samples["params"].n_unique() < 2:
        return None
    first = like.row(0, named=True)
    df = samples
    for col in ("benchmark", "variant", "time_source"):
        v = first[col]
        df = df.filter(pl.col(col).is_null() if v is None else pl.col(col) == v)
    df = df.filter(pl.col("params").is_not_null() & pl.col("duration_ns").is_finite() & (pl.col("duration_ns") >= 0))
    if df["params"].n_unique() < 2:
        return None
    measured = (
        df.filter(pl.col("statistic").is_null() & (pl.col("phase").is_null() | (pl.col("phase").str.to_lowercase() != "warmup")))
        .group_by("params")
        .agg(pl.col("duration_ns").median().alias("median_ns"), pl.len().cast(pl.Int64).alias("samples"))
    )
    stat = df["statistic"].str.to_lowercase()
    summary = (
        df.filter(stat.is_in(["median", "p50", "mean", "avg", "average"]))
        .with_columns(pl.col("statistic").str.to_lowercase().is_in(["median", "p50"]).alias("__is_median"))
        .sort("__is_median", descending=True)
        .group_by("params", maintain_order=True)
        .agg(pl.col("duration_ns").first().alias("median_ns"), pl.col("sample_count").first().fill_null(1).cast(pl.Int64).alias("samples"))
        .filter(~pl.col("params").is_in(measured["params"].implode()))
    )
    out = pl.concat([measured, summary], how="vertical_relaxed").sort("params")
    return out if out.height >= 2 else None


__all__ = [
    "params_medians",
    "TIME_UNITS",
    "TIME_SOURCE_RANK",
    "ns_per",
    "to_ns",
    "parse_scalar",
    "canonical_params",
    "params_dict",
    "frame",
    "samples_from_kernels",
    "select",
    "raw",
    "preferred",
    "is_throttled",
    "throttle_names",
]


# NVML reasons that do not slow a running kernel (idle, application clocks) and spellings of none.
_BENIGN = {"", "none", "0", "0x0", "gpu_idle", "idle", "applications_clocks_setting", "application_clocks_setting", "app_clocks", "applications_clocks", "clocks_setting", "nvmlclocksthrottlereasongpuidle", "nvmlclocksthrottlereasonapplicationsclockssetting"}
_BENIGN_BITS = 0x1 | 0x2  # GpuIdle, ApplicationsClocksSetting

# NVML clocks-event (throttle) reason bits, named as nvidia-smi names them.
THROTTLE_BITS = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)


def throttle_names(mask: int) -> str:
    """An NVML throttle-reason bitmask as names joined by '|' ('none' for 0; unknown bits in hex)."""
    names = [n for bit, n in THROTTLE_BITS if mask & bit]
    rest = mask & ~sum(b for b, _ in THROTTLE_BITS)
    if rest:
        names.append(hex(rest))
    return "|".join(names) if names else "none"


def is_throttled(reason) -> bool:
    """Whether a `throttle_reasons` value names a reason that slows a running kernel.

    Accepts NVML bitmasks (decimal or hex) and reason names joined by | , ; + or spaces; idle and
    application-clock settings are benign."""
    if reason is None:
        return False
    s = str(reason).strip().lower()
    if re.fullmatch(r"0x[0-9a-f]+|\d+", s):
        v = int(s, 16) if s.startswith("0x") else int(s)
        return bool(v & ~_BENIGN_BITS)
    parts = [p.strip() for p in re.split(r"[|,;+ ]+", s) if p.strip()]
    return any(p not in _BENIGN for p in parts)
