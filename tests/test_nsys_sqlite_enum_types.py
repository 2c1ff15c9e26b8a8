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


@pytest.fixture
def export(tmp_path):
    if not SEED.is_file():
        pytest.skip("corpus export absent")
    out = tmp_path / "report1.sqlite"
    shutil.copyfile(SEED, out)
    return out


@pytest.mark.parametrize("update, message", [
    ("UPDATE ENUM_CUDA_MEM_KIND SET label = X'00ff' WHERE id = 0", "ENUM_CUDA_MEM_KIND: the label of id 0 is a BLOB, expected text"),
    ("UPDATE ENUM_CUDA_MEM_KIND SET label = X'' WHERE id = 1", "ENUM_CUDA_MEM_KIND: the label of id 1 is a BLOB, expected text"),
])
def test_a_damaged_enum_value_is_one_line(export, update, message):
    with sqlite3.connect(export) as con:
        con.execute(update)
    with pytest.raises(InputError) as got:
        profaudit.load(export)
    assert message in str(got.value) and "\n" not in str(got.value)


def test_a_null_label_still_loads(export):
    with sqlite3.connect(export) as con:
        con.execute("UPDATE ENUM_CUDA_MEM_KIND SET label = NULL WHERE id = 0")
    assert profaudit.load(export).table("kernels").height > 0
