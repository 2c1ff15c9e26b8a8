"""rocprofiler-compute (Omniperf) workload folders and measured ceilings: folders built here with the
columns both generations of the tool write (Omniperf 1.x rocprof-v1 names and the rocprofv3-era
names, pass-suffixed duplicate columns included), roofline.csv in the benchmark's own layout
(device column, Low/High bounds); every number checked against a plain csv read."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import polars as pl
import pytest

from conftest import assert_one_line_error
from profaudit.errors import InputError
from profaudit.loader import load
from profaudit.measured import measured_spec, read_roofline_csv
from profaudit.parsers import find_parser
from profaudit.roofline import ceilings, roofline
from profaudit.specs import get_spec

SYSINFO_V3 = {"workload_name": "vcopy", "command": "./vcopy -n 1048576", "hostname": "node-7", "cpu_model": "AMD EPYC 9654", "rocm_version": "6.2.0",
              "gpu_model": "MI300X_A1", "gpu_arch": "gfx942", "cu_per_gpu": "304", "max_sclk": "2100", "cur_sclk": "2100", "max_mclk": "1300"}
PMC_V3_HEAD = ["Dispatch_ID", "GPU_ID", "Grid_Size", "Workgroup_Size", "LDS_Per_Workgroup", "Scratch_Per_Workitem", "Arch_VGPR", "Accum_VGPR", "SGPR",
               "Wave_Size", "Kernel_Name", "Correlation_ID", "SQ_WAVES", "Wave_Size_1", "Correlation_ID_1", "XCC_Index", "TCC_HIT[0]", "TCC_HIT[1]",
               "TCC_EA0_RDREQ_sum", "SQ_INSTS_VALU_FMA_F32", "SQ_INSTS_VALU_ADD_F32", "SQ_INSTS_VALU_MUL_F32", "SQ_INSTS_VALU_TRANS_F32",
               "SQ_INSTS_VALU_MFMA_MOPS_F16", "SQ_INSTS_VALU_MFMA_MOPS_F32", "Start_Timestamp", "End_Timestamp"]
PMC_V3_ROWS = [
    [0, 60633, 1048576, 256, 1024, 0, 4, 4, 16, 64, "vecCopy(double*, double*, double*, int, int) (.kd)", 0, 16384, 64, 0, 0, 311, 290, 65536.0, 0, 0, 0, 0,
     0, 0, 1000, 17119],
    [1, 60633, 1000, 64, 0, 32, 8, 0, 24, 64, "_Z6reducePfi.kd", 1, 16, 64, 1, 0, 12, 9, 128.0, 4096, 1000, 500, 10, 300, 0, 20000, 33560],
]
COUNTERS = ("SQ_WAVES", "TCC_HIT[0]", "TCC_HIT[1]", "TCC_EA0_RDREQ_sum", "SQ_INSTS_VALU_FMA_F32", "SQ_INSTS_VALU_ADD_F32", "SQ_INSTS_VALU_MUL_F32",
            "SQ_INSTS_VALU_TRANS_F32", "SQ_INSTS_VALU_MFMA_MOPS_F16", "SQ_INSTS_VALU_MFMA_MOPS_F32")
# devID row, bandwidths GB/s, peaks GFLOP/s, with the benchmark's Low/High columns
ROOF_HEAD = ["device", "HBMBw", "HBMBwLow", "hbmBwHigh", "L2Bw", "L1Bw", "LDSBw", "FP32Flops", "FP64Flops", "MFMABF16Flops", "MFMAF16Flops",
             "MFMAF32Flops", "MFMAF64Flops", "MFMAI8Ops", "MFMAF8Flops"]
ROOF_ROW = [0, 4100.5, 4090.1, 4110.9, 14000.25, 25000.0, 60000.0, 81000.0, 80500.0, 650000.0, 640000.0, 160000.0, 161000.0, 1300000.0, 0]


def _write(path, head, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(head)
        w.writerows(rows)
    return path


def make_workload(root):
    """A rocprofv3-era workload folder under `root` (also a fuzz seed: tests/fuzz/harness.py)."""
    d = root / "workloads" / "vcopy" / "MI300X_A1"
    d.mkdir(parents=True)
    _write(d / "sysinfo.csv", list(SYSINFO_V3), [list(SYSINFO_V3.values())])
    _write(d / "pmc_perf.csv", PMC_V3_HEAD, PMC_V3_ROWS)
    _write(d / "roofline.csv", ROOF_HEAD, [ROOF_ROW])
    return d


@pytest.fixture
def workload(tmp_path):
    return make_workload(tmp_path)


def test_workload_kernels_and_counters_match_plain_csv(workload):
    assert find_parser(workload).name == "rocprof-compute"
    ps = load(workload.parent)  # the workload's own folder: its <arch> folder is found and read as one
    prof = next(iter(ps))
    k = ps.kernels.sort("kernel_id")
    rows = list(csv.DictReader(open(workload / "pmc_perf.csv")))
    for row, r in zip(k.iter_rows(named=True), rows):
        assert row["duration_ns"] == float(int(r["End_Timestamp"]) - int(r["Start_Timestamp"]))
        assert row["grid_size"] == math.ceil(int(r["Grid_Size"]) / int(r["Workgroup_Size"])) and row["block_size"] == int(r["Workgroup_Size"])
        assert row["registers_per_thread"] == int(r["Arch_VGPR"]) + int(r["Accum_VGPR"])
        assert (row["device_id"], row["correlation_id"]) == (int(r["GPU_ID"]), int(r["Correlation_ID"]))
    assert k["name"].to_list() == ["vecCopy(double*, double*, double*, int, int)", "reduce(float*, int)"]
    assert k["device_name"].unique().to_list() == ["MI300X_A1"]
    m = ps.metrics
    counters = m.filter(pl.col("kind") == "metric")
    want = sorted((i, h.split("[")[0], int(h.split("[")[1][:-1]) if "[" in h else None, float(r[h]))
                  for i, r in enumerate(rows) for h in COUNTERS)
    assert sorted(counters.select("kernel_id", "metric", "instance", "value").rows(), key=repr) == sorted(want, key=repr)
    # the pass-suffixed copies of dispatch columns and the XCC index are not counters
    assert not set(counters["metric"]) & {"Wave_Size_1", "Correlation_ID_1", "XCC_Index"}
    launch = dict(((kid, met), v) for kid, met, v in m.filter(pl.col("kind") == "launch").select("kernel_id", "metric", "value_int").iter_rows())
    assert launch[(0, "lds_per_workgroup")] == 1024 and launch[(1, "scratch_per_workitem")] == 32 and launch[(1, "sgpr_count")] == 24
    md = prof.metadata
    assert (md["host"], md["cuda_version"], md["gpu_arch"], md["workload"]) == ("node-7", "6.2.0", "gfx942", "vcopy")
    assert md["measured_ceilings"]["bandwidth_bytes_per_s"]["dram"] == 4100.5e9
    assert "counter-collection passes" in md["notes"][0]
    # FLOPs by the tool's conventions: 64 lanes per VALU instruction (FMA = 2), 512 per MFMA MOPS unit
    for row, r in zip(k.iter_rows(named=True), rows):
        f = lambda h: float(r[h])  # noqa: E731
        assert row["flops_fp32"] == 64 * (f("SQ_INSTS_VALU_ADD_F32") + f("SQ_INSTS_VALU_MUL_F32") + 2 * f("SQ_INSTS_VALU_FMA_F32") + f("SQ_INSTS_VALU_TRANS_F32"))
        assert row["flops_fp16_tensor"] == 512 * f("SQ_INSTS_VALU_MFMA_MOPS_F16") and row["flops_method"] == "rocprof-compute counters"
        assert row["dram_bytes"] is None  # gfx942's request sizes are not assumed
    assert k["flops_total"][1] == 64 * (500 + 10 + 2 * 4096 + 1000) + 512 * 300


def test_omniperf_1_columns(tmp_path):
    d = tmp_path / "mi200"
    d.mkdir()
    _write(d / "sysinfo.csv", ["workload_name", "host_name", "host_rocmver", "gpu_soc", "numCU", "sclk", "name"],
           [["Axes1", "box", "5.1.3", "gfx90a", "104", "1700", "mi200"]])
    byte_counters = ["TCC_EA_RDREQ_32B_sum", "TCC_EA_RDREQ_sum", "TCC_EA_WRREQ_64B_sum", "TCC_EA_WRREQ_sum", "TCP_TCC_READ_REQ_sum", "TCP_TCC_WRITE_REQ_sum",
                     "TCP_TCC_ATOMIC_WITH_RET_REQ_sum", "TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum", "TCP_TOTAL_CACHE_ACCESSES_sum"]
    _write(d / "pmc_perf.csv", ["Index", "KernelName", "gpu-id", "queue-id", "queue-index", "pid", "tid", "grd", "wgr", "lds", "scr", "vgpr", "sgpr",
                                "fbar", "sig", "obj", "SQ_WAVES", *byte_counters, "DispatchNs", "BeginNs", "EndNs", "CompleteNs"],
           [[0, "__amd_rocclr_fillBufferAligned.kd", 0, 0, 0, 201188, 201188, 33554432, 256, 0, 0, 4, 32, 4160, "0x0", "0x7fc054604280", 524288,
             # a copy of 1 Mi doubles: 8 MiB read in 64 B requests, 8 MiB written in 64 B requests
             0, 131072, 131072, 131072, 131072, 131072, 0, 0, 524288, 17232867893883, 17250653618423, 17250653858583, 17233014515566],
            [1, "void benchmark_func<short, 256, 8u, 0u>(short, short*) [clone .kd]", 0, 0, 2, 201188, 201188, 32768, 256, 0, 0, 12, 24, 13888, "0x0",
             "0x7fc054623f80", 512, 10, 20, 0, 6, 0, 0, 0, 0, 0, 17233020693309, 17250658698896, 17250658712016, 17233021176306]])
    ps = load(d)
    k = ps.kernels.sort("kernel_id")
    assert k["duration_ns"].to_list() == [17250653858583.0 - 17250653618423, 17250658712016.0 - 17250658698896]
    assert k["name"].to_list() == ["__amd_rocclr_fillBufferAligned", "void benchmark_func<short, 256, 8u, 0u>(short, short*)"]
    assert k["grid_size"].to_list() == [33554432 // 256, 32768 // 256] and k["process_id"].to_list() == [201188, 201188]
    c = ps.metrics.filter((pl.col("kind") == "metric") & (pl.col("metric") == "SQ_WAVES"))
    assert c.select("metric", "value").rows() == [("SQ_WAVES", 524288.0), ("SQ_WAVES", 512.0)]
    assert not set(ps.metrics["metric"]) & {"sig", "obj", "queue-index", "DispatchNs", "CompleteNs"}  # not counters
    # gfx90a bytes: 32 B and 64 B HBM requests, 64 B L1/L2 lines
    assert k["dram_bytes"].to_list() == [2 * 8 * 2**20, 10 * 32 + 10 * 64 + 6 * 32]
    assert k["l2_bytes"].to_list() == [2 * 8 * 2**20, 0.0] and k["l1_bytes"].to_list() == [32 * 2**20, 0.0]
    assert k["flops_fp32"].null_count() == 2  # the VALU counters were not collected: no FLOPs, not zero
    md = next(iter(ps)).metadata
    assert md["device_name"] == "mi200" and md["max_sclk_mhz"] == 1700.0 and md.get("measured_ceilings") is None


def test_roofline_csv_read_in_giga_units(workload):
    m = read_roofline_csv(workload / "roofline.csv")
    row = dict(zip(ROOF_HEAD, ROOF_ROW))
    assert m.bandwidths_bytes_per_s == {"dram": row["HBMBw"] * 1e9, "l2": row["L2Bw"] * 1e9, "l1": row["L1Bw"] * 1e9, "lds": row["LDSBw"] * 1e9}
    assert m.peaks_flops_per_s == {"fp32": 81000e9, "fp64": 80500e9, "bf16_tensor": 650000e9, "fp16_tensor": 640000e9, "fp64_tensor": 161000e9,
                                   "int8_tensor": 1300000e9}  # the 0 for FP8 (not run on this GPU) is no ceiling
    assert m.other == {"MFMAF32Flops": 160000.0} and m.device_index == "0"
    assert read_roofline_csv(workload).path == m.path  # the workload folder finds its roofline.csv


def test_a_roofline_csv_past_a_mebibyte_is_refused_from_its_size(workload, cli):
    # fuzz_long seed 2031, rocprof-compute #1044: one device row repeated 1.9 M times (200 MB) read
    # as one device after peaking at 3.1 GB; refused now before it is read. 2,000 rows of distinct
    # GPUs (far beyond any node) stay under the cap and are read as before
    from profaudit.measured import MAX_ROOFLINE_CSV_BYTES

    rows = [[str(i), *ROOF_ROW[1:]] for i in range(2000)]
    _write(workload / "roofline.csv", ROOF_HEAD, rows)
    assert (workload / "roofline.csv").stat().st_size < MAX_ROOFLINE_CSV_BYTES
    assert read_roofline_csv(workload, device=1999).device_index == "1999"
    line = ",".join(map(str, ROOF_ROW)) + "\n"
    with open(workload / "roofline.csv", "a") as f:
        f.write(line * (MAX_ROOFLINE_CSV_BYTES // len(line) + 1))
    with pytest.raises(InputError, match=r"roofline.csv of 1\.\d MiB: the roofline benchmark writes one row per GPU"):
        read_roofline_csv(workload)
    assert_one_line_error(cli("summary", workload), "roofline.csv of 1.")
    # a device has no size to check: the read itself is bounded (before, /dev/zero was read for ever)
    if Path("/dev/zero").exists():
        with pytest.raises(InputError, match="refused over 1 MiB"):
            read_roofline_csv("/dev/zero")


def test_measured_ceilings_in_the_roofline(workload):
    base = get_spec("mi300x")
    spec = measured_spec(read_roofline_csv(workload), base)
    assert spec.key == "mi300x@measured" and spec.name.endswith("(measured ceilings)")
    c = ceilings(spec)
    dram = c.filter(pl.col("ceiling") == "dram").row(0, named=True)
    assert dram["bytes_per_s"] == 4100.5e9 and dram["source"].startswith("measured: rocprofiler-compute roofline benchmark")
    # only what was measured: FP8 (0 in the file) and the vector FP16 the benchmark did not run have
    # no roof here, though the datasheet has one; every roof shown is a measured one
    assert base.peak_flops_per_s("fp8_tensor") and "fp8_tensor" not in c["ceiling"].to_list() and "fp16" not in c["ceiling"].to_list()
    assert c["source"].str.starts_with("measured: ").all() and c["clock_hz"].null_count() == c.height
    k = pl.DataFrame({"profile_id": ["p"], "kernel_id": [0], "name": ["saxpy"], "short_name": ["saxpy"], "device_name": ["AMD Instinct MI300X"],
                      "duration_ns": [1e6], "flops_fp32": [2e9], "dram_bytes": [3e9]})
    measured = roofline(k, spec, clock="boost").row(0, named=True)
    datasheet = roofline(k, "mi300x", clock="boost").row(0, named=True)
    assert measured["device_key"] == "mi300x@measured" and datasheet["device_key"] == "mi300x"
    # DRAM-bound either way: % of roof = bytes / bandwidth / duration
    assert measured["roof_pct_at_boost"] == pytest.approx(100 * 3e9 / 4100.5e9 / 1e-3)
    assert datasheet["roof_pct_at_boost"] == pytest.approx(100 * 3e9 / base.bandwidth_bytes_per_s("dram") / 1e-3)


def test_roofline_cli_with_measured_ceilings(workload, cli):
    res = cli("roofline", workload, "--ceilings", workload, "--clock", "boost", "--format", "csv", "--columns", "device_key,roof_note")
    assert res.code == 0, res
    assert "mi300x@measured" in res.out


@pytest.mark.parametrize("text, needle", [
    ("", "empty roofline.csv"),
    ("device,HBMBw,L2Bw\n", "no device rows"),
    ("device,HBMBw,L2Bw\n0,1388.7", "2 cells for 3 columns"),
    ("device,HBMBw,L2Bw\n0,fast,5000\n", "'fast' is not a number"),
    ("device,HBMBw,L2Bw\n0,1388.7,5016.1\n1,1290.2,4990.0\n", "2 devices (0, 1) with different results"),
    ("kernel,duration\nadd,5\n", "not a rocprofiler-compute roofline.csv"),
])
def test_bad_roofline_csv(tmp_path, text, needle):
    p = tmp_path / "roofline.csv"
    p.write_text(text)
    with pytest.raises(InputError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        read_roofline_csv(p)


def test_bad_workload_folders_fail_in_one_line(workload, cli):
    (workload / "pmc_perf.csv").write_text(",".join(PMC_V3_HEAD) + "\n")
    assert_one_line_error(cli("kernels", workload), "header but no dispatches")
    _write(workload / "pmc_perf.csv", PMC_V3_HEAD, [PMC_V3_ROWS[0][:-1] + ["soon"]])
    assert_one_line_error(cli("kernels", workload), "'soon' is not an integer")
    _write(workload / "pmc_perf.csv", PMC_V3_HEAD, [PMC_V3_ROWS[0][:12] + ["many"] + PMC_V3_ROWS[0][13:]])
    assert_one_line_error(cli("kernels", workload), "counter SQ_WAVES, dispatch row 1: 'many' is not a number")
    _write(workload / "pmc_perf.csv", ["Index", "Name"], [[0, "k"]])
    assert_one_line_error(cli("kernels", workload), "not a rocprofiler-compute pmc_perf.csv")
    _write(workload / "pmc_perf.csv", PMC_V3_HEAD, PMC_V3_ROWS)
    (workload / "roofline.csv").write_text("device,HBMBw\n0,")
    assert_one_line_error(cli("kernels", workload), "roofline.csv")


def test_cut_pmc_perf_is_marked_incomplete(workload):
    p = workload / "pmc_perf.csv"
    p.write_bytes(p.read_bytes().rstrip(b"\r\n")[:-2])
    prof = next(iter(load(workload)))
    assert prof.metadata["complete"] is False and prof.metadata["incomplete_reason"].startswith("pmc_perf.csv: the last line has no line end")


def test_workload_kernels_on_their_measured_roofline(tmp_path):
    from profaudit.measured import measured_device

    d = tmp_path / "MI200"
    d.mkdir()
    _write(d / "sysinfo.csv", ["workload_name", "hostname", "gpu_arch", "gpu_model"], [["vcopy", "box", "gfx90a", "MI200"]])
    valu = [f"SQ_INSTS_VALU_{op}_F64" for op in ("ADD", "MUL", "FMA", "TRANS")]
    byte_counters = ["TCC_EA_RDREQ_32B_sum", "TCC_EA_RDREQ_sum", "TCC_EA_WRREQ_64B_sum", "TCC_EA_WRREQ_sum", "TCP_TCC_READ_REQ_sum", "TCP_TCC_WRITE_REQ_sum",
                     "TCP_TCC_ATOMIC_WITH_RET_REQ_sum", "TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum", "TCP_TOTAL_CACHE_ACCESSES_sum"]
    # a vector copy of 1 Mi doubles in 20.64 us (the counts of a real MI200 vcopy run)
    _write(d / "pmc_perf.csv", ["Dispatch_ID", "Kernel_Name", "GPU_ID", "Grid_Size", "Workgroup_Size", *valu, *byte_counters, "Start_Timestamp", "End_Timestamp"],
           [[0, "vecCopy(double*, double*, double*, int, int) (.kd)", 2, 1048576, 256, 0, 0, 0, 0, 8, 131080, 131072, 131072, 131072, 131072, 0, 0, 524288,
             1000, 21640]])
    _write(d / "roofline.csv", ["device", "HBMBw", "L2Bw", "L1Bw", "FP64Flops"], [[0, 1388.7948, 5016.1738, 9226.4229, 20272.682]])
    ps = load(d)
    k = ps.kernels.row(0, named=True)
    assert (k["flops_fp64"], k["dram_bytes"]) == (0.0, 8 * 32 + 131072 * 64 + 131072 * 64)
    r = roofline(ps, measured_device(ps, d, "mi250x"), clock="boost").row(0, named=True)
    assert r["device_key"] == "mi250x@measured" and r["bound_at_boost"] == "dram"
    assert r["roof_pct_at_boost"] == pytest.approx(100 * k["dram_bytes"] / 1388.7948e9 / 20640e-9, rel=1e-12)


def test_measured_ceilings_belong_to_one_device(workload):
    from profaudit.errors import UsageError
    from profaudit.measured import measured_device
    from profaudit.profile import Profile, ProfileSet

    k = pl.DataFrame({"kernel_id": [0, 1], "name": ["a", "b"], "device_name": ["AMD Instinct MI300X", "NVIDIA H100 80GB HBM3"], "duration_ns": [1.0, 1.0]})
    ps = ProfileSet([Profile("p", {"source": "test", "format": "test"}, {"kernels": k})])
    with pytest.raises(UsageError, match="measured ceilings belong to one: pass --device"):
        measured_device(ps, workload)
    assert measured_device(ps, workload, "mi300x").key == "mi300x@measured"
