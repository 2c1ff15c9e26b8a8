"""`profaudit dataset info|compact|convert`: look after an ingested dataset."""

from __future__ import annotations

from typing import Optional

import typer

from profaudit.cli.common import FORMAT_OPTION, Format, emit_frame, emit_json, stderr_console

_TARGET_OPTION = typer.Option(128, "--target-mb", min=1, help="Target size of a Parquet file, in MiB of rows in memory (files come out smaller).")


def register(app: typer.Typer) -> None:
    sub = typer.Typer(name="dataset", help="Inspect, compact and convert an ingested dataset.", no_args_is_help=True)

    @sub.command("info")
    def info(
        dataset: str = typer.Argument(..., help="Dataset folder or fsspec URL."),
        fmt: Format = FORMAT_OPTION,
    ) -> None:
        """Profiles, batches, tables (rows, files, bytes) and size of a dataset."""
        import polars as pl

        from profaudit.dataset import dataset_info

        d = dataset_info(dataset)
        if fmt is Format.json:
            emit_json(d)
            return
        rows = [{"table": name, "rows": t["rows"], "files": t["files"], "bytes": t["bytes"]} for name, t in d["tables"].items()]
        title = (
            f"{d['dataset']}: layout {d['layout']}, {d['profiles']} profiles in {d['batches']} batches, {d['bytes']:,} bytes"
            + (f", {d['superseded_copies']} superseded copies" if d["superseded_copies"] else "")
            + (f", {d['uncommitted_files']} uncommitted files ({d['uncommitted_bytes']:,} bytes)" if d["uncommitted_files"] else "")
        )
        frame = pl.DataFrame(rows, schema={"table": pl.Utf8, "rows": pl.Int64, "files": pl.Int64, "bytes": pl.Int64})
        emit_frame(frame, fmt, None, title=title, limit=0)

    @sub.command("compact")
    def compact(
        dataset: str = typer.Argument(..., help="Dataset folder or fsspec URL (layout 2)."),
        target_mb: int = _TARGET_OPTION,
        orphan_age_h: float = typer.Option(1.0, "--orphan-age-h", min=0.0, help="Delete part files no manifest lists (a crashed ingest's) once this many hours old."),
    ) -> None:
        """Rewrite small batches, and batches holding superseded copies, into target-size files."""
        from profaudit.dataset import compact_dataset

        r = compact_dataset(dataset, target_file_bytes=target_mb << 20, orphan_age_s=orphan_age_h * 3600)
        stderr_console().print(
            f"{dataset}: {r['batches_before']} -> {r['batches_after']} batches ({r['batches_rewritten']} rewritten, "
            f"{r['files_removed']} files replaced, {r['orphans_removed']} orphaned files removed)",
            markup=False,
            highlight=False,
        )

    @sub.command("convert")
    def convert(
        dataset: str = typer.Argument(..., help="A layout-1 dataset folder."),
        output: Optional[str] = typer.Option(None, "--output", "-o", help="Write the layout-2 dataset here (default: convert in place, atomically)."),
        target_mb: int = _TARGET_OPTION,
    ) -> None:
        """Rewrite a layout-1 dataset (a folder per profile) as layout 2 (batches and manifests)."""
        from profaudit.dataset import convert_dataset

        out = convert_dataset(dataset, output, target_file_bytes=target_mb << 20)
        stderr_console().print(f"converted {dataset} to layout 2 in {out}", markup=False, highlight=False)

    app.add_typer(sub, name="dataset")
