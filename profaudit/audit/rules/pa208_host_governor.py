from __future__ import annotations

from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import LAUNCH_FLOOR_NS, differ_text, fmt_time, unrecorded


class HostGovernor(Rule):
    """CPU frequency governor or turbo differs (or is powersave) for launch-bound work.

    What it detects: first whether the work is host- or launch-bound: a per-call time within 2x
    the ~5 us launch floor, or a GPU busy for less than 70 % of the timed range in a trace. For
    launch-bound work, different governors or turbo settings between the sides -> FAIL,
    `powersave` on both -> WARN. When the GPU is busy (> 95 %, or calls well above the floor) the
    governor is irrelevant and the rule passes.

    Why it matters: launch-bound time is CPU time; the governor and turbo state set it (Google
    Benchmark "Reducing variance", `pyperf system tune`). A candidate that "wins" by 20 % on a
    5 us op may just have run on a faster-clocked core.

    Example: 6 us per call, baseline host_governor powersave, candidate performance: FAIL.
    """

    code = "PA208"
    name = "host-governor"
    severity = Severity.FAIL
    pitfalls = ("P14",)
    needs = ("per-call times or meta.gpu_busy_pct", "meta.host_governor / cpu_turbo")

    def check(self, ev: Evidence) -> list[Finding]:
        bound, why, known = [], [], False
        for se in ev.sides:
            t = se.typical_time_ns()
            busy = se.get("gpu_busy_pct")
            if t is None and busy is None:
                continue
            known = True
            if busy is not None and float(busy) > 95:
                continue
            if (t is not None and t <= 2 * LAUNCH_FLOOR_NS) or (busy is not None and float(busy) < 70):
                bound.append(se.role)
                why.append(f"{se.role}: {fmt_time(t)} per call" + (f", GPU busy {float(busy):.0f}%" if busy is not None else ""))
        if not known:
            return [self.cannot("no per-call times and no GPU busy share")]
        if not bound:
            return [self.ok("not launch-bound: the host governor does not matter")]
        b, c = ev.baseline, ev.candidate
        gb, gc = b.fact("host_governor"), c.fact("host_governor")
        tb, tc = b.fact("cpu_turbo"), c.fact("cpu_turbo")
        out = []
        if gb is not None and gc is not None and str(gb.value).lower() != str(gc.value).lower():
            out.append(self.flag(Severity.FAIL, "launch-bound work with different CPU governors: " + differ_text("host_governor", gb, gc), "both", non_comparable=True, launch_bound=why))
        if tb is not None and tc is not None and tb.value != tc.value:
            out.append(self.flag(Severity.FAIL, "launch-bound work with different CPU turbo settings: " + differ_text("cpu_turbo", tb, tc), "both", non_comparable=True, launch_bound=why))
        if out:
            return out
        if gb is not None and gc is not None and str(gb.value).lower() == "powersave":
            return [self.flag(Severity.WARN, "launch-bound work measured under the powersave governor on both sides: host time dominates and varies with CPU frequency", "both", launch_bound=why)]
        missing = unrecorded(ev, gb, gc)
        if missing:
            return [self.cannot(f"launch-bound work ({'; '.join(why)}) but the host governor of the {missing} is not recorded", severity=Severity.WARN, launch_bound=why)]
        return [self.ok(f"launch-bound work ({'; '.join(why)}) with the same governor ({gb.value})")]


RULE = HostGovernor()
