"""Chrome Trace Event Format: PyTorch profiler (Kineto) traces, the legacy autograd profiler's
export, rocprof chrome traces, XLA trace-viewer JSON and any other valid trace (`.json`,
`.json.gz`, `.pt.trace.json(.gz)`).

How a file is read (memory bounded by the tables, not by the JSON document):

1. `jsonstream.TraceWalker` cuts the `traceEvents` array into chunks of whole events.
2. Each chunk becomes a small typed frame, read against a fixed schema. The fast decoder is the
   native reader (`trace_native`, a small C extension built at install where a compiler exists): it
   returns exactly the frame polars' JSON reader would, in one pass without the GIL, or declines.
   Then polars reads it (it releases the GIL too), fed 256 KiB pieces of the chunk (`PIECE_BYTES`:
   it builds a document tree of its input first, cheaper in small pieces); a chunk neither can read
   (counters with free-form args, unusual value types) goes through orjson and a Python loop
   instead. All produce the same columns.
3. Timestamps become integer nanoseconds exactly. `ts`/`dur` are microseconds; below 2**43 us a
   double lies within 0.49 ns of the `<us>.<3 digits>` decimal Kineto printed, and the conversion
   scales only the exact fractional part (`us_ns_expr`). Chunks holding absolute epoch
   microseconds with fractions (ns-resolution Kineto of 2024) have their `ts` quoted before
   parsing and are converted from the decimal text. `displayTimeUnit` only changes how viewers
   display time and is ignored.
4. Per chunk (on the worker threads) slices are typed, classified and pruned (repeated names as
   categoricals, columns no row of the chunk has dropped); at the end the frames are stacked into
   kernels, transfers, ranges (per-thread nesting, B/E pairs matched as a stack) and counters,
   each output column built once, in table order (the peak is the tables plus the stacked frames,
   not the JSON). Kernels are linked to their launch call through the correlation id (or
   `ac2g`/flow events), and through it to the innermost framework op and user annotation around
   the call.

Time base: `start_ns` is `baseTimeNanoseconds + ts` when the trace records a base (Kineto since
2023 writes `ts` relative to it), else `ts` as written (Unix-epoch microseconds in older Kineto,
profile-relative in XLA). `metadata.extra["time_origin"]` says which.
"""

from __future__ import annotations

import functools
import gc
import io
import math
import os
import re
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation, Overflow
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import polars as pl

from profaudit.errors import InputError
from profaudit.names import clean_api_name, demangle, short_name
from profaudit.parsers.base import Probe, ReadOptions, map_unique, new_profile
from profaudit.parsers import trace_native
from profaudit.parsers.jsonstream import TraceWalker, merge_chunks, split_events
from profaudit.parsers.textsafe import check_orjson_room

I64, F64, STR = pl.Int64, pl.Float64, pl.String

# ---------------------------------------------------------------------------------------------
# sniffing

_TRACE_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:')
_ARRAY_OF_EVENTS = re.compile(rb'^\s*\[\s*\{[^{}]{0,2000}?"ph"\s*:\s*"[A-Za-z]"')
_KINETO_HEADER = re.compile(rb'^\s*\{\s*"(?:schemaVersion|deviceProperties|distributedInfo)"\s*:')


def sniff_trace(head: bytes) -> bool:
    """A JSON object with a `traceEvents` array, or a JSON array whose first element is an event
    (an object with a one-letter `ph`). Other JSON documents (benchmark logs, Proton's .hatchet
    array, PyTorch ExecutionTrace, xprof tool data) have neither."""
    h = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if h.startswith(b"{"):
        if _TRACE_EVENTS_KEY.search(h):
            return True
        # a Kineto header so long (INFO logs, many devices) that traceEvents lies past the probe
        return bool(_KINETO_HEADER.match(h)) and len(head) >= 60000
    if h.startswith(b"["):
        return bool(_ARRAY_OF_EVENTS.match(h))
    return False


_ET_HINT = re.compile(rb'^\s*\{\s*"schema"\s*:\s*"[0-9.]+[^"]*"\s*,\s*"pid"\s*:.*?"nodes"\s*:', re.S)


def diagnose(head: bytes) -> str | None:
    """Why a JSON file that this parser does not claim is not a trace, when that is recognisable."""
    if _ET_HINT.match(head.lstrip(b"\xef\xbb\xbf")):
        return ("a PyTorch ExecutionTrace (operator graph without timings), not a profiler timeline: "
                "load the Kineto trace written by torch.profiler (*.pt.trace.json) instead")
    return None


# ---------------------------------------------------------------------------------------------
# per-chunk decoding

# args keys read from events, and the column each lands in.
_ARG_COLUMNS: dict[str, str] = {
    "External id": "ext",
    "external id": "ext_old",
    "correlation": "corr",
    "correlation_id": "corr_xla",
    "device": "device",
    "device_id": "device_xla",
    "context": "context",
    "stream": "stream",
    "registers per thread": "regs",
    "shared memory": "smem",
    "est. achieved occupancy %": "occ",
    "bytes": "bytes",
    "kind": "a_kind",
    "name": "a_name",
    "sort_index": "a_sort",
    "hlo_op": "hlo_op",
    "hlo_module": "hlo_module",
    "kernel_details": "kernel_details",
    "memcpy_details": "memcpy_details",
    # MTIA DMA requests (mtia_ccp_events)
    "size": "a_size",
    "direction": "a_dir",
    # rocprof (v1/v2) chrome traces: every value is a string
    "KernelName": "r_kname",
    "BeginNs": "r_begin",
    "EndNs": "r_end",
    "gpu-id": "r_gpu",
    "queue-id": "r_queue",
    "grd": "r_grd",
    "wgr": "r_wgr",
    "lds": "r_lds",
    "vgpr": "r_vgpr",
    "arch_vgpr": "r_vgpr2",
    "sgpr": "r_sgpr",
    "pid": "r_pid",
    "tid": "r_tid",
    # profile_memory instant events ("[memory]")
    "Total Allocated": "m_alloc",
    "Total Reserved": "m_reserved",
    "Device Id": "m_device",
    "Device Type": "m_devtype",
}
_LIST_ARGS = {"grid": "grid", "block": "block"}
_ARG_NAME = {**_ARG_COLUMNS, **_LIST_ARGS}

# Typed args per writer. Reading numbers as text makes polars format every one of them, which
# doubles the decode cost, so the first try declares the types each writer uses; a chunk that
# does not fit (ROCm's `"stream": "0x0"` on HIP calls) is read again with every arg as text
# (then cast), and from then on the whole file is.
_KINETO_TYPED = {
    "External id": I64, "external id": I64, "correlation": I64, "device": I64, "context": I64, "stream": I64,
    "registers per thread": I64, "shared memory": I64, "est. achieved occupancy %": F64, "bytes": F64,
    "kind": STR, "name": STR, "sort_index": I64,
    "Total Allocated": F64, "Total Reserved": F64, "Device Id": I64, "Device Type": I64,
    "grid": pl.List(I64), "block": pl.List(I64),
    # text: ROCm's HIP calls carry "size" as a string ("2560"), MTIA's DMA requests as a number
    "size": STR, "direction": STR,
}
_XLA_TYPED = {k: STR for k in ("correlation_id", "device_id", "hlo_op", "hlo_module", "kernel_details", "memcpy_details", "name")}
_XLA_TYPED["sort_index"] = I64


def _schema(args: dict[str, pl.DataType], ts=F64) -> dict[str, pl.DataType]:
    return {"ph": STR, "cat": STR, "name": STR, "pid": STR, "tid": STR, "ts": ts, "dur": F64, "id": STR, "bp": STR, "args": pl.Struct(args)}


_TEXT_ARGS = {**{k: STR for k in _ARG_COLUMNS}, **{k: pl.List(I64) for k in _LIST_ARGS}}
SCHEMAS: dict[str, dict[str, pl.DataType]] = {
    "kineto": _schema(_KINETO_TYPED),
    "xla": _schema(_XLA_TYPED),
    "generic": _schema({**_XLA_TYPED, **_KINETO_TYPED}),
    "text": _schema(_TEXT_ARGS),
}
# the args struct's fields renamed to their column names, per schema
_RENAMES = {k: [_ARG_NAME.get(f, f) for f in v["args"].to_schema()] for k, v in SCHEMAS.items()}

# Columns of the per-chunk slice frame after shaping (X, B, E events); absent ones are nulls.
_INT_ARGS = ("ext", "ext_old", "corr", "corr_xla", "device", "device_xla", "context", "stream", "regs", "smem",
             "r_begin", "r_end", "r_gpu", "r_queue", "r_grd", "r_wgr", "r_lds", "r_vgpr", "r_vgpr2", "r_sgpr", "r_pid", "r_tid")
_FLOAT_ARGS = ("occ", "bytes", "a_size")
_STR_ARGS = ("a_kind", "a_dir", "hlo_op", "hlo_module", "kernel_details", "memcpy_details", "r_kname")
_DIM_COLS = ("grid0", "grid1", "grid2", "block0", "block1", "block2")

# Python's json writes NaN and Infinity as bare tokens, which are not JSON: read as null (only
# after a parse failed, and only in value position)
_NAN = re.compile(rb"(?<=[:\[,])(\s*)(?:NaN|-?Infinity)(?=\s*[,\]}])")


def loads_lenient(text: bytes):
    """orjson.loads, retried with bare NaN/Infinity values read as null."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        fixed = _NAN.sub(rb"\1null", text)
        if fixed == text:
            raise
        return orjson.loads(fixed)


_NEEDS_TEXT_TS = re.compile(rb'"ts"\s*:\s*-?\d{13,}\.\d*[1-9]')
_QUOTE_TS = re.compile(rb'("ts"\s*:\s*)(-?[0-9][0-9.eE+\-]*)')

_TWO43 = float(2**43)
_DEC = r"^([+-]?)(\d*)(?:\.(\d*))?$"


def us_ns_expr(x: pl.Expr) -> pl.Expr:
    """Microseconds (Float64) to integer nanoseconds, nearest (half away from zero).

    Exact for the decimal a writer printed with up to three decimals below 2**43 us (102 days):
    there the double lies within 0.49 ns of that decimal, `floor` and `x - floor(x)` are exact,
    and only the fraction is scaled and rounded. Larger integral values are exact too; larger
    fractional ones are rounded from the double (see `inexact_expr`)."""
    fl = x.floor()
    ns = fl.cast(I64, strict=False) * 1000 + ((x - fl) * 1000).round(0, mode="half_away_from_zero").cast(I64, strict=False)
    # beyond the 64-bit nanosecond range (292 years: damage, 1e308) the time is unknown, not a failed cast
    return pl.when(x.abs() < 9.2e15).then(ns)


def inexact_expr(x: pl.Expr) -> pl.Expr:
    return (x.abs() >= _TWO43) & (x != x.floor())


def us_to_ns(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`us_ns_expr` for a numpy array: (nanoseconds, inexact flags)."""
    s = pl.Series("x", np.asarray(x, dtype=np.float64))
    out = pl.select(us_ns_expr(pl.lit(s)).alias("ns"), inexact_expr(pl.lit(s)).alias("bad"))
    return out["ns"].to_numpy(), out["bad"].to_numpy()


def text_ns_expr(t: pl.Expr) -> pl.Expr:
    """Decimal microsecond text ("1712195495519689.047", "15", "-0.5") to integer ns, exactly
    (half away from zero beyond the third decimal). Other forms (exponents) give null; see
    `text_us_to_ns`."""
    t = t.str.strip_chars()
    sign = t.str.extract(_DEC, 1)
    ip = t.str.extract(_DEC, 2)
    fp = t.str.extract(_DEC, 3).fill_null("").str.pad_end(4, "0")
    ok = ip.is_not_null() & ((ip.str.len_chars() + fp.str.len_chars()) > 0) & (ip.str.len_chars() <= 15)
    whole = (
        pl.when(ip.str.len_chars() > 0).then(ip).otherwise(pl.lit("0")).cast(I64, strict=False) * 1000
        + fp.str.slice(0, 3).cast(I64, strict=False)
        + (fp.str.slice(3, 1).cast(I64, strict=False) >= 5).cast(I64)
    )
    return pl.when(ok).then(pl.when(sign == "-").then(-whole).otherwise(whole))


def text_us_to_ns(s: pl.Series) -> pl.Series:
    """`text_ns_expr` over a Series, with exponent forms ("1.5e3") read through Decimal.

    Kineto's own form (digits, a point, up to three digits) is converted first, without regular
    expressions; only the other rows take the general rules. (ns-resolution Kineto writes 16-digit
    epoch microseconds, which the general rules leave to Decimal, one row at a time: that was
    most of the CPU time of loading such a trace.)"""
    ns = _plain_text_ns(s)
    todo = (ns.is_null() & s.is_not_null()).arg_true()
    if not len(todo):
        return ns
    sub = s.gather(todo)
    sub_ns = _fix_odd_text(sub, pl.select(text_ns_expr(pl.lit(sub)).alias(s.name)).to_series())
    return ns.scatter(todo, sub_ns)


_SIGNS = ["+", "-"]


def _plain_text_ns(s: pl.Series) -> pl.Series:
    """Nanoseconds of `[-]<digits>[.<1 to 3 digits>]` microsecond text below 2**63 ns, exactly;
    null for any other text (the caller applies the general rules there)."""
    parts = pl.col("t").str.splitn(".", 2)  # (the second part keeps any further point)
    ip, fp = parts.struct.field("field_0"), parts.struct.field("field_1")
    mag = ip.str.strip_prefix("-")
    ip_n = mag.str.to_integer(base=10, strict=False)
    fp_n = fp.fill_null("0").str.pad_end(3, "0").str.to_integer(base=10, strict=False)
    # (to_integer takes a sign of its own: neither part may start with one here)
    ok = ((mag.str.len_bytes() <= 16) & ~mag.str.slice(0, 1).is_in(_SIGNS) & (ip_n < 9_223_372_036_854_775)
          & (fp.is_null() | (fp.str.len_bytes().is_between(1, 3) & ~fp.str.slice(0, 1).is_in(_SIGNS))))
    whole = ip_n * 1000 + fp_n
    out = pl.when(ok).then(pl.when(ip.str.starts_with("-")).then(-whole).otherwise(whole))
    return pl.DataFrame({"t": s}).select(out.alias(s.name)).to_series()


def _fix_odd_text(text: pl.Series, ns: pl.Series) -> pl.Series:
    odd = (ns.is_null() & text.is_not_null()).fill_null(False)
    if not odd.any():
        return ns
    vals = ns.to_list()
    for i in np.flatnonzero(odd.to_numpy()):
        vals[i] = _decimal_ns(text[int(i)].strip())
    return pl.Series(ns.name, vals, dtype=I64)


def _decimal_ns(text: str | None) -> int | None:
    if text is None:
        return None
    beyond = NotAnEvent(f"a timestamp or duration of {text[:30]!r} us is beyond the 64-bit nanosecond range")
    try:
        d = Decimal(text) * 1000
    except Overflow:  # past the context's exponent (a number of a million digits): far beyond the range too
        raise beyond from None
    except InvalidOperation:
        return None
    if not d.is_finite():
        return None
    ns = int(d.to_integral_value(rounding="ROUND_HALF_UP"))
    if not -(2**63) <= ns < 2**63:
        raise beyond
    return ns


class BadChunk(Exception):
    """A chunk that is not valid JSON (possibly a cut that fell inside a nested structure)."""

    def __init__(self, message: str, pos: int | None):
        super().__init__(message)
        self.pos = pos


class NotAnEvent(Exception):
    """The events array holds something other than an event object."""


class Chunk:
    """The typed frames one chunk of events turns into."""

    __slots__ = ("slices", "ranges", "devices", "flows", "meta", "mem", "cevents", "cvalues", "metrics", "n_events", "phases",
                 "missing", "inexact", "cats", "t_min")

    def __init__(self):
        self.slices: pl.DataFrame | None = None  # X, B, E events, all columns (classified later)
        self.ranges: pl.DataFrame | None = None  # X, B, E events classified as ranges (split mode)
        self.devices: pl.DataFrame | None = None  # kernels, copies, memsets (split mode)
        self.cats: set[str] = set()
        self.t_min: int | None = None  # earliest raw ts of any slice (the profiler span included)
        self.flows: pl.DataFrame | None = None  # s, t, f events
        self.meta: pl.DataFrame | None = None  # M events
        self.mem: pl.DataFrame | None = None  # "[memory]" instants (profile_memory)
        self.cevents: pl.DataFrame | None = None  # C events: seq, name, pid, ts_ns
        self.cvalues: pl.DataFrame | None = None  # their series: seq, key, value
        self.metrics: pl.DataFrame | None = None  # cuda_profiler_range counters: seq, metric, value
        self.n_events = 0
        self.phases: dict[str, int] = {}
        self.missing: list[tuple[int, str, str]] = []  # (seq, ph, field) examples; seq -1 carries a count
        self.inexact = 0


# polars' JSON reader builds a document tree of the whole input first: about 30 times the text
# for a 4 MB chunk, and slower per byte than for small inputs that stay in the CPU caches. Chunks
# are read in pieces of this size (measured: 250 MB/s and ~20 MB of working set per thread at
# 256 KiB, against 130 MB/s and ~130 MB at 4 MB) and shaped together.
PIECE_BYTES = 256 << 10


def _read_json(chunk: bytes, schema: dict[str, pl.DataType], piece: int | None, quote_ts: bool = False,
               native: bool = True) -> pl.DataFrame:
    """The events of `chunk` as a frame of `schema`, read `piece` bytes at a time (None: whole).

    With `native`, the native reader (trace_native) goes first, on the whole chunk: it returns
    the frame polars would, without polars' document tree (so without pieces), or declines; then
    polars reads."""
    if native and trace_native.available():
        try:
            return trace_native.read_events(_QUOTE_TS.sub(rb'\1"\2"', chunk) if quote_ts else chunk, schema)
        except trace_native.Unsupported:
            pass
    frames = []
    for text in (split_events(chunk, piece) if piece else (chunk,)):
        if quote_ts:
            text = _QUOTE_TS.sub(rb'\1"\2"', text)
        frames.append(pl.read_json(io.BytesIO(text), schema=schema))
    return frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical", rechunk=False)


def decode_chunk(chunk: bytes, index: int, schema: str = "generic", split: bool = False,
                 pieces: bool = True, text_ts: bool = False) -> tuple[Chunk, bool, bool, bool]:
    """Decode one chunk (a JSON array of events). Returns the frames, whether the typed schema
    `schema` failed (the caller then stops trying it), whether reading in pieces worked (or
    was not tried; the caller stops trying that when it did not), and whether `ts` was read as
    text (absolute epoch microseconds with fractions). With `text_ts` (an earlier chunk of the
    file needed that) such a chunk is read that way at once instead of as numbers first.
    Raises BadChunk on invalid JSON."""
    names = (schema, "text") if schema != "text" else ("text",)
    # in pieces first; a piece cut inside a nested structure fails, and the chunk is read whole
    attempts = [(name, None) for name in names]
    if pieces and len(chunk) >= 2 * PIECE_BYTES:
        attempts = [(name, PIECE_BYTES) for name in names] + attempts
    # ns-resolution Kineto writes every timestamp so: reading each chunk as numbers first and
    # again as text decoded those files twice
    quote = text_ts and _NEEDS_TEXT_TS.search(chunk) is not None
    failed = schema != "text"
    pieces_failed = False
    native_tried = set()  # the native reader reads the whole chunk: once per schema is enough
    for name, piece in attempts:
        try:
            native = name not in native_tried
            native_tried.add(name)
            raw = _read_json(chunk, {**SCHEMAS[name], "ts": STR} if quote else SCHEMAS[name], piece, quote_ts=quote, native=native)
        except Exception:
            if quote:  # whatever the quoting did not fit: the chunk as any other, numbers first
                return decode_chunk(chunk, index, schema, split, pieces, False)
            pieces_failed = pieces_failed or piece is not None
            continue
        failed = name != schema
        pieces_ok = piece is not None or not pieces_failed
        flags = raw.select(_Q.text_ts_flags if quote else _Q.flags).row(0)
        if flags[0] or flags[1]:
            break  # counters and range-profiler metrics carry free-form args: the Python loop reads them
        if quote and not flags[2]:  # no time beyond 2**43 us: numbers are exact, read as any chunk
            return decode_chunk(chunk, index, schema, split, pieces, False)
        if not quote and flags[2] and _NEEDS_TEXT_TS.search(chunk):
            # absolute epoch microseconds with fractions: doubles cannot hold them, read the text
            try:
                raw = _read_json(chunk, {**SCHEMAS[name], "ts": STR}, piece, quote_ts=True)
            except Exception:
                break
            quote = True
        raw = raw.with_columns(pl.col("args").struct.rename_fields(_RENAMES[name])).unnest("args")
        return _own_memory(_shape(raw, index, Chunk(), split), raw.height), failed, pieces_ok, quote
    if _NEEDS_TEXT_TS.search(chunk):
        chunk = _QUOTE_TS.sub(rb'\1"\2"', chunk)
    try:
        events = loads_lenient(chunk)
    except orjson.JSONDecodeError as exc:
        raise BadChunk(str(exc.args[0]) if exc.args else str(exc), getattr(exc, "pos", None)) from None
    return decode_events(events, index, split), failed, True, False


# A frame cut out of a chunk can keep the whole chunk's columns alive until the tables are built:
# a filter that keeps one run of rows (a chunk's metadata events) is a slice of the chunk's
# buffers, a filtered or gathered string column shares the buffers of its long strings (over 12
# bytes), and polars frees the buffers it imported with one Arrow array (a column; the args struct
# with all of its fields) only together. On a 300 MB Kineto trace that raised the peak RSS by a
# quarter (the native reader's columns span a whole chunk; polars' own reader's a 256 KiB piece).
_CHUNK_FRAMES = ("slices", "ranges", "devices", "flows", "meta", "mem", "cevents")


def _own_memory(out: Chunk, rows: int) -> Chunk:
    """Copy the chunk's small frames (under half of its `rows`) into memory of their own, so that
    the chunk's columns are freed with the chunk. (A frame with most of the rows needs most of the
    columns anyway: copying it would cost time, not save memory.)"""
    for k in _CHUNK_FRAMES:
        f = getattr(out, k)
        if f is None or not f.height or 2 * f.height > rows:
            continue
        # a gather writes new buffers, but string views keep pointing into the old ones: strings
        # are written anew by a concatenation (eager calls: a query per frame cost 3 times more)
        g = f[np.arange(f.height)]
        for i, (c, t) in enumerate(g.schema.items()):
            if t == STR:
                g.replace_column(i, g.get_column(c) + "")
        setattr(out, k, g)
    return out


def decode_events(events: list, index: int, split: bool = False) -> Chunk:
    """Decode parsed events (dicts) with a Python loop: handles every value type, counters
    (`C` events, free-form args) and CUPTI range-profiler metrics."""
    if not isinstance(events, list):
        raise NotAnEvent(f"traceEvents is a JSON {type(events).__name__}, not an array of trace events")
    out = Chunk()
    n = len(events)
    cols: dict[str, list] = {k: [None] * n for k in ("ph", "cat", "name", "pid", "tid", "ts", "ts_txt", "dur", "dur_txt", "id", "bp")}
    arg_cols: dict[str, list] = {}
    counters: list[tuple] = []
    metrics: list[tuple] = []
    ph_c, cat_c, name_c, pid_c, tid_c = cols["ph"], cols["cat"], cols["name"], cols["pid"], cols["tid"]
    ts_c, tst_c, dur_c, durt_c, id_c, bp_c = cols["ts"], cols["ts_txt"], cols["dur"], cols["dur_txt"], cols["id"], cols["bp"]
    argmap = _ARG_COLUMNS
    seq0 = index << 32
    for i, e in enumerate(events):
        if type(e) is not dict:
            raise NotAnEvent(f"the traceEvents array holds a JSON {type(e).__name__ if e is not None else 'null'} "
                             f"where an event object belongs ({str(e)[:40]!r})")
        g = e.get
        ph = g("ph")
        ph_c[i] = ph if isinstance(ph, str) else None
        v = g("cat")
        cat_c[i] = v if isinstance(v, str) else (None if v is None else str(v))
        v = g("name")
        name_c[i] = v if isinstance(v, str) else (None if v is None else str(v))
        v = g("pid")
        pid_c[i] = v if isinstance(v, str) else (None if v is None else str(v))
        v = g("tid")
        tid_c[i] = v if isinstance(v, str) else (None if v is None else str(v))
        v = g("ts")
        if isinstance(v, str):
            tst_c[i] = v
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            ts_c[i] = float(v)
        v = g("dur")
        if isinstance(v, str):
            durt_c[i] = v
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            dur_c[i] = float(v)
        v = g("id")
        if v is not None:
            id_c[i] = v if isinstance(v, str) else str(v)
        v = g("bp")
        if isinstance(v, str):
            bp_c[i] = v
        a = g("args")
        if a and type(a) is dict:
            if ph == "C":
                for k, val in a.items():
                    if isinstance(val, (int, float, str)) and not isinstance(val, bool):
                        try:  # text counters are common; an integer beyond float range is damage
                            counters.append((seq0 | i, k, float(val)))
                        except (ValueError, OverflowError):
                            pass
                continue
            if cat_c[i] == "cuda_profiler_range":
                for k, val in a.items():
                    if isinstance(val, (int, float)) and not isinstance(val, bool) and abs(val) < 1e308:
                        metrics.append((seq0 | i, k, float(val)))
                continue
            for k, val in a.items():
                col = argmap.get(k)
                if col is not None:
                    if isinstance(val, (str, int, float)):
                        lst = arg_cols.get(col)
                        if lst is None:
                            lst = arg_cols[col] = [None] * n
                        lst[i] = val if isinstance(val, str) else ("true" if val is True else "false" if val is False else repr(val) if isinstance(val, float) else str(val))
                elif k in _LIST_ARGS and type(val) is list:
                    col = _LIST_ARGS[k]
                    for j in range(min(3, len(val))):
                        x = val[j]
                        if type(x) is int and -(2**63) <= x < 2**63:
                            lst = arg_cols.get(col + str(j))
                            if lst is None:
                                lst = arg_cols[col + str(j)] = [None] * n
                            lst[i] = x
    data = {
        "ph": pl.Series("ph", ph_c, dtype=STR),
        "cat": pl.Series("cat", cat_c, dtype=STR),
        "name": pl.Series("name", name_c, dtype=STR),
        "pid": pl.Series("pid", pid_c, dtype=STR),
        "tid": pl.Series("tid", tid_c, dtype=STR),
        "ts": pl.Series("ts", ts_c, dtype=F64),
        "ts_txt": pl.Series("ts_txt", tst_c, dtype=STR),
        "dur": pl.Series("dur", dur_c, dtype=F64),
        "dur_txt": pl.Series("dur_txt", durt_c, dtype=STR),
        "id": pl.Series("id", id_c, dtype=STR),
        "bp": pl.Series("bp", bp_c, dtype=STR),
    }
    for col, lst in arg_cols.items():
        data[col] = pl.Series(col, lst, dtype=I64 if col[:-1] in _LIST_ARGS.values() else STR)
    raw = pl.DataFrame(data)
    _own_memory(_shape(raw, index, out, split), n)
    if counters:
        out.cvalues = pl.DataFrame(counters, schema={"seq": I64, "key": STR, "value": F64}, orient="row")
    if metrics:
        out.metrics = pl.DataFrame(metrics, schema={"seq": I64, "metric": STR, "value": F64}, orient="row")
    return out


# ---------------------------------------------------------------------------------------------
# classification by category (Kineto and other traces that say what an event is in `cat`)

_KINETO_CATS = {"cpu_op", "operator", "kernel", "cuda_runtime", "runtime", "user_annotation", "gpu_user_annotation",
                "gpu_memcpy", "gpu_memset", "python_function", "cuda_driver", "mtia_runtime", "mtia_ccp_events"}
_KERNEL_CATS = ["kernel", "mtia_ccp_events"]
_MTIA_SYNC_NAMES = ["event_record", "event_wait"]
_MEMCPY_CATS = ["gpu_memcpy", "memcpy"]
_MEMSET_CATS = ["gpu_memset", "memset"]
_RANGE_KIND = {
    "cpu_op": "cpu_op", "operator": "cpu_op",
    "user_annotation": "user_annotation",
    "gpu_user_annotation": "gpu_user_annotation",
    "python_function": "python_function", "python": "python_function",
    "cuda_runtime": "cuda_runtime", "runtime": "cuda_runtime",
    "cuda_driver": "cuda_driver", "driver": "cuda_driver",
}
_DEVICE_CLASSES = ["kernel", "memcpy", "memset", "prof"]
# ranges that live on a device timeline (Kineto puts them at pid = device, tid = stream)
_DEVICE_RANGE_KINDS = ["gpu_user_annotation", "cuda_sync", "xpu_sync", "mtia_sync", "device", "xla_module", "xla_op", "step_device"]
# host API calls whose correlation id is the one the device activity carries
_LAUNCH_KINDS = ["cuda_runtime", "cuda_driver", "mtia_runtime", "xpu_runtime", "xpu_driver", "privateuse1_runtime",
                 "privateuse1_driver", "hsa_api", "hip_api"]
# what kernels.nvtx_range reports: the innermost of these enclosing the launch (as timeline.py)
_ANNOTATION_KINDS = {"user_annotation", "nvtx_push_pop"}


@functools.cache  # (the expressions are immutable; building them cost more than a small chunk's shaping)
def _cat_rules() -> tuple[pl.Expr, pl.Expr]:
    """(class, range kind) from `cat`: kernel / memcpy / memset / prof (CUPTI range profiler) /
    skip (the profiler's own span) / range. Unknown categories keep their name as the kind."""
    cat = pl.col("cat").str.to_lowercase()
    # MTIA puts everything its command processor does in one category: DMA requests are copies
    # and event records/waits are synchronisation, not executions
    mtia = cat == "mtia_ccp_events"
    mtia_sync = mtia & pl.col("name").is_in(_MTIA_SYNC_NAMES)
    cls = (
        pl.when(mtia & (pl.col("name") == "dma_request")).then(pl.lit("memcpy"))
        .when(mtia_sync).then(pl.lit("range"))
        .when(cat.is_in(_KERNEL_CATS)).then(pl.lit("kernel"))
        .when(cat.is_in(_MEMCPY_CATS)).then(pl.lit("memcpy"))
        .when(cat.is_in(_MEMSET_CATS)).then(pl.lit("memset"))
        .when(cat == "cuda_profiler_range").then(pl.lit("prof"))
        .when(cat == "trace").then(pl.lit("skip"))
        .otherwise(pl.lit("range"))
    )
    kind = pl.coalesce(pl.when(mtia_sync).then(pl.lit("mtia_sync")).otherwise(cat.replace_strict(_RANGE_KIND, default=cat, return_dtype=STR)),
                       pl.lit("host"))
    return cls, kind


# category -> (class, kind, is MTIA's), shared by the chunks (and files) that follow: the same
# handful of categories comes back in every chunk. Bounded, for files with free-form categories.
_CAT_MEMO: dict[str | None, tuple[str | None, str | None, bool]] = {}
_CAT_MEMO_MAX = 4096


def _cat_classes(cats: list) -> dict:
    """`_cat_rules` of each category in `cats` (None included), from the memo where known."""
    out = {c: _CAT_MEMO.get(c) for c in cats}
    new = [c for c, v in out.items() if v is None]
    if new:
        cls, kind = _cat_rules()
        t = pl.DataFrame({"cat": pl.Series("cat", new, dtype=STR), "name": pl.Series("name", [None] * len(new), dtype=STR)})
        rows = t.select(cls.alias("cls"), kind.alias("kind"), (pl.col("cat").str.to_lowercase() == "mtia_ccp_events").alias("mtia")).rows()
        out.update(zip(new, rows))
        if len(_CAT_MEMO) + len(new) > _CAT_MEMO_MAX:
            _CAT_MEMO.clear()
        _CAT_MEMO.update(zip(new, rows))
    return out


def _chunk_classes(raw: pl.DataFrame) -> tuple[dict, bool]:
    """`_cat_rules` of each distinct category of a chunk ({cat: (class, kind, is MTIA's)}, None
    included), and whether the rows need the per-row rules: MTIA's category also looks at the
    event name. Otherwise a row's class and kind are functions of its category alone, and a
    chunk holds tens of thousands of events but a handful of categories (`_class_masks`)."""
    table = _cat_classes(raw.get_column("cat").unique().to_list())
    return table, any(v[2] for v in table.values())


def _cat_in(keys: list, null: bool) -> pl.Expr:
    """`cat` is one of `keys` (`null` where it is null): equality tests, cheaper than a hashed
    lookup of every row for the few categories a chunk has."""
    if not keys:
        return pl.col("cat").is_null() if null else pl.lit(False)
    m = functools.reduce(lambda a, b: a | b, [pl.col("cat") == k for k in keys])
    return m.fill_null(null)  # (every test is null only where cat is)


@functools.lru_cache(maxsize=256)
def _class_masks(items: tuple) -> tuple[pl.Expr, pl.Expr, pl.Expr, pl.Expr]:
    """For a chunk whose categories classify as `items` ((cat, (class, kind, mtia)) pairs):
    (is a range, is a device row, its device class, is a launch call) as expressions over `cat`.
    Ranges carry no kind column: it is a function of the category, mapped once on the stacked
    frame (`_range_kinds`)."""
    table = dict(items)
    null = table.get(None, ("range", "host", False))
    keys = [k for k in table if k is not None]
    ranges = [k for k in keys if table[k][0] == "range"]
    others = [k for k in keys if table[k][0] != "range"]
    # (the shorter list of tests: most rows are ranges, and most categories too)
    is_range = _cat_in(ranges, null[0] == "range") if len(ranges) <= len(others) else ~_cat_in(others, null[0] != "range")
    devices = [k for k in keys if table[k][0] in _DEVICE_CLASSES]
    is_device = _cat_in(devices, null[0] in _DEVICE_CLASSES)
    dev_cls = pl.col("cat").replace_strict(pl.Series(devices, dtype=STR), pl.Series([table[k][0] for k in devices], dtype=STR),
                                           default=null[0], return_dtype=STR)
    launch = _cat_in([k for k in keys if table[k][1] in _LAUNCH_KINDS], null[1] in _LAUNCH_KINDS)
    return is_range, is_device, dev_cls.alias("cls"), launch


# ---------------------------------------------------------------------------------------------
# chunk shaping

_CORE = ["seq", "ph", "cat", "name", "pid", "tid", "pid_i", "tid_i", "ts_ns", "end_raw", "corr", "ext", "device", "stream"]


_TIMED = ["X", "B", "E", "i", "I", "C", "s", "t", "f", "b", "e", "n"]
_OPTIONAL = {**{c: I64 for c in _INT_ARGS}, **{c: F64 for c in _FLOAT_ARGS}, **{c: STR for c in _STR_ARGS},
             "a_name": STR, "a_sort": I64, "m_alloc": F64, "m_reserved": F64, "m_device": I64, "m_devtype": I64}
_DEVICE_KEEP = ("cls", *_CORE)  # device rows always carry these; the rest only where present
_DEVICE_EXTRA = ("context", "regs", "smem", "occ", "bytes", "a_size", "a_kind", "a_dir", "hlo_op", "hlo_module", "kernel_details", "memcpy_details") + _DIM_COLS


class _Q:
    """Expressions every chunk uses, built once (building them per chunk cost more Python time
    than evaluating them on a small chunk)."""

    count = pl.len().alias("n")
    cats = pl.col("cat").drop_nulls().unique()
    tmin = pl.col("ts_ns").min()
    is_meta = pl.col("ph") == "M"
    is_memory = pl.col("name") == "[memory]"  # (with the instants' phases, `_ph_in`)
    is_counter = pl.col("ph") == "C"
    # classes per row (chunks holding MTIA's category; see `_class_masks` for the others)
    is_range = (pl.col("cls") == "range").fill_null(False)
    is_device = pl.col("cls").is_in(_DEVICE_CLASSES).fill_null(False)
    is_launch = pl.col("kind").is_in(_LAUNCH_KINDS)
    range_cols = [pl.col(c) for c in _CORE]
    range_cats = pl.col("cat", "name").cast(pl.Categorical)
    kind_col = pl.col("kind").cast(pl.Categorical)
    device_cols = [pl.col(c) for c in ["cls"] + _CORE + list(_DEVICE_EXTRA)]
    device_cats = pl.col("cls", "cat", "name").cast(pl.Categorical)
    # (counters, range-profiler metrics, times beyond 2**43 us) of a raw chunk; `ts` as text or number
    flags = [(pl.col("ph") == "C").any(), (pl.col("cat") == "cuda_profiler_range").any(), pl.col("ts").abs().max() >= _TWO43]
    text_ts_flags = flags[:2] + [pl.col("ts").cast(F64, strict=False).abs().max() >= _TWO43]


# Query optimisations for the per-chunk queries: the plans are small and fixed, and the passes
# that look for shared sub-plans and sub-expressions, simplify and cluster expressions cost more
# per chunk than they save (-12% of shaping's CPU time). Results are the same.
_OPT = ({"optimizations": pl.QueryOptFlags(comm_subplan_elim=False, comm_subexpr_elim=False, simplify_expression=False,
                                           cluster_with_columns=False, check_order_observe=False)}
        if hasattr(pl, "QueryOptFlags") else {})


def _shape(raw: pl.DataFrame, index: int, out: Chunk, split: bool) -> Chunk:
    """Turn a raw chunk frame into typed per-chunk frames. With `split` (Kineto and other traces
    classified by category) slices are classified here, on the worker thread, and keep only the
    columns their table needs; otherwise all columns stay for classification by process and
    thread names once those are known.

    A chunk costs a few milliseconds of query planning however few its rows (polars converts and
    optimises every query anew), about as much as the work itself: so the queries are few, a
    table's query runs only where the chunk holds its events, and one aggregate query answers
    every per-chunk question."""
    n = raw.height
    out.n_events = n
    # (the schema is read once: each `raw.schema` builds it anew, and Python-side work like this
    # was a tenth of decoding a chunk)
    schema = raw.schema
    # text timestamps (quoted on purpose, or strings in the file) are converted eagerly: the rare
    # exponent forms need Decimal
    added = []
    for c in ("ts", "dur"):
        src = c if schema.get(c) == STR else (c + "_txt" if c + "_txt" in schema else None)
        if src is not None and raw[src].null_count() < n:
            added.append(text_us_to_ns(raw[src]).alias(f"_{c}_text_ns"))
    table, per_row = _chunk_classes(raw) if split else ({}, False)
    if per_row:
        cls, kind = _cat_rules()
        added += raw.select(cls.alias("cls"), kind.alias("kind")).get_columns()
    added += [_num_ids(raw[c]).alias(f"_{c}_i") for c in ("pid", "tid") if c in schema]
    added.append(pl.Series("seq", np.arange(index << 32, (index << 32) + n, dtype=np.int64)))
    # each event phase's count, which also says which of the rarer tables this chunk has rows for
    out.phases = {k if k is not None else "": int(v) for k, v in raw.get_column("ph").value_counts().iter_rows()}
    has = out.phases.get
    flows = bool(has("s") or has("t") or has("f"))
    q = _Q
    # which events are slices and, in split mode, ranges, device rows and launch calls: one
    # column each, tested once per chunk (every query that tested `ph` or `cat` itself did it
    # again, and a text `is_in` costs seven equality tests); only the phases present are tested
    masks = {"_slice": _ph_in(("X", "B", "E"), out.phases)}
    if split:
        if per_row:
            is_range, is_device, dev_cls, is_launch = q.is_range, q.is_device, pl.col("cls"), q.is_launch
        else:
            is_range, is_device, dev_cls, is_launch = _class_masks(tuple(table.items()))
            masks.update(_range=is_range, _device=is_device, _launch=is_launch)
            is_range, is_device, is_launch = pl.col("_range"), pl.col("_device"), pl.col("_launch")
    # (eager, with the default optimisations: the categories' tests shared between the masks)
    added += raw.select(**masks).get_columns()
    raw = raw.hstack(added)  # (Series added as they are: `with_columns` plans a query)
    schema = raw.schema
    plan = _plan(tuple(schema.items()), per_row)
    lf = raw.lazy()
    # the checks a chunk's column statistics pass without a query (every event has a phase, a
    # time and, where needed, a duration; no time is beyond 2**43 us, where doubles lose the
    # nanoseconds) ...
    chk = {k: 0 for k in plan.checks if _passes(raw, plan, k)}
    # ... and the other checks, the earliest slice start (the profiler span's, in neither table,
    # included) and whether a flow is needed, in one query
    aggs = [e for k, e in plan.checks.items() if k not in chk] + [plan.tmin]
    if split and flows:
        # Kineto writes a flow next to the slices it binds and puts the correlation id in args as
        # well: the flows are only worth keeping where a launch or device row lacks that id
        no_corr = plan.is_slice & plan.corr.is_null()
        aggs.append((no_corr & (is_device | (is_range & is_launch))).any().alias("lacking"))
    chk.update(lf.select(aggs).collect(engine="in-memory", **_OPT).row(0, named=True))
    out.inexact += int(chk["inexact"] or 0)
    out.t_min = int(chk["tmin"]) if chk["tmin"] is not None else None
    if split and flows and not chk["lacking"]:
        flows = False
    queries = {}
    # the events other than slices are few: each query filters them out of the chunk itself (a
    # shared filtered frame would carry the union of their columns)
    for k, present, is_k, cols in (("flows", flows, _ph_in(("s", "t", "f"), out.phases), plan.flow_cols),
                                   ("meta", has("M"), q.is_meta, plan.meta_cols),
                                   ("mem", has("i") or has("I"), _ph_in(("i", "I"), out.phases) & q.is_memory, plan.mem_cols),
                                   ("cevents", has("C"), q.is_counter, plan.cevent_cols)):
        if present:
            queries[k] = lf.filter(is_k.fill_null(False)).with_columns(plan.base).select(cols)
    if split:
        # Kineto: each table's rows straight out of the chunk, with only the columns that table
        # reads (a frame of every slice column, split afterwards, copied the launch dimensions'
        # lists and the args of every range row)
        slices = lf.filter(plan.is_slice & is_range).with_columns(plan.base).select(plan.slice_cols).with_columns(plan.derived)
        # names and categories repeat millions of times: held as categoricals until the tables
        # are built (`cat_to_str`); a range's kind is mapped from its category then (`_range_kinds`)
        queries["ranges"] = slices.select(*q.range_cols, *([q.kind_col] if per_row else ())).with_columns(q.range_cats)
        # device rows (a few percent) are gathered by index: a filter reads every row of each
        # column it keeps, and device rows keep nearly all, the launch dimensions' lists among them
        at = (raw.get_column("_slice") & (raw.get_column("_device") if not per_row else raw.select(is_device).to_series())).arg_true()
        queries["devices"] = (raw[at].lazy().with_columns(plan.base).select(plan.slice_cols)
                              .with_columns(*plan.derived, dev_cls).select(q.device_cols).with_columns(q.device_cats))
        # the categories only tell Kineto from other traces (`detect_source`), which a chunk read
        # as Kineto already is
        out.cats = {c for c in table if c is not None}
    else:
        queries["slices"] = lf.filter(plan.is_slice).with_columns(plan.base).select(plan.slice_cols).with_columns(plan.derived).drop("dur_ns")
    # the in-memory engine: a chunk is ~40k rows, where the streaming engine's per-query set-up
    # and thread hand-offs cost more CPU than the work itself (measured: -10% of the read's CPU)
    frames = dict(zip(queries, pl.collect_all(list(queries.values()), engine="in-memory", **_OPT)))
    if not split:
        out.cats = set(frames["slices"].get_column("cat").drop_nulls().unique().to_list())
    if chk["no_ph"] or chk["no_ts"] or chk["no_dur"]:
        _missing_examples(lf.with_columns(plan.base), out, chk)
    for k, f in frames.items():
        if not f.height:
            continue
        if k in ("slices", "ranges", "devices"):
            # every column's null count in one call (one per column was most of this loop's time)
            nulls = f.null_count().row(0, named=True)
            if k == "slices":  # every event: drop the columns this chunk does not use
                keep = [c for c in f.columns if c in _CORE or nulls[c] < f.height]
            elif k == "ranges":
                keep = [c for c in f.columns if _keep_range_col(f, c, nulls, flows, out.phases)]
            else:  # launch details this chunk's rows do not carry (all null) are not kept
                keep = [c for c in f.columns if c in _DEVICE_KEEP or nulls[c] < f.height]
            if len(keep) < f.width:
                f = f[keep]  # (by name: `select` plans a query)
        # one chunk per column (the chunk was read in pieces): frames with uneven chunks get
        # copied whole by the first operation that aligns them, after the stacking
        setattr(out, k, f.rechunk())
    return out


def _ph_in(phases: tuple[str, ...], counts: dict[str, int]) -> pl.Expr:
    """`ph` is one of `phases` (false where null), testing only those in `counts` (the chunk's
    phases): equality tests, cheaper than a text `is_in`."""
    keys = [p for p in phases if counts.get(p)] or [phases[0]]  # (a test that finds none)
    return functools.reduce(lambda a, b: a | b, [pl.col("ph") == p for p in keys]).fill_null(False)


def _passes(raw: pl.DataFrame, plan, check: str) -> bool:
    """Whether the check `check` (`_plan`'s `checks`) finds nothing in `raw`, from its columns'
    null counts and extremes alone (False: the check's query decides)."""
    if check == "no_ph":
        return not raw.get_column("ph").null_count()
    if check in ("no_ts", "no_dur"):
        c = check[3:]
        return plan.plain[c] and not raw.get_column(c).null_count()
    if not (raw.schema.get("ts") == F64 and raw.schema.get("dur") == F64):
        return True  # (the check is a literal 0 then)
    for c in ("ts", "dur"):
        s = raw.get_column(c)
        lo, hi = s.min(), s.max()
        if lo is not None and not (-_TWO43 < lo and hi < _TWO43):  # (NaN fails both)
            return False
    return True


def _keep_range_col(f: pl.DataFrame, c: str, nulls: dict[str, int], flows: bool, phases: dict[str, int]) -> bool:
    """Range frames are the bulk of what a chunk keeps: drop what this chunk does not need."""
    if c in ("seq", "kind", "cat", "name", "pid_i", "tid_i", "ts_ns", "end_raw"):
        return True
    if c == "ph":  # only B/E pairing needs the phase
        return bool((phases.get("B") or phases.get("E")) and f["ph"].is_in(["B", "E"]).any())
    if c in ("pid", "tid"):  # the text ids: for grouping when not numeric, for flow joins
        # (an id that is null has a null number: more null numbers than null ids means text ids)
        return flows or nulls[c + "_i"] > nulls[c]
    return nulls[c] < f.height


class _Plan:
    """The expressions that shape a chunk with a given schema."""


def _num_ids(s: pl.Series) -> pl.Series:
    """Process or thread ids as numbers: the id, or the number a text id ends with ("stream 7");
    the text rows are few (thread names), so only they are searched."""
    v = s.cast(I64, strict=False)
    if v.null_count() > s.null_count():
        text = (v.is_null() & s.is_not_null()).arg_true()
        v = v.scatter(text, s.gather(text).str.extract(r"(-?\d+)\s*$", 1).cast(I64, strict=False))
    return v


@functools.lru_cache(maxsize=64)
def _plan(schema_items: tuple, split: bool):
    """The lazy queries that shape a chunk with this schema, built once per schema: each maps
    the chunk's LazyFrame to one output frame. (Building the expressions costs more Python time
    than running them on a chunk.)"""
    schema = dict(schema_items)

    def col(c: str) -> pl.Expr:
        """A column in its final type; a typed null where the chunk did not have it."""
        want = _OPTIONAL.get(c, STR)
        if c not in schema:
            return pl.lit(None, dtype=want).alias(c)
        if want == I64:
            return (_to_int(pl.col(c)) if schema[c] == STR else pl.col(c).cast(I64, strict=False)).alias(c)
        return pl.col(c).cast(want, strict=False).alias(c)

    def time(c: str) -> pl.Expr:
        text = f"_{c}_text_ns" in schema
        if c not in schema:
            return pl.lit(None, dtype=I64)
        if schema[c] == STR:
            return pl.col(f"_{c}_text_ns") if text else pl.lit(None, dtype=I64)
        e = us_ns_expr(pl.col(c))
        return pl.coalesce(e, pl.col(f"_{c}_text_ns")) if text else e

    def ident(c: str) -> pl.Expr:
        # (numbers once per chunk, in `_shape`: `_num_ids`)
        return pl.col(f"_{c}_i") if c in schema else pl.lit(None, dtype=I64)

    plan = _Plan()
    plan.base = [time("ts").alias("ts_ns"), time("dur").alias("dur_ns")]
    ph = pl.col("ph")
    timed = ph.is_in(_TIMED).fill_null(False)
    floats = schema.get("ts") == F64 and schema.get("dur") == F64
    ts_null = pl.col("ts").is_null() if "ts" in schema else pl.lit(True)
    if "_ts_text_ns" in schema:
        ts_null = pl.col("_ts_text_ns").is_null() & (pl.col("ts").is_null() if schema.get("ts") == F64 else pl.lit(True))
    dur_null = pl.col("dur").is_null() if "dur" in schema else pl.lit(True)
    if "_dur_text_ns" in schema:
        dur_null = pl.col("_dur_text_ns").is_null() & (pl.col("dur").is_null() if schema.get("dur") == F64 else pl.lit(True))
    has = [pl.col(c).is_not_null() for c in ("name", "cat", "ts") if c in schema] or [pl.lit(False)]
    plan.checks = {
        "no_ph": (ph.is_null() & pl.any_horizontal(has)).sum().alias("no_ph"),
        "no_ts": (timed & ts_null).sum().alias("no_ts"),
        "no_dur": ((ph == "X").fill_null(False) & dur_null).sum().alias("no_dur"),
        "inexact": (inexact_expr(pl.col("ts")).sum() + inexact_expr(pl.col("dur")).sum()).alias("inexact") if floats else pl.lit(0).alias("inexact"),
    }
    # times read as numbers only (no text column beside them)
    plan.plain = {c: schema.get(c) == F64 and f"_{c}_text_ns" not in schema for c in ("ts", "dur")}
    plan.is_slice = pl.col("_slice")  # (a column of the chunk: `_shape`)
    # the earliest slice start: `us_ns_expr` is monotonic, so that of the smallest `ts` it keeps
    ts_f = pl.col("ts")
    plan.tmin = (us_ns_expr(ts_f.filter(plan.is_slice & (ts_f.abs() < 9.2e15)).min()) if plan.plain["ts"]
                 else plan.base[0].filter(plan.is_slice).min()).alias("tmin")
    dims = []
    for c in ("grid", "block"):
        for j in range(3):
            if c in schema:  # a list column (polars reader)
                dims.append(pl.col(c).list.get(j, null_on_oob=True).alias(f"{c}{j}"))
            elif f"{c}{j}" in schema:  # already split (Python loop)
                dims.append(pl.col(f"{c}{j}").cast(I64, strict=False))
            else:
                dims.append(pl.lit(None, dtype=I64).alias(f"{c}{j}"))
    plan.slice_cols = [pl.col(c) for c in ("seq", "ph", "cat", "name", "pid", "tid", "ts_ns", "dur_ns")] + dims
    plan.slice_cols += [col(c) for c in _INT_ARGS + _FLOAT_ARGS + _STR_ARGS]
    plan.slice_cols += [ident("pid").alias("pid_i"), ident("tid").alias("tid_i")]
    # a slice's correlation id over the raw chunk (as `derived` makes it over the slice columns)
    plan.corr = pl.coalesce(col("corr"), col("corr_xla"))
    plan.derived = [
        (pl.col("ts_ns") + pl.col("dur_ns")).alias("end_raw"),
        pl.coalesce(pl.col("corr"), pl.col("corr_xla")).alias("corr"),
        pl.coalesce(pl.col("ext"), pl.col("ext_old")).alias("ext"),
    ]
    if split:  # classified per row (`_shape`: MTIA)
        plan.slice_cols += [pl.col("cls"), pl.col("kind")]
    plan.flow_cols = ["seq", "ph", "cat", (pl.col("id") if "id" in schema else pl.lit(None, dtype=STR)).cast(STR).alias("fid"),
                      "pid", "tid", "ts_ns", (pl.col("bp") if "bp" in schema else pl.lit(None, dtype=STR)).alias("bp")]
    plan.meta_cols = ["name", "pid", "tid", col("a_name"), col("a_sort")]
    # profile_memory instants: the caching allocator's totals over time
    plan.mem_cols = ["seq", "pid", "ts_ns", col("m_device"), col("m_devtype"), col("m_alloc").alias("alloc"), col("m_reserved").alias("reserved")]
    plan.cevent_cols = ["seq", "name", "pid", "ts_ns"]  # the Python loop fills cvalues
    for k in ("flow_cols", "meta_cols", "mem_cols", "cevent_cols"):  # (names as expressions once, not per chunk)
        setattr(plan, k, _exprs(getattr(plan, k)))
    return plan


def _exprs(cols: list) -> list[pl.Expr]:
    return [pl.col(c) if isinstance(c, str) else c for c in cols]


def _missing_examples(base: pl.LazyFrame, out: Chunk, chk: dict) -> None:
    ph = pl.col("ph")
    timed = ph.is_in(_TIMED).fill_null(False)
    masks = {
        "ph": ph.is_null() & (pl.col("name").is_not_null() | pl.col("ts_ns").is_not_null() | pl.col("cat").is_not_null()),
        "ts": timed & pl.col("ts_ns").is_null(),
        "dur": (ph == "X").fill_null(False) & pl.col("dur_ns").is_null(),
    }
    for field, mask in masks.items():
        n = chk["no_" + field]
        if n:
            bad = base.filter(mask.fill_null(False)).select("seq", "ph").head(3).collect()
            out.missing.extend((s, p or "", field) for s, p in bad.iter_rows())
            out.missing.append((-1, str(int(n)), field))


def _to_int(expr: pl.Expr) -> pl.Expr:
    """Text to Int64; also accepts "12.0" and hex handles ("0x1f") that some writers use."""
    s = expr.str.strip_chars()
    return (
        pl.when(s.str.starts_with("0x") | s.str.starts_with("0X"))
        .then(s.str.slice(2).str.to_integer(base=16, strict=False))
        .otherwise(pl.coalesce(s.cast(I64, strict=False), s.cast(F64, strict=False).cast(I64, strict=False)))
    )


# ---------------------------------------------------------------------------------------------
# the read pipeline


class _Acc:
    """Everything the chunks produced, in file order."""

    _FRAMES = ("slices", "ranges", "devices", "flows", "meta", "mem", "cevents", "cvalues", "metrics")

    def __init__(self):
        for name in self._FRAMES:
            setattr(self, name, [])
        self.sizes: dict[int, int] = {}
        self.phases: dict[str, int] = {}
        self.missing: list[tuple[int, str, str]] = []
        self.inexact = 0
        self.cats: set[str] = set()
        self.t_min: int | None = None
        self.saw_events = False

    def add(self, index: int, c: Chunk) -> None:
        self.sizes[index] = c.n_events
        for name in self._FRAMES:
            f = getattr(c, name)
            if f is not None and f.height:
                getattr(self, name).append(f)
        for k, v in c.phases.items():
            self.phases[k] = self.phases.get(k, 0) + v
        self.missing.extend(c.missing)
        self.inexact += c.inexact
        self.cats |= c.cats
        if c.t_min is not None:
            self.t_min = c.t_min if self.t_min is None else min(self.t_min, c.t_min)

    def ordinal(self, seq: int) -> int:
        """Position in the traceEvents array of the event with this seq."""
        index, row = seq >> 32, seq & 0xFFFFFFFF
        return sum(n for i, n in self.sizes.items() if i < index) + row


def _threads() -> int:
    return max(1, min(4, pl.thread_pool_size(), os.cpu_count() or 1))


def _bad_json(path: Path, exc: BadChunk, offset: int) -> InputError:
    where = f" near byte {offset + max(0, (exc.pos or 0) - 1)}" if exc.pos is not None else ""
    return InputError(path, f"invalid JSON in traceEvents{where}: {exc}")


_KINETO_KEYS = {"schemaVersion", "deviceProperties", "computeProperties", "distributedInfo", "baseTimeNanoseconds", "traceName"}


def _first_schema(meta: dict) -> str:
    """The typed schema to try first, from the keys before the events array."""
    if _KINETO_KEYS & set(meta):
        return "kineto"
    if isinstance(meta.get("metadata"), dict) and "highres-ticks" in meta["metadata"]:
        return "xla"
    return "generic"


def stream_events(path: Path, block: int | None = None) -> tuple[dict[str, Any], _Acc, str | None]:
    """Read the trace at `path` chunk by chunk, decoding chunks on worker threads. Returns
    (top-level metadata, chunk frames, document form)."""
    walker = TraceWalker(path, block)
    meta: dict[str, Any] = {}
    acc = _Acc()
    try:
        with ThreadPoolExecutor(max_workers=_threads()) as pool:
            _pump(path, walker, meta, acc, pool, _threads())
    except NotAnEvent as exc:
        raise InputError(path, str(exc)) from None
    return meta, acc, walker.form


def _pump(path: Path, walker: TraceWalker, meta: dict, acc: _Acc, pool: ThreadPoolExecutor, nthreads: int) -> None:
    pending: deque = deque()  # (future, chunk bytes, offset, index)
    carry: tuple[bytes, int, int, BadChunk] | None = None
    # the chunks after `carry` once the events array is known to have closed inside it: the rest
    # of the input is the value(s) after the array, which go to the tail's parse, never decoded
    trailing: list[bytes] | None = None
    index = 0
    schema: str | None = None
    split = False
    pieces = True
    text_ts = False

    def settle(limit: int) -> None:
        nonlocal carry, trailing, schema, pieces, text_ts
        while len(pending) > limit:
            fut, chunk, off, idx = pending.popleft()
            try:
                frames, failed, pieces_ok, quoted = fut.result()
                if failed:
                    schema = "text"
                if not pieces_ok:  # events hold lists of objects: cuts between pieces keep failing
                    pieces = False
                text_ts = text_ts or quoted
                acc.add(idx, frames)
                continue
            except BadChunk as exc:
                first = (chunk, off, idx, exc)
            if str(first[3]).startswith("unexpected content after document"):
                # the array closed inside this chunk: the walker's loose cuts (no event start in
                # eight blocks) went on into a big value after traceEvents. Merged with the next
                # chunk it failed again, and a valid trace whose value after the array spans two
                # loose chunks (~64 MB) was refused as "invalid JSON in traceEvents" (s19): this
                # chunk and every one after it belong to the tail, which parses them whole (or names
                # the first error, for a file that is damaged there)
                carry, trailing = first, [c for _, c, _, _ in pending]
                for fut2, *_ in pending:
                    fut2.cancel()
                pending.clear()
                return
            if pending:
                fut2, chunk2, _, _ = pending.popleft()
                fut2.cancel()
                _decode_merged(path, acc, first, chunk2, schema, split)
            else:
                carry = first

    try:
        for item in walker:
            if item[0] == "meta":
                meta[item[1]] = item[2]
                continue
            acc.saw_events = True
            if schema is None:
                schema = _first_schema(meta)
                split = schema == "kineto"
            if item[0] == "events":
                chunk, off = item[1], item[2]
                if trailing is not None:
                    trailing.append(chunk)  # checked with the tail, as one text (see there)
                    continue
                if carry is not None:
                    first, carry = carry, None
                    _decode_merged(path, acc, first, chunk, schema, split)
                    continue
                # a chunk is about two walker blocks, unless no cut between events was found in it:
                # a 35 MB value after the array (1.2 M small objects, the walker's loose cuts) came
                # as one chunk, and polars' read_json of it aborted the process (exit 134, nothing
                # on stderr) with 500 MB-1.1 GB of address space left (s18; its tree needs ~30x the
                # text). Read whole by polars, then by orjson, a chunk needs orjson's room (48x)
                check_orjson_room(path, len(chunk), "chunk of trace events")
                pending.append((pool.submit(decode_chunk, chunk, index, schema, split, pieces, text_ts), chunk, off, index))
                index += 1
                settle(nthreads + 1)
                continue
            # the tail: last events plus any metadata after the array, as one JSON document
            text, off = item[1], item[2]
            settle(0)
            prefix = b"[" if walker.form == "array" else b'{"traceEvents":['
            if carry is not None:
                chunk0, off, _, _ = carry
                # chunk texts are `[` events `]` cut at a comma (jsonstream.merge_chunks)
                text = b",".join([prefix + chunk0[1:-1], *(c[1:-1] for c in trailing or ()), text[len(prefix):]])
                trailing = None
            if _NEEDS_TEXT_TS.search(text):
                text = _QUOTE_TS.sub(rb'\1"\2"', text)
            # the tail holds every key after the array, however big: orjson segfaulted on a 38 MB
            # value there with 1.3-1.5 GB of address space left under ulimit -v (s18)
            check_orjson_room(path, len(text), "trace tail (the last events and the keys after them)")
            try:
                doc = loads_lenient(text)
            except orjson.JSONDecodeError as exc:
                if carry is not None:
                    raise _bad_json(path, carry[3], carry[1]) from None
                pos = getattr(exc, "pos", None) or 0
                if pos >= len(text) - 2:
                    raise InputError(path, "JSON ends inside the traceEvents array (file truncated?)") from None
                raise InputError(path, f"invalid JSON near byte {off + max(0, pos - len(prefix))}: {exc.args[0] if exc.args else exc}") from None
            carry = None
            if isinstance(doc, dict):
                events = doc.pop("traceEvents", [])
                meta.update(doc)
            else:
                events = doc
            acc.add(index, decode_events(events, index, split))
            index += 1
        settle(0)
    finally:
        for fut, *_ in pending:
            fut.cancel()


def _decode_merged(path: Path, acc: _Acc, first: tuple, nxt: bytes, schema: str | None, split: bool) -> None:
    chunk, off, idx, exc = first
    merged = merge_chunks(chunk, nxt)
    check_orjson_room(path, len(merged), "chunk of trace events")  # as any chunk (see _pump)
    try:
        acc.add(idx, decode_chunk(merged, idx, schema or "generic", split)[0])
    except BadChunk:
        raise _bad_json(path, exc, off) from None


# ---------------------------------------------------------------------------------------------
# assembly: frames -> kernels, transfers, ranges, counters, metrics, metadata

_HIP_SUFFIX = re.compile(r"(?<=[a-z])R\d{4}$")
_ROCPROF_PROCS = re.compile(r"^(?:CPU (?:HSA|HIP|KFD) API|COPY|GPU\d+|HIP|HSA|KFD|rocTX|ROCTX.*)$")
_OPEN_END = 1 << 62
_FLOWS = {"seq": I64, "ph": STR, "cat": STR, "fid": STR, "pid": STR, "tid": STR, "ts_ns": I64, "bp": STR}
_EV_TYPES: dict[str, pl.DataType] = {
    "seq": I64, "ph": STR, "cat": STR, "name": STR, "pid": STR, "tid": STR, "pid_i": I64, "tid_i": I64,
    "ts_ns": I64, "end_raw": I64, "kind": STR, "cls": STR,
    **{c: I64 for c in _INT_ARGS}, **{c: F64 for c in _FLOAT_ARGS}, **{c: STR for c in _STR_ARGS},
    **{c: I64 for c in _DIM_COLS}, "plane": STR, "line": STR,
}


_RANGE_COLS = tuple(_CORE) + ("kind",)
_DEVICE_COLS = tuple(_CORE) + ("cls", "context", "regs", "smem", "occ", "bytes", "a_size", "a_kind", "a_dir", "hlo_op", "hlo_module", "kernel_details",
                               "memcpy_details", "r_kname", "r_begin", "r_end", "r_gpu", "r_queue", "r_grd", "r_wgr", "r_lds", "r_vgpr",
                               "r_vgpr2", "r_pid") + _DIM_COLS
_SLICE_COLS = tuple(dict.fromkeys(_RANGE_COLS + _DEVICE_COLS))


def _stack(frames: list[pl.DataFrame], types: dict[str, pl.DataType], need: tuple[str, ...] | None = None) -> pl.DataFrame:
    """Concatenate chunk frames; add the columns in `need` (default: all of `types`) that no
    chunk had, as typed nulls."""
    if not frames:
        return pl.DataFrame(schema={c: types[c] for c in (need or types)})
    have = {c for f in frames for c in f.columns}
    missing = [pl.lit(None, dtype=types[c]).alias(c) for c in (need or types) if c not in have]
    if missing:  # added to each frame: adding them to the stacked frame would rechunk all of it
        frames = [f.with_columns(missing) for f in frames]
    if len(frames) == 1:
        df = frames[0]
    elif len({tuple(f.schema.items()) for f in frames}) == 1:
        df = pl.concat(frames, how="vertical", rechunk=False)  # (diagonal concat copies every column)
    else:
        df = pl.concat(frames, how="diagonal_relaxed", rechunk=False)
    return df


def cat_to_str(s: pl.Series) -> pl.Series:
    """A Categorical series as String whose rows share one copy of each distinct value (a plain
    cast writes every row's text out: 100 bytes a kernel name, a million times)."""
    if s.dtype != pl.Categorical:
        return s
    values, at = _distinct_positions(s)
    return values.gather(at).alias(s.name)


def _distinct_positions(s: pl.Series) -> tuple[pl.Series, pl.Series]:
    """A Categorical's distinct values (as String) and each row's position among them (null
    where the row is), through a table indexed by code: casting to an Enum of the values looked
    every row's text up again, 2x slower."""
    uniq = s.drop_nulls().unique()
    values = uniq.cast(STR)
    codes = uniq.to_physical().to_numpy()
    top = int(codes.max()) + 1 if len(codes) else 1
    if top > 4 * len(s) + (1 << 20):  # (codes are the process's categories: a huge table for a small column)
        return values, s.cast(pl.Enum(values)).to_physical()
    lut = np.zeros(top, np.uint32)
    lut[codes] = np.arange(len(codes), dtype=np.uint32)
    return values, pl.Series(lut).gather(s.to_physical())


def _range_kinds(R: pl.DataFrame) -> pl.DataFrame:
    """Stacked ranges with their kind: `_cat_rules` of each distinct category, gathered onto the
    rows through the categorical's codes (a range's kind is a function of its category, except
    in chunks holding MTIA's, which carry the kind of each row; those are kept). A categorical,
    as the other repeated texts: `_ranges` tests it several times."""
    cat = R["cat"]
    values, at = _distinct_positions(cat) if cat.dtype == pl.Categorical else (cat.drop_nulls().unique(), None)
    table = _cat_classes(values.to_list() + [None])
    # the last entry is the null category's kind
    kinds = pl.Series("kind", [table[v][1] for v in values.to_list()] + [table[None][1]], dtype=STR)
    if at is not None:
        mapped = kinds.cast(pl.Categorical).gather(at.fill_null(len(values)))
    else:  # (no chunk had ranges: an empty String column)
        mapped = cat.replace_strict(values, kinds[:-1], default=kinds[-1], return_dtype=STR).cast(pl.Categorical)
    if R["kind"].null_count() < R.height:
        mapped = pl.select(pl.coalesce(pl.lit(R["kind"].cast(STR)), pl.lit(mapped.cast(STR)))).to_series().cast(pl.Categorical)
    return R.with_columns(_chunked_as(mapped, cat).alias("kind"))


def _chunked_as(s: pl.Series, like: pl.Series) -> pl.Series:
    """`s` cut into `like`'s chunks (zero-copy slices), for a column added to a stacked frame: a
    column chunked unlike the others makes every later operation on the frame copy all of it into
    single chunks first."""
    if like.n_chunks() == 1 or s.n_chunks() != 1:
        return s
    cuts, start = [], 0
    for chunk in like.get_chunks():
        cuts.append(s.slice(start, len(chunk)))
        start += len(chunk)
    return pl.concat(cuts, rechunk=False)


def _int_or_none(v) -> int | None:
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    try:
        return int(str(v).strip())
    except ValueError:
        try:
            f = float(str(v))
        except ValueError:
            return None
        return int(f) if math.isfinite(f) else None


def _version(v, kind: str) -> str | None:
    """CUDA versions are 1000*major + 10*minor ("12090" -> "12.9"); HIP ones
    major*10**7 + minor*10**5 + patch ("60443483" -> "6.4.43483")."""
    n = _int_or_none(v)
    if n is None or n <= 0:
        return None
    if kind == "hip":
        return f"{n // 10**7}.{(n // 10**5) % 100}.{n % 10**5}"
    return f"{n // 1000}.{(n % 1000) // 10}"


def _clean_api(name: str) -> str:
    """`cudaLaunchKernel_v7000` -> `cudaLaunchKernel`; `hipGetDevicePropertiesR0600` ->
    `hipGetDeviceProperties` (HIP exports versioned symbols)."""
    if not name:
        return name
    name = clean_api_name(name)
    return _HIP_SUFFIX.sub("", name) if name.startswith("hip") else name


def detect_source(meta: dict, procs: dict[str, str], cats: set[str]) -> str:
    names = [p for p in procs.values() if p]
    if any(p.startswith(("/device:", "/host:")) for p in names) or (isinstance(meta.get("metadata"), dict) and "highres-ticks" in meta["metadata"]):
        return "xla"
    other = meta.get("otherData")
    if (isinstance(other, dict) and any(str(k).startswith(("HSA", "Agent")) for k in other)) or any(_ROCPROF_PROCS.match(p) for p in names):
        return "rocprof"
    if _KINETO_KEYS & set(meta) or {c.lower() for c in cats} & _KINETO_CATS:
        return "kineto"
    return "chrome"


def _names(acc: _Acc) -> tuple[dict[str, str], dict[tuple[str, str], str]]:
    procs: dict[str, str] = {}
    threads: dict[tuple[str, str], str] = {}
    for f in acc.meta:
        for name, pid, tid, a_name, _ in f.iter_rows():
            if a_name is None:
                continue
            if name == "process_name":
                procs[pid] = a_name
            elif name == "thread_name":
                threads[(pid, tid)] = a_name
    return procs, threads


_LEGACY_PID = r"(?i)^\s*[a-z0-9_]+ functions\s*$"


def _classify(S: pl.DataFrame, source: str, procs: dict, threads: dict) -> pl.DataFrame:
    """Add `cls` and `kind` to unclassified slices. XLA and rocprof say what an event is through
    the process (plane) and thread (line) it sits on; everything else through `cat`."""
    if source not in ("xla", "rocprof"):
        cls, kind = _cat_rules()
        if source == "chrome" and (S["pid"].str.to_lowercase().str.strip_chars() == "cpu functions").any():
            # torch.autograd.profiler before torch.profiler (torch <= 1.8, use_cuda=True): no
            # categories; ops on process "CPU functions", kernels on "CUDA functions" with the
            # device index as thread, tied to the op by an s/f flow pair
            pid = pl.col("pid").fill_null("").str.to_lowercase().str.strip_chars()
            device_side = pid.str.contains(_LEGACY_PID) & (pid != "cpu functions") & pl.col("cat").is_null()
            host_side = (pid == "cpu functions") & pl.col("cat").is_null()
            cls = pl.when(device_side).then(pl.lit("kernel")).otherwise(cls)
            kind = pl.when(host_side).then(pl.lit("cpu_op")).otherwise(kind)
            return S.with_columns(cls=cls, kind=kind,
                                  device=pl.when(device_side).then(pl.coalesce(pl.col("device"), pl.col("tid_i"))).otherwise(pl.col("device")),
                                  tid_i=pl.when(device_side).then(None).otherwise(pl.col("tid_i")))
        return S.with_columns(cls=cls, kind=kind)
    P = pl.DataFrame({"pid": list(procs), "plane": list(procs.values())}, schema={"pid": STR, "plane": STR})
    T = pl.DataFrame({"pid": [k[0] for k in threads], "tid": [k[1] for k in threads], "line": list(threads.values())},
                     schema={"pid": STR, "tid": STR, "line": STR})
    S = S.drop([c for c in ("plane", "line") if c in S.columns]).join(P, on="pid", how="left").join(T, on=["pid", "tid"], how="left")
    name = pl.col("name")
    plane, line = pl.col("plane").fill_null(""), pl.col("line").fill_null("")
    if source == "xla":
        stream_planes = S.filter(plane.str.starts_with("/device:") & line.str.starts_with("Stream #"))["pid"].unique().to_list()
        device = plane.str.starts_with("/device:")
        on_stream = device & line.str.starts_with("Stream #")
        transfer = name.str.starts_with("Memcpy") | pl.col("memcpy_details").is_not_null()
        # TPU planes have no stream lines: their "XLA Ops" line is the device's execution
        xla_ops_kernels = device & (line == "XLA Ops") & ~pl.col("pid").is_in(stream_planes)
        cls = (
            pl.when(on_stream & name.str.starts_with("Memset")).then(pl.lit("memset"))
            .when(on_stream & transfer).then(pl.lit("memcpy"))
            .when(on_stream | xla_ops_kernels).then(pl.lit("kernel"))
            .otherwise(pl.lit("range"))
        )
        api = pl.col("corr").is_not_null()
        kind = (
            pl.when(device & (line == "XLA Modules")).then(pl.lit("xla_module"))
            .when(device & (line == "Steps")).then(pl.lit("step_device"))
            .when(device & (line == "XLA Ops")).then(pl.lit("xla_op"))
            .when(device).then(pl.lit("device"))
            .when(api & name.str.starts_with("cuda")).then(pl.lit("cuda_runtime"))
            .when(api & name.str.starts_with("cu")).then(pl.lit("cuda_driver"))
            .when(api & name.str.starts_with("hip")).then(pl.lit("cuda_runtime"))
            .otherwise(pl.lit("host"))
        )
        return S.with_columns(cls=cls, kind=kind)
    gpu = plane.str.contains(r"^GPU\d+$")
    cls = pl.when(gpu).then(pl.lit("kernel")).when(plane == "COPY").then(pl.lit("memcpy")).otherwise(pl.lit("range"))
    kind = (
        pl.when(plane.str.contains("HSA")).then(pl.lit("hsa_api"))
        .when(plane.str.contains("HIP")).then(pl.lit("cuda_runtime"))
        .when(plane.str.contains("KFD")).then(pl.lit("kfd_api"))
        .when(plane.str.to_lowercase().str.contains("roctx")).then(pl.lit("user_annotation"))
        .otherwise(pl.lit("host"))
    )
    return S.with_columns(cls=cls, kind=kind)


def _nest(g: list, s: list, e: list, kinds: list) -> tuple[list[int], list[int], list[int], list[int]]:
    """Parents and depths of ranges sorted by (group, start, -end, seq).

    A range's parent is the innermost earlier range of its group that contains it; a range that
    started inside another but outlives it (clock skew between CUPTI and the host profiler makes
    this common for API calls) is not its child. Also returns, per range, the innermost enclosing
    annotation and cpu_op (itself included), as indices or -1."""
    n = len(g)
    parent = [-1] * n
    depth = [0] * n
    ann = [-1] * n
    op = [-1] * n
    stack: list[int] = []
    ends: list[int] = []
    cur = None
    ann_kinds = _ANNOTATION_KINDS
    for i in range(n):
        gi = g[i]
        if gi != cur:
            stack, ends, cur = [], [], gi
        si, ei = s[i], e[i]
        while ends and (ends[-1] <= si or ends[-1] < ei):
            stack.pop()
            ends.pop()
        if stack:
            p = stack[-1]
            parent[i] = p
            depth[i] = len(stack)
            a, o = ann[p], op[p]
        else:
            a = o = -1
        k = kinds[i]
        ann[i] = i if k in ann_kinds else a
        op[i] = i if k == "cpu_op" else o
        if ei > si:  # a zero-length range contains nothing
            stack.append(i)
            ends.append(ei)
    return parent, depth, ann, op


def nest_sorted(g: np.ndarray, s: np.ndarray, e: np.ndarray, is_ann: np.ndarray, is_op: np.ndarray):
    """`_nest` for arrays sorted by (group, start, -end, seq), without a per-range Python loop.

    In a laminar family (any two ranges nested or disjoint, which exact-nanosecond Kineto traces
    are) a range's ancestors are the earlier ranges of its group, not zero-length, that end after
    it starts: depth = (such earlier ranges) - (those that ended by its start), counted with one
    binary search over packed (group, time) keys; the parent is the last earlier range one level
    up. Groups where a range only partly overlaps the one it starts in are re-done with the stack
    walk. Returns (parent, depth, innermost annotation, innermost cpu_op) as int64 arrays.

    Memory matters here (a million ranges per 300 MB of trace): arrays are freed as soon as they
    are used, and the parents are found level by level rather than with a global sort."""
    n = len(g)
    if n == 0:
        empty = np.zeros(0, np.int64)
        return empty, empty.copy(), empty.copy(), empty.copy()
    new_grp = np.empty(n, bool)
    new_grp[0] = True
    np.not_equal(g[1:], g[:-1], out=new_grp[1:])
    starts_grp = np.flatnonzero(new_grp)
    del new_grp
    nz = e > s  # zero-length ranges contain nothing
    depth = _depths(starts_grp, s, e, nz)
    parent, order, bounds, bad = _parents(depth, nz, g, s, e)
    if bad is not None:
        for lo in np.unique(starts_grp[np.searchsorted(starts_grp, bad, side="right") - 1]):
            hi = int(starts_grp[np.searchsorted(starts_grp, lo, side="right")]) if lo < starts_grp[-1] else n
            sub_p, sub_d, _, _ = _nest([0] * (hi - lo), s[lo:hi].tolist(), e[lo:hi].tolist(), [None] * (hi - lo))
            sp = np.asarray(sub_p, np.int64)
            parent[lo:hi] = np.where(sp >= 0, sp + lo, -1)
            depth[lo:hi] = sub_d
        order, bounds = _levels(depth)
    if len(bounds) - 2 > _LEVEL_LOOP_MAX:
        return parent, depth, _inherited(parent, is_ann), _inherited(parent, is_op)
    # innermost annotation / cpu_op: inherited from the parent, level by level
    ann = np.full(n, -1, np.int64)
    ann[is_ann] = np.flatnonzero(is_ann)
    op = np.full(n, -1, np.int64)
    op[is_op] = np.flatnonzero(is_op)
    for d in range(1, len(bounds) - 1):
        rows = order[bounds[d] : bounds[d + 1]]
        par = parent[rows]
        has = par >= 0
        if not has.all():
            rows, par = rows[has], par[has]
        ann[rows] = np.where(is_ann[rows], rows, ann[par])
        op[rows] = np.where(is_op[rows], rows, op[par])
    return parent, depth, ann, op


# Past this many nesting levels the level-by-level passes (a few numpy calls on one level's rows
# each, ~20 us) give way to whole-array ones: one range repeated a million times (a blown-up
# trace) nests a million deep, each twin in the one before (s15 fuzz sweep: 108 CPU-s at 200 MB).
_LEVEL_LOOP_MAX = 256


def _inherited(parent: np.ndarray, flag: np.ndarray) -> np.ndarray:
    """Per row: itself where `flag`, else its parent's value (-1 without a parent), as the
    level-by-level pass of `nest_sorted` gives it, by pointer jumping: each round, a row whose
    ancestor is still open looks past it to that one's ancestor, so rounds ~ log2(depth)."""
    n = len(parent)
    val = np.where(flag, np.arange(n, dtype=np.int64), -1)
    done = flag | (parent < 0)
    todo = np.flatnonzero(~done)
    up = parent.copy()
    while todo.size:
        j = up[todo]
        fin = done[j]
        val[todo[fin]] = val[j[fin]]
        done[todo[fin]] = True
        todo = todo[~fin]
        up[todo] = up[up[todo]]
    return val


def _depths(starts_grp: np.ndarray, s: np.ndarray, e: np.ndarray, nz: np.ndarray) -> np.ndarray:
    """Per row: non-zero ranges earlier in its group minus those of its group that end by its
    start (ends of later rows never do: they start no earlier and are not empty). Groups are
    packed into one key, group * span + time; the counts before the row's group cancel out."""
    n = len(s)
    sizes = np.diff(np.r_[starts_grp, n])
    s_min = int(s.min())
    finite = e[nz]
    finite = finite[finite < _OPEN_END]
    top = max(int(s.max()), int(finite.max()) if finite.size else s_min)
    del finite
    span = top + 2 - s_min  # an open end (or any end after every start) counts as top + 1
    # offsets need top + 1 in int64 too: a start at 2^63 - 1 (fuzz_long s17 seed 2033,
    # rocprofv3-csv-dir #1949) made np.minimum(e, top + 1) an OverflowError
    if top < 2**62 and len(starts_grp) * span < 2**62:
        q = np.repeat(np.arange(len(starts_grp), dtype=np.int64) * span - s_min, sizes)
        end = np.minimum(e, top + 1)
        end += q
        q += s
    else:  # too wide for offsets: dense time ranks instead
        times = np.sort(np.concatenate([s, e[nz]]))
        times = times[np.r_[True, times[1:] != times[:-1]]]  # (np.unique is a slow hash set in numpy 2.x)
        key = np.repeat(np.arange(len(starts_grp), dtype=np.int64) * (len(times) + 1), sizes)
        q = key + np.searchsorted(times, s)
        end = key + np.searchsorted(times, e)
        del key, times
    ends = end[nz]
    del end
    ends.sort(kind="stable")  # (nearly sorted already: the merge sort finds the runs, 7x faster)
    depth = np.cumsum(nz, dtype=np.int64)
    depth -= nz
    depth -= np.searchsorted(ends, q, side="right")
    return depth


def _levels(depth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row indices ordered by depth (ascending positions within a level), and where each level
    starts in that order."""
    maxd = int(depth.max())
    small = depth.astype(np.int16) if maxd < 2**15 else depth  # radix sort for small integers
    order = np.argsort(small, kind="stable")
    del small
    bounds = np.r_[0, np.cumsum(np.bincount(depth, minlength=maxd + 1))]
    return order, bounds


def _parents(depth, nz, g, s, e):
    """Parent of each row in a laminar family: the last non-zero row before it one level up, which
    must be of its group and contain it. Returns (parent, level order, level bounds, rows where
    that fails or None)."""
    n = len(depth)
    parent = np.full(n, -1, np.int64)
    order, bounds = _levels(depth)
    if len(bounds) - 2 > _LEVEL_LOOP_MAX:
        # every level at once: the non-zero rows keyed by (level, row) in one sorted array, each
        # row's candidate the last key before (its level - 1, itself)
        cand = order[nz[order]]
        keys = depth[cand] * n + cand
        rows = order[bounds[1]:]
        hit = np.searchsorted(keys, (depth[rows] - 1) * n + rows) - 1
        ok = hit >= 0
        p = cand[np.maximum(hit, 0)] if cand.size else np.zeros(len(rows), np.int64)
        ok &= depth[p] == depth[rows] - 1  # (else none of that level comes before it)
        ok &= (g[p] == g[rows]) & (s[p] <= s[rows]) & (e[p] >= e[rows])
        parent[rows] = np.where(ok, p, -1)
        return parent, order, bounds, (rows[~ok] if not ok.all() else None)
    bad = []
    for d in range(1, len(bounds) - 1):
        rows = order[bounds[d] : bounds[d + 1]]
        cand = order[bounds[d - 1] : bounds[d]]
        cand = cand[nz[cand]]
        hit = np.searchsorted(cand, rows) - 1
        ok = hit >= 0
        p = cand[np.maximum(hit, 0)] if cand.size else np.zeros(len(rows), np.int64)
        ok &= (g[p] == g[rows]) & (s[p] <= s[rows]) & (e[p] >= e[rows])
        parent[rows] = np.where(ok, p, -1)
        if not ok.all():
            bad.append(rows[~ok])
    return parent, order, bounds, (np.concatenate(bad) if bad else None)


def _match_begin_end(be: pl.DataFrame) -> tuple[pl.DataFrame, int, int]:
    """Pair B and E events per (pid, tid) as a stack (the Trace Event Format rule). Returns the
    B rows with `end_raw` (null when never closed), and the counts of unclosed B and stray E."""
    be = be.sort("pid", "tid", "ts_ns", "seq", nulls_last=True)
    phs = be["ph"].to_list()
    keys = list(zip(be["pid"].to_list(), be["tid"].to_list()))
    ts = be["ts_ns"].to_list()
    end = [None] * be.height
    is_begin = [False] * be.height
    stacks: dict = {}
    stray = 0
    for i, ph in enumerate(phs):
        st = stacks.setdefault(keys[i], [])
        if ph == "B":
            st.append(i)
            is_begin[i] = True
        elif st:
            end[st.pop()] = ts[i]
        else:
            stray += 1
    out = be.with_columns(end_raw=pl.Series(end, dtype=I64), _b=pl.Series(is_begin)).filter(pl.col("_b")).drop("_b")
    return out, int(out["end_raw"].null_count()), stray


_DIRECTIONS = {"h2d": "HtoD", "d2h": "DtoH", "d2d": "DtoD", "h2h": "HtoH", "p2p": "PtoP", "htod": "HtoD", "dtoh": "DtoH",
               "dtod": "DtoD", "htoh": "HtoH", "ptop": "PtoP", "hosttodevice": "HtoD", "devicetohost": "DtoH",
               "devicetodevice": "DtoD", "hosttohost": "HtoH", "peertopeer": "PtoP"}


def _direction(expr: pl.Expr) -> pl.Expr:
    key = expr.str.to_lowercase().str.replace_all(r"[^a-z0-9]", "")
    return key.replace_strict(_DIRECTIONS, default=None, return_dtype=STR)


def assemble(path: Path, parser, meta: dict, acc: _Acc, form: str | None):
    """The tables and metadata of a streamed trace, as a Profile."""
    _check_device_ids(path, meta)
    if not acc.saw_events:
        if "traceEvents" in meta:
            raise InputError(path, f"traceEvents is a JSON {type(meta['traceEvents']).__name__}, not an array of trace events")
        keys = ", ".join(list(meta)[:6])
        raise InputError(path, f"JSON object without a traceEvents array (keys: {keys}): not a trace")
    if acc.missing:
        counts: dict[str, int] = {}
        first = None
        for seq, ph, field in acc.missing:
            if seq == -1:
                counts[field] = counts.get(field, 0) + int(ph)
            elif first is None or seq < first[0]:
                first = (seq, ph, field)
        total = sum(counts.values())
        what = ", ".join(f"{n} without '{f}'" for f, n in counts.items())
        ex = f"; first: event #{acc.ordinal(first[0])} ('{first[1]}') has no '{first[2]}'" if first else ""
        raise InputError(path, f"{total} trace events lack a required field ({what}){ex}")
    n_real = sum(v for k, v in acc.phases.items() if k)
    if n_real == 0:
        raise InputError(path, "the traceEvents array holds no trace events")

    procs, threads = _names(acc)
    source = detect_source(meta, procs, acc.cats)
    base = _int_or_none(meta.get("baseTimeNanoseconds")) or 0
    if not -(2**63) <= base < 2**63:  # every start_ns would be out of the Int64 range (an OverflowError later)
        raise InputError(path, f"baseTimeNanoseconds: the integer {str(base)[:30]} is out of range (beyond 64 bits)")
    if acc.slices:
        S = _classify(_stack(acc.slices, _EV_TYPES, _SLICE_COLS), source, procs, threads)
        R = S.filter(pl.col("cls") == "range")
        D = S.filter(pl.col("cls").is_in(_DEVICE_CLASSES))
        del S
    else:
        R = _range_kinds(_stack(acc.ranges, _EV_TYPES, ("seq", "kind", "cat", "name", "pid_i", "tid_i", "ts_ns", "end_raw")))
        D = _stack(acc.devices, _EV_TYPES, _DEVICE_KEEP)  # the others are optional (`_opt`)
        D = D.with_columns(_chunked_as(cat_to_str(D[c]), D[c]) for c in ("cls", "cat", "name"))
    acc.slices = acc.ranges = acc.devices = []  # the stacked frames replace them
    D = _times(D, base, source)
    t_min = acc.t_min + base if acc.t_min is not None else None
    time_origin = "unix_epoch" if (base or (t_min is not None and t_min > 10**18)) else "relative"

    # one step after the other: running the device side beside the ranges was no faster and
    # raised the peak by the size of its working set. The device side first: its rows are
    # narrower than the stacked frame they come from, and the ranges step then keeps only the
    # launch calls of these kernels.
    K, transfers, counters = _kernel_rows(D, acc, source), _transfers(D), _counters(acc, D, base)
    del D
    box = [R]
    del R  # _ranges takes ownership: it drops stacked columns as it gathers the table
    ranges, range_stats, launch = _ranges(box, acc, source, base, K["corr"])
    kernels, metrics = _kernels(K, acc, source, meta, launch, ranges)
    md = _metadata(meta, source, acc, kernels, base, t_min, time_origin, range_stats, procs, form)
    tables = {"kernels": kernels, "ranges": ranges, "transfers": transfers, "counters": counters, "metrics": metrics}
    # a negative `dur` is no duration at all: keep the event with an unknown end, and say how many
    negative = 0
    for name in ("kernels", "ranges", "transfers"):
        df = tables[name]
        if df is not None and df.height and "duration_ns" in df.columns:
            bad = pl.col("duration_ns") < 0
            n = df.select(bad.sum()).item() or 0
            if n:
                negative += n
                cols = [c for c in ("end_ns", "duration_ns", "throughput_bytes_per_s") if c in df.columns]
                tables[name] = df.with_columns([pl.when(bad).then(None).otherwise(pl.col(c)).alias(c) for c in cols])
    if negative:
        md["negative_durations_nulled"] = negative
    return new_profile(path, parser, tables, md)


def _times(df: pl.DataFrame, base: int, source: str) -> pl.DataFrame:
    df = df.with_columns(start_ns=pl.col("ts_ns") + base, end_ns=pl.col("end_raw") + base)
    if source == "rocprof" and "r_begin" in df.columns:  # exact nanosecond times ride along in args
        df = df.with_columns(start_ns=pl.coalesce(pl.col("r_begin"), pl.col("start_ns")),
                             end_ns=pl.coalesce(pl.col("r_end"), pl.col("end_ns")))
    return df


def _ranges(box: list[pl.DataFrame], acc: _Acc, source: str, base: int,
            kernel_corr: pl.Series) -> tuple[pl.DataFrame, dict, pl.DataFrame]:
    """The ranges table, B/E pairing and nesting statistics, and the launch calls (one per
    correlation id in `kernel_corr`) with the op and annotation around each."""
    R = box.pop()

    def col(c: str, dtype=I64) -> pl.Expr:
        return pl.col(c) if c in R.columns else pl.lit(None, dtype=dtype)

    unclosed = stray = 0
    if "ph" in R.columns:
        be = R.filter(pl.col("ph").is_in(["B", "E"]))
        if be.height:
            if "pid" not in be.columns:
                be = be.with_columns(pid=pl.col("pid_i").cast(STR), tid=pl.col("tid_i").cast(STR))
            B, unclosed, stray = _match_begin_end(be.drop("end_raw"))
            # chunks without B/E events carry no phase column: their rows are complete events
            R = pl.concat([R.filter(pl.col("ph").fill_null("X") == "X"), B.select(R.columns)], how="vertical_relaxed")
        del be
    launch_kind = pl.col("kind").is_in(_LAUNCH_KINDS)
    api = R.select(pl.col("name").filter(launch_kind).drop_nulls().unique()).to_series().to_list()
    legacy_launch = _legacy_launches(R, acc) if source == "chrome" and not api and acc.flows else None
    # launches without a correlation arg: take it from the flow event that starts on them
    if acc.flows and "pid" in R.columns and R.filter(launch_kind & col("corr").is_null()).height:
        flows = _stack(acc.flows, _FLOWS)
        key = ["pid", "tid", "ts_ns"]
        starts = (flows.filter((pl.col("ph") == "s") & (pl.col("cat").fill_null("") != "fwdbwd")).sort("seq")
                  .select(*key, pl.col("fid").cast(I64, strict=False).alias("_fcorr"))
                  .with_columns(_k=pl.int_range(pl.len()).over(key)))
        R = (R.sort("seq").with_columns(_k=pl.int_range(pl.len()).over(key))
             .join(starts, on=key + ["_k"], how="left")
             .with_columns(corr=pl.when(launch_kind).then(pl.coalesce(col("corr"), pl.col("_fcorr"))).otherwise(col("corr")))
             .drop("_fcorr", "_k"))
    # times on the profile's base, computed where they are gathered (the stacked frame is not
    # rewritten); rocprof carries exact nanoseconds in args
    start = pl.col("ts_ns") + base
    end = pl.col("end_raw") + base
    if source == "rocprof" and "r_begin" in R.columns:
        start, end = pl.coalesce(pl.col("r_begin"), start), pl.coalesce(pl.col("r_end"), end)
    # nesting per thread (per stream for device ranges), in (thread, start, longest first) order,
    # which is also the order of range_id. Only the sort keys are reordered for the nesting
    # pass; each output column is gathered once at the end.
    # each id by its number, or by its text where some are not numbers (only the text ids that
    # have such values are kept as text columns: pid can be text while tid is numeric)
    def id_key(c: str) -> pl.Expr:
        if c in R.columns and (R[c + "_i"].is_null() & R[c].is_not_null()).any():
            return pl.col(c).rank("dense").fill_null(0).cast(I64)
        return pl.col(c + "_i").fill_null(-1)

    ids = [id_key("pid"), id_key("tid")]
    rocprof_times = source == "rocprof" and "r_begin" in R.columns
    perm, g, s_, e_ = _nest_order(R, ids, start.fill_null(0), end.fill_null(_OPEN_END), None if rocprof_times else base)
    flags = R.select(pl.col("kind").is_in(list(_ANNOTATION_KINDS)).alias("ann"), (pl.col("kind") == "cpu_op").alias("op"))
    parent, depth, ann, op = nest_sorted(g, s_, e_, flags["ann"].to_numpy()[perm], flags["op"].to_numpy()[perm])
    del flags, g
    # where no time was missing the sorted keys are the output columns already
    exact = not rocprof_times
    sorted_times = {"start_ns": s_ if exact and not R["ts_ns"].null_count() else None,
                    "end_ns": e_ if exact and not R["end_raw"].null_count() else None}
    del s_, e_
    renames = {n: _clean_api(n) for n in api if _clean_api(n) != n}
    device_side = pl.col("kind").is_in(_DEVICE_RANGE_KINDS)
    plane_dev = (pl.col("plane").str.extract(r"^/device:[A-Za-z_]+:(\d+)", 1).cast(I64, strict=False)
                 if "plane" in R.columns else pl.lit(None, dtype=I64))
    line_stream = (pl.col("line").str.extract(r"^Stream #(\d+)", 1).cast(I64, strict=False)
                   if "line" in R.columns else pl.lit(None, dtype=I64))
    # rocprof's chrome pid is a lane number ("CPU HSA API" = 3), not the OS process
    host_pid = pl.lit(None, dtype=I64) if source == "rocprof" else pl.col("pid_i")
    # the output, one column at a time; the stacked columns a step no longer needs are dropped
    # so the table is never held twice
    steps = [
        ("kind", pl.col("kind"), ()),
        ("name", pl.col("name"), ("name",)),
        ("domain", pl.col("cat"), ("cat",)),
        ("process_id", pl.when(device_side).then(None).otherwise(host_pid), ()),
        ("device_id", pl.when(device_side).then(pl.coalesce(col("device"), plane_dev, pl.col("pid_i"))).otherwise(col("device")), ("device", "pid_i")),
        ("thread_id", pl.when(device_side).then(None).otherwise(pl.col("tid_i")), ()),
        ("stream", pl.when(device_side).then(pl.coalesce(col("stream"), line_stream, pl.col("tid_i"))).otherwise(None), ("stream", "tid_i", "kind")),
        ("start_ns", start, ()),
        ("end_ns", end, ("ts_ns", "end_raw", "r_begin", "r_end")),
        ("correlation_id", col("corr"), ("corr",)),
        ("external_id", col("ext"), ("ext",)),
    ]
    out: dict[str, pl.Series] = {"range_id": pl.Series("range_id", np.arange(R.height, dtype=np.int64))}
    order = pl.Series("order", perm, dtype=pl.get_index_type())  # (converted once, not per gather)
    for out_name, expr, done in steps:
        if sorted_times.get(out_name) is not None:
            out[out_name] = pl.Series(out_name, sorted_times.pop(out_name))
        else:
            # evaluated in file order (a literal broadcasts to the frame), then reordered
            out[out_name] = _reordered(R.with_columns(expr.alias("_out")).get_column("_out").alias(out_name), perm, order)
        drop = [c for c in done if c in R.columns]
        if drop:
            R = R.drop(drop)
    del R, order, perm, sorted_times
    if renames:
        launch_row = pl.lit(out["kind"]).is_in(_LAUNCH_KINDS)
        out["name"] = pl.select(pl.when(launch_row).then(pl.lit(out["name"]).replace(renames)).otherwise(pl.lit(out["name"]))).to_series().alias("name")
    out["duration_ns"] = (out["end_ns"] - out["start_ns"]).cast(F64).alias("duration_ns")
    out["depth"] = pl.Series("depth", depth, dtype=I64)
    out["parent_range_id"] = pl.Series("parent_range_id", np.where(parent >= 0, parent, 0), dtype=I64).set(pl.Series(parent < 0), None)
    ranges = pl.DataFrame(out).select(
        "range_id", "kind", "name", "domain", "process_id", "thread_id", "device_id", "stream", "start_ns", "end_ns",
        "duration_ns", "depth", "parent_range_id", "correlation_id", "external_id")
    idx = np.flatnonzero(ranges.select(pl.col("kind").is_in(_LAUNCH_KINDS) & pl.col("correlation_id").is_in(kernel_corr.drop_nulls().implode()))
                         .to_series().to_numpy())
    names = ranges["name"]

    def name_at(ix: np.ndarray) -> pl.Series:
        # a gather of the name column shares its text; -1 (no such range) gathers null
        at = pl.Series(ix)
        return names.gather(pl.select(pl.when(pl.lit(at) >= 0).then(pl.lit(at))).to_series())

    launch = pl.DataFrame({
        "corr": ranges["correlation_id"].gather(idx),
        "_lpid": ranges["process_id"].gather(idx),
        "_lext": ranges["external_id"].gather(idx),
        "_lann": name_at(ann[idx]),
        "_lop": name_at(op[idx]),
    })
    launch = launch.filter(pl.col("corr").is_first_distinct())  # (`unique` copies every row's text)
    del names, ann, op
    if legacy_launch is not None and legacy_launch.height:
        launch = pl.concat([launch, legacy_launch.select(launch.columns)], how="vertical_relaxed").filter(pl.col("corr").is_first_distinct())
    return ranges, {"unclosed_ranges": unclosed, "stray_range_ends": stray}, launch


def _reordered(s: pl.Series, perm: np.ndarray, order: pl.Series) -> pl.Series:
    """`s` in the order `perm` (`order`: the same as a polars index). A stacked column has one
    chunk per chunk of the file, and polars' gather from hundreds of chunks looks each index's
    chunk up: 2x slower than copying them into one first. Integers without nulls: numpy's take,
    faster still. Categoricals become String (`cat_to_str`)."""
    if s.dtype.is_integer() and not s.null_count():
        return pl.Series(s.name, np.take(s.to_numpy(), perm), dtype=s.dtype)
    return cat_to_str(s.rechunk().gather(order))


def _legacy_launches(R: pl.DataFrame, acc: _Acc) -> pl.DataFrame | None:
    """The op behind each kernel of a legacy autograd-profiler trace: it records no runtime
    calls, and each kernel's flow starts on the op (same process, thread and start; one op can
    start several flows). Where ops share that start, the innermost (shortest) one."""
    if not {"pid", "tid"} <= set(R.columns):
        return None
    flows = _stack(acc.flows, _FLOWS)
    starts = (flows.filter((pl.col("ph") == "s") & pl.col("cat").fill_null("").str.starts_with("cpu_to_"))
              .select("pid", "tid", "ts_ns", pl.col("fid").cast(I64, strict=False).alias("corr")).drop_nulls("corr"))
    if not starts.height:
        return None
    ops = R.filter(pl.col("kind") == "cpu_op").select("pid", "tid", "ts_ns", (pl.col("end_raw") - pl.col("ts_ns")).alias("_len"),
                                                       pl.col("name").cast(STR).alias("_lop"))
    return (starts.join(ops, on=["pid", "tid", "ts_ns"], how="inner").sort("_len", nulls_last=True).unique("corr", keep="first")
            .select("corr", pl.lit(None, dtype=I64).alias("_lpid"), pl.lit(None, dtype=I64).alias("_lext"),
                    pl.lit(None, dtype=STR).alias("_lann"), "_lop"))


def _nest_order(R: pl.DataFrame, ids: list[pl.Expr], start: pl.Expr, end: pl.Expr, base: int | None):
    """The order of the nesting pass, (thread, start, longest first, seq), as a permutation of
    R's rows, and the group key, starts and ends in that order (numpy). With `base`, the times
    are R's ts_ns / end_raw plus base (added in place where no value is missing)."""
    # the (pid, tid) pair as one key: each id's rank among its distinct values, combined
    codes = [_dense_ranks(R.select(expr).to_series().to_numpy()) for expr in ids]
    width = int(codes[1].max()) + 1 if len(codes[1]) else 1
    top = (int(codes[0].max()) + 1) * width if len(codes[0]) else 1
    g = codes[0].astype(np.uint32 if top < 2**32 else np.int64)
    g *= width
    g += codes[1]
    del codes
    s = _times_array(R, "ts_ns", base, start)
    e = _times_array(R, "end_raw", base, end)
    perm = _thread_time_order(g, s, e, R["seq"])
    # (one array at a time: each unsorted one is dropped before the next is gathered)
    g = g[perm]
    s = s[perm]
    e = e[perm]
    return perm, g, s, e


def _dense_ranks(v: np.ndarray) -> np.ndarray:
    """Each value's rank among the distinct values (int64 ids: a handful of processes and
    threads). Through a table indexed by value where the values span a small range (a search in
    the sorted distinct values for each of a million rows was several times slower)."""
    if not len(v):
        return v.astype(np.uint32)
    lo, hi = int(v.min()), int(v.max())
    if hi - lo <= max(4 * len(v), 1 << 20):
        present = np.zeros(hi - lo + 1, np.uint32)
        present[v - lo] = 1
        return (np.cumsum(present, dtype=np.uint32) - 1)[v - lo]
    u = np.sort(v, kind="stable")
    u = u[np.r_[True, u[1:] != u[:-1]]]
    return np.searchsorted(u, v).astype(np.uint32)


def _thread_time_order(g: np.ndarray, s: np.ndarray, e: np.ndarray, seq: pl.Series) -> np.ndarray:
    """The permutation that sorts rows by (group, start, -end, seq).

    Writers put each thread's events in time order, so (group, start) packed into one integer is
    nearly sorted already, which numpy's stable sort (a merge sort that finds runs) orders about
    8x faster than a lexsort of the three keys; rows sharing a (group, start) are then ordered by
    the remaining keys among themselves. Rows not in file order, or times too wide to pack, take
    the lexsort."""
    in_order = seq.is_sorted()
    s_min = int(s.min()) if len(s) else 0
    span = (int(s.max()) - s_min + 1) if len(s) else 1
    if in_order and (int(g.max()) + 1 if len(g) else 1) * span < 2**62:
        key = g.astype(np.int64)
        key *= span
        key += s
        key -= s_min
        perm = np.argsort(key, kind="stable")
        ks = key[perm]
        tie = ks[1:] == ks[:-1]
        del ks
        if tie.any():  # rows of one thread starting together: longest first, then file order
            at = np.zeros(len(perm), bool)
            at[1:] |= tie
            at[:-1] |= tie
            pos = np.flatnonzero(at)
            sub = perm[pos]  # (ascending within each run: the sort is stable)
            perm[pos] = sub[np.lexsort((np.negative(e[sub]), key[sub]))]
        return perm
    # numpy's lexsort: several times faster, and lighter, than a multi-key polars sort here. It is
    # stable: rows already in file order need no seq key.
    neg_e = np.negative(e)
    return np.lexsort((neg_e, s, g) if in_order else (seq.to_numpy(), neg_e, s, g))


def _times_array(R: pl.DataFrame, col: str, base: int | None, expr: pl.Expr) -> np.ndarray:
    """R[col] + base as a writable int64 array (one copy); `expr` evaluated where a value is
    missing (its fill) or the times are not plain."""
    if base is not None and not R[col].null_count():
        a = R[col].to_numpy()
        if not a.flags.writeable:  # a view of a single-chunk column
            a = a.copy()
        a += base
        return a
    return R.select(expr).to_series().to_numpy()


def _ops_named(ranges: pl.DataFrame, ext_ids: pl.Series) -> pl.DataFrame:
    """External id -> the framework op it names (a cpu_op first, else an annotation)."""
    return (ranges.filter(pl.col("external_id").is_in(ext_ids.implode()) & pl.col("kind").is_in(["cpu_op", "user_annotation"]))
            .select("external_id", "name", "start_ns", _rank=pl.when(pl.col("kind") == "cpu_op").then(0).otherwise(1))
            .sort("_rank", "start_ns").unique("external_id", keep="first")
            .select(pl.col("external_id").alias("_ext"), pl.col("name").alias("_extname")))


_XLA_DETAIL = {
    "regs": r"(?:^|\s)regs:(\d+)",
    "static": r"static_shared:(\d+)",
    "dynamic": r"dynamic_shared:(\d+)",
    "group": r"group_mem:(\d+)",
    "grid": r"grid:(\d+),(\d+),(\d+)",
    "block": r"block:(\d+),(\d+),(\d+)",
    "occ": r"occ_pct:([0-9.]+)",
}
_SASS = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
_FLOP_GROUPS = {"fp64": "d", "fp32": "f", "fp16": "h"}


def _check_device_ids(path: Path, meta: dict) -> None:
    """A device id no Int64 holds (2**63 in deviceProperties) is damage: named here, where the path
    is known, instead of failing the device-name lookup's cast later (the loader's catch-all)."""
    props = meta.get("deviceProperties") or meta.get("computeProperties") or []
    for i, d in enumerate(props if isinstance(props, list) else []):
        did = _int_or_none(d.get("id")) if isinstance(d, dict) else None
        if did is not None and not -(2**63) <= did < 2**63:
            raise InputError(path, f"deviceProperties[{i}].id: the integer {str(did)[:30]} is out of range (beyond 64 bits)")


def _device_names(meta: dict) -> dict[int, str]:
    props = meta.get("deviceProperties") or meta.get("computeProperties") or []
    out: dict[int, str] = {}
    other = meta.get("otherData")
    if isinstance(other, dict):  # rocprof: rocminfo agents; GPU agents in order are gpu-id 0, 1, ...
        gpus = []
        for k, v in other.items():
            m = re.match(r"^Agent(\d+)\.DeviceType$", str(k))
            if m and str(v).strip().upper() == "GPU":
                n = m.group(1)
                gpus.append((int(n), other.get(f"Agent{n}.MarketingName") or other.get(f"Agent{n}.Name")))
        for i, (_, name) in enumerate(sorted(gpus)):
            if name:
                out[i] = str(name)
    if isinstance(props, list):
        for i, d in enumerate(props):
            if isinstance(d, dict) and d.get("name"):
                did = _int_or_none(d.get("id"))
                out[did if did is not None else i] = str(d["name"])
    return out


def _flow_corr(acc: _Acc, rows: pl.DataFrame) -> pl.DataFrame:
    """Correlation ids for device rows that lack one, from the flow event that ends on them."""
    if not acc.flows or not rows["corr"].null_count():
        return rows
    flows = _stack(acc.flows, _FLOWS)
    ends = flows.filter(pl.col("ph").is_in(["f", "t"]) & (pl.col("cat").fill_null("") != "fwdbwd"))
    if not ends.height:
        return rows
    # a flow binds to the slice it ends on; slices sharing (pid, tid, ts) take the flows ending
    # there in file order
    key = ["pid", "tid", "ts_ns"]
    link = (ends.sort("seq").select(*key, pl.col("fid").cast(I64, strict=False).alias("_fcorr"))
            .with_columns(_k=pl.int_range(pl.len()).over(key)))
    # rows keep their order (the caller's): their rank by seq among rows with the same key
    rows = rows.with_columns(_k=(pl.col("seq").rank("ordinal").over(key) - 1).cast(I64))
    return (rows.join(link, on=key + ["_k"], how="left", maintain_order="left")
            .with_columns(corr=pl.coalesce(pl.col("corr"), pl.col("_fcorr"))).drop("_fcorr", "_k"))


def _kernel_rows(D: pl.DataFrame, acc: _Acc, source: str) -> pl.DataFrame:
    """Kernel rows with their launch configuration and names; launch attribution comes later."""
    # range-profiler replays have no time of their own (see start_ns below): last
    K = _flow_corr(acc, _rows_by_time(D, pl.col("cls").is_in(["kernel", "prof"]), pl.col("cls") == "prof"))
    o = functools.partial(_opt, K)
    det = o("kernel_details")
    plane = pl.col("plane") if "plane" in K.columns else pl.lit(None, dtype=STR)
    line = pl.col("line") if "line" in K.columns else pl.lit(None, dtype=STR)
    xg = [det.str.extract(_XLA_DETAIL["grid"], i).cast(I64, strict=False) for i in (1, 2, 3)]
    xb = [det.str.extract(_XLA_DETAIL["block"], i).cast(I64, strict=False) for i in (1, 2, 3)]
    # rocprof: grd/wgr are HSA work-item counts (grid in work-items); blocks = ceil(grd / wgr)
    r_blocks = pl.when(o("r_wgr") > 0).then((o("r_grd") + o("r_wgr") - 1) // o("r_wgr"))
    static = det.str.extract(_XLA_DETAIL["static"], 1).cast(I64, strict=False)
    dynamic = det.str.extract(_XLA_DETAIL["dynamic"], 1).cast(I64, strict=False)
    occ = pl.coalesce(o("occ"), det.str.extract(_XLA_DETAIL["occ"], 1).cast(F64, strict=False))
    is_prof = pl.col("cls") == "prof"
    K = K.with_columns(
        device_id=pl.coalesce(pl.col("device"), o("r_gpu"), plane.str.extract(r"^(?:/device:[A-Za-z_]+:|GPU)(\d+)", 1).cast(I64, strict=False), pl.col("pid_i")),
        stream=pl.coalesce(pl.col("stream"), o("r_queue"), line.str.extract(r"^Stream #(\d+)", 1).cast(I64, strict=False), pl.col("tid_i")),
        grid_x=pl.coalesce(o("grid0"), xg[0]), grid_y=pl.coalesce(o("grid1"), xg[1]), grid_z=pl.coalesce(o("grid2"), xg[2]),
        block_x=pl.coalesce(o("block0"), xb[0]), block_y=pl.coalesce(o("block1"), xb[1]), block_z=pl.coalesce(o("block2"), xb[2]),
        registers_per_thread=pl.coalesce(o("regs"), det.str.extract(_XLA_DETAIL["regs"], 1).cast(I64, strict=False), o("r_vgpr"), o("r_vgpr2")),
        static_shared_mem_bytes=static,
        dynamic_shared_mem_bytes=dynamic,
        shared_mem_bytes=pl.coalesce(o("smem"), static + dynamic, det.str.extract(_XLA_DETAIL["group"], 1).cast(I64, strict=False), o("r_lds")),
        # 0% is what writers put when they did not compute occupancy; a kernel that ran had >0
        theoretical_occupancy_pct=pl.when(occ > 0).then(occ),
        # CUPTI range-profiler rows are replays: their times are not the kernel's
        start_ns=pl.when(is_prof).then(None).otherwise(pl.col("start_ns")),
        end_ns=pl.when(is_prof).then(None).otherwise(pl.col("end_ns")),
        kname=pl.coalesce(o("r_kname"), pl.col("name")) if "r_kname" in K.columns and K["r_kname"].null_count() < K.height else pl.col("name"),
    )
    if K["kname"].str.ends_with(".kd").any():  # AMD code-object symbols carry a ".kd" (kernel descriptor) suffix
        K = K.with_columns(kname=pl.col("kname").str.replace(r"\.kd$", ""))
    K = K.with_columns(
        grid_size=pl.coalesce(pl.col("grid_x") * pl.col("grid_y") * pl.col("grid_z"), r_blocks),
        block_size=pl.coalesce(pl.col("block_x") * pl.col("block_y") * pl.col("block_z"), o("r_wgr")),
        duration_ns=(pl.col("end_ns") - pl.col("start_ns")).cast(F64),
    )
    mangled = K.select(pl.col("kname").filter(pl.col("kname").str.starts_with("_Z")).unique()).to_series().to_list()
    if mangled:
        dem = {m: demangle(m) for m in mangled}
        K = K.with_columns(mangled_name=pl.when(pl.col("kname").str.starts_with("_Z")).then(pl.col("kname")), name=pl.col("kname").replace(dem))
    else:
        K = K.with_columns(mangled_name=pl.lit(None, dtype=STR), name=pl.col("kname"))
    # only what `_kernels` reads: a join copies each column it carries
    return K.select(o(c) if c in ("context", "hlo_op", "hlo_module", "r_pid") else pl.col(c) for c in _KERNEL_ROW_COLS)


_KERNEL_ROW_COLS = ["seq", "cat", "corr", "ext", "context", "hlo_op", "hlo_module", "r_pid", "device_id", "stream",
                    "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "grid_size", "block_size",
                    "registers_per_thread", "shared_mem_bytes", "static_shared_mem_bytes", "dynamic_shared_mem_bytes",
                    "theoretical_occupancy_pct", "start_ns", "end_ns", "duration_ns", "name", "mangled_name"]


def _kernels(K: pl.DataFrame, acc: _Acc, source: str, meta: dict, launch: pl.DataFrame, ranges: pl.DataFrame):
    # each join on its key alone, aligned to K's rows (a join copies every column it carries);
    # the right sides hold one row per key, so the heights match
    K = K.hstack(K.select("corr").join(launch, on="corr", how="left", maintain_order="left").drop("corr"))
    # Kineto's External id names the framework op, except in traces where it repeats the
    # correlation id (2022-2023 builds); it is used only to place kernels whose launch call is
    # not in the trace, and only where it is not a correlation id.
    both = pl.col("ext").is_not_null() & pl.col("corr").is_not_null()
    ext_is_corr = K.select(both.any() & (pl.col("ext") == pl.col("corr")).filter(both).all()).item()
    need = K.select(pl.concat_list("ext", "_lext").filter(pl.col("_lop").is_null()).explode().drop_nulls().unique()).to_series()
    K = K.with_columns(_extname=pl.lit(None, dtype=STR), _lextname=pl.lit(None, dtype=STR))
    if need.len() and not ext_is_corr and ranges.height:
        ops = _ops_named(ranges, need)
        X = (K.select("ext", "_lext").join(ops, left_on="ext", right_on="_ext", how="left", maintain_order="left")
             .join(ops.rename({"_extname": "_lextname"}), left_on="_lext", right_on="_ext", how="left", maintain_order="left"))
        K = K.with_columns(_extname=X["_extname"], _lextname=X["_lextname"])
        del X
    names = _device_names(meta)
    # Kineto lists devices by the process's visible ordinal while ROCm (HIP_VISIBLE_DEVICES) and
    # MTIA activities carry the physical one (kernels on device 9, one device listed as id 0):
    # when every listed device has the same name, that is the name of any device that ran them
    distinct = set(names.values())
    sole = next(iter(distinct)) if len(distinct) == 1 else None
    dev_name = pl.col("device_id").replace_strict(names, default=sole, return_dtype=STR) if names else pl.lit(None, dtype=STR)
    kernels = K.select(
        pl.lit(source).alias("source"),
        dev_name.alias("device_name"),
        "device_id", pl.lit(0, dtype=I64).alias("kernel_id"), "name", "mangled_name",
        # the innermost framework op around the launching call; else the op its External id names
        (pl.col("hlo_op") if source == "xla" else pl.coalesce(pl.col("_lop"), pl.col("_extname"), pl.col("_lextname"))).alias("op_name"),
        pl.col("hlo_module").alias("module"),
        (pl.lit("kernel") if source == "xla" else pl.col("cat")).alias("category"),
        pl.coalesce(pl.col("r_pid"), pl.col("_lpid")).alias("process_id"),
        pl.col("context").alias("context_id"),
        "stream", pl.col("corr").alias("correlation_id"),
        "start_ns", "end_ns", "duration_ns",
        "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "grid_size", "block_size",
        "registers_per_thread", "shared_mem_bytes", "static_shared_mem_bytes", "dynamic_shared_mem_bytes",
        "theoretical_occupancy_pct",
        pl.col("_lann").alias("nvtx_range"),
        "seq",
    )
    del K
    # K is in table order (`_kernel_rows`), and the joins above keep it
    kernels = kernels.with_columns(kernel_id=pl.int_range(0, kernels.height, dtype=I64))
    kernels = kernels.with_columns(short_name=map_unique(kernels["name"], short_name))
    metrics = _range_profiler_metrics(acc, kernels)
    if metrics is not None and metrics.height:
        kernels = _sass_flops(kernels, metrics)
    return kernels.drop("seq"), metrics


def _range_profiler_metrics(acc: _Acc, kernels: pl.DataFrame) -> pl.DataFrame | None:
    """CUPTI range-profiler counters (Kineto `cuda_profiler_range` events) as long-form metrics."""
    if not acc.metrics:
        return None
    m = pl.concat(acc.metrics, how="vertical").join(kernels.select("seq", "kernel_id"), on="seq", how="inner")
    return m.select("kernel_id", "metric", pl.lit("").alias("unit"), "value", pl.lit("metric").alias("kind"))


def _sass_flops(kernels: pl.DataFrame, metrics: pl.DataFrame) -> pl.DataFrame:
    """FLOPs from SASS instruction counters, an FMA counting as two (Nsight Compute's roofline
    convention); a precision is filled only when its add, mul and fma counters are all present."""
    wide = metrics.pivot(on="metric", index="kernel_id", values="value", aggregate_function="first")
    exprs = []
    for prec, p in _FLOP_GROUPS.items():
        cols = [_SASS.format(p + op) for op in ("add", "mul", "fma")]
        if all(c in wide.columns for c in cols):
            exprs.append((pl.col(cols[0]) + pl.col(cols[1]) + 2 * pl.col(cols[2])).alias(f"flops_{prec}"))
    if not exprs:
        return kernels
    fl = wide.select("kernel_id", *exprs)
    names = [c for c in fl.columns if c.startswith("flops_")]
    fl = fl.with_columns(flops_total=pl.sum_horizontal(names), flops_method=pl.lit("sass-counters"))
    return kernels.join(fl, on="kernel_id", how="left")


def _opt(df: pl.DataFrame, name: str) -> pl.Expr:
    """Column `name` of df, or a typed null where no row had it."""
    return pl.col(name) if name in df.columns else pl.lit(None, dtype=_EV_TYPES[name]).alias(name)


def _rows_by_time(D: pl.DataFrame, which: pl.Expr, untimed: pl.Expr | None = None) -> pl.DataFrame:
    """The rows of D where `which` holds, in table order: by start (null last; also where
    `untimed` holds), then file order. Gathered in that order at once: sorting the finished table
    instead would copy every column once more."""
    start = pl.col("start_ns") if untimed is None else pl.when(untimed).then(None).otherwise(pl.col("start_ns"))
    order = (D.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_i"), start.alias("_s"), "seq", which.alias("_w"))
             .filter(pl.col("_w")).sort(["_s", "seq"], nulls_last=True)["_i"])
    return D[order]


def _transfers(D: pl.DataFrame) -> pl.DataFrame | None:
    T = _rows_by_time(D, pl.col("cls").is_in(["memcpy", "memset"]))
    if not T.height:
        return None
    name = pl.col("name")
    o = functools.partial(_opt, T)
    plane = pl.col("plane") if "plane" in T.columns else pl.lit(None, dtype=STR)
    line = pl.col("line") if "line" in T.columns else pl.lit(None, dtype=STR)
    direction = pl.coalesce(
        _direction(name.str.extract(r"^Memcpy\s*(\w+)", 1)),
        _direction(name.str.extract(r"^Copy(\w+)", 1)),
        _direction(o("memcpy_details").str.extract(r"kind:(\w+)", 1)),
        _direction(o("a_kind")),
        _direction(o("a_dir")),
    )
    size = o("memcpy_details").str.extract(r"size:(\d+)", 1).cast(F64, strict=False)
    is_copy = pl.col("cls") == "memcpy"
    # ends named by the direction alone (MTIA's HOST_TO_DEVICE) where the name does not say
    ends = direction.replace_strict({"HtoD": "host>device", "DtoH": "device>host", "DtoD": "device>device", "HtoH": "host>host"},
                                    default=None, return_dtype=STR)
    # the patterns read only these texts, which repeat (a handful of distinct copy names): they
    # run once per distinct key, joined back onto the rows (per row they were most of the table's time)
    keys = ["cls", "name"] + [c for c in ("memcpy_details", "a_kind", "a_dir") if c in T.columns]
    texts = T.select(keys).unique().with_columns(
        direction=pl.when(is_copy).then(direction),
        src_kind=pl.when(is_copy).then(pl.coalesce(name.str.extract(r"\((\w+)\s*->", 1).str.to_lowercase(), ends.str.extract(r"^(\w+)>", 1))),
        dst_kind=pl.when(is_copy).then(pl.coalesce(name.str.extract(r"->\s*(\w+)\)", 1).str.to_lowercase(), ends.str.extract(r">(\w+)$", 1)))
        .otherwise(name.str.extract(r"^Memset\s*\((\w+)\)", 1).str.to_lowercase()),
        _size=size,
    )
    T = T.join(texts, on=keys, how="left", nulls_equal=True, maintain_order="left")
    T = T.with_columns(
        bytes=pl.coalesce(o("bytes"), pl.col("_size"), o("a_size")),
        device_id=pl.coalesce(pl.col("device"), plane.str.extract(r"^/device:[A-Za-z_]+:(\d+)", 1).cast(I64, strict=False), pl.col("pid_i")),
        stream=pl.coalesce(pl.col("stream"), line.str.extract(r"^Stream #(\d+)", 1).cast(I64, strict=False), pl.col("tid_i")),
        duration_ns=(pl.col("end_ns") - pl.col("start_ns")).cast(F64),
    )
    T = T.select(
        pl.lit(0, dtype=I64).alias("transfer_id"), pl.col("cls").alias("kind"), "direction", "src_kind", "dst_kind", "name", "bytes",
        "start_ns", "end_ns", "duration_ns",
        pl.when(pl.col("duration_ns") > 0).then(pl.col("bytes") / (pl.col("duration_ns") * 1e-9)).alias("throughput_bytes_per_s"),
        "device_id", "stream", pl.col("corr").alias("correlation_id"), "seq",
    )
    return T.with_columns(transfer_id=pl.int_range(0, T.height, dtype=I64)).drop("seq")


def _counters(acc: _Acc, D: pl.DataFrame, base: int) -> pl.DataFrame | None:
    frames = []
    if acc.cevents and acc.cvalues:
        ev = pl.concat(acc.cevents, how="vertical")
        vals = pl.concat(acc.cvalues, how="vertical")
        dev_pids = D.select("pid", "pid_i").unique("pid")  # a counter on a device's track belongs to it
        c = (vals.join(ev, on="seq", how="inner")
             .join(vals.group_by("seq").agg(_n=pl.len()), on="seq", how="left")
             .join(dev_pids, on="pid", how="left"))
        raw = pl.when(pl.col("_n") > 1).then(pl.concat_str([pl.col("name"), pl.col("key")], separator=".")).otherwise(pl.col("name"))
        frames.append(c.select(
            raw.alias("counter"), raw.alias("raw_name"), pl.lit(None, dtype=STR).alias("unit"),
            (pl.col("ts_ns") + base).alias("timestamp_ns"), "value", pl.col("pid_i").alias("device_id"),
        ))
    if acc.mem:
        m = pl.concat(acc.mem, how="vertical")
        dev = pl.when((pl.col("m_devtype").fill_null(0) != 0) & (pl.col("m_device") >= 0)).then(pl.col("m_device"))
        for col, counter, raw_name in (("alloc", "memory_allocated_bytes", "Total Allocated"), ("reserved", "memory_reserved_bytes", "Total Reserved")):
            frames.append(m.filter(pl.col(col).is_not_null()).select(
                pl.lit(counter).alias("counter"), pl.lit(raw_name).alias("raw_name"), pl.lit("byte").alias("unit"),
                (pl.col("ts_ns") + base).alias("timestamp_ns"), pl.col(col).alias("value"), dev.alias("device_id"),
            ))
    if not frames:
        return None
    return pl.concat(frames, how="vertical_relaxed").sort("timestamp_ns", nulls_last=True, maintain_order=True)


def _metadata(meta, source, acc, kernels, base, t_min, time_origin, range_stats, procs, form) -> dict:
    props = meta.get("deviceProperties") or meta.get("computeProperties") or []
    names = _device_names(meta)
    dist = meta.get("distributedInfo") if isinstance(meta.get("distributedInfo"), dict) else {}
    used = kernels["device_id"].drop_nulls().unique().sort().to_list() if kernels.height else []
    device_name = None
    if kernels.height and kernels["device_name"].drop_nulls().len():
        device_name = kernels["device_name"].drop_nulls().mode().sort()[0]
    elif names:
        device_name = next(iter(names.values()))
    hip = meta.get("hip_runtime_version")
    cuda = meta.get("cuda_runtime_version")
    md: dict[str, Any] = {
        "source": source,
        "tool": {"kineto": "PyTorch profiler (Kineto)", "rocprof": "rocprof", "xla": "XLA profiler (trace viewer JSON)"}.get(source),
        "device_name": device_name,
        "device_count": len(props) if isinstance(props, list) and props else (len(names) or len(used) or None),
        "cuda_version": _version(hip, "hip") if hip is not None else _version(cuda, "cuda"),
        "host": meta.get("host_name") or meta.get("hostname"),
        "capture_time": datetime.fromtimestamp(t_min / 1e9, tz=timezone.utc).isoformat() if time_origin == "unix_epoch" and t_min else None,
        "time_origin": time_origin,
        "trace_form": form,
        "event_counts": {k or "(none)": v for k, v in sorted(acc.phases.items())},
        "devices_with_activity": [int(d) for d in used],
    }
    if base:
        md["base_time_ns"] = base
    if meta.get("schemaVersion") is not None:
        md["schema_version"] = meta.get("schemaVersion")
    for k, out in (("traceName", "trace_name"), ("trace_id", "trace_id"), ("displayTimeUnit", "display_time_unit"),
                   ("cupti_version", "cupti_version"), ("roctracer_version", "roctracer_version"),
                   ("record_shapes", "record_shapes"), ("profile_memory", "profile_memory"), ("with_stack", "with_stack"),
                   ("with_flops", "with_flops"), ("with_modules", "with_modules")):
        if meta.get(k) is not None:
            md[out] = meta[k]
    if meta.get("cuda_driver_version") is not None:
        md["cuda_driver_api_version"] = _version(meta["cuda_driver_version"], "cuda")
    if meta.get("hip_driver_version") is not None:
        md["hip_driver_version"] = _version(meta["hip_driver_version"], "hip")
    if hip is not None:
        md["runtime"] = "hip"
    elif cuda is not None:
        md["runtime"] = "cuda"
    for k in ("rank", "world_size", "backend", "nccl_version"):
        if dist.get(k) is not None:
            md["distributed_backend" if k == "backend" else k] = dist[k]
    if isinstance(props, list) and props:
        keep = ("id", "name", "totalGlobalMem", "computeMajor", "computeMinor", "major", "minor", "numSms", "warpSize",
                "maxThreadsPerBlock", "maxThreadsPerMultiprocessor", "regsPerMultiprocessor", "sharedMemPerMultiprocessor")
        md["device_properties"] = [{k: d.get(k) for k in keep if k in d} for d in props if isinstance(d, dict)]
    if isinstance(meta.get("otherData"), dict):
        md["other_data"] = dict(list(meta["otherData"].items())[:200])
    if procs:
        md["process_names"] = dict(list(procs.items())[:200])
    md.update({k: v for k, v in range_stats.items() if v})
    if acc.inexact:
        md["inexact_timestamps"] = acc.inexact
    return md


# ---------------------------------------------------------------------------------------------
# the parser


class ChromeTraceParser:
    name = "chrome-trace"
    source = "chrome"
    suffixes = (".json", ".json.gz", ".pt.trace.json", ".pt.trace.json.gz", ".trace.json.gz")
    description = ("Chrome Trace Event Format: PyTorch profiler/Kineto traces (NVIDIA, AMD, MTIA, CPU-only), "
                   "rocprof chrome traces, XLA trace-viewer JSON, any other trace (.json, .json.gz)")

    def sniff(self, probe: Probe) -> bool:
        return not probe.is_dir and sniff_trace(probe.head)

    def diagnose(self, probe: Probe) -> str | None:
        return None if probe.is_dir else diagnose(probe.head)

    def read(self, path: Path, options: ReadOptions):
        path = Path(path)
        gc_was_on = gc.isenabled()
        # chunks create millions of short-lived objects; collection passes would cost more than
        # parsing and free nothing
        gc.disable()
        try:
            meta, acc, form = stream_events(path)
            return assemble(path, self, meta, acc, form)
        finally:
            if gc_was_on:
                gc.enable()


PARSER = ChromeTraceParser()
