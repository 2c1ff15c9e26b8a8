from __future__ import annotations

from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import cache_state, fmt_bytes, fmt_time
from profaudit.audit.trace import call_times
from profaudit.fmt import plural


def _first_calls(n: int) -> str:
    """'first measured call takes' / 'first 2 measured calls take': the verb agrees too."""
    return "first measured call takes" if n == 1 else f"first {n:,} measured calls take"


MAX_COMPUTING_CALLS = 3


class CachedResults(Rule):
    """The candidate reuses results instead of computing them.

    What it detects: fewer than one kernel launch per timed call (meta.kernels_per_call or a
    trace with a call count), or a trace with per-call ranges where most calls launch no
    kernel -> FAIL; DRAM traffic per call under half the workload's minimum
    bytes while caches were flushed (ncu --cache-control all) -> FAIL; a per-iteration log whose
    first one to three measured calls are > 5x the steady state although warm-up iterations ran
    (the first call computes, the later ones do not) -> WARN. Warm-up counts come from
    meta.warmup_iterations or from rows the log labels warmup; without either, a first call
    that takes about the baseline's per-call time followed by calls under 0.2x of it -> WARN.

    Why it matters: memoised outputs, reused reference memory and results cached by input
    pointer report the cost of a lookup (KernelBench result_reuse_kernel.py; CUDA-L1; wafer.ai's
    104.89x kernel that read garbage memory).

    Example: the candidate's ncu report reads 0.3 GB per call with flushed caches where the
    inputs alone are 3.2 GB: FAIL.
    """

    code = "PA305"
    name = "cached-results"
    severity = Severity.FAIL
    pitfalls = ("P8",)
    needs = ("candidate launches per call, or ncu DRAM bytes + workload bytes, or a per-iteration log with warm-up count",)

    @staticmethod
    def _warmup(c) -> tuple[int | None, str]:
        """Warm-up calls that ran before timing: meta.warmup_iterations, else the rows the log
        itself labels phase=warmup (they ran, so the first measured call should be warm)."""
        f = c.fact("warmup_iterations")
        if f is not None:
            return int(f.value), f.source
        if c.warmup_rows:
            return int(c.warmup_rows), "rows labelled warmup in the log"
        return None, ""

    def check(self, ev: Evidence) -> list[Finding]:
        c = ev.candidate
        out, checked = [], []
        lpc, how = c.launches_per_call()
        if lpc is not None:
            checked.append("launches per call")
            if lpc < 1:
                out.append(self.flag(Severity.FAIL, f"the candidate launches {lpc:.2g} kernels per timed call ({how}): most calls compute nothing", "candidate", launches_per_call=lpc, source=how))
        else:
            ct = call_times(c)
            if ct is not None and ct.n >= 2:
                checked.append("kernels per traced call")
                empty = int((ct.values <= 0).sum())
                if empty >= 0.5 * ct.n:
                    out.append(self.flag(Severity.FAIL, f"in the candidate's trace {empty} of {ct.n} timed calls launch no kernel: their results are cached, reused or skipped", "candidate", empty_calls=empty, calls=ct.n, source=ct.how))
        w, wsrc = ev.workload_value("bytes", c)
        dram, dsrc = c.dram_bytes_per_call()
        if dram is None and c.fact("dram_bytes") is not None:
            dram, dsrc = float(c.get("dram_bytes")), c.fact("dram_bytes").source
        state, sf = cache_state(c)
        if w is not None and dram is not None and state == "cold":
            checked.append("DRAM bytes")
            if dram < 0.5 * w:
                out.append(self.flag(Severity.FAIL, f"with caches flushed the candidate moves {fmt_bytes(dram)} per call from DRAM, under half the workload's minimum {fmt_bytes(w)}: results are cached or work is skipped", "candidate", dram_bytes=dram, dram_source=dsrc, workload_bytes=w, workload_source=wsrc, cache=sf))
        warm, warm_src = self._warmup(c)
        heads = [s for s in c.steady_states if 0 < s.start <= MAX_COMPUTING_CALLS and s.head_median > 5 * s.median] if c.has_samples else []
        if c.has_samples and warm is not None:
            checked.append("first calls")
            # Caching shows as the first call or two computing; a longer slow stretch is warm-up or
            # contention (PA101, PA207), not reuse.
            if warm >= 1 and heads:
                st = heads[0]
                out.append(self.flag(Severity.WARN, f"after {plural(warm, 'warm-up iteration')} ({warm_src}) the candidate's {_first_calls(st.start)} {fmt_time(st.head_median)} and the rest {fmt_time(st.median)} ({st.head_median / st.median:.0f}x): the first call computes, later calls may reuse its result", "candidate", head_samples=st.start, warmup_iterations=warm, warmup_source=warm_src))
        elif c.has_samples and ev.baseline.has_samples:
            checked.append("first calls against the baseline")
            # No warm-up record to rule reuse in or out (FAIRNESS P8: "the first call is normal and
            # later calls are < 0.2x of it"). A one-time cost (module load, JIT, autotune) has no
            # reason to equal the baseline's per-call time; a first call that does, followed by
            # calls under a fifth of it, looks like one real computation and then lookups.
            tb = ev.baseline.typical_time_ns()
            for st in heads:
                if tb and 0.5 * tb <= st.head_median <= 2.0 * tb and st.median < 0.2 * st.head_median:
                    out.append(self.flag(Severity.WARN, f"the candidate's {_first_calls(st.start)} {fmt_time(st.head_median)}, about the baseline's {fmt_time(tb)} per call, and the rest {fmt_time(st.median)} ({st.head_median / st.median:.0f}x less): the first call computes, later calls may reuse its result (no warm-up count recorded to tell it from warm-up)", "candidate", head_samples=st.start, baseline_time_ns=tb))
                    break
        if out:
            return out
        if not checked:
            return [self.cannot("no launch count per call, no DRAM bytes under flushed caches with workload bytes, and no warm-up count with a per-iteration log")]
        return [self.ok(f"no sign of reused results ({', '.join(checked)})")]


RULE = CachedResults()
