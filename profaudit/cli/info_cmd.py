"""`profaudit formats` and `profaudit schema`: what profaudit reads and the tables it produces."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import polars as pl
import typer

from profaudit.cli.common import FORMAT_OPTION, OUTPUT_OPTION, Format, emit_frame


def register(app: typer.Typer) -> None:
    @app.command("formats")
    def formats(fmt: Format = FORMAT_OPTION, output: Optional[Path] = OUTPUT_OPTION) -> None:
        """List the input formats profaudit reads."""
        from profaudit.parsers import describe_formats

        emit_frame(pl.DataFrame(describe_formats()), fmt, output, title="input formats", limit=0)

    @app.command("schema")
    def schema_cmd(
        table: Optional[str] = typer.Argument(None, help="One table (default: all)."),
        fmt: Format = FORMAT_OPTION,
        output: Optional[Path] = OUTPUT_OPTION,
    ) -> None:
        """Describe the normalised tables: every column with its dtype, unit and meaning."""
        from profaudit import schema
        from profaudit.errors import UsageError

        known = {**schema.ALL_TABLES, **schema.DERIVED_TABLES}  # derived: the distributed-run tables of profaudit.ranks
        if table and table not in known:
            raise UsageError(f"no table {table!r}; tables: {', '.join(known)}")
        emit_frame(pl.DataFrame(schema.describe([table] if table else None)), fmt, output, title="schema", limit=0)
