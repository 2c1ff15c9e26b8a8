"""`profaudit ingest`: read profiles and logs, write the Parquet dataset."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from profaudit.cli.common import NSYS_OPTION, load_with_progress, stderr_console
from profaudit.cli.timing_opts import TIME_COLUMN_OPTION, TIME_UNIT_OPTION


def register(app: typer.Typer) -> None:
    @app.command("ingest")
    def ingest(
        paths: List[str] = typer.Argument(..., help="Profiles, timing logs, folders or globs."),
        output: Path = typer.Option(..., "--output", "-o", help="Dataset folder to write (created, or merged into when it is a profaudit dataset)."),
        replace: bool = typer.Option(False, "--replace", help="Replace an existing dataset instead of merging into it."),
        skip_bad: bool = typer.Option(False, "--skip-bad", help="Skip unreadable inputs (listed on stderr) instead of stopping at the first."),
        device: Optional[str] = typer.Option(None, "--device", help="Device name to record where the input does not say."),
        time_column: Optional[str] = TIME_COLUMN_OPTION,
        time_unit: Optional[str] = TIME_UNIT_OPTION,
        nsys: Optional[str] = NSYS_OPTION,
    ) -> None:
        """Ingest PATHS into a Parquet dataset partitioned by profile (readable by DuckDB, Spark, Dask)."""
        from profaudit.dataset import write_dataset

        ps = load_with_progress(paths, skip_bad=skip_bad, device=device, nsys=nsys, time_column=time_column, time_unit=time_unit)
        write_dataset(ps, output, merge=not replace)
        k = ps.kernels.height
        s = ps.samples.height
        stderr_console().print(f"ingested {len(ps)} profile(s) ({k} kernel rows, {s} sample rows) into {output}")
