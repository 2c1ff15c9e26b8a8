from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from profaudit.audit.evidence import Evidence, Fact, SideEvidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.stats import Interval
from profaudit.audit.rules._common import fmt_time
from profaudit.fmt import plural

# A timed step within this share of one rank's median step window is that rank's window.
RANK_WINDOW_MATCH = 0.02


@dataclass
class RankFacts:
    """What one side's attached profiles say about the job it timed."""

    world_size: Fact | None = None
    nodes: Fact | None = None
    interconnect: Fact | None = None
    ranks_traced: int = 0
    job_step_ns: float | None = None  # median over steps of the job's step time
    rank_windows: dict[int, float] = field(default_factory=dict)  # rank -> median step window
    steps: int = 0
    note: str = ""


def _rank_facts(se: SideEvidence, ev: Evidence) -> RankFacts:
    side = ev.claim.baseline if se is ev.baseline else ev.claim.candidate
    ps = side.profiles
    if ps is None or len(ps) == 0:
        return RankFacts(note=f"the {se.role} has no attached trace")
    from profaudit.errors import ProfauditError
    from profaudit.ranks import DistributedRun, identify_ranks

    try:
        ident = identify_ranks(ps)
    except ProfauditError as exc:
        return RankFacts(note=f"the {se.role}'s attached profiles hold no rank: {exc}")
    src = ", ".join(sorted({str(p) for p in side.profile_paths})) or f"{se.role} profiles"
    if ident.height < 2:
        ws = ident["world_size"].drop_nulls()
        n = int(ws[0]) if ws.len() else None
        if n and n > 1:
            fact = Fact(n, f"{src}: distributedInfo.world_size of its one traced rank", "recorded")
            return RankFacts(world_size=fact, ranks_traced=1, note=f"the {se.role}'s trace is one rank of a {n}-rank job (the job's step needs every rank)")
        # one GPU's trace with no rank information: a single-GPU run
        fact = Fact(1, f"{src}: one GPU's trace, no distributedInfo", "derived")
        return RankFacts(world_size=fact, ranks_traced=ident.height, note=f"the {se.role}'s trace is a single rank")
    run = DistributedRun(ps)
    r = run.ranks
    out = RankFacts(ranks_traced=r.height)
    recorded = r["world_size"].drop_nulls().unique()
    if recorded.len() == 1:
        out.world_size = Fact(int(recorded[0]), f"{src}: distributedInfo.world_size of {r.height} traced ranks", "recorded")
    else:
        out.world_size = Fact(r.height, f"{src}: {r.height} rank traces (world size not recorded by every rank)", "derived")
    out.nodes = Fact(int(r["node"].n_unique()), f"{src}: distinct hosts of the ranks ({', '.join(map(str, r['host'].unique(maintain_order=True).to_list()))})", "recorded")
    out.interconnect = _interconnect(r, int(out.nodes.value), src)
    skew = run.step_skew.filter(pl.col("job_step_ns").is_not_null())
    if skew.height:
        out.steps = skew.height
        out.job_step_ns = float(skew["job_step_ns"].median())
        bd = run.step_breakdown.filter(pl.col("step").is_not_null())
        per = bd.group_by("rank").agg(pl.col("window_ns").median().alias("w"))
        out.rank_windows = {int(k): float(v) for k, v in per.iter_rows() if v is not None}
    return out


def _interconnect(ranks, nodes: int, src: str) -> Fact | None:
    """The link the job's collectives cross, from the ranks' device spec: InfiniBand between nodes,
    NVLink (else PCIe, xGMI) inside one. None when no spec lists the link."""
    from profaudit.fmt import fmt_si
    from profaudit.specs import match_device

    names = ranks["device_name"].drop_nulls().unique().sort().to_list()
    if not names:
        return None
    links: dict[str, float] = {}
    for name in names:
        spec = match_device(name)
        if spec is None:
            return None
        for link, v in spec.interconnects.items():
            links[link] = min(links.get(link, math.inf), float(v.value))
    order = ("infiniband",) if nodes > 1 else ("nvlink", "xgmi", "pcie")
    for link in order:
        if link in links:
            scope = f"between {nodes} nodes" if nodes > 1 else "inside one node"
            return Fact(f"{link} {fmt_si(links[link], 'B/s')}", f"{src}: device spec of {', '.join(names)} ({scope}, one direction)", "derived")
    return None


class MultiGpuParity(Rule):
    """The sides ran different multi-GPU jobs, or a claim quotes one rank's step time for the job's.

    What it detects: per side with an attached trace of more than one rank, the world size, node
    count and the interconnect the collectives cross (InfiniBand between nodes, NVLink or PCIe inside
    one, from the device spec), recorded as facts; different world sizes, node counts or links on
    the two sides (FAIL: not comparable). Then the side's timed step against the job's step time
    (latest step end - earliest step start across ranks, aligned clocks, median over steps): a timed
    time that matches one rank's step window but is shorter than the job's step (by more than the
    claim's noise threshold) is that rank's time, not the job's (FAIL, corrected with the job's
    step time).

    Why it matters: a distributed step ends when its last rank ends. Timing rank 0 alone hides the
    ranks that started earlier or finished later; a speedup across 8 vs 16 GPUs, or one node vs two,
    measures the scale-out and the network, not the change (FAIRNESS P13).

    Example: the candidate's 4 ranks have a 1.10 ms job step, but its timings are rank 0's 1.00 ms
    windows: FAIL, the supported speedup uses 1.10 ms.
    """

    code = "PA210"
    name = "multi-gpu-parity"
    severity = Severity.FAIL
    pitfalls = ("P13", "P7")
    needs = ("an attached trace of every rank of a multi-GPU side (Kineto rank traces or a multi-GPU capture)",)
    unknown_severity = Severity.INFO

    def check(self, ev: Evidence) -> list[Finding]:
        facts = {se.role: _rank_facts(se, ev) for se in ev.sides}
        multi = [se for se in ev.sides if facts[se.role].ranks_traced > 1]
        if not multi:
            return [self.cannot("; ".join(f.note for f in facts.values()) + " (no multi-rank evidence)")]
        evid: dict[str, Any] = {}
        for role, f in facts.items():
            for key in ("world_size", "nodes", "interconnect"):
                if getattr(f, key) is not None:
                    evid[f"{key}_{role}"] = getattr(f, key)
        out: list[Finding] = []
        fb, fc = facts["baseline"], facts["candidate"]
        unknown: list[Finding] = []
        # world size compares whenever both sides know it; nodes and link need every rank's trace
        keys = (("world_size", "world sizes"),) + ((("nodes", "node counts"), ("interconnect", "interconnects")) if len(multi) == 2 else ())
        for key, what in keys:
            vb, vc = getattr(fb, key), getattr(fc, key)
            if vb is not None and vc is not None and vb.value != vc.value:
                out.append(self.flag(Severity.FAIL, f"different {what}: baseline {vb.value} ({vb.source}) vs candidate {vc.value} ({vc.source})",
                                     "both", non_comparable=True, **evid))
        if len(multi) < 2 and not out:
            lone = ev.baseline if fb.ranks_traced <= 1 else ev.candidate
            unknown.append(self.cannot(f"the job shape of both sides: {facts[lone.role].note}", lone.role, **evid))
        steps_ok: list[str] = []
        corrected: dict[str, float] = {}
        for se in multi:
            res = self._step(se, facts[se.role], ev)
            if res is None:
                continue
            kind, detail = res
            if kind == "ok":
                steps_ok.append(detail["message"])
            elif kind == "one_rank":
                corrected[se.role] = detail["job_step_ns"]
                out.append(self.flag(Severity.FAIL, detail.pop("message"), se.role, **detail, **evid))
        if corrected and not any(f.non_comparable for f in out):
            self._attach_correction(ev, out, corrected)
        if out:
            return out + unknown
        facts_text = ", ".join(f"{se.role}: {plural(int(facts[se.role].world_size.value), 'rank')} on {plural(int(facts[se.role].nodes.value), 'node')}"
                               + (f" over {facts[se.role].interconnect.value}" if facts[se.role].interconnect else "") for se in multi)
        head = f"same multi-GPU job shape ({facts_text})" if len(multi) == 2 else f"multi-GPU job ({facts_text})"
        return [self.ok(head + (f"; {'; '.join(steps_ok)}" if steps_ok else ""), **evid)] + unknown

    @staticmethod
    def _step(se: SideEvidence, f: RankFacts, ev: Evidence) -> tuple[str, dict] | None:
        t, j = se.typical_time_ns(), f.job_step_ns
        if t is None or j is None or not f.rank_windows:
            return None
        rank, w = min(f.rank_windows.items(), key=lambda kv: abs(kv[1] - t))
        if abs(t - w) > RANK_WINDOW_MATCH * w and t < min(f.rank_windows.values()):
            return None  # the timed quantity is shorter than every rank's step: not a step time
        if t >= j * (1 - ev.noise_threshold):
            return "ok", {"message": f"the {se.role}'s timed step {fmt_time(t)} covers the job's step {fmt_time(j)}"}
        return "one_rank", {
            "message": (f"the {se.role}'s step time {fmt_time(t)} is one rank's time (rank {rank}'s median step window {fmt_time(w)}); "
                        f"the job's step, latest end - earliest start across {f.ranks_traced} ranks, is {fmt_time(j)} (median over {plural(int(f.steps), 'step')})"),
            "timed_ns": t, "rank": rank, "rank_window_ns": w, "job_step_ns": j, "ranks": f.ranks_traced, "steps": f.steps,
        }

    @staticmethod
    def _attach_correction(ev: Evidence, out: list[Finding], corrected: dict[str, float]) -> None:
        """The speedup with the job's step time on every side that quoted one rank's; a side whose
        timing stands keeps its own median."""
        times = {}
        for se in ev.sides:
            times[se.role] = corrected.get(se.role, se.typical_time_ns())
        tb, tc = times["baseline"], times["candidate"]
        if not tb or not tc:
            return
        iv = Interval(tb / tc, math.nan, math.nan, ev.confidence, "median", "time", "job step time across ranks (no interval)", 0, 0, 0)
        note = "the job's step time (latest end - earliest start across ranks, median over steps) on " + " and ".join(
            f"the {r} ({fmt_time(v)})" for r, v in corrected.items())
        for f in out:
            if f.side in corrected:
                f.correction, f.correction_note = iv, note


RULE = MultiGpuParity()
