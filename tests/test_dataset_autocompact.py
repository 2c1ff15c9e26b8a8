"""Automatic size-tiered compaction after appends (dataset_v2.auto_compact): few files per table
for scans, merges of like-sized batches only, crash safety and idempotence."""

from __future__ import annotations

import zlib
from pathlib import Path

import polars as pl
import pytest

import profaudit
from profaudit import dataset_v2 as v2
from profaudit.dataset import compact_dataset, dataset_info, read_dataset, write_dataset
from profaudit.datastore import open_store
from profaudit.errors import UsageError
from profaudit.profile import Profile, ProfileSet


def _profile(pid: str, n: int = 3) -> Profile:
    # durations that do not compress away, so that Parquet sizes grow with the rows
    seed = zlib.crc32(pid.encode()) * 1000
    k = pl.DataFrame({"kernel_id": list(range(n)), "name": [f"k{i % 7}" for i in range(n)], "duration_ns": [((seed + i) * 2654435761 % 1000003) / 7.0 for i in range(n)]})
    return Profile(pid, {"source": "test", "tool": "unit"}, {"kernels": k})


def _manifests(ds: Path) -> list[str]:
    return sorted(p.name for p in (ds / "_manifests").glob("*.json"))


def _most_in_one_class(ds: Path) -> int:
    """The most small batches that share a size class (auto-compaction keeps it below the fan-out)."""
    classes = [v2.size_class(b) for b in map(v2.small_batch_bytes, _manifests(ds)) if b is not None]
    return max((classes.count(c) for c in classes), default=0)


def test_size_classes_are_powers_of_the_fan_out():
    assert [v2.size_class(b, 4, 100) for b in (0, 99, 100, 399, 400, 1599, 1600)] == [0, 0, 1, 1, 2, 2, 3]
    assert v2.small_batch_bytes("20260101T000000000000-abcd.s1234.json") == 1234
    assert v2.small_batch_bytes("20260101T000000000000-abcd.json") is None


def test_small_batches_never_pile_up_and_every_row_is_read_once(tmp_path):
    ds = tmp_path / "ds"
    for i in range(3):
        write_dataset(ProfileSet([_profile(f"p{i:02d}")]), ds)
    assert len(_manifests(ds)) == 3  # below the fan-out: nothing merged yet
    write_dataset(ProfileSet([_profile("p03")]), ds)
    assert len(_manifests(ds)) == 1  # the 4th small batch of one size class merges the four
    for i in range(4, 30):
        write_dataset(ProfileSet([_profile(f"p{i:02d}")]), ds)
        assert _most_in_one_class(ds) < v2.AUTO_COMPACT_FANOUT
    # merges land a class up (their names carry what they merged): 30 appends leave 3 classes at
    # most, not one merged batch rewritten every third append
    names = _manifests(ds)
    assert len(names) < 3 * v2.AUTO_COMPACT_FANOUT
    assert max(v2.size_class(v2.small_batch_bytes(n)) for n in names) >= 2
    back = read_dataset(ds)
    assert back.ids == [f"p{i:02d}" for i in range(30)]
    assert back.kernels.height == 30 * 3
    # no file of a replaced batch left behind: a glob reader sees each row once
    listed = {f["path"] for m in v2.snapshot(open_store(ds)).manifests for f in m["files"]}
    assert {p.relative_to(ds).as_posix() for p in ds.rglob("*.parquet")} == listed
    assert pl.scan_parquet(str(ds / "kernels" / "*" / "*.parquet")).select(pl.len()).collect().item() == 90


def test_a_big_batch_is_not_rewritten_with_small_ones(tmp_path, monkeypatch):
    ds = tmp_path / "ds"
    write_dataset(ProfileSet([_profile(f"big{i:03d}", 300) for i in range(200)]), ds)
    big = {p: p.stat().st_ino for p in ds.rglob("*.parquet")}
    big_bytes = sum(p.stat().st_size for p in big)
    big_manifest = _manifests(ds)[0]
    store_cls = type(open_store(ds))
    real_read = store_cls.read_bytes
    reads = []
    monkeypatch.setattr(store_cls, "read_bytes", lambda self, rel: reads.append(rel) or real_read(self, rel))
    for i in range(9):
        write_dataset(ProfileSet([_profile(f"s{i}")]), ds)
    # merges of the newer small batches read only the manifests from the oldest one merged on
    assert any(r.startswith(v2.MANIFESTS) for r in reads) and f"{v2.MANIFESTS}/{big_manifest}" not in reads
    # the big batch sits a size class above the one-profile batches: never merged with them
    one = min(v2.small_batch_bytes(n) for n in _manifests(ds))
    assert v2.size_class(big_bytes) > v2.size_class(one)
    assert all(p.exists() and p.stat().st_ino == ino for p, ino in big.items())
    assert _most_in_one_class(ds) < v2.AUTO_COMPACT_FANOUT
    assert len(read_dataset(ds)) == 209


def test_superseded_copies_are_dropped_by_the_merge(tmp_path):
    ds = tmp_path / "ds"
    write_dataset(ProfileSet([_profile("a", 2), _profile("b", 2)]), ds)
    write_dataset(ProfileSet([_profile("a", 5)]), ds)  # re-ingested: this copy wins
    write_dataset(ProfileSet([_profile("c", 1)]), ds)
    write_dataset(ProfileSet([_profile("d", 1)]), ds)
    info = dataset_info(ds)
    assert (info["batches"], info["superseded_copies"], info["tables"]["kernels"]["rows"]) == (1, 0, 5 + 2 + 1 + 1)
    back = read_dataset(ds)
    assert sorted(back.ids) == ["a", "b", "c", "d"]
    assert back.kernels.filter(pl.col("profile_id") == "a").height == 5


def test_a_merge_interrupted_before_deleting_is_read_right_and_tidied_later(tmp_path, monkeypatch, caplog):
    ds = tmp_path / "ds"
    for i in range(3):
        write_dataset(ProfileSet([_profile(f"p{i}")]), ds)
    store_cls = type(open_store(ds))
    real_remove = store_cls.remove

    def crash(self, rel):
        raise OSError("killed")

    monkeypatch.setattr(store_cls, "remove", crash)
    write_dataset(ProfileSet([_profile("p3")]), ds)  # the append itself succeeded
    assert "automatic compaction stopped (killed)" in caplog.text
    # the merged batch was committed, the four it replaces are still there: each row read once
    assert len(_manifests(ds)) == 5
    assert read_dataset(ds).ids == ["p0", "p1", "p2", "p3"]
    assert profaudit.scan(ds, "kernels").collect().height == 12
    assert dataset_info(ds)["batches"] == 1
    monkeypatch.setattr(store_cls, "remove", real_remove)
    # the next append's auto-compaction finishes the crashed merge (merges nothing new) ...
    assert v2.auto_compact(open_store(ds))["merges"] == 0
    assert len(_manifests(ds)) == 1
    listed = {f["path"] for m in v2.snapshot(open_store(ds)).manifests for f in m["files"]}
    assert {p.relative_to(ds).as_posix() for p in ds.rglob("*.parquet")} == listed
    assert read_dataset(ds).ids == ["p0", "p1", "p2", "p3"]
    # ... and running it again, or `compact`, finds nothing left to do
    assert v2.auto_compact(open_store(ds)) == {"merges": 0, "batches_rewritten": 0, "batches_dropped": 0, "files_removed": 0}
    r = compact_dataset(ds, orphan_age_s=0)
    assert (r["batches_after"], r["batches_rewritten"], r["orphans_removed"]) == (1, 0, 0)


def test_full_batches_are_left_alone_and_an_append_with_nothing_due_reads_no_manifest(tmp_path, monkeypatch):
    ds = tmp_path / "ds"
    # a tiny target makes every batch "full" (not under half the target): never merged automatically
    for i in range(5):
        write_dataset(ProfileSet([_profile(f"p{i}")]), ds, target_file_bytes=64)
    assert [v2.small_batch_bytes(n) for n in _manifests(ds)] == [None] * 5
    store_cls = type(open_store(ds))
    real_read = store_cls.read_bytes
    reads = []
    monkeypatch.setattr(store_cls, "read_bytes", lambda self, rel: reads.append(rel) or real_read(self, rel))
    write_dataset(ProfileSet([_profile("p5")]), ds, target_file_bytes=64)
    assert not [r for r in reads if r.startswith(v2.MANIFESTS)]
    assert dataset_info(ds)["batches"] == 6


def test_fan_out_below_two_is_refused(tmp_path):
    write_dataset(ProfileSet([_profile("a")]), tmp_path / "ds")
    with pytest.raises(UsageError, match="at least 2"):
        v2.auto_compact(open_store(tmp_path / "ds"), fanout=1)


def test_an_ingest_on_an_executor_auto_compacts_too(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from profaudit.fleet import ingest

    ds = tmp_path / "ds"
    with ThreadPoolExecutor(2) as ex:
        for i in range(5):
            log = tmp_path / f"log{i}.csv"
            log.write_text("iteration,time_ms\n" + "".join(f"{j},{1.0 + 0.01 * (i + j)}\n" for j in range(10)))
            ingest([str(log)], ds, executor=ex)
    assert len(_manifests(ds)) < v2.AUTO_COMPACT_FANOUT
    back = read_dataset(ds)
    assert len(back) == 5 and back.samples.height == 50


def test_a_profile_ingested_again_and_again_drops_its_old_batches_instead_of_merging(tmp_path, monkeypatch):
    ds = tmp_path / "ds"
    # its first copy shares a batch with live profiles: that batch is kept and read filtered
    write_dataset(ProfileSet([*(_profile(f"o{i}", 4) for i in range(3)), _profile("again", 2)]), ds)
    merges = []
    real_merge = v2._merge_batches
    monkeypatch.setattr(v2, "_merge_batches", lambda *a, **k: merges.append(a[2]) or real_merge(*a, **k))
    for n in range(3, 15):
        write_dataset(ProfileSet([_profile("again", n)]), ds)
        back = read_dataset(ds)
        # the newest copy only, every time; the other profiles untouched
        assert sorted(back.ids) == ["again", "o0", "o1", "o2"]
        assert back.kernels.filter(pl.col("profile_id") == "again").height == n
        assert len(_manifests(ds)) < v2.AUTO_COMPACT_FANOUT
    # whole batches of superseded copies were deleted, never read and rewritten
    assert merges == []
    listed = {f["path"] for m in v2.snapshot(open_store(ds)).manifests for f in m["files"]}
    assert {p.relative_to(ds).as_posix() for p in ds.rglob("*.parquet")} == listed
    assert profaudit.scan(ds, "kernels").collect().height == 3 * 4 + 14
    # the first batch's copy, plus dead batches not due yet (they go when their class is due)
    assert 1 <= dataset_info(ds)["superseded_copies"] < v2.AUTO_COMPACT_FANOUT


def test_a_batch_partly_superseded_is_merged_and_a_batch_of_no_profiles_is_kept():
    snap = v2.Snapshot([{"batch": "b1", "profiles": [{"profile_id": "a"}, {"profile_id": "b"}]}, {"batch": "b2", "profiles": [{"profile_id": "a"}]}, {"batch": "b3", "profiles": []}], {"a": "b2", "b": "b1"})
    assert [v2._dead(m, snap) for m in snap.manifests] == [False, False, False]
    snap.owner["b"] = "b2"
    assert v2._dead(snap.manifests[0], snap)


def test_a_merged_batch_is_named_by_what_it_merged_but_full_only_by_its_own_bytes():
    files = [{"bytes": 1000}]
    assert v2.manifest_name("B", files, 64_000) == "B.s1000.json"
    assert v2.manifest_name("B", files, 64_000, tier_bytes=4000) == "B.s4000.json"
    # merged overheads past half the target: still small (merged again), as its bytes are
    assert v2.manifest_name("B", files, 64_000, tier_bytes=90_000) == "B.s90000.json"
    assert v2.manifest_name("B", [{"bytes": 40_000}], 64_000, tier_bytes=90_000) == "B.f40000.json"
