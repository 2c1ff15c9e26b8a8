"""Many audits or comparisons at once: one verdict table, one exit code (the worst).

The unit of work is one claim file (`profaudit.audit.audit`) or one baseline/candidate pair
(`profaudit.compare.compare`), run as a task of any `concurrent.futures.Executor` (a Dask cluster's
for a leaderboard of thousands of submissions). A claim that cannot be read does not stop the
batch: its row says ERROR with the one-line reason, and the exit code is 2 (unusable input), worse
than any verdict. Rows keep the input order whatever order the tasks finish in.
"""

from __future__ import annotations

import csv
import glob
import math
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, Callable

import polars as pl

from profaudit import schema
from profaudit.errors import InputError, ProfauditError, UsageError

# exit code of each verdict, as `profaudit audit` gives it for one claim; ERROR is bad input
_AUDIT_EXIT = {"PASS": 0, "WARN": 0, "INCONCLUSIVE": 1, "FAIL": 1, "ERROR": 2}
_CLAIM_SUFFIXES = (".yaml", ".yml")


def is_batch(target: str | Path) -> bool:
    """Whether an audit argument names many claims (a folder or a glob) rather than one file."""
    s = str(target)
    try:
        if Path(s).is_file():
            # a claim file whose name has a glob character ('c0[1].yaml') is that file, not a
            # pattern matching no file ("no claim files found": fuzz_surfaces batch #17 seed 4201)
            return False
        return any(ch in s for ch in "*?[") or Path(s).is_dir()
    except (OSError, ValueError):  # a name no file system takes: load_claim says so in one line
        return False


def claim_files(target: str | Path) -> list[Path]:
    """The claim files a folder (searched recursively) or a glob names, sorted."""
    s = str(target)
    if any(ch in s for ch in "*?["):
        found = sorted(Path(m) for m in glob.glob(s, recursive=True) if Path(m).is_file())
    elif Path(s).is_dir():
        found = sorted(p for p in Path(s).rglob("*") if p.is_file() and p.suffix.lower() in _CLAIM_SUFFIXES and not any(part.startswith(".") for part in p.relative_to(s).parts))
    else:
        raise InputError(s, "no such folder")
    if not found:
        raise InputError(s, "no claim files (*.yaml, *.yml) found")
    return found


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return _storable(text.splitlines()[0] if text else type(exc).__name__)


def _storable(text):
    """Text a table can hold: a claim's lone UTF-16 surrogate (JSON "\\ud800", which YAML keeps)
    made polars' UTF-8 encoding fail for the whole batch (fuzz_surfaces batch #34 seed 2026)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8") if isinstance(text, str) else text


def audit_row(path: str, select: str | None = None, ignore: str | None = None) -> dict[str, Any]:
    """Audit one claim file into one verdict-table row (runs on a worker)."""
    from profaudit.audit import audit
    from profaudit.audit.findings import Status

    try:
        r = audit(path, select=select, ignore=ignore)
    except UsageError:
        raise  # a bad --select/--ignore is the same mistake for every claim: stop the batch
    except ProfauditError as exc:
        return {"claim": path, "verdict": "ERROR", "error": _one_line(exc)}
    iv = r.supported.interval if r.supported.supported else None
    fired = sorted((f for f in r.findings if f.status is Status.FAIL), key=lambda f: (-int(f.severity), f.rule))
    return {
        "claim": path,
        "description": _storable(r.claim.description),
        "verdict": r.verdict,
        "claimed_speedup_x": _finite(r.claim.speedup),
        "supported_speedup_x": _finite(iv.estimate) if iv else None,
        "supported_low_x": _finite(iv.low) if iv else None,
        "supported_high_x": _finite(iv.high) if iv else None,
        "confidence": iv.confidence if iv else None,
        "statistic": iv.statistic if iv else None,
        "rules_fired": ",".join(dict.fromkeys(f.rule for f in fired)),
    }


def _finite(v) -> float | None:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _run(fn: Callable, jobs: list[tuple], executor: Executor | None, progress: Callable[[str], None] | None) -> list[dict]:
    if executor is None:
        rows = []
        for args in jobs:
            rows.append(fn(*args))
            if progress:
                progress(str(args[0]))
        return rows
    from concurrent.futures import as_completed

    futures = {executor.submit(fn, *args): i for i, args in enumerate(jobs)}
    rows: list[dict | None] = [None] * len(jobs)
    for fut in as_completed(futures):
        i = futures[fut]
        rows[i] = fut.result()
        if progress:
            progress(str(jobs[i][0]))
    return rows  # type: ignore[return-value]


def audit_many(claims, *, executor: Executor | None = None, select: str | None = None, ignore: str | None = None, progress=None) -> pl.DataFrame:
    """Audit every claim file of a folder, a glob or a list; one row each (schema AUDIT_VERDICTS)."""
    paths = claims if isinstance(claims, (list, tuple)) else claim_files(claims)
    rows = _run(audit_row, [(str(p), select, ignore) for p in paths], executor, progress)
    return schema.conform(schema.AUDIT_VERDICTS, pl.DataFrame(rows, infer_schema_length=None))


def audit_exit_code(table: pl.DataFrame) -> int:
    """The worst row decides: 0 all PASS/WARN, 1 any FAIL/INCONCLUSIVE, 2 any claim unreadable."""
    return max((_AUDIT_EXIT[v] for v in table["verdict"].to_list()), default=0)


def read_pairs(csv_path: str | Path) -> list[dict[str, str]]:
    """Pairs from a CSV with `baseline` and `candidate` columns (and optionally `name`)."""
    p = Path(csv_path)
    try:
        with open(p, newline="") as f:
            reader = csv.DictReader(f)
            cols = [c.strip() for c in (reader.fieldnames or [])]
            missing = [c for c in ("baseline", "candidate") if c not in cols]
            if missing:
                raise InputError(p, f"pairs CSV needs the column(s) {', '.join(missing)} (has: {', '.join(cols) or 'none'})")
            pairs = []
            for n, row in enumerate(reader, start=1):
                if None in row:
                    # DictReader puts the cells past the header's under the key None, as a list
                    raise InputError(p, f"row {n}: {len(cols) + len(row[None])} fields, the header has {len(cols)} (quote a path that holds a comma)")
                row = {(k or "").strip(): (v or "").strip() for k, v in row.items()}
                if not row["baseline"] or not row["candidate"]:
                    raise InputError(p, f"row {n}: empty baseline or candidate")
                pairs.append({"pair": row.get("name") or str(n), "baseline": _beside(p, row["baseline"]), "candidate": _beside(p, row["candidate"])})
    except OSError as exc:
        raise InputError(p, f"cannot read: {exc.strerror or exc}") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise InputError(p, f"not a readable CSV: {exc}") from None
    if not pairs:
        raise InputError(p, "no pairs listed")
    return pairs


def _beside(csv_path: Path, entry: str) -> str:
    """Paths in the CSV are relative to it (as a claim file's are), URLs and absolute paths as given."""
    if "://" in entry or Path(entry).is_absolute():
        return entry
    return str(csv_path.parent / entry)


def compare_row(pair: str, baseline: str, candidate: str, fail_on: str = "none", max_slowdown: Any = 0.0) -> dict[str, Any]:
    """Compare one pair into one verdict-table row (runs on a worker)."""
    from profaudit.audit.findings import Status
    from profaudit.compare import compare
    from profaudit.compare.gate import gate_comparison

    row: dict[str, Any] = {"pair": pair, "baseline": baseline, "candidate": candidate}
    try:
        cmp = compare(baseline, candidate)
    except UsageError:
        raise
    except ProfauditError as exc:
        return {**row, "comparable": "error", "error": _one_line(exc)}
    gate = gate_comparison(cmp, fail_on=fail_on, max_slowdown=max_slowdown)
    agg = gate.aggregate
    fired = [f.rule for f in cmp.findings if getattr(f, "status", None) is Status.FAIL]
    return {
        **row,
        "kind": cmp.kind,
        "comparable": cmp.comparable,
        "verdict": cmp.verdict,
        "speedup_x": _finite(agg.speedup) if agg else None,
        "speedup_low_x": _finite(agg.ci_low) if agg else None,
        "speedup_high_x": _finite(agg.ci_high) if agg else None,
        "gate": gate.status,
        "rules_fired": ",".join(dict.fromkeys(fired)),
        "_exit": gate.exit_code,
    }


def compare_many(pairs_csv, *, executor: Executor | None = None, fail_on: str = "none", max_slowdown: Any = 0.0, progress=None) -> tuple[pl.DataFrame, int]:
    """Compare every pair a CSV lists; (one row per pair (schema COMPARE_VERDICTS), exit code):
    2 when a pair could not be read, else the worst pair's gate exit code under `fail_on` (0 pass,
    1 a gated difference, 4 not comparable: `profaudit.compare.gate`)."""
    from profaudit.compare.gate import check_fail_on, parse_slowdown

    check_fail_on(fail_on)
    parse_slowdown(max_slowdown)
    pairs = read_pairs(pairs_csv)
    # a pair listed again is compared once and its row repeated under each name: 1,000 copies of
    # one row ran past 30 CPU-s (fuzz_surfaces pairs #59 seed 4501); the comparison is a function
    # of the two files alone
    unique: dict[tuple[str, str], str] = {}
    for p in pairs:
        unique.setdefault((p["baseline"], p["candidate"]), p["pair"])
    done = _run(compare_row, [(name, b, c, fail_on, max_slowdown) for (b, c), name in unique.items()], executor, progress)
    by_files = {(r["baseline"], r["candidate"]): r for r in done}
    rows = [{**by_files[(p["baseline"], p["candidate"])], "pair": p["pair"]} for p in pairs]
    if progress:
        for p in pairs[len(unique):]:  # the bar counts every listed pair
            progress(p["pair"])
    # an unreadable pair is exit 2 whatever the others' gates say: the gate's "not comparable" (4)
    # is larger and hid it (fuzz_surfaces pairs #3 seed 5: exit 4 with a missing file's row)
    code = 2 if any(r.get("error") for r in rows) else max((int(r.get("_exit", 0)) for r in rows), default=0)
    table = schema.conform(schema.COMPARE_VERDICTS, pl.DataFrame([{k: v for k, v in r.items() if k != "_exit"} for r in rows], infer_schema_length=None))
    return table, code


def to_markdown(df: pl.DataFrame, title: str) -> str:
    """A verdict table as Markdown, its cells as the CLI's tables print them (profaudit.fmt)."""
    from profaudit.fmt import column_units, fmt_cell, md_cell

    units = column_units(df)
    lines = [f"# {title}", "", "| " + " | ".join(df.columns) + " |", "|" + "|".join("---" for _ in df.columns) + "|"]
    lines += ["| " + " | ".join(md_cell(fmt_cell(v, units.get(c, ""))) for c, v in zip(df.columns, row)) + " |" for row in df.iter_rows()]
    return "\n".join(lines) + "\n"
