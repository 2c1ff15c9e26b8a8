"""Dataset layout 2: batches, manifests, appends that cost O(new), concurrent writers, layout 1
read and converted, compaction, and the documented DuckDB / polars / dask one-liners."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import profaudit
from profaudit import dataset_v2 as v2
from profaudit import schema
from profaudit.dataset import compact_dataset, convert_dataset, dataset_info, read_dataset, write_dataset
from profaudit.datastore import open_store
from profaudit.profile import Profile, ProfileSet

REPO = Path(__file__).resolve().parents[1]


def _profile(pid: str, n: int, base: float = 100.0) -> Profile:
    k = pl.DataFrame({"kernel_id": list(range(n)), "name": [f"k{i}" for i in range(n)], "duration_ns": [base + i for i in range(n)]})
    return Profile(pid, {"source": "test", "tool": "unit", "note": f"made for {pid}"}, {"kernels": k})


def _files(ds: Path) -> dict[str, tuple[int, int]]:
    """relative path -> (inode, mtime_ns) of every file of a dataset."""
    return {p.relative_to(ds).as_posix(): (p.stat().st_ino, p.stat().st_mtime_ns) for p in ds.rglob("*") if p.is_file()}


def _write_layout_1(ps: ProfileSet, out: Path) -> Path:
    """The layout-1 form, as profaudit 0.1 wrote it: a folder per profile and a global JSON."""
    for p in ps:
        for name, df in p.tables.items():
            if df.height:
                part = out / name / f"profile_id={p.profile_id}"
                part.mkdir(parents=True)
                df.drop("profile_id").write_parquet(part / "part-0.parquet")
        mpart = out / "metadata" / f"profile_id={p.profile_id}"
        mpart.mkdir(parents=True)
        schema.from_records("metadata", [p.metadata_row()]).drop("profile_id").write_parquet(mpart / "part-0.parquet")
    (out / "metadata.json").write_text(json.dumps({p.profile_id: p.metadata for p in ps}))
    (out / v2.MARKER).write_text(json.dumps({"format": v2.FORMAT, "schema_version": schema.SCHEMA_VERSION, "profiles": ps.ids, "partitioning": "hive:profile_id"}))
    return out


def test_layout_is_batches_with_profile_id_a_column(tmp_path):
    ps = ProfileSet([_profile("a", 3), _profile("b", 2)])
    ds = write_dataset(ps, tmp_path / "ds")
    manifests = list((ds / "_manifests").glob("*.json"))
    assert len(manifests) == 1
    batch = json.loads(manifests[0].read_text())["batch"]
    # a small batch, its Parquet bytes in the manifest's name (auto-compaction's input)
    assert manifests[0].name == f"{batch}.s{sum(f['bytes'] for f in json.loads(manifests[0].read_text())['files'])}.json"
    # two profiles share one file per table, not a folder each
    parts = sorted(p.relative_to(ds).as_posix() for p in ds.rglob("*.parquet"))
    assert parts == [f"kernels/batch={batch}/part-00000-000.parquet", f"metadata/batch={batch}/part-00000-000.parquet"]
    assert "profile_id" in pl.read_parquet(ds / parts[0]).columns
    m = json.loads(manifests[0].read_text())
    assert [e["profile_id"] for e in m["profiles"]] == ["a", "b"]
    assert {f["path"]: f["rows"] for f in m["files"]} == {parts[0]: 5, parts[1]: 2}
    back = read_dataset(ds)
    assert back.ids == ["a", "b"]
    assert back.kernels.equals(ps.kernels) and back.metadata.equals(ps.metadata)
    assert back["a"].metadata["note"] == "made for a"


def test_target_file_size_cuts_files_between_profiles(tmp_path):
    ps = ProfileSet([_profile(f"p{i}", 200) for i in range(6)])
    one = ps["p0"].kernels.estimated_size()
    ds = write_dataset(ps, tmp_path / "ds", target_file_bytes=int(one * 2.5))
    kernel_parts = sorted((ds / "kernels").rglob("*.parquet"))
    assert len(kernel_parts) == 3
    for f in kernel_parts:
        assert pl.read_parquet(f)["profile_id"].n_unique() == 2
    assert read_dataset(ds).kernels.equals(ps.kernels)


def test_append_writes_only_the_new_batch(tmp_path, monkeypatch):
    ds = write_dataset(ProfileSet([_profile(f"old{i}", 4) for i in range(20)]), tmp_path / "ds")
    before = _files(ds)
    reads = []
    store_cls = type(open_store(ds))
    real_read = store_cls.read_bytes
    monkeypatch.setattr(store_cls, "read_bytes", lambda self, rel: reads.append(rel) or real_read(self, rel))
    write_dataset(ProfileSet([_profile("new", 2)]), ds)
    after = _files(ds)
    # nothing that existed was read (but the fixed-size marker), rewritten or replaced; exactly one
    # manifest and its parts appeared
    assert set(reads) <= {v2.MARKER}
    assert {k: v for k, v in after.items() if k in before} == before
    added = sorted(set(after) - set(before))
    assert len(added) == 3 and sum(a.startswith("_manifests/") for a in added) == 1
    assert read_dataset(ds).ids[-1] == "new" and len(read_dataset(ds)) == 21


def test_reingested_profile_supersedes_and_compact_keeps_one_copy(tmp_path, cli):
    ds = write_dataset(ProfileSet([_profile("a", 3), _profile("b", 2)]), tmp_path / "ds")
    write_dataset(ProfileSet([_profile("a", 4, base=500.0)]), ds)
    back = read_dataset(ds)
    assert back.ids == ["b", "a"] and back["a"].kernels["duration_ns"].to_list() == [500.0, 501.0, 502.0, 503.0]
    for engine in ("polars", "duckdb", "dask"):
        frame = profaudit.scan(ds, "kernels", engine=engine)
        rows = {"polars": lambda f: f.collect().to_dicts(), "duckdb": lambda f: f.pl().to_dicts(), "dask": lambda f: f.compute(scheduler="threads").to_dict("records")}[engine](frame)
        assert sorted((r["profile_id"], r["duration_ns"]) for r in rows) == sorted(zip(back.kernels["profile_id"], back.kernels["duration_ns"])), engine
    info = dataset_info(ds)
    assert (info["profiles"], info["batches"], info["superseded_copies"], info["tables"]["kernels"]["rows"]) == (2, 2, 1, 6)
    res = cli("dataset", "compact", str(ds))
    assert res.code == 0, res
    assert "2 -> 1 batches" in res.err
    info = dataset_info(ds)
    assert (info["profiles"], info["batches"], info["superseded_copies"], info["tables"]["kernels"]["files"]) == (2, 1, 0, 1)
    again = read_dataset(ds)
    assert again.kernels.sort("profile_id", "kernel_id").equals(back.kernels.sort("profile_id", "kernel_id"))
    assert {r["profile_id"]: r for r in again.metadata.to_dicts()} == {r["profile_id"]: r for r in back.metadata.to_dicts()}


def test_compact_removes_old_orphans_but_never_committed_parts(tmp_path):
    ds = write_dataset(ProfileSet([_profile("a", 1)]), tmp_path / "ds")
    orphan = ds / "kernels" / "batch=20000101T000000000000-deadbeef" / "part-00000-000.parquet"
    orphan.parent.mkdir()
    _profile("x", 1).kernels.write_parquet(orphan)
    assert dataset_info(ds)["uncommitted_files"] == 1
    assert compact_dataset(ds, orphan_age_s=3600)["orphans_removed"] == 0  # young: maybe a running ingest
    r = compact_dataset(ds, orphan_age_s=0)
    assert r["orphans_removed"] == 1 and r["batches_rewritten"] == 0 and not orphan.exists()
    assert read_dataset(ds).ids == ["a"]


def test_retried_task_overwrites_its_own_parts(tmp_path):
    store = open_store(tmp_path / "ds")
    v2.ensure_marker(store)
    ps = ProfileSet([_profile("a", 2), _profile("b", 1)])
    first = v2.write_parts(ps, store, "B1", "00007")
    second = v2.write_parts(ps, store, "B1", "00007")  # the same task run again after a failure
    assert [f["path"] for f in first[1]] == [f["path"] for f in second[1]]
    v2.commit_batch(store, "B1", *second)
    assert read_dataset(tmp_path / "ds").kernels.height == 3
    assert len(list((tmp_path / "ds").rglob("*.parquet"))) == 2


_WRITER = """
import sys, polars as pl
from profaudit.dataset import write_dataset
from profaudit.profile import Profile, ProfileSet
tag, ds = sys.argv[1], sys.argv[2]
for i in range(6):
    k = pl.DataFrame({"kernel_id": [0], "name": ["k"], "duration_ns": [1.0]})
    write_dataset(ProfileSet([Profile(f"{tag}{i}", {"source": "test"}, {"kernels": k})]), ds)
"""


def test_two_concurrent_writer_processes_lose_nothing(tmp_path):
    ds = tmp_path / "ds"
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, tag, str(ds)], stderr=subprocess.PIPE, text=True) for tag in ("x", "y")]
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read()
    back = read_dataset(ds)
    assert sorted(back.ids) == sorted([f"x{i}" for i in range(6)] + [f"y{i}" for i in range(6)])
    # both writers' auto-compactions merged small batches as they went (racing on the same ones
    # at times); every profile is still read once, by the library and by a lazy scan
    assert dataset_info(ds)["batches"] < 12
    assert profaudit.scan(ds, "kernels").collect()["profile_id"].sort().to_list() == sorted(back.ids)


def test_layout_1_is_read_converted_and_not_appended_to(tmp_path, cli):
    ps = ProfileSet([_profile("a", 3), _profile("b", 2)])
    old = _write_layout_1(ps, tmp_path / "old")
    assert profaudit.load(old).ids == ["a", "b"]
    assert read_dataset(old).kernels.equals(ps.kernels)
    assert profaudit.scan(old, "kernels").collect().sort("profile_id", "kernel_id").equals(ps.kernels)
    assert dataset_info(old)["layout"] == 1 and dataset_info(old)["tables"]["kernels"]["rows"] == 5
    with pytest.raises(profaudit.UsageError, match="dataset convert"):
        write_dataset(ProfileSet([_profile("c", 1)]), old)
    res = cli("dataset", "convert", str(old), "-o", str(tmp_path / "new"))
    assert res.code == 0, res
    assert read_dataset(tmp_path / "new").kernels.equals(ps.kernels)
    res = cli("dataset", "convert", str(old))  # in place
    assert res.code == 0, res
    assert dataset_info(old)["layout"] == 2 and not (old / "metadata.json").exists()
    back = read_dataset(old)
    assert back.kernels.equals(ps.kernels) and back.metadata.equals(ps.metadata)
    res = cli("dataset", "convert", str(old))
    assert res.code == 2 and "already layout 2" in res.err


def test_dataset_info_cli(tmp_path, cli):
    ds = write_dataset(ProfileSet([_profile("a", 3)]), tmp_path / "ds")
    write_dataset(ProfileSet([_profile("b", 2)]), ds)
    res = cli("dataset", "info", str(ds), "--format", "json")
    assert res.code == 0, res
    d = json.loads(res.out)
    assert (d["profiles"], d["batches"], d["tables"]["kernels"]["rows"], d["tables"]["metadata"]["rows"]) == (2, 2, 5, 2)
    assert d["bytes"] == sum(p.stat().st_size for p in ds.rglob("*.parquet"))
    res = cli("dataset", "info", str(ds), "--format", "csv")
    assert res.out.splitlines()[0] == "table,rows,files,bytes"
    res = cli("dataset", "info", str(tmp_path))
    assert res.code == 2 and "not a profaudit dataset" in res.err


def test_readme_one_liners_read_the_dataset_as_it_is(tmp_path):
    """The README's DuckDB, polars and dask.dataframe lines, run as written (paths substituted)."""
    ps = ProfileSet([_profile("a", 3), _profile("b", 2)])
    ds = write_dataset(ps, tmp_path / "dataset")
    write_dataset(ProfileSet([_profile("c", 1)]), ds)
    readme = (REPO / "README.md").read_text()
    block = readme.split("<!-- dataset-one-liners -->", 2)[1]
    lines = [ln for ln in block.splitlines() if ln.startswith(("duckdb.", "pl.", "dd."))]
    assert len(lines) == 3, lines
    duckdb = pytest.importorskip("duckdb")
    dd = pytest.importorskip("dask.dataframe")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        results = [eval(ln, {"duckdb": duckdb, "pl": pl, "dd": dd}) for ln in lines]
        got_duck = dict(results[0].fetchall())  # a DuckDB relation runs when fetched
    finally:
        os.chdir(cwd)
    want = {"a": 303.0, "b": 201.0, "c": 100.0}
    got_pl = dict(results[1].select("profile_id", "duration_ns").iter_rows())
    got_dd = results[2].to_dict()
    assert got_duck == want and got_pl == want and got_dd == want


def test_a_read_racing_a_compaction_lists_again(tmp_path, monkeypatch):
    ds = write_dataset(ProfileSet([_profile("a", 2)]), tmp_path / "ds")
    write_dataset(ProfileSet([_profile("b", 1)]), ds)
    real_snapshot = v2.snapshot
    calls = []

    def stale_then_fresh(store):
        # the first listing is taken, then a compaction replaces every file before the read
        snap = real_snapshot(store)
        calls.append(1)
        if len(calls) == 1:
            monkeypatch.setattr(v2, "snapshot", real_snapshot)  # compaction lists for itself
            compact_dataset(ds)
            monkeypatch.setattr(v2, "snapshot", stale_then_fresh)
        return snap

    monkeypatch.setattr(v2, "snapshot", stale_then_fresh)
    back = v2.read(open_store(ds))
    assert back.ids == ["a", "b"] and len(calls) == 2
    assert back.kernels.height == 3
    (ds / "_manifests").joinpath("20990101T000000000000-00000000.json").write_text(
        json.dumps({"batch": "20990101T000000000000-00000000", "profiles": [{"profile_id": "z"}], "files": [{"table": "kernels", "path": "kernels/batch=x/gone.parquet", "rows": 1, "bytes": 1}]})
    )
    monkeypatch.setattr(v2, "snapshot", real_snapshot)
    with pytest.raises(profaudit.InputError, match="gone.parquet: part file listed in its batch manifest is missing"):
        read_dataset(ds)


def test_duckdb_scan_drops_superseded_copies_by_predicate_and_by_join(tmp_path, monkeypatch):
    import importlib

    scan_mod = importlib.import_module("profaudit.scan")  # the module (profaudit.scan is also the function)

    ds = write_dataset(ProfileSet([_profile("it's", 3), _profile("b", 2), _profile("c", 1)]), tmp_path / "ds")
    write_dataset(ProfileSet([_profile("it's", 4, base=500.0)]), ds)
    want = sorted(zip(read_dataset(ds).kernels["profile_id"], read_dataset(ds).kernels["duration_ns"]))
    for limit in (1000, 0):  # a SQL predicate for few superseded copies, an anti-join for many
        monkeypatch.setattr(scan_mod, "_PREDICATE_MAX_PAIRS", limit)
        got = profaudit.scan(ds, "kernels", engine="duckdb").pl()
        assert sorted(zip(got["profile_id"], got["duration_ns"])) == want, limit
        assert got.columns == schema.ALL_TABLES["kernels"].names


@pytest.mark.parametrize("engine", ["duckdb", "dask"])
def test_a_scan_of_a_missing_or_damaged_part_is_one_line_naming_it(tmp_path, engine):
    # DuckDB binds and dask reads the footers inside scan(): their own exceptions reached the user
    if engine == "dask":
        pytest.importorskip("dask.dataframe")
    else:
        pytest.importorskip("duckdb")
    ds = write_dataset(ProfileSet([_profile("a", 3), _profile("b", 2)]), tmp_path / "ds")
    (part,) = (ds / "kernels").rglob("*.parquet")
    part.write_bytes(b"not parquet")
    from profaudit.errors import InputError, UsageError

    with pytest.raises(InputError, match="cannot scan table kernels") as info:
        profaudit.scan(ds, "kernels", engine=engine)
    assert info.value.path == str(part) and "\n" not in str(info.value)
    part.unlink()
    with pytest.raises(InputError, match="part file listed in its batch manifest is missing"):
        profaudit.scan(ds, "kernels", engine=engine)
    # a mistake in the call is still the caller's, not the dataset's
    with pytest.raises(UsageError, match="no table"):
        profaudit.scan(ds, "kernelz", engine=engine)
