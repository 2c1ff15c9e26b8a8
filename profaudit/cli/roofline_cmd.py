"""`profaudit roofline`: per-kernel hierarchical roofline table and an interactive chart."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import polars as pl
import typer

from profaudit.cli.common import FORMAT_OPTION, LIMIT_OPTION, OUTPUT_OPTION, PLOTLYJS_OPTION, Format, emit_frame, load_with_progress, select_columns, stderr_console
from profaudit.fmt import plural

# profile_id: which profile a kernel_id belongs to when several are loaded (one profile: the
# table drops the column and its title names the profile)
TABLE_COLUMNS = [
    "profile_id", "kernel_id", "short_name", "device_key", "duration_ns", "achieved_flops_per_s", "ai_dram_flops_per_byte",
    "roof_pct_at_boost", "bound_at_boost", "roof_pct_at_kernel_clock", "bound_at_kernel_clock", "roof_note",
]
# what a narrow terminal gives up first (last listed goes first): the percent of roof and the
# bound are the answer and stay
DROP_ORDER = ["kernel_id", "device_key", "roof_note", "duration_ns", "ai_dram_flops_per_byte", "achieved_flops_per_s", "bound_at_kernel_clock", "roof_pct_at_kernel_clock"]


def register(app: typer.Typer) -> None:
    @app.command("roofline")
    def roofline_cmd(
        paths: List[str] = typer.Argument(..., help="Profiles, folders, globs or an ingested dataset."),
        device: Optional[str] = typer.Option(None, "--device", "-d", help="Device spec key or name for every kernel (overrides what the profile reports)."),
        spec: Optional[List[Path]] = typer.Option(None, "--spec", help="Extra device spec YAML file (or folder); repeatable."),
        html: Optional[Path] = typer.Option(None, "--html", help="Write the interactive chart to this HTML file."),
        plotlyjs: str = PLOTLYJS_OPTION,
        png: Optional[Path] = typer.Option(None, "--png", help="Write the chart as PNG (needs kaleido and a Chrome/Chromium)."),
        clock: str = typer.Option("both", "--clock", help="Ceilings at: both, boost (datasheet) or kernel (the clock each kernel ran at)."),
        sparse: bool = typer.Option(False, "--sparse", help="Use the 2:4-sparse tensor peaks."),
        flops_precision: Optional[str] = typer.Option(None, "--flops-precision", help="Precision of untyped FLOP totals (XLA, Neuron), e.g. bf16_tensor."),
        cores: Optional[int] = typer.Option(None, "--cores", help="TPU/Neuron: cores the program ran on (scales the chip's ceilings)."),
        measured: Optional[Path] = typer.Option(None, "--ceilings", help="Measured ceilings (a `profaudit bench ceilings` file, or rocprofiler-compute roofline.csv or its workload folder) instead of the datasheet peaks they cover; device key gets '@measured'."),
        fmt: Format = FORMAT_OPTION,
        output: Optional[Path] = OUTPUT_OPTION,
        columns: Optional[str] = typer.Option(None, "--columns", "-c", help="Comma-separated columns ('all' for every column)."),
        limit: int = LIMIT_OPTION,
    ) -> None:
        """Roofline per kernel: arithmetic intensity per memory level, attainable FLOP/s, % of roof, binding ceiling.

        Ceilings at the datasheet clock and at the clock each kernel ran at (--clock picks one)."""
        import sys

        from profaudit.errors import UsageError
        from profaudit.roofline import roofline, unmatched_devices

        if fmt is Format.parquet and output is None:
            raise UsageError("--format parquet needs --output FILE")
        from profaudit.plotly_assets import check_mode

        check_mode(plotlyjs, html)
        ps = load_with_progress(paths)
        extra = tuple(spec or ())
        if measured is not None:
            from profaudit.measured import measured_device

            device = measured_device(ps, measured, device, extra)
        rf = roofline(ps, device, clock=clock, extra_specs=extra, sparse=sparse, flops_precision=flops_precision, cores=cores)
        out = select_columns(rf, columns, [c for c in TABLE_COLUMNS if c in rf.columns] if fmt is Format.table else None)

        def note(msg: str) -> None:
            # plain print: a rich console would wrap a long warning over several lines
            print(f"profaudit: {msg}", file=sys.stderr)

        if device is None:
            for name, why in unmatched_devices(ps, extra).items():
                # with many inputs the warning must say which ones to fix (or pass --device for)
                needle = why if name != "None" else "no device name in the profile"
                ids = rf.filter(pl.col("roof_note").str.contains(needle, literal=True))["profile_id"].unique(maintain_order=True).to_list()
                where = f" (in {', '.join(ids[:3])}{f' and {len(ids) - 3} more' if len(ids) > 3 else ''})" if ids else ""
                note(f"warning: {why}{where}")
        if ps.kernels.height == 0:
            from profaudit.cli.common import where_the_data_is

            note(f"no kernel rows in the input: nothing to place on a roofline{where_the_data_is(ps, 'kernels')}")
        if html is not None or png is not None:
            from profaudit.roofline_plot import roofline_figure, write_html, write_png

            # measured ceilings are a spec of their own, not a shipped key the figure could look up
            given = {device.key: device} if measured is not None else None
            fig = roofline_figure(rf, given, clock="kernel" if clock == "kernel" else "boost", sparse=sparse, extra_specs=extra)
            if html is not None:
                write_html(fig, html, plotlyjs=plotlyjs)
                stderr_console().print(f"wrote {html}", markup=False, highlight=False)
            if png is not None:
                problem = write_png(fig, png)
                if problem:
                    # a file that was asked for and not written is a failed command, not a warning
                    raise UsageError(f"{png}: {problem}")
                stderr_console().print(f"wrote {png}", markup=False, highlight=False)
        emit_frame(out, fmt, output, title=f"roofline ({plural(rf.height, 'kernel')})", limit=limit, drop_order=DROP_ORDER if columns is None else ())
