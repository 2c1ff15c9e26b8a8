"""The reads benchmarks/bench_ncu_load.py makes with `ncu_report` alone, and the stages of the
reader's own read, for the children of the `.ncu-rep` reader's zygote (parsers/isolate.py) to run.

They live apart from the bench because a child of the zygote imports the module its work function
lives in, and starts its timed read after that import: the bench's own imports (argparse,
subprocess, statistics, ...) would allocate memory and touch pages in the child that the read then
finds ready -- a saving profaudit's child does not get. This module imports only what a child of the
zygote has already loaded when its work starts, so both sides' reads start from the same state.
"""

from __future__ import annotations

import gc
import pickle
import resource
import time
from pathlib import Path


def baseline(path: Path) -> int:
    """Read every metric, instance and correlation id with the public ncu_report API."""
    import ncu_report

    ctx = ncu_report.load_report(str(path))
    # a metric name's unit asked once per report, as profaudit's child asks it (ncu_child's
    # unit_cache): without it the baseline paid unit() for every action x metric (AlpriElse's
    # first-report read cost more than profaudit's); never kept across reports
    units: dict[str, str] = {}
    n = 0
    for rng in ctx:
        for action in rng:
            for name in action.metric_names():
                m = action[name]
                if name not in units:
                    units[name] = m.unit()
                m.value()
                n += 1
                cnt = m.num_instances()
                if cnt:
                    for i in range(cnt):
                        m.value(i)
                    if m.has_correlation_ids():
                        ids = m.correlation_ids()
                        for i in range(cnt):
                            ids.value(i)
                    n += cnt
    return n


def _own_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def first_report_read(path: str, _send) -> tuple[float, float, int]:
    """In a child of the reader's zygote (the work of an isolated read, see bench_ncu_load's
    _FirstReport): the baseline read of `path`, its CPU and wall seconds around the read alone,
    and how many values it read. The collector is off, as in profaudit's child
    (ncu_child.read_actions)."""
    gc.disable()
    r0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    n = baseline(Path(path))
    r1, w1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    return r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, w1 - w0, n


def child_stages(path: str, units: bool, _send) -> dict:
    """In a child of the reader's zygote (the work of an isolated read, see bench_ncu_load's
    _Stages): the reader's own read of `path` (ncu_child.read_actions), its CPU with ncu_report's
    open timed apart, and what encoding its messages for the pipe costs (as isolate._send does).
    Without `units`, every unit() is skipped (the difference is their cost)."""
    import ncu_report

    from profaudit.parsers import isolate, ncu_child

    spent = {"open": 0.0}
    load = ncu_report.load_report

    def timed_load(p):
        c = _own_cpu()
        ctx = load(p)
        spent["open"] += _own_cpu() - c
        return ctx

    ncu_report.load_report = timed_load  # this child's own copy of the module: it dies after this read
    if not units:
        base = ncu_child._Swig

        class _NoUnits(base):
            def __init__(self, nr):
                super().__init__(nr)
                self.unit = lambda m: ""

        ncu_child._Swig = _NoUnits
    chunks: list = []
    c = _own_cpu()
    res = ncu_child.read_actions(path, chunks.append)
    read = _own_cpu() - c
    c = _own_cpu()
    for ch in chunks:
        isolate._pack(("chunk", ch))
    isolate._pack(("done", res))
    encode = _own_cpu() - c
    payload = pickle.dumps((chunks, res), protocol=pickle.HIGHEST_PROTOCOL) if units else None
    return {"open": spent["open"], "read": read, "encode": encode, "payload": payload}
