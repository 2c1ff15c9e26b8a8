"""export-trace: Chrome-trace JSON checked by re-reading it with plain json and comparing counts and
durations with the source, read independently (hand SQL on nsys SQLite, json on Kineto traces)."""

from __future__ import annotations

import gzip
import json
import sqlite3
from collections import Counter

import polars as pl
import pytest

from profaudit.profile import Profile, ProfileSet
from profaudit.trace_export import chrome_trace, write_chrome_trace
from tests.conftest import assert_one_line_error, corpus_file


def events(doc, ph=None, cat=None):
    return [e for e in doc["traceEvents"] if (ph is None or e["ph"] == ph) and (cat is None or e.get("cat") == cat)]


def names(doc, kind):
    return {(e["pid"], e.get("tid")): e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == kind}


def synthetic():
    k = pl.DataFrame({
        "name": ["gemm", "relu", "gemm", "copy_kernel", "lost"],
        "device_id": [0, 0, 1, 0, 0], "device_name": ["H100"] * 5, "stream": [7, 8, 7, 7, 7],
        "start_ns": [1_000_000, 1_002_000, 1_000_500, 1_010_000, 1_011_000], "end_ns": [1_001_500, 1_002_250, 1_001_000, 1_010_100, None],
        "duration_ns": [1_500.0, 250.0, 500.0, 100.0, None], "kernel_id": [0, 1, 2, 3, 4],
    })
    r = pl.DataFrame({"name": ["step", "cudaLaunchKernel", "nvtx"], "kind": ["user_annotation", "cuda_runtime", "nvtx_push_pop"],
                      "process_id": [42, 42, None], "thread_id": [1, 2, None], "start_ns": [999_000, 999_900, 1_000_000], "end_ns": [1_020_000, 1_000_000, 1_000_010],
                      "duration_ns": [21_000.0, 100.0, 10.0]})
    t = pl.DataFrame({"kind": ["memcpy"], "direction": ["HtoD"], "bytes": [4096.0], "device_id": [0], "stream": [9], "start_ns": [1_005_000], "end_ns": [1_006_000], "duration_ns": [1_000.0]})
    c = pl.DataFrame({"counter": ["sm_clock", "sm_clock", "power"], "unit": ["Hz", "Hz", "W"], "timestamp_ns": [1_000_000, 1_010_000, 1_000_000],
                      "value": [1.98e9, 1.75e9, float("nan")], "device_id": [0, 0, 0]})
    return Profile("p", {"source": "nsys", "format": "nsys-sqlite"}, {"kernels": k, "ranges": r, "transfers": t, "counters": c})


def test_layout_of_a_known_profile():
    doc = json.loads(json.dumps(chrome_trace(synthetic())))  # JSON-serialisable as it is
    procs, threads = names(doc, "process_name"), names(doc, "thread_name")
    assert sorted(procs.values()) == ["GPU 0 H100", "GPU 1 H100", "host process 42", "ranges (no thread recorded)"]
    k = events(doc, "X", "kernel")
    assert [e["name"] for e in k] == ["gemm", "gemm", "relu", "copy_kernel"]  # 'lost' has no duration
    # microseconds from the profile's first event (999 000 ns), nanosecond resolution
    gemm0 = next(e for e in k if e["args"]["kernel_id"] == 0)
    assert gemm0["ts"] == 1.0 and gemm0["dur"] == 1.5
    assert threads[(gemm0["pid"], 7)] == "stream 7"
    assert {threads[(e["pid"], e["tid"])] for e in k} == {"stream 7", "stream 8"}
    host = [e for e in events(doc, "X") if e["cat"] in ("user_annotation", "cuda_runtime")]
    assert {threads[(e["pid"], e["tid"])] for e in host} == {"thread 1", "thread 2"}
    (tr,) = events(doc, "X", "transfer")
    assert tr["name"] == "memcpy HtoD" and tr["dur"] == 1.0 and tr["args"]["bytes"] == 4096.0
    cs = events(doc, "C")
    assert [(e["name"], e["ts"], e["args"]["value"]) for e in cs] == [("sm_clock (Hz)", 1.0, 1.98e9), ("sm_clock (Hz)", 11.0, 1.75e9)]
    other = doc["otherData"]
    assert other["profiles"][0]["time_origin_ns"] == 999_000
    assert other["counts"] == {"kernels": 4, "kernels_synthetic_time": 0, "ranges": 3, "transfers": 1, "counters": 2,
                               "left_out": {"kernels: no duration": 1, "counters: no timestamp or finite value": 1}}


def test_launches_without_timestamps_are_laid_end_to_end():
    k = pl.DataFrame({"name": ["a", "b", "c"], "kernel_id": [2, 0, 1], "duration_ns": [3_000.0, 1_000.0, 2_000.0], "device_id": [0] * 3})
    doc = chrome_trace(Profile("ncu", {"source": "ncu"}, {"kernels": k}))
    ev = events(doc, "X", "kernel")
    assert [(e["name"], e["ts"], e["dur"]) for e in ev] == [("b", 0.0, 1.0), ("c", 1.0, 2.0), ("a", 3.0, 3.0)]
    assert all(e["args"]["synthetic_time"] for e in ev)
    assert doc["otherData"]["counts"]["kernels_synthetic_time"] == 3


def test_compare_overlay_marks_the_slower_kernel():
    from profaudit.compare import compare
    from tests.test_compare import profile

    b = profile("b", [("gemm", 40, 10_000), ("relu", 40, 1_000)], seed=1)
    c = profile("c", [("gemm", 40, 13_000), ("relu", 40, 1_000)], seed=2)
    cmp = compare(b, c)
    doc = chrome_trace(c, comparison=cmp)
    k = events(doc, "X", "kernel")
    marked = [e for e in k if "profaudit_compare" in e["args"]]
    assert {e["name"] for e in marked} == {"gemm"} and len(marked) == 40
    assert marked[0]["args"]["profaudit_compare"].startswith("slower: 0.7")
    (inst,) = events(doc, "i", "profaudit.compare")
    assert inst["ts"] == min(e["ts"] for e in marked)


def test_findings_with_a_time_range_become_events():
    from profaudit.audit.findings import Finding, Severity, Status

    timed = Finding("PA109", "times-exceed-wall-clock", Severity.WARN, Status.FAIL, ("P7",), "overlap", evidence={"start_ns": 1_000_000, "end_ns": 1_002_000})
    other = Finding("PA201", "device-mismatch", Severity.FAIL, Status.FAIL, ("P3",), "different GPUs")
    doc = chrome_trace(synthetic(), findings=[timed, other])
    (ev,) = events(doc, "X", "profaudit.finding")
    assert ev["ts"] == 1.0 and ev["dur"] == 2.0 and ev["name"] == "PA109 warn"
    assert doc["otherData"]["findings"] == [{"rule": "PA201", "severity": "fail", "status": "fail", "message": "different GPUs"}]


def test_several_profiles_get_their_own_lanes(tmp_path):
    ps = ProfileSet([synthetic(), Profile("q", {"source": "nsys"}, {"kernels": synthetic().kernels})])
    info = write_chrome_trace(ps, tmp_path / "t.json.gz")
    doc = json.loads(gzip.decompress((tmp_path / "t.json.gz").read_bytes()))
    assert doc["otherData"] == info
    assert {v.split(":")[0] for v in names(doc, "process_name").values()} == {"p", "q"}
    assert info["counts"]["kernels"] == 8


@pytest.mark.corpus
def test_nsys_sqlite_against_hand_sql(tmp_path, cli):
    src = corpus_file("nsys-sqlite", "report1__overwritten_later")
    res = cli("export-trace", src, "-o", tmp_path / "t.json")
    assert res.code == 0, res
    doc = json.loads((tmp_path / "t.json").read_text())
    db = sqlite3.connect(src)
    n, total = db.execute("SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    k = events(doc, "X", "kernel")
    assert len(k) == n == 22
    assert sum(e["dur"] for e in k) * 1e3 == pytest.approx(total, abs=n)
    per_stream = Counter(db.execute("SELECT deviceId, streamId FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchall())
    threads = names(doc, "thread_name")
    assert sorted(Counter(threads[(e["pid"], e["tid"])] for e in k).values()) == sorted(per_stream.values())
    n_m, total_m = db.execute("SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchone()
    t = events(doc, "X", "transfer")
    assert len(t) == n_m and sum(e["dur"] for e in t) * 1e3 == pytest.approx(total_m, abs=n_m)
    n_rt = db.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0]
    # the RUNTIME table holds runtime and driver API calls alike
    assert len([e for e in events(doc, "X") if e["cat"] in ("cuda_runtime", "cuda_driver")]) == n_rt
    assert "22 kernels" in res.err and "112 transfers" in res.err


@pytest.mark.corpus
def test_kineto_trace_against_its_own_json(tmp_path):
    src = corpus_file("chrome-trace", "gpu_metrics_expected")
    import profaudit

    write_chrome_trace(profaudit.load(str(src)), tmp_path / "t.json")
    doc = json.loads((tmp_path / "t.json").read_text())
    raw = json.loads(src.read_text())["traceEvents"]
    kern = [e for e in raw if e.get("cat", "").lower() == "kernel"]
    k = events(doc, "X", "kernel")
    assert len(k) == len(kern) == 30
    assert sum(e["dur"] for e in k) == pytest.approx(sum(e["dur"] for e in kern), abs=1e-3 * len(k))
    assert sorted(e["name"] for e in k) == sorted(e["name"] for e in kern)
    assert len(events(doc, "C")) == len([e for e in raw if e.get("ph") == "C"])
    assert len(events(doc, "X", "transfer")) == len([e for e in raw if e.get("cat", "").lower() == "memcpy"])


@pytest.mark.corpus
def test_ncu_report_launches(tmp_path, cli):
    src = corpus_file("ncu-rep", "DarrenLu666888")
    res = cli("export-trace", src, "-o", tmp_path / "t.json")
    assert res.code == 0 and "laid end to end" in res.err
    import profaudit

    k = profaudit.load(str(src)).kernels
    doc = json.loads((tmp_path / "t.json").read_text())
    ev = events(doc, "X", "kernel")
    assert len(ev) == k.height and [e["dur"] * 1e3 for e in ev] == pytest.approx(k.sort("kernel_id")["duration_ns"].to_list(), abs=1)


def test_bad_input_is_one_line(cli, tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    assert_one_line_error(cli("export-trace", bad, "-o", tmp_path / "t.json"))
    assert cli("export-trace", bad).code == 2  # -o is required


@pytest.mark.corpus
def test_rocprof_trace_against_its_own_json(tmp_path):
    """rocprof's own Chrome trace: the kernels are its GPU process's complete events."""
    import profaudit

    src = corpus_file("chrome-trace", "rocprof_rome_mm_hsa")
    write_chrome_trace(profaudit.load(str(src)), tmp_path / "t.json")
    doc = json.loads((tmp_path / "t.json").read_text())
    raw = json.loads(src.read_text())["traceEvents"]
    gpu_pid = next(str(e["pid"]) for e in raw if e.get("ph") == "M" and e.get("name") == "process_name" and e["args"]["name"].startswith("GPU"))
    kern = [e for e in raw if e.get("ph") == "X" and str(e.get("pid")) == gpu_pid]
    k = events(doc, "X", "kernel")
    assert len(k) == len(kern) == 3
    # rocprof's `dur` is truncated to whole microseconds; its args carry the exact nanoseconds
    assert sorted(e["dur"] for e in k) == pytest.approx(sorted(int(e["args"]["DurationNs"]) / 1e3 for e in kern), abs=1e-3)
    ts = sorted(e["ts"] for e in k)
    begins = [int(e["args"]["BeginNs"]) for e in kern]
    assert (ts[-1] - ts[0]) * 1e3 == pytest.approx(max(begins) - min(begins), abs=1)


@pytest.mark.corpus
def test_xla_xplane_counts_and_durations(tmp_path, cli):
    import profaudit

    src = corpus_file("xplane", "jax_conv_minimal_legacy")
    assert cli("export-trace", src, "-o", tmp_path / "t.json.gz").code == 0
    doc = json.loads(gzip.decompress((tmp_path / "t.json.gz").read_bytes()))
    ps = profaudit.load(str(src))
    for table, cat in (("kernels", "kernel"), ("transfers", "transfer")):
        t = ps.table(table)
        ev = events(doc, "X", cat)
        assert len(ev) == t.height > 0
        assert sum(e["dur"] for e in ev) * 1e3 == pytest.approx(float(t["duration_ns"].sum()), abs=len(ev))
    assert len(events(doc, "C")) == ps.counters.filter(pl.col("value").is_finite()).height
    assert doc["otherData"]["counts"]["ranges"] == ps.ranges.height
