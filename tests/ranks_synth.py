"""Synthetic multi-rank PyTorch profiler (Kineto) traces with the event shapes real traces have.

A data-parallel step on every rank: ProfilerStep#N on the main thread, aten ops launching compute
kernels on stream 7 through cudaLaunchKernel (correlation + External id, ac2g flows), a host-to-
device memcpy, and gradient all-reduces issued by `record_param_comms` / `nccl:all_reduce` whose
NCCL kernels run on stream 20 and overlap the backward compute. Kineto >= 2.3 copies the collective
arguments onto the NCCL kernel too; `kernel_comm_args=False` leaves them on the CPU op only (older
traces). Each rank's clock reads true time + its offset; one rank can arrive late to every
collective (the straggler), and every rank leaves a collective at the same true time, as NCCL does.

`make_run` returns the documents and the ground truth it built them from (true offsets, who arrived
last, per-call sizes), which tests compare against as well as against a plain JSON read.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

DTYPE_SIZE = {"Float": 4, "BFloat16": 2, "Half": 2}
KERNEL_DTYPE = {"Float": "f32", "BFloat16": "bf16", "Half": "f16"}


@dataclass
class Truth:
    offsets_ns: dict[int, int] = field(default_factory=dict)  # rank -> clock offset (its clock - true)
    late_rank: int | None = None
    late_ns: int = 0
    calls: list[dict] = field(default_factory=list)  # one per collective call: name, nelems, dtype, true end


def _us(ns: int) -> float:
    # Kineto prints microseconds with three decimals: round to whole nanoseconds exactly
    return round(ns / 1000.0, 3)


def _whole_us(ns: int) -> int:
    return int(round(ns / 1000.0)) * 1000


def make_run(
    world_size: int = 4,
    steps: int = 3,
    ranks_per_host: int = 2,
    collectives_per_step: int = 2,
    late_rank: int | None = 1,
    late_ns: int = 40_000,
    offsets_ns: dict[int, int] | None = None,
    kernel_comm_args: bool = True,
    compute_kernels_per_step: int = 6,
    dtype: str = "Float",
    seed: int = 0,
    whole_us: bool = False,
    groups: int = 1,
    algbw_bytes_per_ns: float = 50.0,
) -> tuple[list[dict], Truth]:
    """`whole_us=True` puts every time on whole microseconds, as Kineto wrote them before 2024 (and
    as Holistic Trace Analysis rounds them), so that HTA's numbers can be compared exactly.
    `groups` splits the ranks into that many process groups of consecutive ranks (pipeline stages
    that share no collective), each group running its own all-reduces. `algbw_bytes_per_ns` is the
    collectives' algorithm bandwidth once every rank has arrived (50 bytes/ns = 50 GB/s)."""
    rng = np.random.default_rng(seed)
    q = 1000 if whole_us else 1
    size = world_size // groups
    group_of = [min(r // size, groups - 1) for r in range(world_size)]
    group_members = [[r for r in range(world_size) if group_of[r] == g] for g in range(groups)]
    truth = Truth(late_rank=late_rank, late_ns=late_ns if late_rank is not None else 0)
    offsets = offsets_ns if offsets_ns is not None else {r: (r // ranks_per_host) * 3_000_000 + 1_000 * r for r in range(world_size)}
    truth.offsets_ns = {r: int(offsets.get(r, 0)) for r in range(world_size)}
    base_true = 1_700_000_000_000_000_000
    docs = [_header(r, world_size, ranks_per_host, base_true + truth.offsets_ns[r]) for r in range(world_size)]
    state = [{"ext": 1, "corr": 1, "ev": docs[r]["traceEvents"]} for r in range(world_size)]
    sizes = [1 << 20, 1 << 22, 1 << 18, 1 << 24]
    t = 100_000  # true ns since the common start
    for s in range(steps):
        step_start = t
        # host side: identical programme on every rank; true times per rank differ by a small jitter
        jitter = [int(rng.integers(0, 2_000)) // q * q for _ in range(world_size)]
        step_end_true = 0
        call_plan = []
        for c in range(collectives_per_step):
            nelems = sizes[(s * collectives_per_step + c) % len(sizes)]
            call_plan.append(nelems)
        # GPU timeline (true time): memcpy, forward kernels, then backward kernels while all-reduces run
        per_rank_kernels: list[list[tuple[int, int, str]]] = []
        for r in range(world_size):
            g = step_start + 20_000 + jitter[r]
            ks = [(g, g + 15_000, "memcpy")]
            g += 16_000
            for k in range(compute_kernels_per_step):
                d = 30_000 + 5_000 * k + int(rng.integers(0, 1_000)) // q * q
                ks.append((g, g + d, "compute"))
                g += d + 1_000
            per_rank_kernels.append(ks)
        # collectives: arrival = the end of the first half of the compute (+ the straggler's delay)
        comm_rows = []
        for c, nelems in enumerate(call_plan):
            arrivals = []
            for r in range(world_size):
                ks = per_rank_kernels[r]
                anchor = ks[1 + (c + 1) * compute_kernels_per_step // (collectives_per_step + 1)][0]
                arr = anchor + 2_000 + (late_ns if r == late_rank else 0)
                arrivals.append(arr)
            nbytes = nelems * DTYPE_SIZE[dtype]
            xfer = int(nbytes / algbw_bytes_per_ns) // q * q  # algorithm bandwidth once all arrived
            ends = [0] * world_size
            for members in group_members:
                end = max(arrivals[r] for r in members) + xfer  # every member leaves together
                for r in members:
                    ends[r] = end
                sub = [arrivals[r] for r in members]
                truth.calls.append({"step": s, "index": len(truth.calls), "nelems": nelems, "dtype": dtype, "end_true_ns": end,
                                    "last_rank": members[int(np.argmax(sub))], "arrivals": sub, "ranks": members, "transfer_ns": xfer})
            comm_rows.append((arrivals, ends, nelems))
        for r in range(world_size):
            st = state[r]

            def rel(true_ns: int) -> float:
                # ts is relative to baseTimeNanoseconds, which is the true start on this rank's clock
                return _us(true_ns)

            ks = per_rank_kernels[r]
            comm_here = [(arr[r], ends[r], n) for arr, ends, n in comm_rows]
            members = group_members[group_of[r]]
            gpu_end = max([k[1] for k in ks] + [e for _, e, _ in comm_here])
            host_step_end = gpu_end + 5_000
            step_end_true = max(step_end_true, host_step_end)
            pid = 1000 + r
            ev = st["ev"]
            ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}", "pid": pid, "tid": pid,
                       "ts": rel(step_start + jitter[r]), "dur": _us(host_step_end - step_start - jitter[r]),
                       "args": {"External id": st["ext"], "Record function id": 0, "Ev Idx": len(ev)}})
            st["ext"] += 1
            for i, (ks0, ke, kind) in enumerate(ks):
                launch = ks0 - 8_000
                ext = st["ext"]
                corr = st["corr"]
                st["ext"] += 1
                st["corr"] += 1
                opname = "aten::copy_" if kind == "memcpy" else ("aten::mm" if i % 2 else "aten::add")
                ev.append({"ph": "X", "cat": "cpu_op", "name": opname, "pid": pid, "tid": pid, "ts": rel(launch - 1_000), "dur": 2.0,
                           "args": {"External id": ext, "Record function id": 0, "Ev Idx": len(ev)}})
                api = "cudaMemcpyAsync" if kind == "memcpy" else "cudaLaunchKernel"
                ev.append({"ph": "X", "cat": "cuda_runtime", "name": api, "pid": pid, "tid": pid, "ts": rel(launch), "dur": 0.8,
                           "args": {"External id": ext, "cbid": 41 if kind == "memcpy" else 211, "correlation": corr}})
                if kind == "memcpy":
                    ev.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7,
                               "ts": rel(ks0), "dur": _us(ke - ks0),
                               "args": {"External id": ext, "device": 0, "context": 1, "stream": 7, "correlation": corr,
                                        "bytes": 8 << 20, "memory bandwidth (GB/s)": round((8 << 20) / (ke - ks0), 3)}})
                else:
                    ev.append({"ph": "X", "cat": "kernel", "name": f"void gemm_kernel<{i}>(float*, float const*, int)", "pid": 0,
                               "tid": 7, "ts": rel(ks0), "dur": _us(ke - ks0),
                               "args": {"External id": ext, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": corr,
                                        "registers per thread": 128, "shared memory": 49152, "blocks per SM": 1.5, "warps per SM": 12.0,
                                        "grid": [216, 1, 1], "block": [256, 1, 1], "est. achieved occupancy %": 25}})
                ev.append({"ph": "s", "id": corr, "pid": pid, "tid": pid, "ts": rel(launch), "cat": "ac2g", "name": "ac2g"})
                ev.append({"ph": "f", "id": corr, "pid": 0, "tid": 7, "ts": rel(ks0), "cat": "ac2g", "name": "ac2g", "bp": "e"})
            for arr, end, nelems in comm_here:
                # DDP issues gradient all-reduces from the autograd thread, not the main one
                launch, tid = arr - 4_000, pid + 1
                ext = st["ext"]
                corr = st["corr"]
                st["ext"] += 2
                st["corr"] += 1
                cargs = {"Collective name": "allreduce", "In msg nelems": nelems, "Out msg nelems": nelems, "Group size": len(members),
                         "dtype": dtype, "In split size": "[]", "Out split size": "[]", "Process Group Name": str(group_of[r]),
                         "Process Group Description": "default_pg" if groups == 1 else f"stage_{group_of[r]}",
                         "Process Group Ranks": str(members)}
                ev.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": pid, "tid": tid, "ts": rel(launch - 1_500),
                           "dur": 3.0, "args": {"External id": ext, "Record function id": 0, **cargs, "Rank": r, "Ev Idx": len(ev)}})
                ev.append({"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": pid, "tid": tid, "ts": rel(launch - 1_000),
                           "dur": 2.2, "args": {"External id": ext + 1, "Record function id": 0, "Ev Idx": len(ev)}})
                ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid, "ts": rel(launch), "dur": 0.8,
                           "args": {"External id": ext + 1, "cbid": 211, "correlation": corr}})
                kargs = {"External id": ext + 1, "queued": 0, "device": 0, "context": 1, "stream": 20, "correlation": corr,
                         "registers per thread": 96, "shared memory": 0, "blocks per SM": 0.2, "warps per SM": 1.6,
                         "grid": [24, 1, 1], "block": [640, 1, 1], "est. achieved occupancy %": 3}
                if kernel_comm_args:
                    kargs.update(cargs)
                ev.append({"ph": "X", "cat": "kernel", "name": f"ncclDevKernel_AllReduce_Sum_{KERNEL_DTYPE[dtype]}_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                           "pid": 0, "tid": 20, "ts": rel(arr), "dur": _us(end - arr), "args": kargs})
                ev.append({"ph": "s", "id": corr, "pid": pid, "tid": tid, "ts": rel(launch), "cat": "ac2g", "name": "ac2g"})
                ev.append({"ph": "f", "id": corr, "pid": 0, "tid": 20, "ts": rel(arr), "cat": "ac2g", "name": "ac2g", "bp": "e"})
        t = step_end_true + 50_000
    return docs, truth


def _header(rank: int, world_size: int, ranks_per_host: int, base_ns: int) -> dict:
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85_028_896_768, "computeMajor": 9,
                              "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
                              "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 132}],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world_size, "pg_count": 1,
                            "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
                                           "pg_size": world_size, "ranks": list(range(world_size))}],
                            "nccl_version": "2.21.5"},
        "cupti_version": 22, "cuda_runtime_version": 12040, "cuda_driver_version": 12040,
        "host_name": f"node{rank // ranks_per_host:03d}",
        "trace_id": f"{rank:032X}",
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": base_ns,
        "traceEvents": [],
    }


def write_run(folder: Path, docs: list[dict], gz: bool = False, names: str = "rank-{rank}.Dec_01_12_00_00.{pid}.pt.trace.json",
              drop_distributed_info: bool = False) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for r, doc in enumerate(docs):
        d = dict(doc)
        if drop_distributed_info:
            d.pop("distributedInfo", None)
        name = names.format(rank=r, pid=1000 + r) + (".gz" if gz else "")
        p = folder / name
        data = json.dumps(d).encode()
        p.write_bytes(gzip.compress(data, compresslevel=1) if gz else data)
        out.append(p)
    return out


def nsys_two_gpus(path: Path) -> tuple[list[tuple], list[tuple]]:
    """One Nsight Systems export (SQLite) of two processes, one GPU each: per `train_step N` NVTX
    range a GEMM on stream 7 and an all-reduce on stream 20 that GPU 1 reaches 7 us later; both
    leave it together (one capture: one clock). Returns the kernel and NVTX rows written."""
    from nsys_synth import KERNEL_DDL, NVTX_DDL, VM, gpid, gtid, make_db

    a, b = 4242, 5151
    strings = [(1, "void gemm<float>(float *, int)"), (2, "gemm"),
               (3, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
               (4, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"), (5, "train_step 0"), (6, "train_step 1")]
    kernels, nvtx = [], []
    for dev, pid in ((0, a), (1, b)):
        for s in range(2):
            t0 = 10_000 + s * 100_000
            nvtx.append((t0, t0 + 90_000, 59, None, None, None, None, gtid(pid, 1), None, 5 + s, 0))
            kernels.append((t0 + 1000 + dev * 500, t0 + 40_000, dev, 1, 7, s * 10 + 1, gpid(pid), 1, 2, None, 32, 1, 1, 1, 128, 1, 1, 0, 0))
            kernels.append((t0 + 20_000 + dev * 7_000, t0 + 60_000, dev, 1, 20, s * 10 + 2, gpid(pid), 3, 4, None, 96, 24, 1, 1, 640, 1, 1, 0, 0))
    make_db(path, {
        "StringIds": ("id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL", strings),
        "CUPTI_ACTIVITY_KIND_KERNEL": (KERNEL_DDL, kernels),
        "NVTX_EVENTS": (NVTX_DDL, nvtx),
        "TARGET_INFO_SYSTEM_ENV": ("globalVid INTEGER, devStateName TEXT, name TEXT, nameEnum INTEGER, value TEXT", [(VM, "x", "Hostname", 619, "node7")]),
        "PROCESSES": ("globalPid INTEGER, pid INTEGER, name TEXT", [(gpid(a), a, "python"), (gpid(b), b, "python")]),
    })
    return kernels, nvtx
