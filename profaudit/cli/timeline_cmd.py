"""`profaudit summary` (per-kernel statistics like `nsys stats -r cuda_gpu_kern_sum`) and
`profaudit gaps` (GPU idle time between kernels)."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import polars as pl
import typer

from profaudit.cli.common import FORMAT_OPTION, LIMIT_OPTION, NSYS_OPTION, OUTPUT_OPTION, Format, emit_frame, load_with_progress, stderr_console
from profaudit.fmt import plural


class By(str, Enum):
    name = "name"
    short = "short"
    mangled = "mangled"
    nvtx = "nvtx"


class Per(str, Enum):
    device = "device"
    stream = "stream"
    profile = "profile"


def _names_for_terminal(table: pl.DataFrame) -> tuple[pl.DataFrame, bool]:
    """Demangled names as `names.instance_name` writes them (`cudnn::detail::dgrad_engine<float,
    512, 6>`): in a terminal column a middle ellipsis of the whole name keeps 'void cudnn::d' and
    'int, int)' and cuts away what tells kernels apart. Kept whole where that would merge rows."""
    from profaudit.names import instance_name

    if "name" not in table.columns or table.height == 0:
        return table, False
    short = table["name"].map_elements(instance_name, return_dtype=pl.Utf8)
    keys = [c for c in ("profile_id", "nvtx_range") if c in table.columns]
    shown = table.with_columns(short.alias("name"))
    if shown.select(*keys, "name").n_unique() < table.select(*keys, "name").n_unique() or shown["name"].equals(table["name"]):
        return table, False
    return shown, True


def register(app: typer.Typer) -> None:
    @app.command("summary")
    def summary(
        paths: List[str] = typer.Argument(..., help="Profiles, folders, globs or an ingested dataset."),
        by: By = typer.Option(By.name, "--by", help="Group by the demangled name, the short (base) name, the mangled name, or the enclosing NVTX range and name."),
        fmt: Format = FORMAT_OPTION,
        output: Optional[Path] = OUTPUT_OPTION,
        limit: int = LIMIT_OPTION,
        nsys: Optional[str] = NSYS_OPTION,
    ) -> None:
        """Per-kernel time summary (total, instances, avg, median, min, max, stddev, % of kernel time)."""
        from profaudit.timeline import attribute_kernels_to_nvtx, kernel_summary, kernel_summary_from_samples

        ps = load_with_progress(paths, nsys=nsys)
        kernels = ps.kernels
        if by is By.nvtx:
            if kernels.height:
                recomputed = attribute_kernels_to_nvtx(ps)
                kernels = kernels.with_columns(pl.coalesce(recomputed["nvtx_range"], pl.col("nvtx_range")).alias("nvtx_range"))
            keys = ["nvtx_range", "name"]
        else:
            keys = by.value
        table = kernel_summary(kernels, keys)
        if kernels.height == 0:
            # `nsys stats` kern_sum CSVs carry the summary itself, as samples rows.
            table = kernel_summary_from_samples(ps.samples)
            if table.height == 0:
                _note_empty(ps, "kernel")
        if len(ps) == 1 and fmt is Format.table:
            table = table.drop("profile_id")
        title = f"kernel summary ({plural(table.height, 'row')})"
        if fmt is Format.table:
            table = table.drop(["q1_ns", "q3_ns"], strict=False)
            if output is None and by is not By.mangled:
                table, shortened = _names_for_terminal(table)
                if shortened:
                    title += ": names without return type and parameters (--format csv has them whole)"
        # what a narrow terminal gives up first: the spread columns, never a name (a summary by
        # NVTX range and kernel hid the kernel names at 120 columns)
        emit_frame(table, fmt, output, title=title, limit=limit, drop_order=("avg_ns", "instances", "med_ns", "min_ns", "max_ns", "stddev_ns"))

    @app.command("gaps")
    def gaps(
        paths: List[str] = typer.Argument(..., help="Profiles, folders, globs or an ingested dataset."),
        per: Per = typer.Option(Per.device, "--per", help="Measure idle time per device, per stream, or per profile."),
        list_gaps: bool = typer.Option(False, "--list", help="List every gap instead of the per-device totals."),
        min_gap_ns: float = typer.Option(0.0, "--min-gap-ns", help="Ignore gaps shorter than this many ns."),
        transfers: bool = typer.Option(False, "--transfers", help="Count memcpy/memset time as busy too."),
        fmt: Format = FORMAT_OPTION,
        output: Optional[Path] = OUTPUT_OPTION,
        limit: int = LIMIT_OPTION,
        nsys: Optional[str] = NSYS_OPTION,
    ) -> None:
        """GPU idle time between kernels: per-device span, busy time, idle time and gaps."""
        from profaudit.errors import UsageError
        from profaudit.timeline import idle_gaps, idle_summary

        if min_gap_ns < 0:
            raise UsageError("--min-gap-ns must not be negative")
        ps = load_with_progress(paths, nsys=nsys)
        if ps.kernels.height == 0:
            _note_empty(ps, "kernel")
        elif ps.kernels["start_ns"].null_count() == ps.kernels.height:
            # an empty table alone would read as "no idle time"
            print("profaudit: no kernel has a start time (ncu replays kernels one by one): gaps needs a timeline "
                  "such as nsys, a Kineto trace or an XLA profile", file=sys.stderr)
        tr = ps.transfers if transfers else None
        drop: tuple[str, ...] = ()
        if list_gaps:
            table = idle_gaps(ps.kernels, per.value, transfers=tr, min_gap_ns=min_gap_ns)
            title = f"idle gaps ({plural(table.height, 'gap')})"
        else:
            table = idle_summary(ps.kernels, per.value, transfers=tr, min_gap_ns=min_gap_ns)
            title = f"GPU idle time per {per.value}"
            drop = GAPS_DROP_ORDER
        emit_frame(table, fmt, output, title=title, limit=limit, drop_order=drop)


# what a narrow terminal gives up first (last listed goes first): the answer (idle share and time)
# stays; where the span starts and ends, in the trace's own time base, goes first
GAPS_DROP_ORDER = ("profile_id", "idle_pct", "idle_ns", "span_ns", "busy_ns", "max_gap_ns", "gap_count", "kernels", "last_end_ns", "first_start_ns")


def _note_empty(ps, what: str) -> None:
    reasons = []
    for p in ps:
        why = p.metadata.get("empty_reason") or next((n for n in p.metadata.get("notes", []) or [] if "no CUDA kernel" in n), None)
        if why:
            reasons.append(f"{p.profile_id}: {why}")
    from profaudit.cli.common import where_the_data_is

    msg = f"no {what} rows in the input" + (": " + "; ".join(reasons) if reasons else "") + where_the_data_is(ps, f"{what}s")
    stderr_console().print(msg, markup=False, highlight=False)
