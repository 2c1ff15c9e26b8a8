"""Regression tests for what the widened fuzzing of session 13 found (tests/fuzz/mutators.py's
wider kinds, and tests/fuzz/downstream.py: the commands a user runs after a load). Each input is
the smallest form of its reproducer, built here from the suite's own fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_fuzz_regressions import _refused

# one cell beyond the csv module's 128 KiB field limit (a "very long name" mutant)
HUGE_CELL = '"' + "x" * 200_000 + '"'


def test_rocprof_compute_roofline_cell_beyond_csv_field_limit(tmp_path):
    """Was the catch-all: 'cannot read as rocprof-compute: Error: field larger than field limit'."""
    from tests.test_rocprof_compute import make_workload

    w = make_workload(tmp_path)
    lines = (w / "roofline.csv").read_text().splitlines()
    lines[1] += "," + HUGE_CELL
    (w / "roofline.csv").write_text("\n".join(lines) + "\n")
    _refused(w, "not a readable roofline.csv: field larger than field limit")


def test_nsys_stats_summary_cell_beyond_csv_field_limit(tmp_path):
    from tests.test_nsys_stats_csv import KERN_SUM_NEW

    lines = KERN_SUM_NEW.splitlines()
    lines[-1] += "," + HUGE_CELL
    f = tmp_path / "cuda_gpu_kern_sum.csv"
    f.write_text("\n".join(lines) + "\n")
    _refused(f, "malformed nsys stats CSV in a cuda_gpu_kern_sum table: field larger than field limit")


def test_nvprof_cell_beyond_csv_field_limit(tmp_path):
    from tests.test_nvprof_csv import SUMMARY_UNIT_CELLS

    lines = SUMMARY_UNIT_CELLS.splitlines()
    body = max(i for i, l in enumerate(lines) if l.count(",") > 3)
    lines[body] = lines[body].rsplit(",", 1)[0] + "," + HUGE_CELL
    f = tmp_path / "nvprof.csv"
    f.write_text("\n".join(lines) + "\n")
    _refused(f, "field larger than field limit")


REPRODUCERS = Path(__file__).parent / "fuzz_reproducers"


def test_rocprofv3_folder_with_damaged_gzip_csv(tmp_path):
    """A folder's marker trace gzipped and then damaged (8 NUL bytes inserted): zlib.error reached
    the catch-all ('Error -3 while decompressing data')."""
    from tests.test_rocprofv3_csv import make_output

    d = make_output(tmp_path)
    victim = next(d.glob("*_marker_api_trace.csv"))
    victim.write_bytes((REPRODUCERS / "rocprofv3_marker_damaged_gzip.csv").read_bytes())
    _refused(d, "damaged gzip data: Error -3 while decompressing data")


def test_damaged_gzip_is_both_a_cut_and_an_unreadable_file():
    """Every reader opens gzip through open_maybe_gzip and already catches EOFError (a cut gzip)
    or OSError (an unreadable file): the damaged-data error must be both."""
    from profaudit.parsers.base import DamagedGzip, open_maybe_gzip

    for catch in (EOFError, OSError):
        with pytest.raises(catch) as ei, open_maybe_gzip(REPRODUCERS / "rocprofv3_marker_damaged_gzip.csv") as fh:
            fh.read()
        assert isinstance(ei.value, DamagedGzip)


def test_compare_with_a_zero_duration_sample(cli):
    """A torch-benchmark log with one raw time of -0.0 (a zero-duration sample): the speedup
    interval's bootstrap draw of 0 overflowed math.exp and `compare` exited 3. Now the case has no
    interval (unknown), as with too few usable draws."""
    import json

    f = REPRODUCERS / "torch_benchmark_zero_raw_time.json"
    assert 0.0 in json.loads(f.read_text())[0]["raw_times"]
    for fmt in ("json", "table"):
        res = cli("compare", str(f), str(f), "--format", fmt)
        assert res.code == 0, res
    doc = json.loads(cli("compare", str(f), str(f), "--format", "json").out)
    (case,) = doc["matched"]
    assert case["speedup_ci_low"] is None and case["speedup_ci_high"] is None


def test_neuron_nc_idx_as_text_beyond_int64():
    """summary.nc_idx written as the text "-9223372036854775809": the numeric check passed it,
    int() took it, and polars' Int64 cast failed in the catch-all."""
    _refused(REPRODUCERS / "neuron_device_nc_idx_text_beyond_int64.json", "summary nc_idx: the integer -9223372036854775809 is out of range")


def test_gzipped_text_cut_inside_its_last_line_is_incomplete(tmp_path):
    """A rocprofv3 kernel trace cut mid-row and then gzipped: the gzip stream is whole, only the
    text shows the cut; it loaded as whole. Now `complete: false`, for every line format."""
    import gzip
    import shutil

    from profaudit.loader import read_one

    f = tmp_path / "4242_kernel_trace.csv"
    shutil.copyfile(REPRODUCERS / "rocprofv3_kernel_trace_cut_then_gzipped.csv", f)
    assert not gzip.decompress(f.read_bytes()).endswith(b"\n")
    (p,) = read_one(f)
    assert p.metadata.get("complete") is False
    # the same text ending in its newline is whole
    f.write_bytes(gzip.compress(gzip.decompress(f.read_bytes()).rsplit(b"\n", 1)[0] + b"\n"))
    (p,) = read_one(f)
    assert p.metadata.get("complete") is not False


def test_torch_benchmark_sub_label_of_65536_digits(tmp_path):
    """A sub_label of 65,536 digits: int() refuses text beyond 4,300 digits (ValueError in the
    catch-all). A label that long stays text."""
    import json

    from profaudit.loader import read_one

    spec = {"stmt": "x * 2", "setup": "pass", "global_setup": "", "label": "scale", "sub_label": "64" * 32768,
            "description": "eager", "env": None, "num_threads": 1}
    f = tmp_path / "torch_measurements.json"
    f.write_text(json.dumps([{"number_per_run": 100, "raw_times": [1.2e-4, 1.1e-4, 1.3e-4], "task_spec": spec, "metadata": None}]))
    (p,) = read_one(f)
    assert p.tables["samples"].height == 3
    assert "64" * 100 in p.tables["samples"]["params"][0]


def test_dataset_manifest_part_path_too_long_for_the_file_system(tmp_path):
    """A batch manifest whose part path is 4,096 characters long: exists() raised ENAMETOOLONG
    (OSError) into the loader's catch-all. Now one line naming the part."""
    import json

    from profaudit.dataset import write_dataset
    from profaudit.loader import load

    src = tmp_path / "torch_measurements.json"
    spec = {"stmt": "x", "setup": "pass", "global_setup": "", "label": "scale", "sub_label": "64", "description": "eager", "env": None, "num_threads": 1}
    src.write_text(json.dumps([{"number_per_run": 10, "raw_times": [1e-4, 2e-4], "task_spec": spec, "metadata": None}]))
    d = tmp_path / "dataset"
    write_dataset(load(src), d)
    (manifest,) = (d / "_manifests").glob("*.json")
    doc = json.loads(manifest.read_text())
    doc["files"][0]["path"] = doc["files"][0]["path"] * 64
    manifest.write_text(json.dumps(doc))
    _refused(d, "part file listed in its batch manifest cannot be opened: File name too long")


def test_nsys_stats_cut_inside_a_line_ending_in_a_bracket(tmp_path):
    """An nsys stats export cut inside its 'Processing [...] with [.../cuda_gpu_kern_sum.py]...'
    line, right after a ']': the last-line check took the ']' for the end of a JSON document and
    the notes-only file loaded as whole. Only a file that starts as JSON may end that way."""
    from profaudit.loader import read_one

    text = ("\nNOTICE: Existing SQLite export found: run.sqlite\n\n"
            "Processing [run.sqlite] with [/opt/nvidia/nsight-systems/2025.1.1/host-linux-x64/reports/cuda_gpu_kern_sum.py]... \n"
            "SKIPPED: run.sqlite does not contain CUDA kernel data.\n")
    f = tmp_path / "kern_sum.csv"
    f.write_text(text)
    (p,) = read_one(f)
    assert p.metadata.get("complete") is not False
    f.write_text(text[: text.index("]... ") + 1])
    (p,) = read_one(f)
    assert p.metadata.get("complete") is False


def test_rocprof_sdk_agent_gpu_index_beyond_int64(tmp_path):
    """agents[].gpu_index = 1e308: int() made a 309-digit device id that polars could not hold
    (OverflowError in the catch-all)."""
    import json

    from tests.test_chrome_trace import _sdk_doc

    doc = _sdk_doc()
    gpus = [a for a in doc["rocprofiler-sdk-tool"][0]["agents"] if a.get("type") == 2]
    gpus[0]["gpu_index"] = 1e308
    f = tmp_path / "results.json"
    f.write_text(json.dumps(doc))
    _refused(f, "agents[].gpu_index: the integer")


@pytest.mark.parametrize("columns", [
    "computeCapabilityMajor INTEGER, computeCapabilityMinor INTEGER",
    "computeCapabilityMajor INTEGER",  # Minor renamed away (fuzzing): was KeyError in the catch-all
])
def test_nsys_cuda_gpu_table_with_half_a_compute_capability(tmp_path, columns):
    """An older export's TARGET_INFO_CUDA_GPU with computeCapabilityMajor but no Minor column."""
    from profaudit.loader import read_one
    from tests.test_fuzz_regressions import _rich_db_with

    names = [c.split()[0] for c in columns.split(", ")]
    db = _rich_db_with(tmp_path / "r.sqlite",
                       f"CREATE TABLE TARGET_INFO_CUDA_GPU (deviceId INTEGER, pid INTEGER, name TEXT, pciBusId TEXT, {columns})",
                       f"INSERT INTO TARGET_INFO_CUDA_GPU VALUES (0, 1, 'NVIDIA GeForce RTX 3080', '0000:01:00.0', {', '.join(['8', '6'][: len(names)])})")
    (p,) = read_one(db)
    assert p.tables["kernels"].height == 4
    # never half a capability such as "8.None"
    assert "None" not in str(p.metadata.get("compute_capability") or "")


@pytest.mark.parametrize("cell", [".", "1.2.3"])
def test_rocprof_compute_sysinfo_number_that_is_no_number(tmp_path, cell):
    """sysinfo.csv's cu_per_gpu (or a clock) of '.': the pattern [\\d.]+ let it through to float()
    (ValueError in the catch-all). Such a cell is not a number: no value."""
    import csv

    from profaudit.loader import read_one
    from tests.test_rocprof_compute import make_workload

    w = make_workload(tmp_path)
    rows = list(csv.reader((w / "sysinfo.csv").read_text().splitlines()))
    col = next(i for i, h in enumerate(rows[0]) if h in ("cu_per_gpu", "numCU", "max_sclk", "sclk", "cur_sclk", "max_mclk", "mclk"))
    rows[1][col] = cell
    with open(w / "sysinfo.csv", "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    (p,) = read_one(w)
    assert p.tables["kernels"].height > 0


def test_compare_kernelbench_std_of_2_pow_64(tmp_path, cli):
    """A KernelBench std of 2**64 on a mean of a millisecond: the delta-method interval's exp()
    overflowed and `compare` exited 3. Now the case has no interval."""
    import json

    f = tmp_path / "baseline_time_torch.json"
    f.write_text(json.dumps({"level1": {"19_ReLU.py": {"mean": 1.0, "std": 2**64, "min": 0.9, "max": 1.2, "num_trials": 10,
                                                       "hardware": "L40S", "device": "cuda:0"}}}))
    res = cli("compare", str(f), str(f), "--format", "json")
    assert res.code == 0, res


def test_rocpd_schema_name_that_is_a_blob():
    """Four flipped bits (in a database built by tests/rocpd_synth.py) made a schema name a BLOB:
    sqlite3 returned bytes and str.startswith raised TypeError in the catch-all."""
    _refused(REPRODUCERS / "rocpd_schema_name_blob.db", "damaged SQLite database: a table name in its schema is not text")
