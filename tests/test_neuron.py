"""AWS Neuron readers.

No public Neuron Explorer Parquet profile or neuron-profile JSON export exists in the corpus, so the
Parquet and JSON tests build their inputs here, following the documented schema (aws-neuron-sdk
`tools/neuron-explorer/profile-schema-reference.rst`, schema 7.4.0; the JSON shapes of
`archive/profiler/neuron-profile-user-guide.rst` and `neuron-profiler-2-0-beta-user-guide.rst`),
and cross-check every number against a plain pyarrow / json read of the same files. The `.ntff`
tests use the real corpus traces for the missing-NEFF and missing-tool messages; the conversion
through AWS's tool runs only where `neuron-explorer`/`neuron-profile` is installed, and its
plumbing is tested with a stand-in executable.
"""

from __future__ import annotations

import json
import shutil
import stat
import sys
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import profaudit
from profaudit.errors import InputError
from profaudit.parsers.neuron_common import capture_evidence, device_from_instance_type, engine_category, hlo_short
from profaudit.parsers.neuron_ntff import neff_candidates
from tests.conftest import assert_one_line_error, corpus_files, corpus_ids

NTFFS = corpus_files("neuron", "*.ntff")


def _write(d: Path, name: str, rows: dict) -> None:
    pq.write_table(pa.table(rows), d / f"{name}.parquet")


def make_explorer_profile(d: Path, *, split_instructions: bool = False) -> Path:
    """A small Trn2 profile in Neuron Explorer's Parquet layout (documented field names and units)."""
    d.mkdir(parents=True, exist_ok=True)
    ins = {
        "start_ts": [1000, 1100, 1300, 2000],
        "end_ts": [1100, 1250, 1400, 2600],
        "duration_ns": [100, 150, 100, 600],
        "engine": ["tensor", "vector", "scalar", "tensor"],
        "timeline_track": ["TensorMatrix", "Vector", "Scalar", "TensorMatrix"],
        "pcore_idx": [0, 0, 0, 0],
        "opcode": ["MATMUL", "TENSOR_TENSOR", "ACTIVATE", "MATMUL"],
        "operands": ["a", "b", "c", "d"],
        "id": [1, 2, 3, 4],
        "pc": [10, 11, 12, 13],
        "bir_id": ["sg0000:1", "sg0000:2", "sg0000:3", "sg0000:4"],
        "hlo_name": ["dot.1", None, "%tanh.3 = tanh(%dot.1)", "dot.1"],
        "hbm_read_bytes": [4096, None, None, 8192],
        "hbm_write_bytes": [None, 2048, None, 1024],
        "raw_flops": [2 * 128 * 128 * 512, None, None, 2 * 128 * 128 * 512],
        "adjusted_flops": [2 * 128 * 128 * 512, None, None, 4 * 128 * 128 * 512],
        "sbuf_read_bytes": [100, 200, None, 300],
        "evt_wait_time_ns": [5, None, 7, None],
    }
    if split_instructions:
        half = {k: v[:2] for k, v in ins.items()}
        rest = {k: v[2:] for k, v in ins.items()}
        _write(d, "Instruction_0", half)
        _write(d, "Instruction_1", rest)
    else:
        _write(d, "Instruction", ins)
    _write(d, "DmaPacket", {
        "start_ts": [900, 1500], "end_ts": [1000, 1700], "duration_ns": [100, 200], "id": [1, 2], "packet_idx": [0, 0],
        "packet_aggregation_id": [1, 2], "read_bytes": [4096, 1024], "write_bytes": [4096, 1024], "transfer_bytes": [4096, 1024],
        "throughput": [4.096e10, 5.12e9], "queue_type": ["input", "output"], "queue_name": ["qIn0", "qOut0"], "queue_idx": [0, 3], "crc": [1, 2],
    })
    _write(d, "HbmUsage", {"timestamp": [1000, 2000, 3000], "current_throughput": [1.0e11, 2.0e11, 0.0], "total_transfer_bytes": [100, 300, 300]})
    _write(d, "Throttle", {"duration": [500], "k": [3], "n": [4], "timestamp": [1500], "type": ["activity_0"]})
    _write(d, "Summary", {
        "total_time": [0.0000016], "neuroncore_cycle_count": [1920], "model_flops": [33554432], "hardware_flops": [33554432],
        "hbm_read_bytes": [12288], "hbm_write_bytes": [3072], "mfu_estimated_percent": [12.5], "mbu_estimated_percent": [3.25],
        "event_count": [42], "tensor_engine_active_time": [0.0000007],
    })
    _write(d, "Metadata", {
        "profile_schema_version": ["7.4.0"], "ntff_version": [6], "num_physical_cores": [1], "vnc_enabled": [False],
        "first_hw_timestamp": [900], "last_hw_timestamp": [2600], "first_ts": ["2026-08-01 12:00:00+00:00"], "last_ts": ["2026-08-01 12:00:00+00:00"],
        "neuroncore_clock_freq": [1.2], "instance_type": ["trn2.48xlarge"], "runtime_version": ["2.27.1"], "driver_version": ["2.21.0"],
        "explorer_version": ["2.31.0"], "neuroncore_idx": [3], "neuron_device_idx": [0],
    })
    _write(d, "NeffHeader", {"network_name": ["graph.neff"], "hash": ["abc"], "neuroncore_count": [1]})
    _write(d, "ExecutionInfo", {"execution_index": [0], "neff_name": ["graph.neff"], "execution_start_ts": [900], "execution_end_ts": [2600]})
    _write(d, "Warning", {"message": ["Current NEFF is missing compiler metrics"], "category": ["Missing Data"]})
    return d


def test_explorer_parquet_profile(tmp_path):
    d = make_explorer_profile(tmp_path / "my-profile@latest")
    ps = profaudit.load(d)
    p = next(iter(ps))
    assert p.metadata["format"] == "neuron_parquet" and p.metadata["source"] == "neuron"
    k = p.kernels.sort("kernel_id")
    raw = pq.read_table(d / "Instruction.parquet").to_pylist()
    assert k.height == len(raw)
    assert k["name"].to_list() == [r["opcode"] for r in raw]
    assert k["category"].to_list() == ["tensor", "vector", "scalar", "tensor"]
    assert k["op_name"].to_list() == ["dot.1", "TENSOR_TENSOR", "tanh.3", "dot.1"]
    assert k["start_ns"].to_list() == [r["start_ts"] for r in raw] and k["duration_ns"].to_list() == [float(r["duration_ns"]) for r in raw]
    assert k["flops_total"].sum() == sum(r["raw_flops"] or 0 for r in raw)
    assert k["dram_read_bytes"].sum() == sum(r["hbm_read_bytes"] or 0 for r in raw)
    assert k["dram_bytes"].to_list() == [4096.0, 2048.0, None, 9216.0]
    assert set(k["dram_bytes_method"].drop_nulls()) == {"tool"}
    assert set(k["device_name"]) == {"Trainium2"} and set(k["device_id"]) == {3} and set(k["module"]) == {"graph.neff"}
    m = p.metrics
    adj = m.filter(pl.col("metric") == "adjusted_flops").join(k.select("kernel_id", "start_ns"), on="kernel_id").sort("start_ns")
    assert adj["value"].to_list() == [float(r["adjusted_flops"]) for r in raw if r["adjusted_flops"] is not None]
    t = p.transfers.sort("transfer_id")
    assert t["bytes"].to_list() == [4096.0, 1024.0] and t["direction"].to_list() == ["input", "output"] and t["kind"].to_list() == ["dma", "dma"]
    c = p.counters
    thr = c.filter(pl.col("counter") == "throttle_utilization_limit").row(0, named=True)
    assert thr["value"] == 0.75 and thr["raw_name"] == "Throttle.activity_0"
    assert c.filter(pl.col("counter") == "hbm_throughput_bytes_per_s")["value"].to_list() == [1.0e11, 2.0e11, 0.0]
    assert p.ranges.filter(pl.col("kind") == "throttle").height == 1
    md = p.metadata
    # Summary total_time is seconds; the event tables are ns
    assert md["neuron_total_time_s"] == 0.0000016 and md["neuron_total_time_ns"] == pytest.approx(1600.0)
    assert md["neuron_hbm_bytes"] == 12288 + 3072
    assert md["neuron_mfu_estimated_percent"] == 12.5 and md["neuron_mbu_estimated_percent"] == 3.25
    assert md["neuron_tensor_engine_active_time_s"] == 0.0000007
    assert md["neuroncore_clock_hz"] == 1.2e9
    assert md["device_name"] == "Trainium2" and md["tool"] == "neuron-explorer" and md["tool_version"] == "2.31.0"
    assert md["neuron_warnings"] == ["Missing Data: Current NEFF is missing compiler metrics"]
    assert md["capture_includes_first_execution"] is True and md["capture_includes_first_execution_origin"] == "default"
    assert md["neuron_executions_captured"] == 1


def test_split_tables_are_concatenated(tmp_path):
    d = make_explorer_profile(tmp_path / "p", split_instructions=True)
    p = next(iter(profaudit.load(d)))
    assert p.kernels.height == 4 and p.kernels["start_ns"].is_sorted()


def test_data_path_layout_found_by_walk(tmp_path):
    make_explorer_profile(tmp_path / "data" / "profiles" / "global" / "mlp@latest")
    ps = profaudit.load(tmp_path / "data")
    assert len(ps) == 1


def test_damaged_parquet_one_line(tmp_path, cli):
    d = make_explorer_profile(tmp_path / "p")
    (d / "DmaPacket.parquet").write_bytes(b"PAR1 not really")
    res = cli("kernels", str(d))
    assert_one_line_error(res, "unreadable Parquet table")
    assert "DmaPacket.parquet" in res.err


# ---------------------------------------------------------------------------------------------
# JSON


def _device_json() -> dict:
    return {
        "summary": [{"total_time": 0.017, "event_count": 11215, "nc_idx": 1, "nd_idx": 2, "hbm_read_bytes": 1000, "hbm_write_bytes": 24,
                     "mfu_estimated_percent": 40.0, "mbu_estimated_percent": 5.5}],
        "instruction": [
            {"timestamp": 10261883214, "duration": 148, "label": "TensorMatrix", "hlo_name": "%add.1 = add(%dot, %custom-call.44)",
             "opcode": "MATMUL", "operands": "S[5] (Tensor)++@complete acc_flags=3"},
            {"timestamp": 10261883400, "duration": 52, "label": "Vector", "hlo_name": "%add.1 = add(%dot, %custom-call.44)", "opcode": "TENSOR_TENSOR", "operands": "x"},
            {"timestamp": 10261883100, "duration": 20, "label": "GpSimd", "opcode": "IOTA", "operands": "y"},
        ],
        "dma": [{"timestamp": 10261883000, "duration": 100, "size": 4096, "queue_name": "qIn0"}],
    }


def test_neuron_profile_json(tmp_path):
    f = tmp_path / "profile.json"
    doc = _device_json()
    f.write_text(json.dumps(doc))
    p = next(iter(profaudit.load(f)))
    assert p.metadata["format"] == "neuron_json" and p.metadata["neuron_json_kind"] == "device_profile"
    k = p.kernels.sort("kernel_id")
    raw = sorted(json.loads(f.read_text())["instruction"], key=lambda r: r["timestamp"])
    assert k["start_ns"].to_list() == [r["timestamp"] for r in raw]
    assert k["end_ns"].to_list() == [r["timestamp"] + r["duration"] for r in raw]
    assert k["category"].to_list() == ["gpsimd", "tensor", "vector"]
    assert k["op_name"].to_list() == ["IOTA", "add.1", "add.1"]
    assert p.transfers["bytes"].to_list() == [4096.0]
    assert p.metadata["neuron_total_time_s"] == 0.017 and p.metadata["neuron_total_time_ns"] == pytest.approx(17_000_000)
    assert p.metadata["neuron_nc_idx"] == 1 and p.metadata["neuron_hbm_bytes"] == 1024
    assert p.metadata["capture_includes_first_execution"] is True


def test_summary_json_forms(tmp_path):
    s = {"total_time": 0.5, "event_count": 10, "nc_idx": 0, "mfu_estimated_percent": 1.0}
    for i, doc in enumerate((s, [s], {"summary": [s]})):
        f = tmp_path / f"s{i}.json"
        f.write_text(json.dumps(doc))
        p = next(iter(profaudit.load(f)))
        assert p.metadata["neuron_total_time_ns"] == 5e8 and p.kernels.height == 0


def test_system_profile_json(tmp_path):
    doc = {
        "trace_events": [
            {"Neuron_Runtime_API_Event": {"duration": 27094, "group": "nrt-nc-000", "id": 1, "instance_id": "i-0f2", "lnc_idx": "0",
                                          "name": "nrt_tensor_write", "parent_id": 0, "process_id": "1627711", "size": "4",
                                          "thread_id": 1627711, "timestamp": 1729888371056597613, "type": 11}},
            {"Framework_Event": {"duration": 3758079, "group": "framework-80375131", "instance_id": "i-0f2",
                                 "name": "PjitFunction(matmul_allgather)", "process_id": "701", "thread_id": 80375131,
                                 "timestamp": 1729888382798557372, "type": 99999}},
        ],
        "mem_usage": [{"duration": 1, "instance_id": "i-0f2", "percent_usage": 9.7, "timestamp": 1729888369286687792, "usage": 51805806592}],
        "cpu_util": [{"cpu_id": "47", "duration": 1, "instance_id": "i-0f2", "timestamp": 1729888371287337243, "util": 2.3255813}],
    }
    f = tmp_path / "system_profile.json"
    f.write_text(json.dumps(doc))
    p = next(iter(profaudit.load(f)))
    r = p.ranges.sort("start_ns")
    assert r["kind"].to_list() == ["neuron_runtime_api", "framework"]
    assert r["start_ns"].to_list() == [1729888371056597613, 1729888382798557372]  # epoch ns, exact
    assert r["duration_ns"].to_list() == [27094.0, 3758079.0]
    c = p.counters
    assert c.filter(pl.col("counter") == "host_memory_used_bytes")["value"].to_list() == [51805806592.0]
    assert c.filter(pl.col("counter") == "cpu_utilization_percent")["raw_name"].to_list() == ["cpu_util.cpu47"]
    assert p.metadata["host"] == "i-0f2"


def test_bad_json(tmp_path, cli):
    f = tmp_path / "profile.json"
    f.write_text(json.dumps(_device_json())[:-40])
    assert_one_line_error(cli("kernels", str(f)), "not valid JSON")


# ---------------------------------------------------------------------------------------------
# NTFF


def _no_tool(monkeypatch):
    monkeypatch.delenv("PROFAUDIT_NEURON_PROFILE", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")


@pytest.mark.corpus
@pytest.mark.parametrize("path", NTFFS, ids=corpus_ids(NTFFS))
def test_corpus_ntff_without_neff(path, cli, monkeypatch):
    _no_tool(monkeypatch)
    res = cli("kernels", str(path))
    assert_one_line_error(res, "only together with the NEFF")
    assert f"{path.stem}.neff" in res.err and "neuron-explorer view" in res.err


@pytest.mark.corpus
def test_corpus_ntff_with_neff_but_no_tool(tmp_path, cli, monkeypatch):
    if not NTFFS:
        pytest.skip("corpus absent")
    _no_tool(monkeypatch)
    ntff = tmp_path / NTFFS[0].name
    shutil.copy(NTFFS[0], ntff)
    (tmp_path / f"{ntff.stem}.neff").write_bytes(b"\0" * 64)
    res = cli("kernels", str(ntff))
    assert_one_line_error(res, "not installed")
    assert f"-n {ntff.stem}.neff -s {ntff.name}" in res.err


def test_neff_naming_conventions(tmp_path):
    h = tmp_path / "395760075800974_instid_0_vnc_0.ntff"
    assert neff_candidates(h)[0].name == "neff_395760075800974.neff"
    r = tmp_path / "profile_rank_5.ntff"
    assert [c.name for c in neff_candidates(r)][:3] == ["profile_rank_5.neff", "profile.neff", "file.neff"]
    assert capture_evidence("profile_exec_2.ntff", None)["capture_includes_first_execution"] is False


FAKE_TOOL = r'''#!{python}
import sys, pathlib
sys.path.insert(0, {tests!r})
args = sys.argv[1:]
if args[0] != "view" or "-n" not in args or "-s" not in args:
    sys.exit("usage error")
if "fail" in args[args.index("-s") + 1]:
    print("ERROR: NEFF does not match NTFF", file=sys.stderr); sys.exit(3)
out = pathlib.Path(args[args.index("--output-file") + 1])
from tests.test_neuron import make_explorer_profile
make_explorer_profile(out)
'''


def _fake_explorer(tmp_path: Path) -> Path:
    tool = tmp_path / "bin" / "neuron-explorer"
    tool.parent.mkdir()
    tool.write_text(FAKE_TOOL.format(python=sys.executable, tests=str(Path(__file__).resolve().parents[1])))
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return tool


def test_conversion_plumbing_with_stand_in_tool(tmp_path, monkeypatch):
    tool = _fake_explorer(tmp_path)
    monkeypatch.setenv("PROFAUDIT_NEURON_PROFILE", str(tool))
    ntff = tmp_path / "123_instid_0_vnc_0.ntff"
    ntff.write_bytes(b"\x05" + b"\0" * 63)
    (tmp_path / "neff_123.neff").write_bytes(b"\0" * 64)
    p = next(iter(profaudit.load(ntff)))
    assert p.metadata["format"] == "neuron_ntff" and p.metadata["path"] == str(ntff)
    assert p.metadata["neff_path"].endswith("neff_123.neff")
    assert p.kernels.height == 4 and p.profile_id.startswith("123_instid_0_vnc_0")
    bad = tmp_path / "fail.ntff"
    bad.write_bytes(b"\x05" + b"\0" * 63)
    (tmp_path / "fail.neff").write_bytes(b"\0")
    with pytest.raises(InputError, match=r"neuron-explorer failed \(exit 3\): ERROR: NEFF does not match NTFF"):
        profaudit.load(bad)


@pytest.mark.corpus
@pytest.mark.skipif(not (shutil.which("neuron-explorer") or shutil.which("neuron-profile")), reason="AWS neuron-explorer/neuron-profile not installed")
def test_real_tool_still_needs_the_neff(cli):
    """With the AWS tool installed, a corpus NTFF (shipped without its NEFF) names the NEFF it needs."""
    if not NTFFS:
        pytest.skip("corpus absent")
    res = cli("kernels", str(NTFFS[0]))
    assert_one_line_error(res, "only together with the NEFF")
    assert "then run" not in res.err


def test_empty_ntff(tmp_path, cli):
    f = tmp_path / "x.ntff"
    f.write_bytes(b"")
    assert_one_line_error(cli("kernels", str(f)), "empty")


def test_helpers():
    assert engine_category("TensorMatrix") == engine_category("TensorE") == "tensor"
    assert engine_category("Pool") == "gpsimd" and engine_category("SyncE") == "sync"
    assert device_from_instance_type("trn1.32xlarge") == "Trainium1"
    assert device_from_instance_type("inf2.xlarge") == "Inferentia2"
    assert device_from_instance_type("trn2u.48xlarge") == "Trainium2"
    assert hlo_short("%add.1 = add(%dot, %c)") == "add.1" and hlo_short("dot.3") == "dot.3"


def test_trainium_roofline_from_parquet_profile(tmp_path):
    from profaudit.roofline import roofline
    from profaudit.specs import match_device

    p = next(iter(profaudit.load(make_explorer_profile(tmp_path / "p"))))
    spec = match_device(p.metadata["device_name"])
    assert spec is not None and spec.key == "trainium2"
    cores = p.metadata["neuroncores_in_profile"]
    r = roofline(p.kernels, flops_precision="bf16_tensor", clock="boost", cores=cores).sort("kernel_id")
    one = spec.scaled_to_cores(cores)
    mm = r.filter(pl.col("name") == "MATMUL").row(0, named=True)
    k = p.kernels.filter(pl.col("name") == "MATMUL").sort("kernel_id").row(0, named=True)
    assert mm["device_key"].startswith("trainium2")
    assert mm["compute_roof_flops_per_s_at_boost"] == pytest.approx(one.peak_flops_per_s("bf16_tensor"))
    assert mm["achieved_flops_per_s"] == pytest.approx(k["flops_total"] / (k["duration_ns"] * 1e-9))
    # vector/scalar instructions carry no FLOPs: no compute roof, said so
    assert r.filter(pl.col("name") == "ACTIVATE")["roof_note"][0].startswith("no FLOP counts")
