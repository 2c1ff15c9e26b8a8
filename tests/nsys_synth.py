"""Small hand-built Nsight Systems SQLite files for the paths the corpus does not cover (GPU metrics,
memsets, NVTX domains in two processes, CUDA_VISIBLE_DEVICES renumbering, 2020-style files without
ENUM tables). Table and column names follow real exports (see FORMATS.md section 2)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

PID_A, PID_B = 4242, 5151
VM = 1 << 48


def gpid(pid: int) -> int:
    return VM + (pid << 24)


def gtid(pid: int, tid: int) -> int:
    return VM + (pid << 24) + tid


def make_db(path: Path, tables: dict[str, tuple[str, list[tuple]]]) -> Path:
    """tables: name -> (column DDL, rows)."""
    con = sqlite3.connect(path)
    for name, (ddl, rows) in tables.items():
        con.execute(f'CREATE TABLE "{name}" ({ddl})')
        if rows:
            marks = ", ".join("?" * len(rows[0]))
            con.executemany(f'INSERT INTO "{name}" VALUES ({marks})', rows)
    con.commit()
    con.close()
    return path


KERNEL_DDL = (
    "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, "
    "correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, "
    "registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, "
    "blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL"
)
RUNTIME_DDL = "start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL"
NVTX_DDL = (
    "start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, "
    "globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER"
)
STRINGS = [
    (1, "void gemm<float>(float *, int)"), (2, "gemm"), (3, "_Z4gemmIfEvPfi"),
    (4, "relu_kernel(float *)"), (5, "relu_kernel"),
    (10, "cudaLaunchKernel_v7000"), (11, "cuLaunchKernel"), (12, "cudaMemcpyAsync_v3020"),
    (20, "step"), (21, "forward"), (22, "layer"),
]


def rich_db(path: Path) -> Path:
    """Two processes, renumbered devices, nested NVTX in two domains, memcpy + memset, GPU metrics."""
    a, b = PID_A, PID_B
    kernels = [
        # start, end, dev, ctx, stream, corr, gpid, dem, short, mangled, regs, grid, block, smem
        (1000, 1500, 0, 1, 7, 101, gpid(a), 1, 2, 3, 32, 4, 2, 1, 128, 1, 1, 1024, 2048),
        (1600, 1700, 0, 1, 7, 103, gpid(a), 4, 5, None, 16, 1, 1, 1, 64, 1, 1, 0, 0),
        (1800, 2600, 0, 1, 8, 105, gpid(a), 1, 2, 3, 32, 4, 2, 1, 128, 1, 1, 1024, 2048),
        (5000, 5200, 0, 1, 7, 101, gpid(b), 4, 5, None, 16, 1, 1, 1, 64, 1, 1, 0, 0),  # same corr id, other process
    ]
    runtime = [
        (900, 950, 0, gtid(a, 11), 101, 10, 0),  # launch of kernel 0, inside "layer"
        (1550, 1590, 0, gtid(a, 11), 103, 10, 0),  # inside "forward" only (after "layer" closed)
        (1700, 1750, 0, gtid(a, 12), 105, 10, 0),  # other thread: inside no range
        (1760, 1790, 1, gtid(a, 12), 999, 11, 0),  # driver call, no kernel
        (4900, 4950, 0, gtid(b, 21), 101, 10, 0),  # process b, inside b's "step"
    ]
    nvtx = [
        (-50, None, 75, None, None, None, "dom_a", gtid(a, 11), None, None, 1),
        (-40, None, 75, None, None, None, "dom_b", gtid(b, 21), None, None, 1),
        (800, 3000, 59, None, None, None, None, gtid(a, 11), None, 20, 1),  # step
        (850, 1600, 59, None, None, None, None, gtid(a, 11), None, 21, 1),  # forward
        (880, 1000, 59, None, None, None, "layer", gtid(a, 11), None, None, 0),  # text, default domain
        (4000, None, 59, None, None, None, None, gtid(b, 21), None, 20, 1),  # never closed
        (700, 5500, 60, 1, None, None, "epoch", gtid(a, 11), gtid(a, 12), None, 0),  # start/end range
        (1234, 1234, 34, None, None, None, "mark", gtid(a, 11), None, None, 0),  # a mark: not a range
    ]
    memcpy = [
        (100, 300, 0, 1, 7, 90, gpid(a), 4096, 1, 0, 2),
        (400, 500, 0, 1, 7, 91, gpid(a), 2048, 2, 2, 1),
    ]
    memset = [(600, 650, 0, 1, 7, 92, gpid(a), 0, 1024, 2)]
    metrics_info = [
        (1, 0, "GPU 0", 0, "GPC Clock Frequency [MHz]"),
        (1, 0, "GPU 0", 1, "SYS Clock Frequency [MHz]"),
        (1, 0, "GPU 0", 2, "SMs Active [Throughput %]"),
        (1, 0, "GPU 0", 3, "PCIe RX Throughput [Throughput %]"),
    ]
    # GPC clock in Hz under an MHz label; 2.52 GHz does not fit a signed 32-bit integer.
    metrics = [
        (1000, 1, 0, 1_410_000_000), (2000, 1, 0, 2_520_000_000 - 2**32), (3000, 1, 0, 1_980_000_000),
        (1000, 1, 1, 1500), (2000, 1, 1, 1512), (3000, 1, 1, -7),
        (1000, 1, 2, 0), (2000, 1, 2, 87), (3000, 1, 2, 100),
        (1000, 1, 3, 12),
    ]
    return make_db(path, {
        "StringIds": ("id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL", STRINGS),
        "TARGET_INFO_GPU": ("vmId INTEGER, id INTEGER NOT NULL, name TEXT, busLocation TEXT, clockRate INTEGER, smCount INTEGER", [
            (0, 0, "NVIDIA A100-SXM4-80GB", "0000:07:00.0", 1410000000, 108), (0, 1, "NVIDIA H100 80GB HBM3", "0000:08:00.0", 1980000000, 132),
        ]),
        # process a ran with CUDA_VISIBLE_DEVICES=1: its CUDA ordinal 0 is GPU 1
        "TARGET_INFO_CUDA_DEVICE": ("gpuId INTEGER, cudaId INTEGER, pid INTEGER, uuid TEXT, numMultiprocessors INTEGER", [(1, 0, a, None, 132), (0, 0, b, None, 108)]),
        "CUPTI_ACTIVITY_KIND_KERNEL": (KERNEL_DDL, kernels),
        "CUPTI_ACTIVITY_KIND_RUNTIME": (RUNTIME_DDL, runtime),
        "NVTX_EVENTS": (NVTX_DDL, nvtx),
        "CUPTI_ACTIVITY_KIND_MEMCPY": ("start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER, copyKind INTEGER, srcKind INTEGER, dstKind INTEGER", memcpy),
        "CUPTI_ACTIVITY_KIND_MEMSET": ("start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, value INTEGER, bytes INTEGER, memKind INTEGER", memset),
        "GPU_METRICS": ("timestamp INTEGER, typeId INTEGER, metricId INTEGER, value INTEGER", metrics),
        "TARGET_INFO_GPU_METRICS": ("typeId INTEGER, sourceId INTEGER, typeName TEXT, metricId INTEGER, metricName TEXT", metrics_info),
        "TARGET_INFO_SESSION_START_TIME": ("utcEpochNs INTEGER, utcTime TEXT, localTime TEXT", [(1_700_000_000_123_456_789, "2023-11-14T22:13:20", "")]),
        "META_DATA_EXPORT": ("name TEXT, value TEXT", [("EXPORT_PRODUCT_VERSION", "2024.5.1.113"), ("EXPORT_SCHEMA_VERSION", "3.11.1")]),
        "META_DATA_CAPTURE": ("name TEXT, value TEXT", [("PROCESS_0:COMMAND", "python"), ("PROCESS_0:ARGUMENTS", "train.py --steps 3")]),
        "TARGET_INFO_SYSTEM_ENV": ("globalVid INTEGER, devStateName TEXT, name TEXT, nameEnum INTEGER, value TEXT", [
            (VM, "x", "NvDriverVersion", 205, "550.54.15"), (VM, "x", "CudaDriverVersion", 611, "12040"), (VM, "x", "Hostname", 619, "node7"),
        ]),
        "PROCESSES": ("globalPid INTEGER, pid INTEGER, name TEXT", [(gpid(a), a, "python"), (gpid(b), b, "worker")]),
    })
