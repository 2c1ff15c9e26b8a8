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
    "profaudit.cli.dataset_cmd",
    "profaudit.cli.batch_cmd",
    "profaudit.cli.kernels_cmd",
    "profaudit.cli.kernel_report_cmd",
    "profaudit.cli.info_cmd",
    "profaudit.cli.compare_cmd",
    "profaudit.cli.export_trace_cmd",
    "profaudit.cli.xla_cmd",
    "profaudit.cli.timeline_cmd",
    "profaudit.cli.ranks_cmd",
    "profaudit.cli.collectives_cmd",
    "profaudit.cli.devices_cmd",
    "profaudit.cli.roofline_cmd",
    "profaudit.cli.audit_cmd",
    "profaudit.cli.dashboard_cmd",
    "profaudit.cli.bench_cmd",
    "profaudit.cli.demo_cmd",
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
    from profaudit.errors import ProfauditError, first_line, one_line

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
        print(f"profaudit: error: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("profaudit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        click_exc = _click_exception(exc)
        if click_exc == "abort":
            return 1
        if click_exc is not None:
            # click/typer usage errors (bad option value, unknown command): one line, exit 2
            print(f"profaudit: error: {one_line(str(click_exc))}", file=sys.stderr)
            return 2
        if debug:
            raise
        print(f"profaudit: internal error: {type(exc).__name__}: {one_line(first_line(exc))} (PROFAUDIT_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 3


def _click_exception(exc: BaseException):
    """The one-line message of a click usage error (typer vendors its own click), else None."""
    kinds = []
    for modname in ("click.exceptions", "typer._click.exceptions"):
        mod = sys.modules.get(modname)
        if mod is not None:
            kinds.append(mod)
    for mod in kinds:
        abort = getattr(mod, "Abort", None)
        if abort is not None and isinstance(exc, abort):
            return "abort"
        if isinstance(exc, mod.ClickException):
            msg = exc.format_message()
            ctx = getattr(exc, "ctx", None)
            where = f"{ctx.command_path}: " if ctx is not None and getattr(ctx, "command_path", None) else ""
            return (where + " ".join(msg.split())).strip()
    return None


def run() -> None:
    sys.exit(main())
