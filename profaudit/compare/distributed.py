"""Two distributed runs compared as jobs: steps and collectives beside the kernels.

When both sides of a kernel comparison hold more than one rank (a folder of rank traces, a
multi-GPU capture), the kernel tables treat the ranks like repeated profiles (per-rank means),
which says nothing about the job: a rank that waits for a straggler, or a collective that got
faster, shows in the job's step time (latest step end - earliest step start across the ranks,
on aligned clocks), not in one rank's kernel sum. This module adds `profaudit.ranks.compare_runs`'s
steps (matched by number) and collectives (matched by kind and nccl-tests size) to the
`Comparison` and, when steps match, makes the job step time the headline.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from profaudit.fmt import plural

# Fewer matched steps than this give no significance test: a bootstrap over two or three step
# times says nothing about the next run.
MIN_STEPS_TESTED = 5
# Rank numbers that come from the inputs themselves; `process_order` only numbers profiles in
# path order, which a folder of repeated single-GPU runs also gets.
_RANK_EVIDENCE = ("distributed_info", "file_name", "device_order")


def multi_rank_run(ps, step_pattern: str | None = None):
    """The side as a `DistributedRun` when it holds more than one rank, else None.

    A cheap identity pass first (`identify_ranks`, no second read of the files): a side counts as
    distributed only when its rank numbers come from the inputs (distributedInfo, `rank-N` in the
    file names, several GPUs in one capture) and are distinct, so that repeated runs of one process
    stay repeated runs."""
    from profaudit.ranks import DistributedRun, identify_ranks

    ident = identify_ranks(ps)
    if ident.height < 2 or ident["rank"].n_unique() != ident.height:
        return None
    if not ident["rank_source"].is_in(list(_RANK_EVIDENCE)).any():
        return None
    run = DistributedRun(ps, step_pattern=step_pattern)
    return run if run.ranks.height > 1 else None


def attach_runs(cmp, step_pattern: str | None = None) -> None:
    """Add the steps and collectives of two multi-rank sides to `cmp` (in place); a pair where a
    side holds one rank is left exactly as it was. `step_pattern`: a regex naming the step ranges
    (first group: the step number), as `profaudit ranks --step-pattern`; default ProfilerStep#N
    and XLA steps."""
    from profaudit.ranks import compare_runs

    a, b = multi_rank_run(cmp.baseline.ps, step_pattern), multi_rank_run(cmp.candidate.ps, step_pattern)
    if a is None and b is None:
        return
    if a is None or b is None:
        multi, one = ("baseline", "candidate") if b is None else ("candidate", "baseline")
        n = (a or b).ranks.height
        cmp.notes.append(f"the {multi} is a distributed run ({n} ranks) and the {one} is not: no job step or collective comparison; "
                         f"kernel totals are per rank on the {multi} side")
        return
    runs = compare_runs(a, b)
    nb, nc = a.ranks.height, b.ranks.height
    cmp.runs = {"ranks": {"baseline": nb, "candidate": nc}, **runs}
    js = job_step_totals(runs["steps"], nb, nc)
    cmp.totals["job_step"] = js
    cmp.notes.append(f"distributed runs ({nb} vs {nc} ranks): kernel totals are {_per(cmp.baseline, nb)} on the baseline side and "
                     f"{_per(cmp.candidate, nc)} on the candidate side; the job's time is in the job step table")
    if js["steps"] == 0:
        cmp.notes.append("no step matched by number on both sides (no ProfilerStep or step ranges; --step-pattern names others): "
                         "the headline stays the kernels' GPU time")
        return
    from profaudit.compare.kernels import verdict_line

    cmp.totals["headline"] = "job_step_time"
    kernel_verdict = cmp.verdict
    cmp.verdict = verdict_line(cmp.comparable, cmp.findings, js, "job_step", label=headline_label(js))
    cmp.notes.append(f"kernels (per rank): {kernel_verdict}")


def _per(side, ranks: int) -> str:
    n = len(side.ps)
    if n == ranks:
        return "per rank (the mean over the rank traces, as for repeated profiles)"
    return f"per profile ({plural(n, 'profile')} holding {ranks} ranks: a capture of several GPUs sums them)"


def headline_label(js: dict) -> str:
    return (f"job step time (sum over {plural(js['steps'], 'matched step')}; "
            "latest step end - earliest step start across ranks)")


def job_step_totals(steps: pl.DataFrame, ranks_b: int, ranks_c: int) -> dict[str, Any]:
    """The job's time over the steps matched on both sides: sums, medians, the speedup of the sums,
    and a test over the per-step job times when there are enough steps."""
    from profaudit.compare.significance import totals_significance

    n = steps.height
    tb = steps["baseline_job_step_ns"].cast(pl.Float64).to_numpy() if n else np.array([])
    tc = steps["candidate_job_step_ns"].cast(pl.Float64).to_numpy() if n else np.array([])
    sb, sc = float(tb.sum()), float(tc.sum())
    out: dict[str, Any] = {
        "steps": n,
        "ranks_baseline": ranks_b,
        "ranks_candidate": ranks_c,
        "baseline_ns": sb if n else None,
        "candidate_ns": sc if n else None,
        "baseline_median_ns": float(np.median(tb)) if n else None,
        "candidate_median_ns": float(np.median(tc)) if n else None,
        "job_step_diff_ns": sc - sb if n else None,
        "job_step_diff_pct": (sc - sb) / sb * 100 if n and sb else None,
        "job_step_speedup": sb / sc if n and sc else None,
        "matched_groups": n,
    }
    if n >= MIN_STEPS_TESTED:
        out["significance"] = totals_significance(tb, tc, f"per-step job times ({n} steps)")
    else:
        out["significance"] = {"verdict": "unknown", "basis": None, "p_value": None,
                               "reason": f"{plural(n, 'matched step')}: a test needs at least {MIN_STEPS_TESTED}"}
    return out
