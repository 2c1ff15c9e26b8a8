"""An nsys export's name/value tables (TARGET_INFO_SYSTEM_ENV, META_DATA_CAPTURE, META_DATA_EXPORT) hold
any SQLite value in any cell: their values are read as text, whatever the storage class (fuzz_long s18
final run, seed 2036, nsys-sqlite #2590: values stored as BLOB reached re.search as bytes, a TypeError
that only the loader's catch-all turned into a line)."""

from __future__ import annotations

import sqlite3

import pytest

import profaudit
from tests.test_nsys_sqlite_enum_types import export  # noqa: F401  (the fixture: a copy of the corpus export)

pytestmark = pytest.mark.corpus  # every test here reads a corpus export (skipped where it is absent)
# the metadata these tables feed, and which the corpus export has
_FROM_KV = ("tool_version", "nsys_capture_version", "driver_version", "cuda_version", "host", "command_line")


def _metadata(path) -> dict:
    ps = profaudit.load(path, parallel=False)
    assert len(ps) == 1
    return next(iter(ps)).metadata


def _facts(path):
    md = _metadata(path)
    return {k: md.get(k) for k in _FROM_KV}


def _untyped_env(con: sqlite3.Connection, value_sql: str) -> None:
    """TARGET_INFO_SYSTEM_ENV made again without column types, its values given by `value_sql` (an
    expression over the old row): TEXT affinity turns a number into text as it is stored, and an
    untyped column (the damage that can put anything there) keeps what it is given."""
    for sql in ("CREATE TABLE k AS SELECT * FROM TARGET_INFO_SYSTEM_ENV", "DROP TABLE TARGET_INFO_SYSTEM_ENV",
                "CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid, devStateName, name, nameEnum, value)",
                f"INSERT INTO TARGET_INFO_SYSTEM_ENV SELECT globalVid, devStateName, name, nameEnum, {value_sql} FROM k",
                "DROP TABLE k"):
        con.execute(sql)


@pytest.mark.parametrize("table", ["TARGET_INFO_SYSTEM_ENV", "META_DATA_CAPTURE", "META_DATA_EXPORT"])
def test_values_stored_as_blobs_read_as_their_text(export, table):
    want = _facts(export)
    assert want["driver_version"] and want["cuda_version"] and want["nsys_capture_version"]  # the seed has them
    with sqlite3.connect(export) as con:
        if table not in {r[0] for r in con.execute("SELECT name FROM sqlite_master")}:
            pytest.skip(f"export has no {table}")
        con.execute(f"UPDATE {table} SET value = CAST(value AS BLOB)")
        assert con.execute(f"SELECT DISTINCT typeof(value) FROM {table}").fetchall() == [("blob",)]
    assert _facts(export) == want


def test_numbers_stored_as_numbers_read_as_their_digits(export):
    # 12060 kept an integer and 560.94 a real
    want = _facts(export)
    with sqlite3.connect(export) as con:
        _untyped_env(con, "CASE WHEN name IN ('CudaDriverVersion', 'NvDriverVersion') THEN value + 0 ELSE value END")
        kinds = dict(con.execute("SELECT name, typeof(value) FROM TARGET_INFO_SYSTEM_ENV"
                                 " WHERE name IN ('CudaDriverVersion', 'NvDriverVersion')").fetchall())
        assert kinds == {"CudaDriverVersion": "integer", "NvDriverVersion": "real"}
    assert _facts(export) == want


def test_a_whole_real_reads_as_the_integers_digits(export):
    # 12060.0 is the CUDA driver version 12060 (cuda_version 12.6), not the text '12060.0' (review F18-9)
    want = _facts(export)
    with sqlite3.connect(export) as con:
        _untyped_env(con, "CASE WHEN name = 'CudaDriverVersion' THEN value + 0.0 ELSE value END")
        assert con.execute("SELECT typeof(value), value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'CudaDriverVersion'").fetchall() == [("real", 12060.0)]
    assert _facts(export) == want and want["cuda_version"] == "12.6"


def test_a_null_value_is_no_fact(export):
    with sqlite3.connect(export) as con:
        _untyped_env(con, "CASE WHEN name = 'NvDriverVersion' THEN NULL ELSE value END")
    md = _metadata(export)
    assert md.get("driver_version") is None and md["cuda_version"]
