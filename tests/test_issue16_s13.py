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
