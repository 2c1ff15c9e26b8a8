"""From a benchmark run to a speedup claim and its audit.

    outcomes = profaudit.bench.compare_run("out/", baseline="naive", candidate="torch")

For every case where both variants were measured, it writes a claim file (YAML, the format of
`profaudit audit`) that points at the two timing logs, then audits it with the audit package:
`<case>__<candidate>-vs-<baseline>.yaml`, `.audit.json` and `.audit.md` under OUT/claims (or
`out_dir`). Without `claimed`, the claim states the measured ratio of medians (3 significant
digits), so the claim is exactly what the data say and the audit checks how it was measured.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from profaudit.errors import InputError, UsageError


@dataclass
class LogEntry:
    benchmark: str
    variant: str
    params: str  # canonical JSON
    files: list[Path]
    shared: bool = False  # the file holds other benchmarks/variants too: select rows in the claim

    @property
    def case_id(self) -> str:
        from profaudit.bench.spec import case_id

        return case_id(self.benchmark, json.loads(self.params) if self.params else {})


@dataclass
class CompareOutcome:
    case_id: str
    claim_path: Path | None
    audit_json: Path | None
    audit_md: Path | None
    verdict: str
    claimed: float | None
    supported: dict
    reasons: list[str]
    report: Any  # AuditReport

    def as_dict(self) -> dict:
        return {
            "case": self.case_id,
            "claim": str(self.claim_path) if self.claim_path else None,
            "audit_json": str(self.audit_json) if self.audit_json else None,
            "audit_markdown": str(self.audit_md) if self.audit_md else None,
            "verdict": self.verdict,
            "claimed_speedup": self.claimed,
            "supported": self.supported,
            "reasons": self.reasons,
        }


def index_logs(source: str | os.PathLike) -> list[LogEntry]:
    """The (benchmark, variant, params) groups a bench output folder, any folder of timing logs
    or a single timing log holds, with the files behind each."""
    from profaudit.samples import canonical_params

    src = Path(source)
    if not src.exists():
        raise InputError(src, "no such file or folder")
    if src.is_dir() and (src / "manifest.json").is_file():
        from profaudit.bench.session import read_manifest

        doc = read_manifest(src)
        out = []
        for c in doc.get("cases", []):
            for v, ve in c.get("variants", {}).items():
                logs = ve.get("logs") or ([ve["log"]] if ve.get("log") else [])
                if logs:
                    out.append(LogEntry(c["benchmark"], v, canonical_params(c.get("params") or {}), [src / l for l in logs]))
        return out
    files = sorted(p for p in src.rglob("*") if p.is_file() and (p.name.endswith(".jsonl") or p.name.endswith(".jsonl.gz"))) if src.is_dir() else [src]
    if not files:
        raise InputError(src, "holds no timing logs (*.jsonl)")
    from profaudit.loader import load

    groups: dict[tuple[str, str, str], list[Path]] = {}
    shared: set[tuple[str, str, str]] = set()
    for f in files:
        ps = load([str(f)])
        s = ps.samples
        if s.height == 0:
            continue
        keys = s.select("benchmark", "variant", "params").unique(maintain_order=True).rows()
        for k in keys:
            k = tuple("" if x is None else str(x) for x in k)
            groups.setdefault(k, []).append(f)
            if len(keys) > 1:
                shared.add(k)
    return [LogEntry(b, v, p, fs, (b, v, p) in shared) for (b, v, p), fs in groups.items()]


def _side(entry: LogEntry, label: str, claim_dir: Path) -> dict:
    rel = [os.path.relpath(f.resolve(), claim_dir.resolve()) for f in entry.files]
    side: dict[str, Any] = {"label": label, "timings": rel[0] if len(rel) == 1 else rel}
    if entry.shared:
        side["benchmark"] = entry.benchmark
        side["variant"] = entry.variant
        side["params"] = json.loads(entry.params)
    return side


def _sig3(x: float) -> str:
    return f"{x:.3g}" if x < 1000 else f"{x:.0f}"


def compare_run(
    source: str | os.PathLike,
    baseline: str,
    candidate: str,
    *,
    pattern: str | None = None,
    claimed: float | None = None,
    statistic: str = "median",
    out_dir: str | os.PathLike | None = None,
    intended: Sequence[str] = (),
    description: str | None = None,
    stem: str | None = None,
) -> list[CompareOutcome]:
    """Write a claim file and its audit for every case holding both variants.

    `stem` names the files (STEM.yaml, STEM.audit.json, STEM.audit.md) when one case matches."""
    import yaml

    from profaudit.audit import audit, load_claim
    from profaudit.audit.claim import META_KEYS
    from profaudit.audit.render import render
    from profaudit.bench.spec import matches
    from profaudit.dataset import atomic_write_text

    if baseline == candidate:
        raise UsageError("--baseline and --candidate name the same variant")
    bad = [k for k in intended if k not in META_KEYS]
    if bad:
        raise UsageError(f"--intended {bad[0]!r} is not a claim meta key ({', '.join(sorted(META_KEYS))})")
    src = Path(source)
    entries = index_logs(src)
    by_case: dict[tuple[str, str], dict[str, LogEntry]] = {}
    for e in entries:
        by_case.setdefault((e.benchmark, e.params), {})[e.variant] = e
    pairs = [(k, d[baseline], d[candidate]) for k, d in by_case.items() if baseline in d and candidate in d and matches(d[baseline].case_id, pattern)]
    if not pairs:
        have = sorted({e.variant for e in entries})
        why = _unmeasured(src, (baseline, candidate), pattern)
        raise UsageError(f"{src}: no case has both variants {baseline!r} and {candidate!r}{' matching -k ' + repr(pattern) if pattern else ''} (variants: {', '.join(have) or 'none'}){why}")
    if stem is not None and len(pairs) != 1:
        raise UsageError(f"a file name (stem) was given but {len(pairs)} cases match; narrow them with -k")
    default_dir = (src if src.is_dir() else src.parent) / "claims"
    claim_dir = Path(out_dir) if out_dir is not None else default_dir
    try:
        claim_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(claim_dir, f"cannot write: {exc.strerror or exc}") from None
    outcomes = []
    for (bench, params), be, ce in pairs:
        broken = [why for why in (_harness_failure(be, "baseline"), _harness_failure(ce, "candidate")) if why]
        if broken:
            # a variant that failed its correctness check (or errored mid-run) has no speed to
            # claim: its samples time a wrong or unfinished computation
            outcomes.append(CompareOutcome(be.case_id, None, None, None, "FAIL", None, {}, broken, None))
            continue
        slug = _case_slug(be)
        name = stem or f"{bench}__{slug}__{candidate}-vs-{baseline}"
        claim_path = claim_dir / f"{name}.yaml"
        doc: dict[str, Any] = {
            "claim": None,
            "speedup": None,
            "statistic": statistic,
            "baseline": _side(be, baseline, claim_dir),
            "candidate": _side(ce, candidate, claim_dir),
        }
        if intended:
            doc["intended_differences"] = list(intended)
        if claimed is None:
            # measure first: the ratio the data give, with the same statistic the claim states
            draft = dict(doc, claim=f"{candidate} vs {baseline} on {be.case_id}")
            draft.pop("speedup")
            atomic_write_text(claim_path, yaml.safe_dump(draft, sort_keys=False))
            est = _measured(load_claim(claim_path), statistic)
            if est is None:
                raise UsageError(f"{be.case_id}: cannot recompute a {statistic} speedup from the logs (no steady-state samples)")
            value_text = _sig3(est)
        else:
            value_text = str(claimed)
        value = float(value_text)
        word = "faster" if value >= 1 else "slower"
        ratio = value if value >= 1 else 1 / value
        doc["claim"] = description or f"{candidate} is {_sig3(ratio)}x {word} than {baseline} on {be.case_id} ({statistic} per call)"
        doc["speedup"] = value
        header = f"# written by profaudit bench compare from {os.path.relpath(src.resolve(), claim_dir.resolve())}\n# speedup = {baseline} time / {candidate} time ({statistic}); every other fact comes from the timing logs' headers\n"
        text = header + yaml.safe_dump(doc, sort_keys=False).replace(f"speedup: {value}\n", f"speedup: {value_text}\n")
        atomic_write_text(claim_path, text)
        report = audit(load_claim(claim_path))
        aj = claim_dir / f"{name}.audit.json"
        am = claim_dir / f"{name}.audit.md"
        atomic_write_text(aj, render(report, "json"))
        atomic_write_text(am, render(report, "markdown"))
        outcomes.append(CompareOutcome(be.case_id, claim_path, aj, am, report.verdict, value, report.supported.as_dict(), list(report.reasons), report))
    return outcomes


def dropped_cases(source: str | os.PathLike, baseline: str, candidate: str, pattern: str | None = None) -> list[tuple[str, str]]:
    """The cases `compare_run` writes no claim for although they are in the source, each with
    why: a variant not run in that case, or run without a timing log (it failed before timing,
    or errored). Cases outside `pattern` are the user's choice and not listed."""
    from profaudit.bench.spec import matches

    src = Path(source)
    out: list[tuple[str, str]] = []
    if src.is_dir() and (src / "manifest.json").is_file():
        from profaudit.bench.session import read_manifest

        for c in read_manifest(src).get("cases", []):
            cid = c.get("id", "")
            if not matches(cid, pattern):
                continue
            vs = c.get("variants") or {}
            why = []
            for role, name in (("baseline", baseline), ("candidate", candidate)):
                ve = vs.get(name)
                if ve is None:
                    why.append(f"the {role} {name!r} was not run in this case")
                elif not (ve.get("log") or ve.get("logs")):
                    why.append(f"the {role} {name!r} has no timing log ({ve.get('status')}: {ve.get('error') or 'no detail recorded'})")
            if why:
                out.append((cid, "; ".join(why)))
        return out
    by_case: dict[str, set[str]] = {}
    for e in index_logs(src):
        if matches(e.case_id, pattern):
            by_case.setdefault(e.case_id, set()).add(e.variant)
    for cid, have in by_case.items():
        missing = [n for n in (baseline, candidate) if n not in have]
        if missing:
            out.append((cid, f"no timing log for {' or '.join(repr(m) for m in missing)} (variants here: {', '.join(sorted(have))})"))
    return out


def _unmeasured(src: Path, names: Sequence[str], pattern: str | None) -> str:
    """'; NAME has no timing log: ERROR' for a named variant the run's manifest says failed."""
    if not (src.is_dir() and (src / "manifest.json").is_file()):
        return ""
    from profaudit.bench.session import read_manifest
    from profaudit.bench.spec import matches

    try:
        doc = read_manifest(src)
    except (InputError, UsageError):
        return ""
    for c in doc.get("cases", []):
        if not matches(c.get("id", ""), pattern):
            continue
        for v in names:
            ve = (c.get("variants") or {}).get(v)
            if ve and ve.get("status") != "ok" and not (ve.get("log") or ve.get("logs")):
                return f"; {v!r} has no timing log in {c.get('id')}: {ve.get('status')}: {ve.get('error')}"
    return ""


def _harness_failure(entry: LogEntry, role: str) -> str | None:
    """Why the harness marked this variant's run as failed (its logs' bench.status), or None."""
    import gzip

    from profaudit.timinglog import read_header

    for f in entry.files:
        try:
            opener = gzip.open if f.name.endswith(".gz") else open
            with opener(f, "rb") as fh:
                meta = read_header(fh.readline()).get("meta") or {}
        except (OSError, ValueError, EOFError):
            continue  # the audit reports an unreadable log itself
        bench = meta.get("bench") if isinstance(meta.get("bench"), dict) else {}
        status = bench.get("status")
        if status and status != "ok":
            return f"the {role} {entry.variant!r} {status.replace('_', ' ')} in the benchmark run ({f.name}): {bench.get('error') or 'no detail recorded'}"
    return None


def _measured(claim, statistic: str) -> float | None:
    """Ratio of the statistic over each side's steady-state samples, as the audit computes it
    (its warm-up head detection), without the bootstrap."""
    from profaudit.audit import gather, parse_statistic
    from profaudit.audit import stats as st

    ev = gather(claim)
    stat = parse_statistic(statistic)
    b, c = ev.baseline.steady, ev.candidate.steady
    if stat is None or b.size == 0 or c.size == 0:
        return None
    vb, vc = st.compute(b, stat), st.compute(c, stat)
    if not (math.isfinite(vb) and math.isfinite(vc)) or vc <= 0:
        return None
    return float(vb / vc)


def _case_slug(e: LogEntry) -> str:
    from profaudit.bench.spec import params_slug

    return params_slug(json.loads(e.params) if e.params else {})
