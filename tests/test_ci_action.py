"""The GitHub Action: action.yml runs tools/ci_gate.sh, which these tests run locally."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tests.test_compare_gate import _bench_logs
from tests.test_compare_headline import gbench

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "tools" / "ci_gate.sh"
PROFAUDIT = Path(sys.executable).with_name("profaudit")

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or not PROFAUDIT.exists(), reason="needs bash and the profaudit script")


def gate(tmp_path, **env):
    step, outputs = tmp_path / "step.md", tmp_path / "gh_output"
    full = {**os.environ, "PROFAUDIT": str(PROFAUDIT), "GITHUB_STEP_SUMMARY": str(step), "GITHUB_OUTPUT": str(outputs),
            "PROFAUDIT_OUTPUT_DIR": str(tmp_path / "reports"), **{k: str(v) for k, v in env.items()}}
    p = subprocess.run(["bash", str(SCRIPT)], env=full, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    outs = dict(line.split("=", 1) for line in outputs.read_text().splitlines()) if outputs.exists() else {}
    return p, outs, step


def test_action_runs_the_script_with_every_input():
    doc = yaml.safe_load((REPO / "action.yml").read_text())
    assert doc["runs"]["using"] == "composite"
    step = next(s for s in doc["runs"]["steps"] if s.get("id") == "gate")
    assert step["run"].endswith("tools/ci_gate.sh\"")
    script = SCRIPT.read_text()
    for var, value in step["env"].items():
        assert "${" + var in script, var  # the script reads every variable the action sets
        name = re.fullmatch(r"\$\{\{ inputs\.([\w-]+) \}\}", value).group(1)
        assert name in doc["inputs"]
    for out in doc["outputs"].values():
        key = re.fullmatch(r"\$\{\{ steps\.gate\.outputs\.([\w-]+) \}\}", out["value"]).group(1)
        assert f"{key}=" in script


def test_compare_regression_fails_and_posts_the_summary(tmp_path):
    gbench(tmp_path / "b.json", {"BM_a": 1_000, "BM_b": 5_000}, seed=1, reps=12)
    gbench(tmp_path / "c.json", {"BM_a": 1_200, "BM_b": 5_000}, seed=2, reps=12)
    p, outs, step = gate(tmp_path, PROFAUDIT_BASELINE=tmp_path / "b.json", PROFAUDIT_CANDIDATE=tmp_path / "c.json", PROFAUDIT_MAX_SLOWDOWN="5%")
    assert p.returncode == 1, p.stderr
    assert outs == {"exit-code": "1", "status": "fail", "report-dir": str(tmp_path / "reports")}
    rep = tmp_path / "reports"
    assert "| ❌ | BM_a |" in step.read_text() and step.read_text() == (rep / "summary.md").read_text()
    assert ET.parse(rep / "junit.xml").getroot().find("testsuite").get("failures") != "0"
    assert json.loads((rep / "findings.sarif").read_text())["version"] == "2.1.0"
    assert (rep / "report.md").read_text().startswith("# profaudit compare")
    # the same pair within a 30 % allowance passes
    p, outs, _ = gate(tmp_path, PROFAUDIT_BASELINE=tmp_path / "b.json", PROFAUDIT_CANDIDATE=tmp_path / "c.json", PROFAUDIT_MAX_SLOWDOWN="30%")
    assert p.returncode == 0 and outs["status"] == "pass"


def test_compare_not_comparable_and_bad_input(tmp_path):
    gbench(tmp_path / "b.json", {"BM_a": 1_000}, seed=1)
    gbench(tmp_path / "c.json", {"BM_z": 1_000}, seed=2)
    p, outs, _ = gate(tmp_path, PROFAUDIT_BASELINE=tmp_path / "b.json", PROFAUDIT_CANDIDATE=tmp_path / "c.json")
    assert p.returncode == 4 and outs["status"] == "not-comparable"
    p, outs, _ = gate(tmp_path, PROFAUDIT_BASELINE=tmp_path / "b.json")
    assert p.returncode == 2 and "PROFAUDIT_CANDIDATE" in p.stderr
    p, outs, _ = gate(tmp_path, PROFAUDIT_BASELINE=tmp_path / "b.json", PROFAUDIT_CANDIDATE=tmp_path / "missing.json")
    assert p.returncode == 2 and outs["status"] == "error" and "missing.json" in p.stderr


def test_audit_writes_sarif_and_the_summary(tmp_path):
    src = _bench_logs(tmp_path / "logs", 1_300, 1_000)
    p, outs, step = gate(tmp_path, PROFAUDIT_COMMAND="audit", PROFAUDIT_BASELINE=src / "base.jsonl", PROFAUDIT_CANDIDATE=src / "fast.jsonl", PROFAUDIT_CLAIMED="1.3")
    report = json.loads((tmp_path / "reports" / "report.json").read_text())
    assert p.returncode == (0 if report["verdict"] in ("PASS", "WARN") else 1), p.stderr
    assert outs["exit-code"] == str(p.returncode)
    assert step.read_text() == (tmp_path / "reports" / "summary.md").read_text() and report["verdict"] in step.read_text()
    sarif = json.loads((tmp_path / "reports" / "findings.sarif").read_text())
    flagged = [f for f in report["findings"] if f["status"] == "fail" or (f["status"] == "unknown" and f["severity"] != "info")]
    assert len(sarif["runs"][0]["results"]) == len(flagged)
