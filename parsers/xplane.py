"""XLA / JAX / TensorFlow profiles: `*.xplane.pb` (an XSpace protobuf, decoded from field numbers).

What lands where:

- `kernels`: device ops. On GPU planes (`/device:GPU:n`) the CUPTI/ROCm kernel events on the
  `Stream #...` lines; on TPU planes the `XLA Ops` line (no stream lines there). CPU-only JAX
  profiles run XLA ops on host threads: events that carry `hlo_op`/`hlo_module` and no launch
  correlation become the kernels of a "CPU" device. `op_name` = HLO instruction (`hlo_op`),
  `module` = HLO module (`hlo_module`, or the enclosing `XLA Modules` event on TPU), `category` =
  `hlo_category` where XLA recorded it, else the instruction's opcode from the module's HloProto.
  `flops_total` = XLA's `flops` stat (its cost analysis), `dram_*` = bytes from XLA's cost model:
  the HBM part of `memory_access_breakdown` where present, else `bytes_accessed` (operands plus
  outputs, each once: the device-memory traffic of the op when nothing is served from cache).
  Those are model numbers, never measurements: `dram_bytes_method` and `flops_method` say so
  ("cost-analysis"), and the raw `bytes_accessed`/`model_flops` stay in `metrics`.
  GPU launch details come from the `kernel_details` string (grid/block/regs/shared memory).
- `transfers`: device memcpy/memset events (`memcpy_details`: size, kinds, destination).
- `ranges`: host events (TraceMe, python tracer, CUDA/HIP API calls), step markers (kind "step":
  `Steps` lines and host events with a `step_num`), and the derived device lines (`XLA Modules`,
  `XLA Ops` on GPU, framework ops and name scopes), with nesting depth per line.
- `counters`: allocator memory in use over time (`MemoryAllocation`/`MemoryDeallocation`) and
  events on `_counters_` lines.
- metadata: device name and capabilities (the plane's `clock_rate` is kHz), host, JAX version,
  profile start/stop (`Task Environment` plane), profile options.

Time base: post-processed XSpaces (everything `jax.profiler` and TensorBoard write) have line
timestamps relative to the profile start, not the Unix epoch; the absolute start is the `Task
Environment` plane's `profile_start_time`. Tables keep the file's own time base and metadata records
which one it is. Event starts are `line.timestamp_ns * 1000 + offset_ps` in exact integer
picoseconds; `start_ns`/`end_ns` are those floored to ns, `duration_ns` keeps the picoseconds as a
fraction.
"""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from profaudit.parsers.base import Probe, ReadOptions, apply_device_option, new_profile
from profaudit.parsers.protowire import WireError, iter_fields
from profaudit.parsers.xspace import (
    KIND_BYTES,
    KIND_DOUBLE,
    KIND_INT,
    KIND_NONE,
    KIND_REF,
    KIND_STR,
    KIND_UINT,
    Plane,
    XSpace,
    _value,
    decode_xspace,
    payload_end,
    sniff_xspace,
    span_texts,
)

from profaudit.errors import InputError
from profaudit.names import short_name

# Derived / special line names (xla/tsl/profiler/utils/xplane_schema.cc).
_STEP_LINES = {"Steps", "Sparse Core Steps"}
_MODULE_LINES = {"XLA Modules", "Sparse Core Modules"}
_OP_LINES = {"XLA Ops", "Sparse Core Ops"}
_FRAMEWORK_OP_LINES = {"Framework Ops", "TensorFlow Ops"}
_NAME_SCOPE_LINES = {"Framework Name Scope", "TensorFlow Name Scope"}
_COUNTER_LINES = {"_counters_"}
_RANGE_KIND_BY_LINE = {
    **{n: "step" for n in _STEP_LINES},
    **{n: "xla_module" for n in _MODULE_LINES},
    **{n: "xla_op" for n in _OP_LINES},
    **{n: "framework_op" for n in _FRAMEWORK_OP_LINES},
    **{n: "name_scope" for n in _NAME_SCOPE_LINES},
    "Async XLA Ops": "xla_async_op",
    "Launch Stats": "launch_stats",
    "Source code": "source",
    "Host Offload Ops": "host_offload_op",
}

_SKIP_PLANES = {"/host:metadata", "Task Environment"}
_TRANSFER_NAMES = re.compile(r"^(Memcpy|Memset|Copy(HostToDevice|DeviceToHost|DeviceToDevice|HostToHost|PeerToPeer)|FillBuffer)", re.IGNORECASE)
_STREAM_RE = re.compile(r"^Stream #(\d+)")
_DEVICE_NUM_RE = re.compile(r"^/device:[A-Za-z_]+:(\d+)")
_MODULE_EVENT_RE = re.compile(r"^(.*)\((\d+)\)$")
_DETAIL_RE = re.compile(r"(\w+):(\S*)")
_ALLOCATOR_GPU = re.compile(r"^GPU_(\d+)_")

# Stats that become kernel columns (everything else lands in `metrics`).
_CONSUMED = {
    "correlation_id", "context_id", "stream", "kernel_details", "hlo_op", "hlo_module", "hlo_category",
    "flops", "bytes_accessed", "memory_access_breakdown", "theoretical_occupancy_pct", "device_id",
    "annotation", "nvtx_range", "level 0", "memcpy_details", "Memset_details",
}
# Trace-graph plumbing (flow ids, root markers): meaningless outside the trace viewer.
_INTERNAL_STATS = {"_p", "_c", "_pt", "_ct", "_r", "_a", "_pid", "_src", "_ipl_stage_id"}
_MAX_PLAUSIBLE_REGS = 1024
_MAX_PLAUSIBLE_SHARED = 1 << 20

_PICO = 1000


_TOOL_FILE = re.compile(r"\.(input_pipeline|overview_page|tensorflow_stats|pod_viewer|op_profile|memory_profile|memory_viewer|kernel_stats|trace_viewer|framework_op_stats|roofline_model|hlo_stats)\.(pb|json)(\.gz)?$")


class XPlaneParser:
    name = "xplane"
    source = "xla"
    suffixes = (".xplane.pb",)
    description = "XLA/JAX/TensorFlow XSpace protobuf (jax.profiler, TensorBoard plugins/profile/<run>/<host>.xplane.pb)"

    def sniff(self, probe: Probe) -> bool:
        # a file named .xplane.pb is claimed whatever it holds, so damage gets an XSpace-specific error
        return probe.name_endswith(".xplane.pb") or (not probe.gzipped and sniff_xspace(probe.raw_head))

    def diagnose(self, probe: Probe) -> str | None:
        # TensorBoard's profile plugin wrote one file per tool before XSpace existed (and xprof
        # still caches them beside the run): derived views, not the profile
        m = _TOOL_FILE.search(probe.path.name.lower())
        if m and not probe.is_dir:
            return (f"a TensorBoard profile-plugin tool file ({m.group(1)}), a derived view rather than a profile: "
                    "load the run's <host>.xplane.pb (or its folder) instead")
        return None

    def read(self, path: Path, options: ReadOptions):
        space = read_xspace(path)
        tables, md = space_to_tables(space, path)
        if not space.hostnames:
            # the profiler writes XSpace.hostnames (field 4) last; every capture seen has it. Without it
            # the file may have been cut at a field boundary, which the wire format cannot show
            # otherwise (planes after the cut would be missing)
            from profaudit.parsers.completeness import mark_incomplete

            mark_incomplete(md, "the XSpace ends without the hostname the profiler writes last: the file was probably cut short (planes may be missing)")
        apply_device_option(tables, md, options.device)
        return new_profile(path, self, tables, md)


PARSER = XPlaneParser()


# --------------------------------------------------------------------------------------------
# reading


def read_xspace(path: Path) -> XSpace:
    """Read and decode an XSpace file; damage becomes one InputError line."""
    path = Path(path)
    try:
        buf = path.read_bytes()
    except OSError as exc:
        raise InputError.unreadable(path, exc) from None
    if not buf:
        raise InputError(path, "empty file")
    if buf[:2] == b"\x1f\x8b":
        raise InputError(path, "gzip-compressed data, not an XSpace protobuf (gunzip it first)")
    try:
        space = decode_xspace(buf)
    except WireError as exc:
        hint = ""
        n_fffd = buf.count(b"\xef\xbf\xbd")
        if n_fffd > 16:
            hint = f"; it holds {n_fffd} UTF-8 replacement sequences (EF BF BD): the binary went through a text conversion, fetch the original bytes"
        raise InputError(path, f"corrupt or truncated XSpace protobuf: {exc}{hint}") from None
    if not space.planes:
        raise InputError(path, "XSpace protobuf holds no planes")
    return space


# --------------------------------------------------------------------------------------------
# device naming


def _int(v: Any) -> int | None:
    if v is None:
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        try:
            return int(float(v))
        except (TypeError, ValueError):
            return None


def _float(v: Any) -> float | None:
    if v is None:
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


# (vendor, cc major, cc minor, cores) -> product name as vendors' tools print it; memory size
# and clock split variants that share a die. Only used when the plane carries no name.
def _gpu_model(vendor: str, major: int | None, minor: int | None, cores: int | None, mem: int | None, clock_khz: int | None,
               bw: float | None = None) -> str | None:
    gib = (mem or 0) / 2**30
    if vendor == "AMD":
        if (major, minor) == (9, 4):
            if cores == 304:
                return "AMD Instinct MI325X" if gib > 200 else "AMD Instinct MI300X"
            if cores == 228:
                return "AMD Instinct MI300A"
        if (major, minor) == (9, 0) and cores in (104, 110):
            return "AMD Instinct MI210" if cores == 104 else "AMD Instinct MI250X"
        if (major, minor) == (9, 5) and cores == 256:
            return "AMD Instinct MI355X"
        return None
    key = (major, minor, cores)
    if key == (7, 0, 80):
        form = "SXM2" if clock_khz and clock_khz >= 1500000 else "PCIE"
        return f"Tesla V100-{form}-{'32GB' if gib > 17 else '16GB'}"
    if key == (7, 5, 40):
        return "Tesla T4"
    if key == (8, 0, 108):
        if gib > 41 and bw:
            # SXM4 80GB runs HBM2e at 1593 MHz (2.04 TB/s), the PCIe card at 1512 MHz (1.94 TB/s)
            return "NVIDIA A100-SXM4-80GB" if bw > 2.0e12 else "NVIDIA A100 80GB PCIe"
        return f"NVIDIA A100 {'80GB' if gib > 41 else '40GB'}"
    if key == (8, 6, 72):
        return "NVIDIA A10"
    if key == (8, 6, 80):
        return "NVIDIA A10G"
    if key == (8, 9, 58):
        return "NVIDIA L4"
    if key == (8, 9, 142):
        return "NVIDIA L40S"
    if key == (8, 9, 128):
        return "NVIDIA GeForce RTX 4090"
    if key == (9, 0, 132):
        return "NVIDIA H200" if gib > 100 else "NVIDIA H100 80GB HBM3"
    if key == (9, 0, 114):
        return "NVIDIA H100 PCIe"
    if key == (10, 0, 148):
        return "NVIDIA B200"
    return None


def describe_device(plane: Plane, stats: dict) -> dict:
    """Name and capabilities of one device plane, with where the name came from."""
    name = plane.name
    num = _DEVICE_NUM_RE.match(name)
    info: dict[str, Any] = {"plane": name, "device_id": int(num.group(1)) if num else plane.id}
    if name.startswith("/device:TPU"):
        info["kind"] = "TPU"
        dts = stats.get("device_type_string")
        info["device_name"] = str(dts) if dts else "TPU"
        info["device_name_origin"] = "recorded" if dts else "plane name"
        for k in ("peak_teraflops_per_second", "peak_hbm_bw_gigabytes_per_second", "peak_sram_rd_bw_gigabytes_per_second",
                  "peak_sram_wr_bw_gigabytes_per_second", "peak_cmem_rd_bw_gigabytes_per_second", "peak_vmem_rd_bw_gigabytes_per_second"):
            if k in stats:
                info[k] = _float(stats[k])
    elif name.startswith("/device:GPU"):
        info["kind"] = "GPU"
        vendor = str(stats.get("device_vendor") or "Nvidia")
        info["vendor"] = "AMD" if vendor.upper() == "AMD" else "NVIDIA" if vendor.lower() == "nvidia" else vendor
        major, minor = _int(stats.get("compute_cap_major")), _int(stats.get("compute_cap_minor"))
        cores, mem, clk = _int(stats.get("core_count")), _int(stats.get("memory_size")), _int(stats.get("clock_rate"))
        recorded = stats.get("gpu_device_name") or stats.get("device_type_string")
        model = None if recorded else _gpu_model(info["vendor"], major, minor, cores, mem, clk, _float(stats.get("memory_bandwidth")))
        if recorded:
            info["device_name"], info["device_name_origin"] = str(recorded), "recorded"
        elif model:
            info["device_name"] = model
            info["device_name_origin"] = "inferred from vendor, compute capability, core count and memory size"
        else:
            unit = "CUs" if info["vendor"] == "AMD" else "SMs"
            info["device_name"] = f"{info['vendor']} GPU (compute capability {major}.{minor}, {cores} {unit})"
            info["device_name_origin"] = "capabilities only"
        if major is not None:
            info["compute_capability"] = f"{major}.{minor}"
        if clk is not None:
            # cudaDevAttrClockRate / hipDeviceAttributeClockRate: kHz, the rated peak, not a measurement
            info["clock_rate_hz"] = clk * 1000.0
        if cores is not None:
            info["core_count"] = cores
        if mem is not None:
            info["memory_size_bytes"] = mem
        bw = _float(stats.get("memory_bandwidth"))
        if bw is not None:
            info["memory_bandwidth_bytes_per_s"] = bw
    else:
        info["kind"] = name.split(":")[1] if ":" in name else name
        info["device_name"] = name
        info["device_name_origin"] = "plane name"
    return info


# --------------------------------------------------------------------------------------------
# stat helpers


def parse_details(s: str) -> dict[str, str]:
    """`regs:38 shm:0 grid:160,1,1 block:1024,1,1` -> {"regs": "38", ...}."""
    return dict(_DETAIL_RE.findall(s or ""))


def _dims(v: str | None) -> tuple[int | None, int | None, int | None]:
    if not v:
        return None, None, None
    parts = [_int(x) for x in v.split(",")]
    parts += [None] * (3 - len(parts))
    return parts[0], parts[1], parts[2]


def _memory_breakdown(raw: Any) -> tuple[float | None, float | None]:
    """HBM read and write bytes from a serialized MemoryAccessBreakdown (memory_space 1 = HBM)."""
    if not isinstance(raw, (bytes, bytearray)) or not raw:
        return None, None
    rd = wr = 0
    found = False
    try:
        for f, wt, span in iter_fields(raw):
            if f != 1 or wt != 2:
                continue
            op = space = nbytes = 0
            for f2, wt2, v in iter_fields(raw, *span):
                if wt2 != 0:
                    continue
                if f2 == 1:
                    op = v
                elif f2 == 2:
                    space = v
                elif f2 == 3:
                    nbytes = v
            if space == 1:
                found = True
                if op == 2:
                    wr += nbytes
                else:
                    rd += nbytes
    except WireError:
        return None, None
    return (float(rd), float(wr)) if found else (None, None)


def _transfer_direction(name: str, details: dict) -> str | None:
    n = name.replace("To", "2").replace("to", "2")
    for tag, d in (("H2D", "HtoD"), ("D2H", "DtoH"), ("D2D", "DtoD"), ("P2P", "PtoP"), ("H2H", "HtoH")):
        if tag in n or tag in n.upper():
            return d
    u = name.upper()
    if "HOST2DEVICE" in u.replace("TO", "2"):
        return "HtoD"
    if "DEVICE2HOST" in u.replace("TO", "2"):
        return "DtoH"
    if "DEVICE2DEVICE" in u.replace("TO", "2"):
        return "DtoD"
    return details.get("kind") if details.get("kind") not in (None, "Unknown") else None


def _iso(ns: int | None) -> str | None:
    if not ns or ns < 10**17:
        return None
    return _dt.datetime.fromtimestamp(ns / 1e9, tz=_dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _decode_profile_options(raw: Any) -> dict | None:
    if not isinstance(raw, (bytes, bytearray)):
        return None
    names = {1: "include_dataset_ops", 2: "host_tracer_level", 3: "device_tracer_level", 4: "python_tracer_level",
             5: "version", 6: "device_type", 7: "enable_hlo_proto", 8: "start_timestamp_ns", 9: "duration_ms"}
    out = {}
    try:
        for f, wt, v in iter_fields(raw):
            if f in names and wt == 0:
                out[names[f]] = v
            elif f == 10 and wt == 2:
                out["repository_path"] = raw[v[0]:v[1]].decode("utf-8", "replace")
    except WireError:
        return None
    if "device_type" in out:
        out["device_type"] = {0: "UNSPECIFIED", 1: "CPU", 2: "GPU", 3: "TPU", 4: "PLUGGABLE_DEVICE"}.get(out["device_type"], out["device_type"])
    return out


def _hlo_modules(space: XSpace) -> tuple[dict[int, str], dict[int, Any], dict[str, Any]]:
    """program_id -> module name, program_id -> HloProto bytes (decoded lazily), module name -> bytes."""
    names: dict[int, str] = {}
    protos: dict[int, Any] = {}
    by_name: dict[str, Any] = {}
    md_plane = space.plane("/host:metadata")
    if md_plane is None:
        return names, protos, by_name
    for mid, md in md_plane.event_metadata.items():
        st = md_plane.named(md.stats)
        pid = _int(st.get("program_id"))
        m = _MODULE_EVENT_RE.match(md.name or "")
        if pid is None:
            pid = int(m.group(2)) if m else mid
        mname = m.group(1) if m else md.name
        names[pid] = mname
        blob = st.get("Hlo Proto")
        if isinstance(blob, (bytes, bytearray)):
            protos[pid] = blob
            by_name.setdefault(mname, blob)
    return names, protos, by_name


class _HloIndex:
    def __init__(self, space: XSpace):
        self.names, self._blobs, self._by_name = _hlo_modules(space)
        self._decoded: dict[Any, Any] = {}

    @property
    def has_protos(self) -> bool:
        return bool(self._blobs or self._by_name)

    def instruction(self, program_id: int | None, module: str | None, op: str | None):
        if not op:
            return None
        key = program_id if program_id in self._blobs else module
        blob = self._blobs.get(program_id) if program_id in self._blobs else self._by_name.get(module or "")
        if blob is None:
            return None
        mod = self._decoded.get(key)
        if mod is None:
            from profaudit.parsers.hloproto import decode_hlo_proto

            try:
                mod = decode_hlo_proto(blob)
            except WireError:
                mod = False
            self._decoded[key] = mod
        return mod.instructions.get(op) if mod else None


# --------------------------------------------------------------------------------------------
# nesting


def _nest(starts: list[int], ends: list[int]) -> tuple[list[int], list[int | None]]:
    """Depth and parent index of each interval on one timeline (events nest, they do not cross).

    Input order is arbitrary; parents are found by sorting on (start, -end). This is the reference
    `_nest_lines` reproduces column-wise, and what it falls back to for a timeline it cannot do."""
    order = sorted(range(len(starts)), key=lambda i: (starts[i], -ends[i]))
    depth = [0] * len(starts)
    parent: list[int | None] = [None] * len(starts)
    stack: list[int] = []
    for i in order:
        s = starts[i]
        while stack and ends[stack[-1]] <= s and not (ends[stack[-1]] == s == starts[stack[-1]]):
            stack.pop()
        if stack and ends[i] <= ends[stack[-1]]:
            parent[i] = stack[-1]
            depth[i] = depth[stack[-1]] + 1
        elif stack:
            # crossing intervals (should not happen in one XLine): treat as a sibling
            while stack and ends[stack[-1]] < ends[i]:
                stack.pop()
            if stack:
                parent[i] = stack[-1]
                depth[i] = depth[stack[-1]] + 1
        stack.append(i)
    return depth, parent


def _nest_lines(group: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`_nest` for many timelines at once: depth and parent (index into the inputs, -1 for none)
    of intervals whose timeline is `group` and whose start/end on it are s/e (int64).

    For properly nested intervals sorted by (start, -end) the stack of `_nest` is countable:
    interval i's depth is the number of earlier intervals of its timeline still open at its start
    (an interval is open at t while it ends after t, or is zero-length at t), and its parent is the
    last earlier interval one level up. Each result is checked against what the stack would do
    (the parent contains the child and is open at its start); a timeline that fails (crossing
    intervals, negative durations, a zero-length interval on its parent's end, which keeps the
    closed parent on the stack) goes through `_nest` itself. Input order breaks ties, as there."""
    n = s.size
    depth = np.zeros(n, np.int64)
    parent = np.full(n, -1, np.int64)
    if not n:
        return depth, parent
    at = np.arange(n)
    # timelines are contiguous and in (start, -end) order already when read from a file: keep that
    new = np.r_[True, group[1:] != group[:-1]]
    same = ~new[1:]
    in_order = (np.count_nonzero(new) == np.unique(group[new]).size
                and bool(np.all(~same | (s[1:] > s[:-1]) | ((s[1:] == s[:-1]) & (e[1:] <= e[:-1])))))
    if in_order:
        order = at
        S, E = s, e
    else:
        order = np.lexsort((at, -e, s, group))
        S, E = s[order], e[order]
        g = group[order]
        new = np.r_[True, g[1:] != g[:-1]]
    gid = np.cumsum(new) - 1
    first = np.flatnonzero(new)
    gstart = first[gid]
    # (timeline, time) as one comparable integer, so every timeline is counted by one sort: each
    # timeline's times shifted into its own range, or ranked when those ranges do not fit int64
    lo = np.minimum.reduceat(np.minimum(S, E), first)
    hi = np.maximum.reduceat(np.maximum(S, E), first)
    width = hi.astype(np.float64) - lo.astype(np.float64) + 1
    if float(width.sum()) < 2.0**62:
        shift = np.r_[0, np.cumsum((hi - lo + 1)[:-1])]
        rs, rend = (S - lo[gid]) + shift[gid], (E - lo[gid]) + shift[gid]
    else:
        tg = np.concatenate([gid, gid])
        tv = np.concatenate([S, E])
        o2 = np.lexsort((tv, tg))
        step = np.r_[True, (tg[o2][1:] != tg[o2][:-1]) | (tv[o2][1:] != tv[o2][:-1])]
        rank = np.empty(2 * n, np.int64)
        rank[o2] = np.cumsum(step)
        rs, rend = rank[:n], rank[n:]
    # closed at S_i: ended before it, or ended at it unless zero-length (those stay open at their point)
    closed = np.searchsorted(np.sort(rend), rs, "right") - gstart
    zero = np.sort(rend[S == E])
    if zero.size:
        closed -= np.searchsorted(zero, rs, "right") - np.searchsorted(zero, rs, "left")
    del rs, rend, zero
    d = at - gstart - closed
    del closed
    keys = np.sort(np.maximum(d, 0) * n + at)
    k = np.searchsorted(keys, (d - 1) * n + at, "left") - 1
    cand = keys[np.maximum(k, 0)]
    del keys
    has = (d >= 1) & (k >= 0) & (cand // n == d - 1) & (cand % n >= gstart)
    p = np.where(has, cand % n, -1)
    del k, cand, gstart
    bad = (d < 0) | (E < S) | ((d >= 1) & ~has)
    hp = np.flatnonzero(has)
    Sp, Ep = S[p[hp]], E[p[hp]]
    bad[hp] |= (E[hp] > Ep) | ~((Ep > S[hp]) | ((Ep == S[hp]) & (Sp == Ep))) | ((S[hp] == E[hp]) & (S[hp] == Ep))
    depth[order] = d
    parent[order] = np.where(p >= 0, order[np.maximum(p, 0)], -1)
    bounds = np.r_[first, n]
    for b in np.unique(gid[bad]).tolist():
        members = np.sort(order[bounds[b] : bounds[b + 1]])
        dd, pp = _nest(s[members].tolist(), e[members].tolist())
        depth[members] = dd
        parent[members] = [-1 if x is None else int(members[x]) for x in pp]
    return depth, parent


# --------------------------------------------------------------------------------------------
# stats, column-wise


def _nulls(n: int, dtype=pl.String) -> pl.Series:
    return pl.repeat(None, n, dtype=dtype, eager=True)


def _series(values: np.ndarray, valid: np.ndarray | None = None, dtype=None) -> pl.Series:
    s = pl.Series(values, dtype=dtype) if dtype is not None else pl.Series(values)
    if valid is not None and not valid.all():
        s = s.scatter(np.flatnonzero(~valid), None)
    return s


def _labels(*cases: tuple[np.ndarray, str]) -> pl.Series:
    """The label of the first true mask per row (null where none is)."""
    expr = pl.when(pl.Series(cases[0][0])).then(pl.lit(cases[0][1]))
    for mask, label in cases[1:]:
        expr = expr.when(pl.Series(mask)).then(pl.lit(label))
    return pl.select(expr.otherwise(pl.lit(None, dtype=pl.String))).to_series()


def _per_unique(values: pl.Series, fn, schema: dict) -> pl.DataFrame:
    """fn(value) -> tuple, one column per schema entry, evaluated once per distinct non-null value
    (Python per distinct string, never per event), aligned with `values`."""
    u = values.drop_nulls().unique()
    out = [fn(x) for x in u.to_list()]
    table = pl.DataFrame({"_k": u, **{c: [r[i] for r in out] for i, c in enumerate(schema)}},
                         schema_overrides=schema, strict=False)
    return values.rename("_k").to_frame().join(table, on="_k", how="left", maintain_order="left").drop("_k")


def _unique_map(values: pl.Series, fn, dtype) -> pl.Series:
    return _per_unique(values, lambda x: (fn(x),), {"v": dtype}).to_series()


class _Values:
    """One stat, by name, of a list of target events: the event's own value where it has one, else
    its event metadata's. Every accessor returns one entry per target."""

    def __init__(self, cv: _Conv, n: int, at: np.ndarray, kind: np.ndarray, raw: np.ndarray, s: np.ndarray, e: np.ndarray, plane: np.ndarray):
        self.cv, self.n, self.at, self.kind, self.raw, self.s, self.e, self.plane = cv, n, at, kind, raw, s, e, plane
        self._texts: pl.Series | None = None

    def _mask(self, rows: np.ndarray | None = None) -> np.ndarray:
        m = np.zeros(self.n, bool)
        m[self.at if rows is None else self.at[rows]] = True
        return m

    @property
    def present(self) -> np.ndarray:
        """The stat is there (a stat with no value set counts: `name in stats`)."""
        return self._mask()

    @property
    def has_value(self) -> np.ndarray:
        return self._mask(np.flatnonzero(self.kind != KIND_NONE))

    def _row_texts(self) -> pl.Series:
        """str and ref values per row (refs resolved to their stat metadata name), null otherwise."""
        if self._texts is None:
            t = _nulls(self.at.size)
            r = np.flatnonzero(self.kind == KIND_STR)
            if r.size:
                t = t.scatter(r, span_texts(self.cv.buf, self.s[r], self.e[r]))
            r = np.flatnonzero(self.kind == KIND_REF)
            if r.size:
                t = t.scatter(r, self.cv.ref_names(self.plane[r], self.raw[r]))
            self._texts = t
        return self._texts

    def _py(self, rows: np.ndarray) -> list:
        return [_value(self.cv.buf, k, r, s, e) for k, r, s, e in zip(
            self.kind[rows].tolist(), self.raw[rows].tolist(), self.s[rows].tolist(), self.e[rows].tolist())]

    def strs(self) -> pl.Series:
        """str(value), null where absent or valueless."""
        t = self._row_texts()
        r = np.flatnonzero(np.isin(self.kind, (KIND_DOUBLE, KIND_UINT, KIND_INT, KIND_BYTES)))
        if r.size:
            t = t.clone().scatter(r, [str(v) for v in self._py(r)])
        return _nulls(self.n).scatter(self.at, t) if self.at.size else _nulls(self.n)

    def _numeric(self, float_out: bool, text_fn) -> tuple[np.ndarray, np.ndarray]:
        dtype = np.float64 if float_out else np.int64
        v = np.zeros(self.n, dtype)
        ok = np.zeros(self.n, bool)
        k, raw = self.kind, self.raw
        for kind in (KIND_DOUBLE, KIND_UINT, KIND_INT):
            r = np.flatnonzero(k == kind)
            if not r.size:
                continue
            x = raw[r]
            if kind == KIND_DOUBLE:
                f = x.view(np.float64)
                if float_out:
                    good, val = np.ones(r.size, bool), f
                else:  # int(v): truncation; nan/inf and values beyond int64 have no int64
                    good = np.isfinite(f) & (np.abs(f) < 2.0**63)
                    val = np.trunc(np.where(good, f, 0)).astype(np.int64)
            elif kind == KIND_UINT:
                good = np.ones(r.size, bool) if float_out else x < np.uint64(1 << 63)
                val = x.astype(np.float64) if float_out else x.view(np.int64)
            else:
                good = np.ones(r.size, bool)
                val = x.view(np.int64).astype(np.float64) if float_out else x.view(np.int64)
            v[self.at[r]] = val
            ok[self.at[r]] = good
        r = np.flatnonzero((k == KIND_STR) | (k == KIND_REF))
        if r.size:
            conv = _unique_map(self._row_texts().gather(r), text_fn, pl.Float64 if float_out else pl.Int64)
            good = conv.is_not_null().to_numpy()
            v[self.at[r]] = conv.fill_null(0).to_numpy()
            ok[self.at[r]] = good
        r = np.flatnonzero(k == KIND_BYTES)
        for row, val in zip(r.tolist(), self._py(r)):
            x = text_fn(val)
            if x is not None and (float_out or -(2**63) <= x < 2**63):
                v[self.at[row]], ok[self.at[row]] = x, True
        return v, ok

    def floats(self) -> tuple[np.ndarray, np.ndarray]:
        """_float(value): (values, valid)."""
        return self._numeric(True, _float)

    def ints(self, text_fn=None) -> tuple[np.ndarray, np.ndarray]:
        """_int(value) where it fits int64: (values, valid)."""
        return self._numeric(False, text_fn or _int)

    def truthy(self) -> np.ndarray:
        k = self.kind
        t = np.zeros(self.at.size, bool)
        num = (k == KIND_UINT) | (k == KIND_INT)
        t[num] = self.raw[num] != 0
        d = k == KIND_DOUBLE
        t[d] = self.raw[d].view(np.float64) != 0  # nan is true, as in Python
        sb = (k == KIND_STR) | (k == KIND_BYTES)
        t[sb] = self.e[sb] > self.s[sb]
        r = np.flatnonzero(k == KIND_REF)
        if r.size:
            t[r] = self._row_texts().gather(r).str.len_bytes().to_numpy() > 0
        return self._mask(np.flatnonzero(t))

    def blobs(self) -> tuple[list[int], list[bytes]]:
        """The bytes values: (target positions, values)."""
        r = np.flatnonzero(self.kind == KIND_BYTES)
        return self.at[r].tolist(), self._py(r)


class _Merged:
    """The stats of a set of events merged as `{**metadata stats, **event stats}` by stat name:
    one row per (event, name) with the winning value and the name's position in that dict."""

    def __init__(self, cv: _Conv, targets: np.ndarray, ev, nid, kind, raw, s, e, pos):
        order = np.lexsort((ev, nid))
        self.cv, self.targets = cv, targets
        self.ev, self.nid, self.kind, self.raw, self.s, self.e, self.pos = (x[order] for x in (ev, nid, kind, raw, s, e, pos))

    def get(self, name: str) -> _Values:
        x = self.cv.name_index.get(name, -1)
        lo, hi = np.searchsorted(self.nid, [x, x + 1]) if x >= 0 else (0, 0)
        ev = self.ev[lo:hi]
        return _Values(self.cv, self.targets.size, np.searchsorted(self.targets, ev), self.kind[lo:hi], self.raw[lo:hi],
                       self.s[lo:hi], self.e[lo:hi], self.cv.ev_plane[ev])

    def all(self, rows: np.ndarray) -> _Values:
        """Every merged row given (indices into this object's arrays) as one _Values."""
        ev = self.ev[rows]
        return _Values(self.cv, rows.size, np.arange(rows.size), self.kind[rows], self.raw[rows], self.s[rows], self.e[rows], self.cv.ev_plane[ev])


class _PlaneTable:
    """(plane, id) -> value for per-plane id spaces (a later entry for the same key wins): a dense
    array when the ids are small, as writers make them, else a polars join."""

    def __init__(self, plane: np.ndarray, key: np.ndarray, value: np.ndarray, n_planes: int):
        self._dense = None
        self._df = pl.DataFrame({"p": plane, "k": key, "v": value}).unique(["p", "k"], keep="last")
        if key.size and key.min() >= 0 and n_planes * (int(key.max()) + 1) <= 1 << 24:
            last = self._df
            self._dense = np.full((n_planes, int(key.max()) + 1), -1, np.int64)
            self._dense[last["p"].to_numpy(), last["k"].to_numpy()] = last["v"].to_numpy()

    def get(self, plane: np.ndarray, key: np.ndarray) -> np.ndarray:
        """Values, -1 where the plane has no such id."""
        if not plane.size or not self._df.height:
            return np.full(plane.size, -1, np.int64)
        if self._dense is not None:
            width = self._dense.shape[1]
            inside = (key >= 0) & (key < width)
            return np.where(inside, self._dense.ravel()[plane * width + np.where(inside, key, 0)], -1)
        q = pl.DataFrame({"p": plane, "k": key})
        return q.join(self._df, on=["p", "k"], how="left", maintain_order="left")["v"].fill_null(-1).to_numpy()


class _Conv:
    """Column-wise facts of a decoded XSpace the conversion needs: per-event plane and metadata row,
    event names, stat names (one number per distinct name across planes) and merged stats."""

    def __init__(self, space: XSpace):
        self.space = space
        self.buf = space.buf
        ev = space.events
        n_planes = len(space.planes)
        line_plane = np.array([l.plane for l in space.lines], np.int64)
        self.ev_plane = line_plane[ev.line] if len(ev) else np.zeros(0, np.int64)
        self.name_index: dict[str, int] = {}
        index = self.name_index
        sn_plane = np.repeat(np.arange(n_planes, dtype=np.int64), [len(p.stat_names) for p in space.planes])
        sn_sid = np.fromiter((sid for p in space.planes for sid in p.stat_names), np.int64, sn_plane.size)
        sn_nid = np.fromiter((index.setdefault(n, len(index)) for p in space.planes for n in p.stat_names.values()), np.int64, sn_plane.size)
        self.names: list[str] = list(index)
        self._stat_names = _PlaneTable(sn_plane, sn_sid, sn_nid, n_planes)
        md = space.metadata
        self.ev_md = _PlaneTable(md.plane, md.key, np.arange(len(md)), n_planes).get(self.ev_plane, ev.metadata_id)
        label = span_texts(self.buf, *md.name)
        unnamed = np.flatnonzero((md.name[1] == md.name[0]) & (md.display_name[1] > md.display_name[0]))
        if unnamed.size:
            label = label.scatter(unnamed, span_texts(self.buf, md.display_name[0][unnamed], md.display_name[1][unnamed]))
        self.md_label = label
        self._ms_nid: np.ndarray | None = None
        self._es_nid: np.ndarray | None = None

    def nid(self, name: str) -> int:
        i = self.name_index.get(name)
        if i is None:
            i = self.name_index[name] = len(self.names)
            self.names.append(name)
        return i

    def _lookup(self, plane: np.ndarray, sid: np.ndarray) -> np.ndarray:
        """(plane, stat metadata id) -> name number, -1 where the plane has no such stat metadata."""
        return self._stat_names.get(plane, sid)

    def stat_nids(self, plane: np.ndarray, sid: np.ndarray) -> np.ndarray:
        nid = self._lookup(plane, sid)
        miss = np.flatnonzero(nid < 0)
        if miss.size:
            ids, inv = np.unique(sid[miss], return_inverse=True)
            nid[miss] = np.array([self.nid(f"<stat {m}>") for m in ids.tolist()], np.int64)[inv]
        return nid

    def ref_names(self, plane: np.ndarray, raw: np.ndarray) -> pl.Series:
        nid = self._lookup(plane, raw.view(np.int64))
        out = pl.Series(self.names, dtype=pl.String).gather(np.maximum(nid, 0)) if self.names else _nulls(nid.size)
        miss = np.flatnonzero(nid < 0)
        if miss.size:
            out = out.scatter(miss, [f"<ref {r}>" for r in raw[miss].tolist()])
        return out

    def event_names(self, idx: np.ndarray) -> pl.Series:
        r = self.ev_md[idx]
        has = r >= 0
        out = self.md_label.gather(np.where(has, r, 0)) if self.md_label.len() else _nulls(idx.size)
        if not has.all():
            miss = np.flatnonzero(~has)
            out = out.scatter(miss, [f"<event {m}>" for m in self.space.events.metadata_id[idx[miss]].tolist()])
        return out

    def merged(self, evs: np.ndarray, wanted: set[str] | None = None) -> _Merged:
        """Stats of the events `evs` (sorted global event rows), only the `wanted` names if given."""
        space = self.space
        want = None if wanted is None else np.array(sorted(self.nid(w) for w in wanted), np.int64)
        # the events' own stats
        st = space.event_stats
        if self._es_nid is None:
            self._es_nid = self.stat_nids(self.ev_plane[st.owner], st.metadata_id).astype(np.int32) if len(st) else np.zeros(0, np.int32)
        sel = np.zeros(len(space.events), bool)
        sel[evs] = True
        take = sel[st.owner] if len(st) else np.zeros(0, bool)
        if want is not None:
            wanted_name = np.zeros(len(self.names), bool)
            wanted_name[want] = True
            take &= wanted_name[self._es_nid]
        r1 = np.flatnonzero(take)
        del take
        n1 = self._es_nid[r1]
        # their metadata's stats, one copy per event
        ms = space.metadata_stats
        if self._ms_nid is None:
            self._ms_nid = self.stat_nids(space.metadata.plane[ms.owner], ms.metadata_id) if len(ms) else np.zeros(0, np.int64)
        mr = np.arange(len(ms)) if want is None else np.flatnonzero(np.isin(self._ms_nid, want))
        owners = ms.owner[mr]
        row = self.ev_md[evs]
        lo = np.searchsorted(owners, row, "left")
        cnt = np.where(row >= 0, np.searchsorted(owners, row, "right") - lo, 0)
        total = int(cnt.sum())
        start = np.cumsum(cnt) - cnt
        r0 = mr[np.repeat(lo, cnt) + np.arange(total) - np.repeat(start, cnt)]
        ev = np.concatenate([np.repeat(evs, cnt), st.owner[r1]])
        nid = np.concatenate([self._ms_nid[r0], n1])
        prio = np.concatenate([np.zeros(total, np.int64), np.ones(r1.size, np.int64)])
        ordinal = np.concatenate([r0, r1])
        cols = [np.concatenate([getattr(ms, c)[r0], getattr(st, c)[r1]]) for c in ("kind", "raw", "start")]
        cols.append(payload_end(*cols))
        order = np.lexsort((ordinal, prio, nid, ev))
        ev, nid = ev[order], nid[order]
        brk = np.flatnonzero((ev[1:] != ev[:-1]) | (nid[1:] != nid[:-1])) + 1
        first = np.r_[0, brk] if ev.size else np.zeros(0, np.int64)
        last = np.r_[brk - 1, ev.size - 1] if ev.size else np.zeros(0, np.int64)
        # dict position: metadata keys first (in their order), then the event's new keys
        pos = (prio[order][first] << 40) + ordinal[order][first]
        win = order[last]
        return _Merged(self, evs, ev[first], nid[first], *(c[win] for c in cols), pos)


# --------------------------------------------------------------------------------------------
# the conversion


def _dims_of(details: str) -> tuple:
    """Everything a kernel takes from its kernel_details string (once per distinct string)."""
    det = parse_details(details)
    gx, gy, gz = _dims(det.get("grid"))
    bx, by, bz = _dims(det.get("block"))
    regs = _int(det.get("regs"))
    static_sh = _int(det.get("static_shared"))
    dyn_sh = _int(det.get("dynamic_shared"))
    shared = _int(det.get("shm")) if "shm" in det else _int(det.get("group_mem"))
    dropped = 0
    if regs is not None and not 0 <= regs <= _MAX_PLAUSIBLE_REGS:
        regs, dropped = None, dropped + 1
    for v in (static_sh, dyn_sh, shared):
        if v is not None and not 0 <= v <= _MAX_PLAUSIBLE_SHARED:
            static_sh = dyn_sh = shared = None
            dropped += 1
            break
    if shared is None and static_sh is not None and dyn_sh is not None:
        shared = static_sh + dyn_sh
    occ = _float(det.get("occ_pct")) if det.get("occ_pct") not in (None, "", "0") else None
    return (gx, gy, gz, bx, by, bz,
            gx * (gy or 1) * (gz or 1) if gx is not None else None, bx * (by or 1) * (bz or 1) if bx is not None else None,
            regs, shared, static_sh, dyn_sh, dropped, occ)


_DIMS_SCHEMA = {c: pl.Int64 for c in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "grid_size", "block_size",
                                       "registers_per_thread", "shared_mem_bytes", "static_shared_mem_bytes", "dynamic_shared_mem_bytes", "_dropped")}
_DIMS_SCHEMA["_occ"] = pl.Float64


def _context_id(v: Any) -> int | None:
    # ROCm builds record the context as a string ("$3")
    return _int(v.lstrip("$")) if isinstance(v, str) else None


def _kernels(cv: _Conv, idx: np.ndarray, M: _Merged, t: dict, hlo: _HloIndex, dev_name: pl.Series, dev_id: tuple,
             line_stream: tuple, op_line: np.ndarray) -> tuple[pl.DataFrame, int]:
    """Kernel columns of the events `idx` (and how many implausible kernel_details were dropped)."""
    n = idx.size
    names = cv.event_names(idx)
    det_v = M.get("kernel_details")
    det = _per_unique(pl.select(pl.when(pl.Series(det_v.truthy())).then(det_v.strs()).otherwise(pl.lit(""))).to_series(),
                      _dims_of, _DIMS_SCHEMA)
    occ, occ_ok = M.get("theoretical_occupancy_pct").floats()
    program, program_ok = M.get("program_id").ints()
    module = M.get("hlo_module").strs()
    if hlo.names:
        known = np.flatnonzero(module.is_null().to_numpy() & program_ok & np.isin(program, list(hlo.names)))
        if known.size:
            module = module.scatter(known, [hlo.names[p] for p in program[known].tolist()])
    op = M.get("hlo_op").strs()
    op_name = pl.select(pl.when(op.is_not_null()).then(op).when(pl.Series(op_line)).then(names)).to_series()
    ctx_v = M.get("context_id")
    ctx, ctx_ok = ctx_v.ints(_context_id)
    stream, stream_ok = M.get("stream").ints()
    stream = np.where(stream_ok, stream, line_stream[0])
    stream_ok = stream_ok | line_stream[1]
    corr, corr_ok = M.get("correlation_id").ints()
    flops, flops_ok = M.get("flops").floats()
    acc, acc_ok = M.get("bytes_accessed").floats()
    rd = np.zeros(n)
    wr = np.zeros(n)
    rd_ok = np.zeros(n, bool)
    wr_ok = np.zeros(n, bool)
    seen: dict = {}
    for i, b in zip(*M.get("memory_access_breakdown").blobs()):
        r = seen.get(b)
        if r is None:
            r = seen[b] = _memory_breakdown(b)
        if r[0] is not None:
            rd[i], rd_ok[i] = r[0], True
        if r[1] is not None:
            wr[i], wr_ok[i] = r[1], True
    brk = rd_ok | wr_ok
    dram = np.where(brk, np.where(rd_ok, rd, 0.0) + np.where(wr_ok, wr, 0.0), acc)
    dram_ok = brk | acc_ok
    nv, an = M.get("nvtx_range"), M.get("annotation")
    nv_t, an_t = nv.truthy(), an.truthy()
    nvtx = pl.select(pl.when(pl.Series(nv_t)).then(nv.strs()).when(pl.Series(an_t)).then(an.strs())).to_series()
    occ_det = det["_occ"]
    df = pl.DataFrame({
        "device_name": dev_name, "device_id": _series(dev_id[0], dev_id[1], pl.Int64),
        "name": names, "short_name": _unique_map(names, short_name, pl.String),
        "op_name": op_name, "module": module, "category": M.get("hlo_category").strs(),
        "context_id": _series(ctx, ctx_ok, pl.Int64), "stream": _series(stream, stream_ok, pl.Int64),
        "correlation_id": _series(corr, corr_ok, pl.Int64),
        "start_ns": t["start_ns"][idx], "end_ns": t["end_ns"][idx], "duration_ns": t["duration_ns"][idx],
        **{c: det[c] for c in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "grid_size", "block_size",
                               "registers_per_thread", "shared_mem_bytes", "static_shared_mem_bytes", "dynamic_shared_mem_bytes")},
        "dram_read_bytes": _series(rd, rd_ok, pl.Float64), "dram_write_bytes": _series(wr, wr_ok, pl.Float64),
        "dram_bytes": _series(dram, dram_ok, pl.Float64), "dram_bytes_method": _labels((brk, "cost-analysis:hbm-breakdown"), (acc_ok, "cost-analysis")),
        "flops_total": _series(flops, flops_ok, pl.Float64),
        "flops_method": _labels((flops_ok, "cost-analysis")),
        "theoretical_occupancy_pct": pl.select(pl.when(pl.Series(occ_ok)).then(pl.Series(occ)).otherwise(occ_det)).to_series(),
        "nvtx_range": nvtx,
        "_program_id": _series(program, program_ok, pl.Int64),
        "_start_rem_ps": t["start_rem_ps"][idx],
    })
    return df, int(det["_dropped"].fill_null(0).sum()) if n else 0


def _metric_values(sv: str) -> tuple:
    """(value, value_str, value_int) of a string-valued stat (once per distinct string)."""
    try:
        exact = int(sv) if sv.lstrip("-").isdigit() and -(2**63) <= int(sv) < 2**63 else None
    except ValueError:  # digits int() does not take (superscripts)
        exact = None
    return (float(exact) if exact is not None else None, None if exact is not None else sv, exact)


_METRIC_NUMERIC_TEXT = ("model_flops", "raw_bytes_accessed", "bytes_accessed", "flops")


def _metrics(cv: _Conv, M: _Merged, kernel_ids: np.ndarray) -> pl.DataFrame | None:
    """One row per non-column stat of each kernel, in the kernels' order and each stat dict's order.
    `kernel_ids[i]` is the kernel_id of M.targets[i]."""
    skip = np.array(sorted(cv.name_index[n] for n in (_CONSUMED | _INTERNAL_STATS) if n in cv.name_index), np.int64)
    rows = np.flatnonzero(~np.isin(M.nid, skip) & (M.kind != KIND_BYTES))
    if not rows.size:
        return None
    target = np.searchsorted(M.targets, M.ev[rows])
    order = np.lexsort((M.pos[rows], target))
    rows, target = rows[order], target[order]
    names = pl.Series(cv.names, dtype=pl.String).gather(M.nid[rows])
    kind, raw = M.kind[rows], M.raw[rows]
    n = rows.size
    # numbers: float(v), and v itself where it is an int64 integer
    value = np.full(n, np.nan)
    value_ok = np.zeros(n, bool)
    exact = np.zeros(n, np.int64)
    exact_ok = np.zeros(n, bool)
    for k in (KIND_DOUBLE, KIND_UINT, KIND_INT):
        r = np.flatnonzero(kind == k)
        x = raw[r]
        value[r] = x.view(np.float64) if k == KIND_DOUBLE else x.astype(np.float64) if k == KIND_UINT else x.view(np.int64).astype(np.float64)
        value_ok[r] = True
        if k != KIND_DOUBLE:
            exact[r] = x.view(np.int64)
            exact_ok[r] = x < np.uint64(1 << 63) if k == KIND_UINT else True
    numeric = value_ok.copy()
    # strings (str, ref; a stat with no value reads "None"): integers in them count, the rest is text
    text = _nulls(n)
    t = np.flatnonzero(~numeric)
    if t.size:
        tv = M.all(rows[t])
        tt = tv.strs()
        none = np.flatnonzero(tv.kind == KIND_NONE)
        if none.size:
            tt = tt.scatter(none, "None")
        parsed = _per_unique(tt, _metric_values, {"v": pl.Float64, "s": pl.String, "i": pl.Int64})
        v, vs, vi = parsed["v"], parsed["s"], parsed["i"]
        floaty = names.gather(t).is_in(_METRIC_NUMERIC_TEXT).to_numpy() & v.is_null().to_numpy()
        if floaty.any():  # these four read as floats even when not integers
            as_float = _unique_map(tt.gather(np.flatnonzero(floaty)), _float, pl.Float64)
            v = v.scatter(np.flatnonzero(floaty), as_float)
            vs = pl.select(pl.when(v.is_null()).then(vs)).to_series()
        value[t] = v.fill_null(np.nan).to_numpy()
        value_ok[t] = v.is_not_null().to_numpy()
        exact[t] = vi.fill_null(0).to_numpy()
        exact_ok[t] = vi.is_not_null().to_numpy()
        text = text.scatter(t, vs)
    unit = pl.when(names.str.contains("bytes", literal=True)).then(pl.lit("byte")).when(names.str.contains("flops", literal=True)).then(pl.lit("flop")).otherwise(pl.lit(""))
    df = pl.select(
        kernel_id=pl.Series(kernel_ids[target], dtype=pl.Int64),
        metric=names,
        unit=pl.when(pl.Series(numeric)).then(unit).otherwise(pl.lit("")),
        value=_series(value, value_ok, pl.Float64),
        value_str=text,
        kind=pl.when(text.is_not_null()).then(pl.lit("launch")).otherwise(pl.lit("metric")),
        value_int=_series(exact, exact_ok, pl.Int64),
    )
    from profaudit.schema import METRICS

    return df if "value_int" in METRICS.names else df.drop("value_int")


def _first_numeric(M: _Merged) -> tuple[np.ndarray, np.ndarray]:
    """Per target: the first numeric stat in dict order, as a float."""
    n = M.targets.size
    out, ok = np.zeros(n), np.zeros(n, bool)
    rows = np.flatnonzero(np.isin(M.kind, (KIND_DOUBLE, KIND_UINT, KIND_INT)))
    if rows.size:
        target = np.searchsorted(M.targets, M.ev[rows])
        order = np.lexsort((M.pos[rows], target))
        rows, target = rows[order], target[order]
        firsts = np.r_[True, target[1:] != target[:-1]]
        f, _ = M.all(rows[firsts]).floats()
        out[target[firsts]], ok[target[firsts]] = f, True
    return out, ok


def _host_kinds(names: pl.Series, has: dict[str, np.ndarray]) -> pl.Series:
    corr = pl.Series(has["correlation_id"])
    return pl.select(
        pl.when(pl.Series(has["step_num"])).then(pl.lit("step"))
        .when(names.str.starts_with("$")).then(pl.lit("python_function"))
        .when(corr & names.str.starts_with("hip")).then(pl.lit("hip_runtime"))
        .when(corr & names.str.starts_with("cuda")).then(pl.lit("cuda_runtime"))
        .when(corr & names.str.starts_with("cu")).then(pl.lit("cuda_driver"))
        .when(corr).then(pl.lit("launch_api"))
        .when(names.str.starts_with("XlaModule:") | pl.Series(has["hlo_module"] & ~has["hlo_op"])).then(pl.lit("xla_module"))
        .otherwise(pl.lit("host"))
    ).to_series()


_INT64_MAX = np.iinfo(np.int64).max


def _times(space: XSpace) -> dict[str, np.ndarray]:
    """Exact event times: start = line.timestamp_ns * 1000 + offset_ps, in integer picoseconds that
    overflow int64 on epoch time bases, so kept as (floor ns, ps remainder) pairs."""
    ev = space.events
    ts = np.array([l.timestamp_ns for l in space.lines], np.int64)[ev.line] if len(ev) else np.zeros(0, np.int64)
    q1, r1 = np.divmod(ev.offset_ps, _PICO)
    q2, r2 = np.divmod(ev.duration_ps, _PICO)
    # nesting compares offsets within a line; an end past int64 (a 106-day event) saturates
    end_rel = ev.offset_ps + ev.duration_ps
    over = (ev.duration_ps > 0) & (end_rel < ev.offset_ps)
    return {"start_ns": ts + q1, "start_rem_ps": r1, "end_ns": ts + q1 + q2 + (r1 + r2) // _PICO,
            "duration_ns": ev.duration_ps / _PICO, "end_rel_ps": np.where(over, _INT64_MAX, end_rel)}


def space_to_tables(space: XSpace, path: Path | str = "") -> tuple[dict[str, pl.DataFrame], dict[str, Any]]:
    """Turn a decoded XSpace into profaudit tables and run metadata, column-wise: every step below
    is a numpy/polars operation over all events of a kind, Python only per line, plane or distinct
    string."""
    hlo = _HloIndex(space)
    md: dict[str, Any] = {}
    host_md_plane = space.plane("/host:metadata")
    host_md = host_md_plane.stats if host_md_plane else {}
    task_plane = space.plane("Task Environment")
    task = task_plane.stats if task_plane else {}
    cv = _Conv(space)
    ev = space.events
    t = _times(space)

    # ---- per plane and per line (Python: a few hundred of them)
    devices: list[dict] = []
    plane_summary: dict[str, int] = {}
    device_planes = [p for p in space.planes if p.name.startswith("/device:")]
    host_planes = [p for p in space.planes if not p.name.startswith("/device:") and p.name not in _SKIP_PLANES]
    n_lines = len(space.lines)
    # line role: 0 not read, 1 device kernel line (stream / ops), 2 device counters, 3 device ranges, 4 host
    role = np.zeros(n_lines, np.int64)
    is_stream = np.zeros(n_lines, bool)
    is_ops = np.zeros(n_lines, bool)
    line_stream = np.zeros(n_lines, np.int64)
    line_stream_ok = np.zeros(n_lines, bool)
    line_domain = [""] * n_lines
    line_rkind = [""] * n_lines
    plane_dev_id = np.zeros(len(space.planes), np.int64)
    plane_dev_name = [""] * len(space.planes)
    plane_pid = np.zeros(len(space.planes), np.int64)
    plane_pid_ok = np.zeros(len(space.planes), bool)
    for plane in device_planes:
        dev = describe_device(plane, plane.stats)
        devices.append({**dev, "events": plane.event_count()})
        plane_summary[plane.name] = plane.event_count()
        plane_dev_id[plane.index], plane_dev_name[plane.index] = dev["device_id"], dev["device_name"]
        op_lines_are_kernels = not any(_STREAM_RE.match(l.name) for l in plane.lines)
        for line in plane.lines:
            i = line.index
            lname = line.name or line.display_name
            sm = _STREAM_RE.match(lname)
            if sm:
                line_stream[i], line_stream_ok[i] = int(sm.group(1)), True
            is_stream[i] = bool(_STREAM_RE.match(line.name))
            is_ops[i] = not is_stream[i] and op_lines_are_kernels and lname in _OP_LINES
            role[i] = 1 if is_stream[i] or is_ops[i] else 2 if lname in _COUNTER_LINES else 3
            line_domain[i] = lname
            line_rkind[i] = _RANGE_KIND_BY_LINE.get(lname, "device")
    process_id = _int(host_md.get("process_id"))
    for plane in host_planes:
        plane_summary[plane.name] = plane.event_count()
        pid = _int(plane.stats.get("process_id")) or process_id
        if pid is not None:
            plane_pid[plane.index], plane_pid_ok[plane.index] = pid, True
        for line in plane.lines:
            role[line.index] = 4
            line_domain[line.index] = plane.name

    ev_role = role[ev.line] if len(ev) else np.zeros(0, np.int64)
    aggregated = int((ev.aggregated & (ev_role > 0)).sum())
    live = ~ev.aggregated & (ev_role > 0)
    device_events = int((live & (ev_role < 4)).sum())
    domain_s = pl.Series(line_domain, dtype=pl.String)
    rkind_s = pl.Series(line_rkind, dtype=pl.String)

    def dev_cols(idx: np.ndarray) -> tuple[pl.Series, tuple]:
        p = cv.ev_plane[idx]
        return pl.Series(plane_dev_name, dtype=pl.String).gather(p), (plane_dev_id[p], np.ones(idx.size, bool))

    kernel_parts: list[pl.DataFrame] = []
    metric_parts: list[_Merged] = []  # the merged stats of each kernel part, for its metrics
    counter_parts: list[pl.DataFrame] = []
    range_parts: list[pl.DataFrame] = []
    dropped_details = 0

    # ---- device counter lines
    ci = np.flatnonzero(live & (ev_role == 2))
    if ci.size:
        M = cv.merged(ci)
        val, ok = np.zeros(ci.size), np.zeros(ci.size, bool)
        decided = np.zeros(ci.size, bool)
        for key in ("counter_value", "Scaled Value", "Raw Value", "value"):
            v = M.get(key)
            f, fok = v.floats()
            take = v.present & ~decided
            val[take], ok[take] = f[take], fok[take]
            decided |= take
        f, fok = _first_numeric(M)
        val, ok = np.where(ok, val, f), ok | fok
        names = cv.event_names(ci)
        counter_parts.append(pl.DataFrame({
            "counter": names, "raw_name": names, "unit": pl.Series([""] * ci.size, dtype=pl.String),
            "timestamp_ns": t["start_ns"][ci], "value": _series(val, ok, pl.Float64),
            "device_id": _series(*dev_cols(ci)[1], pl.Int64), "_order": ci}))

    # ---- device range lines (and the module spans TPU ops are placed in)
    ri = np.flatnonzero(live & (ev_role == 3))
    module_spans = None
    if ri.size:
        names = cv.event_names(ri)
        lines = ev.line[ri]
        range_parts.append(pl.DataFrame({
            "kind": rkind_s.gather(lines), "name": names, "domain": domain_s.gather(lines),
            "device_id": _series(*dev_cols(ri)[1], pl.Int64), "stream": _series(line_stream[lines], line_stream_ok[lines], pl.Int64),
            "_ev": ri}))
        mod = np.flatnonzero((rkind_s.gather(lines) == "xla_module").to_numpy())
        if mod.size:
            parts = _per_unique(names.gather(mod), _module_event, {"m": pl.String, "pid": pl.Int64})
            me = ri[mod]
            module_spans = pl.DataFrame({"plane": cv.ev_plane[me], "s_ns": t["start_ns"][me], "s_rem": t["start_rem_ps"][me],
                                         "e_ns": t["end_ns"][me], "e_rem": (t["start_rem_ps"][me] + ev.duration_ps[me]) % _PICO,
                                         "module": parts["m"], "pid": parts["pid"]})

    # ---- device kernel lines: kernels and transfers
    ki = np.flatnonzero(live & (ev_role == 1))
    transfer_df = None
    if ki.size:
        M = cv.merged(ki, {"memcpy_details", "Memset_details", "stream", "correlation_id"})
        names = cv.event_names(ki)
        stream_line = is_stream[ev.line[ki]]
        cp, ms = M.get("memcpy_details"), M.get("Memset_details")
        cp_t, ms_t = cp.truthy(), ms.truthy()
        by_name = _per_unique(names, lambda n: (bool(_TRANSFER_NAMES.match(n)), n.lower().startswith(("memset", "fillbuffer"))),
                              {"copy": pl.Boolean, "set": pl.Boolean})
        xfer = stream_line & (cp_t | ms.has_value | by_name["copy"].to_numpy())
        x = np.flatnonzero(xfer)
        if x.size:
            xi = ki[x]
            details = pl.select(pl.when(pl.Series(cp_t)).then(cp.strs()).when(pl.Series(ms_t)).then(ms.strs()).otherwise(pl.lit(""))).to_series().gather(x)
            memset = (ms.present | by_name["set"].to_numpy())[x]
            xn = names.gather(x)
            keyed = pl.DataFrame({"n": xn, "d": details}).select(pl.concat_str("n", "d", separator="\x00")).to_series()
            facts = _per_unique(keyed, _transfer_facts, {"size": pl.Float64, "src": pl.String, "dst": pl.String, "dir": pl.String})
            st_v = M.get("stream")
            stv, stv_ok = st_v.ints()
            has_st = st_v.has_value
            lines = ev.line[xi]
            stream = np.where(has_st[x], stv[x], line_stream[lines])
            stream_ok = np.where(has_st[x], stv_ok[x], line_stream_ok[lines])
            corr, corr_ok = M.get("correlation_id").ints()
            dur_ns = t["duration_ns"][xi]
            size = facts["size"]
            transfer_df = pl.DataFrame({
                "kind": _labels((memset, "memset"), (~memset, "memcpy")),
                "direction": pl.select(pl.when(pl.Series(memset)).then(None).otherwise(facts["dir"])).to_series(),
                "src_kind": facts["src"], "dst_kind": facts["dst"], "name": xn, "bytes": size,
                "start_ns": t["start_ns"][xi], "end_ns": t["end_ns"][xi], "duration_ns": dur_ns,
                "throughput_bytes_per_s": pl.select(pl.when(size.is_not_null() & pl.Series(dur_ns > 0)).then(size / (pl.Series(dur_ns) * 1e-9))).to_series(),
                "device_id": _series(plane_dev_id[cv.ev_plane[xi]], None, pl.Int64), "stream": _series(stream, stream_ok, pl.Int64),
                "correlation_id": _series(corr[x], corr_ok[x], pl.Int64),
            })
        k = np.flatnonzero(~xfer)
        if k.size:
            kk = ki[k]
            Mk = cv.merged(kk)
            lines = ev.line[kk]
            name_s, dev_id = dev_cols(kk)
            df, dropped = _kernels(cv, kk, Mk, t, hlo, name_s, dev_id, (line_stream[lines], line_stream_ok[lines]), is_ops[lines])
            dropped_details += dropped
            df = df.with_columns(pl.Series("_ops", is_ops[lines]), pl.Series("_plane", cv.ev_plane[kk]), pl.Series("_ev", kk))
            if module_spans is not None:
                df = _place_in_modules(df, module_spans)
            df = _hlo_categories(df, hlo)
            kernel_parts.append(df)
            metric_parts.append(Mk)

    # ---- host planes: allocator counters, XLA:CPU ops, ranges
    hi = np.flatnonzero(live & (ev_role == 4))
    cpu_kernel_count = 0
    if hi.size:
        wanted = {"bytes_allocated", "allocator_name", "hlo_op", "correlation_id", "step_num", "hlo_module"}
        M = cv.merged(hi, wanted)
        names = cv.event_names(hi)
        got = {w: M.get(w) for w in wanted}
        has = {w: v.present for w, v in got.items()}
        is_mem = names.is_in(["MemoryAllocation", "MemoryDeallocation"]).to_numpy() & has["bytes_allocated"]
        is_cpu = ~is_mem & has["hlo_op"] & ~has["correlation_id"] if device_events == 0 else np.zeros(hi.size, bool)
        m = np.flatnonzero(is_mem)
        if m.size:
            av = got["allocator_name"]
            alloc = pl.select(pl.when(pl.Series(av.truthy())).then(av.strs()).otherwise(pl.lit(""))).to_series().gather(m)
            gpu = _unique_map(alloc, _allocator_gpu, pl.Int64)
            val, ok = got["bytes_allocated"].floats()
            counter_parts.append(pl.DataFrame({
                "counter": pl.Series(["memory_used_bytes"] * m.size, dtype=pl.String),
                "raw_name": pl.select(pl.when(alloc != "").then(alloc + ":bytes_allocated").otherwise(pl.lit("bytes_allocated"))).to_series(),
                "unit": pl.Series(["byte"] * m.size, dtype=pl.String), "timestamp_ns": t["start_ns"][hi[m]],
                "value": _series(val[m], ok[m], pl.Float64), "device_id": gpu, "_order": hi[m] + len(ev)}))
        c = np.flatnonzero(is_cpu)
        if c.size:
            cpu_kernel_count = int(c.size)
            cc = hi[c]
            Mc = cv.merged(cc)
            ordv, ordok = Mc.get("device_ordinal").ints()
            df, _ = _kernels(cv, cc, Mc, t, hlo, pl.Series(["CPU"] * c.size, dtype=pl.String), (ordv, ordok),
                             (np.zeros(c.size, np.int64), np.zeros(c.size, bool)), np.zeros(c.size, bool))
            p = cv.ev_plane[cc]
            kernel_parts.append(df.with_columns(process_id=_series(plane_pid[p], plane_pid_ok[p], pl.Int64), _ev=pl.Series(cc)))
            metric_parts.append(Mc)
        r = np.flatnonzero(~is_mem & ~is_cpu)
        if r.size:
            rr = hi[r]
            p = cv.ev_plane[rr]
            corr, corr_ok = got["correlation_id"].ints()
            range_parts.append(pl.DataFrame({
                "kind": _host_kinds(names, has).gather(r), "name": names.gather(r), "domain": domain_s.gather(ev.line[rr]),
                "process_id": _series(plane_pid[p], plane_pid_ok[p], pl.Int64),
                "thread_id": pl.Series([l.id for l in space.lines], dtype=pl.Int64).gather(ev.line[rr]),
                "correlation_id": _series(corr[r], corr_ok[r], pl.Int64), "_ev": rr}))
        del M, names, got, has  # the largest temporaries: gone before the tables are assembled

    # ---- frames
    tables: dict[str, pl.DataFrame | None] = {}
    tables["kernels"], kernel_ids = _kernels_frame(kernel_parts)
    bounds = np.cumsum([0] + [part.height for part in kernel_parts])
    mparts = [_metrics(cv, Mx, kernel_ids[lo:hi]) for Mx, lo, hi in zip(metric_parts, bounds[:-1], bounds[1:])]
    mparts = [m for m in mparts if m is not None]
    tables["metrics"] = pl.concat(mparts) if mparts else None
    tables["transfers"] = _transfers_frame(transfer_df)
    tables["ranges"] = _ranges_frame(range_parts, ev, t)
    tables["counters"] = pl.concat(counter_parts, how="diagonal_relaxed").sort("_order").drop("_order") if counter_parts else None

    # ---- metadata
    jax_v = host_md.get("jax_version")
    tf_like = any(p.name == "/host:CPU" and any(l.name.startswith("tf_Compute") for l in p.lines) for p in space.planes) or any(
        l.name in ("TensorFlow Ops", "TensorFlow Name Scope") for p in device_planes for l in p.lines)
    md["tool"] = "jax" if jax_v else "tensorflow" if tf_like else "xla"
    if jax_v:
        md["tool_version"] = str(jax_v)
        md["jaxlib_version"] = host_md.get("jaxlib_version")
    if cpu_kernel_count:
        devices.append({"plane": "/host:CPU", "device_id": 0, "kind": "CPU", "device_name": "CPU",
                        "device_name_origin": "XLA:CPU ops on host threads", "events": cpu_kernel_count,
                        "cpu_version": host_md.get("cpu_version")})
    with_events = [d for d in devices if d.get("events")]
    primary = with_events[0] if with_events else (devices[0] if devices else None)
    if primary:
        md["device_name"] = primary["device_name"]
        md["device_name_origin"] = primary.get("device_name_origin")
        if primary.get("clock_rate_hz") is not None:
            md["device_clock_rate_hz"] = primary["clock_rate_hz"]
            md["device_clock_rate_note"] = "the plane's clock_rate stat (kHz in the file): the device's rated peak clock, not a measured one"
    md["device_count"] = len([d for d in devices if d["kind"] in ("GPU", "TPU")]) or (1 if cpu_kernel_count else 0)
    md["devices"] = devices
    if space.hostnames:
        md["host"] = space.hostnames[0]
        if len(space.hostnames) > 1:
            md["hostnames"] = list(space.hostnames)
    start = _int(task.get("profile_start_time"))
    stop = _int(task.get("profile_stop_time"))
    if start:
        md["profile_start_time_ns"] = start
        md["capture_time"] = _iso(start)
    if stop:
        md["profile_stop_time_ns"] = stop
        if start:
            md["profile_duration_ns"] = stop - start
    first_ts = min((l.timestamp_ns for p in space.planes for l in p.lines if len(l)), default=None)
    md["time_base"] = "unix_epoch" if first_ts is not None and first_ts > 10**17 else "profile_start"
    opts = _decode_profile_options(task.get("profile_options"))
    if opts:
        md["profile_options"] = opts
    if space.errors:
        md["xspace_errors"] = list(space.errors)
    if space.warnings:
        md["xspace_warnings"] = list(space.warnings)
    md["planes"] = plane_summary
    if aggregated:
        md["aggregated_events_skipped"] = aggregated
    if dropped_details:
        md["implausible_kernel_details_dropped"] = dropped_details
        md["implausible_kernel_details_note"] = "kernel_details values beyond hardware limits (registers > 1024 or shared memory > 1 MiB) were left null: some ROCm builds record uninitialised numbers"
    if hlo.names:
        md["hlo_modules"] = {str(k): v for k, v in sorted(hlo.names.items())}
    if cpu_kernel_count:
        md["xla_backend"] = "cpu"
    md["cost_model_note"] = ("flops_total and dram_* of XLA ops come from XLA's cost analysis where the trace recorded them "
                             "(flops_method/dram_bytes_method 'cost-analysis'): modelled, not measured")
    return tables, md


def _allocator_gpu(alloc: str) -> int | None:
    m = _ALLOCATOR_GPU.match(alloc)
    return int(m.group(1)) if m else None


def _module_event(name: str) -> tuple:
    m = _MODULE_EVENT_RE.match(name)
    return (m.group(1), int(m.group(2))) if m else (name, None)


def _transfer_facts(key: str) -> tuple:
    name, details = key.split("\x00", 1)
    det = parse_details(details)
    return _float(det.get("size")), det.get("kind_src"), det.get("kind_dst"), _transfer_direction(name, det)


def _place_in_modules(df: pl.DataFrame, spans: pl.DataFrame) -> pl.DataFrame:
    """TPU ops name no module: take the enclosing XLA Modules event of the same plane (the last one
    starting at or before the op, if it has not ended before the op starts)."""
    todo = df["module"].is_null() & df["_ops"]
    if not todo.any():
        return df

    def ps(ns: str, rem: str) -> pl.Expr:  # exact picoseconds (past int64 on epoch time bases)
        return pl.col(ns).cast(pl.Int128) * _PICO + pl.col(rem)

    # among spans starting together the last in (end, module, program) order wins, as in a sorted list
    spans = spans.with_columns(_s=ps("s_ns", "s_rem"), _e=ps("e_ns", "e_rem")).rename({"plane": "_plane"}).sort(
        ["_plane", "_s", "_e", "module", "pid"], nulls_last=False)
    ops = df.with_row_index("_row").filter(todo).select("_row", "_plane", _s=ps("start_ns", "_start_rem_ps")).sort("_plane", "_s")
    hit = ops.join_asof(spans.select("_plane", "_s", "_e", "module", "pid"), on="_s", by="_plane", strategy="backward", check_sortedness=False)
    hit = hit.filter(pl.col("_e") >= pl.col("_s")).select("_row", pl.col("module").alias("_m"), pl.col("pid").alias("_pid"))
    df = df.with_row_index("_row").join(hit, on="_row", how="left", maintain_order="left")
    return df.with_columns(
        module=pl.coalesce("module", "_m"),
        _program_id=pl.when(pl.col("_m").is_not_null()).then(pl.coalesce("_program_id", "_pid")).otherwise(pl.col("_program_id")),
    ).drop("_row", "_m", "_pid")


def _hlo_categories(df: pl.DataFrame, hlo: _HloIndex) -> pl.DataFrame:
    """Category from the module's HloProto where XLA recorded none on the event."""
    todo = df.select(pl.col("category").is_null() & pl.col("op_name").is_not_null()).to_series()
    if not hlo.has_protos or not todo.any():
        return df
    keys = df.filter(todo).select("_program_id", "module", "op_name").unique()
    found = []
    for pid, module, op in keys.iter_rows():
        ins = hlo.instruction(pid, module, op)
        if ins is not None:
            found.append((pid, module, op, ins.category))
    if not found:
        return df
    table = pl.DataFrame(found, schema={"_program_id": pl.Int64, "module": pl.String, "op_name": pl.String, "_cat": pl.String}, orient="row")
    df = df.join(table, on=["_program_id", "module", "op_name"], how="left", maintain_order="left", nulls_equal=True)
    return df.with_columns(category=pl.coalesce("category", "_cat")).drop("_cat")


def _kernels_frame(parts: list[pl.DataFrame]) -> tuple[pl.DataFrame | None, np.ndarray]:
    """All kernels sorted by start (exact ps), device, then the order they were read in; also each
    read-order row's kernel_id."""
    if not parts:
        return None, np.zeros(0, np.int64)
    df = pl.concat(parts, how="diagonal_relaxed").with_row_index("_read")
    df = df.sort(["start_ns", "_start_rem_ps", pl.col("device_id").fill_null(0), "_read"])
    kernel_ids = np.empty(df.height, np.int64)
    kernel_ids[df["_read"].to_numpy()] = np.arange(df.height)
    df = df.drop([c for c in df.columns if c.startswith("_")])
    df = df.with_columns(pl.int_range(0, df.height, dtype=pl.Int64).alias("kernel_id"), pl.lit("xla").alias("source"))
    return df, kernel_ids


def _transfers_frame(df: pl.DataFrame | None) -> pl.DataFrame | None:
    if df is None:
        return None
    df = df.with_row_index("_read").sort(["start_ns", pl.col("device_id").fill_null(0), "_read"]).drop("_read")
    return df.with_columns(pl.int_range(0, df.height, dtype=pl.Int64).alias("transfer_id"))


def _ranges_frame(parts: list[pl.DataFrame], ev, t: dict) -> pl.DataFrame | None:
    """Ranges in (start, depth, read order) order with range_id, depth and parent_range_id.
    Empties `parts` (their rows move into the result)."""
    if not parts:
        return None
    df = pl.concat(parts, how="diagonal_relaxed")
    parts.clear()
    e = df["_ev"].to_numpy()
    depth, parent = _nest_lines(ev.line[e], ev.offset_ps[e], t["end_rel_ps"][e])
    start = t["start_ns"][e]
    order = np.lexsort((np.arange(e.size), depth, start))
    range_id = np.empty(e.size, np.int64)
    range_id[order] = np.arange(e.size)
    parent = parent[order]
    df = df.drop("_ev")[order].with_columns(
        range_id=pl.int_range(0, e.size, dtype=pl.Int64), start_ns=pl.Series(start[order]), end_ns=pl.Series(t["end_ns"][e[order]]),
        duration_ns=pl.Series(t["duration_ns"][e[order]]), depth=pl.Series(depth[order]),
        parent_range_id=_series(np.where(parent >= 0, range_id[np.maximum(parent, 0)], -1), parent >= 0, pl.Int64))
    schema = {c: pl.Int64 for c in ("range_id", "process_id", "thread_id", "device_id", "stream", "start_ns", "end_ns", "depth", "correlation_id", "parent_range_id")}
    schema.update({"duration_ns": pl.Float64, "kind": pl.String, "name": pl.String, "domain": pl.String})
    cols = ["range_id", "kind", "name", "domain", "process_id", "thread_id", "device_id", "stream", "start_ns", "end_ns", "duration_ns",
            "depth", "correlation_id", "parent_range_id"]
    return df.select([pl.col(c).cast(schema[c]) if c in df.columns else pl.lit(None, dtype=schema[c]).alias(c) for c in cols])
