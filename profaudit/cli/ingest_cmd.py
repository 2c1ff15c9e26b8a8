"""`profaudit ingest`: read profiles and logs, append them to a Parquet dataset as one batch."""

from __future__ import annotations

from typing import List, Optional

import typer

from profaudit.cli.common import NSYS_OPTION, progress_bar, report_loaded, stderr_console
from profaudit.cli.timing_opts import TIME_COLUMN_OPTION, TIME_UNIT_OPTION

ENGINE_OPTION = typer.Option("local", "--engine", help="local (this machine's process pool) or dask (a Dask cluster: --scheduler, --scheduler-file, $DASK_SCHEDULER_ADDRESS, else a LocalCluster).")
SCHEDULER_OPTION = typer.Option(None, "--scheduler", help="Dask scheduler address, e.g. tcp://HOST:8786 (--engine dask).")
SCHEDULER_FILE_OPTION = typer.Option(None, "--scheduler-file", help="Dask scheduler file, as dask-jobqueue or `dask scheduler --scheduler-file` write it (--engine dask).")


def register(app: typer.Typer) -> None:
    @app.command("ingest")
    def ingest(
        paths: List[str] = typer.Argument(..., help="Profiles, timing logs, folders, globs or fsspec URLs (s3://...)."),
        output: str = typer.Option(..., "--output", "-o", help="Dataset folder or fsspec URL to write (created, or appended to when it is a profaudit dataset)."),
        replace: bool = typer.Option(False, "--replace", help="Replace an existing dataset instead of appending to it."),
        skip_bad: bool = typer.Option(False, "--skip-bad", help="Skip unreadable inputs (listed on stderr) instead of stopping at the first."),
        device: Optional[str] = typer.Option(None, "--device", help="Device name to record where the input does not say."),
        time_column: Optional[str] = TIME_COLUMN_OPTION,
        time_unit: Optional[str] = TIME_UNIT_OPTION,
        nsys: Optional[str] = NSYS_OPTION,
        engine: str = ENGINE_OPTION,
        scheduler: Optional[str] = SCHEDULER_OPTION,
        scheduler_file: Optional[str] = SCHEDULER_FILE_OPTION,
    ) -> None:
        """Ingest PATHS into a Parquet dataset as one batch (readable by DuckDB, polars, Dask)."""
        from profaudit.executors import engine_executor
        from profaudit.fleet import ingest as run_ingest
        from profaudit.loader import expand

        from profaudit.errors import InputError

        inputs = expand(list(paths))  # once: its length sizes the progress bar, then it is ingested
        n = len(inputs)
        try:
            with engine_executor(engine, scheduler, scheduler_file) as executor, progress_bar("ingesting", n) as advance:
                r = run_ingest(
                    inputs, output, executor=executor, skip_bad=skip_bad, replace=replace, progress=advance,
                    device=device, nsys=nsys, time_column=time_column, time_unit=time_unit,
                )
        except InputError as exc:
            if skip_bad or n < 2:
                raise
            # one bad file among many stopped the batch (nothing was written): say how to go on
            raise InputError(exc.path, f"{exc.problem} (nothing ingested; --skip-bad skips unreadable inputs and ingests the rest)") from None
        report_loaded(r.skipped, r.profiles)
        k = r.rows.get("kernels", 0)
        s = r.rows.get("samples", 0)
        from profaudit.fmt import plural

        stderr_console().print(f"ingested {plural(len(r.profiles), 'profile')} ({plural(k, 'kernel row')}, {plural(s, 'sample row')}) into {output}", markup=False, highlight=False)
