"""benchmarks/bench_ncu_parent_ab.py measures what a real read does in the parent: a load replayed on
the captured child messages gives the same tables and metadata as the real isolated read, and a
side process loads the code of the tree it is given (not the installed copy)."""

from __future__ import annotations

import importlib.util
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import corpus_file

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "bench_ncu_parent_ab.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_ncu_parent_ab", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def captured(tmp_path):
    """A small corpus report and its child's messages, captured by the bench."""
    pytest.importorskip("ncu_report")
    report = corpus_file("ncu-rep", "DarrenLu666888")
    messages = tmp_path / "m.pkl"
    _bench()._capture(report, messages)
    return report, messages


@pytest.mark.corpus
def test_replayed_load_is_the_real_one(captured):
    import profaudit
    from profaudit.parsers import ncu_rep

    report, messages = captured
    real = next(iter(profaudit.load(report, parallel=False)))
    path, chunks, res = pickle.loads(messages.read_bytes())
    saved = ncu_rep.run_isolated

    def replay(p, work, on_chunk, what, **kw):
        for ch in chunks:
            on_chunk(ch)
        return res

    ncu_rep.run_isolated = replay
    try:
        again = next(iter(profaudit.load(Path(path), parallel=False)))
    finally:
        ncu_rep.run_isolated = saved
    assert again.profile_id == real.profile_id and again.metadata == real.metadata
    for name, df in real.tables.items():
        assert again.tables[name].equals(df), name


@pytest.mark.corpus
def test_side_loads_the_given_tree(captured, tmp_path):
    _report, messages = captured
    # a copy of the tree whose ncu_rep says where it was loaded from: the side must run it
    tree = tmp_path / "tree"
    for pkg in ("profaudit", "parsers"):  # all a load imports
        shutil.copytree(REPO / pkg, tree / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    marker = tmp_path / "loaded_from"
    with open(tree / "parsers" / "ncu_rep.py", "a") as f:
        f.write(f"\nopen({str(marker)!r}, 'w').write(__file__)\n")
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--side", str(tree), "--messages", str(messages), "--loads", "2", "--idle-ms", "0", "--base", "x"],
        check=True, capture_output=True, text=True,
    ).stdout
    assert float(out.split()[-1]) > 0
    assert Path(marker.read_text()).resolve() == (tree / "parsers" / "ncu_rep.py").resolve()
