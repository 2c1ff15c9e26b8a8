"""Long fuzz run over every parser's read: mutants of the corpus and of the project's fixtures.

Each mutant is made and read in a worker process (reused from one input to the next) the way the
CLI reads a file (`read_one`, then every table and `ps.metadata` built) and gets one verdict (see
tests/fuzz/harness.py): ok, incomplete (loaded with `complete: false`), rejected (a deliberate
one-line error), undeliberate (the loader's catch-all or an exception escaping it), silent_partial
(a cut that removed content loaded as whole), and, from the worker's fate, crash (it died),
timeout (killed after --timeout seconds of CPU time, or --timeout-wall seconds of wall time not spent
waiting for a CPU) and
memory (its peak RSS passed --mem-mb, or a read ran out of memory). Formats take turns so each
gets its share; bad verdicts are saved under --out with a note of the seed and the mutation,
ready to become regression tests.

Memory is measured per input: the worker resets its peak RSS (Linux clear_refs) before making each
mutant, so an input's peak is its own, from the RSS the worker started it at. A worker can still
carry memory from one input into the next (an allocator keeps what a big read freed): such a worker
is recycled once its RSS at rest passes --recycle-mb, and a memory verdict from a worker that had read
other inputs before is judged again in a fresh worker, whose verdict counts (the s14 confirmation
run charged a 9 KB input with a 2.4 GB peak, most of it memory its worker had kept since a 193 MB
mutant 79 rounds earlier: 1.7 GB at rest after that mutant, replayed alone). A worker that read other
inputs and then aborts on a failed allocation (SIGABRT, its stderr saying so, or saying nothing at
all: an allocation past its address-space cap, 3x --mem-mb above its start, ends the process in
polars' allocator, and polars 2.1's reader threads abort without a word) is treated the same way: the
input is judged again in a fresh worker, and a crash there is a crash. Any other abort (heap
corruption, an assert: each says what failed) is a crash at once, with the last line the worker wrote.
Every input whose peak rose --rise-mb or more above its start is printed (RISE), so memory-hungry
inputs under the verdict line show too; the table's `peak MB` is each format's highest own peak.

    nice -n 10 .venv/bin/python tools/fuzz_long.py --per-format 2000 --budget-s 3000 --out /tmp/fuzz-out

Prints a per-format table at the end (and every --report-s seconds, with the rate in inputs/s), a
FINDING line for each bad verdict as it comes, and writes summary.json. Formats read only through a
vendor tool that is absent here (nsys-rep, neuron_ntff) are fuzzed up to the tool: sniffing, header
checks, NEFF pairing, tool discovery and the one-line refusal.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
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
def _rss_mb() -> tuple[float, float] | None:
    """(current RSS, peak RSS since the last `_reset_peak`) in MB, from /proc/self/status; None
    without /proc."""
    try:
        with open("/proc/self/status") as fh:
            text = fh.read()
    except OSError:
        return None
    got = {}
    for line in text.splitlines():
        key, _, val = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            got[key] = int(val.split()[0]) / 1024
    return (got["VmRSS"], got["VmHWM"]) if len(got) == 2 else None


def _reset_peak() -> bool:
    """Start this process's peak RSS (VmHWM) again from its current RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def worker_main(mem_mb: int, seeds_file: Path, scratch: Path, rng_seed: int, after_rate: float = 1.0, blowup_rate: float = 0.0) -> int:
    """Make each mutant and read it here, in the worker: mutating (gzip recompression, SQLite
    rewrites, folder copies) costs as much as many reads, and done in the one parent it kept the
    workers waiting. The parent sends only (format, index); the mutant follows from the seed list
    and the rng string, so a run is reproducible whatever worker takes which task."""
    import resource

    from tests.fuzz import mutators
    from tests.fuzz.harness import Seed, pick_seed, verdict, write_mutant

    # a hard cap well above the --mem-mb verdict line, so a blow-up fails an allocation instead of
    # pushing the machine into swap or the OOM killer
    try:
        cap = (mem_mb * 3) << 20
        resource.setrlimit(resource.RLIMIT_AS, (cap + _vsz(), resource.RLIM_INFINITY))
    except (ValueError, OSError):
        pass
    seeds = {fmt: [Seed(fmt, Path(s["path"]), tuple(Path(c) for c in s["companions"])) for s in lst]
             for fmt, lst in json.loads(seeds_file.read_text()).items()}
    donors = [s for lst in seeds.values() for s in lst]
    mutators.BLOWUP_RATE = blowup_rate
    out = sys.stdout
    sys.stdout = sys.stderr  # parsers' prints must not corrupt the protocol

    def send(obj: dict) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()

    def cpu_now() -> float:
        # this worker's CPU and its reaped children's (a forked reader's, once it has exited)
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    # without clear_refs the peak is the worker's lifetime peak (getrusage), as before
    per_input = _reset_peak() and _rss_mb() is not None
    done = 0  # inputs this worker judged before the current one
    for line in sys.stdin:
        task = json.loads(line)
        cpu0 = cpu_now()
        if per_input:
            _reset_peak()
            start_mb = _rss_mb()[0]
        rng = random.Random(f"{rng_seed}/{task['format']}/{task['i']}")
        seed = pick_seed(seeds[task["format"]], rng)
        try:
            path, m = write_mutant(seed, rng, scratch, donors)
        except Exception as exc:  # a mutator bug must not end a long run: the parent notes it
            # after running out of memory the worker is not to be trusted with the next input
            send({"skip": f"mutator failed on {seed.path.name}: {type(exc).__name__}: {exc}", "restart": isinstance(exc, MemoryError)})
            continue
        # said before the read, so a crash or a timeout still names its input
        send({"seed": str(seed.path), "path": str(path), "label": m.label, "vm_mb": round(_vsz() / (1 << 20))})
        # which loaded inputs also go through the next commands: a fixed share, drawn from the
        # input's own rng string so a rerun picks the same ones
        go_on = random.Random(f"{rng_seed}/{task['format']}/{task['i']}/after").random() < after_rate
        v, detail = verdict(path, m, seed=seed, after=scratch / "after" if go_on else None, on_step=lambda name: send({"step": name}))
        if per_input:
            end_mb, peak_mb = _rss_mb()
        else:
            start_mb = end_mb = 0.0
            peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        if v == "rejected" and "out of memory" in detail:
            v = "memory"
        if peak_mb > mem_mb:
            v, detail = "memory", f"peak RSS {peak_mb:.0f} MB, {start_mb:.0f} MB at its start ({v}: {detail[:200]})"
        went_on = go_on and (v in ("ok", "incomplete") or detail.startswith("after load:"))
        # a file name that is not UTF-8 (tests/fuzz/hostile.py) is held as surrogate escapes, which
        # the parent's print and write_text refuse (s19: the run ended on one): sent escaped
        send({"verdict": v, "detail": detail[:500].encode("utf-8", "backslashreplace").decode(), "after": went_on, "cpu": round(cpu_now() - cpu0, 4),
              "rss": [round(start_mb), round(peak_mb), round(end_mb)] if per_input else None, "fresh": done == 0})
        done += 1
        if v == "memory":
            # start afresh: after a blow-up the next input would start with what the allocator
            # kept (and without clear_refs the lifetime peak never comes down)
            return 0
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
# What an abort that was a failed allocation leaves on stderr (Rust's allocator, C++, libc)
_ALLOC_FAILED = re.compile(r"memory allocation of \d+ bytes failed|std::bad_alloc|Cannot allocate memory|capacity overflow")


class Worker:
    def __init__(self, idx: int, args, seeds_file: Path, scratch: Path):
        self.idx = idx
        self.cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--mem-mb", str(args.mem_mb), "--seed", str(args.seed),
                    "--seeds-file", str(seeds_file), "--worker-dir", str(scratch / f"w{idx}"), "--after-rate", str(args.after_rate), "--blowup-rate", str(args.blowup_rate)]
        self.task = None
        self.started = 0.0
        self.step = "read"
        self.restarts = 0
        self.scratch = scratch
        self._spawn()

    def _spawn(self):
        # the worker's stderr (parsers' own prints, and what a dying process says) goes to a file,
        # emptied as each input is sent (appended to, so the worker's writes follow the cut; the
        # scratch folder is in memory): its tail tells an allocation failure from other aborts
        self.err_path = self.scratch / f"w{self.idx}.stderr"
        self.err_path.parent.mkdir(parents=True, exist_ok=True)
        self.err_path.write_bytes(b"")
        # LIBC_FATAL_STDERR_: glibc's heap-corruption messages go to stderr, never to a terminal
        # the run may have (/dev/tty, glibc's default where one is open): an abort that says nothing
        # is taken for a failed allocation below, so one that said what failed must be seen to
        with open(self.err_path, "ab") as err:
            self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                         cwd=str(REPO), bufsize=0, env={**os.environ, "LIBC_FATAL_STDERR_": "1"})
        self.buf = b""
        self.judged = 0  # inputs this process has given a verdict on

    def stderr_tail(self, n: int = 8192) -> str:
        """The last `n` bytes the worker wrote to stderr."""
        try:
            with open(self.err_path, "rb") as fh:
                fh.seek(max(0, fh.seek(0, os.SEEK_END) - n))
                return fh.read().decode("utf-8", errors="replace")
        except OSError:
            return ""

    def cpu_s(self) -> float:
        """The worker's CPU seconds so far (user + system, its own and its reaped children's): a
        timeout counts these, so a worker kept waiting by a busy machine is not taken for a hang."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return time.monotonic() - self.started  # no /proc: wall time stands in

    def _rq_waits(self) -> dict[str, float]:
        """Seconds each of the worker's threads has spent runnable but waiting for a CPU
        (/proc/PID/task/TID/schedstat, second field), by thread id; empty without /proc."""
        out = {}
        try:
            tids = os.listdir(f"/proc/{self.proc.pid}/task")
        except OSError:
            return out
        for tid in tids:
            try:
                with open(f"/proc/{self.proc.pid}/task/{tid}/schedstat") as fh:
                    out[tid] = int(fh.read().split()[1]) / 1e9
            except (OSError, ValueError, IndexError):
                continue
        return out

    def starved_s(self) -> float:
        """Seconds of this task's wall time the worker spent waiting for a CPU: the most any of
        its threads waited since the task was sent. Under nice 19 on a loaded machine that can be
        most of the wall time; a hang (a blocked wait) is not in it."""
        now = self._rq_waits()
        return max((v - self.rq0.get(t, 0.0) for t, v in now.items()), default=0.0)

    def send(self, task: dict):
        try:
            os.truncate(self.err_path, 0)
        except OSError:
            pass
        self.task, self.started = task, time.monotonic()
        self.cpu0 = self.cpu_s()
        self.rq0 = self._rq_waits()
        self.step = "read"
        try:
            self.proc.stdin.write((json.dumps({"format": task["format"], "i": task["i"]}) + "\n").encode())
        except BrokenPipeError:
            pass

    def next_step(self, name: str):
        """The input's read is judged; the worker starts one of the commands a user runs next on
        it: --timeout and --timeout-wall count afresh from here, as a user's next command starts
        its own clock (a 200 MB blow-up's ~14 next commands took ~85 CPU-s together, each within
        bounds, and were a sure timeout when the read's 30 s covered them all)."""
        self.started, self.cpu0, self.rq0, self.step = time.monotonic(), self.cpu_s(), self._rq_waits(), f"after load: {name}"

    def messages(self) -> list[dict] | None:
        """The whole lines the worker has written since the last call (read straight from the
        pipe: a buffered reader could hold a second line that select() would never report), or
        None when it has exited."""
        data = os.read(self.proc.stdout.fileno(), 1 << 16)
        if not data:
            return None
        self.buf += data
        *lines, self.buf = self.buf.split(b"\n")
        return [json.loads(l) for l in lines if l.strip()]

    def restart(self):
        try:
            self.proc.kill()
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.restarts += 1
        self._spawn()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--seeds-file", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--worker-dir", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--per-format", type=int, default=2000, help="mutants per format (stop when every format has this many)")
    ap.add_argument("--budget-s", type=float, default=3600, help="stop after this many seconds regardless")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=30.0, help="CPU seconds one input's read may take (its worker's, and its worker's reaped children's), "
                                                                  "and each command after it (--after-rate) the same again")
    ap.add_argument("--timeout-wall", type=float, default=300.0,
                    help="wall seconds one input may take, less the time its worker waited for a CPU (covers blocked waits, e.g. on a forked reader)")
    ap.add_argument("--mem-mb", type=int, default=2048, help="peak worker RSS that counts as a memory blow-up")
    ap.add_argument("--recycle-mb", type=int, default=1024,
                    help="a worker whose RSS after an input stays above this is restarted, so the next input starts clean")
    ap.add_argument("--rise-mb", type=int, default=256, help="print each input whose peak RSS rose this much above its start (RISE lines)")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--formats", default="", help="comma-separated parser names (default: every format with seeds)")
    ap.add_argument("--after-rate", type=float, default=1.0,
                    help="share of the inputs that, once loaded, also go through summary, gaps, kernels, roofline, kernel-report, "
                         "compare, export-trace and ingest (tests/fuzz/downstream.py); 0 judges the read alone. These cost "
                         "~10-30x a read, so a long run on a shared machine may need less than 1")
    ap.add_argument("--blowup-rate", type=float, default=0.001,
                    help="share of mutants that are size blow-ups: one valid record repeated to 50-200 MB (must load within "
                         "--mem-mb and --timeout, or be refused in one line)")
    ap.add_argument("--no-corpus", action="store_true", help="seed from the project's fixtures only")
    ap.add_argument("--out", type=Path, default=Path("fuzz-out"), help="reproducers and summary.json go here")
    ap.add_argument("--report-s", type=float, default=300, help="print the table this often")
    ap.add_argument("--scratch", type=Path, default=None,
                    help="where seeds and mutants are written (default: a folder in /dev/shm when there is one, else OUT/scratch)")
    args = ap.parse_args(argv)
    if args.worker:
        return worker_main(args.mem_mb, args.seeds_file, args.worker_dir, args.seed, after_rate=args.after_rate, blowup_rate=args.blowup_rate)

    from tests.fuzz.harness import discover_seeds
    from tests.fuzz.hostile import copy_input

    args.out.mkdir(parents=True, exist_ok=True)
    scratch = args.scratch or _default_scratch(args.out)
    made_scratch = not scratch.exists()  # removed at the end only when this run made it
    scratch.mkdir(parents=True, exist_ok=True)
    seeds = discover_seeds(scratch / "seeds", corpus=not args.no_corpus)
    if args.formats:
        keep = set(args.formats.split(","))
        seeds = {k: v for k, v in seeds.items() if k in keep}
    if not seeds:
        print("no seeds found", file=sys.stderr)
        if made_scratch:
            shutil.rmtree(scratch, ignore_errors=True)
        return 2
    from profaudit.parsers import REGISTRY

    unseeded = sorted({p.name for p in REGISTRY} - set(seeds))
    print(f"seeds: {', '.join(f'{k} {len(v)}' for k, v in sorted(seeds.items()))}", flush=True)
    if unseeded and not args.formats:
        print(f"formats without a seed (not fuzzed): {', '.join(unseeded)}", flush=True)
    seeds_file = scratch / "seeds.json"
    seeds_file.write_text(json.dumps({f: [{"path": str(s.path), "companions": [str(c) for c in s.companions]} for s in lst]
                                      for f, lst in seeds.items()}))
    counts: dict[str, Counter] = defaultdict(Counter)
    after_counts: Counter = Counter()  # loaded inputs that also went through the next commands
    cpu_s: Counter = Counter()  # worker CPU seconds per format (making the mutant, reading it, the next commands)
    examples: dict[tuple[str, str], list[str]] = defaultdict(list)
    mem = _MemoryNotes(args.rise_mb)
    t0 = time.monotonic()
    last_report = t0
    next_i: Counter = Counter()
    formats = sorted(seeds)
    workers = [Worker(i, args, seeds_file, scratch) for i in range(max(1, args.workers))]
    stop = False

    def handle_int(*_):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGINT, handle_int)
    signal.signal(signal.SIGTERM, handle_int)

    def next_task():
        # the format with the fewest mutants so far goes next
        todo = [f for f in formats if next_i[f] < args.per_format]
        if not todo:
            return None
        fmt = min(todo, key=lambda f: next_i[f])
        i = next_i[fmt]
        next_i[fmt] += 1
        return {"format": fmt, "i": i, "seed": "?", "path": "", "label": "(not yet made)"}

    def record(w: Worker, verdict: str, detail: str):
        t = w.task
        counts[t["format"]][verdict] += 1
        if verdict in BAD:
            n = counts[t["format"]][verdict]
            if n <= 20:  # enough reproducers per kind and format
                dest = args.out / "reproducers" / t["format"] / f"{verdict}-{t['i']}"
                dest.mkdir(parents=True, exist_ok=True)
                src = Path(t["path"]) if t["path"] else None
                if src is not None and src.is_dir():
                    # symlinks=True: a folder mutant may hold a link to itself
                    shutil.copytree(src, dest / src.name, dirs_exist_ok=True, symlinks=True)
                elif src is not None:
                    # a FIFO, a link to /dev/zero or a sparse file of gigabytes (tests/fuzz/hostile.py):
                    # shutil.copy would raise, copy for ever, or fill the disk
                    copy_input(src, dest / src.name)
                (dest / "note.txt").write_text(f"seed: {t['seed']}\nmutation: {t['label']}\nverdict: {verdict}\ndetail: {detail}\n"
                                               f"rng: {args.seed}/{t['format']}/{t['i']}\n")
            if len(examples[(t["format"], verdict)]) < 3:
                examples[(t["format"], verdict)].append(f"{t['label'][:120]} -> {detail[:200]}")
            print(f"FINDING {t['format']} #{t['i']} {verdict}: {t['label'][:120]} -> {detail[:200]}", flush=True)
        w.task = None

    def judge_again(w: Worker, t: dict, why: str) -> None:
        """The input again, alone in a fresh worker, whose verdict counts (said in a RERUN line)."""
        print(f"RERUN {t['format']} #{t['i']}: {why} judged again in a fresh worker", flush=True)
        t["rerun"] = True
        w.restart()
        w.send(t)

    def dispatch(w: Worker) -> bool:
        task = next_task()
        if task is None:
            return False
        w.send(task)
        return True

    active = [w for w in workers if dispatch(w)]
    while active and not stop and time.monotonic() - t0 < args.budget_s:
        fds = {w.proc.stdout.fileno(): w for w in active}
        try:
            ready, _, _ = select.select(list(fds), [], [], 1.0)
        except InterruptedError:
            ready = []
        now = time.monotonic()
        for fd in ready:
            w = fds[fd]
            msgs = w.messages()
            if msgs is None:
                code = w.proc.wait()
                t = w.task
                tail = w.stderr_tail()
                alloc = _ALLOC_FAILED.search(tail)
                if t is not None and code == -signal.SIGABRT and w.judged and not t.get("rerun") and (alloc or not tail.strip()):
                    # an allocation past the worker's address-space cap (RLIMIT_AS, set above its
                    # start) aborts the process in polars' allocator; a worker that read other
                    # inputs starts this one with the address space its allocator kept from them
                    # (a 200 MB kernel trace reads at 1.6 GB RSS but 4.5 GB of address space: s17
                    # seed 3103, rocprofv3-csv #417). As for a memory verdict, the input is judged
                    # again alone in a fresh worker, and that verdict counts, a crash included. Only
                    # an abort its stderr says was a failed allocation: glibc's heap-corruption checks,
                    # C++ asserts and terminate abort too, and there an earlier input may be the cause.
                    # An abort with nothing at all on stderr is a failed allocation too: polars 2.1's
                    # CSV reader threads abort in Rust's rust_oom without a word (gdb; s18 seed 3114
                    # nvprof-csv #977 died so after 210 MB of trace in a worker that had read other
                    # inputs, and read alone under the same cap), while glibc, C++'s terminate and
                    # Rust's panics say what failed (LIBC_FATAL_STDERR_ above)
                    said = alloc.group(0) if alloc else "nothing on stderr"
                    vm = f", {t['vm_mb']} MB of address space at its start" if t.get("vm_mb") is not None else ""
                    mem.crash_reruns += 1
                    judge_again(w, t, f"worker aborted (exit {code}: {said}) after {w.judged} other input(s){vm};")
                    continue
                if t is not None:
                    said = [l.strip() for l in tail.splitlines() if l.strip() and not l.startswith((" ", "stack backtrace", "note: "))]
                    record(w, "crash", f"worker died (exit {code})" + (f": {said[-1][:300]}" if said else ""))
                w.restart()
                continue
            for res in msgs:
                if "skip" in res:
                    print(f"{w.task['format']} #{w.task['i']}: {res['skip']}", file=sys.stderr, flush=True)
                    w.task = None
                    if res.get("restart"):
                        w.restart()
                        break
                elif "step" in res:
                    w.next_step(res["step"])
                elif "verdict" not in res:
                    w.task.update(res)  # the mutant made: seed, path, label
                else:
                    t = w.task
                    if res.get("rss"):
                        mem.note(t, *res["rss"])
                    if res["verdict"] == "memory" and not res.get("fresh", True) and not t.get("rerun"):
                        # the worker may have brought memory an earlier input left behind: the
                        # input is judged again, alone in a fresh worker, and that verdict counts
                        mem.reruns += 1
                        judge_again(w, t, f"{res['detail'][:160]} -- in a worker that had read other inputs;")
                        break
                    if res.get("after"):
                        after_counts[t["format"]] += 1
                    cpu_s[t["format"]] += res.get("cpu", 0.0)
                    record(w, res["verdict"], res["detail"])
                    w.judged += 1
                    if res["verdict"] == "memory":
                        w.restart()
                        break
                    if res.get("rss") and res["rss"][2] > args.recycle_mb:
                        print(f"RECYCLE worker {w.idx}: {res['rss'][2]} MB at rest after {t['format']} #{t['i']} "
                              f"(its peak {res['rss'][1]} MB, {res['rss'][0]} MB at its start): restarted", flush=True)
                        mem.recycles += 1
                        w.restart()
                        break
        for w in active:
            if w.task is None:
                continue
            cpu, wall = w.cpu_s() - w.cpu0, now - w.started
            # the wall limit counts only time the worker was not kept waiting for a CPU: a niced run
            # on a busy machine had inputs that read in 1 s of CPU killed after 300 s wall
            if cpu > args.timeout or wall > args.timeout_wall and wall - w.starved_s() > args.timeout_wall:
                starved = w.starved_s()
                record(w, "timeout", f"{w.step}: no verdict after {cpu:.0f} s of CPU ({wall:.0f} s wall, {starved:.0f} s of it waiting for a CPU)")
                w.restart()
        active = [w for w in active if w.task is not None or dispatch(w)]
        if now - last_report > args.report_s:
            last_report = now
            _table(counts, now - t0, workers, after_counts, cpu_s, mem)
            _summary(args, counts, now - t0, after_counts, cpu_s, mem)
    for w in workers:
        w.proc.kill()
        w.proc.wait()
    elapsed = time.monotonic() - t0
    _table(counts, elapsed, workers, after_counts, cpu_s, mem)
    for (fmt, v), ex in sorted(examples.items()):
        for e in ex:
            print(f"  {fmt} {v}: {e}")
    _summary(args, counts, elapsed, after_counts, cpu_s, mem)
    if made_scratch:
        shutil.rmtree(scratch, ignore_errors=True)
    bad = sum(c[v] for c in counts.values() for v in BAD)
    return 1 if bad else 0


def _default_scratch(out: Path) -> Path:
    """A memory-backed folder when there is one: tens of thousands of small writes and unlinks,
    which on a disk mounted with discard cost milliseconds each."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return shm / f"profaudit-fuzz-{os.getpid()}"
    return out / "scratch"


class _MemoryNotes:
    """Each input's own memory, as the workers report it: (RSS at its start, its peak, RSS after)."""

    def __init__(self, rise_mb: int):
        self.rise_mb = rise_mb
        self.peak: dict[str, int] = {}  # per format, the highest peak of one input
        self.rises: list[dict] = []  # the inputs whose peak rose rise_mb or more above their start
        self.recycles = 0
        self.reruns = 0
        self.crash_reruns = 0  # aborts of workers that had read other inputs, judged again fresh

    def note(self, task: dict, start: int, peak: int, end: int) -> None:
        fmt = task["format"]
        self.peak[fmt] = max(self.peak.get(fmt, 0), peak)
        if peak - start >= self.rise_mb:
            self.rises.append({"format": fmt, "i": task["i"], "start_mb": start, "peak_mb": peak, "end_mb": end, "label": task["label"][:120]})
            print(f"RISE {fmt} #{task['i']}: peak RSS {peak} MB, +{peak - start} MB over its start ({start} MB), "
                  f"{end} MB after: {task['label'][:120]}", flush=True)


def _summary(args, counts: dict[str, Counter], elapsed: float, after: Counter, cpu_s: Counter, mem: _MemoryNotes) -> None:
    summary = {"elapsed_s": round(elapsed, 1), "argv": sys.argv, "counts": {f: dict(c) for f, c in sorted(counts.items())},
               "went_on": dict(sorted(after.items())),
               "worker_cpu_s": {f: round(v, 2) for f, v in sorted(cpu_s.items())},
               "peak_rss_mb": dict(sorted(mem.peak.items())), "rss_rises": mem.rises,
               "recycled_workers": mem.recycles, "memory_rejudged": mem.reruns, "aborts_rejudged": mem.crash_reruns,
               "total": sum(sum(c.values()) for c in counts.values())}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))


def _table(counts: dict[str, Counter], elapsed: float, workers: list, after: Counter, cpu_s: Counter, mem: _MemoryNotes) -> None:
    """The verdicts per format; `went on`: loaded inputs that also went through the next commands
    (counted inside ok/incomplete/undeliberate, not beside them); `cpu ms`: the workers' CPU per
    input (mutant, read, next commands; inputs that timed out or crashed not included), which with
    the input count gives a run's length on an idle machine whatever the load of this one; `peak MB`:
    the highest peak RSS of one input of the format (the worker's, from where it started the input)."""
    tot = Counter()
    for c in counts.values():
        tot.update(c)
    n = sum(tot.values())
    rate = n / elapsed if elapsed > 0 else 0.0
    restarts = sum(w.restarts for w in workers)
    print(f"\n{'format':20} " + " ".join(f"{v:>12}" for v in ("total",) + VERDICTS + ("went on", "cpu ms", "peak MB"))
          + f"   [{elapsed:.0f} s, {rate:.1f} inputs/s, {len(workers)} workers, {restarts} restarts "
          + f"({mem.recycles} recycled over RSS, {mem.reruns} memory verdicts and {mem.crash_reruns} aborts judged again), {len(mem.rises)} RSS rises]")
    for fmt in sorted(counts):
        c = counts[fmt]
        k = sum(c.values())
        print(f"{fmt:20} {k:12d} " + " ".join(f"{c[v]:12d}" for v in VERDICTS) + f" {after[fmt]:12d} {_ms(cpu_s[fmt], k):>12} {mem.peak.get(fmt, 0):12d}")
    total_cpu = sum(cpu_s.values())
    print(f"{'all':20} {n:12d} " + " ".join(f"{tot[v]:12d}" for v in VERDICTS) + f" {sum(after.values()):12d} {_ms(total_cpu, n):>12} {max(mem.peak.values(), default=0):12d}")
    print(f"worker CPU {total_cpu:.0f} s: {total_cpu / max(1, len(workers)):.0f} s of wall time with {len(workers)} workers "
          f"on otherwise idle cores", flush=True)


def _ms(cpu: float, n: int) -> str:
    return f"{cpu / n * 1000:.1f}" if n else "-"


if __name__ == "__main__":
    sys.exit(main())
