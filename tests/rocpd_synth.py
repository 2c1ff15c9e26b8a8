"""Small rocprofv3 SQLite databases built to the documented rocpd schema (rocprofiler-sdk's
rocpd_tables.sql, schema version 3): uuid-suffixed tables, a plain-named view over each, `guid`
on every row, names in rocpd_string. Two layouts: "direct" (what rocprofv3 writes today: records
carry start/end, pid, tid, agent, queue and stream; agents keyed by node id; the internal
correlation id in the event's stack_id) and "tracked" (an earlier revision: records point to
rocpd_track and rocpd_timestamp rows). Written here column by column from the schema's
documentation; no file of the tool is copied."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

UUID = "_00004d2a_9e1b_7c3f"
GUID = "0d2c1e0a-3b7c-4c1d-9b0e-5a1f2e3d4c5b"

# today's record tables (the others are shared): table -> columns after (id, guid)
DIRECT = {
    "rocpd_track": ("nid", "pid", "tid", "name_id", "extdata"),
    "rocpd_region": ("nid", "pid", "tid", "start", "end", "name_id", "event_id", "extdata"),
    "rocpd_sample": ("track_id", "timestamp", "event_id", "extdata"),
    "rocpd_kernel_dispatch": ("nid", "pid", "tid", "agent_id", "kernel_id", "dispatch_id", "queue_id", "stream_id", "start", "end", "private_segment_size",
                              "group_segment_size", "workgroup_size_x", "workgroup_size_y", "workgroup_size_z", "grid_size_x", "grid_size_y", "grid_size_z",
                              "region_name_id", "event_id", "extdata"),
    "rocpd_memory_copy": ("nid", "pid", "tid", "start", "end", "name_id", "dst_agent_id", "dst_address", "src_agent_id", "src_address", "size", "queue_id",
                          "stream_id", "region_name_id", "event_id", "extdata"),
}
# table -> columns after (id, guid); the tool's names, in its order (the tracked layout's records)
TABLES = {
    "rocpd_metadata": ("tag", "value"),
    "rocpd_string": ("string",),
    "rocpd_info_node": ("hash", "machine_id", "name", "system_name", "hostname", "release", "version", "hardware_name", "domain_name"),
    "rocpd_info_process": ("nid", "ppid", "pid", "name", "init", "fini", "start", "end", "command", "environment", "extdata"),
    "rocpd_info_thread": ("nid", "ppid", "pid", "tid", "name", "start", "end", "extdata"),
    "rocpd_info_agent": ("nid", "pid", "type", "absolute_index", "logical_index", "type_index", "uuid", "name", "generic_name", "model_name", "vendor_name", "product_name", "extdata"),
    "rocpd_info_queue": ("nid", "pid", "name", "extdata"),
    "rocpd_info_stream": ("nid", "pid", "name", "extdata"),
    "rocpd_info_pmc": ("nid", "pid", "agent_id", "target_arch", "event_code", "instance_id", "name", "symbol", "description", "long_description", "component", "units", "value_type", "block", "expression", "is_constant", "is_derived", "extdata"),
    "rocpd_info_code_object": ("nid", "pid", "agent_id", "uri", "load_base", "load_size", "load_delta", "storage_type", "extdata"),
    "rocpd_info_kernel_symbol": ("nid", "pid", "code_object_id", "kernel_name", "display_name", "kernel_object", "kernarg_segment_size", "kernarg_segment_alignment", "group_segment_size", "private_segment_size", "sgpr_count", "arch_vgpr_count", "accum_vgpr_count", "extdata"),
    "rocpd_track": ("nid", "ppid", "pid", "tid", "agent_id", "queue_id", "stream_id", "name_id", "extdata"),
    "rocpd_timestamp": ("value", "phase", "track_id"),
    "rocpd_event": ("category_id", "stack_id", "parent_stack_id", "correlation_id", "call_stack", "line_info", "extdata"),
    "rocpd_arg": ("event_id", "position", "type", "name", "value", "extdata"),
    "rocpd_pmc_event": ("event_id", "pmc_id", "value", "extdata"),
    "rocpd_region": ("track_id", "name_id", "start_id", "end_id", "event_id", "extdata"),
    "rocpd_sample": ("track_id", "name_id", "timestamp_id", "event_id", "extdata"),
    "rocpd_kernel_dispatch": ("track_id", "kernel_id", "dispatch_id", "start_id", "end_id", "private_segment_size", "group_segment_size", "workgroup_size_x", "workgroup_size_y", "workgroup_size_z", "grid_size_x", "grid_size_y", "grid_size_z", "region_name_id", "event_id", "extdata"),
    "rocpd_memory_copy": ("track_id", "start_id", "end_id", "name_id", "dst_agent_id", "dst_address", "src_agent_id", "src_address", "size", "region_name_id", "event_id", "extdata"),
    "rocpd_memory_allocate": ("track_id", "type", "level", "start_id", "end_id", "name_id", "address", "size", "region_name_id", "event_id", "extdata"),
}


class RocpdWriter:
    """Rows in, ids out; `string()`, `ts()` and `event()` intern what the records point to."""

    def __init__(self, path: Path, views: bool = True, uuid: str = UUID, guid: str = GUID, layout: str = "direct"):
        self.path, self.uuid, self.guid, self.layout = Path(path), uuid, guid, layout
        self.con = sqlite3.connect(self.path)
        # a test fixture needs no durability: no journal file, no fsync
        self.con.execute("PRAGMA journal_mode=OFF")
        self.con.execute("PRAGMA synchronous=OFF")
        tables = {**TABLES, **DIRECT} if layout == "direct" else dict(TABLES)
        if layout == "direct":
            del tables["rocpd_timestamp"]
        for t, cols in tables.items():
            self.con.execute(f'CREATE TABLE "{t}{uuid}" (id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, {", ".join(f"{c!r}" for c in cols)})')
            if views:
                self.con.execute(f'CREATE VIEW IF NOT EXISTS "{t}" AS SELECT * FROM "{t}{uuid}"')
        self.strings: dict[str, int] = {}
        self.add("rocpd_metadata", tag="schema_version", value="3")
        self.add("rocpd_metadata", tag="uuid", value=uuid)

    def add(self, table: str, **row) -> int:
        row = {k: (json.dumps(v) if isinstance(v, dict) else v) for k, v in row.items()}
        cols = ", ".join(["guid", *(f"{k!r}" for k in row)])
        cur = self.con.execute(f'INSERT INTO "{table}{self.uuid}" ({cols}) VALUES ({", ".join("?" * (len(row) + 1))})', (self.guid, *row.values()))
        return cur.lastrowid

    def string(self, s: str) -> int:
        if s not in self.strings:
            self.strings[s] = self.add("rocpd_string", string=s)
        return self.strings[s]

    def ts(self, value: int, phase: int = 1) -> int:
        return self.add("rocpd_timestamp", value=value, phase=phase)

    def event(self, category: str, correlation_id: int, extdata: dict | None = None) -> int:
        # the writer keeps the internal correlation id in stack_id; correlation_id is the external one
        if self.layout == "direct":
            return self.add("rocpd_event", category_id=self.string(category), stack_id=correlation_id, parent_stack_id=correlation_id, correlation_id=0,
                            call_stack="{}", line_info="{}", extdata=extdata or {})
        return self.add("rocpd_event", category_id=self.string(category), correlation_id=correlation_id, call_stack="{}", line_info="{}", extdata=extdata or {})

    def record(self, table: str, start: int, end: int, *, node: int, pid: int, tid: int, agent: int | None = None, queue: int | None = None, **cols) -> int:
        """A kernel dispatch, copy or region in this writer's layout."""
        if self.layout == "direct":
            extra = {"agent_id": agent, "queue_id": queue, "stream_id": 0} if table == "rocpd_kernel_dispatch" else (
                {"queue_id": queue, "stream_id": 0} if table == "rocpd_memory_copy" else {})
            return self.add(table, nid=node, pid=pid, tid=tid, start=start, end=end, **extra, **cols)
        track = self.add("rocpd_track", nid=node, pid=pid, tid=tid, agent_id=agent, queue_id=queue, extdata={})
        return self.add(table, track_id=track, start_id=self.ts(start), end_id=self.ts(end, 2), **cols)

    def instant(self, ts: int, category: str, correlation_id: int, name: str, *, node: int, pid: int, tid: int, extdata: dict | None = None) -> int:
        ev = self.event(category, correlation_id, extdata)
        if self.layout == "direct":
            track = self.add("rocpd_track", nid=node, pid=pid, tid=tid, name_id=self.string(category), extdata={})
            return self.add("rocpd_sample", track_id=track, timestamp=ts, event_id=ev, extdata={})
        track = self.add("rocpd_track", nid=node, pid=pid, tid=tid, extdata={})
        return self.add("rocpd_sample", track_id=track, name_id=self.string(name), timestamp_id=self.ts(ts, 0), event_id=ev, extdata={})

    def close(self) -> Path:
        self.con.commit()
        self.con.close()
        return self.path


def build_app_db(path: Path, views: bool = True, layout: str = "direct") -> Path:
    """One process on a host with a CPU and two MI300X GPUs: a roctx range around a hipLaunchKernel,
    the kernel it launched (with counters), a second kernel on GPU 1 with scratch, an HtoD copy,
    an instant marker, and an HSA call."""
    w = RocpdWriter(path, views, layout=layout)
    node = w.add("rocpd_info_node", hash=1, machine_id="m1", hostname="mi300-box", system_name="Linux", release="6.8.0", version="#1", hardware_name="x86_64")
    w.add("rocpd_info_process", nid=node, ppid=1, pid=4242, init=0, fini=5000, start=0, end=5000, command="./app --n 1024", environment={}, extdata={})
    at = dict(node=node, pid=4242, tid=9)
    # agents are keyed by their node id (absolute index) in today's layout
    cpu = w.add("rocpd_info_agent", id=0, nid=node, pid=4242, type="CPU", absolute_index=0, logical_index=0, type_index=0, name="AMD EPYC 9654",
                product_name="AMD EPYC 9654", extdata={})
    gpu0 = w.add("rocpd_info_agent", id=2, nid=node, pid=4242, type="GPU", absolute_index=2, logical_index=1, type_index=0, name="gfx942",
                 product_name="AMD Instinct MI300X", model_name="MI300X", vendor_name="AMD", extdata={"cu_count": 304, "max_engine_clk_fcompute": 2100, "wave_front_size": 64})
    gpu1 = w.add("rocpd_info_agent", id=3, nid=node, pid=4242, type="GPU", absolute_index=3, logical_index=2, type_index=1, name="gfx942",
                 product_name="AMD Instinct MI300X", model_name="MI300X", vendor_name="AMD", extdata={"cu_count": 304})
    q0 = w.add("rocpd_info_queue", nid=node, pid=4242, name="queue 0", extdata={})
    q1 = w.add("rocpd_info_queue", nid=node, pid=4242, name="queue 1", extdata={})
    co = w.add("rocpd_info_code_object", nid=node, pid=4242, agent_id=gpu0, uri="file:///app#offset=0", storage_type="FILE", extdata={})
    add = w.add("rocpd_info_kernel_symbol", nid=node, pid=4242, code_object_id=co, kernel_name="_Z3addPfS_.kd", display_name="add(float*, float*)",
                kernarg_segment_size=16, group_segment_size=256, private_segment_size=0, sgpr_count=24, arch_vgpr_count=12, accum_vgpr_count=4,
                extdata={"demangled_kernel_name": "add(float*, float*)", "kernel_id": 3})
    red = w.add("rocpd_info_kernel_symbol", nid=node, pid=4242, code_object_id=co, kernel_name="reduce_kernel", display_name="reduce_kernel",
                kernarg_segment_size=24, group_segment_size=0, private_segment_size=64, sgpr_count=40, arch_vgpr_count=32, extdata={})
    # roctx range 100..1000 around hipLaunchKernel 200..300 on thread 9
    w.record("rocpd_region", 100, 1000, **at, name_id=w.string("roctxRangePushA"), event_id=w.event("MARKER_CORE_RANGE_API", 5, {"message": "my-region"}), extdata={})
    w.record("rocpd_region", 200, 300, **at, name_id=w.string("hipLaunchKernel"), event_id=w.event("HIP_RUNTIME_API_EXT", 6), extdata={})
    w.record("rocpd_region", 1100, 1150, **at, name_id=w.string("hipModuleGetFunctionR0600"), event_id=w.event("HIP_RUNTIME_API_EXT", 8), extdata={})
    w.record("rocpd_region", 1200, 1260, **at, name_id=w.string("hsa_queue_create"), event_id=w.event("HSA_CORE_API", 9), extdata={})
    w.instant(1300, "MARKER_CORE_API", 10, "roctxMarkA", **at, extdata={"message": "checkpoint"})
    ev_k = w.event("KERNEL_DISPATCH", 6)
    w.record("rocpd_kernel_dispatch", 400, 650, **at, agent=gpu0, queue=q0, kernel_id=add, dispatch_id=1, private_segment_size=0,
             group_segment_size=1280, workgroup_size_x=256, workgroup_size_y=1, workgroup_size_z=1, grid_size_x=1000, grid_size_y=2, grid_size_z=1,
             region_name_id=w.string("KERNEL_DISPATCH_COMPLETE"), event_id=ev_k, extdata={})
    w.record("rocpd_kernel_dispatch", 1400, 1900, **at, agent=gpu1, queue=q1, kernel_id=red, dispatch_id=2, private_segment_size=64,
             group_segment_size=0, workgroup_size_x=64, workgroup_size_y=1, workgroup_size_z=1, grid_size_x=4096, grid_size_y=1, grid_size_z=1,
             region_name_id=w.string("KERNEL_DISPATCH_COMPLETE"), event_id=w.event("KERNEL_DISPATCH", 11), extdata={})
    for name, unit, value, inst in (("SQ_WAVES", "", 8.0, None), ("GRBM_GUI_ACTIVE", "cycles", 5120.0, None), ("TCC_HIT", "", 311.0, 0), ("TCC_HIT", "", 290.0, 1)):
        pmc = w.add("rocpd_info_pmc", nid=node, pid=4242, agent_id=gpu0, target_arch="GPU", name=name, symbol=name, units=unit,
                    instance_id=inst, block=name.split("_")[0], value_type="ABS", is_constant=0, is_derived=0, extdata={})
        w.add("rocpd_pmc_event", event_id=ev_k, pmc_id=pmc, value=value, extdata={})
    w.record("rocpd_memory_copy", 700, 900, **at, queue=q0, name_id=w.string("MEMORY_COPY_HOST_TO_DEVICE"),
             dst_agent_id=gpu0, src_agent_id=cpu, size=4096, event_id=w.event("MEMORY_COPY", 7), extdata={})
    return w.close()
