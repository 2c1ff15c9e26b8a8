"""Size blow-ups, one per format: a valid record of the smallest seed repeated until the file is
--size-mb (tests/fuzz/mutators.py `blowup`), each read in a fresh process the way the fuzz verdict
reads (read_one, every table, ps.metadata). Prints the verdict, CPU seconds and peak RSS of each
read, and flags those beyond --mem-mb or --timeout (CPU seconds): an input this size must load
within those bounds or be refused in one line.

    nice -n 10 .venv/bin/python tools/fuzz_blowup.py --size-mb 50

The long run mixes blow-ups in with --blowup-rate; this sweep gives each format one, with its
cost, which a rare random pick cannot. SQLite and binary formats are skipped (their blow-ups are
row repetition, in the long run's SQLite mutator).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def peak_rss_mb() -> int:
    """This process's own peak RSS. Not ru_maxrss: Linux keeps it across execve, so a child
    spawned by a parent holding the 200 MB mutant (several copies of it) started at the parent's
    peak (an 850 MB floor under every read in the session-14 logs). VmHWM belongs to the address
    space, which exec replaces."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def _read_one(path: Path) -> int:
    """Child side: the verdict on `path` with its CPU seconds and peak RSS, as one JSON line."""
    from tests.fuzz.harness import verdict

    t = time.process_time()
    v, detail = verdict(path, None)
    print(json.dumps({"verdict": v, "detail": detail[:200], "cpu_s": round(time.process_time() - t, 1), "peak_rss_mb": peak_rss_mb()}))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--size-mb", type=int, default=50)
    ap.add_argument("--mem-mb", type=int, default=2048, help="peak RSS of one read that counts as a memory blow-up")
    ap.add_argument("--timeout", type=float, default=30.0, help="CPU seconds one read may take")
    ap.add_argument("--formats", default="", help="comma-separated parser names (default: every format with a text seed)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--per-format", type=int, default=1, help="seeds per format, smallest first (asv's benchmarks.json or a rocprofv3 API trace is not a format's smallest)")
    ap.add_argument("--keep", type=Path, help="write each mutant under this folder and keep it (to rerun one read under /usr/bin/time or py-spy)")
    args = ap.parse_args(argv)
    if args.child:
        return _read_one(args.child)

    from tests.fuzz import harness, mutators

    work = Path(tempfile.mkdtemp(prefix="profaudit-blowup-"))
    bad = 0
    try:
        seeds = harness.discover_seeds(work / "seeds", max_bytes=400_000, per_format=args.per_format)
        wanted = set(args.formats.split(",")) if args.formats else None
        print(f"{'format':20} {'MB':>5} {'verdict':>12} {'CPU s':>7} {'peak MB':>8}  note")
        for fmt, seed in [(f, s) for f, ss in sorted(seeds.items()) for s in ss]:
            if (wanted and fmt not in wanted) or seed.is_dir:
                continue
            inner, how = mutators._wrap(harness._seed_bytes(seed.path))
            m = mutators.blowup(inner, random.Random(args.seed), args.size_mb << 20)
            if m is None:
                continue
            d = (args.keep or work / "m") / fmt
            d.mkdir(parents=True, exist_ok=True)
            path = d / seed.path.name
            path.write_bytes(mutators._rewrap(m.data, how))
            for c in seed.companions:
                shutil.copyfile(c, d / c.name)
            # a wall limit well past the CPU one: a loaded machine must not turn into a verdict
            try:
                r = subprocess.run([sys.executable, __file__, "--child", str(path)], capture_output=True, text=True, timeout=args.timeout * 20)
                res = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else {"verdict": "crash", "detail": r.stderr.strip()[-200:]}
            except subprocess.TimeoutExpired:
                res = {"verdict": "timeout", "detail": f"no verdict after {args.timeout * 20:.0f} s wall"}
            over = [w for w, hit in (("memory", res.get("peak_rss_mb", 0) > args.mem_mb), ("timeout", res.get("cpu_s", 0) > args.timeout)) if hit]
            if res["verdict"] in ("undeliberate", "silent_partial", "crash", "timeout"):
                over.append(res["verdict"])
            bad += bool(over)
            note = ("OVER: " + ", ".join(over) + "; " if over else "") + (res.get("detail") or "")
            note = f"{seed.path.name}: {note}" if args.per_format > 1 else note
            print(f"{fmt:20} {len(m.data) >> 20:5d} {res['verdict']:>12} {res.get('cpu_s', float('nan')):7.1f} {res.get('peak_rss_mb', 0):8d}  {note[:120]}", flush=True)
            if not args.keep:
                shutil.rmtree(d)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
