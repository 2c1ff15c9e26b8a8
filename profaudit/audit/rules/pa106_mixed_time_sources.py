from __future__ import annotations

from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import time_family, unrecorded
from profaudit.audit.shared_run import settled_text

_WHY = {
    "ncu": "ncu replays each kernel with flushed caches and clocks locked to base (11.15 us in ncu against 7.0 us in nsys in one NVIDIA forum case)",
    "host": "a host clock adds launch and Python overhead, or misses device work when unsynchronised",
    "trace": "trace durations cover kernels only, not launch gaps",
    "events": "event timings include launch gaps on the stream and have ~0.5 us resolution",
    "device-timer": "a device-side timer covers the device program only",
}


class MixedTimeSources(Rule):
    """The two sides were timed by different kinds of clock (events, ncu, trace, host).

    What it detects: time sources per side (meta.time_source, the samples' time_source column,
    or the profile a side's durations come from), grouped into families: CUDA events (including
    do_bench and nvbench), ncu replay, traces (nsys, Kineto, CUPTI, XLA, Proton), device timers
    (nki.benchmark) and host clocks. Different families -> FAIL; a side mixing sources -> FAIL.
    Both sides timed in one run of one file (a wide log with a column per side) share its clock,
    named or not: that passes unless the file records several time sources.

    Why it matters: ncu's gpu__time_duration runs at base clocks with flushed caches and
    serialised replays; it is not interchangeable with event or nsys timings (expected bias about
    f_boost / f_base plus 0.5-2 us). Host clocks add launch overhead. A ratio across families
    measures the tools, not the kernels.

    Example: baseline `time_source: ncu`, candidate `time_source: cuda_events` -> FAIL.
    """

    code = "PA106"
    name = "mixed-time-sources"
    severity = Severity.FAIL
    trace_corrects = True
    pitfalls = ("P5",)
    needs = ("the time source of each side",)
    unknown_severity = Severity.WARN

    def check(self, ev: Evidence) -> list[Finding]:
        fb, fc = ev.baseline.fact("time_source"), ev.candidate.fact("time_source")
        for se, f in ((ev.baseline, fb), (ev.candidate, fc)):
            if f is not None and time_family(f.value) == "mixed":
                return [self.flag(Severity.FAIL, f"the {se.role}'s samples mix time sources ({str(f.value)[6:]})", se.role, non_comparable=True, time_source=f)]
        missing = unrecorded(ev, fb, fc)
        sr = ev.shared_run
        if missing:
            if sr is not None and sr.not_one_clock is None:
                # one run of one harness timed both columns: whatever its clock, it is the same one
                return [self.ok(settled_text(ev), time_source_baseline=fb, time_source_candidate=fc, shared_files=list(sr.files))]
            why = f" ({sr.origin}, but {sr.not_one_clock})" if sr is not None else ""
            return [self.cannot(f"the time source of the {missing} is not recorded (meta.time_source){why}", time_source_baseline=fb, time_source_candidate=fc)]
        famb, famc = time_family(fb.value), time_family(fc.value)
        evid = {"time_source_baseline": fb, "time_source_candidate": fc, "family_baseline": famb, "family_candidate": famc}
        if famb != famc:
            why = "; ".join(_WHY[f] for f in (famb, famc) if f in _WHY)
            return [self.flag(Severity.FAIL, f"the sides were timed differently: baseline {fb.value} ({famb}) vs candidate {fc.value} ({famc}); {why}", "both", non_comparable=True, **evid)]
        if str(fb.value).lower() != str(fc.value).lower():
            return [self.ok(f"both sides use {famb} timing ({fb.value} / {fc.value})", **evid)]
        if sr is not None and sr.not_one_clock is None:
            return [self.ok(settled_text(ev), shared_files=list(sr.files), **evid)]
        return [self.ok(f"both sides timed with {fb.value}", **evid)]


RULE = MixedTimeSources()
