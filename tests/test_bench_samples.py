"""The harness's sample claims (sample_reports/claims/harness_*.yaml) keep the verdicts they got
when sample_reports/make_bench_reports.py made them (fixed logs, seeded bootstrap)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import SAMPLES

VERDICTS = SAMPLES / "claims" / "harness_verdicts.json"
CASES = sorted(json.loads(VERDICTS.read_text()).items()) if VERDICTS.is_file() else []


@pytest.mark.parametrize("name, verdict", CASES, ids=[c[0] for c in CASES])
def test_sample_claim_verdict(name, verdict):
    from profaudit import audit

    report = audit(SAMPLES / "claims" / name)
    assert report.verdict == verdict, report.reasons
    if name == "harness_softmax_cold_vs_hot.yaml":
        assert any(f.rule == "PA209" and f.status.value == "fail" for f in report.findings)
    if name == "harness_softmax_inflated.yaml":
        assert any(r.startswith("PA407") for r in report.reasons)


def test_sample_logs_load_with_their_facts():
    import profaudit

    out = SAMPLES / "bench_cpu" / "softmax"
    if not out.is_dir():
        pytest.skip("sample_reports/bench_cpu not present")
    ps = profaudit.load(str(out))
    assert set(ps.samples["variant"].unique()) == {"unfused", "fused"}
    for p in ps:
        assert p.metadata["time_source"] == "host" and p.metadata["correctness_checked"] == "both"
        assert p.metadata["interleaved"] is True and p.metadata["l2_flush"] is False
