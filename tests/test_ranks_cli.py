"""`profaudit ranks` and `profaudit collectives`: thin over profaudit.ranks, one-line errors."""

from __future__ import annotations

import io
import json

import polars as pl
import pytest

from conftest import assert_one_line_error
from profaudit.ranks import load_run

from ranks_synth import make_run, write_run


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    docs, _ = make_run(world_size=4, steps=2, ranks_per_host=2, late_rank=3, seed=21)
    d = tmp_path_factory.mktemp("cli_run")
    write_run(d, docs, gz=True)
    return d


def test_ranks_summary_csv_is_the_library_table(cli, folder):
    res = cli("ranks", folder, "-f", "csv")
    assert res.code == 0, res
    got = pl.read_csv(io.StringIO(res.out))
    want = load_run(folder, parallel=False).summary()
    assert got["rank"].to_list() == want["rank"].to_list() == [0, 1, 2, 3]
    assert got["clock_offset_ns"].to_list() == want["clock_offset_ns"].to_list()
    assert got["wait_caused_ns"].to_list() == want["wait_caused_ns"].to_list()
    assert got.filter(pl.col("times_last") > 0)["rank"].to_list() == [3]


def test_ranks_table_shows_stragglers_and_skew(cli, folder):
    res = cli("ranks", folder)
    assert res.code == 0, res
    assert "stragglers" in res.out and "step skew" in res.out and "collectives per kind and size" in res.out


@pytest.mark.parametrize("show,key", [("stragglers", "straggler_rank"), ("steps", "overlapped_communication_ns"), ("skew", "skew_ns"),
                                      ("collectives", "median_sync_busbw_bytes_per_s")])
def test_ranks_show_json(cli, folder, show, key):
    res = cli("ranks", folder, "--show", show, "-f", "json")
    assert res.code == 0, res
    rows = json.loads(res.out)
    assert rows and key in rows[0]


def test_collectives_per_call_kernel_and_size(cli, folder):
    run = load_run(folder, parallel=False)
    calls = pl.read_csv(io.StringIO(cli("collectives", folder, "-f", "csv").out))
    assert calls.height == run.calls.height and set(calls["last_rank"]) == {3}
    kernels = pl.read_csv(io.StringIO(cli("collectives", folder, "--per", "kernel", "-f", "csv").out))
    assert kernels.height == run.collectives.height == 4 * calls.height
    sizes = pl.read_csv(io.StringIO(cli("collectives", folder, "--per", "size", "-f", "csv").out))
    assert sizes["calls"].sum() == calls.height


def test_bad_inputs_are_one_line(cli, folder, tmp_path):
    assert_one_line_error(cli("ranks", tmp_path / "missing"), "no such file or folder")
    assert_one_line_error(cli("collectives", folder, "--step-pattern", "ProfilerStep#(\\d+"), "not a regular expression")
    docs, _ = make_run(world_size=1, steps=1, seed=22)
    write_run(tmp_path / "a", docs)
    write_run(tmp_path / "b", docs)
    assert_one_line_error(cli("ranks", tmp_path), "appears in more than one trace")


def test_against_compares_two_runs(cli, folder):
    from profaudit.ranks import compare_runs

    steps = pl.read_csv(io.StringIO(cli("ranks", folder, "--against", folder, "-f", "csv").out))
    assert steps["job_step_diff_ns"].to_list() == [0, 0]
    coll = pl.read_csv(io.StringIO(cli("collectives", folder, "--against", folder, "-f", "csv").out))
    run = load_run(folder, parallel=False)
    want = compare_runs(run, run)["collectives"]
    assert coll["baseline_calls"].to_list() == want["baseline_calls"].to_list() and coll["sync_duration_ratio"].to_list() == [1.0] * coll.height


def test_inputs_without_gpu_activity_are_one_line(cli, tmp_path):
    log = tmp_path / "times.csv"
    log.write_text("benchmark,time_ms\nmatmul,1.5\nmatmul,1.6\n")
    assert_one_line_error(cli("ranks", log), "no GPU kernels or copies in these inputs")


def test_schema_describes_the_derived_tables(cli):
    from profaudit import schema

    for name, table in schema.DERIVED_TABLES.items():
        res = cli("schema", name, "-f", "csv")
        assert res.code == 0, res
        rows = pl.read_csv(io.StringIO(res.out))
        assert rows["column"].to_list() == table.names
    units = dict(pl.read_csv(io.StringIO(cli("schema", "step_breakdown", "-f", "csv").out)).select("column", "unit").iter_rows())
    assert units["overlap_pct"] == "%" and units["idle_ns"] == "ns"


def test_step_basis_gpu(cli, folder):
    res = cli("ranks", folder, "--show", "steps", "--step-basis", "gpu", "-f", "csv")
    assert res.code == 0, res
    got = pl.read_csv(io.StringIO(res.out))
    want = load_run(folder, parallel=False, step_basis="gpu").step_breakdown
    assert got["start_ns"].to_list() == want["start_ns"].to_list() and got["idle_ns"].to_list() == want["idle_ns"].to_list()
