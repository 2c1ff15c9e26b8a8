from __future__ import annotations

import json
import math
import re

import numpy as np

from profaudit.audit.evidence import Evidence, SideEvidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import fmt_time, time_family
from profaudit.samples import params_dict

# parameters that tune or repeat the work rather than size it
_NOT_WORK = re.compile(r"(?i)(seed|iter|warm|repeat|reps?$|runs?$|trial|warps|stages|block|tile|split|thread|group|stream|device|gpu|rank|world|unroll|vec)")
_WORK_GROWTH = 10.0  # FAIRNESS P6: time flat while the work grows >= 10x
_FLAT_CV = 0.20
_FLAT_SPREAD = 1.5


class UnsynchronizedHostTimer(Rule):
    """A host (wall-clock) timer read without synchronising the device: it times the launch.

    What it detects: a side timed with a host clock (`time_source` host, perf_counter, timeit,
    pytest-benchmark ...) whose `synchronized` is false (FAIL) or not recorded (WARN); in an
    attached trace, kernels launched inside the timed NVTX range that finish after the range
    closes (the timer stopped before the work did); and, when the log holds a size sweep of the
    same benchmark, a median time that stays flat (CV < 20 %, max/min < 1.5) while the size
    parameters' product, or the other side's time over the same parameter sets, grows >= 10x, unless the times come from a device timer or a host timer
    recorded as synchronised (WARN: a launch-bound kernel is flat too, so this alone is not proof).

    Why it matters: CUDA, JAX and XLA launch asynchronously; a host timer without
    `torch.cuda.synchronize()` / `block_until_ready()` measures enqueue time (mlx-benchmark
    PR #21: MatMul 0.03 ms unsynchronised against 1.36 ms synchronised). Over-synchronising only
    the baseline distorts the comparison the other way.

    Example: candidate `time_source: host`, `synchronized: false` -> FAIL; a log of n = 2^16 ...
    2^24 all at 9-10 us, time source not recorded -> WARN.
    """

    code = "PA103"
    name = "unsynchronized-host-timer"
    severity = Severity.FAIL
    trace_corrects = True
    pitfalls = ("P6",)
    needs = ("meta time_source and synchronized per side", "or a trace with the timed NVTX range (meta.timed_range)", "or a size sweep of the benchmark in its log")

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
            sync = se.fact("synchronized")
            other = ev.candidate if se is ev.baseline else ev.baseline
            flat = self.flat_sweep(se, other) if fam in (None, "host", "mixed") and not (sync is not None and sync.value is True) else None
            if flat is not None and flat["flat"]:
                checked.append(se.role)
                if fam == "host" and sync is not None and sync.value is False:
                    out.append(self.flag(Severity.FAIL, f"the {se.role} is timed with a host clock ({ts.value}) without synchronising the device, and {self._flat_text(flat)}", se.role, time_source=ts, synchronized=sync, sweep=flat))
                else:
                    src = f"a host clock ({ts.value}) with synchronisation not recorded" if fam == "host" else "a clock that is not recorded" if fam is None else f"mixed clocks ({ts.value})"
                    out.append(self.flag(Severity.WARN, f"the {se.role} is timed with {src}, and {self._flat_text(flat)}: the timer likely stops at the launch, or the work is launch-bound at every size (a synchronised or device timer settles it)", se.role, time_source=ts, sweep=flat))
                continue
            if fam is None:
                continue
            checked.append(se.role)
            if fam != "host":
                continue
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
    def flat_sweep(se: SideEvidence, other: SideEvidence | None = None) -> dict | None:
        """The widest size sweep in the side's log (same non-size parameters), and whether its median
        time stays flat while the work grows >= 10x; None without a usable sweep.

        The product of the size parameters is a lower bound on the work (a square matmul swept over
        N grows N^3, not N). When the other side's log sweeps the same parameter sets, its time
        growth is a second lower bound: the other side doing 500x more work over the sweep shows
        the work grew, whatever formula the parameters follow."""
        sw = se.sweep
        if sw is None or sw.height < 2:
            return None
        other_t: dict[str, float] = {}
        if other is not None and other.sweep is not None:
            other_t = {p: float(m) for p, m in zip(other.sweep["params"].to_list(), other.sweep["median_ns"].to_list()) if m is not None and math.isfinite(m) and m > 0}
        groups: dict[str, list[tuple[dict, float, float | None]]] = {}
        for text, med in zip(sw["params"].to_list(), sw["median_ns"].to_list()):
            try:
                d = params_dict(text)
            except ValueError:
                continue
            if not isinstance(d, dict) or med is None or not math.isfinite(med):
                continue
            size = {k: float(v) for k, v in d.items() if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 and not _NOT_WORK.search(k)}
            rest = json.dumps({k: v for k, v in d.items() if k not in size}, sort_keys=True, default=str)
            groups.setdefault(rest, []).append((size, float(med), other_t.get(text)))
        best = None
        for rows in groups.values():
            if len(rows) < 2:
                continue
            keys = sorted(set.intersection(*(set(r[0]) for r in rows)))
            if not keys:
                continue
            work = np.array([math.prod(r[0][k] for k in keys) for r in rows])
            t = np.array([r[1] for r in rows])
            growth = float(work.max() / work.min())
            basis = "parameters"
            ot = [r[2] for r in rows]
            if all(v is not None for v in ot):
                # The other side's time over the same parameter sets, in the same order as work.
                ot_arr = np.array(ot, dtype=float)
                lo, hi = int(np.argmin(work)), int(np.argmax(work))
                other_growth = float(ot_arr[hi] / ot_arr[lo]) if ot_arr[lo] > 0 else 0.0
                if other_growth > growth:
                    growth, basis = other_growth, "the other side's time"
            if growth < _WORK_GROWTH or t.min() <= 0:
                continue
            spread = float(t.max() / t.min())
            cv = float(t.std(ddof=1) / t.mean())
            found = {
                "flat": cv < _FLAT_CV and spread < _FLAT_SPREAD,
                "size_parameters": keys,
                "work_growth": growth,
                "work_growth_from": basis,
                "time_spread": spread,
                "time_cv": cv,
                "parameter_sets": len(rows),
                "median_time_range": [fmt_time(float(t.min())), fmt_time(float(t.max()))],
            }
            if best is None or (found["flat"], growth) > (best["flat"], best["work_growth"]):
                best = found
        return best

    @staticmethod
    def _flat_text(flat: dict) -> str:
        keys = " x ".join(flat["size_parameters"])
        lo, hi = flat["median_time_range"]
        if flat.get("work_growth_from") == "the other side's time":
            return f"its median time stays within {lo}-{hi} (CV {flat['time_cv']:.0%}) over {flat['parameter_sets']} parameter sets of {keys} while the other side's time grows {flat['work_growth']:,.0f}x over the same sets"
        return f"its median time stays within {lo}-{hi} (CV {flat['time_cv']:.0%}) while {keys} grows {flat['work_growth']:,.0f}x over {flat['parameter_sets']} parameter sets"

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
