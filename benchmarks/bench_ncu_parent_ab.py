"""The `.ncu-rep` reader's parent stage, one tree against another: a paired A/B.

bench_ncu_load.py's "parent" column is what `profaudit.load` costs in this process around the
isolated read (framing checks, session and kernel rows, the frames, the profile id, the loader):
spread over many 0.05-0.5 ms pieces, so a change to one piece moves it by less than the noise of a
shared machine between two runs. This script judges such a change the way the work on issue 13
did: the child's messages for a report are captured once (one real isolated read), then processes
of the BASE tree (a git revision, extracted to a temporary folder) and of the NEW tree (by default
this working tree) take turns, each replaying `profaudit.load` of the report on those messages
LOADS times (its CPU, this process's, per load; IDLE ms between loads, as a real parent waits on its
child, so each load starts with cooled caches) and reporting its median. It prints both sides'
medians, the median of the per-pair differences (new - base), in how many pairs the new tree was
cheaper, and the ratio new / base measured in the same run.

    .venv/bin/python benchmarks/bench_ncu_parent_ab.py --base 805b3f0 [--new DIR] [--pairs 21] [--loads 20] [REPORT]

Only the parent is measured: the child's read, the fork and the transfer are bench_ncu_load.py's.
The messages come from this working tree's child and are replayed into both trees' parents, so the
comparison holds only while --base's parent reads the same message format (true from 805b3f0 to
the session-19 commits: no change to the child's messages; review F19-6).
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus" / "ncu-rep"
DEFAULT_REPORT = CORPUS / "bobschreiner__NuKEXC__profile_fastc.ncu-rep"
# where each import package of the project lives in a tree (pyproject's package-dir)
PACKAGES = {"profaudit": "profaudit", "profaudit.parsers": "parsers", "profaudit.dashboards": "dashboards", "profaudit.device_specs": "device_specs"}


def _import_from(tree: Path) -> None:
    """Make `import profaudit` (and its packages kept elsewhere in the tree) load from `tree`, ahead
    of the installed copy: a finder for the top packages, whose own __path__ finds the rest."""
    import importlib.abc
    import importlib.util

    class _Tree(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path=None, target=None):
            if fullname not in PACKAGES:
                return None
            folder = tree / PACKAGES[fullname]
            return importlib.util.spec_from_file_location(fullname, folder / "__init__.py", submodule_search_locations=[str(folder)])

    sys.meta_path.insert(0, _Tree())


def _side(tree: Path, messages: Path, loads: int, idle_s: float) -> float:
    """In a fresh process: the median CPU seconds of `loads` replayed loads with `tree`'s code."""
    _import_from(tree)
    import profaudit
    from profaudit.parsers import ncu_rep

    if not Path(ncu_rep.__file__).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"imported {ncu_rep.__file__}, not the tree's")
    path, chunks, res = pickle.loads(messages.read_bytes())

    def replay(p, work, on_chunk, what, **kw):
        for ch in chunks:
            on_chunk(ch)
        return res

    ncu_rep.run_isolated = replay  # this process's own copy of the module: it ends after the loads

    def one() -> None:
        profaudit.load(Path(path), parallel=False).metrics.height  # as bench_ncu_load's profaudit_load

    for _ in range(10):  # imports, first-call set-up
        one()
    spent = []
    for _ in range(loads):
        time.sleep(idle_s)
        c = time.process_time()
        one()
        spent.append(time.process_time() - c)
    return statistics.median(spent)


def _capture(report: Path, out: Path) -> None:
    """One real isolated read of `report` with this tree, its child's messages kept in `out`."""
    import profaudit
    from profaudit.parsers import ncu_rep

    real, got = ncu_rep.run_isolated, {}

    def keep(p, work, on_chunk, what, **kw):
        chunks = []

        def each(ch):
            chunks.append(pickle.loads(pickle.dumps(ch)))
            on_chunk(ch)

        res = real(p, work, each, what, **kw)
        got["messages"] = (str(report), chunks, pickle.loads(pickle.dumps(res)))
        return res

    ncu_rep.run_isolated = keep
    try:
        profaudit.load(report, parallel=False)
    finally:
        ncu_rep.run_isolated = real
    out.write_bytes(pickle.dumps(got["messages"], protocol=pickle.HIGHEST_PROTOCOL))


def _extract(rev: str, into: Path) -> Path:
    """The tree of git revision `rev` in `into`, with this tree's built extension modules (git does
    not hold them)."""
    data = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True).stdout
    tar = into / "tree.tar"
    tar.write_bytes(data)
    with tarfile.open(tar) as t:
        t.extractall(into / "tree", filter="data")
    for so in (REPO / "parsers").glob("*.so"):
        (into / "tree" / "parsers" / so.name).write_bytes(so.read_bytes())
    return into / "tree"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", nargs="?", type=Path, default=DEFAULT_REPORT, help="an .ncu-rep (default: bobschreiner's, the goal's worst)")
    ap.add_argument("--base", required=True, help="git revision of the base tree")
    ap.add_argument("--new", type=Path, default=REPO, help="the new tree (default: this working tree)")
    ap.add_argument("--pairs", type=int, default=21)
    ap.add_argument("--loads", type=int, default=20, help="replayed loads per process (its median is the side's figure)")
    ap.add_argument("--idle-ms", type=float, default=5.0, help="idle time before each load")
    ap.add_argument("--side", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--messages", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.side:
        print(_side(args.side, args.messages, args.loads, args.idle_ms / 1e3))
        return 0
    if not args.report.is_file():
        print(f"no report at {args.report}; name one", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="pa-parent-ab-") as tmp:
        tmp = Path(tmp)
        base = _extract(args.base, tmp)
        messages = tmp / "messages.pkl"
        _capture(args.report.resolve(), messages)
        trees = {"base": base, "new": args.new.resolve()}
        got: dict[str, list[float]] = {"base": [], "new": []}
        for i in range(args.pairs):
            for side in ("base", "new") if i % 2 == 0 else ("new", "base"):  # each side first in half the pairs
                cmd = [sys.executable, __file__, "--side", str(trees[side]), "--messages", str(messages),
                       "--loads", str(args.loads), "--idle-ms", str(args.idle_ms), "--base", args.base]
                out = subprocess.run(cmd, check=True, capture_output=True, text=True, env={**os.environ, "PYTHONSAFEPATH": "1"}).stdout
                got[side].append(float(out.split()[-1]))
    diffs = [n - b for b, n in zip(got["base"], got["new"])]
    mb, mn = statistics.median(got["base"]), statistics.median(got["new"])
    print(f"report {args.report.name}: {args.pairs} pairs of processes, {args.loads} replayed loads each, {args.idle_ms:g} ms idle before each")
    print(f"base {args.base}: median {mb * 1e3:.3f} ms CPU per load; new {trees['new']}: {mn * 1e3:.3f} ms; ratio new/base {mn / mb:.3f}")
    print(f"paired: median difference {statistics.median(diffs) * 1e3:+.3f} ms, new cheaper in {sum(d < 0 for d in diffs)}/{args.pairs} pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
