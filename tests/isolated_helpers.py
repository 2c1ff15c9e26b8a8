"""Stand-ins for the `.ncu-rep` reader's child-side functions (parsers/ncu_child.py), for tests that
swap them in: the reader's zygote is a fresh interpreter (isolate's `spawn`) that imports the module
a function lives in, so they live here, importing only the standard library and ncu_report (a
test module would drag pytest and the whole package into the zygote)."""

from __future__ import annotations

import os
import signal


def segfault(path: str, send) -> None:
    """The reader dying as it does on some bit-flipped reports (a child of the zygote runs it)."""
    os.kill(os.getpid(), signal.SIGSEGV)


def warm_with_units(path: str, identity) -> None:
    """The zygote's warm-up with `unit()` added on the first kernel's metrics: the leak the real
    one (ncu_child.warm_reader) avoids."""
    import ncu_report

    action = ncu_report.load_report(path).range_by_idx(0).action_by_idx(0)
    for name in action.metric_names():
        m = action.metric_by_name(name)
        m.value()
        m.unit()


def imported_modules(path: str, send) -> list[str]:
    """What a child of the zygote has imported, as it starts a read."""
    import sys

    return sorted(sys.modules)


def echo(value, send):
    send(["chunk", value])
    return {"value": value, "pid": os.getpid(), "ppid": os.getppid()}


def sleep(send):
    import time

    time.sleep(60)


def allocate(send):
    return len(bytearray(1 << 46))  # 64 TiB: beyond any address-space cap


def start_state(send) -> dict:
    """What a child of the zygote starts its work with: its address-space cap and size, and whether
    it inherited after-fork work (`threading`, isolate's own handler armed)."""
    import resource
    import sys

    with open("/proc/self/statm") as fh:
        vsz = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    iso = sys.modules.get("profaudit.parsers.isolate")
    return {
        "cap": resource.getrlimit(resource.RLIMIT_AS),
        "vsz": vsz,
        "threading": "threading" in sys.modules,
        "armed": getattr(iso, "_fork_handler_on", None),
    }
