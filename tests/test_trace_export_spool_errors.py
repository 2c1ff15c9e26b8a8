"""export-trace spools its events to an unnamed file on the target's disk before it writes the
trace (profaudit.trace_export.write_chrome_trace, ea9df41). A failure of that spool (a full disk,
a file-size limit) is the target's problem and must read as the final write's does: one line,
"<target>: cannot write: ...", exit 2. It was an internal error (exit 3) while the writer that
held the whole document said "cannot write" (review G3, session 16)."""

from __future__ import annotations

import errno
import json
import tempfile

import pytest

from tests.conftest import assert_one_line_error
from tests.test_trace_export import synthetic


class _FullDisk:
    """An unnamed temporary file whose writes fail as on a full disk, after `ok` good writes."""

    def __init__(self, ok: int):
        self._f = tempfile.SpooledTemporaryFile()
        self.ok = ok

    def write(self, data: bytes) -> int:
        if self.ok <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.ok -= 1
        return self._f.write(data)

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()
        return False


@pytest.mark.parametrize("ok", [0, 1])
def test_a_full_disk_while_spooling_is_the_targets_cannot_write(tmp_path, monkeypatch, ok):
    from profaudit import trace_export
    from profaudit.errors import InputError

    monkeypatch.setattr(trace_export, "BATCH_ROWS", 1)  # several spool writes: the first or a later one fails
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda **kw: _FullDisk(ok))
    out = tmp_path / "t.json"
    with pytest.raises(InputError) as info:
        trace_export.write_chrome_trace(synthetic(), out)
    assert str(out) in str(info.value) and "cannot write: No space left on device" in str(info.value)
    assert list(tmp_path.iterdir()) == []  # nothing half-written at the target, no temporary sibling


def test_export_trace_on_a_full_disk_is_one_line(tmp_path, monkeypatch, cli):
    trace = tmp_path / "in.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"device": 0, "stream": 7}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 8, "dur": 9},
    ]}))
    out = tmp_path / "out" / "t.json"
    out.parent.mkdir()
    real = tempfile.TemporaryFile
    # only the export's spool (made beside the target): the trace reader spools through it too
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda **kw: _FullDisk(0) if kw.get("dir") == out.parent else real(**kw))
    res = cli("export-trace", str(trace), "-o", str(out))
    assert_one_line_error(res, "cannot write: No space left on device")
    assert "t.json" in res.err
    assert list(out.parent.iterdir()) == []
