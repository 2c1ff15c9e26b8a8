"""Long fuzz run over every parser's read: mutants of the corpus and of the project's fixtures.

Each mutant is read in a worker process the way the CLI reads a file (`read_one`, then every table
and `ps.metadata` built) and gets one verdict (see tests/fuzz/harness.py): ok, incomplete
(loaded with `complete: false`), rejected (a deliberate one-line error), undeliberate (the
loader's catch-all or an exception escaping it), silent_partial (a cut that removed content
loaded as whole), and, from the worker's fate, crash (it died), timeout (killed after --timeout
seconds) and memory (its peak RSS passed --mem-mb, or a read ran out of memory). Formats take
turns so each gets its share; bad verdicts are saved under --out with a note of the seed and the
mutation, ready to become regression tests.

    nice -n 10 .venv/bin/python tools/fuzz_long.py --per-format 2000 --budget-s 3000 --out /tmp/fuzz-out

Prints a per-format table at the end (and every --report-s seconds) and writes summary.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

VERDICTS = ("ok", "incomplete", "rejected", "undeliberate", "silent_partial", "crash", "timeout", "memory")
BAD = {"undeliberate", "silent_partial", "crash", "timeout", "memory"}


# ------------------------------------------------------------------------------------------------
# worker side
# ------------------------------------------------------------------------------------------------
def worker_main(mem_mb: int) -> int:
    import resource

    from tests.fuzz.harness import verdict
    from tests.fuzz.mutators import Mutant

    # a hard cap well above the --mem-mb verdict line, so a blow-up fails an allocation instead of
    # pushing the machine into swap or the OOM killer
    try:
        cap = (mem_mb * 3) << 20
        resource.setrlimit(resource.RLIMIT_AS, (cap + _vsz(), resource.RLIM_INFINITY))
    except (ValueError, OSError):
        pass
    out = sys.stdout
    sys.stdout = sys.stderr  # parsers' prints must not corrupt the protocol
    for line in sys.stdin:
        task = json.loads(line)
        m = Mutant(b"", task["label"], task["cut_incomplete"])
        v, detail = verdict(Path(task["path"]), m)
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        if v == "rejected" and "out of memory" in detail:
            v = "memory"
        if peak_mb > mem_mb:
            v, detail = "memory", f"peak RSS {peak_mb:.0f} MB ({v}: {detail[:200]})"
        out.write(json.dumps({"verdict": v, "detail": detail[:500]}) + "\n")
        out.flush()
        if v == "memory":
            return 0  # start afresh: the peak never comes down
    return 0


def _vsz() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


# ------------------------------------------------------------------------------------------------
# parent side
# ------------------------------------------------------------------------------------------------
class Worker:
    def __init__(self, idx: int, mem_mb: int, scratch: Path):
        self.idx, self.mem_mb = idx, mem_mb
        self.scratch = scratch / f"w{idx}"
        self.task = None
        self.started = 0.0
        self._spawn()

    def _spawn(self):
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", "--mem-mb", str(self.mem_mb)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=str(REPO), text=True, bufsize=1,
        )

    def send(self, task: dict):
        self.task, self.started = task, time.monotonic()
        try:
            self.proc.stdin.write(json.dumps({k: task[k] for k in ("path", "label", "cut_incomplete")}) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass

    def restart(self):
        try:
            self.proc.kill()
        except ProcessLookupError:
            pass
        self.proc.wait()
        self._spawn()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--per-format", type=int, default=2000, help="mutants per format (stop when every format has this many)")
    ap.add_argument("--budget-s", type=float, default=3600, help="stop after this many seconds regardless")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds one read may take")
    ap.add_argument("--mem-mb", type=int, default=2048, help="peak worker RSS that counts as a memory blow-up")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--formats", default="", help="comma-separated parser names (default: every format with seeds)")
    ap.add_argument("--no-corpus", action="store_true", help="seed from the project's fixtures only")
    ap.add_argument("--out", type=Path, default=Path("fuzz-out"), help="reproducers and summary.json go here")
    ap.add_argument("--report-s", type=float, default=300, help="print the table this often")
    args = ap.parse_args(argv)
    if args.worker:
        return worker_main(args.mem_mb)

    from tests.fuzz.harness import discover_seeds, write_mutant

    args.out.mkdir(parents=True, exist_ok=True)
    scratch = args.out / "scratch"
    seeds = discover_seeds(scratch / "seeds", corpus=not args.no_corpus)
    if args.formats:
        keep = set(args.formats.split(","))
        seeds = {k: v for k, v in seeds.items() if k in keep}
    if not seeds:
        print("no seeds found", file=sys.stderr)
        return 2
    print(f"seeds: {', '.join(f'{k} {len(v)}' for k, v in sorted(seeds.items()))}", flush=True)
    counts: dict[str, Counter] = defaultdict(Counter)
    examples: dict[tuple[str, str], list[str]] = defaultdict(list)
    t0 = time.monotonic()
    last_report = t0
    next_i: Counter = Counter()
    formats = sorted(seeds)
    workers = [Worker(i, args.mem_mb, scratch) for i in range(max(1, args.workers))]
    stop = False

    def handle_int(*_):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGINT, handle_int)

    def next_task():
        # the format with the fewest mutants so far goes next
        todo = [f for f in formats if next_i[f] < args.per_format]
        if not todo:
            return None
        fmt = min(todo, key=lambda f: next_i[f])
        i = next_i[fmt]
        next_i[fmt] += 1
        rng = random.Random(f"{args.seed}/{fmt}/{i}")
        seed = rng.choice(seeds[fmt])
        return fmt, i, seed, rng

    def record(w: Worker, verdict: str, detail: str):
        t = w.task
        counts[t["format"]][verdict] += 1
        if verdict in BAD:
            n = counts[t["format"]][verdict]
            if n <= 20:  # enough reproducers per kind and format
                dest = args.out / "reproducers" / t["format"] / f"{verdict}-{t['i']}"
                dest.mkdir(parents=True, exist_ok=True)
                src = Path(t["path"])
                if src.is_dir():
                    shutil.copytree(src, dest / src.name, dirs_exist_ok=True)
                elif src.exists():
                    shutil.copy(src, dest / src.name)
                (dest / "note.txt").write_text(f"seed: {t['seed']}\nmutation: {t['label']}\nverdict: {verdict}\ndetail: {detail}\nrng: {args.seed}/{t['format']}/{t['i']}\n")
            if len(examples[(t["format"], verdict)]) < 3:
                examples[(t["format"], verdict)].append(f"{t['label'][:120]} -> {detail[:200]}")
        w.task = None

    def dispatch(w: Worker) -> bool:
        nt = next_task()
        if nt is None:
            return False
        fmt, i, seed, rng = nt
        try:
            path, m = write_mutant(seed, rng, w.scratch)
        except Exception as exc:  # a mutator bug must not end a long run: note it, take the next
            print(f"mutator failed on {fmt} #{i} ({seed.path.name}): {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            return dispatch(w)
        w.send({"format": fmt, "i": i, "seed": str(seed.path), "path": str(path), "label": m.label, "cut_incomplete": m.cut_incomplete})
        return True

    active = [w for w in workers if dispatch(w)]
    while active and not stop and time.monotonic() - t0 < args.budget_s:
        fds = {w.proc.stdout.fileno(): w for w in active}
        ready, _, _ = select.select(list(fds), [], [], 1.0)
        now = time.monotonic()
        for fd in ready:
            w = fds[fd]
            line = w.proc.stdout.readline()
            if not line:
                code = w.proc.wait()
                if w.task is not None:
                    record(w, "crash", f"worker died (exit {code})")
                w.restart()
            else:
                res = json.loads(line)
                record(w, res["verdict"], res["detail"])
                if res["verdict"] == "memory":
                    w.restart()
        for w in active:
            if w.task is not None and now - w.started > args.timeout:
                record(w, "timeout", f"no verdict after {args.timeout:.0f} s")
                w.restart()
        active = [w for w in active if w.task is not None or dispatch(w)]
        if now - last_report > args.report_s:
            last_report = now
            _table(counts, now - t0)
            _summary(args, counts, now - t0)
    for w in workers:
        w.restart() if w.task is not None else None
        w.proc.kill()
        w.proc.wait()
    elapsed = time.monotonic() - t0
    _table(counts, elapsed)
    for (fmt, v), ex in sorted(examples.items()):
        for e in ex:
            print(f"  {fmt} {v}: {e}")
    _summary(args, counts, elapsed)
    shutil.rmtree(scratch, ignore_errors=True)
    bad = sum(c[v] for c in counts.values() for v in BAD)
    return 1 if bad else 0


def _summary(args, counts: dict[str, Counter], elapsed: float) -> None:
    summary = {"elapsed_s": round(elapsed, 1), "argv": sys.argv, "counts": {f: dict(c) for f, c in sorted(counts.items())},
               "total": sum(sum(c.values()) for c in counts.values())}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))


def _table(counts: dict[str, Counter], elapsed: float) -> None:
    print(f"\n{'format':20} " + " ".join(f"{v:>12}" for v in ("total",) + VERDICTS) + f"   [{elapsed:.0f} s]")
    tot = Counter()
    for fmt in sorted(counts):
        c = counts[fmt]
        tot.update(c)
        print(f"{fmt:20} {sum(c.values()):12d} " + " ".join(f"{c[v]:12d}" for v in VERDICTS))
    print(f"{'all':20} {sum(tot.values()):12d} " + " ".join(f"{tot[v]:12d}" for v in VERDICTS), flush=True)


if __name__ == "__main__":
    sys.exit(main())
