from __future__ import annotations

import numpy as np

from profaudit.audit.evidence import Evidence, SideEvidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import time_family


class UnsynchronizedHostTimer(Rule):
    """A host (wall-clock) timer read without synchronising the device: it times the launch.

    What it detects: a side timed with a host clock (`time_source` host, perf_counter, timeit,
    pytest-benchmark ...) whose `synchronized` is false (FAIL) or not recorded (WARN); and, in an
    attached trace, kernels launched inside the timed NVTX range that finish after the range
    closes (the timer stopped before the work did).

    Why it matters: CUDA, JAX and XLA launch asynchronously; a host timer without
    `torch.cuda.synchronize()` / `block_until_ready()` measures enqueue time (mlx-benchmark
    PR #21: MatMul 0.03 ms unsynchronised against 1.36 ms synchronised). Over-synchronising only
    the baseline distorts the comparison the other way.

    Example: candidate `time_source: host`, `synchronized: false` -> FAIL.
    """

    code = "PA103"
    name = "unsynchronized-host-timer"
    severity = Severity.FAIL
    pitfalls = ("P6",)
    needs = ("meta time_source and synchronized per side", "or a trace with the timed NVTX range (meta.timed_range)")

    def check(self, ev: Evidence) -> list[Finding]:
        out: list[Finding] = []
        checked = []
        for se in ev.sides:
            late = self._late_kernels(se)
            if late is not None:
                checked.append(se.role)
                if late["share_of_ranges"] >= 0.5:
                    out.append(self.flag(Severity.FAIL, f"in the {se.role}'s trace, kernels launched in {late['late_ranges']} of {late['ranges']} timed ranges finish after the range ends: the timer stops before the work", se.role, **late))
                    continue
            ts = se.fact("time_source")
            fam = time_family(ts.value) if ts else None
            if fam is None:
                continue
            checked.append(se.role)
            if fam != "host":
                continue
            sync = se.fact("synchronized")
            if sync is None:
                out.append(self.flag(Severity.WARN, f"the {se.role} is timed with a host clock ({ts.value}) and whether the device was synchronised before reading it is not recorded", se.role, time_source=ts))
            elif sync.value is False:
                out.append(self.flag(Severity.FAIL, f"the {se.role} is timed with a host clock ({ts.value}) without synchronising the device: it measures launch (enqueue) time, not execution", se.role, time_source=ts, synchronized=sync))
        if out:
            return out
        if not checked:
            return [self.cannot("the time source of neither side is recorded (meta.time_source) and no trace shows the timed range")]
        missing = [se.role for se in ev.sides if se.role not in checked]
        note = f"; the {missing[0]}'s time source is unknown" if missing else ""
        return [self.ok(f"device-side timing or a synchronised host timer{note}", time_source_baseline=ev.baseline.fact("time_source"), time_source_candidate=ev.candidate.fact("time_source"))]

    @staticmethod
    def _late_kernels(se: SideEvidence):
        r, kv = se.timed_ranges(), se.kernel_intervals
        if r is None or kv is None:
            return None
        ks, ke = kv
        late = 0
        slack = 1_000  # 1 us: event and range timestamps are placed a little apart
        for s, e in zip(r["start_ns"].to_list(), r["end_ns"].to_list()):
            i0, i1 = np.searchsorted(ks, s), np.searchsorted(ks, e)
            if i1 > i0 and (ke[i0:i1] > e + slack).any():
                late += 1
        return {"ranges": r.height, "late_ranges": late, "share_of_ranges": late / r.height, "range": se.get("timed_range")}


RULE = UnsynchronizedHostTimer()
