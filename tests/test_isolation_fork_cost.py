"""What each isolated read's fork carries (parsers/isolate.py): a child of the spawned zygote starts
with no after-fork work inherited (no `threading`, whose handler ran in every child; isolate's own
handler armed only in the caller, on its first read) and with its address-space cap already set by
the zygote, which keeps its own limit. Each of these cost every read CPU (copied pages: see the
comments at isolate._lock and isolate._ChildMemoryCap); benchmarks/bench_ncu_load.py measures it."""

from __future__ import annotations

import os
import resource
import sys

import pytest

from profaudit.parsers import isolate
from tests import isolated_helpers as helpers
from tests.test_isolation import fresh_worker  # noqa: F401 - autouse

pytestmark = pytest.mark.skipif(
    not isolate.can_isolate() or not hasattr(os, "posix_spawn") or not sys.platform.startswith("linux"),
    reason="needs fork, posix_spawn and /proc (Linux)",
)


def _state(tmp_path) -> dict:
    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    return isolate.run_isolated(f, helpers.start_state, lambda c: None, "the test reader", spawn=True)


def test_a_child_inherits_no_after_fork_work(tmp_path):
    st = _state(tmp_path)
    assert st["threading"] is False  # the zygote never imported it
    assert st["armed"] is False  # isolate's handler: the zygote never read through isolate
    assert isolate._fork_handler_on  # ... while this process, which read, has it


def test_a_child_starts_with_its_memory_cap(tmp_path):
    st = _state(tmp_path)
    soft, hard = st["cap"]
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    extra = min(isolate.CHILD_EXTRA_BYTES, ram // 3)
    if hard != resource.RLIM_INFINITY and hard < st["vsz"] + extra:
        pytest.skip("a hard address-space limit below the cap")
    assert soft != resource.RLIM_INFINITY
    # the zygote's size at the fork plus the extra; the child has grown a little since (its work
    # unpickled, this function's frame), never by 64 MiB, and may have shrunk a little (glibc
    # trimming its heap top, an obmalloc arena given back), never by 8 MiB
    assert extra - (64 << 20) < soft - st["vsz"] <= extra + (8 << 20)


def test_the_zygote_keeps_its_own_limit(tmp_path):
    _state(tmp_path)
    _state(tmp_path)  # a second fork: the first one's limit was taken back
    pid = isolate.zygote_pid()
    with open(f"/proc/{pid}/limits") as fh:
        line = next(x for x in fh if x.startswith("Max address space"))
    soft = line.split()[3]
    mine = resource.getrlimit(resource.RLIMIT_AS)[0]  # the zygote was started with this process's limits
    assert soft == ("unlimited" if mine == resource.RLIM_INFINITY else str(mine))
