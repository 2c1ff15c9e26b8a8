"""`profaudit audit -b … -c …` chooses a benchmark and parameters per side, as claim files can
(--baseline-benchmark, --candidate-benchmark, --params, --baseline-params, --candidate-params)."""

from __future__ import annotations

import json
import random

from conftest import assert_one_line_error


def _wide_log(path):
    rng = random.Random(1)
    rows = ["benchmark,size,duration_ns"]
    for bench, base in (("naive_copy", 2000.0), ("fast_copy", 1000.0)):
        for size, mult in ((1024, 1.0), (2048, 2.0)):
            rows += [f"{bench},{size},{base * mult * (1 + 0.01 * rng.random()):.1f}" for _ in range(60)]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_per_side_benchmark_and_params(cli, tmp_path):
    log = _wide_log(tmp_path / "wide.csv")
    res = cli("audit", "-b", log, "-c", log, "--baseline-benchmark", "naive_copy", "--candidate-benchmark", "fast_copy", "--params", "size=1024", "-f", "json")
    assert res.code in (0, 1), res
    sides = json.loads(res.out)["sides"]
    # ~2,000 ns vs ~1,000 ns at size 1024 (the size 2048 rows are twice as long)
    assert 2000 <= sides["baseline"]["typical_time_ns"] <= 2020 and 1000 <= sides["candidate"]["typical_time_ns"] <= 1010
    # per-side params: the candidate at 2048
    res = cli("audit", "-b", log, "-c", log, "--baseline-benchmark", "naive_copy", "--candidate-benchmark", "fast_copy",
              "--baseline-params", "size=1024", "--candidate-params", "size=2048", "-f", "json")
    sides = json.loads(res.out)["sides"]
    assert 2000 <= sides["candidate"]["typical_time_ns"] <= 2020


def test_per_side_options_need_the_paths_form(cli, tmp_path):
    log = _wide_log(tmp_path / "wide.csv")
    claim = tmp_path / "c.yaml"
    claim.write_text(f"baseline: {log}\ncandidate: {log}\n")
    assert_one_line_error(cli("audit", claim, "--params", "size=1024"), "go with --baseline/--candidate")
    assert_one_line_error(cli("audit", "-b", log, "-c", log, "--params", "size"), "--params 'size': expected KEY=VALUE")
    assert_one_line_error(cli("audit", "-b", log, "-c", log, "--baseline-benchmark", "nope", "--candidate-benchmark", "fast_copy"), "no samples with benchmark 'nope'")


def test_audit_time_counts_reading_the_logs(cli, tmp_path, monkeypatch):
    """The time printed is the time the user waited (loading included), not the rules alone."""
    import time as _time

    import profaudit.audit.claim as claim_mod

    log = _wide_log(tmp_path / "wide.csv")
    real = claim_mod.load_side

    def slow(*a, **k):
        _time.sleep(0.3)  # a slow disk: what the rules-only clock missed
        return real(*a, **k)

    monkeypatch.setattr(claim_mod, "load_side", slow)
    res = cli("audit", "-b", log, "-c", log, "--baseline-benchmark", "naive_copy", "--candidate-benchmark", "fast_copy", "--params", "size=1024", "-f", "json")
    assert json.loads(res.out)["elapsed_s"] >= 0.6
