"""Chrome-trace JSON (the Trace Event Format that ui.perfetto.dev and chrome://tracing open) from
any ingested profile: `profaudit export-trace PROFILE -o trace.json`.

Layout, per profile (each on its own clock: timestamps are microseconds from the profile's first
event, whose absolute nanoseconds `otherData.profiles[].time_origin_ns` keeps):

- a process per device (`GPU <id> <name>`) with a thread (lane) per stream: kernels and transfers
  as complete ("X") events, counters as counter ("C") events of that device;
- a process per host process with a lane per thread: ranges (NVTX, CUDA API, CPU ops ...) as "X"
  events, nesting as recorded; ranges that name no thread sit on a device lane or a "ranges" lane;
- kernels with no timestamps (Nsight Compute launches) are laid end to end in launch order on a
  lane named so, with `args.synthetic_time` true: their durations are real, their positions not;
- overlays: a `Comparison` marks each significantly faster/slower kernel group of the candidate
  (its launches carry `args.profaudit_compare`, its first launch an instant event), and findings
  whose evidence holds `start_ns`/`end_ns` become events on a "profaudit findings" lane (the
  others are listed in `otherData.findings`).

`otherData.counts` says how many rows of each table were written and why any were left out, so a
reader can check the export against the source.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Iterable, Iterator

import polars as pl

from profaudit.fmt import MISSING, fmt_interval, fmt_x
from profaudit.profile import Profile, ProfileSet
from profaudit.timeline import _duration_expr as _dur

EXPORT_VERSION = 1
# lanes that are not a stream or a thread get thread ids no CUDA stream or OS thread uses (and that
# stay positive 32-bit integers, which every trace viewer accepts)
UNTIMED_LANE = 2**31 - 2
DEVICE_RANGES_LANE = 2**31 - 3


class _Lanes:
    """Integer pid/tid for named processes and threads, with their metadata events."""

    def __init__(self) -> None:
        self.pids: dict[tuple, int] = {}
        self.tids: dict[tuple, int] = {}
        self.meta: list[dict] = []

    def pid(self, key: tuple, name: str) -> int:
        if key not in self.pids:
            pid = len(self.pids) + 1
            self.pids[key] = pid
            self.meta.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}})
            self.meta.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
        return self.pids[key]

    def tid(self, pid: int, tid: int, name: str) -> int:
        if (pid, tid) not in self.tids:
            self.tids[(pid, tid)] = tid
            self.meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
        return tid


def _us(ns_expr: pl.Expr) -> pl.Expr:
    # microseconds with nanosecond resolution (3 decimals)
    return (ns_expr.cast(pl.Float64) / 1e3).round(3)


def _origin(p: Profile) -> int | None:
    firsts = []
    for name, col in (("kernels", "start_ns"), ("ranges", "start_ns"), ("transfers", "start_ns"), ("counters", "timestamp_ns")):
        t = p.tables[name]
        if t.height and t[col].null_count() < t.height:
            firsts.append(int(t[col].min()))
    return min(firsts) if firsts else None


def _device_pid(lanes: _Lanes, pi: int, prefix: str, dev: Any, dev_name: Any) -> int:
    label = f"{prefix}GPU {dev if dev is not None else '?'}" + (f" {dev_name}" if dev_name else "")
    return lanes.pid(("gpu", pi, dev), label)


def _stream_lane(lanes: _Lanes, pid: int, stream: Any) -> int:
    return lanes.tid(pid, stream if stream is not None else 0, f"stream {stream}" if stream is not None else "stream ?")


def _args(r: dict, keys: Iterable[str]) -> dict:
    return {k: r[k] for k in keys if r.get(k) is not None}


_KERNEL_ARGS = ("kernel_id", "correlation_id", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "registers_per_thread", "shared_mem_bytes", "op_name", "nvtx_range")
_RANGE_ARGS = ("range_id", "domain", "correlation_id", "external_id", "depth")
_TRANSFER_ARGS = ("transfer_id", "kind", "direction", "bytes", "correlation_id")


class _Export:
    """One export's events, produced in batches (`batches()`), and what they leave behind: the lane
    metadata events (which come first in the file, but are only known once every event has been
    made) and `otherData` (counts of what was written and left out). The writer streams the
    batches to disk, so a trace of millions of launches never holds its events all at once."""

    def __init__(self, ps: ProfileSet | Profile, comparison=None, findings: Iterable = ()) -> None:
        self.ps = ProfileSet([ps]) if isinstance(ps, Profile) else ps
        self.comparison = comparison
        self.findings = findings
        self.lanes = _Lanes()
        self.profiles: list[dict] = []
        self.counts: dict = {"kernels": 0, "kernels_synthetic_time": 0, "ranges": 0, "transfers": 0, "counters": 0, "left_out": {}}
        self.other_findings: list[dict] = []
        self.marks = _compare_marks(comparison)

    def batches(self) -> Iterator[list[dict]]:
        lanes, counts, marks = self.lanes, self.counts, self.marks
        multi = len(self.ps) > 1
        for pi, p in enumerate(self.ps):
            prefix = f"{p.profile_id}: " if multi else ""
            t0 = _origin(p)
            self.profiles.append({"profile_id": p.profile_id, "source": p.metadata.get("source"), "path": p.metadata.get("path"), "time_origin_ns": t0})
            yield from _kernel_events(p, pi, prefix, t0, lanes, counts, marks)
            yield from _range_events(p, pi, prefix, t0, lanes, counts)
            yield from _transfer_events(p, pi, prefix, t0, lanes, counts)
            yield from _counter_events(p, pi, prefix, t0, lanes, counts)
        found = []
        for f in self.findings:
            ev = getattr(f, "evidence", None) or {}
            s, e = ev.get("start_ns"), ev.get("end_ns")
            if isinstance(s, (int, float)) and self.profiles and self.profiles[0]["time_origin_ns"] is not None:
                pid = lanes.pid(("findings",), "profaudit findings")
                lanes.tid(pid, 0, "findings")
                base = self.profiles[0]["time_origin_ns"]
                item = {"name": f"{f.rule} {f.severity.label}", "cat": "profaudit.finding", "pid": pid, "tid": 0,
                        "ts": round((s - base) / 1e3, 3), "args": {"message": f.message, "status": f.status.value}}
                if isinstance(e, (int, float)) and e >= s:
                    item.update(ph="X", dur=round((e - s) / 1e3, 3))
                else:
                    item.update(ph="i", s="t")
                found.append(item)
            else:
                self.other_findings.append({"rule": f.rule, "severity": f.severity.label, "status": f.status.value, "message": f.message})
        yield found

    def other(self) -> dict:
        """`otherData`, once `batches()` has run to its end."""
        counts = self.counts
        if not counts["left_out"]:
            del counts["left_out"]
        other = {"profaudit_trace_export": EXPORT_VERSION, "profiles": self.profiles, "counts": counts}
        if self.other_findings:
            other["findings"] = self.other_findings
        if self.comparison is not None:
            other["comparison"] = {"verdict": self.comparison.verdict, "comparable": self.comparison.comparable, "marked_groups": len(self.marks)}
        return other


def chrome_trace(ps: ProfileSet | Profile, *, comparison=None, findings: Iterable = ()) -> dict:
    """The trace as a dict (`json.dump` it); see the module docstring. `write_chrome_trace` writes
    the same document without holding it."""
    ex = _Export(ps, comparison, findings)
    events = [ev for batch in ex.batches() for ev in batch]
    return {"traceEvents": ex.lanes.meta + events, "displayTimeUnit": "ns", "otherData": ex.other()}


def _left_out(counts: dict, table: str, n: int, why: str) -> None:
    if n:
        counts["left_out"][f"{table}: {why}"] = counts["left_out"].get(f"{table}: {why}", 0) + n


# events are made and written this many rows at a time: a batch's dicts are a few tens of MB, where
# a whole trace's (~1 KB per event in Python) were several GB for a few million launches
BATCH_ROWS = 50_000


def _batches(df: pl.DataFrame) -> Iterator[pl.DataFrame]:
    return df.iter_slices(BATCH_ROWS) if df.height else iter(())


def _only(df: pl.DataFrame, cols: Iterable[str]) -> pl.DataFrame:
    """The columns an event is made of: a row dict of every column (54 in kernels) cost most of the
    time of a large export, and the sorted copy of the whole table most of its memory."""
    return df.select([c for c in dict.fromkeys(cols) if c in df.columns])


def _kernel_events(p: Profile, pi: int, prefix: str, t0, lanes: _Lanes, counts: dict, marks: dict) -> Iterator[list[dict]]:
    k = p.tables["kernels"]
    if k.height == 0:
        return
    k = _only(k.with_columns(_dur().alias("_dur")), ("name", "short_name", "mangled_name", "op_name", "start_ns", "_dur", "device_id", "device_name", "stream", *_KERNEL_ARGS))
    _left_out(counts, "kernels", k.filter(pl.col("_dur").is_null()).height, "no duration")
    k = k.filter(pl.col("_dur").is_not_null())
    timed = k.filter(pl.col("start_ns").is_not_null())
    untimed = k.filter(pl.col("start_ns").is_null()).sort("kernel_id", nulls_last=True)
    if marks:
        from profaudit.compare.match import entity_expr

        timed = timed.with_columns(entity_expr())
        untimed = untimed.with_columns(entity_expr())
    seen: set = set()
    rows = timed.with_columns(_us(pl.col("start_ns") - t0).alias("_ts"), _us(pl.col("_dur")).alias("_dus")).sort("start_ns")
    del timed, k
    for chunk in _batches(rows):
        out: list[dict] = []
        for r in chunk.iter_rows(named=True):
            pid = _device_pid(lanes, pi, prefix, r["device_id"], r["device_name"])
            tid = _stream_lane(lanes, pid, r["stream"])
            ev = {"ph": "X", "cat": "kernel", "name": r["name"] or "?", "pid": pid, "tid": tid, "ts": r["_ts"], "dur": r["_dus"], "args": _args(r, _KERNEL_ARGS)}
            _mark(ev, r, marks, seen, out)
            out.append(ev)
        yield out
    counts["kernels"] += rows.height
    if untimed.height:
        # Nsight Compute launches: real durations, no positions; end to end in launch order
        ts = 0.0
        for chunk in _batches(untimed):
            out = []
            for r in chunk.iter_rows(named=True):
                pid = _device_pid(lanes, pi, prefix, r["device_id"], r["device_name"])
                tid = lanes.tid(pid, UNTIMED_LANE, "launches (no timestamps: laid end to end)")
                dus = round(r["_dur"] / 1e3, 3)
                ev = {"ph": "X", "cat": "kernel", "name": r["name"] or "?", "pid": pid, "tid": tid, "ts": round(ts, 3), "dur": dus,
                      "args": {**_args(r, _KERNEL_ARGS), "synthetic_time": True}}
                _mark(ev, r, marks, seen, out)
                out.append(ev)
                ts += dus
            yield out
        counts["kernels"] += untimed.height
        counts["kernels_synthetic_time"] += untimed.height


def _mark(ev: dict, r: dict, marks: dict, seen: set, out: list[dict]) -> None:
    m = marks.get(r.get("entity")) if marks else None
    if m is None:
        return
    ev["args"]["profaudit_compare"] = m
    if r["entity"] not in seen:
        seen.add(r["entity"])
        out.append({"ph": "i", "s": "t", "cat": "profaudit.compare", "name": f"compare: {m}", "pid": ev["pid"], "tid": ev["tid"], "ts": ev["ts"]})


def _compare_marks(cmp) -> dict[str, str]:
    """Candidate kernel name -> 'slower: 0.800x per launch [0.780, 0.820]' for significant groups."""
    if cmp is None or cmp.kind != "kernels" or cmp.matched.height == 0:
        return {}
    out = {}
    for r in cmp.matched.iter_rows(named=True):
        sig = r.get("significance")
        if sig not in ("faster", "slower"):
            continue
        sp, lo, hi = r.get("median_speedup"), r.get("speedup_ci_low"), r.get("speedup_ci_high")
        rng = fmt_interval(lo, hi)
        text = f"{sig}: {fmt_x(sp)} per launch" + ("" if rng == MISSING else f" {rng}")
        for name in r.get("names_c") or []:
            out[name] = text
    return out


def _timed(df: pl.DataFrame, t0, counts: dict, table: str, cols: Iterable[str]) -> pl.DataFrame:
    """Rows with a start and a duration, with `_ts`/`_dus` in microseconds, in time order, and
    only `cols` besides; the others are counted as left out."""
    df = _only(df.with_columns(_dur().alias("_dur")), ("start_ns", "_dur", *cols))
    ok = pl.col("start_ns").is_not_null() & pl.col("_dur").is_not_null()
    _left_out(counts, table, df.filter(~ok).height, "no start or duration")
    return df.filter(ok).with_columns(_us(pl.col("start_ns") - t0).alias("_ts"), _us(pl.col("_dur")).alias("_dus")).sort("start_ns")


def _range_events(p: Profile, pi: int, prefix: str, t0, lanes: _Lanes, counts: dict) -> Iterator[list[dict]]:
    rg = p.tables["ranges"]
    if rg.height == 0:
        return
    rg = _timed(rg, t0, counts, "ranges", ("thread_id", "process_id", "device_id", "kind", "name", *_RANGE_ARGS))
    for chunk in _batches(rg):
        out = []
        for r in chunk.iter_rows(named=True):
            if r["thread_id"] is not None:
                proc = r["process_id"]
                pid = lanes.pid(("host", pi, proc), f"{prefix}host process {proc if proc is not None else '?'}")
                tid = lanes.tid(pid, r["thread_id"], f"thread {r['thread_id']}")
            elif r["device_id"] is not None:
                pid = _device_pid(lanes, pi, prefix, r["device_id"], None)
                tid = lanes.tid(pid, DEVICE_RANGES_LANE, "ranges")
            else:
                pid = lanes.pid(("host", pi, None), f"{prefix}ranges (no thread recorded)")
                tid = lanes.tid(pid, 0, r["kind"] or "ranges")
            out.append({"ph": "X", "cat": r["kind"] or "range", "name": r["name"] or "?", "pid": pid, "tid": tid, "ts": r["_ts"], "dur": r["_dus"], "args": _args(r, _RANGE_ARGS)})
        yield out
    counts["ranges"] += rg.height


def _transfer_events(p: Profile, pi: int, prefix: str, t0, lanes: _Lanes, counts: dict) -> Iterator[list[dict]]:
    tr = p.tables["transfers"]
    if tr.height == 0:
        return
    tr = _timed(tr, t0, counts, "transfers", ("device_id", "stream", "name", "kind", "direction", *_TRANSFER_ARGS))
    for chunk in _batches(tr):
        out = []
        for r in chunk.iter_rows(named=True):
            pid = _device_pid(lanes, pi, prefix, r["device_id"], None)
            tid = _stream_lane(lanes, pid, r["stream"])
            name = r["name"] or " ".join(x for x in (r["kind"], r["direction"]) if x) or "transfer"
            out.append({"ph": "X", "cat": "transfer", "name": name, "pid": pid, "tid": tid, "ts": r["_ts"], "dur": r["_dus"], "args": _args(r, _TRANSFER_ARGS)})
        yield out
    counts["transfers"] += tr.height


def _counter_events(p: Profile, pi: int, prefix: str, t0, lanes: _Lanes, counts: dict) -> Iterator[list[dict]]:
    c = p.tables["counters"]
    if c.height == 0:
        return
    ok = pl.col("timestamp_ns").is_not_null() & pl.col("value").is_not_null() & pl.col("value").is_finite()
    _left_out(counts, "counters", c.filter(~ok).height, "no timestamp or finite value")
    c = _only(c.filter(ok), ("timestamp_ns", "device_id", "counter", "raw_name", "unit", "value"))
    c = c.with_columns(_us(pl.col("timestamp_ns") - t0).alias("_ts")).sort("timestamp_ns")
    for chunk in _batches(c):
        out = []
        for r in chunk.iter_rows(named=True):
            if r["device_id"] is not None:
                pid = _device_pid(lanes, pi, prefix, r["device_id"], None)
            else:
                pid = lanes.pid(("counters", pi), f"{prefix}counters")
            name = r["counter"] or r["raw_name"] or "counter"
            unit = f" ({r['unit']})" if r.get("unit") else ""
            out.append({"ph": "C", "cat": "counter", "name": name + unit, "pid": pid, "tid": 0, "ts": r["_ts"], "args": {"value": r["value"]}})
        yield out
    counts["counters"] += c.height


def _finite(v: Any) -> Any:
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
    return v


def _json_items(items: list) -> bytes:
    """The items of a JSON list as `json.dumps` writes them inside the whole document (no brackets),
    a non-finite number as null."""
    try:
        text = json.dumps(items, separators=(",", ":"), allow_nan=False, default=str)
    except ValueError:
        # a non-finite number (a damaged capture's byte count of inf; fuzzing) has no JSON form: it
        # is written as null, as a missing value; only a batch that holds one pays for the second walk
        text = json.dumps(_finite(items), separators=(",", ":"), allow_nan=False, default=str)
    return text[1:-1].encode("utf-8")


def write_chrome_trace(ps: ProfileSet | Profile, path: str | os.PathLike, **kwargs: Any) -> dict:
    """Write the trace (gzip when the name ends in .gz) atomically; return `otherData`.

    The bytes are those of `json.dumps(chrome_trace(...), separators=(",", ":"))` (gzip as
    `gzip.compress(..., mtime=0)`), written in batches: the events go to an unnamed spool file as
    they are made, because the lane names that come first in the file are known only at the end;
    then the file is the head, the lanes, the spool and `otherData`. Memory stays that of one batch
    however many events there are; the disk holds the trace twice for a moment."""
    import tempfile
    import zlib

    from profaudit.dataset import _cannot_write, _write_via_temp

    p = Path(path)
    ex = _Export(ps, **kwargs)
    try:
        spool = tempfile.TemporaryFile(dir=p.parent if p.parent.is_dir() else None)
    except OSError as exc:
        raise _cannot_write(p, exc) from None
    with spool:
        n = 0
        try:
            for batch in ex.batches():
                if batch:
                    spool.write((b"," if n else b"") + _json_items(batch))
                    n += len(batch)
            spool.seek(0)
        except OSError as exc:
            # the spool sits on the target's disk: a full disk or a file-size limit while the
            # events are spooled is the target's problem, worded as the final write words it
            # (it was an internal error, exit 3, while the whole-document write said "cannot write")
            raise _cannot_write(p, exc) from None
        meta = _json_items(ex.lanes.meta)
        other = ex.other()
        tail = b'],"displayTimeUnit":"ns","otherData":' + _json_items([other]) + b"}"

        def write(tmp: str) -> None:
            with open(tmp, "wb") as fh:
                # wbits 31: the gzip stream gzip.compress(data, mtime=0) makes (level 9, mtime 0)
                z = zlib.compressobj(9, zlib.DEFLATED, 31) if p.name.endswith(".gz") else None
                put = (lambda b: fh.write(z.compress(b))) if z else fh.write
                put(b'{"traceEvents":[' + meta + (b"," if meta and n else b""))
                while block := spool.read(1 << 22):
                    put(block)
                put(tail)
                if z:
                    fh.write(z.flush())

        _write_via_temp(p, write)
    return other
