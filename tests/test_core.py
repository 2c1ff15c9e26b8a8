"""The schema, Profile/ProfileSet, the registry and the Parquet dataset round trip."""

from __future__ import annotations

import json

import polars as pl
import pytest

import profaudit
from profaudit import schema
from profaudit.dataset import read_dataset, write_dataset
from profaudit.profile import Profile, ProfileSet


def _profile(pid: str, n: int) -> Profile:
    k = pl.DataFrame({"kernel_id": list(range(n)), "name": [f"k{i}" for i in range(n)], "duration_ns": [float(i + 1) for i in range(n)]})
    return Profile(pid, {"source": "test", "device_name": "NVIDIA H100 80GB HBM3", "custom": {"a": 1}}, {"kernels": k})


def test_every_table_declares_profile_id_and_units_in_names():
    for name, t in schema.ALL_TABLES.items():
        assert t.names[0] == "profile_id"
        assert len(set(t.names)) == len(t.names)
        for c in t.columns:
            if c.unit in ("ns",):
                assert c.name.endswith("_ns"), c
            if c.unit == "byte":
                assert "bytes" in c.name, c


def test_conform_fills_nulls_never_zero():
    df = schema.conform("kernels", pl.DataFrame({"name": ["a"], "duration_ns": ["12.5"]}), "p")
    assert df.columns == schema.KERNELS.names
    row = df.row(0, named=True)
    assert row["profile_id"] == "p" and row["duration_ns"] == 12.5
    assert row["dram_read_bytes"] is None and row["flops_fp32"] is None


def test_conform_rejects_undeclared_columns():
    with pytest.raises(ValueError, match="declare"):
        schema.conform("kernels", pl.DataFrame({"bogus": [1]}))


def test_profileset_tables_and_metadata():
    ps = ProfileSet([_profile("a", 3), _profile("b", 2)])
    assert ps.kernels.height == 5
    assert ps.kernels["profile_id"].to_list() == ["a"] * 3 + ["b"] * 2
    assert ps.transfers.height == 0 and ps.transfers.columns == schema.TRANSFERS.names
    md = ps.metadata
    assert md["kernel_count"].to_list() == [3, 2]
    assert json.loads(md["extra_json"][0]) == {"custom": {"a": 1}}
    assert ps.to_pandas("kernels").shape == (5, len(schema.KERNELS.names))


def test_duplicate_ids_are_kept_apart():
    ps = ProfileSet([_profile("a", 1), _profile("a", 1)])
    assert ps.ids == ["a", "a~2"]


def test_dataset_round_trip_and_duckdb(tmp_path):
    ps = ProfileSet([_profile("a", 3), _profile("b", 2)])
    out = write_dataset(ps, tmp_path / "ds")
    back = read_dataset(out)
    assert back.ids == ["a", "b"]
    assert back.kernels.equals(ps.kernels)
    assert back.metadata.equals(ps.metadata)
    # load() goes through the registry's dataset parser
    again = profaudit.load(out)
    assert again.kernels.height == 5
    duckdb = pytest.importorskip("duckdb")
    n = duckdb.sql(f"select profile_id, count(*) from read_parquet('{out}/kernels/*/*.parquet', hive_partitioning=1) group by 1 order by 1").fetchall()
    assert n == [("a", 3), ("b", 2)]


def test_dataset_merge_and_refuse_foreign_folder(tmp_path):
    write_dataset(ProfileSet([_profile("a", 1)]), tmp_path / "ds")
    write_dataset(ProfileSet([_profile("b", 1)]), tmp_path / "ds")
    assert read_dataset(tmp_path / "ds").ids == ["a", "b"]
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "x.txt").write_text("hi")
    with pytest.raises(profaudit.UsageError):
        write_dataset(ProfileSet([_profile("a", 1)]), foreign)
    assert sorted(p.name for p in foreign.iterdir()) == ["x.txt"]


def test_public_api():
    for name in profaudit.__all__:
        assert hasattr(profaudit, name), name


def test_missing_and_empty_inputs(tmp_path, cli):
    from conftest import assert_one_line_error

    assert_one_line_error(cli("kernels", tmp_path / "nope.ncu-rep"), "no such file")
    empty = tmp_path / "empty.ncu-rep"
    empty.write_bytes(b"")
    assert_one_line_error(cli("kernels", empty), "empty file")
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\x01garbage")
    assert_one_line_error(cli("kernels", junk), "not a recognised")


@pytest.mark.parametrize("args", [["kernels", "--format", "bogus", "x"], ["kernels", "--limit", "abc", "x"], ["nosuchcmd"], ["kernels"]])
def test_usage_errors_are_one_line_exit_2(cli, args):
    from conftest import assert_one_line_error

    assert_one_line_error(cli(*args))


def test_every_command_has_help(cli):
    from profaudit.cli import app
    import typer.main

    group = typer.main.get_command(app)
    for name in group.commands:
        res = cli(name, "--help")
        assert res.code == 0, (name, res)
        assert "Usage" in res.out, name


def test_table_cells_are_not_rich_markup():
    import io

    from rich.console import Console

    from profaudit.cli.common import frame_to_rich

    buf = io.StringIO()
    Console(file=buf, width=120).print(frame_to_rich(pl.DataFrame({"name": ["vadd[n=256]", "[bold]x[/bold]"]})))
    assert "vadd[n=256]" in buf.getvalue() and "[bold]x[/bold]" in buf.getvalue()


@pytest.mark.parametrize("payload", [b'{"benchmarks": [', b"\x1f\x8b\x08\x00garbage"])
def test_load_json_damage_is_one_input_error(tmp_path, payload):
    import gzip as _gz

    from profaudit.parsers.base import load_json

    p = tmp_path / "x.json"
    p.write_bytes(payload if payload[:2] != b"\x1f\x8b" else _gz.compress(b'{"a": [1, 2')[:-6])
    with pytest.raises(profaudit.InputError, match="not valid thing JSON"):
        load_json(p, "thing JSON")


def test_folder_walk_skips_unrelated_tables_but_explicit_files_fail(tmp_path, cli):
    import pickle

    from conftest import assert_one_line_error
    from profaudit.loader import SkippedInput

    (tmp_path / "results.csv").write_text("size,throughput_gbps\n1024,12.5\n2048,13.1\n")
    (tmp_path / "log.csv").write_text("iteration,time_ms\n0,1.5\n1,1.4\n2,1.45\n")
    ps = profaudit.load(tmp_path)
    assert ps.samples.height == 3 and len(ps.skipped) == 1 and "results.csv" in ps.skipped[0][0]
    assert_one_line_error(cli("kernels", tmp_path / "results.csv"))
    err = pickle.loads(pickle.dumps(SkippedInput("a.csv", "no time column")))
    assert type(err) is SkippedInput and str(err) == "a.csv: no time column"


def test_parallel_load_equals_serial_and_keeps_errors(tmp_path):
    """Many inputs are parsed in worker processes; the result must equal a serial load, and a bad
    file must still surface as one InputError naming it (errors cross the process boundary)."""
    for i in range(4):
        rows = "\n".join(f"{j},{1.0 + 0.01 * ((i * 7 + j) % 5)}" for j in range(50))
        (tmp_path / f"log{i}.csv").write_text("iteration,time_ms\n" + rows + "\n")
    par = profaudit.load(sorted(tmp_path.glob("*.csv")), parallel=True)
    ser = profaudit.load(sorted(tmp_path.glob("*.csv")), parallel=False)
    assert par.ids == ser.ids and par.samples.equals(ser.samples)
    bad = tmp_path / "bad.ncu-rep"
    bad.write_bytes(b"NVR\x00\x10\x00\x00\x00abc")
    with pytest.raises(profaudit.InputError, match="bad.ncu-rep"):
        profaudit.load([*sorted(tmp_path.glob("*.csv")), bad], parallel=True)
    ps = profaudit.load([*sorted(tmp_path.glob("*.csv")), bad], parallel=True, skip_bad=True)
    assert len(ps) == 4 and ps.skipped and "bad.ncu-rep" in ps.skipped[0][0]


def test_scan_table_reads_the_dataset_lazily(tmp_path):
    from profaudit.dataset import scan_table

    ps = ProfileSet([_profile("a", 3), _profile("b", 2)])
    out = write_dataset(ps, tmp_path / "ds")
    lazy = scan_table(out, "kernels").sort("profile_id", "kernel_id").collect()
    assert lazy.columns == schema.KERNELS.names
    assert lazy.equals(ps.kernels)
    assert scan_table(out, "transfers").collect().columns == schema.TRANSFERS.names


@pytest.mark.parametrize(
    "name, short",
    [
        ("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int, AddFunctor<float>)", "at::native::vectorized_elementwise_kernel"),
        ("vernier::bench::demo::<unnamed>::saxpyKernel(float, const float *, float *, int)", "vernier::bench::demo::<unnamed>::saxpyKernel"),
        ("void <unnamed>::k<int>(int)", "<unnamed>::k"),
        ("void at::native::(anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>(float *, const float *, int)", "at::native::(anonymous namespace)::softmax_warp_forward"),
        ("triton_poi_fused_add_0", "triton_poi_fused_add_0"),
    ],
)
def test_short_name(name, short):
    from profaudit.names import short_name

    assert short_name(name) == short
