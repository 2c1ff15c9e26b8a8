"""The isolation zygote's memory moved onto huge pages (parsers/hugepages.py, isolate._HugePageMover):
the bytes never change, the move is paid for as forking pays, a request interrupts it, and the
ncu_report reader reads the same after its library's data has moved."""

from __future__ import annotations

import ctypes
import mmap
import os
import socket
import time

import pytest

from profaudit.parsers import hugepages, isolate
from tests.conftest import corpus_file

needs_thp = pytest.mark.skipif(not hugepages.available() or os.sysconf("SC_PAGE_SIZE") != 4096, reason="needs Linux transparent huge pages on 4 KiB pages")


def _address(m: mmap.mmap) -> int:
    return ctypes.addressof(ctypes.c_char.from_buffer(m))


def _thp_fallbacks() -> int:
    with open("/proc/vmstat") as fh:
        return sum(int(line.split()[1]) for line in fh if line.startswith("thp_fault_fallback "))


def _huge_kb_at(addr: int) -> int:
    """AnonHugePages of the mapping holding `addr` in this process."""
    inside = False
    with open("/proc/self/smaps") as fh:
        for line in fh:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= addr < hi
            elif inside and head == "AnonHugePages:":
                return int(line.split()[1])
    return 0


class _Libc:
    """libc for move_piece, recording what MADV_COLLAPSE answered; with `collapse=False`, as on a
    kernel before 6.1 (MADV_COLLAPSE refused), so the copy-and-mremap route runs whatever this
    kernel has."""

    def __init__(self, collapse: bool):
        self._lib = hugepages.libc()
        self.collapse = collapse
        self.collapsed: list[int] = []

    def __getattr__(self, name):
        return getattr(self._lib, name)

    def madvise(self, at, n, advice):
        if advice == hugepages._MADV_COLLAPSE:
            self.collapsed.append(self._lib.madvise(at, n, advice) if self.collapse else -1)
            return self.collapsed[-1]
        return self._lib.madvise(at, n, advice)


def _mappings(lo: int, hi: int) -> int:
    """How many of this process's mappings meet [lo, hi): only the test's own memory, so that
    another thread's mmap (a worker's earlier tests leave threads) or an allocator arena made in
    between cannot change the count (review F18-8)."""
    n = 0
    with open("/proc/self/maps") as fh:
        for line in fh:
            a, b = (int(x, 16) for x in line.split(None, 1)[0].split("-"))
            n += a < hi and b > lo
    return n


@needs_thp
@pytest.mark.parametrize("private", [True, False], ids=["private", "shared"])
@pytest.mark.parametrize("collapse", [True, False], ids=["collapse", "mremap"])
def test_a_moved_piece_keeps_its_bytes_on_a_huge_page(private, collapse):
    # private anonymous memory is what the zygote moves (the library's .bss); on shared memory
    # (mmap's default) MADV_COLLAPSE fails where shmem has no huge pages, and the mremap route runs
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS if private else mmap.MAP_SHARED | mmap.MAP_ANONYMOUS
    m = mmap.mmap(-1, 3 * hugepages.HUGE, flags=flags)
    pattern = os.urandom(len(m))
    m[:] = pattern
    base = _address(m)
    at = hugepages.pieces(base, base + len(m))
    assert len(at) in (2, 3) and all(a % hugepages.HUGE == 0 for a in at)
    fallbacks, maps = _thp_fallbacks(), _mappings(base, base + len(m))
    lib = _Libc(collapse)
    moved = [hugepages.move_piece(lib, a) for a in at]
    assert moved == [True] * len(at)
    assert len(lib.collapsed) == len(at)  # MADV_COLLAPSE asked first, every piece
    if all(r == 0 for r in lib.collapsed):
        assert _mappings(base, base + len(m)) == maps  # collapsed in place: still one mapping (mremap adds one a piece)
    else:
        assert _mappings(base, base + len(m)) > maps
    assert m[:] == pattern  # same addresses, same bytes (the Python object still reads them)
    if _thp_fallbacks() == fallbacks and (private or not collapse):  # the kernel had huge pages to give
        assert _huge_kb_at(at[0]) >= 2048
    m[5] = 7  # still writable memory
    assert m[5] == 7
    del at
    m.close()


@needs_thp
def test_a_piece_never_touched_is_left_alone():
    m = mmap.mmap(-1, 2 * hugepages.HUGE)  # no byte written: no page behind it
    base = _address(m)
    at = hugepages.pieces(base, base + len(m))[0]  # 4 MiB hold one whole 2 MiB piece, or two
    assert hugepages.move_piece(hugepages.libc(), at) is False
    assert m[: len(m)].count(0) == len(m)
    m.close()


def test_pieces_are_whole_aligned_2mib_ranges():
    H = hugepages.HUGE
    assert hugepages.pieces(H + 4096, 4 * H) == [2 * H, 3 * H]
    assert hugepages.pieces(H, 3 * H - 1) == [H]
    assert hugepages.pieces(H + 1, 2 * H + 4096) == []


def test_loaded_bss_of_a_library_not_loaded_is_none(tmp_path):
    f = tmp_path / "libnothing.so"
    f.write_bytes(b"\x7fELF" + bytes(60))
    assert hugepages.loaded_bss(f) is None
    assert hugepages.loaded_bss(tmp_path / "missing.so") is None


class _FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _mover(monkeypatch, pieces: int, cost_s: float):
    """A mover over `pieces` fake pieces, each costing `cost_s` of (fake) CPU to move."""
    clock = _FakeClock()
    monkeypatch.setattr(isolate.time, "process_time", clock)
    monkeypatch.setattr(isolate, "_single_threaded", lambda: True)
    mv = isolate._HugePageMover(None)
    mv.pieces = list(range(pieces))
    done = []

    def move(_libc, at):
        clock.now += cost_s
        done.append(at)
        return True

    mv._move = move
    return mv, done


def test_the_move_spends_at_most_what_forking_has_cost(monkeypatch):
    mv, done = _mover(monkeypatch, pieces=10, cost_s=0.005)
    a, b = socket.socketpair()
    try:
        mv.run_while_idle(a)
        assert done == []  # nothing forked yet: a caller that never reads pays nothing
        mv.paid_fork(0.004)  # budget 8 ms: a piece starts while less than that was spent
        mv.run_while_idle(a)
        assert done == [0, 1] and mv.spent_s == pytest.approx(0.010) and mv.moved == 2
        mv.paid_fork(0.004)  # budget 16 ms
        mv.run_while_idle(a)
        assert done == [0, 1, 2, 3] and mv.spent_s == pytest.approx(0.020)
    finally:
        a.close()
        b.close()


def test_a_waiting_request_comes_before_the_move(monkeypatch):
    mv, done = _mover(monkeypatch, pieces=10, cost_s=0.005)
    a, b = socket.socketpair()
    try:
        mv.paid_fork(1.0)
        b.sendall(b"x")  # a request is waiting
        mv.run_while_idle(a)
        assert done == []
        a.recv(1)
        mv.run_while_idle(a)
        assert done == list(range(10)) and mv.pieces == []
    finally:
        a.close()
        b.close()


def test_a_threaded_process_moves_nothing(monkeypatch):
    mv, done = _mover(monkeypatch, pieces=3, cost_s=0.001)
    monkeypatch.setattr(isolate, "_single_threaded", lambda: False)
    a, b = socket.socketpair()
    try:
        mv.paid_fork(1.0)
        mv.run_while_idle(a)
        assert done == [] and mv.pieces == []
    finally:
        a.close()
        b.close()


def _nothing(send):
    return None


@pytest.fixture
def fresh_zygotes():
    isolate._stop_worker()
    yield
    isolate._stop_worker()


@pytest.mark.corpus
@needs_thp
def test_ncu_report_reads_the_same_after_its_library_data_moved(fresh_zygotes, monkeypatch):
    pytest.importorskip("ncu_report")
    from profaudit.parsers import ncu_rep
    from profaudit.parsers.base import ReadOptions

    report = corpus_file("ncu-rep", "smemTranspose")
    before = ncu_rep.PARSER.read(report, ReadOptions())
    st = isolate.zygote_stats(ncu_rep.prepare_reader)  # as of that read's end
    # nothing moves before the first child is forked (as of its exit, reported with it): a
    # one-read caller is not made to pay for the move up front
    assert st is not None and st["pieces_moved"] == 0 and st["move_cpu_s"] == 0
    assert st["pieces_left"] >= 40  # ... and every piece is still to be tried (bench_ncu_load waits on this)
    # a budget beyond any cost, in the next zygote (forked from here, so it has the patch): the
    # whole segment moves right after that zygote's first read
    isolate._stop_worker()
    monkeypatch.setattr(isolate._HugePageMover, "paid_fork", lambda self, cpu_s: setattr(self, "budget_s", 1e9))
    fallbacks = _thp_fallbacks()
    # The move yields to each request: give it idle time until the zygote says no piece is left.
    # Stopping at the first round that moved nothing (as before) failed on a loaded machine, where
    # the zygote can get no core in a 0.3 s pause; a deadline bounds a move that never ends.
    deadline = time.monotonic() + 120
    while True:
        isolate.run_isolated(report, _nothing, lambda c: None, "t", prepare=ncu_rep.prepare_reader)
        st = isolate.zygote_stats(ncu_rep.prepare_reader)
        if st["pieces_left"] == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    after = ncu_rep.PARSER.read(report, ReadOptions())
    assert st["pieces_moved"] >= 40  # ~108 MB of the library's 124 MB .bss is filled at load
    assert st["pieces_left"] == 0  # the move is done, as the zygote says
    assert after.kernels.equals(before.kernels)
    assert after.metrics.equals(before.metrics)
    if _thp_fallbacks() == fallbacks:  # the kernel had huge pages to give: the data sits on them
        assert hugepages.anon_huge_kb(st["pid"]) >= 2048 * st["pieces_moved"]
