"""tools/fuzz_surfaces.py: CPU and wall time per input, this tree against a baseline revision.

Baseline: the tool and the package as they were at `--baseline-rev` (default ef0b5c1, the end of
session 15: the tool forked one child per input from a parent that had imported the package but
not the modules inputs go on to import, read the 84 shipped device specs with pure-Python YAML in
every child that matched a device, and rebuilt typer's click command on every input). The
baseline tree is exported with `git archive` into a temporary folder and run from there, so it
imports its own package; both use this venv.

Each side first runs once untimed to build its seeds (and, on this tree, the warm-up that lists
what the inputs import) in its own seeds folder; then `--repeat` timed runs of the same inputs
(`--per-surface` each of the six surfaces, the same `--seed`, one worker) reuse those seeds, each
beside a run of no input (`--per-surface 0`: the parent's imports and warm-up, paid once per run
whatever its length). CPU is the tool's and its children's (getrusage of the waited process
tree); per input is (run - run of no input) / inputs, and the ratio baseline / this tree of that is
printed per repeat and as the median. The inputs are the same per side, not across sides:
this tree's generators make other inputs (deeper mutators) from the same seed, so the per-surface
lines say where the time went on each side.

    .venv/bin/python benchmarks/bench_fuzz_surfaces.py --per-surface 10 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _export(rev: str, dest: Path) -> Path:
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def _run(tree: Path, out: Path, seeds: Path, per_surface: int, seed: int) -> tuple[float, float, dict]:
    """(wall s, CPU s, counts per surface) of one run of the tool in `tree`."""
    summary = out / "summary.json"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, str(tree / "tools" / "fuzz_surfaces.py"), "--per-surface", str(per_surface), "--workers", "1", "--seed", str(seed),
                          "--out", str(out), "--seeds-dir", str(seeds), "--summary-json", str(summary)], cwd=tree, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if not summary.exists():
        raise SystemExit(f"bench_fuzz_surfaces: the tool in {tree} failed (exit {res.returncode}):\n{res.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, json.loads(summary.read_text())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-rev", default="ef0b5c1")
    ap.add_argument("--per-surface", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-fuzz-surfaces-") as tmp:
        tmp = Path(tmp)
        sides = {"baseline": _export(args.baseline_rev, tmp / "baseline"), "this tree": REPO}
        for name, tree in sides.items():  # seeds (and this tree's import warm-up), untimed
            _run(tree, tmp / f"prep-{name[:4]}", tmp / f"seeds-{name[:4]}", 1, args.seed + 1)
        rows: dict[str, list[tuple[float, float, dict]]] = {name: [] for name in sides}
        fixed: dict[str, list[float]] = {name: [] for name in sides}
        for k in range(args.repeat):
            for name, tree in sides.items():  # alternated, so load changes hit both sides alike
                fixed[name].append(_run(tree, tmp / f"zero-{name[:4]}-{k}", tmp / f"seeds-{name[:4]}", 0, args.seed)[1])
                rows[name].append(_run(tree, tmp / f"run-{name[:4]}-{k}", tmp / f"seeds-{name[:4]}", args.per_surface, args.seed))
    print(f"fuzz_surfaces, {args.per_surface} inputs per surface, one worker, seed {args.seed}, baseline {args.baseline_rev}")
    print(f"{'run':<5} {'side':<10} {'inputs':>7} {'wall s':>8} {'CPU s':>8} {'no-input CPU s':>15} {'CPU-s/input':>12} {'whole run CPU-s/input':>22}")
    ratios, whole = [], []
    for k in range(args.repeat):
        per, per_whole = {}, {}
        for name in sides:
            wall, cpu, counts = rows[name][k]
            n = sum(sum(c.values()) for c in counts.values())
            per[name] = (cpu - fixed[name][k]) / n
            per_whole[name] = cpu / n
            print(f"{k + 1:<5} {name:<10} {n:>7} {wall:>8.1f} {cpu:>8.1f} {fixed[name][k]:>15.1f} {per[name]:>12.3f} {per_whole[name]:>22.3f}")
        ratios.append(per["baseline"] / per["this tree"])
        whole.append(per_whole["baseline"] / per_whole["this tree"])
        print(f"{'':<5} {'ratio':<10} baseline / this tree, CPU per input: {ratios[-1]:.2f}x (whole run: {whole[-1]:.2f}x)")
    print(f"median ratio (CPU per input beyond the no-input run, baseline / this tree): {statistics.median(ratios):.2f}x over {args.repeat} runs;"
          f" whole runs: {statistics.median(whole):.2f}x")
    # the ratio is of CPU per input of each tree's own inputs: the same seed makes other inputs on
    # each side (this tree's mutators go deeper), so the line says so instead of implying the same
    # work was timed twice (review G7, session 16)
    print("  (each side ran its own generators' inputs from the same seed, so the sides' inputs differ: a ratio of"
          " CPU per input of each side's mix, not of the same inputs; the per-surface counts below show each mix)")
    for name in sides:
        counts = rows[name][-1][2]
        print(f"{name}, last run: " + ", ".join(f"{s} {sum(c.values())} ({c.get('ok', 0)} ok, {c.get('deliberate', 0)} deliberate)" for s, c in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
