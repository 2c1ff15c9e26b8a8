"""Batch audit and compare: `profaudit audit DIR|GLOB` (through a hook in audit_cmd) and
`profaudit compare-pairs PAIRS.csv`, each writing one verdict table, exit code by the worst row."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from profaudit.cli.ingest_cmd import ENGINE_OPTION, SCHEDULER_FILE_OPTION, SCHEDULER_OPTION
from profaudit.fmt import plural

BATCH_FORMATS = ("text", "table", "markdown", "csv", "json", "parquet")
_BY_SUFFIX = {".parquet": "parquet", ".csv": "csv", ".json": "json", ".md": "markdown", ".markdown": "markdown"}


def _format_for(fmt: str, output: Optional[Path]) -> str:
    from profaudit.errors import UsageError

    if fmt not in BATCH_FORMATS:
        raise UsageError(f"--format {fmt!r}: a verdict table is written as {', '.join(BATCH_FORMATS[1:])}")
    if fmt in ("text", "table") and output is not None:
        # `-o verdicts.parquet` says the format itself
        return _BY_SUFFIX.get(Path(output).suffix.lower(), "table")
    return "table" if fmt == "text" else fmt


# Rows a verdict table may have to be drawn as a terminal table: drawing is most of the cost past
# that (200,000 pairs of missing files: 45 CPU-s as a table, 6 as CSV; fuzz_surfaces pairs #115
# seed 4401), and no one reads it. The file formats take any number of rows (a leaderboard's).
MAX_TABLE_ROWS = 10_000


def _check_table_rows(n: int, fmt: str, what: str) -> None:
    """Refuse before the work starts, not after it: a table of `n` rows is not drawn."""
    from profaudit.errors import UsageError

    if fmt == "table" and n > MAX_TABLE_ROWS:
        raise UsageError(f"{plural(n, what)}: a verdict table of more than {MAX_TABLE_ROWS:,} rows is not drawn on a terminal; write it with -f csv, json, parquet or markdown, or -o FILE")


def _emit(df, fmt: str, output: Optional[Path], title: str) -> None:
    from profaudit.batch import to_markdown
    from profaudit.cli.common import emit_frame, emit_text

    if fmt == "markdown":
        emit_text(to_markdown(df, title), output)
        return
    if fmt == "table":
        # a terminal is narrow: the long text columns go to the file formats, errors only when any
        df = df.drop([c for c in ("description", "baseline", "candidate") if c in df.columns])
        if df["error"].null_count() == df.height:
            df = df.drop("error")
        if "claim" in df.columns:
            df = _below_common_folder(df, "claim")
    emit_frame(df, fmt, output, title=title, limit=0)


def _below_common_folder(df, col: str):
    """Paths shown below the folder they all share (the title names it): on a terminal the shared
    prefix would only push the distinguishing file names into an ellipsis."""
    import os

    import polars as pl

    paths = [p for p in df[col].to_list() if p]
    if not paths:
        return df
    try:
        common = os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p in paths])
    except ValueError:  # paths on different drives share no folder
        return df
    return df.with_columns(pl.Series(col, [os.path.relpath(os.path.abspath(p), common) if p else p for p in df[col].to_list()], dtype=pl.Utf8))


def _run_batch(title: str, n: int, engine: str, scheduler, scheduler_file, work):
    from profaudit.cli.common import progress_bar
    from profaudit.executors import engine_executor

    with engine_executor(engine, scheduler, scheduler_file) as executor, progress_bar(title, n) as advance:
        return work(executor, advance)


def audit_batch(target: str, *, fmt: str, output: Optional[Path], select, ignore, engine: str, scheduler, scheduler_file) -> int:
    """`profaudit audit DIR|GLOB`: every claim file audited, one verdict table, worst exit code."""
    from profaudit.batch import audit_exit_code, audit_many, claim_files

    fmt = _format_for(fmt, output)
    paths = claim_files(target)
    _check_table_rows(len(paths), fmt, "claim")
    df = _run_batch("auditing", len(paths), engine, scheduler, scheduler_file, lambda ex, adv: audit_many(paths, executor=ex, select=select, ignore=ignore, progress=adv))
    _emit(df, fmt, output, f"{plural(len(paths), 'claim')} audited from {target}")
    return audit_exit_code(df)


def register(app: typer.Typer) -> None:
    @app.command("compare-pairs")
    def compare_pairs(
        pairs: Path = typer.Argument(..., help="CSV with baseline and candidate columns (and optionally name); paths relative to the CSV."),
        fmt: str = typer.Option("text", "--format", "-f", help="Verdict table as table, markdown, csv, json or parquet (default: from -o's suffix, else table)."),
        output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the verdict table to this file (atomically)."),
        fail_on: str = typer.Option("none", "--fail-on", help="Gate each pair as `profaudit compare --fail-on` does: regression, any-significant, none."),
        max_slowdown: str = typer.Option("0", "--max-slowdown", help="Slowdown tolerated before a regression fails the gate (5% or 0.05)."),
        engine: str = ENGINE_OPTION,
        scheduler: Optional[str] = SCHEDULER_OPTION,
        scheduler_file: Optional[str] = SCHEDULER_FILE_OPTION,
    ) -> int:
        """Compare every baseline/candidate pair a CSV lists into one verdict table.

        Exit code: 2 when a pair could not be read (its row names the file and the problem), else
        the worst pair's gate under --fail-on, as `profaudit compare` gives it: 0 pass, 1 a gated
        difference, 4 not comparable.
        """
        from profaudit.batch import compare_many, read_pairs

        out_fmt = _format_for(fmt, output)
        n = len(read_pairs(pairs))
        _check_table_rows(n, out_fmt, "pair")
        df, code = _run_batch("comparing", n, engine, scheduler, scheduler_file, lambda ex, adv: compare_many(pairs, executor=ex, fail_on=fail_on, max_slowdown=max_slowdown, progress=adv))
        _emit(df, out_fmt, output, f"{plural(n, 'pair')} compared from {pairs}")
        return code
