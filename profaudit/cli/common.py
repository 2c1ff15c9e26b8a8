"""What every command shares: output formats, atomic writes, progress bars, loading with a bar."""

from __future__ import annotations

import io
import json
import math
import os
import sys
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import polars as pl
import typer

from profaudit.errors import UsageError
from profaudit.fmt import column_units, fmt_cell, plural


class Format(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"
    parquet = "parquet"


FORMAT_OPTION = typer.Option(Format.table, "--format", "-f", help="Output format: table, csv, json (parquet needs --output).")
OUTPUT_OPTION = typer.Option(None, "--output", "-o", help="Write to this file (atomically) instead of standard output.")
LIMIT_OPTION = typer.Option(200, "--limit", "-n", min=0, help="Rows shown per table in table format (0 = all).")
PLOTLYJS_OPTION = typer.Option("embed", "--plotlyjs", help="HTML output: embed plotly.js (offline, ~4.8 MB), cdn (a <script> from cdn.plot.ly), or directory (plotly.min.js written beside the HTML file, shared by the HTML files in that folder).")
NSYS_OPTION = typer.Option(None, "--nsys", help="nsys executable used to export .nsys-rep/.qdrep reports (default: $PROFAUDIT_NSYS, then PATH).")


def key_values(items: Sequence[str] | None, flag: str, convert: Callable[[str], Any] = str) -> dict[str, Any]:
    """Repeated `--flag KEY=VALUE` options as a dict (keys and values stripped, values through
    `convert`); UsageError naming the first item without '='."""
    out = {}
    for it in items or []:
        if "=" not in it:
            raise UsageError(f"{flag} {it!r}: expected KEY=VALUE")
        k, v = it.split("=", 1)
        out[k.strip()] = convert(v.strip())
    return out


def select_columns(df: pl.DataFrame, columns: str | None, default: Sequence[str] | None = None, *, where: str = "") -> pl.DataFrame:
    """`--columns`: a comma-separated list (UsageError naming the unknown ones), 'all', or None for
    `default` (None: every column). `where` ('in kernels') completes the error message."""
    if columns is None:
        return df if default is None else df.select(default)
    if not columns or columns == "all":
        return df
    cols = [c.strip() for c in columns.split(",") if c.strip()]
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise UsageError(f"no column(s) {missing}{' ' + where if where else ''}; columns: {', '.join(df.columns)}")
    return df.select(cols)


def stderr_console():
    from rich.console import Console

    # messages are single lines: let them run long rather than wrap at the terminal width
    return Console(stderr=True, soft_wrap=True)


def stdout_console():
    from rich.console import Console

    # a pipe or a log file has no width, and rich's 80-column default folds every cell of a wide
    # table into a tower of fragments; COLUMNS still wins when set
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 200
    return Console(soft_wrap=False, width=width)


@contextmanager
def progress_bar(description: str, total: int | None) -> Iterator:
    """A rich progress bar on stderr; `advance(label)` moves it. Silent when stderr is no terminal."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = stderr_console()
    columns = [SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.fields[item]}")]
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as prog:
        task = prog.add_task(description, total=total, item="")

        def advance(label: str = "") -> None:
            prog.update(task, advance=1, item=Path(label).name if label else "")

        yield advance


def load_with_progress(paths: Sequence[str], **kw):
    """`profaudit.load` with a progress bar over the inputs; what was skipped or dropped is listed
    on stderr (one line each)."""
    from profaudit.loader import expand, load

    inputs = expand(list(paths))  # once: its length sizes the progress bar, then it is loaded
    with progress_bar("loading", len(inputs)) as advance:
        ps = load(inputs, progress=advance, **kw)
    report_loaded(ps.skipped, [{"profile_id": p.profile_id, **p.metadata} for p in ps])
    return ps


def report_loaded(skipped: Sequence[tuple[str, str]], metadata: Sequence[dict]) -> None:
    """On stderr, one line each: the inputs skipped, and what a parser had to drop or null (counted
    in each profile's metadata). Shared by local loads and cluster ingests, so both say the same.
    A path's line breaks are escaped, as in errors (`one_line`)."""
    from profaudit.errors import one_line

    err = stderr_console()
    for path, why in skipped:
        # `why` is an InputError's text, its path already escaped (review F19-3: compared with the
        # raw path, a name with a newline was printed twice)
        err.print(one_line(f"warning: skipped {why if why.startswith(one_line(str(path))) else f'{path}: {why}'}"), markup=False, highlight=False)
    for md in metadata:
        where = md.get("path", md.get("profile_id"))
        for key, say in _LOAD_WARNINGS:
            v = md.get(key)
            if v:
                err.print(one_line(f"warning: {where}: {say(v)}"), markup=False, highlight=False)


_LOAD_WARNINGS: tuple[tuple[str, Callable[[Any], str]], ...] = (
    ("rows_dropped", lambda n: f"{plural(int(n), 'row')} without a readable time {'was' if n == 1 else 'were'} dropped"),
    ("negative_durations_nulled", lambda n: f"{plural(int(n), 'event')} with a negative duration kept with an unknown duration"),
    ("unmeasured_note", str),
    ("incomplete_reason", lambda s: f"loaded as incomplete: {s}"),
)


# text columns that carry names: shortened in the middle to fit (the ends tell kernels apart)
_NAME_COLUMNS = ("short_name", "profile_id", "name", "benchmark", "variant", "params", "op_name", "nvtx_range", "module", "path", "mangled_name", "device_name", "case")
# name columns that say where a row comes from rather than what it is: shortened first
_CONTEXT_COLUMNS = ("profile_id", "path", "device_name", "module", "mangled_name")
# never shortened nor folded: a metric name must be readable and copyable whole
_WHOLE_COLUMNS = ("metric",)
_MIN_NAME = 12
# separators between columns in the compact table style (no vertical rules)
_GAP = 2


def where_the_data_is(ps, table: str, flag: str = "profaudit kernels -t") -> str:
    """"; they hold 440 rows in `-t samples`" for a note that `table` is empty: the tables of these
    inputs that do hold rows, named as the user would ask for them (`flag`), or "" when none does."""
    from profaudit import schema

    held = [(t, ps.table(t).height) for t in schema.DATA_TABLES if t != table and ps.table(t).height]
    if held:
        return "; they hold " + ", ".join(f"{plural(n, 'row')} in `{flag} {t}`" for t, n in held)
    if len(ps):
        # a report with no trace tables at all (an nsys export of a run that launched nothing):
        # what was read is its run metadata, not a parse that went wrong
        return f"; no other table holds rows either, only the run metadata (`{flag} metadata`)"
    return ""


def wrap_between_items(text: str, width: int) -> str:
    """A table title as lines of at most `width`, broken only after ": " or ", " (between the
    "key value" items of "kernels (12 rows): profile_id X, device_name AMD Instinct MI300X"), so a
    device or profile name is never split; an item wider than the terminal stays whole on its line."""
    import re

    lines, cur = [], ""
    for part in re.split(r"(?<=: )|(?<=, )", text):
        if cur and len(cur) + len(part.rstrip()) > width:
            lines.append(cur.rstrip())
            cur = part
        else:
            cur += part
    lines.append(cur.rstrip())
    return "\n".join(lines)


def middle_ellipsis(text: str, width: int) -> str:
    """'ampere_sgemm_128x64_nn' -> 'ampere_…64_nn': both ends kept, one character marks the cut."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    head = width // 2
    tail = width - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


def fit_cells(df: pl.DataFrame, width: int | None, *, wide: bool = False, drop_order: Sequence[str] = ()) -> tuple[list[str], list[list[str]], list[str], list[str]]:
    """(headers, formatted rows, hidden columns, empty columns) for a terminal `width` wide.

    Columns without a value in any shown row leave first; then name columns are shortened in the
    middle; then the columns of `drop_order` (default: all but the first, right to left) go, last
    first, until one row fits on one line. `wide` keeps everything whole."""
    units = column_units(df)
    cols = list(df.columns)
    rows = [[fmt_cell(v, units.get(c, "")) for c, v in zip(cols, r)] for r in df.iter_rows()]
    hidden: list[str] = []
    empty: list[str] = []
    if wide or width is None:
        return cols, rows, hidden, empty
    if rows:
        for j in reversed(range(len(cols))):
            if len(cols) > 1 and all(r[j] == "—" for r in rows):
                empty.insert(0, cols.pop(j))
                for r in rows:
                    r.pop(j)
    if not drop_order:
        keep = {cols[0], *_WHOLE_COLUMNS, next((c for c in cols if c in _NAME_COLUMNS), "")}
        drop_order = [c for c in cols if c not in keep]

    def widths() -> list[int]:
        return [max([len(h)] + [len(r[j]) for r in rows]) for j, h in enumerate(cols)]

    def total(ws: list[int]) -> int:
        return sum(ws) + _GAP * (len(ws) - 1)

    def drop(j: int) -> None:
        hidden.append(cols.pop(j))
        for r in rows:
            r.pop(j)

    def shrink(floor: int) -> None:
        ws = widths()
        excess = total(ws) - width
        if excess <= 0:
            return
        # which profile/file a row is from, then free text (a note, a message), then the row's own
        # name (a kernel cut to 'sgemm_…ernel' beside a 39-character note told nothing): never a
        # metric name, never a number
        text = [j for j, c in enumerate(cols) if c not in _WHOLE_COLUMNS and (c in _NAME_COLUMNS or (c in df.columns and df.schema[c] == pl.Utf8))]
        context = [j for j in text if cols[j] in _CONTEXT_COLUMNS]
        names = [j for j in text if cols[j] in _NAME_COLUMNS and j not in context]
        for group in (context, [j for j in text if cols[j] not in _NAME_COLUMNS], names):
            # the widest of the group gives a character at a time, so two name columns end up
            # alike (an NVTX range of 39 beside a kernel name cut to 12 told neither apart)
            target = {j: ws[j] for j in group}
            low = {j: max(_MIN_NAME if group is context else floor, len(cols[j])) for j in group}
            while excess > 0:
                j = max((j for j in group if target[j] > low[j]), key=lambda j: target[j], default=None)
                if j is None:
                    break
                step = min(excess, target[j] - low[j], max(1, target[j] - max((target[i] for i in group if i != j), default=0)))
                target[j] -= step
                excess -= step
            for j in group:
                if target[j] < ws[j]:
                    for r in rows:
                        r[j] = middle_ellipsis(r[j], target[j])

    full = {c: [r[j] for r in rows] for j, c in enumerate(cols)}
    shrink(24)
    droppable = [c for c in reversed(list(drop_order)) if c in cols]
    while total(widths()) > width and droppable:
        drop(cols.index(droppable.pop(0)))
        shrink(24)
    if hidden:
        # hiding a column frees room the names were cut for: cut them again from the whole text,
        # only as far as the columns still shown need
        for j, c in enumerate(cols):
            for r, v in zip(rows, full[c]):
                r[j] = v
    shrink(_MIN_NAME)
    for j, c in enumerate(cols):
        cut = [r[j] for r in rows]
        if cut != full[c]:
            for r, v in zip(rows, tell_apart(full[c], cut)):
                r[j] = v
    return cols, rows, hidden, empty


def tell_apart(full: Sequence[str], cut: Sequence[str]) -> list[str]:
    """Cells whose middle ellipsis made different names identical ("sm80_xmma_fpro…te_kernel_trt"
    for five different kernels) cut again, at the same width, around where each name departs
    from its closest sibling: "sm80_x…_128x128_ldg8…el_trt". Names that stay apart keep their cut."""
    import os

    groups: dict[str, set[str]] = {}
    for f, c in zip(full, cut):
        groups.setdefault(c, set()).add(f)
    again: dict[str, str] = {}
    for c, names in groups.items():
        if len(names) < 2:
            continue
        for name in names:
            depart = max(len(os.path.commonprefix([name, other])) for other in names if other != name)
            again[name] = _window(name, len(c), depart)
    return [again.get(f, c) for f, c in zip(full, cut)]


def _window(text: str, width: int, at: int) -> str:
    """`text` in `width` characters: its head, the stretch from just before `at`, and its tail."""
    if len(text) <= width or width < 9:
        return middle_ellipsis(text, width)
    head = tail = max(2, width // 5)
    mid = width - head - tail - 2
    start = max(head, min(at - mid // 3, len(text) - tail - mid))
    if start <= head:  # the stretch follows the head: one cut, after it
        return text[: width - tail - 1] + "…" + text[-tail:]
    if start + mid >= len(text) - tail:  # the stretch reaches the tail: one cut, before it
        return text[:head] + "…" + text[-(width - head - 1):]
    return text[:head] + "…" + text[start : start + mid] + "…" + text[-tail:]


def constant_columns(df: pl.DataFrame, candidates: Sequence[str] = ("profile_id", "device_name", "source")) -> dict[str, Any]:
    """Identity columns holding one value in every row (a table of one profile): shown once in
    the title instead of on every line."""
    out = {}
    if df.height < 1:
        return out
    for c in candidates:
        if c in df.columns and df.schema[c] == pl.Utf8 and df[c].n_unique() == 1 and df[c][0] is not None:
            out[c] = df[c][0]
    return out


def frame_to_rich(df: pl.DataFrame, title: str | None = None, limit: int | None = 200, *, width: int | None = None, wide: bool = False, drop_order: Sequence[str] = ()):
    """A rich table of `df`; with `width`, fitted to that many columns (see `fit_cells`)."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    shown = df if limit is None else df.head(limit)
    if width is not None and not wide:
        consts = constant_columns(df)  # the whole table, not the rows shown: one profile really
        if consts and shown.width > len(consts):
            shown = shown.drop(list(consts))
            said = ", ".join(f"{k} {v}" for k, v in consts.items())
            title = f"{title}: {said}" if title else said
    cols, rows, hidden, empty = fit_cells(shown, width, wide=wide, drop_order=drop_order)
    ws = [max([len(c)] + [len(r[j]) for r in rows]) for j, c in enumerate(cols)]
    if width is not None:
        # compact: no vertical rules, two spaces between columns (what fit_cells counts)
        t = Table(title=title, header_style="bold", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    else:
        t = Table(title=title, show_lines=False, header_style="bold")
    for c, w in zip(cols, ws):
        numeric = c in shown.columns and shown.schema[c].is_numeric()
        if width is not None:
            # cells were fitted above: rich must neither fold nor cut them again
            t.add_column(c, justify="right" if numeric else "left", no_wrap=True, min_width=w)
        else:
            t.add_column(c, justify="right" if numeric else "left", overflow="fold")
    for r in rows:
        # cells are data, not markup: `[n=256]` in a kernel name must print as written
        t.add_row(*[escape(x) for x in r])
    notes = []
    if limit is not None and df.height > limit:
        notes.append(f"{limit:,} of {df.height:,} rows shown; use --limit 0 or --format csv for all")
    if empty:
        notes.append(f"no values: {', '.join(empty)}")
    if hidden:
        notes.append(f"hidden to fit {width} columns: {', '.join(hidden)} (--wide, --columns or a wider terminal shows them)")
    if notes:
        t.caption = "; ".join(notes)
    return t


def emit_frame(df: pl.DataFrame, fmt: Format | str, output: Path | None = None, *, title: str | None = None, limit: int | None = 200, wide: bool = False, drop_order: Sequence[str] = ()) -> None:
    """Print or write a table in the chosen format. Files are written atomically.

    A table on the terminal fits its width (one row per line: names shortened in the middle,
    the columns of `drop_order` hidden last-first when still too wide); `wide` prints every cell
    whole, as csv and json always do."""
    from profaudit.dataset import atomic_write_bytes, atomic_write_frame

    fmt = Format(fmt)
    if fmt is Format.parquet and output is None:
        raise UsageError("--format parquet needs --output FILE")
    if limit is not None and limit < 0:
        # df.head(-n) would drop the last n rows instead of failing
        raise UsageError(f"--limit {limit}: give a number of rows, or 0 for all")
    if output is not None:
        if fmt is Format.table:
            buf = io.StringIO()
            from rich.console import Console

            Console(file=buf, width=200).print(frame_to_rich(df, title, None))
            atomic_write_bytes(Path(output), buf.getvalue().encode())
        else:
            atomic_write_frame(_flatten_for(fmt, df), Path(output), fmt.value)
        stderr_console().print(f"wrote {plural(df.height, 'row')} to {output}")
        return
    if fmt is Format.table:
        con = stdout_console()
        if df.height == 0:
            # no rows: the title says so ("kernels (0 rows)"); a header over nothing, and columns
            # "hidden to fit", would only be noise under it
            con.print(title or "no rows", markup=False, highlight=False, style="bold", soft_wrap=True)
            return
        if wide:
            con.width = max(con.width, 10_000)  # whole cells, one row per line: the pager or terminal scrolls
        t = frame_to_rich(df, title, limit if limit else None, width=con.width, wide=wide, drop_order=drop_order)
        # title and notes on lines of their own: inside the table rich would wrap them to its width
        head, notes = t.title, t.caption
        t.title = t.caption = None
        if head:
            con.print(wrap_between_items(str(head), con.width), markup=False, highlight=False, style="bold", soft_wrap=True)
        # crop=False: a metric name longer than the terminal is never cut (the terminal wraps it)
        con.print(t, crop=False)
        if notes:
            con.print(notes, markup=False, highlight=False, style="dim")
    elif fmt is Format.csv:
        # in slices: the whole table as one string was twice its CSV size in memory at once (a
        # 14 M-row metrics table of a 200 MB capture: 3.3 GB peak where the read took 1.6)
        for i, part in enumerate(_slices(df)):
            sys.stdout.write(_flatten_for(fmt, part).write_csv(include_header=i == 0))
    elif fmt is Format.json:
        # NaN/inf are not JSON (jq and strict parsers reject them): null, as the -o file has it.
        # Written in slices, as csv is, with the bytes json.dumps gives the whole list
        if df.height == 0:
            sys.stdout.write("[]\n")
            return
        sys.stdout.write("[\n")
        for i, part in enumerate(_slices(df)):
            rows = [{k: _json_number(v) for k, v in r.items()} for r in part.to_dicts()]
            sys.stdout.write((",\n" if i else "") + json.dumps(rows, default=str, indent=1, allow_nan=False)[2:-2])
        sys.stdout.write("\n]\n")


# rows per slice of a table written to stdout: a few MB of text at a time
_SLICE_ROWS = 100_000


def _slices(df: pl.DataFrame):
    return df.iter_slices(_SLICE_ROWS) if df.height else iter([df])


def _json_number(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, list):
        return [_json_number(x) for x in v]
    if isinstance(v, dict):
        return {k: _json_number(x) for k, x in v.items()}
    return v


def _flatten_for(fmt: Format, df: pl.DataFrame) -> pl.DataFrame:
    if fmt is Format.csv:
        nested = [c for c, t in df.schema.items() if isinstance(t, (pl.List, pl.Struct, pl.Array))]
        if nested:
            df = df.with_columns([pl.col(c).map_elements(lambda v: json.dumps(v if not hasattr(v, "to_list") else v.to_list(), default=str), return_dtype=pl.Utf8) for c in nested])
    return df


def emit_json(obj: Any, output: Path | None = None) -> None:
    from profaudit.dataset import atomic_write_text

    text = json.dumps(obj, indent=1, default=str, allow_nan=False) + "\n"
    if output is None:
        sys.stdout.write(text)
    else:
        atomic_write_text(Path(output), text)
        stderr_console().print(f"wrote {output}")


def emit_text(text: str, output: Path | None = None) -> None:
    from profaudit.dataset import atomic_write_text

    if output is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        atomic_write_text(Path(output), text)
        stderr_console().print(f"wrote {output}")
