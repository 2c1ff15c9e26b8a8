"""`compare(baseline, candidate)`: what changed between two profiles, and is the change real.

The order of work is the order of the report: first whether the two sides can be compared at all
(audit rules over the pair), then matching, then the differences ranked by how much of the total
difference they explain. Kernel profiles (ncu, nsys, Kineto, XLA, Neuron) compare launch by
launch; timing logs compare benchmark case by benchmark case (`profaudit.compare.timing`).

Every side may hold several profiles (a folder of repeated runs): times are then per profile
(sum over profiles / profile count) and significance uses run-level totals, which are independent,
instead of launch-level samples, which are not.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Sequence

import polars as pl

from profaudit.errors import InputError, UsageError
from profaudit.profile import Profile, ProfileSet

BASELINE, CANDIDATE = "baseline", "candidate"

# Version of the JSON form (`Comparison.to_dict`), as audit reports carry `profaudit_audit_report`.
# 2: totals and speedups over matched cases only; `added`/`removed` sums in the totals.
# 3: `totals.headline` names the time the verdict is about; `runs` (steps and collectives) and
#    `totals.job_step` for two distributed runs.
COMPARISON_VERSION = 3


@dataclass
class Side:
    """One side of a comparison: a label for people and the profiles behind it."""

    role: str
    label: str
    ps: ProfileSet

    @property
    def kernels(self) -> pl.DataFrame:
        return self.ps.kernels

    @property
    def samples(self) -> pl.DataFrame:
        return self.ps.samples

    @property
    def metrics(self) -> pl.DataFrame:
        return self.ps.metrics

    def describe(self) -> dict[str, Any]:
        md = self.ps.metadata
        def uniq(col: str) -> list:
            return sorted({v for v in md[col].to_list() if v is not None}) if col in md.columns else []
        devices = set(uniq("device_name"))
        # a profile whose metadata names no device may still name it per kernel or sample
        for t in (self.kernels, self.samples):
            if t.height:
                devices.update(v for v in t["device_name"].unique().to_list() if v is not None)
        return {
            "label": self.label,
            "profiles": self.ps.ids,
            "sources": uniq("source"),
            "formats": uniq("format"),
            "devices": sorted(devices),
            "paths": uniq("path"),
        }


def resolve_side(x: Any, role: str, device: str | None = None, **load_options: Any) -> Side:
    """A path (file, folder, glob, Parquet dataset), a list of paths, a ProfileSet, a Profile, or a
    kernels DataFrame, as one side. `load_options` go to `profaudit.load` for paths."""
    from profaudit.loader import load

    if isinstance(x, Side):
        return x
    if isinstance(x, ProfileSet):
        return Side(role, _ps_label(x), x)
    if isinstance(x, Profile):
        return Side(role, x.profile_id, ProfileSet([x]))
    if isinstance(x, pl.DataFrame):
        try:
            p = Profile(role, {"source": "frame"}, {"kernels": x})
        except ValueError as exc:
            raise UsageError(f"{role}: {exc}") from None
        return Side(role, role, ProfileSet([p]))
    if isinstance(x, (str, os.PathLike)):
        return Side(role, os.fspath(x), load(x, device=device, **load_options))
    if isinstance(x, (list, tuple)) and x and all(isinstance(p, (str, os.PathLike)) for p in x):
        return Side(role, ", ".join(os.fspath(p) for p in x), load(list(x), device=device, **load_options))
    raise UsageError(f"{role}: expected a path, a list of paths, a ProfileSet or a Profile, got {type(x).__name__}")


def _ps_label(ps: ProfileSet) -> str:
    paths = [p.metadata.get("path") for p in ps]
    names = [p for p in paths if p] or ps.ids
    return ", ".join(names[:3]) + (f" (+{len(names) - 3} more)" if len(names) > 3 else "")


@dataclass
class Comparison:
    """The result of `compare`. Frames are polars; `to_dict()` is the JSON form.

    kind          'kernels' (profiles) or 'samples' (timing logs)
    comparable    'yes', 'with-warnings' or 'no' (from the audit findings, see compare.fairness)
    verdict       one line: which side is faster and whether that can be said
    totals        per side and the difference (GPU time = sum of kernel durations, wall = span)
    matched       one row per matched group (kernel or benchmark case)
    added/removed candidate-only / baseline-only kernels (or cases)
    contributions "where the time went": every matched, added and removed item with its share of
                  the total difference; the shares sum to 100 %
    pairs         launch-level alignment of matched groups
    metrics_moved ncu metrics that changed most, per matched group (empty without counters)
    roofline      before/after roofline position of matched groups (empty without FLOPs/bytes)
    findings      audit findings about the pair, most severe first
    runs          two distributed runs only: {"ranks": {baseline, candidate}, "steps", "collectives"}
                  from `profaudit.ranks.compare_runs` (see compare.distributed); empty otherwise
    """

    kind: str
    baseline: Side
    candidate: Side
    match_mode: str
    comparable: str
    verdict: str
    totals: dict[str, Any]
    matched: pl.DataFrame
    added: pl.DataFrame
    removed: pl.DataFrame
    contributions: pl.DataFrame
    pairs: pl.DataFrame = field(default_factory=pl.DataFrame)
    metrics_moved: pl.DataFrame = field(default_factory=pl.DataFrame)
    roofline: pl.DataFrame = field(default_factory=pl.DataFrame)
    findings: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    methods: dict[str, int] = field(default_factory=dict)
    runs: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (
            f"Comparison({self.kind}: {len(self.matched)} matched, {len(self.added)} added, {len(self.removed)} removed; "
            f"comparable={self.comparable}; {self.verdict})"
        )

    def _repr_html_(self) -> str:
        from profaudit.notebook import comparison_html

        return comparison_html(self)

    def to_dict(self, *, include_pairs: bool = False) -> dict[str, Any]:
        """JSON-safe (NaN and infinities become null, as in audit reports)."""
        from profaudit.audit.findings import _jsonable
        from profaudit.compare.fairness import finding_to_dict

        out = {
            "profaudit_comparison": COMPARISON_VERSION,
            "kind": self.kind,
            "baseline": self.baseline.describe(),
            "candidate": self.candidate.describe(),
            "match_mode": self.match_mode,
            "comparable": self.comparable,
            "verdict": self.verdict,
            "findings": [finding_to_dict(f) for f in self.findings],
            "totals": self.totals,
            "matched": _rows(self.matched),
            "added": _rows(self.added),
            "removed": _rows(self.removed),
            "contributions": _rows(self.contributions),
            "metrics_moved": _rows(self.metrics_moved),
            "roofline": _rows(self.roofline),
            "methods": self.methods,
            "notes": self.notes,
        }
        if self.runs:
            out["runs"] = {"ranks": self.runs["ranks"], "steps": _rows(self.runs["steps"]), "collectives": _rows(self.runs["collectives"])}
        if include_pairs:
            out["pairs"] = _rows(self.pairs)
        return _jsonable(out)

    def render(self, fmt: str = "table", *, top: int = 20) -> str:
        from profaudit.compare import render

        return render.render(self, fmt, top=top)


def _rows(df: pl.DataFrame) -> list[dict]:
    return df.to_dicts() if df is not None and df.width else []


# --- entry point --------------------------------------------------------------------------------


def compare(
    baseline: Any,
    candidate: Any,
    *,
    match: str = "auto",
    device: str | None = None,
    intended: Sequence[str] = (),
    max_tests: int | None = None,
    step_pattern: str | None = None,
    **load_options: Any,
) -> Comparison:
    """Compare two profiles (or timing logs): matched kernels, added/removed ones, where the time
    went, ncu metrics and roofline positions that moved, and the audit findings about the pair.

    `baseline`/`candidate`: a path (file, folder, glob, ingested Parquet dataset), a list of paths,
    a ProfileSet or a Profile. `match`: 'auto' (every level, conservative fuzzy), 'exact' (same
    name or mangled name only), 'name' (name spellings and generated-name families, no heuristics)
    or 'fuzzy' (auto plus looser similarity). `device`: device name for roofline specs where the
    profile does not say. `intended`: differences the comparison is about (e.g. `("device",)` to
    compare two GPUs, `("dtype",)` for a precision change): the audit reports them as warnings
    instead of making the pair not comparable. `max_tests`: how many matched kernel groups (the
    largest time differences first) get a significance test (default 500; each costs about a
    millisecond). `step_pattern`: for two distributed runs, a regex naming the step ranges (first
    group: the step number; default ProfilerStep#N and XLA steps). Other keywords (`time_column=`, `time_unit=`,
    `nsys=`, ...) go to `profaudit.load` for inputs given as paths.
    """
    from profaudit.compare.match import MATCH_MODES

    if match not in MATCH_MODES:
        raise UsageError(f"--match {match!r}: choose one of {', '.join(MATCH_MODES)}")
    b = resolve_side(baseline, BASELINE, device, **load_options)
    c = resolve_side(candidate, CANDIDATE, device, **load_options)
    kind = _kind(b, c)
    if kind == "kernels":
        from profaudit.compare.distributed import attach_runs
        from profaudit.compare.kernels import compare_kernels

        cmp = compare_kernels(b, c, match=match, device=device, intended=tuple(intended), max_tests=max_tests)
        attach_runs(cmp, step_pattern=step_pattern)
        return cmp
    from profaudit.compare.timing import compare_samples

    return compare_samples(b, c, match=match, intended=tuple(intended))


def _has_kernels(s: Side) -> bool:
    k = s.kernels
    return k.height > 0 and k["duration_ns"].is_not_null().any()


def _has_samples(s: Side) -> bool:
    return s.samples.height > 0 and s.samples["duration_ns"].is_not_null().any()


def _kind(b: Side, c: Side) -> str:
    kb, kc = _has_kernels(b), _has_kernels(c)
    sb, sc = _has_samples(b), _has_samples(c)
    if kb and kc:
        return "kernels"
    if sb and sc:
        return "samples"
    for s, k, smp in ((b, kb, sb), (c, kc, sc)):
        if not k and not smp:
            raise InputError(s.label, "no kernel durations or timing samples to compare")
    what_b = "kernel durations" if kb else "timing samples"
    what_c = "kernel durations" if kc else "timing samples"
    raise UsageError(
        f"{b.label} has only {what_b} and {c.label} only {what_c}: compare profiles with profiles or timing logs with timing logs"
    )
