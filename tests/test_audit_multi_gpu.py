"""PA210 multi-gpu-parity: world size, nodes and interconnect as facts of a multi-rank side, a
mismatch between the sides, and a step time from one rank corrected to the job's step time; each
number checked against the plain JSON of the synthetic rank traces (tests/audit_ranks_fixtures.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from audit_fixtures import fair_claim, side, trace
from audit_ranks_fixtures import fair_multi_claim, job_steps, multi_claim, multi_side, one_rank_claim, rank_steps, run_folder
from profaudit.audit import Status, audit, gather
from profaudit.audit.findings import Severity
from profaudit.audit.rules import BY_CODE
from profaudit.specs import match_device

RULE = BY_CODE["PA210"]


def _docs(folder):
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def _fired(findings):
    return [f for f in findings if f.status is Status.FAIL]


def test_job_shape_is_recorded_as_facts():
    folder = run_folder(kernels=6)
    (f,) = RULE.check(gather(fair_multi_claim()))
    assert f.status is Status.PASS
    docs = _docs(folder)
    assert f.evidence["world_size_baseline"].value == docs[0]["distributedInfo"]["world_size"] == 4
    assert f.evidence["world_size_baseline"].kind == "recorded"
    assert f.evidence["nodes_baseline"].value == len({d["host_name"] for d in docs}) == 2
    # two nodes: the collectives cross the network, InfiniBand in the device spec (one direction)
    ib = match_device(docs[0]["deviceProperties"][0]["name"]).interconnects["infiniband"].value
    assert ib == 5.0e10
    assert f.evidence["interconnect_baseline"].value == "infiniband 50.0 GB/s"
    assert "4 ranks on 2 nodes" in f.message


def test_one_rank_step_time_is_flagged_and_corrected_to_the_job_step():
    c = one_rank_claim()
    cand = run_folder(kernels=4, early_rank=2)
    ev = gather(c)
    (f,) = _fired(RULE.check(ev))
    assert f.severity is Severity.FAIL and f.side == "candidate"
    job = job_steps(cand)
    rank0 = rank_steps(cand, 0)
    # the early rank makes the job's step about 60 us longer than rank 0's window in every step
    # (less up to 2 us of per-rank start jitter)
    assert np.all(np.abs(job - rank0 - 60_000) < 2_000)
    assert f.evidence["job_step_ns"] == float(np.median(job))
    assert f.evidence["rank"] == 0 and f.evidence["rank_window_ns"] == float(np.median(rank0))
    assert f.evidence["timed_ns"] in set(rank0.tolist()) | {float(np.median(rank0))}
    assert "one rank's time" in f.message
    # corrected: the baseline's own timing stands, the candidate's becomes the job's step
    tb = ev.baseline.typical_time_ns()
    assert f.correction.estimate == pytest.approx(tb / float(np.median(job)), rel=1e-12)
    report = audit(c, select="PA210")
    assert report.verdict == "FAIL"
    assert "PA210" in report.supported.corrected_by
    assert report.supported.interval.estimate == pytest.approx(f.correction.estimate, rel=1e-12)
    # the claim, measured on rank 0, overstates the speedup the job step supports
    assert report.supported.interval.estimate < c.speedup


def test_one_rank_baseline_raises_the_corrected_speedup():
    base, cand = run_folder(kernels=6, early_rank=2), run_folder(kernels=4)
    ev = gather(multi_claim(base, cand, one_rank="baseline"))
    (f,) = _fired(RULE.check(ev))
    assert f.side == "baseline"
    assert f.correction.estimate == pytest.approx(float(np.median(job_steps(base))) / ev.candidate.typical_time_ns(), rel=1e-12)


def test_different_world_size_and_nodes_are_not_comparable():
    four, eight = run_folder(kernels=6), run_folder(world_size=8, kernels=6)
    fs = _fired(RULE.check(gather(multi_claim(four, eight))))
    msgs = " | ".join(f.message for f in fs)
    assert "different world sizes: baseline 4" in msgs and "candidate 8" in msgs
    assert "different node counts: baseline 2" in msgs and "candidate 4" in msgs
    assert all(f.non_comparable for f in fs)
    report = audit(multi_claim(four, eight), select="PA210")
    assert report.supported.interval is None and not report.supported.comparable


def test_one_node_against_two_differs_in_interconnect():
    one_host, two_hosts = run_folder(ranks_per_host=4, kernels=6), run_folder(kernels=6)
    fs = _fired(RULE.check(gather(multi_claim(one_host, two_hosts))))
    msgs = " | ".join(f.message for f in fs)
    nvlink = match_device("NVIDIA H100 80GB HBM3").interconnects["nvlink"].value
    assert nvlink == 4.5e11
    assert "different node counts: baseline 1" in msgs
    assert "different interconnects: baseline nvlink 450 GB/s" in msgs and "candidate infiniband 50.0 GB/s" in msgs
    assert "world sizes" not in msgs


def test_single_rank_evidence_is_cannot_check():
    (f,) = RULE.check(gather(fair_claim()))
    assert f.status is Status.UNKNOWN and f.severity is Severity.INFO
    assert f.message.startswith("cannot check: ") and "single rank" in f.message


def test_multi_rank_against_one_gpu_trace_is_a_world_size_mismatch():
    folder = run_folder(kernels=6)
    b = side("baseline", float(np.median(job_steps(folder))), seed=1, profiles=trace(400_000, 20))
    c = multi_side("candidate", folder, job_steps(folder))
    fs = _fired(RULE.check(gather(fair_multi_claim().__class__(b, c, speedup=1.0))))
    assert [f.message.split(":")[0] for f in fs] == ["different world sizes"] and fs[0].non_comparable


def test_multi_rank_against_no_trace_checks_what_it_can():
    folder = run_folder(kernels=6)
    b = side("baseline", 600_000, seed=1, profiles=None)
    c = multi_side("candidate", folder, job_steps(folder))
    fs = RULE.check(gather(fair_multi_claim().__class__(b, c, speedup=1.0)))
    assert [f.status for f in fs] == [Status.PASS, Status.UNKNOWN]
    assert "covers the job's step" in fs[0].message and "no attached trace" in fs[1].message


def test_a_kernel_time_is_not_taken_for_a_step_time():
    folder = run_folder(kernels=6)
    # 30 us per call: a kernel inside the step, far shorter than any rank's step window
    c = multi_side("candidate", folder, np.full(7, 30_000.0))
    b = multi_side("baseline", folder, np.full(7, 60_000.0))
    (f,) = RULE.check(gather(fair_multi_claim().__class__(b, c, speedup=2.0)))
    assert f.status is Status.PASS and "covers" not in f.message
