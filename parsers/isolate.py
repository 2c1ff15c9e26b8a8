"""Run a native reader that can crash the interpreter in a child process, one child per read.

NVIDIA's `ncu_report` segfaults on some damaged reports whose framing is consistent (bit flips
inside a result, a count set to 2^31): in-process, that kills the CLI without a word (exit 139)
and a dashboard with it. Here the reader runs in a child process that streams its results back
through a pipe as pickled messages; the caller sees a crash, an abort, a memory blow-up or a hang
as one `InputError`, and the next read works.

Each read gets a fresh child, which exits after it. A child kept up between reads gave wrong
answers: `ncu_report` registers the units of a report's derived metrics process-wide, first report
wins, so after reading one report a second report's `derived__*` metrics came back with the
first report's units ('sector' for 'byte', 'inst' for 'thread').

The children come from a zygote: a process started once per reader, which runs the reader's
process-wide set-up (`prepare`; for ncu_report, loading its 37 MB metrics library, ~70 ms of CPU
that a fresh process otherwise pays inside its first report) without reading any report, then
forks one child per read. A child therefore starts with the library loaded and no report's state,
and dies after its one report. A read returns as soon as the child's answer is whole: its exit (the
teardown of the page tables it inherited) runs meanwhile, and the message that says how it ended
is taken at the next read (or by `settle`), so no CPU goes uncounted. The memory the set-up filled
is moved onto huge pages while the zygote is idle, so that forking and exiting cost less
(_HugePageMover). A reader may also name a warm-up (`warm`): a call that, from the second read on,
the zygote runs once on a file an earlier child read to the end, to build process-wide caches that
every report needs and that hold no report's data (for ncu_report: reading the first kernel's metric
values, never their units; see ncu_rep.warm_reader for what was measured to be safe). The zygote is single-threaded whatever the caller is (the dashboard's threads, a
Dask worker's), keeps none of the caller's file descriptors, reaps its children and
reports how each ended (signal, CPU seconds). It ends when the caller closes its socket (atexit) or
dies (end of file on the socket), and its child dies with it (PR_SET_PDEATHSIG); a zygote found dead
is replaced and the read retried once; a process forked from the caller starts its own. Reads
are serialised (one lock), so threads of a dashboard share the reader safely.

A zygote is either a copy of the caller (forked from it) or, with `spawn`, a fresh interpreter
(`python -I -S`) that imports only the modules the reader's functions live in. A forked zygote
carries the caller's whole address space into every fork and every child's exit: with polars and the
package loaded, ~12 ms of page-table work per read, against a few ms for the spawned one, so the
`.ncu-rep` reader spawns (its child side is parsers/ncu_child.py, which imports nothing heavy). A
forked zygote also hands on whatever state the caller's own ncu_report holds (profaudit never reads
a report in its own process); a spawned one starts clean. Where no interpreter can be started, the
reader falls back to a forked zygote.

The children must not touch polars (a process forked from the caller inherits polars' thread pool
without its threads, and a spawned zygote has no polars at all): work functions build plain Python
lists and the caller builds the frames (chunks arrive while the child keeps reading, so the two
overlap on a multi-core machine).

Where `fork` does not exist (Windows) the work runs in-process, as it did before.
"""

from __future__ import annotations

import _thread
import atexit
import contextlib
import gc
import os
import pickle
import select
import signal
import socket
import struct
import sys
import time
from pathlib import Path
from typing import Any, Callable

from profaudit.errors import InputError, first_line

_LEN = struct.Struct("<Q")
# A damaged count can make a reader allocate without bound; the child gets this much address
# space (at most a third of the machine's memory) beyond what it inherited before its
# allocations fail (the largest corpus report needs well under 1 GiB).
CHILD_EXTRA_BYTES = 8 << 30
# Reading the largest corpus report takes well under a second; a reader still busy after this
# long (plus a per-megabyte allowance) is looping on damaged data.
TIMEOUT_S = 120.0
TIMEOUT_S_PER_MB = 10.0
# How long the zygote may take to say how a finished or killed child ended (it reaps at once;
# only a zygote that is itself stuck takes longer, and is then replaced).
_STATUS_GRACE_S = 30.0


class IsolatedReaderError(Exception):
    """An unforeseen Python exception inside the child, re-raised in the parent (the loader's
    last-resort handler words it); carries the child's exception type name."""


class _ZygoteGone(Exception):
    """The zygote died or stopped answering (not the file's fault): the read is retried once."""


def can_isolate() -> bool:
    return hasattr(os, "fork") and sys.platform != "win32"


def _framed(obj: Any) -> tuple[bytes, bytes]:
    """A message as it goes down a pipe or socket: its length (_LEN), then its pickle."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _LEN.pack(len(data)), data


def _pack(obj: Any) -> bytes:
    return b"".join(_framed(obj))


def _send(fd: int, obj: Any) -> None:
    """One message (what _pack makes) down a pipe. The length and the pickle go out together
    (writev), not joined first: joining copied the pickle into a fresh buffer, ~50 pages for
    bobschreiner's 207 KB answer, each a page fault in the child just before it exits."""
    head, data = _framed(obj)
    n = os.writev(fd, (head, data))
    if n < len(head):  # a signal cut the write inside the 8-byte head (never seen): finish it
        view = memoryview(head)[n:]
        while view:
            view = view[os.write(fd, view):]
        n = len(head)
    view = memoryview(data)[n - len(head):]
    while view:
        view = view[os.write(fd, view):]


def _recv(fd: int, deadline: float | None) -> Any:
    """One message; None at end of file; TimeoutError past the deadline."""
    head = _read_exact(fd, _LEN.size, deadline)
    if head is None:
        return None
    body = _read_exact(fd, _LEN.unpack(head)[0], deadline)
    return None if body is None else pickle.loads(body)


def _read_exact(rfd: int, n: int, deadline: float | None) -> bytes | bytearray | None:
    """`n` bytes from the pipe or socket, None at end of file; TimeoutError past the deadline.

    Read in place into one buffer of the message's size (readv): a pipe hands over at most 64 KiB
    per read, and joining the pieces afterwards copied a large answer once more."""
    if n <= 1 << 16:  # a head or a small message: one read nearly always
        parts: list[bytes] = []
        while n:
            b = _read_some(rfd, n, deadline)
            if not b:
                return None
            parts.append(b)
            n -= len(b)
        return parts[0] if len(parts) == 1 else b"".join(parts)
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        if deadline is not None:
            _wait_readable(rfd, deadline)
        try:
            k = os.readv(rfd, (view[got:],))
        except ConnectionResetError:
            k = 0
        if not k:
            return None
        got += k
    return buf


def _wait_readable(rfd: int, deadline: float) -> None:
    left = deadline - time.monotonic()
    if left <= 0 or not select.select([rfd], [], [], left)[0]:
        raise TimeoutError


def _read_some(rfd: int, n: int, deadline: float | None) -> bytes:
    if deadline is not None:
        _wait_readable(rfd, deadline)
    try:
        return os.read(rfd, n)
    except ConnectionResetError:
        return b""


class _ChildMemoryCap:
    """The children's address-space cap (CHILD_EXTRA_BYTES beyond what a child inherits), set by
    the zygote on itself right before each fork and taken back right after: the child starts with
    it and runs no code for it. Set in the child, the same few lines (opening /proc/self/statm
    through Python's file objects, sysconf, getrlimit) made each child copy ~50 pages it would not
    otherwise write (~0.5 ms of CPU per read, measured in the reader's zygote). The zygote itself
    allocates nothing between the two calls but the fork."""

    def __init__(self):
        self.extra: int | None = None
        self.active = False
        try:
            import resource

            self.page = os.sysconf("SC_PAGE_SIZE")
            self.extra = min(CHILD_EXTRA_BYTES, self.page * os.sysconf("SC_PHYS_PAGES") // 3)
            self.soft, self.hard = resource.getrlimit(resource.RLIMIT_AS)
            self.resource = resource
        except (OSError, ValueError, ImportError):  # no sysconf or resource: children run without the cap
            self.extra = None

    def lower(self) -> None:
        """Set this process's cap to what the next child may map: its size now plus the extra."""
        if self.extra is None:
            return
        try:
            fd = os.open("/proc/self/statm", os.O_RDONLY)
            try:
                vsz = int(os.read(fd, 128).split()[0]) * self.page
            finally:
                os.close(fd)
            cap = vsz + self.extra
            if self.hard != self.resource.RLIM_INFINITY:
                cap = min(cap, self.hard)
            self.resource.setrlimit(self.resource.RLIMIT_AS, (cap, self.hard))
            self.active = True
        except (OSError, ValueError, IndexError):  # no /proc (macOS): run without the cap
            pass

    def restore(self) -> None:
        """This process's own limit again (called in the zygote once the child is forked)."""
        if self.active:
            self.active = False
            self.resource.setrlimit(self.resource.RLIMIT_AS, (self.soft, self.hard))


def _pdeathsig_setter() -> Callable[[], Any] | None:
    """Linux: a call that makes the calling process get SIGKILL when its parent dies (a child whose
    zygote was killed must not read on, orphaned). Only the zygote's children use it: the zygote is
    single-threaded, so the signal is not sent early by another thread's exit, which is what makes
    PDEATHSIG unsafe under a threaded caller."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    # the signal's number taken here, once, not in each child (Signals is an enum: int() of a
    # member goes through its class machinery, pages the child would otherwise copy)
    sig = int(signal.SIGKILL)
    return lambda: prctl(1, sig, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG


def _close_inherited(keep: int) -> None:
    """Close every file descriptor the zygote inherited from the caller except `keep` (its socket).

    The zygote outlives the moment it was forked: holding copies of the caller's pipes, sockets and
    files would keep them open after the caller closed its own -- a subprocess whose stdin the
    caller closes would never see its end of file, a listening socket would stay bound."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        if fd != devnull:
            os.dup2(devnull, fd)
    if devnull > 2:
        os.close(devnull)
    os.closerange(3, keep)
    try:
        top = os.sysconf("SC_OPEN_MAX")
    except (ValueError, OSError):
        top = -1
    os.closerange(keep + 1, top if top > keep else 1 << 20)


def _quiet() -> None:
    """Make the zygote (and so every child) silent and the caller's to interrupt."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle
    try:
        import faulthandler

        faulthandler.disable()  # a crash in a child is the caller's one line, not a dump
    except ImportError:
        pass
    gc.enable()  # forked from inside a read that had switched it off


def _child(zygote: int, pdeathsig, work_bytes: bytes, cwd: str | None, resp_w: int) -> None:
    """One read, in a fresh child of the zygote; never returns."""
    # No cyclic collection in a process that ends after one read: the reader's own read runs with
    # it off and switched it back on at its end, so the next allocation (pickling the answer)
    # collected every object the read had made -- a pass over all of them, each page they lie on
    # written, right before the exit frees them all at once.
    gc.disable()
    code = 0
    try:
        if pdeathsig is not None:
            pdeathsig()
            if os.getppid() != zygote:  # the zygote died before the prctl took effect
                os._exit(70)
        if cwd is not None:  # the caller's folder now, which relative paths name (not the zygote's)
            try:  # (not contextlib.suppress: an object and two calls more, in every child)
                os.chdir(cwd)
            except OSError:
                pass
        try:
            work = pickle.loads(work_bytes)
            result = work(lambda chunk: _send(resp_w, ("chunk", chunk)))
            _send(resp_w, ("done", result))
        except InputError as exc:
            _send(resp_w, ("input_error", exc.path, exc.problem))
        except MemoryError:
            _send(resp_w, ("memory", None))
        except Exception as exc:  # noqa: BLE001 - everything must reach the caller as a message
            _send(resp_w, ("exc", type(exc).__name__, str(exc)))
    except BaseException:
        code = 70
    finally:
        os._exit(code)


def _await_child(sock: socket.socket, pid: int) -> tuple[int, float] | None:
    """Wait for the running child, killing it when the caller asks; (status, CPU s), or None
    when the caller has gone (the child is then killed and reaped)."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd (macOS, Linux < 5.3): poll
        pidfd = None
    gone = False
    try:
        while True:
            fds = [sock.fileno()] if pidfd is None else [sock.fileno(), pidfd]
            ready = select.select(fds, [], [], None if pidfd is not None else 0.005)[0]
            if sock.fileno() in ready:
                msg = _recv(sock.fileno(), None)
                if msg is None:
                    gone = True
                if msg is None or msg[0] == "kill":
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            wpid, status, ru = os.wait4(pid, 0 if gone else os.WNOHANG)
            if wpid:
                return None if gone else (status, ru.ru_utime + ru.ru_stime)
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _zygote_main(sock: socket.socket, prepare: Callable[[], None] | None) -> None:
    """The zygote's loop; never returns. A request is ("read", pickled work, the caller's current
    folder) with the write end of the caller's response pipe attached; it forks one child per
    request, tells the caller its pid, and how it ended once reaped."""
    code = 0
    try:
        # stdin, stdout and stderr go to /dev/null with the rest: the reader's own logging
        # (protobuf's "Can't parse message ... missing required fields", absl's preamble) would add
        # lines to the user's one-line error, and the caller words everything
        _close_inherited(sock.fileno())
        _quiet()
        ranges = None
        if prepare is not None:
            try:
                ranges = prepare()
            except Exception:  # noqa: BLE001 - without it each child pays the set-up itself
                pass
        mover = _HugePageMover(ranges)
        warmed = _WarmUp()
        cap = _ChildMemoryCap()
        me = os.getpid()
        pdeathsig = _pdeathsig_setter()
        fd = sock.fileno()
        while True:
            mover.run_while_idle(sock)
            try:
                head, fds, _flags, _addr = socket.recv_fds(sock, _LEN.size, 1)
            except ConnectionResetError:
                break
            if not head:
                break
            rest = _read_exact(fd, _LEN.size - len(head), None) if len(head) < _LEN.size else b""
            body = _read_exact(fd, _LEN.unpack(head + rest)[0], None) if rest is not None else None
            if body is None:
                break
            msg = pickle.loads(body)
            if msg[0] == "warm":
                warmed.run(msg[1])
                continue
            if msg[0] != "read" or not fds:  # a kill that crossed its child's exit
                for f in fds:
                    os.close(f)
                continue
            c0 = time.process_time()
            cap.lower()
            try:
                pid = os.fork()
                if pid == 0:
                    sock.close()  # the caller's end-of-file must not wait for this child
                    _child(me, pdeathsig, msg[1], msg[2], fds[0])  # never returns
            finally:
                cap.restore()
            mover.paid_fork(time.process_time() - c0)
            os.close(fds[0])
            sock.sendall(_pack(("started", pid)))
            ended = _await_child(sock, pid)
            if ended is None:
                break
            sock.sendall(_pack(("exited", *ended, mover.moved, mover.spent_s, warmed.cpu_s, len(mover.pieces))))
    except BaseException:
        code = 70
    finally:
        os._exit(code)


def _single_threaded() -> bool:
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:  # no /proc: no way to be sure
        return False


class _WarmUp:
    """Runs the reader's warm-up (run_isolated's `warm`) in the zygote, once, and keeps its CPU.

    It runs in the zygote itself, so it must not crash it: the caller only sends a warm-up built
    for a file that a child has already read to the end (the same bytes: the warm-up checks), and
    a zygote that dies anyway is replaced with warm-ups switched off for that reader (run_isolated).
    Its Python errors are ignored: a zygote that is not warm only costs more per read."""

    def __init__(self):
        self.cpu_s = 0.0

    def run(self, warm_bytes: bytes) -> None:
        c0 = time.process_time()
        try:
            pickle.loads(warm_bytes)()
        except Exception:  # noqa: BLE001 - a failed warm-up leaves the zygote cold, not broken
            pass
        self.cpu_s += time.process_time() - c0


class _HugePageMover:
    """Moves the memory the reader's set-up filled (the ranges `prepare` returned) onto huge pages
    while the zygote is idle, paying for it as forking does (parsers/hugepages.py says why).

    Every fork copies, and every child's exit tears down, one page-table entry per 4 KiB of that
    memory (~5 ms each way for ncu_report's 110 MB); on 2 MiB pages both nearly vanish. Moving it
    costs CPU once (a 2 MiB page to fault in and fill per piece: 0.3 ms on a bare machine, ~6 ms
    in a VM whose memory the host backs lazily), which a caller that reads one report never earns
    back. So the mover spends at most twice what forking has cost so far (fork's own CPU, and as
    much again for the exit), the ski-rental rule: a one-read caller pays at most that much
    extra, a caller that reads many gets every piece moved after a few reads (tens in such a VM),
    and the total never exceeds twice the better of moving at once or never. One piece at a
    time, between requests: a read that arrives waits for at most one piece."""

    def __init__(self, ranges):
        self.pieces: list[int] = []
        self.moved = 0
        self.spent_s = 0.0
        self.budget_s = 0.0
        self._libc = None
        if not ranges or not sys.platform.startswith("linux"):
            return
        try:
            from profaudit.parsers import hugepages

            if hugepages.available():
                for lo, hi in ranges:
                    self.pieces.extend(hugepages.pieces(int(lo), int(hi)))
                self._libc = hugepages.libc() if self.pieces else None
                self._move = hugepages.move_piece
        except (ImportError, OSError, TypeError, ValueError):  # a layout it does not know: no move
            self.pieces = []

    def paid_fork(self, cpu_s: float) -> None:
        if self.pieces:
            self.budget_s += 2 * cpu_s

    def run_while_idle(self, sock: socket.socket) -> None:
        while self.pieces and self.spent_s < self.budget_s:
            if select.select([sock], [], [], 0)[0]:
                return  # a request (or the caller's end): it comes first
            if not _single_threaded():
                self.pieces = []  # a thread could write to a piece between its copy and its move
                return
            c0 = time.process_time()
            if self._move(self._libc, self.pieces.pop(0)):
                self.moved += 1
            self.spent_s += time.process_time() - c0


# What a spawned zygote runs (`python -I -S -c _BOOT FD`): it takes the caller's sys.path and the
# folders of the `profaudit` packages, registers those packages as empty shells (their __init__
# would import polars and the whole package; a submodule named under them imports only itself and
# what it names), says it is up, and enters the same loop as a forked zygote. -I: no PYTHONPATH,
# user site or current folder; -S: no site-packages .pth files run (editable installs' import
# hooks among them): the paths come from the caller, as they are there.
_BOOT = """
import os, pickle, socket, struct, sys, types
from importlib.machinery import ModuleSpec
sock = socket.socket(fileno=int(sys.argv[1]))
def take(n):
    got = b""
    while len(got) < n:
        part = sock.recv(n - len(got))
        if not part:
            os._exit(0)
        got += part
    return got
setup = pickle.loads(take(struct.unpack("<Q", take(8))[0]))
sys.path[:] = setup["path"]
for name, path in setup["packages"]:
    mod = types.ModuleType(name)
    mod.__path__ = list(path)
    mod.__spec__ = ModuleSpec(name, None, is_package=True)
    mod.__spec__.submodule_search_locations = mod.__path__
    sys.modules[name] = mod
    parent, _, leaf = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], leaf, mod)
from profaudit.parsers import isolate
prepare = pickle.loads(setup["prepare"])
sock.sendall(isolate._pack(("ready", os.getpid())))
isolate._zygote_main(sock, prepare)
"""
# A spawned zygote that has not said it is up within this long is given up (and a forked one used).
_BOOT_TIMEOUT_S = 60.0


class _SpawnFailed(Exception):
    """A fresh interpreter could not be started as a zygote (no executable, a broken environment)."""


def _spawn_setup(prepare: Callable[[], Any] | None) -> bytes:
    import profaudit
    import profaudit.parsers

    try:
        cwd = os.getcwd()
    except OSError:
        cwd = None
    path = [cwd if p == "" and cwd else p for p in sys.path if p != "" or cwd]
    packages = [("profaudit", list(profaudit.__path__)), ("profaudit.parsers", list(profaudit.parsers.__path__))]
    return _pack({"path": path, "packages": packages, "prepare": pickle.dumps(prepare, protocol=pickle.HIGHEST_PROTOCOL)})


class _Zygote:
    def __init__(self, prepare: Callable[[], None] | None, spawn: bool = False):
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.spawned = spawn
        if spawn:
            try:
                self.pid = self._spawn(theirs, prepare)
            finally:
                theirs.close()
        else:
            sys.stdout.flush()
            sys.stderr.flush()
            self.pid = os.fork()
            if self.pid == 0:  # pragma: no cover - the zygote's coverage is not collected
                self.sock.close()
                _zygote_main(theirs, prepare)
            theirs.close()
        self.owner = os.getpid()
        self.children_cpu_s = 0.0  # CPU of the children it reaped (not in our RUSAGE_CHILDREN)
        self.pieces_moved = 0  # _HugePageMover's progress as of the last read, and its CPU
        self.move_cpu_s = 0.0
        self.pieces_left: int | None = None  # pieces the mover has not tried yet (None: no read has ended)
        self.exit_pending = False  # the last child's "exited" message is still to be taken
        self.warm_sent = False  # a warm-up was sent to it (_send_warm_up)
        self.warm_cpu_s = 0.0  # its CPU, as of the last read

    def _spawn(self, theirs: socket.socket, prepare) -> int:
        """Start a fresh interpreter as the zygote (its own process group: a Ctrl-C at the terminal
        is the caller's to handle) and wait until it says it is up; _SpawnFailed if it does not."""
        if not sys.executable or not hasattr(os, "posix_spawn"):
            self.sock.close()
            raise _SpawnFailed
        fd = 3
        actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDWR, 0), (os.POSIX_SPAWN_DUP2, 0, 1), (os.POSIX_SPAWN_DUP2, 0, 2)]
        # dup2 onto fd 3 clears close-on-exec there only; the copy made first keeps the source
        # clear of 0-3, which the actions before overwrite
        import fcntl

        src = fcntl.fcntl(theirs.fileno(), fcntl.F_DUPFD_CLOEXEC, 10)
        try:
            setup = _spawn_setup(prepare)
            pid = os.posix_spawn(sys.executable, [sys.executable, "-I", "-S", "-c", _BOOT, str(fd)], dict(os.environ), file_actions=[*actions, (os.POSIX_SPAWN_DUP2, src, fd)], setpgroup=0, setsigmask=())
        except (OSError, pickle.PicklingError, AttributeError, TypeError):
            self.sock.close()
            raise _SpawnFailed from None
        finally:
            os.close(src)
        try:
            self.sock.sendall(setup)
            msg = _recv(self.sock.fileno(), time.monotonic() + _BOOT_TIMEOUT_S)
        except (OSError, TimeoutError):
            msg = None
        if not (isinstance(msg, tuple) and msg[:1] == ("ready",)):
            self.sock.close()
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            raise _SpawnFailed
        return pid

    def took_exit(self, ended: tuple) -> None:
        """("exited", status, CPU s of the child, pieces moved, CPU s of the move, CPU s of the
        warm-up, pieces still to move)."""
        self.children_cpu_s += ended[2]
        self.pieces_moved, self.move_cpu_s, self.warm_cpu_s, self.pieces_left = ended[3], ended[4], ended[5], ended[6]

    def warm_up(self, warm_bytes: bytes) -> None:
        self.warm_sent = True
        try:
            self.sock.sendall(_pack(("warm", warm_bytes)))
        except OSError:
            raise _ZygoteGone from None

    def request(self, work_bytes: bytes, resp_w: int) -> None:
        try:
            cwd: str | None = os.getcwd()
        except OSError:  # the caller's folder was removed: absolute paths still work
            cwd = None
        data = _pack(("read", work_bytes, cwd))
        try:
            sent = socket.send_fds(self.sock, [data], [resp_w])
            self.sock.sendall(data[sent:])
        except OSError:  # EPIPE / ECONNRESET: it died since the last read
            raise _ZygoteGone from None

    def recv(self, deadline: float) -> Any:
        try:
            msg = _recv(self.sock.fileno(), deadline)
        except TimeoutError:
            raise _ZygoteGone from None
        if msg is None:
            raise _ZygoteGone
        return msg

    def kill_child(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.sendall(_pack(("kill",)))

    def stop(self, sig: int | None = None) -> None:
        """Close the socket (the zygote exits at end of input) or kill it; reap it."""
        with contextlib.suppress(OSError):
            self.sock.close()
        if sig is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


# _thread's lock (what threading.Lock is): this module must not import `threading`. The spawned
# zygote imports this module, and `threading` registers an after-fork handler (_after_fork: new
# locks, a walk of every thread object) that then ran in every child it forked: measured in a
# zygote holding ncu_report, a child that only exits took ~100 page faults more (2.1 against
# 1.2 ms of CPU) and the fork itself ~0.3 ms more
_lock = _thread.allocate_lock()
_zygotes: dict[Any, _Zygote] = {}
# Per `prepare`: the pickled warm-up of the first read that ended well (what a later zygote warms
# with), and the readers whose warm-up is off because a zygote died after being sent one.
_warm_ups: dict[Any, bytes] = {}
_warm_off: set = set()
# the readers whose spawned zygote would not start: they use a forked one from then on
_spawn_failed: set = set()


def _stop_worker() -> None:
    """Stop every zygote this process started (atexit; tests that need one forked afresh)."""
    for key, z in list(_zygotes.items()):
        if z.owner == os.getpid():
            z.stop()
        _zygotes.pop(key, None)
    _warm_ups.clear()
    _warm_off.clear()
    _spawn_failed.clear()


def _forget_inherited() -> None:
    """In a process forked from the caller (a process pool's worker, the zygote itself): the
    caller's zygotes are not ours; close our copies of their sockets so that they still end when
    the caller does, and start our own if we read. The lock is new too: another thread of the
    caller may have held it at the fork, and no thread is left here to release it."""
    global _lock
    _lock = _thread.allocate_lock()
    for z in _zygotes.values():
        with contextlib.suppress(OSError):
            z.sock.close()
    _zygotes.clear()
    _warm_ups.clear()
    _warm_off.clear()


atexit.register(_stop_worker)
_fork_handler_on = False


def _arm_fork_handler() -> None:
    """Register _forget_inherited for the processes this one forks, once, on its first read.

    Not at import: the spawned zygote imports this module and never reads through it, and a
    handler registered there would run in each of its children (its after-fork work touches pages
    that every child then copies). Armed before the lock is taken, so a fork by another thread
    while a read holds the lock always runs it."""
    global _fork_handler_on
    if not _fork_handler_on and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_forget_inherited)
        _fork_handler_on = True


def _zygote_for(prepare: Callable[[], None] | None, spawn: bool = False) -> _Zygote:
    z = _zygotes.get(prepare)
    if z is not None and z.owner == os.getpid():
        try:
            if os.waitpid(z.pid, os.WNOHANG)[0] == 0:
                return z
        except ChildProcessError:
            pass
        z.stop()  # it died (killed, out of memory): a fresh one replaces it
    z = None
    if spawn and prepare not in _spawn_failed:
        try:
            z = _Zygote(prepare, spawn=True)
        except _SpawnFailed:
            # no fresh interpreter here (embedded Python, a broken environment): a zygote forked
            # from this process reads as well, only each fork and exit costs more
            _spawn_failed.add(prepare)
    if z is None:
        z = _Zygote(prepare)
    _zygotes[prepare] = z
    return z


def _forget(z: _Zygote) -> None:
    """Kill and reap a zygote that stopped answering; the next read forks a fresh one."""
    for key in [k for k, v in _zygotes.items() if v is z]:
        del _zygotes[key]
        if z.warm_sent:  # stuck after a warm-up: it may be the warm-up's doing
            _warm_off.add(key)
    z.stop(signal.SIGKILL)


def zygote_pid(prepare: Callable[[], None] | None = None) -> int | None:
    """The pid of the live zygote for `prepare` (None when there is none)."""
    z = _zygotes.get(prepare)
    return z.pid if z is not None and z.owner == os.getpid() else None


def zygote_stats(prepare: Callable[[], Any] | None = None) -> dict[str, Any] | None:
    """How far the live zygote for `prepare` has moved its set-up's memory onto huge pages, as of
    the last read's end (pieces of 2 MiB moved, pieces left to try, CPU seconds spent on it), whether
    it was sent a warm-up and that warm-up's CPU seconds; None when there is no zygote."""
    settle()
    z = _zygotes.get(prepare)
    if z is None or z.owner != os.getpid():
        return None
    return {
        "pid": z.pid, "pieces_moved": z.pieces_moved, "pieces_left": z.pieces_left, "move_cpu_s": z.move_cpu_s,
        "warmed": z.warm_sent, "warm_cpu_s": z.warm_cpu_s,
    }


def worker_cpu_seconds() -> float:
    """CPU seconds of the live zygotes and of the children they have reaped (Linux; 0 elsewhere):
    a benchmark adds this to its own, since neither is in its RUSAGE_CHILDREN until a zygote is
    reaped. The zygote's own time is read from schedstat (nanoseconds) where the kernel has it,
    else from stat (clock ticks)."""
    settle()
    total = 0.0
    for z in list(_zygotes.values()):
        if z.owner != os.getpid():
            continue
        total += z.children_cpu_s
        try:
            with open(f"/proc/{z.pid}/schedstat") as fh:
                total += int(fh.read().split()[0]) / 1e9
                continue
        except (OSError, IndexError, ValueError):
            pass
        try:
            with open(f"/proc/{z.pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
    return total


def run_isolated(
    path: Path,
    work: Callable[[Callable[[Any], None]], Any],
    on_chunk: Callable[[Any], None],
    what: str,
    prepare: Callable[[], None] | None = None,
    warm: Callable[[], None] | None = None,
    spawn: bool = False,
) -> Any:
    """`work(send)` in a fresh child; each `send(chunk)` reaches `on_chunk` here; returns work's result.

    `work` must be picklable (a module-level function, or a functools.partial of one). `what`
    names the reader in the error line ("the ncu_report reader"). `prepare` (a module-level
    function) is the reader's process-wide set-up, run once in the zygote that forks the children;
    one zygote serves each distinct `prepare`. It may return the (start, end) address ranges of
    the memory it filled, which the zygote then moves onto huge pages as forking pays for it
    (_HugePageMover). `warm` (picklable, no arguments) is a warm-up for this zygote built from
    this read's file: it is kept if the read ends well, and the zygote runs the first one kept
    before the next read (never before a first read: a process that reads one file would only
    pay for it). It must build only state that no later read can tell apart from a cold start.

    With `spawn`, the zygote is a fresh interpreter started for it (`python -I -S`), not a copy of
    this process: it imports only the modules that `prepare`, `work` and `warm` live in (under
    `profaudit` and `profaudit.parsers`, whose own __init__ it skips), so forking it and tearing
    each child down cost a few milliseconds whatever this process has imported (polars and the
    whole package: ~12 ms per read). Those three must then be functions of modules that import
    nothing heavy (parsers/ncu_child.py is the `.ncu-rep` reader's), never of `__main__`. Where no
    interpreter can be started, a forked zygote serves instead.
    """
    if not can_isolate():
        return work(on_chunk)
    path = Path(path)
    size_mb = path.stat().st_size / 1e6 if path.is_file() else 0.0
    limit = TIMEOUT_S + TIMEOUT_S_PER_MB * size_mb
    work_bytes = pickle.dumps(work, protocol=pickle.HIGHEST_PROTOCOL)
    _arm_fork_handler()
    with _lock:
        for attempt in (1, 2):
            z = _zygote_for(prepare, spawn)
            try:
                _settle(z)  # the previous child's exit, not waited for then
                if warm is not None and not z.warm_sent and prepare in _warm_ups and prepare not in _warm_off:
                    z.warm_up(_warm_ups[prepare])
                outcome, status = _one_read(z, work_bytes, on_chunk, limit, path, what)
                break
            except _ZygoteGone:
                # the zygote died (or hangs) outside any child's doing: replace it, try once more;
                # if it had been sent a warm-up, that may be why: no more warm-ups for this reader
                if z.warm_sent:
                    _warm_off.add(prepare)
                _zygotes.pop(prepare, None)
                z.stop(signal.SIGKILL)
                if attempt == 2:
                    raise InputError(path, f"{what}'s helper process died twice while reading this file") from None
            except InputError:  # the child timed out and was killed; the zygote is fine
                raise
            except BaseException:
                _zygotes.pop(prepare, None)
                z.stop(signal.SIGKILL)  # its child dies with it (PR_SET_PDEATHSIG)
                raise
    if outcome is None:  # the child died mid-read
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
    kind = outcome[0]
    if kind == "done":
        if warm is not None and prepare not in _warm_ups:
            _warm_ups[prepare] = pickle.dumps(warm, protocol=pickle.HIGHEST_PROTOCOL)
        return outcome[1]
    if kind == "input_error":
        raise InputError(outcome[1], outcome[2])
    if kind == "memory":
        raise InputError(path, f"{what} ran out of memory on this file (a damaged count asks for more than it holds)")
    raise IsolatedReaderError(f"{outcome[1]}: {outcome[2]}")


def _one_read(z: _Zygote, work_bytes: bytes, on_chunk, limit: float, path: Path, what: str) -> tuple[tuple | None, int | None]:
    """One request to the zygote: (the child's last message, None) once that message is whole, or
    (None, its exit status) when it died without one. Raises _ZygoteGone when the zygote is not
    there to fork or to report."""
    resp_r, resp_w = os.pipe()
    try:
        try:
            z.request(work_bytes, resp_w)
        finally:
            os.close(resp_w)  # the child holds the only write end: its death is our end of file
        deadline = time.monotonic() + limit
        z.recv(deadline)  # ("started", pid)
        outcome: tuple | None = None
        try:
            while True:
                msg = _recv(resp_r, deadline)
                if msg is None:
                    break
                if msg[0] == "chunk":
                    on_chunk(msg[1])
                else:
                    outcome = msg
                    break
        except TimeoutError:
            z.kill_child()
            try:
                z.recv(time.monotonic() + _STATUS_GRACE_S)  # ("exited", ...): reaped, nothing left running
            except _ZygoteGone:  # not answering either: it goes, and its child with it
                _forget(z)
            raise InputError(path, f"{what} did not finish within {limit:.0f} s (stopped): the file is damaged in a way that makes it loop") from None
        if outcome is not None:
            # The answer is whole (its length prefix says so; a child that died mid-send leaves it
            # short, outcome None). Its exit -- tearing down the page tables it inherited, ~5 ms
            # of CPU -- is not waited for: the zygote reaps it meanwhile, and the next read (or
            # worker_cpu_seconds) takes the message that says how it ended. The CPU is still
            # counted, only no longer on the caller's clock.
            z.exit_pending = True
            return outcome, None
        ended = z.recv(time.monotonic() + _STATUS_GRACE_S)  # ("exited", status, cpu s, ...): to word the crash
        z.took_exit(ended)
        return outcome, ended[1]
    finally:
        os.close(resp_r)


def _settle(z: _Zygote) -> None:
    """Take the message saying how the previous child ended, if it has not been taken (the
    zygote sends it once the child is reaped); raises _ZygoteGone if the zygote died meanwhile."""
    if z.exit_pending:
        z.exit_pending = False
        z.took_exit(z.recv(time.monotonic() + _STATUS_GRACE_S))


def settle() -> None:
    """Wait until every child this process's zygotes forked is reaped, and count its CPU: for a
    benchmark that reads worker_cpu_seconds (which calls this) right after a read."""
    _arm_fork_handler()
    with _lock:
        for key, z in list(_zygotes.items()):
            if z.owner != os.getpid():
                continue
            try:
                _settle(z)
            except _ZygoteGone:  # it died after answering: the next read starts a fresh one
                _zygotes.pop(key, None)
                z.stop(signal.SIGKILL)


def read_parquet_untrusted(source: Any, path: Path | str, what: str):
    """A whole Parquet file (a path or a file object) as a polars DataFrame, decoded by pyarrow.

    polars' own page decoder aborts the whole process (a Rust allocation failure, SIGABRT, no
    exception) on a damaged page header claiming 2**61 values; pyarrow raises "Invalid page header"
    (fuzz findings on a Neuron Explorer table and on a profaudit dataset part). Any failure is one
    InputError naming `path` and `what`."""
    from profaudit.panic_stderr import panics_as_input_errors

    from profaudit.parsers.folderfiles import refuse_non_regular
    from profaudit.parsers.parquet_read import read_parquet_frame

    if isinstance(source, (str, os.PathLike)):
        refuse_non_regular(source, path, what)
    try:
        with panics_as_input_errors(path, what):
            # pl.read_parquet(source, use_pyarrow=True), row group by row group (parquet_read)
            return read_parquet_frame(source)
    except InputError:
        raise
    except Exception as exc:  # pyarrow and polars raise several types for damaged Parquet
        msg = first_line(exc, type(exc).__name__)
        raise InputError(path, f"{what}: {msg}") from None
