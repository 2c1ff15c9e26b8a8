"""Nsight Systems inputs: patterns met in public reports from other people (robustness sweep), each
rebuilt as a small synthetic file so the test runs without them."""

from __future__ import annotations

from pathlib import Path

import polars as pl

import profaudit
from conftest import assert_one_line_error, run_cli
from nsys_synth import KERNEL_DDL, gpid, make_db
from profaudit.parsers import find_parser, probe

K = "CUPTI_ACTIVITY_KIND_KERNEL"
PID = 14652


def load_one(path: Path):
    ps = profaudit.load(path, parallel=False)
    assert len(ps) == 1
    return next(iter(ps))


def _kernel(start: int, end: int, device: int) -> tuple:
    # start, end, dev, ctx, stream, corr, gpid, dem, short, mangled, regs, grid, block, smem
    return (start, end, device, 1, 7, start, gpid(PID), 1, 2, None, 32, 4, 1, 1, 128, 1, 1, 0, 0)


def test_kernel_ordinal_maps_through_cudevice_without_cuda_device_table(tmp_path):
    """nsys 2023.2 on a mixed node: no TARGET_INFO_CUDA_DEVICE, and TARGET_INFO_GPU's own `id` is not
    the CUDA ordinal (CUDA puts the fastest GPU first); `cuDevice` is."""
    db = make_db(tmp_path / "mixed.sqlite", {
        "StringIds": ("id INTEGER, value TEXT", [(1, "void gemm<float>(float *)"), (2, "gemm")]),
        "TARGET_INFO_GPU": ("vmId INTEGER, id INTEGER, name TEXT, busLocation TEXT, cuDevice INTEGER", [
            (0, 1, "NVIDIA A40", "0000:01:00.0", 1),
            (0, 0, "NVIDIA A100-PCIE-40GB", "0000:c1:00.0", 0),
        ]),
        K: (KERNEL_DDL, [_kernel(100, 200, 0), _kernel(300, 450, 1)]),
    })
    k = load_one(db).kernels.sort("start_ns")
    assert k["device_name"].to_list() == ["NVIDIA A100-PCIE-40GB", "NVIDIA A40"]
    assert k["device_id"].to_list() == [0, 1]
    # the same file with id and ordinal disagreeing: the ordinal decides
    db2 = make_db(tmp_path / "mixed2.sqlite", {
        "StringIds": ("id INTEGER, value TEXT", [(1, "void gemm<float>(float *)"), (2, "gemm")]),
        "TARGET_INFO_GPU": ("vmId INTEGER, id INTEGER, name TEXT, busLocation TEXT, cuDevice INTEGER", [
            (0, 0, "NVIDIA A40", "0000:01:00.0", 1),
            (0, 1, "NVIDIA A100-PCIE-40GB", "0000:c1:00.0", 0),
        ]),
        K: (KERNEL_DDL, [_kernel(100, 200, 0), _kernel(300, 450, 1)]),
    })
    k2 = load_one(db2).kernels.sort("start_ns")
    assert k2["device_name"].to_list() == ["NVIDIA A100-PCIE-40GB", "NVIDIA A40"]
    assert k2["device_id"].to_list() == [1, 0]
    assert load_one(db2).metadata["device_name"] in {"NVIDIA A100-PCIE-40GB", "NVIDIA A40"}


def test_2021_export_lists_each_gpu_once_with_cuda_gpu_details(tmp_path):
    """nsys 2021.x writes a slim TARGET_INFO_GPU (deviceId, name, bus) and TARGET_INFO_CUDA_GPU with
    the details; one GPU, not two, and the memory figures in bytes (2021: bytes; 2020.3: MiB)."""
    cuda_gpu_ddl = (
        "vmId INTEGER, name TEXT, pciBusId TEXT, globalMemoryBandwidth INTEGER, globalMemorySize INTEGER, l2CacheSize INTEGER, "
        "coreClockRate INTEGER, numMultiprocessors INTEGER, computeCapabilityMajor INTEGER, computeCapabilityMinor INTEGER, deviceId INTEGER, pid INTEGER"
    )
    db = make_db(tmp_path / "r2021.sqlite", {
        "StringIds": ("id INTEGER, value TEXT", [(1, "update_65_gpu"), (2, "update_65_gpu")]),
        "TARGET_INFO_GPU": ("vmId INTEGER, deviceId INTEGER, name TEXT, busLocation TEXT, isDiscrete INTEGER", [(0, 0, "NVIDIA GeForce RTX 3080", "0000:02:00.0", 1)]),
        "TARGET_INFO_CUDA_GPU": (cuda_gpu_ddl, [(0, "NVIDIA GeForce RTX 3080", "0000:02:00.0", 760080000, 10495524864, 5242880, 1740000, 68, 8, 6, 0, PID)]),
        K: (KERNEL_DDL, [_kernel(100, 200, 0)]),
    })
    p = load_one(db)
    gpus = p.metadata["gpus"]
    assert len(gpus) == 1 and p.metadata["device_count"] == 1
    g = gpus[0]
    assert g["name"] == "NVIDIA GeForce RTX 3080" and g["sm_count"] == 68 and g["compute_capability"] == "8.6"
    assert g["memory_bytes"] == 10495524864 and g["memory_bandwidth_bytes_per_s"] == 760_080_000_000 and g["l2_cache_bytes"] == 5242880
    assert g["peak_clock_hz"] == 1_740_000_000
    assert p.kernels["device_name"].to_list() == ["NVIDIA GeForce RTX 3080"]
    # 2020.3 wrote the size in MiB and no bandwidth
    db0 = make_db(tmp_path / "r2020.sqlite", {
        "StringIds": ("id INTEGER, value TEXT", [(1, "k"), (2, "k")]),
        "TARGET_INFO_CUDA_GPU": (cuda_gpu_ddl, [(0, "Tesla V100-PCIE-32GB", "0000:05:00.0", 0, 32510, 6291456, 1380000, 80, 7, 0, 0, PID)]),
        K: (KERNEL_DDL, [_kernel(100, 200, 0)]),
    })
    g0 = load_one(db0).metadata["gpus"][0]
    assert g0["memory_bytes"] == 32510 * 2**20 and "memory_bandwidth_bytes_per_s" not in g0


# nvprof --csv summary (`Type,Time(%),Time,Calls,...`, units inside the cells): not nsys stats
NVPROF_SUMMARY = """Type,Time(%),Time,Calls,Avg,Min,Max,Name
"GPU activities",95.54%,9.7272ms,8,1.2159ms,524.12us,1.3638ms,"[CUDA memcpy HtoD]"
,1.33%,135.87us,1,135.87us,135.87us,135.87us,"summator_29_gpu"
"API calls",85.71%,182.61ms,1,182.61ms,182.61ms,182.61ms,"cuDevicePrimaryCtxRetain"
"""


def test_nvprof_summary_csv_is_not_taken_for_nsys_stats(tmp_path):
    f = tmp_path / "log.csv"
    f.write_text(NVPROF_SUMMARY)
    parser = find_parser(f, probe(f))
    assert parser is None or parser.name != "nsys-stats-csv"


def test_unit_in_a_summary_cell_is_one_line_not_silent_nulls(tmp_path):
    """A table nsys stats did not write (durations with units in the cells) under an nsys header."""
    f = tmp_path / "kern_sum.csv"
    f.write_text("Time (%),Total Time (ns),Instances,Avg (ns),Min (ns),Max (ns),Name\n95.5,9.7272ms,8,1.2159ms,524.12us,1.3638ms,k\n")
    assert_one_line_error(run_cli("summary", f), "not a number")


# nsys --stats=true / nsys stats console output before 2021.5: tables titled `... Statistics (nanoseconds)`
OLD_CONSOLE = """Generating CUDA API Statistics...

CUDA API Statistics (nanoseconds)
Time(%)      Total Time       Calls         Average         Minimum         Maximum  Name
-------  --------------  ----------  --------------  --------------  --------------  ----------
   85.3       323223522           4      80805880.5          128957       322811927  cudaMalloc

Generating CUDA Kernel Statistics...
CUDA Kernel Statistics (nanoseconds)
Time(%)      Total Time   Instances         Average         Minimum         Maximum  Name
-------  --------------  ----------  --------------  --------------  --------------  ----------
  100.0           22912           1         22912.0           22912           22912  multiply_add_kn
"""


def test_old_console_output_says_rerun_with_csv(tmp_path):
    for name in ("stats.txt", "stats.csv"):
        f = tmp_path / name
        f.write_text(OLD_CONSOLE)
        assert_one_line_error(run_cli("summary", f), "--format csv")


# nsys 2021.x-2022.1 `nsys stats --format csv`: `Using ...` and `Running [<script> <db>]...` lines
RUNNING_CSV = """Using report1.sqlite for SQL queries.
Running [/opt/nvidia/hpc_sdk/Linux_x86_64/21.7/profilers/Nsight_Systems/target-linux-x64/reports/gpukernsum.py report1.sqlite]...

Time(%),Total Time (ns),Instances,Average,Minimum,Maximum,StdDev,Name
88.7,39754166488,37500,1060111.1,27456,3930745,1033670.1,update_weight_133_gpu
11.3,5065540000,500,10131080.0,10000000,10300000,5000.0,loss_gpu

Running [/opt/nvidia/hpc_sdk/Linux_x86_64/21.7/profilers/Nsight_Systems/target-linux-x64/reports/cudaapisum.py report1.sqlite]...

Time(%),Total Time (ns),Num Calls,Average,Minimum,Maximum,StdDev,Name
100.0,387827,1,387827.0,387827,387827,0.0,cuModuleLoadDataEx
"""


def test_running_lines_of_2021_stats_name_the_reports(tmp_path):
    f = tmp_path / "out.csv"
    f.write_text(RUNNING_CSV)
    p = load_one(f)
    assert p.metadata["nsys_stats_reports"] == ["cuda_gpu_kern_sum", "cuda_api_sum"]
    assert p.metadata["nsys_stats_input"] == "report1.sqlite"
    s = p.samples
    kern = s.filter(pl.col("params").str.contains("cuda_gpu_kern_sum"))
    total = dict(kern.filter(pl.col("statistic") == "total").select("benchmark", "duration_ns").iter_rows())
    assert total == {"update_weight_133_gpu": 39754166488.0, "loss_gpu": 5065540000.0}
    assert kern.filter((pl.col("benchmark") == "loss_gpu") & (pl.col("statistic") == "mean"))["sample_count"].to_list() == [500]
    api = s.filter(pl.col("params").str.contains("cuda_api_sum"))
    assert set(api["benchmark"]) == {"cuModuleLoadDataEx"}


def test_title_line_before_header_and_unnamed_kernel_summary(tmp_path):
    """A lone title line above the header is chatter, not a one-column table; an `Instances` + `Name`
    table with no report name anywhere is a kernel summary."""
    f = tmp_path / "summary.csv"
    f.write_text(
        "CUDA Kernel Summary\n"
        '"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)","StdDev (ns)","Name"\n'
        '58.5,"5,850,000",50,117000,116000,100000,130000,4000,"void sbd::MultAlphaBeta<double>(double*, double const*)"\n'
    )
    p = load_one(f)
    assert p.metadata["nsys_stats_reports"] == ["cuda_gpu_kern_sum"]
    row = p.samples.filter(pl.col("statistic") == "total").row(0, named=True)
    assert row["duration_ns"] == 5_850_000.0 and row["sample_count"] == 50


def test_launch_calls_without_kernel_records_are_named(tmp_path):
    """WSL captures (and captures cut short) trace the launch calls but hold no kernel table: the note
    says kernels ran unrecorded rather than that none ran."""
    from nsys_synth import RUNTIME_DDL, gtid

    tid = gtid(PID, 7)
    db = make_db(tmp_path / "wsl.sqlite", {
        "StringIds": ("id INTEGER, value TEXT", [(10, "cudaLaunchKernel_v7000"), (11, "cudaMalloc_v3020")]),
        "CUPTI_ACTIVITY_KIND_RUNTIME": (RUNTIME_DDL, [(100, 150, 0, tid, 1, 11, 0), (200, 210, 0, tid, 2, 10, 0), (300, 305, 0, tid, 3, 10, 0)]),
    })
    notes = " ".join(load_one(db).metadata["notes"])
    assert "2 kernel or graph launch calls" in notes and "not collected" in notes
    res = run_cli("summary", db)
    assert "2 kernel or graph launch calls" in res.err


def test_driver_version_zero_is_unknown(tmp_path):
    """A capture on a host without the NVIDIA driver (an HPC login node) records NvDriverVersion 0."""
    from nsys_synth import VM

    env = "globalVid INTEGER, devStateName TEXT, name TEXT, nameEnum INTEGER, value TEXT"
    db = make_db(tmp_path / "login.sqlite", {
        "StringIds": ("id INTEGER, value TEXT", [(1, "x")]),
        "TARGET_INFO_SYSTEM_ENV": (env, [(VM, "Local (CLI)", "NvDriverVersion", 205, "0"), (VM, "Local (CLI)", "Hostname", 619, "ip-10-0-0-142")]),
    })
    md = load_one(db).metadata
    assert md.get("driver_version") is None and md["host"] == "ip-10-0-0-142"


def test_binary_text_cell_and_packed_driver_version(tmp_path):
    """nsys 2022.4 stored a serialized GPU descriptor (not UTF-8) as TEXT in TARGET_INFO_SYSTEM_ENV and
    the Linux driver as one integer (5452906 = 545.29.06); an NVTX string can hold any bytes."""
    import sqlite3

    from nsys_synth import NVTX_DDL, VM, gtid

    db = make_db(tmp_path / "r2022.sqlite", {
        "StringIds": ("id INTEGER, value TEXT", [(1, "Fan1(float *, float *, int, int)"), (2, "Fan1")]),
        "TARGET_INFO_SYSTEM_ENV": ("globalVid INTEGER, devStateName TEXT, name TEXT, nameEnum INTEGER, value TEXT", [
            (VM, "Local (CLI)", "NvDriverVersion", 205, "5452906"), (VM, "Local (CLI)", "CudaDriverVersion", 611, "12030"),
        ]),
        K: (KERNEL_DDL, [_kernel(100, 200, 0)]),
        "NVTX_EVENTS": (NVTX_DDL, []),
    })
    con = sqlite3.connect(db)
    blob = b"\n\xe0\x01\x08\x00\x12\x17NVIDIA GeForce RTX 3090\x1a\x0c0000:1a:00.0"
    con.execute("INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (?, 'Local (CLI)', 'GpuInfo', 999, CAST(? AS TEXT))", (VM, blob))
    con.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (50, 300, 59, CAST(? AS TEXT), ?)", (b"caf\xe9 step", gtid(PID, PID)))
    con.commit()
    con.close()
    p = load_one(db)
    assert p.kernels.height == 1
    assert p.metadata["driver_version"] == "545.29.06" and p.metadata["cuda_version"] == "12.3"
    assert p.ranges.filter(pl.col("kind") == "nvtx_push_pop")["name"].to_list() == ["caf\ufffd step"]


# nsys 2025.3/2026.3 `nsys stats -r nvtx_pushpop_trace -f csv` (names carry their domain: `:name`)
PUSHPOP_TRACE = """Start (ns),End (ns),Duration (ns),DurChild (ns),DurNonChild (ns),Name,PID,TID,Lvl,NumChild,RangeId,ParentId,RangeStack,NameTree
1137544193,1485711471,348167278,0,348167278,:NvtxAnnotation.G1,53,53,0,0,1,,:1,:NvtxAnnotation.G1
1499971563,1503940278,3968715,3934391,34324,:NvtxAnnotation.G1Phases,53,53,0,3,5,,:5,:NvtxAnnotation.G1Phases
1499980066,1502730617,2750551,0,2750551,:copy_in,53,53,1,0,6,5,:5:6,--:copy_in
1502732596,1502821610,89014,0,89014,dom:aten::mm,53,53,1,0,7,5,:5:7,--dom:aten::mm
"""


def test_pushpop_trace_csv_is_read_as_nested_ranges(tmp_path):
    for name in ("report1_nvtx_pushpop_trace.csv", "ranges.csv"):  # named by nsys, or renamed
        f = tmp_path / name
        f.write_text(PUSHPOP_TRACE)
        assert find_parser(f, probe(f)).name == "nsys-stats-csv"
        r = load_one(f).ranges.sort("start_ns")
        assert r["kind"].to_list() == ["nvtx_push_pop"] * 4
        assert r["name"].to_list() == ["NvtxAnnotation.G1", "NvtxAnnotation.G1Phases", "copy_in", "aten::mm"]
        assert r["domain"].to_list() == [None, None, None, "dom"]
        # the nesting nsys printed (Lvl, ParentId) comes back from the times alone
        assert r["depth"].to_list() == [0, 0, 1, 1]
        parent = r.filter(pl.col("name") == "NvtxAnnotation.G1Phases")["range_id"][0]
        assert r["parent_range_id"].to_list()[2:] == [parent, parent]
        assert r["duration_ns"].to_list() == [348167278.0, 3968715.0, 2750551.0, 89014.0]


def test_pushpop_names_without_a_domain_prefix_stay_whole(tmp_path):
    f = tmp_path / "old_nvtx_pushpop_trace.csv"
    f.write_text(PUSHPOP_TRACE.replace(":NvtxAnnotation", "NvtxAnnotation").replace(":copy_in", "copy_in").replace("dom:aten::mm", "aten::mm"))
    assert sorted(load_one(f).ranges["name"].to_list()) == ["NvtxAnnotation.G1", "NvtxAnnotation.G1Phases", "aten::mm", "copy_in"]


# nsys 2026.1 `nsys stats -r nvtx_gpu_proj_trace -f csv` header
GPU_PROJ_TRACE = """Name,Projected Start (ns),Projected Duration (ns),Orig Start (ns),Orig Duration (ns),Style,PID,TID,NumGPUOps,Lvl,NumChild,RangeId,ParentId,RangeStack
:step,1000,900,800,1200,PushPop,53,53,3,0,1,1,,:1
:forward,1100,400,850,600,PushPop,53,53,2,1,0,2,1,:1:2
"""


def test_gpu_projection_trace_is_gpu_time(tmp_path):
    """The projected range runs on GPU time: its start/duration are the projected ones, not the CPU ones."""
    f = tmp_path / "proj.csv"
    f.write_text(GPU_PROJ_TRACE)
    p = load_one(f)
    assert p.metadata["nsys_stats_reports"] == ["nvtx_gpu_proj_trace"]
    r = p.ranges.sort("start_ns")
    assert r["kind"].to_list() == ["gpu_user_annotation"] * 2 and r["name"].to_list() == ["step", "forward"]
    assert r["start_ns"].to_list() == [1000, 1100] and r["end_ns"].to_list() == [1900, 1500]
    assert r["depth"].to_list() == [0, 1]
