"""CI gating: --fail-on / --max-slowdown on `compare` and `bench compare`, exit codes, JUnit XML,
SARIF and the Markdown step summary."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from profaudit.compare import compare
from profaudit.compare.gate import EXIT_FAILED, EXIT_NOT_COMPARABLE, CaseGate, gate_cases, gate_comparison, parse_slowdown
from tests.conftest import assert_one_line_error
from tests.test_compare_headline import gbench


@pytest.fixture
def slower(tmp_path):
    """BM_a 20 % slower (clearly significant at 1 % noise), BM_b unchanged."""
    gbench(tmp_path / "b.json", {"BM_a": 1_000, "BM_b": 5_000}, seed=1, reps=12)
    gbench(tmp_path / "c.json", {"BM_a": 1_200, "BM_b": 5_000}, seed=2, reps=12)
    return tmp_path / "b.json", tmp_path / "c.json"


def test_parse_slowdown():
    assert parse_slowdown("5%") == pytest.approx(0.05)
    assert parse_slowdown("5") == pytest.approx(0.05)
    assert parse_slowdown("1.1x") == pytest.approx(0.1)
    assert parse_slowdown(0.02) == 0.02
    from profaudit.errors import UsageError

    for bad in ("fast", "-5%", "0.9x"):
        with pytest.raises(UsageError):
            parse_slowdown(bad)


def test_regression_beyond_threshold_fails_the_case(slower, cli, tmp_path):
    b, c = slower
    cmp = compare(b, c)
    g = gate_comparison(cmp, fail_on="regression", max_slowdown="5%")
    assert g.status == "fail" and g.exit_code == EXIT_FAILED
    failed = [x.name for x in g.failures]
    assert "BM_a" in failed and "BM_b" not in failed
    a = next(x for x in g.cases if x.name == "BM_a")
    assert a.significance == "slower" and a.change_pct == pytest.approx(20, abs=2)
    # the same slowdown under a 30 % allowance passes, per case and on the geomean
    ok = gate_comparison(cmp, fail_on="regression", max_slowdown="30%")
    assert ok.status == "pass" and ok.exit_code == 0 and not ok.failures
    res = cli("compare", b, c, "--fail-on", "regression", "--max-slowdown", "5%", "--junit", tmp_path / "j.xml", "-f", "json", "-o", tmp_path / "out.json")
    assert res.code == 1, res
    assert "FAIL" in res.err and "BM_a" in res.err
    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    cases = {tc.get("name"): tc for tc in suite.iter("testcase")}
    assert set(cases) == {"BM_a", "BM_b", "geomean over matched cases"}
    assert cases["BM_a"].find("failure") is not None and cases["BM_b"].find("failure") is None
    assert suite.get("tests") == "3" and int(suite.get("failures")) >= 1
    doc = json.loads((tmp_path / "out.json").read_text())
    assert doc["gate"]["status"] == "fail" and doc["gate"]["exit_code"] == 1 and doc["profaudit_comparison"] == 3
    assert {c["name"] for c in doc["gate"]["cases"] if c["failed"]} | ({doc["gate"]["aggregate"]["name"]} if doc["gate"]["aggregate"]["failed"] else set()) == set(failed)
    assert cli("compare", b, c, "--fail-on", "regression", "--max-slowdown", "30%", "-o", tmp_path / "t.txt").code == 0
    assert cli("compare", b, c, "-o", tmp_path / "t.txt").code == 0  # --fail-on none by default


def test_geomean_fails_when_every_case_is_a_bit_slower():
    # four cases each 4 % slower with tight intervals: no case beyond 5 %, the geomean neither;
    # at 3 % every case and the geomean fail
    cases = [CaseGate(f"c{i}", 1 / 1.04, 1 / 1.05, 1 / 1.03, "slower") for i in range(4)]
    assert gate_cases(cases, fail_on="regression", max_slowdown="5%").status == "pass"
    g = gate_cases([CaseGate(c.name, c.speedup, c.ci_low, c.ci_high, c.significance) for c in cases], fail_on="regression", max_slowdown="3%")
    assert g.status == "fail" and g.aggregate.failed and g.aggregate.significance == "slower"
    # the geomean's interval is narrower than one case's (four independent cases)
    assert g.aggregate.ci_high - g.aggregate.ci_low < (1 / 1.03 - 1 / 1.05)


def test_geomean_alone_can_fail():
    # each case's own test is inconclusive (wide intervals), but together they are significant
    cases = [CaseGate(f"c{i}", 0.8, 0.62, 1.03, "inconclusive") for i in range(12)]
    g = gate_cases(cases, fail_on="regression", max_slowdown="5%")
    assert not any(c.failed for c in g.cases)
    assert g.aggregate.significance == "slower" and g.aggregate.failed and g.status == "fail"


def test_only_significant_differences_count(tmp_path):
    # 3 % slower under 20 % noise with 6 repetitions: not significant, not a regression at 0 %
    gbench(tmp_path / "b.json", {"BM_noisy": 1_000}, seed=3, reps=6)
    rng = np.random.default_rng(0)
    doc = json.loads((tmp_path / "b.json").read_text())
    for r in doc["benchmarks"]:
        r["real_time"] = r["cpu_time"] = float(1_030 * (1 + 0.2 * rng.standard_normal()))
    (tmp_path / "c.json").write_text(json.dumps(doc))
    g = gate_comparison(compare(tmp_path / "b.json", tmp_path / "c.json"), fail_on="regression", max_slowdown="0%")
    assert g.cases[0].significance in ("inconclusive", "unknown")
    assert g.status == "pass" and g.exit_code == 0


def test_any_significant_fails_on_a_speedup_too(tmp_path, cli):
    gbench(tmp_path / "b.json", {"BM_a": 2_000}, seed=1, reps=10)
    gbench(tmp_path / "c.json", {"BM_a": 1_000}, seed=2, reps=10)
    b, c = tmp_path / "b.json", tmp_path / "c.json"
    assert cli("compare", b, c, "--fail-on", "regression", "-o", tmp_path / "o.txt").code == 0
    res = cli("compare", b, c, "--fail-on", "any-significant", "--max-slowdown", "10%", "-o", tmp_path / "o.txt")
    assert res.code == 1 and "BM_a" in res.err


def test_not_comparable_has_its_own_exit_code(tmp_path, cli):
    gbench(tmp_path / "b.json", {"BM_a": 2_000}, seed=1)
    gbench(tmp_path / "c.json", {"BM_z": 1_000}, seed=2)
    b, c = tmp_path / "b.json", tmp_path / "c.json"
    res = cli("compare", b, c, "--fail-on", "regression", "--junit", tmp_path / "j.xml", "-o", tmp_path / "o.txt")
    assert res.code == EXIT_NOT_COMPARABLE == 4
    assert "not comparable" in res.err
    tc = ET.parse(tmp_path / "j.xml").getroot().find("testsuite/testcase")
    assert tc.get("name") == "comparable" and tc.find("error") is not None
    assert cli("compare", b, c, "--fail-on", "none", "-o", tmp_path / "o.txt").code == 0


def test_unfair_pair_is_not_comparable():
    from tests.test_compare import profile

    b = profile("b", [("k", 20, 1_000)], device="NVIDIA H100 80GB HBM3")
    c = profile("c", [("k", 20, 2_000)], device="NVIDIA A100-SXM4-80GB")
    cmp = compare(b, c)
    assert cmp.comparable == "no"
    g = gate_comparison(cmp, fail_on="regression")
    assert g.status == "not-comparable" and g.exit_code == 4 and g.reasons


def test_bad_gate_options_are_one_line_errors(slower, cli):
    b, c = slower
    assert_one_line_error(cli("compare", b, c, "--fail-on", "slower"), "--fail-on")
    assert_one_line_error(cli("compare", b, c, "--fail-on", "regression", "--max-slowdown", "a lot"), "--max-slowdown")


def test_markdown_summary_goes_to_the_step_summary(slower, cli, tmp_path, monkeypatch):
    b, c = slower
    step = tmp_path / "step.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    res = cli("compare", b, c, "--fail-on", "regression", "--max-slowdown", "5%", "--summary", tmp_path / "s.md", "-o", tmp_path / "o.txt")
    assert res.code == 1
    text = step.read_text()
    assert text.startswith("earlier step\n")  # appended, not overwritten
    md = (tmp_path / "s.md").read_text()
    assert md in text and "❌" in md and "| ❌ | BM_a |" in md
    assert "FAIL (--fail-on regression, --max-slowdown 5%)" in md
    before = step.read_text()
    assert cli("compare", b, c, "-o", tmp_path / "o.txt").code == 0
    assert step.read_text() == before  # no gating, no report asked: the job page is left alone


def test_sarif_lists_the_fairness_findings(tmp_path, cli):
    from tests.test_compare import profile

    b = profile("b", [("k", 20, 1_000)], device="NVIDIA H100 80GB HBM3")
    c = profile("c", [("k", 20, 2_000)], device="NVIDIA A100-SXM4-80GB")
    from profaudit.compare.ci_report import sarif

    cmp = compare(b, c)
    doc = json.loads(sarif(cmp.findings, ["base.nsys-rep", "cand.nsys-rep"]))
    assert doc["version"] == "2.1.0"
    run = doc["runs"][0]
    ids = {r["id"] for r in run["tool"]["driver"]["rules"]}
    res = run["results"]
    assert {r["ruleId"] for r in res} <= ids
    pa201 = [r for r in res if r["ruleId"] == "PA201"]
    assert pa201 and pa201[0]["level"] == "error" and pa201[0]["kind"] == "fail"
    assert pa201[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "base.nsys-rep"
    triggered = [f for f in cmp.findings if f.status.value == "fail"]
    assert len([r for r in res if r["kind"] == "fail"]) == len(triggered)


def _bench_logs(folder, base_ns, fast_ns, n=40):
    from profaudit.timinglog import write_timing_log

    rng = np.random.default_rng(7)
    meta = {"device_name": "NVIDIA H100 80GB HBM3", "dtype": "float32", "time_source": "cuda_events"}
    for variant, t in (("base", base_ns), ("fast", fast_ns)):
        d = t * (1 + 0.01 * rng.standard_normal(n))
        rows = {"benchmark": ["vadd"] * n, "variant": [variant] * n, "params": ['{"n":1024}'] * n, "iteration": list(range(n)),
                "duration_ns": d.tolist(), "time_source": ["cuda_events"] * n, "device_name": [meta["device_name"]] * n}
        write_timing_log(folder / f"{variant}.jsonl", rows, meta)
    return folder


def test_bench_compare_gates_the_same_way(tmp_path, cli):
    src = _bench_logs(tmp_path / "logs", 1_000, 1_300)
    res = cli("bench", "compare", src, "--baseline", "base", "--candidate", "fast", "--fail-on", "regression", "--max-slowdown", "5%", "--junit", tmp_path / "j.xml", "-o", tmp_path / "claims")
    assert res.code == 1, res
    tc = {t.get("name"): t for t in ET.parse(tmp_path / "j.xml").getroot().iter("testcase")}
    assert tc["vadd[n=1024]"].find("failure") is not None
    res = cli("bench", "compare", src, "--baseline", "base", "--candidate", "fast", "--sarif", tmp_path / "f.sarif", "-o", tmp_path / "claims", "-f", "json")
    audit = json.loads((tmp_path / "claims" / json.loads(res.out)[0]["audit_json"].split("/")[-1]).read_text())
    flagged = [f for f in audit["findings"] if f["status"] == "fail" or (f["status"] == "unknown" and f["severity"] != "info")]
    results = json.loads((tmp_path / "f.sarif").read_text())["runs"][0]["results"]
    assert len(results) == len(flagged) > 0
    assert all(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(".yaml") for r in results)
    ok = cli("bench", "compare", src, "--baseline", "base", "--candidate", "fast", "--fail-on", "regression", "--max-slowdown", "40%", "-o", tmp_path / "claims")
    assert ok.code == 0, ok
