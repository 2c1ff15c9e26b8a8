"""`profaudit dashboard [PATHS...]`: serve the dashboard on 127.0.0.1 (the embedded sample reports
when no path is given)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional

import typer


def sample_reports() -> Path | None:
    """The repository's `sample_reports/` folder: $PROFAUDIT_SAMPLE_REPORTS, else beside the
    installed package (a checkout or an editable install), else in the current folder."""
    import profaudit

    env = os.environ.get("PROFAUDIT_SAMPLE_REPORTS")
    candidates = [Path(env)] if env else []
    pkg = Path(profaudit.__file__).resolve().parent
    candidates += [pkg / "sample_reports", pkg.parent / "sample_reports", Path.cwd() / "sample_reports"]
    for c in candidates:
        if c.is_dir():
            return c
    return None


def register(app: typer.Typer) -> None:
    @app.command("dashboard")
    def dashboard_cmd(
        paths: Optional[List[str]] = typer.Argument(None, help="Profiles, timing logs, claim files and folders to show (default: the embedded sample_reports/)."),
        host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on. Anything but a loopback address shares the data with the network (there is no login)."),
        port: int = typer.Option(8050, "--port", "-p", help="Port to listen on."),
        max_upload_mb: float = typer.Option(200.0, "--max-upload-mb", help="Largest upload (all files dropped at once), in MiB."),
        no_browser: bool = typer.Option(False, "--no-browser", help="Do not open a browser tab."),
        spec: Optional[List[Path]] = typer.Option(None, "--spec", help="Extra device spec YAML file or folder for the roofline (repeatable)."),
        device: Optional[str] = typer.Option(None, "--device", help="Device the profiles ran on, where they do not say."),
        callback_timeout: float = typer.Option(60.0, "--callback-timeout", help="Most seconds one page action (an audit, a comparison, loading an upload) may take before the page says it stopped waiting."),
    ) -> None:
        """Serve the dashboard: overview, kernels, roofline, timing, compare and audit pages.

        Only the files given here (and files uploaded in the page) are ever read.
        """
        from profaudit.errors import InputError, UsageError

        if not max_upload_mb > 0:
            raise UsageError(f"--max-upload-mb {max_upload_mb}: must be positive")
        if not 0 < callback_timeout < float("inf"):
            raise UsageError(f"--callback-timeout {callback_timeout}: must be a positive number of seconds")
        if not paths:
            found = sample_reports()
            if found is None:
                raise InputError("sample_reports", "no PATHS given and the embedded sample reports are not installed: pass profiles, timing logs or claim files")
            paths = [str(found)]
        from profaudit.dashboards.app import check_port

        check_port(host, port)  # before loading anything: a taken port fails at once
        from profaudit.cli.common import stderr_console
        from profaudit.dashboards import serve

        console = stderr_console()
        serve(
            paths,
            host=host,
            port=port,
            open_browser=not no_browser,
            max_upload_bytes=int(max_upload_mb * (1 << 20)),
            specs=[str(s) for s in spec or []],
            log=lambda m: console.print(m, markup=False, highlight=False),
            callback_timeout_s=callback_timeout,
            **({"device": device} if device else {}),
        )
