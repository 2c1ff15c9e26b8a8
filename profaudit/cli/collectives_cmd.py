"""`profaudit collectives RUN/`: NCCL/RCCL collectives of a distributed run with nccl-tests
bandwidths, per call matched across ranks, per kernel on each rank, or per collective and size."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from profaudit.cli.common import FORMAT_OPTION, LIMIT_OPTION, OUTPUT_OPTION, Format, emit_frame
from profaudit.cli.ranks_cmd import AGAINST_OPTION, ALIGN_OPTION, STEP_OPTION, Align, load_run_with_progress


class Per(str, Enum):
    call = "call"
    kernel = "kernel"
    size = "size"


def register(app: typer.Typer) -> None:
    @app.command("collectives")
    def collectives(
        paths: List[str] = typer.Argument(..., help="The run: a folder of per-rank traces, globs, or one multi-GPU capture."),
        per: Per = typer.Option(Per.call, "--per", help="call: each call matched across ranks (last rank, wait, bandwidth once all arrived); "
                                                        "kernel: every communication kernel on every rank; size: per collective and message size."),
        align: Align = ALIGN_OPTION,
        step_pattern: Optional[str] = STEP_OPTION,
        fmt: Format = FORMAT_OPTION,
        output: Optional[Path] = OUTPUT_OPTION,
        limit: int = LIMIT_OPTION,
        against: Optional[List[str]] = AGAINST_OPTION,
    ) -> None:
        """Collectives with message size, algorithm/protocol, duration, algbw and busbw (nccl-tests definitions)."""
        from profaudit.ranks.collectives import by_size

        run = load_run_with_progress(paths, align, step_pattern)
        if against:
            from profaudit.ranks.compare import compare_collectives

            other = load_run_with_progress(against, align, step_pattern)
            title = "collectives by kind and size: baseline (RUN) vs candidate (--against)"
            # only the collectives are shown: compare_runs would also match both runs' steps
            emit_frame(compare_collectives(run, other), fmt, output, title=title, limit=limit or None)
            return
        if per is Per.kernel:
            df, title = run.collectives.drop("profile_id"), "communication kernels per rank"
        elif per is Per.size:
            df, title = by_size(run.calls), "collectives per kind and size (bandwidth once every rank had arrived)"
        else:
            df, title = run.calls, "collective calls matched across ranks"
        emit_frame(df, fmt, output, title=title, limit=limit or None)
