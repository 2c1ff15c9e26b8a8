"""`profaudit kernels`: print or export the kernel table (or any other table)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import polars as pl
import typer

from profaudit.cli.common import FORMAT_OPTION, OUTPUT_OPTION, Format, emit_frame, load_with_progress, select_columns
from profaudit.cli.timing_opts import TIME_COLUMN_OPTION, TIME_UNIT_OPTION

DEFAULT_COLUMNS = ["profile_id", "kernel_id", "short_name", "duration_ns", "grid_size", "block_size", "registers_per_thread", "dram_bytes", "flops_total", "sm_clock_hz", "device_name"]


def register(app: typer.Typer) -> None:
    @app.command("kernels")
    def kernels(
        paths: List[str] = typer.Argument(..., help="Profiles, folders, globs or an ingested dataset."),
        fmt: Format = FORMAT_OPTION,
        output: Optional[Path] = OUTPUT_OPTION,
        table: str = typer.Option("kernels", "--table", "-t", help="Table to show: kernels, metrics, ranges, transfers, counters, samples, metadata."),
        columns: Optional[str] = typer.Option(None, "--columns", "-c", help="Comma-separated columns ('all' for every column)."),
        name: Optional[str] = typer.Option(None, "--name", help="Keep kernels whose name contains this (regular expression)."),
        sort: Optional[str] = typer.Option(None, "--sort", help="Sort by this column, descending."),
        limit: int = typer.Option(200, "--limit", "-n", min=0, help="Rows shown in table format (0 = all)."),
        device: Optional[str] = typer.Option(None, "--device", help="Device name where the input does not say."),
        time_column: Optional[str] = TIME_COLUMN_OPTION,
        time_unit: Optional[str] = TIME_UNIT_OPTION,
    ) -> None:
        """Print or export the kernel table (one row per kernel execution)."""
        from profaudit import schema
        from profaudit.errors import UsageError

        ps = load_with_progress(paths, device=device, time_column=time_column, time_unit=time_unit)
        if table not in schema.ALL_TABLES:
            raise UsageError(f"no table {table!r}; tables: {', '.join(schema.ALL_TABLES)}")
        df = ps.table(table)
        if name and "name" in df.columns:
            try:
                df = df.filter(pl.col("name").str.contains(name) | pl.col("short_name").str.contains(name) if "short_name" in df.columns else pl.col("name").str.contains(name))
            except pl.exceptions.ComputeError as exc:
                # polars reports a bad pattern as "regex error: regex parse error:" + a multi-line caret
                why = " ".join(str(exc).split())
                raise UsageError(f"--name {name!r} is not a valid regular expression ({why})") from None
        if sort:
            if sort not in df.columns:
                raise UsageError(f"no column {sort!r} in {table}")
            df = df.sort(sort, descending=True, nulls_last=True)
        df = select_columns(df, columns, DEFAULT_COLUMNS if table == "kernels" and fmt is Format.table else None, where=f"in {table}")
        emit_frame(df, fmt, output, title=f"{table} ({df.height} rows)", limit=limit)
