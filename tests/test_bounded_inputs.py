"""Small inputs with big costs are refused early: YAML alias bombs in claims, timing tables whose
records would expand far beyond the file; free-form metadata never breaks `ps.metadata`."""

from __future__ import annotations

import json

import pytest
import yaml

import profaudit
from profaudit import safe_yaml
from profaudit.errors import InputError
from tests.conftest import assert_one_line_error

# the 464-byte claim of the issue: nine levels, each a list of ten aliases of the level below
LAUGHS = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n" + "".join(
    f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")
) + "baseline: *i\ncandidate: *i\n"


def test_billion_laughs_claim_is_refused(tmp_path, cli):
    claim = tmp_path / "claim.yaml"
    claim.write_text(LAUGHS)
    assert len(LAUGHS) < 600
    res = cli("audit", claim)
    assert_one_line_error(res, "expands to more than 100,000 values through its aliases: refused")
    assert str(claim) in res.err


def test_alias_budget_and_recursion():
    many = "base: &b {x: 1}\n" + "".join(f"k{i}: *b\n" for i in range(safe_yaml.MAX_ALIASES + 1))
    with pytest.raises(InputError, match="more than 100 aliases"):
        safe_yaml.load(many, "c.yaml")
    with pytest.raises(InputError, match="refers to itself"):
        safe_yaml.load("a: &a [1, *a]\n", "c.yaml")
    deep = "x: " + "[" * (safe_yaml.MAX_DEPTH + 5) + "]" * (safe_yaml.MAX_DEPTH + 5) + "\n"
    with pytest.raises(InputError, match="nested more than 100 levels"):
        safe_yaml.load(deep, "c.yaml")
    with pytest.raises(InputError, match="not valid YAML: line 2"):
        safe_yaml.load("a: 1\n b: [\n", "c.yaml")


def test_ordinary_yaml_loads_like_safe_load():
    text = (
        "version: 1\nmeta: &m {device: A100, dtype: fp16}\nbaseline: {timing: a.csv, meta: *m}\n"
        "candidate: {timing: b.csv, meta: *m, <<: {kernel: gemm}}\nspeedup: 2.10x\nlist: [1, 2.5, null, true, '3']\n"
    )
    assert safe_yaml.load(text, "c.yaml") == yaml.safe_load(text)
    assert safe_yaml.load("", "c.yaml") is None


def test_records_with_their_own_keys_are_refused_before_the_frame(tmp_path, cli):
    f = tmp_path / "times.jsonl"
    f.write_text("".join(json.dumps({"time_ms": 1.0 + i, f"problem_{i}": 1, f"level_{i}": 2}) + "\n" for i in range(3000)))
    res = cli("kernels", "-t", "samples", f)
    assert_one_line_error(res, "3,000 records with at least")
    assert "not a timing log" in res.err
    # the same number of records sharing their keys is a log
    g = tmp_path / "log.jsonl"
    g.write_text("".join(json.dumps({"time_ms": 1.0 + i, "problem": f"p{i % 7}"}) + "\n" for i in range(3000)))
    ps = profaudit.load(g)
    assert ps.samples.height == 3000


def test_gbench_context_with_list_and_mapping_values(tmp_path):
    f = tmp_path / "bench.json"
    f.write_text(json.dumps({
        "context": {"date": "2024-01-01", "host_name": ["node1", "node2"], "executable": {"path": "./b"}, "num_cpus": 8,
                    "mhz_per_cpu": 3000, "library_build_type": "release"},
        "benchmarks": [{"name": "BM_x", "run_name": "BM_x", "run_type": "iteration", "iterations": 10,
                        "real_time": 1.5, "cpu_time": 1.5, "time_unit": "ns"}],
    }))
    ps = profaudit.load(f)
    md = ps.metadata.row(0, named=True)
    assert md["host"] is None
    assert json.loads(md["extra_json"])["host"] == ["node1", "node2"]
    assert set(ps.samples["duration_ns"].to_list()) == {1.5}


def test_pytest_benchmark_machine_info_mapping(tmp_path):
    f = tmp_path / "0001_run.json"
    f.write_text(json.dumps({
        "machine_info": {"node": {"name": "n1"}, "processor": ["x86_64"], "machine": "x86_64", "python_version": "3.11"},
        "commit_info": {"id": ["abc"], "time": {"t": 1}},
        "benchmarks": [{"group": None, "name": "test_a", "fullname": "t.py::test_a", "params": None,
                        "stats": {"min": 1e-6, "max": 2e-6, "mean": 1.5e-6, "median": 1.5e-6, "rounds": 2, "iterations": 1,
                                  "data": [1e-6, 2e-6]}}],
        "datetime": "2024-01-01T00:00:00", "version": "4.0.0",
    }))
    ps = profaudit.load(f)
    md = ps.metadata.row(0, named=True)  # building the table must not fail
    assert md["format"] == "pytest-benchmark"
    assert {1000.0, 2000.0} <= set(ps.samples["duration_ns"].round(6).to_list())


def test_dashboard_claim_check_uses_the_bounded_loader(tmp_path):
    # the dashboard lists a claim's file references before it is audited: that read is bounded
    # too, so an uploaded billion-laughs claim is refused before any alias is expanded
    from profaudit.dashboards import access

    f = tmp_path / "laughs.yaml"
    f.write_text(LAUGHS)
    with pytest.raises(InputError, match="expands to more than 100,000 values through its aliases"):
        access.claim_references(f)
    # still recognised as a claim (its top-level keys say so), so the page says why it is refused
    assert access.looks_like_claim(f)
