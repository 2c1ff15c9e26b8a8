"""Run the rules on the evidence and turn their findings into a verdict.

Conventions (FAIRNESS.md): FAIL when the claim is invalid or inflated, or the sides are not
comparable; INCONCLUSIVE when the evidence cannot decide; WARN when the claim may survive but is
misleading or partly unverifiable; PASS otherwise. The verdict is the most severe finding: a
rule that found a problem counts with its severity, a rule that could not check counts with its
"cannot check" severity (WARN for the facts that decide comparability, INCONCLUSIVE where the
verdict itself depends on the missing evidence, INFO otherwise).
"""

from __future__ import annotations

import math
import time
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


@dataclass
class SupportedSpeedup:
    """The speedup the evidence supports, with its interval, and why it is stated this way."""

    interval: Interval | None
    comparable: bool
    basis: str  # e.g. "median of steady-state samples in cycle space"
    corrected_by: list[str] = field(default_factory=list)  # rule codes whose correction applied

    def as_dict(self) -> dict:
        iv = self.interval
        d = {
            "estimate": _num(iv.estimate) if iv else None,
            "low": _num(iv.low) if iv else None,
            "high": _num(iv.high) if iv else None,
            "confidence": iv.confidence if iv else None,
            "statistic": iv.statistic if iv else None,
            "space": iv.space if iv else None,
            "method": iv.method if iv else None,
            "comparable": self.comparable,
            "basis": self.basis,
            "corrected_by": self.corrected_by,
        }
        return d


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
        """Triggered findings and decisive unknowns, most severe first."""
        out = [f for f in self.findings if (f.status is Status.FAIL) or (f.status is Status.UNKNOWN and f.severity > Severity.INFO)]
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
    worst = Severity.INFO
    for f in findings:
        if f.status is Status.PASS:
            continue
        worst = max(worst, f.severity)
    verdict = _BY_SEVERITY[worst]
    reasons = [f"{f.rule} {f.name}: {f.message}" for f in sorted(findings, key=lambda f: (-int(f.severity), f.rule)) if f.status is not Status.PASS and f.severity == worst and worst > Severity.INFO]
    return verdict, reasons


def supported_speedup(ev: Evidence, findings: list[Finding]) -> SupportedSpeedup:
    cmp = ev.comparison
    comparable = not any(f.non_comparable for f in findings)
    if not cmp.available or cmp.primary_interval is None:
        return SupportedSpeedup(None, comparable, cmp.reason or "no recomputable speedup")
    base = cmp.primary_interval
    basis = f"{base.statistic} of steady-state samples in {_SPACE[cmp.space]} space" if cmp.mode == "samples" else f"reported {base.statistic} values"
    chosen, by = base, []
    for f in findings:
        if f.status is Status.FAIL and f.severity >= Severity.WARN and f.correction is not None and f.correction.finite:
            if f.correction.estimate < chosen.estimate * (1 - 1e-9):
                chosen, by = f.correction, [f.rule]
            elif f.correction is chosen or (f.correction.estimate == chosen.estimate and f.correction.statistic == chosen.statistic):
                by.append(f.rule)
    if chosen is not base:
        basis = f"{chosen.statistic} in {_SPACE.get(chosen.space, chosen.space)} space, corrected by {', '.join(by)}"
    return SupportedSpeedup(chosen, comparable, basis, by if chosen is not base else [])


def audit_evidence(ev: Evidence, rules: list[Rule]) -> AuditReport:
    t0 = time.perf_counter()
    findings = run_rules(ev, rules)
    verdict, reasons = decide(findings)
    sup = supported_speedup(ev, findings)
    return AuditReport(verdict, ev.claim, ev, findings, sup, [r.code for r in rules], reasons, time.perf_counter() - t0)
