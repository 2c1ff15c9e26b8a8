"""Making fuzz mutants: the harness's reused per-format folder on memory-backed storage against a
fresh folder on disk for every mutant (what tests/fuzz/harness.py did before), side by side.

Baseline ("fresh on disk"): before each mutant the destination is removed and made again under
--disk-dir (a folder seed is then copied whole), as the harness did before session 12. Current:
`write_mutant` into one destination under --shm-dir that is kept from one mutant to the next (a
folder seed's mirror is restored by rewriting the one file the previous mutant changed). Both make
the same mutants: the same seeds, the same rng strings (so the same mutations and bytes), one
round over every format per repeat, interleaved. Reading the mutants is not timed (it is the same
in both); the long run's own rate (tools/fuzz_long.py prints inputs/s) includes it.

Times are wall milliseconds per mutant, median over the repeats; CPU time is printed too, since a
disk mounted with `discard` spends part of its cost outside this process.

    .venv/bin/python benchmarks/bench_fuzz_mutants.py [--per-format 20] [--repeat 3]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _round(seeds, per_format: int, dest: Path, fresh: bool, tag: int) -> tuple[float, float, int]:
    from tests.fuzz.harness import pick_seed, write_mutant

    n = 0
    w0, c0 = time.perf_counter(), time.process_time()
    for fmt in sorted(seeds):
        for i in range(per_format):
            rng = random.Random(f"bench/{tag}/{fmt}/{i}")
            seed = pick_seed(seeds[fmt], rng)
            if fresh and dest.exists():
                shutil.rmtree(dest)
            write_mutant(seed, rng, dest)
            n += 1
    return time.perf_counter() - w0, time.process_time() - c0, n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-format", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--disk-dir", type=Path, default=Path(tempfile.gettempdir()))
    ap.add_argument("--shm-dir", type=Path, default=Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir()))
    args = ap.parse_args(argv)
    from tests.fuzz.harness import discover_seeds

    work = Path(tempfile.mkdtemp(prefix="bench-fuzz-", dir=args.disk_dir))
    shm = Path(tempfile.mkdtemp(prefix="bench-fuzz-", dir=args.shm_dir))
    try:
        seeds = discover_seeds(work / "seeds")
        res: dict[str, list[tuple[float, float, int]]] = {"fresh on disk": [], "reused on shm": []}
        for r in range(args.repeat):
            # the same mutants in both (same rng strings), the order alternated against drift
            order = [("fresh on disk", work / "m", True), ("reused on shm", shm / "m", False)]
            for name, dest, fresh in order if r % 2 == 0 else order[::-1]:
                res[name].append(_round(seeds, args.per_format, dest, fresh, r))
        print(f"{len(seeds)} formats, {args.per_format} mutants each per repeat, {args.repeat} repeats; disk {args.disk_dir}, shm {args.shm_dir}")
        med = {}
        for name, runs in res.items():
            wall = statistics.median(w / n * 1e3 for w, _, n in runs)
            cpu = statistics.median(c / n * 1e3 for _, c, n in runs)
            med[name] = (wall, cpu)
            print(f"{name:15} {wall:8.2f} ms wall/mutant {cpu:8.2f} ms CPU/mutant")
        (bw, bc), (cw, cc) = med["fresh on disk"], med["reused on shm"]
        print(f"fresh on disk / reused on shm: {bw / cw:.2f}x wall, {bc / cc:.2f}x CPU")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(shm, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
