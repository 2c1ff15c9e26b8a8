"""profaudit's own timing-log format: what `profaudit bench` writes and every command reads.

Format `profaudit-timing`, version 1 — JSON Lines, UTF-8, optionally gzip-compressed (`.gz`):

    line 1   {"format": "profaudit-timing", "version": 1, "meta": {...}, "columns": {name: unit}}
    line 2+  one JSON object per sample, keys = `samples` table columns (profaudit.schema.SAMPLES)
             without `profile_id`; a key that is absent or null means unknown.

Rules a writer follows (`write_timing_log` enforces them):
- `duration_ns` is required, a finite number >= 0, in nanoseconds; every other column keeps the
  unit in its name (`timestamp_ns`, `sm_clock_mhz`, `power_w`, ...);
- `params` is the canonical JSON string of the parameters (`profaudit.samples.canonical_params`:
  sorted keys, compact; `"{}"` for none) — a JSON object is accepted on read too;
- `statistic` is null for raw samples (the normal case for the bench harness);
- `phase` is warmup or measure (warmup rows may be logged and are kept apart by the audit);
  `cache_state` is cold, hot or unknown.

`meta` records the run: any JSON object. Keys profaudit understands (the audit reads them as
evidence): `profaudit_version`, `created` (ISO 8601), `host`, `command_line`, `device_name`,
`device_uuid`, `driver_version`, `cuda_version`, `framework`, `libraries` ({name: version}),
`time_source`, `synchronized`, `cache_mode` / `l2_flush`, `clock_control` ({locked, sm_clock_mhz,
mem_clock_mhz}), `warmup_iterations`, `repetitions`, `interleaved`, `power_limit_w`,
`host_governor`, `gpu_busy_pct`, `other_gpu_processes`, `dtype`, `tf32`, `compile_mode`,
`cuda_graphs`, `correctness_checked`, `atol`, `rtol`. `device_name`, `time_source` and
`cache_state` in meta fill rows that leave them out.

How the run was measured (written by `profaudit bench`; the audit reads them to tell a measured
steady state from a run that stopped short): `warmup_steady` (bool), `warmup_calls` and
`min_warmup_calls` (int), `samples` and `min_samples` (int), `stop_reason` (noise_target,
max_samples, time_budget, hard_time_limit, variant_failed), `noise_target` (float, relative
standard error of the median asked for) and `noise_target_met` (bool), `rel_se_median` (float;
absent with `rel_se_note` saying why when the samples are too few to estimate it),
`minimums_met` and `stopped_short` (bool: the warm-up-call and sample minimums were, or were
not, reached), `timing_method` (per_call, per_call_behind_blocking_kernel, cuda_graph, or a
back_to_back_batch... form when tiny calls were timed in batches of `calls_per_sample`),
`timer_fallback` (str: why a device timer fell back to the host clock, e.g. a JAX trace
without device events; `time_source` then says host), `telemetry_sampling` (str: how the per-row
clocks/temperature/power were read: in a background
thread during each timed block, worst value of the block), `thermal_cooldown` ({below_c, waits,
seconds}: waits for the GPU to cool before blocks), `spot_checks` (int: timed
calls poisoned and verified on new input values), `determinism_checked` (bool),
`nondeterministic_tolerance` ([rtol, atol] the variant declared), `order_randomised` (bool) and
`order_effect` ({after_self_median_ns, after_other_median_ns, ratio, p_value,
after_self_samples, after_other_samples, significant}: its times right after another variant's
call against the others).

Versioning: readers accept every version up to their own and refuse newer files with one line
("written by a newer profaudit"). A version adds keys only in a new version number; a v1 reader
refuses keys it does not know, so a typo never passes as data.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

import polars as pl

from profaudit import schema

FORMAT = "profaudit-timing"
VERSION = 1

COLUMNS: tuple[str, ...] = tuple(c for c in schema.SAMPLES.names if c != "profile_id")
PHASES = ("warmup", "measure")
CACHE_STATES = ("cold", "hot", "unknown")


def _as_frame(samples) -> pl.DataFrame:
    if isinstance(samples, pl.DataFrame):
        return samples
    if hasattr(samples, "to_dict") and hasattr(samples, "columns") and not isinstance(samples, Mapping):
        return pl.from_pandas(samples)
    if isinstance(samples, Mapping):
        return pl.DataFrame(dict(samples))
    records = list(samples)
    if not records:
        return pl.DataFrame()
    keys: dict[str, None] = {}
    for r in records:
        keys.update(dict.fromkeys(r))
    return pl.DataFrame({k: [r.get(k) for r in records] for k in keys}, strict=False)


def _canon_params_column(df: pl.DataFrame) -> pl.DataFrame:
    from profaudit.samples import canonical_params

    if "params" not in df.columns:
        return df.with_columns(pl.lit("{}").alias("params"))
    col = df.get_column("params")
    if isinstance(col.dtype, pl.Struct):
        vals = [canonical_params({k: v for k, v in (x or {}).items() if v is not None}) for x in col.to_list()]
        return df.with_columns(pl.Series("params", vals, dtype=pl.Utf8))
    if col.dtype == pl.Object or col.dtype == pl.Null:
        vals = [canonical_params(x) if isinstance(x, Mapping) else (x or "{}") for x in col.to_list()]
        col = pl.Series("params", vals, dtype=pl.Utf8)
    mapping = {}
    for text in col.cast(pl.Utf8).unique().to_list():
        if text is None:
            mapping[text] = "{}"
            continue
        try:
            obj = json.loads(text)
        except ValueError:
            raise ValueError(f"params value {text!r} is not JSON") from None
        if not isinstance(obj, dict):
            raise ValueError(f"params value {text!r} is not a JSON object")
        mapping[text] = canonical_params(obj)
    return df.with_columns(col.cast(pl.Utf8).replace_strict(mapping, default="{}", return_dtype=pl.Utf8).alias("params"))


def validate(df: pl.DataFrame) -> pl.DataFrame:
    """The frame with the format's columns, dtypes and canonical params; ValueError says what is wrong."""
    if "profile_id" in df.columns:
        df = df.drop("profile_id")
    unknown = [c for c in df.columns if c not in COLUMNS]
    if unknown:
        raise ValueError(f"unknown sample column(s) {unknown}; a timing log holds only {list(COLUMNS)}")
    if "duration_ns" not in df.columns:
        raise ValueError("samples need a duration_ns column (nanoseconds)")
    df = _canon_params_column(df)
    sch = schema.SAMPLES.polars_schema
    # a column whose values mix JSON types (text in one line, a number in another) reaches here as
    # Python objects, which polars refuses to cast with a ComputeError, not InvalidOperationError
    mixed = [c for c in COLUMNS if c in df.columns and df.schema[c] == pl.Object]
    if mixed:
        kinds = sorted({type(v).__name__ for v in df.get_column(mixed[0]).to_list() if v is not None})
        raise ValueError(f"column {mixed[0]} mixes value types ({', '.join(kinds)}); expected {sch[mixed[0]]}")
    try:
        df = df.select([pl.col(c).cast(sch[c], strict=True) for c in COLUMNS if c in df.columns])
    except (pl.exceptions.InvalidOperationError, pl.exceptions.ComputeError) as exc:
        raise ValueError(f"a column has values of the wrong type: {str(exc).splitlines()[0]}") from None
    d = df.get_column("duration_ns")
    bad = df.filter(d.is_null() | ~d.is_finite() | (d < 0))
    if bad.height:
        raise ValueError(f"{bad.height} sample(s) have a missing, non-finite or negative duration_ns (first: {bad.get_column('duration_ns')[0]!r})")
    for col, allowed in (("phase", PHASES), ("cache_state", CACHE_STATES)):
        if col in df.columns:
            wrong = df.get_column(col).drop_nulls().unique().to_list()
            wrong = [w for w in wrong if w not in allowed]
            if wrong:
                raise ValueError(f"{col} must be one of {allowed}; got {wrong[:5]}")
    return df


def _json_default(o):
    if isinstance(o, float) and not math.isfinite(o):
        return str(o)
    if hasattr(o, "isoformat"):
        return o.isoformat()
    if hasattr(o, "item"):
        return o.item()
    return str(o)


def write_timing_log(path: str | os.PathLike, samples, meta: Mapping[str, Any] | None = None) -> Path:
    """Write samples (polars/pandas frame, column dict, or records) and run metadata, atomically.

    The file appears complete or not at all (temporary sibling, then rename). `.gz` compresses.
    Columns that are null in every row are left out. Returns the path written.
    """
    from profaudit import __version__

    path = Path(path)
    df = validate(_as_frame(samples))
    df = df.select([c for c in df.columns if c in ("duration_ns", "params") or df.get_column(c).null_count() < df.height])
    m = dict(meta or {})
    m.setdefault("profaudit_version", __version__)
    m.setdefault("created", datetime.now(timezone.utc).isoformat(timespec="seconds"))
    header = {
        "format": FORMAT,
        "version": VERSION,
        "meta": m,
        "columns": {c: schema.SAMPLES.column(c).unit for c in df.columns},
    }
    head = json.dumps(header, default=_json_default, allow_nan=False, ensure_ascii=False, sort_keys=False).encode("utf-8") + b"\n"
    body = io.BytesIO()
    df.write_ndjson(body)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as raw:
            if path.name.lower().endswith(".gz"):
                with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
                    f.write(head)
                    f.write(body.getbuffer())
            else:
                raw.write(head)
                raw.write(body.getbuffer())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_header(first_line: bytes) -> dict:
    """The parsed header line; ValueError with a one-line reason when it is not a v<=1 header."""
    try:
        h = json.loads(first_line)
    except ValueError:
        raise ValueError("not a profaudit timing log: the first line is not JSON") from None
    if not isinstance(h, dict) or h.get("format") != FORMAT:
        raise ValueError(f"not a profaudit timing log: the first line lacks \"format\": \"{FORMAT}\"")
    v = h.get("version")
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ValueError(f"profaudit timing log with an invalid version {v!r}")
    if v > VERSION:
        raise ValueError(f"profaudit timing log version {v} was written by a newer profaudit (this one reads up to version {VERSION}); upgrade profaudit")
    if not isinstance(h.get("meta", {}), dict):
        raise ValueError("profaudit timing log header: 'meta' must be an object")
    return h


__all__ = ["FORMAT", "VERSION", "COLUMNS", "write_timing_log", "read_header", "validate"]
