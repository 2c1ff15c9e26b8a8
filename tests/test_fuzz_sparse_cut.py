"""A cut that dropped only zero bytes and was then padded back with zeros (tests/fuzz/hostile.py's
sparse file) lost nothing: the harness must not judge its whole load a silent partial (s19 fuzz
seed 3122, rocpd #924 and #1280: the last 56 and 35 bytes of a 100 KB database, all zeros, cut,
then a 5 GiB / 1 GiB sparse file whose first 100 KB were the seed's bytes exactly). A cut that
dropped anything else, or one nothing was padded back onto, stays a cut."""

from __future__ import annotations

import os
import sys

import pytest

from tests.fuzz.harness import _zeros_give_back

SEED = b"SQLite format 3\x00" + bytes(range(256)) * 8 + b"\x00" * 64


def _sparse(path, data: bytes, size: int = 1 << 30):
    path.write_bytes(data)
    os.truncate(path, size)
    return path


def test_a_cut_of_zeros_padded_back_with_zeros_lost_nothing(tmp_path):
    data = SEED[:-40]
    assert _zeros_give_back(SEED, data, _sparse(tmp_path / "db", data))


def test_a_cut_that_dropped_other_bytes_is_a_cut(tmp_path):
    data = SEED[:-100]  # 36 bytes of the seed's content go with the zeros
    assert not _zeros_give_back(SEED, data, _sparse(tmp_path / "db", data))


def test_a_cut_nothing_was_padded_onto_is_a_cut(tmp_path):
    data = SEED[:-40]
    (tmp_path / "db").write_bytes(data)
    assert not _zeros_give_back(SEED, data, tmp_path / "db")


def test_bytes_that_are_no_cut_of_the_seed_are_not_judged(tmp_path):
    data = b"X" + SEED[1:-40]
    assert not _zeros_give_back(SEED, data, _sparse(tmp_path / "db", data))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mkfifo")
def test_a_fifo_is_not_opened(tmp_path):
    # opening a FIFO for reading would wait for a writer for ever
    os.mkfifo(tmp_path / "db")
    assert not _zeros_give_back(SEED, SEED[:-40], tmp_path / "db")
