"""What a user runs next on an input that loaded, run in-process with the same classification as
the read itself (tests/fuzz/harness.py `verdict`).

A profile that loads but then breaks `profaudit summary` or `compare` is the same bug to a user as
one that breaks `load`: exit 3 and "internal error". So each loaded mutant also goes through the
CLI commands a user runs on a profile (`summary`, `summary --by nvtx`, `gaps`, `kernels` on every
table, `roofline`, `kernel-report`, `compare` against itself or against its unmutated seed,
`export-trace`, and on profiles with kernels or copies `ranks` or `collectives`) and the library path of `ingest` (the dataset written, then read back with the same
row counts), plus a check that every table has exactly the dtypes `profaudit.schema` declares.

The commands run through `profaudit.cli.main` (so rendering and the CLI's own error handling are
covered too), with the loader answered from the ProfileSet already read: the read is what the
verdict has already judged, and reading the same file ten more times would multiply the cost of a
long run for nothing. Exit 2 (a deliberate one-line refusal, e.g. `kernel-report` on a profile
without kernels) is fine; exit 3 (the CLI's internal-error catch-all), any other exit code, or an
exception escaping `main` is an undeliberate failure, named by the command that hit it.
"""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

# the CLI modules that bind `load_with_progress` by name when imported
_CLI_MODULES = ("common", "kernels_cmd", "roofline_cmd", "timeline_cmd", "kernel_report_cmd")


@contextlib.contextmanager
def _loads_from(cache: dict[str, object]):
    """`load_with_progress` and `profaudit.ranks.load_run` answer the paths in `cache` with their
    ProfileSets (and anything else by loading it, as the CLI does)."""
    import importlib

    mods = [importlib.import_module(f"profaudit.cli.{m}") for m in _CLI_MODULES]
    real = mods[0].load_with_progress

    def cached(paths, **kw):
        key = "\x00".join(str(p) for p in paths)
        if key in cache:
            return cache[key]
        return real(paths, **kw)

    import profaudit.ranks as ranks

    real_run = ranks.load_run

    def cached_run(paths, *, align="auto", step_pattern=None, step_basis="host", **kw):
        # `ranks` and `collectives` read through profaudit.ranks.load_run; a second read of the
        # file beside the one held here doubled the stage's memory on a large input (a 200 MB
        # blow-up's collectives: 2.9 GB, of which 1.2 GB the second read). `paths` are the CLI's
        # expanded inputs, (path, explicit) pairs
        key = "\x00".join(str(p[0] if isinstance(p, tuple) else p) for p in paths)
        if key not in cache:
            return real_run(paths, align=align, step_pattern=step_pattern, step_basis=step_basis, **kw)
        from profaudit.ranks.collectives import read_run_comm_args

        ps = cache[key]
        return ranks.DistributedRun(ps, align=align, step_pattern=step_pattern, step_basis=step_basis, comm_args=read_run_comm_args(ps))

    saved = [(m, m.load_with_progress) for m in mods]
    for m in mods:
        m.load_with_progress = cached
    ranks.load_run = cached_run
    try:
        yield
    finally:
        for m, fn in saved:
            m.load_with_progress = fn
        ranks.load_run = real_run


class _BuiltApp:
    """Stands in for the Typer app inside `profaudit.cli.main`, calling the click command Typer
    built from it once. Typer rebuilds that command (every command's signature and type hints)
    on each call: 16 of the 21 ms a cheap command took, the floor under each of the ~12 commands
    per loaded input. The process-per-call CLI needs no such cache; a fuzz worker calling `main`
    tens of thousands of times does. Everything `main` does around the call (its error handling,
    exit codes) runs as it is."""

    def __init__(self, app):
        import typer.main

        self.app = app
        self.command = typer.main.get_command(app)

    def __call__(self, *args, **kwargs):
        return self.command(*args, **kwargs)


_BUILT: _BuiltApp | None = None


class Discard(io.TextIOBase):
    """stdout for the commands: what they print is not judged (the exit code and stderr are), so it
    is counted, not kept. A StringIO kept it all: a loaded 200 MB blow-up's `kernels -t metrics
    --format csv` held its 1 GB of CSV in the worker, which a user's pipe or file never does."""

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        return len(s)


def _cli(argv: list[str]) -> tuple[int, str]:
    global _BUILT
    import profaudit.cli as cli

    if _BUILT is None or _BUILT.app is not cli.app:
        _BUILT = _BuiltApp(cli.app)
    err = io.StringIO()
    cli.app = _BUILT
    try:
        with contextlib.redirect_stdout(Discard()), contextlib.redirect_stderr(err):
            rc = cli.main(argv)
    finally:
        cli.app = _BUILT.app
    return rc, err.getvalue()


def schema_problem(ps) -> str | None:
    """The first table whose columns or dtypes differ from what `profaudit.schema` declares."""
    from profaudit import schema

    for name, t in schema.ALL_TABLES.items():
        have = dict(ps.table(name).schema)
        want = dict(t.polars_schema)
        if have != want:
            diff = sorted(k for k in set(have) | set(want) if have.get(k) != want.get(k))
            return f"table {name} differs from the schema in {diff[:4]}"
    return None


def commands(path: Path, ps, sibling: Path | None, scratch: Path, pick: int = 0) -> list[list[str]]:
    """The CLI command lines run on a loaded `path` (its kernel-report picks a kernel by id, as a
    user with a multi-kernel profile must).

    `compare` is the costliest step (a third to a half of the stage), so one input runs one of its
    two forms, picked by `pick`: against itself (`--format json`, the degenerate statistics of two
    identical sides) or, when there is one, against its unmutated seed (the table, with kernels
    and cases matched across a change). A long run's inputs cover both."""
    p = str(path)
    cmds = [["summary", p], ["summary", p, "--by", "nvtx"], ["gaps", p], ["kernels", p], ["roofline", p],
            ["export-trace", p, "-o", str(scratch / "trace.json")]]
    if sibling is not None and pick % 2:
        cmds.append(["compare", str(sibling), p])
    else:
        cmds.append(["compare", p, p, "--format", "json"])
    for table in ("metrics", "ranges", "transfers", "counters", "samples", "metadata"):
        if ps.table(table).height:
            cmds.append(["kernels", p, "-t", table, "--format", "csv"])
    k = ps.kernels
    if k.height or ps.transfers.height:
        # the distributed view (the run's rank tables and collectives built afresh each time) is
        # costly: one of its two commands per input, as with compare
        cmds.append(["ranks", p] if (pick >> 1) % 2 else ["collectives", p, "--format", "csv"])
    if k.height:
        kid = k["kernel_id"][0]
        cmds.append(["kernel-report", p] + (["--id", str(kid)] if kid is not None else []) + (["--profile", ps.ids[0]] if len(ps) > 1 else []))
    return cmds


def after_load(path: Path, ps, sibling: tuple[Path, object] | None, scratch: Path, pick: int = 0, on_step=None) -> str | None:
    """None when every next step ends in output or a deliberate refusal; else one line naming the
    step and what escaped (`pick`: which form of compare, see `commands`). `on_step(name)` is
    called before each step (the long run's worker tells its parent, which times each step on its
    own: a user runs them one at a time)."""
    step = on_step or (lambda name: None)
    problem = schema_problem(ps)
    if problem:
        return f"schema: {problem}"
    scratch.mkdir(parents=True, exist_ok=True)
    cache = {str(path): ps}
    if sibling is not None:
        cache[str(sibling[0])] = sibling[1]
    try:
        with _loads_from(cache):
            for argv in commands(path, ps, sibling[0] if sibling else None, scratch, pick):
                step(argv[0])
                try:
                    rc, err = _cli(argv)
                except BaseException as exc:  # noqa: B036 - a panic or SystemExit escaping main is the finding
                    return f"{argv[0]}: {type(exc).__name__} escaped the CLI: {str(exc)[:200]}"
                if rc not in (0, 1, 2, 4):
                    line = next((l for l in err.splitlines() if "error" in l), err.strip()[-200:])
                    return f"{' '.join(a if a not in cache else 'FILE' for a in argv[:1] + argv[2:])} (exit {rc}): {line[:300]}"
                if "Traceback (most recent call last)" in err:
                    return f"{argv[0]}: a traceback on stderr"
        step("ingest")
        return _ingest_round_trip(ps, scratch / "dataset")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# Profiles whose tables hold more than this in memory are checked after the ingest without being
# read back whole (see `_ingest_round_trip`). Small enough that a read-back beside the held profile
# stays far inside the long run's 2 GB memory verdict (a read-back costs up to ~4x the tables'
# estimated size: pyarrow's strings plus polars' views of them); every ordinary mutant, whose
# tables are kilobytes to a few MB, still goes through the whole reader.
FULL_READ_BACK_MAX_BYTES = 128 << 20


def _ingest_round_trip(ps, out: Path) -> str | None:
    """`ingest` as the library runs it (write_dataset), then the dataset read back: every table
    keeps its row count. A refusal there with a one-line ProfauditError is deliberate.

    A profile this process already holds in memory is not read back whole when it is big: a 200 MB
    rocprofv3 blow-up's 14 M metric rows cost 5 GB more to read back beside it (6.8 GB peak; the
    long run calls 2 GB a memory blow-up). Its dataset is checked table by table through the
    library's lazy scan instead (`profaudit.scan`: the manifests, the live part files, superseded
    copies dropped), one streamed pass per table that decodes every column: the same rows, the
    same nulls in every column and the schema's dtypes, and the same profiles in the metadata."""
    from profaudit.dataset import write_dataset
    from profaudit.errors import ProfauditError
    from profaudit.loader import read_one
    from profaudit.profile import ProfileSet
    from profaudit import schema

    try:
        write_dataset(ps, out, merge=False)
        if sum(ps.table(name).estimated_size() for name in schema.DATA_TABLES) > FULL_READ_BACK_MAX_BYTES:
            return _scanned_problem(ps, out)
        back = ProfileSet(read_one(out, explicit=True))
    except ProfauditError:
        return None
    except BaseException as exc:  # noqa: B036 - a polars panic is a BaseException
        return f"ingest: {type(exc).__name__}: {str(exc)[:300]}"
    for name in schema.DATA_TABLES:
        a, b = ps.table(name).height, back.table(name).height
        if a != b:
            return f"ingest: {name} has {a} rows, {b} after the dataset round trip"
    return None


def _scanned_problem(ps, out: Path) -> str | None:
    """The dataset at `out` against the held `ps`, one lazy streamed pass per table (no table is
    held twice): None when every table has the held rows, nulls and declared dtypes."""
    import polars as pl

    from profaudit import schema
    from profaudit.scan import scan

    for name in schema.DATA_TABLES:
        lf = scan(out, name, engine="polars")
        want = schema.ALL_TABLES[name].polars_schema
        have = lf.collect_schema()
        if dict(have) != dict(want):
            diff = sorted(c for c in set(have) | set(want) if have.get(c) != want.get(c))
            return f"ingest: table {name} reads back with other columns or dtypes than the schema's: {diff[:4]}"
        # rows, and each column's nulls: a column the writer lost or filled reads back with other
        # nulls; counting them makes the engine decode every page of every column
        stats = [pl.len().alias("__rows__"), *(pl.col(c).null_count() for c in want)]
        held = ps.table(name).select(stats).row(0)
        back = lf.select(stats).collect(engine="streaming").row(0)
        if held != back:
            what = ["rows", *(f"nulls in {c}" for c in want)]
            i = next(i for i, (a, b) in enumerate(zip(held, back)) if a != b)
            return f"ingest: {name} has {held[i]} {what[i]}, {back[i]} after the dataset round trip"
    ids = scan(out, "metadata", engine="polars").select("profile_id").collect()["profile_id"].to_list()
    if sorted(ids) != sorted(ps.ids):
        return f"ingest: the dataset's metadata holds {len(ids)} profiles, not the {len(ps)} written"
    return None
