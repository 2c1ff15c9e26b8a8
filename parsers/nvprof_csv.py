"""Legacy `nvprof --csv` output (CUDA 5-11), from stderr or `--log-file`, one or several tables.

What a file may hold: nvprof's own lines (`==1234== NVPROF is profiling process 1234, command:
./a.out`, `==1234== Profiling result:`, `==1234== Metric result:`, `==1234== Unified Memory
profiling result:`, warnings; `========` instead of `==PID==` when nvprof imports a `.nvprof`
file with `-i`), the program's own output when stderr was redirected, and one CSV table after each
`... result:` line. A table is a quoted header, then (traces and summaries) a units row (`s,ms,,,`
or `,%,ms,,us,us,ms,`: every column has its own unit), then rows. The layouts:

* `--print-gpu-trace`: `Start, Duration, Grid X/Y/Z, Block X/Y/Z, Registers Per Thread, Static
  SMem, Dynamic SMem, Size, Throughput, [SrcMemType, DstMemType,] Device, Context, Stream,
  [Unified Memory, Virtual Address,] Name[, Correlation_ID]` -> kernels (rows with a grid),
  transfers (`[CUDA memcpy HtoD]`, `[CUDA memset]`, `[Unified Memory Memcpy HtoD]`), and with
  `--print-api-trace` in the same table, API calls (no device) -> ranges. Before CUDA 9 there is
  no Correlation_ID column and the kernel name ends with ` [<correlation id>]`. Unified-memory
  page-fault rows are counted in the metadata, not kept.
* `--print-api-trace` alone: `Start, Duration, Name, Correlation_ID` -> ranges.
* the summary (default, `--print-gpu-summary`, `--print-api-summary`): `[Type,] Time(%), Time,
  Calls, Avg, Min, Max, Name`; Type is `GPU activities` / `API calls` (empty on continuation
  rows); before CUDA 9 API calls came in their own table after `==PID== API calls:`. Rows become
  `samples` exactly as `nsys_stats_csv` writes `nsys stats` summaries (one row per name and
  statistic total/mean/min/max, `sample_count` = calls, `params` = {"report": ...}): kernels as
  `cuda_gpu_kern_sum` (so `profaudit summary` shows them), memcpy/memset as
  `cuda_gpu_mem_time_sum`, API calls as `cuda_api_sum`, with time_source "nvprof".
* `--metrics` / `--events`: `Device, Kernel, Invocations, Metric Name, Metric Description, Min,
  Max, Avg` (events: `Event Name, Min, Max, Avg, Total`), one row per kernel and metric,
  aggregated over the kernel's invocations, values with units in the cell (`197.0GB/s`, `87.3%`,
  `Low (1)`). Each kernel becomes one kernels row (category "nvprof-metrics-avg": the mean of
  its invocations, not one launch; no duration) with FLOPs from flop_count_{dp,sp,hp} and DRAM
  bytes from dram_read/write_bytes or 32-byte dram_read/write_transactions; every value goes to
  `metrics` (the average under the metric's name, `<name>.min`/`.max`/`.total` beside it).
* the `Unified Memory profiling result` table -> metrics (kind "summary").

Units: time s/ms/us/ns. nvprof's memory units are binary: 1 KB = 1024 B, 1 MB = 2^20 B and
1 GB/s = 2^30 B/s (checked on real traces: a memset of 0.370605 MB in 1.312 us is printed as
275.853 GB/s, which is 0.370605 x 2^20 B / 1.312 us / 2^30; the decimal reading gives 282.5).
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import polars as pl
from profaudit.parsers.base import (
    Probe,
    ReadOptions,
    apply_device_option,
    csv_cells,
    map_unique,
    new_profile,
)

from profaudit.errors import InputError
from profaudit.parsers import jsonshape
from profaudit.parsers.completeness import mark_incomplete
from profaudit.parsers.textsafe import check_room
from profaudit.samples import ns_per

# `==1234== text`, or `======== text` (nvprof -i); ncu's `==PROF==` is not nvprof's
_TOOL = re.compile(r"^==(?:\d+|====)==\s?(.*)$")
_PROFILING = re.compile(r"NVPROF is profiling process (\d+), command: (.*)$")
_APPLICATION = re.compile(r"Profiling application: (.*)$")
_RESULT = re.compile(r"^(?:(.*?)\s+)?result(?:\s*\([^)]*\))?:\s*$|^(API calls|GPU activities):\s*$", re.IGNORECASE)

_NOTE_LINE = re.compile(r"^\s*[A-Za-z][^,]*:\s*\S")
_MEM = {"b": 1.0, "kb": 1024.0, "mb": 1024.0**2, "gb": 1024.0**3, "tb": 1024.0**4}

# Column spellings across nvprof versions -> field
_TRACE_FIELDS = {
    "start": "start", "duration": "duration",
    "grid x": "grid_x", "grid y": "grid_y", "grid z": "grid_z",
    "block x": "block_x", "block y": "block_y", "block z": "block_z",
    "registers per thread": "registers", "static smem": "static_smem", "dynamic smem": "dynamic_smem",
    "size": "bytes", "throughput": "throughput", "srcmemtype": "src_kind", "dstmemtype": "dst_kind",
    "device": "device", "context": "context", "stream": "stream", "name": "name",
    "correlation_id": "correlation", "correlation id": "correlation",
    "unified memory": "um_value", "virtual address": "virtual_address",
    "src dev": "src_device", "src ctx": "src_context", "dst dev": "dst_device", "dst ctx": "dst_context",
}
_SUMMARY_FIELDS = {"type": "type", "time(%)": "time_pct", "time": "total", "calls": "count", "avg": "mean", "min": "min", "max": "max", "name": "name"}
_STATS = {"total": "total", "mean": "mean", "min": "min", "max": "max"}
_DIRECTIONS = {"htod": "HtoD", "dtoh": "DtoH", "dtod": "DtoD", "htoh": "HtoH", "ptop": "PtoP", "atoh": "AtoH", "htoa": "HtoA", "atod": "AtoD", "dtoa": "DtoA", "atoa": "AtoA"}
# polars reads columns with this pattern (Rust's regex: linear time whatever the pattern)
_VALUE_RE = r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z%/]+)?\s*$"
# Python's engine backtracks: the same language with possessive spaces and unit, or a cell of a
# digit, 100,000 spaces and one stray byte splits the spaces every way before failing (seconds a cell)
_VALUE = re.compile(r"^\s*+([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*+([A-Za-z%/]+)?+\s*+$")


def _key(h: str) -> str:
    return re.sub(r"\s+", " ", h.strip().lstrip("\ufeff").strip('"')).lower()


def _layout(cells: list[str]) -> str | None:
    """trace, api_trace, summary, metrics, events, um_summary or None for a candidate header."""
    keys = [_key(c) for c in cells]
    s = set(keys)
    if {"start", "duration", "name"} <= s:
        if s & {"grid x", "size", "device", "registers per thread"}:
            return "trace"
        if len(keys) <= 6 and s <= {"start", "duration", "name", "correlation_id", "correlation id", "process id", "thread id"}:
            return "api_trace"
        return None
    if {"time(%)", "time", "calls", "avg", "min", "max", "name"} <= s:
        return "summary"
    if {"device", "kernel", "invocations", "min", "max", "avg"} <= s:
        if "metric name" in s:
            return "metrics"
        if "event name" in s:
            return "events"
    if {"device", "count", "avg size", "total size"} <= s:
        return "um_summary"
    return None


class _Table:
    def __init__(self, layout: str, header: list[str], section: str | None, pid: int | None, lineno: int):
        self.layout, self.header, self.section, self.pid, self.lineno = layout, header, section, pid, lineno
        self.units: list[str] | None = None
        self.lines: list[str] = []


def _is_units_row(cells: list[str], width: int) -> bool:
    if len(cells) != width:
        return False
    units = [c.strip() for c in cells]
    return any(units) and all(u == "" or re.fullmatch(r"%|[KMGT]?B(?:/s)?|[num]?s|ns|us|ms|s", u) for u in units)


def split(text: str, path: Path) -> tuple[list[_Table], dict[str, Any]]:
    """The tables of an nvprof log, with what nvprof's own lines said (processes, commands, notes)."""
    info: dict[str, Any] = {"processes": {}, "notes": [], "tool_lines": 0, "results": []}
    tables: list[_Table] = []
    cur: _Table | None = None
    section: str | None = None
    pid: int | None = None
    lines = text.splitlines()
    for i, raw in enumerate(lines, 1):
        line = raw.rstrip("\r")
        m = _TOOL.match(line)
        if m:
            cur = None
            info["tool_lines"] += 1
            body = m.group(1).strip()
            tag = line[2:line.index("==", 2)]
            if tag.isdigit():
                pid = int(tag)
            pm = _PROFILING.search(body)
            am = _APPLICATION.search(body)
            rm = _RESULT.match(body)
            if pm:
                pid = int(pm.group(1))
                info["processes"].setdefault(pid, pm.group(2).strip())
            elif am:
                if pid is not None:
                    info["processes"].setdefault(pid, am.group(1).strip())
            elif rm:
                section = (rm.group(1) or rm.group(2) or "profiling").strip().lower()
                info["results"].append(section)
            elif body:
                info["notes"].append(body)
            continue
        if not line.strip():
            cur = None
            continue
        if cur is not None and "," not in line and _NOTE_LINE.match(line):
            # `Total CPU Page faults: 49` closes the unified-memory table
            info["notes"].append(line.strip())
            cur = None
            continue
        if cur is not None:
            if cur.units is None and not cur.lines and cur.layout in ("trace", "api_trace", "summary"):
                cells = csv_cells(line) or []
                if _is_units_row(cells, len(cur.header)):
                    cur.units = [c.strip() for c in cells]
                    continue
            cur.lines.append(line)
            continue
        if "," in line:
            cells = csv_cells(line) or []
            lay = _layout(cells) if len(cells) >= 3 else None
            if lay:
                cur = _Table(lay, [c.strip() for c in cells], section, pid, i)
                tables.append(cur)
                continue
        # anything else is the profiled program's own output or nvprof's console text
        if section is not None and not tables:
            info.setdefault("stray", []).append(line.strip()[:200])
    return tables, info


def _rows(t: _Table, path: Path) -> list[list[str]]:
    width = len(t.header)
    try:
        rows = [r for r in csv.reader(io.StringIO("\n".join(t.lines)))]
    except csv.Error as exc:  # a cell over the csv module's 128 KiB field limit, a NUL
        raise InputError(path, f"nvprof {t.layout} table (line {t.lineno}): malformed CSV: {exc}") from None
    for j, r in enumerate(rows):
        if len(r) != width:
            what = "the file looks truncated" if j == len(rows) - 1 else "malformed table"
            raise InputError(path, f"nvprof {t.layout} table (line {t.lineno}): row {j + 1} has {len(r)} cells where the header has {width}; {what}")
    return rows


# ------------------------------------------------------------------------------------------ values

def _split_value(cell: str | None) -> tuple[float | None, str]:
    """`197.0GB/s` -> (197.0, "GB/s"); `0.5` -> (0.5, ""); text -> (None, "")."""
    if cell is None:
        return None, ""
    m = _VALUE.match(cell)
    if not m:
        return None, ""
    return float(m.group(1)), m.group(2) or ""


def _time_scale(unit: str | None) -> float | None:
    return ns_per(unit) if unit else None


def _mem_scale(unit: str | None) -> float | None:
    if not unit:
        return None
    u = unit.strip().lower()
    u = u.removesuffix("/s")
    return _MEM.get(u)


def _device(cell: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """`GeForce GTX 1080 Ti (0)` -> (name, ordinal)."""
    e = cell.str.strip_chars()
    e = pl.when(e == "").then(None).otherwise(e)
    return e.str.replace(r"\s*\(\d+\)\s*$", ""), e.str.extract(r"\((\d+)\)\s*$", 1).cast(pl.Int64, strict=False)


# ------------------------------------------------------------------------------------------- trace

def _trace_frame(t: _Table, path: Path) -> tuple[pl.LazyFrame, dict[str, tuple[str, str]]]:
    """Lazy all-text frame with columns c0..cN, and field -> (column, unit). Traces run to millions
    of rows: polars reads them, every conversion is columnar, and the conversions run as the text
    is read (`_collect`), so the whole table never exists as text (a 200 MB trace's text frame was
    ~0.8 GB beside the converted one)."""
    width = len(t.header)
    if t.lines:
        lf = pl.scan_csv("\n".join(t.lines).encode(), has_header=False, infer_schema=False, new_columns=[f"c{i}" for i in range(width)], quote_char='"')
        try:
            got = len(lf.collect_schema())
        except pl.exceptions.PolarsError as exc:
            raise InputError(path, f"malformed nvprof trace (line {t.lineno}): {str(exc).splitlines()[0]}") from None
        if got != width:
            raise InputError(path, f"malformed nvprof trace (line {t.lineno}): rows have {got} cells where the header has {width}")
    else:
        lf = pl.LazyFrame(schema={f"c{i}": pl.Utf8 for i in range(width)})
    fields: dict[str, tuple[str, str]] = {}
    for i, h in enumerate(t.header):
        f = _TRACE_FIELDS.get(_key(h))
        if f and f not in fields:
            fields[f] = (f"c{i}", (t.units[i] if t.units else ""))
    return lf, fields


def _collect(t: _Table, path: Path, lf: pl.LazyFrame, exprs: list[pl.Expr]) -> pl.DataFrame:
    """`exprs` over the trace's text (`_trace_frame`), read in batches, with the table's checks.
    Takes the table's lines (`t.lines` is empty afterwards: the frame holds what they said)."""
    width = len(t.header)
    name_i = next((i for i, h in enumerate(t.header) if _key(h) == "name"), None)
    # polars fills a short row with nulls; nvprof writes every cell up to Name on every row, so a
    # row without a Name is a short one (the csv module would check each row, 3x slower)
    flag = [pl.col(f"c{name_i}").is_null().alias("\0short")] if name_i is not None else []
    try:
        # no projection pushdown: it parses only the fields a query uses, and a row with more
        # fields than the header would then load without a word
        df = lf.select(*exprs, *flag).collect(engine="streaming", optimizations=pl.QueryOptFlags(projection_pushdown=False))
    except pl.exceptions.PolarsError as exc:
        raise InputError(path, f"malformed nvprof trace (line {t.lineno}): {str(exc).splitlines()[0]}") from None
    last = (csv_cells(t.lines[-1]) or []) if t.lines else []
    short = df["\0short"].arg_true() if flag else pl.Series([], dtype=pl.UInt32)
    if (t.lines and len(last) != width) or short.len():
        j = df.height - 1 if t.lines and len(last) != width else int(short[0])
        n = len(last) if j == df.height - 1 and len(last) != width else len(csv_cells(t.lines[j]) or [])
        what = "the file looks truncated" if j == df.height - 1 else "malformed table"
        if n == width:  # all its cells, the Name one empty (a units row repeated, say)
            raise InputError(path, f"nvprof {t.layout} table (line {t.lineno}): row {j + 1} has an empty Name cell; {what}")
        raise InputError(path, f"nvprof {t.layout} table (line {t.lineno}): row {j + 1} has {n} cells where the header has {width}; {what}")
    t.lines = []
    if t.units is None and df.height and t.layout in ("trace", "api_trace"):
        raise InputError(path, f"nvprof {t.layout.replace('_', ' ')} (line {t.lineno}) has no units row under its header: Start/Duration units unknown")
    return df.drop("\0short") if flag else df


def _num(df_fields, field: str, scale: float = 1.0) -> pl.Expr:
    if field not in df_fields:
        return pl.lit(None, dtype=pl.Float64)
    col, _ = df_fields[field]
    x = pl.col(col).str.strip_chars().cast(pl.Float64, strict=False)
    return x * scale if scale != 1.0 else x


def _str(df_fields, field: str) -> pl.Expr:
    if field not in df_fields:
        return pl.lit(None, dtype=pl.Utf8)
    e = pl.col(df_fields[field][0]).str.strip_chars()
    return pl.when(e == "").then(None).otherwise(e)


def _int(e: pl.Expr) -> pl.Expr:
    # a cell beyond Int64 (damage: ids, dims and sizes are small) is unknown, not a failed cast
    return e.round(0).cast(pl.Int64, strict=False)


def _unit_scale(fields, field: str, kind: str, path: Path, t: _Table) -> float:
    if field not in fields:
        return 1.0
    unit = fields[field][1]
    if not unit:
        return 1.0
    s = _time_scale(unit) if kind == "time" else _mem_scale(unit)
    if s is None:
        raise InputError(path, f"nvprof trace (line {t.lineno}): unknown unit {unit!r} for {field}")
    return s


def _trace(t: _Table, path: Path) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, dict[str, int]]:
    lf, f = _trace_frame(t, path)
    ts = _unit_scale(f, "start", "time", path, t)
    ds = _unit_scale(f, "duration", "time", path, t)
    dev_name, dev_id = _device(pl.col(f["device"][0])) if "device" in f else (pl.lit(None, dtype=pl.Utf8), pl.lit(None, dtype=pl.Int64))
    raw_name = _str(f, "name")
    corr = _int(_num(f, "correlation"))
    if "correlation" not in f:
        # before CUDA 9 the correlation id is appended to the kernel name: `k(float*) [1176]`
        corr = raw_name.str.extract(r"\s\[(\d+)\]$", 1).cast(pl.Int64, strict=False)
        raw_name = raw_name.str.replace(r"\s\[\d+\]$", "")
    base = _collect(t, path, lf, [
        _int(_num(f, "start", ts)).alias("start_ns"),
        _num(f, "duration", ds).alias("duration_ns"),
        raw_name.alias("name"),
        corr.alias("correlation_id"),
        _int(_num(f, "stream")).alias("stream"),
        _int(_num(f, "context")).alias("context_id"),
        dev_name.alias("device_name"),
        dev_id.alias("device_id"),
        *[_int(_num(f, k)).alias(k) for k in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")],
        _int(_num(f, "registers")).alias("registers_per_thread"),
        _int(_num(f, "static_smem", _unit_scale(f, "static_smem", "mem", path, t))).alias("static_shared_mem_bytes"),
        _int(_num(f, "dynamic_smem", _unit_scale(f, "dynamic_smem", "mem", path, t))).alias("dynamic_shared_mem_bytes"),
        _num(f, "bytes", _unit_scale(f, "bytes", "mem", path, t)).round(0).alias("_bytes"),
        _num(f, "throughput", _unit_scale(f, "throughput", "mem", path, t)).alias("_thr"),
        _num(f, "um_value", _unit_scale(f, "um_value", "mem", path, t)).alias("_um"),
        _str(f, "src_kind").alias("src_kind"),
        _str(f, "dst_kind").alias("dst_kind"),
    ]).with_columns(
        pl.when(pl.col("duration_ns").is_not_null()).then(pl.col("start_ns") + _int(pl.col("duration_ns"))).alias("end_ns"),
    )
    name = pl.col("name").fill_null("")
    is_kernel = pl.col("grid_x").is_not_null()
    is_um = name.str.starts_with("[Unified Memory")
    is_um_copy = is_um & name.str.contains(r"(?i)memcpy")
    is_copy = ~is_kernel & (name.str.starts_with("[CUDA mem") | pl.col("_bytes").is_not_null() | is_um_copy)
    is_api = ~is_kernel & ~is_copy & ~is_um & pl.col("device_name").is_null() & (name != "")
    base = base.with_columns(is_kernel.alias("_k"), is_copy.alias("_t"), is_api.alias("_a"), (is_um & ~is_um_copy).alias("_umo"))
    counts = {
        "unified_memory_rows_not_kept": int(base["_umo"].sum()),
        "other_rows_not_kept": int((~base["_k"] & ~base["_t"] & ~base["_a"] & ~base["_umo"]).sum()),
    }
    k = base.filter(pl.col("_k")).with_columns(
        (pl.col("grid_x") * pl.col("grid_y") * pl.col("grid_z")).alias("grid_size"),
        (pl.col("block_x") * pl.col("block_y") * pl.col("block_z")).alias("block_size"),
        (pl.col("static_shared_mem_bytes") + pl.col("dynamic_shared_mem_bytes")).alias("shared_mem_bytes"),
    ).select(
        "start_ns", "end_ns", "duration_ns", "name", "correlation_id", "stream", "context_id", "device_name", "device_id",
        "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "grid_size", "block_size",
        "registers_per_thread", "static_shared_mem_bytes", "dynamic_shared_mem_bytes", "shared_mem_bytes",
    )
    word = pl.col("name").str.extract(r"(?i)memcpy\s+([A-Za-z]+)", 1)
    tr = base.filter(pl.col("_t")).with_columns(
        pl.when(pl.col("name").str.to_lowercase().str.contains("memset")).then(pl.lit("memset")).otherwise(pl.lit("memcpy")).alias("kind"),
        pl.coalesce(word.str.to_lowercase().replace_strict(list(_DIRECTIONS), list(_DIRECTIONS.values()), default=None, return_dtype=pl.Utf8), word).alias("direction"),
        pl.coalesce(pl.col("_bytes"), pl.col("_um").round(0)).alias("bytes"),
    ).with_columns(
        pl.coalesce(pl.col("_thr"), pl.when(pl.col("duration_ns") > 0).then(pl.col("bytes") * 1e9 / pl.col("duration_ns"))).alias("throughput_bytes_per_s"),
    ).select("kind", "direction", "src_kind", "dst_kind", "name", "bytes", "start_ns", "end_ns", "duration_ns", "throughput_bytes_per_s", "device_id", "stream", "correlation_id")
    api = _api_rows(base.filter(pl.col("_a")).select("start_ns", "end_ns", "duration_ns", "name", "correlation_id"))
    return k, tr, api, counts


def _api_rows(r: pl.DataFrame) -> pl.DataFrame:
    from profaudit.names import clean_api_name

    if r.height == 0:
        return r
    r = r.with_columns(map_unique(r["name"], clean_api_name).alias("name"))
    return r.with_columns(pl.when(pl.col("name").str.contains(r"^cu[A-Z]")).then(pl.lit("cuda_driver")).otherwise(pl.lit("cuda_runtime")).alias("kind"))


def _api_trace(t: _Table, path: Path) -> pl.DataFrame:
    lf, f = _trace_frame(t, path)
    ts = _unit_scale(f, "start", "time", path, t)
    ds = _unit_scale(f, "duration", "time", path, t)
    r = _collect(t, path, lf, [
        _int(_num(f, "start", ts)).alias("start_ns"),
        _num(f, "duration", ds).alias("duration_ns"),
        _str(f, "name").alias("name"),
        _int(_num(f, "correlation")).alias("correlation_id"),
    ]).with_columns((pl.col("start_ns") + _int(pl.col("duration_ns"))).alias("end_ns"))
    return _api_rows(r)


# ----------------------------------------------------------------------------------------- summary

_PLAIN_ASCII = r"^[\x20-\x7e]*$"
# summaries column by column (tests turn it off to compare with the row-by-row reader)
FAST_SUMMARY = True
AGGREGATE_ROW_LIMIT = 2_000_000
# metric and event tables are read row by row into one record per statistic (~4 KB of Python
# objects per row: a 50 MB blow-up of 570,000 rows took 2.3 GB). nvprof prints one row per kernel
# name and metric: 250,000 is ~1,500 kernel names x every metric of `--metrics all`
METRIC_ROW_LIMIT = 250_000


def _SAMPLE_SCHEMA() -> dict[str, pl.DataType]:
    from profaudit import schema

    return {k: schema.SAMPLES.polars_schema[k] for k in ("benchmark", "params", "statistic", "duration_ns", "sample_count", "time_source")}


def _summary_frame(t: _Table, path: Path) -> pl.DataFrame | None:
    """The samples `_summary` gives for table `t`, column by column (a summary blown up to millions
    of rows took ~1 CPU-s per MB row by row). None where a cell is not printable ASCII (Python's
    and polars' notions of whitespace and digits differ beyond it): `_summary` reads those. On
    any bad cell `_summary` runs, so that its message (and row number) is the same."""
    rows = _rows(t, path)
    keys = [_key(h) for h in t.header]
    fields = [_SUMMARY_FIELDS.get(k, k) for k in keys]
    units = t.units or [""] * len(fields)
    if not rows:
        return pl.DataFrame()
    cols = {f"c{i}": pl.Series(col, dtype=pl.String) for i, col in enumerate(zip(*rows))}
    df = pl.DataFrame(cols)
    del rows, cols
    if not all(df[c].str.contains(_PLAIN_ASCII).all() for c in df.columns):
        return None
    last = {f: i for i, f in enumerate(fields)}  # dict(zip(fields, row)): a repeated field's last cell
    stats = list(dict.fromkeys(f for f in fields if f in _STATS))  # `values` keys, first-seen order

    def cell(f):
        return pl.col(f"c{last[f]}") if f in last else pl.lit(None, dtype=pl.String)

    section_type = "API calls" if (t.section or "").startswith("api calls") else "GPU activities"
    typ = cell("type").str.strip_chars().fill_null("")
    value_re = _VALUE_RE
    exprs = {
        "typ": pl.when(typ != "").then(typ).forward_fill().fill_null(pl.lit(section_type)),
        "benchmark": cell("name").str.strip_chars().fill_null(""),
        "count": cell("count").str.extract(value_re, 1).cast(pl.Float64),
    }
    for f in stats:
        c = pl.col(f"c{last[f]}").str.strip_chars()
        exprs[f"x_{f}"] = pl.when(c.is_in(["", "-"])).then(None).otherwise(c.str.extract(value_re, 1).cast(pl.Float64))
        exprs[f"u_{f}"] = pl.when(c.is_in(["", "-"])).then(None).otherwise(c.str.extract(value_re, 2).fill_null(pl.lit(units[last[f]])))
        exprs[f"e_{f}"] = c.is_in(["", "-"]).not_()
    df = df.select([e.alias(k) for k, e in exprs.items()])
    bad = pl.lit(False)
    for f in stats:
        scale = map_unique(df[f"u_{f}"], lambda u: _time_scale(u), pl.Float64)
        df = df.with_columns(scale.alias(f"s_{f}"))
        bad = bad | (pl.col(f"e_{f}") & (pl.col(f"x_{f}").is_null() | pl.col(f"s_{f}").is_null()))
    c = pl.col("count")
    if stats:
        bad = bad | (c.is_not_null() & ~(c.is_finite() & (c.round(0) == c) & (c >= -(2.0**63)) & (c < 2.0**63)))
    if df.select(bad.any()).item():
        _summary(t, path, [])  # raises on the first bad row, with its message
        raise AssertionError("nvprof summary: a bad cell _summary accepted")  # pragma: no cover

    def report(typ: str) -> str:
        low = typ.lower()
        if low.startswith("gpu activities"):
            return "gpu"
        if low.startswith("api calls"):
            return json.dumps({"report": "cuda_api_sum"}, sort_keys=True)
        return json.dumps({"report": "nvprof_" + re.sub(r"[^a-z0-9]+", "_", low).strip("_")}, sort_keys=True)

    kind = map_unique(df["typ"], report)
    mem = df["benchmark"].str.starts_with("[CUDA mem") | df["benchmark"].str.starts_with("[Unified Memory")
    params = pl.when(kind != "gpu").then(kind).when(mem).then(pl.lit(json.dumps({"report": "cuda_gpu_mem_time_sum"}))).otherwise(
        pl.lit(json.dumps({"report": "cuda_gpu_kern_sum"})))
    df = df.with_columns(params.alias("params"), pl.when(c.is_finite()).then(c.cast(pl.Int64)).alias("sample_count"))
    if not stats:
        return pl.DataFrame()
    n, m = len(df), len(stats)
    # one sample per row and statistic, row by row in the header's order (as _summary appends them)
    long = pl.concat([df.select("benchmark", "params", "sample_count", pl.lit(_STATS[f]).alias("statistic"),
                                (pl.col(f"x_{f}") * pl.col(f"s_{f}")).alias("duration_ns")) for f in stats], rechunk=True)
    i = pl.int_range(0, n * m, eager=True)
    out = long[(i % m) * n + i // m].with_columns(pl.lit("nvprof").alias("time_source"))
    return out.select([pl.col(k).cast(v) for k, v in _SAMPLE_SCHEMA().items()])


def _summary(t: _Table, path: Path, samples: list[dict]) -> None:
    keys = [_key(h) for h in t.header]
    fields = [_SUMMARY_FIELDS.get(k, k) for k in keys]
    units = t.units or [""] * len(fields)
    # before CUDA 9 a `==PID== API calls:` line heads a table of API calls with no Type column
    section_type = "API calls" if (t.section or "").startswith("api calls") else "GPU activities"
    last_type = None
    for rn, row in enumerate(_rows(t, path), 1):
        cells = dict(zip(fields, row))
        typ = (cells.get("type") or "").strip() or last_type or section_type
        last_type = typ
        name = (cells.get("name") or "").strip()
        count_v, _ = _split_value(cells.get("count"))
        values: dict[str, float | None] = {}
        for i, fld in enumerate(fields):
            if fld not in _STATS:
                continue
            cell = row[i].strip()
            if cell in ("", "-"):
                values[fld] = None
                continue
            x, cell_unit = _split_value(cell)
            unit = cell_unit or units[i]
            scale = _time_scale(unit)
            if x is None or scale is None:
                what = "has no unit (no units row under the header and none in the cell)" if x is not None else "is not a number"
                raise InputError(path, f"nvprof summary (line {t.lineno}), row {rn}: {t.header[i].strip()} {cell[:30]!r} {what}")
            values[fld] = x * scale
        if typ.lower().startswith("gpu activities"):
            report = "cuda_gpu_mem_time_sum" if name.startswith(("[CUDA mem", "[Unified Memory")) else "cuda_gpu_kern_sum"
        elif typ.lower().startswith("api calls"):
            report = "cuda_api_sum"
        else:
            report = "nvprof_" + re.sub(r"[^a-z0-9]+", "_", typ.lower()).strip("_")
        # the report alone, as nsys_stats_csv writes it: a process id here would keep two runs of
        # the same program from matching in `compare`
        p = json.dumps({"report": report}, sort_keys=True)
        for stat, v in values.items():
            samples.append({
                "benchmark": name, "params": p, "statistic": _STATS[stat], "duration_ns": v,
                "sample_count": jsonshape.int64(count_v, f"summary row {name!r}: Calls", path), "time_source": "nvprof",
            })


# ----------------------------------------------------------------------------------------- metrics

def _metrics(t: _Table, path: Path, groups: dict[tuple, dict[str, Any]]) -> None:
    keys = [_key(h) for h in t.header]
    idx = {k: i for i, k in enumerate(keys)}
    name_col = idx.get("metric name", idx.get("event name"))
    for row in _rows(t, path):
        dev, kernel = row[idx["device"]].strip(), row[idx["kernel"]].strip()
        g = groups.setdefault((t.pid, dev, kernel), {"vals": {}, "units": {}, "rows": [], "invocations": None, "pid": t.pid})
        inv, _ = _split_value(row[idx["invocations"]])
        if inv is not None:
            g["invocations"] = jsonshape.int64(inv, f"metrics row for {kernel!r}: Invocations", path)
        metric = row[name_col].strip()
        for stat in ("avg", "min", "max", "total"):
            if stat not in idx:
                continue
            cell = row[idx[stat]].strip()
            x, unit = _split_value(cell)
            mname = metric if stat == "avg" else f"{metric}.{stat}"
            g["rows"].append({
                "metric": mname, "unit": unit, "value": x, "value_str": None if x is not None or cell in ("", "n/a") else cell,
                "value_int": int(cell) if re.fullmatch(r"[-+]?\d{1,18}", cell) else None, "kind": "metric",
                "section": "nvprof " + ("events" if t.layout == "events" else "metrics"),
            })
            if stat == "avg":
                g["vals"][metric] = x
                g["units"][metric] = unit
            elif stat == "total" and t.layout == "events":
                g["vals"][f"{metric}.total"] = x


def _kernel_from_metrics(vals: dict[str, float | None], units: dict[str, str], invocations: int | None) -> dict[str, Any]:
    """flops/bytes columns of one kernel from nvprof metrics (each the mean over its invocations).

    flop_count_sp/dp/hp count add, mul and FMA (FMA = 2) of non-predicated threads, without
    special functions and without tensor-core work. dram_read/write_transactions and
    l2_read/write_transactions are 32-byte sectors (nvprof's own throughput metrics are
    transactions x 32 / time)."""
    row: dict[str, Any] = {}
    parts = []
    counted = []
    for col, metric in (("flops_fp64", "flop_count_dp"), ("flops_fp32", "flop_count_sp"), ("flops_fp16", "flop_count_hp")):
        v = vals.get(metric)
        if v is not None:
            row[col] = v
            counted.append(col[6:])
    if counted:
        row["flops_total"] = sum(row[f"flops_{p}"] for p in counted)
        parts.append(f"nvprof-flop_count:{','.join(counted)}")
    if any(m in vals for m in ("flop_count_sp", "flop_count_dp")) and not vals.get("flop_count_hp") and "flop_count_hp" not in vals:
        parts.append("fp16:not-collected")
    parts.append(f"mean-of-{invocations}-invocations" if invocations else "mean-of-invocations")
    parts.append("tensor-core:not-counted")
    row["flops_method"] = ";".join(parts) if counted else None

    def bytes_of(direct: str, trans: str) -> float | None:
        v = vals.get(direct)
        if v is not None:
            scale = _mem_scale(units.get(direct)) or 1.0
            return v * scale
        t = vals.get(trans)
        return None if t is None else t * 32.0

    rd = bytes_of("dram_read_bytes", "dram_read_transactions")
    wr = bytes_of("dram_write_bytes", "dram_write_transactions")
    row["dram_read_bytes"], row["dram_write_bytes"] = rd, wr
    if rd is not None and wr is not None:
        row["dram_bytes"], row["dram_bytes_method"] = rd + wr, "read+write"
    l2r, l2w = vals.get("l2_read_transactions"), vals.get("l2_write_transactions")
    if l2r is not None and l2w is not None:
        row["l2_bytes"] = (l2r + l2w) * 32.0
    occ = vals.get("achieved_occupancy")
    if occ is not None:
        # nvprof prints achieved occupancy as a ratio (0.85), the schema holds a percentage
        row["achieved_occupancy_pct"] = occ * 100.0
    return row


def _um_summary(t: _Table, path: Path, metrics: list[dict]) -> None:
    keys = [_key(h) for h in t.header]
    label = len(keys) - 1 if keys and keys[-1] in ("", "name") else None
    for i, row in enumerate(_rows(t, path)):
        key = row[label].strip() if label is not None else None
        for j, k in enumerate(keys):
            if j == label or k == "device":
                continue
            cell = row[j].strip()
            x, unit = _split_value(cell)
            scale = _mem_scale(unit)
            metrics.append({
                "metric": f"unified_memory:{t.header[j].strip()}",
                "unit": "byte" if scale is not None else unit, "value": x * scale if (x is not None and scale is not None) else x,
                "value_str": None if x is not None or cell == "" else cell, "instance": i, "instance_key": key,
                "kind": "summary", "section": row[keys.index("device")].strip() if "device" in keys else None,
            })


# ---------------------------------------------------------------------------------------- read

# Address space a read takes, measured on API traces repeated to size (polars and the loader
# imported; VmPeak after the read over VmSize before it): with 2 polars threads 10 MB 1.06 GB,
# 50 MB 1.38, 100 MB 1.72, 200 MB 2.51; with 8 threads 10 MB 1.24, 100 MB 2.13; with 16 threads
# 10 MB 1.30, 100 MB 2.29. With less room than that, polars' allocation-error handler aborts the
# process with nothing on stderr (polars 2.1: rust_oom -> abort, seen in gdb), and once in 19
# tries the read hung instead (killed after 300 s): a 25 MB trace aborted with 0.7-1.2 GB of room
# and loaded with 1.3 GB. s18 fuzz seed 3114, nvprof-csv #977: a trace blown up to 210 MB aborted
# a fuzz worker under its 6 GB cap. 16x the file plus 1.25 GiB covers each figure above.
_SPACE_PER_BYTE = 16
_SPACE_BASE = 5 << 28


def read_nvprof_csv(path: Path, parser, device: str | None = None) -> Any:
    path = Path(path)
    try:
        # before the bytes are read: the measured growth above starts from here (a FIFO or a
        # device reports 0 bytes and is not checked; read_bytes says what is wrong with it)
        check_room(path, path.stat().st_size, "legacy nvprof CSV file", _SPACE_PER_BYTE, _SPACE_BASE)
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError.unreadable(path, exc) from None
    if not raw or raw.isspace():  # (raw.strip() would copy a 200 MB trace to find that out)
        raise InputError(path, "empty file: no nvprof output")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    del raw  # the bytes, the text, its lines and the frames of a large trace must not all coexist
    tables, info = split(text, path)
    if not tables:
        console = _console_kind(text)
        if console:
            raise InputError(path, f"nvprof console (column) output, not CSV ({console}); re-run nvprof with --csv (e.g. `nvprof --csv --log-file out.csv ...`)")
        if any(r.startswith("cpu profiling") for r in info["results"]):
            raise InputError(path, "nvprof CPU profiling result (--cpu-profiling): host call stacks, no GPU table to read")
        if any("no kernels were profiled" in (n or "").lower() for n in info.get("stray", [])):
            raise InputError(path, "nvprof output without a table: no kernels were profiled")
        raise InputError(path, "no nvprof CSV table in this file (no trace, summary or metrics header)")
    del text  # the tables hold their own lines
    # nvprof prints a table only when it has rows: a header with none is a file cut after it
    # (loading it would give an empty profile without a word)
    if not any(t.lines for t in tables):
        raise InputError(path, f"truncated nvprof output: the {tables[0].layout.replace('_', ' ')} table at line {tables[0].lineno} has a header and no rows")
    cut_table = tables[-1] if not tables[-1].lines else None

    kernels: list[pl.DataFrame] = []
    transfers: list[pl.DataFrame] = []
    ranges: list[pl.DataFrame] = []
    sample_frames: list[pl.DataFrame] = []
    metrics: list[dict] = []
    groups: dict[tuple, dict[str, Any]] = {}
    counts: dict[str, int] = {}
    layouts: list[str] = []
    for t in tables:
        layouts.append(t.layout)
        limit = METRIC_ROW_LIMIT if t.layout in ("metrics", "events") else AGGREGATE_ROW_LIMIT
        if t.layout != "trace" and t.layout != "api_trace" and len(t.lines) > limit:
            # nvprof prints one summary / metric / event row per kernel (or API) name and metric:
            # thousands, not millions (traces, one row per launch, have no such limit)
            raise InputError(path, f"nvprof {t.layout.replace('_', ' ')} table (line {t.lineno}) with {len(t.lines):,} rows: more than nvprof prints for one run (at most {limit:,} read)")
        if t.layout == "trace":
            k, tr, api, c = _trace(t, path)
            pid = pl.lit(t.pid, dtype=pl.Int64).alias("process_id")
            kernels.append(k.with_columns(pid))
            transfers.append(tr)
            if api.height:
                ranges.append(api.with_columns(pid))
            for key, v in c.items():
                counts[key] = counts.get(key, 0) + v
        elif t.layout == "api_trace":
            ranges.append(_api_trace(t, path).with_columns(pl.lit(t.pid, dtype=pl.Int64).alias("process_id")))
        elif t.layout == "summary":
            frame = _summary_frame(t, path) if FAST_SUMMARY else None
            if frame is None:
                recs: list[dict] = []
                _summary(t, path, recs)
                frame = pl.DataFrame(recs, schema=_SAMPLE_SCHEMA(), strict=False) if recs else pl.DataFrame()
            if frame.height:
                sample_frames.append(frame)
        elif t.layout in ("metrics", "events"):
            _metrics(t, path, groups)
        elif t.layout == "um_summary":
            _um_summary(t, path, metrics)

    from profaudit import schema
    from profaudit.names import short_name

    tables_out: dict[str, pl.DataFrame] = {}
    k = pl.concat(kernels, how="diagonal_relaxed") if kernels else None
    metric_kernels = None
    if groups:
        recs = []
        for (pid, dev, kname), g in groups.items():
            m = re.match(r"^(.*?)\s*\((\d+)\)\s*$", dev)
            rec = {"name": kname, "device_name": m.group(1) if m else (dev or None), "device_id": int(m.group(2)) if m else None,
                   "process_id": pid, "category": "nvprof-metrics-avg"}
            rec.update(_kernel_from_metrics(g["vals"], g["units"], g["invocations"]))
            recs.append(rec)
        metric_kernels = schema.from_records("kernels", recs).drop("profile_id")
    if k is not None and k.height:
        k = k.sort("start_ns", nulls_last=True)
    if metric_kernels is not None:
        k = pl.concat([k, metric_kernels], how="diagonal_relaxed") if k is not None and k.height else metric_kernels
    if k is not None and k.height:
        k = k.with_columns(
            pl.int_range(pl.len(), dtype=pl.Int64).alias("kernel_id"),
            map_unique(k["name"], short_name).alias("short_name"),
            pl.lit("nvprof").alias("source"),
        )
        tables_out["kernels"] = k
    if groups and k is not None:
        # metric rows hang off the metric kernels, which follow the trace kernels in the table
        offset = k.height - len(groups)
        for n, g in enumerate(groups.values()):
            kid = offset + n
            metrics.extend({**r, "kernel_id": kid} for r in g["rows"])
            if g["invocations"] is not None:
                metrics.append({"metric": "invocations", "unit": "", "value": float(g["invocations"]), "value_int": g["invocations"], "kind": "launch", "kernel_id": kid})
    t = pl.concat([x for x in transfers if x.height], how="diagonal_relaxed") if any(x.height for x in transfers) else None
    if t is not None:
        tables_out["transfers"] = t.sort("start_ns", nulls_last=True).with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("transfer_id"))
    r = pl.concat(ranges, how="diagonal_relaxed") if ranges else None
    if r is not None and r.height:
        # nvprof's API trace has no thread column: calls of different threads cannot be nested
        # reliably, so depth and parent stay null
        tables_out["ranges"] = r.sort("start_ns", nulls_last=True).with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("range_id"))
    if sample_frames:
        tables_out["samples"] = schema.conform("samples", pl.concat(sample_frames, how="diagonal_relaxed"))
    if metrics:
        tables_out["metrics"] = schema.from_records("metrics", metrics)

    md: dict[str, Any] = {"tool": "nvprof", "nvprof_tables": layouts}
    procs = info["processes"]
    if procs:
        first = next(iter(procs.values()))
        md["command_line"] = first
        if len(procs) > 1:
            md["nvprof_processes"] = {str(p): c for p, c in procs.items()}
        md["process_id"] = next(iter(procs))
    if info["notes"]:
        md["notes"] = info["notes"][:50]
    md.update({k2: v for k2, v in counts.items() if v})
    if "kernels" in tables_out:
        names = tables_out["kernels"]["device_name"].drop_nulls()
        if names.len():
            md["device_name"] = names.mode().sort()[0]
            md["device_count"] = tables_out["kernels"]["device_id"].drop_nulls().n_unique() or None
    if "device_name" not in md and "metrics" in tables_out:
        # a summary has no device column; its unified-memory table names the device
        devs = tables_out["metrics"]["section"].drop_nulls()
        if devs.len():
            md["device_name"] = re.sub(r"\s*\(\d+\)\s*$", "", devs[0])
    if sample_frames and "kernels" not in tables_out:
        md["empty_reason"] = "nvprof summary: per-kernel statistics are in samples (profaudit summary), no per-launch rows"
    if groups and not kernels:
        md["kernels_note"] = "one kernels row per kernel: metrics averaged over its invocations (nvprof --metrics), no duration"
    apply_device_option(tables_out, md, device)
    if cut_table is not None:
        mark_incomplete(md, f"the last table (line {cut_table.lineno}) has a header and no rows: the file was probably cut there")
    return new_profile(path, parser, tables_out, md)


_CONSOLE_HEADERS = (
    (re.compile(r"^\s*Type\s+Time\(%\)\s+Time\s+Calls\s+Avg"), "summary"),
    (re.compile(r"^\s*Time\(%\)\s+Time\s+Calls\s+Avg\s+Min\s+Max\s+Name"), "summary"),
    (re.compile(r"^\s*Start\s+Duration\s+(?:Grid Size|Name)"), "trace"),
    (re.compile(r"^\s*Invocations\s+(?:Metric|Event) Name"), "metrics"),
    (re.compile(r"^\s*Device\s+\"[^\"]*\"\s*$"), "unified memory"),
)


def _console_kind(text: str) -> str | None:
    for line in text.splitlines()[:2000]:
        for rx, kind in _CONSOLE_HEADERS:
            if rx.match(line):
                return kind
    return None


_SNIFF_HEADERS = re.compile(
    r'^\s*"?(?:Start"?,"?Duration"?,"?(?:Grid X|Name)|(?:Type"?,"?)?Time\(%\)"?,"?Time"?,"?Calls|Device"?,"?Kernel"?,"?Invocations"?,"?(?:Metric|Event) Name)',
    re.MULTILINE,
)
_SNIFF_TOOL = re.compile(r"^==(?:\d+|====)== (?:NVPROF is profiling process|Profiling application:|Profiling result:|Metric result:|Event result:|CPU profiling result)", re.MULTILINE)


class NvprofCsvParser:
    name = "nvprof-csv"
    source = "nvprof"
    suffixes = (".csv", ".log", ".txt")
    description = "legacy nvprof --csv output (--print-gpu-trace, --print-api-trace, summaries, --metrics/--events; --log-file or stderr)"

    def sniff(self, probe: Probe) -> bool:
        if probe.is_dir or b"\x00" in probe.head[:4096]:
            return False
        text = probe.head.decode("utf-8", errors="replace")
        if _SNIFF_TOOL.search(text):
            return True
        for m in _SNIFF_HEADERS.finditer(text):
            end = text.find("\n", m.start())
            if _layout(csv_cells(text[m.start(): end if end >= 0 else None]) or []):
                return True
        return False

    def read(self, path: Path, options: ReadOptions):
        return read_nvprof_csv(Path(path), self, options.device)


PARSER = NvprofCsvParser()
