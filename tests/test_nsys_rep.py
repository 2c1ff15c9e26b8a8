"""`.nsys-rep` / `.qdrep`: the export through nsys (a fake `nsys` on PATH stands in for the real one
here), its cache, and the one-line errors when nsys is missing or fails."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

import profaudit
from conftest import assert_one_line_error, corpus_files, corpus_ids, run_cli
from nsys_synth import rich_db
from profaudit.errors import InputError
from profaudit.parsers import find_parser, nsys_rep, probe

REPS = corpus_files("nsys-rep")

FAKE_NSYS = """#!{python}
import os, shutil, sys
args = sys.argv[1:]
with open(os.environ["FAKE_NSYS_LOG"], "a") as log:
    log.write(" ".join(args) + "\\n")
if os.environ.get("FAKE_NSYS_FAIL"):
    print("Importer error: cannot open report", file=sys.stderr)
    sys.exit(1)
assert args[:3] == ["export", "--type", "sqlite"], args
out = args[args.index("-o") + 1]
shutil.copy(os.environ["FAKE_NSYS_SOURCE"], out)
"""


@pytest.fixture
def fake_nsys(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "nsys"
    exe.write_text(FAKE_NSYS.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "nsys.log"
    log.write_text("")
    source = rich_db(tmp_path / "export_source.sqlite")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_NSYS_LOG", str(log))
    monkeypatch.setenv("FAKE_NSYS_SOURCE", str(source))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("PROFAUDIT_CACHE_DIR", raising=False)
    monkeypatch.delenv("PROFAUDIT_NSYS", raising=False)
    return log


@pytest.fixture
def no_nsys(tmp_path, monkeypatch):
    empty = tmp_path / "empty_bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("PROFAUDIT_NSYS", raising=False)


def _report(path: Path, payload: bytes = b"") -> Path:
    path.write_bytes(nsys_rep.REP_MAGIC + b" 2024.5.1\n\x00\x01binary body" + payload)
    return path


def test_sniff_by_header(tmp_path):
    rep = _report(tmp_path / "run.nsys-rep")
    assert find_parser(rep) is nsys_rep.PARSER
    renamed = _report(tmp_path / "run.bin")
    assert nsys_rep.PARSER.sniff(probe(renamed))


@pytest.mark.parametrize("path", REPS, ids=corpus_ids(REPS))
def test_corpus_reports_are_recognised(path):
    assert find_parser(path) is nsys_rep.PARSER


def test_without_nsys_one_line_says_how_to_export(tmp_path, no_nsys):
    rep = _report(tmp_path / "run.qdrep")
    res = run_cli("kernels", rep)
    assert_one_line_error(res, "nsys export --type sqlite -o run.sqlite run.qdrep")
    assert "not on PATH" in res.err


def test_named_nsys_that_does_not_exist(tmp_path, no_nsys, monkeypatch):
    monkeypatch.setenv("PROFAUDIT_NSYS", str(tmp_path / "nowhere" / "nsys"))
    assert_one_line_error(run_cli("kernels", _report(tmp_path / "run.nsys-rep")), "given by PROFAUDIT_NSYS does not exist")


def test_export_through_nsys_and_cache(tmp_path, fake_nsys):
    rep = _report(tmp_path / "run.nsys-rep")
    ps = profaudit.load(rep)
    p = next(iter(ps))
    assert p.metadata["format"] == "nsys-rep" and p.metadata["path"] == str(rep)
    assert p.kernels.height == 4 and p.ranges.height == 10  # the exported database was read
    export = Path(p.metadata["sqlite_export"])
    assert export.parent == tmp_path / "cache" / "profaudit" / "nsys-export"
    assert export.name == nsys_rep.file_digest(rep) + ".sqlite"
    calls = fake_nsys.read_text().splitlines()
    assert len(calls) == 1 and calls[0].endswith(str(rep)) and "--force-overwrite true" in calls[0]
    # loaded again: the cache answers, nsys is not run
    again = next(iter(profaudit.load(rep)))
    assert again.kernels.equals(p.kernels)
    assert len(fake_nsys.read_text().splitlines()) == 1
    # changed bytes: a new export
    _report(rep, b"more")
    profaudit.load(rep)
    assert len(fake_nsys.read_text().splitlines()) == 2
    assert sorted(x.name for x in export.parent.iterdir() if not x.name.startswith(".")) == sorted(
        {export.name, nsys_rep.file_digest(rep) + ".sqlite"}
    )


def test_cache_is_not_written_next_to_a_read_only_input(tmp_path, fake_nsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    rep = _report(ro / "run.nsys-rep")
    ro.chmod(0o555)
    try:
        p = next(iter(profaudit.load(rep)))
        assert p.kernels.height == 4
        assert [x.name for x in ro.iterdir()] == ["run.nsys-rep"]
    finally:
        ro.chmod(0o755)


def test_nsys_given_by_option(tmp_path, fake_nsys, monkeypatch):
    exe = shutil.which("nsys")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    p = next(iter(profaudit.load(_report(tmp_path / "run.nsys-rep"), nsys=exe)))
    assert p.kernels.height == 4 and p.metadata["nsys_exporter"] == exe


def test_failed_export_is_one_line_and_leaves_no_cache(tmp_path, fake_nsys, monkeypatch):
    monkeypatch.setenv("FAKE_NSYS_FAIL", "1")
    rep = _report(tmp_path / "run.nsys-rep")
    res = run_cli("kernels", rep)
    assert_one_line_error(res, "`nsys export --type sqlite` failed: Importer error: cannot open report")
    folder = tmp_path / "cache" / "profaudit" / "nsys-export"
    assert not folder.exists() or list(folder.iterdir()) == []
    with pytest.raises(InputError):
        profaudit.load(rep)


@pytest.mark.skipif(shutil.which("nsys") is None, reason="nsys is not installed")
@pytest.mark.corpus
@pytest.mark.parametrize("path", REPS, ids=corpus_ids(REPS))
def test_real_nsys_export_matches_paired_sqlite(path, tmp_path, monkeypatch):
    import sqlite3

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    p = next(iter(profaudit.load(path)))
    pair = path.parent.parent / "nsys-sqlite" / (path.name.rsplit(".", 1)[0] + ".sqlite")
    if not pair.is_file():
        pytest.skip("no paired SQLite export in the corpus")
    con = sqlite3.connect(f"file:{pair}?mode=ro&immutable=1", uri=True)
    try:
        has = con.execute("SELECT count(*) FROM sqlite_master WHERE name='CUPTI_ACTIVITY_KIND_KERNEL'").fetchone()[0]
        n = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0] if has else 0
    finally:
        con.close()
    assert p.kernels.height == n


LFS_POINTER = b"version https://git-lfs.github.com/spec/v1\noid sha256:a1c2af0d6058114d6a1c2a21e86fbe5812197ea2d6e4293dcf997dd24db63123\nsize 552960\n"


@pytest.mark.parametrize("name", ["report1.nsys-rep", "report1.qdrep", "report1.sqlite"])
def test_git_lfs_pointer_says_so(tmp_path, no_nsys, name):
    """Reports committed through Git LFS and cloned without it are 130-byte pointer files."""
    f = tmp_path / name
    f.write_bytes(LFS_POINTER)
    assert_one_line_error(run_cli("kernels", f), "Git LFS pointer to a 552960-byte file")


def test_report_that_is_not_one_says_so(tmp_path, no_nsys):
    f = tmp_path / "run.nsys-rep"
    f.write_text("<html><body>404</body></html>")
    assert_one_line_error(run_cli("kernels", f), "not an Nsight Systems report")
    (tmp_path / "empty.qdrep").write_bytes(b"")
    assert_one_line_error(run_cli("kernels", tmp_path / "empty.qdrep"), "empty file")


def test_without_nsys_points_at_a_sibling_export(tmp_path, no_nsys):
    rep = _report(tmp_path / "report3.nsys-rep")
    (tmp_path / "report3.sqlite").write_bytes(b"")
    assert_one_line_error(run_cli("kernels", rep), "a report3.sqlite lies next to it")
