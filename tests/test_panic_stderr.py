"""One fd-2 capture for Rust panics (profaudit/panic_stderr.py): a panic is one InputError line, its
hook's report stays off the terminal, everything else written meanwhile is kept, captures nest,
and threads neither capture nor wait for each other."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from profaudit import panic_stderr
from profaudit.errors import InputError
from profaudit.panic_stderr import panic_reports_off_stderr, panics_as_input_errors

REPORT = b"thread '<unnamed>' panicked at src/page.rs:9:5:\nindex out of bounds\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
PANIC_PARQUET = Path(__file__).parent / "fuzz_reproducers" / "neuron_instruction_panic_offset.parquet"


def _panic_exc(msg: str = "index out of bounds: the len is 3 but the index is 7"):
    pl = pytest.importorskip("polars")
    return pl.exceptions.PanicException(msg)


def test_a_panic_is_one_input_error_and_other_output_is_kept(capfd):
    exc = _panic_exc()
    capfd.readouterr()
    with pytest.raises(InputError) as ei:
        with panics_as_input_errors("s3://bucket/part-0.parquet", "unreadable Parquet part"):
            os.write(2, b"a warning from another source\n")
            os.write(2, REPORT)
            raise exc
    # the path is named as given (a store URL is no local path to normalise)
    assert str(ei.value) == "s3://bucket/part-0.parquet: unreadable Parquet part: damaged data, the decoder failed (index out of bounds: the len is 3 but the index is 7)"
    err = capfd.readouterr().err
    assert "panicked" not in err and "RUST_BACKTRACE" not in err
    assert "a warning from another source" in err  # not dropped with the panic report


def test_a_real_polars_panic_on_damaged_parquet(capfd):
    pl = pytest.importorskip("polars")
    capfd.readouterr()
    with pytest.raises(InputError, match="bad.parquet: unreadable Parquet table: damaged data, the decoder failed"):
        with panics_as_input_errors("bad.parquet", "unreadable Parquet table"):
            pl.read_parquet(PANIC_PARQUET)
    assert "panicked" not in capfd.readouterr().err


def test_other_exceptions_pass_unchanged():
    with pytest.raises(KeyboardInterrupt):
        with panics_as_input_errors("x.parquet", "t"):
            raise KeyboardInterrupt
    with pytest.raises(ValueError, match="not a panic"):
        with panics_as_input_errors("x.parquet", "t"):
            raise ValueError("not a panic")


def test_captures_nest_and_keep_the_order(capfd):
    capfd.readouterr()
    with panic_reports_off_stderr():
        os.write(2, b"one\n")
        with pytest.raises(InputError):
            with panics_as_input_errors("x.parquet", "t"):
                os.write(2, b"two\n")
                os.write(2, REPORT)
                raise _panic_exc()
        os.write(2, b"three\n")
    assert capfd.readouterr().err == "one\ntwo\nthree\n"


def test_threads_neither_capture_nor_wait_for_each_other(capfd):
    """Two threads decode at once: neither redirects fd 2 (that would hold back the other's and the
    main thread's output), and neither waits for the other (a lock around the capture did)."""
    both_inside = threading.Barrier(2, timeout=10)
    seen: list = []

    def decode():
        try:
            with panics_as_input_errors("x.parquet", "t"):
                seen.append(os.fstat(2).st_ino)
                both_inside.wait()
        except BaseException as exc:  # noqa: BLE001 - reported below
            seen.append(exc)

    before = os.fstat(2).st_ino
    threads = [threading.Thread(target=decode) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert seen == [before, before], seen  # fd 2 untouched, and the barrier was passed by both


def test_in_a_thread_a_panic_is_still_one_input_error():
    exc = _panic_exc()
    out: list = []

    def decode():
        try:
            with panics_as_input_errors("x.parquet", "t"):
                raise exc
        except InputError as e:
            out.append(str(e))

    t = threading.Thread(target=decode)
    t.start()
    t.join(10)
    assert out == ["x.parquet: t: damaged data, the decoder failed (index out of bounds: the len is 3 but the index is 7)"]


def test_no_temporary_folder_still_reads(monkeypatch, capfd):
    def no_tmp(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(panic_stderr.tempfile, "TemporaryFile", no_tmp)
    with panic_reports_off_stderr():
        os.write(2, b"shown at once\n")
    assert "shown at once" in capfd.readouterr().err
    with pytest.raises(InputError, match="damaged data"):
        with panics_as_input_errors("x.parquet", "t"):
            raise _panic_exc()
