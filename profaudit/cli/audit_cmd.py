"""`profaudit audit`: does the evidence support a speedup claim? And `profaudit rules`.

Exit codes: 0 PASS or WARN, 1 FAIL or INCONCLUSIVE, 2 unusable input (so CI can gate on it).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import List, Optional

import typer

from profaudit.cli.common import key_values
from profaudit.cli.timing_opts import TIME_COLUMN_OPTION, TIME_UNIT_OPTION

# Choices are checked here, not by typer enums, so a bad value is a one-line usage error.
FORMATS = ("text", "markdown", "html", "json")


def _side_select(benchmark: str | None, shared: list[str] | None, own: list[str] | None, kernel: str | None, flag: str) -> dict:
    """One side's choice of benchmark, parameters and kernels, as a claim file's side keys."""
    from profaudit.samples import parse_scalar

    params = {**key_values(shared, "--params", parse_scalar), **key_values(own, flag, parse_scalar)}
    return {"benchmark": benchmark, "params": params or None, "kernel": kernel}


def register(app: typer.Typer) -> None:
    @app.command("audit")
    def audit_cmd(
        claim: Optional[Path] = typer.Argument(None, help="Claim file (YAML). Or use --baseline and --candidate."),
        baseline: Optional[List[str]] = typer.Option(None, "--baseline", "-b", help="Baseline timing log or profile (repeat for process-level runs)."),
        candidate: Optional[List[str]] = typer.Option(None, "--candidate", "-c", help="Candidate timing log or profile (repeat for process-level runs)."),
        claimed: Optional[str] = typer.Option(None, "--claimed", help="Claimed speedup, baseline time / candidate time (e.g. 2.1)."),
        statistic: Optional[str] = typer.Option(None, "--statistic", help="How the claim was computed: mean, median, min, trimmed_mean, total, pNN."),
        device: Optional[str] = typer.Option(None, "--device", help="Device both sides ran on, where the logs do not say."),
        benchmark: Optional[str] = typer.Option(None, "--benchmark", help="Benchmark to take from logs that hold several."),
        baseline_variant: Optional[str] = typer.Option(None, "--baseline-variant", help="Variant (log column) that is the baseline."),
        candidate_variant: Optional[str] = typer.Option(None, "--candidate-variant", help="Variant (log column) that is the candidate."),
        baseline_benchmark: Optional[str] = typer.Option(None, "--baseline-benchmark", help="Benchmark the baseline side takes (when the sides time differently named benchmarks)."),
        candidate_benchmark: Optional[str] = typer.Option(None, "--candidate-benchmark", help="Benchmark the candidate side takes."),
        params: Optional[List[str]] = typer.Option(None, "--params", help="Parameter set of both sides, KEY=VALUE (repeatable; e.g. 'Axis Size=1024')."),
        baseline_params: Optional[List[str]] = typer.Option(None, "--baseline-params", help="Parameter KEY=VALUE of the baseline side only (repeatable; added to --params)."),
        candidate_params: Optional[List[str]] = typer.Option(None, "--candidate-params", help="Parameter KEY=VALUE of the candidate side only (repeatable; added to --params)."),
        baseline_kernel: Optional[str] = typer.Option(None, "--baseline-kernel", help="Regular expression choosing the baseline's kernels (profiles as sides)."),
        candidate_kernel: Optional[str] = typer.Option(None, "--candidate-kernel", help="Regular expression choosing the candidate's kernels."),
        baseline_meta: Optional[List[str]] = typer.Option(None, "--baseline-meta", help="Baseline fact KEY=VALUE (meta keys as in claim files; repeatable)."),
        candidate_meta: Optional[List[str]] = typer.Option(None, "--candidate-meta", help="Candidate fact KEY=VALUE (repeatable)."),
        time_column: Optional[str] = TIME_COLUMN_OPTION,
        time_unit: Optional[str] = TIME_UNIT_OPTION,
        select: Optional[str] = typer.Option(None, "--select", help="Run only rules whose code starts with these prefixes (PA1,PA402)."),
        ignore: Optional[str] = typer.Option(None, "--ignore", help="Skip rules whose code starts with these prefixes (PA5)."),
        fmt: str = typer.Option("text", "--format", "-f", help="Output format: text, markdown, html, json."),
        output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report to this file (atomically)."),
        sarif: Optional[Path] = typer.Option(None, "--sarif", help="Also write the findings as SARIF 2.1.0 to this file (CI code scanning)."),
        summary: Optional[Path] = typer.Option(None, "--summary", help="Also write the Markdown report here and append it to $GITHUB_STEP_SUMMARY when set."),
        engine: str = typer.Option("local", "--engine", help="For a folder or glob of claims: local, or dask (a Dask cluster; see `profaudit ingest --help`)."),
        scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address (--engine dask)."),
        scheduler_file: Optional[str] = typer.Option(None, "--scheduler-file", help="Dask scheduler file (--engine dask)."),
    ) -> int:
        """Audit a speedup claim: is it supported, is the comparison fair, what speedup holds?

        Exit code 0 for PASS and WARN, 1 for FAIL and INCONCLUSIVE, 2 for unusable input.
        """
        from profaudit.audit import audit, claim_from_paths, load_claim
        from profaudit.audit.render import print_text, render
        from profaudit.batch import is_batch
        from profaudit.cli.common import emit_text, stderr_console, stdout_console
        from profaudit.errors import UsageError

        if claim is not None and is_batch(claim):
            # a folder or glob of claim files: one verdict table (profaudit.batch)
            from profaudit.cli.batch_cmd import audit_batch

            if baseline or candidate:
                raise UsageError("give a claim file or --baseline/--candidate, not both")
            return audit_batch(str(claim), fmt=fmt, output=output, select=select, ignore=ignore, engine=engine, scheduler=scheduler, scheduler_file=scheduler_file)
        if engine != "local" or scheduler or scheduler_file:
            raise UsageError("--engine, --scheduler and --scheduler-file go with a folder or glob of claim files")
        if fmt not in FORMATS:
            raise UsageError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
        paths_form = bool(baseline or candidate)
        if claim is not None and paths_form:
            raise UsageError("give a claim file or --baseline/--candidate, not both")
        if claim is None and not (baseline and candidate):
            raise UsageError("give a claim file, or both --baseline and --candidate")
        per_side = (baseline_benchmark, candidate_benchmark, params, baseline_params, candidate_params, baseline_kernel, candidate_kernel)
        if claim is not None and any(v is not None for v in (claimed, statistic, benchmark, baseline_variant, candidate_variant, time_column, time_unit, *per_side)):
            raise UsageError("--claimed, --statistic, --benchmark, --*-variant, --*-benchmark, --*params, --*-kernel and --time-* go with --baseline/--candidate; a claim file says these itself")
        import time

        err = stderr_console()
        t0 = time.perf_counter()
        with err.status("auditing", spinner="dots") if err.is_terminal else contextlib.nullcontext():
            if claim is not None:
                c = load_claim(claim)
            else:
                c = claim_from_paths(
                    baseline if len(baseline) > 1 else baseline[0],
                    candidate if len(candidate) > 1 else candidate[0],
                    claimed=claimed,
                    statistic=statistic,
                    device=device,
                    baseline_meta=key_values(baseline_meta, "--baseline-meta"),
                    candidate_meta=key_values(candidate_meta, "--candidate-meta"),
                    benchmark=benchmark,
                    baseline_variant=baseline_variant,
                    candidate_variant=candidate_variant,
                    time_column=time_column,
                    time_unit=time_unit,
                    baseline_select=_side_select(baseline_benchmark, params, baseline_params, baseline_kernel, "--baseline-params"),
                    candidate_select=_side_select(candidate_benchmark, params, candidate_params, candidate_kernel, "--candidate-params"),
                )
            report = audit(c, select=select, ignore=ignore)
        # the time the user waited: reading the logs is most of it (the rules alone took 0.00 s)
        report.elapsed_s = time.perf_counter() - t0
        if fmt == "text" and output is None:
            print_text(report, stdout_console())
        else:
            emit_text(render(report, fmt), output)
        if sarif is not None or summary is not None:
            from profaudit.compare.ci_report import audit_reports

            audit_reports(report, sarif_path=sarif, summary=summary, artifacts=[str(claim)] if claim is not None else [*baseline, *candidate])
        return report.exit_code

    @app.command("rules")
    def rules_cmd(
        code: Optional[str] = typer.Argument(None, help="Explain the rules whose code starts with this (PA1, PA402)."),
        fmt: str = typer.Option("table", "--format", "-f", help="Output format: table, csv, json."),
        output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write to this file (atomically)."),
    ) -> None:
        """List the fairness-audit rules: code, name, severity, pitfalls, evidence needed."""
        import polars as pl

        from profaudit.audit.rules import catalogue, select_rules
        from profaudit.cli.common import emit_frame, emit_text
        from profaudit.errors import UsageError

        if fmt not in ("table", "csv", "json", "text"):
            raise UsageError(f"--format {fmt!r}: choose one of table, csv, json")
        if code:
            chosen = select_rules(code)
            if fmt in ("table", "text"):
                text = "\n\n".join(f"{r.code} {r.name} (severity up to {r.severity.label}; pitfalls {', '.join(r.pitfalls)})\nneeds: {'; '.join(r.needs)}\n\n{r.explanation()}" for r in chosen)
                emit_text(text, output)
                return
            rows = [r.describe() | {"explanation": r.explanation()} for r in chosen]
        else:
            rows = catalogue()
        df = pl.DataFrame(rows)
        if fmt in ("table", "text") and not code:
            # The terminal view: what each rule is; csv/json keep the evidence each one needs.
            df = df.select("code", "name", "severity", "pitfalls", "summary")
        emit_frame(df, "table" if fmt == "text" else fmt, output, title="audit rules (profaudit rules CODE explains one)", limit=0)
