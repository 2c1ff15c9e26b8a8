"""Batch manifests (issue 12): sizes in every name, so manifests named by an older profaudit
(`<batch>.json`) are renamed once and their small batches merged like any other; each manifest is
parsed and shape-checked once, by the dataset reader itself; one set of target checks for every
writer of a dataset (a local one and a cluster ingest)."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polars as pl
import pytest

import profaudit
from profaudit import dataset_v2 as v2
from profaudit.dataset import dataset_info, read_dataset, write_dataset
from profaudit.datastore import open_store
from profaudit.errors import InputError, UsageError
from profaudit.profile import Profile, ProfileSet


def _profile(pid: str, n: int = 3) -> Profile:
    k = pl.DataFrame({"kernel_id": list(range(n)), "name": [f"k{i}" for i in range(n)], "duration_ns": [100.0 + i for i in range(n)]})
    return Profile(pid, {"source": "test", "tool": "synthetic", "device_name": "NVIDIA H100 80GB HBM3"}, {"kernels": k})


def _manifests(ds: Path) -> list[str]:
    return sorted(p.name for p in (ds / v2.MANIFESTS).glob("*.json"))


def _to_old_names(ds: Path) -> None:
    """Rename every manifest as profaudit named them before sizes were in names."""
    for p in (ds / v2.MANIFESTS).glob("*.json"):
        p.rename(p.with_name(p.name.split(".", 1)[0] + ".json"))


def test_every_new_manifest_name_carries_its_size_class(tmp_path):
    ds = write_dataset(ProfileSet([_profile("a")]), tmp_path / "small")
    (name,) = _manifests(ds)
    assert v2.small_batch_bytes(name) == dataset_info(ds)["bytes"]
    full = write_dataset(ProfileSet([_profile("a")]), tmp_path / "full", target_file_bytes=64)
    (name,) = _manifests(full)
    assert name.endswith(f".f{dataset_info(full)['bytes']}.json") and v2.small_batch_bytes(name) is None


def test_old_named_small_batches_are_renamed_once_and_auto_compacted(tmp_path, monkeypatch):
    ds = tmp_path / "ds"
    for i in range(3):
        v2.append(ProfileSet([_profile(f"p{i}")]), open_store(ds), auto_compact_fanout=None)
    _to_old_names(ds)
    assert all(v2.small_batch_bytes(n) is None for n in _manifests(ds))  # invisible to the names rule
    before = read_dataset(ds)
    write_dataset(ProfileSet([_profile("p3")]), ds)  # the fourth small batch of one size class
    names = _manifests(ds)
    assert len(names) == 1 and v2.small_batch_bytes(names[0]) is not None  # merged into one
    after = read_dataset(ds)
    assert after.ids == [*before.ids, "p3"] and after.kernels.height == 4 * 3
    # renamed for good: the next append with nothing due reads no manifest
    store_cls = type(open_store(ds))
    real = store_cls.read_bytes
    reads = []
    monkeypatch.setattr(store_cls, "read_bytes", lambda self, rel: reads.append(rel) or real(self, rel))
    write_dataset(ProfileSet([_profile("p4")]), ds)
    assert not [r for r in reads if r.startswith(v2.MANIFESTS)]


def test_an_old_named_full_batch_gets_its_full_name_and_is_left_alone(tmp_path):
    ds = write_dataset(ProfileSet([_profile("big", 50)]), tmp_path / "ds", target_file_bytes=64)
    _to_old_names(ds)
    (old,) = _manifests(ds)
    names = v2.name_sizes(open_store(ds), [old], 64)
    assert names == _manifests(ds) and names[0].startswith(old[: -len(".json")] + ".f")
    assert read_dataset(ds).ids == ["big"]


def test_a_damaged_manifest_is_one_line_for_every_reader_and_parsed_once(tmp_path, monkeypatch):
    ds = write_dataset(ProfileSet([_profile("a")]), tmp_path / "ds")
    loads = []
    real_loads = json.loads
    monkeypatch.setattr(v2.json, "loads", lambda raw, *a, **k: loads.append(len(raw)) or real_loads(raw, *a, **k))
    assert profaudit.load(ds).ids == ["a"]
    manifest_size = (ds / v2.MANIFESTS / _manifests(ds)[0]).stat().st_size
    assert loads.count(manifest_size) == 1  # the parser no longer parses it a second time
    monkeypatch.setattr(v2.json, "loads", real_loads)
    # a sound manifest never imports the parser registry (its wording of bad JSON is for bad ones)
    probe = "import sys; from profaudit import scan; scan(sys.argv[1], 'kernels', engine='polars'); print('profaudit.parsers' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe, str(ds)], capture_output=True, text=True, check=True).stdout.strip() == "False"
    man = ds / v2.MANIFESTS / _manifests(ds)[0]
    doc = json.loads(man.read_text())
    doc["profiles"][0]["profile_id"] = ["not", "text"]
    man.write_text(json.dumps(doc))
    for read in (lambda: profaudit.load(ds), lambda: profaudit.scan(ds, "kernels", engine="polars"), lambda: dataset_info(ds)):
        with pytest.raises(InputError) as e:
            read()
        assert str(e.value).count("\n") == 0
        assert "broken batch manifest: profiles[0].profile_id: expected text, found a list" in str(e.value)


def test_a_cluster_ingest_checks_its_target_as_a_local_write_does(tmp_path):
    log = tmp_path / "in" / "log.csv"
    log.parent.mkdir()
    log.write_text("iteration,time_ms\n0,1.5\n1,1.6\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("not a dataset")
    with ThreadPoolExecutor(1) as ex:
        for write in (lambda: write_dataset(profaudit.load(log), other), lambda: profaudit.ingest([str(log)], other, executor=ex)):
            with pytest.raises(UsageError, match="not a profaudit dataset"):
                write()
        # replace: built aside and swapped in, the result names the dataset, not the temporary folder
        ds = tmp_path / "ds"
        write_dataset(ProfileSet([_profile("old")]), ds)
        r = profaudit.ingest([str(log)], ds, executor=ex, replace=True)
    assert r.dataset == str(ds) and len(read_dataset(ds)) == 1 and read_dataset(ds).ids != ["old"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
