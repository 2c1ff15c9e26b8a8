from __future__ import annotations

import numpy as np
import polars as pl

from profaudit.audit.evidence import Evidence, SideEvidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import pct, time_family
from profaudit.audit.trace import call_times


class MultiStreamWork(Rule):
    """Kernels on streams other than the timed one, under a per-stream (event) timer.

    What it detects: in an attached trace, the share of kernel time that runs on streams other
    than the stream carrying most of the work, for a side timed with CUDA events (an event pair
    brackets one stream only). Over 5 % -> WARN.

    Why it matters: work submitted to a side stream, or by a helper thread, is invisible to
    events recorded on the default stream (KernelBench non_default_stream_kernel.py; the
    deep-reinforce "stream injection" hack). When the trace has per-call ranges and the timed
    time per call covers the span of the call's kernels on every stream (the union of their
    intervals) where the other streams extend that span beyond the main stream's, the side
    stream was waited for and nothing escaped. Traces, ncu and a device-wide synchronise cover all
    streams; events do not.

    Example: the candidate's trace shows 30 % of kernel time on stream 14 while it is timed with
    events on stream 7: WARN.
    """

    code = "PA107"
    name = "multi-stream-work"
    severity = Severity.WARN
    pitfalls = ("P7",)
    needs = ("an attached trace with kernel streams", "the time source")

    def check(self, ev: Evidence) -> list[Finding]:
        out, checked = [], []
        for se in ev.sides:
            res = self._side(se)
            if res is None:
                continue
            checked.append(se.role)
            fam = time_family(se.get("time_source"))
            ct, t = call_times(se), se.typical_time_ns()
            if ct is not None and t is not None and ct.median > 0 and ct.main_stream_ns is not None:
                res["traced_gpu_ns_per_call"] = ct.median
                # Proof that the timer waited for the other streams: their kernels extend the
                # call's span beyond the main stream's, and the timed time covers that span.
                if ct.median > 1.02 * float(np.median(ct.main_stream_ns)) and t >= 0.9 * ct.median:
                    continue
            if res["off_stream_share"] > 0.05 and fam in ("events", None):
                out.append(self.flag(Severity.WARN, f"{pct(res['off_stream_share'])} of the {se.role}'s kernel time runs on streams other than stream {res['main_stream']} while it is timed with {se.get('time_source') or 'an unrecorded time source'}: work may escape the timer", se.role, **res))
        if out:
            return out
        if not checked:
            return [self.cannot("no attached trace with kernel stream ids")]
        return [self.ok(f"kernel work stays on one stream or the time source covers every stream ({', '.join(checked)})")]

    @staticmethod
    def _side(se: SideEvidence):
        if not se.has_kernels:
            return None
        k = se.kernels.filter(pl.col("stream").is_not_null() & pl.col("duration_ns").is_not_null())
        if k.height == 0:
            return None
        per = k.group_by("stream").agg(pl.col("duration_ns").sum().alias("t"), pl.len().alias("n")).sort("t", descending=True)
        total = float(per["t"].sum())
        if total <= 0:
            return None
        main = per.row(0, named=True)
        return {"streams": per.height, "main_stream": int(main["stream"]), "off_stream_share": 1 - main["t"] / total, "kernels": int(per["n"].sum())}


RULE = MultiStreamWork()
