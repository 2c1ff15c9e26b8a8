"""Issue 16 walkthrough defects, one test each: counts that read right ("1 other process", not
"1 other process(es)"), nvbench axis names as problem parameters, report labels that tell the
sides apart, batch and samples tables that keep what distinguishes rows at 80-120 columns."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from profaudit.audit import Claim, Side, audit

REPO = Path(__file__).resolve().parents[1]


def _side(role, median, n=60, seed=0, meta=None, **columns):
    rng = np.random.default_rng(seed)
    return Side.from_durations(role, rng.lognormal(np.log(median), 0.01, n), meta=meta, **columns)


def _finding(claim, code):
    return next(f for f in audit(claim, select=code).findings if f.rule == code)


# --------------------------------------------------------------------------- counted nouns


@pytest.mark.parametrize(("n", "text"), [(1, "1 other process used the GPU"), (3, "3 other processes used the GPU")])
def test_contention_counts_processes(n, text):
    c = Claim(_side("baseline", 1e6, seed=1), _side("candidate", 5e5, seed=2, meta={"other_gpu_processes": n}))
    f = _finding(c, "PA207")
    assert text in f.message and "(es)" not in f.message


@pytest.mark.parametrize(("nb", "nc", "text"), [(1, 60, "only 1 baseline sample ("), (4, 7, "only 4 baseline and 7 candidate samples (")])
def test_too_few_samples_counts_samples(nb, nc, text):
    c = Claim(_side("baseline", 1e6, n=nb, seed=1), _side("candidate", 1.02e6, n=nc, seed=2))
    f = _finding(c, "PA401")
    assert f.message.startswith(text), f.message
    assert "(s)" not in f.message


def test_metadata_agreement_counts_facts():
    meta = {"device": "NVIDIA H100 80GB HBM3"}
    # the device asserted by the claim and recorded by the samples' column: one fact, two sources
    b = _side("baseline", 1e6, seed=1, meta=meta, device_name=["NVIDIA H100 80GB HBM3"] * 60)
    c = _side("candidate", 5e5, seed=2)
    f = _finding(Claim(b, c), "PA108")
    assert f.message == "1 fact recorded by several sources agrees", f.message


def test_cached_results_first_call_reads_singular():
    from profaudit.audit.rules.pa305_cached_results import _first_calls

    assert _first_calls(1) == "first measured call takes"
    assert _first_calls(2) == "first 2 measured calls take"
    # the rule's own output on a candidate whose first call computes and the rest look it up
    times = np.r_[1.0e6, np.full(59, 1.0e4)]
    c = Claim(_side("baseline", 1.0e6, seed=1), Side.from_durations("candidate", times))
    f = _finding(c, "PA305")
    assert "the candidate's first measured call takes 1.00 ms" in f.message, f.message


# --------------------------------------------------------------------------- PA302 and nvbench axes


@pytest.mark.parametrize(("pc", "status"), [({"Num Elements": 8192, "Axis Size": 64}, "pass"), ({"Num Elements": 2048, "Axis Size": 32}, "fail")])
def test_nvbench_axis_names_are_problem_parameters(pc, status):
    pb = json.dumps({"Axis Size": 64, "Num Elements": 8192}, sort_keys=True)
    b = _side("baseline", 1e6, seed=1, params=[pb] * 60)
    c = _side("candidate", 5e5, seed=2, params=[json.dumps(pc, sort_keys=True)] * 60)
    f = _finding(Claim(b, c), "PA302")
    assert f.status.value == status, f
    if status == "fail":
        assert "Axis Size 64 vs 32" in f.message and "Num Elements 8192 vs 2048" in f.message


def test_a_launch_parameter_is_not_a_workload_parameter():
    b = _side("baseline", 1e6, seed=1, params=[json.dumps({"BlockSize": 128})] * 60)
    c = _side("candidate", 5e5, seed=2, params=[json.dumps({"BlockSize": 256})] * 60)
    assert _finding(Claim(b, c), "PA302").status.value == "unknown"  # tuning, not a different problem


# --------------------------------------------------------------------------- labels


def _log(path, rows=("naive", "fast")):
    rng = random.Random(2)
    lines = ["variant,duration_ns"] + [f"{v},{(2000 if v == 'naive' else 1000) * (1 + 0.01 * rng.random()):.1f}" for v in rows for _ in range(30)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_paths_form_labels_tell_the_sides_apart(tmp_path):
    from profaudit.audit.claim import claim_from_paths

    log = _log(tmp_path / "both.csv")
    c = claim_from_paths(log, log, baseline_variant="naive", candidate_variant="fast")
    assert (c.baseline.label, c.candidate.label) == ("naive", "fast")
    a, b = _log(tmp_path / "before.csv", ("naive",)), _log(tmp_path / "after.csv", ("naive",))
    c = claim_from_paths(a, b)
    assert (c.baseline.label, c.candidate.label) == ("before.csv", "after.csv")
    c = claim_from_paths(a, a)
    assert (c.baseline.label, c.candidate.label) == ("baseline", "candidate")


# --------------------------------------------------------------------------- tables at 80-120 columns


def test_batch_table_shows_claims_below_their_shared_folder(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    folder = tmp_path / "a_rather_long_folder_name_for_claims"
    folder.mkdir()
    log = _log(folder / "log.csv")
    for name in ("first_claim_about_softmax.yaml", "second_claim_about_softmax.yaml"):
        (folder / name).write_text(f"speedup: 2\nbaseline: {{timings: {log.name}, variant: naive}}\ncandidate: {{timings: {log.name}, variant: fast}}\n")
    res = cli("audit", folder, "--select", "PA4")
    assert res.code in (0, 1), res
    assert "first_claim_about_softmax.yaml" in res.out and "second_claim_about_softmax.yaml" in res.out, res.out
    assert "a_rather_long_folder_name_for_claims/first" not in res.out
    # the machine-readable forms keep the paths as given
    res = cli("audit", folder, "--select", "PA4", "-f", "csv")
    assert str(folder / "first_claim_about_softmax.yaml") in res.out


def test_samples_table_keeps_statistic_and_the_parameter_that_differs(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    rows = ["benchmark,statistic,dtype,rows,cols,iteration,run,time_ns"]
    for dtype in ("float32", "bfloat16"):
        rows += [f"softmax_rows_long_name,mean,{dtype},1024,1024,0,0,1010251.9", f"softmax_rows_long_name,stdev,{dtype},1024,1024,0,0,537.5"]
    log = tmp_path / "summaries.csv"
    log.write_text("\n".join(rows) + "\n")
    res = cli("kernels", "-t", "samples", log)
    lines = res.out.splitlines()
    assert lines[0].startswith("samples (4 rows, all cols=1024, rows=1024): profile_id summaries-"), lines[0]
    head = lines[1].split()
    assert "statistic" in head and "params" in head, lines[1]
    assert any("mean" in l and "dtype=float32" in l for l in lines) and any("stdev" in l and "dtype=bfloat16" in l for l in lines)
    assert all(len(l) <= 80 for l in lines)
    # csv keeps the canonical JSON
    res = cli("kernels", "-t", "samples", log, "-f", "csv")
    assert '"{""cols"":1024,""dtype"":""float32"",""rows"":1024}"' in res.out


def test_params_for_terminal_cases():
    from profaudit.cli.kernels_cmd import params_for_terminal

    df = pl.DataFrame({"params": ['{"a":1,"b":"x"}', '{"a":1,"b":"y"}', None]})
    out, same = params_for_terminal(df)
    assert same == "a=1" and out["params"].to_list() == ["b=x", "b=y", None]
    out, same = params_for_terminal(pl.DataFrame({"params": ['{"a":1}', '{"a":1}']}))
    assert same == "a=1" and "params" not in out.columns  # all shared: the title says them
    out, same = params_for_terminal(pl.DataFrame({"params": ["{}", "{}"]}))
    assert same == "" and out["params"].to_list() == ["{}", "{}"]
    out, same = params_for_terminal(pl.DataFrame({"params": ['{"a":1,"b":2}', '{"a":1}']}))
    assert same == "a=1" and out["params"].to_list() == ["b=2", "—"]


def test_xla_cost_counts_rows_and_profiles(cli, tmp_path):
    jax = REPO / "sample_reports" / "jax_cpu"
    res = cli("xla-cost", jax, "--cost", jax / "cost_analysis.json", "-o", tmp_path / "ds")
    assert res.code == 0, res
    assert "attached cost analysis to 5 op rows in 1 profile;" in res.err, res.err


def test_title_breaks_between_items_not_inside_a_name():
    from profaudit.cli.common import wrap_between_items

    title = "kernels (12 rows): profile_id AMD-AGI__TraceLens__torch_compile_triton__trace-1f92524c, device_name AMD Instinct MI300X"
    lines = wrap_between_items(title, 80).splitlines()
    assert lines == ["kernels (12 rows):", "profile_id AMD-AGI__TraceLens__torch_compile_triton__trace-1f92524c,", "device_name AMD Instinct MI300X"]
    assert wrap_between_items(title, 200) == title
    # an item wider than the terminal stays whole (the terminal wraps it, never mid-word by us)
    assert wrap_between_items("x: " + "a" * 50, 20).splitlines() == ["x:", "a" * 50]


def test_title_on_a_terminal_keeps_the_device_name_whole(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    log = tmp_path / "t.csv"
    log.write_text("benchmark,device,duration_ns\n" + "".join(f"a_benchmark_with_a_long_name_number_{i},NVIDIA GeForce RTX 3050 Laptop GPU,{1000 + i}\n" for i in range(3)))
    res = cli("kernels", "-t", "samples", log, "-c", "profile_id,device_name,benchmark,duration_ns")
    assert res.out.splitlines()[1] == "device_name NVIDIA GeForce RTX 3050 Laptop GPU", res.out


def test_an_empty_table_prints_its_title_only(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    log = _log(tmp_path / "only_samples.csv")
    res = cli("kernels", log)
    assert res.code == 0 and res.out == "kernels (0 rows)\n", res.out
    assert "-t samples" in res.err  # where the data is
    assert "kernels (0 rows)" not in cli("kernels", log, "-f", "csv").out  # csv stays a header


def test_names_cut_for_a_hidden_column_are_given_their_room_back():
    from profaudit.cli.common import fit_cells

    df = pl.DataFrame({"benchmark": ["Not Coalesced (Different Array Sizes)", "Coalesced (Different Array Sizes)"], "duration_ns": [530.0, 292.0], "phase": ["measure", "measure"], "time_source": ["nvbench_cold_with_a_long_label", "nvbench_cold_with_a_long_label"]})
    cols, rows, hidden, _ = fit_cells(df, 60, drop_order=["phase", "time_source"])
    assert hidden == ["time_source"]
    assert rows[0][0] == "Not Coalesced (Different Array Sizes)", rows  # 37 + 11 + 7 + gaps fit 60 whole


# --------------------------------------------------------------------------- audit ratios


def test_interval_ends_rounded_visibly():
    from profaudit.audit.stats import Interval

    iv = Interval(1.99, 1.984, 1.996, 0.95, "trimmed_mean")
    # .3g printed the upper end as "2": a rounded 1.996 that looks exact
    assert iv.describe() == "1.99x [1.98, 2.00] (trimmed_mean, time, 95%)"
    assert Interval(3.361, 3.145, 3.601, 0.95, "median").describe().startswith("3.36x [3.15, 3.60]")


def test_overstated_claim_report_names_its_correction_once():
    from profaudit.audit.render import render

    claim = REPO / "sample_reports" / "claims" / "softmax_overstated.yaml"
    text = render(audit(claim, select="PA4"), "text", width=200)
    head = next(l for l in text.splitlines() if l.startswith("supported speedup:"))
    assert "corrected by" not in head and head.startswith("supported speedup: corrected: "), head
    assert text.count("corrected by PA407") == 1, text
    # every interval in the report keeps three significant digits at both ends
    import re

    for lo, hi in re.findall(r"\[(\d+\.\d+), (\d+\.\d+)\]", text):
        assert len(lo.replace(".", "").lstrip("0")) == 3 and len(hi.replace(".", "").lstrip("0")) == 3, (lo, hi)


def test_sides_table_spells_unknown_as_the_formatter_does(tmp_path):
    from profaudit.audit.claim import claim_from_paths
    from profaudit.audit.render import _side_rows

    rng = random.Random(4)
    log = tmp_path / "many.csv"
    log.write_text("variant,duration_ns\n" + "".join(f"{v},{b * (1 + 0.01 * rng.random()):.1f}\n" for v, b in (("naive", 2000.0), ("fast", 1000.0)) for _ in range(1200)))
    report = audit(claim_from_paths(log, log, baseline_variant="naive", candidate_variant="fast"), select="PA2")
    rows = _side_rows(report)
    # device, time source: not named, but one run of one file settles both
    assert [r[4:] for r in rows] == [("— (one run)", "— (one run)")] * 2, rows
    other = tmp_path / "other.csv"
    other.write_text(log.read_text())
    two = _side_rows(audit(claim_from_paths(log, other, baseline_variant="naive", candidate_variant="fast"), select="PA2"))
    assert [r[4:] for r in two] == [("—", "—")] * 2, two  # two files: unknown
    assert rows[0][3].endswith("of 1,200"), rows[0]  # counts with separators


def test_every_command_summary_is_one_sentence_line():
    """`profaudit --help` lists each command's first paragraph: a docstring that breaks it over
    lines prints ragged lines in the command list ("..., memory / chart, ...")."""
    import inspect

    import typer.main

    from profaudit.cli import app

    def walk(c, prefix=""):
        if hasattr(c, "commands"):
            for n, sub in c.commands.items():
                yield from walk(sub, f"{prefix} {n}")
        else:
            yield prefix.strip(), c

    ragged = {name: c.help for name, c in walk(typer.main.get_command(app)) if "\n" in inspect.cleandoc(c.help or "").split("\n\n")[0]}
    assert not ragged, sorted(ragged)


def test_names_an_ellipsis_made_identical_are_cut_where_they_differ():
    from profaudit.cli.common import fit_cells, tell_apart

    names = [f"sm80_xmma_fprop_implicit_gemm_f16f16_tilesize{t}_stage3_warpsize2x2x1_execute_kernel_trt" for t in ("128x128x32", "128x64x64", "256x64x32")]
    names.append("vectorized_elementwise_kernel")
    df = pl.DataFrame({"time_pct": [40.0, 30.0, 20.0, 10.0], "total_ns": [4000, 3000, 2000, 1000], "name": names})
    cols, rows, hidden, _ = fit_cells(df, 50)
    shown = [r[cols.index("name")] for r in rows]
    assert len(set(shown[:3])) == 3, shown  # the plain middle cut gave all three the same text
    assert all(len(s) == len(shown[0]) and s.startswith("sm80") and s.endswith("trt") for s in shown[:3]), shown
    assert shown[3] == "vectorized_elementwise_kernel"  # short enough: whole
    # each shows the stretch where it departs from its closest sibling
    assert "128x128" in shown[0] and "128x64" in shown[1] and "256x64" in shown[2], shown
    # names that a plain cut already tells apart keep that cut
    assert tell_apart(["abcdefghij", "zyxwvutsrq"], ["ab…ij", "zy…rq"]) == ["ab…ij", "zy…rq"]


def test_gaps_keeps_the_idle_share_on_a_narrow_terminal(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    ev = [{"ph": "X", "cat": "kernel", "name": f"kernel_{i}", "ts": 10 * i, "dur": 6, "pid": 0, "tid": 7, "args": {"device": 0, "stream": 7}} for i in range(5)]
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": ev, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]}))
    res = cli("gaps", trace)
    head = res.out.splitlines()[1].split()
    # 5 kernels of 6 µs every 10 µs: 46 µs span, 16 µs idle
    assert {"idle_pct", "idle_ns"} <= set(head) and "first_start_ns" not in head, res.out
    assert "34.8%" in res.out and "16,000" in res.out
    res = cli("gaps", trace, "--list")
    assert res.out.startswith("idle gaps (4 gaps)"), res.out


def test_an_ambiguous_side_is_told_how_to_choose_in_its_own_words(cli, tmp_path):
    from conftest import assert_one_line_error

    wide = tmp_path / "wide.csv"
    wide.write_text("N,Torch (ms),Triton (ms)\n" + "".join(f"1024,{0.1 + i * 1e-4:.5f},{0.05 + i * 1e-4:.5f}\n" for i in range(20)))
    assert_one_line_error(cli("audit", "-b", wide, "-c", wide, "--time-column", "Torch (ms),Triton (ms)"),
                          "baseline: wide.csv holds 2 variants (Torch (ms); Triton (ms)); choose one with --baseline-variant (e.g. --baseline-variant 'Torch (ms)')")
    sweep = tmp_path / "sweep.csv"
    sweep.write_text("benchmark,Axis Size,duration_ns\n" + "".join(f"copy,{n},{n * 10 + i}\n" for n in (64, 128) for i in range(20)))
    assert_one_line_error(cli("audit", "-b", sweep, "-c", sweep),
                          "holds 2 parameter sets (Axis Size=64; Axis Size=128); choose one with --params (e.g. --params 'Axis Size=64')")
    claim = tmp_path / "c.yaml"
    claim.write_text(f"baseline: {{timings: {sweep.name}}}\ncandidate: {{timings: {sweep.name}, params: {{Axis Size: 64}}}}\n")
    assert_one_line_error(cli("audit", claim), "choose one with baseline.params")


def test_rule_explanations_print_flush_left(cli):
    res = cli("rules", "PA201")
    body = res.out.split("\n\n", 1)[1]
    assert body.startswith("The sides ran on different devices"), body[:80]
    assert not [l for l in body.splitlines() if l.startswith(" ")], body  # no docstring indentation left
    assert "What it detects:" in body and "one run of one file" in body


def test_audit_text_list_items_wrap_under_themselves():
    from profaudit.audit.render import render

    claim = REPO / "sample_reports" / "claims" / "softmax_torch_vs_naive.yaml"
    report = audit(claim, select="PA4")
    text = render(report, "text", width=60)
    lines = text.splitlines()
    # the report's own lines (tables and their titles are rich's)
    start = lines.index("why:")
    prose = lines[:start] + [l for l in lines if l.startswith(("  - ", "    ", "passed: ", "noise", "interval:", "Mann-Whitney"))]
    assert not [l for l in prose if l != l.rstrip()], [l for l in prose if l != l.rstrip()]  # no padding to the width
    why = lines.index("why:")
    items = lines[why + 1 : lines.index("", why)]
    assert items[0].startswith("  - PA4") and all(l.startswith(("  - ", "    ")) and len(l) <= 60 for l in items), items
    assert len(items) > len(report.reasons)  # they did wrap at 60, under their own text
    assert lines[-1].endswith(" s") and lines[-1].startswith(f"{len(report.rules)} rules, ")
    one = render(audit(claim, select="PA402"), "text", width=100).splitlines()[-1]
    assert one.startswith("1 rule, "), one


def test_compare_header_keeps_paths_whole_and_spells_unknown(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    rng = random.Random(6)
    folder = tmp_path / "a_long_folder_name_that_pushes_the_path_past_sixty"
    folder.mkdir()
    a, b = folder / "baseline_timings.csv", folder / "candidate_timings.csv"
    for p, t in ((a, 2000.0), (b, 1000.0)):
        p.write_text("benchmark,duration_ns\n" + "".join(f"copy,{t * (1 + 0.01 * rng.random()):.1f}\n" for _ in range(40)))
    res = cli("compare", a, b)
    lines = res.out.splitlines()
    assert f"  baseline: {a}" in lines and f" candidate: {b}" in lines, res.out[:400]
    assert any(l.strip() == "devices: — vs —" for l in lines), res.out[:600]
    verdict = lines.index(next(l for l in lines if l.startswith("   verdict: ")))
    assert lines[verdict + 1].startswith(" " * 12), lines[verdict : verdict + 2]  # wraps under its value


@pytest.mark.parametrize("command", ["summary", "gaps", "roofline"])
def test_kernel_commands_on_a_timing_log_say_where_its_data_is(cli, tmp_path, command):
    log = _log(tmp_path / "only_samples.csv")
    res = cli(command, log)
    assert res.code == 0, res
    assert "no kernel rows in the input" in res.err and "they hold 60 rows in `profaudit kernels -t samples`" in res.err, res.err


def test_unstated_statistic_lists_what_it_matches_as_prose(tmp_path):
    from profaudit.audit.claim import claim_from_paths

    log = _log(tmp_path / "both.csv")
    f = _finding(claim_from_paths(log, log, baseline_variant="naive", candidate_variant="fast", claimed=2.0), "PA404")
    msg = f.message
    assert msg.startswith("the claim does not say which statistic it uses; it matches the "), msg
    listed = msg.split("it matches the ", 1)[1]
    assert listed.endswith(" ratios") and " and " in listed and not listed.endswith(", ratio"), msg
