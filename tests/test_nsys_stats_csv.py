"""`nsys stats` CSV reports: old and new report names and header spellings, preamble and SKIPPED
outputs, traces into kernels/transfers/ranges, and a cross-check of a kern_sum CSV written from
hand SQL on each corpus SQLite file against the SQLite parser's own summary."""

from __future__ import annotations

import json
import sqlite3
import statistics
from pathlib import Path

import polars as pl
import pytest

import profaudit
from conftest import assert_one_line_error, corpus_files, corpus_ids, run_cli
from profaudit.parsers import find_parser, nsys_stats_csv, probe
from profaudit.timeline import kernel_summary, kernel_summary_from_samples

STATS = corpus_files("nsys-stats-csv")
SKIPPED = [p for p in STATS if p.suffix == ".csv"]
CONSOLE = [p for p in STATS if p.suffix == ".md"]
SQLITES = [p for p in corpus_files("nsys-sqlite", "*.sqlite") if "mini-aegaeon" not in p.name]

KERN_SUM_NEW = '''Processing [report1.sqlite] with [/opt/nvidia/nsight-systems/2024.5.1/host-linux-x64/reports/cuda_gpu_kern_sum.py]... 

 ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):

"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)","StdDev (ns)","Name"
"75.0","600","3","200.0","150.0","100","350","132.3","void gemm<float, 2>(const float *, float *, int)"
"25.0","200","1","200.0","200.0","200","200","0.0","relu_kernel(float *)"

'''
# nsys 2021-era gpukernsum with --timeunit usec: no median, no stddev, no unit on avg/min/max
KERN_SUM_OLD = """Time(%),Total Time (us),Instances,Average,Minimum,Maximum,Name
90.0,9.0,3,3.0,1.5,4.5,kernA
10.0,1.0,2,0.5,0.4,0.6,kernB
"""
GPU_TRACE_NEW = '''"Start (ns)","Duration (ns)","CorrId","GrdX","GrdY","GrdZ","BlkX","BlkY","BlkZ","Reg/Trd","StcSMem (MB)","DymSMem (MB)","Bytes (MB)","Throughput (MB/s)","SrcMemKd","DstMemKd","Device","Ctx","GreenCtx","Strm","Name"
1000,200,90,,,,,,,,,,"4.194","20971.520","Pageable","Device","NVIDIA H100 80GB HBM3 (0)","1",,"7","[CUDA memcpy Host-to-Device]"
1500,500,101,"4","2","1","128","1","1","32","0.001","0.002",,,,,"NVIDIA H100 80GB HBM3 (0)","1",,"7","void gemm<float, 2>(const float *, float *, int)"
2100,100,103,"1","1","1","64","1","1","16","0.000","0.000",,,,,"NVIDIA H100 80GB HBM3 (0)","1",,"7","relu_kernel(float *)"
2300,50,104,,,,,,,,,,"0.001","20.000",,"Device","NVIDIA H100 80GB HBM3 (0)","1",,"7","[CUDA memset]"
'''
GPU_TRACE_OLD = """Start (us),Duration (us),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),DymSMem (MB),Bytes (MB),Throughput (MBps),SrcMemKd,DstMemKd,Device,Ctx,Strm,Name
1.000,0.500,5,,,,,,,,,,2.000,4000.000,Device,Pageable,Tesla V100-PCIE-32GB (1),1,7,[CUDA memcpy DtoH]
2.000,1.250,6,80,1,1,256,1,1,40,0.049,0.000,,,,,Tesla V100-PCIE-32GB (1),1,7,kernC
"""
MEM_SIZE = '''"Total (MB)","Count","Avg (MB)","Med (MB)","Min (MB)","Max (MB)","StdDev (MB)","Operation"
"8.389","2","4.194","4.194","4.194","4.194","0.000","[CUDA memcpy Host-to-Device]"
"0.001","1","0.001","0.001","0.001","0.001","0.000","[CUDA memset]"
'''
MULTI = '''Generating SQLite file report1.sqlite from report1.nsys-rep
Exporting 1234 events: [======100%]

 ** CUDA API Summary (cuda_api_sum):

"Time (%)","Total Time (ns)","Num Calls","Avg (ns)","Med (ns)","Min (ns)","Max (ns)","StdDev (ns)","Name"
"96.9","106912410","3","35637470.0","6584.0","4697","106901129","61716139.1","cudaMalloc"
"3.1","3201638","1010","3169.9","2922.0","0","138218","5124.5","cudaLaunchKernel"

 ** NVTX Range Summary (nvtx_sum):

"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)","StdDev (ns)","Style","Range"
"95.0","3481709","1","3481709.0","3481709.0","3481709","3481709","0.0","PushPop","Profile_Loop"
"5.0","182472","1","182472.0","182472.0","182472","182472","0.0","PushPop","Warmup"

'''
API_TRACE = '''"Start (ns)","Duration (ns)","Name","Result","CorrID","Pid","Tid","T-Pri","Thread Name"
100,50,"cudaMalloc_v3020","0","1","4242","4242","20","python"
200,30,"cudaLaunchKernel_v7000","0","101","4242","4242","20","python"
210,10,"cuLaunchKernel","0","102","4242","4242","20","python"
'''
UNKNOWN = '''"Total Count","Avg (ns)","Operation"
"3","12.5","CPU Page Faults"
'''


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def load_one(path: Path):
    ps = profaudit.load(path, parallel=False)
    assert len(ps) == 1
    return next(iter(ps))


def stat_table(p) -> dict[tuple[str, str], tuple[float, int]]:
    return {(r["benchmark"], r["statistic"]): (r["duration_ns"], r["sample_count"]) for r in p.samples.iter_rows(named=True)}


# ---------------------------------------------------------------------------------------- corpus

@pytest.mark.corpus
@pytest.mark.parametrize("path", SKIPPED, ids=corpus_ids(SKIPPED))
def test_corpus_skipped_outputs_are_valid_and_empty(path):
    assert find_parser(path) is nsys_stats_csv.PARSER
    p = load_one(path)
    assert all(t.height == 0 for t in p.tables.values())
    assert p.metadata["empty_reason"].startswith("SKIPPED:") and "does not contain" in p.metadata["empty_reason"]
    assert p.metadata["nsys_stats_input"] == "benchmark/results/nsys_qwen3_local.sqlite"
    assert p.metadata["nsys_stats_reports"][0] in ("cuda_api_sum", "cuda_gpu_kern_sum")
    assert any(n.startswith("NOTICE: Existing SQLite export found") and "--force-export" in n for n in p.metadata["notes"])
    res = run_cli("summary", path)
    assert res.code == 0 and "does not contain" in res.err


@pytest.mark.corpus
@pytest.mark.parametrize("path", CONSOLE, ids=corpus_ids(CONSOLE))
def test_corpus_console_text_is_not_csv(path):
    res = run_cli("kernels", path)
    assert_one_line_error(res, "nsys stats console (column) text, not CSV")
    assert "cuda_gpu_kern_sum" in res.err and "--format csv" in res.err


# ---------------------------------------------------------------------------------------- reports

def test_kern_sum_new_names_into_samples(tmp_path):
    p = load_one(write(tmp_path, "report1_cuda_gpu_kern_sum.csv", KERN_SUM_NEW))
    assert p.kernels.height == 0  # summaries are not executions
    t = stat_table(p)
    g = "void gemm<float, 2>(const float *, float *, int)"
    assert t[(g, "total")] == (600.0, 3) and t[(g, "mean")] == (200.0, 3) and t[(g, "median")] == (150.0, 3)
    assert t[(g, "min")] == (100.0, 3) and t[(g, "max")] == (350.0, 3) and t[(g, "stddev")] == (132.3, 3)
    assert t[("relu_kernel(float *)", "stddev")] == (0.0, 1)
    assert set(p.samples["time_source"]) == {"nsys"}
    assert {json.loads(x)["report"] for x in p.samples["params"]} == {"cuda_gpu_kern_sum"}
    assert p.metadata["nsys_stats_reports"] == ["cuda_gpu_kern_sum"]
    summary = kernel_summary_from_samples(p.samples)
    assert summary["name"].to_list() == [g, "relu_kernel(float *)"]
    assert summary["time_pct"].to_list() == [75.0, 25.0] and summary["instances"].to_list() == [3, 1]


def test_kern_sum_old_names_and_time_unit(tmp_path):
    p = load_one(write(tmp_path, "gpukernsum.csv", KERN_SUM_OLD))
    t = stat_table(p)
    assert t[("kernA", "total")] == (9000.0, 3) and t[("kernA", "mean")] == (3000.0, 3)  # us -> ns, unit from Total Time
    assert t[("kernB", "min")] == (400.0, 2) and ("kernB", "median") not in t
    assert {json.loads(x)["report"] for x in p.samples["params"]} == {"cuda_gpu_kern_sum"}  # from the file name


def test_gpu_trace_into_kernels_and_transfers(tmp_path):
    p = load_one(write(tmp_path, "r_cuda_gpu_trace.csv", GPU_TRACE_NEW))
    k = p.kernels.sort("start_ns")
    assert k["name"].to_list() == ["void gemm<float, 2>(const float *, float *, int)", "relu_kernel(float *)"]
    assert k["short_name"].to_list() == ["gemm", "relu_kernel"]
    first = k.row(0, named=True)
    assert (first["start_ns"], first["end_ns"], first["duration_ns"], first["correlation_id"]) == (1500, 2000, 500.0, 101)
    assert (first["grid_size"], first["block_size"], first["registers_per_thread"]) == (8, 128, 32)
    assert (first["static_shared_mem_bytes"], first["dynamic_shared_mem_bytes"], first["shared_mem_bytes"]) == (1000, 2000, 3000)
    assert (first["device_name"], first["device_id"], first["stream"], first["context_id"]) == ("NVIDIA H100 80GB HBM3", 0, 7, 1)
    tr = p.transfers.sort("start_ns")
    assert tr["kind"].to_list() == ["memcpy", "memset"] and tr["direction"].to_list() == ["HtoD", None]
    assert tr["bytes"].to_list() == [4194000.0, 1000.0] and tr["throughput_bytes_per_s"].to_list() == [20971.52e6, 20e6]
    assert tr["src_kind"].to_list() == ["Pageable", None] and tr["dst_kind"].to_list() == ["Device", "Device"]
    assert p.metadata["device_name"] == "NVIDIA H100 80GB HBM3"


def test_gpu_trace_old_spelling(tmp_path):
    p = load_one(write(tmp_path, "gputrace.csv", GPU_TRACE_OLD))
    k = p.kernels
    assert k.height == 1 and k["start_ns"][0] == 2000 and k["duration_ns"][0] == 1250.0 and k["end_ns"][0] == 3250
    assert k["device_id"][0] == 1 and k["static_shared_mem_bytes"][0] == 49000
    tr = p.transfers
    assert tr["direction"].to_list() == ["DtoH"] and tr["throughput_bytes_per_s"].to_list() == [4e9]


def test_mem_size_sum_into_metrics(tmp_path):
    p = load_one(write(tmp_path, "x_cuda_gpu_mem_size_sum.csv", MEM_SIZE))
    m = p.metrics
    assert p.samples.height == 0
    row = m.filter((pl.col("metric") == "cuda_gpu_mem_size_sum:total") & (pl.col("instance_key") == "[CUDA memcpy Host-to-Device]"))
    assert row["value"].to_list() == [8389000.0] and row["unit"].to_list() == ["byte"]
    assert m.filter(pl.col("metric") == "cuda_gpu_mem_size_sum:count")["value"].to_list() == [2.0, 1.0]


def test_several_reports_on_one_stdout(tmp_path):
    p = load_one(write(tmp_path, "stats_stdout.csv", MULTI))
    reports = {json.loads(x)["report"] for x in p.samples["params"]}
    assert reports == {"cuda_api_sum", "nvtx_sum"}
    t = stat_table(p)
    assert t[("cudaLaunchKernel", "median")] == (2922.0, 1010) and t[("cudaMalloc", "stddev")] == (61716139.1, 3)
    assert t[("Profile_Loop", "total")] == (3481709.0, 1)
    nvtx_params = {json.loads(x).get("Style") for x in p.samples.filter(pl.col("benchmark") == "Warmup")["params"]}
    assert nvtx_params == {"PushPop"}
    assert any(n.startswith("Generating SQLite file") for n in p.metadata["notes"])


def test_api_trace_into_ranges(tmp_path):
    p = load_one(write(tmp_path, "r_cuda_api_trace.csv", API_TRACE))
    r = p.ranges.sort("start_ns")
    assert r["name"].to_list() == ["cudaMalloc", "cudaLaunchKernel", "cuLaunchKernel"]
    assert r["kind"].to_list() == ["cuda_runtime", "cuda_runtime", "cuda_driver"]
    assert r["correlation_id"].to_list() == [1, 101, 102] and set(r["process_id"]) == {4242}
    assert r["end_ns"].to_list() == [150, 230, 220]


def test_unknown_report_kept_as_metrics(tmp_path):
    p = load_one(write(tmp_path, "um_cpu_page_faults_sum.csv", UNKNOWN.replace('"Total Count"', '"Total Time (ns)","Instances"').replace('"3","12.5"', '"37","3","12.5"')))
    # has count + a time statistic: a duration summary after all
    assert p.samples.height == 2
    q = load_one(write(tmp_path, "weird.csv", 'Processing [a.sqlite] with [/x/reports/um_sum.py]...\n\n' + UNKNOWN))
    m = q.metrics
    assert set(m["metric"]) == {"um_sum:Total Count", "um_sum:Avg (ns)", "um_sum:Operation"}
    assert m.filter(pl.col("metric") == "um_sum:Operation")["value_str"].to_list() == ["CPU Page Faults"]


def test_malformed_row_is_one_line(tmp_path):
    bad = write(tmp_path, "cuda_gpu_kern_sum.csv", KERN_SUM_NEW.replace('"25.0","200","1",', '"25.0",'))
    assert_one_line_error(run_cli("kernels", bad), "malformed nsys stats CSV")


def test_sniff_is_specific(tmp_path):
    assert not nsys_stats_csv.PARSER.sniff(probe(write(tmp_path, "plain.csv", "a,b\n1,2\n")))
    assert not nsys_stats_csv.PARSER.sniff(probe(write(tmp_path, "times.csv", "name,time_ms\nk,1.5\n")))
    for text in (KERN_SUM_NEW, KERN_SUM_OLD, GPU_TRACE_NEW, GPU_TRACE_OLD, MEM_SIZE, MULTI, API_TRACE):
        assert nsys_stats_csv.PARSER.sniff(probe(write(tmp_path, "x.csv", text))), text[:40]


def test_cli_summary_of_a_kern_sum_csv(tmp_path):
    res = run_cli("summary", write(tmp_path, "cuda_gpu_kern_sum.csv", KERN_SUM_NEW), "--format", "json")
    assert res.code == 0, res
    rows = json.loads(res.out)
    assert [r["instances"] for r in rows] == [3, 1] and rows[0]["med_ns"] == 150.0


# ---------------------------------------------------------------------------------------- cross-check

def _kern_sum_csv_from_sql(path: Path) -> str | None:
    """What `nsys stats -r cuda_gpu_kern_sum --format csv` prints, computed with plain SQL and the
    statistics module (sample standard deviation, as nsys prints it), rounded like nsys."""
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        if not con.execute("SELECT count(*) FROM sqlite_master WHERE name='CUPTI_ACTIVITY_KIND_KERNEL'").fetchone()[0]:
            return None
        rows = con.execute(
            "SELECT s.value, k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN StringIds s ON s.id = k.demangledName"
        ).fetchall()
    finally:
        con.close()
    by: dict[str, list[int]] = {}
    for name, d in rows:
        by.setdefault(name, []).append(d)
    grand = sum(sum(v) for v in by.values())
    out = ['"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)","StdDev (ns)","Name"']
    for name, v in sorted(by.items(), key=lambda kv: (-sum(kv[1]), len(kv[1]), kv[0])):
        sd = statistics.stdev(v) if len(v) > 1 else 0.0
        out.append(
            f'"{round(sum(v) * 100 / grand, 1)}","{sum(v)}","{len(v)}","{round(statistics.mean(v), 1)}","{round(statistics.median(v), 1)}",'
            f'"{min(v)}","{max(v)}","{round(sd, 1)}","{name}"'
        )
    return "\n".join(out) + "\n"


@pytest.mark.corpus
@pytest.mark.parametrize("path", SQLITES, ids=corpus_ids(SQLITES))
def test_kern_sum_csv_from_sql_matches_sqlite_summary(tmp_path, path):
    text = _kern_sum_csv_from_sql(path)
    if text is None:
        pytest.skip("no kernel table")
    from_csv = kernel_summary_from_samples(load_one(write(tmp_path, "cuda_gpu_kern_sum.csv", text)).samples)
    from_db = kernel_summary(load_one(path).kernels)
    assert from_csv["name"].to_list() == from_db["name"].to_list()
    assert from_csv["instances"].to_list() == from_db["instances"].to_list()
    for col in ("total_ns", "min_ns", "max_ns"):
        assert from_csv[col].to_list() == from_db[col].to_list(), col
    for col in ("avg_ns", "med_ns", "stddev_ns", "time_pct"):
        diff = (from_csv[col] - from_db[col].round(1)).abs().max()
        assert diff <= 0.1 + 1e-9, (col, diff)


NVTX_TRACE = '''Processing [r.sqlite] with [/opt/nvidia/nsight-systems/2024.5.1/host-linux-x64/reports/nvtx_pushpop_trace.py]...

"Start (ns)","End (ns)","Duration (ns)","DurChild (ns)","DurNonChild (ns)","Name","PID","TID","Lvl","NumChild","RangeId","ParentId","RangeStack","NameTree"
"100","900","800","300","500","step","4242","4243","0","1","1","","1","step"
"200","500","300","0","300","forward","4242","4243","1","0","2","1","1:2","step/forward"
'''


def test_nvtx_trace_into_nested_ranges(tmp_path):
    p = load_one(write(tmp_path, "out.csv", NVTX_TRACE))
    r = p.ranges.sort("start_ns")
    assert r["kind"].to_list() == ["nvtx_push_pop"] * 2 and r["name"].to_list() == ["step", "forward"]
    assert r["end_ns"].to_list() == [900, 500] and r["depth"].to_list() == [0, 1]
    assert r["parent_range_id"][1] == r["range_id"][0] and set(r["thread_id"]) == {4243}


def test_ragged_trace_row_is_one_line(tmp_path):
    bad = write(tmp_path, "cuda_gpu_trace.csv", GPU_TRACE_NEW + '3000,10,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22\n')
    assert_one_line_error(run_cli("kernels", bad), "malformed nsys stats CSV")
