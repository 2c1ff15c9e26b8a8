"""Profile labels a person can tell apart, and the pair Compare opens on.

A profile id is a file stem plus a hash (`report-3f2a9c1d`): ten runs named `report.ncu-rep` in
ten folders all read alike. The label is the shortest suffix of the file's path that no other
loaded profile shares (`naive/run0/report.ncu-rep` vs `fused/run0/report.ncu-rep` ->
`naive/…/report.ncu-rep`, `fused/…/report.ncu-rep`): the part that differs, then the file name.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Mapping, Sequence

_BASELINE_WORDS = re.compile(r"(?i)(?:^|[^a-z])(baseline|before|base|ref|reference|naive|old|orig|original|main|eager|unfused|v0|cold)(?:$|[^a-z])")


def shortest_suffixes(paths: Mapping[str, str | None]) -> dict[str, str]:
    """profile_id -> label. Profiles without a path, or sharing one file with others (a file that
    holds several profiles), keep their id."""
    parts = {pid: PurePath(p).parts for pid, p in paths.items() if p}
    by_path: dict[tuple, list[str]] = {}
    for pid, pp in parts.items():
        by_path.setdefault(pp, []).append(pid)
    out = {pid: pid for pid in paths}
    unique = {pid: pp for pid, pp in parts.items() if len(by_path[pp]) == 1}
    for pid, pp in unique.items():
        others = [q for o, q in unique.items() if o != pid]
        k = 1
        while k < len(pp) and any(q[-k:] == pp[-k:] for q in others):
            k += 1
        suffix = pp[-k:]
        if len(suffix) > 2:
            # the component that tells this file apart, then the file name
            suffix = (suffix[0], "…", suffix[-1])
        out[pid] = "/".join(suffix)
    return out


def sensible_pair(profiles: Sequence[dict]) -> tuple[str, str] | None:
    """(baseline, candidate) ids for Compare to open on: two profiles of the same kind (both with
    kernels or both timing logs) and, where possible, the same format and device; the one whose
    label says baseline/before/naive/... is the baseline, else the one loaded first.

    Each dict: profile_id, label, kind ('kernels' / 'samples' / None), format, device."""
    usable = [p for p in profiles if p.get("kind")]
    best, best_score = None, -1
    for i, a in enumerate(usable):
        for b in usable[i + 1:]:
            if a["kind"] != b["kind"]:
                continue
            score = 2 * (a.get("format") == b.get("format")) + (a.get("device") == b.get("device"))
            if score > best_score:
                best, best_score = (a, b), score
    if best is None:
        return None
    a, b = best
    if _BASELINE_WORDS.search(b.get("label") or "") and not _BASELINE_WORDS.search(a.get("label") or ""):
        a, b = b, a
    return a["profile_id"], b["profile_id"]
