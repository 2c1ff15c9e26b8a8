"""An .ncu-rep whose file name is not UTF-8 (bytes kept as surrogate escapes): ncu_report takes a
name only as UTF-8 text (SWIG's `char const *`) and refused it with "argument 1 of type 'char const
*'", a wrong reason (fuzz s19, D). The reader now opens it through a link with a plain name."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import corpus_file


def _badly_named_copy(tmp_path) -> tuple[Path, Path]:
    src = corpus_file("ncu-rep", "DarrenLu666888")
    bad = Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9\xff.ncu-rep"))
    shutil.copyfile(src, bad)
    return src, bad


@pytest.mark.corpus
def test_a_report_whose_name_is_not_utf8_loads(tmp_path, monkeypatch):
    pytest.importorskip("ncu_report")
    import tempfile

    import profaudit

    src, bad = _badly_named_copy(tmp_path)
    want = next(iter(profaudit.load(src, parallel=False)))
    # the link's temporary folder goes where tempfile puts folders: a folder of this test's, so
    # that its removal is seen (review F19-7: the check looked in tmp_path, where no link is made)
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    links = []
    real_symlink = os.symlink

    def symlink(target, link, *args, **kw):
        links.append(Path(link))
        return real_symlink(target, link, *args, **kw)

    monkeypatch.setattr(os, "symlink", symlink)
    got = next(iter(profaudit.load(bad, parallel=False)))
    for name, df in want.tables.items():
        assert got.tables[name].drop("profile_id").equals(df.drop("profile_id")), name
    assert {k: v for k, v in got.metadata.items() if k != "path"} == {k: v for k, v in want.metadata.items() if k != "path"}
    assert got.metadata["path"].endswith("caf\\xe9\\xff.ncu-rep")
    # read through one link with a plain name, made in that folder, and gone with its folder
    assert len(links) == 1 and links[0].parent.parent == temp and links[0].name == "report.ncu-rep", links
    assert not list(temp.iterdir())


@pytest.mark.corpus
def test_the_readers_line_names_the_users_file(tmp_path, monkeypatch):
    pytest.importorskip("ncu_report")
    import profaudit
    from profaudit.errors import InputError
    from profaudit.parsers import ncu_rep

    _src, bad = _badly_named_copy(tmp_path)

    def damaged(path, work, on_chunk, what, **kw):
        raise InputError(work.args[0], "corrupt Nsight Compute report: the reader returned an unreadable metric name")

    monkeypatch.setattr(ncu_rep, "run_isolated", damaged)
    with pytest.raises(InputError) as got:
        profaudit.load(bad, parallel=False)
    assert got.value.path == os.fspath(bad) and "unreadable metric name" in got.value.problem
