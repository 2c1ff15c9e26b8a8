"""`nsys stats --format csv` output: summary and trace reports, old and new names and spellings.

What a file may hold: progress and NOTICE lines, `Processing [x.sqlite] with [.../report.py]...`,
`SKIPPED: ... does not contain ... data.` (a valid outcome: the capture lacked that data), one or
several CSV blocks (several when stdout carried more than one report, each after a `** Title
(report):` line), separated by blank lines. Headers carry units (`Avg (ns)`, `Bytes (MB)`, or the
internal `Avg:dur_ns` form) that follow `--timeunit`; every number is converted to ns / bytes.

Where the rows go (a summary row is not an execution, so it never becomes a `kernels` row):
- duration summaries (`cuda_gpu_kern_sum`/`gpukernsum`, `cuda_api_sum`, `nvtx_sum`, `osrt_sum`,
  `cuda_gpu_mem_time_sum`, `cuda_gpu_kern_gb_sum`, `nvtx_kern_sum`, ...) -> `samples`: one row per
  (name, statistic) with statistic in total/mean/median/min/max/stddev, `sample_count` = instances
  or calls, `benchmark` = the name, `time_source` = "nsys", and `params` = canonical JSON holding
  the report name plus the row's other labels (style, grid/block, NVTX range), so kernel and API
  summaries never mix;
- size summaries (`cuda_gpu_mem_size_sum`) -> `metrics` (kind "summary", `instance_key` = the
  operation, metric `<report>:<statistic>`, bytes);
- `cuda_gpu_trace`/`gputrace` -> `kernels` and `transfers` (memcpy/memset rows);
- `cuda_api_trace` and the NVTX trace reports -> `ranges` (`nvtx_gpu_proj_trace`, the ranges
  projected onto GPU time, as kind `gpu_user_annotation`);
- any other report -> `metrics`, long form, every cell kept.
The Time (%) column is not kept: it is total / sum(total) of the same report.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import polars as pl

from profaudit.errors import InputError
from profaudit.parsers.base import Probe, ReadOptions, csv_cells, map_unique, new_profile
from profaudit.samples import ns_per

# New report names (nsys >= 2023.x) and the old ones they replaced.
REPORT_ALIASES = {
    "gpukernsum": "cuda_gpu_kern_sum",
    "gputrace": "cuda_gpu_trace",
    "cudaapisum": "cuda_api_sum",
    "cudaapitrace": "cuda_api_trace",
    "gpumemtimesum": "cuda_gpu_mem_time_sum",
    "gpumemsizesum": "cuda_gpu_mem_size_sum",
    "gpusum": "cuda_gpu_sum",
    "nvtxsum": "nvtx_sum",
    "nvtxkernsum": "nvtx_kern_sum",
    "osrtsum": "osrt_sum",
    "nvtxppsum": "nvtx_sum",
    "nvtxpptrace": "nvtx_pushpop_trace",
    "kernexecsum": "cuda_kern_exec_sum",
    "kernexectrace": "cuda_kern_exec_trace",
    "cudaapigpusum": "cuda_api_gpu_sum",
}
KNOWN_REPORTS = set(REPORT_ALIASES.values()) | {
    "cuda_gpu_kern_gb_sum", "nvtx_startend_trace", "nvtx_gpu_proj_sum", "nvtx_gpu_proj_trace", "um_sum", "um_total_sum",
    "um_cpu_page_faults_sum", "openmp_sum", "opengl_khr_range_sum", "vulkan_marker_sum", "dx12_marker_sum", "mpi_event_sum",
    "mpi_event_trace", "syscall_sum", "cuda_gpu_mem_time_trace",
}
_REPORT_NAMES_RE = "|".join(sorted((re.escape(r) for r in KNOWN_REPORTS | set(REPORT_ALIASES)), key=len, reverse=True))

# nsys prints memory in SI units (MB = 10^6 B) unless the label says MiB.
_MEM_UNITS = {"b": 1.0, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "kib": 1024.0, "mib": 1024.0**2, "gib": 1024.0**3}

_FIELDS = {
    "time": "time_pct", "time %": "time_pct",
    "total time": "total", "total": "total",
    "instances": "count", "num calls": "count", "calls": "count", "count": "count", "num": "count", "kern inst": "count",
    "avg": "mean", "average": "mean", "mean": "mean",
    "med": "median", "median": "median",
    "min": "min", "minimum": "min",
    "max": "max", "maximum": "max",
    "stddev": "stddev", "std dev": "stddev", "stdev": "stddev",
    "name": "name", "kernel name": "name", "api name": "name", "function": "name",
    "range": "range", "nvtx range": "range",
    "operation": "operation", "style": "style", "category": "category",
    "start": "start", "end": "end", "duration": "duration",
    # nvtx_gpu_proj_trace: the NVTX range projected onto the GPU work it launched
    "projected start": "start", "projected duration": "duration",
    "corrid": "correlation", "correlation id": "correlation",
    "grdx": "grid_x", "grdy": "grid_y", "grdz": "grid_z", "blkx": "block_x", "blky": "block_y", "blkz": "block_z",
    "reg trd": "registers", "stcsmem": "static_smem", "dymsmem": "dynamic_smem",
    "bytes": "bytes", "throughput": "throughput", "srcmemkd": "src_kind", "dstmemkd": "dst_kind",
    "device": "device", "ctx": "context", "greenctx": "green_context", "strm": "stream",
    "pid": "pid", "tid": "tid", "result": "result", "gridxyz": "grid", "blockxyz": "block",
}
_STATS = ("total", "mean", "median", "min", "max", "stddev")
_STAT_NAMES = {"total": "total", "mean": "mean", "median": "median", "min": "min", "max": "max", "stddev": "stddev"}
_DIRECTIONS = {
    "host-to-device": "HtoD", "device-to-host": "DtoH", "device-to-device": "DtoD", "host-to-host": "HtoH", "peer-to-peer": "PtoP",
    "htod": "HtoD", "dtoh": "DtoH", "dtod": "DtoD", "htoh": "HtoH", "ptop": "PtoP",
}

_PROCESSING = re.compile(r"^\s*Processing \[(?P<db>.*?)\] with \[(?P<script>.*?)\]")
# nsys 2021.x-2022.1: `Running [/opt/.../reports/gpukernsum.py report1.sqlite]...`
_RUNNING = re.compile(r"^\s*Running \[(?P<script>[^\]\s]+\.py)(?:\s+(?P<db>[^\]]*?))?\s*\]")
_TITLE = re.compile(r"^\s*\*\*\s*(?P<title>.*?)\s*\((?P<report>[A-Za-z0-9_]+)\)\s*:\s*$")
_NOTE_PREFIXES = ("NOTICE:", "SKIPPED:", "WARNING:", "ERROR:", "Generating SQLite file", "Exporting ", "Using ", "Generating '", "Consider using", "It is assumed")
_PROGRESS = re.compile(r"^\s*\[\d+/\d+\]")
_CONSOLE_EXEC = re.compile(r"Executing '([A-Za-z0-9_]+)' stats report")
_CONSOLE_RULE = re.compile(r"^\s*-{4,}(\s+-{2,})+\s*$")
# nsys before 2021.5 titled each console table `CUDA Kernel Statistics (nanoseconds)`, with no report name
_CONSOLE_OLD_TITLE = re.compile(r"^\s*((?:CUDA|NVTX|NV Tools Extension|Operating System Runtime|OS Runtime|OpenMP|OpenACC)[\w /-]*? Statistics) \((?:nanoseconds|microseconds|milliseconds|seconds|KiB|MiB|KB|MB)\)\s*$", re.M)


def canonical_report(name: str | None) -> str | None:
    if not name:
        return None
    n = Path(name).stem if name.endswith(".py") else name
    return REPORT_ALIASES.get(n, n)


def _report_in_filename(path: Path) -> str | None:
    m = re.search(rf"(?:^|[_\-.])({_REPORT_NAMES_RE})(?:\.csv)?$", path.name.lower().removesuffix(".csv") + ".csv")
    return canonical_report(m.group(1)) if m else None


def parse_header(h: str) -> tuple[str, str, str | None]:
    """`Avg (ns)` / `Avg:dur_ns` / `Time (%)` -> (field, label, unit)."""
    h = h.strip().lstrip("\ufeff")
    unit = None
    m = re.fullmatch(r"(.*?)\s*\(([^()]*)\)\s*", h)
    if m:
        label, unit = m.group(1), m.group(2).strip()
    elif ":" in h and not h.startswith(":"):
        label, code = h.rsplit(":", 1)
        unit = {"dur_ns": "ns", "ts_ns": "ns", "mem_B": "B", "thru_B": "B/s", "ratio_%": "%"}.get(code, code.split("_")[-1] if "_" in code else code)
    else:
        label = h
    key = re.sub(r"[^a-z0-9%]+", " ", label.lower()).strip()
    if key.replace(" ", "") in ("time%",) or (key == "time" and unit == "%"):
        return "time_pct", label, "%"
    return _FIELDS.get(key, _FIELDS.get(key.replace(" ", ""), key)), label, unit


def _num(s: str | None) -> float | None:
    if s is None:
        return None
    t = s.strip().replace(",", "").replace("\u202f", "")
    if t in ("", "-", "n/a", "N/A", "nan"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def _time_scale(unit: str | None, default: float) -> float:
    f = ns_per(unit)
    return default if f is None else f


def _mem_scale(unit: str | None) -> float | None:
    """Bytes per unit for memory sizes and rates (MB, MiB, MB/s, MBps); None if not a memory unit."""
    if unit is None:
        return None
    u = unit.strip().lower()
    for rate in ("/s", "ps"):
        if u.endswith(rate) and u[: -len(rate)] in _MEM_UNITS:
            u = u[: -len(rate)]
    return _MEM_UNITS.get(u)


class _Block:
    def __init__(self, report: str | None, title: str | None):
        self.report, self.title = report, title
        self.lines: list[str] = []

    def table(self, path: Path | None = None) -> list[list[str]]:
        try:
            return [r for r in csv.reader(io.StringIO("\n".join(self.lines))) if r]
        except csv.Error as exc:  # a cell over the csv module's 128 KiB field limit, a NUL
            raise InputError(path or Path("."), f"malformed nsys stats CSV in a {self.report or 'summary'} table: {exc}") from None


def _lines(text: str, chunk: int = 1 << 20):
    """`text.splitlines()`, one line at a time: the text is cut after a newline every ~`chunk`
    characters and each piece split alone, which gives the same lines (a cut after `\n` never
    parts `\r\n`, and each piece ends at a line break). The whole list held every line of a
    200 MB file at once: 2.47 M one-line notes were 330 MB before a single note was kept."""
    start, n = 0, len(text)
    while start < n:
        cut = text.find("\n", min(start + chunk, n) - 1)
        end = n if cut < 0 else cut + 1
        yield from text[start:end].splitlines()
        start = end


def split_output(text: str) -> tuple[list[str], list[_Block], dict[str, Any]]:
    """Notes, CSV blocks (each with its report name where the text says it), and what the preamble
    said (the SQLite file processed, the reports run)."""
    notes: list[str] = []
    blocks: list[_Block] = []
    info: dict[str, Any] = {"processed": [], "reports_run": []}
    current: _Block | None = None
    pending_report: str | None = None
    pending_title: str | None = None
    in_note = False
    # each report and input once, in the order first met: a file of one `Processing [...]` line
    # 1.27 M times (a 200 MB blow-up) kept 1.27 M copies of one name in the profile's metadata
    # and parsed the same script path each time (16 CPU-s, 1 GB)
    reports_seen: dict[str, str | None] = {}
    processed_seen: set[str] = set()
    ran_seen: set[str | None] = set()
    # a note met again is kept again (the notes are the file's, in order), as the one string: a
    # 200 MB file of one SKIPPED line 2.47 M times kept 2.47 M copies of it (s18 fuzz seed 3113,
    # nsys-stats-csv #480 RISE: 1,846 MB peak)
    note_text: dict[str, str] = {}

    def ran(report: str | None) -> None:
        if report not in ran_seen:
            ran_seen.add(report)
            info["reports_run"].append(report)

    for raw in _lines(text):
        line = raw.rstrip("\r")
        stripped = line.strip()
        if not stripped:
            current = None
            in_note = False
            continue
        m = _PROCESSING.match(line) or _RUNNING.match(line)
        if m:
            script = m.group("script")
            if script not in reports_seen:
                reports_seen[script] = canonical_report(Path(script).name)
            pending_report = reports_seen[script]
            db = m.group("db")
            if db and db not in processed_seen:
                processed_seen.add(db)
                info["processed"].append(db)
            ran(pending_report)
            current, in_note = None, False
            continue
        m = _TITLE.match(line)
        if m:
            pending_report, pending_title = canonical_report(m.group("report")), m.group("title")
            ran(pending_report)
            current, in_note = None, False
            continue
        if in_note and line[:1].isspace():
            notes[-1] = notes[-1] + " " + stripped
            continue
        if stripped.startswith(_NOTE_PREFIXES) or _PROGRESS.match(line):
            notes.append(note_text.setdefault(stripped, stripped))
            in_note = stripped.startswith("NOTICE:") or stripped.startswith("WARNING:")
            current = None
            continue
        if current is None:
            if len(csv_cells(line) or []) < 2:
                # a table starts at a header of two or more cells; a single-cell line before one is
                # chatter (`Generating CUDA Kernel Statistics...`, a title, a `# ...` comment)
                notes.append(note_text.setdefault(stripped, stripped))
                continue
            current = _Block(pending_report, pending_title)
            blocks.append(current)
            pending_title = None
        current.lines.append(line)
    return notes, blocks, info


def looks_like_console(text: str) -> list[str] | None:
    """Report names if this is nsys stats' default column (console) output rather than CSV."""
    runs = _CONSOLE_EXEC.findall(text)
    rules = sum(1 for l in _lines(text) if _CONSOLE_RULE.match(l))
    if not rules:
        return runs or None
    titled = [m.group("report") for m in map(_TITLE.match, _lines(text)) if m]
    old = list(dict.fromkeys(_CONSOLE_OLD_TITLE.findall(text)))
    if runs or titled or old or re.search(r"Total Time \(\w+\)", text):
        return list(dict.fromkeys(runs + titled)) or old or ["(unnamed)"]
    return None


# ---------------------------------------------------------------------------------------- converters

def _columns(header: list[str]) -> list[tuple[str, str, str | None]]:
    return [parse_header(h) for h in header]


def _shape(report: str | None, cols: list[tuple[str, str, str | None]]) -> str:
    return _classify(report, [c[0] for c in cols], [c[2] for c in cols])


def _classify(report: str | None, fields: list[str], units: list[str | None]) -> str:
    f = set(fields)
    if report in ("cuda_gpu_trace",) or {"start", "duration", "grid_x"} <= f or {"start", "duration", "bytes", "src_kind"} <= f:
        return "gpu_trace"
    if report in ("cuda_api_trace",) or ({"start", "duration", "name", "tid"} <= f and "result" in f):
        return "api_trace"
    if (report or "").startswith("nvtx") and report.endswith("trace") and "start" in f:
        return "nvtx_trace"
    # the NVTX push/pop and start/end traces: one row per range with its nesting level
    if report is None and {"start", "name", "tid"} <= f and f & {"lvl", "numchild", "rangestack", "nametree", "durchild"}:
        return "nvtx_trace"
    has_stats = "count" in f and any(s in f for s in _STATS)
    if has_stats:
        stat_units = [u for fl, u in zip(fields, units) if fl in _STATS]
        if any(_mem_scale(u) is not None for u in stat_units):
            return "size_summary"
        return "time_summary"
    return "other"


def _label_field(fields: list[str]) -> str | None:
    for f in ("name", "operation", "range"):
        if f in fields:
            return f
    return None


def _time_summary(report, header, rows, samples: list[dict], path: Path | None = None) -> None:
    cols = _columns(header)
    fields = [c[0] for c in cols]
    label = _label_field(fields)
    default = next((_time_scale(u, 1.0) for f, _, u in cols if f in _STATS and u), 1.0)
    for row in rows:
        cells = dict(zip(range(len(row)), row))
        params: dict[str, Any] = {"report": report}
        values: dict[str, float | None] = {}
        count = None
        bench = None
        for i, (field, lab, unit) in enumerate(cols):
            v = cells.get(i)
            if field in _STATS:
                x = _num(v)
                if x is None and v is not None and v.strip() not in ("", "-", "n/a", "N/A", "nan"):
                    # `12.5us`: a unit in the cell is not nsys stats output, and reading it as
                    # missing would lose every duration without a word
                    raise InputError(path, f"not a number in the {lab.strip()!r} column of a {report or 'summary'} table: {v.strip()[:40]!r}")
                values[field] = None if x is None else x * _time_scale(unit, default)
            elif field == "count":
                x = _num(v)
                count = int(x) if x is not None else None
            elif field == label:
                bench = v
            elif field == "time_pct":
                continue
            elif v not in (None, ""):
                x = _num(v)
                params[lab.strip()] = x if x is not None and not re.search(r"[A-Za-z]", v) else v.strip()
        p = json.dumps(params, sort_keys=True, default=str)
        for stat in _STATS:
            if stat in values:
                samples.append({
                    "benchmark": bench, "params": p, "statistic": _STAT_NAMES[stat], "duration_ns": values[stat],
                    "sample_count": count, "time_source": "nsys",
                })


def _summary_cells(header, rows):
    """(row index, row key, label field, column index, field, unit, cell) for every cell of a summary
    table; the key is the row's cell in the label column."""
    cols = _columns(header)
    fields = [c[0] for c in cols]
    label = _label_field(fields)
    for i, row in enumerate(rows):
        key = row[fields.index(label)] if label and fields.index(label) < len(row) else None
        for j, (field, _lab, unit) in enumerate(cols[: len(row)]):
            yield i, key, label, j, field, unit, row[j]


def _size_summary(report, header, rows, metrics: list[dict]) -> None:
    for i, key, label, _j, field, unit, cell in _summary_cells(header, rows):
        if field == label:
            continue
        x = _num(cell)
        if field in _STATS and _mem_scale(unit) is not None:
            metrics.append({"metric": f"{report}:{field}", "unit": "byte", "value": None if x is None else x * _mem_scale(unit), "instance": i, "instance_key": key, "kind": "summary"})
        elif field == "count":
            metrics.append({"metric": f"{report}:count", "unit": "", "value": x, "instance": i, "instance_key": key, "kind": "summary"})


def _other(report, header, rows, metrics: list[dict]) -> None:
    for i, key, _label, j, _field, unit, cell in _summary_cells(header, rows):
        x = _num(cell) if not re.search(r"[A-Za-z]", cell or "") else None
        metrics.append({
            "metric": f"{report or 'nsys_stats'}:{header[j].strip()}", "unit": unit or "", "value": x,
            "value_str": None if x is not None else (cell if cell != "" else None), "instance": i, "instance_key": key, "kind": "summary",
        })


def _block_frame(b: _Block, path: Path) -> tuple[pl.DataFrame, list[tuple[str, str, str | None]]]:
    """A trace block as all-text columns named c0, c1, ... (header spellings can repeat), parsed
    by polars: trace reports run to millions of rows."""
    header = csv_cells(b.lines[0])
    if header is None:
        raise InputError(path, f"malformed nsys stats CSV: the {b.report or 'trace'} table's header is not CSV")
    cols = _columns(header)
    try:
        df = pl.read_csv("\n".join(b.lines).encode(), has_header=True, infer_schema=False, new_columns=[f"c{i}" for i in range(len(header))])
    except pl.exceptions.PolarsError as exc:
        raise InputError(path, f"malformed nsys stats CSV in a {b.report or 'trace'} table: {str(exc).splitlines()[0]}") from None
    return df, cols


def _col(df: pl.DataFrame, cols, field: str) -> pl.Expr | None:
    for i, c in enumerate(cols):
        if c[0] == field:
            return pl.col(f"c{i}")
    return None


def _numx(df, cols, field: str, scale: float = 1.0) -> pl.Expr:
    e = _col(df, cols, field)
    if e is None:
        return pl.lit(None, dtype=pl.Float64)
    x = e.str.strip_chars().str.replace_all(",", "").cast(pl.Float64, strict=False)
    return x * scale if scale != 1.0 else x


def _strx(df, cols, field: str) -> pl.Expr:
    e = _col(df, cols, field)
    if e is None:
        return pl.lit(None, dtype=pl.Utf8)
    e = e.str.strip_chars()
    return pl.when(e == "").then(None).otherwise(e)


def _unit(cols, field: str) -> str | None:
    return next((c[2] for c in cols if c[0] == field), None)


def _round_int(e: pl.Expr) -> pl.Expr:
    return e.round(0).cast(pl.Int64)


def _gpu_trace(df: pl.DataFrame, cols) -> tuple[pl.DataFrame, pl.DataFrame]:
    ts, ds = _time_scale(_unit(cols, "start"), 1.0), _time_scale(_unit(cols, "duration"), 1.0)
    name = _strx(df, cols, "name")
    dev = _strx(df, cols, "device")
    base = df.select(
        _round_int(_numx(df, cols, "start", ts)).alias("start_ns"),
        _numx(df, cols, "duration", ds).alias("duration_ns"),
        _round_int(_numx(df, cols, "correlation")).alias("correlation_id"),
        _round_int(_numx(df, cols, "stream")).alias("stream"),
        _round_int(_numx(df, cols, "context")).alias("context_id"),
        name.alias("name"),
        # `NVIDIA H100 80GB HBM3 (0)`: name and ordinal; old reports print the ordinal alone
        pl.coalesce(dev.str.extract(r"\((\d+)\)\s*$", 1), dev.str.extract(r"^\s*(\d+)\s*$", 1)).cast(pl.Int64, strict=False).alias("device_id"),
        pl.when(dev.str.contains(r"^\s*\d+\s*$")).then(None).otherwise(dev.str.replace(r"\s*\(\d+\)\s*$", "")).alias("device_name"),
        _numx(df, cols, "bytes", _mem_scale(_unit(cols, "bytes")) or 1.0).alias("bytes"),
        _numx(df, cols, "throughput", _mem_scale(_unit(cols, "throughput")) or 1.0).alias("_thr"),
        _strx(df, cols, "src_kind").alias("src_kind"),
        _strx(df, cols, "dst_kind").alias("dst_kind"),
        *[_round_int(_numx(df, cols, f)).alias(f) for f in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")],
        _round_int(_numx(df, cols, "registers")).alias("registers_per_thread"),
        _round_int(_numx(df, cols, "static_smem", _mem_scale(_unit(cols, "static_smem")) or 1.0)).alias("static_shared_mem_bytes"),
        _round_int(_numx(df, cols, "dynamic_smem", _mem_scale(_unit(cols, "dynamic_smem")) or 1.0)).alias("dynamic_shared_mem_bytes"),
    ).with_columns((pl.col("start_ns") + _round_int(pl.col("duration_ns"))).alias("end_ns"))
    is_transfer = pl.col("bytes").is_not_null() | pl.col("name").str.starts_with("[CUDA mem") | pl.col("name").str.starts_with("[CUDA Unified")
    k = base.filter(~is_transfer).with_columns(
        (pl.col("grid_x") * pl.col("grid_y") * pl.col("grid_z")).alias("grid_size"),
        (pl.col("block_x") * pl.col("block_y") * pl.col("block_z")).alias("block_size"),
        (pl.col("static_shared_mem_bytes") + pl.col("dynamic_shared_mem_bytes")).alias("shared_mem_bytes"),
    ).drop(["bytes", "_thr", "src_kind", "dst_kind"])
    word = pl.col("name").str.extract(r"memcpy\s+([A-Za-z\-]+)", 1)
    t = base.filter(is_transfer).with_columns(
        pl.when(pl.col("name").str.to_lowercase().str.contains("memset")).then(pl.lit("memset")).otherwise(pl.lit("memcpy")).alias("kind"),
        pl.coalesce(word.str.to_lowercase().replace_strict(list(_DIRECTIONS), list(_DIRECTIONS.values()), default=None, return_dtype=pl.Utf8), word).alias("direction"),
        pl.coalesce(pl.col("_thr"), pl.when(pl.col("duration_ns") > 0).then(pl.col("bytes") * 1e9 / pl.col("duration_ns"))).alias("throughput_bytes_per_s"),
    ).select("kind", "direction", "src_kind", "dst_kind", "name", "bytes", "start_ns", "end_ns", "duration_ns", "throughput_bytes_per_s", "device_id", "stream", "correlation_id")
    return k, t


def _api_trace(report: str | None, df: pl.DataFrame, cols) -> pl.DataFrame:
    from profaudit.names import clean_api_name

    st, en, du = (_time_scale(_unit(cols, f), 1.0) for f in ("start", "end", "duration"))
    r = df.select(
        _round_int(_numx(df, cols, "start", st)).alias("start_ns"),
        _round_int(_numx(df, cols, "end", en)).alias("_end"),
        _numx(df, cols, "duration", du).alias("_dur"),
        pl.coalesce(_strx(df, cols, "name"), _strx(df, cols, "range")).alias("name"),
        _round_int(_numx(df, cols, "pid")).alias("process_id"),
        _round_int(_numx(df, cols, "tid")).alias("thread_id"),
        _round_int(_numx(df, cols, "correlation")).alias("correlation_id"),
    ).with_columns(
        pl.coalesce(pl.col("_end"), pl.col("start_ns") + _round_int(pl.col("_dur"))).alias("end_ns"),
    ).with_columns(
        pl.coalesce(pl.col("_dur"), (pl.col("end_ns") - pl.col("start_ns")).cast(pl.Float64)).alias("duration_ns"),
    ).drop(["_end", "_dur"])
    if report and report.startswith("nvtx"):
        names = r["name"].drop_nulls()
        # nsys 2025+ writes `<domain>:<name>` (`:step` in the default domain). Split only when every
        # name has that form, its first colon not part of a `::` (an older `aten::mm` stays whole).
        if names.len() and names.str.contains(r"^[^:]*:(?:[^:]|$)").all():
            r = r.with_columns(
                pl.col("name").str.extract(r"^([^:]*):", 1).replace("", None).alias("domain"),
                pl.col("name").str.replace(r"^[^:]*:", "").alias("name"),
            )
        # a projection onto the GPU is what Kineto calls a gpu_user_annotation: GPU time, not CPU time
        kind = "gpu_user_annotation" if "gpu_proj" in report else ("nvtx_start_end" if "startend" in report else "nvtx_push_pop")
        return r.with_columns(pl.lit(kind).alias("kind"))
    r = r.with_columns(map_unique(r["name"], clean_api_name))
    return r.with_columns(
        pl.when(pl.col("name").str.contains(r"^cu[A-Z]")).then(pl.lit("cuda_driver")).otherwise(pl.lit("cuda_runtime")).alias("kind")
    )


def read_stats_csv(path: Path, parser) -> Any:
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InputError.unreadable(path, exc) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(path, "not an nsys stats CSV: the file is not UTF-8 text") from None
    del raw  # the bytes are not held beside their text while it is split
    notes, blocks, info = split_output(text)
    console = looks_like_console(text)
    if console and not any(_is_stats_table(b) for b in blocks):
        raise InputError(path, f"nsys stats console (column) text, not CSV (reports: {', '.join(console[:6])}); re-run `nsys stats --format csv --output <base> <report.nsys-rep>` and load the .csv files")
    if not blocks:
        if not notes:
            raise InputError(path, "no nsys stats report in this file (no CSV table and no NOTICE/SKIPPED lines)")
    samples: list[dict] = []
    metrics: list[dict] = []
    kernels: list[pl.DataFrame] = []
    transfers: list[pl.DataFrame] = []
    ranges: list[pl.DataFrame] = []
    reports: list[str] = []
    file_report = _report_in_filename(Path(path))
    for b in blocks:
        try:
            header = next(csv.reader([b.lines[0]]))
        except (csv.Error, StopIteration):
            raise InputError(path, "not an nsys stats CSV: unreadable table header") from None
        if len(header) < 2:
            raise InputError(path, f"not an nsys stats CSV: table header {','.join(header)[:60]!r} has a single column")
        cols = _columns(header)
        report = b.report or (file_report if len(blocks) == 1 else None)
        shape = _shape(report, cols)
        if report is None:
            report = {"gpu_trace": "cuda_gpu_trace", "api_trace": "cuda_api_trace"}.get(shape) or _guess_trace(shape, cols) or _guess_summary(cols) or "nsys_stats"
        reports.append(report)
        try:
            if shape == "gpu_trace":
                k, t = _gpu_trace(*_block_frame(b, path))
                kernels.append(k)
                transfers.append(t)
                continue
            if shape in ("api_trace", "nvtx_trace"):
                ranges.append(_api_trace(report, *_block_frame(b, path)))
                continue
        except pl.exceptions.InvalidOperationError as exc:
            # the integer columns (times in ns, ids, grid sizes) are cast strictly: a value no
            # Int64 holds is damage, not a null
            vals = re.search(r"values: \[([^\]]*)\]", str(exc))
            raise InputError(path, f"{report} table: a value is beyond the 64-bit integer range of its column (a time of 2^63 ns or more, or an id or size"
                                   f" beyond 64 bits){': ' + vals.group(1)[:60] if vals else ''}") from None
        # Summaries are one row per name: small, read with the csv module and checked row by row.
        table = b.table(path)
        rows = table[1:]
        width = len(header)
        bad = next((i for i, r in enumerate(rows) if len(r) != width), None)
        if bad is not None:
            raise InputError(path, f"malformed nsys stats CSV: row {bad + 2} of a {b.report or 'report'} table has {len(rows[bad])} cells where the header has {width}")
        if shape == "time_summary":
            _time_summary(report, header, rows, samples, path)
        elif shape == "size_summary":
            _size_summary(report, header, rows, metrics)
        else:
            _other(report, header, rows, metrics)
    from profaudit import schema

    tables: dict[str, pl.DataFrame] = {}
    if samples:
        tables["samples"] = schema.from_records("samples", samples)
    if metrics:
        tables["metrics"] = schema.from_records("metrics", metrics)
    k = pl.concat(kernels, how="diagonal_relaxed") if kernels else None
    if k is not None and k.height:
        from profaudit.names import short_name

        k = k.with_columns(map_unique(k["name"], short_name).alias("short_name"), pl.lit("nsys").alias("source"))
        tables["kernels"] = k.sort("start_ns", nulls_last=True).with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("kernel_id"))
    t = pl.concat(transfers, how="diagonal_relaxed") if transfers else None
    if t is not None and t.height:
        tables["transfers"] = t.sort("start_ns", nulls_last=True).with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("transfer_id"))
    r = pl.concat(ranges, how="diagonal_relaxed") if ranges else None
    if r is not None and r.height:
        from profaudit.timeline import nest_ranges

        r = r.sort("start_ns", nulls_last=True).with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("range_id"), pl.lit("").alias("profile_id"))
        tables["ranges"] = nest_ranges(r, by=("process_id", "thread_id", "kind")).drop("profile_id")
    md: dict[str, Any] = {"tool": "nsys", "nsys_stats_reports": reports or [r for r in info["reports_run"] if r] or ([file_report] if file_report else [])}
    if notes:
        md["notes"] = notes
    if info["processed"]:
        md["nsys_stats_input"] = info["processed"][0]
    skipped = [n for n in notes if n.startswith("SKIPPED:")]
    if skipped and not blocks:
        md["empty_reason"] = skipped[0]
    if "kernels" in tables:
        names = tables["kernels"]["device_name"].drop_nulls()
        if names.len():
            md["device_name"] = names.mode().sort()[0]
    return new_profile(Path(path), parser, tables, md)


def _is_stats_table(b: _Block) -> bool:
    # the header decides (read as read_stats_csv reads it): a trace block can run to millions of rows
    try:
        header = next(csv.reader([b.lines[0]]))
    except (csv.Error, StopIteration):
        return False
    return len(header) >= 2 and _shape(b.report, _columns(header)) != "other"


# Spellings only nsys stats uses; a generic timing CSV with min/max/mean columns has none of them.
# `Time(%)` alone is not one: nvprof's `--csv` summary (`Type,Time(%),Time,Calls,Avg,...`) has it too.
_NSYS_HEADER_TOKENS = re.compile(r"Total Time|Instances|Num Calls|\bMed ?\(|StdDev ?\(|GrdX|DurNonChild|RangeStack|NameTree|Projected Start|CorrI[dD]|Reg/Trd|:dur_ns|:ts_ns|:mem_B|:ratio_%")
_SKIPPED = re.compile(r"^\s*SKIPPED: .* does not contain")


def _is_stats_header(line: str) -> bool:
    if not _NSYS_HEADER_TOKENS.search(line):
        return False
    cells = csv_cells(line)
    if cells is None or len(cells) < 3:
        return False
    return _shape(None, _columns(cells)) != "other"


def _guess_trace(shape: str, cols: list[tuple[str, str, str | None]]) -> str | None:
    if shape != "nvtx_trace":
        return None
    projected = any(c[1].strip().lower().startswith("projected") for c in cols)
    return "nvtx_gpu_proj_trace" if projected else "nvtx_pushpop_trace"


def _guess_summary(cols: list[tuple[str, str, str | None]]) -> str | None:
    """The report a summary table with no name around it (no `Processing`/title line, no report
    name in the file name) comes from, judged by its columns."""
    fields = [c[0] for c in cols]
    labels = {c[1].strip().lower() for c in cols}
    if "style" in fields and "range" in fields:
        return "nvtx_sum"
    if "category" in fields and "operation" in fields:
        return "cuda_gpu_sum"
    if "operation" in fields and "count" in fields:
        return "cuda_gpu_mem_time_sum"
    # `Instances` + `Name` and nothing else to label a row: kernels (API and OS runtime summaries
    # count `Num Calls`, NVTX ones carry a range and a style)
    if "instances" in labels and "name" in fields and not {"range", "style", "operation", "category"} & set(fields):
        return "cuda_gpu_kern_sum"
    return None


class NsysStatsCsvParser:
    name = "nsys-stats-csv"
    source = "nsys"
    suffixes = (".csv",)
    description = "nsys stats reports in CSV (cuda_gpu_kern_sum, cuda_gpu_trace, cuda_api_sum, nvtx_sum, ...; old and new names)"

    def sniff(self, probe: Probe) -> bool:
        if probe.is_dir or b"\x00" in probe.head[:4096]:
            return False
        text = probe.head.decode("utf-8", errors="replace")
        for line in text.splitlines()[:400]:
            if _PROCESSING.match(line) and ".py]" in line:
                return True
            if _SKIPPED.match(line):
                return True
            m = _TITLE.match(line)
            if m and canonical_report(m.group("report")) in KNOWN_REPORTS:
                return True
            if "," in line and _is_stats_header(line):
                return True
        # The console (column) form is claimed too, so that reading it says what to do instead.
        return looks_like_console(text) is not None

    def read(self, path: Path, options: ReadOptions):
        return read_stats_csv(Path(path), self)


PARSER = NsysStatsCsvParser()
