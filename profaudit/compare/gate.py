"""Regression gating for CI: does a comparison (or a `bench compare` run) fail the job?

    from profaudit.compare.gate import gate_comparison
    g = gate_comparison(cmp, fail_on="regression", max_slowdown="5%")
    g.status, g.exit_code, g.failures

Only significant differences count: a case's significance is the comparison's own
(`profaudit.compare.significance`: the interval clears the noise threshold and the test rejects),
never the point estimate alone. Then

    --fail-on regression       a case, or the geometric mean over matched cases, is significantly
                               slower and its slowdown (candidate time / baseline time - 1)
                               exceeds --max-slowdown
    --fail-on any-significant  a case, or the geometric mean, is significantly faster or slower by
                               more than --max-slowdown either way (an unexpected speedup often
                               means the benchmark stopped doing its work)
    --fail-on none             report only; the exit code is always 0

The geometric mean's interval combines the cases' 95 % intervals in log space (independent cases
assumed, each interval read as +-1.96 standard errors); with a case that has no interval the
geometric mean's significance is unknown and it cannot fail the job.

A pair the fairness audit finds not comparable, or with no matched case, is neither a pass nor a
regression: it gets its own exit code, so CI can tell "slower" from "measured differently".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from profaudit.errors import UsageError
from profaudit.fmt import fmt_x, plural

FAIL_ON = ("regression", "any-significant", "none")

# Exit codes of `profaudit compare` and `profaudit bench compare` under --fail-on (2 and 3 are the
# CLI's own: unusable input, internal error).
EXIT_PASS = 0
EXIT_FAILED = 1
EXIT_NOT_COMPARABLE = 4

_PCT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(%|x)?\s*$", re.I)

_Z95 = 1.959963984540054


def parse_slowdown(text: Any) -> float:
    """'5%' or '5' -> 0.05; '1.05x' -> 0.05 (a ratio); a number from Python is a fraction."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        m = _PCT.match(str(text))
        if not m:
            raise UsageError(f"--max-slowdown {text!r}: give a percentage (5%) or a ratio (1.05x)")
        n, unit = float(m.group(1)), (m.group(2) or "%").lower()
        if unit == "x":
            if n < 1:
                raise UsageError(f"--max-slowdown {text!r}: a ratio is at least 1x (1.05x allows 5 % slower)")
            value = n - 1
        else:
            value = n / 100
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"--max-slowdown {text!r}: give a non-negative threshold")
    return value


def check_fail_on(fail_on: str) -> str:
    if fail_on not in FAIL_ON:
        raise UsageError(f"--fail-on {fail_on!r}: choose one of {', '.join(FAIL_ON)}")
    return fail_on


@dataclass
class CaseGate:
    """One gated item: a benchmark case, a matched kernel, or the geomean over matched cases.

    `speedup` is baseline time / candidate time (> 1: candidate faster); `change_pct` is the
    candidate's time change in percent (positive: slower)."""

    name: str
    speedup: float | None
    ci_low: float | None
    ci_high: float | None
    significance: str
    failed: bool = False
    reason: str = ""

    @property
    def change_pct(self) -> float | None:
        return (1 / self.speedup - 1) * 100 if self.speedup else None

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "speedup": self.speedup,
            "speedup_ci_low": self.ci_low,
            "speedup_ci_high": self.ci_high,
            "change_pct": self.change_pct,
            "significance": self.significance,
            "failed": self.failed,
            "reason": self.reason,
        }


@dataclass
class GateResult:
    fail_on: str
    max_slowdown: float
    status: str  # pass, fail, not-comparable
    exit_code: int
    cases: list[CaseGate]
    aggregate: CaseGate | None
    reasons: list[str] = field(default_factory=list)
    title: str = "profaudit compare"

    @property
    def failures(self) -> list[CaseGate]:
        items = list(self.cases) + ([self.aggregate] if self.aggregate else [])
        return [c for c in items if c.failed]

    def summary_line(self) -> str:
        if self.status == "not-comparable":
            return "not comparable: " + "; ".join(self.reasons)
        gated = f"--fail-on {self.fail_on}, --max-slowdown {self.max_slowdown * 100:g}%"
        if self.status == "fail":
            names = ", ".join(c.name for c in self.failures[:5]) + (f" and {len(self.failures) - 5} more" if len(self.failures) > 5 else "")
            return f"FAIL ({gated}): {names}"
        sig = sum(c.significance in ("faster", "slower") for c in self.cases)
        return f"pass ({gated}): {plural(len(self.cases), 'case')} gated, {plural(sig, 'significant difference')}, none beyond the threshold"

    def as_dict(self) -> dict:
        return {
            "fail_on": self.fail_on,
            "max_slowdown_pct": self.max_slowdown * 100,
            "status": self.status,
            "exit_code": self.exit_code,
            "summary": self.summary_line(),
            "reasons": self.reasons,
            "aggregate": self.aggregate.as_dict() if self.aggregate else None,
            "cases": [c.as_dict() for c in self.cases],
        }


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _judge(item: CaseGate, fail_on: str, t: float) -> None:
    """Mark `item` failed (with its reason) when it is a gated significant difference."""
    if fail_on == "none" or not _finite(item.speedup) or item.speedup <= 0:
        return
    slowdown = 1 / item.speedup - 1
    if item.significance == "slower" and slowdown > t:
        item.failed = True
        item.reason = f"significantly slower: {slowdown * 100:+.1f}% time (threshold {t * 100:g}%)"
    elif fail_on == "any-significant" and item.significance == "faster" and item.speedup - 1 > t:
        item.failed = True
        item.reason = f"significantly faster: {fmt_x(item.speedup)} (threshold {t * 100:g}%): check the benchmark still does its work"


def geomean_item(cases: Iterable[CaseGate], label: str = "geomean over matched cases") -> CaseGate | None:
    """The geometric mean of the cases' speedups with a combined interval (module docstring)."""
    from profaudit.compare.significance import _verdict

    cs = [c for c in cases if _finite(c.speedup) and c.speedup > 0]
    if not cs:
        return None
    logs = [math.log(c.speedup) for c in cs]
    est = math.exp(sum(logs) / len(logs))
    if not all(_finite(c.ci_low) and _finite(c.ci_high) and c.ci_low > 0 and c.ci_high >= c.ci_low for c in cs):
        return CaseGate(label, est, None, None, "unknown", reason="a case has no interval: geomean significance unknown")
    se = math.sqrt(sum(((math.log(c.ci_high) - math.log(c.ci_low)) / (2 * _Z95)) ** 2 for c in cs)) / len(cs)
    lo, hi = math.exp(math.log(est) - _Z95 * se), math.exp(math.log(est) + _Z95 * se)
    return CaseGate(label, est, lo, hi, _verdict(lo, hi, p=None))


def gate_cases(
    cases: list[CaseGate], *, fail_on: str = "regression", max_slowdown: Any = 0.0,
    not_comparable: list[str] | None = None, title: str = "profaudit compare", aggregate_label: str = "geomean over matched cases",
) -> GateResult:
    """Gate prepared cases. `not_comparable`: reasons the pair cannot be compared (empty: it can)."""
    check_fail_on(fail_on)
    t = parse_slowdown(max_slowdown)
    agg = geomean_item(cases, aggregate_label)
    for item in (*cases, *([agg] if agg else [])):
        _judge(item, fail_on, t)
    why = list(not_comparable or [])
    if not cases and not why:
        why.append("no case on both sides")
    if why:
        status = "not-comparable"
        code = EXIT_PASS if fail_on == "none" else EXIT_NOT_COMPARABLE
    elif any(c.failed for c in (*cases, *([agg] if agg else []))):
        status, code = "fail", EXIT_FAILED
    else:
        status, code = "pass", EXIT_PASS
    return GateResult(fail_on, t, status, code, cases, agg, why, title)


def comparison_cases(cmp) -> list[CaseGate]:
    """One item per matched case (timing logs) or matched kernel group (profiles)."""
    m = cmp.matched
    if m.height == 0:
        return []
    est = "speedup" if cmp.kind == "samples" else "median_speedup"
    out = []
    for r in m.iter_rows(named=True):
        out.append(CaseGate(
            r["label"], r.get(est), r.get("speedup_ci_low"), r.get("speedup_ci_high"),
            r.get("significance") or "unknown",
        ))
    return out


def gate_comparison(cmp, *, fail_on: str = "regression", max_slowdown: Any = 0.0) -> GateResult:
    """Gate a `Comparison` (see the module docstring)."""
    from profaudit.compare.fairness import blocking_messages

    why = []
    if cmp.comparable == "no":
        why.append("; ".join(blocking_messages(cmp.findings)[:3]) or "the fairness audit found the two sides unfair")
    what = "kernels" if cmp.kind == "kernels" else "cases"
    return gate_cases(
        comparison_cases(cmp), fail_on=fail_on, max_slowdown=max_slowdown, not_comparable=why,
        title=f"profaudit compare {cmp.baseline.label} vs {cmp.candidate.label}",
        aggregate_label=f"geomean over matched {what}",
    )


def gate_bench_outcomes(outcomes: list, *, fail_on: str = "regression", max_slowdown: Any = 0.0, title: str = "profaudit bench compare") -> GateResult:
    """Gate `profaudit.bench.compare_run` outcomes: each case's supported speedup interval (the
    audit's) decides its significance; a case the audit finds not comparable makes the run not
    comparable, and a variant that failed in the harness fails the gate."""
    from profaudit.compare.significance import _verdict

    cases, why = [], []
    for o in outcomes:
        sup = o.supported or {}
        est, lo, hi = sup.get("estimate"), sup.get("low"), sup.get("high")
        if o.claim_path is None:
            item = CaseGate(o.case_id, None, None, None, "unknown", failed=fail_on != "none", reason="; ".join(o.reasons) or "the benchmark run failed")
            cases.append(item)
            continue
        if sup.get("comparable") is False:
            why.append(f"{o.case_id}: " + ("; ".join(o.reasons[:2]) or "the audit found the sides not comparable"))
        sig = _verdict(lo, hi, p=None) if _finite(lo) and _finite(hi) else "unknown"
        cases.append(CaseGate(o.case_id, est if _finite(est) else None, lo if _finite(lo) else None, hi if _finite(hi) else None, sig))
    res = gate_cases(cases, fail_on=fail_on, max_slowdown=max_slowdown, not_comparable=why, title=title, aggregate_label="geomean over cases")
    return res
