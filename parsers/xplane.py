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

import polars as pl

from profaudit.errors import InputError
from profaudit.names import short_name
from profaudit.parsers.base import Probe, ReadOptions, new_profile
from profaudit.parsers.protowire import WireError, iter_fields
from profaudit.parsers.xspace import Plane, XSpace, decode_xspace, sniff_xspace

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
_TRANSFER_NAMES = re.compile(r"^(Memcpy|Memset|Copy(HostToDevice|DeviceToHost|DeviceToDevice|HostToHost|PeerToPeer)|FillBuffer)", re.I)
_STREAM_RE = re.compile(r"^Stream #(\d+)")
_DEVICE_NUM_RE = re.compile(r"^/device:[A-Za-z_]+:(\d+)")
_MODULE_EVENT_RE = re.compile(r"^(.*)\((\d+)\)$")
_DETAIL_RE = re.compile(r"(\w+):(\S*)")

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
        if options.device:
            md["device_name_reported"] = md.get("device_name")
            md["device_name"] = options.device
            k = tables["kernels"]
            if k.height:
                tables["kernels"] = k.with_columns(pl.lit(options.device).alias("device_name"))
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
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from None
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


def _nest(starts: list[int], ends: list[int]) -> tuple[list[int], list[int | None]]:
    """Depth and parent index of each interval on one timeline (events nest, they do not cross).

    Input order is arbitrary; parents are found by sorting on (start, -end)."""
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


def _host_range_kind(name: str, stats: dict, line_name: str) -> str:
    if "step_num" in stats:
        return "step"
    if name.startswith("$"):
        return "python_function"
    if "correlation_id" in stats:
        if name.startswith("hip"):
            return "hip_runtime"
        if name.startswith("cuda"):
            return "cuda_runtime"
        if name.startswith("cu"):
            return "cuda_driver"
        return "launch_api"
    if name.startswith("XlaModule:") or ("hlo_module" in stats and "hlo_op" not in stats):
        return "xla_module"
    return "host"


# --------------------------------------------------------------------------------------------
# the conversion


class _Plane:
    """A plane with event-metadata stats resolved once per metadata id."""

    def __init__(self, plane: Plane):
        self.p = plane
        self._md_stats: dict[int, dict] = {}
        self._md_names: dict[int, str] = {}

    def md_name(self, mid: int) -> str:
        n = self._md_names.get(mid)
        if n is None:
            md = self.p.event_metadata.get(mid)
            n = (md.name or md.display_name) if md is not None else f"<event {mid}>"
            self._md_names[mid] = n
        return n

    def stats(self, mid: int, raw: list | None) -> dict:
        base = self._md_stats.get(mid)
        if base is None:
            md = self.p.event_metadata.get(mid)
            base = self.p.named(md.stats) if md is not None else {}
            self._md_stats[mid] = base
        if not raw:
            return base
        merged = dict(base)
        merged.update(self.p.named(raw))
        return merged


def _iso(ns: int | None) -> str | None:
    if not ns or ns < 10**17:
        return None
    return _dt.datetime.fromtimestamp(ns / 1e9, tz=_dt.timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


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


def space_to_tables(space: XSpace, path: Path | str = "") -> tuple[dict[str, pl.DataFrame], dict[str, Any]]:
    """Turn a decoded XSpace into profaudit tables and run metadata."""
    hlo = _HloIndex(space)
    md: dict[str, Any] = {}
    host_md_plane = space.plane("/host:metadata")
    host_md = host_md_plane.stats if host_md_plane else {}
    task_plane = space.plane("Task Environment")
    task = task_plane.stats if task_plane else {}

    kernels: list[dict] = []
    kernel_metrics: list[tuple[int, str, str, float | None, str | None]] = []  # (row idx, metric, unit, value, str)
    transfers: list[dict] = []
    ranges: list[dict] = []
    counters: list[dict] = []
    devices: list[dict] = []
    dropped_details = 0
    aggregated = 0
    plane_summary: dict[str, int] = {}
    device_events = 0

    def add_metrics(idx: int, stats: dict) -> None:
        for k, v in stats.items():
            if k in _CONSUMED or k in _INTERNAL_STATS:
                continue
            if isinstance(v, (bytes, bytearray)):
                continue
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                unit = "byte" if "bytes" in k else "flop" if "flops" in k else ""
                exact = v if isinstance(v, int) and -(2**63) <= v < 2**63 else None
                kernel_metrics.append((idx, k, unit, float(v), None, exact))
            else:
                sv = str(v)
                # ids recorded as strings (ROCm builds) are still integers
                exact = int(sv) if sv.lstrip("-").isdigit() and -(2**63) <= int(sv) < 2**63 else None
                num = float(exact) if exact is not None else (_float(sv) if k in ("model_flops", "raw_bytes_accessed", "bytes_accessed", "flops") else None)
                kernel_metrics.append((idx, k, "", num, None if num is not None else sv, exact))

    # ---- device planes
    device_planes = [p for p in space.planes if p.name.startswith("/device:")]
    for plane in device_planes:
        vp = _Plane(plane)
        pstats = plane.stats
        dev = describe_device(plane, pstats)
        devices.append({**dev, "events": plane.event_count()})
        dev_id = dev["device_id"]
        dev_name = dev["device_name"]
        plane_summary[plane.name] = plane.event_count()
        stream_lines = [l for l in plane.lines if _STREAM_RE.match(l.name)]
        first_kernel = len(kernels)
        op_lines_are_kernels = not stream_lines
        module_spans: list[tuple[int, int, str, int | None]] = []
        for line in plane.lines:
            base_ps = line.timestamp_ns * _PICO
            lname = line.name or line.display_name
            is_stream = line in stream_lines
            sm = _STREAM_RE.match(lname)
            line_stream = int(sm.group(1)) if sm else None
            if is_stream or (op_lines_are_kernels and lname in _OP_LINES):
                kind = "stream" if is_stream else "ops"
            elif lname in _COUNTER_LINES:
                kind = "counters"
            else:
                kind = "range"
            rkind = _RANGE_KIND_BY_LINE.get(lname, "device")
            starts: list[int] = []
            ends: list[int] = []
            first_range = len(ranges)
            for mid, off, dur, raw in zip(line.metadata_ids, line.offsets_ps, line.durations_ps, line.stats):
                if off is None:
                    aggregated += 1
                    continue
                device_events += 1
                start_ps = base_ps + off
                end_ps = start_ps + dur
                name = vp.md_name(mid)
                if kind == "counters":
                    st = vp.stats(mid, raw)
                    val = None
                    for key in ("counter_value", "Scaled Value", "Raw Value", "value"):
                        if key in st:
                            val = _float(st[key])
                            break
                    if val is None:
                        val = next((float(v) for v in st.values() if isinstance(v, (int, float)) and not isinstance(v, bool)), None)
                    counters.append({"counter": name, "raw_name": name, "unit": "", "timestamp_ns": start_ps // _PICO, "value": val, "device_id": dev_id})
                    continue
                if kind == "range":
                    if rkind == "xla_module":
                        m = _MODULE_EVENT_RE.match(name)
                        module_spans.append((start_ps, end_ps, m.group(1) if m else name, int(m.group(2)) if m else None))
                    ranges.append({
                        "kind": rkind, "name": name, "domain": lname, "device_id": dev_id, "stream": line_stream,
                        "start_ns": start_ps // _PICO, "end_ns": end_ps // _PICO, "duration_ns": dur / _PICO,
                    })
                    starts.append(start_ps)
                    ends.append(end_ps)
                    continue
                st = vp.stats(mid, raw)
                details_raw = st.get("memcpy_details") or st.get("Memset_details")
                if kind == "stream" and (details_raw is not None or _TRANSFER_NAMES.match(name)):
                    det = parse_details(str(details_raw or ""))
                    nbytes = _float(det.get("size"))
                    dur_ns = dur / _PICO
                    is_memset = "Memset_details" in st or name.lower().startswith(("memset", "fillbuffer"))
                    transfers.append({
                        "kind": "memset" if is_memset else "memcpy",
                        "direction": None if is_memset else _transfer_direction(name, det),
                        "src_kind": det.get("kind_src"), "dst_kind": det.get("kind_dst"),
                        "name": name, "bytes": nbytes,
                        "start_ns": start_ps // _PICO, "end_ns": end_ps // _PICO, "duration_ns": dur_ns,
                        "throughput_bytes_per_s": (nbytes / (dur_ns * 1e-9)) if nbytes is not None and dur_ns > 0 else None,
                        "device_id": dev_id, "stream": _int(st.get("stream")) if st.get("stream") is not None else line_stream,
                        "correlation_id": _int(st.get("correlation_id")),
                    })
                    continue
                row, dropped = _kernel_row(name, st, start_ps, end_ps, dur, dev_name, dev_id, line_stream, hlo, op_line=kind == "ops")
                dropped_details += dropped
                row["_line_kind"] = kind
                kernels.append(row)
                add_metrics(len(kernels) - 1, st)
            if starts:
                depth, parent = _nest(starts, ends)
                for j, (d, pidx) in enumerate(zip(depth, parent)):
                    ranges[first_range + j]["depth"] = d
                    ranges[first_range + j]["_parent_local"] = None if pidx is None else first_range + pidx
        # TPU ops name no module: take the enclosing XLA Modules event on the same plane
        if module_spans:
            module_spans.sort()
            import bisect

            starts_only = [s for s, _, _, _ in module_spans]
            for row in kernels[first_kernel:]:
                if row.get("module") is not None or row.get("_line_kind") != "ops":
                    continue
                s_ps = row["_start_ps"]
                i = bisect.bisect_right(starts_only, s_ps) - 1
                if i >= 0 and module_spans[i][1] >= s_ps:
                    row["module"] = module_spans[i][2]
                    if row.get("_program_id") is None:
                        row["_program_id"] = module_spans[i][3]
        for row in kernels[first_kernel:]:
            if row.get("category") is None:
                ins = hlo.instruction(row.get("_program_id"), row.get("module"), row.get("op_name"))
                if ins is not None:
                    row["category"] = ins.category
                    row["_category_origin"] = "hlo-proto"

    # ---- host planes
    process_id = _int(host_md.get("process_id"))
    host_planes = [p for p in space.planes if not p.name.startswith("/device:") and p.name not in _SKIP_PLANES]
    cpu_kernel_count = 0
    for plane in host_planes:
        vp = _Plane(plane)
        pstats = plane.stats
        pid = _int(pstats.get("process_id")) or process_id
        plane_summary[plane.name] = plane.event_count()
        for line in plane.lines:
            base_ps = line.timestamp_ns * _PICO
            lname = line.name or line.display_name
            tid = line.id
            starts: list[int] = []
            ends: list[int] = []
            first_range = len(ranges)
            for mid, off, dur, raw in zip(line.metadata_ids, line.offsets_ps, line.durations_ps, line.stats):
                if off is None:
                    aggregated += 1
                    continue
                start_ps = base_ps + off
                end_ps = start_ps + dur
                name = vp.md_name(mid)
                st = vp.stats(mid, raw)
                if name in ("MemoryAllocation", "MemoryDeallocation") and "bytes_allocated" in st:
                    alloc = str(st.get("allocator_name") or "")
                    m = re.match(r"^GPU_(\d+)_", alloc)
                    counters.append({
                        "counter": "memory_used_bytes", "raw_name": f"{alloc}:bytes_allocated" if alloc else "bytes_allocated",
                        "unit": "byte", "timestamp_ns": start_ps // _PICO, "value": _float(st.get("bytes_allocated")),
                        "device_id": int(m.group(1)) if m else None,
                    })
                    continue
                if device_events == 0 and "hlo_op" in st and "correlation_id" not in st:
                    # XLA:CPU runs the compiled program's thunks on host threads: these are the ops
                    row, _ = _kernel_row(name, st, start_ps, end_ps, dur, "CPU", _int(st.get("device_ordinal")), None, hlo, op_line=False)
                    row["process_id"] = pid
                    row["_line_kind"] = "cpu"
                    kernels.append(row)
                    add_metrics(len(kernels) - 1, st)
                    cpu_kernel_count += 1
                    continue
                ranges.append({
                    "kind": _host_range_kind(name, st, lname), "name": name, "domain": plane.name,
                    "process_id": pid, "thread_id": tid,
                    "start_ns": start_ps // _PICO, "end_ns": end_ps // _PICO, "duration_ns": dur / _PICO,
                    "correlation_id": _int(st.get("correlation_id")),
                })
                starts.append(start_ps)
                ends.append(end_ps)
            if starts:
                depth, parent = _nest(starts, ends)
                for j, (d, pidx) in enumerate(zip(depth, parent)):
                    ranges[first_range + j]["depth"] = d
                    ranges[first_range + j]["_parent_local"] = None if pidx is None else first_range + pidx
    if cpu_kernel_count:
        devices.append({"plane": "/host:CPU", "device_id": 0, "kind": "CPU", "device_name": "CPU",
                        "device_name_origin": "XLA:CPU ops on host threads", "events": cpu_kernel_count,
                        "cpu_version": host_md.get("cpu_version")})

    # ---- frames
    tables: dict[str, pl.DataFrame] = {}
    tables["kernels"], kernel_order = _kernels_frame(kernels)
    tables["metrics"] = _metrics_frame(kernel_metrics, kernel_order)
    tables["transfers"] = _frame(transfers, "transfer_id")
    tables["ranges"] = _ranges_frame(ranges)
    tables["counters"] = pl.DataFrame(counters, schema_overrides={"value": pl.Float64}, strict=False) if counters else None

    # ---- metadata
    jax_v = host_md.get("jax_version")
    tf_like = any(p.name == "/host:CPU" and any(l.name.startswith("tf_Compute") for l in p.lines) for p in space.planes) or any(
        l.name in ("TensorFlow Ops", "TensorFlow Name Scope") for p in device_planes for l in p.lines)
    md["tool"] = "jax" if jax_v else "tensorflow" if tf_like else "xla"
    if jax_v:
        md["tool_version"] = str(jax_v)
        md["jaxlib_version"] = host_md.get("jaxlib_version")
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


def _kernel_row(name: str, st: dict, start_ps: int, end_ps: int, dur_ps: int, dev_name: str, dev_id, line_stream, hlo: _HloIndex, *, op_line: bool) -> tuple[dict, int]:
    dropped = 0
    det = parse_details(str(st.get("kernel_details") or ""))
    gx, gy, gz = _dims(det.get("grid"))
    bx, by, bz = _dims(det.get("block"))
    regs = _int(det.get("regs"))
    static_sh = _int(det.get("static_shared"))
    dyn_sh = _int(det.get("dynamic_shared"))
    shared = _int(det.get("shm")) if "shm" in det else _int(det.get("group_mem"))
    if regs is not None and not 0 <= regs <= _MAX_PLAUSIBLE_REGS:
        regs, dropped = None, dropped + 1
    for v in (static_sh, dyn_sh, shared):
        if v is not None and not 0 <= v <= _MAX_PLAUSIBLE_SHARED:
            static_sh = dyn_sh = shared = None
            dropped += 1
            break
    if shared is None and static_sh is not None and dyn_sh is not None:
        shared = static_sh + dyn_sh
    occ = _float(st.get("theoretical_occupancy_pct"))
    if occ is None and det.get("occ_pct") not in (None, "", "0"):
        occ = _float(det.get("occ_pct"))
    program_id = _int(st.get("program_id"))
    module = st.get("hlo_module")
    if module is None and program_id is not None and program_id in hlo.names:
        module = hlo.names[program_id]
    op = st.get("hlo_op")
    flops = _float(st.get("flops"))
    bytes_acc = _float(st.get("bytes_accessed"))
    rd, wr = _memory_breakdown(st.get("memory_access_breakdown"))
    if rd is not None or wr is not None:
        dram, dmethod = (rd or 0.0) + (wr or 0.0), "cost-analysis:hbm-breakdown"
    elif bytes_acc is not None:
        dram, dmethod = bytes_acc, "cost-analysis"
    else:
        dram, dmethod = None, None
    stream = _int(st.get("stream"))
    ctx = st.get("context_id")
    if isinstance(ctx, str):
        ctx = _int(ctx.lstrip("$"))
    row = {
        "device_name": dev_name, "device_id": dev_id,
        "name": name, "short_name": short_name(name),
        "op_name": str(op) if op is not None else (name if op_line else None),
        "module": str(module) if module is not None else None,
        "category": str(st["hlo_category"]) if st.get("hlo_category") is not None else None,
        "context_id": ctx, "stream": stream if stream is not None else line_stream,
        "correlation_id": _int(st.get("correlation_id")),
        "start_ns": start_ps // _PICO, "end_ns": end_ps // _PICO, "duration_ns": dur_ps / _PICO,
        "grid_x": gx, "grid_y": gy, "grid_z": gz, "block_x": bx, "block_y": by, "block_z": bz,
        "grid_size": gx * (gy or 1) * (gz or 1) if gx is not None else None,
        "block_size": bx * (by or 1) * (bz or 1) if bx is not None else None,
        "registers_per_thread": regs, "shared_mem_bytes": shared,
        "static_shared_mem_bytes": static_sh, "dynamic_shared_mem_bytes": dyn_sh,
        "dram_read_bytes": rd, "dram_write_bytes": wr, "dram_bytes": dram, "dram_bytes_method": dmethod,
        "flops_total": flops, "flops_method": "cost-analysis" if flops is not None else None,
        "theoretical_occupancy_pct": occ,
        "nvtx_range": str(st.get("nvtx_range") or st.get("annotation")) if (st.get("nvtx_range") or st.get("annotation")) else None,
        "_start_ps": start_ps, "_program_id": program_id,
    }
    return row, dropped


_KERNEL_SCHEMA_OVERRIDES = {
    "dram_read_bytes": pl.Float64, "dram_write_bytes": pl.Float64, "dram_bytes": pl.Float64,
    "flops_total": pl.Float64, "theoretical_occupancy_pct": pl.Float64, "duration_ns": pl.Float64,
    "device_id": pl.Int64, "context_id": pl.Int64, "stream": pl.Int64, "correlation_id": pl.Int64,
    "start_ns": pl.Int64, "end_ns": pl.Int64, "process_id": pl.Int64,
}


def _kernels_frame(rows: list[dict]) -> tuple[pl.DataFrame | None, list[int]]:
    if not rows:
        return None, []
    order = sorted(range(len(rows)), key=lambda i: (rows[i]["_start_ps"], rows[i].get("device_id") or 0, i))
    keep = [k for k in rows[0] if not k.startswith("_")] + (["process_id"] if any("process_id" in r for r in rows) else [])
    cols = {k: [rows[i].get(k) for i in order] for k in dict.fromkeys(keep)}
    df = pl.DataFrame(cols, schema_overrides={k: v for k, v in _KERNEL_SCHEMA_OVERRIDES.items() if k in cols}, strict=False)
    df = df.with_columns(pl.int_range(0, df.height, dtype=pl.Int64).alias("kernel_id"), pl.lit("xla").alias("source"))
    # kernel_id of original row i is its position in `order`
    pos = [0] * len(rows)
    for new, old in enumerate(order):
        pos[old] = new
    return df, pos


def _metrics_frame(items: list[tuple], kernel_pos: list[int]) -> pl.DataFrame | None:
    if not items:
        return None
    from profaudit.schema import METRICS

    data = {
        "kernel_id": [kernel_pos[it[0]] for it in items],
        "metric": [it[1] for it in items],
        "unit": [it[2] for it in items],
        "value": [it[3] for it in items],
        "value_str": [it[4] for it in items],
        "kind": ["launch" if it[4] is not None else "metric" for it in items],
    }
    if "value_int" in METRICS.names:
        data["value_int"] = [it[5] for it in items]
    return pl.DataFrame(data, schema_overrides={"value": pl.Float64, "value_str": pl.Utf8, "kernel_id": pl.Int64, "value_int": pl.Int64}, strict=False)


def _frame(rows: list[dict], id_col: str) -> pl.DataFrame | None:
    if not rows:
        return None
    rows = sorted(rows, key=lambda r: (r["start_ns"], r.get("device_id") or 0))
    df = pl.DataFrame(rows, schema_overrides={"bytes": pl.Float64, "throughput_bytes_per_s": pl.Float64, "duration_ns": pl.Float64}, strict=False, infer_schema_length=None)
    return df.with_columns(pl.int_range(0, df.height, dtype=pl.Int64).alias(id_col))


def _ranges_frame(rows: list[dict]) -> pl.DataFrame | None:
    if not rows:
        return None
    cols = ["kind", "name", "domain", "process_id", "thread_id", "device_id", "stream", "start_ns", "end_ns", "duration_ns", "depth", "correlation_id"]
    ints = ("process_id", "thread_id", "device_id", "stream", "start_ns", "end_ns", "depth", "correlation_id", "_local", "_parent_local")
    data = {c: [r.get(c) for r in rows] for c in cols}
    data["_local"] = list(range(len(rows)))
    data["_parent_local"] = [r.get("_parent_local") for r in rows]
    schema = {c: pl.Int64 for c in ints}
    schema.update({"duration_ns": pl.Float64, "kind": pl.Utf8, "name": pl.Utf8, "domain": pl.Utf8})
    df = pl.DataFrame(data, schema=schema, strict=False)
    df = df.sort(["start_ns", "depth", "_local"], nulls_last=True).with_row_index("range_id").with_columns(pl.col("range_id").cast(pl.Int64))
    ids = df.select(pl.col("_local").alias("_parent_local"), pl.col("range_id").alias("parent_range_id"))
    return df.join(ids, on="_parent_local", how="left", maintain_order="left").drop("_local", "_parent_local")
