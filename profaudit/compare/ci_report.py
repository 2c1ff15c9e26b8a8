"""Report formats for CI: JUnit XML (one test case per benchmark case), SARIF 2.1.0 (audit and
fairness findings) and a short Markdown summary that renders in a pull request, appended to
`$GITHUB_STEP_SUMMARY` when the job sets it.

All three are built from a `GateResult` (`profaudit.compare.gate`) and, where there is one, the
`Comparison` or audit findings behind it, so CI sees the same decisions the exit code made.
"""

from __future__ import annotations

import inspect
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Iterable

from profaudit.compare.gate import CaseGate, GateResult
from profaudit.fmt import fmt_speedup, md_cell, plural

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


def _case_text(c: CaseGate) -> str:
    return f"speedup {fmt_speedup(c.speedup, c.ci_low, c.ci_high)}, {c.significance}"


# --- JUnit XML ------------------------------------------------------------------------------------


def junit_xml(gate: GateResult, *, suite: str | None = None) -> str:
    """One <testcase> per gated case and one for the geomean; a failed gate item is a <failure>,
    a case without significance a passed case with its reason in <system-out>; a pair that is not
    comparable is one <error> test case (CI shows it apart from regressions)."""
    items = list(gate.cases) + ([gate.aggregate] if gate.aggregate else [])
    name = suite or gate.title
    ts = ET.Element("testsuite", name=name, tests="0", failures="0", errors="0", skipped="0")
    failures = errors = 0
    if gate.status == "not-comparable":
        tc = ET.SubElement(ts, "testcase", classname="profaudit.comparability", name="comparable")
        err = ET.SubElement(tc, "error", message="not comparable", type="NotComparable")
        err.text = "\n".join(gate.reasons)
        errors += 1
    for c in items:
        tc = ET.SubElement(ts, "testcase", classname="profaudit.case" if c in gate.cases else "profaudit.aggregate", name=c.name)
        out = ET.SubElement(tc, "system-out")
        out.text = _case_text(c)
        if c.failed:
            f = ET.SubElement(tc, "failure", message=c.reason or "regression", type=f"fail-on-{gate.fail_on}")
            f.text = _case_text(c)
            failures += 1
    ts.set("tests", str(len(items) + (1 if gate.status == "not-comparable" else 0)))
    ts.set("failures", str(failures))
    ts.set("errors", str(errors))
    props = ET.Element("properties")
    for k, v in (("fail_on", gate.fail_on), ("max_slowdown_pct", f"{gate.max_slowdown * 100:g}"), ("status", gate.status)):
        ET.SubElement(props, "property", name=k, value=v)
    ts.insert(0, props)
    suites = ET.Element("testsuites", name="profaudit", tests=ts.get("tests"), failures=str(failures), errors=str(errors))
    suites.append(ts)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


# --- SARIF ----------------------------------------------------------------------------------------

_LEVEL = {"fail": "error", "inconclusive": "error", "warn": "warning", "info": "note"}


def sarif(findings: Iterable, artifacts: Iterable[str], *, tool_version: str | None = None) -> str:
    """SARIF 2.1.0: one result per finding that found a problem (status fail) or could not check a
    decisive fact (status unknown, severity warn or above); every result points at the input
    files (`artifacts`, paths relative to the working directory where they lie under it)."""
    arts = list(artifacts)
    return sarif_located(((f, arts) for f in findings), tool_version=tool_version)


def sarif_located(pairs: Iterable[tuple[Any, Iterable[str]]], *, tool_version: str | None = None) -> str:
    """`sarif` for findings that each point at their own files: (finding, artifacts) pairs."""
    from profaudit import __version__
    from profaudit.audit.findings import Severity, Status
    from profaudit.audit.rules import RULES

    docs = {r.code: r for r in RULES}
    results, used = [], {}
    for f, artifacts in pairs:
        uris = [_uri(a) for a in artifacts if a]
        if not (f.status is Status.FAIL or (f.status is Status.UNKNOWN and f.severity >= Severity.WARN)):
            continue
        used.setdefault(f.rule, f)
        level = _LEVEL.get(f.severity.label, "warning") if f.status is Status.FAIL else "note"
        res = {
            "ruleId": f.rule,
            "level": level,
            "kind": "fail" if f.status is Status.FAIL else "review",
            "message": {"text": f.message},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": u}}} for u in uris] or [],
            "properties": {"severity": f.severity.label, "status": f.status.value, "pitfalls": list(f.pitfalls), **({"side": f.side} if f.side else {})},
        }
        results.append(res)
    rules = []
    for code, f in sorted(used.items()):
        r = docs.get(code)
        entry = {"id": code, "name": f.name, "shortDescription": {"text": r.summary() if r else f.name}}
        if r is not None:
            entry["fullDescription"] = {"text": inspect.cleandoc(r.__doc__ or r.summary())}
        rules.append(entry)
    doc = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "profaudit", "version": tool_version or __version__, "rules": rules}},
            "results": results,
        }],
    }
    return json.dumps(doc, indent=1) + "\n"


def _uri(path: str) -> str:
    p = Path(path)
    try:
        return p.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return p.as_posix()


# --- Markdown summary -----------------------------------------------------------------------------


def markdown_summary(gate: GateResult, cmp=None, *, top: int = 15) -> str:
    """A short pull-request summary: the gate's decision, the comparison's verdict, the gated
    cases (failures first, then the largest changes) and the one-sided case counts."""
    from profaudit.compare.render import fmt_pct

    icon = {"pass": "✅", "fail": "❌", "not-comparable": "⚠️"}[gate.status]
    lines = [f"### {icon} {md_cell(gate.title)}", "", f"**{md_cell(gate.summary_line())}**", ""]
    if cmp is not None:
        lines += [f"- comparable: {cmp.comparable}", f"- verdict: {md_cell(cmp.verdict)}"]
        t = cmp.totals
        for key, side in (("removed", "baseline only"), ("added", "candidate only")):
            u = t.get(key) or {}
            n = u.get("cases", u.get("kernels"))
            if n:
                lines.append(f"- {key} ({side}): {plural(n, 'case') + ', not in the totals' if 'cases' in u else plural(n, 'kernel')}")
        lines.append("")
    items = sorted(gate.cases, key=lambda c: (not c.failed, -abs(c.change_pct or 0.0), c.name))
    if gate.aggregate:
        items.insert(0, gate.aggregate)
    if items:
        lines += ["| | case | speedup [95% CI] | time change | significance |", "|---|---|---|---|---|"]
        for c in items[: top + 1]:
            mark = "❌" if c.failed else ""
            lines.append(f"| {mark} | {md_cell(c.name)} | {fmt_speedup(c.speedup, c.ci_low, c.ci_high)} | {fmt_pct(c.change_pct)} | {md_cell(c.significance)} |")
        if len(items) > top + 1:
            lines.append(f"| | {len(items) - top - 1} more | | | |")
        lines.append("")
    if gate.failures:
        lines += ["Failed:", ""] + [f"- {md_cell(c.name)}: {md_cell(c.reason)}" for c in gate.failures[:20]] + [""]
    lines.append("<sub>speedup = baseline time / candidate time; only significant differences are gated (profaudit)</sub>")
    return "\n".join(lines) + "\n"


def append_step_summary(text: str) -> Path | None:
    """Append `text` to `$GITHUB_STEP_SUMMARY` when the job sets it; returns the file or None."""
    target = os.environ.get(STEP_SUMMARY_ENV)
    if not target:
        return None
    from profaudit.errors import InputError

    try:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(text if text.endswith("\n") else text + "\n")
    except OSError as exc:
        raise InputError(target, f"cannot append the step summary ({STEP_SUMMARY_ENV}): {exc.strerror or exc}") from None
    return Path(target)


def write_reports(gate: GateResult, *, junit: Path | None = None, sarif_path: Path | None = None, summary: Path | None = None,
                  findings: Iterable = (), artifacts: Iterable[str] = (), located: Iterable | None = None, cmp=None) -> str:
    """Write the requested reports atomically, append the Markdown summary to the step summary
    when it is set, and return the summary text. SARIF takes `findings` located at `artifacts`,
    or `located` (finding, artifacts) pairs."""
    from profaudit.dataset import atomic_write_text

    md = markdown_summary(gate, cmp)
    if junit is not None:
        atomic_write_text(junit, junit_xml(gate))
    if sarif_path is not None:
        atomic_write_text(sarif_path, sarif_located(located) if located is not None else sarif(findings, artifacts))
    if summary is not None:
        atomic_write_text(summary, md)
    append_step_summary(md)
    return md


def audit_reports(report, *, sarif_path: Path | None = None, summary: Path | None = None, artifacts: Iterable[str] = ()) -> None:
    """`profaudit audit --sarif/--summary`: the findings as SARIF; the Markdown report written to
    `summary` and appended to the step summary."""
    from profaudit.audit.render import render
    from profaudit.dataset import atomic_write_text

    if sarif_path is not None:
        atomic_write_text(sarif_path, sarif(report.findings, artifacts))
    if summary is not None:
        md = render(report, "markdown")
        atomic_write_text(summary, md)
        append_step_summary(md)
