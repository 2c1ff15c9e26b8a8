"""Regression tests for what the fuzzing of session 14 found. Each input is the smallest form of
its reproducer, built here from the suite's own fixtures."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.test_fuzz_regressions import _refused

NVBENCH_HEAD = "Benchmark,Device,Device Name,Skipped,NumElements,Samples,CPU Time (sec),Noise,GPU Time (sec),Noise,Batch GPU (sec),Batch\n"
NVBENCH_ROW = "copy,0,Quadro GV100,No,{n},47755,0.00027093838689142973,0.0111,0.00026478739019249176,0.0114,0.0002632571401085129,47756\n"


def _nvbench(rows: int) -> str:
    return NVBENCH_HEAD + "".join(NVBENCH_ROW.format(n=16 + i) for i in range(rows))


def _gz(text: str, damage: str) -> bytes:
    data = bytearray(gzip.compress(text.encode(), mtime=0))
    if damage == "crc":
        data[-8] ^= 0xFF  # the CRC-32 of the trailer: checked once the whole stream is read
    elif damage == "cut":
        data = data[:-5]  # the trailer cut: the deflate data is whole, its end marker is not
    return bytes(data)


def test_nvbench_gzip_crc_failing_after_the_sniffed_head(tmp_path):
    """s14 run 1, nvbench #1721: a gzipped nvbench CSV longer than the 64 KiB the sniffing
    decompresses, its CRC wrong: `cannot read as nvbench: BadGzipFile: CRC check failed` (the
    catch-all). Any reader of a compressed stream can meet it; the loader now says it in one line."""
    f = tmp_path / "bench.csv"
    text = _nvbench(800)
    assert len(text) > 64 * 1024
    f.write_bytes(_gz(text, "crc"))
    _refused(f, "damaged or cut compressed data: CRC check failed")


GBENCH = json.dumps({"context": {"date": "2024-01-01", "num_cpus": 8, "mhz_per_cpu": 3000, "library_build_type": "release"},
                     "benchmarks": [{"name": "BM_x/8", "run_name": "BM_x/8", "run_type": "iteration", "iterations": 10,
                                     "real_time": 1.5, "cpu_time": 1.4, "time_unit": "ns"}]})
NCU_RAW = "gpu__time_duration.sum,launch__block_size\nmsecond,-\n17.61,1024\n18.54,512\n"


@pytest.mark.parametrize("name,text", [("bench.csv", _nvbench(3)), ("gbench.json", GBENCH), ("raw.csv", NCU_RAW)],
                         ids=["nvbench", "google-benchmark", "ncu-csv"])
def test_gzip_trailer_cut(tmp_path, name, text):
    """A gzipped input whose last bytes are missing (the trailer): nvbench, Google Benchmark and
    ncu CSV gave `EOFError: Compressed file ended before the end-of-stream marker was reached`
    through the catch-all (found sweeping every format with damaged gzip trailers)."""
    f = tmp_path / name
    f.write_bytes(_gz(text, "cut"))
    _refused(f, "damaged or cut compressed data: Compressed file ended before the end-of-stream marker was reached")


@pytest.mark.parametrize("field,value,needle", [
    ("hostname", {"": None}, "metadata.node.hostname: expected text, found"),
    ("hostname", [1], "metadata.node.hostname: expected text, found"),
    ("pid", {}, "metadata.pid"),
], ids=["hostname-object", "hostname-list", "pid-object"])
def test_rocprof_sdk_metadata_of_the_wrong_type(tmp_path, field, value, needle):
    """s14 next-command round (a3), rocprof-sdk-json #25: a hostname that is a JSON object loaded,
    then `compare` died in the distributed view (exit 3, polars could not make a text column of
    it); a pid that is an object gave the kernels a process_id column of the wrong type."""
    from tests.test_chrome_trace import _sdk_doc

    doc = _sdk_doc()
    meta = doc["rocprofiler-sdk-tool"][0]["metadata"]
    if field == "hostname":
        meta.setdefault("node", {})["hostname"] = value
    else:
        meta[field] = value
    f = tmp_path / "results.json"
    f.write_text(json.dumps(doc))
    _refused(f, needle)


def test_rocprof_compute_pmc_perf_over_the_size_limit_is_refused(tmp_path, monkeypatch):
    """s14 run 3, rocprof-compute #277: a pmc_perf.csv blown up to 200 MB (one dispatch row
    repeated 1.4 million times) needed ~5 GB and the fuzz worker died at its memory cap (exit -6).
    Over rocprof_compute.PMC_LIMIT (64 MiB) it is refused in one line before any parsing; here the
    limit is lowered so the fixture workload crosses it."""
    from profaudit.parsers import rocprof_compute
    from tests.test_rocprof_compute import make_workload

    w = make_workload(tmp_path)
    size = (w / "pmc_perf.csv").stat().st_size
    monkeypatch.setattr(rocprof_compute, "PMC_LIMIT", size - 1)
    _refused(w, "pmc_perf.csv: 0 MiB: over the 0 MiB of counter table this reader holds in memory")
    monkeypatch.setattr(rocprof_compute, "PMC_LIMIT", size)
    from profaudit.loader import read_one

    assert read_one(w)[0].tables["metrics"].height > 0


def test_profaudit_timing_column_of_mixed_json_types(tmp_path):
    """s14 run 3, profaudit-timing #490 (stacked edits): one line's cache_state NaN, another's a
    lone surrogate escape: the log is read value by value, the column holds Python objects, and the
    cast in timinglog.validate raised polars' ComputeError ('cannot cast Object type'), which only
    InvalidOperationError was expected as: the catch-all."""
    src = Path(__file__).resolve().parents[1] / "sample_reports/claims/logs/softmax/naive/cols-1024_dtype-float32_rows-1024.run2.jsonl"
    lines = src.read_text().splitlines()
    for i, v in ((3, float("nan")), (5, "\ud800")):
        o = json.loads(lines[i])
        o["cache_state"] = v
        lines[i] = json.dumps(o)
    f = tmp_path / "log.jsonl"
    f.write_text("\n".join(lines) + "\n")
    _refused(f, "column cache_state mixes value types (float, str); expected String")


def test_export_trace_of_a_transfer_of_infinite_bytes(tmp_path, cli):
    """s14 run 3, nsys-sqlite #976: a memcpy's byte count of inf loaded, then `export-trace` died
    writing it (json: 'Out of range float values are not JSON compliant', exit 3). JSON has no
    infinity: the value is written as null."""
    from tests.test_fuzz_regressions import _rich_db_with

    db = _rich_db_with(tmp_path / "r.sqlite", "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = 9e999 WHERE rowid = 1")
    out = tmp_path / "t.json"
    res = cli("export-trace", str(db), "-o", str(out))
    assert res.code == 0, res.err
    doc = json.loads(out.read_text())
    copies = [e for e in doc["traceEvents"] if "bytes" in e.get("args", {})]
    assert copies and any(e["args"]["bytes"] is None for e in copies)


@pytest.mark.parametrize("value", [[[[1]]], "100", {"a": 1}, True, 2**64], ids=["nested-list", "text", "object", "bool", "over-64-bit"])
def test_rocprof_sdk_copy_time_of_the_wrong_type_is_unknown(tmp_path, value):
    """s14 final run, rocprof-sdk-json #2134: a memory copy whose start_timestamp was nested 50 deep
    in lists loaded, and the transfers table's start_ns came out a list column (the schema check
    after the load failed). A time that is not a 64-bit integer is now unknown (null), as for kernel
    dispatches, and the column keeps its type."""
    import polars as pl

    import profaudit
    from tests.fuzz.downstream import schema_problem
    from tests.test_chrome_trace import _sdk_doc

    doc = _sdk_doc()
    copies = doc["rocprofiler-sdk-tool"][0]["buffer_records"]["memory_copy"]
    assert copies, "the fixture has memory copies"
    copies[0]["start_timestamp"] = value
    f = tmp_path / "results.json"
    f.write_text(json.dumps(doc))
    ps = profaudit.load(f, parallel=False)
    T = ps.table("transfers")
    assert T.schema["start_ns"] == pl.Int64 and T.schema["end_ns"] == pl.Int64
    assert T["start_ns"].null_count() == 1 and T["duration_ns"].null_count() == 1
    assert schema_problem(ps) is None
