"""Per-iteration timing logs as CSV / TSV / JSON Lines / JSON, with columns found by name.

Accepted layouts: a delimited table (comma, tab, semicolon or bar) with one header line; JSON Lines
(one object per line); a JSON array of objects; or a JSON object holding such an array under
`samples`, `records`, `results`, `data`, `measurements`, `timings` or `rows` (its other top-level
keys are run metadata, e.g. `device`, `time_source`, `time_unit`, `cache_state`).

Columns are recognised by name (case, punctuation and camelCase do not matter):
- the time: a name carrying a duration unit (`time_ms`, `latency_us`, `duration_ns`, `elapsed_s`,
  `ms`, `Time (us)`, `runtime [ms]`, `DurationNs`) — or a unit from a units row under the header,
  from the cells themselves ("1.2 ms"), from the JSON metadata's `time_unit`, or from
  `--time-unit`. Timestamp-like names (`timestamp_s`, `ts`, `start_time`, `wall_clock`, `BeginNs`)
  and rates (`items_per_s`, `tokens/sec`) are never the time. Several time columns that are
  statistics of one quantity (`AverageNs` + `TotalDurationNs`, `p50_ms` + `p99_ms`) become one
  summary row per statistic; otherwise two candidates are ambiguous and the error names them and
  says to choose with `--time-column` (ReadOptions.time_column). A wide table with one time
  column per implementation (triton.testing.perf_report's CSV) is read with the columns listed,
  `--time-column Triton,Torch`: each becomes a variant.
- iteration / run index, timestamp, SM and memory clocks, temperature, power, throttle reasons
  (nvidia-smi hex masks decoded), phase (warmup/measure), cache state, time source, device,
  benchmark name, variant, an explicit `statistic` column with its sample count, calls per sample;
- parameter columns (shape, size, dtype, batch, seq_len, N, M, K, num_*, *_size, ...) and a JSON
  `params` object go into `params` as canonical JSON. Unrecognised columns are listed in the
  profile's metadata (`ignored_columns`), never silently treated as parameters.

Messy real files load: BOM, comment lines (`#`, `//`), blank lines, a units row, trailing commas,
units in cells, NA markers. Rows whose time is missing, not a number or negative (a common failure
sentinel) are dropped and counted in metadata (`rows_dropped`).
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from profaudit.errors import InputError
from profaudit.parsers.base import Probe, ReadOptions, csv_cells, new_profile, open_maybe_gzip
from profaudit.samples import canonical_params, ns_per, parse_scalar, throttle_names

# ---------------------------------------------------------------------------------------------
# column-name analysis

_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-zµμ]+\d*|[A-Z]+\d*|\d+")
_BRACKET = re.compile(r"[\(\[]\s*([^\)\]]*?)\s*[\)\]]")

_TIME_WORDS = {"time", "times", "latency", "lat", "duration", "dur", "elapsed", "runtime", "walltime", "t"}
_TIMESTAMP_WORDS = {
    "timestamp", "timestamps", "ts", "stamp", "start", "started", "begin", "end", "ended", "stop",
    "finish", "finished", "dispatch", "complete", "completed", "submit", "submitted", "enqueue",
    "enqueued", "queued", "date", "datetime", "epoch", "utc", "at", "since", "wallclock", "tod", "when",
}
_RATE_WORDS = {"per", "throughput", "rate", "rates", "bw", "bandwidth", "flops", "tflops", "gflops", "qps", "fps", "ips", "hz", "mhz", "ghz", "khz"}
_STAT = {
    "mean": "mean", "avg": "mean", "average": "mean", "mu": "mean",
    "median": "median", "med": "median", "p50": "median", "q2": "median",
    "min": "min", "minimum": "min", "best": "min", "fastest": "min",
    "max": "max", "maximum": "max", "worst": "max", "slowest": "max",
    "std": "stdev", "stdev": "stdev", "stddev": "stdev", "sd": "stdev", "sigma": "stdev",
    "total": "total", "sum": "total",
    "q1": "q1", "p25": "q1", "q3": "q3", "p75": "q3", "iqr": "iqr",
}
_PCT = re.compile(r"p(\d{1,3}(?:\.\d+)?)\Z")
_UNIT_TOKENS = {"ns", "nsec", "nanoseconds", "us", "µs", "μs", "usec", "microseconds", "ms", "msec", "msecond", "milliseconds", "s", "sec", "secs", "seconds"}

_NA = {"", "na", "n/a", "nan", "null", "none", "-", "--", "?", "nil"}

# polars reads columns with this pattern (Rust's regex: linear time whatever the pattern)
_NUM_RE = r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-zµμ%]*)\s*$"
# the same language for Python's backtracking engine, possessive where spaces and a unit meet, or a
# run of spaces before a stray byte is split every way before the match fails (quadratic in the cell)
_NUM_PY = re.compile(r"^\s*+([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*+([A-Za-zµμ%]*+)\s*+$")


def tokens(name: str) -> list[str]:
    """'TotalDurationNs' -> ['total','duration','ns']; 'Time (us)' -> ['time','us']; 'p99_ms' -> ['p99','ms']."""
    out = []
    for part in re.split(r"[^0-9A-Za-zµμ]+", name):
        out.extend(t.lower() for t in _CAMEL.findall(part))
    return [t.replace("μ", "µ") for t in out]


def norm(name: str) -> str:
    return "_".join(tokens(name))


def stat_of(tok: str) -> str | None:
    if tok in _STAT:
        return _STAT[tok]
    m = _PCT.match(tok)
    if m:
        return f"p{m.group(1)}"
    return None


def _bracket_unit(name: str) -> tuple[str | None, str]:
    """Unit written in brackets ('Time (us)') and the name without it."""
    for m in _BRACKET.finditer(name):
        inner = m.group(1)
        if ns_per(inner) is not None or inner.lower() in ("mhz", "ghz", "khz", "hz", "w", "mw", "c", "°c", "degc"):
            return inner, (name[: m.start()] + name[m.end():]).strip()
    return None, name


def is_rate(name: str) -> bool:
    low = name.lower()
    if re.search(r"/\s*(s|sec|second|ms|us|ns)\b", low) or re.search(r"\bper[\s_]*(s|sec|second|ms|us|iter)", low):
        return True
    return any(t in _RATE_WORDS for t in tokens(name))


def is_timestamp(name: str) -> bool:
    toks = tokens(_bracket_unit(name)[1])
    if any(t in _TIMESTAMP_WORDS for t in toks):
        return True
    return "wall" in toks and "clock" in toks


def time_unit_in_name(name: str) -> str | None:
    """The duration unit a column name carries, or None ('time_ms' -> 'ms', 'elem/s' -> None)."""
    if is_rate(name):
        return None
    unit, rest = _bracket_unit(name)
    if unit is not None:
        return unit if ns_per(unit) is not None else None
    toks = tokens(rest)
    for i, t in enumerate(toks):
        if t in _UNIT_TOKENS:
            if i > 0 and toks[i - 1] == "per":
                continue
            if t in ("s", "sec") and len(toks) == 1:
                continue  # a bare 's' column is as likely a parameter as seconds
            if t == "s" and not any(x in _TIME_WORDS or stat_of(x) for x in toks if x != t):
                continue
            return t
    return None


def stem(name: str) -> tuple[str, ...]:
    """What quantity a time column measures, without unit, statistic or generic time words."""
    toks = tokens(_bracket_unit(name)[1])
    return tuple(t for t in toks if t not in _UNIT_TOKENS and t not in _TIME_WORDS and stat_of(t) is None)


def stat_in_name(name: str) -> str | None:
    for t in tokens(_bracket_unit(name)[1]):
        s = stat_of(t)
        if s:
            return s
    return None


def has_time_word(name: str) -> bool:
    return any(t in _TIME_WORDS - {"t"} for t in tokens(name))


# role tables: normalised name -> role (exact), checked after the time column is chosen
_ROLE_EXACT: dict[str, set[str]] = {
    "iteration": {"iteration", "iter", "it", "i", "idx", "index", "step", "trial", "trial_idx", "trial_index", "sample", "sample_idx", "sample_index", "sample_id", "round", "rep", "repeat", "repetition", "iter_idx", "iteration_index", "n_iter"},
    "run": {"run", "run_id", "run_idx", "run_index", "run_number", "process", "process_index", "proc", "invocation", "session"},
    "benchmark": {"benchmark", "bench", "benchmark_name", "bench_name", "name", "kernel", "kernel_name", "op", "op_name", "operation", "test", "test_name", "case", "case_name", "problem", "problem_name", "workload", "model", "model_name", "function", "func", "task"},
    "variant": {"variant", "impl", "implementation", "backend", "method", "provider", "algorithm", "algo", "library", "lib", "candidate", "label", "strategy", "approach", "kernel_variant", "version_name", "config_name"},
    "statistic": {"statistic", "stat", "aggregate", "agg", "summary", "aggregate_name"},
    "sample_count": {"sample_count", "count", "rounds", "n_rounds", "calls", "n_samples", "num_samples", "samples", "num_trials", "trials", "reps", "num_runs", "instances", "num_calls", "n_calls"},
    "calls_per_sample": {"calls_per_sample", "number_per_run", "iterations_per_sample", "inner_iterations", "iters_per_sample", "calls_per_iter", "inner_loops"},
    "phase": {"phase", "stage_kind", "is_warmup", "warmup", "warm_up"},
    "cache_state": {"cache_state", "cache", "l2_state", "l2_flush", "flush_l2", "flush_cache", "cache_flush", "cold", "l2_flushed"},
    "time_source": {"time_source", "timer", "timing_method", "clock_source", "timing_source", "time_method"},
    "device_name": {"device_name", "device", "gpu", "gpu_name", "hardware", "accelerator", "gpu_model"},
}
_PARAM_EXACT = {
    "shape", "shapes", "size", "sizes", "dtype", "dtypes", "data_type", "datatype", "precision", "layout",
    "batch", "batch_size", "bs", "mb", "microbatch", "globalbatch", "global_batch", "seq", "seqlen", "seq_len",
    "sequence_length", "n", "m", "k", "b", "h", "d", "l", "c", "heads", "num_heads", "nheads", "head_dim", "hidden",
    "hidden_size", "dim", "dims", "ndim", "tp", "tp_degree", "pp", "dp", "world_size", "problem_size", "input_size",
    "output_size", "input_length", "output_length", "topk", "top_k", "stride", "strides", "transpose", "trans_a",
    "trans_b", "tile", "tile_m", "tile_n", "tile_k", "block_m", "block_n", "block_k", "block_size", "stages",
    "num_stages", "warps", "num_warps", "split_k", "splitk", "groups", "group_size", "channels", "in_channels",
    "out_channels", "kernel_size", "elements", "bytes", "load_factor", "threads", "axis", "causal", "sparsity",
    "density", "nnz", "rows", "cols", "nrows", "ncols", "vocab", "vocab_size", "experts", "num_experts", "mode",
    "grid", "block", "shape_m", "shape_n", "shape_k", "workload_size", "input_shape", "dtype_a", "dtype_b",
}
_PARAM_RE = re.compile(r"^(num|n)_[a-z0-9_]+$|^[a-z0-9_]+_(size|sizes|len|length|dim|dims|shape|dtype|type|elements|bytes|tokens)$|^(dim|size|shape)_[a-z0-9_]+$")

_CLOCK_SM = re.compile(r"(^|_)(sm|graphics|gfx|core|gpu|shader)_?(clock|clk|clocks|freq|frequency)($|_)|^clocks?_(current_)?(sm|graphics|gr)($|_)|^(sm|core|graphics)_(mhz|ghz|khz|hz)$|^clock(_rate)?($|_)")
_CLOCK_MEM = re.compile(r"(^|_)(mem|memory|hbm|dram)_?(clock|clk|clocks|freq|frequency)($|_)|^clocks?_(current_)?(mem|memory)($|_)|^(mem|memory)_(mhz|ghz|khz|hz)$")
_TEMP = re.compile(r"(^|_)(temp|temperature)($|_)")
_POWER = re.compile(r"(^|_)power($|_)")
_POWER_LIMIT = re.compile(r"limit|enforced|max|min|default|cap")
_THROTTLE = re.compile(r"(^|_)(throttle|throttling|throttled|clocks_event|event_reasons|clocks_throttle)(_|$)")

def decode_throttle(value: Any) -> str | None:
    """'0x0000000000000004' -> 'sw_power_cap'; 0 -> 'none'; text kept as it is."""
    if value is None:
        return None
    s = str(value).strip()
    if s.lower() in _NA:
        return None
    try:
        mask = int(s, 16) if s.lower().startswith("0x") else int(s)
    except ValueError:
        return s
    return throttle_names(mask)


def _freq_factor_mhz(unit: str | None) -> float:
    u = (unit or "mhz").lower()
    return {"hz": 1e-6, "khz": 1e-3, "mhz": 1.0, "ghz": 1e3}.get(u, 1.0)


def _unit_token(name: str, options: tuple[str, ...]) -> str | None:
    b, rest = _bracket_unit(name)
    if b and b.lower() in options:
        return b.lower()
    for t in tokens(name):
        if t in options:
            return t
    return None


# ---------------------------------------------------------------------------------------------
# sniffing

_REJECT_TEXT = (
    "==PROF==", '"ID","Process ID"', "Time (%),Total Time", '"Time (%)","Total Time', "NOTICE: ", "Processing [",
    '"traceEvents"', "profaudit-timing", "Benchmark,Device,Device Name",
)
_RECORD_KEYS = ("samples", "records", "results", "data", "measurements", "timings", "rows")


def _header_line(text: str) -> tuple[int, str | None]:
    lines = text.splitlines()
    for i, line in enumerate(lines[:200]):
        s = line.strip().lstrip("\ufeff")
        if not s or s.startswith("#") or s.startswith("//"):
            continue
        return i, s
    return -1, None


def _delimiter(line: str) -> str | None:
    counts = {d: _split(line, d) for d in (",", "\t", ";", "|")}
    best = max(counts, key=lambda d: len(counts[d]))
    return best if len(counts[best]) >= 2 else None


def _split(line: str, delim: str) -> list[str]:
    cells = csv_cells(line, delim)
    return line.split(delim) if cells is None else cells


def _looks_timed(names: list[str]) -> bool:
    for n in names:
        if not n or is_timestamp(n):
            continue
        if time_unit_in_name(n) or (has_time_word(n) and not is_rate(n)):
            return True
    return False


def _numeric_body(text: str, header_idx: int, delim: str | None) -> bool:
    if not delim:
        return False
    for line in text.splitlines()[header_idx + 1: header_idx + 6]:
        if not line.strip() or line.lstrip().startswith(("#", "//")):
            continue
        cells = _split(line, delim)
        if any(_NUM_PY.match(c) and _NUM_PY.match(c).group(2) == "" for c in cells):
            return True
    return False


def _json_first_keys(text: str) -> list[str] | None:
    s = text.lstrip("\ufeff \t\r\n")
    if s.startswith("["):
        body = s[1:].lstrip()
    elif s.startswith("{"):
        m = re.search(r'"(%s)"\s*:\s*\[\s*' % "|".join(_RECORD_KEYS), s)
        if m is None:
            first_line = s.split("\n", 1)[0]
            body = first_line  # JSON Lines: the first object is the first line
        else:
            body = s[m.end():]
    else:
        return None
    if not body.startswith("{"):
        return None
    end = body.find("}")
    chunk = body[: end if end > 0 else len(body)]
    return re.findall(r'"((?:[^"\\]|\\.)*)"\s*:', chunk)


def sniff_table(probe: Probe) -> bool:
    if probe.is_dir or not probe.head:
        return False
    text = probe.text
    if any(tok in text[:4096] for tok in _REJECT_TEXT):
        return False
    s = text.lstrip("\ufeff \t\r\n")
    if s.startswith("{") or s.startswith("["):
        keys = _json_first_keys(text)
        return bool(keys) and _looks_timed(keys)
    if "\x00" in text[:4096]:
        return False
    i, header = _header_line(text)
    if header is None:
        return False
    d = _delimiter(header)
    names = _split(header, d) if d else [header]
    if any(re.search(r"\d+\.\d+", n) or _NUM_PY.match(n) for n in names):
        return False  # numbers in the first line: a data or prose line, not a header
    if d is None and not time_unit_in_name(header):
        return False
    if any("__" in n for n in names[:3]) and any(n.startswith(("gpu__", "sm__", "dram__", "launch__")) for n in names):
        return False  # Nsight Compute raw-metric CSV
    if _looks_timed(names):
        return True
    if len(names) >= 2 and probe.name_endswith(".csv", ".tsv", ".csv.gz", ".tsv.gz") and _numeric_body(text, i, d):
        # A numeric table without a recognisable time column is still a table: claiming it makes
        # --time-column work on it and the error name its columns.
        return True
    # a units row under the header can carry the time unit
    lines = [l for l in text.splitlines()[i + 1: i + 4] if l.strip() and not l.lstrip().startswith("#")]
    if lines and d:
        cells = _split(lines[0], d)
        return any(ns_per(c) is not None for c in cells) and _is_units_row(cells)
    return False


# ---------------------------------------------------------------------------------------------
# loading into a raw frame


def _is_units_row(cells: list[str]) -> bool:
    vals = [c.strip() for c in cells if c.strip()]
    if not vals:
        return False
    unitish = re.compile(r"^[\[\(]?[A-Za-zµμ%°/_\-. ]{1,16}[\]\)]?$")
    if any(_NUM_PY.match(v) and _NUM_PY.match(v).group(2) == "" for v in vals):
        return False
    known = sum(1 for v in vals if ns_per(v.strip("[]()")) is not None or v.strip("[]()").lower() in ("mhz", "ghz", "khz", "hz", "w", "mw", "c", "%", "-", "degc", "°c", "byte", "bytes", "block", "thread", "cycle", "count"))
    return all(unitish.match(v) for v in vals) and known >= max(1, len(vals) // 2)


def _read_bytes(path: Path) -> bytes:
    try:
        with open_maybe_gzip(path) as f:
            raw = f.read()
    except (EOFError, OSError, zlib.error) as exc:  # a cut or damaged .gz (EOFError reached the catch-all)
        raise InputError(path, f"damaged or cut gzip file: {exc}") from None
    return raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw


def _decode(b: bytes) -> str:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b.decode("latin-1")


def _next_content_line(raw: bytes, pos: int) -> tuple[int, int]:
    """(start, end) of the first line at or after `pos` that is neither blank nor a comment."""
    n = len(raw)
    while pos < n:
        end = raw.find(b"\n", pos)
        end = n if end < 0 else end
        s = raw[pos:end].strip()
        if s and not s.startswith((b"#", b"//")):
            return pos, end
        pos = end + 1
    return -1, -1


def _load_delimited(path: Path, raw: bytes) -> tuple[pl.DataFrame, dict[str, str], list[str]]:
    """Parse the table with polars from the header on; only the header area is looked at in Python."""
    notes: list[str] = []
    hs, he = _next_content_line(raw, 0)
    if hs < 0:
        raise InputError(path, "no header line found (only blank or comment lines)")
    header = _decode(raw[hs:he]).strip()
    delim = _delimiter(header) or ","
    names = [n.strip() for n in _split(header, delim)]
    units: dict[str, str] = {}
    body_from = he + 1
    us, ue = _next_content_line(raw, body_from)
    if us >= 0:
        cells = _split(_decode(raw[us:ue]).rstrip("\r"), delim)
        if _is_units_row(cells):
            units = {n: c.strip().strip("[]()") for n, c in zip(names, cells) if n and c.strip()}
            notes.append("units row under the header")
            body_from = ue + 1
    if body_from == he + 1:
        data = raw if hs == 0 else raw[hs:]
    else:  # drop the units row: header line + the rest
        data = raw[hs:he] + b"\n" + raw[body_from:]
    comment = None
    # comments are rare in big logs: a memchr-speed find first, the line-start check only then
    if data.find(b"#") >= 0 and (b"\n#" in data or data.startswith(b"#")):
        comment = "#"
    elif data.find(b"//") >= 0 and b"\n//" in data:
        comment = "//"
    kw = dict(separator=delim, comment_prefix=comment, truncate_ragged_lines=True, quote_char='"')
    # NA markers are not declared to polars (that costs 2x on big files): a numeric column that
    # holds them reads as text, and text columns go through the same number extraction anyway.
    attempts = (dict(infer_schema_length=10000), dict(infer_schema=False), dict(infer_schema=False, encoding="utf8-lossy"))
    df = None
    for extra in attempts:
        try:
            df = pl.read_csv(data, **kw, **extra)
            break
        except pl.exceptions.NoDataError as exc:
            raise InputError(path, f"malformed table: {str(exc).splitlines()[0]}") from None
        except pl.exceptions.ComputeError as exc:
            err = exc
    if df is None:
        raise InputError(path, f"malformed table: {str(err).splitlines()[0]}")
    # trailing delimiters make unnamed, empty columns
    drop = [c for c in df.columns if (not c.strip() or re.fullmatch(r"_duplicated_\d+", c)) and df.get_column(c).null_count() == df.height]
    df = df.drop(drop)
    stripped = [c.strip() for c in df.columns]
    if len(set(stripped)) < len(stripped):
        # a stray quote in the header (seen when fuzzing) runs names together and splits them
        # elsewhere, leaving ' 1' beside '1'
        twice = next(c for c in stripped if stripped.count(c) > 1)
        raise InputError(path, f"malformed table: two columns are named {twice!r} (blanks aside); check the header line's quotes")
    df = df.rename({c: c.strip() for c in df.columns if c != c.strip()})
    if df.width:
        df = df.filter(~pl.all_horizontal(pl.all().is_null()))
    return df, units, notes


def _load_json(path: Path, text: str) -> tuple[pl.DataFrame, dict[str, Any], list[str]]:
    import orjson

    from profaudit.parsers.textsafe import check_orjson_room

    s = text.lstrip()
    meta: dict[str, Any] = {}
    records = None
    check_orjson_room(path, len(text), "JSON document")
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        obj = None
        if s.startswith("{") and "\n" in s.strip():
            records = _json_lines(path, text)
        else:
            raise InputError(path, f"not valid JSON: {exc}") from None
    if records is None:
        if isinstance(obj, list):
            records = obj
        elif isinstance(obj, dict):
            key = next((k for k in _RECORD_KEYS if isinstance(obj.get(k), list)), None)
            if key is None:
                records = [obj]
            else:
                records = obj[key]
                meta = {k: v for k, v in obj.items() if k != key}
                if isinstance(meta.get("meta"), dict):
                    meta = {**meta.pop("meta"), **meta}
        else:
            raise InputError(path, "JSON holds neither records nor an object")
    if not records:
        raise InputError(path, "holds no timing records")
    bad = next((r for r in records if not isinstance(r, dict)), None)
    if bad is not None:
        raise InputError(path, f"records must be JSON objects; found {type(bad).__name__} {str(bad)[:40]!r}")
    _check_expansion(path, records, len(text))
    return _records_frame(path, records), meta, []


# A table is records x the union of their keys. Records that each bring their own keys (a JSON
# map of problem names, not a log) make that product grow with the square of the file: a 428 KB
# file became a ~4 GB frame before anything could refuse it. Counted before the frame is built.
MAX_CELLS_PER_INPUT_BYTE = 16
MIN_CELL_BUDGET = 2_000_000


def _check_expansion(path: Path, records: list[dict], input_bytes: int) -> None:
    keys: set = set()
    budget = max(MIN_CELL_BUDGET, MAX_CELLS_PER_INPUT_BYTE * input_bytes)
    for r in records:
        keys.update(r.keys())
        if len(records) * len(keys) > budget:
            raise InputError(
                path,
                f"{len(records):,} records with at least {len(keys):,} different keys would make a table of more than "
                f"{budget:,} cells from {input_bytes:,} bytes: not a timing log (the records of a log share their field names)",
            )


def _json_lines(path: Path, text: str) -> list[dict]:
    import orjson

    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(orjson.loads(line))
        except orjson.JSONDecodeError as exc:
            raise InputError(path, f"line {n} is not valid JSON: {exc}") from None
    return out


def _records_frame(path: Path, records: list[dict]) -> pl.DataFrame:
    try:
        df = pl.from_dicts(records, infer_schema_length=None)
    except Exception:  # mixed value types in one key: fall back to text, parsed like CSV cells
        keys: dict[str, None] = {}
        for r in records:
            keys.update(dict.fromkeys(r))
        cols = {k: [_as_text(r.get(k)) for r in records] for k in keys}
        df = pl.DataFrame(cols, schema={k: pl.Utf8 for k in keys})
    nested = {c: t for c, t in df.schema.items() if isinstance(t, (pl.Struct, pl.List, pl.Array)) and c != "params"}
    if nested:
        df = df.with_columns([pl.col(c).map_elements(lambda v: json.dumps(_plain(v), sort_keys=True), return_dtype=pl.Utf8) for c in nested])
    if "params" in df.columns and isinstance(df.schema["params"], pl.Struct):
        df = df.with_columns(pl.col("params").map_elements(lambda v: canonical_params({k: x for k, x in v.items() if x is not None}), return_dtype=pl.Utf8))
    elif "params" in df.columns and df.schema["params"] != pl.Utf8:
        df = df.with_columns(pl.col("params").cast(pl.Utf8))
    return df


def _plain(v):
    if hasattr(v, "to_list"):
        return v.to_list()
    return v


def _as_text(v) -> str | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True)
    return repr(v) if isinstance(v, float) else str(v)


# ---------------------------------------------------------------------------------------------
# classification and building the samples frame


def _shorten(names: list[str], n: int = 14) -> str:
    shown = ", ".join(repr(x) for x in names[:n])
    return shown + (f", … ({len(names) - n} more)" if len(names) > n else "")


def _num(df: pl.DataFrame, col: str) -> pl.Expr:
    """Column as Float64; text cells may carry a unit ('1.5 ms'), NA markers become null."""
    t = df.schema[col]
    if t.is_numeric():
        return pl.col(col).cast(pl.Float64)
    if t == pl.Boolean:
        return pl.col(col).cast(pl.Float64)
    return pl.col(col).cast(pl.Utf8).str.extract(_NUM_RE, 1).cast(pl.Float64, strict=False)


def _cell_unit(df: pl.DataFrame, col: str) -> pl.Expr:
    if df.schema[col] != pl.Utf8:
        return pl.lit(None, dtype=pl.Utf8)
    return pl.col(col).str.extract(_NUM_RE, 2).str.to_lowercase()


def _cell_units_seen(df: pl.DataFrame, col: str, limit: int = 1000) -> set[str]:
    if df.schema[col] != pl.Utf8:
        return set()
    vals = df.get_column(col).head(limit).str.extract(_NUM_RE, 2).drop_nulls().str.to_lowercase().unique().to_list()
    return {v for v in vals if v}


def _find_column(df: pl.DataFrame, wanted: str) -> str | None:
    if wanted in df.columns:
        return wanted
    low = {c.lower(): c for c in df.columns}
    if wanted.lower() in low:
        return low[wanted.lower()]
    nm = {norm(c): c for c in df.columns}
    return nm.get(norm(wanted))


class _Choice:
    def __init__(self, cols: list[tuple[str, str | None, str | None]], stats: bool):
        self.cols = cols  # (column, unit or None when the cells carry it, statistic or None)
        self.stats = stats


def column_unit(c: str, units_row: dict[str, str]) -> str | None:
    """A column's time unit: from its name, else from the units row under the header (never for a
    timestamp-named column, whose unit is not a duration's)."""
    u = time_unit_in_name(c)
    if u is None and c in units_row and ns_per(units_row[c]) is not None and not is_timestamp(c):
        u = units_row[c]
    return u


def choose_time(path: Path, df: pl.DataFrame, units_row: dict[str, str], options: ReadOptions, meta_unit: str | None) -> _Choice:
    user_unit = options.time_unit
    if user_unit is not None and ns_per(user_unit) is None:
        raise InputError(path, f"--time-unit {user_unit!r} is not a time unit (use ns, us, ms or s)")

    def unit_of(c: str) -> str | None:
        return column_unit(c, units_row)

    cands = [c for c in df.columns if not is_timestamp(c) and unit_of(c) is not None]
    if options.time_column:
        col = _find_column(df, options.time_column)
        if col is None:
            raise InputError(path, f"no column {options.time_column!r} (from --time-column); columns: {_shorten(df.columns)}")
        named_unit = unit_of(col)
        if user_unit and named_unit and ns_per(user_unit) != ns_per(named_unit):
            raise InputError(path, f"--time-unit {user_unit} contradicts the unit {named_unit!r} in column {col!r}")
        unit = named_unit or user_unit or meta_unit
        if unit is None:
            seen = _cell_units_seen(df, col)
            if not seen or any(ns_per(u) is None for u in seen):
                raise InputError(path, f"time column {col!r} has no unit in its name or cells; give it with --time-unit ns|us|ms|s")
        st = stat_in_name(col)
        family = [c for c in cands if c != col and stem(c) == stem(col) and stat_in_name(c) is not None]
        if st is None:
            return _Choice([(col, unit, None)], False)
        chosen = [(col, unit, st)]
        seen_stats = {st}
        for c in family:
            s = stat_in_name(c)
            if s not in seen_stats:
                seen_stats.add(s)
                chosen.append((c, unit_of(c), s))
        return _Choice(chosen, True)
    if not cands:
        unitless = [c for c in df.columns if has_time_word(c) and not is_timestamp(c) and not is_rate(c)]
        if len(unitless) == 1:
            col = unitless[0]
            unit = user_unit or meta_unit
            seen = _cell_units_seen(df, col)
            if unit or (seen and all(ns_per(u) is not None for u in seen)):
                st = stat_in_name(col)
                return _Choice([(col, unit, st)], st is not None)
            raise InputError(path, f"time column {col!r} has no unit in its name or cells; give it with --time-unit ns|us|ms|s")
        if len(unitless) > 1:
            raise InputError(path, f"{len(unitless)} candidate time columns without units: {_shorten(unitless)}; choose one with --time-column NAME and give --time-unit ns|us|ms|s")
        raise InputError(
            path,
            f"no time column among {_shorten(list(df.columns))} (a time column's name carries its unit, e.g. time_ms, latency_us, 'Time (ns)'); "
            "name it with --time-column NAME and give --time-unit ns|us|ms|s",
        )
    if user_unit and len(cands) == 1 and ns_per(user_unit) != ns_per(unit_of(cands[0])):
        raise InputError(path, f"--time-unit {user_unit} contradicts the unit in column {cands[0]!r}")
    families: dict[tuple[str, ...], list[str]] = {}
    for c in cands:
        families.setdefault(stem(c), []).append(c)
    if len(families) == 1:
        fam = next(iter(families.values()))
        raws = [c for c in fam if stat_in_name(c) is None]
        stats = [stat_in_name(c) for c in fam if stat_in_name(c) is not None]
        if len(raws) == 1:
            return _Choice([(raws[0], unit_of(raws[0]), None)], False)
        if not raws and len(set(stats)) == len(stats):
            return _Choice([(c, unit_of(c), stat_in_name(c)) for c in fam], True)
    desc = ", ".join(f"{c!r} ({unit_of(c)})" for c in cands[:12]) + (f", … ({len(cands) - 12} more)" if len(cands) > 12 else "")
    raise InputError(path, f"{len(cands)} candidate time columns: {desc}; choose one with --time-column NAME, or list several (--time-column A,B) to read each as a variant")


def _role_columns(df: pl.DataFrame, taken: set[str]) -> dict[str, str]:
    roles: dict[str, str] = {}
    normed = {c: norm(c) for c in df.columns if c not in taken}
    for role, names in _ROLE_EXACT.items():
        for c, n in normed.items():
            if n in names and c not in roles.values():
                if role == "benchmark" and df.schema[c].is_numeric():
                    continue
                roles[role] = c
                break
    used = set(roles.values()) | taken
    # the timestamp: a start-of-iteration stamp beats a generic one, which beats dispatch/submit
    stamps = []
    for c in normed:
        if c in used or not is_timestamp(c):
            continue
        toks = tokens(c)
        if any(t in ("end", "ended", "stop", "finish", "finished", "complete", "completed") for t in toks):
            continue
        rank = 0 if any(t in ("start", "started", "begin") for t in toks) else 1 if any(t in ("timestamp", "ts", "stamp", "time", "datetime", "date") for t in toks) else 2
        stamps.append((rank, c))
    if stamps:
        roles["timestamp"] = min(stamps, key=lambda x: x[0])[1]
        used.add(roles["timestamp"])
    for c in normed:
        if c in used:
            continue
        base = norm(_bracket_unit(c)[1])
        if "sm_clock" not in roles and _CLOCK_SM.search(base) and not _CLOCK_MEM.search(base):
            roles["sm_clock"] = c
        elif "mem_clock" not in roles and _CLOCK_MEM.search(base):
            roles["mem_clock"] = c
        elif "temperature" not in roles and _TEMP.search(base) and "memory" not in base and "mem" not in base.split("_"):
            roles["temperature"] = c
        elif "power" not in roles and _POWER.search(base) and not _POWER_LIMIT.search(base):
            roles["power"] = c
        elif "throttle" not in roles and _THROTTLE.search(base) and (base.endswith("active") or base.split("_")[-1] in ("reasons", "reason", "throttle", "throttling", "throttled", "mask")):
            roles["throttle"] = c
        else:
            continue
        used.add(c)
    return roles


def _param_columns(df: pl.DataFrame, used: set[str]) -> list[str]:
    out = []
    for c in df.columns:
        if c in used or c == "params":
            continue
        n = norm(_bracket_unit(c)[1])
        if n in _PARAM_EXACT or _PARAM_RE.match(n):
            out.append(c)
    return out


def _params_expr(df: pl.DataFrame, cols: list[str], json_col: str | None) -> tuple[pl.DataFrame, str]:
    """Attach a canonical `params` JSON column built from parameter columns (per unique combination)."""
    key_cols = cols + ([json_col] if json_col else [])
    if not key_cols:
        return df.with_columns(pl.lit("{}").alias("__params")), "__params"
    as_text = [pl.col(c).cast(pl.Utf8).fill_null("\x00") for c in key_cols]
    df = df.with_columns(pl.concat_str(as_text, separator="\x1f").alias("__pkey"))
    combos = df.select(["__pkey", *key_cols]).unique(subset="__pkey", maintain_order=True)
    mapping = {}
    for row in combos.iter_rows(named=True):
        d: dict[str, Any] = {}
        if json_col and row[json_col]:
            try:
                extra = json.loads(row[json_col])
            except ValueError:
                extra = {"params": row[json_col]}
            if isinstance(extra, dict):
                d.update(extra)
        for c in cols:
            v = row[c]
            if v is None or (isinstance(v, str) and v.strip().lower() in _NA):
                continue
            v = parse_scalar(v) if isinstance(v, str) else v
            if isinstance(v, str) and v[:1] in "[{":
                try:
                    v = json.loads(v)
                except ValueError:
                    pass
            d[c] = v
        mapping[row["__pkey"]] = canonical_params(d)
    df = df.with_columns(pl.col("__pkey").replace_strict(mapping, return_dtype=pl.Utf8).alias("__params")).drop("__pkey")
    return df, "__params"


def _map_unique(df: pl.DataFrame, col: str, fn) -> pl.Expr:
    """`fn` applied once per distinct value (columns like phase have few), then mapped back."""
    text = pl.col(col).cast(pl.Utf8)
    vals = df.get_column(col).cast(pl.Utf8).unique().to_list()
    mapping = {v: fn(v) for v in vals if v is not None}
    return text.replace_strict(mapping, default=None, return_dtype=pl.Utf8)


def _norm_phase(v: str | None) -> str | None:
    if v is None:
        return None
    s = str(v).strip().lower()
    if s in ("warmup", "warm-up", "warm_up", "warm", "wu", "true", "1", "yes"):
        return "warmup"
    if s in ("measure", "measurement", "measured", "timed", "bench", "benchmark", "run", "main", "false", "0", "no", "steady"):
        return "measure"
    return s or None


def _norm_cache(v: str | None, flag_column: bool) -> str | None:
    if v is None:
        return None
    s = str(v).strip().lower()
    if flag_column:
        if s in ("true", "1", "yes", "y", "on", "1.0"):
            return "cold"
        if s in ("false", "0", "no", "n", "off", "0.0"):
            return "hot"
    if s in ("cold", "flushed", "flush", "l2_flushed", "cleared"):
        return "cold"
    if s in ("hot", "warm", "cached", "noflush", "no_flush"):
        return "hot"
    return "unknown"


def _norm_stat(v: str | None) -> str | None:
    if v is None:
        return None
    s = str(v).strip().lower()
    if s in ("", "raw", "sample", "samples", "none", "null", "iteration"):
        return None
    return stat_of(s) or s


def _unpivot_variants(path: Path, df: pl.DataFrame, units_row: dict[str, str], options: ReadOptions, meta_unit: str | None):
    """A wide table (triton.testing.perf_report's CSV: x columns, then one time column per provider),
    named with `--time-column A,B,...`: one row per (row, listed column), the column name as the
    variant, the times converted to ns with the unit in each name or --time-unit."""
    wanted = [w.strip() for w in options.time_column.split(",") if w.strip()]
    cols = []
    for w in wanted:
        c = _find_column(df, w)
        if c is None:
            raise InputError(path, f"no column {w!r} (from --time-column); columns: {_shorten(df.columns)}")
        if c in cols:
            raise InputError(path, f"column {c!r} is listed twice in --time-column")
        cols.append(c)
    if len(cols) < 2:
        raise InputError(path, f"--time-column {options.time_column!r}: list two or more columns, or name one without a comma")
    if _find_column(df, "variant") is not None:
        raise InputError(path, "--time-column with several columns makes each one a variant, but the log already has a variant column")
    factors = {}
    for c in cols:
        u = column_unit(c, units_row) or options.time_unit or meta_unit
        if u is None:
            raise InputError(path, f"time column {c!r} has no unit in its name; give it with --time-unit ns|us|ms|s")
        if options.time_unit and time_unit_in_name(c) and ns_per(options.time_unit) != ns_per(time_unit_in_name(c)):
            raise InputError(path, f"--time-unit {options.time_unit} contradicts the unit in column {c!r}")
        factors[c] = ns_per(u)
    index = [c for c in df.columns if c not in cols]
    converted = df.with_columns([(_num(df, c) * factors[c]).alias(c) for c in cols])
    long = converted.unpivot(on=cols, index=index, variable_name="variant", value_name="time_ns")
    # the row's position (perf_report's x values) stays the order within each variant
    note = f"wide table: columns {', '.join(repr(c) for c in cols)} read as variants (from --time-column)"
    return long, {k: v for k, v in units_row.items() if k not in cols}, replace(options, time_column="time_ns", time_unit=None), note


def build_samples(path: Path, df: pl.DataFrame, units_row: dict[str, str], meta: dict[str, Any], options: ReadOptions) -> tuple[pl.DataFrame, dict[str, Any]]:
    """The samples rows of one raw table, and the facts for the profile's metadata."""
    if df.height == 0:
        raise InputError(path, "holds a header but no rows")
    meta_unit = meta.get("time_unit") or meta.get("unit")
    meta_unit = meta_unit if isinstance(meta_unit, str) and ns_per(meta_unit) is not None else None
    wide_note = None
    if options.time_column and "," in options.time_column:
        df, units_row, options, wide_note = _unpivot_variants(path, df, units_row, options, meta_unit)
    choice = choose_time(path, df, units_row, options, meta_unit)
    time_cols = {c for c, _, _ in choice.cols}
    roles = _role_columns(df, time_cols)
    used = set(roles.values()) | time_cols
    read_notes: list[str] = [wide_note] if wide_note else []
    if len(choice.cols) == 1 and choice.cols[0][2] is not None and "iteration" in roles:
        # 'avg_ms' beside an iteration column: each row is one timed iteration (averaging an
        # inner loop), i.e. a raw sample, not a summary of the whole run
        c, u, st = choice.cols[0]
        choice.cols = [(c, u, None)]
        read_notes.append(f"column {c!r} read as per-iteration samples (the log has an iteration column {roles['iteration']!r})")
    pcols = _param_columns(df, used)
    json_params = "params" if "params" in df.columns and "params" not in used else None
    used |= set(pcols) | ({"params"} if json_params else set())
    df, pcol = _params_expr(df, pcols, json_params)

    def text(role: str) -> pl.Expr | None:
        c = roles.get(role)
        return pl.col(c).cast(pl.Utf8).str.strip_chars() if c else None

    base: dict[str, pl.Expr] = {"params": pl.col(pcol)}
    for role in ("benchmark", "variant", "device_name", "time_source"):
        e = text(role)
        if e is not None:
            base[role] = pl.when(e.str.to_lowercase().is_in(list(_NA))).then(None).otherwise(e)
    if "device_name" not in base:
        dev = meta.get("device_name") or meta.get("device") or meta.get("gpu") or options.device
        if isinstance(dev, str):
            base["device_name"] = pl.lit(dev)
    elif options.device:
        base["device_name"] = base["device_name"].fill_null(pl.lit(options.device))
    if "time_source" not in base and isinstance(meta.get("time_source"), str):
        base["time_source"] = pl.lit(meta["time_source"])
    if "run" in roles:
        base["run"] = _num(df, roles["run"]).cast(pl.Int64, strict=False)
    if "phase" in roles:
        base["phase"] = _map_unique(df, roles["phase"], _norm_phase)
    if "cache_state" in roles:
        flag = norm(roles["cache_state"]) in ("l2_flush", "flush_l2", "flush_cache", "cache_flush", "cold", "l2_flushed")
        base["cache_state"] = _map_unique(df, roles["cache_state"], lambda v: _norm_cache(v, flag))
    elif isinstance(meta.get("cache_state"), str):
        base["cache_state"] = pl.lit(_norm_cache(meta["cache_state"], False))
    for role, out in (("sm_clock", "sm_clock_mhz"), ("mem_clock", "mem_clock_mhz")):
        if role in roles:
            c = roles[role]
            base[out] = _num(df, c) * _freq_factor_mhz(_unit_token(c, ("hz", "khz", "mhz", "ghz")) or units_row.get(c, "").lower() or None)
    if "temperature" in roles:
        base["temperature_c"] = _num(df, roles["temperature"])
    if "power" in roles:
        c = roles["power"]
        u = _unit_token(c, ("mw", "w", "kw")) or units_row.get(c, "w").lower()
        base["power_w"] = _num(df, c) * {"mw": 1e-3, "kw": 1e3}.get(u, 1.0)
    if "throttle" in roles:
        base["throttle_reasons"] = _map_unique(df, roles["throttle"], decode_throttle)
    if "calls_per_sample" in roles:
        base["calls_per_sample"] = _num(df, roles["calls_per_sample"]).cast(pl.Int64, strict=False)
    if "timestamp" in roles:
        base["timestamp_ns"] = _timestamp_expr(df, roles["timestamp"], units_row)
    if "iteration" in roles:
        base["iteration"] = _num(df, roles["iteration"]).cast(pl.Int64, strict=False)

    explicit_stat = roles.get("statistic")
    count_col = roles.get("sample_count")
    frames = []
    dropped = 0
    for col, unit, st in choice.cols:
        dur = _num(df, col)
        if unit is not None:
            dur = dur * ns_per(unit)
        else:
            factors = {u: ns_per(u) for u in _cell_units_seen(df, col, df.height) if ns_per(u) is not None}
            dur = dur * _cell_unit(df, col).replace_strict(factors, default=None, return_dtype=pl.Float64)
        exprs = dict(base)
        exprs["duration_ns"] = dur
        if st is not None:
            exprs["statistic"] = pl.lit(st)
        elif explicit_stat:
            exprs["statistic"] = _map_unique(df, explicit_stat, _norm_stat)
        if count_col and (st is not None or explicit_stat):
            exprs["__count"] = _num(df, count_col).cast(pl.Int64, strict=False)
        part = df.select([e.alias(k) for k, e in exprs.items()])
        if "__count" in part.columns:
            part = part.with_columns(pl.when(pl.col("statistic").is_not_null()).then(pl.col("__count")).otherwise(None).alias("sample_count")).drop("__count")
        n0 = part.height
        part = part.filter(pl.col("duration_ns").is_not_null() & (pl.col("duration_ns") >= 0) & pl.col("duration_ns").is_finite())
        dropped += n0 - part.height
        frames.append(part)
    out = pl.concat(frames, how="diagonal_relaxed") if len(frames) > 1 else frames[0]
    if out.height == 0:
        first = df.get_column(choice.cols[0][0]).drop_nulls().head(1).to_list()
        raise InputError(path, f"time column {choice.cols[0][0]!r} holds no usable durations (first value {first[0]!r} is not a non-negative number)" if first else f"time column {choice.cols[0][0]!r} is empty")
    if "iteration" not in out.columns:
        keys = [k for k in ("run", "benchmark", "variant", "params", "statistic") if k in out.columns]
        # the window groups rows by their key values; text keys go in as category codes, the same
        # groups: grouping by the text itself built a key of every name's bytes a row (5.2 M rows of
        # a 200 MB blow-up of one line: +520 MB, a worker at 1,923 MB of its 2,048; fuzz_long seed
        # 3102, timing-table #239)
        by = [pl.col(k).cast(pl.Categorical).to_physical() if out.schema[k] == pl.Utf8 else pl.col(k) for k in keys]
        out = out.with_columns(pl.int_range(pl.len()).over(by).cast(pl.Int64).alias("iteration")) if keys else out.with_row_index("iteration").with_columns(pl.col("iteration").cast(pl.Int64))
    facts: dict[str, Any] = {
        "time_columns": [c for c, _, _ in choice.cols],
        "time_units": {c: (u or "per-cell") for c, u, _ in choice.cols},
        "column_roles": {k: v for k, v in roles.items()},
        "param_columns": pcols,
    }
    ignored = [c for c in df.columns if c not in used and not c.startswith("__")]
    if ignored:
        facts["ignored_columns"] = ignored
    if read_notes:
        facts["notes"] = read_notes
    if dropped:
        facts["rows_dropped"] = dropped
        facts.setdefault("notes", []).append(f"{dropped} row(s) without a usable time (missing, not a number, or negative) were dropped")
    return out, facts


def _timestamp_expr(df: pl.DataFrame, col: str, units_row: dict[str, str]) -> pl.Expr:
    unit = _bracket_unit(col)[0]
    if unit is None or ns_per(unit) is None:
        unit = next((t for t in tokens(col) if t in _UNIT_TOKENS), None) or units_row.get(col)
    f = ns_per(unit) if unit else None
    t = df.schema[col]
    if f is not None:
        return _num(df, col) * f
    if t == pl.Utf8:
        sample = df.get_column(col).drop_nulls().head(5).to_list()
        if sample and all(re.match(r"\d{4}[-/]\d{2}[-/]\d{2}", s.strip()) for s in sample):
            return pl.col(col).str.strip_chars().str.to_datetime(strict=False, time_unit="ns").dt.epoch("ns").cast(pl.Float64)
    return pl.lit(None, dtype=pl.Float64)


# ---------------------------------------------------------------------------------------------


def load_raw(path: Path) -> tuple[pl.DataFrame, dict[str, str], dict[str, Any], list[str], str]:
    """The file as a raw frame: (frame, units row, JSON metadata, notes, layout)."""
    raw = _read_bytes(path)
    s = raw.lstrip()
    if not s:
        raise InputError(path, "empty file")
    if s[:1] in (b"[", b"{"):
        df, meta, notes = _load_json(path, _decode(raw))
        return df, {}, meta, notes, "json"
    df, units, notes = _load_delimited(path, raw)
    return df, units, {}, notes, "delimited"


class TimingTableParser:
    name = "timing-table"
    source = "timing"
    suffixes = (".csv", ".tsv", ".txt", ".tab", ".jsonl", ".ndjson", ".json", ".csv.gz", ".jsonl.gz", ".json.gz", ".log", ".dat")
    description = "per-iteration timing logs: CSV/TSV/JSON Lines/JSON with a time column named with its unit (time_ms, latency_us, ...)"
    # catch-all: it sniffs any numeric table, so files it cannot read are skipped in folder walks
    generic = True

    def sniff(self, probe: Probe) -> bool:
        return sniff_table(probe)

    def read(self, path: Path, options: ReadOptions):
        path = Path(path)
        df, units, meta, notes, layout = load_raw(path)
        samples, facts = build_samples(path, df, units, meta, options)
        md: dict[str, Any] = {"tool": "timing-log", "layout": layout, **facts}
        if notes:
            md["notes"] = notes + md.get("notes", [])
        if meta:
            md["log_meta"] = meta
            for k in ("host", "driver_version", "cuda_version", "command_line", "capture_time"):
                if isinstance(meta.get(k), str):
                    md[k] = meta[k]
        # in file order: the primary device is the first one the log names, the same on every read
        devs = samples.get_column("device_name").drop_nulls().unique(maintain_order=True).to_list() if "device_name" in samples.columns else []
        if devs:
            md["device_name"] = devs[0]
            md["device_count"] = len(devs)
        return new_profile(path, self, {"samples": samples}, md)


PARSER = TimingTableParser()
