"""Chrome / Kineto / rocprof / XLA trace JSON: every corpus trace against a plain stdlib read,
exact time conversion, nesting, B/E pairing, chunking, and bad input."""

from __future__ import annotations

import gzip
import json
import math
import random
import re
from collections import Counter
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import profaudit
from profaudit.parsers import by_name, find_parser
from profaudit.parsers import chrome_trace as ct
from profaudit.parsers import jsonstream
from profaudit.parsers.base import probe
from tests.conftest import assert_one_line_error, corpus_dir, corpus_file, corpus_files, corpus_ids, run_cli
from tests.range_families import families

TRACES = [p for p in corpus_files("chrome-trace") if "rocprof_908_results" not in p.name]
SDK = [p for p in corpus_files("chrome-trace") if "rocprof_908_results" in p.name]


# ---------------------------------------------------------------------------------------------
# the independent reader: stdlib json with exact decimals


def plain(path: Path):
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw, parse_float=Decimal)


def events_of(doc) -> list[dict]:
    ev = doc["traceEvents"] if isinstance(doc, dict) else doc
    return [e for e in ev if isinstance(e, dict)]


def ns(v) -> int:
    return int((Decimal(str(v)) * 1000).to_integral_value(rounding=ROUND_HALF_UP))


def base_of(doc) -> int:
    return int(doc.get("baseTimeNanoseconds", 0)) if isinstance(doc, dict) else 0


def expected_device_rows(doc) -> tuple[list[dict], list[dict], list[dict]]:
    """(kernel events, memcpy/memset events, range events) as a reader of the format sees them."""
    ev = events_of(doc)
    procs = {str(e.get("pid")): (e.get("args") or {}).get("name") for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
    if any(re.match(r"^GPU\d+$", p or "") for p in procs.values()):  # rocprof: lanes named by what they trace
        k = [e for e in ev if e.get("ph") == "X" and re.match(r"^GPU\d+$", procs.get(str(e.get("pid"))) or "")]
        t = [e for e in ev if e.get("ph") == "X" and procs.get(str(e.get("pid"))) == "COPY"]
        r = [e for e in ev if e.get("ph") == "X" and e not in k and e not in t]
        return k, t, r
    cat = lambda e: str(e.get("cat") or "").lower()  # noqa: E731
    k = [e for e in ev if e.get("ph") == "X" and cat(e) in ("kernel", "cuda_profiler_range")]
    t = [e for e in ev if e.get("ph") == "X" and cat(e) in ("gpu_memcpy", "gpu_memset", "memcpy", "memset")]
    r = [e for e in ev if e.get("ph") in ("X", "B") and cat(e) not in ("kernel", "cuda_profiler_range", "gpu_memcpy",
                                                                         "gpu_memset", "memcpy", "memset", "trace")]
    return k, t, r


# ---------------------------------------------------------------------------------------------
# every corpus trace


@pytest.mark.corpus
@pytest.mark.parametrize("path", TRACES, ids=corpus_ids(TRACES))
def test_corpus_trace_matches_plain_read(path):
    ps = profaudit.load(path)
    assert len(ps) == 1
    prof = next(iter(ps))
    assert prof.metadata["format"] == "chrome-trace"
    doc = plain(path)
    kern, xfer, rng = expected_device_rows(doc)
    base = base_of(doc)
    k = ps.kernels
    assert k.height == len(kern)
    timed = [e for e in kern if str(e.get("cat")) != "cuda_profiler_range"]
    if timed and "BeginNs" in (timed[0].get("args") or {}):  # rocprof carries exact ns in args
        starts = sorted(int(e["args"]["BeginNs"]) for e in timed)
        total = sum(int(e["args"]["EndNs"]) - int(e["args"]["BeginNs"]) for e in timed)
    else:
        starts = sorted(ns(e["ts"]) + base for e in timed)
        total = sum(ns(e["dur"]) for e in timed)
    assert sorted(k["start_ns"].drop_nulls().to_list()) == starts
    assert int(k["duration_ns"].sum()) == total
    assert k["kernel_id"].to_list() == list(range(k.height))
    # transfers: count, bytes
    t = ps.transfers
    assert t.height == len(xfer)
    exp_bytes = sum(float((e.get("args") or {}).get("bytes", 0) or 0) for e in xfer)
    assert (t["bytes"].sum() if t.height else 0) == pytest.approx(exp_bytes)
    # ranges: one per complete event / begin event of a range category
    assert ps.ranges.height == len(rng)
    assert ps.ranges["range_id"].n_unique() == ps.ranges.height


@pytest.mark.corpus
def test_sniff_claims_exactly_the_traces():
    corpus = corpus_dir()
    for f in sorted(corpus.glob("*/*")):
        p = find_parser(f)
        mine = p is not None and p.name in ("chrome-trace", "rocprof-sdk-json")
        assert mine == (f.parent.name == "chrome-trace"), (f, p and p.name)


@pytest.mark.corpus
def test_ns_resolution_trace_is_exact():
    path = corpus_file("chrome-trace", "rank-0.Apr_03")
    doc = plain(path)
    kern, xfer, rng = expected_device_rows(doc)
    ps = profaudit.load(path)
    exp = sorted(ns(e["ts"]) for e in kern)
    assert sorted(ps.kernels["start_ns"].to_list()) == exp
    assert sorted(ps.kernels["end_ns"].to_list()) == sorted(ns(e["ts"]) + ns(e["dur"]) for e in kern)
    # the test has teeth: reading these timestamps as doubles loses the nanoseconds
    assert sum(int(float(e["ts"]) * 1000) != ns(e["ts"]) for e in kern) > len(kern) // 2
    cpu = sorted(ns(e["ts"]) for e in rng if e.get("cat") == "cpu_op")
    assert sorted(ps.ranges.filter(pl.col("kind") == "cpu_op")["start_ns"].to_list()) == cpu
    assert next(iter(ps)).metadata["time_origin"] == "unix_epoch"


@pytest.mark.corpus
def test_kineto_metadata_and_attribution():
    path = corpus_file("chrome-trace", "step_based_trace")
    doc = plain(path)
    ps = profaudit.load(path)
    md = next(iter(ps)).metadata
    assert md["source"] == "kineto" and md["device_name"] == "Quadro GP100"
    assert md["device_count"] == len(doc["deviceProperties"]) and md["rank"] == 0
    ev = events_of(doc)
    ops = [e for e in ev if e.get("cat") == "cpu_op"]
    launches = {e["args"]["correlation"]: e for e in ev if e.get("cat") == "cuda_runtime"}

    def innermost_op(call):
        s, t = ns(call["ts"]), ns(call["ts"]) + ns(call["dur"])
        inside = [o for o in ops if o["tid"] == call["tid"] and ns(o["ts"]) <= s and ns(o["ts"]) + ns(o["dur"]) >= t]
        return min(inside, key=lambda o: ns(o["dur"]))["name"] if inside else None

    k = ps.kernels
    by_corr = {e["args"]["correlation"]: e for e in ev if e.get("cat") == "kernel"}
    for row in k.iter_rows(named=True):
        e = by_corr[row["correlation_id"]]
        a = e["args"]
        assert (row["grid_x"], row["grid_y"], row["grid_z"]) == tuple(a["grid"])
        assert (row["block_x"], row["block_y"], row["block_z"]) == tuple(a["block"])
        assert row["registers_per_thread"] == a["registers per thread"] and row["shared_mem_bytes"] == a["shared memory"]
        assert row["op_name"] == innermost_op(launches[a["correlation"]])
        assert row["process_id"] == 2543932 and row["device_id"] == a["device"] and row["stream"] == a["stream"]
    assert k["op_name"].drop_nulls().len() == k.height
    assert k["nvtx_range"].drop_nulls().len() > 0
    # the runtime call that launched each kernel carries the same correlation id
    rt = ps.ranges.filter(pl.col("kind") == "cuda_runtime")
    assert set(k["correlation_id"].to_list()) <= set(rt["correlation_id"].to_list())


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["step_based_trace", "rank-0.Apr_03", "torch_compile_triton"])
def test_tables_fit_the_timeline_module(name):
    # profaudit.timeline attributes kernels to annotations from ranges alone (correlation id ->
    # launch call -> enclosing range); it must agree with the nvtx_range the parser filled
    from profaudit import timeline

    path = corpus_file("chrome-trace", name)
    ps = profaudit.load(path)
    att = timeline.attribute_kernels_to_nvtx(ps)
    assert att["nvtx_range"].drop_nulls().len() > 0
    assert att["nvtx_range"].eq_missing(ps.kernels["nvtx_range"]).all()
    summary = timeline.kernel_summary(ps.kernels)
    assert int(summary["instances"].sum()) == ps.kernels.height


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["benchmark_result_2869224", "rank-0.Apr_03"])
def test_transfers_and_bandwidth(name):
    path = corpus_file("chrome-trace", name)
    doc = plain(path)
    _, xfer, _ = expected_device_rows(doc)
    t = profaudit.load(path).transfers.sort("start_ns", "correlation_id")
    exp = sorted(xfer, key=lambda e: (ns(e["ts"]), e["args"]["correlation"]))
    assert Counter(t["direction"].drop_nulls().to_list()) == Counter(re.match(r"Memcpy (\w+)", e["name"]).group(1) for e in exp if e["cat"] == "gpu_memcpy")
    assert Counter(zip(t["src_kind"].to_list(), t["dst_kind"].to_list())) == Counter(
        tuple(x.lower() for x in re.search(r"\((\w+) -> (\w+)\)", e["name"]).groups()) if e["cat"] == "gpu_memcpy"
        else (None, re.search(r"\((\w+)\)", e["name"]).group(1).lower()) for e in exp)
    assert t.filter(pl.col("kind") == "memset").height == sum(e["cat"] == "gpu_memset" for e in exp)
    assert t["correlation_id"].to_list() == [e["args"]["correlation"] for e in exp]
    if "rank-0" in name:
        # ns-resolution durations reproduce Kineto's own bandwidth column (bytes / ns = GB/s); traces
        # with whole-microsecond durations cannot, Kineto computed it from the unrounded time
        for row, e in zip(t.iter_rows(named=True), exp):
            if row["duration_ns"]:
                assert row["throughput_bytes_per_s"] / 1e9 == pytest.approx(float(e["args"]["memory bandwidth (GB/s)"]), rel=1e-6)


@pytest.mark.corpus
def test_rocprof_string_timestamps():
    path = corpus_file("chrome-trace", "rocprof_rome")
    doc = plain(path)
    ps = profaudit.load(path)
    k = ps.kernels.sort("start_ns")
    ev = [e for e in events_of(doc) if e.get("ph") == "X" and str(e.get("pid")) == "6"]
    ev.sort(key=lambda e: int(e["args"]["BeginNs"]))
    assert isinstance(ev[0]["ts"], str)  # the edge case this file is here for
    assert k["start_ns"].to_list() == [int(e["args"]["BeginNs"]) for e in ev]
    assert k["end_ns"].to_list() == [int(e["args"]["EndNs"]) for e in ev]
    # grd/wgr count work-items; blocks = ceil(grd / wgr)
    assert k["grid_size"].to_list() == [-(-int(e["args"]["grd"]) // int(e["args"]["wgr"])) for e in ev]
    assert k["registers_per_thread"].to_list() == [int(e["args"]["vgpr"]) for e in ev]
    assert k["process_id"].to_list() == [int(e["args"]["pid"]) for e in ev]
    assert next(iter(ps)).metadata["source"] == "rocprof"
    # the HSA dispatch calls and kernels are linked through the DataFlow flow events
    r = ps.ranges.filter(pl.col("kind") == "hsa_api")
    assert set(k["correlation_id"].to_list()) == set(r["correlation_id"].to_list())


CPU_ONLY = [p for p in TRACES if any(s in p.name for s in ("rank-34", "dtu_mlops", "unsloth", "profiler_trace.json"))]


@pytest.mark.corpus
@pytest.mark.parametrize("path", CPU_ONLY, ids=corpus_ids(CPU_ONLY))
def test_cpu_only_traces(path):
    ps = profaudit.load(path)
    assert ps.kernels.height == 0 and ps.transfers.height == 0
    doc = plain(path)
    ev = events_of(doc)
    r = ps.ranges
    for kind, cat in (("cpu_op", "cpu_op"), ("user_annotation", "user_annotation"), ("cuda_runtime", "cuda_runtime")):
        assert r.filter(pl.col("kind") == kind).height == sum(e.get("ph") == "X" and e.get("cat") == cat for e in ev)
    _check_nesting(r)


def _check_nesting(r: pl.DataFrame) -> None:
    """Parents contain children on the same thread, one level up."""
    by_id = {row["range_id"]: row for row in r.iter_rows(named=True)}
    for row in by_id.values():
        p = row["parent_range_id"]
        if p is None:
            assert row["depth"] == 0
            continue
        par = by_id[p]
        assert (par["process_id"], par["thread_id"]) == (row["process_id"], row["thread_id"])
        assert par["start_ns"] <= row["start_ns"] and (par["end_ns"] is None or row["end_ns"] <= par["end_ns"])
        assert row["depth"] == par["depth"] + 1


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["rank-0.Apr_03", "resnet50", "benchmark_result_924719"])
def test_nesting_invariants_on_large_traces(name):
    path = corpus_file("chrome-trace", name)
    r = profaudit.load(path).ranges
    _check_nesting(r.filter(pl.col("device_id").is_null()))
    assert r["depth"].max() >= 2


@pytest.mark.corpus
def test_counters_and_memory_events():
    gm = corpus_file("chrome-trace", "gpu_metrics_expected")
    c = profaudit.load(gm).counters
    ev = [e for e in events_of(plain(gm)) if e.get("ph") == "C"]
    assert c.height == sum(len(e["args"]) for e in ev)
    assert c["device_id"].drop_nulls().unique().to_list() == [0]
    mem = corpus_file("chrome-trace", "unsloth")
    c = profaudit.load(mem).counters
    ev = [e for e in events_of(plain(mem)) if e.get("name") == "[memory]"]
    alloc = c.filter(pl.col("counter") == "memory_allocated_bytes").sort("timestamp_ns", maintain_order=True)
    assert alloc.height == len(ev)
    assert alloc["value"].to_list() == [float(e["args"]["Total Allocated"]) for e in sorted(ev, key=lambda e: ns(e["ts"]))]
    assert alloc["unit"].unique().to_list() == ["byte"]


@pytest.mark.corpus
def test_cupti_range_profiler_metrics_and_flops():
    path = corpus_file("chrome-trace", "benchmark_result_924719")
    ps = profaudit.load(path)
    ev = [e for e in events_of(plain(path)) if e.get("cat") == "cuda_profiler_range"]
    k = ps.kernels.filter(pl.col("category") == "cuda_profiler_range")
    assert k.height == len(ev) and k["duration_ns"].null_count() == k.height  # replays have no kernel time
    assert ps.metrics.height == sum(len(e["args"]) for e in ev)
    f = lambda a, op: float(a[f"smsp__sass_thread_inst_executed_op_f{op}_pred_on.sum"])  # noqa: E731
    exp = sorted(f(e["args"], "add") + f(e["args"], "mul") + 2 * f(e["args"], "fma") for e in ev)
    assert sorted(k["flops_fp32"].to_list()) == exp
    assert k["flops_method"].unique().to_list() == ["sass-counters"]


@pytest.mark.corpus
def test_amd_kineto_and_hip_names():
    path = corpus_file("chrome-trace", "mi210")
    ps = profaudit.load(path)
    md = next(iter(ps)).metadata
    assert md["device_name"] == "AMD Instinct MI210" and md["cuda_version"] == "6.4.43483" and md["runtime"] == "hip"
    names = set(ps.ranges["name"].to_list())
    assert "hipGetDeviceProperties" in names and not any(re.search(r"R\d{4}$", n) for n in names if n.startswith("hip"))
    assert ps.kernels["process_id"].drop_nulls().len() == ps.kernels.height


# ---------------------------------------------------------------------------------------------
# rocprofiler-sdk JSON


@pytest.mark.corpus
@pytest.mark.parametrize("path", SDK, ids=corpus_ids(SDK))
def test_rocprof_sdk_matches_plain_read(path):
    ps = profaudit.load(path)
    prof = next(iter(ps))
    assert prof.metadata["format"] == "rocprof-sdk-json" and prof.metadata["device_name"] == "AMD Instinct MI350X"
    raw = gzip.decompress(path.read_bytes()).decode()
    # the stdlib reads the uint64 hive_id that ijson's C backend cannot
    tool = json.loads(raw)["rocprofiler-sdk-tool"][0]
    recs = tool["buffer_records"]["kernel_dispatch"]
    k = ps.kernels
    assert k.height == len(recs)
    assert int(k["duration_ns"].sum()) == sum(r["end_timestamp"] - r["start_timestamp"] for r in recs)
    assert sorted(k["start_ns"].to_list()) == sorted(r["start_timestamp"] for r in recs)
    r0 = min(recs, key=lambda r: (r["start_timestamp"], r["correlation_id"]["internal"]))
    row = k.row(0, named=True)
    di = r0["dispatch_info"]
    assert row["grid_x"] == math.ceil(di["grid_size"]["x"] / di["workgroup_size"]["x"])
    assert row["block_x"] == di["workgroup_size"]["x"] and row["shared_mem_bytes"] == di["group_segment_size"]
    sym = {s["kernel_id"]: s for s in tool["kernel_symbols"]}[di["kernel_id"]]
    assert row["registers_per_thread"] == sym["arch_vgpr_count"] + sym["accum_vgpr_count"]


def _sdk_doc() -> dict:
    ops = [{"kind": "NONE", "operations": []}] * 5 + [{"kind": "HIP_RUNTIME_API", "operations": ["hipApiName", "hipLaunchKernel"]}]
    ops += [{"kind": "HIP_COMPILER_API", "operations": []}, {"kind": "MARKER_CORE_API", "operations": ["roctxMarkA", "roctxRangePushA"]}]
    ops += [{"kind": "x", "operations": []}] * 2 + [{"kind": "MEMORY_COPY", "operations": ["MEMORY_COPY_NONE", "MEMORY_COPY_HOST_TO_HOST", "MEMORY_COPY_HOST_TO_DEVICE"]}]
    ops += [{"kind": "KERNEL_DISPATCH", "operations": ["NONE", "ENQUEUE", "COMPLETE"]}]
    cpu, gpu = {"handle": 1}, {"handle": 2}
    return {"rocprofiler-sdk-tool": [{
        "metadata": {"pid": 77, "node": {"hostname": "h"}, "command": ["./app"]},
        "agents": [{"id": cpu, "type": 1, "name": "cpu", "hive_id": 17332996360099338395},
                   {"id": gpu, "type": 2, "gpu_index": 0, "name": "gfx942", "product_name": "AMD Instinct MI300X", "hive_id": 17332996360099338395}],
        "strings": {"buffer_records": ops, "marker_api": [{"key": 5, "value": "my-region"}]},
        "kernel_symbols": [{"kernel_id": 3, "kernel_name": "_Z3addPfS_.kd", "arch_vgpr_count": 12, "accum_vgpr_count": 4, "group_segment_size": 256}],
        "buffer_records": {
            "marker_api": [{"kind": 7, "operation": 1, "thread_id": 9, "correlation_id": {"internal": 5}, "start_timestamp": 100, "end_timestamp": 1000}],
            "hip_api": [{"kind": 5, "operation": 1, "thread_id": 9, "correlation_id": {"internal": 6}, "start_timestamp": 200, "end_timestamp": 300}],
            "kernel_dispatch": [{"kind": 11, "operation": 2, "thread_id": 9, "correlation_id": {"internal": 6, "external": 0},
                                 "start_timestamp": 400, "end_timestamp": 650,
                                 "dispatch_info": {"agent_id": gpu, "queue_id": {"handle": 3}, "kernel_id": 3, "group_segment_size": 1280,
                                                   "workgroup_size": {"x": 256, "y": 1, "z": 1}, "grid_size": {"x": 1000, "y": 2, "z": 1}}}],
            "memory_copy": [{"kind": 10, "operation": 2, "thread_id": 9, "correlation_id": {"internal": 7}, "start_timestamp": 700,
                             "end_timestamp": 900, "src_agent_id": cpu, "dst_agent_id": gpu, "bytes": 4096}],
        },
    }]}


def test_rocprof_sdk_records(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_sdk_doc(), indent=1))
    ps = profaudit.load(path)
    k = ps.kernels.row(0, named=True)
    assert (k["name"], k["mangled_name"], k["short_name"]) == ("add(float*, float*)", "_Z3addPfS_", "add")
    assert (k["grid_x"], k["grid_y"], k["block_x"], k["grid_size"]) == (4, 2, 256, 8)
    assert (k["registers_per_thread"], k["shared_mem_bytes"], k["static_shared_mem_bytes"], k["dynamic_shared_mem_bytes"]) == (16, 1280, 256, 1024)
    assert (k["start_ns"], k["duration_ns"], k["stream"], k["device_name"], k["correlation_id"]) == (400, 250.0, 3, "AMD Instinct MI300X", 6)
    assert k["nvtx_range"] == "my-region"  # the marker range encloses the launching hipLaunchKernel
    r = ps.ranges.sort("start_ns")
    assert r["name"].to_list() == ["my-region", "hipLaunchKernel"] and r["depth"].to_list() == [0, 1]
    t = ps.transfers.row(0, named=True)
    assert (t["direction"], t["bytes"], t["throughput_bytes_per_s"], t["device_id"]) == ("HtoD", 4096.0, 4096 / 200e-9, 0)


def test_rocprof_sdk_range_parents_across_threads(tmp_path):
    # a call on another thread that starts between the marker and its child puts the nesting order
    # (thread, start) out of step with range_id order (start): parents must still be range_ids
    doc = _sdk_doc()
    doc["rocprofiler-sdk-tool"][0]["buffer_records"]["hip_api"].append(
        {"kind": 5, "operation": 0, "thread_id": 8, "correlation_id": {"internal": 8}, "start_timestamp": 150, "end_timestamp": 160})
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    r = profaudit.load(path).ranges.sort("range_id")
    assert r["name"].to_list() == ["my-region", "hipApiName", "hipLaunchKernel"]
    assert r["thread_id"].to_list() == [9, 8, 9] and r["depth"].to_list() == [0, 0, 1]
    assert r["parent_range_id"].to_list() == [None, None, r["range_id"][0]]


# ---------------------------------------------------------------------------------------------
# XLA trace-viewer JSON, written by jaxlib's own exporter from a corpus XSpace


@pytest.fixture(scope="module")
def xla_trace(tmp_path_factory):
    pytest.importorskip("jax")
    xp = [p for p in corpus_files("xplane") if "jax08_attention" in p.name]
    if not xp:
        pytest.skip("corpus xplane file absent")
    from jax._src.lib import _profiler

    out = tmp_path_factory.mktemp("xla")
    session = _profiler.ProfilerSession()
    session.stop()
    session.export(xp[0].read_bytes(), str(out))
    found = sorted(out.glob("plugins/profile/*/*.trace.json.gz"))
    if not found:
        pytest.skip("this jaxlib did not write trace.json.gz")
    return found[0]


def test_xla_trace_viewer_json(xla_trace):
    ps = profaudit.load(xla_trace)
    prof = next(iter(ps))
    assert prof.metadata["source"] == "xla" and prof.metadata["time_origin"] == "relative"
    ev = events_of(plain(xla_trace))
    planes = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
    lines = {(e["pid"], e.get("tid")): e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
    kern = [e for e in ev if e.get("ph") == "X" and planes.get(e["pid"], "").startswith("/device:")
            and lines.get((e["pid"], e.get("tid")), "").startswith("Stream #")]
    k = ps.kernels
    assert k.height == len(kern) > 0
    assert sorted(k["start_ns"].to_list()) == sorted(ns(e["ts"]) for e in kern)
    assert int(k["duration_ns"].sum()) == sum(ns(e["dur"]) for e in kern)
    assert Counter(k["op_name"].to_list()) == Counter(e["args"].get("hlo_op") for e in kern)
    row = k.filter(pl.col("kernel_id") == 0).row(0, named=True)
    assert row["grid_size"] and row["block_size"] and row["device_id"] == 0 and row["stream"] is not None
    # launches on the host plane share the kernels' correlation ids
    launches = ps.ranges.filter(pl.col("kind") == "cuda_runtime")
    assert set(k["correlation_id"].to_list()) <= set(launches["correlation_id"].to_list())
    assert k["process_id"].null_count() == 0


# ---------------------------------------------------------------------------------------------
# constructed traces


def write_trace(path: Path, events, gz: bool = False, **meta) -> Path:
    doc = {**meta, "traceEvents": events}
    data = json.dumps(doc, indent=1).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def test_begin_end_pairs_unsorted_and_string_ids(tmp_path):
    ev = [
        {"ph": "E", "pid": "p", "tid": "main", "ts": 5},  # closes "a" (matched as a stack, not by name)
        {"ph": "B", "name": "a", "cat": "c", "pid": "p", "tid": "main", "ts": 1},
        {"ph": "X", "name": "x", "cat": "c", "pid": "p", "tid": "main", "ts": 2.5, "dur": 0.25},
        {"ph": "B", "name": "b", "cat": "c", "pid": "p", "tid": "main", "ts": 2},
        {"ph": "E", "name": "not-b", "pid": "p", "tid": "main", "ts": 3},
        {"ph": "B", "name": "open", "cat": "c", "pid": "p", "tid": "main", "ts": 7},
        {"ph": "E", "pid": "p", "tid": "other", "ts": 1},  # stray: nothing open on that thread
        {"ph": "B", "name": "t2", "cat": "c", "pid": "p", "tid": "other", "ts": 4},
        {"ph": "E", "pid": "p", "tid": "other", "ts": 6},
    ]
    ps = profaudit.load(write_trace(tmp_path / "t.json", ev, displayTimeUnit="ns"))
    r = {row["name"]: row for row in ps.ranges.iter_rows(named=True)}
    assert (r["a"]["start_ns"], r["a"]["end_ns"], r["a"]["depth"]) == (1000, 5000, 0)
    assert (r["b"]["start_ns"], r["b"]["end_ns"], r["b"]["depth"], r["b"]["parent_range_id"]) == (2000, 3000, 1, r["a"]["range_id"])
    assert (r["x"]["start_ns"], r["x"]["end_ns"], r["x"]["parent_range_id"]) == (2500, 2750, r["b"]["range_id"])
    assert r["open"]["end_ns"] is None and r["open"]["depth"] == 0
    assert (r["t2"]["start_ns"], r["t2"]["end_ns"], r["t2"]["depth"]) == (4000, 6000, 0)
    assert r["a"]["process_id"] is None and r["a"]["thread_id"] is None  # text pid/tid are not numbers
    md = next(iter(ps)).metadata
    assert md["unclosed_ranges"] == 1 and md["stray_range_ends"] == 1
    # displayTimeUnit does not change the unit of ts
    assert md["display_time_unit"] == "ns" and r["a"]["duration_ns"] == 4000.0


def test_partial_overlap_is_not_nesting(tmp_path):
    # a range that outlives the one it started in is not its child (strict containment, the rule
    # profaudit.timeline uses for attribution), and never becomes the parent of the next op
    ev = [
        {"ph": "X", "cat": "cpu_op", "name": "op1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 90, "dur": 15},
        {"ph": "X", "cat": "cpu_op", "name": "op2", "pid": 1, "tid": 1, "ts": 101, "dur": 50},
        {"ph": "X", "cat": "cpu_op", "name": "inner", "pid": 1, "tid": 1, "ts": 110, "dur": 10},
    ]
    r = {row["name"]: row for row in profaudit.load(write_trace(tmp_path / "t.json", ev, schemaVersion=1)).ranges.iter_rows(named=True)}
    assert r["cudaLaunchKernel"]["parent_range_id"] is None and r["cudaLaunchKernel"]["depth"] == 0
    assert r["op2"]["depth"] == 0 and r["op2"]["parent_range_id"] is None
    assert r["inner"]["parent_range_id"] == r["op2"]["range_id"]


@pytest.mark.parametrize("laminar", [True, False])
def test_vectorised_nesting_matches_the_stack_walk(laminar, monkeypatch):
    # 30 groups, an identical twin after a fifth of the ranges
    g, s, e, kinds = families(11 if laminar else 12, laminar, groups=30, span=5000, max_rows=40000, twins=lambda rng: int(rng.random() < 0.2), outliving=40)
    ref = ct._nest(g.tolist(), s.tolist(), e.tolist(), kinds)
    calls = []
    monkeypatch.setattr(ct, "_nest", lambda *a: calls.append(1) or _stack_walk(*a))
    got = ct.nest_sorted(g, s, e, np.array([k == "user_annotation" for k in kinds]), np.array([k == "cpu_op" for k in kinds]))
    for r, x, what in zip(ref, got, ("parent", "depth", "annotation", "cpu_op")):
        assert x.tolist() == list(r), what
    # laminar families never need the per-range walk; the others take it for the broken groups only
    assert (len(calls) == 0) if laminar else (0 < len(calls) <= 30)


_stack_walk = ct._nest


def _kineto_events(n: int, weird_names: bool = False) -> list[dict]:
    ev = []
    for i in range(n):
        name = f"k{{{i}}}, {{lambda()#{i}}} \"q\\\\\" " if weird_names else f"kernel_{i % 7}"
        t = 1000 + 10 * i
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::op" + ("}, {" if weird_names else ""), "pid": 7, "tid": 7,
                   "ts": f"{t}.125", "dur": 9, "args": {"External id": i}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": t + 1, "dur": 2,
                   "args": {"External id": i, "correlation": 100 + i}})
        args = {"External id": i, "correlation": 100 + i, "device": 0, "stream": 7, "grid": [i + 1, 1, 1], "block": [128, 1, 1]}
        if weird_names and i % 5 == 0:  # objects in a list: `}, {"name"` inside an event, a cut the parser must undo
            args["inputs"] = [{"name": "a", "shape": [2, 3]}, {"name": "b", "shape": []}]
        ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": t + 4.5, "dur": 3.001, "args": args})
    return ev


def _fix_ts(ev):
    # ts given as text above means "write this decimal literally"
    return json.loads(json.dumps(ev).replace('"ts": "', '"ts": ').replace('.125"', ".125"))


def test_chunk_cuts_inside_strings_and_small_blocks(tmp_path, monkeypatch):
    ev = _fix_ts(_kineto_events(3000, weird_names=True))
    path = write_trace(tmp_path / "w.json", ev, schemaVersion=1, baseTimeNanoseconds=10**18)
    whole = profaudit.load(path)
    monkeypatch.setattr(jsonstream, "BLOCK_BYTES", 2048)  # hundreds of chunks, many cut candidates in names
    parts = profaudit.load(path)
    for t in ("kernels", "ranges", "transfers"):
        assert parts.table(t).drop("profile_id").equals(whole.table(t).drop("profile_id")), t
    k = parts.kernels
    assert k.height == 3000 and k["name"].to_list()[:1] == [ev[2]["name"]]
    assert k["start_ns"].to_list() == [10**18 + (1004 + 10 * i) * 1000 + 500 for i in range(3000)]
    assert k["op_name"].to_list() == ["aten::op}, {"] * 3000 and k["grid_x"].to_list() == list(range(1, 3001))


def _spy_reads(monkeypatch) -> list[tuple[int | None, bool]]:
    """(piece size, parsed) of every attempt to read a chunk with polars' JSON reader."""
    seen = []
    real = ct._read_json

    def spy(chunk, schema, piece, quote_ts=False, **kw):
        try:
            out = real(chunk, schema, piece, quote_ts, **kw)
        except Exception:
            seen.append((piece, False))
            raise
        seen.append((piece, True))
        return out

    monkeypatch.setattr(ct, "_read_json", spy)
    return seen


@pytest.mark.parametrize("weird", [False, True])
def test_chunks_read_in_pieces_agree_with_whole_chunks(tmp_path, monkeypatch, weird):
    # weird: strings full of `}, {` and lists of objects, where a cut between pieces is invalid
    # and the chunk has to be read whole
    ev = _fix_ts(_kineto_events(3000, weird_names=weird))
    path = write_trace(tmp_path / "w.json", ev, schemaVersion=1, baseTimeNanoseconds=10**18)
    monkeypatch.setenv("PROFAUDIT_NATIVE_TRACE", "0")  # polars' pieces (the native reader reads chunks whole)
    monkeypatch.setattr(jsonstream, "BLOCK_BYTES", 64 << 10)
    monkeypatch.setattr(ct, "PIECE_BYTES", 1 << 40)
    whole = profaudit.load(path)
    monkeypatch.setattr(ct, "PIECE_BYTES", 3000)
    seen = _spy_reads(monkeypatch)
    parts = profaudit.load(path)
    for t in ("kernels", "ranges", "transfers"):
        assert parts.table(t).drop("profile_id").equals(whole.table(t).drop("profile_id")), t
    assert parts.kernels.height == 3000
    in_pieces = [ok for piece, ok in seen if piece]
    assert in_pieces and all(in_pieces) != weird  # chunks of the weird trace fell back
    if weird:  # ... until the reader stopped cutting them
        assert any(piece is None and ok for piece, ok in seen) and seen[-1][0] is None


def test_a_piece_the_typed_schema_does_not_fit(tmp_path, monkeypatch):
    # ROCm writes some handles as hex strings: the typed read of that piece fails, the chunk is
    # read as text, and so is the rest of the file
    ev = _fix_ts(_kineto_events(2000))
    ev[3002]["args"]["stream"] = "0x11"
    path = write_trace(tmp_path / "hex.json", ev, schemaVersion=1)
    monkeypatch.setattr(jsonstream, "BLOCK_BYTES", 64 << 10)
    monkeypatch.setattr(ct, "PIECE_BYTES", 1 << 40)
    whole = profaudit.load(path)
    monkeypatch.setattr(ct, "PIECE_BYTES", 4000)
    parts = profaudit.load(path)
    for t in ("kernels", "ranges"):
        assert parts.table(t).drop("profile_id").equals(whole.table(t).drop("profile_id")), t
    streams = parts.kernels["stream"].to_list()
    assert streams[1000] == 0x11 and set(streams[:1000] + streams[1001:]) == {7}


def test_split_events_cuts_between_events_only():
    events = [{"ph": "X", "name": 'x"}, {"ph": "X", "cat": "' * (i % 3), "pid": i, "args": {"v": [i, "},{"]}} for i in range(400)]
    text = json.dumps(events).encode()
    pieces = list(jsonstream.split_events(text, 500))
    assert len(pieces) > 10 and b"".join(pieces).count(b"},{") == text.count(b"},{")
    assert [e for p in pieces for e in json.loads(p)] == events
    assert list(jsonstream.split_events(text, len(text))) == [text]
    # a list of objects inside an event has the same gaps: such a cut makes an invalid piece
    nested = json.dumps([{"ph": "X", "args": {"l": [{"name": j} for j in range(50)]}} for _ in range(20)]).encode()
    bad = 0
    for p in jsonstream.split_events(nested, 300):
        try:
            json.loads(p)
        except ValueError:
            bad += 1
    assert bad > 0


def test_categorical_names_come_back_as_text():
    s = pl.Series("n", ["b", None, "a", "b", ""]).cast(pl.Categorical)
    out = ct.cat_to_str(s)
    assert out.dtype == pl.String and out.name == "n" and out.to_list() == ["b", None, "a", "b", ""]
    assert ct.cat_to_str(pl.Series("t", ["x"])).to_list() == ["x"]


def test_nesting_with_time_spans_too_wide_to_pack():
    # groups whose times are 4e18 ns apart cannot share one int64 key: ranks are used instead
    rows = []
    for g in range(4):
        shift = 0 if g % 2 else 4 * 10**18
        rows += [(g, shift + a, shift + b) for a, b in ((0, 100), (10, 50), (20, 30), (20, 20), (60, 90), (95, 140), (200, 300))]
    g, s, e = (np.array(c, dtype=np.int64) for c in zip(*rows))
    kinds = ["cpu_op", "user_annotation", "cuda_runtime", "cpu_op", "cuda_runtime", "cpu_op", "cpu_op"] * 4
    ref = ct._nest(g.tolist(), s.tolist(), e.tolist(), kinds)
    got = ct.nest_sorted(g, s, e, np.array([k == "user_annotation" for k in kinds]), np.array([k == "cpu_op" for k in kinds]))
    for r, x, what in zip(ref, got, ("parent", "depth", "annotation", "cpu_op")):
        assert x.tolist() == list(r), what


def test_gzip_and_plain_and_array_form_agree(tmp_path):
    ev = _fix_ts(_kineto_events(500))
    a = profaudit.load(write_trace(tmp_path / "a.json", ev, schemaVersion=1))
    b = profaudit.load(write_trace(tmp_path / "b.json.gz", ev, gz=True, schemaVersion=1))
    (tmp_path / "c.json").write_text(json.dumps(ev)[:-1])  # array form, closing bracket omitted (allowed)
    c = profaudit.load(tmp_path / "c.json")
    (tmp_path / "d.json").write_text(json.dumps(ev)[:-1] + ",\n]")  # trailing comma, as some writers leave
    d = profaudit.load(tmp_path / "d.json")
    for t in ("kernels", "ranges"):
        ref = a.table(t).drop("profile_id", "source") if t == "kernels" else a.table(t).drop("profile_id")
        for other in (b, c, d):
            got = other.table(t).drop("profile_id", "source") if t == "kernels" else other.table(t).drop("profile_id")
            assert got.equals(ref), t
    assert next(iter(c)).metadata["trace_form"] == "array"


def test_flow_events_link_kernels_without_correlation_args(tmp_path):
    ev = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 5, "tid": 5, "ts": 10, "dur": 20, "args": {"External id": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel_v7000", "pid": 5, "tid": 5, "ts": 12, "dur": 3},
        {"ph": "s", "id": 42, "pid": 5, "tid": 5, "ts": 12, "cat": "ac2g", "name": "ac2g"},
        {"ph": "f", "id": 42, "pid": 0, "tid": 7, "ts": 40, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 40, "dur": 5},
    ]
    ps = profaudit.load(write_trace(tmp_path / "f.json", ev, schemaVersion=1))
    k = ps.kernels.row(0, named=True)
    assert (k["correlation_id"], k["op_name"], k["process_id"], k["device_id"], k["stream"]) == (42, "aten::mm", 5, 0, 7)
    assert ps.ranges.filter(pl.col("kind") == "cuda_runtime")["name"].to_list() == ["cudaLaunchKernel"]


def test_events_lacking_optional_fields_load_with_nulls(tmp_path):
    ev = [{"ph": "X", "ts": 1, "dur": 2}, {"ph": "X", "ts": 3, "dur": 1, "name": "n"}, {}]
    r = profaudit.load(write_trace(tmp_path / "o.json", ev)).ranges.sort("start_ns")
    assert r["name"].to_list() == [None, "n"] and r["kind"].to_list() == ["host", "host"]
    assert r["process_id"].null_count() == 2 and r["start_ns"].to_list() == [1000, 3000]


# ---------------------------------------------------------------------------------------------
# time conversion


def test_us_to_ns_is_exact_for_3_decimals():
    rng = random.Random(7)
    vals = [rng.randrange(0, 2**43 * 1000) for _ in range(20000)] + [0, 1, 999, 1000, 2**43 * 1000 - 1]
    vals += [-v for v in vals[:500]]
    texts = [f"{'-' if v < 0 else ''}{abs(v) // 1000}.{abs(v) % 1000:03d}" for v in vals]
    got, inexact = ct.us_to_ns(np.array([float(t) for t in texts]))
    assert got.tolist() == vals and not inexact.any()
    assert ct.text_us_to_ns(pl.Series(texts)).to_list() == vals
    # large absolute values: integral ones are exact, fractional ones are flagged
    got, inexact = ct.us_to_ns(np.array([1712195495519689.0, 1712195495519689.25]))
    assert got[0] == 1712195495519689000 and inexact.tolist() == [False, True]


def test_text_timestamps_round_and_parse_every_form():
    s = pl.Series(["1712195495519689.047", "15", "-0.5", "7.9020000000000001", "0.0005", "1.5e3", " 2.25 ", None, "abc"])
    assert ct.text_us_to_ns(s).to_list() == [1712195495519689047, 15000, -500, 7902, 1, 1500000, 2250, None, None]


# ---------------------------------------------------------------------------------------------
# bad input: one line, exit 2


@pytest.mark.corpus
def test_execution_trace_is_not_claimed_and_fails_in_one_line():
    et = corpus_file("other", "_et.json")
    assert find_parser(et) is None
    assert "ExecutionTrace" in by_name("chrome-trace").diagnose(probe(et))
    assert_one_line_error(run_cli("kernels", et), "ExecutionTrace")


def test_json_that_is_not_a_trace(tmp_path):
    p = tmp_path / "bench.json"
    p.write_text(json.dumps({"level1": {"a.py": {"mean": 1.0, "std": 0.1}}}))
    assert_one_line_error(run_cli("kernels", p))
    q = tmp_path / "te.json"
    q.write_text(json.dumps({"traceEvents": {"not": "a list"}, "schemaVersion": 1}))
    assert_one_line_error(run_cli("kernels", q), "traceEvents")
    e = tmp_path / "empty.json"
    e.write_text(json.dumps({"schemaVersion": 1, "traceEvents": [{}, {}]}))
    assert_one_line_error(run_cli("kernels", e), "no trace events")
    o = tmp_path / "odd.json"
    o.write_text(json.dumps({"traceEvents": [{"ph": "X", "ts": 1, "dur": 1}, 5]}))
    assert_one_line_error(run_cli("kernels", o), "holds a JSON int where an event object belongs")


def test_truncated_and_corrupt_inputs(tmp_path):
    text = json.dumps({"schemaVersion": 1, "traceEvents": _fix_ts(_kineto_events(4000))}).encode()
    cut = tmp_path / "cut.json"
    cut.write_bytes(text[: len(text) // 2])
    assert_one_line_error(run_cli("kernels", cut), "truncated")
    gz = tmp_path / "cut.json.gz"
    gz.write_bytes(gzip.compress(text)[:4000])
    assert_one_line_error(run_cli("kernels", gz), "truncated")
    bad = bytearray(gzip.compress(text))
    bad[len(bad) // 2 : len(bad) // 2 + 64] = b"\x00" * 64
    bz = tmp_path / "bad.json.gz"
    bz.write_bytes(bytes(bad))
    assert_one_line_error(run_cli("kernels", bz))
    inv = tmp_path / "invalid.json"
    inv.write_bytes(text.replace(b'"cudaLaunchKernel", "pid"', b'"cudaLaunchKernel" "pid"', 1))
    assert_one_line_error(run_cli("kernels", inv), "invalid JSON")


def test_bare_nan_values(tmp_path):
    # Python's json.dump writes NaN; a NaN arg is a missing value, a NaN timestamp a missing field
    p = tmp_path / "nan.json"
    p.write_text('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2, "args": {"External id": NaN}},'
                 ' {"ph": "C", "name": "c", "ts": 1, "args": {"v": -Infinity, "w": 3}}]}')
    ps = profaudit.load(p)
    assert ps.ranges["external_id"].to_list() == [None] and ps.counters["value"].to_list() == [3.0]
    q = tmp_path / "nan_ts.json"
    q.write_text('{"traceEvents": [{"ph": "X", "name": "a", "ts": NaN, "dur": 2}]}')
    assert_one_line_error(run_cli("kernels", q), "lack a required field")


def test_events_lacking_required_fields(tmp_path):
    ev = [{"ph": "X", "name": "ok", "ts": 1, "dur": 1}, {"ph": "X", "name": "no-dur", "ts": 2}, {"ph": "B", "name": "no-ts"}]
    p = write_trace(tmp_path / "r.json", ev)
    res = run_cli("kernels", p)
    assert_one_line_error(res, "2 trace events lack a required field")
    assert "event #1" in res.err and "'dur'" in res.err


def test_negative_durations_become_unknown_not_backwards(tmp_path):
    p = tmp_path / "neg.json"
    p.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k_ok", "pid": 0, "tid": 7, "ts": 10.0, "dur": 2.0, "args": {"stream": 7, "device": 0}},
        {"ph": "X", "cat": "kernel", "name": "k_bad", "pid": 0, "tid": 7, "ts": 20.0, "dur": -3.0, "args": {"stream": 7, "device": 0}},
    ]}))
    ps = profaudit.load(p)
    k = ps.kernels.sort("start_ns")
    assert k["name"].to_list() == ["k_ok", "k_bad"]
    assert k["duration_ns"].to_list() == [2000.0, None] and k["end_ns"][1] is None
    assert next(iter(ps)).metadata["negative_durations_nulled"] == 1


def test_cli_warns_about_nulled_durations(tmp_path, cli):
    p = tmp_path / "neg.json"
    p.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k_bad", "pid": 0, "tid": 7, "ts": 20.0, "dur": -3.0, "args": {"stream": 7, "device": 0}},
    ]}))
    res = cli("kernels", p)
    assert res.code == 0 and "1 event with a negative duration kept with an unknown duration" in res.err


# ---------------------------------------------------------------------------------------------
# device activity that Kineto writes for other runtimes and device numberings


def test_kernels_named_when_the_ordinal_is_not_the_listed_id(tmp_path):
    """ROCm with HIP_VISIBLE_DEVICES lists the one visible device as id 0 while its activities
    say device 9: every listed device having one name, the kernels carry it."""
    ev = [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 9, "tid": 3, "ts": 10.0, "dur": 2.0,
         "args": {"device": 9, "stream": 3, "correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 9, "tid": 3, "ts": 20.0, "dur": 2.0,
         "args": {"device": 9, "stream": 3, "correlation": 2}},
    ]
    one = write_trace(tmp_path / "one.json", ev, schemaVersion=1, deviceProperties=[{"id": 0, "name": "AMD Instinct MI300X"}])
    k = ct.PARSER.read(one, ct.ReadOptions()).kernels
    assert k["device_id"].to_list() == [9, 9]
    assert k["device_name"].to_list() == ["AMD Instinct MI300X"] * 2
    # two different devices listed, neither with the kernels' id: which one ran them is unknown
    two = write_trace(tmp_path / "two.json", ev, schemaVersion=1,
                      deviceProperties=[{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}, {"id": 1, "name": "NVIDIA H100 80GB HBM3"}])
    assert ct.PARSER.read(two, ct.ReadOptions()).kernels["device_name"].to_list() == [None, None]


def _mtia_events() -> list[dict]:
    ccp = lambda name, ts, dur, **args: {"ph": "X", "cat": "mtia_ccp_events", "name": name, "pid": 17, "tid": 3500,  # noqa: E731
                                         "ts": ts, "dur": dur, "args": {"stream": 102, **args}}
    return [
        {"ph": "X", "cat": "mtia_runtime", "name": "runFunction", "pid": 865, "tid": 865, "ts": 99.0, "dur": 3.0,
         "args": {"correlation": 7}},
        ccp("dma_request", 100.0, 5.24, direction="HOST_TO_DEVICE", size=1048576, sqid=8),
        ccp("pe_exe", 106.0, 40.5, column="0", row="0", correlation=7),
        ccp("dma_request", 147.0, 2.0, direction="DEVICE_TO_HOST", size=1024),
        ccp("event_record", 150.0, 0.16, seq_num=5),
        ccp("event_wait", 151.0, 15863.105, wait_on_stream=104, seq_num=6),
    ]


def test_mtia_dma_requests_are_transfers_and_event_waits_are_not_kernels(tmp_path):
    path = write_trace(tmp_path / "mtia.json", _mtia_events(), schemaVersion=1, deviceProperties=[{"id": 17, "name": "ARTEMIS"}])
    doc = plain(path)
    ccp = [e for e in events_of(doc) if e.get("cat") == "mtia_ccp_events"]
    p = ct.PARSER.read(path, ct.ReadOptions())
    want_k = [e for e in ccp if e["name"] not in ("dma_request", "event_record", "event_wait")]
    assert p.kernels["name"].to_list() == [e["name"] for e in want_k]
    assert p.kernels["duration_ns"].to_list() == [float(ns(e["dur"])) for e in want_k]
    assert p.kernels["device_name"].to_list() == ["ARTEMIS"]
    dma = [e for e in ccp if e["name"] == "dma_request"]
    t = p.transfers
    assert t["bytes"].to_list() == [float(e["args"]["size"]) for e in dma]
    assert t["direction"].to_list() == ["HtoD", "DtoH"]
    assert t["src_kind"].to_list() == ["host", "device"] and t["dst_kind"].to_list() == ["device", "host"]
    assert t["start_ns"].to_list() == [ns(e["ts"]) for e in dma]
    assert t["throughput_bytes_per_s"][0] == pytest.approx(1048576 / (ns("5.24") * 1e-9))
    sync = p.ranges.filter(pl.col("kind") == "mtia_sync")
    assert sorted(sync["name"].to_list()) == ["event_record", "event_wait"]
    assert set(sync["device_id"].to_list()) == {17}


def _legacy_autograd_events() -> list[dict]:
    """What torch.autograd.profiler.profile(use_cuda=True) exported before torch.profiler: a bare
    array, no categories, ops on "CPU functions", kernels on "CUDA functions" with the device
    index as thread, each tied to its op by an s/f flow pair (one op, two kernels here)."""
    cpu = lambda name, ts, dur: {"name": name, "ph": "X", "ts": ts, "dur": dur, "tid": 7, "pid": "CPU functions", "args": {}}  # noqa: E731
    out = [cpu("aten::conv2d", 100.5, 50.25), cpu("aten::convolution", 100.5, 45.0)]
    for i, (k, ts, dur) in enumerate([("implicit_convolve_sgemm", 160.125, 10.5), ("add_tensor_kernel_v3", 171.0, 3.25)]):
        out += [{"name": "aten::convolution", "ph": "s", "ts": 100.5, "tid": 7, "pid": "CPU functions", "id": i, "cat": "cpu_to_cuda", "args": {}},
                {"name": k, "ph": "f", "ts": ts, "tid": 1, "pid": "CUDA functions", "id": i, "cat": "cpu_to_cuda", "args": {}},
                {"name": k, "ph": "X", "ts": ts, "dur": dur, "tid": 1, "pid": "CUDA functions", "args": {}}]
    out.append(cpu("aten::relu", 152.0, 4.0))
    return out


def test_legacy_autograd_profiler_kernels(tmp_path):
    path = tmp_path / "legacy_trace.json"
    path.write_text(json.dumps(_legacy_autograd_events()))
    doc = plain(path)
    want = [e for e in events_of(doc) if e["ph"] == "X" and e["pid"] == "CUDA functions"]
    p = profaudit.load(path).profiles()[0]
    k = p.kernels
    assert k["name"].to_list() == [e["name"] for e in want]
    assert k["start_ns"].to_list() == [ns(e["ts"]) for e in want]
    assert k["duration_ns"].to_list() == [float(ns(e["dur"])) for e in want]
    assert k["device_id"].to_list() == [e["tid"] for e in want] and k["stream"].null_count() == k.height
    # both kernels' flows start on aten::convolution (the innermost op starting there)
    assert k["op_name"].to_list() == ["aten::convolution"] * 2
    r = p.ranges
    assert sorted(r["name"].to_list()) == sorted(e["name"] for e in events_of(doc) if e["ph"] == "X" and e["pid"] == "CPU functions")
    assert set(r["kind"].to_list()) == {"cpu_op"}
