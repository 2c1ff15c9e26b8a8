"""Roofline: constructed kernels with answers worked out by hand, clock handling, nulls, device
matching per profile, the chart, the CLI, and real Nsight Compute reports from the corpus."""

from __future__ import annotations

import polars as pl
import pytest

from conftest import assert_one_line_error, corpus_files
from profaudit.dataset import write_dataset
from profaudit.errors import UsageError
from profaudit.profile import Profile, ProfileSet
from profaudit.roofline import ceilings, roofline, roofline_columns, unmatched_devices

A100 = "NVIDIA A100-SXM4-40GB"  # 312 TF FP16 tensor, 19.5 TF FP32 at 1410 MHz; 1555 GB/s; L2 5120 B/clk; L1 128 B/clk/SM x 108


def _ps(rows: list[dict], md: dict | None = None, pid: str = "p") -> ProfileSet:
    k = pl.DataFrame(rows, schema_overrides={"kernel_id": pl.Int64}, strict=False)
    return ProfileSet([Profile(pid, dict(md or {}), {"kernels": k})])


def _row(r: pl.DataFrame, i: int = 0) -> dict:
    return r.row(i, named=True)


def test_gemm_compute_bound_by_hand():
    # C = A @ B, M = N = K = 4096, FP16 in/out: 2*M*N*K FLOPs, each matrix read or written once.
    M = N = K = 4096
    flops = 2 * M * N * K  # 137,438,953,472
    dram = (M * K + K * N + M * N) * 2  # 100,663,296 bytes
    ps = _ps([{"kernel_id": 0, "name": "gemm", "device_name": A100, "duration_ns": 1.0e6, "flops_fp16_tensor": float(flops),
               "dram_bytes": float(dram), "sm_clock_hz": 705e6}])
    r = _row(roofline(ps))
    assert r["device_key"] == "a100-sxm-40gb"
    assert r["flops"] == flops and r["flops_precisions"] == "fp16_tensor"
    assert r["ai_dram_flops_per_byte"] == pytest.approx(4096 / 3)  # 1365.33 FLOP/B
    assert r["achieved_flops_per_s"] == pytest.approx(137.438953472e12)
    # attainable = min(312e12, 1365.33 * 1555e9 = 2.12e15) = 312e12: compute-bound
    assert r["attainable_flops_per_s_at_boost"] == pytest.approx(312e12)
    assert r["bound_at_boost"] == "compute"
    assert r["roof_pct_at_boost"] == pytest.approx(100 * 137.438953472 / 312)  # 44.05 %
    # at the clock the kernel ran at (705 MHz = half of 1410): the tensor roof halves, DRAM does not
    assert r["compute_roof_flops_per_s_at_kernel_clock"] == pytest.approx(156e12)
    assert r["dram_roof_bytes_per_s_at_kernel_clock"] == 1555e9
    assert r["roof_pct_at_kernel_clock"] == pytest.approx(100 * 137.438953472 / 156)  # 88.1 %
    assert r["kernel_clock_hz"] == 705e6 and r["kernel_clock_source"] == "sm_clock_hz"
    assert r["dram_bandwidth_pct_at_boost"] == pytest.approx(100 * dram / 1e-3 / 1555e9)
    assert r["roof_note"] is None


def test_vector_add_memory_bound_by_hand():
    # c = a + b over n floats: n FLOPs (FP32 adds), 3 * 4 * n bytes of DRAM traffic; AI = 1/12.
    n = 1 << 28
    t = 12 * n / 1555e9 / 0.8  # runs at 80 % of DRAM bandwidth
    ps = _ps([{"kernel_id": 0, "name": "vadd", "device_name": A100, "duration_ns": t * 1e9, "flops_fp32": float(n),
               "dram_read_bytes": 8.0 * n, "dram_write_bytes": 4.0 * n, "sm_clock_hz": 1410e6}])
    r = _row(roofline(ps))
    assert r["dram_bytes"] == 12.0 * n  # read + write when dram_bytes itself is absent
    assert r["ai_dram_flops_per_byte"] == pytest.approx(1 / 12)
    assert r["attainable_flops_per_s_at_boost"] == pytest.approx(1555e9 / 12)
    assert r["bound_at_boost"] == "dram"
    assert r["roof_pct_at_boost"] == pytest.approx(80.0)
    assert r["dram_bandwidth_pct_at_boost"] == pytest.approx(80.0)
    assert r["roof_pct_at_kernel_clock"] == pytest.approx(80.0)


def test_hierarchical_levels_pick_the_binding_one():
    # 1e9 FP32 FLOPs; L1 traffic 19.49e9 B takes 1 ms at 128 B/clk x 108 SMs x 1.41 GHz = 19.49 TB/s,
    # L2 3.6e9 B takes 0.5 ms at 5120 B/clk x 1.41 GHz = 7.22 TB/s, DRAM 0.311e9 B takes 0.2 ms, compute 0.05 ms.
    l1_bw, l2_bw = 128 * 108 * 1.41e9, 5120 * 1.41e9
    ps = _ps([{"kernel_id": 0, "name": "stencil", "device_name": A100, "duration_ns": 2.0e6, "flops_fp32": 1e9,
               "dram_bytes": 0.2e-3 * 1555e9, "l2_bytes": 0.5e-3 * l2_bw, "l1_bytes": 1e-3 * l1_bw, "sm_clock_hz": 1410e6}])
    r = _row(roofline(ps, clock="boost"))
    assert r["bound_at_boost"] == "l1"
    assert r["attainable_flops_per_s_at_boost"] == pytest.approx(1e9 / 1e-3)
    assert r["roof_pct_at_boost"] == pytest.approx(50.0)
    assert r["l2_bandwidth_pct_at_boost"] == pytest.approx(25.0)
    assert r["ai_l1_flops_per_byte"] == pytest.approx(1e9 / (1e-3 * l1_bw))
    assert "roof_pct_at_kernel_clock" not in r
    # at a locked 705 MHz the on-chip roofs halve: L1 needs 2 ms, the whole duration
    k = roofline(_ps([{**ps.kernels.row(0, named=True), "sm_clock_hz": 705e6}]), clock="kernel")
    assert _row(k)["roof_pct_at_kernel_clock"] == pytest.approx(100.0)
    assert _row(k)["bound_at_kernel_clock"] == "l1"


def test_mixed_precision_uses_the_time_weighted_ceiling():
    # 19.5e9 FP32 FLOPs (1 ms at 19.5 TF) + 312e9 FP16-tensor FLOPs (1 ms at 312 TF): 2 ms of compute.
    ps = _ps([{"kernel_id": 0, "name": "mixed", "device_name": A100, "duration_ns": 2.5e6, "flops_fp32": 19.5e9,
               "flops_fp16_tensor": 312e9, "dram_bytes": 1e6}])
    r = _row(roofline(ps, clock="boost"))
    assert r["compute_roof_flops_per_s_at_boost"] == pytest.approx(331.5e9 / 2e-3)  # 165.75 TF, harmonic mean by FLOPs
    assert r["roof_pct_at_boost"] == pytest.approx(80.0)
    assert r["flops_precisions"] == "fp32+fp16_tensor"


def test_nulls_never_zeros_and_notes():
    ps = _ps([
        {"kernel_id": 0, "name": "no_counters", "device_name": A100, "duration_ns": 1e3},
        {"kernel_id": 1, "name": "bytes_only", "device_name": A100, "duration_ns": 1e6, "dram_bytes": 1.555e9 * 0.5e-3 * 1000},
        {"kernel_id": 2, "name": "fp8_on_a100", "device_name": A100, "duration_ns": 1e6, "flops_fp8_tensor": 1e9, "dram_bytes": 1e6},
        {"kernel_id": 3, "name": "zero_time", "device_name": A100, "duration_ns": 0.0, "flops_fp32": 1e6, "dram_bytes": 1e6},
    ])
    r = roofline(ps)
    a, b, c, d = (r.row(i, named=True) for i in range(4))
    assert a["flops"] is None and a["attainable_flops_per_s_at_boost"] is None and a["roof_pct_at_boost"] is None
    assert "no FLOP counts" in a["roof_note"] and "no byte counts" in a["roof_note"]
    # unknown FLOPs: no roof, but the DRAM utilisation is still known
    assert b["roof_pct_at_boost"] is None and b["dram_bandwidth_pct_at_boost"] == pytest.approx(50.0)
    assert "no published peak for fp8_tensor" in c["roof_note"] and c["attainable_flops_per_s_at_boost"] is None
    assert d["achieved_flops_per_s"] is None and d["roof_pct_at_boost"] is None and "no duration" in d["roof_note"]
    assert "kernel clock not measured" in a["roof_note"]
    assert r.columns == roofline_columns("both")


def test_zero_flop_copy_kernel_is_measured_against_dram():
    ps = _ps([{"kernel_id": 0, "name": "copy", "device_name": A100, "duration_ns": 1e6, "flops_fp32": 0.0, "dram_bytes": 1.2440e9}])
    r = _row(roofline(ps, clock="boost"))
    assert r["flops"] == 0 and r["flops_precisions"] is None
    assert r["attainable_flops_per_s_at_boost"] == 0 and r["bound_at_boost"] == "dram"
    assert r["roof_pct_at_boost"] == pytest.approx(80.0)


def test_sparse_and_device_override_and_clock_control():
    row = {"kernel_id": 0, "name": "g", "device_name": None, "duration_ns": 1e6, "flops_fp16_tensor": 624e9, "dram_bytes": 1e6}
    ps = _ps([row], md={"clock_control": "base", "clock_control_origin": "default"})
    r = _row(roofline(ps, "a100-sxm-40gb"))
    assert r["device_key"] == "a100-sxm-40gb" and r["roof_pct_at_boost"] == pytest.approx(200.0)  # above the dense roof
    assert r["clock_control"] == "base (default)"
    rs = _row(roofline(ps, "a100-sxm-40gb", sparse=True))
    assert rs["roof_pct_at_boost"] == pytest.approx(100.0)
    # a vector-precision kernel keeps its dense roof under --sparse (sparsity is a tensor-core feature)
    vec = _ps([{"kernel_id": 0, "name": "v", "device_name": None, "duration_ns": 1e6, "flops_fp32": 9.75e9, "dram_bytes": 1e6}])
    for sparse in (False, True):
        assert _row(roofline(vec, "a100-sxm-40gb", sparse=sparse))["roof_pct_at_boost"] == pytest.approx(50.0)
    from profaudit.roofline import ceilings

    c = ceilings("a100-sxm-40gb", sparse=True)
    got = dict(zip(c["ceiling"].to_list(), c["flops_per_s"].to_list()))
    assert got["fp32"] == pytest.approx(19.5e12) and got["fp16_tensor"] == pytest.approx(624e12)
    # without an override, a profile without a device name gets no roof and says why
    rn = _row(roofline(ps))
    assert rn["device_key"] is None and "no device name" in rn["roof_note"]
    with pytest.raises(UsageError, match="Quadro"):
        roofline(ps, "Quadro GP100")


def test_device_matched_per_profile_from_metadata_and_unknown_reported():
    p1 = Profile("a", {"device_name": "Tesla T4"}, {"kernels": pl.DataFrame({"kernel_id": [0], "name": ["k"], "duration_ns": [1e6], "flops_fp32": [8.1e9], "dram_bytes": [1.0]})})
    p2 = Profile("b", {}, {"kernels": pl.DataFrame({"kernel_id": [0], "name": ["k"], "device_name": ["AMD Instinct MI210"], "duration_ns": [1e6], "flops_fp32": [1e9]})})
    ps = ProfileSet([p1, p2])
    r = roofline(ps, clock="boost")
    a, b = r.row(0, named=True), r.row(1, named=True)
    assert a["device_key"] == "t4" and a["roof_pct_at_boost"] == pytest.approx(100.0)  # 8.1 TF for 1 ms on an 8.1 TF part
    assert b["device_key"] is None and "unknown device 'AMD Instinct MI210'" in b["roof_note"]
    um = unmatched_devices(ps)
    assert list(um) == ["AMD Instinct MI210"] and um["AMD Instinct MI210"] in b["roof_note"]


def test_peaks_without_a_clock_give_no_kernel_clock_roof():
    ps = _ps([{"kernel_id": 0, "name": "k", "device_name": "NVIDIA B200", "duration_ns": 1e6, "flops_fp8_tensor": 2.25e12, "dram_bytes": 1e6, "sm_clock_hz": 1.5e9}])
    r = _row(roofline(ps))
    assert r["roof_pct_at_boost"] == pytest.approx(50.0)  # 2.25e15 FLOP/s achieved vs 4.5e15 dense FP8
    assert r["roof_pct_at_kernel_clock"] is None
    assert "vendor states no clock for fp8_tensor" in r["roof_note"]


def test_untyped_flops_and_cores_for_tpu_and_neuron():
    # an XLA op on TPU v5e: 197e9 untyped FLOPs in 1 ms
    ps = _ps([{"kernel_id": 0, "name": "fusion", "device_name": "TPU v5 lite", "duration_ns": 1e6, "flops_total": 197e9, "dram_bytes": 1e6}])
    r = _row(roofline(ps, clock="boost"))
    assert r["attainable_flops_per_s_at_boost"] is None and "untyped" in r["roof_note"]
    r = _row(roofline(ps, clock="boost", flops_precision="bf16_tensor"))
    assert r["roof_pct_at_boost"] == pytest.approx(100.0) and r["flops_precisions"] == "bf16_tensor"
    # one NeuronCore-v3 of a Trainium2 chip: 79-ish TF BF16 each (667 / 8)
    ps = _ps([{"kernel_id": 0, "name": "nki", "device_name": "Trainium2", "duration_ns": 1e6, "flops_bf16_tensor": 667e9 / 8, "dram_bytes": 1e3}])
    assert _row(roofline(ps, clock="boost", cores=1))["roof_pct_at_boost"] == pytest.approx(100.0)
    assert _row(roofline(ps, clock="boost"))["roof_pct_at_boost"] == pytest.approx(12.5)
    with pytest.raises(UsageError):
        roofline(ps, flops_precision="fp12")


def test_kernels_frame_input_and_user_spec(tmp_path):
    from test_specs import USER_SPEC

    f = tmp_path / "mine.yaml"
    f.write_text(USER_SPEC)
    k = pl.DataFrame({"kernel_id": [0], "name": ["k"], "device_name": ["My GPU 9000"], "duration_ns": [1e6], "flops_fp32": [5e9], "l2_bytes": [4e9 * 1e-3 * 0.5]})
    r = _row(roofline(k, extra_specs=[f], clock="boost"))
    assert r["device_key"] == "my-gpu" and r["roof_pct_at_boost"] == pytest.approx(50.0) and r["bound_at_boost"] == "compute"
    assert r["clock_control"] is None
    with pytest.raises(UsageError):
        roofline(42)  # type: ignore[arg-type]


def test_many_kernels_are_columnar():
    n = 20000
    k = pl.DataFrame({"kernel_id": range(n), "name": [f"k{i % 7}" for i in range(n)], "device_name": [A100] * n,
                      "duration_ns": [1e3 + i for i in range(n)], "flops_fp32": [1e6] * n, "dram_bytes": [1e5] * n, "sm_clock_hz": [1.41e9] * n})
    r = roofline(k)
    assert r.height == n and r.get_column("bound_at_boost").null_count() == 0


def test_ceilings_rows():
    c = ceilings("a100-sxm-40gb")
    comp = {r["ceiling"]: r for r in c.filter(pl.col("kind") == "compute").iter_rows(named=True)}
    mem = {r["ceiling"]: r for r in c.filter(pl.col("kind") == "memory").iter_rows(named=True)}
    assert comp["fp16_tensor"]["flops_per_s"] == 312e12 and comp["fp16_tensor"]["ridge_flops_per_byte"] == pytest.approx(312e12 / 1555e9)
    assert set(mem) == {"dram", "l2", "l1"} and mem["dram"]["clock_hz"] is None
    half = ceilings("a100-sxm-40gb", 705e6)
    assert half.filter(pl.col("ceiling") == "fp32")["flops_per_s"][0] == pytest.approx(9.75e12)
    assert half.filter(pl.col("ceiling") == "dram")["bytes_per_s"][0] == 1555e9
    assert ceilings("mi300x").filter(pl.col("ceiling") == "llc")["bytes_per_s"][0] == 17.2e12


# ---------------------------------------------------------------------------------------------------
# Chart


def _sample_rf():
    ps = _ps([
        {"kernel_id": 0, "name": "gemm", "device_name": A100, "duration_ns": 1e6, "flops_fp16_tensor": 1.4e11, "dram_bytes": 1e8, "l2_bytes": 4e8, "sm_clock_hz": 1.1e9},
        {"kernel_id": 1, "name": "vadd", "device_name": A100, "duration_ns": 3e6, "flops_fp32": 2.7e8, "dram_bytes": 3.2e9, "sm_clock_hz": 1.1e9},
        {"kernel_id": 2, "name": "t4k", "device_name": "Tesla T4", "duration_ns": 1e6, "flops_fp32": 1e9, "dram_bytes": 1e8},
    ])
    return roofline(ps)


def test_figure_has_points_and_ceilings(tmp_path):
    from profaudit.roofline_plot import roofline_figure, write_html, write_png

    rf = _sample_rf()
    fig = roofline_figure(rf)
    kinds = [type(t).__name__ for t in fig.data]
    assert "Scattergl" in kinds
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    names = [t.name for t in fig.data]
    assert any("a100-sxm-40gb: fp16_tensor" in n for n in names) and any("t4: dram" in n for n in names)
    assert any("a100-sxm-40gb: l2" in n for n in names)
    pts = [t for t in fig.data if type(t).__name__ == "Scattergl" and "DRAM" in t.name][0]
    assert len(pts.x) == 3 and any("gemm" in h for h in pts.text)
    # precisions no kernel used start hidden
    fp64 = [t for t in fig.data if t.name.startswith("a100-sxm-40gb: fp64 ")][0]
    assert fp64.visible == "legendonly"
    out = write_html(fig, tmp_path / "r.html")
    text = out.read_text()
    assert "plotly" in text.lower() and "gemm" in text and len(text) > 100_000
    msg = write_png(fig, tmp_path / "r.png")
    if msg is None:
        assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert "\n" not in msg and msg.startswith("PNG not written") and not (tmp_path / "r.png").exists()


def test_figure_of_empty_and_unmatched_frames():
    from profaudit.roofline_plot import roofline_figure

    fig = roofline_figure(roofline(pl.DataFrame({"kernel_id": [0], "name": ["k"], "device_name": ["Quadro GP100"], "duration_ns": [1.0]})))
    assert fig.layout.xaxis.type == "log"


# ---------------------------------------------------------------------------------------------------
# CLI


def _dataset(tmp_path):
    ps = _ps([
        {"kernel_id": 0, "name": "gemm", "short_name": "gemm", "device_name": A100, "duration_ns": 1e6, "flops_fp16_tensor": 137438953472.0, "dram_bytes": 100663296.0, "sm_clock_hz": 705e6},
        {"kernel_id": 1, "name": "mystery", "device_name": "Quadro GP100", "duration_ns": 1e6, "flops_fp32": 1e9},
    ], md={"source": "test", "device_name": A100})
    return write_dataset(ps, tmp_path / "ds")


def test_cli_roofline_table_csv_and_html(tmp_path, cli):
    ds = _dataset(tmp_path)
    res = cli("roofline", ds, "--format", "csv", "--html", tmp_path / "r.html")
    assert res.code == 0, res
    rows = pl.read_csv(res.out.encode())
    assert rows.columns == roofline_columns("both")
    g = rows.filter(pl.col("kernel_id") == 0).row(0, named=True)
    assert g["roof_pct_at_boost"] == pytest.approx(100 * 137.438953472 / 312) and g["bound_at_boost"] == "compute"
    assert "warning" in res.err and "Quadro GP100" in res.err  # the unknown device is reported, not guessed
    assert (tmp_path / "r.html").stat().st_size > 100_000
    t = cli("roofline", ds, "--columns", "short_name,bound_at_boost")
    assert t.code == 0 and "gemm" in t.out and "compute" in t.out


def test_cli_roofline_device_override_and_png_message(tmp_path, cli):
    ds = _dataset(tmp_path)
    res = cli("roofline", ds, "--device", "h100-sxm", "--format", "json", "--clock", "boost")
    assert res.code == 0, res
    import json

    rows = json.loads(res.out)
    assert {r["device_key"] for r in rows} == {"h100-sxm"} and "roof_pct_at_kernel_clock" not in rows[0]
    # a PNG that was asked for and could not be written fails the command in one line
    res = cli("roofline", ds, "--device", "h100-sxm", "--png", tmp_path / "r.png")
    if (tmp_path / "r.png").exists():
        assert res.code == 0, res
    else:
        from conftest import assert_one_line_error

        assert_one_line_error(res, "PNG not written")


def test_cli_roofline_bad_options(tmp_path, cli):
    ds = _dataset(tmp_path)
    assert_one_line_error(cli("roofline", ds, "--device", "NVIDIA H100"), "family")
    assert_one_line_error(cli("roofline", ds, "--clock", "sometimes"), "clock")
    assert_one_line_error(cli("roofline", ds, "--columns", "nope"), "nope")
    assert_one_line_error(cli("roofline", tmp_path / "missing.ncu-rep"), "no such file")
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema_version: 1\n")
    assert_one_line_error(cli("roofline", ds, "--spec", bad), "bad device spec")


# ---------------------------------------------------------------------------------------------------
# Real Nsight Compute reports (corpus). Cross-checked against ncu_report read independently.

NCU = {p.name: p for p in corpus_files("ncu-rep")}


def _ncu_kernels(path):
    ncu_report = pytest.importorskip("ncu_report")
    ctx = ncu_report.load_report(str(path))
    out = []
    for ri in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(ri)
        for ai in range(rng.num_actions()):
            a = rng.action_by_idx(ai)
            g = lambda n: None if a.metric_by_name(n) is None else a.metric_by_name(n).as_double()  # noqa: E731
            out.append({"name": a.name(), "device": a.metric_by_name("device__attribute_display_name").as_string(),
                        "dur_ns": g("gpu__time_duration.sum"), "read": g("dram__bytes_read.sum"), "write": g("dram__bytes_write.sum"),
                        "clocks": [c for c in (g("gpc__cycles_elapsed.avg.per_second"), g("sm__cycles_elapsed.avg.per_second")) if c is not None]})
    return out


@pytest.mark.corpus
@pytest.mark.parametrize("fname,key,dram_bw", [
    ("AlpriElse__cs599k__2025-04-21-77_06-MT.ncu-rep", "a100-sxm-40gb", 1555e9),
    ("armleth__cuda-mlp-inference__report.ncu-rep", "t4", 320e9),
    ("victor-lvsy__seq_align__profile.ncu-rep", "rtx-4090", 1008e9),
])
def test_roofline_on_real_ncu_reports(fname, key, dram_bw):
    if fname not in NCU:
        pytest.skip("corpus file absent")
    import profaudit

    ps = profaudit.load(NCU[fname], parallel=False)
    rf = roofline(ps)
    ref = _ncu_kernels(NCU[fname])
    assert rf.height == len(ref)
    assert set(rf.get_column("device_key").to_list()) == {key}
    assert set(rf.get_column("clock_control").to_list()) == {"base (default)"}
    for row, want in zip(rf.iter_rows(named=True), ref):
        assert row["device_name"] == want["device"]
        if want["read"] is None or want["dur_ns"] is None:
            continue
        # DRAM utilisation recomputed by hand from the vendor reader's own numbers
        pct = 100 * (want["read"] + want["write"]) / (want["dur_ns"] * 1e-9) / dram_bw
        assert row["dram_bandwidth_pct_at_boost"] == pytest.approx(pct, rel=1e-9)
        if want["clocks"]:
            # the parser takes the elapsed-cycle rate of the GPC (or SM) domain; either is the clock ncu measured
            assert any(row["kernel_clock_hz"] == pytest.approx(c, rel=1e-9) for c in want["clocks"]), (row["kernel_clock_hz"], want["clocks"])
        if row["roof_pct_at_boost"] is not None:
            assert row["roof_pct_at_boost"] >= row["dram_bandwidth_pct_at_boost"] - 1e-9
            assert row["bound_at_boost"] in ("compute", "dram", "l2", "l1")


@pytest.mark.corpus
def test_a100_silu_kernels_are_dram_bound_at_77_pct():
    f = NCU.get("AlpriElse__cs599k__2025-04-21-77_06-MT.ncu-rep")
    if f is None:
        pytest.skip("corpus file absent")
    import profaudit

    rf = roofline(profaudit.load(f, parallel=False))
    for r in rf.iter_rows(named=True):
        # silu over 2^26 floats: 524 MB of DRAM traffic in 437 us = 1.20 TB/s of 1.555 TB/s
        assert r["bound_at_boost"] == "dram" and 76 < r["roof_pct_at_boost"] < 78
        # ncu locked the clock to base (~1091 MHz): DRAM roof unchanged, compute roof lower, still DRAM-bound
        assert r["bound_at_kernel_clock"] == "dram" and r["roof_pct_at_kernel_clock"] == pytest.approx(r["roof_pct_at_boost"])


def test_roofline_takes_paths_like_load(tmp_path):
    """`profaudit.roofline("report")` loads the path the way `profaudit.load` does."""
    import profaudit

    p = profaudit.Profile("rp", {"source": "test"}, {"kernels": pl.DataFrame({"kernel_id": [0], "name": ["k"], "duration_ns": [1000.0], "device_name": ["NVIDIA H100 80GB HBM3"], "flops_fp32": [1e6], "dram_bytes": [1e6]})})
    from profaudit.dataset import write_dataset

    write_dataset(profaudit.ProfileSet([p]), tmp_path / "ds")
    by_path = profaudit.roofline(str(tmp_path / "ds"))
    direct = profaudit.roofline(profaudit.ProfileSet([p]))
    assert by_path.drop("profile_id").equals(direct.drop("profile_id"))
    with pytest.raises(profaudit.InputError):
        profaudit.roofline(str(tmp_path / "missing.ncu-rep"))


# ---------------------------------------------------------------------------------------------------
# Tensor-core kernels whose tensor FLOPs the report did not count


def _tensor_ps(pipe_pct: float, method: str, tensor_flops: float | None = None) -> ProfileSet:
    row = {"kernel_id": 0, "name": "hmma_gemm", "device_name": A100, "duration_ns": 1.0e6, "flops_fp32": 2.0e6,
           "dram_bytes": 1.0e8, "sm_clock_hz": 1410e6, "flops_method": method}
    if tensor_flops is not None:
        row["flops_fp16_tensor"] = tensor_flops
    k = pl.DataFrame([row], schema_overrides={"kernel_id": pl.Int64}, strict=False)
    m = pl.DataFrame({"profile_id": ["p", "p"], "kernel_id": [0, 0], "unit": ["%", "%"], "kind": ["metric", "metric"],
                      "metric": ["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active"],
                      "value": [pipe_pct, pipe_pct / 2]})
    return ProfileSet([Profile("p", {}, {"kernels": k, "metrics": m})])


def test_uncounted_tensor_flops_give_no_flop_position():
    # ncu sections with tensor utilisation but no sm__ops_path counters: the 2e6 FLOPs are the FP32
    # epilogue only. With them the GEMM would sit at AI 0.02 and be called DRAM-bound at 6.4 %.
    r = _row(roofline(_tensor_ps(55.0, "sass-counters(sum):fp32;tensor:unknown(pct-or-inst-only)")))
    for col in ("flops", "ai_dram_flops_per_byte", "achieved_flops_per_s", "compute_roof_flops_per_s_at_boost",
                "attainable_flops_per_s_at_boost", "roof_pct_at_boost", "bound_at_boost", "roof_pct_at_kernel_clock"):
        assert r[col] is None, col
    assert "tensor pipe active (55.0% of peak) but its FLOPs were not counted" in r["roof_note"]
    assert "no FLOP counts" not in r["roof_note"]
    tiny = _row(roofline(_tensor_ps(0.004, "sass-counters(sum):fp32;tensor:unknown(pct-or-inst-only)")))
    assert "tensor pipe active (<0.1% of peak)" in tiny["roof_note"]
    # what was measured stays: DRAM throughput against its roof
    assert r["achieved_dram_bytes_per_s"] == pytest.approx(1e11)
    assert r["dram_bandwidth_pct_at_boost"] == pytest.approx(100 * 1e11 / 1555e9)


def test_idle_tensor_pipe_or_counted_tensor_flops_keep_the_position():
    idle = _row(roofline(_tensor_ps(0.0, "sass-counters(sum):fp32;tensor:unknown(pct-or-inst-only)")))
    assert idle["flops"] == 2.0e6 and idle["bound_at_boost"] == "dram" and idle["roof_note"] is None
    counted = _row(roofline(_tensor_ps(55.0, "sass-counters(sum):fp32;tensor-ops-path:fp16", tensor_flops=1.5e11)))
    assert counted["flops"] == pytest.approx(1.5e11 + 2e6) and counted["bound_at_boost"] == "compute"
    assert counted["roof_note"] is None


def test_uncounted_flag_on_a_kernels_frame():
    k = pl.DataFrame({"kernel_id": [0, 1], "duration_ns": [1e6, 1e6], "flops_fp32": [2e6, 2e6], "dram_bytes": [1e8, 1e8],
                      "device_name": [A100, A100], "tensor_flops_uncounted": [True, False], "tensor_pipe_pct": [None, None]})
    rf = roofline(k)
    assert rf["flops"].to_list() == [None, 2e6]
    assert rf["roof_note"][0].startswith("tensor pipe active but its FLOPs were not counted")


@pytest.mark.corpus
def test_wmma_gemm_on_t4_says_its_tensor_flops_are_unknown():
    f = NCU.get("Syswea__cuda-fused-linear-layer__profile_report.ncu-rep")
    if f is None:
        pytest.skip("corpus file absent")
    ncu_report = pytest.importorskip("ncu_report")
    import profaudit

    ctx = ncu_report.load_report(str(f))
    want = {}
    for ri in range(ctx.num_ranges()):
        rg = ctx.range_by_idx(ri)
        for ai in range(rg.num_actions()):
            a = rg.action_by_idx(ai)
            vals = [a.metric_by_name(n).as_double() for n in a.metric_names() if n.startswith(("sm__pipe_tensor", "sm__inst_executed_pipe_tensor")) and "pct" in n]
            want.setdefault(a.name(), []).append(max(vals) if vals else None)
    rf = roofline(profaudit.load(f, parallel=False))
    for r in rf.iter_rows(named=True):
        pct = want[r["short_name"]].pop(0)
        if pct:
            # the T4 report has tensor utilisation only (Turing has no ops_path counters)
            assert f"tensor pipe active ({pct:.1f}% of peak)" in r["roof_note"]
            assert r["flops"] is None and r["roof_pct_at_boost"] is None
        else:
            assert "tensor pipe" not in (r["roof_note"] or "")
    assert any("tensor pipe active" in (n or "") for n in rf["roof_note"].to_list())
