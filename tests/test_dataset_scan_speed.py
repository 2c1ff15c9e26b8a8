"""What keeps a query over a dataset as appended close to one over a single Parquet file (issue 12):
manifests read once per change of the dataset (not on every `scan`), only the part files that may
hold a superseded copy filtered, one SQL statement per DuckDB scan, and row groups of one size."""

from __future__ import annotations

import importlib
from concurrent.futures import ThreadPoolExecutor

import polars as pl
import pytest

import profaudit
from profaudit import dataset_v2 as v2
from profaudit.dataset import compact_dataset, read_dataset, write_dataset
from profaudit.datastore import open_store
from profaudit.profile import Profile, ProfileSet

scan_mod = importlib.import_module("profaudit.scan")  # the module (profaudit.scan is also the function)


def _profile(pid: str, n: int, base: float = 100.0) -> Profile:
    k = pl.DataFrame({"kernel_id": list(range(n)), "name": [f"k{i}" for i in range(n)], "duration_ns": [base + i for i in range(n)]})
    return Profile(pid, {"source": "test", "tool": "synthetic", "device_name": "NVIDIA H100 80GB HBM3"}, {"kernels": k})


def _rows(df) -> list[tuple]:
    return sorted(zip(df["profile_id"].to_list(), df["duration_ns"].to_list()))


def _count_manifest_reads(monkeypatch, ds) -> list[str]:
    store_cls = type(open_store(ds))
    real = store_cls.read_bytes
    reads: list[str] = []
    monkeypatch.setattr(store_cls, "read_bytes", lambda self, rel: (reads.append(rel) if rel.startswith(v2.MANIFESTS) else None) or real(self, rel))
    return reads


def test_a_scan_reads_the_manifests_once_until_a_batch_or_a_compaction_changes_them(tmp_path, monkeypatch):
    ds = write_dataset(ProfileSet([_profile("a", 3), _profile("b", 2)]), tmp_path / "ds")
    reads = _count_manifest_reads(monkeypatch, ds)
    first = profaudit.scan(ds, "kernels", engine="duckdb").pl()
    assert len(reads) == 1
    again = profaudit.scan(ds, "kernels", engine="polars").collect()
    assert len(reads) == 1 and _rows(again) == _rows(first)
    # a new batch: listed, so read (only now)
    write_dataset(ProfileSet([_profile("c", 1), _profile("a", 4, base=500.0)]), ds)
    reads.clear()
    after = profaudit.scan(ds, "kernels", engine="duckdb").pl()
    assert reads and _rows(after) == _rows(read_dataset(ds).kernels)
    assert ("a", 500.0) in _rows(after) and ("a", 100.0) not in _rows(after)
    # a compaction replaces both manifests: the cached listing no longer matches
    compact_dataset(ds)
    reads.clear()
    compacted = profaudit.scan(ds, "kernels", engine="duckdb").pl()
    assert reads and _rows(compacted) == _rows(after)


def test_only_the_part_holding_a_superseded_copy_is_filtered(tmp_path):
    # a tiny target file size: one part file per profile in the first batch
    ds = tmp_path / "ds"
    write_dataset(ProfileSet([_profile(p, 50) for p in "abcd"]), ds, target_file_bytes=2_000)
    write_dataset(ProfileSet([_profile("c", 2, base=900.0)]), ds)
    store = open_store(ds)
    urls, gone, dirty = v2.live_files(store, "kernels")
    assert len(gone) == 1 and len(dirty) == 1
    (part,) = dirty
    assert set(pl.read_parquet(part)["profile_id"]) == {"c"}
    want = _rows(read_dataset(ds).kernels)
    assert ("c", 900.0) in want and ("c", 100.0) not in want
    for engine, get in (("duckdb", lambda r: r.pl()), ("polars", lambda r: r.collect()), ("dask", lambda r: pl.from_pandas(r.compute(scheduler="threads")))):
        if engine == "dask":
            pytest.importorskip("dask.dataframe")
        assert _rows(get(profaudit.scan(ds, "kernels", engine=engine))) == want, engine
    # a part without a range (a manifest written before ranges existed) is filtered, to be safe
    snap = v2.snapshot(store)
    for m in snap.manifests:
        for f in m["files"]:
            f.pop("profile_range", None)
    _urls, _gone, dirty_all = v2._live_files(store, snap, "kernels")
    assert len(dirty_all) == 4


def test_the_duckdb_scan_is_one_statement(tmp_path, monkeypatch):
    ds = write_dataset(ProfileSet([_profile("a", 3), _profile("b", 2)]), tmp_path / "ds")
    write_dataset(ProfileSet([_profile("b", 1, base=7.0)]), ds)
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    statements = []
    real_sql = type(con).sql
    monkeypatch.setattr(type(con), "sql", lambda self, q, *a, **k: statements.append(q) or real_sql(self, q, *a, **k))
    rel = profaudit.scan(ds, "kernels", engine="duckdb", connection=con)
    assert len(statements) == 1 and "UNION ALL" in statements[0] and "NOT IN ('b')" in statements[0]
    assert _rows(rel.pl()) == _rows(read_dataset(ds).kernels)


def test_parts_are_cut_in_row_groups_of_one_size(tmp_path, monkeypatch):
    pq = pytest.importorskip("pyarrow.parquet")
    monkeypatch.setattr(v2, "ROW_GROUP_ROWS", 16)
    ds = write_dataset(ProfileSet([_profile(f"p{i}", 7) for i in range(10)]), tmp_path / "ds")
    (part,) = (ds / "kernels").rglob("*.parquet")
    md = pq.ParquetFile(part).metadata
    assert [md.row_group(i).num_rows for i in range(md.num_row_groups)] == [16, 16, 16, 16, 6]


def test_cluster_parts_carry_their_profiles_positions_in_the_batch(tmp_path):
    for i in range(7):
        (tmp_path / "in").mkdir(exist_ok=True)
        (tmp_path / "in" / f"log{i}.csv").write_text("iteration,time_ms\n" + "\n".join(f"{j},{1 + i + j / 10}" for j in range(4)) + "\n")
    with ThreadPoolExecutor(2) as ex:
        profaudit.ingest([str(tmp_path / "in")], tmp_path / "ds", executor=ex, chunk_size=3)
    (m,) = v2.snapshot(open_store(tmp_path / "ds")).manifests
    ids = [e["profile_id"] for e in m["profiles"]]
    for f in m["files"]:
        lo, hi = f["profile_range"]
        held = set(pl.read_parquet(tmp_path / "ds" / f["path"])["profile_id"])
        assert held == set(ids[lo:hi]), f


def test_a_scan_whose_parts_a_compaction_replaced_meanwhile_lists_again(tmp_path, monkeypatch):
    pytest.importorskip("duckdb")
    ds = write_dataset(ProfileSet([_profile("a", 3)]), tmp_path / "ds")
    write_dataset(ProfileSet([_profile("b", 2)]), ds)
    stale = scan_mod._files(ds, "kernels", None)  # listed just before a compaction replaced them
    compact_dataset(ds)
    listings = []
    real = scan_mod._files
    monkeypatch.setattr(scan_mod, "_files", lambda *a: listings.append(a) or (stale if len(listings) == 1 else real(*a)))
    rel = profaudit.scan(ds, "kernels", engine="duckdb")
    assert len(listings) == 2 and _rows(rel.pl()) == _rows(read_dataset(ds).kernels)
