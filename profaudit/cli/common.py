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


class Format(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"
    parquet = "parquet"


FORMAT_OPTION = typer.Option(Format.table, "--format", "-f", help="Output format: table, csv, json (parquet needs --output).")
OUTPUT_OPTION = typer.Option(None, "--output", "-o", help="Write to this file (atomically) instead of standard output.")
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

    n = len(expand(list(paths)))
    with progress_bar("loading", n) as advance:
        ps = load(list(paths), progress=advance, **kw)
    err = stderr_console()
    for path, why in ps.skipped:
        err.print(f"warning: skipped {why if why.startswith(path) else f'{path}: {why}'}", markup=False, highlight=False)
    # what a parser had to drop or null is counted in metadata; say so where people look
    for p in ps:
        where = p.metadata.get("path", p.profile_id)
        for key, say in _LOAD_WARNINGS:
            v = p.metadata.get(key)
            if v:
                err.print(f"warning: {where}: {say(v)}", markup=False, highlight=False)
    return ps


_LOAD_WARNINGS: tuple[tuple[str, Callable[[Any], str]], ...] = (
    ("rows_dropped", lambda n: f"{n} row(s) without a readable time were dropped"),
    ("negative_durations_nulled", lambda n: f"{n} event(s) with a negative duration kept with an unknown duration"),
    ("unmeasured_note", str),
)


def _fmt_cell(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if v != 0 and (abs(v) >= 1e7 or abs(v) < 1e-3):
            return f"{v:.4g}"
        # ",.4g" turns 431648 into 4.316e+05: below 1e7 whole units read better (431,648 ns)
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"
    return str(v)


def frame_to_rich(df: pl.DataFrame, title: str | None = None, limit: int | None = 200):
    from rich.table import Table

    t = Table(title=title, show_lines=False, header_style="bold")
    for c in df.columns:
        numeric = df.schema[c].is_numeric()
        t.add_column(c, justify="right" if numeric else "left", overflow="fold")
    shown = df if limit is None else df.head(limit)
    from rich.markup import escape

    for row in shown.iter_rows():
        # cells are data, not markup: `[n=256]` in a kernel name must print as written
        t.add_row(*[escape(_fmt_cell(v)) for v in row])
    if limit is not None and df.height > limit:
        t.caption = f"{limit} of {df.height} rows shown; use --limit 0 or --format csv for all"
    return t


def emit_frame(df: pl.DataFrame, fmt: Format | str, output: Path | None = None, *, title: str | None = None, limit: int | None = 200) -> None:
    """Print or write a table in the chosen format. Files are written atomically."""
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
        stderr_console().print(f"wrote {df.height} rows to {output}")
        return
    if fmt is Format.table:
        stdout_console().print(frame_to_rich(df, title, limit if limit else None))
    elif fmt is Format.csv:
        sys.stdout.write(_flatten_for(fmt, df).write_csv())
    elif fmt is Format.json:
        # NaN/inf are not JSON (jq and strict parsers reject them): null, as the -o file has it
        rows = [{k: _json_number(v) for k, v in r.items()} for r in df.to_dicts()]
        sys.stdout.write(json.dumps(rows, default=str, indent=1, allow_nan=False) + "\n")


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
