"""`profaudit kernels`: print or export the kernel table (or any other table)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import polars as pl
import typer

from profaudit.cli.common import FORMAT_OPTION, LIMIT_OPTION, OUTPUT_OPTION, Format, emit_frame, load_with_progress, select_columns
from profaudit.cli.timing_opts import TIME_COLUMN_OPTION, TIME_UNIT_OPTION

DEFAULT_COLUMNS = ["profile_id", "kernel_id", "short_name", "duration_ns", "grid_size", "block_size", "registers_per_thread", "dram_bytes", "flops_total", "sm_clock_hz", "device_name"]
# what a narrow terminal gives up first (last listed goes first); identity and time stay
DROP_ORDER = {
    "kernels": ["profile_id", "grid_size", "block_size", "dram_bytes", "flops_total", "registers_per_thread", "sm_clock_hz", "device_name"],
    # a summary row's number means nothing without its statistic (a mean of 1 ms, a stdev of
    # 540 ns) and rows of different sizes differ only in params: those two go last
    "samples": ["statistic", "params", "profile_id", "run", "time_source", "cache_state", "phase", "iteration"],
}
# the samples table has 20 columns; a terminal table of all of them is unreadable
DEFAULT_SAMPLE_COLUMNS = ["profile_id", "benchmark", "variant", "params", "run", "iteration", "duration_ns", "statistic", "phase", "cache_state", "time_source"]
# what --name matches in each table; metrics rows are kept by the name of the kernel they belong to
NAME_COLUMNS = {"kernels": ("name", "short_name"), "ranges": ("name",), "transfers": ("name",), "samples": ("benchmark",), "metrics": ("name", "short_name")}


def register(app: typer.Typer) -> None:
    @app.command("kernels")
    def kernels(
        paths: List[str] = typer.Argument(..., help="Profiles, folders, globs or an ingested dataset."),
        fmt: Format = FORMAT_OPTION,
        output: Optional[Path] = OUTPUT_OPTION,
        table: str = typer.Option("kernels", "--table", "-t", help="Table to show: kernels, metrics, ranges, transfers, counters, samples, metadata."),
        columns: Optional[str] = typer.Option(None, "--columns", "-c", help="Comma-separated columns ('all' for every column)."),
        name: Optional[str] = typer.Option(None, "--name", help="Keep rows whose name matches this regular expression (kernels, ranges, transfers; samples: the benchmark; metrics: the kernel's name)."),
        sort: Optional[str] = typer.Option(None, "--sort", help="Sort by this column, descending."),
        limit: int = LIMIT_OPTION,
        device: Optional[str] = typer.Option(None, "--device", help="Device name where the input does not say."),
        time_column: Optional[str] = TIME_COLUMN_OPTION,
        time_unit: Optional[str] = TIME_UNIT_OPTION,
        wide: bool = typer.Option(False, "--wide", "-w", help="Table format: every column and whole names, however wide (csv and json always have them)."),
    ) -> None:
        """Print or export the kernel table (one row per kernel execution), or any other table with --table."""
        from profaudit import schema
        from profaudit.errors import UsageError

        # checked before loading: a typo must not cost the load of a multi-GB report
        if table not in schema.ALL_TABLES:
            raise UsageError(f"no table {table!r}; tables: {', '.join(schema.ALL_TABLES)}")
        if name and table not in NAME_COLUMNS:
            raise UsageError(f"--name does not apply to the {table} table (it filters {', '.join(NAME_COLUMNS)})")
        ps = load_with_progress(paths, device=device, time_column=time_column, time_unit=time_unit)
        df = ps.table(table)
        if df.is_empty():
            _say_where_the_data_is(ps, table)
        if name:
            named = ps.kernels if table == "metrics" else df
            match = pl.any_horizontal([pl.col(c).str.contains(name) for c in NAME_COLUMNS[table]])
            try:
                named = named.filter(match)
            except pl.exceptions.ComputeError as exc:
                # polars reports a bad pattern as "regex error: regex parse error:" + a multi-line caret
                why = " ".join(str(exc).split())
                raise UsageError(f"--name {name!r} is not a valid regular expression ({why})") from None
            df = df.join(named.select("profile_id", "kernel_id"), on=["profile_id", "kernel_id"], how="semi") if table == "metrics" else named
        if sort:
            if sort not in df.columns:
                raise UsageError(f"no column {sort!r} in {table}")
            df = df.sort(sort, descending=True, nulls_last=True)
        defaults = {"kernels": DEFAULT_COLUMNS, "samples": DEFAULT_SAMPLE_COLUMNS}.get(table) if fmt is Format.table else None
        df = select_columns(df, columns, defaults, where=f"in {table}")
        from profaudit.fmt import plural

        same = ""
        if fmt is Format.table and output is None and not wide and "params" in df.columns:
            df, same = params_for_terminal(df)
        # "samples (4 rows, all cols=1024, rows=1024)": the shared parameters beside the count they qualify
        title = f"{table} ({plural(df.height, 'row')}{', all ' + same if same else ''})"
        emit_frame(df, fmt, output, title=title, limit=limit, wide=wide, drop_order=DROP_ORDER.get(table, ()) if columns is None else ())


def params_for_terminal(df: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    """The params column as `--params` takes it (`dtype=fp32, rows=1024`), with the parameters
    every row shares said once (returned, for the title): in a terminal-wide cell the canonical
    JSON puts the one parameter that differs (dtype in `{"cols":1024,"dtype":"fp32","rows":1024}`)
    in the middle, where the ellipsis cuts."""
    import json

    values = df["params"].to_list()
    parsed = []
    for v in values:
        try:
            d = json.loads(v) if v is not None else None
        except ValueError:
            return df, ""  # not the canonical JSON the parsers write: shown as it is
        if d is not None and not isinstance(d, dict):
            return df, ""
        parsed.append(d)
    dicts = [d for d in parsed if d is not None]
    keys = list(dict.fromkeys(k for d in dicts for k in d))
    if not keys:
        return df, ""  # no parameters anywhere ("{}"): nothing to rewrite

    def text(v) -> str:
        return json.dumps(v) if not isinstance(v, str) else v

    same = [k for k in keys if all(k in d for d in dicts) and len({json.dumps(d[k], sort_keys=True) for d in dicts}) == 1]
    said = ", ".join(f"{k}={text(dicts[0][k])}" for k in same)
    if len(same) == len(keys) and len(dicts) == len(parsed):
        return df.drop("params"), said  # every row has the same parameters: the title says them
    # "—": a row with no parameters beyond the shared ones
    cells = [None if d is None else (", ".join(f"{k}={text(d[k])}" for k in d if k not in same) or "—") for d in parsed]
    return df.with_columns(pl.Series("params", cells, dtype=pl.Utf8)), said


def _say_where_the_data_is(ps, table: str) -> None:
    """An empty table is a correct answer (csv and json stay parseable); stderr says which tables
    of these inputs do hold rows."""
    from profaudit.cli.common import stderr_console, where_the_data_is

    stderr_console().print(f"note: no {table} in these inputs{where_the_data_is(ps, table, '-t')}", markup=False, highlight=False)
