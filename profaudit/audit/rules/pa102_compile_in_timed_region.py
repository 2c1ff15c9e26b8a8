from __future__ import annotations

import re

import numpy as np
import polars as pl

from profaudit.audit.evidence import Evidence, SideEvidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import fmt_time, pct
from profaudit.audit.trace import ONE_TIME

_JIT_FRAMEWORKS = re.compile(r"jax|xla|triton|neuron|tensorflow|tf\.function|numba|cupy", re.IGNORECASE)


class CompileInTimedRegion(Rule):
    """Compilation, module loading, autotuning or allocator growth inside the timed region.

    What it detects: in an attached trace, API calls and annotations of one-time work
    (cuModuleLoad, NVRTC/ptxas, Triton/Inductor compilation, autotuning, XLA/Neuron compilation,
    cudaMalloc) inside the NVTX range named by `meta.timed_range`, as a share of the timed time.
    Without a trace it checks the metadata: a JIT-compiled side (torch.compile, JAX/XLA, Triton,
    Neuron) with zero warm-up iterations and no per-iteration log to prove otherwise.

    Why it matters: compile and autotune costs belong to start-up, not to the steady-state time of
    a call; counted on one side only they inflate the speedup (tritonbench PR #411: cudagraph mode
    without warm-up recorded all autotune kernels).

    Example: the baseline's timed range holds 40 ms of cuModuleLoad and nvrtcCompileProgram out
    of 200 ms (20 %), the candidate's none: the speedup is inflated (FAIL).
    """

    code = "PA102"
    name = "compile-in-timed-region"
    severity = Severity.FAIL
    trace_corrects = True
    pitfalls = ("P1",)
    needs = ("an attached trace with API ranges and meta.timed_range", "or meta compile_mode / framework with warmup_iterations")

    def check(self, ev: Evidence) -> list[Finding]:
        shares = {se.role: self._trace_share(se) for se in ev.sides}
        traced = {r: v for r, v in shares.items() if v is not None}
        if traced:
            return self._from_trace(ev, traced)
        return self._from_meta(ev)

    @staticmethod
    def _trace_share(se: SideEvidence):
        timed = se.timed_ranges()
        if timed is None:
            return None
        # polars' (Rust) regex runs over millions of API ranges at once
        ot = se.ranges.filter(
            pl.col("name").is_not_null() & pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null() & pl.col("name").str.contains("(?i)" + ONE_TIME.pattern)
        )
        total = float((timed["end_ns"] - timed["start_ns"]).sum())
        if total <= 0:
            return None
        inside = 0.0
        examples: dict[str, int] = {}
        if ot.height:
            s = ot["start_ns"].to_numpy()
            e = ot["end_ns"].to_numpy()
            names = np.array(ot["name"].to_list(), dtype=object)
            for ts, te in zip(timed["start_ns"].to_list(), timed["end_ns"].to_list()):
                m = (s >= ts) & (s < te)
                if m.any():
                    inside += float(np.minimum(e[m], te).sum() - s[m].sum())
                    for n in names[m]:
                        examples[n] = examples.get(n, 0) + 1
        return {"share": inside / total, "one_time_ns": inside, "timed_ns": total, "calls": dict(sorted(examples.items(), key=lambda kv: -kv[1])[:8]), "range": se.get("timed_range")}

    def _from_trace(self, ev: Evidence, traced: dict) -> list[Finding]:
        sb = traced.get("baseline", {}).get("share", 0.0) if "baseline" in traced else None
        sc = traced.get("candidate", {}).get("share", 0.0) if "candidate" in traced else None
        evid = {f"{r}_trace": v for r, v in traced.items()}
        if sb is not None and sc is not None and sb - sc > 0.05:
            return [self.flag(Severity.FAIL, f"one-time work (compile, module load, autotune, allocation) fills {pct(sb)} of the baseline's timed range against {pct(sc)} for the candidate: the speedup is inflated", "baseline", **evid)]
        worst = max(traced.items(), key=lambda kv: kv[1]["share"])
        if worst[1]["share"] > 0.01:
            return [self.flag(Severity.WARN, f"one-time work fills {pct(worst[1]['share'])} ({fmt_time(worst[1]['one_time_ns'])}) of the {worst[0]}'s timed range {worst[1]['range']!r}", worst[0], **evid)]
        missing = [se.role for se in ev.sides if se.role not in traced]
        note = f" (no trace with a timed range for the {missing[0]})" if missing else ""
        return [self.ok(f"no compile, module-load, autotune or allocation calls inside the timed range{note}", **evid)]

    def _from_meta(self, ev: Evidence) -> list[Finding]:
        out: list[Finding] = []
        known = 0
        for se in ev.sides:
            mode = str(se.get("compile_mode", "") or "").lower()
            fw = str(se.get("framework", "") or "")
            jit = (mode not in ("", "eager", "none", "no", "false")) or bool(_JIT_FRAMEWORKS.search(fw))
            warm = se.get("warmup_iterations")
            if warm is None or (not mode and not fw):
                continue
            known += 1
            if jit and warm == 0 and not se.has_samples:
                out.append(
                    self.flag(
                        Severity.WARN,
                        f"the {se.role} is JIT-compiled ({mode or fw}) with no warm-up iterations and no per-iteration log: its timed region may include compilation",
                        se.role,
                        compile_mode=se.fact("compile_mode"),
                        framework=se.fact("framework"),
                        warmup_iterations=se.fact("warmup_iterations"),
                    )
                )
        if out:
            return out
        if known:
            return [self.ok("warm-up recorded for the JIT-compiled sides (or a per-iteration log shows the steady state); no trace to look inside the timed region")]
        return [self.cannot("no trace with a timed NVTX range (meta.timed_range), and compile mode or warm-up iterations are not recorded")]


RULE = CompileInTimedRegion()
