"""Native readers run isolated (parsers/isolate.py): a crash, a hang, a memory blow-up or an
unforeseen exception in the worker is one line for the user, and the next read works; Rust panics
(polars' PanicException, a BaseException) are input errors at the loader boundary."""

from __future__ import annotations

import functools
import os
import signal
import time
from pathlib import Path

import pytest

from profaudit.errors import InputError
from profaudit.loader import UnexpectedReadError, read_one
from profaudit.parsers import isolate
from tests.conftest import assert_one_line_error, corpus_files
from tests.isolated_helpers import allocate as _allocate
from tests.isolated_helpers import echo as _echo
from tests.isolated_helpers import sleep as _sleep

pytestmark = pytest.mark.skipif(not isolate.can_isolate(), reason="needs fork")


@pytest.fixture(autouse=True)
def fresh_worker():
    """Each test forks its own worker (so it sees this module and any monkeypatch)."""
    isolate._stop_worker()
    yield
    isolate._stop_worker()


def _segfault(send):
    os.kill(os.getpid(), signal.SIGSEGV)


def _noisy(send):
    # what ncu_report's protobuf does on a damaged result: a log line straight to fd 2
    os.write(2, b"E0000 message_lite.cc:195] Can't parse message of type ProfileResult\n")
    os.write(1, b"stray stdout\n")
    return "read"


def _type_error(send):
    return 1 + "x"  # noqa - an unforeseen bug inside the reader


def _input_error(path, send):
    raise InputError(path, "the reader's own deliberate message")


def _running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie left for init to reap is not running)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_gone(pid: int, within: float = 10.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not _running(pid):
            return True
        time.sleep(0.02)
    return False


def test_results_and_chunks_come_back(tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    chunks = []
    res = isolate.run_isolated(f, functools.partial(_echo, 41), chunks.append, "the test reader")
    assert res["value"] == 41 and chunks == [["chunk", 41]]
    assert res["pid"] != os.getpid()
    zygote = isolate.zygote_pid()
    assert zygote is not None and res["ppid"] == zygote
    # each read gets a fresh child of the same zygote (ncu_report keeps state across the reports
    # of one process), and the finished child is reaped, not left running: the read does not wait
    # for its exit, the next read (or settle) takes the zygote's word that it was reaped
    res2 = isolate.run_isolated(f, functools.partial(_echo, 42), chunks.append, "the test reader")
    assert res2["pid"] != res["pid"] and res2["value"] == 42 and res2["ppid"] == zygote
    assert not _running(res["pid"])
    cpu = isolate.worker_cpu_seconds()  # settles: the second child's exit and CPU are in
    assert not _running(res2["pid"]) and not isolate._zygotes[None].exit_pending
    assert cpu > 0


def _prepared_value(send):
    return _PREPARED


_PREPARED = "not prepared"


def _prepare():
    global _PREPARED
    _PREPARED = f"prepared in {os.getpid()}"


def test_prepare_runs_once_in_the_zygote_not_in_the_caller(tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    a = isolate.run_isolated(f, _prepared_value, lambda c: None, "the test reader", prepare=_prepare)
    b = isolate.run_isolated(f, _prepared_value, lambda c: None, "the test reader", prepare=_prepare)
    z = isolate.zygote_pid(_prepare)
    assert a == b == f"prepared in {z}" and _PREPARED == "not prepared"
    # a reader without that set-up gets its own zygote
    assert isolate.run_isolated(f, _prepared_value, lambda c: None, "the test reader") == "not prepared"
    assert isolate.zygote_pid() not in (None, z)


def _kill_zygote_once(marker, send):
    if not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getppid(), signal.SIGKILL)  # the zygote; PR_SET_PDEATHSIG takes this child along
        time.sleep(30)
    return os.getppid()


def _kill_zygote(send):
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(30)


def test_a_dead_zygote_is_replaced(tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    isolate.run_isolated(f, functools.partial(_echo, 1), lambda c: None, "the test reader")
    first = isolate.zygote_pid()
    os.kill(first, signal.SIGKILL)  # killed between reads (the OOM killer, a stray kill)
    res = isolate.run_isolated(f, functools.partial(_echo, 2), lambda c: None, "the test reader")
    assert res["value"] == 2 and res["ppid"] == isolate.zygote_pid() != first
    assert not _running(first)


def test_a_zygote_that_dies_mid_read_is_replaced_and_the_read_retried(tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    t0 = time.monotonic()
    ppid = isolate.run_isolated(f, functools.partial(_kill_zygote_once, str(tmp_path / "m")), lambda c: None, "the test reader")
    assert time.monotonic() - t0 < 20  # the orphaned child did not sleep on: it died with its zygote
    assert ppid == isolate.zygote_pid()
    with pytest.raises(InputError, match="helper process died twice"):
        isolate.run_isolated(f, _kill_zygote, lambda c: None, "the test reader")
    assert isolate.run_isolated(f, functools.partial(_echo, 3), lambda c: None, "the test reader")["value"] == 3


def test_threads_share_the_reader(tmp_path):
    """The dashboard reads from several threads at once: each gets its own answer."""
    from concurrent.futures import ThreadPoolExecutor

    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda v: isolate.run_isolated(f, functools.partial(_echo, v), lambda c: None, "the test reader"), range(12)))
    assert [g["value"] for g in got] == list(range(12))
    assert len({g["pid"] for g in got}) == 12 and len({g["ppid"] for g in got}) == 1


def _read_in_pool_worker(path):
    res = isolate.run_isolated(Path(path), functools.partial(_echo, 7), lambda c: None, "the test reader")
    return res["ppid"], isolate.zygote_pid(), os.getpid()


def test_a_forked_pool_worker_starts_its_own_zygote(tmp_path):
    """A process forked from a caller that has a zygote (a process pool's worker, as the loader and
    Dask use) must not talk to the caller's zygote over the inherited socket."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    isolate.run_isolated(f, functools.partial(_echo, 1), lambda c: None, "the test reader")
    mine = isolate.zygote_pid()
    with ProcessPoolExecutor(1, mp_context=mp.get_context("fork")) as pool:
        ppid, theirs, worker = pool.submit(_read_in_pool_worker, str(f)).result(timeout=60)
    assert ppid == theirs and theirs not in (None, mine)
    assert _wait_gone(theirs)  # the worker's zygote ended with the worker
    assert isolate.run_isolated(f, functools.partial(_echo, 2), lambda c: None, "the test reader")["ppid"] == mine


_AT_EXIT = """
import functools, os, signal, sys, time
from pathlib import Path
from profaudit.parsers import isolate
from tests.isolated_helpers import echo, sleep
f, spawn = Path(sys.argv[1]), sys.argv[3] == "spawned"
isolate.run_isolated(f, functools.partial(echo, 1), lambda c: None, "t", spawn=spawn)
print(isolate.zygote_pid(), flush=True)
if sys.argv[2] == "killed":  # the caller dies mid-read (SIGKILL: no atexit)
    isolate.run_isolated(f, sleep, lambda c: None, "t", spawn=spawn)
"""


@pytest.mark.parametrize("zygote", ["forked", "spawned"])
@pytest.mark.parametrize("how", ["exits", "killed"])
def test_nothing_is_left_running(tmp_path, how, zygote):
    import subprocess
    import sys

    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    repo = str(Path(__file__).parents[1])
    proc = subprocess.Popen([sys.executable, "-c", _AT_EXIT, str(f), how, zygote], stdout=subprocess.PIPE, text=True, cwd=repo)
    zygote = int(proc.stdout.readline())
    children = []
    if how == "killed":
        end = time.monotonic() + 20
        while not children and time.monotonic() < end:  # the sleeping child's pid
            with open(f"/proc/{zygote}/task/{zygote}/children") as fh:
                children = [int(c) for c in fh.read().split()]
            time.sleep(0.02)
        assert children
        proc.kill()
    assert proc.wait(timeout=60) == (0 if how == "exits" else -signal.SIGKILL)
    for pid in (zygote, *children):
        assert _wait_gone(pid), pid


def test_a_crash_is_one_error_and_the_next_read_works(tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    first = isolate.run_isolated(f, functools.partial(_echo, 1), lambda c: None, "the test reader")["pid"]
    with pytest.raises(InputError) as ei:
        isolate.run_isolated(f, _segfault, lambda c: None, "the test reader")
    assert "the test reader crashed on this file (SIGSEGV)" in str(ei.value)
    assert str(f) in str(ei.value)
    again = isolate.run_isolated(f, functools.partial(_echo, 2), lambda c: None, "the test reader")
    assert again["value"] == 2 and again["pid"] != first


def test_a_hang_is_stopped(tmp_path, monkeypatch):
    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    monkeypatch.setattr(isolate, "TIMEOUT_S", 0.5)
    t0 = time.monotonic()
    with pytest.raises(InputError, match="did not finish within 1 s"):
        isolate.run_isolated(f, _sleep, lambda c: None, "the test reader")
    assert time.monotonic() - t0 < 30


def test_a_memory_blow_up_is_refused(tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    with pytest.raises(InputError, match="ran out of memory"):
        isolate.run_isolated(f, _allocate, lambda c: None, "the test reader")


def test_deliberate_and_unforeseen_errors_cross_the_pipe(tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    with pytest.raises(InputError, match="deliberate message") as ei:
        isolate.run_isolated(f, functools.partial(_input_error, f), lambda c: None, "the test reader")
    assert not isinstance(ei.value, UnexpectedReadError)
    with pytest.raises(isolate.IsolatedReaderError, match="TypeError"):
        isolate.run_isolated(f, _type_error, lambda c: None, "the test reader")


NCU = corpus_files("ncu-rep", "*.ncu-rep")


@pytest.mark.corpus
@pytest.mark.skipif(not NCU, reason="corpus ncu-rep folder not present")
def test_ncu_reader_crash_through_the_cli(tmp_path, cli, monkeypatch):
    """The ncu_report call itself dies (as it does on some bit-flipped reports): exit 2, one line,
    and the same process reads a good report right after."""
    from profaudit.parsers import ncu_rep
    from tests import isolated_helpers

    good = min(NCU, key=lambda p: p.stat().st_size)
    # the zygote is a fresh interpreter: the stand-in reaches the child by name, as the reader does
    monkeypatch.setattr(ncu_rep, "read_actions", isolated_helpers.segfault)
    res = cli("kernels", good)
    assert_one_line_error(res, "the ncu_report reader crashed on this file (SIGSEGV)")
    monkeypatch.undo()
    res = cli("kernels", good, "--format", "csv")
    assert res.code == 0, res


def test_rust_panic_is_an_input_error(tmp_path, monkeypatch):
    """polars raises pyo3's PanicException (a BaseException) on some damaged Parquet footers."""
    import polars as pl

    from profaudit.parsers import neuron_parquet

    def panics(path, options):
        raise pl.exceptions.PanicException("index out of bounds: the len is 3 but the index is 7")

    d = tmp_path / "prof"
    d.mkdir()
    (d / "Instruction.parquet").write_bytes(b"PAR1")
    monkeypatch.setattr(neuron_parquet.PARSER, "read", panics)
    with pytest.raises(InputError) as ei:
        read_one(d)
    assert not isinstance(ei.value, UnexpectedReadError)
    assert "native decoder failed" in str(ei.value) and "index out of bounds" in str(ei.value)


def test_catch_all_is_distinguishable(tmp_path, monkeypatch):
    from profaudit.parsers import neuron_parquet

    def buggy(path, options):
        return {}["missing"]

    d = tmp_path / "prof"
    d.mkdir()
    (d / "Instruction.parquet").write_bytes(b"PAR1")
    monkeypatch.setattr(neuron_parquet.PARSER, "read", buggy)
    with pytest.raises(UnexpectedReadError, match="cannot read as neuron_parquet: KeyError"):
        read_one(d)


def test_keyboard_interrupt_is_not_swallowed(tmp_path, monkeypatch):
    from profaudit.parsers import neuron_parquet

    def interrupted(path, options):
        raise KeyboardInterrupt

    d = tmp_path / "prof"
    d.mkdir()
    (d / "Instruction.parquet").write_bytes(b"PAR1")
    monkeypatch.setattr(neuron_parquet.PARSER, "read", interrupted)
    with pytest.raises(KeyboardInterrupt):
        read_one(d)


REPRO = Path(__file__).parent / "fuzz_reproducers"


@pytest.mark.parametrize("name", ["neuron_instruction_panic_assert.parquet", "neuron_instruction_panic_offset.parquet"])
def test_damaged_parquet_that_panics_polars(tmp_path, cli, capfd, name):
    """Reproducers from fuzzing the test fixture's Instruction table (bytes changed in the data
    pages): polars panics inside its Parquet decoder. One line, and nothing from Rust's panic hook
    on the real stderr."""
    from tests.test_neuron import make_explorer_profile

    d = tmp_path / "prof"
    d.mkdir()
    make_explorer_profile(d)
    (d / "Instruction.parquet").write_bytes((REPRO / name).read_bytes())
    res = cli("kernels", d)
    assert_one_line_error(res, "Instruction.parquet: unreadable Parquet table")
    fd_out, fd_err = capfd.readouterr()
    assert "panicked" not in fd_err and "stack backtrace" not in fd_err, fd_err


def test_the_readers_own_logging_stays_off_the_terminal(tmp_path, capfd):
    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    capfd.readouterr()
    assert isolate.run_isolated(f, _noisy, lambda c: None, "the test reader") == "read"
    out, err = capfd.readouterr()
    assert "Can't parse message" not in err and "stray stdout" not in out


def _nvperf_maps():
    with open("/proc/self/maps") as fh:
        return sorted({line.split()[-1] for line in fh if "nvperf_host" in line})


def _maps_before_and_after_a_read(path, send):
    import ncu_report

    before = _nvperf_maps()
    ncu_report.load_report(str(path))[0][0]  # the first action is where the reader loads its library
    return before, _nvperf_maps()


@pytest.mark.corpus
@pytest.mark.skipif(not NCU or not os.path.exists("/proc/self/maps"), reason="needs the corpus ncu-rep folder and /proc")
def test_the_zygote_preloads_the_library_the_reader_uses():
    pytest.importorskip("ncu_report")
    from profaudit.parsers import ncu_rep

    lib = ncu_rep.nvperf_library()
    assert lib is not None
    good = min(NCU, key=lambda p: p.stat().st_size)
    before, after = isolate.run_isolated(good, functools.partial(_maps_before_and_after_a_read, good), lambda c: None, "t", prepare=ncu_rep.prepare_reader)
    # the child starts with the library loaded, and reading a report maps no second copy of it
    assert before == after == [str(lib)]


def _cwd(send):
    return os.getcwd()


def test_the_child_works_in_the_callers_current_folder(tmp_path, monkeypatch):
    """The zygote was forked earlier, in another folder: relative paths name the caller's."""
    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    isolate.run_isolated(f, _cwd, lambda c: None, "t")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert isolate.run_isolated(Path("../x.bin"), _cwd, lambda c: None, "t") == str(tmp_path / "sub")


def _load_in_worker(path):
    import profaudit
    from profaudit.parsers import ncu_rep

    ps = profaudit.load(path, parallel=False)
    return ps.kernels.height, isolate.zygote_pid(ncu_rep.prepare_reader), os.getpid()


@pytest.mark.slow
@pytest.mark.corpus
@pytest.mark.skipif(not NCU, reason="corpus ncu-rep folder not present")
def test_reports_read_inside_a_dask_worker_process():
    """A Dask worker (a separate process running tasks on threads): two reads at once share its one
    zygote, and nothing is left running once the cluster is closed."""
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("ncu_report")
    good = sorted(NCU, key=lambda p: p.stat().st_size)[:2]
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True, dashboard_address=":0") as c, distributed.Client(c) as client:
        got = client.gather(client.map(_load_in_worker, [str(p) for p in good], pure=False))
    want = [read_one(p)[0].kernels.height for p in good]
    assert [g[0] for g in got] == want
    assert len({g[1] for g in got}) == 1 and got[0][1] is not None and got[0][2] != os.getpid()
    assert _wait_gone(got[0][1]) and _wait_gone(got[0][2])


def test_the_zygote_keeps_none_of_the_callers_files_open(tmp_path):
    """A pipe the caller closes after the zygote was forked reaches its end of file at once (the
    zygote outlives the fork: a copy of the write end there would keep the reader waiting)."""
    import select

    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    r, w = os.pipe()
    try:
        isolate.run_isolated(f, functools.partial(_echo, 1), lambda c: None, "t")  # forks the zygote now
        os.close(w)
        w = None
        assert select.select([r], [], [], 10)[0] and os.read(r, 1) == b""
    finally:
        os.close(r)
        if w is not None:
            os.close(w)


def _read_while_forked(path, conn):
    conn.send(isolate.run_isolated(Path(path), functools.partial(_echo, 5), lambda c: None, "t")["value"])


def _sleep_briefly(marker, send):
    open(marker, "w").close()
    time.sleep(3)
    return "slept"


def test_a_process_forked_during_a_read_can_read(tmp_path):
    """Another thread forks (a process pool) while a read holds the lock: the forked process gets
    a lock of its own, not a copy that no thread will ever release."""
    import multiprocessing as mp
    import threading

    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    marker = tmp_path / "reading"
    t = threading.Thread(target=isolate.run_isolated, args=(f, functools.partial(_sleep_briefly, str(marker)), lambda c: None, "t"))
    t.start()
    end = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < end:  # the child runs: the thread holds the lock
        time.sleep(0.01)
    ctx = mp.get_context("fork")
    mine, theirs = ctx.Pipe()
    proc = ctx.Process(target=_read_while_forked, args=(str(f), theirs))
    proc.start()
    try:
        assert mine.poll(60) and mine.recv() == 5
    finally:
        proc.kill()
        proc.join()
        t.join()
