"""Regression tests for what the fuzzing of session 15 found. Each input is the smallest form of
its reproducer, built here from the suite's own fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from profaudit.loader import read_one
from tests.test_fuzz_regressions import _refused

# the damage a copy or a sync that went wrong leaves where a data file was (tests/fuzz/harness.py
# _folder_op "folder" and "loop")
DAMAGE = ("folder", "loop", "dangling")


def _damage(p: Path, how: str) -> None:
    p.unlink()
    if how == "folder":
        p.mkdir()
        (p / "part-0").write_bytes(b"")
    elif how == "loop":
        p.symlink_to(p.name)
    else:
        p.symlink_to(p.name + ".gone")


def _rocprofv3(tmp_path) -> Path:
    from tests.test_rocprofv3_csv import make_output

    return make_output(tmp_path)


@pytest.mark.parametrize("how", DAMAGE)
@pytest.mark.parametrize("trace", ["kernel_trace", "hip_api_trace", "memory_copy_trace", "counter_collection"])
def test_rocprofv3_folder_with_a_trace_that_is_not_a_file(tmp_path, trace, how):
    """s15 folder sweep: a rocprofv3 output folder whose <pid>_kernel_trace.csv (or any trace) was
    a folder or a looping link loaded the other traces as the whole run, without a word (the
    folder reader kept only `is_file()` entries)."""
    d = _rocprofv3(tmp_path)
    whole = read_one(d)
    _damage(d / f"{d.name}_{trace}.csv", how)
    msg = _refused(d, f"{d.name}_{trace}.csv: ")
    assert ("a folder where a data file belongs" if how == "folder" else "cannot be opened") in msg
    assert len(whole) > 1  # the undamaged folder loads one profile per trace


@pytest.mark.parametrize("how", DAMAGE)
def test_rocprofv3_agent_info_that_is_not_a_file(tmp_path, how):
    """The same damage to agent_info.csv: every profile lost its device names silently (the reader
    took a missing agent_info and a folder or a looping link by that name alike)."""
    d = _rocprofv3(tmp_path)
    _damage(d / f"{d.name}_agent_info.csv", how)
    _refused(d, f"{d.name}_agent_info.csv: ")
    # read on its own, the kernel trace beside it says the same
    _refused(d / f"{d.name}_kernel_trace.csv", f"{d.name}_agent_info.csv: ")


def test_rocprofv3_trace_without_agent_info_still_loads(tmp_path):
    """An absent agent_info.csv stays what it was: a trace beside it loads, saying it had none."""
    d = _rocprofv3(tmp_path)
    with_info = read_one(d / f"{d.name}_kernel_trace.csv")[0]
    (d / f"{d.name}_agent_info.csv").unlink()
    alone = read_one(d / f"{d.name}_kernel_trace.csv")[0]
    assert with_info.metadata["agent_info"] is True and with_info.metadata.get("device_name") == "AMD Instinct MI300X"
    assert alone.metadata["agent_info"] is False and alone.metadata.get("device_name") is None
    assert alone.kernels.height == with_info.kernels.height > 0


@pytest.mark.parametrize("how", DAMAGE)
def test_asv_results_folder_with_a_result_that_is_not_a_file(tmp_path, how):
    """s15 folder sweep, asv-results-dir: a <machine>/<commit>-<env>.json that was a folder or a
    looping link reached the catch-all (`IsADirectoryError`, `OSError: Too many levels of
    symbolic links`)."""
    from tests.test_asv import _tree

    _tree(tmp_path)
    root = tmp_path / "results"
    result = next(root.glob("*/*-*.json"))
    _damage(result, how)
    msg = _refused(root, f"{result.parent.name}/{result.name}: ")
    if how == "loop":
        assert "leads back to itself" in msg
    elif how == "dangling":
        assert "a symbolic link to nothing" in msg


@pytest.mark.parametrize("how", DAMAGE)
@pytest.mark.parametrize("which", [".xplane.pb", ".trace.json.gz"])
def test_xla_logdir_with_a_host_file_that_is_not_a_file(tmp_path, which, how):
    """s15 folder sweep, xla_logdir: a <host>.xplane.pb that was a folder or a looping link was
    passed over, and the host read from its trace.json.gz as if no xplane had been captured
    (`xplane_missing: true`); now the damaged entry is named (either file of a host)."""
    import shutil

    d = tmp_path / "jax_cpu"
    shutil.copytree(Path(__file__).resolve().parents[1] / "sample_reports" / "jax_cpu", d)
    victim = next((d / "plugins" / "profile").glob(f"*/*{which}"))
    assert read_one(d)  # the copy loads as it is
    _damage(victim, how)
    _refused(d, f"{victim.name}: ")


@pytest.mark.parametrize("how", DAMAGE)
def test_rocprof_compute_roofline_csv_that_is_not_a_file(tmp_path, how):
    """s15 folder sweep, rocprof-compute: a roofline.csv that was a folder or a looping link was
    passed over, and the workload loaded as if its roofline benchmark had never run (no
    measured_ceilings); an absent roofline.csv still loads."""
    from tests.test_rocprof_compute import make_workload

    d = make_workload(tmp_path)
    assert read_one(d)[0].metadata["measured_ceilings"]
    _damage(d / "roofline.csv", how)
    _refused(d, "roofline.csv: ")
    import shutil

    shutil.rmtree(d / "roofline.csv") if how == "folder" else (d / "roofline.csv").unlink()
    assert read_one(d)[0].metadata.get("measured_ceilings") is None


@pytest.mark.parametrize("column", ["stats_number", "stats_repeat"])
@pytest.mark.parametrize("value", [[[None, None], 1.2e-06], {"n": 1}, "10", 1.5])
def test_asv_count_of_another_type(tmp_path, column, value):
    """s15 run 1, asv #69: stacked edits deleted one column of a result row, so stats_repeat held
    the samples (a list of lists): `cannot read as asv: TypeError: failed to determine supertype of
    list[null] and f64` (the catch-all). asv writes both counts as integers; another type is one line."""
    import json

    from tests.test_asv import _tree

    _tree(tmp_path)
    f = next((tmp_path / "results").glob("*/*-*.json"))
    doc = json.loads(f.read_text())
    name, row = next(iter(doc["results"].items()))
    k = doc["result_columns"].index(column)
    assert isinstance(row[k], list) and row[k]  # the fixture records the counts
    row[k][0] = value
    f.write_text(json.dumps(doc))
    _refused(f, f"results.{name}: {column}: expected an integer")


@pytest.mark.parametrize("name", [[[None, 1.0], 2.0], {"a": [1]}, ["x"]])
def test_pytest_benchmark_name_of_another_type(tmp_path, name):
    """s15 sweep of every JSON leaf set to another type, pytest-benchmark: a benchmark name that is
    a list of lists gave `TypeError: failed to determine supertype of list[f64] and f64` (the
    catch-all); any list or mapping there is now one line naming the field. A number stays its text."""
    import json

    from tests.test_pytest_benchmark_size import _doc

    doc = json.loads(_doc(2))
    f = tmp_path / "bench.json"
    doc["benchmarks"][1]["name"] = name
    f.write_text(json.dumps(doc))
    _refused(f, "benchmarks[1].name: expected text")
    doc["benchmarks"][1]["name"] = 42
    f.write_text(json.dumps(doc))
    assert set(read_one(f)[0].samples["benchmark"].to_list()) == {"test_fib", "42"}


def test_rocpd_region_whose_event_row_does_not_join(tmp_path):
    """s15 CI fuzz test (hypothesis), rocpd: one rocpd_region row's event_id set to 2**31 left that
    range's kind null, and the array nesting took the null into its annotation mask: `IndexError:
    arrays used as indices must be of integer (or boolean) type` (the catch-all). Fixed in E's
    0c9c99d (a range of unknown kind is no annotation); it loads, the range at the top level."""
    import sqlite3

    from tests.rocpd_synth import build_app_db

    f = tmp_path / "rocpd_app.db"
    build_app_db(f)
    con = sqlite3.connect(f)
    t = con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_region%'").fetchone()[0]
    con.execute(f'UPDATE "{t}" SET event_id = ? WHERE rowid = (SELECT max(rowid) FROM "{t}" WHERE rowid IN '
                f'(SELECT rowid FROM "{t}" ORDER BY start LIMIT 4))', (2**31,))
    con.commit()
    con.close()
    ranges = read_one(f)[0].ranges
    unknown = ranges.filter(ranges["kind"].is_null())
    assert unknown.height == 1 and unknown["depth"].to_list() == [0]


def test_rocprofv3_agent_info_cut_short(tmp_path):
    """s15 directed cut sweep (the fuzz harness judged no .csv cut inside a folder format before):
    an agent_info.csv cut inside its last agent row, or right after its header, loaded as whole
    (`complete` unset) with that agent's device name gone. Each trace beside it now says it."""
    d = _rocprofv3(tmp_path)
    info = d / f"{d.name}_agent_info.csv"
    whole = info.read_bytes()
    assert all(p.metadata.get("complete") is not False for p in read_one(d))
    cut = whole.rstrip(b"\r\n")[: -len(b'"MI300X"')]  # inside the last agent row, its last cell gone
    header = whole[: whole.index(b"\n") + 1]  # the header line alone
    for data, why in ((cut, "agent_info.csv: "), (header, "a header without any agent row")):
        info.write_bytes(data)
        for p in read_one(d):
            assert p.metadata.get("complete") is False and why in p.metadata["incomplete_reason"], p.metadata


def test_asv_results_folder_with_a_cut_result_file_is_not_whole(tmp_path):
    """A results folder where one <commit>-<env>.json is cut (not JSON any more): the other commits
    load, the cut one is listed in `results_unreadable` as before, and the folder is no longer
    presented as whole (`complete: false`): the harness now judges cuts of such files."""
    import json

    from tests.test_asv import _tree

    _tree(tmp_path)
    root = tmp_path / "results"
    first = next(root.glob("*/*-*.json"))
    doc = json.loads(first.read_text())
    second = first.with_name("fedcba98-" + first.name.split("-", 1)[1])
    second.write_text(json.dumps({**doc, "commit_hash": "fedcba98" + doc["commit_hash"][8:]}))
    assert all(p.metadata.get("complete") is not False for p in read_one(root))
    second.write_bytes(second.read_bytes()[:-40])
    profiles = read_one(root)
    assert [p.metadata["commit_hash"][:8] for p in profiles] == [doc["commit_hash"][:8]]
    md = profiles[0].metadata
    assert list(md["results_unreadable"]) == [f"{second.parent.name}/{second.name}"]
    assert md["complete"] is False and "1 unreadable result file(s)" in md["incomplete_reason"]


# s15 final fuzz run, torch-benchmark #467 (seed 2028): a task_spec.sub_label of 1,048,576 digits with
# one byte set to 0x7f took > 30 s of CPU (minutes): parse_scalar's float pattern `\d+\.?\d*` split the
# digits between its two halves in every way before failing. nvprof's value cells and the timing
# tables' number cells had the same pattern, and also `\s*` twice around an optional unit, quadratic
# in a run of spaces. Each input below took from 20 minutes to hours before; a bound of 60 s (alarm)
# is a complexity check, not a timing claim: linear matching takes well under a second.
@pytest.mark.parametrize("text", [
    "1" * 200_000 + "\x7f",
    "1" + " " * 200_000 + "!",
    " " * 200_000 + "1.5 ms" + " " * 200_000 + "!",
    "-" + "9" * 100_000 + "." + "9" * 100_000 + "e!",
])
def test_number_patterns_are_linear_on_long_cells(text):
    import signal

    from profaudit.parsers import nvprof_csv, timing_table
    from profaudit.samples import parse_scalar

    def too_slow(*_):
        raise AssertionError("a number pattern backtracked (quadratic) on a long cell")

    old = signal.signal(signal.SIGALRM, too_slow)
    signal.alarm(60)
    try:
        assert parse_scalar(text) == text.strip()  # not a number: kept as text
        assert nvprof_csv._VALUE.match(text) is None
        assert timing_table._NUM_PY.match(text) is None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_python_number_patterns_match_what_the_polars_ones_match():
    # the possessive Python forms must accept exactly the language (and groups) of the old patterns
    import random
    import re

    from profaudit.parsers import nvprof_csv, timing_table

    old_nv = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z%/]+)?\s*$")
    old_tt = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-zµμ%]*)\s*$")
    rng = random.Random(15)
    alpha = "0123456789.eE+- \tmsuµ%/GBx!"
    for _ in range(50_000):
        w = "".join(rng.choice(alpha) for _ in range(rng.randint(0, 9)))
        for a, b in ((old_nv.match(w), nvprof_csv._VALUE.match(w)), (old_tt.match(w), timing_table._NUM_PY.match(w)),
                     (old_nv.match(w), re.match(nvprof_csv._VALUE_RE, w)), (old_tt.match(w), re.match(timing_table._NUM_RE, w))):
            assert (a and a.groups()) == (b and b.groups()), w
