"""orjson segfaults (exit 139) instead of raising MemoryError when an allocation fails, which happens
under an address-space limit (ulimit -v, RLIMIT_AS) or strict overcommit. Whole JSON documents are
therefore parsed only when the room left covers a generous multiple of their size: otherwise one
InputError line names the file, the size and the limit (s17 fuzz: neuron_json crash-451)."""

from __future__ import annotations

import sys

import pytest

from profaudit.errors import InputError
from profaudit.parsers import textsafe
from tests.address_space import run_with_room


def _records(path, n):
    path.write_text("[" + ",".join('{"kernel":"k%d","time_ms":%d.5}' % (i % 7, i % 100) for i in range(n)) + "]")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status are Linux's")
def test_a_document_too_big_for_the_address_space_left_is_one_line_not_a_segfault(tmp_path):
    # 37 MB of small records: orjson needs ~0.8-1.1 GB of address space for them, and with 500 MB
    # left it segfaulted (exit 139) before the check; a limit that leaves 500 MB is now one line
    doc = tmp_path / "timings.json"
    _records(doc, 1_200_000)
    out = run_with_room(doc, 500)
    assert out.returncode == 2, (out.returncode, out.stdout[-500:], out.stderr[-2000:])
    line = out.stdout.strip()
    assert "\n" not in line and str(doc) in line
    assert "37.1 MB" in line and "memory limit" in line and "ulimit -v" in line


def test_no_limit_no_check(monkeypatch, tmp_path):
    monkeypatch.setattr(textsafe, "_address_space_left", lambda: None)
    textsafe.check_orjson_room(tmp_path / "x.json", 10 << 30)  # nothing to refuse against


def test_the_room_needed_is_48_times_the_document_plus_256_mib(monkeypatch, tmp_path):
    n = 10 << 20
    need = 48 * n + (256 << 20)
    monkeypatch.setattr(textsafe, "_address_space_left", lambda: need)
    textsafe.check_orjson_room(tmp_path / "x.json", n)
    monkeypatch.setattr(textsafe, "_address_space_left", lambda: need - 1)
    with pytest.raises(InputError, match=r"x\.json: a JSON document of 10\.5 MB needs up to 772 MB of memory to read"):
        textsafe.check_orjson_room(tmp_path / "x.json", n)


def test_documents_under_a_mebibyte_are_never_checked(monkeypatch, tmp_path):
    monkeypatch.setattr(textsafe, "_address_space_left", lambda: 0)
    textsafe.check_orjson_room(tmp_path / "x.json", (1 << 20) - 1)
    with pytest.raises(InputError):
        textsafe.check_orjson_room(tmp_path / "x.json", 1 << 20)


def test_the_room_left_reads_this_process_limit(monkeypatch):
    import resource

    monkeypatch.setattr(resource, "getrlimit", lambda which: (1 << 40, resource.RLIM_INFINITY))
    left = textsafe._address_space_left()
    assert left is not None and 0 < left < 1 << 40
