"""Distributed runs (`profaudit.ranks`): rank identity, clock alignment, collectives with nccl-tests
bandwidths, per-step temporal breakdown and stragglers, each checked against an independent
computation on the plain JSON of the synthetic traces (tests/ranks_synth.py) and its ground truth."""

from __future__ import annotations

import gzip
import json
import re

import numpy as np
import polars as pl
import pytest

from profaudit import schema
from profaudit.errors import InputError
from profaudit.ranks import load_run

from ranks_synth import DTYPE_SIZE, make_run, write_run


@pytest.fixture(scope="module")
def run4(tmp_path_factory):
    docs, truth = make_run(world_size=4, steps=3, ranks_per_host=2, late_rank=1, seed=1)
    folder = tmp_path_factory.mktemp("run4")
    write_run(folder, docs, gz=True)
    return load_run(folder, parallel=False), docs, truth


def _events(doc) -> list[dict]:
    return doc["traceEvents"]


def _ns(doc, e, key="ts") -> int:
    # plain read: baseTimeNanoseconds + microseconds with three decimals
    return doc["baseTimeNanoseconds"] + round(e[key] * 1000)


def _nccl(doc) -> list[dict]:
    return sorted((e for e in _events(doc) if e.get("cat") == "kernel" and e["name"].startswith("nccl")), key=lambda e: e["ts"])


def test_rank_identity(run4):
    run, docs, _ = run4
    r = run.ranks
    assert r["rank"].to_list() == [d["distributedInfo"]["rank"] for d in docs]
    assert r["world_size"].to_list() == [4] * 4
    assert r["host"].to_list() == [d["host_name"] for d in docs]
    assert r["node"].to_list() == [0, 0, 1, 1] and r["local_rank"].to_list() == [0, 1, 0, 1]
    assert r["rank_source"].unique().to_list() == ["distributed_info"]
    assert r["kernel_count"].to_list() == [sum(e.get("cat") == "kernel" for e in _events(d)) for d in docs]
    assert r["collective_count"].to_list() == [len(_nccl(d)) for d in docs]
    assert r["step_count"].to_list() == [3] * 4
    assert r.columns == schema.RANKS.names


def test_clock_offsets_recovered_from_collective_ends(run4):
    run, _, truth = run4
    r = run.ranks
    # several hosts: aligned on the ends of the all-reduces, relative to rank 0
    assert set(r["clock_method"]) == {"collective_end"}
    want = [truth.offsets_ns[k] - truth.offsets_ns[0] for k in range(4)]
    assert r["clock_offset_ns"].to_list() == want
    assert r["clock_offset_error_ns"].to_list() == [0.0] * 4
    # aligned ends agree exactly, as every rank left each all-reduce at the same true time
    assert run.calls["end_spread_ns"].to_list() == [0] * run.calls.height


def test_one_host_keeps_the_recorded_clock_and_measures_its_error(tmp_path):
    docs, truth = make_run(world_size=2, steps=1, ranks_per_host=2, offsets_ns={0: 0, 1: 700}, seed=2)
    write_run(tmp_path, docs)
    run = load_run(tmp_path, parallel=False)
    r = run.ranks
    assert r["clock_method"].to_list() == ["shared_clock"] * 2
    assert r["clock_offset_ns"].to_list() == [0, 0]
    # the one clock disagrees by 700 ns at the collective ends: that is the error stated
    assert r["clock_offset_error_ns"].to_list() == [0.0, 700.0]
    forced = load_run(tmp_path, parallel=False, align="collective_end").ranks
    assert forced["clock_offset_ns"].to_list() == [0, 700] and forced["clock_offset_error_ns"].to_list() == [0.0, 0.0]


def test_ranks_from_file_names_without_distributed_info(tmp_path):
    docs, _ = make_run(world_size=3, steps=1, seed=3)
    write_run(tmp_path, docs, names="trace_rank{rank}_{pid}.json", drop_distributed_info=True)
    r = load_run(tmp_path, parallel=False).ranks
    assert r["rank"].to_list() == [0, 1, 2] and r["rank_source"].to_list() == ["file_name"] * 3
    assert r["world_size"].to_list() == [3] * 3


def test_duplicate_rank_is_one_clear_error(tmp_path):
    docs, _ = make_run(world_size=2, steps=1, seed=4)
    write_run(tmp_path / "a", docs[:1])
    write_run(tmp_path / "b", docs[:1])
    with pytest.raises(InputError, match="rank 0 appears in more than one trace"):
        load_run(tmp_path, parallel=False).ranks


def _plain_collectives(docs, kernel_args: bool) -> list[dict]:
    """Per rank and call, from the JSON alone: sizes, times and nccl-tests bandwidths by hand."""
    rows = []
    for doc in docs:
        rank = doc["distributedInfo"]["rank"]
        ops = [e for e in _events(doc) if e["name"] == "record_param_comms"]
        launch = {e["args"]["correlation"]: e["ts"] for e in _events(doc) if e.get("cat") == "cuda_runtime"}
        steps = [(int(e["name"].split("#")[1]), e["ts"], e["ts"] + e["dur"]) for e in _events(doc) if e["name"].startswith("ProfilerStep#")]
        seen: dict = {}
        for i, k in enumerate(_nccl(doc)):
            a = k["args"] if kernel_args else sorted(ops, key=lambda e: e["ts"])[i]["args"]
            t = launch[k["args"]["correlation"]]
            step = next(n for n, lo, hi in steps if lo <= t < hi)  # the step its launch was issued in
            index = seen[step] = seen.get(step, -1) + 1
            n = a["Group size"]
            size = a["In msg nelems"] * DTYPE_SIZE[a["dtype"]]  # all-reduce: the buffer
            start, end = _ns(doc, k), _ns(doc, k) + round(k["dur"] * 1000)
            algbw = size / ((end - start) * 1e-9)
            rows.append({"rank": rank, "step": step, "call_index": index, "msg_bytes": size, "raw_start": start, "duration_ns": end - start,
                         "algbw": algbw, "busbw": algbw * 2 * (n - 1) / n})
    return rows


@pytest.mark.parametrize("kernel_args", [True, False], ids=["args-on-kernel", "args-on-cpu-op"])
def test_collectives_match_a_plain_read(tmp_path, kernel_args):
    docs, _ = make_run(world_size=4, steps=2, kernel_comm_args=kernel_args, seed=5)
    write_run(tmp_path, docs)
    run = load_run(tmp_path, parallel=False)
    c = run.collectives.join(run.ranks.select("rank", "clock_offset_ns"), on="rank")
    want = _plain_collectives(docs, kernel_args)
    assert c.height == len(want)
    got = c.sort("rank", "step", "call_index").to_dicts()
    for g, w in zip(got, want):
        assert (g["rank"], g["step"], g["call_index"]) == (w["rank"], w["step"], w["call_index"])
        assert g["collective"] == "all_reduce" and (g["algorithm"], g["protocol"]) == ("RING", "LL")
        assert g["msg_bytes"] == w["msg_bytes"] and g["duration_ns"] == w["duration_ns"]
        assert g["start_ns"] + g["clock_offset_ns"] == w["raw_start"]
        assert g["algbw_bytes_per_s"] == pytest.approx(w["algbw"], rel=1e-12)
        assert g["busbw_bytes_per_s"] == pytest.approx(w["busbw"], rel=1e-12)
        assert g["args_source"] == ("kernel" if kernel_args else "cpu_op")
        assert g["process_group"] == "0" and g["group_size"] == 4 and g["dtype"] == "Float"
    assert c.columns[:-1] == schema.COLLECTIVES.names


def test_calls_stragglers_and_waits_match_the_truth(run4):
    run, _, truth = run4
    calls = run.calls.sort("start_ns")
    assert calls.height == len(truth.calls) and calls["ranks"].to_list() == [4] * calls.height
    assert calls["consistent"].all()
    for got, t in zip(calls.iter_rows(named=True), truth.calls):
        arr = np.array(t["arrivals"])  # true times: equal to the aligned ones, as offsets are recovered exactly
        assert got["last_rank"] == t["last_rank"] == truth.late_rank
        assert got["first_rank"] == int(np.argmin(arr))
        assert got["arrival_spread_ns"] == arr.max() - arr.min()
        assert got["wait_total_ns"] == int((arr.max() - arr).sum())
        assert got["sync_duration_ns"] == t["transfer_ns"]
        assert got["msg_bytes"] == t["nelems"] * DTYPE_SIZE[t["dtype"]]
        assert got["sync_algbw_bytes_per_s"] == pytest.approx(got["msg_bytes"] / (t["transfer_ns"] * 1e-9))
        assert got["sync_busbw_bytes_per_s"] == pytest.approx(got["sync_algbw_bytes_per_s"] * 1.5)
    s = run.stragglers
    assert s.row(0, named=True)["rank"] == truth.late_rank and s["straggler_rank"].to_list() == [1, 2, 3, 4]
    assert s.row(0, named=True)["times_last"] == calls.height and s.row(0, named=True)["last_pct"] == 100.0
    assert s.row(0, named=True)["wait_caused_ns"] == calls["wait_total_ns"].sum()
    assert s["times_last"].sum() == calls.height


def _timeline(doc, lo: int, hi: int):
    """Boolean per-nanosecond timelines of compute, communication and memory over [lo, hi)."""
    n = hi - lo
    comp, comm, mem = (np.zeros(n, dtype=bool) for _ in range(3))
    for e in _events(doc):
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        s = _ns(doc, e)
        t = s + round(e["dur"] * 1000)
        s, t = max(s, lo) - lo, min(t, hi) - lo
        if t <= s:
            continue
        if e["cat"] != "kernel":
            mem[s:t] = True
        elif re.match(r"^nccl.*Kernel", e["name"]):
            comm[s:t] = True
        else:
            comp[s:t] = True
    return comp, comm, mem


def test_step_breakdown_matches_a_per_nanosecond_timeline(run4):
    run, docs, _ = run4
    bd = run.step_breakdown.join(run.ranks.select("rank", "clock_offset_ns"), on="rank")
    assert bd.height == 4 * (3 + 1)
    for row in bd.iter_rows(named=True):
        doc = docs[row["rank"]]
        lo, hi = row["start_ns"] + row["clock_offset_ns"], row["end_ns"] + row["clock_offset_ns"]
        if row["step"] is not None:
            step = next(e for e in _events(doc) if e["name"] == f"ProfilerStep#{row['step']}")
            assert (lo, hi) == (_ns(doc, step), _ns(doc, step) + round(step["dur"] * 1000))
        comp, comm, mem = _timeline(doc, lo, hi)
        busy = comp | comm | mem
        assert row["window_ns"] == hi - lo
        assert row["compute_ns"] == comp.sum() and row["communication_ns"] == comm.sum() and row["memory_ns"] == mem.sum()
        assert row["overlapped_communication_ns"] == (comm & comp).sum()
        assert row["exposed_communication_ns"] == (comm & ~comp).sum()
        assert row["exposed_memory_ns"] == (mem & ~comp & ~comm).sum()
        assert row["idle_ns"] == (~busy).sum() and row["busy_ns"] == busy.sum()
        assert row["compute_ns"] + row["exposed_communication_ns"] + row["exposed_memory_ns"] + row["idle_ns"] == row["window_ns"]
        assert row["overlap_pct"] == pytest.approx(100.0 * (comm & comp).sum() / comm.sum())


def test_step_skew(run4):
    run, _, _ = run4
    bd = run.step_breakdown.filter(pl.col("step").is_not_null())
    sk = run.step_skew
    assert sk["step"].to_list() == [0, 1, 2]
    for row in sk.iter_rows(named=True):
        w = bd.filter(pl.col("step") == row["step"])
        assert row["skew_ns"] == w["window_ns"].max() - w["window_ns"].min()
        assert row["slowest_rank"] == w.sort("window_ns")["rank"][-1]
        assert row["start_spread_ns"] == w["start_ns"].max() - w["start_ns"].min()


def test_collective_kinds_and_bus_factors():
    from profaudit.ranks.kinds import algorithm_protocol, busbw_factor, collective_kind, msg_bytes

    names = ["allreduce", "_allgather_base", "all_gather_into_tensor_coalesced", "_reduce_scatter_base", "all_to_all",
             "alltoall_base", "broadcast", "reduce", "send", "recv", "barrier",
             "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
             "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)", "ncclDevKernel_ReduceScatter_Sum_f32_NVLS_SIMPLE(x)",
             "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "ncclDevKernel_Broadcast_RING_LL128(x)", None]
    df = pl.DataFrame({"n": names}).with_columns(collective_kind(pl.col("n")).alias("k"), *[e.alias(a) for e, a in zip(algorithm_protocol(pl.col("n")), ("a", "p"))])
    assert df["k"].to_list() == ["all_reduce", "all_gather", "all_gather", "reduce_scatter", "all_to_all", "all_to_all", "broadcast",
                                 "reduce", "send", "recv", "barrier", "all_reduce", "all_gather", "reduce_scatter", "send_recv",
                                 "broadcast", None]
    assert df["a"].to_list()[11:16] == ["RING", "RING", "NVLS", None, "RING"]
    assert df["p"].to_list()[11:16] == ["LL", "LL", "SIMPLE", None, "LL128"]
    # nccl-tests PERFORMANCE.md factors for n = 8
    kinds = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce", "send_recv", "barrier"]
    f = pl.DataFrame({"k": kinds}).select(busbw_factor(pl.col("k"), pl.lit(8))).to_series().to_list()
    assert f == [2 * 7 / 8, 7 / 8, 7 / 8, 7 / 8, 1.0, 1.0, 1.0, None]
    # sizes: all-gather its output, reduce-scatter its input, all-reduce the buffer
    s = pl.DataFrame({"k": ["all_gather", "reduce_scatter", "all_reduce", "all_reduce"], "i": [10, 80, 10, 10], "o": [80, 10, 10, 10],
                      "d": ["BFloat16", "Float", "Double", "Mystery"]}).select(msg_bytes(pl.col("k"), pl.col("i"), pl.col("o"), pl.col("d")))
    assert s.to_series().to_list() == [160.0, 320.0, 80.0, None]


def test_comm_args_reader_matches_json(tmp_path):
    from profaudit.parsers.kineto_comms import read_comm_args

    docs, _ = make_run(world_size=2, steps=2, seed=6)
    p = write_run(tmp_path, docs, gz=True)[1]
    df = read_comm_args(p)
    with gzip.open(p) as f:
        ev = [e for e in json.load(f)["traceEvents"] if "In msg nelems" in e.get("args", {})]
    assert df.height == len(ev)
    assert df["event"].to_list() == ["kernel" if e["cat"] == "kernel" else "op" for e in ev]
    assert df["in_msg_nelems"].to_list() == [e["args"]["In msg nelems"] for e in ev]
    assert df["external_id"].to_list() == [e["args"]["External id"] for e in ev]
    assert df["group_ranks"].to_list() == [e["args"]["Process Group Ranks"] for e in ev]


def test_no_collectives_no_steps(tmp_path):
    # a single-GPU trace: one rank, no communication, no steps; nothing raises, the tables are empty
    docs, _ = make_run(world_size=1, steps=1, collectives_per_step=0, late_rank=None, seed=7)
    for e in docs[0]["traceEvents"]:
        if e["name"].startswith("ProfilerStep"):
            e["name"] = "forward"
    write_run(tmp_path, docs)
    run = load_run(tmp_path, parallel=False)
    assert run.ranks.height == 1 and run.collectives.height == 0 and run.calls.height == 0
    assert run.step_skew.height == 0 and run.stragglers["times_last"].to_list() == [0]
    trace = run.step_breakdown
    assert trace["step_name"].to_list() == ["(trace)"] and trace["communication_ns"].to_list() == [0]
    assert trace["overlap_pct"].to_list() == [None]


def test_one_nsys_capture_of_two_gpus(tmp_path):
    from ranks_synth import nsys_two_gpus

    kernels, nvtx = nsys_two_gpus(tmp_path / "job.sqlite")
    run = load_run(tmp_path / "job.sqlite", parallel=False, step_pattern=r"^train_step (\d+)$")
    r = run.ranks
    assert r["rank"].to_list() == [0, 1] and r["device_id"].to_list() == [0, 1] and r["process_id"].to_list() == [4242, 5151]
    assert r["rank_source"].to_list() == ["device_order"] * 2 and r["local_rank"].to_list() == [0, 1] and r["node"].to_list() == [0, 0]
    # one capture, one clock: nothing to shift, and the all-reduce ends agree exactly
    assert r["clock_method"].to_list() == ["shared_clock"] * 2 and r["clock_offset_error_ns"].to_list() == [0.0, 0.0]
    calls = run.calls
    assert calls["collective"].to_list() == ["all_reduce"] * 2 and calls["last_rank"].to_list() == [1, 1]
    assert calls["arrival_spread_ns"].to_list() == [7_000, 7_000] and calls["msg_bytes"].null_count() == 2  # nsys has no sizes
    bd = run.step_breakdown.filter(pl.col("step").is_not_null())
    for row in bd.iter_rows(named=True):
        lo, hi = row["start_ns"], row["end_ns"]
        comp, comm = np.zeros(hi - lo, dtype=bool), np.zeros(hi - lo, dtype=bool)
        for k in kernels:
            s, e = max(k[0], lo) - lo, min(k[1], hi) - lo
            if k[2] == row["rank"] and e > s:
                (comm if k[7] == 3 else comp)[s:e] = True
        assert row["compute_ns"] == comp.sum() and row["communication_ns"] == comm.sum()
        assert row["overlapped_communication_ns"] == (comp & comm).sum() and row["idle_ns"] == (~(comp | comm)).sum()


def test_interconnect_peaks_from_device_specs(run4):
    from profaudit.ranks import interconnect_peaks
    from profaudit.specs import get_spec

    run, _, _ = run4
    peaks = interconnect_peaks(run.ranks)
    spec = get_spec("h100-sxm")  # the traces' "NVIDIA H100 80GB HBM3"
    assert set(peaks["device_key"]) == {"h100-sxm"} and peaks.height == 4 * len(spec.interconnects)
    nv = peaks.filter(pl.col("link") == "nvlink")["bytes_per_s"].unique().to_list()
    assert nv == [spec.interconnects["nvlink"].value] == [450e9]  # 900 GB/s both directions, per direction
    # an unknown device has no ceiling rather than a guessed one
    assert interconnect_peaks(run.ranks.with_columns(pl.lit("Mystery GPU 9000").alias("device_name"))).height == 0


@pytest.mark.corpus
def test_real_rank_trace_from_a_128_rank_job():
    """HTA's sampled rank 0 of a 128-rank job (no collective arguments recorded: the kind comes from
    the `nccl:*` annotation around each launch), checked against a plain read of its JSON."""
    from conftest import corpus_file

    path = corpus_file("chrome-trace", "sampled_rank-0")
    with gzip.open(path) as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    run = load_run(path, parallel=False)
    r = run.ranks.row(0, named=True)
    assert (r["rank"], r["world_size"], r["rank_source"]) == (0, doc["distributedInfo"]["world_size"], "distributed_info")
    nccl = sorted((e for e in ev if e.get("cat") == "kernel" and e["name"].startswith("nccl")), key=lambda e: e["ts"])
    launch = {e["args"]["correlation"]: e for e in ev if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    notes = [e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("nccl:")]

    def kind(k):
        call = launch[k["args"]["correlation"]]
        around = [a for a in notes if a["tid"] == call["tid"] and a["ts"] <= call["ts"] <= a["ts"] + a["dur"]]
        name = min(around, key=lambda a: a["dur"])["name"]  # the innermost
        return {"nccl:all_to_all": "all_to_all", "nccl:all_reduce": "all_reduce", "nccl:_all_gather_base": "all_gather"}[name]

    c = run.collectives.sort("start_ns")
    assert c["collective"].to_list() == [kind(k) for k in nccl]
    assert c["duration_ns"].to_list() == [round(k["dur"] * 1000) for k in nccl]
    assert c["args_source"].unique().to_list() == ["none"] and c["msg_bytes"].null_count() == c.height
    steps = {int(e["name"].split("#")[1]): round(e["dur"] * 1000) for e in ev if e["name"].startswith("ProfilerStep#")}
    bd = run.step_breakdown.filter(pl.col("step").is_not_null())
    assert dict(zip(bd["step"].to_list(), bd["window_ns"].to_list())) == steps
    assert (bd["compute_ns"] + bd["exposed_communication_ns"] + bd["exposed_memory_ns"] + bd["idle_ns"] == bd["window_ns"]).all()


def test_compare_two_runs(tmp_path):
    from profaudit.ranks import compare_runs

    base_docs, _ = make_run(world_size=4, steps=2, late_rank=1, late_ns=40_000, seed=41)
    cand_docs, _ = make_run(world_size=4, steps=2, late_rank=None, seed=41)  # the straggler fixed
    write_run(tmp_path / "base", base_docs)
    write_run(tmp_path / "cand", cand_docs)
    a, b = load_run(tmp_path / "base", parallel=False), load_run(tmp_path / "cand", parallel=False)
    cmp = compare_runs(a, b)
    steps = cmp["steps"]
    assert steps["step"].to_list() == [0, 1]
    for side, run in (("baseline", a), ("candidate", b)):
        bd = run.step_breakdown.filter(pl.col("step").is_not_null())
        job = bd.group_by("step").agg((pl.col("end_ns").max() - pl.col("start_ns").min()).alias("j")).sort("step")["j"].to_list()
        assert steps[f"{side}_job_step_ns"].to_list() == job
    assert (steps["job_step_diff_ns"] == steps["candidate_job_step_ns"] - steps["baseline_job_step_ns"]).all()
    coll = cmp["collectives"]
    assert coll["baseline_calls"].to_list() == coll["candidate_calls"].to_list() and coll["baseline_calls"].sum() == a.calls.height
    assert (coll["baseline_total_wait_ns"] > 0).all() and (coll["candidate_total_wait_ns"] < coll["baseline_total_wait_ns"]).all()
    # the bandwidth once every rank had arrived is the same in both (the same 50 GB/s links)
    assert coll["sync_duration_ratio"].to_list() == pytest.approx([1.0] * coll.height, abs=0.01)


def test_executor_gives_the_same_run(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    docs, _ = make_run(world_size=3, steps=1, seed=51)
    write_run(tmp_path, docs)
    serial = load_run(tmp_path, parallel=False)
    with ThreadPoolExecutor(2) as ex:
        pooled = load_run(tmp_path, executor=ex)
    assert pooled.collectives.drop("profile_id").equals(serial.collectives.drop("profile_id"))
    assert pooled.step_breakdown.drop("profile_id").equals(serial.step_breakdown.drop("profile_id"))


@pytest.mark.corpus
def test_xla_capture_of_several_gpus_has_a_rank_and_steps_per_gpu():
    from conftest import corpus_file

    import profaudit

    path = corpus_file("xplane", "34.83.195.179_6003")
    ps = profaudit.load(path, parallel=False)
    run = load_run(path, parallel=False)
    devices = sorted(ps.kernels["device_id"].drop_nulls().unique().to_list())
    r = run.ranks
    assert r["device_id"].to_list() == devices and r["rank"].to_list() == list(range(len(devices)))
    assert set(r["rank_source"]) == {"device_order"} and r["node"].n_unique() == 1
    # XLA's step lines sit on the device planes: each GPU's steps are its own
    steps = ps.ranges.filter(pl.col("kind") == "step")
    bd = run.step_breakdown.filter(pl.col("step").is_not_null())
    for row in bd.iter_rows(named=True):
        dev = r.filter(pl.col("rank") == row["rank"])["device_id"][0]
        s = steps.filter((pl.col("device_id") == dev) & (pl.col("name") == str(row["step"])))
        assert (row["start_ns"], row["end_ns"]) == (s["start_ns"][0], s["end_ns"][0])
        k = ps.kernels.filter((pl.col("device_id") == dev) & (pl.col("end_ns") > row["start_ns"]) & (pl.col("start_ns") < row["end_ns"]))
        k = k.filter(~pl.col("name").str.contains(r"^(Memcpy|Memset|dma)|(?i)^(nccl|rccl).*kernel"))
        # the union of the compute kernels clipped to the step, merged by hand
        union, end = 0, None
        for a, b in sorted((max(x, row["start_ns"]), min(y, row["end_ns"])) for x, y in k.select("start_ns", "end_ns").iter_rows()):
            if end is None or a > end:
                union += b - a
                end = b
            elif b > end:
                union += b - end
                end = b
        assert row["compute_ns"] == union > 0


def test_a_rank_captured_from_a_later_step_still_matches(tmp_path):
    docs, truth = make_run(world_size=4, steps=3, late_rank=1, seed=61)
    ev = docs[2]["traceEvents"]
    step1 = next(e["ts"] for e in ev if e["name"] == "ProfilerStep#1")
    docs[2]["traceEvents"] = [e for e in ev if e["ts"] >= step1]  # rank 2's profiler started one step late
    write_run(tmp_path, docs)
    run = load_run(tmp_path, parallel=False)
    calls = run.calls.sort("start_ns")
    assert calls.group_by("step").agg(pl.col("ranks").max()).sort("step").rows() == [(0, 3), (1, 4), (2, 4)]
    assert calls["consistent"].all() and calls["last_rank"].to_list() == [truth.late_rank] * calls.height
    assert calls["end_spread_ns"].to_list() == [0] * calls.height  # still aligned exactly


def test_a_timing_log_beside_the_traces_is_no_rank(tmp_path):
    docs, _ = make_run(world_size=2, steps=1, seed=71)
    write_run(tmp_path, docs)
    (tmp_path / "times.csv").write_text("benchmark,time_ms\nstep,1.5\nstep,1.6\n")
    run = load_run(tmp_path, parallel=False)
    assert len(run.profiles) == 3 and run.ranks["rank"].to_list() == [0, 1]


def test_stages_sharing_no_collective_keep_their_own_reference(tmp_path):
    # two pipeline stages on four hosts: ranks 0-1 and 2-3 each all-reduce among themselves only
    offsets = {0: 0, 1: 5_000, 2: 2_000_000, 3: 2_070_000}
    docs, truth = make_run(world_size=4, steps=2, ranks_per_host=1, groups=2, late_rank=3, offsets_ns=offsets, seed=81)
    write_run(tmp_path, docs)
    run = load_run(tmp_path, parallel=False)
    r = run.ranks
    assert r["clock_method"].to_list() == ["collective_end", "collective_end", "trace_clock", "collective_end"]
    # rank 1 against rank 0, rank 3 against rank 2 (whose recorded clock is kept: nothing ties it to rank 0)
    assert r["clock_offset_ns"].to_list() == [0, 5_000, 0, 70_000]
    assert r["clock_offset_error_ns"].to_list() == [0.0, 0.0, None, 0.0]
    calls = run.calls
    assert set(calls["process_group"]) == {"0", "1"} and calls["ranks"].to_list() == [2] * calls.height
    late = calls.filter(pl.col("process_group") == "1")["last_rank"].unique().to_list()
    assert late == [3] and calls.filter(pl.col("process_group") == "0")["end_spread_ns"].to_list() == [0] * (calls.height // 2)


def test_gpu_step_windows_span_the_work_launched_in_each_step(run4, tmp_path):
    _, docs, _ = run4
    write_run(tmp_path, docs)
    run = load_run(tmp_path, parallel=False, step_basis="gpu")
    bd = run.step_breakdown.filter(pl.col("step").is_not_null()).join(run.ranks.select("rank", "clock_offset_ns"), on="rank")
    for doc in docs:
        rank = doc["distributedInfo"]["rank"]
        ev = _events(doc)
        launch = {e["args"]["correlation"]: _ns(doc, e) for e in ev if e.get("cat") == "cuda_runtime"}
        steps = [(int(e["name"].split("#")[1]), _ns(doc, e), _ns(doc, e) + round(e["dur"] * 1000)) for e in ev if e["name"].startswith("ProfilerStep#")]
        spans: dict[int, list[int]] = {}
        for e in ev:
            if e.get("cat") in ("kernel", "gpu_memcpy"):
                t = launch[e["args"]["correlation"]]
                n = next(n for n, lo, hi in steps if lo <= t < hi)
                s, f = _ns(doc, e), _ns(doc, e) + round(e["dur"] * 1000)
                lo, hi = spans.get(n, [s, f])
                spans[n] = [min(lo, s), max(hi, f)]
        order = sorted(spans)
        for i, n in enumerate(order):  # cut where the next step's GPU work begins
            if i + 1 < len(order):
                spans[n][1] = min(spans[n][1], spans[order[i + 1]][0])
        rows = bd.filter(pl.col("rank") == rank).sort("step")
        assert rows["step"].to_list() == order
        for row in rows.iter_rows(named=True):
            lo, hi = row["start_ns"] + row["clock_offset_ns"], row["end_ns"] + row["clock_offset_ns"]
            assert [lo, hi] == spans[row["step"]]
            comp, comm, mem = _timeline(doc, lo, hi)
            assert row["compute_ns"] == comp.sum() and row["exposed_communication_ns"] == (comm & ~comp).sum()
            assert row["idle_ns"] == (~(comp | comm | mem)).sum()
    # the calls still match on the host steps their launches were issued in
    assert run.calls.height == load_run(tmp_path, parallel=False).calls.height
