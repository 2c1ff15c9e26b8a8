"""`profaudit kernel-report REPORT -k NAME`: one kernel as an analysis view (Markdown, text, HTML)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from profaudit.cli.common import NSYS_OPTION, OUTPUT_OPTION, emit_text, load_with_progress

FORMATS = ("md", "text", "html", "json")


def register(app: typer.Typer) -> None:
    @app.command("kernel-report")
    def kernel_report_cmd(
        path: str = typer.Argument(..., help="A profile: Nsight Compute report for the full analysis; nsys, Kineto or XLA traces for launches and roofline."),
        kernel: Optional[str] = typer.Option(None, "--kernel", "-k", help="Kernel name: exact, a substring, or a regular expression (not needed when the profile holds one kernel)."),
        kernel_id: Optional[int] = typer.Option(None, "--id", help="kernels.kernel_id of the launch to show (instead of -k)."),
        launch: Optional[int] = typer.Option(None, "--launch", min=0, help="Which launch of the kernel to show, 0-based (default: the first)."),
        profile: Optional[str] = typer.Option(None, "--profile", help="profile_id to use when PATH holds several profiles (a folder or an ingested dataset)."),
        fmt: str = typer.Option("md", "--format", "-f", help="Output format: md, text, html, json."),
        output: Optional[Path] = OUTPUT_OPTION,
        baseline: Optional[str] = typer.Option(None, "--baseline", help="A second profile: show this kernel before (--baseline) and after (PATH) side by side, largest moves first (md/text)."),
        baseline_kernel: Optional[str] = typer.Option(None, "--baseline-kernel", help="Kernel name in --baseline when it differs from -k."),
        device: Optional[str] = typer.Option(None, "--device", help="Device name for the roofline where the profile does not say."),
        nsys: Optional[str] = NSYS_OPTION,
    ) -> None:
        """One kernel as Nsight Compute's Details page lays it out, as Markdown, text or HTML.

        Speed of light and the binding unit, memory chart, occupancy and its limiter, ranked warp
        stalls, pipes, instruction mix, launch statistics and ncu's rule results; metrics the report
        lacks are named with the --section that collects them."""
        from profaudit import kernel_report as kr
        from profaudit.errors import UsageError

        if fmt not in FORMATS:
            raise UsageError(f"--format {fmt!r}: choose {', '.join(FORMATS)}")
        if kernel is not None and kernel_id is not None:
            raise UsageError("give -k NAME or --id N, not both")
        after = kr.kernel_report(load_with_progress([path], device=device, nsys=nsys), kernel, kernel_id=kernel_id, launch=launch, profile=profile, device=device)
        if baseline is None:
            emit_text(kr.render(after, fmt), output)
            return
        if fmt not in ("md", "text"):
            raise UsageError(f"--baseline renders md or text, not {fmt}")
        before = kr.kernel_report(load_with_progress([baseline], device=device, nsys=nsys), baseline_kernel or kernel or after.short_name, device=device)
        emit_text((kr.render_pair_markdown if fmt == "md" else kr.render_pair_text)(before, after), output)
