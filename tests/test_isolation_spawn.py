"""The `.ncu-rep` reader's zygote is a fresh interpreter (isolate's `spawn`), not a copy of the
caller: it imports neither polars nor the package's heavy modules, and keeps every guarantee of the
forked zygote (a crash, a hang or a memory blow-up is one line and the next read works; a dead
zygote is replaced; that nothing is left running is tests/test_isolation.py's); it works from an installed (non-editable) copy of the
package, and falls back to a forked zygote where no interpreter can be started."""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from profaudit.errors import InputError
from profaudit.parsers import isolate, ncu_child
from tests import isolated_helpers as helpers
from tests.conftest import corpus_files
from tests.test_isolation import _wait_gone, fresh_worker  # noqa: F401 - autouse

pytestmark = pytest.mark.skipif(not isolate.can_isolate() or not hasattr(os, "posix_spawn"), reason="needs fork and posix_spawn")

REPO = Path(__file__).parents[1]
NCU = corpus_files("ncu-rep", "*.ncu-rep")
# what the zygote may import from the package: the wire protocol, the child side, errors, the
# huge-page mover (and the packages themselves, as empty shells)
LIGHT = {"profaudit", "profaudit.errors", "profaudit.parsers", "profaudit.parsers.isolate", "profaudit.parsers.ncu_child", "profaudit.parsers.hugepages"}


def _read(f, work, prepare=None):
    return isolate.run_isolated(f, work, lambda c: None, "the test reader", prepare=prepare, spawn=True)


def _file(tmp_path) -> Path:
    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    return f


def test_the_zygote_imports_neither_polars_nor_the_package(tmp_path):
    pytest.importorskip("ncu_report")
    f = _file(tmp_path)
    mods = _read(f, functools.partial(helpers.imported_modules, str(f)), prepare=ncu_child.prepare_reader)
    assert "polars" not in mods and "numpy" not in mods and "pyarrow" not in mods
    assert {m for m in mods if m.split(".")[0] == "profaudit"} == LIGHT
    assert "ncu_report" in mods  # the reader's set-up ran in the zygote
    z = isolate._zygotes[ncu_child.prepare_reader]
    assert z.spawned
    with open(f"/proc/{z.pid}/cmdline", "rb") as fh:
        argv = fh.read().split(b"\0")
    assert argv[1:3] == [b"-I", b"-S"]  # a fresh interpreter, not a fork of this process


def test_results_chunks_and_the_same_zygote(tmp_path):
    f = _file(tmp_path)
    chunks: list = []
    a = isolate.run_isolated(f, functools.partial(helpers.echo, 1), chunks.append, "t", spawn=True)
    b = isolate.run_isolated(f, functools.partial(helpers.echo, 2), chunks.append, "t", spawn=True)
    assert (a["value"], b["value"]) == (1, 2) and chunks == [["chunk", 1], ["chunk", 2]]
    assert a["ppid"] == b["ppid"] == isolate.zygote_pid() != os.getpid()
    assert a["pid"] != b["pid"]  # one child per read


@pytest.mark.parametrize(
    "work, problem",
    [
        (functools.partial(helpers.segfault, "x"), "the test reader crashed on this file (SIGSEGV)"),
        (helpers.allocate, "the test reader ran out of memory on this file"),
        (helpers.sleep, "the test reader did not finish within 1 s"),
    ],
    ids=["crash", "memory", "hang"],
)
def test_a_bad_read_is_one_line_and_the_next_read_works(tmp_path, monkeypatch, work, problem):
    monkeypatch.setattr(isolate, "TIMEOUT_S", 1.0)
    monkeypatch.setattr(isolate, "TIMEOUT_S_PER_MB", 0.0)
    f = _file(tmp_path)
    first = _read(f, functools.partial(helpers.echo, 1))
    with pytest.raises(InputError) as ei:
        _read(f, work)
    assert str(ei.value).startswith(f"{f}: {problem}") and "\n" not in str(ei.value)
    again = _read(f, functools.partial(helpers.echo, 2))
    assert again["value"] == 2 and again["ppid"] == first["ppid"]  # the zygote itself was not hurt


def test_a_dead_zygote_is_replaced(tmp_path):
    f = _file(tmp_path)
    first = _read(f, functools.partial(helpers.echo, 1))["ppid"]
    os.kill(first, signal.SIGKILL)
    assert _wait_gone(first)
    res = _read(f, functools.partial(helpers.echo, 2))
    assert res["value"] == 2 and res["ppid"] == isolate.zygote_pid() != first
    with pytest.raises(ChildProcessError):  # the dead one was reaped, not left a zombie
        os.waitpid(first, os.WNOHANG)


def test_without_an_interpreter_to_start_a_forked_zygote_reads(tmp_path, monkeypatch):
    f = _file(tmp_path)
    monkeypatch.setattr(isolate.sys, "executable", "")
    res = _read(f, functools.partial(helpers.echo, 3))
    assert res["value"] == 3 and not isolate._zygotes[None].spawned
    assert _read(f, functools.partial(helpers.echo, 4))["ppid"] == res["ppid"]  # not tried again per read


_INSTALLED = """
import json, sys
import profaudit
from profaudit.parsers import isolate, ncu_rep
p = next(iter(profaudit.load(sys.argv[1], parallel=False)))
z = isolate._zygotes[ncu_rep.prepare_reader]
print(json.dumps({"kernels": p.kernels.height, "spawned": z.spawned, "parsers": ncu_rep.__file__}))
"""


@pytest.mark.corpus
@pytest.mark.skipif(not NCU, reason="corpus ncu-rep folder not present")
def test_reads_from_an_installed_copy_of_the_package(tmp_path):
    """A non-editable install puts parsers/ inside profaudit/ (pyproject's package-dir): the
    zygote finds the child-side modules where this process found the package, wherever that is."""
    pytest.importorskip("ncu_report")
    site = tmp_path / "site"
    skip = shutil.ignore_patterns("__pycache__", "*.so", "*.c")
    shutil.copytree(REPO / "profaudit", site / "profaudit", ignore=skip)
    shutil.copytree(REPO / "parsers", site / "profaudit" / "parsers", ignore=skip)
    shutil.copytree(REPO / "device_specs", site / "profaudit" / "device_specs", ignore=skip)
    report = min(NCU, key=lambda p: p.stat().st_size)
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c", _INSTALLED, str(report)], capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    import json

    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["spawned"] and got["kernels"] > 0
    assert got["parsers"] == str(site / "profaudit" / "parsers" / "ncu_rep.py")
