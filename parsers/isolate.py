"""Run a native reader that can crash the interpreter in a forked worker process.

NVIDIA's `ncu_report` segfaults on some damaged reports whose framing is consistent (bit flips
inside a result, a count set to 2^31): in-process, that kills the CLI without a word (exit 139)
and a dashboard with it. Here the reader runs in a worker forked from this process (no re-import),
which streams its results back through a pipe as pickled messages; the parent sees a crash, an
abort, a memory blow-up or a hang as one `InputError`, and the next read forks a fresh worker.

Each read gets a fresh worker, which exits after it. A worker kept up between reads gave wrong
answers: `ncu_report` registers the units of a report's derived metrics process-wide, first report
wins, so after reading one report a second report's `derived__*` metrics came back with the
first report's units ('sector' for 'byte', 'inst' for 'thread'). A fresh fork of a process that
has loaded no report reads each file as ncu_report reads it alone. Reads are serialised (one lock),
so threads of a dashboard share the reader safely.

The worker must not touch polars: a forked child inherits polars' thread pool without its
threads, so work functions build plain Python lists and the parent builds the frames (chunks
arrive while the worker keeps reading, so the two overlap on a multi-core machine).

Where `fork` does not exist (Windows) the work runs in-process, as it did before.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import pickle
import select
import signal
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

from profaudit.errors import InputError

_LEN = struct.Struct("<Q")
# A damaged count can make a reader allocate without bound; the worker gets this much address
# space (at most a third of the machine's memory) beyond what it inherited before its
# allocations fail (the largest corpus report needs well under 1 GiB).
CHILD_EXTRA_BYTES = 8 << 30
# Reading the largest corpus report takes well under a second; a reader still busy after this
# long (plus a per-megabyte allowance) is looping on damaged data.
TIMEOUT_S = 120.0
TIMEOUT_S_PER_MB = 10.0


class IsolatedReaderError(Exception):
    """An unforeseen Python exception inside the child, re-raised in the parent (the loader's
    last-resort handler words it); carries the child's exception type name."""


def can_isolate() -> bool:
    return hasattr(os, "fork") and sys.platform != "win32"


def _send(fd: int, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_LEN.pack(len(data)) + data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _limit_memory() -> None:
    try:
        import resource

        with open("/proc/self/statm") as fh:
            vsz = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        cap = vsz + min(CHILD_EXTRA_BYTES, ram // 3)
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (OSError, ValueError, ImportError):  # no /proc (macOS): run without the cap
        pass


class _Worker:
    def __init__(self):
        req_r, self.req_w = os.pipe()
        self.resp_r, resp_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover - the worker's coverage is not collected
            os.close(self.req_w)
            os.close(self.resp_r)
            _serve(req_r, resp_w)
        os.close(req_r)
        os.close(resp_w)

    def stop(self, sig: int | None = None) -> int | None:
        """Close the pipes (the worker exits at end of input) or kill it; reap it; its status."""
        for fd in (self.req_w, self.resp_r):
            try:
                os.close(fd)
            except OSError:
                pass
        if sig is not None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass
        try:
            return os.waitpid(self.pid, 0)[1]
        except ChildProcessError:
            return None


def _serve(req_r: int, resp_w: int) -> None:
    """The worker's loop; never returns. Each request is a picklable `work(send)` callable."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
        try:
            import faulthandler

            faulthandler.disable()  # a crash here is the parent's one line, not a dump
        except ImportError:
            pass
        gc.enable()  # forked from inside a read that had switched it off
        # the reader's own logging (protobuf's "Can't parse message ... missing required fields",
        # absl's preamble) would add lines to the user's one-line error; the parent words everything
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.close(devnull)
        _limit_memory()
        while True:
            head = _read_exact(req_r, _LEN.size, None)
            if head is None:
                break
            body = _read_exact(req_r, _LEN.unpack(head)[0], None)
            if body is None:
                break
            work = pickle.loads(body)
            try:
                result = work(lambda chunk: _send(resp_w, ("chunk", chunk)))
                _send(resp_w, ("done", result))
            except InputError as exc:
                _send(resp_w, ("input_error", exc.path, exc.problem))
            except MemoryError:
                _send(resp_w, ("memory", None))
            except Exception as exc:  # noqa: BLE001 - everything must reach the parent as a message
                _send(resp_w, ("exc", type(exc).__name__, str(exc)))
    except BaseException:
        code = 70
    finally:
        os._exit(code)


def _read_exact(rfd: int, n: int, deadline: float | None) -> bytes | None:
    """`n` bytes from the pipe, None at end of file; TimeoutError past the deadline."""
    parts: list[bytes] = []
    while n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([rfd], [], [], left)[0]:
                raise TimeoutError
        b = os.read(rfd, min(n, 1 << 20))
        if not b:
            return None
        parts.append(b)
        n -= len(b)
    return b"".join(parts)


_lock = threading.Lock()
_worker: _Worker | None = None
_owner_pid: int | None = None


def _stop_worker() -> None:
    global _worker
    if _worker is not None and _owner_pid == os.getpid():
        _worker.stop()
    _worker = None


atexit.register(_stop_worker)


def worker_cpu_seconds() -> float:
    """CPU seconds the live worker has used so far (Linux; 0 elsewhere or without one): a
    benchmark adds this to its own, since a live child is not in RUSAGE_CHILDREN. Read from
    schedstat (nanoseconds) where the kernel has it, else from stat (clock ticks)."""
    w = _worker
    if w is None:
        return 0.0
    try:
        with open(f"/proc/{w.pid}/schedstat") as fh:
            return int(fh.read().split()[0]) / 1e9
    except (OSError, IndexError, ValueError):
        pass
    try:
        with open(f"/proc/{w.pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def run_isolated(path: Path, work: Callable[[Callable[[Any], None]], Any], on_chunk: Callable[[Any], None], what: str) -> Any:
    """`work(send)` in the worker; each `send(chunk)` reaches `on_chunk` here; returns work's result.

    `work` must be picklable (a module-level function, or a functools.partial of one). `what`
    names the reader in the error line ("the ncu_report reader").
    """
    global _worker, _owner_pid
    if not can_isolate():
        return work(on_chunk)
    path = Path(path)
    size_mb = path.stat().st_size / 1e6 if path.is_file() else 0.0
    limit = TIMEOUT_S + TIMEOUT_S_PER_MB * size_mb
    with _lock:
        # a fresh worker per read (see the module docstring: ncu_report keeps state across reports)
        _worker, _owner_pid = _Worker(), os.getpid()
        w = _worker
        deadline = time.monotonic() + limit
        outcome: tuple | None = None
        try:
            _send(w.req_w, work)
            while True:
                head = _read_exact(w.resp_r, _LEN.size, deadline)
                if head is None:
                    break
                body = _read_exact(w.resp_r, _LEN.unpack(head)[0], deadline)
                if body is None:
                    break
                msg = pickle.loads(body)
                if msg[0] == "chunk":
                    on_chunk(msg[1])
                else:
                    outcome = msg
                    break
        except TimeoutError:
            _worker = None
            w.stop(signal.SIGKILL)
            raise InputError(path, f"{what} did not finish within {limit:.0f} s (stopped): the file is damaged in a way that makes it loop") from None
        except BrokenPipeError:
            outcome = None
        except BaseException:
            _worker = None
            w.stop(signal.SIGKILL)
            raise
        if outcome is None:  # the worker died mid-read
            _worker = None
            status = w.stop(signal.SIGKILL)
            if status is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) != signal.SIGKILL:
                sig = os.WTERMSIG(status)
                try:
                    name = signal.Signals(sig).name
                except ValueError:
                    name = f"signal {sig}"
                raise InputError(path, f"{what} crashed on this file ({name}): it is damaged or not a file the reader supports")
            if status is not None and os.WIFSIGNALED(status):  # SIGKILL: the kernel's OOM killer
                raise InputError(path, f"{what} was killed while reading this file (out of memory?): it is damaged")
            raise InputError(path, f"{what} stopped without a result: the file is damaged")
        _worker = None
        w.stop()  # end of its input: the worker exits; reaped here
    kind = outcome[0]
    if kind == "done":
        return outcome[1]
    if kind == "input_error":
        raise InputError(outcome[1], outcome[2])
    if kind == "memory":
        raise InputError(path, f"{what} ran out of memory on this file (a damaged count asks for more than it holds)")
    raise IsolatedReaderError(f"{outcome[1]}: {outcome[2]}")


_stderr_lock = threading.Lock()


@contextlib.contextmanager
def rust_panics_as_input_errors(path: Path, what: str):
    """Run a native (Rust) decoder on untrusted bytes: its panic becomes one InputError line.

    pyo3's PanicException is a BaseException (it passes `except Exception`), and Rust's panic hook
    writes the panic message, and with RUST_BACKTRACE a backtrace, straight to file descriptor 2
    before Python sees anything. While the decoder runs, fd 2 goes to a temporary file: replayed
    afterwards when the call succeeds or fails normally, dropped when it panicked (the error line
    says what happened). Serialised by a lock, since fd 2 is shared by all threads.
    """
    with _stderr_lock:
        try:
            sys.stderr.flush()
        except (AttributeError, ValueError, OSError):
            pass
        try:
            saved = os.dup(2)
        except OSError:  # no fd 2 (a daemon): nothing to keep clean
            saved = None
        tmp = tempfile.TemporaryFile() if saved is not None else None
        if tmp is not None:
            os.dup2(tmp.fileno(), 2)
        panicked = False
        try:
            yield
        except BaseException as exc:
            if type(exc).__name__ != "PanicException":
                raise
            panicked = True
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else "panic"
            raise InputError(path, f"{what}: damaged data, the decoder failed ({msg[:160]})") from None
        finally:
            if saved is not None and tmp is not None:
                os.dup2(saved, 2)
                os.close(saved)
                if not panicked:
                    tmp.seek(0)
                    kept = tmp.read()
                    if kept:
                        os.write(2, kept)
                tmp.close()
