"""A cut that dropped only zero bytes and was then padded back with zeros (tests/fuzz/hostile.py's
sparse file) lost nothing: the harness must not judge its whole load a silent partial (s19 fuzz
seed 3122, rocpd #924 and #1280: the last 56 and 35 bytes of a 100 KB database, all zeros, cut,
then a 5 GiB / 1 GiB sparse file whose first 100 KB were the seed's bytes exactly). A cut that
dropped other bytes and was padded back has every position of the seed, the cut ones zeroed: an
overwrite, as a bit flip is, not a cut (nsys-sqlite #2338). One nothing was padded back onto stays a cut."""

from __future__ import annotations

import os
import sys

import pytest

from tests.fuzz.harness import _padded_back

SEED = b"SQLite format 3\x00" + bytes(range(256)) * 8 + b"\x00" * 64


def _sparse(path, data: bytes, size: int = 1 << 30):
    path.write_bytes(data)
    os.truncate(path, size)
    return path


def test_a_cut_of_zeros_padded_back_with_zeros_lost_nothing(tmp_path):
    data = SEED[:-40]
    assert _padded_back(SEED, data, _sparse(tmp_path / "db", data))


def test_a_cut_of_other_bytes_padded_back_is_an_overwrite_not_a_cut(tmp_path):
    # nsys-sqlite #2338: 36 bytes of the seed's content are zeros now, every position still there
    data = SEED[:-100]
    assert _padded_back(SEED, data, _sparse(tmp_path / "db", data))


def test_a_cut_padded_short_of_the_seed_is_a_cut(tmp_path):
    data = SEED[:-100]
    assert not _padded_back(SEED, data, _sparse(tmp_path / "db", data, len(SEED) - 1))


def test_a_cut_nothing_was_padded_onto_is_a_cut(tmp_path):
    data = SEED[:-40]
    (tmp_path / "db").write_bytes(data)
    assert not _padded_back(SEED, data, tmp_path / "db")


def test_bytes_that_are_no_cut_of_the_seed_are_not_judged(tmp_path):
    data = b"X" + SEED[1:-40]
    assert not _padded_back(SEED, data, _sparse(tmp_path / "db", data))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mkfifo")
def test_a_fifo_is_not_opened(tmp_path):
    # opening a FIFO for reading would wait for a writer for ever
    os.mkfifo(tmp_path / "db")
    assert not _padded_back(SEED, SEED[:-40], tmp_path / "db")
