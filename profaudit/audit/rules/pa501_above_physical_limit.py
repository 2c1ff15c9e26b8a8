from __future__ import annotations

from profaudit.audit.evidence import Evidence, SideEvidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import bandwidth, cache_state, fmt_bytes, fmt_time, fx, l2_bytes, roofline_floor


class AbovePhysicalLimit(Rule):
    """A side runs faster than the device can: below max(FLOPs / peak, bytes / bandwidth).

    What it detects: per side, the steady median time per call against the roofline floor
    t_min = max(F / dense peak for the dtype, W / DRAM bandwidth) of the device spec (FAIRNESS
    P12): t < 0.95 t_min -> FAIL, unless W fits in L2 and the cache was hot, in which case the
    floor is recomputed with L2 bandwidth (below that too -> FAIL; between -> WARN: only a hot L2
    explains it). Within 5 % of t_min, or an effective bandwidth at 93-100 % of DRAM peak ->
    WARN. Counter bytes per call (meta dram_bytes / l2_bytes, ncu DRAM bytes) moved faster than
    that level's bandwidth -> FAIL. The implied speedup is also compared with the baseline's
    roofline headroom t_base / t_min.

    Why it matters: a result above the hardware's limit is a measurement error: an unsynchronised
    timer, skipped work, a persisting-L2 window (llm.c PR #851 reported 3530 GB/s on an 864 GB/s
    L40S). Sparse peaks need proof of sparsity, so dense peaks are used unless `sparse: true`.

    Example: 32 GB moved in 6.1 ms on a 3.35 TB/s H100 (t_min 9.55 ms): FAIL.
    """

    code = "PA501"
    name = "above-physical-limit"
    severity = Severity.FAIL
    pitfalls = ("P12", "P6", "P2")
    needs = ("device spec of the side", "workload flops/bytes (claim) or counter bytes (meta, ncu)", "per-call times")

    def check(self, ev: Evidence) -> list[Finding]:
        out, checked, reasons = [], [], []
        for se in ev.sides:
            t = se.typical_time_ns()
            if t is None or t <= 0:
                reasons.append(f"no {se.role} time")
                continue
            res = self._roofline(ev, se, t)
            if res is None:
                reasons.append(f"{se.role}: " + roofline_floor(ev, se)[1].get("reason", "no floor"))
            else:
                checked.append(se.role)
                if res is not True:
                    out.append(res)
            out.extend(self._counters(se, t, checked))
        if out:
            return out
        if not checked:
            return [self.cannot("; ".join(reasons) or "no device spec or workload")]
        b = ev.baseline
        tb = b.typical_time_ns()
        t_min, _ = roofline_floor(ev, b)
        headroom = tb / t_min if (tb and t_min) else None
        return [self.ok(f"within the device's limits ({', '.join(sorted(set(checked)))})" + (f"; the baseline's roofline headroom is {fx(headroom)}" if headroom else ""), baseline_headroom=headroom)]

    def _roofline(self, ev: Evidence, se: SideEvidence, t: float):
        t_min, detail = roofline_floor(ev, se)
        if t_min is None:
            return None
        w = detail.get("bytes")
        bw = detail.get("bandwidth_bytes_per_s")
        evid = dict(detail, time_ns=t, ratio_to_floor=t / t_min)
        if t < 0.95 * t_min:
            state, sf = cache_state(se)
            l2 = l2_bytes(se)
            if w is not None and l2 is not None and w <= l2 and state != "cold":
                t_l2, d2 = roofline_floor(ev, se, "l2")
                evid.update(l2_cache_bytes=l2, cache=sf, l2_floor=d2)
                if t_l2 is not None and t < 0.95 * t_l2:
                    return self.flag(Severity.FAIL, f"the {se.role} takes {fmt_time(t)} per call, below even the L2 floor {fmt_time(t_l2)} for {fmt_bytes(w)} (fits in L2): physically impossible", se.role, **evid)
                return self.flag(Severity.WARN, f"the {se.role} takes {fmt_time(t)} per call, below the DRAM floor {fmt_time(t_min)}; only a hot L2 explains it ({fmt_bytes(w)} fits in {fmt_bytes(l2)} of L2, {'hot' if state == 'hot' else 'flush not recorded'})", se.role, **evid)
            return self.flag(Severity.FAIL, f"the {se.role} takes {fmt_time(t)} per call, below the roofline floor {fmt_time(t_min)} ({detail['bound']}-bound on {detail['device_spec']}): physically impossible" + self._causal_note(se, detail), se.role, **evid)
        if t < t_min or (w is not None and bw is not None and 0.93 <= (w / (t * 1e-9)) / bw):
            eff = (w / (t * 1e-9)) / bw if w is not None and bw else None
            return self.flag(Severity.WARN, f"the {se.role} runs at {t_min / t:.0%} of its roofline bound" + (f" ({eff:.0%} of DRAM bandwidth)" if eff else "") + ": suspiciously close to the hardware limit", se.role, effective_bandwidth_fraction=eff, **evid)
        return True

    @staticmethod
    def _causal_note(se: SideEvidence, detail: dict) -> str:
        """Name the causal FLOP inflation when the FLOP count behind a compute floor is twice the
        causal count recomputed from the side's op and shape."""
        from profaudit.audit.rules.pa302_workload_mismatch import causal_inflation

        flops, rec = detail.get("flops"), se.get("flops_from_shape")
        if detail.get("bound") != "compute" or not flops or not rec or not causal_inflation(se, float(flops), float(rec)):
            return ""
        return f"; the FLOP count {float(flops):.4g} is the causal FLOP inflation (twice the {float(rec):.4g} a causal op computes; triton PR #1849)"

    def _counters(self, se: SideEvidence, t: float, checked: list) -> list[Finding]:
        out = []
        for level, key in (("dram", "dram_bytes"), ("l2", "l2_bytes")):
            if key == "dram_bytes":
                nbytes, src = se.dram_bytes_per_call()
                if nbytes is None and se.fact(key) is not None:
                    nbytes, src = float(se.get(key)), se.fact(key).source
            else:
                f = se.fact(key)
                nbytes, src = (float(f.value), f.source) if f is not None else (None, "")
            bw = bandwidth(se, level)
            if nbytes is None or bw is None:
                continue
            checked.append(f"{se.role} {level} counters")
            rate = nbytes / (t * 1e-9)
            if rate > bw:
                out.append(self.flag(Severity.FAIL, f"the {se.role}'s measured {level.upper()} traffic ({fmt_bytes(nbytes)} per call, {src}) implies {rate / 1e12:.3g} TB/s, above the {level.upper()} peak of {bw / 1e12:.3g} TB/s", se.role, bytes=nbytes, bytes_source=src, rate_bytes_per_s=rate, peak_bytes_per_s=bw, time_ns=t))
        return out


RULE = AbovePhysicalLimit()
