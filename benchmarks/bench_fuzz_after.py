"""The fuzz run's next-command stage (tests/fuzz/downstream.py) against a plain read, and against
the same stage through `profaudit.cli.main` as it is (Typer rebuilding its click command on every
call, what the stage did before session 14), side by side.

For each format with a seed, the first --per-format mutants (fixed rng strings) that load are
read and then put through the next commands twice, interleaved: once through the stage as it is
(`downstream._cli`, the click command built once; one form of compare per input) and once as it
was (`profaudit.cli.main` called as the CLI does, and both forms of compare). Printed per format: CPU milliseconds of the read, of the stage as it is and of the
baseline stage, and the ratios stage/read and stage/baseline. The last line gives the long run's
expected cost per input at a given --after-rate: read + rate x loaded share x stage.

    .venv/bin/python benchmarks/bench_fuzz_after.py [--per-format 4] [--formats a,b] [--after-rate 0.1]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _plain_cli(argv):
    from profaudit.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, err.getvalue()


def _baseline(stage_commands):
    """The command list as it was before session 14: both forms of compare (against itself and
    against the seed) for every input."""

    def both(path, ps, sibling, scratch, pick=0):
        cmds = stage_commands(path, ps, sibling, scratch, 0)
        if sibling is not None:
            cmds += [c for c in stage_commands(path, ps, sibling, scratch, 1) if c[0] == "compare"]
        return cmds

    return both


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-format", type=int, default=4, help="loaded mutants per format")
    ap.add_argument("--formats", default="", help="comma-separated parser names (default: every format with a seed)")
    ap.add_argument("--after-rate", type=float, default=0.1)
    ap.add_argument("--tries", type=int, default=80, help="mutants tried per format to find --per-format that load")
    args = ap.parse_args(argv)
    from tests.fuzz import downstream
    from tests.fuzz.harness import _seed_set, discover_seeds, pick_seed, verdict, write_mutant

    work = Path(tempfile.mkdtemp(prefix="bench-fuzz-after-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    seeds = discover_seeds(work / "seeds")
    if args.formats:
        seeds = {k: v for k, v in seeds.items() if k in set(args.formats.split(","))}
    built_cli, stage_commands = downstream._cli, downstream.commands
    base_commands = _baseline(stage_commands)
    rows = []
    print(f"{'format':20} {'loaded':>7} {'read ms':>9} {'stage ms':>9} {'baseline ms':>12} {'stage/read':>11} {'stage/baseline':>15}")
    for fmt in sorted(seeds):
        reads, stage, base = [], [], []
        tried = loaded = 0
        warmed = False
        while loaded < args.per_format and tried < args.tries:
            rng = random.Random(f"bench-after/{fmt}/{tried}")
            tried += 1
            seed = pick_seed(seeds[fmt], rng)
            path, m = write_mutant(seed, rng, work / "m")
            c = time.process_time()
            v, _ = verdict(path, m, seed=seed)
            read_s = time.process_time() - c
            if v not in ("ok", "incomplete"):
                continue
            _seed_set(seed)  # the sibling is loaded once per seed in a run; not part of a mutant's cost
            if not warmed:
                # the format's first loaded mutant goes through both untimed: first calls pay imports
                # and caches a long-running worker has long paid
                warmed = True
                for cli in (built_cli, _plain_cli):
                    downstream._cli = cli
                    verdict(path, m, seed=seed, after=work / "after")
                downstream._cli = built_cli
                continue
            loaded += 1
            reads.append(read_s)
            timed = []
            for cli in (built_cli, _plain_cli) if loaded % 2 else (_plain_cli, built_cli):
                downstream._cli = cli
                downstream.commands = stage_commands if cli is built_cli else base_commands
                c = time.process_time()
                verdict(path, m, seed=seed, after=work / "after")
                timed.append((cli, time.process_time() - c - read_s))
            downstream._cli, downstream.commands = built_cli, stage_commands
            for cli, s in timed:
                (stage if cli is built_cli else base).append(s)
        if not loaded:
            print(f"{fmt:20} {0:7d}   (no mutant of {tried} loaded)")
            continue
        share = (loaded + warmed) / tried  # the warm-up mutant loaded too
        r, s, b = (statistics.median(x) * 1000 for x in (reads, stage, base))
        rows.append((fmt, share, r, s))
        print(f"{fmt:20} {loaded:7d} {r:9.1f} {s:9.1f} {b:12.1f} {s / r if r else float('inf'):11.1f} {s / b:15.2f}")
    if rows:
        per_input = statistics.mean(r + args.after_rate * share * s for _, share, r, s in rows)
        read_only = statistics.mean(r for _, _, r, _ in rows)
        print(f"\nper input at --after-rate {args.after_rate}: {per_input:.1f} ms CPU against {read_only:.1f} ms for the read alone "
              f"({per_input / read_only:.2f}x; loaded shares from these tries; mutation cost not included)")
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
