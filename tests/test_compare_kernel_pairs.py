"""The kernel-pair analysis view inside compare: for ncu profiles the Markdown/HTML report holds the
kernel-report values of the matched kernels before and after, and `compare --kernel NAME` shows one
pair in full. Moved values are checked against `ncu_report` (the report) and the csv module (the
CSV export of another run), not against profaudit."""

from __future__ import annotations

import csv
import json

import pytest

from profaudit.compare import compare
from tests.conftest import corpus_file

REP = ("ncu-rep", "Lashi0812__CudaProgramming__readWriteOffset_ca.ncu-rep")
CSV = ("ncu-csv", "Lashi0812__CudaProgramming__ncu_readWriteOffset_ca.csv")
KERNEL = "readOffset(float *, float *, float *, unsigned long, int)"


def rep_metrics(path, kernel: str, names: list[str]) -> dict[str, float]:
    ncu_report = pytest.importorskip("ncu_report")
    ctx = ncu_report.load_report(str(path))
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for i in range(rng.num_actions()):
            a = rng.action_by_idx(i)
            if a.name() == kernel:
                return {n: a[n].as_double() for n in names}
    raise AssertionError(f"{kernel} not in {path}")


def csv_metrics(path, kernel: str, names: list[str]) -> dict[str, float]:
    """The first launch (ID) of `kernel` in an ncu --csv export."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader([line for line in f if not line.startswith("==")]))
    first = min(int(r["ID"]) for r in rows if r["Kernel Name"].startswith(kernel))
    return {r["Metric Name"]: float(r["Metric Value"].replace(",", "")) for r in rows if int(r["ID"]) == first and r["Metric Name"] in names}


@pytest.fixture(scope="module")
def rep_vs_csv():
    a, b = corpus_file(*REP), corpus_file(*CSV)
    return a, b, compare(a, b)


def test_pair_values_against_ncu_report_and_csv(rep_vs_csv):
    from profaudit.compare.kernel_pairs import find_pair

    a, b, cmp = rep_vs_csv
    names = ["gpu__time_duration.sum", "dram__bytes_read.sum"]
    before, after = rep_metrics(a, "readOffset", names), csv_metrics(b, "readOffset", names)
    p = find_pair(cmp, "readOffset")
    assert p.before.kernel_id == 0 and p.after.kernel_id == 0  # each side's first launch
    rows = {(r.section, r.label): r for r in p.rows}
    for (sec, label), metric in {("SpeedOfLight", "Duration"): "gpu__time_duration.sum", ("MemoryWorkloadAnalysis", "DRAM Read"): "dram__bytes_read.sum"}.items():
        r = rows[(sec, label)]
        assert r.before == pytest.approx(before[metric]) and r.after == pytest.approx(after[metric])
        assert r.change == pytest.approx(100 * (after[metric] - before[metric]) / before[metric])
    # the report holds one launch, the CSV three: the launch count moved most
    assert (p.rows[0].label, p.rows[0].before, p.rows[0].after, p.rows[0].change) == ("Launches", 1, 3, pytest.approx(200.0))


def test_markdown_and_html_hold_the_pairs(rep_vs_csv):
    a, b, cmp = rep_vs_csv
    d = rep_metrics(a, "readOffset", ["gpu__time_duration.sum"])["gpu__time_duration.sum"]
    md = cmp.render("markdown")
    sec = md.split("## Kernel pairs: before and after")[1]
    assert "### Kernel pair: readOffset → readOffset" in sec
    assert f"| SpeedOfLight | Duration | {d / 1000:.0f} µs |" in sec
    assert md.index("## Kernel pairs") < md.index("## Notes")
    html = cmp.render("html")
    assert "<h2>Kernel pairs: before and after</h2>" in html and "<td>DRAM Read</td>" in html
    # the terminal table holds the same section (every format shows the same sections); JSON stays as it was
    assert "Kernel pairs: before and after" in cmp.render("table") and "Kernel pair" not in cmp.render("json")


def test_report_against_itself_nothing_moved():
    from profaudit.compare.kernel_pairs import top_pairs

    a = corpus_file(*REP)
    cmp = compare(a, a)
    pairs = top_pairs(cmp)
    assert {p.before.short_name for p in pairs} == {"readOffset", "readOnlyCache"}
    for p in pairs:
        nums = [r for r in p.rows if r.change is not None]
        assert nums and all(r.change == 0 for r in nums)
        want = rep_metrics(a, p.before.short_name, ["launch__registers_per_thread", "smsp__inst_executed.sum"])
        assert p.before.value("LaunchStats", "Registers Per Thread") == want["launch__registers_per_thread"]
        assert p.after.value("InstructionStats", "Executed Instructions") == want["smsp__inst_executed.sum"]


def test_trace_pairs_get_no_kernel_pair_section():
    from test_compare import profile

    cmp = compare(profile("b", [("k", 4, 1_000)], noise=0), profile("c", [("k", 4, 800)], noise=0))
    assert "Kernel pairs" not in cmp.render("markdown")


def test_cli_kernel_shows_the_pair_in_full(cli, rep_vs_csv):
    a, b, cmp = rep_vs_csv
    res = cli("compare", a, b, "--kernel", "readOffset", "-f", "markdown")
    assert res.code == 0, res
    assert res.out.startswith("# Kernel pair: readOffset → readOffset")
    assert "# Before" in res.out and "# After" in res.out and "## Kernel report: readOffset" in res.out
    assert "| Launches | Module |" in res.out  # every row, not the top few
    doc = json.loads(cli("compare", a, b, "--kernel", "readOffset", "-f", "json").out)
    assert doc["moved"][0]["label"] == "Launches" and doc["before"]["kernel_id"] == 0 and doc["after"]["path"] == str(b)
    html = cli("compare", a, b, "-k", "readOffset", "-f", "html").out
    assert html.startswith("<!DOCTYPE html>") and "<h2>Before</h2>" in html


def test_cli_kernel_bad_names_are_one_line_errors(cli, rep_vs_csv):
    from conftest import assert_one_line_error

    a, b, _ = rep_vs_csv
    assert_one_line_error(cli("compare", a, b, "--kernel", "nosuch"), "no matched kernel has that name")
    assert_one_line_error(cli("compare", a, b, "--kernel", "readOnlyCache"), "no matched kernel")  # removed, not matched
