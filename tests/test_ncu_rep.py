"""Nsight Compute reports: every corpus report loads and agrees, value for value, with an
independent read through ncu_report's public API; session facts, FLOPs, bad input, CLI."""

from __future__ import annotations

import json
import math
import os
import struct
from pathlib import Path

import polars as pl
import pytest

import profaudit
from profaudit import schema
from profaudit.errors import InputError
from profaudit.parsers import ncu_rep
from tests.conftest import assert_one_line_error, corpus_dir, corpus_files, corpus_ids, run_cli

ncu_report = pytest.importorskip("ncu_report")

REPORTS = corpus_files("ncu-rep")


def _one(path) -> profaudit.Profile:
    ps = profaudit.load(path, parallel=False)
    assert len(ps) == 1
    return next(iter(ps))


def _corpus(name: str) -> Path:
    p = corpus_dir("ncu-rep") / name
    if not p.is_file():
        pytest.skip(f"{name} not in corpus")
    return p


_INDEPENDENT = """
import json, sys, ncu_report
out = []
for rng in ncu_report.load_report(sys.argv[1]):
    for a in rng:
        metrics = {}
        for n in a.metric_names():
            m = a[n]
            metrics[n] = (m.kind(), m.value(), m.unit(), [m.value(i) for i in range(m.num_instances())])
        rules = [(d["rule_identifier"], d.get("speedup_estimation", {}).get("speedup")) for d in a.rule_results_as_dicts()]
        out.append({"name": a.name(ncu_report.IAction.NameBase_DEMANGLED), "mangled": a.name(ncu_report.IAction.NameBase_MANGLED), "metrics": metrics, "rules": rules})
print(json.dumps(out))
"""


def _independent(path: Path) -> list[dict]:
    """Per action: names, every metric as ncu_report's value() returns it (with its instance
    values), and the rule results. Read in a new interpreter: ncu_report registers derived-metric units process-wide
    (first report wins), and this test process has read other reports in-process."""
    out = _in_fresh_python(_INDEPENDENT, path)
    for a in out:
        a["metrics"] = {n: tuple(v) for n, v in a["metrics"].items()}
    return out


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


@pytest.mark.corpus
@pytest.mark.parametrize("path", REPORTS, ids=corpus_ids(REPORTS))
def test_report_matches_ncu_report(path):
    prof = _one(path)
    ref = _independent(path)
    k = prof.kernels.sort("kernel_id")
    assert k.height == len(ref)
    assert prof.metadata["kernel_count"] == len(ref)
    assert set(k["source"].to_list()) == {"ncu"}
    met = prof.metrics.filter(pl.col("instance").is_null() & pl.col("kind").is_in(["metric", "device", "launch"]))
    inst_rows = prof.metrics.filter(pl.col("instance").is_not_null() & pl.col("kind").is_in(["metric", "device", "launch"])).sort("kernel_id", "metric", "instance")
    for kid, (row, r) in enumerate(zip(k.iter_rows(named=True), ref)):
        m = r["metrics"]

        def val(name):
            return m[name][1] if name in m else None

        assert row["name"] == r["name"]
        assert row["mangled_name"] == (r["mangled"] or None)
        assert row["duration_ns"] == val("gpu__time_duration.sum")
        assert row["dram_read_bytes"] == val("dram__bytes_read.sum")
        assert row["dram_write_bytes"] == val("dram__bytes_write.sum")
        for axis in "xyz":
            if f"launch__grid_dim_{axis}" in m:
                assert row[f"grid_{axis}"] == int(val(f"launch__grid_dim_{axis}"))
                assert row[f"block_{axis}"] == int(val(f"launch__block_dim_{axis}"))
        assert row["grid_size"] == (int(val("launch__grid_size")) if "launch__grid_size" in m else None)
        assert row["block_size"] == (int(val("launch__block_size")) if "launch__block_size" in m else None)
        assert row["registers_per_thread"] == (int(val("launch__registers_per_thread")) if "launch__registers_per_thread" in m else None)
        if "launch__shared_mem_per_block_static" in m and "launch__shared_mem_per_block_dynamic" in m:
            assert row["shared_mem_bytes"] == int(val("launch__shared_mem_per_block_static") + val("launch__shared_mem_per_block_dynamic"))
        if "device__attribute_display_name" in m:
            assert row["device_name"] == val("device__attribute_display_name")
        if "lts__t_sectors.sum" in m and "lts__t_bytes.sum" not in m:
            assert row["l2_bytes"] == val("lts__t_sectors.sum") * 32
        if "gpc__cycles_elapsed.avg.per_second" in m:
            assert row["sm_clock_hz"] == val("gpc__cycles_elapsed.avg.per_second")
        if "dram__cycles_elapsed.avg.per_second" in m:
            assert row["mem_clock_hz"] == val("dram__cycles_elapsed.avg.per_second")

        # every aggregate metric, with the value the reader's value() gives
        mine = met.filter(pl.col("kernel_id") == kid)
        assert sorted(mine["metric"].to_list()) == sorted(m)
        for name, unit, v, s, i in mine.select("metric", "unit", "value", "value_str", "value_int").iter_rows():
            kind, ref_v, ref_u, _ = m[name]
            assert unit == ref_u, name
            if kind == ncu_report.IMetric.ValueKind_STRING:
                assert s == ref_v and v is None, name
            elif kind in (ncu_report.IMetric.ValueKind_UINT32, ncu_report.IMetric.ValueKind_UINT64):
                assert (i if i is not None else int(s)) == ref_v and v == float(ref_v), name
            elif ref_v is None:
                assert v is None and s is None and i is None, name
            else:
                assert _same(v, ref_v), name

        # every instance value, with its metric's unit, in instance order
        inst: dict[str, list] = {}
        for name, unit, v, s, i in inst_rows.filter(pl.col("kernel_id") == kid).select("metric", "unit", "value", "value_str", "value_int").iter_rows():
            inst.setdefault(name, []).append((unit, v, s, i))
        assert sorted(inst) == sorted(n for n, ref in m.items() if ref[3])
        for name, got in inst.items():
            ref_u, ref_vals = m[name][2], m[name][3]
            assert len(got) == len(ref_vals) and all(g[0] == ref_u for g in got), name
            for (_u, v, s, i), ref in zip(got, ref_vals):
                if isinstance(ref, str):
                    assert s == ref and v is None, name
                elif isinstance(ref, int):
                    assert (i if i is not None else int(s)) == ref and v == float(ref), name
                elif ref is None:
                    assert v is None and s is None and i is None, name
                else:
                    assert _same(v, ref), name

        rules = prof.metrics.filter((pl.col("kernel_id") == kid) & (pl.col("kind") == "rule") & ~pl.col("metric").str.contains(":focus:"))
        assert rules.height == len(r["rules"])
        order = lambda t: (t[0], t[1] is None, t[1] or 0.0)  # noqa: E731
        want = sorted((tuple(w) for w in r["rules"]), key=order)
        have = sorted(zip(rules["metric"].to_list(), rules["value"].to_list()), key=order)
        assert [w[0] for w in want] == [h[0] for h in have]
        assert all(_same(w[1], h[1]) for w, h in zip(want, have))


@pytest.mark.corpus
def test_instance_values_and_correlation_ids():
    path = _corpus("armleth__cuda-mlp-inference__report.ncu-rep")
    prof = _one(path)
    a = ncu_report.load_report(str(path))[0][0]
    inst = prof.metrics.filter(pl.col("instance").is_not_null() & pl.col("kind").is_in(["metric", "launch", "device"]))
    checked = 0
    for name in a.metric_names():
        m = a[name]
        n = m.num_instances()
        if not n:
            continue
        rows = inst.filter(pl.col("metric") == name).sort("instance")
        assert rows.height == n, name
        ids = m.correlation_ids() if m.has_correlation_ids() else None
        for i, (v, s, vi, key) in enumerate(rows.select("value", "value_str", "value_int", "instance_key").iter_rows()):
            ref = m.value(i)
            if isinstance(ref, str):
                assert s == ref
            elif isinstance(ref, int):
                assert vi == ref
            else:
                assert _same(v, ref)
            if ids is not None:
                ref_key = ids.value(i)
                assert key == (str(int(ref_key)) if isinstance(ref_key, float) and ref_key.is_integer() else str(ref_key))
        checked += 1
    assert checked >= 5
    opcodes = inst.filter(pl.col("metric") == "sass__inst_executed_per_opcode")["instance_key"].to_list()
    assert "IMAD" in opcodes or "FADD" in opcodes or "S2R" in opcodes


@pytest.mark.corpus
def test_fp32_flops_hand_computation_on_t4_matrix_add():
    """matrix_addition2D adds two 1000x1000 float matrices: 1e6 FADDs, no FMA, no FP64."""
    path = _corpus("armleth__cuda-mlp-inference__report.ncu-rep")
    row = _one(path).kernels.row(0, named=True)
    a = ncu_report.load_report(str(path))[0][0]
    cyc = a["smsp__cycles_elapsed.avg"].value()
    rate = lambda op: a[f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed"].value()  # noqa: E731
    hand32 = (rate("fadd") + rate("fmul") + 2 * rate("ffma")) * cyc
    hand64 = (rate("dadd") + rate("dmul") + 2 * rate("dfma")) * cyc
    assert row["flops_fp32"] == pytest.approx(hand32, rel=1e-12)
    assert row["flops_fp64"] == pytest.approx(hand64, rel=1e-12)
    assert row["flops_fp32"] == pytest.approx(1.0e6, rel=1e-5)
    assert row["flops_total"] == pytest.approx(hand32 + hand64, rel=1e-12)
    # T4 (Turing) reports tensor activity only as percentages: tensor FLOPs unknown, not zero
    assert row["flops_fp16_tensor"] is None and row["flops_tf32_tensor"] is None
    assert "tensor:unknown" in row["flops_method"]
    assert row["flops_fp16"] is None  # this report has no HADD/HMUL/HFMA counters


@pytest.mark.corpus
def test_tensor_ops_path_counters_on_a100():
    path = _corpus("AlpriElse__cs599k__2025-04-21-77_06-MT.ncu-rep")
    prof = _one(path)
    a = ncu_report.load_report(str(path))[0][0]
    row = prof.kernels.row(0, named=True)
    fp16 = sum(a[f"sm__ops_path_tensor_src_fp16_dst_{d}_sparsity_{s}.sum"].value() for d in ("fp16", "fp32") for s in ("on", "off"))
    assert row["flops_fp16_tensor"] == fp16
    assert row["flops_tf32_tensor"] == sum(a[f"sm__ops_path_tensor_src_tf32_dst_fp32_sparsity_{s}.sum"].value() for s in ("on", "off"))
    assert row["flops_fp64_tensor"] == a["sm__ops_path_tensor_src_fp64.sum"].value()
    # A100 has no FP8/FP4 tensor path and the report no counter for it: unknown, not zero
    assert row["flops_fp8_tensor"] is None and row["flops_fp4_tensor"] is None
    # the op unit is one FLOP: A100's dense FP16 tensor peak, 312 TFLOP/s at 1.41 GHz, is 2048 ops/SM/clk
    sms = a["device__attribute_multiprocessor_count"].value()
    assert a["sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_off.sum.peak_sustained"].value() / sms == 2048
    # the silu kernel has FFMA/FADD/FMUL counters but no HADD/HMUL: fp16 vector FLOPs unknown
    assert row["flops_fp16"] is None and "incomplete:fp16" in row["flops_method"]
    assert row["flops_fp32"] > 0


@pytest.mark.corpus
def test_session_facts_capturing_version_and_controls():
    md = _one(_corpus("armleth__cuda-mlp-inference__report.ncu-rep")).metadata
    assert md["tool"] == "Nsight Compute"
    assert md["tool_version"] == "2024.2.1.0"  # the capturing ncu, not the reader
    assert md["reader_version"] == ncu_report.load_report(str(_corpus("armleth__cuda-mlp-inference__report.ncu-rep"))).get_version()
    assert md["reader_version"] != md["tool_version"]
    assert md["cuda_version"] == "12.4" and md["driver_version"] == "550.54.15"
    assert md["command_line"].endswith("ncu -o report -f --set full ./cuda_example")
    assert (md["clock_control"], md["clock_control_origin"]) == ("base", "default")
    assert (md["cache_control"], md["cache_control_origin"]) == ("all", "default")
    assert md["host"] == "133fff2d5d74"
    assert md["device_name"] == "Tesla T4" and md["device_count"] == 1

    md = _one(_corpus("NVIDIA__nsight-training__manual_nvtx.ncu-rep")).metadata
    assert (md["clock_control"], md["clock_control_origin"]) == ("base", "recorded")
    assert (md["cache_control"], md["cache_control_origin"]) == ("all", "recorded")
    assert md["clock_control_recorded_in"] == "command_line"

    md = _one(_corpus("DarrenLu666888__CUDATutorial__profile.ncu-rep")).metadata
    assert md.get("command_line") is None  # an interactive GUI capture
    assert (md["clock_control"], md["clock_control_origin"], md["clock_control_recorded_in"]) == ("base", "recorded", "profiler_settings")
    assert md["cache_control_origin"] == "default"

    old = _one(_corpus("evozone96__matrixMul__profile.nsight-cuprof-report"))
    assert old.metadata.get("tool_version") is None and "tool_version_note" in old.metadata
    assert old.metadata["capture_time"].startswith("2019-04-08")
    assert old.metadata["format"] == "ncu-rep"


@pytest.mark.corpus
def test_2019_report_dims_from_the_result_head_agree_with_the_reader():
    path = _corpus("evozone96__matrixMul__profile.nsight-cuprof-report")
    k = _one(path).kernels
    a = ncu_report.load_report(str(path))[0][0]
    assert "launch__grid_dim_x" not in a.metric_names()
    row = k.row(0, named=True)
    assert (row["block_x"], row["block_y"], row["block_z"]) == (32, 32, 1)
    assert row["grid_x"] * row["grid_y"] * row["grid_z"] == a["launch__grid_size"].value() == 200
    assert row["duration_ns"] is None  # no gpu__time_duration in this report: unknown, not 0


@pytest.mark.corpus
def test_nvtx_ranges_process_and_correlation():
    prof = _one(_corpus("NVIDIA__nsight-training__manual_nvtx.ncu-rep"))
    k = prof.kernels.sort("kernel_id")
    assert k["nvtx_range"].to_list() == ["init_data", "daxpy", "check_results"]
    stacks = prof.metrics.filter((pl.col("kind") == "nvtx") & (pl.col("kernel_id") == 1)).sort("instance")
    assert stacks["value_str"].to_list() == ["run_test", "daxpy"]
    assert set(k["process_id"].to_list()) == {129325}
    assert k["module"][0].endswith("manual_nvtx")
    assert k["correlation_id"].to_list() == sorted(k["correlation_id"].to_list())
    # no --nvtx: no ranges
    assert _one(_corpus("armleth__cuda-mlp-inference__report.ncu-rep")).kernels["nvtx_range"].null_count() == 1


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------
def _block_ends(data: bytes) -> list[int]:
    ends, off = [], 4
    while off < len(data):
        (n,) = struct.unpack_from("<I", data, off)
        off += 4 + n
        ends.append(off)
    return ends


@pytest.mark.corpus
@pytest.mark.parametrize("fraction", [0.0001, 0.05, 1 / 3, 0.5, 0.9, -1])
def test_truncated_report_is_one_line_error(tmp_path, fraction):
    src = _corpus("piragi__fuzigrad__output.ncu-rep").read_bytes()
    cut = len(src) - 1 if fraction == -1 else max(5, int(len(src) * fraction))
    if cut in _block_ends(src):
        cut -= 1
    bad = tmp_path / "cut.ncu-rep"
    bad.write_bytes(src[:cut])
    res = run_cli("kernels", bad)
    assert_one_line_error(res, "truncated")
    assert str(bad) in res.err
    # the reader itself would have shown a partial report
    if 100_000 < cut < 0.9 * len(src):
        assert sum(r.num_actions() for r in ncu_report.load_report(str(bad))) < 100


@pytest.mark.corpus
def test_cut_on_a_block_boundary_before_the_device_block(tmp_path):
    src = _corpus("armleth__cuda-mlp-inference__report.ncu-rep").read_bytes()
    # records: file header, session block, source block header + entry, first result header +
    # entry, device attributes, ...: cut right after the first result
    ends = _block_ends(src)
    bad = tmp_path / "cut.ncu-rep"
    bad.write_bytes(src[: ends[5]])
    assert_one_line_error(run_cli("kernels", bad), "before the device information")
    bad.write_bytes(src[: ends[1]])  # file header and the session block only
    assert_one_line_error(run_cli("kernels", bad), "without kernel results")


def test_random_bytes_empty_and_json(tmp_path):
    rnd = tmp_path / "random.ncu-rep"
    rnd.write_bytes(os.urandom(4096).replace(b"NVR", b"XXX"))
    assert_one_line_error(run_cli("kernels", rnd), "not an Nsight Compute report")
    magic = tmp_path / "magic.ncu-rep"
    magic.write_bytes(b"NVR\x00" + os.urandom(4096))
    res = run_cli("kernels", magic)
    assert_one_line_error(res)
    assert "Nsight Compute report" in res.err
    empty = tmp_path / "empty.ncu-rep"
    empty.write_bytes(b"")
    assert_one_line_error(run_cli("kernels", empty), "empty")
    js = tmp_path / "renamed.ncu-rep"
    js.write_text(json.dumps({"traceEvents": []}))
    assert_one_line_error(run_cli("kernels", js), "JSON")
    with pytest.raises(InputError):
        ncu_rep.scan_container(js)


@pytest.mark.corpus
def test_corrupt_payload_is_not_presented_as_whole(tmp_path):
    """Bytes changed inside a result: the reader drops the result silently; we refuse."""
    src = bytearray(_corpus("armleth__cuda-mlp-inference__report.ncu-rep").read_bytes())
    ends = _block_ends(bytes(src))
    start, end = ends[4], ends[5]  # the first result's payload entry
    for i in range(start + 8, start + 8 + 64):
        src[i] = 0xFF
    bad = tmp_path / "corrupt.ncu-rep"
    bad.write_bytes(bytes(src))
    assert end - start > 1000
    res = run_cli("kernels", bad)
    assert_one_line_error(res, "corrupt")


# ---------------------------------------------------------------------------------------------
# CLI and dataset round trip
# ---------------------------------------------------------------------------------------------
@pytest.mark.corpus
@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_kernels_command_formats(fmt):
    path = _corpus("NVIDIA__nsight-training__manual_nvtx.ncu-rep")
    res = run_cli("kernels", path, "--format", fmt)
    assert res.code == 0, res
    if fmt == "csv":
        lines = [l for l in res.out.splitlines() if l.strip()]
        assert len(lines) == 4 and "daxpy_kernel" in res.out
    elif fmt == "json":
        data = json.loads(res.out)
        rows = data if isinstance(data, list) else data.get("rows", data.get("data"))
        assert len(rows) == 3
    else:
        assert "kernels (3 rows)" in res.out


@pytest.mark.corpus
def test_ingest_ncu_corpus_round_trip(tmp_path):
    src = corpus_dir()
    out = tmp_path / "ds"
    res = run_cli("ingest", src / "ncu-rep", src / "ncu-csv", "-o", out)
    assert res.code == 0, res
    direct = profaudit.load([src / "ncu-rep", src / "ncu-csv"], parallel=False)
    back = profaudit.load(out)
    assert sorted(back.ids) == sorted(direct.ids)
    n_files = len(corpus_files("ncu-rep")) + len(corpus_files("ncu-csv"))
    assert len(back) == n_files
    key = ["profile_id", "kernel_id"]
    a = direct.kernels.sort(key)
    b = back.kernels.sort(key).select(a.columns)
    assert a.equals(b)
    assert back.metrics.height == direct.metrics.height
    assert back.metrics.columns == schema.METRICS.names
    md = back.metadata.sort("profile_id")
    assert set(md["source"].to_list()) == {"ncu"}
    assert set(md["format"].to_list()) == {"ncu-rep", "ncu-csv"}


@pytest.mark.corpus
def test_ncu_repz_zstd_reports(tmp_path):
    zstd = pytest.importorskip("zstandard")
    src = _corpus("NVIDIA__nsight-training__manual_nvtx.ncu-rep")
    raw = src.read_bytes()
    z = tmp_path / "r.ncu-repz"
    z.write_bytes(zstd.ZstdCompressor().compress(raw))
    assert sum(r.num_actions() for r in ncu_report.load_report(str(z))) == 3  # the reader takes it as is
    plain, packed = _one(src), _one(z)
    cols = [c for c in plain.kernels.columns if c != "profile_id"]
    assert plain.kernels.select(cols).equals(packed.kernels.select(cols))
    assert packed.metadata["tool_version"] == "2022.3.0.0"
    two = tmp_path / "frames.ncu-repz"  # several zstd frames in a row
    c = zstd.ZstdCompressor()
    two.write_bytes(c.compress(raw[:40_000]) + c.compress(raw[40_000:]))
    assert _one(two).kernels.height == 3
    cut = tmp_path / "cut.ncu-repz"
    cut.write_bytes(z.read_bytes()[:-200])
    assert_one_line_error(run_cli("kernels", cut), "truncated")
    # a whole zstd stream of a cut report: the framing check inside still catches it
    inner = tmp_path / "inner.ncu-repz"
    inner.write_bytes(zstd.ZstdCompressor().compress(raw[: len(raw) // 2]))
    assert_one_line_error(run_cli("kernels", inner), "truncated Nsight Compute report")


@pytest.mark.corpus
def test_sgemm_flops_equal_2mnk_from_a_roofline_set_report():
    """ESMM's four SGEMM variants multiply 1024x1024 matrices: 2*M*N*K = 2**31 FP32 FLOPs each.

    This `--set roofline` report keeps only per-cycle rates and smsp__cycles_elapsed.avg.per_second,
    so the count is rate x cycles/s x duration, computed here by hand from the raw counters too.
    """
    path = _corpus("AveryClapp__ESMM-Research__profile_output.ncu-rep")
    k = _one(path).kernels.sort("kernel_id")
    ctx = ncu_report.load_report(str(path))
    for row, a in zip(k.iter_rows(named=True), ctx[0]):
        assert "smsp__cycles_elapsed.avg" not in a.metric_names()
        cycles = a["smsp__cycles_elapsed.avg.per_second"].value() * a["gpu__time_duration.sum"].value() * 1e-9
        rate = lambda op: a[f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed"].value()  # noqa: E731
        hand = (rate("fadd") + rate("fmul") + 2 * rate("ffma")) * cycles
        assert row["flops_fp32"] == pytest.approx(hand, rel=1e-12)
        assert row["flops_fp32"] == pytest.approx(2 * 1024**3, rel=1e-9)
        assert row["flops_method"].startswith("sass-counters(rate*hz*duration)")


def test_2019_metric_names_give_duration_clock_bytes_and_occupancy():
    # what ncu_report returns for a 2019.x .nsight-cuprof-report (Pascal/GTX 1080 capture): the
    # first metric names, every unit empty, values in ns, Hz and bytes
    from profaudit.parsers import ncu_common

    vals = {
        "gpu__time_duration": 1295285248.0,
        "gpc__frequency": 1717464608.8,
        "gpc__elapsed_cycles_max": 2238102178.0,
        "dram__frequency": 5005000000.0,
        "dram__read_bytes": 380000.0,
        "dram__write_bytes": 12576.0,
        "dram__bytes_per_sec": 392576.0 / 1.295285248,
        "sm__active_warps_avg_per_active_cycle_pct": 28.197965907463114,
        "launch__grid_size": 1.0,
    }
    row = ncu_common.derive_kernel_columns(vals, {k: "" for k in vals})
    assert row["duration_ns"] == 1295285248.0
    assert row["sm_clock_hz"] == pytest.approx(1717464608.8) and row["mem_clock_hz"] == 5005000000.0
    assert (row["dram_read_bytes"], row["dram_write_bytes"], row["dram_bytes"]) == (380000.0, 12576.0, 392576.0)
    assert row["dram_bytes_method"] == "read+write"
    assert row["achieved_occupancy_pct"] == pytest.approx(28.198, abs=1e-3)
    # the current name wins where a report has both
    row = ncu_common.derive_kernel_columns({**vals, "gpu__time_duration.sum": 7.0}, {})
    assert row["duration_ns"] == 7.0
    # cycles over duration when only the elapsed-cycle count is there
    row = ncu_common.derive_kernel_columns({"gpu__time_duration": 5952.0, "gpc__elapsed_cycles_max": 10768.0}, {})
    assert row["sm_clock_hz"] == pytest.approx(10768.0 / 5952e-9)


def test_sm_clock_from_sm_elapsed_cycles_of_a_metrics_capture():
    # `ncu --metrics sm__cycles_elapsed.avg,...` keeps the count but no per-second rate
    from profaudit.parsers import ncu_common

    row = ncu_common.derive_kernel_columns({"gpu__time_duration.sum": 61312.0, "sm__cycles_elapsed.avg": 146244.0}, {"gpu__time_duration.sum": "ns"})
    assert row["sm_clock_hz"] == pytest.approx(146244.0 / 61312e-9)


def test_a_launch_ncu_could_not_profile_is_flagged():
    # what a report keeps for a launch whose replay failed (public 2021.1 report, GTX 1660 SUPER)
    failed = ["device__attribute_display_name", "profiler__replayer_passes", "nvlink__count_logical", "derived__avg_thread_executed"]
    assert ncu_rep._unmeasured({"duration_ns": None}, failed)
    assert not ncu_rep._unmeasured({"duration_ns": None}, failed + ["launch__grid_size"])  # 2019.x: no duration metric
    assert not ncu_rep._unmeasured({"duration_ns": 1.0}, failed)


def test_strings_lose_a_c_terminator():
    from profaudit.parsers.protowire import text

    assert text(b"xx./a.out\x00yy", (2, 10)) == "./a.out"


@pytest.mark.corpus
def test_2019_report_module_has_no_trailing_nul():
    k = _one(_corpus("evozone96__matrixMul__profile.nsight-cuprof-report")).kernels
    assert all(not m.endswith("\x00") for m in k["module"].drop_nulls().to_list())



def _in_fresh_python(code: str, *args) -> dict:
    """Run `code` in a new interpreter (ncu_report registers derived-metric units process-wide, and
    this test process has used it in-process) and return the JSON it prints."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, check=True, cwd=str(Path(__file__).parents[1])).stdout
    return json.loads(out)


@pytest.mark.corpus
def test_units_of_one_report_do_not_leak_into_the_next():
    # Read one report, then another whose derived metrics ncu_report names with other units
    # (an sm_86 report's 'inst' against an sm_70's 'thread'): the second must get its own units,
    # as ncu_report gives them for that file alone (a reader kept up between reports did not).
    first = _corpus("victor-lvsy__seq_align__profile.ncu-rep")
    second = _corpus("armleth__cuda-mlp-inference__report.ncu-rep")
    alone = _in_fresh_python(
        "import json, sys, ncu_report\n"
        "a = ncu_report.load_report(sys.argv[1])[0][0]\n"
        "print(json.dumps({n: a[n].unit() for n in a.metric_names() if n.startswith('derived__')}))\n",
        second,
    )
    after = _in_fresh_python(
        "import json, sys, polars as pl, profaudit\n"
        "profaudit.load(sys.argv[1], parallel=False)\n"
        "p = next(iter(profaudit.load(sys.argv[2], parallel=False)))\n"
        "m = p.metrics.filter((pl.col('kernel_id') == p.kernels['kernel_id'].min()) & pl.col('instance').is_null() & pl.col('metric').str.starts_with('derived__'))\n"
        "print(json.dumps(dict(zip(m['metric'].to_list(), m['unit'].to_list()))))\n",
        first,
        second,
    )
    assert alone and {k: after.get(k) for k in alone} == alone


@pytest.mark.parametrize(
    "line, want",
    [
        ("/opt/ncu -c 3 -o r --set full ./silu --profile", 3),
        ("ncu --launch-count=5 ./a.out", 5),
        ("ncu -k regex:gemm --launch-count 7 ./a.out", 7),
        ("ncu -f -c 2 ./a.out", 2),
        ("ncu -f ./app -c 3", None),  # the program's own -c
        ("ncu -o out python -c 3", None),
        ("ncu --nvtx -o r ./app -c 4", None),
        ("./app -c 3", None),  # not an ncu line
        ("ncu -c 0 ./a", None),
        ("ncu -c many ./a", None),
        (None, None),
    ],
)
def test_launch_count_reads_only_ncus_own_option(line, want):
    from profaudit.parsers.ncu_common import launch_count

    assert launch_count(line) == want
