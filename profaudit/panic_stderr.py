"""Rust panic reports kept off the terminal while a parser reads (used at the loader's boundary).

polars (like any Rust extension built with pyo3) reports a panic on damaged data twice: Rust's
panic hook writes "thread '...' panicked at ..." (with RUST_BACKTRACE, a backtrace too) straight to
file descriptor 2, and then Python gets a PanicException, which the loader turns into one
InputError line. So that the user sees only that line, whatever parser the panic came from, fd 2
goes to a temporary file while a parser reads; afterwards what was written there is passed on
with the panic reports taken out. A parser's own warnings are kept, in order: they appear when the
read ends rather than while it runs.

Only on the main thread: fd 2 belongs to the whole process, so reads running in threads (a thread
executor) would hold back each other's output. There a panic is still one InputError line, and
Rust's own report may show beside it.
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


@contextlib.contextmanager
def panic_reports_off_stderr():
    """Run the body with fd 2 captured; pass on what it wrote, less any Rust panic report."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _flush()
    try:
        saved = os.dup(2)
    except OSError:  # no fd 2 (a daemon): nothing reaches a terminal anyway
        yield
        return
    with tempfile.TemporaryFile() as tmp:
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
