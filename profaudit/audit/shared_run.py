"""Both sides timed in one run: facts a single file settles for both sides.

A wide log (triton's perf_report CSV with a column per implementation, a profaudit-timing log of
interleaved variants, one nvbench JSON) holds the baseline and the candidate side by side: one
process measured both, on one machine, with one timer. Whether or not the file names the device
or the clock, the sides cannot differ in them, so device and time-source parity are settled, not
"cannot check" (issue 16). Two separate files that name no device settle nothing.

The file must not be taken at its word where it says otherwise: a file that records more than one
device or host, sides drawn from different runs of it, or columns named after different devices
("A100 (ms)", "H100 (ms)": a table pasted together from two machines) are not one run's facts.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:  # pragma: no cover
    from profaudit.audit.claim import Claim, Side
    from profaudit.audit.evidence import Evidence

# a unit or statistic in a column name ("H100 (ms)", "A100_us") is not part of the device name
_UNIT_SUFFIX = re.compile(r"[\s_\-]*[\(\[]?\s*(ns|us|µs|μs|ms|s|sec|median|mean|min)\s*[\)\]]?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class SharedRun:
    """The sides' timings come from the same file(s), each run holding both sides."""

    files: tuple[str, ...]  # file names as a reviewer sees them
    runs: int  # process-level runs that hold both sides (1 for a plain wide log)
    not_one_device: str | None = None  # why the file does not settle the device (None: it does)
    not_one_clock: str | None = None  # why it does not settle the time source
    column_devices: tuple[str, str] | None = None  # the sides' columns name these different devices

    @property
    def origin(self) -> str:
        return f"both sides from {', '.join(self.files)}"

    @property
    def where(self) -> str:
        run = "one run" if self.runs == 1 else f"each of {self.runs} runs holds both sides"
        return f"{self.origin}: {run}"


def shared_run(claim: "Claim") -> SharedRun | None:
    """The SharedRun of `claim`'s sides, or None when their timings do not share a file and run."""
    b, c = claim.baseline, claim.candidate
    if not b.timing_paths or b.timing_profiles is None or c.timing_profiles is None:
        return None
    if {os.path.realpath(p) for p in b.timing_paths} != {os.path.realpath(p) for p in c.timing_paths}:
        return None
    sb, sc = b.samples, c.samples
    if sb is None or sc is None or sb.height == 0 or sc.height == 0:
        return None
    ids = set(sb["profile_id"].unique().to_list())
    if ids != set(sc["profile_id"].unique().to_list()):
        return None  # a file that yields several profiles, the sides taken from different ones
    runs_b = set(sb["run"].unique().to_list())
    if runs_b != set(sc["run"].unique().to_list()):
        return None  # baseline rows from one run of the log, candidate rows from another
    files = tuple(os.path.basename(p) for p in dict.fromkeys(b.timing_paths))
    runs = max(len(runs_b - {None}), len(ids), 1)
    md = b.timing_profiles.metadata.filter(pl.col("profile_id").is_in(sorted(ids)))
    not_device = _several(md, "device_count", "devices") or _distinct(md, "host", "hosts") or _distinct(md, "device_name", "devices")
    both = pl.concat([sb.select("device_name", "time_source"), sc.select("device_name", "time_source")])
    not_device = not_device or _distinct(both, "device_name", "devices in its samples")
    not_clock = _distinct(both, "time_source", "time sources in its samples")
    named = _column_devices(b, c)
    if named is not None:
        why = f"its columns are named after different devices ({named[0]!r} vs {named[1]!r}): one file, not one machine"
        not_device, not_clock = why, why
    return SharedRun(files, runs, not_device, not_clock, named)


def _distinct(df: pl.DataFrame, col: str, what: str) -> str | None:
    vals = sorted({str(v) for v in df[col].drop_nulls().to_list() if str(v).strip() and str(v).lower() != "unknown"})
    return f"the file records {len(vals)} {what} ({', '.join(vals[:4])})" if len(vals) > 1 else None


def _several(md: pl.DataFrame, col: str, what: str) -> str | None:
    n = md[col].drop_nulls().max()
    return f"the file records {n} {what}" if n is not None and n > 1 else None


def _device_keys(name: str | None) -> frozenset[str]:
    """Device specs a column name refers to ("H100 (ms)" -> the H100 variants), empty for none."""
    if not name:
        return frozenset()
    from profaudit import specs

    try:
        m = specs.resolve_device(_UNIT_SUFFIX.sub("", str(name)).strip())
    except Exception:  # a broken spec file must not stop the audit; the name then names no device
        return frozenset()
    return frozenset([m.spec.key]) if m.spec is not None else frozenset(m.candidates)


def _column_devices(b: "Side", c: "Side") -> tuple[str, str] | None:
    """The sides' single variant (column) names, when both name a device and not the same one."""
    names = []
    for side in (b, c):
        vals = side.samples["variant"].drop_nulls().unique().to_list()
        if len(vals) != 1:
            return None
        names.append(str(vals[0]))
    kb, kc = _device_keys(names[0]), _device_keys(names[1])
    if kb and kc and not (kb & kc):
        return names[0], names[1]
    return None


def settled_text(ev: "Evidence") -> str:
    """"both sides from wide.csv: one run, one device X, one clock Y" (unnamed where the file is
    silent). Called once the rules know the sides' values do not differ."""
    sr = ev.shared_run
    assert sr is not None
    parts = []
    for key, noun in (("device", "device"), ("time_source", "clock")):
        fb, fc = ev.baseline.fact(key), ev.candidate.fact(key)
        if fb is not None and fc is not None:
            parts.append(f"one {noun} {fb.value}")
        elif fb is not None or fc is not None:
            # one side names it: the shared run makes it the other side's too
            f = fb or fc
            parts.append(f"one {noun} {f.value} ({f.source})")
        else:
            parts.append(f"one {noun} (not named in the file)")
    return f"{sr.where}, {', '.join(parts)}"
