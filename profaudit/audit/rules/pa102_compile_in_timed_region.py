from __future__ import annotations

import re

import numpy as np

from profaudit.audit.evidence import Evidence, SideEvidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit import stats as st
from profaudit.audit.rules._common import fmt_time, pct
from profaudit.audit.stats import Interval
from profaudit.audit.trace import one_time_work
from profaudit.fmt import plural

_JIT_FRAMEWORKS = re.compile(r"jax|xla|triton|neuron|tensorflow|tf\.function|numba|cupy", re.IGNORECASE)


class CompileInTimedRegion(Rule):
    """Compilation, module loading, autotuning or allocator growth inside the timed region.

    What it detects: in an attached trace (nsys, Kineto), API calls and annotations of one-time
    work (cuModuleLoad, NVRTC/ptxas, Triton/Inductor compilation, autotuning, XLA/Neuron
    compilation, cudaMalloc/hipMalloc) inside the NVTX range named by `meta.timed_range`, judged
    by how much they inflate the claimed statistic: recomputed over the per-call ranges with and
    without them (a median shrugs off one compile, a mean does not), or for a mean over a single
    timed range, the range time with and without them. Inflating the baseline's statistic beyond
    the candidate's (by more than the noise threshold, at least 2 %) -> FAIL, corrected to the
    speedup without them.
    Without a trace it checks the metadata: a JIT-compiled side (torch.compile, JAX/XLA, Triton,
    Neuron) with zero warm-up iterations and no per-iteration log to prove otherwise.

    Why it matters: compile and autotune costs belong to start-up, not to the steady-state time of
    a call; counted on one side only they inflate the speedup (tritonbench PR #411: cudagraph mode
    without warm-up recorded all autotune kernels).

    Example: the baseline's 20 timed calls hold 40 ms of cuModuleLoad and nvrtcCompileProgram in
    the first call; a mean claim is inflated (FAIL, corrected), a median claim is not (INFO).
    """

    code = "PA102"
    name = "compile-in-timed-region"
    severity = Severity.FAIL
    trace_corrects = True
    pitfalls = ("P1",)
    needs = ("an attached trace with API ranges and meta.timed_range", "or meta compile_mode / framework with warmup_iterations")

    def check(self, ev: Evidence) -> list[Finding]:
        traced = {}
        for se in ev.sides:
            ot = one_time_work(se)
            if ot is not None:
                traced[se.role] = (ot, self._inflation(ev, se, ot))
        if traced:
            return self._from_trace(ev, traced)
        return self._from_meta(ev)

    @staticmethod
    def _inflation(ev: Evidence, se: SideEvidence, ot) -> dict:
        """How much the one-time work inflates the claimed statistic of this side: the statistic
        of the per-call times with and without it (per-call ranges), or for a mean or total over
        one timed range, the range time with and without it. A median or minimum over one range
        is inflated only where the one-time work reaches most calls, which one range cannot show."""
        stat = ev.statistic if ev.statistic is not None and ev.statistic.kind in ("mean", "total", "quantile", "trimmed_mean") else st.MEDIAN
        out = {"statistic": stat.name, "one_time_ns": ot.total_ns, "timed_ns": ot.timed_ns, "share_of_timed": ot.share, "calls": ot.names, "recurring_every_call": ot.recurring, "range": se.get("timed_range")}
        if ot.per_call_ns is not None and ot.per_call_ns.size >= 2:
            with_ = st.compute(ot.per_call_ns, stat)
            without = st.compute(np.maximum(ot.per_call_ns - ot.one_time_per_call_ns, 0.0), stat)
            out.update(inflation=with_ / without if without > 0 else 1.0, basis=f"{stat.name} of {plural(int(ot.per_call_ns.size), 'per-call range')} with and without it ({plural(len(ot.calls_hit), 'call')} {'holds' if len(ot.calls_hit) == 1 else 'hold'} one-time work)")
        elif stat.kind in ("mean", "total") and ot.timed_ns > ot.total_ns:
            out.update(inflation=ot.timed_ns / (ot.timed_ns - ot.total_ns), basis="timed range with and without it (a mean spreads it over every call)")
        else:
            out.update(inflation=1.0, basis=f"a {stat.name} over one timed range: the one-time work lands in a few calls")
        return out

    def _from_trace(self, ev: Evidence, traced: dict) -> list[Finding]:
        evid = {f"{r}_trace": v[1] for r, v in traced.items()}
        infl = {r: v[1]["inflation"] for r, v in traced.items()}
        ib, ic = infl.get("baseline", 1.0), infl.get("candidate", 1.0)
        moved = ib / ic
        noise = ev.noise_threshold
        stat = next(iter(traced.values()))[1]["statistic"]
        present = {r: v[0] for r, v in traced.items() if v[0].total_ns > 0}
        if moved > 1 + max(noise, 0.02) and "baseline" in present:
            cmp = ev.comparison
            iv = cmp.intervals.get(stat) if cmp.available else None
            note = f"the {stat} recomputed without the one-time work in the traces"
            if iv is not None and ev.baseline.head_count > 0:
                # the baseline's log shows the one-time work as a warm-up head, which the
                # recomputation already drops: scaling again would remove it twice
                corr, note = iv, f"steady-state {stat}: the one-time work sits in the warm-up head the recomputation drops"
            elif iv is not None:
                corr = Interval(iv.estimate / moved, iv.low / moved, iv.high / moved, iv.confidence, iv.statistic, iv.space, iv.method + ", one-time work removed", iv.n_baseline, iv.n_candidate, iv.resamples)
            else:
                corr = None
            ot = present["baseline"]
            return [
                self.flag(
                    Severity.FAIL,
                    f"one-time work inside the baseline's timed range ({', '.join(list(ot.names)[:3])}: {fmt_time(ot.total_ns)}) inflates its {stat} by {pct(ib - 1)} against {pct(ic - 1)} for the candidate: the {stat} speedup is inflated {pct(moved - 1)}",
                    "baseline",
                    correction=corr,
                    correction_note=note,
                    **evid,
                )
            ]
        if present:
            role, ot = max(present.items(), key=lambda kv: infl.get(kv[0], 1.0))
            i = infl.get(role, 1.0)
            if i > 1 + max(noise, 0.02):
                return [self.flag(Severity.WARN, f"one-time work inside the {role}'s timed range ({', '.join(list(ot.names)[:3])}) inflates its {stat} by {pct(i - 1)}; it deflates the speedup rather than inflating it", role, **evid)]
            return [self.flag(Severity.INFO, f"one-time work inside the {role}'s timed range ({', '.join(list(ot.names)[:3])}: {fmt_time(ot.total_ns)}, {pct(ot.share)} of the range) does not move the claimed {stat} ({pct(i - 1)})", role, **evid)]
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
