"""Options every command that loads timing logs shares (`--time-column`, `--time-unit`)."""

from __future__ import annotations

import typer

TIME_COLUMN_OPTION = typer.Option(
    None,
    "--time-column",
    help="Timing logs: the column that holds the time, where the log has several candidates or none named with a unit; 'A,B,...' reads a wide table (one time column per implementation, as triton perf_report writes) with each column as a variant.",
)
TIME_UNIT_OPTION = typer.Option(
    None,
    "--time-unit",
    help="Timing logs: unit of the time column (ns, us, ms, s) where its name does not carry one.",
)
