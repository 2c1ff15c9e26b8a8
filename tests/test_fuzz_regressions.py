"""Regression tests for what fuzzing found (tools/fuzz_long.py, tests/fuzz/): each input is the
smallest form of a reproducer. Wrong JSON types and out-of-range numbers are one deliberate line
naming the field (never the loader's catch-all); text cut inside its last line and nsys exports
missing what names or holds their kernels are never presented as whole."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

import profaudit
from profaudit.errors import InputError
from profaudit.loader import UnexpectedReadError, read_one
from tests import nsys_synth
from tests.conftest import assert_one_line_error


def _refused(path, needle: str) -> str:
    with pytest.raises(InputError) as ei:
        read_one(path)
    assert not isinstance(ei.value, UnexpectedReadError), ei.value
    assert needle in str(ei.value), str(ei.value)
    return str(ei.value)


def _rich_db_with(path, *sql: str):
    """The synthetic rich nsys export with `sql` applied (a damaged or trimmed export)."""
    db = nsys_synth.rich_db(path)
    con = sqlite3.connect(db)
    for q in sql:
        con.execute(q)
    con.commit()
    con.close()
    return db


def _gbench(**run) -> dict:
    base = {"name": "BM_x/8", "run_name": "BM_x/8", "run_type": "iteration", "iterations": 10, "real_time": 1.5,
            "cpu_time": 1.5, "time_unit": "ns"}
    return {"context": {"date": "2024-01-01", "num_cpus": 8}, "benchmarks": [{**base, **run}]}


@pytest.mark.parametrize("field, value, needle", [
    ("run_name", [[["BM_x"]]], "benchmark 'BM_x/8': run_name: expected text, found a list"),
    ("time_unit", {"": None}, "benchmark 'BM_x/8': time_unit: expected text, found an object"),
])
def test_gbench_wrong_json_types(tmp_path, field, value, needle):
    f = tmp_path / "bench.json"
    f.write_text(json.dumps(_gbench(**{field: value})))
    _refused(f, needle)


def test_kernelbench_hardware_not_text(tmp_path):
    f = tmp_path / "baseline_time_torch.json"
    doc = {"level1": {"1_Square_matrix_multiplication_.py": {"mean": 1.0, "std": 0.1, "min": 0.9, "max": 1.2, "num_trials": 10,
                                                                "hardware": [["L40S"]], "device": "cuda:0"}}}
    f.write_text(json.dumps(doc))
    _refused(f, "hardware: expected text, found a list")


@pytest.mark.parametrize("bad, needle", [("x", "expected a number, found the text 'x'"), ([], "expected a number, found a list"),
                                         ("\ud800", "expected a number")])
def test_pytest_benchmark_sample_not_a_number(tmp_path, bad, needle):
    f = tmp_path / "0001_run.json"
    doc = {"machine_info": {}, "commit_info": {}, "benchmarks": [{"name": "test_a", "fullname": "t.py::test_a", "params": None,
           "stats": {"min": 1e-6, "max": 2e-6, "mean": 1.5e-6, "rounds": 3, "iterations": 1, "data": [1e-6, bad, 2e-6]}}]}
    f.write_text(json.dumps(doc))
    msg = _refused(f, needle)
    assert "benchmark 'test_a': stats.data[1]" in msg


@pytest.mark.parametrize("spec, needle", [
    (18446744073709551616, "measurement 0: task_spec: expected a JSON object, found the number"),
    ([1, 2], "measurement 0: task_spec: expected a JSON object, found a list"),
    ({"label": [[]], "stmt": "x"}, "measurement 0: task_spec.label: expected text, found a list"),
])
def test_torch_benchmark_task_spec_types(tmp_path, spec, needle):
    f = tmp_path / "measurements.json"
    f.write_text(json.dumps([{"number_per_run": 10, "raw_times": [1e-4, 2e-4], "task_spec": spec, "metadata": None}]))
    _refused(f, needle)


def test_nvprof_summary_count_beyond_64_bits(tmp_path):
    from tests.test_nvprof_csv import SUMMARY_UNIT_CELLS

    f = tmp_path / "summary.csv"
    f.write_text(SUMMARY_UNIT_CELLS.replace("135.87us,1,135.87us", "135.87us,9223372036854775808,135.87us"))
    _refused(f, "summary row 'summator_29_gpu': Calls: the integer 9223372036854775808 is out of range")


def test_neuron_json_duration_beyond_int64_is_an_unknown_end(tmp_path):
    from tests.test_neuron import _device_json

    doc = _device_json()
    doc["instruction"][1]["duration"] = 1e308
    f = tmp_path / "profile.json"
    f.write_text(json.dumps(doc))
    k = next(iter(profaudit.load(f))).kernels.sort("start_ns")
    assert k["end_ns"].null_count() == 1  # no wrapped-around end time
    assert k.height == len(doc["instruction"])


# ---------------------------------------------------------------------------- completeness
def test_text_cut_inside_its_last_line_loads_as_incomplete(tmp_path, cli):
    f = tmp_path / "times.csv"
    f.write_text("name,time_ms\nk1,1.5\nk2,2.25\n"[:-3])  # "k2,2." : the last number is cut
    p = next(iter(profaudit.load(f)))
    assert p.metadata["complete"] is False
    assert "the last line has no line end" in p.metadata["incomplete_reason"]
    res = cli("kernels", "-t", "samples", f)
    assert res.code == 0
    assert "warning: " in res.err and "loaded as incomplete: the last line has no line end" in res.err
    # the same file whole: no fact, no warning
    g = tmp_path / "whole.csv"
    g.write_text("name,time_ms\nk1,1.5\nk2,2.25\n")
    assert "complete" not in next(iter(profaudit.load(g))).metadata
    assert "incomplete" not in cli("kernels", "-t", "samples", g).err


def test_json_document_without_final_newline_is_whole(tmp_path):
    f = tmp_path / "bench.json"
    f.write_text(json.dumps(_gbench()))  # no newline after the closing brace
    assert "complete" not in next(iter(profaudit.load(f))).metadata


def test_nsys_export_without_string_ids_is_refused(tmp_path, cli):
    db = nsys_synth.rich_db(tmp_path / "rich.sqlite")
    con = sqlite3.connect(db)
    con.execute("DROP TABLE StringIds")
    con.commit()
    con.close()
    res = cli("kernels", db)
    assert_one_line_error(res, "incomplete Nsight Systems export: CUPTI_ACTIVITY_KIND_KERNEL is present but the StringIds table")


def test_nsys_export_without_kernel_table_but_with_launches(tmp_path):
    db = _rich_db_with(tmp_path / "rich.sqlite", "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL")
    p = next(iter(profaudit.load(db)))
    assert p.metadata["complete"] is False
    assert "no CUDA kernel table although the CUDA API trace has" in p.metadata["incomplete_reason"]
    whole = next(iter(profaudit.load(nsys_synth.rich_db(tmp_path / "whole.sqlite"))))
    assert "complete" not in whole.metadata and whole.kernels.height > 0


def test_kernelbench_numbers_out_of_range_and_flags_as_names(tmp_path):
    f = tmp_path / "baseline_time_torch.json"
    ok = {"mean": 1.0, "std": 0.1, "min": 0.9, "max": 1.2, "num_trials": 10, "hardware": "L40S", "device": "cuda:0"}
    f.write_text(json.dumps({"level1": {"1_a.py": {**ok, "std": 10**400}}}))
    _refused(f, "level1/1_a: std: the number 100000000000000000000000000000 is out of range")
    f.write_text(json.dumps({"level1": {"1_a.py": {**ok, "hardware": True}}}))
    _refused(f, "level1/1_a: hardware: expected text, found a boolean")


def test_lone_surrogate_text_is_refused(tmp_path):
    f = tmp_path / "bench.json"
    f.write_text(json.dumps(_gbench(run_name="\ud800")))
    _refused(f, "run_name: not valid Unicode text")


def test_proton_frame_without_a_name(tmp_path):
    f = tmp_path / "p.hatchet"
    tree = {"frame": {"name": "ROOT"}, "metrics": {}, "children": [
        {"frame": {"name": "kernel_a"}, "metrics": {"time (ns)": 1000, "count": 2, "device_id": "0", "device_type": "CUDA"}, "children": []},
        {"frame": None, "metrics": {"time (ns)": 5}, "children": []}]}
    f.write_text(json.dumps([tree, {}]))
    _refused(f, "Proton call tree under the root: frame.name: expected text, found null")


def test_neuron_json_list_where_a_name_belongs(tmp_path):
    from tests.test_neuron import _device_json

    doc = _device_json()
    doc["dma"][0]["queue_name"] = ["q0"]
    f = tmp_path / "profile.json"
    f.write_text(json.dumps(doc))
    p = next(iter(profaudit.load(f)))  # kept as its JSON text, not a cast failure
    assert p.kernels.height == len(doc["instruction"])


def test_nvprof_cut_in_or_after_its_header(tmp_path, cli):
    from tests.test_nvprof_csv import TRACE_WITH_API

    lines = TRACE_WITH_API.splitlines(keepends=True)
    f = tmp_path / "trace.csv"
    f.write_text("".join(lines[:3]))  # banner, header, units row: no rows
    assert_one_line_error(cli("kernels", f), "truncated nvprof output: the trace table at line 2 has a header and no rows")
    f.write_text("".join(lines[:2]) + lines[2][:5])  # cut inside the units row: a row too short
    assert_one_line_error(cli("kernels", f), "malformed nvprof trace (line 2)")


def test_lone_surrogate_anywhere_is_a_deliberate_line(tmp_path):
    f = tmp_path / "bench.json"
    doc = _gbench()
    doc["benchmarks"][0].pop("run_name")
    doc["benchmarks"][0]["name"] = "BM_\ud800"
    f.write_text(json.dumps(doc))
    _refused(f, "holds text that is not valid Unicode: a lone surrogate")


def test_gbench_repetition_index_not_an_integer(tmp_path):
    f = tmp_path / "bench.json"
    f.write_text(json.dumps(_gbench(repetition_index="1")))
    _refused(f, "benchmark 'BM_x/8': repetition_index: expected an integer, found the text '1'")


def test_pytest_benchmark_entry_not_an_object(tmp_path):
    f = tmp_path / "0001_run.json"
    good = {"name": "test_a", "fullname": "t.py::test_a", "params": None, "stats": {"min": 1e-6, "max": 2e-6, "mean": 1.5e-6,
            "rounds": 2, "iterations": 1, "data": [1e-6, 2e-6]}}
    f.write_text(json.dumps({"machine_info": {}, "commit_info": {}, "benchmarks": [good, 1e308]}))
    _refused(f, "benchmarks[1]: expected a JSON object, found the number 1e+308")


def test_nsys_string_ids_with_a_repeated_id(tmp_path):
    db = nsys_synth.rich_db(tmp_path / "rich.sqlite")
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE s2 AS SELECT * FROM StringIds")
    con.execute("DROP TABLE StringIds")
    con.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")  # the key constraint lost with the damage
    con.execute("INSERT INTO StringIds SELECT * FROM s2")
    con.execute("INSERT INTO StringIds VALUES (1, 'other')")
    con.commit()
    con.close()
    _refused(db, "damaged SQLite database: StringIds holds id 1 more than once")


def _trace(events) -> dict:
    return {"traceEvents": [{"ph": "X", "name": "op", "cat": "cpu_op", "pid": 1, "tid": 2, "ts": 10 + i, "dur": 1} for i in range(4)] + events}


def test_chrome_trace_pid_that_is_an_object(tmp_path):
    f = tmp_path / "trace.json"
    f.write_text(json.dumps(_trace([{"ph": "X", "name": "op2", "cat": "cpu_op", "pid": {"": None}, "tid": 2, "ts": 30, "dur": 2}])))
    p = next(iter(profaudit.load(f)))  # a text id like any other, not a missing column
    assert p.ranges.height == 5


def test_chrome_trace_numbers_beyond_64_bits(tmp_path):
    f = tmp_path / "trace.json"
    f.write_text(json.dumps(_trace([{"ph": "X", "name": "op2", "cat": "cpu_op", "pid": 1, "tid": 2, "ts": "1" + "0" * 60, "dur": 2}])))
    _refused(f, "beyond the 64-bit nanosecond range")


@pytest.mark.parametrize("ts", ["9" * 1_000_001, "1e999999", "-" + "7" * 1_000_001])
def test_chrome_trace_number_text_past_decimals_exponent(tmp_path, ts):
    """fuzz_long s19 final run, seed 2042, chrome-trace #3056: a 'ts' of a million digits in text
    went to Decimal, whose product passed the context's exponent: decimal.Overflow reached the
    catch-all. It is beyond the range like any other number too big for 64-bit nanoseconds."""
    f = tmp_path / "trace.json"
    f.write_text(json.dumps(_trace([{"ph": "X", "name": "op2", "cat": "cpu_op", "pid": 1, "tid": 2, "ts": ts, "dur": 2}])))
    _refused(f, "beyond the 64-bit nanosecond range")
    g = tmp_path / "trace2.json"
    g.write_text(json.dumps(_trace([{"ph": "X", "name": "k", "cat": "kernel", "pid": 0, "tid": 7, "ts": 31, "dur": 2,
                                     "args": {"grid": [10**30, 1, 1], "block": [128, 1, 1]}}])))
    p = next(iter(profaudit.load(g)))
    assert p.kernels.height == 1 and p.kernels["grid_x"][0] is None


@pytest.mark.corpus
@pytest.mark.slow
def test_rocprof_sdk_record_of_the_wrong_type(tmp_path):
    import gzip

    from tests.conftest import corpus_file

    src = corpus_file("chrome-trace", "rocprof_908_results")
    doc = json.loads(gzip.decompress(src.read_bytes()))
    doc["rocprofiler-sdk-tool"][0]["buffer_records"]["kernel_dispatch"][3]["dispatch_info"] = [1, 2]
    f = tmp_path / "results.json"
    f.write_text(json.dumps(doc))
    _refused(f, "damaged rocprofiler-sdk JSON: a record holds a value of the wrong JSON type")


def test_nsys_session_start_that_is_not_a_count(tmp_path):
    db = nsys_synth.rich_db(tmp_path / "rich.sqlite")
    con = sqlite3.connect(db)
    con.execute("UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = ?", (b"\x00\xff",))
    con.commit()
    con.close()
    _refused(db, "damaged SQLite database: TARGET_INFO_SESSION_START_TIME.utcEpochNs holds b'\\x00\\xff'")


def test_proton_clock_rate_beyond_float(tmp_path):
    f = tmp_path / "p.hatchet"
    tree = {"frame": {"name": "ROOT"}, "metrics": {}, "children": [
        {"frame": {"name": "kernel_a"}, "metrics": {"time (ns)": 1000, "count": 2, "device_id": "0", "device_type": "HIP"}, "children": []}]}
    f.write_text(json.dumps([tree, {"HIP": {"0": {"arch": "gfx942", "memory_clock_rate": 10**400}}}]))
    _refused(f, "device HIP/0: memory_clock_rate: the number")


def _dataset(tmp_path):
    from profaudit.dataset import write_dataset

    log = tmp_path / "times.csv"
    log.write_text("name,time_ms\nk1,1.5\nk2,2.5\n")
    return write_dataset(profaudit.load(log), tmp_path / "ds")


def test_dataset_manifest_path_that_is_a_number(tmp_path):
    ds = _dataset(tmp_path)
    man = next((ds / "_manifests").glob("*.json"))
    doc = json.loads(man.read_text())
    doc["files"][0]["path"] = -1
    man.write_text(json.dumps(doc))
    _refused(ds, "broken batch manifest: files[0].path: expected text, found the number -1")


def test_dataset_part_with_a_damaged_column_name(tmp_path):
    import polars as pl

    ds = _dataset(tmp_path)
    part = next(ds.glob("metadata/**/*.parquet"))
    df = pl.read_parquet(part)
    df.rename({"kernel_count": "kernel_c\x7f\x7fnt"}).write_parquet(part)
    # named per part since 80be938: "part file does not hold the 'metadata' table its manifest says: ..."
    _refused(ds, "table its manifest says: table 'metadata' has no column(s)")


def test_asv_date_out_of_range(tmp_path):
    from tests.test_asv import RESULTS, _tree

    f = _tree(tmp_path, results={**RESULTS, "date": -(2**63) - 1})
    _refused(f, "date: -9223372036854775809 is not a time in ms since 1970")


@pytest.mark.corpus
def test_ncu_rep_bit_flip_in_a_metric_name(tmp_path, cli):
    """A flipped bit inside a metric name: ncu_report hands back a name its own lookup refuses."""
    from tests.conftest import corpus_file

    data = bytearray(corpus_file("ncu-rep", "seq_align").read_bytes())
    assert data[186922] == 0x5F  # the '_' of a metric name
    data[186922] = 0xDF
    f = tmp_path / "flipped.ncu-rep"
    f.write_bytes(bytes(data))
    assert_one_line_error(cli("kernels", f), "corrupt Nsight Compute report: the reader returned an unreadable metric name")


def test_torch_benchmark_raw_time_beyond_float(tmp_path):
    f = tmp_path / "measurements.json"
    spec = {"stmt": "x", "label": "l", "description": "d", "num_threads": 1}
    f.write_text(json.dumps([{"number_per_run": 10, "raw_times": [1e-4, 10**400], "task_spec": spec, "metadata": None}]))
    _refused(f, "measurement 0: raw_times[1]: the number")


def test_nvbench_csv_with_a_carriage_return_inside_a_field(tmp_path):
    f = tmp_path / "bench.csv"
    f.write_text("Benchmark,Device,Device Name,State,GPU Time (sec)\nb,0,GPU,s\r x,1e-3\n", newline="")
    _refused(f, "malformed nvbench CSV: new-line character seen in unquoted field")


def test_nvprof_id_beyond_int64_is_unknown(tmp_path):
    from tests.test_nvprof_csv import TRACE_WITH_API

    f = tmp_path / "trace.csv"
    f.write_text(TRACE_WITH_API.replace(',"1","7","volta_sgemm_128x64_nn",280', ',"1","7","volta_sgemm_128x64_nn",9223372036854775807000'))
    k = next(iter(profaudit.load(f))).kernels
    assert k.height == 1 and k["correlation_id"][0] is None


@pytest.mark.corpus
@pytest.mark.parametrize("cell", ["-1e309", "1e400", "99999999999999999999999"])
def test_ncu_csv_id_cells_no_id_can_hold(tmp_path, cell):
    """The issue's `cannot read as ncu-csv: OverflowError: cannot convert float infinity to integer`."""
    import csv
    import io

    from tests.conftest import corpus_file

    rows = list(csv.reader(io.StringIO(corpus_file("ncu-csv", "copy_blocked").read_text())))
    col = rows[0].index("Process ID")
    for r in rows[1:]:
        r[col] = cell
    out = io.StringIO()
    csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL).writerows(rows)
    f = tmp_path / "details.csv"
    f.write_text(out.getvalue())
    k = next(iter(profaudit.load(f))).kernels
    assert k.height > 0 and k["process_id"].null_count() == k.height


def test_torch_benchmark_null_raw_time(tmp_path):
    f = tmp_path / "measurements.json"
    spec = {"stmt": "x", "label": "l", "description": "d", "num_threads": 1}
    f.write_text(json.dumps([{"number_per_run": 10, "raw_times": [1e-4, None], "task_spec": spec, "metadata": None}]))
    _refused(f, "measurement 0: raw_times[1]: expected a number, found null")


def test_gbench_time_beyond_float_is_no_time(tmp_path):
    f = tmp_path / "bench.json"
    doc = _gbench()
    doc["benchmarks"].append({**doc["benchmarks"][0], "name": "BM_y", "run_name": "BM_y", "real_time": 10**400, "cpu_time": 10**400})
    f.write_text(json.dumps(doc))
    s = next(iter(profaudit.load(f))).samples
    assert set(s["benchmark"].to_list()) == {"BM_x"}


def test_chrome_trace_timestamp_beyond_64_bit_ns_is_unknown(tmp_path):
    f = tmp_path / "trace.json"
    f.write_text(json.dumps(_trace([{"ph": "X", "name": "op2", "cat": "cpu_op", "pid": 1, "tid": 2, "ts": 1e308, "dur": 2}])))
    p = next(iter(profaudit.load(f)))  # loads; that event has no time instead of failing a cast
    assert p.ranges.height >= 4


def test_metadata_text_with_a_lone_surrogate(tmp_path):
    f = tmp_path / "0001_run.json"
    good = {"name": "test_a", "fullname": "t.py::test_a", "params": None, "stats": {"min": 1e-6, "max": 2e-6, "mean": 1.5e-6,
            "rounds": 2, "iterations": 1, "data": [1e-6, 2e-6]}}
    f.write_text(json.dumps({"machine_info": {"node": "\ud800"}, "commit_info": {}, "benchmarks": [good]}))
    try:
        ps = profaudit.load(f)
    except InputError as exc:  # refused deliberately is fine too
        assert not isinstance(exc, UnexpectedReadError)
        return
    assert ps.metadata.height == 1  # building the table does not fail


def test_pytest_benchmark_machine_info_not_an_object(tmp_path):
    f = tmp_path / "0001_run.json"
    good = {"name": "test_a", "fullname": "t.py::test_a", "params": None, "stats": {"min": 1e-6, "max": 2e-6, "mean": 1.5e-6,
            "rounds": 2, "iterations": 1, "data": [1e-6, 2e-6]}}
    f.write_text(json.dumps({"machine_info": "x", "commit_info": {}, "benchmarks": [good]}))
    _refused(f, "machine_info: expected a JSON object, found the text 'x'")


@pytest.mark.parametrize("value", [2**64, 1e308])
def test_neuron_json_nc_idx_beyond_64_bits(tmp_path, cli, value):
    from tests.test_neuron import _device_json

    doc = _device_json()
    doc["summary"][0]["nc_idx"] = value
    f = tmp_path / "profile.json"
    f.write_text(json.dumps(doc))
    _refused(f, "summary nc_idx: ")
    assert_one_line_error(cli("kernels", f), "summary nc_idx: ")


@pytest.mark.parametrize("sql, args, needle", [
    ("UPDATE PROCESSES SET pid = ?", (1e308,), "PROCESSES.pid holds 1e+308 where an integer id belongs"),
    ("ALTER TABLE TARGET_INFO_GPU RENAME COLUMN id TO deviceId", (), None),
])
def test_nsys_ids_no_id_column_can_hold(tmp_path, cli, sql, args, needle):
    db = nsys_synth.rich_db(tmp_path / "rich.sqlite")
    con = sqlite3.connect(db)
    con.execute(sql, args)
    if needle is None:  # older exports name the GPU's id deviceId; there it is stored as bytes
        con.execute("UPDATE TARGET_INFO_GPU SET deviceId = ?", (b"\x00\x01",))
        needle = "TARGET_INFO_GPU.deviceId holds b'\\x00\\x01' where an integer id belongs"
    con.commit()
    con.close()
    _refused(db, needle)
    assert_one_line_error(cli("kernels", db), needle)


@pytest.mark.parametrize("perf_version, value, needle", [
    ("1" + "0" * 400, "0.02", "metadata perf_version: expected text, found the number 10000000000000000000... (401 digits)"),
    ('"2.1"', "1" + "0" * 400, "benchmark 'telco': run 0 value 1: the number 1000"),
    ('"2.1"', "1e400", "benchmark 'telco': run 0 value 1: expected a finite number"),
])
def test_pyperf_numbers_beyond_range(tmp_path, cli, perf_version, value, needle):
    f = tmp_path / "bench.json"
    f.write_text('{"version": "1.0", "metadata": {"name": "telco", "loops": 8, "perf_version": %s}, "benchmarks": '
                 '[{"runs": [{"warmups": [[8, 0.023]], "values": [0.0221, %s, 0.0224]}]}]}' % (perf_version, value))
    _refused(f, needle)
    assert_one_line_error(cli("kernels", "-t", "samples", f), needle)


@pytest.mark.parametrize("bad, needle", [("1" + "0" * 400, "benchmark 'test_a': stats.stddev: the number 1000"),
                                         ("1e400", "benchmark 'test_a': stats.stddev: expected a finite number"),
                                         ("1" + "0" * 30, "benchmark 'test_a': stats.rounds: the integer 1000")])
def test_pytest_benchmark_stat_beyond_range(tmp_path, cli, bad, needle):
    f = tmp_path / "0001_run.json"
    stddev, rounds = (bad, "2") if "stddev" in needle else ("1e-7", bad)
    f.write_text('{"machine_info": {}, "commit_info": {}, "benchmarks": [{"name": "test_a", "fullname": "t.py::test_a", "params": null, '
                 '"stats": {"min": 1e-6, "max": 2e-6, "mean": 1.5e-6, "stddev": %s, "rounds": %s, "iterations": 1, "data": [1e-6, 2e-6]}}]}'
                 % (stddev, rounds))
    _refused(f, needle)
    assert_one_line_error(cli("kernels", "-t", "samples", f), needle)


@pytest.mark.parametrize("deep", ["[" * 1500 + "1" + "]" * 1500, '{"a": ' * 1500 + "1" + "}" * 1500])
def test_rocprof_sdk_nested_too_deep_is_refused_before_parsing(tmp_path, cli, deep):
    f = tmp_path / "results.json"
    f.write_text('{"rocprofiler-sdk-tool": [{"metadata": {"pid": 1}, "agents": [], "strings": {"s": "[[[[\\"{{"}, '
                 '"buffer_records": {"kernel_dispatch": [%s]}}]}' % deep)
    _refused(f, "damaged rocprofiler-sdk JSON: nested more than 64 deep")
    assert_one_line_error(cli("kernels", f), "nested more than 64 deep")


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 4096])
def test_json_depth_scan_skips_strings_and_escapes(chunk):
    from profaudit.parsers.jsonshape import max_depth

    doc = {"a": ["[[{\\\"", {"b\\\\": [[1, "]]}}\\\\\""]], "c": []}], "d": "\\"}
    text = json.dumps(doc).encode()
    assert max_depth([text[i:i + chunk] for i in range(0, len(text), chunk)], 100) == 5  # { [ { [ [


@pytest.mark.corpus
def test_xplane_cut_before_its_hostname_loads_as_incomplete(tmp_path, cli):
    """A cut at a top-level field boundary leaves a well-formed XSpace: the missing hostname (written last) shows it."""
    from tests.conftest import corpus_file

    data = corpus_file("xplane", "jax08_attention").read_bytes()
    assert data[-7:-5] == b"\x22\x05"  # XSpace.hostnames, 5 bytes, the last field
    f = tmp_path / "cut.xplane.pb"
    for cut in (7, 3):  # at the field boundary (well-formed); inside the hostname (a length past the end)
        f.write_bytes(data[:-cut])
        if cut == 7:
            p = next(iter(profaudit.load(f)))
            assert p.metadata["complete"] is False and p.kernels.height > 0
            assert "the XSpace ends without the hostname the profiler writes last" in cli("kernels", f).err
        else:
            assert_one_line_error(cli("kernels", f), "corrupt or truncated XSpace protobuf")
    whole = tmp_path / "whole.xplane.pb"
    whole.write_bytes(data)
    assert "complete" not in next(iter(profaudit.load(whole))).metadata


def test_proton_time_beyond_float_range(tmp_path, cli):
    # an integer time no float can hold (10**400) was the loader's catch-all "OverflowError" line
    tree = [{"frame": {"name": "ROOT"}, "metrics": {}, "children": [
        {"frame": {"name": "k"}, "metrics": {"Time (ns)": 10**400, "Count": 1, "DeviceId": "0", "DeviceType": 1}, "children": []}]}]
    f = tmp_path / "p.hatchet"
    f.write_text(json.dumps(tree))
    assert_one_line_error(cli("kernels", f), "Proton kernel k: Time (ns): the number 1000")


# ------------------------------------------------------- session 12: the formats fuzzed first now
@pytest.mark.parametrize("suffix", ["sqlite", "db"])
def test_sqlite_schema_bytes_not_utf8(tmp_path, cli, suffix):
    # SQLite's "malformed database schema ... near '\xff\xff'" message quotes the damaged bytes,
    # which the sqlite3 module could not decode: a UnicodeDecodeError out of the sniff, before any
    # parser was chosen
    f = tmp_path / f"damaged.{suffix}"
    con = sqlite3.connect(f)
    con.execute("CREATE TABLE StringIds(id INTEGER, value TEXT)")
    con.execute("PRAGMA writable_schema=ON")
    bad = b"CREATE TABLE StringIds(id INTEGER, value TEXT) \xff\xff".hex()
    con.execute(f"UPDATE sqlite_master SET sql = CAST(X'{bad}' AS TEXT) WHERE name = 'StringIds'")
    con.commit()
    con.close()
    _refused(f, "damaged SQLite database: its schema holds bytes that are not UTF-8")
    assert_one_line_error(cli("kernels", f), "its schema holds bytes that are not UTF-8")


@pytest.mark.parametrize("context, needle", [
    ("1e309", "context: expected a JSON object, found the text '1e309'"),
    ([{"date": "x"}], "context: expected a JSON object, found a list"),
])
def test_gbench_context_of_the_wrong_type(tmp_path, context, needle):
    f = tmp_path / "bench.json"
    f.write_text(json.dumps({**_gbench(), "context": context}))
    _refused(f, needle)


def test_rocprof_sdk_operations_not_a_list(tmp_path):
    from tests.test_chrome_trace import _sdk_doc

    doc = _sdk_doc()
    kinds = doc["rocprofiler-sdk-tool"][0]["strings"]["buffer_records"]
    kinds[10] = {"kind": kinds[10]["kind"], "operations": {str(i): op for i, op in enumerate(kinds[10]["operations"])}}
    f = tmp_path / "results.json"
    f.write_text(json.dumps(doc))
    _refused(f, "strings.buffer_records[10].operations: expected a list, found an object")
    # an operation number past the list, or a name that is no text, leaves that name unknown
    doc = _sdk_doc()
    doc["rocprofiler-sdk-tool"][0]["strings"]["buffer_records"][5]["operations"][1] = 7
    f.write_text(json.dumps(doc))
    r = profaudit.load(f).ranges
    assert None in r["name"].to_list() and "my-region" in r["name"].to_list()


def test_table_header_with_a_stray_quote(tmp_path, cli):
    # a quote inserted in a header runs names together ('Grid_Siz"e_X",...'): polars then named
    # two columns ' 1' and '1', and trimming blanks made them collide (polars DuplicateError)
    from tests.test_rocprofv3_csv import make_output

    src = next(make_output(tmp_path / "run").glob("*_kernel_trace.csv"))
    f = tmp_path / src.name  # alone, without agent_info.csv beside it: the generic table reads it
    f.write_bytes(src.read_bytes().replace(b'"Grid_Size_X"', b'"Grid_Siz"e_X"', 1))  # csv.writer's \r\n kept
    _refused(f, "malformed table: two columns are named '1' (blanks aside)")
    assert_one_line_error(cli("kernels", f), "check the header line's quotes")


@pytest.mark.parametrize("value", ["18446744073709551616", 2**64, -(2**70), 1e300])
def test_kineto_comm_arg_beyond_64_bits(tmp_path, value):
    # was a null without a word: polars' non-strict frame turned the too-large integer into null
    from profaudit.parsers.kineto_comms import read_comm_args

    ev = {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
          "args": {"Collective name": "allreduce", "In msg nelems": value, "Out msg nelems": 4, "dtype": "Float", "Group size": 2}}
    f = tmp_path / "rank0.pt.trace.json"
    f.write_text(json.dumps({"traceEvents": [ev]}))
    with pytest.raises(InputError, match=r"collective arguments: In msg nelems: the integer -?\d+ is out of range \(beyond 64 bits\)"):
        read_comm_args(f)
    # text that is no integer at all stays an unknown value (PyTorch versions differ in what they write)
    ev["args"]["In msg nelems"] = "n/a"
    f.write_text(json.dumps({"traceEvents": [ev]}))
    df = read_comm_args(f)
    assert df["in_msg_nelems"].to_list() == [None] and df["out_msg_nelems"].to_list() == [4]


# -------------------------------------------------- Rust panics: one line from any parser
PANIC_PARQUET = Path(__file__).parent / "fuzz_reproducers" / "neuron_instruction_panic_offset.parquet"


def test_a_polars_panic_in_any_parser_is_one_line(tmp_path, cli, capfd, monkeypatch):
    """A real polars panic (a damaged Parquet page that makes its decoder panic) raised inside a
    parser that does not guard itself: one line, and nothing from Rust's panic hook on fd 2."""
    import polars as pl

    from profaudit.parsers import google_benchmark

    say = ["warning: before the panic"]

    def reads_damaged_parquet(path, options):
        for line in say:
            print(line, file=sys.stderr)
        return pl.read_parquet(PANIC_PARQUET)

    monkeypatch.setattr(google_benchmark.PARSER, "read", reads_damaged_parquet)
    f = tmp_path / "bench.json"
    f.write_text(json.dumps(_gbench()))
    capfd.readouterr()
    with pytest.raises(InputError, match="damaged data: the native decoder failed while reading as google-benchmark"):
        read_one(f)
    err = capfd.readouterr().err
    assert "panicked" not in err and "RUST_BACKTRACE" not in err, err
    assert "warning: before the panic" in err  # the parser's own output is kept
    say.clear()
    res = cli("kernels", f)
    assert_one_line_error(res, "the native decoder failed")
    assert "panicked" not in capfd.readouterr().err


@pytest.mark.parametrize("text, kept", [
    (b"warn a\nthread '<unnamed>' panicked at src/x.rs:1:2:\nindex out of bounds\nnote: run with `RUST_BACKTRACE=1` environment"
     b" variable to display a backtrace\nwarn b\n", b"warn a\nwarn b\n"),
    (b"thread 'async-executor-0' (6244) panicked at a.rs:3:4:\nboom\nstack backtrace:\n   0: x\nnote: Some details are omitted, run with"
     b" `RUST_BACKTRACE=full` for a verbose backtrace.\nafter\n", b"after\n"),
    (b"thread 'main' panicked at a.rs:3:4:\nboom\nstack backtrace:\n   0: x\n", b""),  # RUST_BACKTRACE=full: no closing note
    (b"nothing panicked at all\n", b"nothing panicked at all\n"),
])
def test_strip_panic_reports(text, kept):
    from profaudit.panic_stderr import strip_panic_reports

    assert strip_panic_reports(text) == kept


def test_metadata_text_field_holding_an_integer_beyond_64_bits(tmp_path):
    # pytest-benchmark's machine_info.node became the host column: 2**63 there failed building
    # ps.metadata (polars ComputeError) after a clean load
    f = tmp_path / "0001_run.json"
    doc = {"machine_info": {"node": 2**63}, "commit_info": {}, "benchmarks": [{"name": "test_a", "fullname": "t.py::test_a", "params": None,
           "stats": {"min": 1e-6, "max": 2e-6, "mean": 1.5e-6, "rounds": 3, "iterations": 1, "data": [1e-6, 1.5e-6, 2e-6]}}]}
    f.write_text(json.dumps(doc))
    md = profaudit.load(f).metadata
    assert md["host"].to_list() == [None]
    assert json.loads(md["extra_json"][0])["host"] == 2**63  # kept whole where it can be held


@pytest.mark.parametrize("sql, check", [
    # a range never ending before the last Int64 nanosecond: nesting filled null ends with max + 1,
    # which made the column Int128 (polars SchemaError)
    ("UPDATE NVTX_EVENTS SET \"end\" = 9223372036854775807 WHERE rowid = 3", lambda ps: 9223372036854775807 in ps.ranges["end_ns"].to_list()),
    # a process name stored as a BLOB, a metric id stored as text or bytes: polars' row builder
    # raised on the odd cell; now it is an unknown value, as everywhere else in an export
    ("UPDATE PROCESSES SET name = X'00ff' WHERE rowid = 1", lambda ps: ps.kernels.height > 0),
    ("UPDATE TARGET_INFO_GPU_METRICS SET metricId = 'text' WHERE metricId = 0",
     lambda ps: "GPC Clock Frequency [MHz]" not in ps.counters["raw_name"].to_list() and "metric 0" in ps.counters["raw_name"].to_list()),
    ("UPDATE TARGET_INFO_GPU_METRICS SET metricId = X'00ff' WHERE metricId = 1", lambda ps: "metric 1" in ps.counters["raw_name"].to_list()),
])
def test_nsys_odd_cells_in_lookup_tables(tmp_path, sql, check):
    ps = profaudit.load(_rich_db_with(tmp_path / "rich.sqlite", sql))
    ps.metadata  # noqa: B018 - builds
    assert check(ps)


def test_asv_machine_name_an_integer_beyond_64_bits(tmp_path):
    # params.machine became the host column: 2**64 there failed building ps.metadata
    from tests.test_asv import RESULTS, _tree

    results = json.loads(json.dumps(RESULTS))
    results["params"]["machine"] = 2**64
    md = profaudit.load(_tree(tmp_path, results=results)).metadata
    assert md["host"].to_list() == [None] and json.loads(md["extra_json"][0])["host"] == 2**64


def test_metadata_nested_too_deep_is_refused_inside_the_read(tmp_path):
    # found under hypothesis, which runs with a higher recursion limit: the JSON parsed, and
    # ps.metadata then failed with a RecursionError writing the nested context into extra_json
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20000)
    try:
        f = tmp_path / "bench.json"
        f.write_text(json.dumps({**_gbench(), "context": {"num_cpus": 8, "mhz_per_cpu": "X"}}).replace('"X"', "[" * 1500 + "0" + "]" * 1500))
        _refused(f, "its metadata holds a value nested more than 100 deep")
        f.write_text(json.dumps({**_gbench(), "context": {"num_cpus": 8, "mhz_per_cpu": "X"}}).replace('"X"', "[" * 90 + "0" + "]" * 90))
        assert profaudit.load(f).metadata.height == 1  # deep, but within what extra_json can hold
    finally:
        sys.setrecursionlimit(limit)


def test_json_lines_cut_right_after_a_record_loads_as_incomplete(tmp_path):
    # cut exactly after a record's closing brace: the last line parses, and the "a JSON document
    # may end without a newline" exception had let the file load as whole (55 of 324 samples)
    src = Path(__file__).parents[1] / "sample_reports/claims/logs/softmax/naive/cols-1024_dtype-float32_rows-1024.run1.jsonl"
    lines = src.read_bytes().split(b"\n")
    f = tmp_path / src.name
    f.write_bytes(b"\n".join(lines[:57]))  # the header and 56 records, no newline after the last
    p = next(iter(profaudit.load(f)))
    assert p.metadata["complete"] is False and p.samples.height == 56
    f.write_bytes(b"\n".join(lines[:57]) + b"\n")  # the same records ending in a newline: whole as far as can be told
    assert "complete" not in next(iter(profaudit.load(f))).metadata
    # a JSON document (one line, or pretty-printed) may end without a newline
    g = tmp_path / "bench.json"
    g.write_text(json.dumps(_gbench(), indent=1))
    assert "complete" not in next(iter(profaudit.load(g))).metadata


@pytest.mark.parametrize("value", [-(2**63) - 1, float("nan")])
def test_asv_param_names_not_a_list(tmp_path, value):
    from tests.test_asv import BENCHMARKS, _tree

    bench = json.loads(json.dumps(BENCHMARKS))
    name = next(n for n, b in bench.items() if b.get("param_names"))
    bench[name]["param_names"] = value
    p = _tree(tmp_path, benchmarks=bench)
    _refused(p, f"benchmark {name!r}: param_names: expected a list, found the number")


def test_crlf_text_cut_between_cr_and_lf_loads_as_incomplete(tmp_path):
    # csv.writer ends rows in \r\n; a cut after a row's \r kept a whole-looking last row, and the
    # rows after it were lost without a word
    from tests.test_rocprofv3_csv import make_output

    src = next(make_output(tmp_path / "run").glob("*_kernel_trace.csv"))
    data = src.read_bytes()
    first_row_end = data.index(b"\r\n", data.index(b"\r\n") + 2)
    f = tmp_path / src.name
    f.write_bytes(data[: first_row_end + 1])  # header, first row and its \r
    p = next(iter(profaudit.load(f)))
    assert p.metadata["complete"] is False and p.kernels.height == 1
    f.write_bytes(data[: first_row_end + 2])  # ... and its \n: a shorter but whole-looking file
    assert "complete" not in next(iter(profaudit.load(f))).metadata
    from profaudit.parsers.completeness import unterminated_last_line

    g = tmp_path / "mac.txt"
    g.write_bytes(b"name,time_ms\rk1,1.5\rk2,2.25\r")  # lone \r line ends throughout: whole
    assert not unterminated_last_line(g)


def test_asv_params_repeated_are_refused_before_expanding(tmp_path):
    # 'params' repeated 100 times asked itertools.product for 2**200 combinations (3.5 GB, then
    # out of memory) before the count was compared with the results
    from tests.test_asv import RESULTS, _tree

    results = json.loads(json.dumps(RESULTS))
    row = results["results"]["bench.Sort.time_sort"]
    axes = row[results["result_columns"].index("params")]
    row[results["result_columns"].index("params")] = axes * 100
    _refused(_tree(tmp_path, results=results), f"4 result(s) for {2**200} parameter combination(s)")


def test_nsys_stats_trace_value_beyond_int64(tmp_path, cli):
    # a cell of 2^63 in a trace's start column: polars' strict cast to Int64 failed (the catch-all)
    from tests.test_nsys_stats_csv import GPU_TRACE_NEW

    lines = GPU_TRACE_NEW.splitlines(keepends=True)
    lines[2] = "9223372036854775807" + lines[2][lines[2].index(","):]
    f = tmp_path / "cuda_gpu_trace.csv"
    f.write_text("".join(lines))
    _refused(f, "cuda_gpu_trace table: a value is beyond the 64-bit integer range of its column")
    assert_one_line_error(cli("kernels", f), "9.2234e18")


def test_torch_benchmark_number_per_run_beyond_64_bits(tmp_path):
    # 10**39 calls per block: dividing the block time by it raised OverflowError (the catch-all)
    f = tmp_path / "measurements.json"
    f.write_text(json.dumps([{"number_per_run": 10**39, "raw_times": [1e-4, 2e-4], "task_spec": {"stmt": "x"}, "metadata": None}]))
    _refused(f, "measurement 0: number_per_run: the integer 1000000000000000000000000000000000000000 is out of range (beyond 64 bits)")


def test_chrome_trace_device_id_beyond_64_bits(tmp_path, cli):
    # deviceProperties[].id = 2**63: the device-name lookup's Int64 cast failed (the catch-all)
    ev = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1}}]
    f = tmp_path / "trace.json"
    f.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [{"id": 2**63, "name": "NVIDIA H100"}], "traceEvents": ev}))
    _refused(f, "deviceProperties[0].id: the integer 9223372036854775808 is out of range (beyond 64 bits)")
    f.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}], "traceEvents": ev}))
    assert profaudit.load(f).kernels["device_name"].to_list() == ["NVIDIA H100"]


@pytest.mark.parametrize("layout", [{"": None}, "x", [2]])
def test_dataset_marker_layout_not_a_number(tmp_path, layout):
    # int() of the marker's layout raised TypeError/ValueError (the catch-all)
    from profaudit.dataset import write_dataset
    from profaudit.dataset_v2 import MARKER

    src = tmp_path / "m.json"
    src.write_text(json.dumps([{"number_per_run": 10, "raw_times": [1e-4, 2e-4], "task_spec": {"stmt": "x"}, "metadata": None}]))
    d = tmp_path / "ds"
    write_dataset(profaudit.load(src), d)
    marker = json.loads((d / MARKER).read_text())
    marker["layout"] = layout
    (d / MARKER).write_text(json.dumps(marker))
    _refused(d, "broken profaudit dataset: its marker's layout is")


def test_damaged_parquet_page_that_aborted_polars(tmp_path):
    """A bit-flipped page header in a Neuron Explorer table (made from the test fixture's
    NeffHeader) claimed 2**61 values: polars' decoder failed to allocate and aborted the process
    (SIGABRT, no exception). Read in a child process, so that a regression fails this test and not
    the test run."""
    import subprocess

    from tests.test_neuron import make_explorer_profile

    d = tmp_path / "prof"
    d.mkdir()
    make_explorer_profile(d)
    (d / "NeffHeader.parquet").write_bytes((Path(__file__).parent / "fuzz_reproducers" / "neuron_neffheader_alloc_abort.parquet").read_bytes())
    res = subprocess.run([sys.executable, "-m", "profaudit", "kernels", str(d)], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).parents[1])
    assert res.returncode == 2, (res.returncode, res.stderr[-500:])
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "NeffHeader.parquet: unreadable Parquet table: Invalid page header" in lines[0], res.stderr


@pytest.mark.parametrize("batch", [float("nan"), 7])
def test_dataset_manifest_batch_not_text(tmp_path, batch):
    # a batch name of NaN passed the manifest check as a number and then matched no batch:
    # StopIteration from Snapshot.superseded (the catch-all)
    from profaudit.dataset import write_dataset
    from profaudit.dataset_v2 import MANIFESTS

    src = tmp_path / "m.json"
    src.write_text(json.dumps([{"number_per_run": 10, "raw_times": [1e-4, 2e-4], "task_spec": {"stmt": "x"}, "metadata": None}]))
    d = tmp_path / "ds"
    write_dataset(profaudit.load(src), d)
    mf = next((d / MANIFESTS).glob("*.json"))
    m = json.loads(mf.read_text())
    m["batch"] = batch
    mf.write_text(json.dumps(m))
    _refused(d, "broken batch manifest: batch: expected text, found the number")


def test_proton_count_beyond_64_bits(tmp_path, cli):
    # a launch count of 10**39: total / count raised OverflowError (the catch-all)
    tree = [{"frame": {"name": "ROOT"}, "metrics": {}, "children": [
        {"frame": {"name": "k"}, "metrics": {"Time (ns)": 1000, "Count": 10**39, "DeviceId": "0", "DeviceType": 1}, "children": []}]}]
    f = tmp_path / "p.hatchet"
    f.write_text(json.dumps(tree))
    assert_one_line_error(cli("kernels", f), "Proton kernel k: Count: the integer 1000000000000000000000000000000000000000 is out of range")


def test_gbench_console_time_that_is_no_number(tmp_path):
    # the row pattern took '--' for a number and float('--') raised ValueError (the catch-all)
    f = tmp_path / "bench.txt"
    head = "Run on (8 X 4400 MHz CPU s)\n----------------------------------------------------------\nBenchmark      Time        CPU   Iterations\n" \
           "----------------------------------------------------------\n"
    f.write_text(head + "BM_a/8       12.5 ns       12.4 ns     56000000\nBM_a/64        -- ns      696522 ns         1117\n")
    _refused(f, "benchmark 'BM_a/64': the time '--' is not a number")
    f.write_text(head + "BM_a/8       12.5 ns       12.4 ns     56000000\n")
    assert profaudit.load(f).samples.height == 2  # real and CPU time of the good row


def test_nsys_gpu_name_stored_as_bytes(tmp_path):
    # TARGET_INFO_GPU.name as a BLOB reached polars as bytes in a text column ("invalid utf8")
    db = _rich_db_with(tmp_path / "rich.sqlite", "UPDATE TARGET_INFO_GPU SET name = X'00ff'")
    ps = profaudit.load(db)
    assert ps.kernels.height > 0 and set(ps.kernels["device_name"].drop_nulls().to_list()) <= {"\x00\ufffd"}


def test_damaged_dataset_part_that_aborted_polars():
    """A profaudit dataset (made by the fuzz harness from the project's own fixture) whose metadata
    part had 2 bytes set to 0xff: polars' decoder asked for 2**61 bytes and aborted the process
    (SIGABRT). Parts are decoded by pyarrow now. Read in a child process, so that a regression
    fails this test and not the test run."""
    import subprocess

    d = Path(__file__).parent / "fuzz_reproducers" / "dataset_part_alloc_abort"
    res = subprocess.run([sys.executable, "-m", "profaudit", "kernels", str(d)], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).parents[1])
    assert res.returncode == 2, (res.returncode, res.stderr[-500:])
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "part-00000-000.parquet: unreadable Parquet part:" in lines[0], res.stderr


def test_chrome_trace_base_time_beyond_64_bits(tmp_path):
    # baseTimeNanoseconds = 2**63 made every start time overflow (OverflowError, the catch-all)
    ev = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1}}]
    f = tmp_path / "trace.json"
    f.write_text(json.dumps({"schemaVersion": 1, "baseTimeNanoseconds": 2**63, "traceEvents": ev}))
    _refused(f, "baseTimeNanoseconds: the integer 9223372036854775808 is out of range (beyond 64 bits)")


def test_pytest_benchmark_machine_info_cpu_not_an_object(tmp_path):
    # machine_info.cpu as a list: cpu.get raised AttributeError (the catch-all); machine_info is free-form
    f = tmp_path / "0001_run.json"
    doc = {"machine_info": {"cpu": ["x86_64"]}, "commit_info": {}, "benchmarks": [{"name": "test_a", "fullname": "t.py::test_a", "params": None,
           "stats": {"min": 1e-6, "max": 2e-6, "mean": 1.5e-6, "rounds": 3, "iterations": 1, "data": [1e-6, 1.5e-6, 2e-6]}}]}
    f.write_text(json.dumps(doc))
    p = next(iter(profaudit.load(f)))
    assert p.metadata.get("cpu_brand") is None and p.samples.height > 0


def test_cut_gzip_table_is_one_line(tmp_path):
    # a .gz cut short, read by the generic table: EOFError from gzip reached the catch-all
    import gzip

    f = tmp_path / "times.csv.gz"
    f.write_bytes(gzip.compress(b"name,time_ms\n" + b"".join(b"k%d,%d.5\n" % (i, i) for i in range(500)))[:60])
    _refused(f, "damaged or cut gzip file")
