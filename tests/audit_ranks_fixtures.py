"""Multi-GPU sides for the audit tests: 4- or 8-rank Kineto runs from tests/ranks_synth.py, written
once per test process, with each side's timings read from the plain JSON (one rank's ProfilerStep
durations, or the job's step: latest end - earliest start across ranks on clocks aligned by the
common all-reduce ends), independently of profaudit.ranks."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np

import profaudit
from audit_fixtures import claim
from profaudit.audit import Claim, Side
from ranks_synth import make_run, write_run

STEPS = 7
EARLY_NS = 60_000  # how much earlier than the others one rank enters every step


@lru_cache(maxsize=None)
def _root() -> Path:
    d = Path(tempfile.mkdtemp(prefix="profaudit-audit-ranks-"))
    atexit.register(shutil.rmtree, d, True)
    return d


@lru_cache(maxsize=None)
def run_folder(world_size: int = 4, ranks_per_host: int = 2, kernels: int = 6, early_rank: int | None = None) -> Path:
    """A run written to disk (the ranks' collective arguments are read from the files again).
    `early_rank` enters every step `EARLY_NS` before the others (its step range starts earlier, as
    a rank whose data loader was ready sooner), so the job's step is longer than the other ranks'."""
    docs, _ = make_run(world_size=world_size, steps=STEPS, ranks_per_host=ranks_per_host, compute_kernels_per_step=kernels,
                       seed=world_size * 10 + ranks_per_host + kernels)
    if early_rank is not None:
        for e in docs[early_rank]["traceEvents"]:
            if e["name"].startswith("ProfilerStep#"):
                e["ts"] = round(e["ts"] - EARLY_NS / 1000, 3)
                e["dur"] = round(e["dur"] + EARLY_NS / 1000, 3)
    folder = _root() / f"ws{world_size}-h{ranks_per_host}-k{kernels}-e{early_rank}"
    write_run(folder, docs)
    return folder


def _docs(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def step_windows(folder: Path) -> dict[int, list[tuple[int, int]]]:
    """Per rank: (start, end) of each ProfilerStep in ns on the clock of rank 0, from the JSON.
    Every rank leaves an all-reduce at the same moment, so the first NCCL kernel's end gives each
    rank's clock offset to rank 0."""
    out, first_end = {}, {}
    for d in _docs(folder):
        r, base = d["distributedInfo"]["rank"], d["baseTimeNanoseconds"]
        ev = d["traceEvents"]
        nccl = min((e for e in ev if e.get("cat") == "kernel" and e["name"].startswith("nccl")), key=lambda e: e["ts"])
        first_end[r] = base + round(nccl["ts"] * 1000) + round(nccl["dur"] * 1000)
        steps = sorted((e for e in ev if e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
        out[r] = [(base + round(e["ts"] * 1000), base + round(e["ts"] * 1000) + round(e["dur"] * 1000)) for e in steps]
    return {r: [(s - (first_end[r] - first_end[0]), e - (first_end[r] - first_end[0])) for s, e in w] for r, w in out.items()}


def job_steps(folder: Path) -> np.ndarray:
    """The job's step times: latest end - earliest start across ranks, per step."""
    w = step_windows(folder)
    return np.array([max(w[r][i][1] for r in w) - min(w[r][i][0] for r in w) for i in range(STEPS)], dtype=float)


def rank_steps(folder: Path, rank: int = 0) -> np.ndarray:
    return np.array([e - s for s, e in step_windows(folder)[rank]], dtype=float)


@lru_cache(maxsize=None)
def _profiles(folder: Path):
    return profaudit.load(folder, parallel=False)


def multi_side(role: str, folder: Path, values: np.ndarray) -> Side:
    s = Side.from_durations(role, values, label=role, meta={"time_source": "kineto", "timed_range": "ProfilerStep"}, profiles=_profiles(folder))
    s.profile_paths = (str(folder),)
    return s


def multi_claim(base: Path, cand: Path, *, one_rank: str | None = None) -> Claim:
    """Baseline and candidate timed by the job's step, except `one_rank` ("baseline" or
    "candidate"), timed by rank 0's step windows."""
    vb = rank_steps(base) if one_rank == "baseline" else job_steps(base)
    vc = rank_steps(cand) if one_rank == "candidate" else job_steps(cand)
    b, c = multi_side("baseline", base, vb), multi_side("candidate", cand, vc)
    return claim(b, c, speedup=round(float(np.median(vb) / np.median(vc)), 2), workload={})


def one_rank_claim() -> Claim:
    """Unfair: the candidate quotes rank 0's step while rank 2 enters every step 60 us earlier."""
    return multi_claim(run_folder(kernels=6), run_folder(kernels=4, early_rank=2), one_rank="candidate")


def fair_multi_claim() -> Claim:
    """Fair: same job shape (4 ranks on 2 nodes), both timed by the job's step, even with an early rank."""
    return multi_claim(run_folder(kernels=6), run_folder(kernels=4, early_rank=2))
