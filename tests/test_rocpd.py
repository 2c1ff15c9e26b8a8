"""rocprofv3 SQLite databases (rocpd schema): databases built to the documented schema
(tests/rocpd_synth.py), every table cross-checked against plain SQL over the database's own views,
the same records read through the rocprofiler-sdk JSON reader agreeing, view-less and multi-process
databases, and bad input in one line."""

from __future__ import annotations

import json
import math
import sqlite3

import polars as pl
import pytest

from conftest import assert_one_line_error
from profaudit.loader import load
from profaudit.parsers import find_parser
from profaudit.specs import match_device
from rocpd_synth import RocpdWriter, build_app_db


@pytest.fixture(params=["direct", "tracked"])
def db(request, tmp_path):
    return build_app_db(tmp_path / "4242_results.db", layout=request.param)


def _layout(path) -> str:
    return "direct" if any(r[1] == "start" for r in _sql(path, "PRAGMA table_info(rocpd_kernel_dispatch)")) else "tracked"


# each record's times, pid, queue, agent and internal correlation id, as plain SQL reads them in each layout
_SPAN = {
    "direct": ("{a}.start", "{a}.end", "{a}.pid", "{a}.queue_id", "{a}.agent_id", "E.stack_id", ""),
    "tracked": ("TS.value", "TE.value", "T.pid", "T.queue_id", "T.agent_id", "E.correlation_id",
                "JOIN rocpd_timestamp TS ON TS.id = {a}.start_id JOIN rocpd_timestamp TE ON TE.id = {a}.end_id JOIN rocpd_track T ON T.id = {a}.track_id"),
}


def _span(path, a):
    start, end, pid, queue, agent, corr, joins = (x.format(a=a) for x in _SPAN[_layout(path)])
    return start, end, pid, queue, agent, corr, joins


def _sql(path, q):
    con = sqlite3.connect(path)
    try:
        return con.execute(q).fetchall()
    finally:
        con.close()


def test_kernels_match_plain_sql(db):
    assert find_parser(db).name == "rocpd"
    k = load(db).kernels.sort("kernel_id")
    start, end, pid, queue, agent, corr, joins = _span(db, "K")
    want = _sql(db, f"""
        SELECT K.dispatch_id, {start}, {end}, K.grid_size_x, K.grid_size_y, K.grid_size_z, K.workgroup_size_x, K.workgroup_size_y,
               K.workgroup_size_z, K.group_segment_size, S.group_segment_size, S.arch_vgpr_count, S.accum_vgpr_count, {corr},
               A.product_name, A.type_index, {pid}, {queue}
        FROM rocpd_kernel_dispatch K {joins}
        JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id JOIN rocpd_event E ON E.id = K.event_id
        JOIN rocpd_info_agent A ON A.id = {agent} ORDER BY {start}""")
    assert k.height == len(want) == 2
    for row, w in zip(k.iter_rows(named=True), want):
        (did, s, e, gx, gy, gz, bx, by, bz, lds, slds, vg, ag, corr, prod, dev, pid, q) = w
        assert (row["start_ns"], row["end_ns"], row["duration_ns"]) == (s, e, float(e - s))
        assert (row["grid_x"], row["grid_y"], row["grid_z"]) == (math.ceil(gx / bx), math.ceil(gy / by), math.ceil(gz / bz))
        assert (row["block_x"], row["block_y"], row["block_z"], row["block_size"]) == (bx, by, bz, bx * by * bz)
        assert (row["shared_mem_bytes"], row["static_shared_mem_bytes"], row["dynamic_shared_mem_bytes"]) == (lds, slds, lds - slds)
        assert row["registers_per_thread"] == vg + (ag or 0)
        assert (row["correlation_id"], row["device_name"], row["device_id"], row["process_id"], row["stream"]) == (corr, prod, dev, pid, q)
    a = k.row(0, named=True)
    assert (a["name"], a["mangled_name"], a["short_name"], a["nvtx_range"]) == ("add(float*, float*)", "_Z3addPfS_", "add", "my-region")
    assert k["name"][1] == "reduce_kernel" and k["nvtx_range"][1] is None  # launched outside any marker range
    # the device name reaches the datasheet
    assert match_device(a["device_name"]).name.startswith("AMD Instinct MI300X")


def test_launch_attributes_and_counters_match_plain_sql(db):
    m = load(db).metrics
    scratch = dict(m.filter(pl.col("metric") == "private_segment_size").select("kernel_id", "value_int").iter_rows())
    assert scratch == {0: 0, 1: 64}
    dispatch = dict(m.filter(pl.col("metric") == "dispatch_id").select("kernel_id", "value_int").iter_rows())
    assert dispatch == dict(enumerate(r[0] for r in _sql(db, "SELECT dispatch_id FROM rocpd_kernel_dispatch ORDER BY id")))
    pmc = m.filter(pl.col("kind") == "metric").sort("metric", "instance", nulls_last=True)
    want = sorted(_sql(db, """SELECT I.name, I.instance_id, P.value, I.units FROM rocpd_pmc_event P JOIN rocpd_info_pmc I ON I.id = P.pmc_id"""),
                  key=lambda r: (r[0], r[1] is None, r[1]))
    assert [(r["metric"], r["instance"], r["value"], r["unit"]) for r in pmc.iter_rows(named=True)] == want
    assert pmc["kernel_id"].unique().to_list() == [0]  # the counters belong to the dispatch that shares their event


def test_api_markers_and_copies_match_plain_sql(db):
    ps = load(db)
    r = ps.ranges.sort("range_id")
    start, end, _, _, _, corr, joins = _span(db, "R")
    regions = _sql(db, f"SELECT {start}, {end}, {corr} FROM rocpd_region R {joins} JOIN rocpd_event E ON E.id = R.event_id")
    timed = r.filter(pl.col("duration_ns") > 0)
    assert sorted(timed.select("start_ns", "end_ns", "correlation_id").rows()) == sorted(regions)
    assert r["name"].to_list() == ["my-region", "hipLaunchKernel", "hipModuleGetFunction", "hsa_queue_create", "checkpoint"]
    assert r["kind"].to_list() == ["user_annotation", "cuda_runtime", "cuda_runtime", "hsa_api", "user_annotation"]
    assert r["depth"].to_list() == [0, 1, 0, 0, 0] and r["parent_range_id"][1] == r["range_id"][0]
    t = ps.transfers.row(0, named=True)
    start, end, _, _, _, _, joins = _span(db, "M")
    (size, s, e), = _sql(db, f"SELECT M.size, {start}, {end} FROM rocpd_memory_copy M {joins}")
    assert (t["direction"], t["src_kind"], t["dst_kind"], t["bytes"], t["device_id"]) == ("HtoD", "host", "device", float(size), 0)
    assert t["throughput_bytes_per_s"] == size / ((e - s) * 1e-9)
    md = next(iter(ps)).metadata
    assert (md["host"], md["command_line"], md["device_name"], md["device_count"]) == ("mi300-box", "./app --n 1024", "AMD Instinct MI300X", 2)
    assert md["agents"][0]["cu_count"] == 304 and md["rocpd_schema_version"] == "3"


def test_same_records_through_the_json_reader_agree(tmp_path, db):
    # the kernel and copy of build_app_db written as rocprofv3 --output-format json would
    ops = [{"kind": "NONE", "operations": []}] * 5 + [{"kind": "HIP_RUNTIME_API_EXT", "operations": ["hipApiName", "hipLaunchKernel"]}]
    ops += [{"kind": "x", "operations": []}, {"kind": "MARKER_CORE_RANGE_API", "operations": ["roctxRangePushA"]}]
    ops += [{"kind": "x", "operations": []}] * 2 + [{"kind": "MEMORY_COPY", "operations": ["MEMORY_COPY_NONE", "MEMORY_COPY_HOST_TO_HOST", "MEMORY_COPY_HOST_TO_DEVICE"]}]
    cpu, gpu = {"handle": 1}, {"handle": 2}
    doc = {"rocprofiler-sdk-tool": [{
        "metadata": {"pid": 4242, "node": {"hostname": "mi300-box"}, "command": ["./app", "--n", "1024"]},
        "agents": [{"id": cpu, "type": 1, "name": "cpu"}, {"id": gpu, "type": 2, "gpu_index": 0, "name": "gfx942", "product_name": "AMD Instinct MI300X"}],
        "strings": {"buffer_records": ops, "marker_api": [{"key": 5, "value": "my-region"}]},
        "kernel_symbols": [{"kernel_id": 3, "kernel_name": "_Z3addPfS_.kd", "arch_vgpr_count": 12, "accum_vgpr_count": 4, "group_segment_size": 256}],
        "buffer_records": {
            "marker_api": [{"kind": 7, "operation": 0, "thread_id": 9, "correlation_id": {"internal": 5}, "start_timestamp": 100, "end_timestamp": 1000}],
            "hip_api": [{"kind": 5, "operation": 1, "thread_id": 9, "correlation_id": {"internal": 6}, "start_timestamp": 200, "end_timestamp": 300}],
            "kernel_dispatch": [{"thread_id": 9, "correlation_id": {"internal": 6}, "start_timestamp": 400, "end_timestamp": 650,
                                 "dispatch_info": {"agent_id": gpu, "queue_id": {"handle": 1}, "kernel_id": 3, "group_segment_size": 1280,
                                                   "workgroup_size": {"x": 256, "y": 1, "z": 1}, "grid_size": {"x": 1000, "y": 2, "z": 1}}}],
            "memory_copy": [{"kind": 10, "operation": 2, "thread_id": 9, "correlation_id": {"internal": 7}, "start_timestamp": 700,
                             "end_timestamp": 900, "src_agent_id": cpu, "dst_agent_id": gpu, "bytes": 4096}],
        }}]}
    jp = tmp_path / "results.json"
    jp.write_text(json.dumps(doc))
    cols = ["name", "mangled_name", "device_name", "device_id", "start_ns", "end_ns", "duration_ns", "grid_x", "grid_y", "block_x",
            "registers_per_thread", "shared_mem_bytes", "static_shared_mem_bytes", "dynamic_shared_mem_bytes", "correlation_id", "stream", "nvtx_range"]
    from_json = load(jp).kernels.select(cols)
    from_db = load(db).kernels.filter(pl.col("correlation_id") == 6).select(cols)
    assert from_db.rows() == from_json.rows()
    tcols = ["direction", "bytes", "start_ns", "end_ns", "throughput_bytes_per_s", "device_id", "correlation_id"]
    assert load(db).transfers.select(tcols).rows() == load(jp).transfers.select(tcols).rows()


@pytest.mark.parametrize("layout", ["direct", "tracked"])
def test_tables_without_views_and_two_processes(tmp_path, layout):
    # no plain-named views: the uuid-suffixed tables are read directly, and a second process's
    # tables (another uuid and guid) are unioned with rows joined only within their own guid
    p = tmp_path / "merged_results.db"
    build_app_db(p, views=False, layout=layout)
    w = RocpdWriter(p, views=False, uuid="_00009999_aaaa", guid="second-process", layout=layout)
    node = w.add("rocpd_info_node", hash=2, machine_id="m2", hostname="mi300-box")
    # ids collide with the first process's ids on purpose (agent 2, symbol 1, dispatch 1)
    gpu = w.add("rocpd_info_agent", id=2, nid=node, pid=5151, type="GPU", type_index=0, name="gfx942", product_name="AMD Instinct MI300X", extdata={})
    sym = w.add("rocpd_info_kernel_symbol", nid=node, pid=5151, code_object_id=1, kernel_name="copy_kernel", group_segment_size=0, extdata={})
    w.record("rocpd_kernel_dispatch", 5000, 5300, node=node, pid=5151, tid=3, agent=gpu, queue=1, kernel_id=sym, dispatch_id=1, group_segment_size=0,
             workgroup_size_x=128, workgroup_size_y=1, workgroup_size_z=1, grid_size_x=128, grid_size_y=1, grid_size_z=1,
             event_id=w.event("KERNEL_DISPATCH", 1), extdata={})
    w.close()
    k = load(p).kernels.sort("start_ns")
    assert k["name"].to_list() == ["add(float*, float*)", "reduce_kernel", "copy_kernel"]
    assert k["process_id"].to_list() == [4242, 4242, 5151] and k["duration_ns"].to_list() == [250.0, 500.0, 300.0]
    assert k["nvtx_range"].to_list() == ["my-region", None, None]


def test_device_option_overrides_name(db):
    from profaudit.parsers import by_name
    from profaudit.parsers.base import ReadOptions

    prof = by_name("rocpd").read(db, ReadOptions(device="MI300X-custom"))
    assert prof.metadata["device_name"] == "MI300X-custom" and prof.metadata["device_name_reported"] == "AMD Instinct MI300X"


def test_bad_rocpd_files_fail_in_one_line(tmp_path, cli):
    db = build_app_db(tmp_path / "4242_results.db")
    cut = tmp_path / "cut_results.db"
    cut.write_bytes(db.read_bytes()[: 4096 * 3 + 100])
    assert_one_line_error(cli("kernels", cut), "truncated SQLite database")
    empty = tmp_path / "empty_results.db"
    empty.write_bytes(b"")
    assert_one_line_error(cli("kernels", empty), "empty file")
    text = tmp_path / "notes_results.db"
    text.write_text("kernel,duration\nadd,5\n")
    assert_one_line_error(cli("kernels", text), "not an SQLite database")
    other = tmp_path / "other_results.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE rocpd_notes (x)")
    con.commit()
    con.close()
    assert_one_line_error(cli("kernels", other), "no rocpd_kernel_dispatch or rocpd_region")
    nothing = RocpdWriter(tmp_path / "idle_results.db").close()
    assert_one_line_error(cli("kernels", nothing), "holds no kernel dispatches")


def test_wrong_typed_cell_fails_in_one_line(db, cli):
    con = sqlite3.connect(db)
    table = "rocpd_kernel_dispatch" if _layout(db) == "direct" else "rocpd_track"
    con.execute(f'UPDATE "{table}_00004d2a_9e1b_7c3f" SET queue_id = 1e308 WHERE agent_id IS NOT NULL')
    con.commit()
    con.close()
    assert_one_line_error(cli("kernels", db), "stream holds 1e+308, not an integer")


def test_sniffed_by_its_tables_under_any_name(tmp_path):
    # a renamed database whose first bytes hold no table text (a schema larger than page 1) is
    # still found, by asking SQLite for its tables
    from profaudit.parsers import by_name
    from profaudit.parsers.base import Probe

    p = build_app_db(tmp_path / "run.sqlite")
    header = p.read_bytes()[:100]
    assert by_name("rocpd").sniff(Probe(p, False, ".sqlite", header, header, False))
    other = tmp_path / "other.sqlite"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    header = other.read_bytes()[:100]
    assert not by_name("rocpd").sniff(Probe(other, False, ".sqlite", header, header, False))
