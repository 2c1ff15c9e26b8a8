"""Nsight Compute CSV exports (`ncu --csv`, live or `--import r.ncu-rep`).

Two layouts (FORMATS.md 1.5):

* `--page details` (the default): long, one row per metric line of a section. Fixed columns
  `ID, Process ID, Process Name, Host Name, Kernel Name, [Kernel Time,] Context, Stream,
  [Block Size, Grid Size, Device, CC,] Section Name, Metric Name, Metric Unit, Metric Value`, and
  in recent versions `Rule Name, Rule Type, Rule Description, Estimated Speedup Type, Estimated
  Speedup`. Metric rows then stop early (ragged); rule rows leave the metric cells empty.
  `Metric Name` holds section labels ("Duration", "SM Frequency") unless `--print-metric-name name`.
* `--page raw`: wide, one row per kernel, metric names as columns and a units row under the
  header; the fixed columns may be absent (`--metrics` exports that keep only metric columns).

Live captures put `==PROF==`/`==WARNING==` lines (and the program's own output) around the table.
Values may carry thousands separators; `n/a` is missing. ncu prints numbers in the host's locale:
a file written with decimal commas (`27.595.520`, `65,77`) is recognised as a whole
(`ncu_common.number_format`) and read that way. `--nvtx` adds the launch columns
`thread Domain:Push/Pop_Range:...` and `Id:Domain:Start/Stop_Range:...` (innermost range ->
nvtx_range). `--print-summary` exports (min/max/average per kernel) and ncu's text output are
recognised and refused with a message saying how to export per-launch CSV. Windows PowerShell
redirects are UTF-16. The metrics table keeps every value in the unit the file printed; the kernel
table converts to ns, bytes and Hz (`ncu_common.to_base`).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any, Iterator

import polars as pl

from profaudit import schema
from profaudit.errors import InputError
from profaudit.names import short_name
from profaudit.parsers import ncu_common
from profaudit.parsers.base import Probe, ReadOptions, csv_cells, new_profile, open_maybe_gzip

_TOOL_LINE = re.compile(r"^\s*==[A-Z]+==")
_METRIC_NAME = re.compile(r"^[a-z0-9]+__[A-Za-z0-9_.:@\[\]]+$")
_FIXED = {
    "ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context", "Stream",
    "Block Size", "Grid Size", "Device", "CC",
}
_DETAILS_KEYS = ("Section Name", "Metric Name", "Metric Unit", "Metric Value")


def _is_fixed(name: str) -> bool:
    """A column that describes the launch (ID, names, NVTX ranges), not a metric."""
    return name in _FIXED or _is_nvtx(name)


def _is_nvtx(name: str) -> bool:
    # ncu --nvtx adds "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
    # and "Id:Domain:Start/Stop_Range:PL_Type:...:Msg" columns (2021-2025 exports).
    return name.startswith("NVTX") or "Push/Pop_Range" in name or "Start/Stop_Range" in name


_NVTX_ITEM = re.compile(r'"([^"]*)"')


def _nvtx_innermost(cell: str) -> str | None:
    """The innermost range name of an ncu NVTX cell.

    A cell is the thread (or range) id, then one quoted `<domain>:<name>:<PL_Type>:<PL_Value>:
    <CLR_Type>:<Color>:<Msg_Type>:<Msg>` item per open range, outermost first. A cell without
    that structure is returned as it is.
    """
    items = _NVTX_ITEM.findall(cell)
    if not items:
        return cell.strip() or None
    item = items[-1]
    _domain, sep, rest = item.partition(":")
    if not sep:
        return item or None
    name = rest.rsplit(":", 6)[0] if rest.count(":") >= 6 else rest.split(":", 1)[0]
    return name or None

_RULE_TYPE = {"OPT": "optimization", "WRN": "warning", "INF": "info", "ERR": "error", "OK": "info"}
_HEAD_LINES = 200


_PLAIN_HEADER = re.compile(r"^[A-Za-z_][A-Za-z0-9_ ./()#%:-]*$")


def _layout(cells: list[str]) -> str | None:
    """'details', 'raw', 'summary' or None for a candidate header row."""
    names = [c.strip() for c in cells]
    if "Metric Name" in names and "Invocations" in names and "Average" in names:
        return "summary"
    if all(k in names for k in _DETAILS_KEYS) and ("Kernel Name" in names or "ID" in names):
        return "details"
    if "Kernel Name" in names and "ID" in names:
        return "raw"
    metricish = [n for n in names if _METRIC_NAME.match(n)]
    # a line of code that lists metric names (`keys = ["dram__bytes.sum", ...]`) is no header
    if len(metricish) >= 2 and len(metricish) >= 0.6 * len(names) and all(_PLAIN_HEADER.match(n) for n in names):
        return "raw"
    return None


def find_header(lines: list[str]) -> tuple[int, str] | None:
    """(index of the header line, layout) among the first lines of a file, skipping ncu's own
    `==PROF==` lines and whatever the profiled program printed before the table."""
    for i, line in enumerate(lines[:_HEAD_LINES]):
        if not line.strip() or _TOOL_LINE.match(line) or "," not in line:
            continue
        lay = _layout(csv_cells(line) or [])
        if lay:
            return i, lay
    return None


def _number(cell: str, dc: bool = False) -> tuple[float | None, int | None]:
    """(value, exact integer) of a cell; `dc`: the file writes decimal commas (`1.234,5`)."""
    v = ncu_common.parse_number(cell, dc)
    if v is None:
        return None, None
    s = cell.strip().replace("." if dc else ",", "")
    if re.fullmatch(r"[-+]?\d+", s) and abs(int(s)) < 2**63:
        return v, int(s)
    return v, None


def _value(cell: str, dc: bool = False) -> tuple[float | None, int | None, str | None]:
    """(value, exact integer, text) of a metric cell; text only where it is not a number."""
    v, vi = _number(cell, dc)
    s = None if v is not None or cell.strip() in ("", "n/a", "N/A") else cell.strip()
    return v, vi, s


class _Kernel:
    __slots__ = ("info", "vals", "units")

    def __init__(self, info: dict[str, str]):
        self.info = info
        self.vals: dict[str, Any] = {}
        self.units: dict[str, str] = {}


def _canonical(metric: str, unit: str) -> str | None:
    if _METRIC_NAME.match(metric):
        return metric
    return ncu_common.label_to_metric(metric, unit)


class _Rows:
    def __init__(self):
        self.cols: dict[str, list] = {c: [] for c in ("kernel_id", "metric", "unit", "value", "value_str", "value_int", "instance_key", "section", "kind")}

    def add(self, **kw) -> None:
        for c, lst in self.cols.items():
            lst.append(kw.get(c))

    def frame(self) -> pl.DataFrame:
        sch = {c: schema.METRICS.polars_schema[c] for c in self.cols}
        return pl.DataFrame(self.cols, schema=sch, strict=False)


def _program_output(line_cells: list[str], raw_line: str) -> bool:
    """A line the profiled program printed between ncu's rows (live captures interleave them):
    ncu quotes every cell of its details rows, and a raw-page row has many cells."""
    return len(line_cells) <= 1 or not raw_line.lstrip().startswith('"')


def _parse_details(path: Path, header: list[str], rows: list[list[str]], out: _Rows, lines: list[str], skipped: list[str], dc: bool) -> list[_Kernel]:
    idx = {name.strip(): i for i, name in enumerate(header)}
    fixed = [n for n in header if _is_fixed(n.strip())]
    i_sec, i_name, i_unit, i_val = (idx[k] for k in _DETAILS_KEYS)
    i_rule = idx.get("Rule Name")
    kernels: dict[tuple[str, str], int] = {}
    order: list[_Kernel] = []
    for row, line in zip(rows, lines):
        if len(row) <= i_name:
            if _program_output(row, line):
                skipped.append(line)
                continue
            raise InputError(path, f"ncu CSV row has {len(row)} cells where at least {i_name + 1} are needed: {line[:80]!r}")
        cell = lambda k: row[idx[k]].strip() if k in idx and idx[k] < len(row) else ""  # noqa: E731
        key = (cell("Process ID"), cell("ID"))
        kid = kernels.get(key)
        if kid is None:
            kid = kernels[key] = len(order)
            order.append(_Kernel({n.strip(): cell(n.strip()) for n in fixed}))
        k = order[kid]
        section = row[i_sec].strip() if i_sec < len(row) else ""
        metric = row[i_name].strip()
        rule = row[i_rule].strip() if i_rule is not None and i_rule < len(row) else ""
        if metric:
            unit = row[i_unit].strip() if i_unit < len(row) else ""
            v, vi, s = _value(row[i_val] if i_val < len(row) else "", dc)
            out.add(kernel_id=kid, metric=metric, unit=unit, value=v, value_str=s, value_int=vi, section=section or None, kind=ncu_common.metric_kind(metric, section))
            canon = _canonical(metric, unit)
            if canon is not None and canon not in k.vals:
                k.vals[canon] = v if v is not None else s
                k.units[canon] = unit
        elif rule:
            rtype = cell("Rule Type")
            sp_type = cell("Estimated Speedup Type")
            sp, _ = _number(cell("Estimated Speedup"), dc)
            key_text = _RULE_TYPE.get(rtype, rtype.lower() or None)
            if sp is not None:
                key_text = f"{key_text};speedup={sp_type or 'unknown'}"
            out.add(kernel_id=kid, metric=rule, unit="%" if sp is not None else "", value=sp, value_str=cell("Rule Description") or None, instance_key=key_text, section=section or None, kind="rule")
    return order


def _parse_raw(path: Path, header: list[str], rows: list[list[str]], out: _Rows, lines: list[str], skipped: list[str], dc: bool) -> list[_Kernel]:
    names = [h.strip() for h in header]
    units = [""] * len(names)
    keep = []
    for row, line in zip(rows, lines):
        if len(row) <= 1:  # the program's own output between rows
            skipped.append(line)
        else:
            keep.append(row)
    rows = keep
    if rows and _is_units_row(names, rows[0]):
        units = [u.strip() for u in rows[0]] + [""] * (len(names) - len(rows[0]))
        rows = rows[1:]
    fixed_idx = [i for i, n in enumerate(names) if _is_fixed(n)]
    metric_idx = [i for i, n in enumerate(names) if not _is_fixed(n)]
    order: list[_Kernel] = []
    for row in rows:
        if len(row) != len(names):
            raise InputError(path, f"ncu CSV raw row {len(order) + 1} has {len(row)} cells, the header has {len(names)}")
        k = _Kernel({names[i]: row[i].strip() for i in fixed_idx})
        kid = len(order)
        order.append(k)
        for i in metric_idx:
            metric, unit = names[i], ("" if units[i] == "-" else units[i])
            v, vi, s = _value(row[i], dc)
            out.add(kernel_id=kid, metric=metric, unit=unit, value=v, value_str=s, value_int=vi, kind=ncu_common.metric_kind(metric))
            canon = _canonical(metric, unit)
            if canon is not None:
                k.vals[canon] = v if v is not None else s
                k.units[canon] = unit
    return order


# One CSV record per line in the RFC form ncu writes: quoted cells ("" inside for a quote) or bare
# cells without quotes. Only then do polars' CSV reader and csv.reader split a line the same way;
# a file with any other line (a program's own output with a stray quote) is read row by row.
_REGULAR_LINE = r'^(?:"(?:[^"]|"")*"|[^",\x00\ufeff]*)(?:,(?:"(?:[^"]|"")*"|[^",\x00\ufeff]*))*$'
_QUOTED_CELL = r'"(?:[^"]|"")*"'


# Rows of the metrics table one file may give: each costs about 75 bytes in memory (a String
# column is 16 bytes a row), so 10 million is about 0.75 GB, plus what reading the text takes. A
# `--page raw` export of 5,000 kernels x 1,500 metrics is 7.5 million; beyond the limit, ask for
# fewer metrics or launches.
METRIC_VALUE_LIMIT = 10_000_000
# the raw page column by column (tests turn it off to compare with the row-by-row reader)
FAST_RAW = True
_CHUNK = 1 << 16


def _interleave(cols: list[pl.Series], take: pl.Series) -> pl.Series:
    """Row k of every column, then row k + 1 ...: one kernel's metrics after another (`take`:
    _interleaving(len(cols), rows))."""
    return pl.concat(cols, rechunk=True).gather(take)


def _interleaving(m: int, c: int) -> pl.Series:
    i = pl.int_range(0, c * m, eager=True)
    return (i % m) * c + i // m


def _too_many(count: int, at_least: bool = False) -> str:
    return (
        f"{'at least ' if at_least else ''}{count:,} metric values: over the {METRIC_VALUE_LIMIT:,} one file may hold (about 0.75 GB in memory); "
        "export fewer metrics (--metrics, --section) or launches (--launch-count, --kernel-name), or split the report"
    )


def _read_raw_fast(path: Path, options: ReadOptions | None, header_line: str, box: list[list[str]], preamble: int):
    """A `--page raw` export column by column (polars; no Python per row or cell), or None when a
    line is not plain RFC CSV. Same tables, metadata and errors as the row-by-row reader. `box`
    holds the lines after the header; they are taken out of it (and freed once copied)."""
    from profaudit.parsers import ncu_vector as nv

    lines = pl.Series("l", box.pop(), dtype=pl.String)
    # what `l.strip() and not _TOOL_LINE.match(l)` keeps (Python's whitespace: \s and \x1c-\x1f)
    lines = lines.filter(~lines.str.contains(r"^[\s\x1c-\x1f]*$") & ~lines.str.contains(r"^[\s\x1c-\x1f]*==[A-Z]+=="))
    try:
        header = next(csv.reader([header_line]))
    except csv.Error:
        return None
    if not lines.str.contains(_REGULAR_LINE).all():
        return None
    names = [h.strip() for h in header]
    width = len(names)
    ncells = lines.str.replace_all(_QUOTED_CELL, "").str.count_matches(",", literal=True) + 1
    # csv.reader refuses a cell over its field limit (128 KiB): only a line that long can hold one
    limit = csv.field_size_limit()
    long_line = lines.str.len_chars() > limit
    if (long_line & (ncells > width)).any():
        return None  # the cells polars drops past the header's width could hold one
    n_metrics = sum(1 for n in names if not _is_fixed(n))
    rows_at_least = int((ncells > 1).sum()) - 1  # less a units row
    if rows_at_least * n_metrics > METRIC_VALUE_LIMIT:
        raise InputError(path, _too_many(rows_at_least * n_metrics, at_least=True))  # before the cells are read
    if len(lines):
        data = (lines.str.join("\n").item() + "\n").encode("utf-8")
        del lines
        cells = pl.read_csv(data, has_header=False, schema={f"c{i}": pl.String for i in range(width)}, quote_char='"', truncate_ragged_lines=True, raise_if_empty=False, missing_columns="insert", extra_columns="ignore")
        del data
    else:
        cells = pl.DataFrame(schema={f"c{i}": pl.String for i in range(width)})
    if long_line.any() and max((cells[c].str.len_chars().max() or 0) for c in cells.columns) > limit:
        raise InputError(path, f"malformed ncu CSV: field larger than field limit ({limit})")
    # csv.reader gives '' where polars gives null: an empty cell, or one past a short row's end
    cells = cells.with_columns(ncells.alias("_n"))
    fixed_idx = [i for i, n in enumerate(names) if _is_fixed(n)]
    metric_idx = [i for i, n in enumerate(names) if not _is_fixed(n)]

    def cell(i: int) -> pl.Expr:
        return pl.when(pl.col("_n") > i).then(pl.col(f"c{i}").fill_null(""))

    # the number format is decided by every line's value cells, row by row, as _value_cells lists them
    def value_cells():
        start, step = 0, 1024  # the first rows usually decide: small blocks first
        while start < len(cells):
            part = cells.slice(start, step).select(pl.concat_list([cell(i) for i in metric_idx]).alias("v"))
            yield part.explode("v")["v"].drop_nulls()
            start, step = start + step, min(step * 4, _CHUNK)

    dc = bool(metric_idx) and nv.number_format(value_cells()) == "decimal_comma"
    program = cells["_n"] <= 1  # the program's own output between rows
    skipped = int(program.sum())
    rows = cells.filter(~program)
    del cells
    units = [""] * width
    if len(rows):
        first = [rows[f"c{i}"][0] or "" for i in range(min(width, rows["_n"][0]))]
        if _is_units_row(names, first):
            units = [u.strip() for u in first] + [""] * (width - len(first))
            rows = rows.slice(1)
    wrong = (rows["_n"] != width).arg_true()
    if len(wrong):
        i = wrong[0]
        raise InputError(path, f"ncu CSV raw row {i + 1} has {rows['_n'][i]} cells, the header has {width}")
    if not len(rows):
        raise InputError(path, "ncu CSV export without kernel rows")
    n, m = len(rows), len(metric_idx)
    if n * m > METRIC_VALUE_LIMIT:
        raise InputError(path, _too_many(n * m))
    rows = rows.drop("_n")

    # metric cells -> the long metrics table, kernel by kernel in column order (as _parse_raw adds
    # them), built a block of kernels at a time so that only the table itself grows with the file
    per_unit = ["" if units[i] == "-" else units[i] for i in metric_idx]
    pos: dict[str, int] = {}  # canonical metric -> its metric column (the last one, as in _parse_raw)
    for j, i in enumerate(metric_idx):
        canon = _canonical(names[i], per_unit[j])
        if canon is not None:
            pos[canon] = j
    keep = sorted(set(pos.values()))
    metric_s = pl.Series("metric", [names[i] for i in metric_idx], dtype=pl.String)
    unit_s = pl.Series("unit", per_unit, dtype=pl.String)
    kind_s = pl.Series("kind", [ncu_common.metric_kind(names[i]) for i in metric_idx], dtype=pl.String)
    blocks, kept, strs = [], [], []
    for start in range(0, n if m else 0, _CHUNK):
        part = rows.slice(start, _CHUNK)
        vf = [nv.value_frame(part[f"c{i}"].fill_null(""), dc) for i in metric_idx]
        kept.append(pl.DataFrame({f"r{j}": vf[j]["value"] for j in keep}))
        c = len(part)
        j = pl.int_range(0, c * m, eager=True) % m
        take = _interleaving(m, c)
        blocks.append(pl.DataFrame({
            "kernel_id": pl.int_range(start * m, (start + c) * m, eager=True) // m,
            "metric": metric_s.gather(j),
            "unit": unit_s.gather(j),
            **{f: _interleave([v[f] for v in vf], take) for f in ("value", "value_int")},
            "kind": kind_s.gather(j),
        }))
        # text values are rare: a block without any keeps no column of nulls (16 bytes a row)
        strs.append(_interleave([v["value_str"] for v in vf], take) if any(v["value_str"].null_count() < c for v in vf) else c * m)
        del vf, j, take
    if blocks:
        # whole-frame operations from here on only add or pick columns: a cast or a rechunk would
        # copy the table
        if all(isinstance(x, int) for x in strs):
            value_str = pl.lit(None, dtype=pl.String)  # a constant costs nothing
        else:
            value_str = pl.concat([pl.repeat(None, x, dtype=pl.String, eager=True) if isinstance(x, int) else x for x in strs], rechunk=False)
            value_str = pl.lit(value_str)
        metrics = pl.concat(blocks, rechunk=False).with_columns(
            value_str.alias("value_str"), pl.lit(None, dtype=pl.String).alias("instance_key"), pl.lit(None, dtype=pl.String).alias("section"),
        ).select("kernel_id", "metric", "unit", "value", "value_str", "value_int", "instance_key", "section", "kind")
    else:
        metrics = _Rows().frame()
    del blocks, strs
    parts_value = pl.concat(kept, how="vertical") if kept else pl.DataFrame()
    del kept

    # kernel columns: derive_kernel_columns over the frame (every kernel has the same metrics)
    kf = nv.KernelFrame(pos, {c: per_unit[j] for c, j in pos.items()}, lambda c: f"r{pos[c]}")
    frame = parts_value.with_columns([pl.when(pl.col(f"r{j}").is_finite()).then(pl.col(f"r{j}")) for j in keep])
    disp = pos.get("device__attribute_display_name")
    if disp is not None:
        # the display name is the cell's text where it is not a number
        i = metric_idx[disp]
        frame = frame.with_columns(nv.value_frame(rows[f"c{i}"].fill_null(""), dc)["value_str"].alias("_display"))
    if not len(frame.columns):
        frame = pl.DataFrame({"_": pl.repeat(None, n, eager=True)})
    kdf = kf.apply(frame, pl.col("_display") if disp is not None else None)
    del parts_value, frame

    info = {names[i]: i for i in fixed_idx}  # a repeated name: its last column (the dict of _parse_raw)

    def fixed(name: str) -> pl.Series | None:
        i = info.get(name)
        return rows.select(nv.strip(pl.col(f"c{i}")))[f"c{i}"] if i is not None else None

    def ids(name: str) -> pl.Series | None:
        col = fixed(name)
        return None if col is None else nv.map_unique(col, lambda c: ncu_common.id_value(ncu_common.parse_number(c, dc)), pl.Int64)

    add: dict[str, pl.Series] = {"kernel_id": pl.int_range(0, n, eager=True)}
    kname = fixed("Kernel Name")
    if kname is not None:
        kname = kname.replace("", None)
        add["name"] = kname
        add["short_name"] = nv.map_unique(kname, short_name, pl.String)
    else:
        add["name"] = add["short_name"] = pl.Series([None] * n, dtype=pl.String)
    for col, field in (("process_id", "Process ID"), ("context_id", "Context"), ("stream", "Stream"), ("device_id", "Device")):
        v = ids(field)
        if v is not None:
            add[col] = pl.coalesce(v, kdf[col]) if col in kdf.columns else v
    pname = fixed("Process Name")
    add["module"] = pname.replace("", None) if pname is not None else pl.Series([None] * n, dtype=pl.String)
    kdf = kdf.with_columns([v.alias(k) for k, v in add.items()])
    for prefix, field in (("block", "Block Size"), ("grid", "Grid Size")):
        col = fixed(field)
        if col is None:
            continue
        dims = nv.map_unique(col, lambda c: list(d) if (d := ncu_common.parse_dims(c)) else None, pl.List(pl.Int64))
        prod = nv.map_unique(col, lambda c: (d[0] * d[1] * d[2]) if (d := ncu_common.parse_dims(c)) else None, pl.Int64)
        has = dims.is_not_null()
        xs = [dims.list.get(j) for j in range(3)]
        # derive's value counts as set even where it overflowed Int64 (a Python int there)
        use = has & ~kdf[f"_set_{prefix}_x"]
        kdf = kdf.with_columns(
            [pl.when(use).then(xs[j]).otherwise(pl.col(f"{prefix}_{a}")).alias(f"{prefix}_{a}") for j, a in enumerate("xyz")]
            + [pl.when(has & ~pl.col(f"_set_{prefix}_size")).then(prod).otherwise(pl.col(f"{prefix}_size")).alias(f"{prefix}_size")]
        )
    # push/pop ranges first (what ncu_rep does), then start/end ranges: the last non-blank cell
    pp = [i for n_, i in info.items() if _is_nvtx(n_) and "Start/Stop_Range" not in n_]
    se = [i for n_, i in info.items() if "Start/Stop_Range" in n_]
    if pp or se:
        def last_set(idx):
            return [nv.strip(pl.col(f"c{i}")).replace("", None) for i in reversed(idx)]
        pick = rows.select(pl.coalesce(last_set(pp) + last_set(se) + [pl.lit(None, dtype=pl.String)]).alias("p"))["p"]
        kdf = kdf.with_columns(nv.map_unique(pick, _nvtx_innermost, pl.String).alias("nvtx_range"))
    else:
        kdf = kdf.with_columns(pl.lit(None, dtype=pl.String).alias("nvtx_range"))

    device_from_option = False
    has_name = kdf["device_name"].fill_null("") != ""
    if options is not None and options.device and not has_name.any():
        # a CSV export names no device unless device__attribute_display_name was asked for
        kdf = kdf.with_columns(pl.lit(options.device, dtype=pl.String).alias("device_name"))
        device_from_option = True
        has_name = kdf["device_name"].fill_null("") != ""
    kdf = kdf.with_columns(pl.lit("ncu", dtype=pl.String).alias("source"))
    kdf = kdf.select([pl.col(c).cast(schema.KERNELS.polars_schema[c]) for c in schema.KERNELS.names if c in kdf.columns])

    def distinct(name: str) -> list[str]:
        col = fixed(name)
        return [] if col is None else col.filter(col != "").unique().to_list()

    hosts, ccs = sorted(distinct("Host Name")), sorted(distinct("CC"))
    dev_names = kdf["device_name"].filter(has_name)
    md = _metadata(
        layout="raw", device_name=dev_names[0] if len(dev_names) else None, device_count=len(distinct("Device")), hosts=hosts,
        ccs=ccs, preamble=preamble, skipped=skipped, device_from_option=device_from_option, dc=dc,
    )
    return _profile(path, kdf, metrics, md)


def _is_units_row(names: list[str], row: list[str]) -> bool:
    """The row under a raw header holds units: no cell of a metric column is a number."""
    metric_cells = [c.strip() for n, c in zip(names, row) if not _is_fixed(n)]
    return bool(metric_cells) and all(ncu_common.parse_number(c) is None or c.strip() == "" for c in metric_cells)


def _kernel_rows(kernels: list[_Kernel], dc: bool = False) -> list[dict[str, Any]]:
    out = []
    for kid, k in enumerate(kernels):
        row = ncu_common.derive_kernel_columns(k.vals, k.units)
        info = k.info
        name = info.get("Kernel Name") or None
        row.update(kernel_id=kid, name=name, short_name=short_name(name) if name else None)
        for col, field in (("process_id", "Process ID"), ("context_id", "Context"), ("stream", "Stream")):
            v = ncu_common.id_value(ncu_common.parse_number(info.get(field, ""), dc))
            if v is not None:
                row[col] = v
        dev = ncu_common.id_value(ncu_common.parse_number(info.get("Device", ""), dc))
        if dev is not None:
            row["device_id"] = dev
        row["module"] = info.get("Process Name") or None
        for prefix, dims in (("block", ncu_common.parse_dims(info.get("Block Size"))), ("grid", ncu_common.parse_dims(info.get("Grid Size")))):
            if dims and row.get(f"{prefix}_x") is None:
                row[f"{prefix}_x"], row[f"{prefix}_y"], row[f"{prefix}_z"] = dims
            if dims and row.get(f"{prefix}_size") is None:
                row[f"{prefix}_size"] = dims[0] * dims[1] * dims[2]
        # push/pop ranges first (what ncu_rep does), then start/end ranges
        pp = [v for n, v in info.items() if _is_nvtx(n) and "Start/Stop_Range" not in n and v.strip()]
        se = [v for n, v in info.items() if "Start/Stop_Range" in n and v.strip()]
        pick = pp[-1] if pp else (se[-1] if se else None)
        row["nvtx_range"] = _nvtx_innermost(pick) if pick else None
        out.append(row)
    return out


def _decode(data: bytes) -> str:
    """Text of an export. Windows PowerShell's `>` writes UTF-16 with a byte-order mark."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16", errors="replace")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


_TEXT_SECTION = re.compile(r"^\s+Section: \S")
_TEXT_TABLE = re.compile(r"^\s+Metric Name\s+Metric Unit\s+Metric Value\s*$")


def _is_ncu_text(lines: list[str]) -> bool:
    """ncu's human-readable output (no --csv): `Section: ...` headings over fixed-width tables."""
    head = lines[:_HEAD_LINES * 5]
    return any(_TEXT_SECTION.match(l) for l in head) and any(_TEXT_TABLE.match(l) for l in head)


def _value_cells(layout: str, header: list[str], rows) -> Iterator[str]:
    """The cells that hold metric values (what decides the file's number format), as they come:
    the decision stops after enough of them."""
    names = [h.strip() for h in header]
    if layout == "details":
        idx = [names.index(k) for k in ("Metric Value", "Estimated Speedup") if k in names]
    else:
        idx = [i for i, n in enumerate(names) if not _is_fixed(n)]
    return (r[i] for r in rows for i in idx if i < len(r))


class _LineCells:
    """The cells of each line, split as they are read, each time the lines are walked: a list of
    every row's cells held ~1 KB a row of a details export (15 cells), 0.85 GB for a 200 MB file
    whose text and lines the reader holds already (fuzz blow-up: one metric line 838,861 times
    peaked at 1.7 GB). A line csv refuses is the one-line error it was when all were split first."""

    def __init__(self, path: Path, lines: list[str]):
        self.path, self.lines = path, lines

    def __iter__(self) -> Iterator[list[str]]:
        try:
            for line in self.lines:
                # one record per line: ncu never writes a newline inside a cell
                yield next(csv.reader([line]))
        except csv.Error as exc:
            raise InputError(self.path, f"malformed ncu CSV: {exc}") from None


def read_csv_export(path: Path, options: ReadOptions | None = None):
    path = Path(path)
    try:
        with open_maybe_gzip(path) as f:
            data = f.read()
    except OSError as exc:
        raise InputError.unreadable(path, exc) from None
    text = _decode(data)
    del data
    if not text.strip():
        raise InputError(path, "empty file")
    if not text.endswith(("\n", "\r")):
        raise InputError(path, "truncated ncu CSV: the last line ends without a newline")
    lines = text.splitlines()
    found = find_header(lines)
    if found is None:
        if _is_ncu_text(lines):
            raise InputError(path, "Nsight Compute text output, not CSV: export it with `ncu --import REPORT --csv --page details` (or run ncu with --csv)")
        raise InputError(path, "not an Nsight Compute CSV export: no ncu header row")
    hi, layout = found
    if layout == "summary":
        raise InputError(
            path,
            "ncu --print-summary export: minimum/maximum/average per kernel over its invocations, not per-launch "
            "values; export per launch with `ncu --import REPORT --csv --page details` (or --page raw)",
        )
    preamble = [l for l in lines[:hi] if l.strip()]
    if layout == "raw" and FAST_RAW:
        # the fast reader takes the lines over (a list of strings costs more than the text); the
        # row-by-row reader splits the text again when it declines
        box = [lines[hi + 1 :]]
        header_line = lines[hi]
        del lines
        fast = _read_raw_fast(path, options, header_line, box, len(preamble))
        if fast is not None:
            return fast
        lines = text.splitlines()
    del text  # the lines hold it now
    body = [l for l in lines[hi + 1 :] if l.strip() and not _TOOL_LINE.match(l)]
    try:
        header = next(csv.reader([lines[hi]]))
    except csv.Error as exc:
        raise InputError(path, f"malformed ncu CSV: {exc}") from None
    del lines
    rows = _LineCells(path, body)
    out = _Rows()
    skipped: list[str] = []
    fmt = ncu_common.number_format(_value_cells(layout, header, rows))
    dc = fmt == "decimal_comma"
    parse = _parse_details if layout == "details" else _parse_raw
    kernels = parse(path, header, rows, out, body, skipped, dc)
    if not kernels:
        raise InputError(path, "ncu CSV export without kernel rows")
    krows = _kernel_rows(kernels, dc)
    device_from_option = False
    if options is not None and options.device and not any(r.get("device_name") for r in krows):
        for r in krows:  # a CSV export names no device unless device__attribute_display_name was asked for
            r["device_name"] = options.device
        device_from_option = True
    cols = {c: [r.get(c) for r in krows] for c in schema.KERNELS.names if c != "profile_id" and any(r.get(c) is not None for r in krows)}
    cols["source"] = ["ncu"] * len(krows)
    kdf = pl.DataFrame(cols, schema={c: schema.KERNELS.polars_schema[c] for c in cols}, strict=False)

    hosts = sorted({k.info.get("Host Name") for k in kernels if k.info.get("Host Name")})
    devices = {k.info.get("Device") for k in kernels if k.info.get("Device")}
    ccs = sorted({k.info.get("CC") for k in kernels if k.info.get("CC")})
    names = [r["device_name"] for r in krows if r.get("device_name")]
    md = _metadata(
        layout=layout, device_name=names[0] if names else None, device_count=len(devices), hosts=hosts, ccs=ccs,
        preamble=len(preamble), skipped=len(skipped), device_from_option=device_from_option, dc=dc,
    )
    return _profile(path, kdf, out.frame(), md)


def _metadata(*, layout, device_name, device_count, hosts, ccs, preamble, skipped, device_from_option, dc) -> dict[str, Any]:
    return {
        "tool": "Nsight Compute",
        "device_name": device_name,
        "device_count": device_count or None,
        "host": hosts[0] if len(hosts) == 1 else None,
        "csv_page": layout,
        "compute_capability": ccs[0] if len(ccs) == 1 else (ccs or None),
        "hosts": hosts if len(hosts) > 1 else None,
        "preamble_lines": preamble or None,
        "skipped_lines": skipped or None,
        "control_note": "an ncu CSV export does not record --clock-control/--cache-control: ncu's defaults are assumed",
        "device_name_from": "--device option" if device_from_option else None,
        # only recorded when it is not ncu's default: the values were read as 1.234,5
        "number_format": "decimal comma, dot thousands (comma-decimal locale)" if dc else None,
    }


def _profile(path: Path, kdf: pl.DataFrame, metrics: pl.DataFrame, md: dict[str, Any]):
    md.update(ncu_common.controls_from(None))
    return new_profile(path, PARSER, {"kernels": kdf, "metrics": metrics}, md)


class NcuCsvParser:
    name = "ncu-csv"
    source = "ncu"
    suffixes = (".csv", ".csv.gz", ".txt", ".log")
    description = "Nsight Compute CSV export (ncu --csv: --page details or raw, with or without ==PROF== lines)"

    def sniff(self, probe: Probe) -> bool:
        if probe.is_dir:
            return False
        head = probe.raw_head
        text = _decode(head[: len(head) // 2 * 2]) if head[:2] in (b"\xff\xfe", b"\xfe\xff") else probe.text
        lines = text.splitlines()[:_HEAD_LINES]
        # ncu's text output is claimed too, so that it gets this parser's "export it as CSV" error
        if _is_ncu_text(lines):
            return True
        if "," not in text:
            return False
        return find_header(lines) is not None

    def read(self, path: Path, options: ReadOptions):
        return read_csv_export(path, options)


PARSER = NcuCsvParser()
