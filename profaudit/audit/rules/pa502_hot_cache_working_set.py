from __future__ import annotations

from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import cache_state, fmt_bytes, l2_bytes


class HotCacheWorkingSet(Rule):
    """The working set fits in L2 and the cache was not flushed: the timing measures L2.

    What it detects: the workload's minimum bytes W against the device's L2 size (FAIRNESS P2):
    W <= L2 on a side with no recorded flush -> WARN (medium confidence); 0.5-2 x L2 is the
    borderline band -> WARN. An ncu report with DRAM bytes per call under half of W while
    --cache-control none says the data came from cache -> WARN (high confidence); under
    --cache-control all the hot-cache explanation is excluded for that report.

    Why it matters: repeated calls on buffers that fit in L2 read L2, not HBM: TileGym PR #118
    saw do_bench_cudagraph overstate bandwidth ~1.6x at a 64 MB working set on GB200; flashinfer
    #4468 measured a warm L2 while asking for a cold one (36 % latency difference).

    Example: a 24 MB softmax on an H100 (50 MB L2) timed back to back without a flush: WARN.
    """

    code = "PA502"
    name = "hot-cache-working-set"
    severity = Severity.WARN
    pitfalls = ("P2",)
    needs = ("workload bytes (claim or meta)", "the device's L2 size (device spec)", "cache state per side")

    def check(self, ev: Evidence) -> list[Finding]:
        out, checked, reasons = [], [], []
        for se in ev.sides:
            w, wsrc = ev.workload_value("bytes", se)
            l2 = l2_bytes(se)
            if w is None or l2 is None:
                reasons.append(f"{se.role}: " + ("no workload bytes" if w is None else (se.spec_note or "no L2 size")))
                continue
            checked.append(se.role)
            state, sf = cache_state(se)
            dram, dsrc = se.dram_bytes_per_call()
            cc = se.get("cache_control")
            evid = {"working_set_bytes": w, "working_set_source": wsrc, "l2_cache_bytes": l2, "cache": sf, "ratio_to_l2": w / l2}
            if dram is not None and str(cc).lower() == "none" and dram < 0.5 * w:
                out.append(self.flag(Severity.WARN, f"ncu with --cache-control none reads {fmt_bytes(dram)} per call from DRAM, under half the {fmt_bytes(w)} working set: the {se.role} ran from a hot cache", se.role, dram_bytes=dram, dram_source=dsrc, **evid))
                continue
            if state == "cold" or w > 2 * l2:
                continue
            what = "fits in" if w <= l2 else "is close to"
            flush = "the cache was hot" if state == "hot" else "no L2 flush is recorded"
            out.append(self.flag(Severity.WARN, f"the {se.role}'s working set {fmt_bytes(w)} {what} the {fmt_bytes(l2)} L2 and {flush}: the time may measure L2, not DRAM", se.role, **evid))
        if out:
            return out
        if not checked:
            return [self.cannot("; ".join(reasons))]
        return [self.ok(f"working set beyond 2x L2 or caches flushed ({', '.join(checked)})")]


RULE = HotCacheWorkingSet()
