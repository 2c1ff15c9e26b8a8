"""rocprofiler-sdk JSON (`rocprofv3 --output-format json`, `results.json(.gz)`).

The document is `{"rocprofiler-sdk-tool": [{metadata, agents, strings, kernel_symbols, ...,
buffer_records: {kernel_dispatch: [...], memory_copy: [...], hip_api: [...], ...}}]}`. Records
are streamed with ijson (yajl2_c), one record kind per pass, so memory holds the tables and the
small lookup sections (agents, kernel symbols), never the record lists. A pass over the whole
file is only made for a record kind that the kernel-dispatch pass saw to be non-empty.

Units: timestamps are integer nanoseconds on rocprofiler's clock (not Unix time). HSA semantics
apply to dispatch sizes: `grid_size` counts work-items, so blocks per dimension are
ceil(grid_size / workgroup_size). Registers per thread are arch VGPRs plus accumulation VGPRs
(both are per-lane vector registers; AGPRs exist on CDNA). Shared memory is the dispatch's LDS
(group segment) size; the symbol's group segment size is the static part.
"""

from __future__ import annotations

import gzip
import re
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import polars as pl

from profaudit.errors import InputError
from profaudit.parsers import jsonshape
from profaudit.parsers.base import Probe, ReadOptions, map_unique, new_profile, open_maybe_gzip

I64, F64, STR = pl.Int64, pl.Float64, pl.String
_TOOL = "rocprofiler-sdk-tool"
_SNIFF = re.compile(rb'^\s*\{\s*"rocprofiler-sdk-tool"\s*:\s*\[')
_RECORD_KINDS = ("hip_api", "hsa_api", "marker_api", "rccl_api", "memory_copy")
_MAX_DEPTH = 64
_NONEMPTY = re.compile(rb'"(' + b"|".join(k.encode() for k in _RECORD_KINDS) + rb')"\s*:\s*\[\s*\{')
_COPY_DIRECTION = {"HOST_TO_DEVICE": "HtoD", "DEVICE_TO_HOST": "DtoH", "DEVICE_TO_DEVICE": "DtoD", "HOST_TO_HOST": "HtoH"}
# buffer-record kind names (strings.buffer_records[kind].kind) -> range kind
_API_KIND = {
    "HIP_RUNTIME_API": "cuda_runtime", "HIP_RUNTIME_API_EXT": "cuda_runtime",
    "HIP_COMPILER_API": "hip_compiler_api", "HIP_COMPILER_API_EXT": "hip_compiler_api",
    "HSA_CORE_API": "hsa_api", "HSA_AMD_EXT_API": "hsa_api", "HSA_IMAGE_EXT_API": "hsa_api", "HSA_FINALIZE_EXT_API": "hsa_api",
    "MARKER_CORE_API": "user_annotation", "MARKER_CORE_RANGE_API": "user_annotation",
    "MARKER_CONTROL_API": "marker_control", "MARKER_NAME_API": "marker_name",
    "RCCL_API": "collective_comm",
}


class _TooDeep(Exception):
    pass


class _DepthGuard:
    """One read's nesting check, shared by all its passes. rocprofiler-sdk writes records 8 deep; a
    damaged file nested thousands deep took ijson's passes over 30 s. Each pass re-reads the file
    from its start, so a chunk is scanned (jsonshape.DepthScan, vectorised) only where it goes
    beyond what an earlier pass scanned: ijson never sees an unscanned byte, and the check costs
    one scan and no read of its own."""

    def __init__(self) -> None:
        self.scan = jsonshape.DepthScan()
        self.upto = 0  # bytes of the (decompressed) text scanned so far

    def check(self, start: int, data: bytes) -> None:
        end = start + len(data)
        if end > self.upto:
            if self.scan.feed(data[max(0, self.upto - start):]) > _MAX_DEPTH:
                raise _TooDeep
            self.upto = end


# the guard of the read in progress (a context variable: reads in threads of one process each keep their own)
_GUARD: ContextVar[_DepthGuard | None] = ContextVar("rocprof_sdk_depth_guard", default=None)


class _Stream:
    """File wrapper for ijson. yajl2_c rejects integers beyond int64 (agents carry uint64
    `hive_id`s), so 19+ digit integer literals are handed over as decimals (`...395.0`). The
    rewrite is a regex pass, so by default it stops once the kernel symbols begin (the records
    after them hold timestamps, ids and handles only); `fix_all` keeps it on. The wrapper also
    notes which record lists hold at least one record."""

    _BIG = re.compile(rb"(?<![\d.\-])(\d{19,})(?![\d.eE])")

    def __init__(self, f, fix_all: bool = False):
        self.f = f
        self.carry = b""
        self.tail = b""
        self.found: set[str] = set()
        self.fixing = True
        self.fix_all = fix_all
        self.pos = 0  # offset in the text of what read() returns next (before the uint64 rewrite)
        self.guard: _DepthGuard | None = None

    def read(self, n=-1):
        data = self.f.read(n)
        if not data:
            out, self.carry = self.carry, b""
            self._checked(out)
            return self._big(out) if out else out
        data = self.carry + data
        # a digit run at the end may continue in the next block
        k = len(data)
        while k > 0 and 0x30 <= data[k - 1] <= 0x39:
            k -= 1
        if k == 0:
            self.carry = data
            return self.read(n)
        data, self.carry = data[:k], data[k:]
        self._checked(data)
        window = self.tail + data
        for m in _NONEMPTY.finditer(window):
            self.found.add(m.group(1).decode())
        self.tail = window[-64:]
        out = self._big(data)
        if self.fixing and not self.fix_all and b'"kernel_symbols"' in window:
            self.fixing = False
        return out

    def _checked(self, data: bytes) -> None:
        if self.guard is not None and data:
            self.guard.check(self.pos, data)
        self.pos += len(data)

    def _big(self, data: bytes) -> bytes:
        return self._BIG.sub(rb"\1.0", data) if self.fixing and len(data) >= 19 else data


def _items(path: Path, prefix: str, first_only: bool = False, watch: _Stream | None = None, fix_all: bool = False):
    import zlib

    import ijson

    retry = False
    with open_maybe_gzip(path) as f:
        src = watch if watch is not None else _Stream(None, fix_all)
        src.f, src.carry, src.tail, src.fixing, src.pos, src.guard = f, b"", b"", True, 0, _GUARD.get()
        src.fix_all = src.fix_all or fix_all
        done = 0
        try:
            for it in ijson.items(src, prefix, use_float=True):
                done += 1
                yield it
                if first_only:
                    return
        except ijson.IncompleteJSONError as exc:
            if "integer overflow" in str(exc) and not src.fix_all and done == 0:
                retry = True  # a uint64 after the kernel symbols: read again rewriting everywhere
            else:
                raise InputError(path, f"JSON ends early or is invalid ({str(exc).splitlines()[0]}); file truncated?") from None
        except ijson.JSONError as exc:
            raise InputError(path, f"invalid JSON: {str(exc).splitlines()[0]}") from None
        except _TooDeep:
            raise InputError(path, f"damaged rocprofiler-sdk JSON: nested more than {_MAX_DEPTH} deep (rocprofiler-sdk writes about 8)") from None
        except EOFError:
            raise InputError(path, "gzip stream is truncated (file cut short)") from None
        except (gzip.BadGzipFile, zlib.error) as exc:
            raise InputError(path, f"corrupt gzip data: {exc}") from None
    if retry:
        yield from _items(path, prefix, first_only, watch, fix_all=True)


def _first(path: Path, section: str, default):
    for it in _items(path, f"{_TOOL}.item.{section}", first_only=True):
        return it
    return default


def _int64(v: Any) -> int | None:
    """A JSON integer that fits 64 bits, else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63 else None


def _h(d: Any) -> int | None:
    """`{"handle": n}` -> n."""
    if isinstance(d, dict):
        d = d.get("handle")
    return int(d) if isinstance(d, (int, float)) else None


def _strip_kd(name: str | None) -> str | None:
    return name[:-3] if isinstance(name, str) and name.endswith(".kd") else name


def _nest_arrays(R: pl.DataFrame):
    """(parent, depth, innermost annotation) of sorted ranges with every start known, through
    chrome_trace.nest_sorted's arrays: a 200 MB marker trace holds 3.8 M ranges. A long run of
    identical ranges (a blown-up trace: one range 3.8 M times, each nesting in the one before) is
    no exception since its whole-array passes past 256 levels (84b07a2): 5 CPU-s and ~350 MB
    there, where the per-range walk this run used to take grew the read by ~840 MB (3.8 M-deep
    Python stack and lists), leaving a fuzz worker 12 MB short of its 2 GB bound (seed 3101)."""
    import numpy as np

    from profaudit.parsers.chrome_trace import _ANNOTATION_KINDS, nest_sorted

    # threads by dense rank (a null thread, sorted last, is one more thread, as in the walk)
    g = R.select(pl.col("thread_id").rank("dense").fill_null(0)).to_series().to_numpy()
    # a range of unknown kind (null: a rocpd region whose event row did not join) is no
    # annotation; a null here made an object array that numpy refused as a mask (s15 CI fuzz)
    is_ann = R.select(pl.col("kind").is_in(list(_ANNOTATION_KINDS)).fill_null(False)).to_series().to_numpy()
    parent, depth, ann, _ = nest_sorted(g, R["start_ns"].to_numpy(), R["_end"].to_numpy(), is_ann, np.zeros(R.height, bool))
    return parent, depth, ann


def _nest_walk(R: pl.DataFrame):
    """The same by the per-range walk, for ranges with a null start: it sorts last but nests as 0,
    out of order for the array walk, which needs each thread's starts ascending. Kinds as shared
    strings, not one new string per row."""
    import numpy as np

    from profaudit.parsers.chrome_trace import _nest

    distinct = R["kind"].drop_nulls().unique().to_list()
    codes = R["kind"].replace_strict(distinct, list(range(len(distinct))), default=None, return_dtype=pl.Int64).to_list()
    kind_list = [distinct[c] if c is not None else None for c in codes]
    del codes
    parent, depth, ann, _ = _nest(R["thread_id"].to_list(), R["start_ns"].fill_null(0).to_list(), R["_end"].to_list(), kind_list)
    del kind_list
    return tuple(np.asarray(x, np.int64) for x in (parent, depth, ann))


def nest_api_ranges(R: pl.DataFrame, domain: str, *, ranges: bool = True) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
    """API, marker and collective ranges (kind, name, thread_id, process_id, start_ns, end_ns,
    correlation_id) -> the `ranges` table with nesting per thread, and the innermost marker range
    enclosing each launch API call as (correlation_id, nvtx_range) for the kernels. Shared by the
    rocprofiler-sdk JSON and rocpd SQLite readers, which hold the same records.

    Ranges nest in (thread, start, longest first) order and are numbered in (start, that order)
    order. Both orders are permutations found from the key columns alone, and the rows are gathered
    once into the second: sorting the whole frame twice held two more copies of every column, the
    names included (a 200 MB marker trace of 3.8 M ranges peaked at 1.4 GB to read)."""
    import numpy as np

    if not R.height:
        return None, None
    n = R.height
    # the frame's own multi-column sort on the same key columns: the same permutation, ties
    # included, as sorting the whole frame gave
    keys = (R.select("thread_id", "start_ns", _end=pl.col("end_ns").fill_null(1 << 62), kind="kind", _row=pl.int_range(0, n, dtype=I64))
            .sort(["thread_id", "start_ns", "_end"], descending=[False, False, True], nulls_last=True))
    parent, depth, ann = (_nest_walk if keys["start_ns"].null_count() else _nest_arrays)(keys)
    row = keys["_row"].to_numpy()  # nesting position -> row of R
    # numbering order: by start (null last), then nesting position; positions are distinct, so
    # this order has no ties
    fin = (pl.DataFrame({"start_ns": keys["start_ns"], "_nidx": pl.int_range(0, n, dtype=I64, eager=True)})
           .sort("start_ns", "_nidx", nulls_last=True)["_nidx"].to_numpy())
    del keys
    range_id_at = np.empty(n, np.int64)  # nesting position -> range_id
    range_id_at[fin] = np.arange(n, dtype=np.int64)
    if ranges:
        par = parent[fin]
        out = R[row[fin]].with_columns(
            depth=pl.Series(depth[fin], dtype=I64),
            range_id=pl.int_range(0, n, dtype=I64),
            parent_range_id=pl.Series(np.where(par >= 0, range_id_at[np.maximum(par, 0)], 0), dtype=I64).set(pl.Series(par < 0), None),
        )
        del par
    else:
        # only the launch table is wanted (a kernel trace's reader placing its kernels in the
        # marker ranges beside it): the two columns it needs, in the same order, instead of every
        # column of every range (a 200 MB HIP API trace's names and ids: +340 MB held at the peak)
        out = R.select("correlation_id", "kind")[row[fin]]
    del depth, range_id_at
    # the innermost annotation around each launch call, by name
    a = ann[fin]
    launch_rows = out.select((pl.col("correlation_id").is_not_null() & pl.col("kind").is_in(["cuda_runtime", "hsa_api"])).fill_null(False)).to_series().to_numpy()
    a = a[launch_rows]
    names = R["name"].gather(pl.Series(row[np.where(a >= 0, a, 0)])).set(pl.Series(a < 0), None)
    launch = (out.filter(pl.Series(launch_rows)).select("correlation_id").with_columns(nvtx_range=names)
              .unique("correlation_id", keep="first"))
    if not ranges:
        return None, launch
    out = out.with_columns(duration_ns=(pl.col("end_ns") - pl.col("start_ns")).cast(F64), domain=pl.lit(domain))
    return out, launch


class RocprofSdkParser:
    name = "rocprof-sdk-json"
    source = "rocprof"
    suffixes = (".json", ".json.gz")
    description = "rocprofiler-sdk JSON (rocprofv3 --output-format json): kernel dispatches, copies, HIP/HSA/marker API ranges"

    def sniff(self, probe: Probe) -> bool:
        return not probe.is_dir and bool(_SNIFF.match(probe.head))

    def read(self, path: Path, options: ReadOptions):
        path = Path(path)
        token = _GUARD.set(_DepthGuard())  # every pass of this read checks nesting as it streams
        try:
            return self._read(path, options)
        except (AttributeError, TypeError, pl.exceptions.ComputeError, pl.exceptions.InvalidOperationError) as exc:
            # the records are read by key at every level; a damaged file puts a list, a number or
            # null where an object belongs
            raise InputError(path, f"damaged rocprofiler-sdk JSON: a record holds a value of the wrong JSON type ({str(exc)[:120]})") from None
        finally:
            _GUARD.reset(token)

    def _read(self, path: Path, options: ReadOptions):
        from profaudit.names import demangle, short_name

        path = Path(path)
        meta = _first(path, "metadata", {}) or {}
        agents = _first(path, "agents", []) or []
        strings = _first(path, "strings", {}) or {}
        symbols = {s.get("kernel_id"): s for s in (_first(path, "kernel_symbols", []) or []) if isinstance(s, dict)}

        agent_by_handle: dict[int, dict] = {}
        gpu_rank = 0
        for a in agents:
            h = _h(a.get("id"))
            if h is None:
                continue
            info = {"type": a.get("type"), "name": a.get("product_name") or a.get("name")}
            if a.get("type") == 2:  # GPU agent
                # a device id must fit Int64 (fuzzing: gpu_index 1e308 overflowed polars' frame build)
                g = a.get("gpu_index")
                info["device_id"] = jsonshape.int64(g, "agents[].gpu_index", path) if isinstance(g, (int, float)) and not isinstance(g, bool) else gpu_rank
                gpu_rank += 1
            agent_by_handle[h] = info
        kinds = strings.get("buffer_records") or []
        kind_names = [k.get("kind") if isinstance(k, dict) else None for k in kinds]
        ops = []
        for i, k in enumerate(kinds):
            o = k.get("operations") if isinstance(k, dict) else None
            if o is not None and not isinstance(o, list):
                raise InputError(path, f"strings.buffer_records[{i}].operations: expected a list, found {jsonshape.kind(o)}")
            ops.append(o or [])

        def op_name(kind, op):
            # an unknown kind or operation number (or a name that is no text) leaves the name unknown
            try:
                name = ops[int(kind)][int(op)]
            except (IndexError, TypeError, ValueError, OverflowError):
                return None
            return name if isinstance(name, str) else None

        watch = _Stream(None)
        cols: dict[str, list] = {c: [] for c in (
            "kernel_sym", "device_id", "device_name", "stream", "correlation_id", "start_ns", "end_ns",
            "gx", "gy", "gz", "bx", "by", "bz", "shared", "thread_id")}
        for r in _items(path, f"{_TOOL}.item.buffer_records.kernel_dispatch.item", watch=watch):
            di = r.get("dispatch_info") or {}
            ag = agent_by_handle.get(_h(di.get("agent_id")), {})
            wg = di.get("workgroup_size") or {}
            gs = di.get("grid_size") or {}
            cols["kernel_sym"].append(di.get("kernel_id"))
            cols["device_id"].append(ag.get("device_id"))
            cols["device_name"].append(ag.get("name"))
            cols["stream"].append(_h(di.get("queue_id")))
            cols["correlation_id"].append((r.get("correlation_id") or {}).get("internal"))
            cols["start_ns"].append(r.get("start_timestamp"))
            cols["end_ns"].append(r.get("end_timestamp"))
            for axis in "xyz":
                w, g = wg.get(axis), gs.get(axis)
                cols["b" + axis].append(w)
                cols["g" + axis].append(-(-g // w) if isinstance(g, int) and isinstance(w, int) and w > 0 else None)
            cols["shared"].append(di.get("group_segment_size"))
            cols["thread_id"].append(r.get("thread_id"))
        pid = jsonshape.int64(meta.get("pid"), "metadata.pid", path)
        K = pl.DataFrame(cols, schema={c: (STR if c == "device_name" else I64) for c in cols}, strict=False)
        sym_rows = []
        for kid, s in symbols.items():
            raw = _strip_kd(s.get("kernel_name")) or ""
            dem = _strip_kd(s.get("demangled_kernel_name")) or (demangle(raw) if raw.startswith("_Z") else raw)
            regs = [s.get("arch_vgpr_count"), s.get("accum_vgpr_count")]
            sym_rows.append({
                "kernel_sym": kid, "name": dem or s.get("formatted_kernel_name"),
                "mangled_name": raw if raw.startswith("_Z") else None,
                "registers_per_thread": sum(v for v in regs if isinstance(v, int)) if any(isinstance(v, int) for v in regs) else None,
                "static_shared_mem_bytes": s.get("group_segment_size"),
            })
        syms = pl.DataFrame(sym_rows, schema={"kernel_sym": I64, "name": STR, "mangled_name": STR, "registers_per_thread": I64, "static_shared_mem_bytes": I64})

        ranges, launch = self._ranges(path, watch.found, kind_names, op_name, strings, pid)
        K = K.join(syms, on="kernel_sym", how="left")
        if launch is not None and launch.height:
            K = K.join(launch, on="correlation_id", how="left")
        else:
            K = K.with_columns(nvtx_range=pl.lit(None, dtype=STR))
        K = K.sort(["start_ns", "correlation_id"], nulls_last=True)
        K = K.with_columns(
            source=pl.lit("rocprof"), kernel_id=pl.int_range(0, K.height, dtype=I64),
            short_name=map_unique(K["name"], short_name),
            process_id=pl.lit(pid, dtype=I64), category=pl.lit("kernel_dispatch"),
            duration_ns=(pl.col("end_ns") - pl.col("start_ns")).cast(F64),
            grid_x=pl.col("gx"), grid_y=pl.col("gy"), grid_z=pl.col("gz"),
            block_x=pl.col("bx"), block_y=pl.col("by"), block_z=pl.col("bz"),
            grid_size=pl.col("gx") * pl.col("gy") * pl.col("gz"), block_size=pl.col("bx") * pl.col("by") * pl.col("bz"),
            shared_mem_bytes=pl.col("shared"),
            dynamic_shared_mem_bytes=pl.when(pl.col("shared") >= pl.col("static_shared_mem_bytes")).then(pl.col("shared") - pl.col("static_shared_mem_bytes")),
        ).drop("kernel_sym", "gx", "gy", "gz", "bx", "by", "bz", "shared", "thread_id")
        transfers = self._copies(path, watch.found, op_name, agent_by_handle) if "memory_copy" in watch.found else None

        gpus = [a for a in agents if a.get("type") == 2]
        # facts a later step tabulates (the host keys a distributed run's ranks): text or nothing
        node = jsonshape.mapping(meta.get("node"), "metadata.node", path, optional=True)
        cmd = meta.get("command")
        if not isinstance(cmd, list):
            cmd = jsonshape.text(cmd, "metadata.command", path)
        md = {
            "tool": "rocprofv3 (rocprofiler-sdk)",
            "device_name": (gpus[0].get("product_name") or gpus[0].get("name")) if gpus else None,
            "device_count": len(gpus) or None,
            "host": jsonshape.text(node.get("hostname"), "metadata.node.hostname", path),
            "command_line": " ".join(str(c) for c in cmd) if isinstance(cmd, list) else cmd,
            "time_origin": "relative",
            "process_id": pid,
            "record_kinds": sorted({"kernel_dispatch"} | watch.found),
            "agents": [{"name": a.get("name"), "product_name": a.get("product_name"), "cu_count": a.get("cu_count"),
                        "max_engine_clk_fcompute_mhz": a.get("max_engine_clk_fcompute"), "wave_front_size": a.get("wave_front_size")}
                       for a in gpus],
        }
        return new_profile(path, self, {"kernels": K, "ranges": ranges, "transfers": transfers}, md)

    def _ranges(self, path, found, kind_names, op_name, strings, pid):
        from profaudit.parsers.chrome_trace import _clean_api

        rows: dict[str, list] = {c: [] for c in ("kind", "name", "thread_id", "start_ns", "end_ns", "correlation_id")}
        markers = {}
        for m in strings.get("marker_api") or []:
            if isinstance(m, dict) and "key" in m and "value" in m:
                markers[m["key"]] = m["value"]
        for kind in ("hip_api", "hsa_api", "marker_api", "rccl_api"):
            if kind not in found:
                continue
            for r in _items(path, f"{_TOOL}.item.buffer_records.{kind}.item"):
                k = r.get("kind")
                kname = kind_names[k] if isinstance(k, int) and 0 <= k < len(kind_names) else None
                corr = (r.get("correlation_id") or {}).get("internal")
                name = op_name(k, r.get("operation"))
                if kind == "marker_api" and corr in markers:
                    name = markers[corr]
                rows["kind"].append(_API_KIND.get(kname or "", (kname or kind).lower()))
                rows["name"].append(_clean_api(name) if name else name)
                rows["thread_id"].append(r.get("thread_id"))
                rows["start_ns"].append(r.get("start_timestamp"))
                rows["end_ns"].append(r.get("end_timestamp"))
                rows["correlation_id"].append(corr)
        R = pl.DataFrame(rows, schema={"kind": STR, "name": STR, "thread_id": I64, "start_ns": I64, "end_ns": I64, "correlation_id": I64})
        return nest_api_ranges(R.with_columns(process_id=pl.lit(pid, dtype=I64)), "rocprofiler-sdk")

    def _copies(self, path, found, op_name, agents):
        rows = []
        for r in _items(path, f"{_TOOL}.item.buffer_records.memory_copy.item"):
            op = op_name(r.get("kind"), r.get("operation")) or ""
            key = op.replace("MEMORY_COPY_", "")
            src, dst = agents.get(_h(r.get("src_agent_id")), {}), agents.get(_h(r.get("dst_agent_id")), {})
            gpu = dst if dst.get("type") == 2 else src
            # a time that is not a 64-bit integer (a damaged field: text, a list, an object) is
            # unknown, as it is for kernel dispatches; inferred, it gave the column another type
            start, end, nbytes = _int64(r.get("start_timestamp")), _int64(r.get("end_timestamp")), r.get("bytes")
            dur = end - start if start is not None and end is not None else None
            rows.append({
                "kind": "memcpy", "direction": _COPY_DIRECTION.get(key, key or None), "name": op or None,
                "src_kind": {1: "host", 2: "device"}.get(src.get("type")), "dst_kind": {1: "host", 2: "device"}.get(dst.get("type")),
                "bytes": float(nbytes) if isinstance(nbytes, (int, float)) else None,
                "start_ns": start, "end_ns": end, "duration_ns": float(dur) if dur is not None else None,
                "throughput_bytes_per_s": nbytes / (dur * 1e-9) if dur and isinstance(nbytes, (int, float)) else None,
                "device_id": gpu.get("device_id"), "correlation_id": (r.get("correlation_id") or {}).get("internal"),
            })
        if not rows:
            return None
        T = pl.DataFrame(rows, infer_schema_length=None, schema_overrides={"start_ns": I64, "end_ns": I64}).sort("start_ns", nulls_last=True)
        return T.with_columns(transfer_id=pl.int_range(0, T.height, dtype=I64))


PARSER = RocprofSdkParser()
