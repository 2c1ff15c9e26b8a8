from __future__ import annotations

import json
import re

from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import differ_text, fx
from profaudit.audit.trace import attention_masking
from profaudit.fmt import fmt_bytes, fmt_si
from profaudit.workload import normalise_op

# Parameter names that describe the problem (not the implementation's tuning knobs).
_WORKLOAD_PARAM = re.compile(r"^(n|m|k|b|h|d|l|s|size|sizes|shape|dims?|batch.*|seq.*|len.*|length|elements?|num_?elements|(array|axis|input|matrix|vector|tensor|data)_?size|rows|cols|columns|heads|head_?dim|hidden.*|features|channels|width|height|tokens|dtype|type|t|precision|problem.*)$", re.IGNORECASE)


def _q(v: object, key: str) -> str:
    """A per-call work count, visibly rounded with its unit (2.20 TFLOP, 134 MB): a bare 1.1e+12
    would look exact."""
    return fmt_si(v, "FLOP") if key == "flops" else fmt_bytes(v)


def _workload_param(key) -> bool:
    """A problem-size parameter. nvbench axis names carry spaces ("Num Elements", "Axis Size"):
    they are matched with the spaces and dashes read as underscores."""
    return bool(_WORKLOAD_PARAM.match(re.sub(r"[\s\-]+", "_", str(key).strip())))


def causal_inflation(se, declared: float, recomputed: float) -> bool:
    """A causal op's FLOP count that is twice the recomputed (causal) count: the full attention
    matrix counted for a kernel that computes half of it."""
    op = se.get("op")
    return op is not None and "causal" in normalise_op(op) and abs(declared / recomputed - 2.0) <= 0.02


def _params(v) -> dict | None:
    try:
        d = json.loads(v)
    except (TypeError, ValueError):
        return None
    return d if isinstance(d, dict) else None


class WorkloadMismatch(Rule):
    """The sides did different work: shapes, batch size, FLOP or byte counts, problem parameters.

    What it detects: different `shape` or `batch_size`; FLOPs or bytes per call that differ by
    more than 1 % between the sides' own counts (FLOP accounting); a side's own FLOP count more
    than 1 % away from the one its `op`, `shape` and dtype give (or a byte count below that
    minimum: WARN, and the recomputed value is what the physics rules use); and, in logs with parameter
    columns, different values of problem-size parameters (n, m, k, batch, seq_len, elements,
    dtype ...). Declared `intended_differences` are a WARN.

    Why it matters: a speedup on a different problem is not a speedup (robust-kbench: kernels
    that overfit shapes; triton PR #1849: a non-causal FLOP count doubled for a causal kernel).

    Different ops (`op`: attention against causal_attention, or attention kernels whose names say
    causal on one side only) are different work even with equal shapes (FAIL); a causal op's FLOP count equal to twice the recomputed count is named as the
    known causal FLOP inflation.

    Example: baseline shape [8192, 8192], candidate [4096, 4096]: FAIL.
    """

    code = "PA302"
    name = "workload-mismatch"
    severity = Severity.FAIL
    pitfalls = ("P3",)
    needs = ("shape / batch_size / flops / bytes of both sides, or parameter columns in the logs",)
    unknown_severity = Severity.WARN

    def check(self, ev: Evidence) -> list[Finding]:
        b, c = ev.baseline, ev.candidate
        out: list[Finding] = []
        compared = []
        notes: list[str] = []
        ob, oc = b.fact("op"), c.fact("op")
        if ob is not None and oc is not None:
            compared.append("op")
            if normalise_op(ob.value) != normalise_op(oc.value):
                sev = Severity.WARN if ev.intended("op") else Severity.FAIL
                out.append(self.flag(sev, "different operations: " + differ_text("op", ob, oc) + " (equal shapes do not make equal work)", "both", non_comparable=True, op_baseline=ob, op_candidate=oc))
        mb, mc = attention_masking(b), attention_masking(c)
        if mb is not None and mc is not None:
            compared.append("attention masking from kernel names")
            if mb[0] != mc[0] and not ev.intended("op"):
                causal, plain = ("baseline", "candidate") if mb[0] else ("candidate", "baseline")
                kc, kp = (mb, mc) if mb[0] else (mc, mb)
                out.append(self.flag(Severity.FAIL, f"different operations: the {causal}'s attention kernels are causal ({', '.join(kc[1])}) and the {plain}'s are not ({', '.join(kp[1])}): a causal kernel computes half the score matrix", "both", non_comparable=True, kernels_baseline=mb[1], kernels_candidate=mc[1]))
        for key in ("shape", "batch_size"):
            fb, fc = b.fact(key), c.fact(key)
            if fb is None or fc is None:
                continue
            compared.append(key)
            if str(fb.value) != str(fc.value):
                sev = Severity.WARN if ev.intended(key) else Severity.FAIL
                out.append(self.flag(sev, "different work: " + differ_text(key, fb, fc), "both", non_comparable=True, **{f"{key}_baseline": fb, f"{key}_candidate": fc}))
        for key in ("flops", "bytes"):
            fb, fc = b.fact(key), c.fact(key)
            if fb is None or fc is None:
                continue
            compared.append(key)
            vb, vc = float(fb.value), float(fc.value)
            if abs(vb - vc) > 0.01 * max(vb, vc):
                rb, rc = b.fact(f"{key}_from_shape"), c.fact(f"{key}_from_shape")
                if rb is not None and rc is not None and abs(float(rb.value) - float(rc.value)) <= 0.01 * max(float(rb.value), float(rc.value)):
                    # Recomputed from each side's op and shape the work is the same: only the
                    # counting differs, so the time ratio stands; a rate-based claim does not.
                    cmp = ev.comparison
                    out.append(self.flag(Severity.WARN, f"the sides count different {key} per call ({_q(vb, key)} vs {_q(vc, key)}) for the same work ({_q(rb.value, key)} recomputed from op and shape on both): a FLOP/s or GB/s comparison is inflated; the time ratio stands", "both",
                                         correction=cmp.primary_interval if cmp.available else None, correction_note=f"recomputed {key}: the same op and shape on both sides, so the time ratio stands", **{f"{key}_baseline": fb, f"{key}_candidate": fc, f"{key}_recomputed": rb}))
                    continue
                sev = Severity.WARN if ev.intended(key) else Severity.FAIL
                out.append(self.flag(sev, f"the sides count different {key} per call ({_q(vb, key)} vs {_q(vc, key)}): different work or different accounting", "both", non_comparable=True, **{f"{key}_baseline": fb, f"{key}_candidate": fc}))
        for se in ev.sides:
            for key in ("flops", "bytes"):
                declared, derived = se.fact(key), se.fact(f"{key}_from_shape")
                if declared is None or derived is None:
                    continue
                compared.append(f"{se.role} {key} recomputed from shape")
                vd, vr = float(declared.value), float(derived.value)
                # bytes: the recomputed value is a minimum, so only a count below it is wrong
                off = abs(vd - vr) > 0.01 * max(vd, vr) if key == "flops" else vd < 0.99 * vr
                if off:
                    causal = key == "flops" and causal_inflation(se, vd, vr)
                    what = "causal FLOP inflation: the non-causal count (2x) for a causal op (triton PR #1849)" if causal else "FLOP/byte accounting"
                    out.append(
                        self.flag(
                            Severity.WARN,
                            f"the {se.role} counts {_q(vd, key)} per call, but its op and shape give {_q(vr, key)} ({fx(vd / vr)}; {derived.source.split(';')[0]}): {what}; the audit uses the recomputed value",
                            se.role,
                            **{f"{key}_declared": declared, f"{key}_recomputed": derived},
                        )
                    )
            prob = se.fact("workload_from_shape_problem")
            if prob is not None:
                notes.append(f"the {se.role}'s FLOPs and bytes cannot be recomputed from its op and shape: {prob.value}")
        pb, pc = b.fact("params"), c.fact("params")
        if pb is not None and pc is not None:
            db, dc = _params(pb.value), _params(pc.value)
            if db is not None and dc is not None:
                keys = sorted(k for k in set(db) & set(dc) if _workload_param(k))
                if keys:
                    compared.append("params")
                    diff = {k: (db[k], dc[k]) for k in keys if str(db[k]) != str(dc[k])}
                    if diff:
                        out.append(self.flag(Severity.FAIL, f"the logs' problem parameters differ: {', '.join(f'{k} {v[0]} vs {v[1]}' for k, v in diff.items())}", "both", non_comparable=True, params_baseline=pb, params_candidate=pc))
        if out:
            return out
        note = "".join(f"; {n}" for n in notes)
        if not compared:
            return [self.cannot("neither shape, batch size, FLOP/byte counts nor problem parameters are recorded for both sides" + note)]
        return [self.ok(f"same workload ({', '.join(compared)}){note}")]


RULE = WorkloadMismatch()
