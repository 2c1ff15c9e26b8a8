"""rocprofv3 --output-format csv: files built here with the columns rocprofiler-sdk writes (quoted
headers, "Agent N" ids, agent_info.csv beside them); every number checked against a plain csv read."""

from __future__ import annotations

import csv
import math

import polars as pl
import pytest

from conftest import assert_one_line_error
from profaudit.loader import load
from profaudit.parsers import find_parser

KERNEL_COLS = ["Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id", "Kernel_Name", "Correlation_Id", "Start_Timestamp",
               "End_Timestamp", "LDS_Block_Size", "Scratch_Size", "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count", "Workgroup_Size_X", "Workgroup_Size_Y",
               "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z"]
API_COLS = ["Domain", "Function", "Process_Id", "Thread_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp"]
COPY_COLS = ["Kind", "Direction", "Stream_Id", "Source_Agent_Id", "Destination_Agent_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp"]
COUNTER_COLS = ["Correlation_Id", "Dispatch_Id", "Agent_Id", "Queue_Id", "Process_Id", "Thread_Id", "Grid_Size", "Kernel_Id", "Kernel_Name", "Workgroup_Size",
                "LDS_Block_Size", "Scratch_Size", "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count", "Counter_Name", "Counter_Value", "Start_Timestamp", "End_Timestamp"]


def _write(path, cols, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, quoting=csv.QUOTE_NONNUMERIC)
        w.writerow(cols)
        w.writerows(rows)
    return path


@pytest.fixture
def out(tmp_path):
    return make_output(tmp_path)


def make_output(root):
    """A rocprofv3 --output-format csv folder under `root` (also a fuzz seed: tests/fuzz/harness.py)."""
    d = root / "host" / "4242"
    d.mkdir(parents=True)
    _write(d / "4242_agent_info.csv", ["Node_Id", "Logical_Node_Id", "Agent_Type", "Cu_Count", "Name", "Vendor_Name", "Product_Name", "Model_Name"],
           [[0, 0, "CPU", 0, "AMD EPYC 9654", "CPU", "AMD EPYC 9654", ""], [2, 1, "GPU", 304, "gfx942", "AMD", "AMD Instinct MI300X", "MI300X"],
            [3, 2, "GPU", 304, "gfx942", "AMD", "AMD Instinct MI300X", "MI300X"]])
    _write(d / "4242_kernel_trace.csv", KERNEL_COLS, [
        ["KERNEL_DISPATCH", "Agent 2", 1, 0, 9, 1, 3, "add(float*, float*)", 6, 400, 650, 1536, 0, 12, 4, 24, 256, 1, 1, 1000, 2, 1],
        ["KERNEL_DISPATCH", "Agent 3", 2, 0, 9, 2, 4, "_Z6reducePf.kd", 11, 1400, 1900, 0, 64, 32, 0, 40, 64, 1, 1, 4096, 1, 1],
    ])
    _write(d / "4242_marker_api_trace.csv", API_COLS, [["MARKER_CORE_RANGE_API", "my-region", 4242, 9, 5, 100, 1000]])
    _write(d / "4242_hip_api_trace.csv", API_COLS, [["HIP_RUNTIME_API_EXT", "hipLaunchKernel", 4242, 9, 6, 200, 300],
                                                    ["HIP_RUNTIME_API_EXT", "hipModuleLaunchKernel", 4242, 9, 11, 1100, 1150]])
    _write(d / "4242_memory_copy_trace.csv", COPY_COLS, [["MEMORY_COPY", "MEMORY_COPY_HOST_TO_DEVICE", 0, "Agent 0", "Agent 2", 7, 700, 900],
                                                          ["MEMORY_COPY", "MEMORY_COPY_DEVICE_TO_HOST", 0, "Agent 3", "Agent 0", 12, 2000, 2600]])
    _write(d / "4242_counter_collection.csv", COUNTER_COLS, [
        [6, 1, "Agent 2", 1, 4242, 9, 2000, 3, "add(float*, float*)", 256, 1536, 0, 12, 4, 24, "SQ_WAVES", 8, 400, 650],
        [6, 1, "Agent 2", 1, 4242, 9, 2000, 3, "add(float*, float*)", 256, 1536, 0, 12, 4, 24, "GRBM_GUI_ACTIVE", 5120, 400, 650],
        [11, 2, "Agent 3", 2, 4242, 9, 4096, 4, "_Z6reducePf.kd", 64, 0, 64, 32, 0, 40, "SQ_WAVES", 64, 1400, 1900],
    ])
    return d


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_kernel_trace_matches_plain_csv(out):
    p = out / "4242_kernel_trace.csv"
    assert find_parser(p).name == "rocprofv3-csv"
    ps = load(p)
    k = ps.kernels.sort("kernel_id")
    for row, r in zip(k.iter_rows(named=True), _rows(p)):
        s, e = int(r["Start_Timestamp"]), int(r["End_Timestamp"])
        assert (row["start_ns"], row["end_ns"], row["duration_ns"], row["correlation_id"]) == (s, e, float(e - s), int(r["Correlation_Id"]))
        for a in "XYZ":
            assert row[f"grid_{a.lower()}"] == math.ceil(int(r[f"Grid_Size_{a}"]) / int(r[f"Workgroup_Size_{a}"]))
            assert row[f"block_{a.lower()}"] == int(r[f"Workgroup_Size_{a}"])
        assert row["registers_per_thread"] == int(r["VGPR_Count"]) + int(r["Accum_VGPR_Count"])
        assert row["device_id"] == int(r["Agent_Id"].split()[-1]) and row["stream"] == int(r["Queue_Id"])
        assert row["shared_mem_bytes"] is None  # LDS_Block_Size is an allocation, not the dispatch's LDS
    assert k["name"].to_list() == ["add(float*, float*)", "reduce(float*)"] and k["mangled_name"].to_list() == [None, "_Z6reducePf"]
    assert k["device_name"].to_list() == ["AMD Instinct MI300X"] * 2
    assert k["nvtx_range"].to_list() == ["my-region", None]  # from the marker and HIP traces beside it
    m = ps.metrics
    got = {(kid, met): v for kid, met, v in m.select("kernel_id", "metric", "value_int").iter_rows()}
    assert got[(0, "lds_block_size")] == 1536 and got[(1, "private_segment_size")] == 64 and got[(1, "sgpr_count")] == 40 and got[(1, "dispatch_id")] == 2


def test_api_copy_and_counter_files(out):
    r = load(out / "4242_hip_api_trace.csv").ranges.sort("start_ns")
    assert r.select("name", "start_ns", "end_ns", "correlation_id", "process_id", "thread_id").rows() == [
        ("hipLaunchKernel", 200, 300, 6, 4242, 9), ("hipModuleLaunchKernel", 1100, 1150, 11, 4242, 9)]
    assert r["kind"].unique().to_list() == ["cuda_runtime"]
    mk = load(out / "4242_marker_api_trace.csv").ranges
    assert mk.select("kind", "name", "duration_ns").rows() == [("user_annotation", "my-region", 900.0)]
    t = load(out / "4242_memory_copy_trace.csv").transfers.sort("start_ns")
    assert t.select("direction", "src_kind", "dst_kind", "device_id", "duration_ns", "correlation_id").rows() == [
        ("HtoD", "host", "device", 2, 200.0, 7), ("DtoH", "device", "host", 3, 600.0, 12)]
    assert t["bytes"].null_count() == 2  # the CSV records no byte count
    ps = load(out / "4242_counter_collection.csv")
    k = ps.kernels.sort("kernel_id")
    assert k.select("name", "grid_size", "block_size", "duration_ns", "registers_per_thread").rows() == [
        ("add(float*, float*)", 8, 256, 250.0, 16), ("reduce(float*)", 64, 64, 500.0, 32)]
    want = [(0 if r["Dispatch_Id"] == "1" else 1, r["Counter_Name"], float(r["Counter_Value"])) for r in _rows(out / "4242_counter_collection.csv")]
    assert sorted(ps.metrics.select("kernel_id", "metric", "value").rows()) == sorted(want)


def test_folder_loads_each_file_once(out, cli):
    assert find_parser(out).name == "rocprofv3-csv-dir"
    _write(out / "4242_kernel_stats.csv", ["Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage", "MinNs", "MaxNs", "StdDev"],
           [["add(float*, float*)", 1, 250, 250.0, 33.3, 250, 250, 0.0]])
    res = cli("kernels", out)
    assert res.code == 0 and "warning" not in res.err, res  # agent_info.csv serves the traces; the stats summarise them
    ps = load(out)
    assert ps.kernels.height == 4 and ps.transfers.height == 2  # kernel trace + counter collection; two copies
    assert ps.ranges.height == 3 and ps.ranges["name"].to_list().count("hipLaunchKernel") == 1


@pytest.mark.parametrize("text, needle", [
    ('"Kind","Agent_Id","Queue_Id","Kernel_Name","Correlation_Id","Start_Timestamp","End_Timestamp","Grid_Size_X","Workgroup_Size_X"\n', "header but no rows"),
    ('"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"\n"HIP_RUNTIME_API","hipMalloc",1,2,3,fast,5\n', "'fast' is not an integer"),
    ('"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"\n"HIP_RUNTIME_API","hipMalloc",1,2,3,4,5,6,7\n', "not a readable rocprofv3 CSV"),
])
def test_bad_rocprofv3_csv_fails_in_one_line(tmp_path, cli, text, needle):
    p = tmp_path / "1_hip_api_trace.csv"
    p.write_text(text)
    assert_one_line_error(cli("kernels", "-t", "ranges", p), needle)


def test_cut_last_line_is_marked_incomplete(out):
    p = out / "4242_kernel_trace.csv"
    p.write_bytes(p.read_bytes().rstrip(b"\r\n")[:-3])  # the last row's Grid_Size_Z cut inside the number
    prof = next(iter(load(p)))
    assert prof.metadata["complete"] is False and "cut short" in prof.metadata["incomplete_reason"]


def test_missing_grid_columns_fail_in_one_line(out, cli):
    p = out / "4242_kernel_trace.csv"
    p.write_text(p.read_text().replace('"Grid_Size_Z"', '"nan"', 1))
    assert_one_line_error(cli("kernels", p), "without its Grid_Size_Z column")


def test_rocpd_convert_spelling(tmp_path):
    # `rocpd convert -f csv` adds a Guid column and spells some counts in another case
    head = ["Guid"] + [{"LDS_Block_Size": "Lds_Block_Size", "VGPR_Count": "Vgpr_Count", "Accum_VGPR_Count": "Accum_Vgpr_Count",
                        "SGPR_Count": "Sgpr_Count"}.get(c, c) for c in KERNEL_COLS]
    p = _write(tmp_path / "out_kernel_trace.csv", head, [["00006409-00d1", "KERNEL_DISPATCH", "Agent 4", 1, 0, 714789, 1, 3, "__omp_offloading_30_57b9f_l23", 1,
                                                         1678314002982197, 1678314003082277, 8456, 0, 16, 0, 32, 256, 1, 1, 233472, 1, 1]])
    assert find_parser(p).name == "rocprofv3-csv"
    ps = load(p)
    k = ps.kernels.row(0, named=True)
    assert (k["duration_ns"], k["grid_x"], k["registers_per_thread"], k["device_id"]) == (100080.0, 912, 16, 4)
    assert dict(ps.metrics.select("metric", "value_int").iter_rows())["lds_block_size"] == 8456
