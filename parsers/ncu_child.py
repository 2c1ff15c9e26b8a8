"""The `.ncu-rep` reader's child side: what runs in the isolation zygote and in each child it forks
(parsers/isolate.py), kept apart from the polars-importing parser (parsers/ncu_rep.py).

The zygote is a fresh interpreter (`python -I -S`, isolate's `spawn`) that imports this module, the
wire protocol (parsers/isolate.py), `profaudit.errors` and `ncu_report`, and nothing else: no polars,
no `profaudit` package `__init__` (the zygote sets the packages up as empty shells with their
folders, so only the submodules named are imported). Forking it and tearing each child down costs a
few milliseconds, where a zygote forked from the caller (polars, its thread pool's memory, the
whole package) cost ~12 ms per read (benchmarks/bench_ncu_load.py measures both). So this module
imports only the standard library and `profaudit.errors` at the top, and `ncu_report` inside the
functions that read.

A child opens the report with `ncu_report`, reads every action's metrics, instance values,
correlation ids, rule results and NVTX ranges into typed columns (`Columns`: number arrays, string
codes), and sends them in chunks (`send`); the parent (ncu_rep.read_report) derives the kernel rows
from each chunk's aggregate rows and builds the polars frames from the arrays. Only standard-library
values (arrays, lists, strings) cross the pipe.
"""

from __future__ import annotations

import contextlib
import gc
import os
from array import array
from itertools import repeat
from pathlib import Path
from typing import Any, Callable

from profaudit.errors import InputError, first_line, require

WORKLOAD = {0: "kernel", 1: "range", 2: "cmdlist", 3: "graph", 4: "subgrid_schedule"}
_MSG_TYPE = {0: "none", 1: "info", 2: "optimization", 3: "warning", 4: "error"}
_SPEEDUP_TYPE = {0: "unknown", 1: "local", 2: "global"}
# the `metrics` table's columns, in the order the chunks carry them
COLS = ("kernel_id", "metric", "unit", "value", "value_str", "value_int", "instance", "instance_key", "section", "kind")
# how each column crosses the pipe: numbers as typed arrays (their nulls as a list of row numbers),
# texts as int32 codes into the chunk's table of distinct strings (code 0: null)
NUM_COLS = {"kernel_id": "q", "value": "d", "value_int": "q", "instance": "q"}
STR_COLS = ("metric", "unit", "value_str", "instance_key", "section", "kind")
# where each kernel's aggregate rows sit in a chunk: [(kernel_id, first row, row count), ...]
AGG = "_aggregates"
# instance numbers 0, 1, 2, ...: a metric's are a slice of these (a copy of bytes), not an array
# built item by item from a range
_IOTA = array("q", range(4096))


def metric_kind(metric: str, section: str | None = None) -> str:
    """The `kind` of a metrics row: device attribute, launch configuration, or measured metric.
    (The CSV parsers use it too, through ncu_common; it lives here so that the child needs nothing
    heavier to fill its `kind` column.)"""
    if metric.startswith("device__attribute_"):
        return "device"
    if metric.startswith("launch__") or section == "Launch Statistics":
        return "launch"
    return "metric"


class IntKeys:
    """Correlation ids that are all unsigned integers (the usual ids), kept as numbers: the parent
    writes them as decimal text (polars' cast gives str(int)'s digits), so the child spends no
    str() per instance and the pipe carries 8 bytes per id instead of a pickled string."""

    __slots__ = ("ids", "pad")

    def __init__(self, ids: array, pad: int):
        self.ids = ids  # array('Q')
        self.pad = pad  # null keys after them (instances beyond the ids metric's count)


class Columns:
    """The long `metrics` table as typed columns, handed to `sink` in chunks of FLUSH_ROWS rows so a
    report with thousands of kernels never holds millions of Python row objects at once (the
    parent turns each chunk into a polars frame as it arrives).

    A chunk is compact (see NUM_COLS/STR_COLS): pickling ~34,000 rows as ten lists of Python
    values, unpickling them and handing polars the lists cost ~25 ms of a ~240 ms read
    (AlpriElse); arrays and string codes go through the pipe as a few byte strings, and the parent
    builds the frame from them without Python work per row (ncu_rep._chunk_frame)."""

    FLUSH_ROWS = 250_000

    def __init__(self, sink: Callable[[dict[str, Any]], None] | None = None):
        self.sink = sink
        self._reset()

    def _reset(self) -> None:
        self.num: dict[str, array] = {c: array(t) for c, t in NUM_COLS.items()}
        self.nulls: dict[str, list[int]] = {c: [] for c in NUM_COLS}
        self.codes: dict[str, array] = {c: array("i") for c in STR_COLS}
        self.strings: list = [None]
        self._code: dict[Any, int] = {None: 0}
        self.key_rows = array("q")  # rows whose instance_key is an integer id (code -1)
        self.key_ids = array("Q")
        self.aggregates: list[tuple[int, int, int]] = []
        self.rows = 0

    def _intern(self, v) -> int:
        c = self._code.get(v)
        if c is None:
            c = self._code[v] = len(self.strings)
            self.strings.append(v)
        return c

    def _put_num(self, c: str, v, n: int) -> None:
        data, base = self.num[c], self.rows
        if v is not None:
            if not isinstance(v, list):
                v = [v] * n
            try:
                # the usual case: no nulls, all in range. fromlist, not extend: extend takes any
                # iterable and grows the array one item at a time (~2x the CPU); fromlist sizes it
                # once, converts each item alike, and undoes itself on the first it refuses
                data.fromlist(v)
                return
            except (TypeError, OverflowError):
                pass  # fromlist has left the array as it was
        # counted only once fromlist has refused a value: list.count(None) compares every number
        # with None the slow way (first, it made building AlpriElse's chunks 21.7 ms, not 19.5)
        if v is None or v.count(None) == n:
            self.nulls[c].extend(range(base, base + n))
            data.frombytes(bytes(data.itemsize * n))
            return
        nulls = self.nulls[c]
        try:
            data.fromlist([0 if x is None else x for x in v])  # nulls (string metrics' value)
            nulls.extend([base + j for j, x in enumerate(v) if x is None])
            return
        except (TypeError, OverflowError):
            del data[base:]
        # a value the column's type cannot hold is null, as polars' non-strict construction made
        # it (a damaged session integer above int64)
        one = array(data.typecode, (0,))
        for j, x in enumerate(v):
            try:
                one[0] = int(x) if isinstance(x, float) and data.typecode == "q" else x  # polars truncates too
            except (TypeError, ValueError, OverflowError):
                one[0] = 0
                nulls.append(base + j)
            data.extend(one)

    def _put_str(self, c: str, v, n: int) -> None:
        codes = self.codes[c]
        if isinstance(v, list):
            # None's code is 0, so an all-null list needs no test of its own; extend refuses the
            # None that get() gives a string not yet in the table, which is then interned (a
            # `None in cs` test compared every code with None the slow way)
            cs = list(map(self._code.get, v))
            start = len(codes)
            try:
                codes.fromlist(cs)
            except TypeError:
                del codes[start:]
                codes.extend([self._intern(x) if k is None else k for x, k in zip(v, cs)])
            return
        if isinstance(v, IntKeys):
            k = len(v.ids)
            self.key_rows.extend(range(self.rows, self.rows + k))
            self.key_ids.extend(v.ids)
            codes.extend(array("i", (-1,)) * k)
            codes.frombytes(bytes(4 * v.pad))
        elif v is None:
            codes.frombytes(bytes(4 * n))
        else:
            codes.extend(array("i", (self._intern(v),)) * n)

    def extend(self, n: int, **cols) -> None:
        """`n` rows; each column a list of `n` values, one value for all `n` rows, or absent (null)."""
        for c in NUM_COLS:
            self._put_num(c, cols.get(c), n)
        for c in STR_COLS:
            self._put_str(c, cols.get(c), n)
        self.rows += n
        if self.rows >= self.FLUSH_ROWS:
            self.flush()

    def extend_instances(self, n: int, kid: int, metric: str, unit, kind: str, value, value_str, value_int, keys) -> None:
        """One metric's `n` instance rows: the same columns, codes and nulls as
        `extend(n, kernel_id=kid, metric=metric, unit=unit, value=value, value_str=value_str,
        value_int=value_int, instance=list(range(n)), instance_key=keys, kind=kind)` (no section),
        in fewer steps: a report has one such call per instanced metric and kernel (62 for
        bobschreiner's one kernel), and extend's ten generic column calls cost ~16 us each time
        (measured on a loaded machine), more than the rows themselves. `value_str`/`value_int` may be None (all null)."""
        base = self.rows
        num, nulls, codes = self.num, self.nulls, self.codes
        num["kernel_id"].extend(array("q", (kid,)) * n)
        self._put_num("value", value, n)
        if value_int is None:
            nulls["value_int"].extend(range(base, base + n))
            num["value_int"].frombytes(bytes(8 * n))
        else:
            self._put_num("value_int", value_int, n)
        num["instance"].extend(_IOTA[:n] if n <= len(_IOTA) else range(n))
        # the string columns in extend's order (STR_COLS), which decides each new string's code
        code = self._code.get(metric)
        codes["metric"].extend(array("i", (self._intern(metric) if code is None else code,)) * n)
        self._put_str("unit", unit, n)
        if value_str is None:
            codes["value_str"].frombytes(bytes(4 * n))
        else:
            self._put_str("value_str", value_str, n)
        self._put_str("instance_key", keys, n)
        codes["section"].frombytes(bytes(4 * n))
        code = self._code.get(kind)
        codes["kind"].extend(array("i", (self._intern(kind) if code is None else code,)) * n)
        self.rows = base + n
        if self.rows >= self.FLUSH_ROWS:
            self.flush()

    def mark_aggregates(self, kid: int, n: int) -> None:
        """The next `n` rows are kernel `kid`'s aggregate metrics (called right before extend, so
        that they always land in the chunk that carries the mark)."""
        self.aggregates.append((kid, self.rows, n))

    def chunk(self) -> dict[str, Any]:
        return {
            "rows": self.rows, "num": self.num, "nulls": self.nulls, "codes": self.codes, "strings": self.strings,
            "key_rows": self.key_rows, "key_ids": self.key_ids, AGG: self.aggregates,
        }

    def flush(self) -> None:
        if not self.rows:
            return
        self.sink(self.chunk())
        self._reset()


class _Swig:
    """The reader's SWIG entry points, bound once (each public method is a thin wrapper over one)."""

    def __init__(self, nr):
        low = getattr(nr, "_ncu_report", None)

        def pick(name, fallback):
            fn = getattr(low, name, None) if low is not None else None
            return fn if callable(fn) else fallback

        M, A = nr.IMetric, nr.IAction
        self.kind = pick("IMetric_kind", M.kind)
        self.as_double = pick("IMetric_as_double", M.as_double)
        self.as_uint64 = pick("IMetric_as_uint64", M.as_uint64)
        self.as_string = pick("IMetric_as_string", M.as_string)
        self.num_instances = pick("IMetric_num_instances", M.num_instances)
        self.unit = pick("IMetric_unit", M.unit)
        self.has_corr = pick("IMetric_has_correlation_ids", M.has_correlation_ids)
        self.corr = pick("IMetric_correlation_ids", M.correlation_ids)
        self.by_name = pick("IAction_metric_by_name", A.metric_by_name)
        self.names = pick("IAction_metric_names", A.metric_names)
        self.K_STRING = M.ValueKind_STRING
        self.K_FLOAT = M.ValueKind_FLOAT
        self.K_DOUBLE = M.ValueKind_DOUBLE
        self.K_UINT32 = M.ValueKind_UINT32
        self.K_UINT64 = M.ValueKind_UINT64


_INT64_MAX = (1 << 63) - 1


def _row_kind(name: str, cache: dict[str, str]) -> str:
    k = cache[name] = metric_kind(name)
    return k


def _pointer(m):
    """The SWIG pointer object behind a metric's (or an action's) Python proxy (its `this`), which
    every entry point takes as well: given the proxy, each call first looks `this` up on it, about half
    of a call's cost (~0.4 of 0.8 us measured), and a report's read makes ~4 such calls per
    instance value (bobschreiner: ~7,000). Anything without one (None from a damaged report) is
    passed on as it is, so the entry points refuse it as they did."""
    try:
        return m.this
    except AttributeError:
        return m


def _instance_values(sw: _Swig, m, cnt: int, nulls_as_none: bool = False):
    """(values, value_strs, value_ints) of a metric's instances, each read with the accessor its
    own kind calls for (an instance kind can differ from the aggregate's: DOUBLE vs UINT64).
    With `nulls_as_none`, a text or integer column with no value at all is None instead of a
    list of None (what Columns.extend_instances takes as all null without looking at each)."""
    # map() over the instance numbers: one C loop per accessor, no Python frame per instance
    rng = range(cnt)
    ms = repeat(m, cnt)
    kinds = list(map(sw.kind, ms, rng))
    k0 = kinds[0]
    none = [None] * cnt
    if kinds.count(k0) == cnt:  # the usual case: one kind for all instances
        if k0 == sw.K_DOUBLE or k0 == sw.K_FLOAT:
            return list(map(sw.as_double, repeat(m, cnt), rng)), None if nulls_as_none else none, None if nulls_as_none else list(none)
        if k0 == sw.K_UINT64 or k0 == sw.K_UINT32:
            ints = list(map(sw.as_uint64, repeat(m, cnt), rng))
            if max(ints) <= _INT64_MAX:
                return list(map(float, ints)), None if nulls_as_none else none, ints
            return list(map(float, ints)), [str(v) if v > _INT64_MAX else None for v in ints], [v if v <= _INT64_MAX else None for v in ints]
        if k0 == sw.K_STRING:
            return list(none), list(map(sw.as_string, repeat(m, cnt), rng)), None if nulls_as_none else list(none)
        return none, None if nulls_as_none else list(none), None if nulls_as_none else list(none)
    vals, strs, ints = [None] * cnt, [None] * cnt, [None] * cnt
    for i, k in enumerate(kinds):
        if k == sw.K_DOUBLE or k == sw.K_FLOAT:
            vals[i] = sw.as_double(m, i)
        elif k == sw.K_UINT64 or k == sw.K_UINT32:
            u = sw.as_uint64(m, i)
            vals[i] = float(u)
            if u <= _INT64_MAX:
                ints[i] = u
            else:
                strs[i] = str(u)
        elif k == sw.K_STRING:
            strs[i] = sw.as_string(m, i)
    return vals, strs, ints


def _keys(sw: _Swig, cm, cnt: int) -> IntKeys | list:
    """Correlation ids (the instance values of the ids metric), `cnt` of them (null past the ids
    metric's own count): integer ids as IntKeys, others as text."""
    n = min(cnt, sw.num_instances(cm))
    if not n:
        return [None] * cnt
    kinds = set(map(sw.kind, repeat(cm, n), range(n)))
    if kinds <= {sw.K_UINT64, sw.K_UINT32}:  # the usual ids: integers, written as text by the parent
        ids = list(map(sw.as_uint64, repeat(cm, n), range(n)))
        with contextlib.suppress(TypeError, OverflowError):  # else (never seen) as text, below
            return IntKeys(array("Q", ids), cnt - n)
        return [str(v) for v in ids] + [None] * (cnt - n)
    vals, strs, ints = _instance_values(sw, cm, n)
    keys: list = []
    for v, s, i in zip(vals, strs, ints):
        if s is not None:
            keys.append(s)
        elif i is not None:
            keys.append(str(i))
        elif v is not None:
            keys.append(str(int(v)) if v == v and v.is_integer() and abs(v) < 2**63 else repr(v))
        else:
            keys.append(None)
    return keys + [None] * (cnt - n)


def _read_action_metrics(sw: _Swig, action, kid: int, out: Columns, unit_cache: dict[str, str], kind_cache: dict[str, str]) -> int:
    """All metrics of one action into `out`; returns how many metric names it has."""
    action = _pointer(action)  # (what _pointer says of metrics holds for the action: one lookup per metric less)
    names = sw.names(action)
    by_name, kind, unit = sw.by_name, sw.kind, sw.unit
    as_double, as_uint64, as_string, num_instances = sw.as_double, sw.as_uint64, sw.as_string, sw.num_instances
    KD, KF, KU64, KU32, KS = sw.K_DOUBLE, sw.K_FLOAT, sw.K_UINT64, sw.K_UINT32, sw.K_STRING
    n = len(names)
    values: list = [None] * n
    strs: list = [None] * n
    ints: list = [None] * n
    units: list = [None] * n
    instanced: list[tuple[str, Any, str]] = []
    for j, name in enumerate(names):
        m = _pointer(by_name(action, name))
        u = unit_cache.get(name)
        if u is None:
            u = unit_cache[name] = unit(m)
        units[j] = u
        k = kind(m)
        if k == KD or k == KF:
            values[j] = as_double(m)
        elif k == KU64 or k == KU32:
            v = as_uint64(m)
            values[j] = float(v)
            if v <= _INT64_MAX:
                ints[j] = v
            else:
                strs[j] = str(v)
        elif k == KS:
            strs[j] = as_string(m)
        if num_instances(m):
            instanced.append((name, m, u))
    kget = kind_cache.get
    kinds = [kget(nm) or _row_kind(nm, kind_cache) for nm in names]
    out.mark_aggregates(kid, n)
    out.extend(n, kernel_id=kid, metric=list(names), unit=units, value=values, value_str=strs, value_int=ints, kind=kinds)
    for name, m, u in instanced:
        cnt = num_instances(m)
        iv, isv, ii = _instance_values(sw, m, cnt, True)
        keys = None
        if sw.has_corr(m):
            cm = sw.corr(m)
            if cm is not None:
                keys = _keys(sw, _pointer(cm), cnt)
        out.extend_instances(cnt, kid, name, u, kind_cache[name], iv, isv, ii, keys)
    return n


def _rule_rows(action, kid: int, out: Columns) -> int:
    results = action.rule_results()
    metric, unit, value, vstr, key, section = [], [], [], [], [], []
    for r in results:
        rid = r.rule_identifier()
        sec = r.section_identifier()
        msg = r.rule_message() if r.has_rule_message() else None
        mtype = _MSG_TYPE.get(int(msg["type"]), str(msg["type"])) if msg else None
        body = None
        if msg:
            body = f"{msg['title']}: {msg['message']}" if msg.get("title") else msg.get("message")
        sp = r.speedup_estimation() if r.has_speedup_estimation() else None
        metric.append(rid)
        section.append(sec)
        vstr.append(body)
        if sp:
            unit.append("%")
            value.append(float(sp["speedup"]))
            key.append(f"{mtype};speedup={_SPEEDUP_TYPE.get(int(sp['type']), sp['type'])}")
        else:
            unit.append("")
            value.append(None)
            key.append(mtype)
        for fm in r.focus_metrics() or []:
            metric.append(f"{rid}:focus:{fm['name']}")
            section.append(sec)
            unit.append("")
            value.append(float(fm["value"]) if fm.get("value") is not None else None)
            vstr.append(fm.get("info"))
            key.append(f"severity={int(fm['severity'])}" if fm.get("severity") is not None else None)
    if metric:
        out.extend(len(metric), kernel_id=kid, metric=metric, unit=unit, value=value, value_str=vstr, instance_key=key, section=section, kind="rule")
    return len(results)


def _nvtx(action, kid: int, out: Columns) -> str | None:
    """NVTX ranges around the launch (only when captured with `ncu --nvtx`); returns the innermost."""
    state = action.nvtx_state()
    if state is None:
        return None
    innermost_pp = innermost_se = None
    metric, vstr, inst, key = [], [], [], []
    for did in state.domains():
        dom = state.domain_by_id(did)
        if dom is None:
            continue
        dname = dom.name()
        for kind_name, count, getter in (
            ("nvtx_push_pop", len(dom.push_pop_ranges()), dom.push_pop_range),
            ("nvtx_start_end", len(dom.start_end_ranges()), dom.start_end_range),
        ):
            for i in range(count):
                r = getter(i)
                if r is None:
                    continue
                metric.append(kind_name)
                vstr.append(r.name())
                inst.append(i)
                key.append(dname)
                if kind_name == "nvtx_push_pop":
                    innermost_pp = r.name()  # index order is the stack order: last = innermost
                else:
                    innermost_se = r.name()
    if metric:
        out.extend(len(metric), kernel_id=kid, metric=metric, value_str=vstr, instance=inst, instance_key=key, kind="nvtx")
    return innermost_pp if innermost_pp is not None else innermost_se


def nvperf_library() -> Path | None:
    """The metrics library `ncu_report` loads when it reads its first action: beside the module
    (the PyPI wheel), else in `../../target/<os-arch>/` (an ncu install's `extras/python`), the
    places `ncu_report.load_report` passes it as `library_dir`. None when neither holds it."""
    import platform

    nr = require("ncu_report", "core", "reading Nsight Compute reports")
    system = {"Linux": ("linux", "libnvperf_host.so"), "Darwin": ("osx", "libnvperf_host.dylib"), "Windows": ("windows", "nvperf_host.dll")}.get(platform.system())
    if system is None:
        return None
    osname, lib = system
    here = Path(nr.__file__).resolve().parent
    if (here / lib).is_file():
        return here / lib
    arch = {"x86_64": "x64", "AMD64": "x64", "aarch64": "a64", "ARM64": "a64"}.get(platform.machine(), "")
    target = here.parents[1] / "target" if osname != "osx" else here.parent
    with contextlib.suppress(OSError):
        for d in sorted(target.iterdir()):
            if d.is_dir() and (osname == "osx" or (not d.name.startswith("target") and osname in d.name and arch in d.name)) and (d / lib).is_file():
                return d / lib
    return None


def prepare_reader(huge_pages: bool = True) -> list[tuple[int, int]]:
    """The reader's process-wide set-up, done once in the isolation zygote (parsers/isolate.py)
    and inherited by every child that reads a report: import `ncu_report` and load its metrics
    library. Loading that 37 MB library (relocations, static constructors building ~110 MB of
    data) is ~70 ms of the ~75 ms a fresh process spends in its first report's first action; what
    else a fresh process pays (~10 ms more than a process that has read reports before) happens
    while it reads a report, and is the per-report state that must not be shared. No report is opened here:
    ncu_report registers a report's derived-metric units process-wide, and a zygote that had read
    one would hand its units to every later report.

    Returns the address range of what those constructors filled (the library's 124 MB `.bss`),
    which the zygote moves onto huge pages so that each child's fork and exit cost less; with
    `huge_pages=False`, nothing (benchmarks/bench_ncu_load.py measures what the move saves)."""
    import ctypes

    lib = nvperf_library()
    if lib is None:
        return []
    # RTLD_LOCAL, as ncu_report's own dlopen: the library's symbols stay private to it, and
    # ncu_report's later dlopen of the same file returns this handle
    ctypes.CDLL(str(lib), mode=ctypes.RTLD_LOCAL)
    from profaudit.parsers.hugepages import loaded_bss

    bss = loaded_bss(lib)
    return [bss] if bss is not None and huge_pages else []


def warm_reader(path: str, identity: tuple[int, int, int]) -> None:
    """The isolation zygote's warm-up (parsers/isolate.py `warm`), run once in it before its second
    read: open a report that a child has already read to the end and read its first kernel's metric
    values, so that each child starts with ncu_report's report-independent caches built.

    A process that has read any report opens the next one, reaches its actions and reads its values
    with less work, whatever the GPU and the ncu version of either (benchmarks/bench_ncu_load.py
    measures it: its "cold" column). What must not be built here is the units registry: `unit()`
    on any metric of a report registers its derived metrics' units process-wide, first report wins
    (even between two reports of one GPU and one ncu version: read after smemReduceInteger,
    smemTranspose's derived 'byte' metric comes back in 'sector'). Reading values only changed
    nothing in any later report in the corpus (every metric's unit, kind, value and instance
    values, 23 warming reports x 23 read after); tests/test_ncu_rep_warm.py keeps checking it.

    `identity` is the file's (inode, size, mtime ns) when it was read: a file changed since is not
    opened (its new bytes were never read by a child, and could crash the zygote)."""
    try:
        st = os.stat(path)
    except OSError:
        return
    if (st.st_ino, st.st_size, st.st_mtime_ns) != tuple(identity):
        return
    import ncu_report as nr

    ctx = nr.load_report(path)
    if not ctx.num_ranges():
        return
    rng = ctx.range_by_idx(0)
    if not rng.num_actions():
        return
    action = rng.action_by_idx(0)
    for name in action.metric_names():
        action.metric_by_name(name).value()  # the values only: never unit() (see above)


def read_actions(path: str, send: Callable[[dict[str, list]], None]) -> dict[str, Any]:
    """Every action of the report through `ncu_report` (what a child of the zygote runs): metric
    chunks go to `send`, the last one comes back with the kernels' names, categories and NVTX
    ranges, and the report's rule count and reader version. Standard-library values only."""
    # the cyclic collector would rescan the growing column lists (see ncu_rep.PARSER.read)
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _read_all_actions(path, send)
    except (TypeError, UnicodeError) as exc:
        # bit flips in a result's strings: the reader hands back names its own lookups refuse
        # (SWIG: "argument 2 of type 'char const *'") or text that is not UTF-8
        raise InputError(path, f"corrupt Nsight Compute report: the reader returned an unreadable metric name or value ({str(exc)[:100]})") from None
    finally:
        if enabled:
            gc.enable()


def _read_all_actions(path: str, send) -> dict[str, Any]:
    nr = require("ncu_report", "core", "reading Nsight Compute reports")
    try:
        ctx = nr.load_report(str(path))
    except Exception as exc:  # the reader's own errors (unsupported version, library missing)
        msg = first_line(exc, type(exc).__name__)
        raise InputError(path, f"ncu_report cannot load it: {msg}") from None
    sw = _Swig(nr)
    out = Columns(sink=send)
    # one unit() per distinct metric name in this report: after its first call a name's unit
    # comes from ncu_report's registry, but a first call costs ~10-40 us of CPU, the largest
    # part of reading a report in a fresh process (the bench's breakdown shows it). Measured at
    # the native level (perf and gdb on _ncu_report.so, ncu_report 2026.3.1): about half of a first
    # call builds std::regex objects from a fixed table of name patterns ('.*_pct$', 'byte',
    # '(cycles?|(dram|fbp|gpc|sys)_clks?)', ... ~11 per name) that it compiles afresh on every
    # call and drops; ~10 % asks libnvperf_host for the metric, ~9 % looks the name up in a map
    # and, when absent, parses it. Nothing of it is kept except the name's unit in the registry that
    # leaks between reports, so no report-independent part can be built ahead in the zygote, and
    # no other entry point (IMetric, IAction, sections) returns a unit
    unit_cache: dict[str, str] = {}
    kind_cache: dict[str, str] = {}
    kernels: list[dict[str, Any]] = []
    name_fn = nr.IAction.name
    FUNCTION, DEMANGLED, MANGLED = nr.IAction.NameBase_FUNCTION, nr.IAction.NameBase_DEMANGLED, nr.IAction.NameBase_MANGLED
    kid = 0
    rule_count = 0
    for ri in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(ri)
        for ai in range(rng.num_actions()):
            action = rng.action_by_idx(ai)
            if not _read_action_metrics(sw, action, kid, out, unit_cache, kind_cache):
                raise InputError(path, f"corrupt Nsight Compute report: kernel result {kid} has no readable metrics")
            wt = action.workload_type()
            kernels.append({
                "demangled": name_fn(action, DEMANGLED),
                "function": name_fn(action, FUNCTION),
                "mangled": name_fn(action, MANGLED),
                "category": WORKLOAD.get(wt, str(wt)),
            })
            kernels[-1]["nvtx_range"] = _nvtx(action, kid, out)  # its rows before the rules', as always
            rule_count += _rule_rows(action, kid, out)
            kid += 1
    reader_version = None
    try:
        reader_version = ctx.get_version()
    except Exception:
        pass
    # the last chunk travels with the result (one message fewer through the pipe)
    return {"last_chunk": out.chunk() if out.rows else None, "kernels": kernels, "rule_count": rule_count, "reader_version": reader_version}
