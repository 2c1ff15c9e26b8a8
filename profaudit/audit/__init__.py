"""Fairness audit of speedup claims: does the evidence support "X is N times faster than Y"?

    from profaudit import audit
    report = audit("claims/softmax.yaml")              # the module itself is callable
    report = audit.audit("claims/softmax.yaml", select="PA1,PA4", ignore="PA405")
    report = audit(baseline="eager.csv", candidate="fused.csv", claimed=2.1, statistic="mean")
    report.verdict                  # PASS, WARN, INCONCLUSIVE or FAIL
    report.supported.interval       # the speedup the evidence supports, with its interval
    report.findings                 # one or more Finding per rule: rule, severity, status, evidence
    profaudit.audit_claim(...)      # the same function at the top level

`profaudit.audit` is a package (claim, evidence, stats, rules, verdict, render) whose module
object is also callable: `audit(...)` and `audit.audit(...)` are the same function. Rules live in
`profaudit.audit.rules` (one per file, listed in `RULES`); FAIRNESS.md is their specification.
"""

from __future__ import annotations

from profaudit._callable import make_module_callable

import os
from typing import Any, Iterable, Mapping

from profaudit.audit.claim import META_KEYS, Claim, Side, claim_from_paths, load_claim
from profaudit.audit.evidence import Evidence, Fact, SideEvidence, gather
from profaudit.audit.findings import PITFALLS, Finding, Rule, Severity, Status
from profaudit.audit.rules import RULES, catalogue, select_rules
from profaudit.audit.stats import Interval, Statistic, parse_statistic
from profaudit.audit.verdict import AuditReport, SupportedSpeedup, audit_evidence


def audit(
    claim: Claim | Evidence | str | os.PathLike | None = None,
    *,
    select: str | Iterable[str] | None = None,
    ignore: str | Iterable[str] | None = None,
    baseline: Any = None,
    candidate: Any = None,
    claimed: float | str | None = None,
    statistic: str | None = None,
    device: str | None = None,
    baseline_meta: Mapping[str, Any] | None = None,
    candidate_meta: Mapping[str, Any] | None = None,
) -> AuditReport:
    """Audit a speedup claim and return an `AuditReport`.

    `claim` is a claim file path, a `Claim` or an already gathered `Evidence`; or leave it out and
    give `baseline=` and `candidate=` timing logs (with `claimed=`, `statistic=`, `device=`).
    `select` / `ignore` take rule-code prefixes ("PA1,PA402"). Unreadable inputs raise
    `profaudit.InputError`; unknown rule prefixes raise `profaudit.UsageError`.
    """
    from profaudit.errors import UsageError

    rules = select_rules(select, ignore)
    if claim is None:
        if baseline is None or candidate is None:
            raise UsageError("give a claim file, or both baseline and candidate timing logs")
        claim = claim_from_paths(
            baseline, candidate, claimed=claimed, statistic=statistic, device=device, baseline_meta=baseline_meta, candidate_meta=candidate_meta
        )
    elif baseline is not None or candidate is not None:
        raise UsageError("give either a claim file or baseline and candidate timing logs, not both")
    import time

    t0 = time.perf_counter()
    if isinstance(claim, (str, os.PathLike)):
        claim = load_claim(claim)
    ev = claim if isinstance(claim, Evidence) else gather(claim)
    report = audit_evidence(ev, rules)
    report.elapsed_s = time.perf_counter() - t0
    return report


__all__ = [
    "audit",
    "AuditReport",
    "SupportedSpeedup",
    "Claim",
    "Side",
    "Evidence",
    "SideEvidence",
    "Fact",
    "Finding",
    "Rule",
    "Severity",
    "Status",
    "Interval",
    "Statistic",
    "RULES",
    "PITFALLS",
    "META_KEYS",
    "catalogue",
    "select_rules",
    "load_claim",
    "claim_from_paths",
    "gather",
    "parse_statistic",
]


make_module_callable(__name__, audit)
