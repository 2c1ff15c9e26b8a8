"""`profaudit ranks RUN/`: a distributed run per rank (identity, clock alignment, temporal breakdown,
stragglers) and across ranks (the ranks ranked by the waiting they caused, step skew)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from profaudit.cli.common import FORMAT_OPTION, LIMIT_OPTION, OUTPUT_OPTION, Format, emit_frame, progress_bar, report_loaded


class Align(str, Enum):
    auto = "auto"
    trace_clock = "trace_clock"
    collective_end = "collective_end"


class Basis(str, Enum):
    host = "host"
    gpu = "gpu"


class Show(str, Enum):
    summary = "summary"
    stragglers = "stragglers"
    steps = "steps"
    skew = "skew"
    collectives = "collectives"


ALIGN_OPTION = typer.Option(Align.auto, "--align", help="Clock alignment: auto (one host or capture: the recorded clock; several hosts: "
                                                        "the ends of matched collectives), trace_clock, collective_end.")
BASIS_OPTION = typer.Option(Basis.host, "--step-basis", help="Step windows of the breakdown: host (the step ranges as recorded, as HTA and "
                                                                 "the profiler show them) or gpu (the span of the GPU work launched in each step).")
AGAINST_OPTION = typer.Option(None, "--against", help="A second run (folder, glob or file; repeatable): compare RUN (baseline) with it.")
STEP_OPTION = typer.Option(None, "--step-pattern", help="Regex naming step ranges (first group: the step number). Default: ProfilerStep#N and XLA steps.")


def load_run_with_progress(paths: List[str], align: Align, step_pattern: Optional[str], step_basis: Basis = Basis.host):
    """`profaudit.ranks.load_run` with a progress bar; skipped inputs listed on stderr."""
    from profaudit.loader import expand
    from profaudit.ranks import load_run

    inputs = expand(list(paths))  # once: its length sizes the progress bar, then it is loaded
    with progress_bar("loading ranks", len(inputs)) as advance:
        run = load_run(inputs, align=align.value, step_pattern=step_pattern, step_basis=step_basis.value, progress=advance)
    report_loaded(run.profiles.skipped, [{"profile_id": p.profile_id, **p.metadata} for p in run.profiles])
    return run


def register(app: typer.Typer) -> None:
    @app.command("ranks")
    def ranks(
        paths: List[str] = typer.Argument(..., help="The run: a folder of per-rank traces (rank-N in the names or distributedInfo inside), globs, or one multi-GPU capture."),
        show: Optional[Show] = typer.Option(None, "--show", help="One table: summary (per rank), stragglers, steps (per rank and step), skew (per step), "
                                                                  "collectives (per kind and size). Default: summary, stragglers, collectives and skew on "
                                                                  "the terminal; summary otherwise."),
        align: Align = ALIGN_OPTION,
        step_pattern: Optional[str] = STEP_OPTION,
        step_basis: Basis = BASIS_OPTION,
        fmt: Format = FORMAT_OPTION,
        output: Optional[Path] = OUTPUT_OPTION,
        limit: int = LIMIT_OPTION,
        against: Optional[List[str]] = AGAINST_OPTION,
    ) -> None:
        """Per rank: rank, host, clock offset and its error, compute / communication / idle, overlap, and who the others waited for."""
        from profaudit.ranks.collectives import by_size

        run = load_run_with_progress(paths, align, step_pattern, step_basis)
        if against:
            from profaudit.ranks.compare import compare_steps

            other = load_run_with_progress(against, align, step_pattern, step_basis)
            # only the steps are shown: compare_runs would also match both runs' collectives
            emit_frame(compare_steps(run, other), fmt, output, title="steps: baseline (RUN) vs candidate (--against)", limit=limit or None)
            return
        tables = {
            Show.summary: (lambda: run.summary(), "ranks"),
            Show.stragglers: (lambda: run.stragglers, "stragglers: ranks ranked by the wait they caused in collectives"),
            Show.steps: (lambda: run.step_breakdown.drop("profile_id"), "temporal breakdown per rank and step"),
            Show.skew: (lambda: run.step_skew, "step skew across ranks"),
            Show.collectives: (lambda: by_size(run.calls), "collectives per kind and size (bandwidth once every rank had arrived)"),
        }
        terminal = [Show.summary, Show.stragglers, Show.collectives, Show.skew]
        chosen = [show] if show is not None else (terminal if fmt is Format.table and output is None else [Show.summary])
        for which in chosen:
            build, title = tables[which]
            df = build()
            if which is Show.stragglers and show is None:
                df = df.filter(df["times_last"] > 0)
                if df.height == 0:
                    continue
            if which in (Show.skew, Show.collectives) and show is None and df.height == 0:
                continue
            emit_frame(df, fmt, output, title=title, limit=limit or None)
