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

pytestmark = pytest.mark.skipif(not isolate.can_isolate(), reason="needs fork")


@pytest.fixture(autouse=True)
def fresh_worker():
    """Each test forks its own worker (so it sees this module and any monkeypatch)."""
    isolate._stop_worker()
    yield
    isolate._stop_worker()


def _segfault(send):
    os.kill(os.getpid(), signal.SIGSEGV)


def _echo(value, send):
    send(["chunk", value])
    return {"value": value, "pid": os.getpid()}


def _sleep(send):
    time.sleep(60)


def _allocate(send):
    return len(bytearray(1 << 46))  # 64 TiB: beyond any address-space cap


def _noisy(send):
    # what ncu_report's protobuf does on a damaged result: a log line straight to fd 2
    os.write(2, b"E0000 message_lite.cc:195] Can't parse message of type ProfileResult\n")
    os.write(1, b"stray stdout\n")
    return "read"


def _type_error(send):
    return 1 + "x"  # noqa - an unforeseen bug inside the reader


def _input_error(path, send):
    raise InputError(path, "the reader's own deliberate message")


def test_results_and_chunks_come_back(tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    chunks = []
    res = isolate.run_isolated(f, functools.partial(_echo, 41), chunks.append, "the test reader")
    assert res["value"] == 41 and chunks == [["chunk", 41]]
    assert res["pid"] != os.getpid()
    # each read gets a fresh worker (ncu_report keeps state across the reports of one process),
    # and the finished one is reaped, not left running
    res2 = isolate.run_isolated(f, functools.partial(_echo, 42), chunks.append, "the test reader")
    assert res2["pid"] != res["pid"] and res2["value"] == 42
    with pytest.raises(ChildProcessError):
        os.waitpid(res["pid"], os.WNOHANG)


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

    good = min(NCU, key=lambda p: p.stat().st_size)
    monkeypatch.setattr(ncu_rep, "_read_all_actions", lambda path, send: os.kill(os.getpid(), signal.SIGSEGV))
    res = cli("kernels", good)
    assert_one_line_error(res, "the ncu_report reader crashed on this file (SIGSEGV)")
    monkeypatch.undo()
    isolate._stop_worker()  # the next worker is forked without the patch
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
