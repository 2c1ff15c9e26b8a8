"""profaudit.filekind: the stat-and-classify step the regular-file checks share (folder readers,
the dataset store and Parquet opens, device-spec files). Each caller words its own message; these
tests pin what they are all told."""

from __future__ import annotations

import errno
import os

import pytest

from profaudit.filekind import FILE, FOLDER, OTHER, file_kind


def test_files_folders_and_the_rest(tmp_path):
    f = tmp_path / "a.csv"
    f.write_text("x\n")
    assert file_kind(f) == FILE and file_kind(str(f)) == FILE
    assert file_kind(tmp_path) == FOLDER
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert file_kind(fifo) == OTHER  # classified without opening it: an open would block
    assert file_kind("/dev/null") == OTHER


def test_links_are_followed(tmp_path):
    f = tmp_path / "a.csv"
    f.write_text("x\n")
    (tmp_path / "to_file").symlink_to(f)
    (tmp_path / "to_folder").symlink_to(tmp_path)
    assert file_kind(tmp_path / "to_file") == FILE and file_kind(tmp_path / "to_folder") == FOLDER


@pytest.mark.parametrize("how, code", [("dangling", errno.ENOENT), ("loop", errno.ELOOP), ("missing", errno.ENOENT)])
def test_what_cannot_be_stat_raises_its_oserror(tmp_path, how, code):
    p = tmp_path / how
    if how == "dangling":
        p.symlink_to(tmp_path / "nowhere")
    elif how == "loop":
        p.symlink_to(p)
    with pytest.raises(OSError) as exc:
        file_kind(p)
    assert exc.value.errno == code
