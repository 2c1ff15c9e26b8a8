"""CLI messages: ingest stopping at a bad file says how to go on; counts read as words."""

from __future__ import annotations

from conftest import SAMPLES, assert_one_line_error

LOG = SAMPLES / "claims" / "logs" / "softmax" / "naive" / "cols-1024_dtype-bfloat16_rows-1024.run0.jsonl"


def test_ingest_stopped_by_a_bad_file_mentions_skip_bad(cli, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "good.jsonl").write_bytes(LOG.read_bytes())
    (src / "cut.jsonl").write_bytes(LOG.read_bytes()[:300])
    res = cli("ingest", src, "-o", tmp_path / "ds")
    assert_one_line_error(res, "cut.jsonl")
    assert "--skip-bad skips unreadable inputs" in res.err and not (tmp_path / "ds").exists()
    ok = cli("ingest", src, "-o", tmp_path / "ds", "--skip-bad")
    assert ok.code == 0 and "ingested 1 profile (0 kernel rows," in ok.err
    # a single named file that is bad: nothing to skip to, no hint
    res = cli("ingest", src / "cut.jsonl", "-o", tmp_path / "ds2")
    assert_one_line_error(res, "cut.jsonl")
    assert "--skip-bad" not in res.err


def test_pa407_names_the_supported_interval_once(cli):
    res = cli("audit", SAMPLES / "claims" / "softmax_overstated.yaml")
    line = next(l for l in res.out.splitlines() if "PA407 claim-outside-interval" in l)
    interval = line[line.index("recomputed ") + len("recomputed "):].split(" (")[0]
    assert line.count(interval) == 1, line


def test_pa202_says_a_version_once(cli):
    import pytest

    from conftest import corpus_file

    a = corpus_file("ncu-rep", "Lashi0812__CudaProgramming__smemTranspose")
    b = corpus_file("ncu-rep", "Lashi0812__CudaProgramming__smemReduceInteger")
    res = cli("compare", a, b, "-f", "json")
    import json

    msgs = [f["message"] for f in json.loads(res.out)["findings"] if f.get("rule") == "PA202" or f.get("code") == "PA202"]
    if not msgs:
        pytest.skip("PA202 did not fire on this pair")
    assert msgs[0].count("535.104.05") == 1, msgs[0]
