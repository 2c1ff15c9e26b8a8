"""Shared fixtures: the third-party corpus (skipped cleanly when ../shared is absent), temp dirs,
and a CLI runner that returns (exit code, stdout, stderr) without spawning a process."""

from __future__ import annotations

import io
import os
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("PROFAUDIT_CORPUS", REPO.parent / "shared" / "corpus"))
SAMPLES = REPO / "sample_reports"


def corpus_dir(sub: str = "") -> Path:
    d = CORPUS / sub if sub else CORPUS
    if not d.is_dir():
        pytest.skip(f"corpus folder {d} not present")
    return d


def corpus_files(sub: str, pattern: str = "*") -> list[Path]:
    """Corpus files for parametrisation; empty (tests then skip) when the corpus is absent."""
    d = CORPUS / sub
    return sorted(p for p in d.glob(pattern) if p.is_file()) if d.is_dir() else []


def corpus_file(sub: str, contains: str) -> Path:
    """The one corpus file in `sub` whose name contains `contains`; the test skips when absent."""
    matches = [p for p in corpus_files(sub) if contains in p.name]
    if len(matches) != 1:
        pytest.skip(f"corpus file *{contains}* in {sub}/ not present")
    return matches[0]


def corpus_ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


@pytest.fixture
def corpus() -> Path:
    return corpus_dir()


class CliResult:
    def __init__(self, code: int, out: str, err: str):
        self.code, self.out, self.err = code, out, err

    def __repr__(self) -> str:
        return f"CliResult(code={self.code}, out={self.out[:300]!r}, err={self.err[:300]!r})"


def run_cli(*args: str) -> CliResult:
    from profaudit.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([str(a) for a in args])
    return CliResult(code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(autouse=True)
def _no_terminal_width(monkeypatch):
    # CLI tables fit $COLUMNS when it is set; a value left by the shell (or by anything else in
    # the test process) would make table contents depend on where the suite runs. Tests that
    # are about the width set it themselves.
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture(autouse=True, scope="session")
def _the_cores_of_the_reference_machine():
    # The suite runs everywhere as on the project's 2-core machine: the loader's process pool
    # (min(inputs, os.cpu_count()) spawned workers, each with its own interpreter and reader
    # helpers) and polars' thread pool in the processes tests start (CLI runs, tools, children:
    # the streaming engine's batches in flight grow with it, and so did a memory bound's figure,
    # 1ac1530) are sized by the core count, so a 64-core CI runner ran ingest of the 27-file ncu
    # corpus on 27 workers where this machine uses 2. This process's own polars pool is fixed at
    # import, before any conftest: `make test` sets POLARS_MAX_THREADS for it (68abd7f). Session-wide,
    # so module- and session-scoped fixtures (set up before a function-scoped patch) see it too.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "cpu_count", lambda: 2)
        mp.setenv("POLARS_MAX_THREADS", "2")
        # pyarrow's CPU pool (and OpenMP's, torch's intra-op) read this one, not the two above
        # (review F18-11: a Parquet read's bytes per row 190 on 2 threads, 255-269 on 32-64)
        mp.setenv("OMP_NUM_THREADS", "2")
        yield


@pytest.fixture(autouse=True)
def _no_leftover_dask_client():
    """Fail the test that leaves a default Dask distributed client (or dask's `scheduler` setting
    pointing at one) behind: every later bare `.compute()` on the same xdist worker goes to it,
    and one whose scheduler is gone hung a CI run in another test file. Cleaned up here so only
    the test that leaked fails. Costs nothing until a test imports distributed."""
    import sys

    yield
    client_mod = sys.modules.get("distributed.client")
    if client_mod is None:
        return
    import dask

    left = client_mod._get_global_client()
    setting = dask.config.get("scheduler", None)
    if left is None and setting != "dask.distributed":
        return
    if left is not None:
        left.close()
    for k in list(client_mod._global_clients):
        client_mod._global_clients.pop(k, None)
    dask.config.config.pop("scheduler", None)
    pytest.fail(f"the test left a default Dask client ({left!r}) or dask's scheduler setting ({setting!r}) behind: "
                "close clients in a `with` block and create them with set_as_default=False when they need not be the default")


def assert_one_line_error(res: CliResult, needle: str | None = None) -> None:
    """Bad input: exit 2, exactly one line on stderr naming the problem, no traceback."""
    assert res.code == 2, res
    lines = [l for l in res.err.splitlines() if l.strip()]
    assert len(lines) == 1, res.err
    assert "Traceback" not in res.err
    assert lines[0].startswith("profaudit: error: ")
    if needle:
        assert needle in lines[0], lines[0]
