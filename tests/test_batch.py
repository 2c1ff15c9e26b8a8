"""Batch audit (`profaudit audit DIR|GLOB`) and batch compare (`profaudit compare-pairs CSV`):
one verdict table, exit code by the worst row, the same on a Dask cluster as locally."""

from __future__ import annotations

import io
import json
from pathlib import Path

import polars as pl
import pytest

import profaudit
from profaudit import schema
from profaudit.batch import audit_many, compare_many

CLAIMS = Path(__file__).resolve().parents[1] / "sample_reports" / "claims"
# three verdicts (PASS, FAIL, WARN) for a short run
SOME = str(CLAIMS / "*_[hit][ono][nfr]*.yaml")


def _some_claims() -> list[Path]:
    import glob

    paths = sorted(Path(p) for p in glob.glob(SOME))
    assert [p.name for p in paths] == ["harness_softmax_honest.yaml", "harness_softmax_inflated.yaml", "softmax_torch_vs_naive.yaml"]
    return paths


def test_audit_many_rows_agree_with_single_audits():
    table = audit_many(SOME)
    assert table.columns == schema.AUDIT_VERDICTS.names
    for row, path in zip(table.to_dicts(), _some_claims()):
        r = profaudit.audit(path)
        iv = r.supported.interval
        assert row["claim"] == str(path) and row["verdict"] == r.verdict
        assert row["claimed_speedup_x"] == r.claim.speedup
        if r.supported.supported and iv is not None:
            assert (row["supported_speedup_x"], row["supported_low_x"], row["supported_high_x"]) == (iv.estimate, iv.low, iv.high)
        assert set(filter(None, row["rules_fired"].split(","))) == {f.rule for f in r.problems} | {f.rule for f in r.findings if f.status.name == "FAIL"}
    assert table["verdict"].to_list() == ["PASS", "FAIL", "WARN"]


def test_cli_audit_glob_writes_every_format_and_exits_by_the_worst(tmp_path, cli):
    res = cli("audit", SOME, "-o", str(tmp_path / "v.parquet"))
    assert res.code == 1, res  # one FAIL among them
    table = pl.read_parquet(tmp_path / "v.parquet")
    assert table["verdict"].to_list() == ["PASS", "FAIL", "WARN"]
    honest = str(CLAIMS / "*honest*.yaml")  # one PASS: exit 0
    for suffix in ("csv", "json", "md"):
        assert cli("audit", honest, "-o", str(tmp_path / f"v.{suffix}")).code == 0
    assert pl.read_csv(tmp_path / "v.csv").row(0, named=True) == table.row(0, named=True)
    assert [r["verdict"] for r in json.loads((tmp_path / "v.json").read_text())] == ["PASS"]
    md = (tmp_path / "v.md").read_text()
    assert "| claim | description | verdict |" in md and "| PASS | 2.12x |" in md
    passing = cli("audit", honest, "--format", "csv")
    assert passing.code == 0 and pl.read_csv(io.StringIO(passing.out))["verdict"].to_list() == ["PASS"]


def test_unreadable_claims_are_error_rows_and_exit_2(tmp_path, cli):
    (tmp_path / "a.yaml").write_text("claim: x\nspeedup: 2\nbaseline: {log: missing.csv}\ncandidate: {log: missing.csv}\n")
    (tmp_path / "b.yaml").write_text("{not: yaml: at all")
    res = cli("audit", str(tmp_path), "--format", "json")
    assert res.code == 2, res
    rows = json.loads(res.out)
    assert [r["verdict"] for r in rows] == ["ERROR", "ERROR"]
    assert all(r["error"] and r["claim"] in r["error"] for r in rows), rows
    res = cli("audit", str(tmp_path / "none" / "*.yaml"))
    assert res.code == 2 and "no claim files" in res.err


def test_batch_on_a_dask_cluster_equals_local(tmp_path, cli):
    distributed = pytest.importorskip("distributed")
    local = audit_many(SOME)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as c:
        res = cli("audit", SOME, "--engine", "dask", "--scheduler", c.scheduler_address, "-o", str(tmp_path / "v.parquet"))
        assert "audit_row" in c.scheduler.task_prefixes
    assert res.code == 1, res
    assert pl.read_parquet(tmp_path / "v.parquet").equals(local)


def _log(path: Path, base: float) -> Path:
    rows = "\n".join(f"{j},{base * (1.0 + 0.01 * (j % 5))}" for j in range(40))
    path.write_text("iteration,time_ms\n" + rows + "\n")
    return path


def test_compare_pairs_from_csv(tmp_path, cli):
    _log(tmp_path / "slow.csv", 2.0)
    _log(tmp_path / "fast.csv", 1.0)
    (tmp_path / "pairs.csv").write_text("name,baseline,candidate\nfaster,slow.csv,fast.csv\nslower,fast.csv,slow.csv\nbroken,slow.csv,missing.csv\n")
    table, code = compare_many(tmp_path / "pairs.csv", fail_on="regression")
    assert table.columns == schema.COMPARE_VERDICTS.names
    assert table["pair"].to_list() == ["faster", "slower", "broken"]
    assert code == 2  # a pair could not be read
    faster, slower, broken = table.to_dicts()
    single = profaudit.compare(str(tmp_path / "slow.csv"), str(tmp_path / "fast.csv"))
    assert faster["verdict"] == single.verdict and faster["comparable"] == single.comparable
    assert faster["speedup_x"] == pytest.approx(2.0, rel=0.02) and faster["gate"] == "pass"
    assert slower["speedup_x"] == pytest.approx(0.5, rel=0.02) and slower["gate"] == "fail"
    assert broken["comparable"] == "error" and "missing.csv" in broken["error"]
    (tmp_path / "ok.csv").write_text("baseline,candidate\nslow.csv,fast.csv\n")
    res = cli("compare-pairs", str(tmp_path / "ok.csv"), "--fail-on", "regression", "--format", "csv")
    assert res.code == 0, res
    res = cli("compare-pairs", str(tmp_path / "pairs.csv"), "--fail-on", "regression", "-o", str(tmp_path / "v.md"))
    assert res.code == 2 and "| faster |" in (tmp_path / "v.md").read_text()
    (tmp_path / "bad.csv").write_text("left,right\na,b\n")
    res = cli("compare-pairs", str(tmp_path / "bad.csv"))
    assert res.code == 2 and "needs the column(s) baseline, candidate" in res.err
