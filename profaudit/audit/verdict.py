"""Run the rules on the evidence and turn their findings into a verdict.

Conventions (FAIRNESS.md): FAIL when the claim is invalid or inflated, or the sides are not
comparable; INCONCLUSIVE when the evidence cannot decide; WARN when the claim may survive but is
misleading; PASS otherwise. The verdict is the most severe problem a rule found. A rule that
could not check raises nothing: the report's coverage line says how many rules could check and
what stays unverified, with the assumptions a reviewer takes on for the rest.

The supported speedup follows the findings: the recomputed ratio, a corrected one naming every
correction, or "not supported" with the reason (never the raw ratio after a FAIL).
"""

from __future__ import annotations

import math
import time

import numpy as np
from dataclasses import dataclass, field
from typing import Iterable

from profaudit.audit.claim import Claim
from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity, Status
from profaudit.audit.speedup import Comparison
from profaudit.audit.stats import Interval

VERDICTS = ("PASS", "WARN", "INCONCLUSIVE", "FAIL")
_BY_SEVERITY = {Severity.INFO: "PASS", Severity.WARN: "WARN", Severity.INCONCLUSIVE: "INCONCLUSIVE", Severity.FAIL: "FAIL"}
REPORT_VERSION = 1
_SPACE = {"time": "time", "cycles": "cycle"}


class Corrections(list):
    """The corrections behind a supported speedup, one entry per finding: "PA403: median instead
    of the contaminated mean". Membership also answers by rule code (`"PA403" in corrected_by`)."""

    def __contains__(self, item) -> bool:
        return list.__contains__(self, item) or any(str(e).split(":", 1)[0] == item for e in self)

    @property
    def rules(self) -> list[str]:
        return [str(e).split(":", 1)[0] for e in self]


@dataclass
class SupportedSpeedup:
    """The speedup the evidence supports, with its interval, and why it is stated this way.

    `status` is "recomputed" (the measured ratio, nothing to correct), "corrected" (a finding
    invalidated or inflated the measured ratio; `corrected_by` names every correction) or
    "not supported" (no correction is possible; `reason` says why and `interval` is None)."""

    interval: Interval | None
    comparable: bool
    basis: str  # e.g. "median of steady-state samples in cycle space"
    corrected_by: list[str] = field(default_factory=Corrections)
    supported: bool = True
    reason: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.corrected_by, Corrections):
            self.corrected_by = Corrections(self.corrected_by)

    @property
    def status(self) -> str:
        if not self.supported or self.interval is None:
            return "not supported"
        return "corrected" if self.corrected_by else "recomputed"

    def as_dict(self) -> dict:
        iv = self.interval
        d = {
            "status": self.status,
            "supported": self.supported and iv is not None,
            "estimate": _num(iv.estimate) if iv else None,
            "low": _num(iv.low) if iv else None,
            "high": _num(iv.high) if iv else None,
            "confidence": iv.confidence if iv else None,
            "statistic": iv.statistic if iv else None,
            "space": iv.space if iv else None,
            "method": iv.method if iv else None,
            "comparable": self.comparable,
            "basis": self.basis,
            "corrected_by": list(self.corrected_by),
            "corrected_by_rules": self.corrected_by.rules,
            "reason": self.reason or None,
        }
        return d


@dataclass
class Coverage:
    """Which rules could check, and what the reviewer takes on trust for the others."""

    checked: list[str]
    unverified: list[str]  # rule codes that could not check
    topics: list[str]  # what those rules would have verified, in words
    assumptions: list[str]  # one line per unverified rule: what is assumed and why

    @property
    def line(self) -> str:
        n = len(self.checked) + len(self.unverified)
        text = f"{len(self.checked)} of {n} rules could check"
        return text + (f"; unverified: {', '.join(self.topics)}" if self.topics else "")

    def as_dict(self) -> dict:
        return {"line": self.line, "checked": self.checked, "unverified": self.unverified, "unverified_topics": self.topics, "assumptions": self.assumptions}


@dataclass
class AuditReport:
    verdict: str
    claim: Claim
    evidence: Evidence
    findings: list[Finding]
    supported: SupportedSpeedup
    rules: list[str]
    reasons: list[str]
    elapsed_s: float = 0.0
    coverage: Coverage | None = None

    def __repr__(self) -> str:
        # one line: the dataclass repr printed the evidence (every sample) and each finding
        from profaudit.notebook import audit_repr

        return audit_repr(self)

    def _repr_html_(self) -> str:
        from profaudit.notebook import audit_html

        return audit_html(self)

    @property
    def comparison(self) -> Comparison:
        return self.evidence.comparison

    @property
    def claimed_speedup(self) -> float | None:
        return self.claim.speedup

    @property
    def exit_code(self) -> int:
        """0 for PASS and WARN, 1 for FAIL and INCONCLUSIVE (so CI can gate on it)."""
        return 0 if self.verdict in ("PASS", "WARN") else 1

    def by_status(self, status: Status) -> list[Finding]:
        return [f for f in self.findings if f.status is status]

    @property
    def problems(self) -> list[Finding]:
        """Triggered findings above INFO, most severe first ("cannot check" is coverage, not a problem)."""
        out = [f for f in self.findings if f.status is Status.FAIL and f.severity > Severity.INFO]
        return sorted(out, key=lambda f: (-int(f.severity), f.rule))

    def side_summary(self) -> dict:
        out = {}
        for se in self.evidence.sides:
            out[se.role] = {
                "label": se.label,
                "sources": list(se.sources),
                "samples": int(se.times.size) if se.has_samples else 0,
                "steady_state_samples": se.n,
                "warmup_head_samples": se.head_count,
                "labelled_warmup_rows": se.warmup_rows,
                "invalid_rows": se.invalid_rows,
                "summaries_ns": se.summaries or None,
                "typical_time_ns": _num(se.typical_time_ns()),
                "device_spec": se.spec_note or None,
                "facts": {k: [f.as_dict() for f in v] for k, v in sorted(se.facts.items())},
            }
        return out

    def as_dict(self) -> dict:
        cmp = self.comparison
        return {
            "profaudit_audit_report": REPORT_VERSION,
            "verdict": self.verdict,
            "reasons": self.reasons,
            "claim": self.claim.description,
            "claim_file": self.claim.path,
            "claimed_speedup": self.claim.speedup,
            "claimed_statistic": self.claim.statistic.name if self.claim.statistic else None,
            "supported_speedup": self.supported.as_dict(),
            "coverage": self.coverage.as_dict() if self.coverage else None,
            "speedups": {k: v.as_dict() for k, v in cmp.intervals.items()},
            "comparison": cmp.as_dict(),
            "sides": self.side_summary(),
            "findings": [f.as_dict() for f in sorted(self.findings, key=lambda f: (_status_rank(f), -int(f.severity), f.rule))],
            "rules_run": self.rules,
            "elapsed_s": round(self.elapsed_s, 4),
        }


def _status_rank(f: Finding) -> int:
    return {Status.FAIL: 0, Status.UNKNOWN: 1, Status.PASS: 2}[f.status]


def _num(v):
    if v is None:
        return None
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def run_rules(ev: Evidence, rules: Iterable[Rule]) -> list[Finding]:
    findings: list[Finding] = []
    for rule in rules:
        res = rule.check(ev)
        if not res:
            raise RuntimeError(f"rule {rule.code} returned no finding; a rule must pass, flag or say it cannot check")
        findings.extend(res)
    return findings


def decide(findings: list[Finding]) -> tuple[str, list[str]]:
    """The most severe problem a rule found. "Cannot check" never raises the verdict: what a rule
    could not verify is listed as coverage and assumptions, not held against the claim."""
    worst = Severity.INFO
    for f in findings:
        if f.status is not Status.FAIL:
            continue
        worst = max(worst, f.severity)
    verdict = _BY_SEVERITY[worst]
    reasons = [f"{f.rule} {f.name}: {f.message}" for f in sorted(findings, key=lambda f: (-int(f.severity), f.rule)) if f.status is Status.FAIL and f.severity == worst and worst > Severity.INFO]
    return verdict, reasons


# What each rule verifies, for the coverage line ("unverified: clocks, workload").
TOPICS = {
    "PA101": "warm-up", "PA102": "compile/autotune in the timed region", "PA103": "timer synchronisation",
    "PA104": "batched or skipped calls", "PA105": "timer against kernel time", "PA106": "time sources",
    "PA107": "work on other streams", "PA108": "metadata consistency", "PA109": "timer against wall clock",
    "PA201": "device", "PA202": "versions", "PA203": "throttling", "PA204": "clocks", "PA205": "drift",
    "PA206": "power limit", "PA207": "contention", "PA208": "host governor", "PA209": "cache control", "PA210": "multi-GPU job",
    "PA301": "precision", "PA302": "workload", "PA303": "execution mode", "PA304": "correctness",
    "PA305": "cached results", "PA306": "baseline strength", "PA401": "sample count", "PA402": "noise",
    "PA403": "outliers", "PA404": "statistic", "PA405": "tail statistic", "PA406": "significance",
    "PA407": "claim against the interval", "PA408": "run-to-run variation", "PA501": "physical limits",
    "PA502": "hot cache", "PA503": "launch overhead",
}


def coverage(findings: list[Finding], rules: list[str]) -> Coverage:
    by_rule: dict[str, list[Finding]] = {}
    for f in findings:
        by_rule.setdefault(f.rule, []).append(f)
    checked, unverified, topics, assumptions = [], [], [], []
    for code in rules:
        fs = by_rule.get(code, [])
        if fs and all(f.status is Status.UNKNOWN for f in fs):
            unverified.append(code)
            topic = TOPICS.get(code, fs[0].name)
            if topic not in topics:
                topics.append(topic)
            for f in fs:
                assumptions.append(f"{code} {topic}: {f.message.removeprefix('cannot check: ')}")
        else:
            checked.append(code)
            # a rule that checked part of the evidence may still rest on an assumption for the rest
            assumptions.extend(f"{code} {TOPICS.get(code, f.name)}: {f.message.removeprefix('cannot check: ')}" for f in fs if f.status is Status.UNKNOWN)
    return Coverage(checked, unverified, topics, assumptions)


def _correction_note(f: Finding) -> str:
    if f.correction_note:
        return f.correction_note
    iv = f.correction
    return f"{iv.statistic} of steady-state samples in {_SPACE.get(iv.space, iv.space)} space"


def _invalidates(f: Finding) -> bool:
    from profaudit.audit.rules import BY_CODE

    if f.invalidates is not None:
        return f.invalidates
    rule = BY_CODE.get(f.rule)
    return f.severity is Severity.FAIL and not (rule is not None and rule.judges_claim_only)


def supported_speedup(ev: Evidence, findings: list[Finding]) -> SupportedSpeedup:
    """The measured speedup, corrected by every finding that vouches for a correction, or "not
    supported" when a finding invalidates the timing and nothing corrects it.

    A finding that invalidates the timing without a correction of its own (work escaping the
    timer, a timer below kernel time, compile inside the timed region ...) is corrected, where
    its rule allows, by the per-call GPU time of both sides' traces; otherwise the speedup is not
    supported. A FAIL never leaves the raw ratio standing as the supported speedup."""
    from profaudit.audit.rules import BY_CODE

    cmp = ev.comparison
    def traceable(f: Finding) -> bool:
        return bool(getattr(BY_CODE.get(f.rule), "trace_corrects", False))

    blocking = [f for f in findings if f.non_comparable and not traceable(f)]
    if blocking:
        why = "; ".join(f"{f.rule} {f.name}: {f.message}" for f in sorted(blocking, key=lambda f: f.rule))
        return SupportedSpeedup(None, False, "not supported: the sides are not comparable", supported=False, reason=why)
    triggered = [f for f in findings if f.status is Status.FAIL and f.severity >= Severity.WARN]
    fixes = [f for f in triggered if f.correction is not None and math.isfinite(f.correction.estimate) and f.correction.estimate > 0]
    broken = [f for f in triggered if (f.correction is None and _invalidates(f)) or f.non_comparable]
    if broken:
        fixable = all(traceable(f) for f in broken)
        sides = {r for f in broken for r in (("baseline", "candidate") if f.side in (None, "both") else (f.side,))}
        tr = trace_speedup(ev, sides) if fixable else None
        if tr is None:
            why = "; ".join(f"{f.rule} {f.name}: {f.message}" for f in sorted(broken, key=lambda f: f.rule))
            if fixable:
                why += " (no trace of both sides gives the per-call GPU time to correct it)"
            return SupportedSpeedup(None, True, "not supported: the timing is invalid", supported=False, reason=why)
        iv, note = tr
        by = [f"{f.rule}: {note}" for f in sorted(broken, key=lambda f: f.rule)]
        basis = f"{iv.statistic} per-call GPU time from the traces"
        fb, fc = cmp.clock_mhz.get("baseline"), cmp.clock_mhz.get("candidate")
        cycles = cmp.available and cmp.space == "cycles" and fb and fc
        if cycles:
            # the traces time the kernels in seconds; where both clocks are known the audit
            # compares in cycles (time x SM clock), so the traced ratio is moved there too
            k = fb / fc
            iv = Interval(iv.estimate * k, iv.low * k, iv.high * k, iv.confidence, iv.statistic, "cycles", iv.method + ", x baseline/candidate SM clock", iv.n_baseline, iv.n_candidate, iv.resamples)
            basis += f" in cycle space ({fb:.0f} / {fc:.0f} MHz)"
        for f in sorted(fixes, key=lambda f: f.rule):
            by.append(f"{f.rule}: {_correction_note(f)} (applied through the traced per-call median{' in cycle space' if cycles else ''})")
        return SupportedSpeedup(iv, True, basis, Corrections(by))
    if not cmp.available or cmp.primary_interval is None:
        return SupportedSpeedup(None, True, cmp.reason or "no recomputable speedup", supported=False, reason=cmp.reason or "no recomputable speedup")
    base = cmp.primary_interval
    basis = f"{base.statistic} of steady-state samples in {_SPACE[cmp.space]} space" if cmp.mode == "samples" else f"reported {base.statistic} values"
    if not fixes:
        return SupportedSpeedup(base, True, basis)
    # The most conservative correction stands; every finding whose correction it equals or
    # already includes (a lower estimate covers a smaller inflation) is named.
    chosen = min(fixes, key=lambda f: f.correction.estimate).correction
    by = [f"{f.rule}: {_correction_note(f)}" for f in sorted(fixes, key=lambda f: f.rule)]
    basis = f"{chosen.statistic} in {_SPACE.get(chosen.space, chosen.space)} space, corrected by {', '.join(Corrections(by).rules)}"
    return SupportedSpeedup(chosen, True, basis, Corrections(by))


def trace_speedup(ev: Evidence, flagged: set[str] | None = None) -> tuple[Interval, str] | None:
    """Baseline / candidate of the median per-call GPU time, or None. A side whose timing a
    finding invalidated (`flagged`) needs an attached trace; a side whose timing stands may use
    its own steady-state samples when it has no trace."""
    from profaudit.audit import stats as st
    from profaudit.audit.speedup import intervals
    from profaudit.audit.trace import call_times

    flagged = {"baseline", "candidate"} if flagged is None else flagged
    vals, how = [], []
    for se in ev.sides:
        ct = call_times(se)
        if ct is not None and ct.median > 0:
            vals.append(ct.values)
            how.append("trace")
        elif se.role not in flagged and se.has_samples and se.n:
            vals.append(se.steady)
            how.append("samples")
        else:
            return None
    note = "per-call GPU time from the traces: union of kernel intervals over streams, median over calls (one-time costs excluded)"
    if "samples" in how:
        which = "baseline" if how[0] == "samples" else "candidate"
        note += f"; the {which}'s own steady-state samples (its timing stands, and it has no trace)"
    tb, tc = vals
    if tb.size >= 3 and tc.size >= 3:
        sets = (st.SampleSet(tb), st.SampleSet(tc))
        ivs, _, _ = intervals(sets, [st.MEDIAN], st.DEFAULT_RESAMPLES, np.random.SeedSequence(st.DEFAULT_SEED).spawn(2), ev.confidence, "time")
        iv = ivs["median"]
        iv = Interval(iv.estimate, iv.low, iv.high, iv.confidence, "median", "time", "bootstrap of per-call GPU times from the traces", int(tb.size), int(tc.size), iv.resamples)
    else:
        est = float(np.median(tb)) / float(np.median(tc))
        iv = Interval(est, math.nan, math.nan, ev.confidence, "median" if min(tb.size, tc.size) > 1 else "mean", "time", "per-call GPU time from the traces (no interval)", int(tb.size), int(tc.size), 0)
    return iv, note


def audit_evidence(ev: Evidence, rules: list[Rule]) -> AuditReport:
    t0 = time.perf_counter()
    findings = run_rules(ev, rules)
    verdict, reasons = decide(findings)
    sup = supported_speedup(ev, findings)
    if not ev.comparison.available and VERDICTS.index(verdict) < VERDICTS.index("INCONCLUSIVE"):
        # Nothing failed, but no speedup can be recomputed at all: no evidence is not a PASS.
        verdict, reasons = "INCONCLUSIVE", [f"no speedup can be recomputed from the evidence: {ev.comparison.reason}"]
    codes = [r.code for r in rules]
    return AuditReport(verdict, ev.claim, ev, findings, sup, codes, reasons, time.perf_counter() - t0, coverage(findings, codes))
