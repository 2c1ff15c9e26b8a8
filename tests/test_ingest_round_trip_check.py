"""The fuzz after-stage's ingest check (tests/fuzz/downstream.py `_ingest_round_trip`): a profile
too big to read back beside itself is checked through the lazy scan, and that check must catch
what the whole read-back catches (lost rows, a lost profile) and more (nulls filled, dtypes
changed), while a sound dataset passes both ways. The writer is damaged here on purpose, at the
one place every part goes through (`dataset_v2._parquet_bytes`)."""

from __future__ import annotations

import polars as pl
import pytest

from profaudit import dataset_v2 as v2, schema
from profaudit.errors import InputError
from profaudit.profile import Profile, ProfileSet
from tests.fuzz import downstream


def _profile(pid: str, n: int) -> Profile:
    k = pl.DataFrame({"kernel_id": list(range(n)), "name": [f"k{i % 3}" for i in range(n)],
                      "duration_ns": [None if i % 4 == 0 else float(10 + i) for i in range(n)], "stream": [7] * n})
    m = pl.DataFrame({"kernel_id": [i // 2 for i in range(2 * n)], "metric": ["dram__bytes", "sm__cycles"] * n, "unit": ["byte", "cycle"] * n,
                      "value": [float(i) if i % 5 else None for i in range(2 * n)]})
    r = pl.DataFrame({"name": ["step"] * 3, "kind": ["nvtx_push_pop"] * 3, "start_ns": [0, 10, 20], "end_ns": [5, 15, 25]})
    return Profile(pid, {"source": "nsys", "format": "nsys-sqlite", "device": "H100"}, {"kernels": k, "metrics": m, "ranges": r})


@pytest.fixture(params=["whole", "scanned"])
def mode(request, monkeypatch):
    """Both forms of the check: the whole read-back (small profiles) and the lazy scan (big ones)."""
    if request.param == "scanned":
        monkeypatch.setattr(downstream, "FULL_READ_BACK_MAX_BYTES", 0)
    return request.param


def _damage_parts(monkeypatch, table: str, change):
    """Every part of `table` (told by its columns: the writer writes the schema's) is written as
    `change(rows)`; the manifest keeps the true counts."""
    real = v2._parquet_bytes
    columns = schema.ALL_TABLES[table].names

    def damaged(df):
        return real(change(df) if df.columns == columns else df)

    monkeypatch.setattr(v2, "_parquet_bytes", damaged)


def test_a_sound_dataset_passes(tmp_path, mode):
    ps = ProfileSet([_profile("a", 40), _profile("b", 7)])
    assert downstream._ingest_round_trip(ps, tmp_path / "ds") is None


def test_the_scanned_check_does_not_read_the_dataset_back_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(downstream, "FULL_READ_BACK_MAX_BYTES", 0)
    import profaudit.loader

    def refuse(*a, **k):
        raise AssertionError("read back whole")

    monkeypatch.setattr(profaudit.loader, "read_one", refuse)
    monkeypatch.setattr(v2, "read", refuse)
    assert downstream._ingest_round_trip(ProfileSet([_profile("a", 40)]), tmp_path / "ds") is None


def test_lost_rows_are_found(tmp_path, monkeypatch, mode):
    _damage_parts(monkeypatch, "metrics", lambda df: df.head(df.height - 1))
    problem = downstream._ingest_round_trip(ProfileSet([_profile("a", 40)]), tmp_path / "ds")
    assert problem == "ingest: metrics has 80 rows, 79 after the dataset round trip"


def test_filled_nulls_are_found_by_the_scan(tmp_path, monkeypatch):
    monkeypatch.setattr(downstream, "FULL_READ_BACK_MAX_BYTES", 0)
    _damage_parts(monkeypatch, "kernels", lambda df: df.with_columns(pl.col("duration_ns").fill_null(0.0)))
    problem = downstream._ingest_round_trip(ProfileSet([_profile("a", 40)]), tmp_path / "ds")
    assert problem == "ingest: kernels has 10 nulls in duration_ns, 0 after the dataset round trip"


def test_a_changed_dtype_is_found_by_the_scan(tmp_path, monkeypatch):
    monkeypatch.setattr(downstream, "FULL_READ_BACK_MAX_BYTES", 0)
    _damage_parts(monkeypatch, "metrics", lambda df: df.with_columns(pl.col("value").cast(pl.Utf8)))
    problem = downstream._ingest_round_trip(ProfileSet([_profile("a", 40)]), tmp_path / "ds")
    assert problem == "ingest: table metrics reads back with other columns or dtypes than the schema's: ['value']"


def test_a_lost_profile_is_found_by_the_scan(tmp_path, monkeypatch):
    monkeypatch.setattr(downstream, "FULL_READ_BACK_MAX_BYTES", 0)
    _damage_parts(monkeypatch, "metadata", lambda df: df.head(1))
    problem = downstream._ingest_round_trip(ProfileSet([_profile("a", 4), _profile("b", 3)]), tmp_path / "ds")
    assert problem == "ingest: the dataset's metadata holds 1 profiles, not the 2 written"


def test_a_refusal_is_deliberate_and_an_escape_is_named(tmp_path, monkeypatch, mode):
    ps = ProfileSet([_profile("a", 4)])

    def refused(df):
        raise InputError(tmp_path / "ds", "cannot write: No space left on device")

    monkeypatch.setattr(v2, "_parquet_bytes", refused)
    assert downstream._ingest_round_trip(ps, tmp_path / "ds") is None

    def broken(df):
        raise RuntimeError("writer bug")

    monkeypatch.setattr(v2, "_parquet_bytes", broken)
    assert downstream._ingest_round_trip(ps, tmp_path / "ds2") == "ingest: RuntimeError: writer bug"
