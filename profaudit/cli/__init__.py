"""The `profaudit` command line: a thin layer over the library API.

Each command lives in its own module with a `register(app)` function, listed once in COMMANDS.
Every error a user can cause prints one line on stderr and exits 2; nothing prints a traceback
unless PROFAUDIT_DEBUG=1.
"""

from __future__ import annotations

import importlib
import os
import sys

import typer

from profaudit import __version__

COMMANDS = [
    "profaudit.cli.ingest_cmd",
    "profaudit.cli.kernels_cmd",
    "profaudit.cli.info_cmd",
    "profaudit.cli.compare_cmd",
    "profaudit.cli.xla_cmd",
    "profaudit.cli.timeline_cmd",
    "profaudit.cli.devices_cmd",
    "profaudit.cli.roofline_cmd",
    "profaudit.cli.audit_cmd",
]

app = typer.Typer(
    name="profaudit",
    help="Audit GPU/accelerator kernel profiles and speedup claims.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"profaudit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit.")) -> None:
    """Audit GPU/accelerator kernel profiles and speedup claims."""


for _mod in COMMANDS:
    importlib.import_module(_mod).register(app)


def main(argv: list[str] | None = None) -> int:
    from profaudit.errors import ProfauditError

    debug = os.environ.get("PROFAUDIT_DEBUG") == "1"
    try:
        rc = app(args=argv, prog_name="profaudit", standalone_mode=False)
        return rc if isinstance(rc, int) else 0
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    except typer.Exit as exc:
        return exc.exit_code
    except ProfauditError as exc:
        if debug:
            raise
        print(f"profaudit: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("profaudit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # click's own usage errors land here too
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            return exc.exit_code
        if isinstance(exc, click.exceptions.Abort):
            return 1
        if debug:
            raise
        print(f"profaudit: internal error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} (PROFAUDIT_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 3


def run() -> None:
    sys.exit(main())
