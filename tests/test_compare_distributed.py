"""`compare` of two distributed runs: job step time per step and collectives matched by kind and
size beside the kernels, the job step time as the headline; single-rank pairs exactly as before.

The expected numbers are read from the written trace JSON (plain json, the generator's true clock
offsets), not from profaudit."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict

import pytest

from profaudit.compare import compare
from profaudit.compare.core import COMPARISON_VERSION
from ranks_synth import DTYPE_SIZE, make_run, write_run


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    # the same job twice, rank 1 late to every collective in both; the candidate's links move twice
    # the bytes per ns (faster collectives, nothing else changed)
    d = tmp_path_factory.mktemp("dist")
    base_docs, base_truth = make_run(world_size=4, steps=3, late_rank=1, seed=7)
    cand_docs, cand_truth = make_run(world_size=4, steps=3, late_rank=1, seed=7, algbw_bytes_per_ns=100.0)
    write_run(d / "base", base_docs)
    write_run(d / "cand", cand_docs)
    return d, (base_docs, base_truth), (cand_docs, cand_truth), compare(d / "base", d / "cand")


def job_steps_from_json(docs, truth) -> dict[int, int]:
    """Per step: latest ProfilerStep end - earliest start over the ranks, on the true clock."""
    lo, hi = {}, {}
    for r, doc in enumerate(docs):
        base = doc["baseTimeNanoseconds"] - truth.offsets_ns[r]
        for e in doc["traceEvents"]:
            if e.get("name", "").startswith("ProfilerStep#"):
                s = int(e["name"].split("#")[1])
                start = base + round(e["ts"] * 1000)
                end = start + round(e["dur"] * 1000)
                lo[s] = min(lo.get(s, start), start)
                hi[s] = max(hi.get(s, end), end)
    return {s: hi[s] - lo[s] for s in sorted(lo)}


def collectives_from_json(docs) -> dict[int, dict]:
    """Per message size: calls, median time once all ranks arrived (every rank leaves together, so
    the last to arrive runs shortest) and the total wait of the earlier ranks."""
    per_rank = [sorted((e for e in d["traceEvents"] if e.get("cat") == "kernel" and e["name"].startswith("ncclDevKernel")), key=lambda e: e["ts"])
                for d in docs]
    sync, wait, calls = defaultdict(list), defaultdict(int), defaultdict(int)
    for i in range(len(per_rank[0])):
        evs = [k[i] for k in per_rank]
        size = evs[0]["args"]["In msg nelems"] * DTYPE_SIZE[evs[0]["args"]["dtype"]]
        durs = [round(e["dur"] * 1000) for e in evs]
        sync[size].append(min(durs))
        wait[size] += sum(x - min(durs) for x in durs)
        calls[size] += 1
    return {s: {"calls": calls[s], "sync": statistics.median(sync[s]), "wait": wait[s]} for s in sync}


def test_steps_against_raw_json(pair):
    _, (bd, bt), (cd, ct), cmp = pair
    steps = cmp.runs["steps"]
    want_b, want_c = job_steps_from_json(bd, bt), job_steps_from_json(cd, ct)
    assert steps["step"].to_list() == sorted(want_b) == [0, 1, 2]
    assert steps["baseline_job_step_ns"].to_list() == pytest.approx([want_b[s] for s in sorted(want_b)], abs=2)
    assert steps["candidate_job_step_ns"].to_list() == pytest.approx([want_c[s] for s in sorted(want_c)], abs=2)
    # faster collectives shorten every step of the job
    assert (steps["job_step_diff_ns"] < 0).all()
    js = cmp.totals["job_step"]
    sb, sc = sum(want_b.values()), sum(want_c.values())
    assert js["steps"] == 3 and js["ranks_baseline"] == js["ranks_candidate"] == 4
    assert js["baseline_ns"] == pytest.approx(sb, abs=6) and js["candidate_ns"] == pytest.approx(sc, abs=6)
    assert js["job_step_speedup"] == pytest.approx(sb / sc, rel=1e-5)
    assert js["baseline_median_ns"] == pytest.approx(statistics.median(want_b.values()), abs=2)


def test_collectives_against_raw_json(pair):
    _, (bd, _), (cd, _), cmp = pair
    co = cmp.runs["collectives"]
    wb, wc = collectives_from_json(bd), collectives_from_json(cd)
    assert set(co["collective"].to_list()) == {"all_reduce"}
    assert co["msg_bytes"].to_list() == sorted(wb) == sorted(wc)
    for r in co.iter_rows(named=True):
        b, c = wb[int(r["msg_bytes"])], wc[int(r["msg_bytes"])]
        assert (r["baseline_calls"], r["candidate_calls"]) == (b["calls"], c["calls"])
        assert r["baseline_median_sync_duration_ns"] == pytest.approx(b["sync"], abs=1)
        assert r["candidate_median_sync_duration_ns"] == pytest.approx(c["sync"], abs=1)
        assert r["sync_duration_ratio"] == pytest.approx(c["sync"] / b["sync"], rel=1e-6)
        assert r["sync_duration_ratio"] == pytest.approx(0.5, abs=0.001)  # twice the bandwidth
        assert r["baseline_total_wait_ns"] == pytest.approx(b["wait"], abs=4) and r["candidate_total_wait_ns"] == pytest.approx(c["wait"], abs=4)
        # the straggler is the same in both: the wait is not what changed
        assert r["candidate_total_wait_ns"] == pytest.approx(r["baseline_total_wait_ns"], abs=4)


def test_headline_is_the_job_step_time(pair):
    *_, cmp = pair
    js = cmp.totals["job_step"]
    assert cmp.totals["headline"] == "job_step_time"
    assert cmp.verdict.startswith("candidate job step time (sum over 3 matched steps; latest step end - earliest step start across ranks)")
    assert f"{js['job_step_diff_pct']:+.1f}%" in cmp.verdict and "candidate faster" in cmp.verdict
    # 3 steps are too few for a test; the kernels' own line is kept as a note
    assert js["significance"]["verdict"] == "unknown"
    assert any(n.startswith("kernels (per rank): candidate GPU time") for n in cmp.notes)


def test_rendered_in_every_format(pair):
    *_, cmp = pair
    doc = json.loads(cmp.render("json"))
    assert doc["profaudit_comparison"] == COMPARISON_VERSION == 3
    assert doc["totals"]["headline"] == "job_step_time" and doc["runs"]["ranks"] == {"baseline": 4, "candidate": 4}
    assert [s["job_step_diff_ns"] for s in doc["runs"]["steps"]] == cmp.runs["steps"]["job_step_diff_ns"].to_list()
    assert len(doc["runs"]["collectives"]) == cmp.runs["collectives"].height
    md = cmp.render("markdown")
    assert "## Job steps (4 vs 4 ranks, matched by step number)" in md and "## Collectives (matched by kind and message size)" in md
    assert "| all_reduce | 4.19 MB | 2 → 2 |" in md and "| 0.500x |" in md
    assert "job step time (sum of 3 matched steps, across ranks)" in md
    html = cmp.render("html")
    assert "<h2>Job steps (4 vs 4 ranks, matched by step number)</h2>" in html and "all_reduce" in html
    assert "Collectives (matched by kind and message size)" in cmp.render("table")


def test_single_rank_pairs_unchanged(pair):
    from profaudit.compare.kernels import compare_kernels
    from profaudit.compare.core import resolve_side

    d = pair[0]
    a, b = next((d / "base").glob("rank-0.*")), next((d / "cand").glob("rank-0.*"))
    cmp = compare(a, b)
    assert cmp.runs == {} and "job_step" not in cmp.totals and "runs" not in cmp.to_dict()
    plain = compare_kernels(resolve_side(a, "baseline"), resolve_side(b, "candidate"), match="auto", device=None)
    assert cmp.verdict == plain.verdict and cmp.render("markdown") == plain.render("markdown")


def test_repeated_runs_without_rank_numbers_are_not_ranks(tmp_path):
    # two traces with no distributedInfo and no rank in their names: repeated runs of one process
    docs, _ = make_run(world_size=2, steps=1, seed=3)
    for side in ("a", "b"):
        write_run(tmp_path / side, docs, names="run{rank}.{pid}.pt.trace.json", drop_distributed_info=True)
    cmp = compare(tmp_path / "a", tmp_path / "b")
    assert cmp.runs == {} and cmp.totals["baseline"]["profiles"] == 2


def test_cli_json(cli, pair):
    d = pair[0]
    res = cli("compare", d / "base", d / "cand", "-f", "json")
    assert res.code == 0, res
    doc = json.loads(res.out)
    assert doc["runs"]["steps"] == pair[3].to_dict()["runs"]["steps"]


def test_one_distributed_side_is_said_so(pair):
    d = pair[0]
    cmp = compare(d / "base", next((d / "cand").glob("rank-0.*")))
    assert cmp.runs == {} and "job_step" not in cmp.totals
    assert any(n.startswith("the baseline is a distributed run (4 ranks) and the candidate is not") for n in cmp.notes)


def test_job_step_totals_and_their_test():
    import polars as pl

    from profaudit.compare.distributed import job_step_totals

    b = [1_000_000 + 7_000 * i for i in range(6)]
    c = [700_000 + 5_000 * i for i in range(6)]
    steps = pl.DataFrame({"baseline_job_step_ns": b, "candidate_job_step_ns": c})
    js = job_step_totals(steps, 8, 8)
    assert (js["baseline_ns"], js["candidate_ns"]) == (sum(b), sum(c))
    assert js["job_step_speedup"] == pytest.approx(sum(b) / sum(c)) and js["job_step_diff_pct"] == pytest.approx((sum(c) - sum(b)) / sum(b) * 100)
    assert js["baseline_median_ns"] == statistics.median(b)
    sig = js["significance"]
    assert sig["basis"] == "per-step job times (6 steps)" and sig["verdict"] == "faster"
    assert sig["speedup_ci_low"] <= sum(b) / sum(c) <= sig["speedup_ci_high"]
    few = job_step_totals(steps.head(2), 8, 8)["significance"]
    assert few["verdict"] == "unknown" and "a test needs at least 5" in few["reason"]


def test_one_nsys_capture_of_two_gpus(tmp_path):
    # one capture, a rank per GPU: collectives matched, the wait read from the kernel rows written
    from ranks_synth import nsys_two_gpus

    kernels, _ = nsys_two_gpus(tmp_path / "run.sqlite")
    cmp = compare(tmp_path / "run.sqlite", tmp_path / "run.sqlite")
    assert cmp.runs["ranks"] == {"baseline": 2, "candidate": 2}
    co = cmp.runs["collectives"].row(0, named=True)
    starts: dict[int, list[int]] = {}
    for k in kernels:
        if k[4] == 20:  # the all-reduce stream
            starts.setdefault(k[5] // 10, []).append(k[0])
    wait = sum(max(s) - min(s) for s in starts.values())
    assert (co["collective"], co["baseline_calls"], co["baseline_total_wait_ns"]) == ("all_reduce", len(starts), wait) and co["sync_duration_ratio"] == 1.0
    # its NVTX step ranges are not ProfilerStep: no job step headline, and the report says so
    assert cmp.runs["steps"].height == 0 and "job_step" in cmp.totals and cmp.totals.get("headline") == "gpu_time"
    assert any("no step matched by number" in n for n in cmp.notes)
    assert any("per profile (1 profile holding 2 ranks" in n for n in cmp.notes)


def test_step_pattern_names_nvtx_steps(cli, tmp_path):
    from ranks_synth import nsys_two_gpus

    _, nvtx = nsys_two_gpus(tmp_path / "run.sqlite")
    # job step = latest end - earliest start of `train_step N` over both GPUs' processes (one clock)
    by_step: dict[int, list[tuple[int, int]]] = {}
    for row in nvtx:
        by_step.setdefault(row[9] - 5, []).append((row[0], row[1]))
    want = [max(e for _, e in w) - min(s for s, _ in w) for _, w in sorted(by_step.items())]
    res = cli("compare", tmp_path / "run.sqlite", tmp_path / "run.sqlite", "--step-pattern", r"train_step (\d+)", "-f", "json")
    assert res.code == 0, res
    doc = json.loads(res.out)
    assert [s["baseline_job_step_ns"] for s in doc["runs"]["steps"]] == want
    assert doc["totals"]["headline"] == "job_step_time" and doc["totals"]["job_step"]["job_step_speedup"] == 1.0
    assert doc["verdict"].startswith("candidate job step time (sum over 2 matched steps;")
    from conftest import assert_one_line_error

    assert_one_line_error(cli("compare", tmp_path / "run.sqlite", tmp_path / "run.sqlite", "--step-pattern", "train_step (\\d+"))
