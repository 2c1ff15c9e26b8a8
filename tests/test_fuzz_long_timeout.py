"""tools/fuzz_long.py's wall-time limit leaves out the time a worker waited for a CPU (a niced run
on a busy machine), but never a blocked wait: a worker that sleeps, as a hang does, accrues none."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fuzz import tool_module

@pytest.fixture(scope="module")
def fuzz_long():
    return tool_module.load("fuzz_long")


def _worker(fuzz_long, proc):
    # a Worker around any process: only `proc` and the counters are used
    w = fuzz_long.Worker.__new__(fuzz_long.Worker)
    w.proc = proc
    return w


# the runqueue waits come from /proc/PID/task/TID/schedstat, which a kernel built without
# CONFIG_SCHED_INFO (or a sandbox's /proc) lacks while /proc itself is there
needs_schedstat = pytest.mark.skipif(not Path("/proc/self/schedstat").is_file(), reason="needs /proc/PID/schedstat (Linux)")


def _wait_state(pid: int, state: str, within: float = 60.0) -> bool:
    """Whether `pid`'s scheduler state (/proc/PID/stat) becomes `state` within `within` seconds."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        with open(f"/proc/{pid}/stat") as fh:
            if fh.read().rsplit(")", 1)[1].split()[0] == state:
                return True
        time.sleep(0.01)
    return False


@needs_schedstat
def test_a_blocked_worker_is_not_counted_as_starved(fuzz_long):
    # The child says when its start-up is over, and its sleep is measured only once it is asleep:
    # a fixed pause for the start-up (0.5 s, as before) left an interpreter still starting on a
    # loaded CI machine runnable inside the window, waiting for a core for real.
    proc = subprocess.Popen([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(30)"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "up\n"
        assert _wait_state(proc.pid, "S"), "the child never went to sleep"
        w = _worker(fuzz_long, proc)
        w.rq0 = w._rq_waits()
        assert w.rq0, "no schedstat read for a live process"
        time.sleep(1.5)
        assert w.starved_s() < 0.3
    finally:
        proc.kill()
        proc.wait()


@needs_schedstat
def test_runqueue_waits_are_read_per_thread(fuzz_long):
    """The counter read is the runqueue wait (schedstat's second field), not the run time: a
    process that spins accrues run time, and its waits stay below it on an idle CPU share."""
    proc = subprocess.Popen([sys.executable, "-c", "import threading, time\n"
                             "def spin():\n    t = time.time()\n    while time.time() - t < 30: pass\n"
                             "threading.Thread(target=spin, daemon=True).start(); print('up', flush=True); spin()"],
                            stdout=subprocess.PIPE, text=True)
    try:
        # both threads exist once it says so (a fixed 0.5 s pause could end before a loaded
        # machine had started the interpreter, and found one thread)
        assert proc.stdout.readline() == "up\n"
        w = _worker(fuzz_long, proc)
        waits = w._rq_waits()
        assert len(waits) == 2  # the main thread and the spinning thread
        run = {}
        for tid in waits:
            with open(f"/proc/{proc.pid}/task/{tid}/schedstat") as fh:
                run[tid] = int(fh.read().split()[0]) / 1e9
        assert all(waits[t] != run[t] for t in waits)
    finally:
        proc.kill()
        proc.wait()
