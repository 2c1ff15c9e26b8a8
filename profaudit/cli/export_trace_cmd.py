"""`profaudit export-trace PROFILE -o trace.json`: Chrome-trace JSON for ui.perfetto.dev and
chrome://tracing (`profaudit.trace_export`)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from profaudit.cli.common import NSYS_OPTION


def register(app: typer.Typer) -> None:
    @app.command("export-trace")
    def export_trace_cmd(
        paths: List[str] = typer.Argument(..., help="Profiles (nsys SQLite/.nsys-rep, Kineto/Chrome JSON, XLA, rocprof, ncu ...), folders, globs or a dataset."),
        output: Path = typer.Option(..., "--output", "-o", help="Trace file to write (.json, or .json.gz compressed)."),
        compare_with: Optional[str] = typer.Option(None, "--compare", help="A baseline profile: mark the kernels that got significantly faster or slower in PROFILE against it."),
        device: Optional[str] = typer.Option(None, "--device", help="Device name where a profile does not say (for --compare)."),
        nsys: Optional[str] = NSYS_OPTION,
    ) -> None:
        """Write kernels (per device and stream), ranges (per thread), transfers and counters as Chrome-trace JSON."""
        from profaudit.cli.common import load_with_progress, stderr_console
        from profaudit.trace_export import write_chrome_trace

        ps = load_with_progress(paths, nsys=nsys, device=device)
        cmp = None
        if compare_with is not None:
            from profaudit.compare import compare
            from profaudit.compare.core import Side

            base = Side("baseline", compare_with, load_with_progress([compare_with], nsys=nsys, device=device))
            cmp = compare(base, Side("candidate", ", ".join(paths), ps), device=device)
        info = write_chrome_trace(ps, output, comparison=cmp)
        c = info["counts"]
        parts = [f"{c[k]:,} {k}" for k in ("kernels", "ranges", "transfers", "counters") if c[k]]
        msg = f"wrote {output}: " + (", ".join(parts) or "no timed events")
        if c["kernels_synthetic_time"]:
            msg += f" ({c['kernels_synthetic_time']:,} kernels without timestamps laid end to end)"
        for why, n in (c.get("left_out") or {}).items():
            msg += f"; left out {n:,} {why}"
        stderr_console().print(msg, markup=False, highlight=False)
