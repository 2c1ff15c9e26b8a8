"""`profaudit compare A B`: matched kernels, added/removed ones, where the time went, fairness."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from profaudit.cli.common import NSYS_OPTION, OUTPUT_OPTION
from profaudit.cli.timing_opts import TIME_COLUMN_OPTION, TIME_UNIT_OPTION

# Choices are validated here rather than by typer enums: this typer's own click raises exceptions
# the CLI's one-line error handler does not recognise (exit 3 instead of a usage error).
FORMATS = ("table", "markdown", "html", "json")


def register(app: typer.Typer) -> None:
    @app.command("compare")
    def compare_cmd(
        baseline: str = typer.Argument(..., help="Baseline: a profile, timing log, folder, glob or ingested dataset."),
        candidate: str = typer.Argument(..., help="Candidate: same kinds as the baseline."),
        fmt: str = typer.Option("table", "--format", "-f", help="Output format: table, markdown, html, json."),
        output: Optional[Path] = OUTPUT_OPTION,
        match: str = typer.Option("auto", "--match", help="Kernel matching: auto (all levels), exact, name (spellings and generated-name families only), fuzzy (auto plus looser similarity)."),
        device: Optional[str] = typer.Option(None, "--device", help="Device name for roofline specs where a profile does not say."),
        top: int = typer.Option(20, "--top", "-n", help="Rows per section in table, markdown and html output (json has all)."),
        intended: Optional[str] = typer.Option(None, "--intended", help="Comma-separated differences the comparison is about (device, dtype, tf32, clock_control, cache_control, ...): reported as warnings, not as unfair."),
        time_column: Optional[str] = TIME_COLUMN_OPTION,
        time_unit: Optional[str] = TIME_UNIT_OPTION,
        nsys: Optional[str] = NSYS_OPTION,
    ) -> None:
        """Compare two profiles or timing logs: fairness findings first, then where the time went."""
        from profaudit.cli.common import emit_text, load_with_progress, stdout_console
        from profaudit.compare import compare
        from profaudit.compare.core import Side
        from profaudit.compare.match import MATCH_MODES
        from profaudit.compare.render import print_table, render
        from profaudit.errors import UsageError

        if fmt not in FORMATS:
            raise UsageError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
        if match not in MATCH_MODES:
            raise UsageError(f"--match {match!r}: choose one of {', '.join(MATCH_MODES)}")
        if top < 1:
            raise UsageError(f"--top {top}: give a positive number of rows")
        sides = []
        for role, path in (("baseline", baseline), ("candidate", candidate)):
            sides.append(Side(role, path, load_with_progress([path], device=device, time_column=time_column, time_unit=time_unit, nsys=nsys)))
        wanted = tuple(x.strip() for x in (intended or "").split(",") if x.strip())
        cmp = compare(sides[0], sides[1], match=match, device=device, intended=wanted)
        if fmt == "table" and output is None:
            print_table(cmp, top, stdout_console())
            return
        emit_text(render(cmp, fmt, top=top), output)
