"""Kernel analysis view (`profaudit.kernel_report`, `profaudit kernel-report`): hand-built ncu-like
and trace-only profiles with known numbers, and corpus reports cross-checked against ncu_report."""

from __future__ import annotations

import json

import polars as pl
import pytest

from conftest import assert_one_line_error, corpus_file
from profaudit import kernel_report as kr
from profaudit.profile import Profile, ProfileSet

KNAME = "void gemm_tiled<64>(float const*, float const*, float*, int)"


def _metric_rows(kid: int, values: dict, units: dict | None = None) -> list[dict]:
    units = units or {}
    out = []
    for name, v in values.items():
        row = {"kernel_id": kid, "metric": name, "unit": units.get(name, ""), "kind": "metric"}
        if isinstance(v, str):
            row["value_str"] = v
        else:
            row["value"] = float(v)
            if float(v).is_integer():
                row["value_int"] = int(v)
        out.append(row)
    return out


def ncu_like_profile(*, with_stalls: bool = True, achieved: float = 40.0, duration: float = 97_812.5) -> Profile:
    vals = {
        "gpu__time_duration.sum": duration,
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": 31.5,
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 82.25,
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": 82.25,
        "breakdown:gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "dram__cycles_active.avg.pct_of_peak_sustained_elapsed,lts__t_sectors.avg.pct_of_peak_sustained_elapsed",
        "dram__cycles_active.avg.pct_of_peak_sustained_elapsed": 82.25,
        "lts__t_sectors.avg.pct_of_peak_sustained_elapsed": 40.0,
        "launch__grid_size": 4096,
        "launch__block_size": 256,
        "launch__registers_per_thread": 72,
        "launch__occupancy_limit_registers": 3,
        "launch__occupancy_limit_shared_mem": 4,
        "launch__occupancy_limit_warps": 8,
        "launch__occupancy_limit_blocks": 32,
        "sm__maximum_warps_per_active_cycle_pct": 37.5,
        "sm__warps_active.avg.pct_of_peak_sustained_active": achieved,
        "dram__bytes_read.sum": 134_243_200,
        "dram__bytes_write.sum": 67_108_864,
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 4_000_000,
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum": 1_000_000,
        "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active": 12.5,
        "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active": 55.0,
    }
    if with_stalls:
        vals.update({
            "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio": 6.0,
            "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio": 1.5,
            "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio": 1.0,
            "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio": 2.5,
        })
    units = {"gpu__time_duration.sum": "nsecond", "dram__bytes_read.sum": "byte", "dram__bytes_write.sum": "byte"}
    units.update({n: "%" for n in vals if "pct" in n})
    rows = _metric_rows(0, vals, units)
    rows.append({"kernel_id": 0, "metric": "SOLBottleneck", "unit": "%", "value": 17.0, "value_str": "Memory Bound: see @section:MemoryWorkloadAnalysis:Memory Workload Analysis@ for @url:the guide:https://example.invalid/g@", "instance_key": "optimization;speedup=global", "section": "SpeedOfLight", "kind": "rule"})
    rows.append({"kernel_id": 0, "metric": "SOLBottleneck:focus:dram__throughput", "value": 82.0, "section": "SpeedOfLight", "kind": "rule"})
    rows.append({"kernel_id": 0, "metric": "UncoalescedGlobalAccess", "value_str": "uncoalesced accesses", "instance_key": "optimization", "section": "SourceCounters", "kind": "rule"})
    for i, (op, n) in enumerate((("FFMA", 600), ("LDG", 300), ("EXIT", 100))):
        rows.append({"kernel_id": 0, "metric": "sass__inst_executed_per_opcode", "value": float(n), "value_int": n, "instance": i, "instance_key": op, "kind": "metric"})
    metrics = pl.DataFrame(rows, schema_overrides={"value": pl.Float64, "value_int": pl.Int64, "instance": pl.Int64}, strict=False)
    kernels = pl.DataFrame({
        "source": ["ncu", "ncu"], "kernel_id": [0, 1], "name": [KNAME, KNAME], "short_name": ["gemm_tiled", "gemm_tiled"],
        "duration_ns": [duration, 100_000.0], "grid_x": [64, 64], "grid_y": [64, 64], "grid_z": [1, 1], "block_x": [256, 256], "block_y": [1, 1], "block_z": [1, 1],
        "registers_per_thread": [72, 72], "device_name": ["NVIDIA H100 80GB HBM3"] * 2,
    })
    return Profile("synthetic-ncu", {"source": "ncu", "path": "synthetic.ncu-rep", "device_name": "NVIDIA H100 80GB HBM3"}, {"kernels": kernels, "metrics": metrics})


def trace_profile() -> Profile:
    kernels = pl.DataFrame({
        "source": ["kineto"] * 4 + ["kineto"],
        "kernel_id": [0, 1, 2, 3, 4],
        "name": ["ampere_sgemm_128x64_nn"] * 4 + ["vectorized_elementwise_kernel"],
        "short_name": ["ampere_sgemm_128x64_nn"] * 4 + ["vectorized_elementwise_kernel"],
        "duration_ns": [1000.0, 2000.0, 3000.0, 10_000.0, 500.0],
        "grid_x": [8, 8, 8, 16, 1], "grid_y": [1] * 5, "grid_z": [1] * 5, "block_x": [128] * 5, "block_y": [1] * 5, "block_z": [1] * 5,
        "registers_per_thread": [128] * 4 + [32], "shared_mem_bytes": [16384] * 4 + [0],
        "op_name": ["aten::mm"] * 4 + ["aten::add"], "stream": [7] * 5,
    })
    return Profile("synthetic-trace", {"source": "kineto", "path": "trace.json"}, {"kernels": kernels})


def test_ncu_sections_from_known_metrics():
    rep = kr.kernel_report(ProfileSet([ncu_like_profile()]), "gemm_tiled")
    assert rep.kernel_id == 0 and rep.launches == 2 and rep.launch_index == 0
    sol = rep.section("SpeedOfLight")
    assert rep.value("SpeedOfLight", "Duration") == 97_812.5
    assert any("Memory-bound" in x and "82.2%" in x for x in sol.summary), sol.summary
    assert any("Binding memory unit: DRAM" in x for x in sol.summary), sol.summary
    # the missing SOL metrics are named with the section that collects them
    assert "lts__throughput.avg.pct_of_peak_sustained_elapsed" in sol.missing and sol.collect == "SpeedOfLight"
    occ = rep.section("Occupancy")
    assert any(x.startswith("Limiter: registers (3 blocks per SM)") for x in occ.summary), occ.summary
    # achieved above theoretical is what the numbers say; printed as a negative gap, not hidden
    assert any("37.5% theoretical" in x and "-2.5 points" in x for x in occ.summary), occ.summary
    ws = rep.section("WarpStateStats")
    table = ws.tables[0]
    assert [r[0] for r in table.rows] == ["long_scoreboard", "wait", "barrier"]  # ranked, "selected" left out
    assert table.rows[0][2] == "60.0%"  # 6 / (6 + 2.5 + 1.5)
    mem = rep.section("MemoryWorkloadAnalysis")
    chart = {(r[0], r[1]): r for r in mem.tables[0].rows}
    assert chart[("kernel ↔ L1/TEX (global)", "load")][3] == "128 MB"  # 4,000,000 sectors x 32 B
    assert chart[("kernel ↔ L1/TEX (global)", "load")][4] == "25.0%"
    assert chart[("L2 ↔ DRAM", "read")][3] == "134 MB"
    cw = rep.section("ComputeWorkloadAnalysis").tables[0].rows
    assert cw[0] == ["lsu", "55.0%"]
    ins = rep.section("InstructionStats").tables[0].rows
    assert ins[0] == ["FFMA", "600", "60.0%"]
    # rule text: ncu's link markup becomes words; focus rows are not separate results
    sol_rules = sol.rules
    assert len(sol_rules) == 1 and sol_rules[0].speedup_pct == 17.0
    assert sol_rules[0].text == "Memory Bound: see Memory Workload Analysis for the guide (https://example.invalid/g)"
    other = rep.section("Rules")
    assert [r.rule for r in other.rules] == ["UncoalescedGlobalAccess"]


def test_missing_section_names_the_section_to_collect():
    rep = kr.kernel_report(ProfileSet([ncu_like_profile(with_stalls=False)]), "gemm")
    ws = rep.section("WarpStateStats")
    line = kr.missing_line(ws)
    assert line.startswith("not in this report: smsp__average_warp_latency_per_inst_issued.ratio")
    assert line.endswith("(collect with `--section WarpStateStats`)")
    assert "--section WarpStateStats" in kr.render(rep, "md")


def test_launch_selection_and_errors():
    ps = ProfileSet([ncu_like_profile()])
    rep = kr.kernel_report(ps, "gemm_tiled", launch=1)
    assert rep.kernel_id == 1 and rep.launch_index == 1
    with pytest.raises(Exception, match="has 2 launches"):
        kr.kernel_report(ps, "gemm_tiled", launch=2)
    with pytest.raises(Exception, match="no kernel matches 'nope'; kernels: gemm_tiled"):
        kr.kernel_report(ps, "nope")
    tp = ProfileSet([trace_profile()])
    with pytest.raises(Exception, match="matches 2 kernels"):
        kr.kernel_report(tp, "e")  # a substring of both names


def test_trace_only_view():
    rep = kr.kernel_report(ProfileSet([trace_profile()]), "sgemm")
    assert [s.ident for s in rep.sections] == ["Launches", "Roofline"]
    vals = {i.label: i.value for i in rep.section("Launches").items}
    assert vals["Launches"] == 4 and vals["Total time"] == 16_000.0 and vals["Median"] == 2500.0
    assert vals["Min"] == 1000.0 and vals["Max"] == 10_000.0
    assert vals["Grid"] == "(8, 1, 1) ×3, (16, 1, 1) ×1"
    assert vals["Launching op"] == "aten::mm" and vals["Shared memory per block"] == "16.4 kB"
    assert any("ncu --set full" in n for n in rep.notes)
    text = kr.render(rep, "text")
    assert "16.0 µs" in text and "2.50 µs" in text


def test_renderers_and_pair():
    before = kr.kernel_report(ProfileSet([ncu_like_profile()]), "gemm")
    after = kr.kernel_report(ProfileSet([ncu_like_profile(achieved=30.0, duration=48_906.25)]), "gemm")
    html = kr.render(before, "html")
    assert html.startswith("<!DOCTYPE html>") and "&lt;64&gt;" in html and "<h2 id='SpeedOfLight'>" in html
    md = kr.render(before, "md")
    assert "| Duration | 97.8 µs | gpu__time_duration.sum |" in md
    assert json.loads(kr.render(before, "json"))["sections"][0]["ident"] == "SpeedOfLight"
    rows = kr.compare_kernel_reports(before, after)
    moves = [abs(r.change) for r in rows if r.change is not None]
    assert moves == sorted(moves, reverse=True) and moves[0] > 50  # the launches' spread moved most
    dur = next(r for r in rows if (r.section, r.label) == ("SpeedOfLight", "Duration"))
    assert dur.change == -50.0 and dur.change_kind == "relative"
    occ = next(r for r in rows if r.label == "Achieved Occupancy")
    assert occ.change == -10.0 and occ.change_kind == "points"
    pair = kr.render_pair_markdown(before, after)
    assert "Duration 97.8 µs → 48.9 µs: 2.00x" in pair


@pytest.mark.corpus
def test_corpus_values_match_ncu_report():
    ncu_report = pytest.importorskip("ncu_report")
    path = corpus_file("ncu-rep", "victor-lvsy__seq_align")
    import profaudit

    ps = profaudit.load([str(path)])
    rep = kr.kernel_report(ps, "fill_matrix")
    ctx = ncu_report.load_report(str(path))
    action = ctx.range_by_idx(0).action_by_idx(rep.kernel_id)
    assert action.name() == "fill_matrix"

    def direct(name):
        return action.metric_by_name(name).as_double()

    for sec in rep.sections:
        for it in sec.items:
            if it.metric and it.metric.count(".") and action.metric_by_name(it.metric) is not None and not isinstance(it.value, str):
                assert it.value == pytest.approx(direct(it.metric), rel=1e-12), (sec.ident, it.label)
    # the ranked stalls are ncu's own per-issue ratios, largest first
    stalls = {n: direct(n) for n in action.metric_names() if n.startswith("smsp__average_warps_issue_stalled_") and "selected" not in n}
    best = max(stalls, key=stalls.get)
    assert rep.section("WarpStateStats").tables[0].rows[0][0] == best.removeprefix("smsp__average_warps_issue_stalled_").removesuffix("_per_issue_active.ratio")
    # chart bytes: sectors x 32 as ncu's memory chart shows them
    chart = {(r[0], r[1]): r for r in rep.section("MemoryWorkloadAnalysis").tables[0].rows}
    ld = direct("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum") * 32
    from profaudit.fmt import fmt_bytes

    assert chart[("kernel ↔ L1/TEX (global)", "load")][3] == fmt_bytes(ld)
    # every rule result with a message is shown once, in some section
    n_msgs = sum(1 for r in action.rule_results() if r.has_rule_message() and r.rule_message()["message"])
    assert sum(len(s.rules) for s in rep.sections) == n_msgs


@pytest.mark.corpus
def test_corpus_basic_set_names_missing_sections(cli):
    path = corpus_file("ncu-rep", "AveryClapp__ESMM")
    res = cli("kernel-report", path, "-k", "one_blocktiling", "-f", "text")
    assert res.code == 0, res
    assert "(collect with `--section WarpStateStats`)" in " ".join(res.out.split())  # text wraps between words
    assert "Limiter: registers (2 blocks per SM)" in res.out


def test_cli_errors(cli, tmp_path):
    res = cli("kernel-report", str(tmp_path / "none.ncu-rep"), "-k", "x")
    assert_one_line_error(res)
    res = cli("kernel-report", str(tmp_path / "none.ncu-rep"), "-f", "pdf")
    assert_one_line_error(res, "--format 'pdf'")
    log = tmp_path / "t.csv"
    log.write_text("benchmark,duration_ns\na,10\na,12\n")
    res = cli("kernel-report", str(log), "-k", "a")
    assert_one_line_error(res, "-t samples")


@pytest.mark.corpus
def test_corpus_kineto_trace_only_view_matches_the_json():
    import gzip

    import profaudit

    path = corpus_file("chrome-trace", "rank-0.Apr_03_18_51_38")
    name = "volta_sgemm_64x64_nn"
    events = [e for e in json.load(gzip.open(path))["traceEvents"] if e.get("cat") == "kernel" and e.get("name") == name]
    rep = kr.kernel_report(profaudit.load([str(path)]), name)
    vals = {i.label: i.value for i in rep.section("Launches").items}
    assert vals["Launches"] == len(events) == rep.launches
    assert vals["Total time"] == pytest.approx(sum(e["dur"] for e in events) * 1e3, rel=1e-9)
    assert vals["Min"] == pytest.approx(min(e["dur"] for e in events) * 1e3, rel=1e-9)
    grids = {tuple(e["args"]["grid"]) for e in events}
    assert all(f"({a}, {b}, {c})" in vals["Grid"] for a, b, c in grids)
    assert vals["Registers per thread"] == f"{events[0]['args']['registers per thread']:,}"
    assert vals["Launching op"] == "aten::cudnn_convolution"
    assert [s.ident for s in rep.sections] == ["Launches", "Roofline"] and any("ncu --set full" in n for n in rep.notes)


def test_local_memory_traffic_is_called_out():
    p = ncu_like_profile()
    extra = pl.DataFrame(_metric_rows(0, {"l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum": 1000, "l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum": 250,
                                          "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum": 0}), schema_overrides={"value": pl.Float64, "value_int": pl.Int64}, strict=False)
    metrics = pl.concat([p.metrics.drop("profile_id"), extra], how="diagonal_relaxed")
    prof = Profile("with-local", dict(p.metadata), {"kernels": p.kernels.drop("profile_id"), "metrics": metrics})
    mem = kr.kernel_report(ProfileSet([prof]), "gemm").section("MemoryWorkloadAnalysis")
    chart = {(r[0], r[1]): r for r in mem.tables[0].rows}
    assert chart[("kernel ↔ L1/TEX (local)", "load")][2:4] == ["250", "32.0 kB"]
    assert ("kernel ↔ L1/TEX (global)", "atomic") not in chart  # zero atomics: no row
    assert any(x.startswith("Local memory loads: 32.0 kB") for x in mem.summary)


@pytest.mark.corpus
def test_corpus_ncu_csv_details_export_by_labels():
    """ncu --csv (details page) names values by their GUI label in a section: the same sections
    fill from them, each value equal to the CSV cell."""
    import csv

    import profaudit

    path = corpus_file("ncu-csv", "brycelelbach__nsightful__copy_blocked")
    cells = {(r["Section Name"], r["Metric Name"]): (r["Metric Value"], r["Metric Unit"]) for r in csv.DictReader(open(path, newline=""))}
    rep = kr.kernel_report(profaudit.load([str(path)]))
    checked = 0
    for sec in rep.sections:
        for it in sec.items:
            cell = cells.get((sec.title, it.label))
            if cell is None:
                continue
            assert it.value == pytest.approx(float(cell[0].replace(",", ""))), (sec.ident, it.label)
            assert it.unit == cell[1]
            checked += 1
    assert checked >= 20
    occ = rep.section("Occupancy")
    assert occ.summary[0] == "Limiter: warps (block size) (4 blocks per SM)"
    assert rep.section("SpeedOfLight").summary[0].startswith("Memory-bound: memory throughput 61.8%")


def test_several_profiles_need_profile():
    ps = ProfileSet([ncu_like_profile(), trace_profile()])
    with pytest.raises(Exception, match="2 profiles loaded; give one file, or --profile ID"):
        kr.kernel_report(ps, "gemm")
    assert kr.kernel_report(ps, "sgemm", profile="synthetic-trace").source == "kineto"
    with pytest.raises(Exception, match="--profile 'nope': not loaded"):
        kr.kernel_report(ps, "sgemm", profile="nope")


_NCU_LIMITER_WORDS = {
    "number of required registers": "registers",
    "required amount of shared memory": "shared memory",
    "number of warps within each block": "warps (block size)",
    "number of blocks that can fit on the SM": "blocks per SM",
}


@pytest.mark.corpus
@pytest.mark.parametrize("contains", ["victor-lvsy__seq_align", "bobschreiner__NuKEXC", "cornflexxx__HomCmprsr", "Syswea__cuda-fused"])
def test_corpus_occupancy_limiter_agrees_with_ncu_rule(contains):
    """The limiter computed from the block limits names what ncu's own TheoreticalOccupancy rule
    text names, on every kernel of these reports where ncu wrote that rule."""
    import profaudit

    ps = profaudit.load([str(corpus_file("ncu-rep", contains))])
    checked = 0
    for kid in ps.kernels["kernel_id"].to_list():
        occ = kr.kernel_report(ps, kernel_id=kid).section("Occupancy")
        text = " ".join(r.text for r in occ.rules if r.rule == "TheoreticalOccupancy")
        if "limited by" not in text:
            continue
        ncu = {name for words, name in _NCU_LIMITER_WORDS.items() if words in text}
        ours = set(next(x for x in occ.summary if x.startswith("Limiter: "))[len("Limiter: "):].split(" (")[0].split(" and "))
        ours = {"warps (block size)" if o == "warps" else o for o in ours}
        assert ours == ncu, (kid, ours, text)
        checked += 1
    assert checked


@pytest.mark.corpus
@pytest.mark.parametrize("contains", ["AlpriElse__cs599k", "armleth__cuda-mlp", "iamcoleman__monte-carlo", "thedavidchu__speedy_scan", "AveryClapp__ESMM", "MgMap__Hyper-Spec"])
def test_corpus_speed_of_light_verdict_agrees_with_ncu_rule(contains):
    """Compute-bound / memory-bound / balanced / latency-bound as ncu's SOLBottleneck rule says."""
    import profaudit

    ps = profaudit.load([str(corpus_file("ncu-rep", contains))])
    checked = 0
    for kid in ps.kernels["kernel_id"].to_list()[:4]:
        sol = kr.kernel_report(ps, kernel_id=kid).section("SpeedOfLight")
        text = " ".join(r.text for r in sol.rules if r.rule == "SOLBottleneck")
        if not text or not sol.summary:
            continue
        ours = sol.summary[0]
        if "low compute throughput and memory" in text or text.startswith("Small Grid"):
            assert ours.startswith("Neither"), (kid, ours, text)
        elif "Memory is more heavily utilized" in text:
            assert ours.startswith("Memory-bound"), (kid, ours, text)
        elif "Compute is more heavily utilized" in text:
            assert ours.startswith("Compute-bound"), (kid, ours, text)
        elif "well-balanced" in text:
            assert ours.startswith("Balanced"), (kid, ours, text)
        elif "greater than 80.0%" in text:
            assert ours.endswith("-bound", 0, ours.index(":")) or ours.startswith("Balanced"), (kid, ours, text)
        else:
            continue
        checked += 1
    assert checked


def test_trace_note_names_the_right_tool():
    assert "host CPU" in kr.trace_note({"device_name": "CPU", "name": "ynn_fusion"})
    assert "rocprofiler-compute" in kr.trace_note({"device_name": "AMD Instinct MI210", "name": "k"})
    assert "ncu --set full -k regex:volta_sgemm" in kr.trace_note({"device_name": "Tesla V100-SXM2-32GB", "name": "volta_sgemm_64x64_nn", "short_name": "volta_sgemm_64x64_nn"})
