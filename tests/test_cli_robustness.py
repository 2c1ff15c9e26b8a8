"""CLI and API robustness found in a QA pass: unwritable outputs, bad option values, truncated
inputs that used to load silently, and `profaudit.load` from a plain script."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from conftest import REPO, SAMPLES, assert_one_line_error

LOG = SAMPLES / "claims" / "logs" / "softmax" / "naive" / "cols-1024_dtype-float32_rows-1024.run0.jsonl"
LOG2 = SAMPLES / "claims" / "logs" / "softmax" / "torch" / "cols-1024_dtype-float32_rows-1024.run0.jsonl"


def _no_temp_left(folder: Path) -> None:
    assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(
    "args",
    [
        ["kernels", str(LOG), "-t", "samples", "-f", "csv"],
        ["kernels", str(LOG), "-t", "samples", "-f", "parquet"],
        ["summary", str(SAMPLES / "jax_cpu"), "-f", "json"],
        ["rules", "-f", "csv"],
        ["audit", "-b", str(LOG), "-c", str(LOG2), "-f", "markdown"],
        ["ingest", str(LOG)],
    ],
    ids=["kernels-csv", "kernels-parquet", "summary", "rules", "audit", "ingest"],
)
def test_unwritable_output_is_one_line_error(tmp_path, cli, args):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    # a folder standing where the output file goes, and an output below a plain file
    for target in (tmp_path / "a_dir", blocker / "out"):
        (tmp_path / "a_dir").mkdir(exist_ok=True)
        if args[0] == "ingest" and target.name == "a_dir":
            continue  # an empty folder is a valid ingest target
        res = cli(*args, "-o", target)
        assert_one_line_error(res, str(target))
        assert "cannot write" in res.err
        _no_temp_left(tmp_path)
        _no_temp_left(tmp_path / "a_dir")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_output_under_proc_is_one_line_error(cli):
    res = cli("roofline", str(SAMPLES / "jax_cpu"), "--device", "h100-sxm", "--html", "/proc/profaudit-qa.html")
    assert_one_line_error(res, "/proc/profaudit-qa.html")


def test_outputs_get_the_umask_mode_not_a_private_one(tmp_path, cli):
    mask = os.umask(0o022)
    try:
        assert cli("kernels", str(LOG), "-t", "samples", "-f", "csv", "-o", tmp_path / "s.csv").code == 0
        assert cli("ingest", str(LOG), "-o", tmp_path / "ds").code == 0
    finally:
        os.umask(mask)
    assert (tmp_path / "s.csv").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "ds").stat().st_mode & 0o777 == 0o755


def test_load_at_top_level_of_an_unguarded_script(tmp_path):
    """README-style use: `ps = profaudit.load([...])` at the top of a script, no `__main__` guard.
    Worker processes re-import the main script; loading must not break (it fell over with
    BrokenProcessPool as soon as the inputs were big enough to be parsed in parallel)."""
    script = tmp_path / "plain.py"
    script.write_text(
        "import profaudit, profaudit.loader\n"
        "profaudit.loader._PARALLEL_MIN_BYTES = 0  # make two small logs take the parallel path\n"
        f"ps = profaudit.load([{str(LOG)!r}, {str(LOG2)!r}])\n"
        "print('rows', ps.samples.height)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().startswith("rows ") and int(res.stdout.split()[1]) > 0


def test_guarded_scripts_and_entry_points_may_use_worker_processes(tmp_path, monkeypatch):
    from profaudit import loader

    guarded = tmp_path / "guarded.py"
    guarded.write_text("import profaudit\n\nif __name__ == '__main__':\n    profaudit.load('x')\n")
    plain = tmp_path / "plain.py"
    plain.write_text("import profaudit\nprofaudit.load('x')\n")
    main = type(sys)("__main__")
    monkeypatch.setitem(sys.modules, "__main__", main)
    assert loader._workers_can_start()  # interactive / notebook: no file to re-run
    main.__file__ = str(guarded)
    assert loader._workers_can_start()
    main.__file__ = str(plain)
    assert not loader._workers_can_start()
    main.__file__ = "<stdin>"
    assert not loader._workers_can_start()


def test_empty_path_is_an_error_not_the_current_folder(tmp_path, cli, monkeypatch):
    import profaudit

    (tmp_path / "log.csv").write_text("time_ms\n1\n2\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(profaudit.InputError, match="empty path"):
        profaudit.load("")
    assert_one_line_error(cli("kernels", ""), "empty path")


def test_bad_name_pattern_and_negative_limit_are_usage_errors(cli):
    res = cli("kernels", str(SAMPLES / "jax_cpu"), "--name", "fusion[")
    assert_one_line_error(res, "--name 'fusion['")
    assert "regular expression" in res.err
    for cmd in ("kernels", "roofline", "summary"):
        assert_one_line_error(cli(cmd, str(SAMPLES / "jax_cpu"), "--limit", "-1"), "--limit")
    ok = cli("kernels", str(SAMPLES / "jax_cpu"), "--name", "ynn_fus", "-f", "csv")
    assert ok.code == 0 and len(ok.out.strip().splitlines()) == 6


_NVB = (
    "Benchmark,Device,Device Name,Skipped,NumElements,Samples,CPU Time (sec),Noise,GPU Time (sec),Noise,Batch GPU (sec),Batch\n"
    "copy,0,Quadro GV100,No,16777216,47755,0.00027093838689142973,0.0111,0.00026478739019249176,0.0114,0.0002632571401085129,47756\n"
    "copy,1,Quadro GP100,No,16777216,46734,0.00028047131987418375,0.0098,0.0002757727249773843,0.0099,0.0002754124925807889,46735\n"
)


def test_truncated_nvbench_csv_is_refused_not_loaded_in_part(tmp_path, cli):
    whole = tmp_path / "whole.csv"
    whole.write_text(_NVB)
    ok = cli("kernels", whole, "-t", "samples", "-f", "csv")
    assert ok.code == 0 and "Quadro GP100" in ok.out
    for cut in (len(_NVB) - 20, len(_NVB) - 60):  # inside the last number; short last row
        part = tmp_path / f"cut{cut}.csv"
        part.write_text(_NVB[:cut])
        assert_one_line_error(cli("kernels", part, "-t", "samples"), f"cut{cut}.csv")
    short = tmp_path / "short.csv"
    lines = _NVB.splitlines(keepends=True)
    short.write_text(lines[0] + lines[1].rsplit(",", 3)[0] + "\n" + lines[2])
    assert_one_line_error(cli("kernels", short, "-t", "samples"), "line 2 has 9 cells for 12 columns")


def test_table_cells_exact_or_visibly_rounded():
    from profaudit.fmt import fmt_cell as _fmt_cell

    assert _fmt_cell(431648.0) == "431,648"
    assert _fmt_cell(5000.0) == "5,000"
    assert _fmt_cell(9_999_999.0) == "9,999,999"
    assert _fmt_cell(1.7118304e7) == "17,118,304"  # an exact integer stays exact at any size
    assert _fmt_cell(431648.5) == "431,648.5"  # not an integer: the decimal shows it
    assert _fmt_cell(103.83868) == "103.8"
    assert _fmt_cell(0.0004) == "0.0004"
    assert _fmt_cell(None) == "—"
    assert _fmt_cell(134_243_200.0, "byte") == "134 MB" and _fmt_cell(1.44e9, "Hz") == "1.44 GHz"


def test_underflowed_p_value_is_not_printed_as_zero(cli):
    res = cli("audit", SAMPLES / "claims" / "softmax_overstated.yaml")
    assert res.code == 1, res
    assert "p < 1e-300" in res.out and "p = 0," not in res.out and "p = 0\n" not in res.out


def test_empty_results_say_why(tmp_path, cli):
    res = cli("roofline", LOG, "-f", "csv")
    assert res.code == 0 and "no kernel rows in the input" in res.err
    # kernels without timestamps (an ncu-style CSV export) have no idle gaps to measure
    csv = tmp_path / "raw.csv"
    csv.write_text('"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
                   '"0","k(int)","gpu__time_duration.sum","nsecond","2048"\n')
    res = cli("gaps", csv, "-f", "csv")
    assert res.code == 0 and "gaps needs a timeline" in res.err, res


@pytest.mark.skipif(sys.platform != "linux", reason="file names are bytes on Linux only")
def test_file_names_that_are_not_utf8(tmp_path, cli):
    from nsys_synth import rich_db

    folder = Path(os.fsdecode(bytes(tmp_path) + b"/d\xe9"))
    folder.mkdir()
    log = folder / os.fsdecode(b"n\xffive.jsonl")
    log.write_bytes(LOG.read_bytes())
    db = rich_db(folder / os.fsdecode(b"r\xe9port.sqlite"))
    for f in (log, db):
        res = cli("kernels", f, "-t", "metadata", "-f", "json")
        assert res.code == 0, res
        assert "\\\\xe9" in res.out  # the undecodable byte stays visible in metadata.path
    assert cli("ingest", folder, "-o", tmp_path / "ds").code == 0
    import profaudit

    assert len(profaudit.load(tmp_path / "ds")) == 2


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_is_refused_instead_of_blocking(tmp_path):
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # no writer: reading the pipe would block forever; a timeout here is the failure
    res = subprocess.run([sys.executable, "-m", "profaudit", "kernels", str(fifo)], capture_output=True, text=True, timeout=60, env=env)
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip() == f"profaudit: error: {fifo}: not a regular file (a pipe or a device): save it to a file first"


def test_json_on_stdout_is_strict_json(tmp_path):
    import polars as pl

    from profaudit.cli.common import emit_frame

    df = pl.DataFrame({"x": [1.0, float("nan"), float("inf")], "v": [[1.0, float("nan")], [2.0], None]})
    buf = io.StringIO()
    with redirect_stdout(buf):
        emit_frame(df, "json")
    rows = json.loads(buf.getvalue(), parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert [r["x"] for r in rows] == [1.0, None, None] and rows[0]["v"] == [1.0, None]
    emit_frame(df.select("x"), "json", tmp_path / "x.json")
    assert json.loads((tmp_path / "x.json").read_text()) == [{"x": r["x"]} for r in rows]


def test_bench_outputs_that_cannot_be_written(tmp_path, cli):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    res = cli("bench", "run", REPO / "examples" / "bench_compare_softmax.py", "-o", blocker / "out")
    assert_one_line_error(res, f"{blocker / 'out'}: cannot write")
    src = SAMPLES / "bench_cpu" / "softmax"
    res = cli("bench", "compare", src, "--baseline", "unfused", "--candidate", "fused", "-o", blocker / "claims")
    assert_one_line_error(res, f"{blocker / 'claims'}: cannot write")


def test_roofline_device_warnings_name_the_profiles(tmp_path, cli):
    one = tmp_path / "one.csv"
    one.write_text('"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
                   '"0","k(int)","gpu__time_duration.sum","nsecond","2048"\n')
    res = cli("roofline", one, SAMPLES / "jax_cpu", "-f", "csv")
    assert res.code == 0, res
    warn = {l.split(": ", 2)[2].split(" (in ")[0]: l for l in res.err.splitlines() if l.startswith("profaudit: warning:")}
    assert "(in one-" in warn["no device name was reported"]
    assert "(in vm-" in next(v for k, v in warn.items() if "'CPU'" in k)


def test_dropped_timing_rows_are_reported_on_stderr(tmp_path, cli):
    p = tmp_path / "drop.csv"
    p.write_text("iteration,time_ms\n0,1.5\n1,abc\n2,1.4\n3,1.45\n")
    res = cli("kernels", "-t", "samples", "-f", "csv", p)
    assert res.code == 0 and res.out.count("\n") == 4  # header + 3 rows
    assert "1 row without a readable time was dropped" in res.err


def test_kernels_name_filters_every_table_it_can_and_refuses_the_others(tmp_path, cli):
    import polars as pl

    # samples: --name matches the benchmark (it used to be ignored: every row came back)
    res = cli("kernels", LOG, "-t", "samples", "-f", "csv", "--name", "^soft")
    assert res.code == 0, res
    rows = pl.read_csv(io.StringIO(res.out))
    assert rows.height == pl.read_ndjson(LOG).height - 1 and set(rows["benchmark"]) == {"softmax"}
    res = cli("kernels", LOG, "-t", "samples", "-f", "csv", "--name", "matmul")
    assert res.code == 0 and res.out.strip() == ",".join(rows.columns)
    # metrics: rows of the kernels whose name matches
    two = tmp_path / "two.csv"
    head = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'
    row = '"{}","1","a","h","{}","1","7","(256, 1, 1)","(64, 1, 1)","0","8.0","Speed Of Light","{}","{}","{}"\n'
    two.write_text(head + row.format(0, "gemm(int)", "gpu__time_duration.sum", "nsecond", "2048")
                   + row.format(0, "gemm(int)", "dram__bytes.sum", "byte", "100")
                   + row.format(1, "softmax(int)", "gpu__time_duration.sum", "nsecond", "1024"))
    res = cli("kernels", two, "-t", "metrics", "-f", "csv", "--name", "gemm")
    assert res.code == 0, res
    kept = pl.read_csv(io.StringIO(res.out))
    assert set(kept["kernel_id"]) == {0} and {"gpu__time_duration.sum", "dram__bytes.sum"} <= set(kept["metric"])
    # tables without a name: a one-line error instead of a silently unfiltered table
    assert_one_line_error(cli("kernels", LOG, "-t", "counters", "--name", "x"), "--name does not apply to the counters table")


def test_kernels_checks_the_table_name_before_loading(tmp_path, cli):
    # the table name is refused before any input is read (a typo must not cost a multi-GB load)
    res = cli("kernels", tmp_path / "missing.ncu-rep", "-t", "kernel")
    assert_one_line_error(res, "no table 'kernel'")


def test_kernels_samples_table_shows_readable_default_columns(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # headers unwrapped, whatever the terminal
    res = cli("kernels", LOG, "-t", "samples", "-n", "1")
    assert res.code == 0, res
    assert "benchmark" in res.out and "throttle_reasons" not in res.out
    full = cli("kernels", LOG, "-t", "samples", "-f", "csv")
    assert "throttle_reasons" in full.out.splitlines()[0]  # exports keep every column
