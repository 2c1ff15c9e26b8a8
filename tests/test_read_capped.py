"""textsafe.read_capped: the one bounded read shared by the whole-document timing readers (64 MiB
JSON limit) and rocprof-compute's roofline.csv (1 MiB). Whatever the limit, no more than limit + 1
bytes are read, so a device with no size (/dev/zero) is refused instead of read for ever."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from profaudit.errors import InputError
from profaudit.parsers import textsafe


def test_the_limit_argument_bounds_the_read(tmp_path):
    p = tmp_path / "doc.json"
    p.write_bytes(b"x" * (1 << 20))
    assert textsafe.read_capped(p, "doc", 1 << 20) == b"x" * (1 << 20)  # exactly the limit is taken
    p.write_bytes(b"x" * ((1 << 20) + 1))
    with pytest.raises(InputError, match=r"doc over 1 MiB: larger than a timing document"):
        textsafe.read_capped(p, "doc", 1 << 20)


def test_a_refusal_names_the_size_the_file_system_reports(tmp_path):
    p = tmp_path / "roofline.csv"
    p.write_bytes(b"y" * 5000)
    seen = []
    with pytest.raises(InputError, match="too big: 5000"):
        textsafe.read_capped(p, "roofline.csv", 10, decompress=False, too_big=lambda n: seen.append(n) or f"too big: {n}")
    assert seen == [5000]  # the file's size, not the 11 bytes read


def test_decompress_bounds_the_decompressed_bytes(tmp_path):
    p = tmp_path / "doc.json.gz"
    p.write_bytes(gzip.compress(b"z" * 10_000))
    assert p.stat().st_size < 200
    with pytest.raises(InputError, match="once decompressed"):
        textsafe.read_capped(p, "doc", 9_999)
    # without decompress the gzip bytes themselves are what is bounded (and returned)
    assert textsafe.read_capped(p, "doc", 9_999, decompress=False) == p.read_bytes()


def test_an_unreadable_file_is_none_when_quiet_and_its_oserror_otherwise(tmp_path):
    missing = tmp_path / "nope.json"
    assert textsafe.read_capped(missing, "doc") is None
    with pytest.raises(FileNotFoundError):
        textsafe.read_capped(missing, "doc", quiet=False)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_device_without_a_size_is_refused_not_read_for_ever():
    with pytest.raises(InputError, match="over 1 MiB"):
        textsafe.read_capped("/dev/zero", "doc", 1 << 20, decompress=False)


@pytest.mark.parametrize("limit, shown", [(99, "99 bytes"), (1_000_000, "1,000,000 bytes"), (1 << 20, "1 MiB"), (64 << 20, "64 MiB"),
                                          ((1 << 20) + 1, "1,048,577 bytes")])
def test_the_refusal_prints_the_limit_as_it_is(limit, shown):
    # review E17-1: `limit >> 20` printed any limit under 1 MiB as "0 MiB"
    assert textsafe.size_text(limit) == shown


def test_a_limit_under_a_mebibyte_is_printed_in_bytes(tmp_path):
    p = tmp_path / "doc.json"
    p.write_bytes(b"x" * 100)
    with pytest.raises(InputError, match=r"doc over 99 bytes: larger than a timing document"):
        textsafe.read_capped(p, "doc", 99)
