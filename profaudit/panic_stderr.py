"""Rust panic reports kept off the terminal while native code decodes untrusted data: the one
place that captures file descriptor 2 (the loader's boundary around every parser, and
`panics_as_input_errors` around a Parquet decode).

polars (like any Rust extension built with pyo3) reports a panic on damaged data twice: Rust's
panic hook writes "thread '...' panicked at ..." (with RUST_BACKTRACE, a backtrace too) straight to
file descriptor 2, and then Python gets a PanicException, which becomes one InputError line. So
that the user sees only that line, fd 2 goes to a temporary file while the code runs; afterwards
what was written there is passed on with the panic reports taken out. Everything else written
meanwhile is kept, in order: it appears when the block ends rather than while it runs. Captures
nest (an inner one passes its output on to the outer one's file).

Only on the main thread: fd 2 belongs to the whole process. A capture taken in a worker thread
would hold back the output of every other thread and of the main thread for as long as its decode
runs, and serialising the threads' captures with a lock (as a second helper once did) made parallel
decodes wait for each other and lost other threads' lines along with a panic report. In a thread a
panic is still one InputError line, and Rust's own report may show beside it.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import threading

# recent Rust adds the thread's id: "thread 'async-executor-0' (6244) panicked at crates/..."
_PANIC = re.compile(rb"^thread '[^']*'(?: \(\d+\))? panicked at ")
# the lines that close a panic report (without RUST_BACKTRACE, and with RUST_BACKTRACE=1); with
# RUST_BACKTRACE=full the backtrace runs to the end of the output, and so does the cut
_LAST = (b"note: run with `RUST_BACKTRACE", b"note: Some details are omitted")


def strip_panic_reports(data: bytes) -> bytes:
    """`data` without the reports Rust's panic hook wrote (first line to closing note)."""
    if b"panicked at " not in data:
        return data
    kept, inside = [], False
    for line in data.splitlines(keepends=True):
        if _PANIC.match(line):
            inside = True
        elif not inside:
            kept.append(line)
        elif line.startswith(_LAST):
            inside = False
    return b"".join(kept)


def _flush() -> None:
    try:
        sys.stderr.flush()
    except (AttributeError, ValueError, OSError):
        pass


def is_rust_panic(exc: BaseException) -> bool:
    """pyo3's PanicException (a BaseException: it passes every `except Exception`), which polars
    and any other Rust extension raise when their native code panics on damaged data."""
    return type(exc).__name__ == "PanicException" and type(exc).__module__ in ("pyo3_runtime", "polars.exceptions")


@contextlib.contextmanager
def panics_as_input_errors(path: str | os.PathLike, what: str):
    """Run a native (Rust) decoder on untrusted bytes: its panic is one InputError naming `path`,
    and its hook's report stays off the terminal."""
    from profaudit.errors import InputError, first_line

    with panic_reports_off_stderr():
        try:
            yield
        except BaseException as exc:
            if not is_rust_panic(exc):
                raise
            msg = first_line(exc, "panic")
            raise InputError(path, f"{what}: damaged data, the decoder failed ({msg[:160]})") from None


@contextlib.contextmanager
def panic_reports_off_stderr():
    """Run the body with fd 2 captured; pass on what it wrote, less any Rust panic report."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _flush()
    try:
        tmp = tempfile.TemporaryFile()
    except OSError:  # no writable temporary folder: better a panic report shown than no read
        yield
        return
    try:
        saved = os.dup(2)
    except OSError:  # no fd 2 (a daemon): nothing reaches a terminal anyway
        tmp.close()
        yield
        return
    with tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            _flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            rest = memoryview(strip_panic_reports(tmp.read()))
            try:
                while rest:
                    rest = rest[os.write(2, rest):]
            except OSError:  # a closed terminal or pipe: the output had nowhere to go
                pass
