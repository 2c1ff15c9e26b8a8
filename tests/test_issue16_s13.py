"""Issue 16, session 13: parameters read as `--params` takes them in compare, ratio cells as
ratios in batch verdict tables, and what a fresh pass over the CLI on real files found."""

from __future__ import annotations

import polars as pl
import pytest

from profaudit import fmt
from profaudit import samples as smp
from profaudit.profile import Profile


def test_fmt_params_reads_as_the_params_option():
    assert fmt.fmt_params('{"Axis Size":8192,"Num Elements":1024}') == "Axis Size=8192, Num Elements=1024"
    assert fmt.fmt_params('{"dtype":"fp32","shape":[2,3]}') == "dtype=fp32, shape=[2, 3]"
    assert fmt.fmt_params("{}") == "" and fmt.fmt_params(None) == ""
    assert fmt.fmt_params("not json") == "not json" and fmt.fmt_params("[1, 2]") == "[1, 2]"


def _timing(pid: str, rows: list[tuple[str, dict, float]]) -> Profile:
    cols = {"benchmark": [], "params": [], "duration_ns": [], "iteration": []}
    for bench, params, centre in rows:
        for i in range(20):
            cols["benchmark"].append(bench)
            cols["params"].append(smp.canonical_params(params))
            cols["duration_ns"].append(centre * (1 + 0.001 * (i % 5)))
            cols["iteration"].append(i)
    return Profile(pid, {"source": "timing", "format": "timing-csv"}, {"samples": smp.frame(cols)})


def test_compare_names_cases_with_readable_params():
    from profaudit.compare import compare
    from profaudit.compare.render import render

    b = _timing("b", [("add", {"N": 1024, "dtype": "fp32"}, 10_000.0), ("add", {"N": 4096, "dtype": "fp32"}, 40_000.0)])
    c = _timing("c", [("add", {"N": 1024, "dtype": "fp32"}, 5_000.0), ("add", {"N": 4096, "dtype": "fp32"}, 39_000.0)])
    cmp = compare(b, c)
    assert sorted(cmp.contributions["item"].to_list()) == ["add N=1024, dtype=fp32", "add N=4096, dtype=fp32"]
    # the join key stays the canonical JSON (JSON output keeps it for programs)
    assert set(cmp.matched["params"].to_list()) == {'{"N":1024,"dtype":"fp32"}', '{"N":4096,"dtype":"fp32"}'}
    for f in ("table", "markdown", "html"):
        text = render(cmp, f, width=120)
        assert "add N=1024, dtype=fp32" in text and '{"N"' not in text and "{&quot;N" not in text, f


def test_ratio_cells_print_as_ratios():
    from profaudit import schema
    from profaudit.batch import to_markdown
    from profaudit.cli.common import fit_cells

    df = schema.conform(schema.COMPARE_VERDICTS, pl.DataFrame({"pair": ["p"], "speedup_x": [1.7536], "speedup_low_x": [1.0], "speedup_high_x": [2.0]}))
    assert fmt.column_units(df)["speedup_x"] == "x"
    cols, rows, _, _ = fit_cells(df.select("pair", "speedup_x", "speedup_low_x", "speedup_high_x"), None)
    assert rows == [["p", "1.75x", "1.00x", "2.00x"]]  # not 1.754 and an exact-looking 1
    assert "| 1.75x | 1.00x | 2.00x |" in to_markdown(df.select("pair", "speedup_x", "speedup_low_x", "speedup_high_x"), "t")
    # grid and block sizes (unit block/thread) are no ratios even though their names end in _x
    k = schema.conform("kernels", pl.DataFrame({"grid_x": [4], "block_x": [256]}))
    assert fit_cells(k.select("grid_x", "block_x"), None)[1] == [["4", "256"]]


@pytest.mark.corpus
def test_nvbench_compare_shows_axis_values_not_json(cli):
    from conftest import corpus_file

    b = corpus_file("nvbench", "BenchResults3060l.csv")
    c = corpus_file("nvbench", "BenchResults3080.csv")
    res = cli("compare", str(b), str(c))
    assert res.code in (0, 1), res
    assert "Axis Size=8192" in res.out and '{"Axis' not in res.out


def test_counts_in_compare_and_gate_lines_read_right():
    from profaudit.compare.gate import CaseGate, gate_cases

    one = gate_cases([CaseGate("add", 1.0, 0.99, 1.01, "same")], fail_on="regression", max_slowdown="5%")
    assert "1 case gated, 0 significant differences" in one.summary_line(), one.summary_line()
    two = gate_cases([CaseGate("a", 1.0, 0.99, 1.01, "same"), CaseGate("b", 1.3, 1.2, 1.4, "faster")], fail_on="regression", max_slowdown="5%")
    assert "2 cases gated, 1 significant difference," in two.summary_line(), two.summary_line()


def test_one_summary_only_case_is_singular():
    from profaudit.compare import compare

    def means(pid: str, v: float) -> Profile:
        cols = {"benchmark": ["add"], "params": [smp.canonical_params({"N": 1})], "duration_ns": [v], "statistic": ["mean"], "sample_count": [100]}
        return Profile(pid, {"source": "timing", "format": "timing-json"}, {"samples": smp.frame(cols)})

    notes = compare(means("b", 10_000.0), means("c", 5_000.0)).notes
    assert any(n.startswith("1 matched case has reported summaries only") for n in notes), notes


def _launch_only_ncu(rule: bool) -> Profile:
    rows = [{"kernel_id": 0, "metric": "launch__grid_size", "unit": "", "value": 200.0, "value_int": 200, "kind": "metric"}]
    if rule:
        rows.append({"kernel_id": 0, "metric": "ProfilingFailed", "value_str": "the replay of this kernel failed", "instance_key": "error", "section": "SpeedOfLight", "kind": "rule"})
    metrics = pl.DataFrame(rows, schema_overrides={"value": pl.Float64, "value_int": pl.Int64}, strict=False)
    kernels = pl.DataFrame({"source": ["ncu"], "kernel_id": [0], "name": ["k"], "short_name": ["k"], "duration_ns": [None]}, schema_overrides={"duration_ns": pl.Float64})
    return Profile("launch-only", {"source": "ncu", "path": "x.ncu-rep"}, {"kernels": kernels, "metrics": metrics})


@pytest.mark.parametrize("rule", [False, True])
def test_a_launch_without_counters_points_at_rule_results_only_when_there_are_some(rule):
    from profaudit import kernel_report as kr
    from profaudit.profile import ProfileSet

    rep = kr.kernel_report(ProfileSet([_launch_only_ncu(rule)]), "k")
    note = next(n for n in rep.notes if "no hardware-counter measurements" in n)
    assert ("rule results below" in note) is rule, note
    if rule:
        assert any(r.text == "the replay of this kernel failed" for s in rep.sections for r in s.rules)


def _mem_section(values: dict):
    from profaudit import kernel_report as kr

    rows = [{"kernel_id": 0, "metric": k, "unit": "byte" if "bytes" in k else "", "value": float(v), "kind": "metric"} for k, v in values.items()]
    rows.append({"kernel_id": 0, "metric": "launch__grid_size", "unit": "", "value": 1.0, "kind": "metric"})
    from profaudit import schema

    m = schema.conform("metrics", pl.DataFrame(rows, schema_overrides={"value": pl.Float64}, strict=False), profile_id="p")
    return next(s for s in kr.ncu_sections(m) if s.ident == "MemoryWorkloadAnalysis")


def test_memory_section_names_every_section_that_collects_what_it_lacks():
    from profaudit import kernel_report as kr

    none = _mem_section({})
    assert kr.collect_flags(none) == "--section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Chart"
    assert kr.missing_line(none).endswith("(collect with `--section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Chart`)")
    # the section's figures without the chart: only the chart's section is missing
    figures = _mem_section({"dram__bytes.sum.per_second": 1e9, "l1tex__t_sector_hit_rate.pct": 50.0, "lts__t_sector_hit_rate.pct": 60.0, "dram__bytes_read.sum": 1e6, "dram__bytes_write.sum": 1e6})
    assert kr.collect_flags(figures) == "--section MemoryWorkloadAnalysis_Chart", figures.missing


def test_text_report_never_breaks_a_metric_name_or_the_section_option():
    from profaudit import kernel_report as kr
    from profaudit.profile import ProfileSet

    text = kr.render(kr.kernel_report(ProfileSet([_launch_only_ncu(False)]), "k"), "text")
    for line in text.splitlines():
        assert "--section" not in line or "`--section " in line, line  # option and its value on one line
        assert not line.rstrip().endswith("`--section"), line
    for s in kr.kernel_report(ProfileSet([_launch_only_ncu(False)]), "k").sections:
        for metric in s.missing:
            assert metric in text, metric  # whole, on one line


def test_dashboard_kernel_view_says_the_same_options_and_counts():
    pytest.importorskip("dash")
    from profaudit.dashboards.kernel_view import section_view

    summary = next(str(c.children[0].children) for c in section_view(_mem_section({})).children if type(c).__name__ == "Details")
    assert summary == "6 metrics missing: collect with --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Chart", summary


def _instantiations() -> Profile:
    names = ["void wgrad<float, 128, 6>(int, float const*)"] * 3 + ["void wgrad<float, 128, 5>(int, float const*)"]
    kernels = pl.DataFrame({"source": ["kineto"] * 4, "kernel_id": [0, 1, 2, 3], "name": names, "short_name": ["wgrad"] * 4, "duration_ns": [1000.0, 1100.0, 1200.0, 900.0]})
    return Profile("inst", {"source": "kineto", "path": "trace.json"}, {"kernels": kernels})


def test_a_name_matching_several_instantiations_lists_them_apart():
    from profaudit import kernel_report as kr
    from profaudit.errors import UsageError
    from profaudit.profile import ProfileSet

    with pytest.raises(UsageError) as e:
        kr.kernel_report(ProfileSet([_instantiations()]), "wgr")
    msg = str(e.value)
    assert "wgrad<float, 128, 6> (--id 0, 3 launches)" in msg and "wgrad<float, 128, 5> (--id 3, 1 launch)" in msg, msg
    rep = kr.kernel_report(ProfileSet([_instantiations()]), kernel_id=3)
    assert rep.name.startswith("void wgrad<float, 128, 5>") and rep.launches == 1


def test_a_trace_without_a_device_says_which_option_gives_one():
    from profaudit import kernel_report as kr
    from profaudit.profile import ProfileSet

    rep = kr.kernel_report(ProfileSet([_instantiations()]), kernel_id=0)
    roof = next(s for s in rep.sections if s.ident == "Roofline")
    assert any("--device NAME" in x for x in roof.summary), roof.summary


def test_a_profile_with_no_rows_anywhere_says_so():
    from profaudit.cli.common import where_the_data_is
    from profaudit.profile import ProfileSet

    empty = ProfileSet([Profile("e", {"source": "nsys"}, {})])
    assert where_the_data_is(empty, "kernels", "-t") == "; no other table holds rows either, only the run metadata (`-t metadata`)"
    assert where_the_data_is(ProfileSet([_instantiations()]), "samples", "-t") == "; they hold 4 rows in `-t kernels`"


@pytest.mark.corpus
def test_kernels_on_an_nsys_export_without_kernel_tables(cli):
    from conftest import corpus_file

    res = cli("kernels", str(corpus_file("nsys-sqlite", "kmeans-parallel")))
    assert res.code == 0, res
    assert "note: no kernels in these inputs; no other table holds rows either, only the run metadata (`-t metadata`)" in res.err


def _xla_profile(rows: list[tuple[str, str, int | None]]) -> Profile:
    """XLA op rows (op, module, program id) in time order, 1 µs each."""
    from profaudit import schema

    n = len(rows)
    kernels = pl.DataFrame({
        "source": ["xla"] * n, "kernel_id": list(range(n)), "name": [r[0] for r in rows], "short_name": [r[0] for r in rows],
        "op_name": [r[0] for r in rows], "module": [r[1] for r in rows], "start_ns": [i * 10_000 for i in range(n)], "duration_ns": [1000.0] * n,
    })
    prog = [{"kernel_id": i, "metric": "program_id", "unit": "", "value": float(r[2]), "kind": "metric"} for i, r in enumerate(rows) if r[2] is not None]
    metrics = schema.conform("metrics", pl.DataFrame(prog, schema_overrides={"value": pl.Float64}, strict=False) if prog else None, profile_id="x")
    return Profile("x", {"source": "xla", "path": "x.xplane.pb"}, {"kernels": kernels, "metrics": metrics})


def test_xla_cost_refuses_a_module_name_that_covers_several_programs():
    from profaudit.errors import UsageError
    from profaudit.xla import attach_cost_analysis

    p = _xla_profile([("dot.1", "jit_mm", 19), ("dot.1", "jit_mm", 32), ("dot.1", "jit_mm", 19), ("dot.1", "jit_mm", 32)])
    with pytest.raises(UsageError) as e:
        attach_cost_analysis(p, {"flops": 1e9}, module="jit_mm")
    assert "ran as 2 compiled programs" in str(e.value) and "19 (2 rows), 32 (2 rows)" in str(e.value), e.value
    out = attach_cost_analysis(p, {"flops": 1e9}, module="jit_mm(32)")
    assert out.tables["kernels"]["flops_total"].to_list() == [None, 1e9, None, 1e9]  # two executions of program 32, 1 GFLOP each
    with pytest.raises(UsageError, match="no rows of program 7 in profile x; its programs: 19, 32"):
        attach_cost_analysis(p, {"flops": 1e9}, module="jit_mm(7)")


def test_xla_cost_counts_an_op_that_runs_twice_per_execution_once_per_execution():
    from profaudit.xla import attach_cost_analysis

    # three executions of one program: a loop body op (body.1) twice, then reduce.2 once
    rows = [("body.1", "jit_loop", None), ("body.1", "jit_loop", None), ("reduce.2", "jit_loop", None)] * 3
    out = attach_cost_analysis(_xla_profile(rows), {"flops": 3e6}, module="jit_loop")
    k = out.tables["kernels"]
    rec = out.metadata["xla_cost_analysis"][-1]
    assert rec["executions"] == 3
    assert k["flops_total"].sum() == pytest.approx(3 * 3e6)  # each execution carries the module's FLOPs once
    assert k["flops_total"].to_list() == pytest.approx([1e6] * 9)  # equal device time within an execution


def test_xla_kernel_report_says_how_to_get_flops_for_its_program():
    from profaudit import kernel_report as kr
    from profaudit.profile import ProfileSet

    p = _xla_profile([("dot.1", "jit_mm", 19), ("dot.1", "jit_mm", 32)])
    roof = next(s for s in kr.kernel_report(ProfileSet([p]), kernel_id=1).sections if s.ident == "Roofline")
    assert any("`profaudit xla-cost PROFILE --cost cost.json --module 'jit_mm(32)' -o DATASET`" in x for x in roof.summary), roof.summary
    one = _xla_profile([("dot.1", "jit_mm", 19)])
    roof = next(s for s in kr.kernel_report(ProfileSet([one]), kernel_id=0).sections if s.ident == "Roofline")
    assert any("--module jit_mm -o DATASET" in x for x in roof.summary), roof.summary


def _unnamed(n: int) -> Profile:
    kernels = pl.DataFrame({"source": ["ncu"] * n, "kernel_id": list(range(n)), "name": [None] * n, "short_name": [None] * n, "duration_ns": [1000.0 * (i + 1) for i in range(n)]},
                           schema_overrides={"name": pl.Utf8, "short_name": pl.Utf8})
    return Profile("u", {"source": "ncu", "path": "u.csv"}, {"kernels": kernels})


def test_kernels_without_names_are_chosen_by_id_and_each_is_its_own():
    from profaudit import kernel_report as kr
    from profaudit.errors import UsageError
    from profaudit.profile import ProfileSet

    ps = ProfileSet([_unnamed(3)])
    rep = kr.kernel_report(ps, kernel_id=2)  # was: internal error (ValueError: 2 is not in list)
    assert rep.launches == 1 and rep.name == fmt.MISSING and rep.short_name == "kernel_id 2 (the profile records no kernel name)"
    assert "Kernel report: kernel_id 2" in kr.render(rep, "text") and "None" not in kr.render(rep, "md")
    with pytest.raises(UsageError, match=r"3 of its 3 kernels have no recorded name; choose one with --id N \(0..2\)"):
        kr.kernel_report(ps)
    with pytest.raises(UsageError, match=r"no kernel matches 'k'; its kernels have no recorded names; choose one with --id N \(0..2\)"):
        kr.kernel_report(ps, "k")
    assert kr.kernel_report(ProfileSet([_unnamed(1)])).launches == 1


def test_compare_table_holds_the_kernel_pairs_as_markdown_does():
    from test_kernel_report import ncu_like_profile

    from profaudit.compare import compare
    from profaudit.compare.render import render
    from profaudit.profile import Profile as P

    a = ncu_like_profile(duration=97_812.5)
    b0 = ncu_like_profile(duration=50_000.0, achieved=60.0)
    b = P("synthetic-ncu-after", dict(b0.metadata), dict(b0.tables))
    cmp = compare(a, b)
    md, table = render(cmp, "markdown"), render(cmp, "table", width=120)
    assert "## Kernel pairs: before and after" in md
    assert "Kernel pairs: before and after" in table and "gemm_tiled → gemm_tiled" in table
    # the values that moved most, in the table as in the Markdown
    assert "Achieved Occupancy" in md and "Achieved Occupancy" in table


def test_kernel_verdict_prints_its_interval_and_shares_through_the_formatter():
    import re

    from test_compare import profile

    from profaudit.compare import compare
    from profaudit.profile import ProfileSet

    fast = ProfileSet([profile(f"b{i}", [("k", 20, 10_000)], seed=i) for i in range(3)])
    slow = ProfileSet([profile(f"c{i}", [("k", 20, 5_000)], seed=9 + i) for i in range(3)])
    v = compare(fast, slow).verdict
    assert re.search(r"95% CI \[\d\.\d\d, \d\.\d\d\]", v), v  # was '95% CI 1.93x-2.07x'
    # a matched share below 1 % is not '0%' (which reads as none)
    b = profile("b", [("shared", 4, 100.0), ("only_b", 4, 240_000.0)], noise=0)
    c = profile("c", [("shared", 4, 100.0), ("only_c", 4, 990_000.0)], noise=0)
    cmp = compare(b, c)
    assert "hold only <0.1% / <0.1% of the baseline's / candidate's" in cmp.verdict, cmp.verdict
    assert any(n.startswith("matched kernels hold only <0.1% of the baseline's and <0.1%") for n in cmp.notes), cmp.notes


def test_instance_name_keeps_template_arguments_only():
    from profaudit.names import instance_name, short_name

    n = "void cudnn::detail::dgrad_engine<float, 512, 6>(int, float const*, kernel_grad_params)"
    assert instance_name(n) == "cudnn::detail::dgrad_engine<float, 512, 6>" and short_name(n) == "cudnn::detail::dgrad_engine"
    assert instance_name("ampere_sgemm_128x64_nn") == "ampere_sgemm_128x64_nn"


def test_two_name_columns_share_the_width_and_context_columns_give_first():
    from profaudit.cli.common import fit_cells

    df = pl.DataFrame({"time_pct": [13.3], "nvtx_range": ["/layer1/layer1.1/conv1/Conv + /layer1/layer1.1/relu/Relu"],
                       "name": ["sm80_xmma_fprop_implicit_gemm_indexed_f16f16_f16f16_f16_nhwckrsc_nhwc_tilesize128x32x64_execute_kernel_trt"]})
    cols, rows, _, _ = fit_cells(df, 80)
    w = {c: len(v) for c, v in zip(cols, rows[0])}
    assert abs(w["nvtx_range"] - w["name"]) <= 1, w  # was 39 beside 12
    df2 = pl.DataFrame({"profile_id": ["pytorch__kineto__resnet50_num_workers_0__worker0-8317ad70"], "kernel_id": [0],
                        "short_name": ["at::native::vectorized_elementwise_kernel"], "duration_ns": [2000]})
    cols, rows, _, _ = fit_cells(df2, 80)
    assert "at::native::vectorized_elementwise_kernel" in rows[0]  # the profile label is cut, the kernel name is not


@pytest.mark.corpus
def test_summary_by_nvtx_keeps_kernel_names_in_a_terminal(cli, monkeypatch):
    from conftest import corpus_file

    monkeypatch.setenv("COLUMNS", "120")
    res = cli("summary", str(corpus_file("nsys-sqlite", "memfusion_artifact")), "--by", "nvtx", "-n", "3")
    assert res.code == 0, res
    assert "hidden to fit" not in res.out or "name" not in res.out.split("hidden to fit")[1].split("(")[0], res.out
    head = res.out.splitlines()[1]
    assert head.rstrip().endswith("name") and "nvtx_range" in head
    assert "names without return type and parameters" in res.out


def _many_cases(pid: str, scale: float) -> Profile:
    rows = [(f"Not Coalesced (Different Array Sizes)", {"Axis Size": n, "Num Elements": n * n}, scale * n) for n in (256, 512, 1024, 2048, 4096, 8192)]
    return _timing(pid, rows)


def _table_lines(text: str, title: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(next(ln for ln in lines if ln.startswith(title)))
    out = []
    for ln in lines[start + 1:]:
        out.append(ln)
        if ln.startswith("└"):
            break
    return out


@pytest.mark.parametrize("width", [80, 120])
def test_compare_tables_print_one_row_per_line_with_the_distinguishing_end(width):
    from profaudit.compare import compare
    from profaudit.compare.render import render

    text = render(compare(_many_cases("b", 1000.0), _many_cases("c", 500.0)), "table", width=width)
    body = [ln for ln in _table_lines(text, "Where the time went") if ln.startswith("│")]
    assert len(body) == 6, body  # one line per case (they folded into two or more)
    assert all(len(ln) <= width for ln in body)
    # the parameters at the end tell the cases apart: a middle ellipsis keeps them
    assert sum("Num Elements=" in ln or "Elements=" in ln or "=" in ln.split("│")[3] for ln in body) == 6
    assert len({ln.split("│")[3].strip() for ln in body}) == 6
    if width == 120:
        matched = _table_lines(text, "Matched cases")
        assert sum(ln.startswith("│") for ln in matched) == 6, matched
        assert "hidden to fit 120 columns: mean" in text.split("Matched cases")[1].split("Added")[0]
        assert "(p<1e-4)" in text and "p=<" not in text


def test_unknown_time_sources_print_as_missing():
    from profaudit.compare import compare
    from profaudit.compare.render import totals_rows

    cmp = compare(_many_cases("b", 1000.0), _many_cases("c", 500.0))
    row = next(r for r in totals_rows(cmp)[1] if r[0] == "time sources")
    assert row[1:3] == [fmt.MISSING, fmt.MISSING], row  # was '?'


def test_kernel_pair_as_text_is_text_not_markdown(cli, tmp_path):
    from test_kernel_report import ncu_like_profile

    from profaudit import kernel_report as kr
    from profaudit.profile import ProfileSet

    before = kr.kernel_report(ProfileSet([ncu_like_profile(duration=97_812.5)]), "gemm_tiled")
    after = kr.kernel_report(ProfileSet([ncu_like_profile(duration=50_000.0, achieved=60.0)]), "gemm_tiled")
    text = kr.render_pair_text(before, after)
    assert text.startswith("Kernel pair: gemm_tiled → gemm_tiled") and "|" not in text and "**" not in text
    assert any(ln.split()[:2] == ["SpeedOfLight", "Duration"] and ln.split()[-1] == "-48.9%" for ln in text.splitlines()), text
    assert text.rstrip().endswith("Duration 97.8 µs → 50.0 µs: 1.96x")
    # the same cells as the Markdown table
    md = kr.render_pair_markdown(before, after)
    assert "| SpeedOfLight | Duration | 97.8 µs | 50.0 µs | -48.9% |" in md


def test_a_note_gives_way_before_the_kernel_name():
    from profaudit.cli.common import fit_cells

    df = pl.DataFrame({"kernel_id": [0], "short_name": ["sgemm_128x128x8_kernel"], "device_key": ["a100-pcie-40gb"],
                       "roof_note": ["tensor pipe active (<0.1% of peak) but its FLOPs were not counted: FLOPs and compute roof unknown"]})
    cols, rows, _, _ = fit_cells(df, 80)
    assert rows[0][cols.index("short_name")] == "sgemm_128x128x8_kernel"  # was 'sgemm_…ernel'
    assert len(rows[0][cols.index("roof_note")]) >= 24


@pytest.mark.corpus
def test_roofline_table_of_two_profiles_says_which_profile(cli, monkeypatch):
    from conftest import corpus_file

    monkeypatch.setenv("COLUMNS", "80")
    a, b = corpus_file("ncu-rep", "ZSL98__bitwise_spgemm"), corpus_file("ncu-rep", "piragi__fuzigrad")
    two = cli("roofline", str(a), str(b), "-n", "2")
    assert two.code == 0, two
    assert two.out.splitlines()[1].startswith("profile_id"), two.out
    one = cli("roofline", str(a), "-n", "2")
    assert "profile_id ZSL98__bitwise_spgemm__sgemm" in one.out.splitlines()[0] and not one.out.splitlines()[1].startswith("profile_id")


def test_colliding_kernel_labels_are_told_apart_without_the_return_type():
    from profaudit.compare.render import _apart

    full = ["void cudnn::bn_bw_1C11_singleread<float, 512, true, 1>(float const*, float)",
            "void cudnn::bn_bw_1C11_singleread<float, 128, true, 1>(float const*, float)"]
    cut = ["cudnn::bn_bw_1C…", "cudnn::bn_bw_1C…"]
    out = _apart(full, cut)
    assert len(set(out)) == 2 and all(len(x) == len(cut[0]) for x in out), out
    assert not any(x.startswith("voi") for x in out) and "512" in out[0] and "128" in out[1], out


def test_timing_totals_list_one_sided_cases_only_when_there_are_some():
    from profaudit.compare import compare
    from profaudit.compare.render import totals_rows

    same = totals_rows(compare(_many_cases("b", 1000.0), _many_cases("c", 500.0)))[1]
    assert not any(r[0].startswith(("added cases", "removed cases")) for r in same), same  # were rows of '0'
    extra = _timing("c", [("extra", {"N": 1}, 2000.0)] + [(f"Not Coalesced (Different Array Sizes)", {"Axis Size": 256, "Num Elements": 65536}, 500.0 * 256)])
    rows = totals_rows(compare(_many_cases("b", 1000.0), extra))[1]
    added = next(r for r in rows if r[0].startswith("added cases"))
    assert added[2].startswith("1: ")


def test_amd_trace_note_names_the_kernel_to_collect():
    from profaudit import kernel_report as kr

    note = kr.trace_note({"device_name": "AMD Instinct MI210", "name": "void k<1>(int)", "short_name": "SubTensorOpWithScalar1d"})
    assert "`rocprof-compute profile -n WORKLOAD -k SubTensorOpWithScalar1d -- <app>`" in note, note
    assert "-k 'at::native::kernel<(1)>'" in kr.trace_note({"device_name": "AMD Instinct MI300X", "name": "x", "short_name": "at::native::kernel<(1)>"})
