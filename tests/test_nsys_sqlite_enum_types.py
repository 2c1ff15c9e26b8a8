"""An nsys export's ENUM tables hold any SQLite value in any column: a label that is not text, or an id
that is not an integer, is one line naming the table (fuzz_long s17 seed 2034, nsys-sqlite #2438: a
BLOB label reached polars' String column as a TypeError, the loader's catch-all)."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

import profaudit
from profaudit.errors import InputError
from tests.conftest import CORPUS

SEED = CORPUS / "nsys-sqlite" / "0x822a5b87__test-cuda__report1.sqlite"
pytestmark = pytest.mark.corpus  # every test here reads a corpus export (skipped where it is absent)


@pytest.fixture
def export(tmp_path):
    if not SEED.is_file():
        pytest.skip("corpus export absent")
    out = tmp_path / "report1.sqlite"
    shutil.copyfile(SEED, out)
    return out


# An ENUM table's id is its INTEGER PRIMARY KEY in nsys's schema, so SQLite stores only integers
# there; a table made again without that declaration (the damage that can put anything there) holds
# the corpus rows with the id of memory kind 1 replaced.
_UNTYPED = ("CREATE TABLE k AS SELECT id, name, label FROM ENUM_CUDA_MEM_KIND", "DROP TABLE ENUM_CUDA_MEM_KIND",
            "CREATE TABLE ENUM_CUDA_MEM_KIND (id, name, label)", "INSERT INTO ENUM_CUDA_MEM_KIND SELECT * FROM k", "DROP TABLE k")


@pytest.mark.parametrize("update, message", [
    ("UPDATE ENUM_CUDA_MEM_KIND SET label = X'00ff' WHERE id = 0",
     r"damaged SQLite database: ENUM_CUDA_MEM_KIND.label of id 0 holds b'\x00\xff' where a text label belongs"),
    ("UPDATE ENUM_CUDA_MEM_KIND SET label = X'' WHERE id = 1", "damaged SQLite database: ENUM_CUDA_MEM_KIND.label of id 1 holds b'' where a text label belongs"),
    # worded as every other id cell of an export (_id_cell)
    (_UNTYPED + ("UPDATE ENUM_CUDA_MEM_KIND SET id = 'x' WHERE id = 1",), "damaged SQLite database: ENUM_CUDA_MEM_KIND.id holds 'x' where an integer id belongs"),
    (_UNTYPED + ("UPDATE ENUM_CUDA_MEM_KIND SET id = 1e300 WHERE id = 1",), "damaged SQLite database: ENUM_CUDA_MEM_KIND.id holds 1e+300 where an integer id belongs"),
    (_UNTYPED + ("UPDATE ENUM_CUDA_MEM_KIND SET id = NULL WHERE id = 1",), "damaged SQLite database: ENUM_CUDA_MEM_KIND.id holds None where an integer id belongs"),
])
def test_a_damaged_enum_value_is_one_line(export, update, message):
    with sqlite3.connect(export) as con:
        for sql in (update,) if isinstance(update, str) else update:
            con.execute(sql)
    with pytest.raises(InputError) as got:
        profaudit.load(export)
    assert message in str(got.value) and "\n" not in str(got.value), str(got.value)


def test_an_integral_real_id_is_that_id(export):
    # as every id cell is read: 1.0 is id 1 (the corpus copies its transfers' kinds through it)
    want = profaudit.load(export).table("transfers").drop("profile_id")
    with sqlite3.connect(export) as con:
        for sql in _UNTYPED + ("UPDATE ENUM_CUDA_MEM_KIND SET id = 1.0 WHERE id = 1",):
            con.execute(sql)
        assert con.execute("SELECT typeof(id) FROM ENUM_CUDA_MEM_KIND WHERE id = 1").fetchone() == ("real",)
    got = profaudit.load(export).table("transfers").drop("profile_id")
    assert "Pinned" in got["src_kind"].to_list() + got["dst_kind"].to_list()
    assert got.equals(want)


def test_a_null_label_still_loads(export):
    with sqlite3.connect(export) as con:
        con.execute("UPDATE ENUM_CUDA_MEM_KIND SET label = NULL WHERE id = 0")
    assert profaudit.load(export).table("kernels").height > 0
