"""Links inside a folder the loader walks (profaudit/loader.py `expand`): a link to a folder is
walked like the folder itself, each folder once however it is reached, so a results folder of
links to runs kept elsewhere (cluster scratch space) loads every run, and a link back to an
ancestor ends instead of going round. Review E17-3 (session 17): 08a1a8a had stopped walking
every link to a folder met inside a walked folder, and the profiles behind them were dropped
without a word."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# three different timing logs shipped with the repository (three profiles)
_LOGS = sorted((REPO / "sample_reports" / "bench_cpu").rglob("*.jsonl"))[:3]


def _logs() -> list[Path]:
    assert len(_LOGS) == 3, _LOGS
    return _LOGS


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """results/ holding one log, a link to a log, links to two folders of runs elsewhere, a second
    link to one of them, and a link back to results/ itself."""
    a, b, c = _logs()
    scratch, res = tmp_path / "scratch", tmp_path / "results"
    for name, log in (("run1", b), ("run2", c)):
        (scratch / name).mkdir(parents=True)
        shutil.copyfile(log, scratch / name / "t.jsonl")
    res.mkdir()
    shutil.copyfile(a, res / "a.jsonl")
    os.symlink(scratch / "run1" / "t.jsonl", res / "file_link.jsonl")
    os.symlink(scratch / "run1", res / "run1")
    os.symlink(scratch / "run2", res / "run2")
    os.symlink(scratch / "run2", res / "run2_again")
    os.symlink(".", res / "loop")
    return res


def test_links_to_folders_are_walked_each_folder_once(results):
    from profaudit.loader import expand

    got = [p.relative_to(results).as_posix() for p, _ in expand([str(results)])]
    # the link to run1's file and run1/t.jsonl are one file (one input); run2 is walked once
    # through the first link met; the link back to results/ adds nothing
    assert got == ["a.jsonl", "file_link.jsonl", "run2/t.jsonl"]


def test_every_run_behind_a_link_is_loaded(results):
    import profaudit

    # three different logs: the one in results/ and the two behind links to folders
    assert len(profaudit.load(results, parallel=False)) == 3


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc")
def test_a_link_to_proc_inside_a_walked_folder_is_skipped(results):
    from profaudit.loader import expand

    os.symlink("/proc/self", results / "proc")
    got = [p.relative_to(results).as_posix() for p, _ in expand([str(results)])]
    assert got == ["a.jsonl", "file_link.jsonl", "run2/t.jsonl"]
