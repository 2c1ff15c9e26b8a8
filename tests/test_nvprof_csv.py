"""Legacy nvprof --csv output: GPU/API traces, summaries, metrics and events, in the layouts real
nvprof logs have (CUDA 8: no Correlation_ID column, `[corr]` after kernel names; CUDA 9-11:
SrcMemType/DstMemType/Correlation_ID, unified-memory columns; `==PID==` preamble from --log-file,
`========` from `-i`). Every number is checked against a plain csv read of the same text."""

from __future__ import annotations

import csv
import io
import json
import math

import polars as pl
import pytest
from profaudit.parsers import find_parser, probe

import profaudit
from tests.conftest import assert_one_line_error, run_cli

# --print-gpu-trace, CUDA 10 era, --log-file, unified memory on (TITAN Xp-style layout, own numbers)
TRACE_CUDA10 = """==4821== NVPROF is profiling process 4821, command: ./saxpy_um 1048576
==4821== Profiling application: ./saxpy_um 1048576
==4821== Profiling result:
"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z","Registers Per Thread","Static SMem","Dynamic SMem","Size","Throughput","SrcMemType","DstMemType","Device","Context","Stream","Unified Memory","Virtual Address","Name","Correlation_ID"
s,ms,,,,,,,,B,B,MB,GB/s,,,,,,B,,,
0.512340,0.002816,,,,,,,,,,0.003906,1.354651,"Pageable","Device","Tesla V100-SXM2-16GB (0)","1","7",,,"[CUDA memcpy HtoD]",118
0.512400,0.001344,,,,,,,,,,0.370605,269.285270,"Device",,"Tesla V100-SXM2-16GB (0)","1","7",,,"[CUDA memset]",120
0.512500,0.045570,80,1,1,256,1,1,32,1024,2048,,,,,"Tesla V100-SXM2-16GB (0)","1","13",,,"void axpy<float>(int, float, float const *, float*)",125
0.512560,0.014912,160,2,1,128,2,1,24,0,0,,,,,"Tesla V100-SXM2-16GB (0)","1","14",,,"gemm_kernel(float const *, float const *, float*, int, int, int)",130
0.512600,0.015329,,,,,,,,,,1.853027,118.050559,"Device","Device","Tesla V100-SXM2-16GB (0)","1","7",,,"[CUDA memcpy DtoD]",131
0.512700,0.007360,,,,,,,,,,,,,,"Tesla V100-SXM2-16GB (0)",,,"65536.000000","0x7f54d8000000","[Unified Memory Memcpy HtoD]",
0.512710,,,,,,,,,,,,,,,,,,"PC 0x5e240510","0x7f54d8000000","[Unified Memory CPU page faults]",
0.512720,0.276608,,,,,,,,,,,,,,"Tesla V100-SXM2-16GB (0)",,,"18","0x7f54d8800000","[Unified Memory GPU page faults]",
"""

# --print-gpu-trace, CUDA 8 (GTX 1080 Ti era): no SrcMemType/DstMemType/Correlation_ID; the
# correlation id ends the kernel name; dynamic shared memory in KB
TRACE_CUDA8 = """==23053== NVPROF is profiling process 23053, command: ./BlackScholes 0
==23053== Profiling application: ./BlackScholes 0
==23053== Profiling result:
"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z","Registers Per Thread","Static SMem","Dynamic SMem","Size","Throughput","Device","Context","Stream","Name"
s,ms,,,,,,,,B,KB,MB,MB/s,,,,
0.805881,41.037949,,,,,,,,,,15.258789,371.821434,"GeForce GTX 1080 Ti (0)","1","7","[CUDA memcpy HtoD]"
0.929284,0.223212,15625,1,1,128,1,1,24,0,1.500000,,,"GeForce GTX 1080 Ti (0)","1","7","BlackScholesGPU(float2*, float2*, float, int) [1176]"
0.929509,0.224651,15625,1,1,128,1,1,24,0,1.500000,,,"GeForce GTX 1080 Ti (0)","1","7","BlackScholesGPU(float2*, float2*, float, int) [1187]"
1.012000,38.396919,,,,,,,,,,15.258789,397.389000,"GeForce GTX 1080 Ti (0)","1","7","[CUDA memcpy DtoH]"
"""

# --print-gpu-trace --print-api-trace: one table, API calls have no device (RTX 2080 Ti-era layout)
TRACE_WITH_API = """======== Profiling result:
"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z","Registers Per Thread","Static SMem","Dynamic SMem","Size","Throughput","SrcMemType","DstMemType","Device","Context","Stream","Name","Correlation_ID"
us,us,,,,,,,,KB,KB,KB,GB/s,,,,,,,
0.000000,1.568000,,,,,,,,,,1.003906,0.610586,"Device",,"GeForce RTX 2080 Ti (0)","1","7","[CUDA memset]",274
10.250000,3.200000,,,,,,,,,,,,,,,,,"cudaLaunchKernel",280
14.000000,25.344000,64,1,1,128,1,1,40,0.500000,0.000000,,,,,"GeForce RTX 2080 Ti (0)","1","7","volta_sgemm_128x64_nn",280
40.000000,120.500000,,,,,,,,,,,,,,,,,"cuDeviceGetAttribute",281
"""

API_TRACE = """======== Profiling result:
"Start","Duration","Name","Correlation_ID"
us,us,,
0.000000,3.125000,"cuDeviceGetPCIBusId",1
35000.250000,1.004000,"cuDeviceGetCount",2
35010.500000,150.250000,"cudaMalloc",3
"""

# default summary, CUDA 9+: Type column, units row, API calls, then the unified-memory table
SUMMARY_CUDA10 = """==4242== NVPROF is profiling process 4242, command: ./stream_bench
==4242== Profiling application: ./stream_bench
==4242== Profiling result:
"Type","Time(%)","Time","Calls","Avg","Min","Max","Name"
,%,ms,,us,us,ms,
"GPU activities",70.000000,280.000000,4000,70.000000,65.500000,0.090000,"triad_kernel(double*, double const *, double const *, double)"
"GPU activities",25.000000,100.000000,4000,25.000000,24.000000,0.030000,"copy_kernel(double*, double const *)"
"GPU activities",5.000000,20.000000,10,2000.000000,1900.000000,2.500000,"[CUDA memcpy DtoH]"
"API calls",80.000000,400.000000,8000,50.000000,4.000000,1.200000,"cudaLaunchKernel"
"API calls",20.000000,100.000000,3,33333.333000,120.000000,99.500000,"cudaMalloc"

==4242== Unified Memory profiling result:
"Device","Count","Avg Size","Min Size","Max Size","Total Size","Total Time",""
"Tesla P100-PCIE-16GB (0)",12,42.666667KB,4.000000KB,128.000000KB,512.000000KB,0.150000,"Host To Device"
"Tesla P100-PCIE-16GB (0)",,,,,7B,0.000000,"Gpu page fault groups"
Total CPU Page faults: 3
"""

# CUDA 8 --print-gpu-summary / default: no Type column, `%,us,,...` units; API calls in their own table
SUMMARY_CUDA8 = """==9630== NVPROF is profiling process 9630, command: ./h2d 1 0 1
==9630== Profiling application: ./h2d 1 0 1
==9630== Profiling result:
"Time(%)","Time","Calls","Avg","Min","Max","Name"
%,us,,us,us,us,
60.000000,5.760000,2,2.880000,2.400000,3.360000,"fill(int*, int)"
40.000000,3.840000,2,1.920000,1.504000,2.336000,"[CUDA memcpy HtoD]"
==9630== API calls:
"Time(%)","Time","Calls","Avg","Min","Max","Name"
%,ms,,ms,ms,ms,
99.900000,180.200000,3,60.066667,0.010000,180.100000,"cudaMalloc"
"""

# summary with the unit in each cell and continuation rows without a Type
SUMMARY_UNIT_CELLS = """Type,Time(%),Time,Calls,Avg,Min,Max,Name
"GPU activities",95.54%,9.7272ms,8,1.2159ms,524.12us,1.3638ms,"[CUDA memcpy HtoD]"
,1.33%,135.87us,1,135.87us,135.87us,135.87us,"summator_29_gpu"
"API calls",85.71%,182.61ms,1,182.61ms,182.61ms,182.61ms,"cuDevicePrimaryCtxRetain"
"""

# --metrics on Kepler (K20c-style): values per kernel, aggregated over its invocations
METRICS_KEPLER = """==20858== NVPROF is profiling process 20858, command: ./stencil
==20858== Warning: Some kernel(s) will be replayed on device 0 in order to collect all events/metrics.
==20858== Profiling application: ./stencil
==20858== Profiling result:
==20858== Metric result:
"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"
"Tesla K20c (0)","stencil_kernel(float*, int, int, float*)",3,"flop_count_sp","Floating Point Operations(Single Precision)",673384360,673384360,673384360
"Tesla K20c (0)","stencil_kernel(float*, int, int, float*)",3,"flop_count_dp","Floating Point Operations(Double Precision)",0,0,0
"Tesla K20c (0)","stencil_kernel(float*, int, int, float*)",3,"dram_read_transactions","Device Memory Read Transactions",19998022,19998100,19998050
"Tesla K20c (0)","stencil_kernel(float*, int, int, float*)",3,"dram_write_transactions","Device Memory Write Transactions",4209678,4209700,4209690
"Tesla K20c (0)","stencil_kernel(float*, int, int, float*)",3,"achieved_occupancy","Achieved Occupancy",0.850509,0.850901,0.850643
"Tesla K20c (0)","stencil_kernel(float*, int, int, float*)",3,"gld_efficiency","Global Memory Load Efficiency",83.340104%,83.340104%,83.340104%
"Tesla K20c (0)","stencil_kernel(float*, int, int, float*)",3,"dram_read_throughput","Device Memory Read Throughput",197.053860GB/s,198.386116GB/s,197.746791GB/s
"Tesla K20c (0)","stencil_kernel(float*, int, int, float*)",3,"l2_utilization","L2 Cache Utilization",Low (3),Low (3),Low (3)
"Tesla K20c (0)","reduce_kernel(float*, float*)",1,"flop_count_sp","Floating Point Operations(Single Precision)",1048576,1048576,1048576
"""

# --metrics on Volta: byte counters
METRICS_VOLTA = """==777== NVPROF is profiling process 777, command: ./hgemm
==777== Profiling application: ./hgemm
==777== Profiling result:
==777== Metric result:
"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"
"Tesla V100-SXM2-16GB (0)","hgemm_kernel(__half const *, __half*, int)",10,"flop_count_hp","Floating Point Operations(Half Precision)",2097152,2097152,2097152
"Tesla V100-SXM2-16GB (0)","hgemm_kernel(__half const *, __half*, int)",10,"flop_count_sp","Floating Point Operations(Single Precision)",4096,4096,4096
"Tesla V100-SXM2-16GB (0)","hgemm_kernel(__half const *, __half*, int)",10,"dram_read_bytes","Total bytes read from DRAM to L2 cache",1048576,1050000,1049000
"Tesla V100-SXM2-16GB (0)","hgemm_kernel(__half const *, __half*, int)",10,"dram_write_bytes","Total bytes written from L2 cache to DRAM",524288,524500,524300
"""

EVENTS = """==1111== NVPROF is profiling process 1111, command: ./vecadd
==1111== Profiling application: ./vecadd
==1111== Profiling result:
==1111== Event result:
"Device","Kernel","Invocations","Event Name","Min","Max","Avg","Total"
"Tesla K80 (0)","vecAdd(float*, float*, float*, int)",2,"inst_executed",1000,1200,1100,2200
"Tesla K80 (0)","vecAdd(float*, float*, float*, int)",2,"active_cycles",5000,5200,5100,10200
"""

NS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}
MEM = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}


def plain_tables(text: str) -> list[tuple[list[str], list[str] | None, list[list[str]]]]:
    """(header, units row or None, rows) of each table, read with the csv module alone."""
    out, cur = [], None
    for line in text.splitlines():
        if not line.strip() or line.startswith("=="):
            cur = None
            continue
        cells = next(csv.reader([line]))
        if cur is None:
            if len(cells) < 3:
                continue
            cur = [cells, None, []]
            out.append(cur)
        elif len(cells) != len(cur[0]):
            cur = None
        elif cur[1] is None and not cur[2] and all(c == "" or c in NS or c == "%" or c.rstrip("/s") in MEM for c in cells) and cur[0][0] in ("Start", "Type", "Time(%)"):
            cur[1] = cells
        else:
            cur[2].append(cells)
    return [tuple(t) for t in out]


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


# ------------------------------------------------------------------------------------------- sniff


@pytest.mark.parametrize("text", [TRACE_CUDA10, TRACE_CUDA8, TRACE_WITH_API, API_TRACE, SUMMARY_CUDA10, SUMMARY_CUDA8, SUMMARY_UNIT_CELLS, METRICS_KEPLER, METRICS_VOLTA, EVENTS])
def test_every_layout_is_claimed_by_nvprof(tmp_path, text):
    for name in ("out.csv", "nvprof.log", "trace"):
        p = _write(tmp_path, name, text)
        par = find_parser(p, probe(p))
        assert par is not None and par.name == "nvprof-csv", (name, par and par.name)


@pytest.mark.parametrize(
    "name,text,owner",
    [
        ("kern_sum.csv", "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n90.0,1000,2,500.0,500.0,400,600,141.4,k\n", "nsys-stats-csv"),
        ("gputrace.csv", "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),DymSMem (MB),Bytes (MB),Throughput (MBps),SrcMemKd,DstMemKd,Device,Ctx,Strm,Name\n1,2,3,1,1,1,32,1,1,8,0,0,,,,,GPU (0),1,7,k\n", "nsys-stats-csv"),
        ("api.csv", '"Start","Duration","Name","Result","CorrID","Pid","Tid","T-Pri","Thread Name"\n1,2,"cudaMalloc",0,1,2,3,0,"t"\n', None),
        ("times.csv", "name,time_ms\nk,1.5\nk,1.6\n", "timing-table"),
        ("ncu.csv", '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Section Name","Metric Name","Metric Unit","Metric Value"\n"0","1","a","h","k","1","7","S","Duration","usecond","1.5"\n', "ncu-csv"),
    ],
)
def test_nvprof_does_not_take_other_formats(tmp_path, name, text, owner):
    p = _write(tmp_path, name, text)
    par = find_parser(p, probe(p))
    assert par is None or par.name != "nvprof-csv"
    if owner:
        assert par is not None and par.name == owner


# ------------------------------------------------------------------------------------------- traces


def test_cuda10_trace_kernels_transfers_against_csv(tmp_path):
    ps = profaudit.load(_write(tmp_path, "trace.csv", TRACE_CUDA10))
    (header, units, rows), = plain_tables(TRACE_CUDA10)
    col = {h: i for i, h in enumerate(header)}
    ts, ds = NS[units[col["Start"]]], NS[units[col["Duration"]]]
    krows = [r for r in rows if r[col["Grid X"]]]
    k = ps.kernels.sort("start_ns")
    assert k.height == len(krows) == 2
    for got, r in zip(k.iter_rows(named=True), krows):
        assert got["start_ns"] == round(float(r[col["Start"]]) * ts)
        assert got["duration_ns"] == pytest.approx(float(r[col["Duration"]]) * ds)
        assert got["end_ns"] == got["start_ns"] + round(got["duration_ns"])
        assert (got["grid_x"], got["grid_y"], got["grid_z"]) == tuple(int(r[col[f"Grid {a}"]]) for a in "XYZ")
        assert (got["block_x"], got["block_y"], got["block_z"]) == tuple(int(r[col[f"Block {a}"]]) for a in "XYZ")
        assert got["grid_size"] == math.prod(int(r[col[f"Grid {a}"]]) for a in "XYZ")
        assert got["registers_per_thread"] == int(r[col["Registers Per Thread"]])
        st = float(r[col["Static SMem"]]) * MEM[units[col["Static SMem"]]]
        dy = float(r[col["Dynamic SMem"]]) * MEM[units[col["Dynamic SMem"]]]
        assert (got["static_shared_mem_bytes"], got["dynamic_shared_mem_bytes"], got["shared_mem_bytes"]) == (st, dy, st + dy)
        assert got["correlation_id"] == int(r[col["Correlation_ID"]])
        assert got["stream"] == int(r[col["Stream"]]) and got["context_id"] == int(r[col["Context"]])
        assert got["name"] == r[col["Name"]]
        assert got["device_name"] == "Tesla V100-SXM2-16GB" and got["device_id"] == 0
        assert got["process_id"] == 4821 and got["source"] == "nvprof"
    assert k["short_name"].to_list() == ["axpy", "gemm_kernel"]
    md = ps.metadata.row(0, named=True)
    assert md["device_name"] == "Tesla V100-SXM2-16GB" and md["tool"] == "nvprof"
    assert md["command_line"] == "./saxpy_um 1048576"
    assert json.loads(md["extra_json"])["unified_memory_rows_not_kept"] == 2

    t = ps.transfers.sort("start_ns")
    trows = [r for r in rows if r[col["Name"]].startswith("[CUDA mem") or "Memcpy" in r[col["Name"]]]
    assert t.height == len(trows) == 4
    for got, r in zip(t.iter_rows(named=True), trows):
        if r[col["Size"]]:
            size = float(r[col["Size"]]) * MEM[units[col["Size"]]]
            thr = float(r[col["Throughput"]]) * MEM[units[col["Throughput"]][:-2]]
            assert got["bytes"] == round(size)
            assert got["throughput_bytes_per_s"] == pytest.approx(thr)
            # nvprof's MB and GB/s are binary: size / duration reproduces the printed rate only so
            dur_s = float(r[col["Duration"]]) * ds * 1e-9
            assert size / dur_s == pytest.approx(thr, rel=2e-4)
            assert (round(float(r[col["Size"]]) * 1e6)) / dur_s != pytest.approx(float(r[col["Throughput"]]) * 1e9, rel=1e-2)
        else:
            assert got["bytes"] == float(r[col["Unified Memory"]])
        assert got["correlation_id"] == (int(r[col["Correlation_ID"]]) if r[col["Correlation_ID"]] else None)
        assert got["src_kind"] == (r[col["SrcMemType"]] or None)
        assert got["dst_kind"] == (r[col["DstMemType"]] or None)
    assert t["kind"].to_list() == ["memcpy", "memset", "memcpy", "memcpy"]
    assert t["direction"].to_list() == ["HtoD", None, "DtoD", "HtoD"]
    assert t["bytes"].to_list() == [4096.0, 388608.0, 1943040.0, 65536.0]


def test_cuda8_trace_correlation_in_name_and_kb_units(tmp_path):
    ps = profaudit.load(_write(tmp_path, "traces_cudasdk.csv", TRACE_CUDA8))
    (header, _units, rows), = plain_tables(TRACE_CUDA8)
    col = {h: i for i, h in enumerate(header)}
    k = ps.kernels.sort("start_ns")
    assert k["correlation_id"].to_list() == [1176, 1187]
    assert k["name"].to_list() == ["BlackScholesGPU(float2*, float2*, float, int)"] * 2
    assert k["short_name"].to_list() == ["BlackScholesGPU"] * 2
    assert k["dynamic_shared_mem_bytes"].to_list() == [1536, 1536]
    kr = [r for r in rows if r[col["Grid X"]]]
    assert k["start_ns"].to_list() == [round(float(r[0]) * 1e9) for r in kr]
    assert k["duration_ns"].to_list() == pytest.approx([float(r[1]) * 1e6 for r in kr])
    t = ps.transfers.sort("start_ns")
    # 15.258789 MB binary is 16,000,000 bytes (a 4M-float array); MB/s binary too
    assert t["bytes"].to_list() == [16_000_000.0, 16_000_000.0]
    assert t["direction"].to_list() == ["HtoD", "DtoH"]
    assert t["throughput_bytes_per_s"][0] == pytest.approx(371.821434 * 2**20)
    assert t["bytes"][0] / (t["duration_ns"][0] * 1e-9) == pytest.approx(t["throughput_bytes_per_s"][0], rel=1e-5)


def test_gpu_and_api_trace_in_one_table(tmp_path):
    ps = profaudit.load(_write(tmp_path, "gpu_api.csv", TRACE_WITH_API))
    (header, _units, rows), = plain_tables(TRACE_WITH_API)
    assert ps.kernels.height == 1 and ps.transfers.height == 1
    k = ps.kernels.row(0, named=True)
    assert k["name"] == "volta_sgemm_128x64_nn" and k["correlation_id"] == 280
    assert k["start_ns"] == 14000 and k["duration_ns"] == pytest.approx(25344.0)
    assert k["static_shared_mem_bytes"] == 512 and k["shared_mem_bytes"] == 512
    assert ps.transfers["bytes"][0] == 1028.0
    r = ps.ranges.sort("start_ns")
    api_rows = [x for x in rows if not x[header.index("Device")]]
    assert r["name"].to_list() == [x[header.index("Name")] for x in api_rows]
    assert r["kind"].to_list() == ["cuda_runtime", "cuda_driver"]
    assert r["start_ns"].to_list() == [round(float(x[0]) * 1e3) for x in api_rows]
    assert r["duration_ns"].to_list() == pytest.approx([float(x[1]) * 1e3 for x in api_rows])
    assert r["correlation_id"].to_list() == [280, 281]
    # the launch and its kernel share the correlation id
    launch = r.filter(pl.col("name") == "cudaLaunchKernel")
    assert launch["correlation_id"][0] == k["correlation_id"]


def test_api_trace(tmp_path):
    ps = profaudit.load(_write(tmp_path, "api_trace.csv", API_TRACE))
    (_header, _units, rows), = plain_tables(API_TRACE)
    r = ps.ranges.sort("start_ns")
    assert r["name"].to_list() == [x[2] for x in rows]
    assert r["start_ns"].to_list() == [round(float(x[0]) * 1e3) for x in rows]
    assert r["end_ns"].to_list() == [round(float(x[0]) * 1e3) + round(float(x[1]) * 1e3) for x in rows]
    assert r["correlation_id"].to_list() == [1, 2, 3]
    assert r["kind"].to_list() == ["cuda_driver", "cuda_driver", "cuda_runtime"]
    assert ps.kernels.height == 0


# ------------------------------------------------------------------------------------------- summaries


def _summary_expect(text):
    """{(report, name): {stat: ns}} from a plain read."""
    out = {}
    last = None
    for header, units, rows in plain_tables(text):
        if "Name" not in header or "Calls" not in header:
            continue
        if "Type" not in header:
            typ0 = "API calls" if any(r[-1].startswith("cuda") for r in rows) else "GPU activities"
        for r in rows:
            typ = r[header.index("Type")] if "Type" in header else typ0
            typ = typ or last
            last = typ
            name = r[header.index("Name")]
            rep = "cuda_api_sum" if typ == "API calls" else ("cuda_gpu_mem_time_sum" if name.startswith("[CUDA") else "cuda_gpu_kern_sum")
            vals = {}
            for col, stat in (("Time", "total"), ("Avg", "mean"), ("Min", "min"), ("Max", "max")):
                i = header.index(col)
                cell = r[i]
                unit = units[i] if units else next(u for u in ("ms", "us", "ns", "s") if cell.endswith(u))
                vals[stat] = float(cell[: len(cell) - (0 if units else len(unit))]) * NS[unit]
            vals["calls"] = int(r[header.index("Calls")])
            out[(rep, name)] = vals
    return out


@pytest.mark.parametrize("text", [SUMMARY_CUDA10, SUMMARY_CUDA8, SUMMARY_UNIT_CELLS])
def test_summary_rows_as_nsys_stats_samples(tmp_path, text):
    ps = profaudit.load(_write(tmp_path, "summary.csv", text))
    s = ps.samples
    expect = _summary_expect(text)
    assert expect
    got = {}
    for row in s.iter_rows(named=True):
        rep = json.loads(row["params"])["report"]
        got.setdefault((rep, row["benchmark"]), {})[row["statistic"]] = row["duration_ns"]
        got[(rep, row["benchmark"])]["calls"] = row["sample_count"]
        assert row["time_source"] == "nvprof"
    assert set(got) == set(expect)
    for key, vals in expect.items():
        for stat, v in vals.items():
            assert got[key][stat] == pytest.approx(v), (key, stat)
    assert ps.kernels.height == 0


def test_summary_cli_and_unified_memory_table(tmp_path):
    p = _write(tmp_path, "summary.csv", SUMMARY_CUDA10)
    res = run_cli("summary", p, "--format", "csv")
    assert res.code == 0, res
    table = list(csv.DictReader(io.StringIO(res.out)))
    assert [r["name"] for r in table] == ["triad_kernel(double*, double const *, double const *, double)", "copy_kernel(double*, double const *)"]
    assert float(table[0]["total_ns"]) == pytest.approx(280e6)
    assert float(table[0]["avg_ns"]) == pytest.approx(70e3)
    assert float(table[0]["max_ns"]) == pytest.approx(0.09e6)
    assert int(table[0]["instances"]) == 4000
    ps = profaudit.load(p)
    um = ps.metrics.filter(pl.col("instance_key") == "Host To Device")
    vals = dict(zip(um["metric"], um["value"]))
    assert vals["unified_memory:Total Size"] == 512 * 1024
    assert vals["unified_memory:Avg Size"] == pytest.approx(42.666667 * 1024)
    assert vals["unified_memory:Count"] == 12
    assert ps.metadata["device_name"][0] == "Tesla P100-PCIE-16GB"
    assert "Total CPU Page faults: 3" in json.loads(ps.metadata["extra_json"][0])["notes"]


# ------------------------------------------------------------------------------------------- metrics


def test_kepler_metrics_fill_flops_and_dram(tmp_path):
    ps = profaudit.load(_write(tmp_path, "metrics.csv", METRICS_KEPLER))
    (_header, _, rows), = plain_tables(METRICS_KEPLER)
    avg = {(r[1], r[3]): r[7] for r in rows}
    k = ps.kernels.sort("kernel_id")
    assert k["name"].to_list() == ["stencil_kernel(float*, int, int, float*)", "reduce_kernel(float*, float*)"]
    a = k.row(0, named=True)
    name = a["name"]
    assert a["flops_fp32"] == float(avg[(name, "flop_count_sp")])
    assert a["flops_fp64"] == 0.0 and a["flops_fp16"] is None
    assert a["flops_total"] == float(avg[(name, "flop_count_sp")])
    assert a["dram_read_bytes"] == 32 * float(avg[(name, "dram_read_transactions")])
    assert a["dram_write_bytes"] == 32 * float(avg[(name, "dram_write_transactions")])
    assert a["dram_bytes"] == a["dram_read_bytes"] + a["dram_write_bytes"] and a["dram_bytes_method"] == "read+write"
    assert a["achieved_occupancy_pct"] == pytest.approx(100 * float(avg[(name, "achieved_occupancy")]))
    assert "mean-of-3-invocations" in a["flops_method"] and "nvprof-flop_count" in a["flops_method"]
    assert a["duration_ns"] is None and a["category"] == "nvprof-metrics-avg"
    assert a["device_name"] == "Tesla K20c" and a["device_id"] == 0
    b = k.row(1, named=True)
    assert b["flops_fp32"] == 1048576.0 and b["dram_bytes"] is None and b["dram_bytes_method"] is None

    m = ps.metrics.filter(pl.col("kernel_id") == a["kernel_id"])
    by = {r["metric"]: r for r in m.iter_rows(named=True)}
    for r in rows:
        if r[1] != name:
            continue
        for stat, i in (("", 7), (".min", 5), (".max", 6)):
            got = by[r[3] + stat]
            cell = r[i]
            if cell.startswith("Low"):
                assert got["value"] is None and got["value_str"] == cell
            else:
                num = cell.rstrip("%").replace("GB/s", "")
                assert got["value"] == pytest.approx(float(num))
                assert got["unit"] == cell[len(num):]
    assert by["invocations"]["value_int"] == 3
    assert by["flop_count_sp"]["value_int"] == 673384360


def test_volta_byte_metrics_and_half_flops(tmp_path):
    ps = profaudit.load(_write(tmp_path, "metrics_v100.csv", METRICS_VOLTA))
    a = ps.kernels.row(0, named=True)
    assert a["dram_read_bytes"] == 1049000.0 and a["dram_write_bytes"] == 524300.0
    assert a["dram_bytes"] == 1573300.0
    assert a["flops_fp16"] == 2097152.0 and a["flops_fp32"] == 4096.0 and a["flops_fp64"] is None
    assert a["flops_total"] == 2097152.0 + 4096.0
    assert a["short_name"] == "hgemm_kernel"


def test_events(tmp_path):
    ps = profaudit.load(_write(tmp_path, "events.csv", EVENTS))
    assert ps.kernels.height == 1 and ps.kernels["flops_total"][0] is None
    m = ps.metrics
    vals = dict(zip(m["metric"], m["value"]))
    assert vals["inst_executed"] == 1100 and vals["inst_executed.total"] == 2200
    assert vals["active_cycles.min"] == 5000 and vals["active_cycles.max"] == 5200
    assert set(m["section"].drop_nulls()) == {"nvprof events"}


# ------------------------------------------------------------------------------------------- CLI


def test_cli_kernels_roofline_compare(tmp_path):
    a = _write(tmp_path, "a.csv", TRACE_CUDA10)
    b = _write(tmp_path, "b.csv", TRACE_CUDA10.replace("0.045570,80", "0.040000,80"))
    res = run_cli("kernels", a, "--format", "csv")
    assert res.code == 0, res
    assert len(list(csv.DictReader(io.StringIO(res.out)))) == 2
    res = run_cli("compare", a, b, "--format", "json")
    assert res.code == 0, res
    m = _write(tmp_path, "m.csv", METRICS_VOLTA)
    res = run_cli("roofline", m, "--device", "v100-sxm2-16gb", "--format", "csv")
    assert res.code == 0, res
    row = next(csv.DictReader(io.StringIO(res.out)))
    assert float(row["flops"]) == 2097152.0 + 4096.0
    assert float(row["dram_bytes"]) == 1573300.0
    assert float(row["ai_dram_flops_per_byte"]) == pytest.approx((2097152.0 + 4096.0) / 1573300.0)


# ------------------------------------------------------------------------------------------- bad input


def test_truncated_trace_is_one_line(tmp_path):
    p = _write(tmp_path, "trace.csv", TRACE_CUDA10[: TRACE_CUDA10.index("gemm_kernel") - 30])
    assert_one_line_error(run_cli("kernels", p), "truncated")


def test_empty_file_is_one_line(tmp_path):
    p = _write(tmp_path, "nvprof.csv", "")
    res = run_cli("kernels", p)
    assert_one_line_error(res)


def test_preamble_only_is_one_line(tmp_path):
    p = _write(tmp_path, "nvprof.log", "==12== NVPROF is profiling process 12, command: ./a\n==12== Profiling application: ./a\n==12== Profiling result:\nNo kernels were profiled.\n")
    assert_one_line_error(run_cli("kernels", p), "no kernels were profiled")


def test_trace_without_units_row_is_one_line(tmp_path):
    lines = TRACE_CUDA10.splitlines()
    p = _write(tmp_path, "trace.csv", "\n".join(lines[:4] + lines[5:]) + "\n")
    assert_one_line_error(run_cli("kernels", p), "no units row")


def test_summary_without_units_is_one_line(tmp_path):
    lines = SUMMARY_CUDA10.splitlines()
    p = _write(tmp_path, "summary.csv", "\n".join(lines[:3] + [lines[3]] + lines[5:]) + "\n")
    assert_one_line_error(run_cli("summary", p), "has no unit")


def test_console_output_is_refused_with_the_fix(tmp_path):
    text = """==14972== NVPROF is profiling process 14972, command: program.exe
==14972== Profiling application: program.exe
==14972== Profiling result:
            Type  Time(%)      Time     Calls       Avg       Min       Max  Name
 GPU activities:   88.94%  80.095ms         1  80.095ms  80.095ms  80.095ms  calcDensity_GPU()
"""
    p = _write(tmp_path, "prof.txt", text)
    assert_one_line_error(run_cli("kernels", p), "--csv")


def test_summaries_of_two_runs_match_in_compare(tmp_path):
    """Two runs have different process ids; their kernels must still pair up."""
    a = _write(tmp_path, "run1.csv", SUMMARY_CUDA10)
    b = _write(tmp_path, "run2.csv", SUMMARY_CUDA10.replace("4242", "5353").replace("280.000000,4000,70.000000", "290.000000,4000,72.500000"))
    res = run_cli("compare", a, b, "--format", "json")
    assert res.code == 0, res
    assert "no benchmark case appears on both sides" not in res.out
    assert "triad_kernel" in res.out


def test_short_row_inside_a_trace_is_one_line(tmp_path):
    lines = TRACE_CUDA8.splitlines()
    lines[6] = lines[6][: lines[6].index(',"GeForce')]
    p = _write(tmp_path, "trace.csv", "\n".join(lines) + "\n")
    assert_one_line_error(run_cli("kernels", p), "row 2 has 13 cells where the header has 17; malformed table")
