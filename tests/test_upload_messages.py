"""Upload messages name the uploaded file, never the server's upload folder (dashboards/uploads.py)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

pytest.importorskip("dash")
from dashboards import uploads  # noqa: E402


class _State:
    """The part of the dashboard state an upload touches: a folder, a cap, a real load."""

    def __init__(self, upload_dir: Path):
        self.upload_dir = upload_dir
        self.max_upload_bytes = 1 << 20

    def add_uploaded_profile(self, path: Path):
        from profaudit.loader import load

        return list(load([str(path)]))

    def forget_upload(self, name: str) -> None:
        pass


def _url(data: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(data).decode()


def test_a_refused_upload_does_not_show_the_upload_folder(tmp_path):
    up = tmp_path / "srv" / "uploads"
    up.mkdir(parents=True)
    st = _State(up)
    # a damaged Nsight Compute report: the parser's line names the stored file
    res = uploads.store_uploads(st, [_url(b"NVR\x00\x05\x00\x00\x00ab")], ["run.ncu-rep"])
    assert len(res) == 1 and not res[0].ok
    assert res[0].text.startswith("run.ncu-rep: truncated Nsight Compute report"), res[0].text
    assert str(tmp_path) not in res[0].text
    # a damaged archive member: the line names the member inside the archive, not the staging folder
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("run/a.ncu-rep", b"NVR\x00\x05\x00\x00\x00ab")
    res = uploads.store_uploads(st, [_url(buf.getvalue())], ["run.zip"])
    assert not res[0].ok and str(tmp_path) not in res[0].text, res[0].text
    assert "a.ncu-rep" in res[0].text


def test_server_paths_hidden():
    d = Path("/srv/profaudit/uploads")
    msg = "x: nothing loaded from the archive: /srv/profaudit/uploads/.staging-ab12/run/a.json: not valid JSON"
    assert uploads.server_paths_hidden(msg, d) == "x: nothing loaded from the archive: run/a.json: not valid JSON"
    assert uploads.server_paths_hidden("/srv/profaudit/uploads/run.json: bad", d) == "run.json: bad"
    assert uploads.server_paths_hidden("/srv/profaudit/uploads-other/run.json: bad", d) == "/srv/profaudit/uploads-other/run.json: bad"
