"""The commands run after a large load write their output in batches (issue 13: a 200 MB blow-up's
export-trace, `kernels -t metrics --format csv` and compare went past 2 GB holding whole outputs).
Batching must not change a byte: each writer here is checked against the whole-document form it
replaced, with batches small enough that every table spans several of them. The memory itself is
measured by `tools/fuzz_blowup.py --after` (a fresh process per command), not here: a test must not
depend on this machine's allocator or on a 200 MB file."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import math

import polars as pl
import pytest

from profaudit.profile import Profile, ProfileSet
from tests.test_trace_export import synthetic


def _many(n: int) -> Profile:
    """`n` kernels on three streams of two devices, ranges on two threads, transfers and counters,
    with nulls and ties in the times, and one non-finite byte count (written as null)."""
    k = pl.DataFrame({
        "name": [f"k{i % 7}" if i % 11 else None for i in range(n)],
        "short_name": [f"s{i % 5}" for i in range(n)],
        "device_id": [i % 2 for i in range(n)], "device_name": ["H100"] * n, "stream": [7 + i % 3 for i in range(n)],
        "start_ns": [None if i % 13 == 0 else 1_000 * (i // 2) for i in range(n)],
        "duration_ns": [None if i % 17 == 0 else float(100 + i % 9) for i in range(n)],
        "kernel_id": list(range(n)), "grid_x": [i % 4 for i in range(n)],
    })
    r = pl.DataFrame({"name": [f"r{i % 3}" for i in range(n)], "kind": ["nvtx_push_pop"] * n,
                      "process_id": [42] * n, "thread_id": [None if i % 5 == 0 else 1 + i % 2 for i in range(n)],
                      "device_id": [None if i % 10 else 0 for i in range(n)],
                      "start_ns": [500 * i for i in range(n)], "end_ns": [500 * i + 90 for i in range(n)], "duration_ns": [90.0] * n})
    t = pl.DataFrame({"kind": ["memcpy"] * n, "direction": ["HtoD"] * n, "bytes": [float("inf") if i == 3 else 4096.0 for i in range(n)],
                      "device_id": [0] * n, "stream": [9] * n, "start_ns": [700 * i for i in range(n)], "end_ns": [700 * i + 50 for i in range(n)],
                      "duration_ns": [50.0] * n})
    c = pl.DataFrame({"counter": ["sm_clock"] * n, "unit": ["Hz"] * n, "timestamp_ns": [300 * i for i in range(n)],
                      "value": [float("nan") if i % 9 == 0 else 1.9e9 for i in range(n)], "device_id": [None if i % 4 else 0 for i in range(n)]})
    return Profile("many", {"source": "nsys", "format": "nsys-sqlite"}, {"kernels": k, "ranges": r, "transfers": t, "counters": c})


def _reference(ps: ProfileSet) -> bytes:
    """The export, built here row by row from the tables and dumped whole with json.dumps: the
    oracle for the streamed writer. It shares no code with profaudit.trace_export (only its lane
    constants), so a fault in how the writer makes its events in batches (state carried across
    batches, a column left out of a batch) is seen, not repeated. It follows the layout of the
    module docstring for the tables used here: no comparison or findings overlay."""
    from profaudit.trace_export import DEVICE_RANGES_LANE, EXPORT_VERSION, UNTIMED_LANE

    pids: dict = {}
    meta: list = []
    events: list = []
    named_threads: set = set()
    counts = {"kernels": 0, "kernels_synthetic_time": 0, "ranges": 0, "transfers": 0, "counters": 0}
    left_out: dict = {}
    profiles = []

    def pid(key, name):
        if key not in pids:
            pids[key] = len(pids) + 1
            meta.append({"ph": "M", "name": "process_name", "pid": pids[key], "tid": 0, "args": {"name": name}})
            meta.append({"ph": "M", "name": "process_sort_index", "pid": pids[key], "tid": 0, "args": {"sort_index": pids[key]}})
        return pids[key]

    def tid(p, t, name):
        if (p, t) not in named_threads:
            named_threads.add((p, t))
            meta.append({"ph": "M", "name": "thread_name", "pid": p, "tid": t, "args": {"name": name}})
        return t

    def gpu(pi, prefix, dev, dev_name):
        return pid(("gpu", pi, dev), f"{prefix}GPU {'?' if dev is None else dev}" + (f" {dev_name}" if dev_name else ""))

    def stream(p, s):
        return tid(p, 0 if s is None else s, "stream ?" if s is None else f"stream {s}")

    def us(ns):
        return round(float(ns) / 1e3, 3)

    def args(r, keys):
        return {k: r[k] for k in keys if r.get(k) is not None}

    def rows(df, key, drop):
        """Rows with a duration (duration_ns, else end - start), in `key` order; the others counted."""
        out = []
        for r in df.to_dicts():
            d = r.get("duration_ns")
            if d is None and r.get("end_ns") is not None and r.get("start_ns") is not None:
                d = float(r["end_ns"] - r["start_ns"])
            r["dur"] = d
            out.append(r)
        kept = [r for r in out if all(r[c] is not None for c in drop[1])]
        if len(out) > len(kept):
            left_out[drop[0]] = left_out.get(drop[0], 0) + len(out) - len(kept)
        return sorted(kept, key=lambda r: (r[key] is None, r[key] if r[key] is not None else 0))

    kernel_args = ("kernel_id", "correlation_id", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
                   "registers_per_thread", "shared_mem_bytes", "op_name", "nvtx_range")
    multi = len(ps) > 1
    for pi, p in enumerate(ps):
        prefix = f"{p.profile_id}: " if multi else ""
        starts = [v for t, c in (("kernels", "start_ns"), ("ranges", "start_ns"), ("transfers", "start_ns"), ("counters", "timestamp_ns"))
                  for v in p.tables[t][c].to_list() if v is not None]
        t0 = min(starts) if starts else None
        profiles.append({"profile_id": p.profile_id, "source": p.metadata.get("source"), "path": p.metadata.get("path"), "time_origin_ns": t0})
        ks = rows(p.tables["kernels"], "start_ns", ("kernels: no duration", ("dur",)))
        for r in [r for r in ks if r["start_ns"] is not None]:
            g = gpu(pi, prefix, r["device_id"], r["device_name"])
            events.append({"ph": "X", "cat": "kernel", "name": r["name"] or "?", "pid": g, "tid": stream(g, r["stream"]),
                           "ts": us(r["start_ns"] - t0), "dur": us(r["dur"]), "args": args(r, kernel_args)})
        ts = 0.0
        untimed = sorted((r for r in ks if r["start_ns"] is None), key=lambda r: (r["kernel_id"] is None, r["kernel_id"] or 0))
        for r in untimed:  # laid end to end in launch order
            g = gpu(pi, prefix, r["device_id"], r["device_name"])
            dus = round(r["dur"] / 1e3, 3)
            events.append({"ph": "X", "cat": "kernel", "name": r["name"] or "?", "pid": g,
                           "tid": tid(g, UNTIMED_LANE, "launches (no timestamps: laid end to end)"), "ts": round(ts, 3), "dur": dus,
                           "args": {**args(r, kernel_args), "synthetic_time": True}})
            ts += dus
        counts["kernels"] += len(ks)
        counts["kernels_synthetic_time"] += len(untimed)
        rg = rows(p.tables["ranges"], "start_ns", ("ranges: no start or duration", ("start_ns", "dur")))
        for r in rg:
            if r["thread_id"] is not None:
                proc = r["process_id"]
                h = pid(("host", pi, proc), f"{prefix}host process {'?' if proc is None else proc}")
                lane = tid(h, r["thread_id"], f"thread {r['thread_id']}")
            elif r["device_id"] is not None:
                h = gpu(pi, prefix, r["device_id"], None)
                lane = tid(h, DEVICE_RANGES_LANE, "ranges")
            else:
                h = pid(("host", pi, None), f"{prefix}ranges (no thread recorded)")
                lane = tid(h, 0, r["kind"] or "ranges")
            events.append({"ph": "X", "cat": r["kind"] or "range", "name": r["name"] or "?", "pid": h, "tid": lane,
                           "ts": us(r["start_ns"] - t0), "dur": us(r["dur"]),
                           "args": args(r, ("range_id", "domain", "correlation_id", "external_id", "depth"))})
        counts["ranges"] += len(rg)
        tr = rows(p.tables["transfers"], "start_ns", ("transfers: no start or duration", ("start_ns", "dur")))
        for r in tr:
            g = gpu(pi, prefix, r["device_id"], None)
            name = r["name"] or " ".join(x for x in (r["kind"], r["direction"]) if x) or "transfer"
            events.append({"ph": "X", "cat": "transfer", "name": name, "pid": g, "tid": stream(g, r["stream"]),
                           "ts": us(r["start_ns"] - t0), "dur": us(r["dur"]),
                           "args": args(r, ("transfer_id", "kind", "direction", "bytes", "correlation_id"))})
        counts["transfers"] += len(tr)
        cs = [r for r in p.tables["counters"].to_dicts()]
        ok = [r for r in cs if r["timestamp_ns"] is not None and r["value"] is not None and math.isfinite(r["value"])]
        if len(cs) > len(ok):
            key = "counters: no timestamp or finite value"
            left_out[key] = left_out.get(key, 0) + len(cs) - len(ok)
        for r in sorted(ok, key=lambda r: r["timestamp_ns"]):
            c = gpu(pi, prefix, r["device_id"], None) if r["device_id"] is not None else pid(("counters", pi), f"{prefix}counters")
            unit = f" ({r['unit']})" if r.get("unit") else ""
            events.append({"ph": "C", "cat": "counter", "name": (r["counter"] or r.get("raw_name") or "counter") + unit, "pid": c, "tid": 0,
                           "ts": us(r["timestamp_ns"] - t0), "args": {"value": r["value"]}})
        counts["counters"] += len(ok)
    if left_out:
        counts["left_out"] = left_out
    doc = {"traceEvents": meta + events, "displayTimeUnit": "ns",
           "otherData": {"profaudit_trace_export": EXPORT_VERSION, "profiles": profiles, "counts": counts}}

    def finite(v):  # a non-finite number has no JSON form: null, as a missing value
        if isinstance(v, float):
            return v if math.isfinite(v) else None
        if isinstance(v, dict):
            return {k: finite(x) for k, x in v.items()}
        return [finite(x) for x in v] if isinstance(v, list) else v

    return json.dumps(finite(doc), separators=(",", ":"), allow_nan=False).encode()


@pytest.mark.parametrize("batch", [1, 7, 50_000])
@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_streamed_trace_has_the_bytes_of_the_whole_document(tmp_path, monkeypatch, batch, suffix):
    from profaudit import trace_export

    monkeypatch.setattr(trace_export, "BATCH_ROWS", batch)
    ps = ProfileSet([_many(120), synthetic()])
    out = tmp_path / f"t{suffix}"
    info = trace_export.write_chrome_trace(ps, out)
    want = _reference(ps)
    data = out.read_bytes()
    if suffix.endswith(".gz"):
        assert data == gzip.compress(want, mtime=0)
        data = gzip.decompress(data)
    assert data == want
    assert info == json.loads(want)["otherData"]
    # the null written for the infinite byte count, and every table's rows are there
    assert info["counts"]["transfers"] == 120 + 1
    assert json.loads(data)["traceEvents"][-1] is not None


def test_streamed_trace_of_a_profile_without_events(tmp_path):
    from profaudit.trace_export import write_chrome_trace

    p = Profile("empty", {"source": "nsys"}, {})
    write_chrome_trace(p, tmp_path / "e.json")
    assert (tmp_path / "e.json").read_bytes() == _reference(ProfileSet([p]))
    assert json.loads((tmp_path / "e.json").read_bytes())["traceEvents"] == []


def test_an_unwritable_trace_target_is_one_line(tmp_path):
    from profaudit.errors import InputError
    from profaudit.trace_export import write_chrome_trace

    (tmp_path / "f").write_text("a file where a folder belongs")
    with pytest.raises(InputError, match="cannot write"):
        write_chrome_trace(synthetic(), tmp_path / "f" / "t.json")
    assert [x.name for x in tmp_path.iterdir()] == ["f"]  # no temporary left behind


def _emitted(df: pl.DataFrame, fmt: str) -> str:
    from profaudit.cli.common import emit_frame

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        emit_frame(df, fmt, None)
    return out.getvalue()


@pytest.mark.parametrize("rows", [0, 1, 5, 23])
@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_tables_on_stdout_in_slices_have_the_bytes_of_one_write(monkeypatch, rows, fmt):
    from profaudit.cli import common

    df = pl.DataFrame({
        "a": [i if i % 3 else None for i in range(rows)],
        "b": [float("nan") if i == 2 else float("inf") if i == 4 else i / 3 for i in range(rows)],
        "s": [['x', 'y,z', '"q"', None, "é\n2"][i % 5] for i in range(rows)],
        "l": [[i, i + 1] if i % 2 else None for i in range(rows)],
    }, schema={"a": pl.Int64, "b": pl.Float64, "s": pl.Utf8, "l": pl.List(pl.Int64)})
    if fmt == "csv":
        want = common._flatten_for(common.Format.csv, df).write_csv()
    else:
        want = json.dumps([{k: common._json_number(v) for k, v in r.items()} for r in df.to_dicts()], default=str, indent=1, allow_nan=False) + "\n"
    monkeypatch.setattr(common, "_SLICE_ROWS", 2)
    assert _emitted(df, fmt) == want
    if fmt == "json":
        assert len(json.loads(want)) == rows


def test_the_after_stage_names_each_step_before_it_runs(tmp_path):
    """The long run's parent times each next command on its own clock from the worker's step
    messages: every command, then the ingest round trip, is announced before it runs."""
    from profaudit.loader import load
    from tests.fuzz import downstream

    f = tmp_path / "timings.csv"
    f.write_text("kernel,size,time_ms\nsoftmax,1024,0.125\nsoftmax,2048,0.25\nmatmul,1024,1.5\n")
    ps = load(str(f))
    steps: list[str] = []
    problem = downstream.after_load(f, ps, None, tmp_path / "after", on_step=steps.append)
    assert problem is None
    want = [argv[0] for argv in downstream.commands(f, ps, None, tmp_path / "after")] + ["ingest"]
    assert steps == want and "export-trace" in steps and "compare" in steps


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self/task"), reason="needs /proc (Linux)")
def test_a_step_restarts_the_inputs_clock(tmp_path):
    """`Worker.next_step`: the CPU a worker spent on an input's read no longer counts against the
    command it starts next, and a timeout then names that command."""
    import subprocess
    import sys
    import time

    from tests.fuzz import tool_module

    fuzz_long = tool_module.load("fuzz_long")
    proc = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 30: pass"])
    try:
        w = fuzz_long.Worker.__new__(fuzz_long.Worker)
        w.proc = proc
        # the clock as send() starts it for an input's read
        w.started, w.cpu0, w.rq0, w.step = time.monotonic(), w.cpu_s(), w._rq_waits(), "read"
        while w.cpu_s() - w.cpu0 < 0.5:
            time.sleep(0.05)
        spent = w.cpu_s() - w.cpu0
        w.next_step("export-trace")
        assert w.cpu_s() - w.cpu0 < spent
        assert w.step == "after load: export-trace"
    finally:
        proc.kill()
        proc.wait()
