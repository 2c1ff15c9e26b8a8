"""`profaudit compare A B`: matched kernels, added/removed ones, where the time went, fairness.

With --fail-on it gates CI (`profaudit.compare.gate`): exit 0 no gated difference, 1 a significant
difference beyond --max-slowdown, 2 unusable input, 3 internal error, 4 not comparable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from profaudit.cli.common import NSYS_OPTION, OUTPUT_OPTION, PLOTLYJS_OPTION
from profaudit.cli.timing_opts import TIME_COLUMN_OPTION, TIME_UNIT_OPTION

# Choices are validated here rather than by typer enums: this typer's own click raises exceptions
# the CLI's one-line error handler does not recognise (exit 3 instead of a usage error).
FORMATS = ("table", "markdown", "html", "json")

# Shared with `profaudit bench compare`: the same gating options and report files.
FAIL_ON_OPTION = typer.Option("none", "--fail-on", help="Gate CI: regression (significantly slower beyond --max-slowdown), any-significant (either way), none (report only, exit 0).")
MAX_SLOWDOWN_OPTION = typer.Option("0%", "--max-slowdown", help="With --fail-on: allowed slowdown per case and on the matched geomean, e.g. 5% or 1.05x (only significant differences count).")
JUNIT_OPTION = typer.Option(None, "--junit", help="Write a JUnit XML report (one test case per benchmark case) to this file.")
SUMMARY_OPTION = typer.Option(None, "--summary", help="Write the Markdown summary to this file (it is also appended to $GITHUB_STEP_SUMMARY when set).")


def same_input(a: str, b: str) -> bool:
    """Whether two inputs of `compare` name one thing: the same text (a file, folder, glob or URL),
    or two spellings of one local file or folder (`./a.json` and `a.json`, a link and its target)."""
    if a == b:
        return True
    import os

    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # absent, a glob or a URL: not one local file
        return False


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
        fail_on: str = FAIL_ON_OPTION,
        max_slowdown: str = MAX_SLOWDOWN_OPTION,
        junit: Optional[Path] = JUNIT_OPTION,
        sarif: Optional[Path] = typer.Option(None, "--sarif", help="Write the fairness findings as SARIF 2.1.0 to this file."),
        summary: Optional[Path] = SUMMARY_OPTION,
        step_pattern: Optional[str] = typer.Option(None, "--step-pattern", help="Two distributed runs: regex naming step ranges (first group: the step number). Default: ProfilerStep#N and XLA steps."),
        kernel: Optional[str] = typer.Option(None, "--kernel", "-k", help="Show one matched kernel pair in full (ncu profiles): every kernel-report value before and after, largest move first, then both reports."),
        plotlyjs: str = PLOTLYJS_OPTION,
    ) -> int:
        """Compare two profiles or timing logs: fairness findings first, then where the time went.

        Exit codes with --fail-on regression|any-significant: 0 no gated difference, 1 a significant
        difference beyond --max-slowdown (a case or the matched geomean), 2 unusable input, 3
        internal error, 4 not comparable (fairness audit says no, or no case on both sides).
        --fail-on none (the default) exits 0 whatever the result.
        """
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
        from profaudit.compare.gate import check_fail_on, gate_comparison, parse_slowdown
        from profaudit.plotly_assets import check_mode

        check_fail_on(fail_on)
        parse_slowdown(max_slowdown)
        check_mode(plotlyjs, output, needs_file=fmt == "html")
        sides = []
        for role, path in (("baseline", baseline), ("candidate", candidate)):
            if role == "candidate" and same_input(baseline, candidate):
                # one input on both sides (a sanity check, a CI job comparing a file with itself) is
                # read once: a second read of a 200 MB trace cost as much again in time and memory,
                # and the same ProfileSet on both sides is also prepared once (compare.kernels)
                sides.append(Side(role, path, sides[0].ps))
                continue
            sides.append(Side(role, path, load_with_progress([path], device=device, time_column=time_column, time_unit=time_unit, nsys=nsys)))
        wanted = tuple(x.strip() for x in (intended or "").split(",") if x.strip())
        cmp = compare(sides[0], sides[1], match=match, device=device, intended=wanted, step_pattern=step_pattern)
        gate = gate_comparison(cmp, fail_on=fail_on, max_slowdown=max_slowdown)
        if kernel is not None:
            from profaudit.compare.kernel_pairs import find_pair, render_pair

            emit_text(render_pair(find_pair(cmp, kernel), fmt), output)
        elif fmt == "table" and output is None:
            print_table(cmp, top, stdout_console())
        elif fmt == "html":
            from profaudit.compare.render import render_html

            emit_text(render_html(cmp, top, plotlyjs=plotlyjs, output=output), output)
        elif fmt == "json" and fail_on != "none":
            import json

            emit_text(json.dumps({**cmp.to_dict(), "gate": gate.as_dict()}, indent=1, allow_nan=False) + "\n", output)
        else:
            emit_text(render(cmp, fmt, top=top), output)
        from profaudit.compare.ci_report import write_reports

        if fail_on != "none" or junit or sarif or summary:
            # CI use: reports, and the summary appended to $GITHUB_STEP_SUMMARY (a plain compare
            # inside a job, a test suite's for one, leaves the job page alone)
            write_reports(gate, junit=junit, sarif_path=sarif, summary=summary, findings=cmp.findings, artifacts=[baseline, candidate], cmp=cmp)
        if fail_on != "none":
            from profaudit.cli.common import stderr_console

            stderr_console().print(f"profaudit compare: {gate.summary_line()}", markup=False, highlight=False)
        return gate.exit_code
