"""The isolation zygote's warm-up (parsers/isolate.py `warm`): run in the zygote once, before its
second read and never before its first, built from a file a child read to the end; a warm-up that
fails leaves a cold zygote, one that kills the zygote switches warm-ups off and the read still works."""

from __future__ import annotations

import functools
import os
import signal

import pytest

from profaudit.parsers import isolate
from tests.test_isolation import fresh_worker  # noqa: F401 - autouse: each test forks its own zygote

pytestmark = pytest.mark.skipif(not isolate.can_isolate(), reason="needs fork")


_WARMED: list[str] = []  # in the zygote: what it was warmed with, in order


def _warm(name):
    _WARMED.append(name)


def _warm_then_fail(name):
    _WARMED.append(name)
    raise RuntimeError("the warm-up's own bug")


def _warm_kills_the_zygote(name):
    os.kill(os.getpid(), signal.SIGKILL)  # runs in the zygote itself


def _state(send):
    return {"warmed": list(_WARMED), "ppid": os.getppid()}


def _fails(send):
    return 1 / 0


def _read(f, warm, name):
    return isolate.run_isolated(f, _state, lambda c: None, "the test reader", warm=functools.partial(warm, name))


def test_warm_up_runs_once_before_the_second_read(tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    first = _read(f, _warm, "first")
    assert first["warmed"] == []  # a process that reads one file never pays for a warm-up
    assert isolate.zygote_stats()["warmed"] is False
    second = _read(f, _warm, "second")
    assert second["warmed"] == ["first"]  # the first read that ended well is the one kept
    third = _read(f, _warm, "third")
    assert third["warmed"] == ["first"] and first["ppid"] == second["ppid"] == third["ppid"]
    st = isolate.zygote_stats()
    assert st["warmed"] is True and st["warm_cpu_s"] >= 0
    assert _WARMED == []  # the caller itself is never warmed


def test_a_read_without_a_warm_up_does_not_warm(tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    _read(f, _warm, "first")
    assert isolate.run_isolated(f, _state, lambda c: None, "the test reader")["warmed"] == []
    assert isolate.zygote_stats()["warmed"] is False


def test_a_failing_read_is_not_kept_for_warming(tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    with pytest.raises(isolate.IsolatedReaderError):
        isolate.run_isolated(f, _fails, lambda c: None, "the test reader", warm=functools.partial(_warm, "bad"))
    assert _read(f, _warm, "good")["warmed"] == []
    assert _read(f, _warm, "later")["warmed"] == ["good"]


def test_a_warm_up_that_raises_leaves_the_zygote_cold_and_working(tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    first = _read(f, _warm_then_fail, "first")
    second = _read(f, _warm_then_fail, "second")
    assert second["warmed"] == ["first"] and second["ppid"] == first["ppid"]


def test_a_warm_up_that_kills_the_zygote_switches_warm_ups_off(tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    first = _read(f, _warm_kills_the_zygote, "first")
    dead = first["ppid"]
    second = _read(f, _warm_kills_the_zygote, "second")  # the zygote dies warming; the read is retried
    assert second["ppid"] != dead and second["warmed"] == []
    third = _read(f, _warm_kills_the_zygote, "third")
    assert third["ppid"] == second["ppid"]  # no more warm-ups: the replacement stays up
    assert isolate.zygote_stats()["warmed"] is False


class _NoRanges:
    def num_ranges(self):
        return 0


def test_the_ncu_warm_up_opens_only_the_bytes_a_child_read(tmp_path, monkeypatch):
    """ncu_rep.warm_reader runs in the zygote itself: a file changed (or gone) since a child read it
    is not opened there, since its new bytes could crash the zygote."""
    import sys
    import types

    from profaudit.parsers import ncu_rep

    opened: list[str] = []

    def load_report(path):
        opened.append(path)
        return _NoRanges()

    monkeypatch.setitem(sys.modules, "ncu_report", types.SimpleNamespace(load_report=load_report))
    f = tmp_path / "r.ncu-rep"
    f.write_bytes(b"NVR\x00 as read")
    st = f.stat()
    identity = (st.st_ino, st.st_size, st.st_mtime_ns)
    ncu_rep.warm_reader(str(tmp_path / "gone.ncu-rep"), identity)
    ncu_rep.warm_reader(str(f), identity)
    assert opened == [str(f)]
    f.write_bytes(b"NVR\x00 rewritten since")
    ncu_rep.warm_reader(str(f), identity)
    assert opened == [str(f)]
