"""Nsight Compute CSV exports: corpus files against a plain csv read of the same text, constructed
exports for each layout and quirk, sniffing against other CSVs, units, and bad input."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import polars as pl
import pytest

import profaudit
from profaudit.parsers import find_parser, ncu_common, ncu_csv, probe
from tests.conftest import assert_one_line_error, corpus_dir, corpus_files, corpus_ids, run_cli

CSVS = corpus_files("ncu-csv")


def _one(path) -> profaudit.Profile:
    ps = profaudit.load(path, parallel=False)
    assert len(ps) == 1
    return next(iter(ps))


def _plain(path: Path) -> tuple[list[str], list[list[str]]]:
    """Header and data rows, read with the csv module after dropping ==PROF== lines."""
    lines = [l for l in path.read_text().splitlines() if l.strip() and not l.startswith("==")]
    rows = list(csv.reader(lines))
    return rows[0], rows[1:]


def _num(cell: str) -> float | None:
    s = cell.strip().replace(",", "")
    try:
        return float(s)
    except ValueError:
        return None


@pytest.mark.corpus
@pytest.mark.parametrize("path", CSVS, ids=corpus_ids(CSVS))
def test_corpus_csv_matches_the_text(path):
    prof = _one(path)
    assert prof.metadata["format"] == "ncu-csv"
    header, rows = _plain(path)
    met = prof.metrics
    k = prof.kernels.sort("kernel_id")
    if "Metric Name" in header:
        h = {n: i for i, n in enumerate(header)}
        ids = list(dict.fromkeys((r[h["Process ID"]], r[h["ID"]]) for r in rows))
        assert k.height == len(ids)
        metric_rows = [r for r in rows if len(r) > h["Metric Name"] and r[h["Metric Name"]]]
        plain = met.filter(pl.col("kind") != "rule")
        assert plain.height == len(metric_rows)
        for r, (kid, name, unit, v, s) in zip(metric_rows, plain.select("kernel_id", "metric", "unit", "value", "value_str").iter_rows()):
            assert ids[kid] == (r[h["Process ID"]], r[h["ID"]])
            assert (name, unit) == (r[h["Metric Name"]], r[h["Metric Unit"]])
            want = _num(r[h["Metric Value"]])
            if want is None:
                assert v is None and s == r[h["Metric Value"]]
            else:
                assert v == want
        if "Rule Name" in h:
            rule_rows = [r for r in rows if len(r) > h["Rule Name"] and r[h["Rule Name"]]]
            rules = met.filter(pl.col("kind") == "rule")
            assert rules["metric"].to_list() == [r[h["Rule Name"]] for r in rule_rows]
            assert rules["value"].to_list() == [_num(r[h["Estimated Speedup"]]) for r in rule_rows]
        for kid, (_pid, _id) in enumerate(ids):
            first = next(r for r in rows if (r[h["Process ID"]], r[h["ID"]]) == (_pid, _id))
            row = k.row(kid, named=True)
            assert row["name"] == first[h["Kernel Name"]]
            dims = tuple(int(x) for x in first[h["Block Size"]].strip("()").split(","))
            assert (row["block_x"], row["block_y"], row["block_z"]) == dims
            dur = [r for r in metric_rows if (r[h["Process ID"]], r[h["ID"]]) == (_pid, _id) and r[h["Metric Name"]] in ("Duration", "gpu__time_duration.sum")]
            if dur:
                factor = {"ns": 1, "nsecond": 1, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6}[dur[0][h["Metric Unit"]]]
                assert row["duration_ns"] == pytest.approx(_num(dur[0][h["Metric Value"]]) * factor, rel=1e-12)
    else:
        units, data = rows[0], rows[1:]
        assert k.height == len(data)
        assert met.height == len(data) * len(header)
        for kid, r in enumerate(data):
            mine = met.filter(pl.col("kernel_id") == kid)
            assert mine["metric"].to_list() == header
            assert mine["value"].to_list() == [_num(c) for c in r]
            assert mine["unit"].to_list() == [("" if u == "-" else u) for u in units]
            row = k.row(kid, named=True)
            col = {n: r[i] for i, n in enumerate(header)}
            scale = {"msecond": 1e6, "usecond": 1e3, "nsecond": 1.0}[units[header.index("gpu__time_duration.sum")]]
            assert row["duration_ns"] == pytest.approx(float(col["gpu__time_duration.sum"]) * scale, rel=1e-12)
            assert row["grid_size"] == int(col["launch__grid_size"])
            assert (row["block_x"], row["block_y"]) == (int(col["launch__block_dim_x"]), int(col["launch__block_dim_y"]))


@pytest.mark.corpus
def test_labels_map_to_kernel_columns():
    prof = _one(corpus_dir("ncu-csv") / "brycelelbach__nsightful__copy_blocked.csv")
    row = prof.kernels.row(0, named=True)
    assert row["duration_ns"] == 21_058_944
    assert row["sm_clock_hz"] == 584_998_877.44
    assert row["mem_clock_hz"] == 4_963_609_951.19
    assert row["registers_per_thread"] == 32 and row["grid_size"] == 1024 and row["block_size"] == 256
    assert row["achieved_occupancy_pct"] == 96.26 and row["theoretical_occupancy_pct"] == 100
    # no byte counts in this export: DRAM traffic from the Memory Workload Analysis rate x duration
    assert row["dram_bytes_method"] == "rate*duration"
    assert row["dram_bytes"] == pytest.approx(196_456_177_859.63 * 21_058_944e-9, rel=1e-12)
    rules = prof.metrics.filter(pl.col("kind") == "rule")
    speedup = rules.filter(pl.col("metric") == "HighPipeUtilization").row(0, named=True)
    assert speedup["value"] == 98.86 and speedup["instance_key"] == "optimization;speedup=local"
    assert speedup["section"] == "ComputeWorkloadAnalysis"


@pytest.mark.corpus
def test_csv_and_report_of_the_same_program_are_plausible_not_equal():
    """MANIFEST: the readWriteOffset CSV and .ncu-rep come from different runs (not a value pair)."""
    rep = _one(corpus_dir("ncu-rep") / "Lashi0812__CudaProgramming__readWriteOffset_ca.ncu-rep").kernels
    csvk = _one(corpus_dir("ncu-csv") / "Lashi0812__CudaProgramming__ncu_readWriteOffset_ca.csv").kernels
    assert "readOffset" in rep["short_name"].to_list() and set(csvk["short_name"].to_list()) == {"readOffset"}
    a = rep.filter(pl.col("short_name") == "readOffset")["dram_read_bytes"][0]
    for b in csvk["dram_read_bytes"].to_list():
        assert abs(a - b) / a < 0.01


# ---------------------------------------------------------------------------------------------
# Constructed exports
# ---------------------------------------------------------------------------------------------
_DETAILS_OLD = """==PROF== Connected to process 4242 (/app/bench)
program output: starting, n=1024
==PROF== Profiling "gemm_kernel" - 0: 0%....50%....100% - 8 passes
"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","bench","127.0.0.1","void gemm_kernel<float>(float const*, float*, int)","2020-Aug-03 10:00:00","1","7","GPU Speed Of Light","DRAM Frequency","cycle/nsecond","6.79"
"0","4242","bench","127.0.0.1","void gemm_kernel<float>(float const*, float*, int)","2020-Aug-03 10:00:00","1","7","GPU Speed Of Light","SM Frequency","cycle/usecond","1,395.50"
"0","4242","bench","127.0.0.1","void gemm_kernel<float>(float const*, float*, int)","2020-Aug-03 10:00:00","1","7","GPU Speed Of Light","Duration","usecond","1,234.56"
iteration 1 done: checksum 0.5
"0","4242","bench","127.0.0.1","void gemm_kernel<float>(float const*, float*, int)","2020-Aug-03 10:00:00","1","7","GPU Speed Of Light","Memory [%]","%","n/a"
"0","4242","bench","127.0.0.1","void gemm_kernel<float>(float const*, float*, int)","2020-Aug-03 10:00:00","1","7","Launch Statistics","Dynamic Shared Memory Per Block","Kbyte/block","49.15"
"0","4242","bench","127.0.0.1","void gemm_kernel<float>(float const*, float*, int)","2020-Aug-03 10:00:00","1","7","Launch Statistics","Static Shared Memory Per Block","byte/block","0"
"0","4242","bench","127.0.0.1","void gemm_kernel<float>(float const*, float*, int)","2020-Aug-03 10:00:00","1","7","Launch Statistics","Function Cache Configuration","","CachePreferNone"
"0","4242","bench","127.0.0.1","void gemm_kernel<float>(float const*, float*, int)","2020-Aug-03 10:00:00","1","7","Memory Workload Analysis","Read Bytes","Mbyte","12.58"
"0","4242","bench","127.0.0.1","void gemm_kernel<float>(float const*, float*, int)","2020-Aug-03 10:00:00","1","7","Memory Workload Analysis","Write Bytes","Kbyte","4,194.30"
"1","4242","bench","127.0.0.1","void gemm_kernel<float>(float const*, float*, int)","2020-Aug-03 10:00:01","1","7","GPU Speed Of Light","Duration","msecond","2.50"
==PROF== Disconnected from process 4242
"""


def test_details_old_layout_units_preamble_thousands_na(tmp_path):
    p = tmp_path / "old_details.csv"
    p.write_text(_DETAILS_OLD)
    assert find_parser(p).name == "ncu-csv"
    prof = _one(p)
    k = prof.kernels.sort("kernel_id")
    assert k.height == 2
    r0, r1 = k.row(0, named=True), k.row(1, named=True)
    assert r0["duration_ns"] == pytest.approx(1_234_560.0)
    assert r1["duration_ns"] == pytest.approx(2_500_000.0)
    assert r0["mem_clock_hz"] == pytest.approx(6.79e9)
    assert r0["sm_clock_hz"] == pytest.approx(1.3955e9)
    assert r0["dynamic_shared_mem_bytes"] == 49150 and r0["static_shared_mem_bytes"] == 0 and r0["shared_mem_bytes"] == 49150
    assert r0["dram_read_bytes"] == pytest.approx(12.58e6) and r0["dram_write_bytes"] == pytest.approx(4_194_300)
    assert r0["dram_bytes_method"] == "read+write"
    assert r0["name"] == "void gemm_kernel<float>(float const*, float*, int)" and r0["short_name"] == "gemm_kernel"
    assert r0["process_id"] == 4242 and r0["stream"] == 7
    m = prof.metrics
    na = m.filter(pl.col("metric") == "Memory [%]").row(0, named=True)
    assert na["value"] is None and na["value_str"] is None
    sm = m.filter((pl.col("metric") == "SM Frequency")).row(0, named=True)
    assert (sm["value"], sm["unit"]) == (1395.5, "cycle/usecond")  # metrics keep the file's unit
    cache = m.filter(pl.col("metric") == "Function Cache Configuration").row(0, named=True)
    assert cache["value_str"] == "CachePreferNone" and cache["kind"] == "launch"
    assert prof.metadata["preamble_lines"] == 3 and prof.metadata["skipped_lines"] == 1
    assert (prof.metadata["clock_control"], prof.metadata["clock_control_origin"]) == ("base", "default")


_RAW = """"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum","dram__bytes_write.sum","gpu__time_duration.sum","launch__registers_per_thread","sm__cycles_elapsed.avg.per_second","smsp__sass_thread_inst_executed_op_fadd_pred_on.sum","smsp__sass_thread_inst_executed_op_fmul_pred_on.sum","smsp__sass_thread_inst_executed_op_ffma_pred_on.sum","lts__t_sectors.sum","device__attribute_display_name"
"","","","","","","","","","","","Mbyte","Kbyte","usecond","register/thread","Ghz","inst","inst","inst","sector",""
"0","77","app","host-a","k1(float*)","1","7","(128, 2, 1)","(40, 1, 1)","0","9.0","1.50","2,048","3.25","32","1.98","1,000","500","250","10","NVIDIA H100 80GB HBM3"
"1","77","app","host-a","k2(double*)","1","13","(256, 1, 1)","(80, 2, 1)","1","9.0","n/a","1","0.5","64","1.75","0","0","0","n/a","NVIDIA H100 80GB HBM3"
"""


def test_raw_page_with_units_row(tmp_path):
    p = tmp_path / "raw.csv.gz"
    with gzip.open(p, "wt") as f:
        f.write(_RAW)
    assert find_parser(p).name == "ncu-csv"
    prof = _one(p)
    k = prof.kernels.sort("kernel_id")
    r0, r1 = k.row(0, named=True), k.row(1, named=True)
    assert r0["dram_read_bytes"] == pytest.approx(1.5e6) and r0["dram_write_bytes"] == pytest.approx(2.048e6)
    assert r0["dram_bytes"] == pytest.approx(3.548e6)
    assert r0["duration_ns"] == pytest.approx(3250.0)
    assert r0["sm_clock_hz"] == pytest.approx(1.98e9)
    assert r0["flops_fp32"] == 1000 + 500 + 2 * 250
    assert r0["l2_bytes"] == 320
    assert (r0["block_x"], r0["block_y"], r0["block_z"], r0["block_size"]) == (128, 2, 1, 256)
    assert (r1["grid_x"], r1["grid_y"], r1["grid_size"]) == (80, 2, 160)
    assert r0["device_name"] == "NVIDIA H100 80GB HBM3" and r1["device_id"] == 1
    assert r1["dram_read_bytes"] is None and r1["dram_bytes"] is None and r1["l2_bytes"] is None
    assert prof.metadata["device_count"] == 2 and prof.metadata["csv_page"] == "raw"
    m = prof.metrics.filter(pl.col("kernel_id") == 0)
    assert m.height == 10
    w = m.filter(pl.col("metric") == "dram__bytes_write.sum").row(0, named=True)
    assert (w["value"], w["unit"], w["value_int"]) == (2048.0, "Kbyte", 2048)


def test_units_to_base():
    tb = ncu_common.to_base
    assert tb(1.5, "usecond") == (1500.0, "ns") and tb(2.0, "ms") == (2e6, "ns") and tb(3.0, "nsecond") == (3.0, "ns")
    assert tb(1.0, "second") == (1e9, "ns")
    assert tb(2.0, "Kbyte") == (2000.0, "byte") and tb(1.0, "Gbyte") == (1e9, "byte") and tb(5.0, "byte") == (5.0, "byte")
    assert tb(1.41, "Ghz") == (pytest.approx(1.41e9), "Hz") and tb(585.0, "Mhz") == (585e6, "Hz") and tb(7.0, "hz") == (7.0, "Hz")
    assert tb(1.5, "cycle/nsecond") == (1.5e9, "Hz") and tb(1500.0, "cycle/usecond") == (pytest.approx(1.5e9), "Hz")
    assert tb(2.0, "cycle/second") == (2.0, "Hz")
    assert tb(1.0, "Gbyte/second") == (1e9, "byte/s") and tb(2.0, "Tbyte/s") == (2e12, "byte/s")
    assert tb(49.15, "Kbyte/block") == (pytest.approx(49150.0), "byte/block")
    assert tb(50.0, "%") == (50.0, "%") and tb(3.0, "inst/cycle") == (3.0, "inst/cycle") and tb(4.0, "-") == (4.0, "")


def test_number_cells():
    pn = ncu_common.parse_number
    assert pn("1,234,567") == 1234567 and pn("4,963,609,951.19") == 4963609951.19
    assert pn("9,00") == 9.0 and pn("0,5") == 0.5
    assert pn("n/a") is None and pn("") is None and pn("N/A") is None
    assert pn("(256, 1, 1)") is None and pn("CachePreferNone") is None
    assert pn("1e3") == 1000.0 and pn("-2.5") == -2.5
    assert ncu_common.parse_dims("(256, 1, 1)") == (256, 1, 1)


def test_flop_rules_from_counters():
    fc = ncu_common.flop_columns
    base = "smsp__sass_thread_inst_executed_op_"
    full = {f"{base}{p}{op}_pred_on.sum": v for p in "dfh" for op, v in (("add", 1.0), ("mul", 2.0), ("fma", 3.0))}
    out = fc(full)
    assert out["flops_fp64"] == 1 + 2 + 2 * 3 and out["flops_fp32"] == 9
    assert out["flops_fp16"] == 2 * 1 + 2 * 2 + 4 * 3  # packed half2: x2 lanes
    assert out["flops_total"] == 9 + 9 + 18 and "sass-counters(sum)" in out["flops_method"]
    # a missing counter makes the precision unknown, never a partial sum
    part = {k: v for k, v in full.items() if "hadd" not in k}
    out = fc(part)
    assert out["flops_fp16"] is None and "incomplete:fp16" in out["flops_method"] and out["flops_total"] == 18
    # rates x elapsed cycles of the counter's own unit
    rates = {f"{base}f{op}_pred_on.sum.per_cycle_elapsed": 2.0 for op in ("add", "mul", "fma")}
    rates["smsp__cycles_elapsed.avg"] = 100.0
    rates["sm__ops_path_tensor_src_bf16_dst_fp32_sparsity_off.sum.per_cycle_elapsed"] = 4.0
    rates["sm__ops_path_tensor_src_bf16_dst_fp32_sparsity_on.sum.per_cycle_elapsed"] = 1.0
    rates["sm__cycles_elapsed.avg"] = 50.0
    rates["sm__ops_path_tensor_src_int4_sparsity_off.sum"] = 7.0
    out = fc(rates)
    assert out["flops_fp32"] == (2 + 2 + 4) * 100
    assert out["flops_bf16_tensor"] == 5.0 * 50 and "tensor-ops-path+sparse" in out["flops_method"]
    assert out["flops_fp16_tensor"] is None and out["flops_int8_tensor"] is None
    assert out["flops_total"] == 800 + 250
    assert "not-attributed:int4" in out["flops_method"]
    # no double counting: an unsuffixed total wins over its on/off pair, and the all-instruction
    # counter over the per-instruction ones; a counter mixing precisions is not attributed
    both = {
        "sm__ops_path_tensor_src_fp16_dst_fp32.sum": 10.0,
        "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_off.sum": 10.0,
        "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_on.sum": 0.0,
        "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32.sum": 10.0,
        "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_off.sum": 6.0,
        "sm__ops_path_tensor_op_utcqmma_src_fp4_fp6_fp8_dst_fp32.sum": 99.0,
    }
    out = fc(both)
    assert out["flops_fp16_tensor"] == 10.0 and out["flops_bf16_tensor"] == 6.0
    assert out["flops_fp8_tensor"] is None and out["flops_fp4_tensor"] is None
    assert "not-attributed:fp4_fp6_fp8" in out["flops_method"] and "dense-only:bf16" in out["flops_method"]
    assert out["flops_total"] == 16.0
    # percentages only: unknown
    out = fc({"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": 40.0})
    assert out["flops_fp16_tensor"] is None and out["flops_total"] is None and "unknown" in out["flops_method"]
    assert fc({})["flops_method"] is None


def test_clock_and_cache_control_from_command_line():
    cc = ncu_common.controls_from
    assert cc(None) == {"clock_control": "base", "clock_control_origin": "default", "cache_control": "all", "cache_control_origin": "default"}
    got = cc("/opt/ncu --clock-control none --cache-control=none -o r ./app")
    assert (got["clock_control"], got["clock_control_origin"], got["cache_control"], got["cache_control_origin"]) == ("none", "recorded", "none", "recorded")
    got = cc("ncu -o r ./app", settings_clock="Base")
    assert (got["clock_control"], got["clock_control_origin"]) == ("base", "recorded")
    assert cc("ncu --set full ./app")["clock_control_origin"] == "default"


# ---------------------------------------------------------------------------------------------
# Sniffing and bad input
# ---------------------------------------------------------------------------------------------
def _other_csvs() -> list[Path]:
    out = []
    for sub in ("nsys-stats-csv", "nvbench", "timing-csv", "google-benchmark", "pytest-benchmark"):
        out += [p for p in corpus_files(sub) if p.suffix in (".csv", ".txt")]
    return out


OTHER = _other_csvs()


@pytest.mark.corpus
@pytest.mark.parametrize("path", OTHER, ids=corpus_ids(OTHER))
def test_other_csvs_are_not_ncu(path):
    assert not ncu_csv.PARSER.sniff(probe(path))


@pytest.mark.corpus
@pytest.mark.parametrize("path", CSVS, ids=corpus_ids(CSVS))
def test_corpus_csvs_are_ncu(path):
    assert ncu_csv.PARSER.sniff(probe(path)) and find_parser(path).name == "ncu-csv"


def test_bad_csv_inputs(tmp_path):
    cut = tmp_path / "cut.csv"
    cut.write_text(_DETAILS_OLD.rstrip("\n")[:-40])
    assert_one_line_error(run_cli("kernels", cut), "truncated")
    only_header = tmp_path / "header.csv"
    only_header.write_text(_DETAILS_OLD.splitlines()[3] + "\n")
    assert_one_line_error(run_cli("kernels", only_header), "without kernel rows")
    ragged = tmp_path / "ragged.csv"
    lines = _RAW.splitlines()
    ragged.write_text("\n".join(lines[:3] + [lines[3].rsplit(",", 3)[0]]) + "\n")
    assert_one_line_error(run_cli("kernels", ragged), "cells")
    broken = tmp_path / "broken.csv"
    broken.write_text(_DETAILS_OLD.replace('"1","7","GPU Speed Of Light","Duration","msecond","2.50"', '"1","7"'))
    assert_one_line_error(run_cli("kernels", broken), "cells")
    plain = tmp_path / "plain.csv"
    plain.write_text("name,value\na,1\n")
    assert not ncu_csv.PARSER.sniff(probe(plain))


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_kernels_command_on_csv(tmp_path, fmt):
    p = tmp_path / "raw.csv"
    p.write_text(_RAW)
    res = run_cli("kernels", p, "--format", fmt)
    assert res.code == 0, res
    assert "k2(double*)" in res.out or "k2" in res.out


def test_device_option_names_the_device_of_a_csv(tmp_path):
    p = tmp_path / "details.csv"
    p.write_text(_DETAILS_OLD)
    res = run_cli("kernels", p, "--format", "csv", "--device", "NVIDIA A100-SXM4-80GB")
    assert res.code == 0, res
    rows = list(csv.DictReader(res.out.splitlines()))
    assert {r["device_name"] for r in rows} == {"NVIDIA A100-SXM4-80GB"}


# ---------------------------------------------------------------------------------------------
# Variants seen in public exports (robustness sweep)
# ---------------------------------------------------------------------------------------------
_DETAILS_HEAD = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'


def _details_rows(rows) -> str:
    out = [_DETAILS_HEAD]
    for kid, kernel, metric, unit, value in rows:
        out.append(f'"{kid}","143016","python.exe","127.0.0.1","{kernel}","1","7","(512, 1, 1)","(128, 1, 1)","0","8.9","Command line profiler metrics","{metric}","{unit}","{value}"')
    return "\n".join(out) + "\n"


def test_decimal_comma_locale_export(tmp_path):
    # ncu on a comma-decimal (e.g. German) Windows host: `.` groups thousands, `,` is the decimal
    # point. `117.344` ns is 117344 ns, not 117 ns; the file is recognised by `27.595.520`/`65,77`.
    p = tmp_path / "eu.csv"
    p.write_text("==PROF== Connected to Process 143016\n" + _details_rows([
        (0, "ampere_sgemm_128x64_nn", "gpu__time_duration.sum", "ns", "117.344"),
        (0, "ampere_sgemm_128x64_nn", "dram__bytes.sum", "byte", "27.595.520"),
        (0, "ampere_sgemm_128x64_nn", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "65,77"),
        (0, "ampere_sgemm_128x64_nn", "launch__grid_size", "", "512"),
        (1, "reduce_kernel", "gpu__time_duration.sum", "usecond", "1.014,912"),
    ]))
    prof = _one(p)
    k = prof.kernels.sort("kernel_id")
    assert k["duration_ns"].to_list() == [117344.0, pytest.approx(1014912.0)]
    assert k["dram_bytes"][0] == 27595520.0 and k["grid_size"][0] == 512
    m = prof.metrics.filter(pl.col("kernel_id") == 0)
    pct = m.filter(pl.col("metric").str.starts_with("sm__throughput")).row(0, named=True)
    assert pct["value"] == pytest.approx(65.77)
    dur = m.filter(pl.col("metric") == "gpu__time_duration.sum").row(0, named=True)
    assert (dur["value"], dur["value_int"]) == (117344.0, 117344)
    assert "decimal comma" in prof.metadata["number_format"]


def test_number_format_is_decided_by_unambiguous_cells():
    nf = ncu_common.number_format
    assert nf(["117.344", "24", "65,77"]) == "decimal_comma"
    assert nf(["27.595.520"]) == "decimal_comma" and nf(["1.234,5"]) == "decimal_comma"
    # ncu's default: thousands commas, decimal point; `1,024` and `117.344` alone decide nothing
    assert nf(["1,024", "117.344", "12"]) == "decimal_point"
    assert nf(["1,024", "65.77"]) == "decimal_point" and nf(["4,963,609,951.19"]) == "decimal_point"
    assert nf(["65,77", "12.5"]) == "decimal_point"  # a tie: the default
    assert nf(["65,77", "6,70", "27.595.520", "12.4"]) == "decimal_comma"  # a stray version-like string
    assert ncu_common.parse_number("117.344", decimal_comma=True) == 117344.0
    assert ncu_common.parse_number("1.234,5", decimal_comma=True) == 1234.5
    assert ncu_common.parse_number("1,234.5", decimal_comma=True) is None


def test_english_thousands_file_is_not_taken_for_decimal_comma(tmp_path):
    p = tmp_path / "en.csv"
    p.write_text(_details_rows([
        (0, "k", "gpu__time_duration.sum", "ns", "117.344"),
        (0, "k", "l1tex__t_sectors.sum", "sector", "1,024"),
        (0, "k", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "42.50"),
    ]))
    prof = _one(p)
    assert prof.kernels["duration_ns"][0] == pytest.approx(117.344)
    assert prof.kernels["l1_bytes"][0] == 1024 * 32
    assert prof.metadata.get("number_format") is None


_NVTX_PP = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
_NVTX_SE = "Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"


def test_nvtx_columns_are_launch_facts_not_metrics(tmp_path):
    rows = [
        ["ID", "Process ID", "Process Name", "Host Name", _NVTX_PP, _NVTX_SE, "Kernel Name", "Block Size", "Grid Size", "gpu__time_duration.sum", "dram__bytes.sum"],
        ["", "", "", "", "", "", "", "", "", "us", "Mbyte"],
        ["0", "39", "python", "h", '183740  "<default domain>:step:none:none:none:none:none:none"  "<default domain>:attn 64x32:v=2:none:none:none:none:none:none" ', "", "flash_fwd", "(128, 1, 1)", "(64, 1, 1)", "1,234.50", "12.5"],
        ["1", "39", "python", "h", "", '7  "<default domain>:warmup:none:none:none:none:none:none"', "copy", "(128, 1, 1)", "(64, 1, 1)", "3.25", "1.5"],
        ["2", "39", "python", "h", "", "", "copy", "(128, 1, 1)", "(64, 1, 1)", "3.5", "1.5"],
    ]
    p = tmp_path / "nvtx_raw.csv"
    with open(p, "w", newline="") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL).writerows(rows)
    prof = _one(p)
    assert prof.metadata["csv_page"] == "raw"
    k = prof.kernels.sort("kernel_id")
    assert k["nvtx_range"].to_list() == ["attn 64x32:v=2", "warmup", None]
    assert k["duration_ns"].to_list() == [pytest.approx(1234500.0), 3250.0, 3500.0]
    assert set(prof.metrics["metric"].unique()) == {"gpu__time_duration.sum", "dram__bytes.sum"}

    head = _DETAILS_HEAD.replace('"Host Name",', f'"Host Name","{_NVTX_PP}",')
    det = tmp_path / "nvtx_details.csv"
    det.write_text(head + "\n" + '"0","1","app","h","1  ""<default domain>:outer:none:none:none:none:none:none""  ""<default domain>:inner:none:none:none:none:none:none"" ","k","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","ns","1,000"\n')
    prof = _one(det)
    assert prof.kernels["nvtx_range"].to_list() == ["inner"] and prof.kernels["duration_ns"][0] == 1000.0


def test_print_summary_export_is_named_not_misread(tmp_path):
    p = tmp_path / "summary.csv"
    p.write_text(
        '"Process ID","Process Name","Host Name","Kernel Name","Block Size","Grid Size","Device","CC","Invocations","Section Name","Metric Name","Metric Unit","Minimum","Maximum","Average"\n'
        '"109199","bench","127.0.0.1","saxpy(float, const float *, float *, unsigned long)","(256, 1, 1)","(4096, 1, 1)","0","11.0","14","GPU Speed Of Light Throughput","Duration","us","10.50","12.00","11.00"\n'
    )
    assert find_parser(p).name == "ncu-csv"
    assert_one_line_error(run_cli("kernels", p), "--print-summary")


def test_ncu_text_output_is_named_not_refused_as_unknown(tmp_path):
    p = tmp_path / "ncu.log"
    p.write_text(
        "==PROF== Disconnected from process 7377\n[7377] matmul@127.0.0.1\n"
        "  matmul(const float *, float *) (188, 250, 1)x(16, 16, 1), Context 1, Stream 7, Device 0, CC 8.6\n"
        "    Section: GPU Speed Of Light Throughput\n"
        "    ----------------------- ----------- ------------\n"
        "    Metric Name             Metric Unit Metric Value\n"
        "    ----------------------- ----------- ------------\n"
        "    Duration                         ms         1.02\n"
    )
    assert find_parser(p).name == "ncu-csv"
    assert_one_line_error(run_cli("kernels", p), "text output, not CSV")


def test_utf16_export_from_windows_powershell(tmp_path):
    p = tmp_path / "ps.csv"
    p.write_bytes(b"\xff\xfe" + _RAW.replace("\n", "\r\n").encode("utf-16-le"))
    assert find_parser(p).name == "ncu-csv"
    k = _one(p).kernels.sort("kernel_id")
    assert k["duration_ns"].to_list() == [3250.0, 500.0] and k["dram_read_bytes"][0] == pytest.approx(1.5e6)


def test_2019_memory_frequency_label(tmp_path):
    p = tmp_path / "old.csv"
    p.write_text(
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream","Section Name","Metric Name","Metric Unit","Metric Value"\n'
        '"0","21524","cfd_000","127.0.0.1","cuda_compute_step_factor","2020-Apr-07 17:01:05","1","7","GPU Speed Of Light","Memory Frequency","cycle/second","772,656,250"\n'
        '"0","21524","cfd_000","127.0.0.1","cuda_compute_step_factor","2020-Apr-07 17:01:05","1","7","GPU Speed Of Light","Duration","nsecond","9,344"\n'
    )
    r = _one(p).kernels.row(0, named=True)
    assert r["mem_clock_hz"] == 772656250.0 and r["duration_ns"] == 9344.0


def test_a_script_listing_metric_names_is_not_an_ncu_csv(tmp_path):
    from profaudit.parsers import find_parser

    p = tmp_path / "check.py"
    p.write_text('import x\nkeys = ["gpu__time_duration.sum","dram__bytes_read.sum","dram__bytes_write.sum","lts__t_bytes.sum"]\nprint(keys)\n')
    assert find_parser(p) is None or find_parser(p).name != "ncu-csv"
