"""Loading Nsight Compute reports: `profaudit.load` against `ncu_report` alone, side by side.

Baseline ("ncu_report alone"): open the report with `ncu_report.load_report` and read every metric
the way a user of the public API would -- for every action and every metric name: the metric
object, its unit and `value()`, every instance value and, where present, every correlation id.
That is the same information profaudit puts into its `metrics` table; profaudit additionally
validates the file framing, decodes the session block, derives the kernel table and builds polars
frames. Goal: profaudit / baseline <= 1.3 for each report.

The baseline reads in a helper process that stays up for the whole run, so it pays ncu_report's
per-process set-up once, as a script reading many reports in one process does (and gets the first
report's units for later reports' derived metrics, which is why profaudit does not). This process
never opens a report itself, as the CLI never does.

Each profaudit read runs ncu_report in a fresh child (parsers/isolate.py), forked from a zygote that
has loaded ncu_report's metrics library but read no report. Two more columns measure the same
loads, in the same run, with a zygote whose set-up is not moved onto huge pages (see below), and
with a zygote that skips the set-up (each child then loads the 37 MB library itself, the cost a
fresh worker per read paid before the zygote). What a read still costs
beyond the baseline is fixed per report: the zygote's fork and the child's exit (page tables for
the library's ~110 MB of data and for what the zygote inherited from this process), ncu_report's
first-report work in a process that has read none, and building the frames. It dominates reports
the baseline reads in tens of milliseconds. The first-report work has two parts. One does not depend
on the report (opening, reaching the actions, reading values: any earlier report, of any GPU and
ncu version, saves it; the warm-up below does). The other is the units: `unit()` on a metric name
not yet asked in the process costs ~15 us of CPU, ~8-11 ms for a 558-metric GH200 report
(bobschreiner), and only a report of the same GPU read with its units saves it -- the registry that
hands the first report's derived-metric units to later reports, which no isolated read may share.
The baseline helper, having read every report before, pays neither.

From its second read on, the zygote is warm: before forking for that read it has opened a report
an earlier child read to the end and read its first kernel's metric values (ncu_rep.warm_reader),
which builds ncu_report's caches that do not depend on the report (what a process that has read
any report skips: opening, reaching the actions, reading values); never the units registry, which
is per report. The "cold" column reads the same loads with a zygote that is never warmed (same
set-up, same huge-page move); the warm-up's CPU (once per zygote, in the warm-up reads, outside the
columns) is printed with how many reads its saving takes to pay for it.

The last columns measure the same public-API baseline read as the first report of a process that has
loaded the library and read none (a fresh fork per read, its CPU around the read alone, no fork or
exit): the state every isolated read must start from, since a process that has read a report
keeps that report's state. "pa/first" (profaudit over it) shows how much of the ratio is
profaudit's own (fork, exit, validation, frames) and how much is ncu_report's first-report work.

The zygote moves the library's data onto huge pages while idle, spending on it at most twice what
its forks have cost so far (isolate._HugePageMover); that makes forks and exits cheaper once it is
done. The bench measures steady state: its warm-up reads until the move stops progressing, and it
prints what the move cost (CPU seconds, once per zygote, outside the timed reads) and how many
reads' savings pay for it.

Times are CPU seconds (median of interleaved runs): for profaudit, this process, its children, the
live zygotes and the children they reaped -- a load returns before its child has exited, and the
CPU count waits for that exit (isolate.settle), so the exit is counted though not waited for; for
the baseline, the helper's own around each read.
On a shared machine wall time mostly measures the neighbours; a wall-clock ratio is printed too.

    .venv/bin/python benchmarks/bench_ncu_load.py [--repeat 7] [--top 4] [FILES...]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_PREPARE_READER = None  # ncu_rep.prepare_reader itself, kept before the bench swaps the name
CORPUS = REPO.parent / "shared" / "corpus" / "ncu-rep"
GOAL = 1.3


def baseline(path: Path) -> int:
    """Read every metric, instance and correlation id with the public ncu_report API."""
    import ncu_report

    ctx = ncu_report.load_report(str(path))
    n = 0
    for rng in ctx:
        for action in rng:
            for name in action.metric_names():
                m = action[name]
                m.unit()
                m.value()
                n += 1
                cnt = m.num_instances()
                if cnt:
                    for i in range(cnt):
                        m.value(i)
                    if m.has_correlation_ids():
                        ids = m.correlation_ids()
                        for i in range(cnt):
                            ids.value(i)
                    n += cnt
    return n


def profaudit_load(path: Path) -> int:
    import profaudit

    ps = profaudit.load(path, parallel=False)
    return ps.metrics.height


def _unprepared() -> None:
    """A zygote set-up that does nothing: the key of the comparison zygote (see the docstring)."""


def _prepared_unmoved() -> list:
    """The reader's set-up without the huge-page move (no ranges returned): the key of the zygote
    that measures what the move saves per read."""
    _PREPARE_READER()
    return []


def _prepared_cold() -> list:
    """The reader's set-up, moved onto huge pages as usual: the key of the zygote that is never
    warmed (what the warm-up saves per read)."""
    return _PREPARE_READER()


def _with_prepare(prepare, path: Path, warm: bool = True) -> int:
    from profaudit.parsers import ncu_rep

    warm_reader = ncu_rep.warm_reader
    ncu_rep.prepare_reader = prepare  # read_report looks both names up at each call
    if not warm:
        ncu_rep.warm_reader = None
    try:
        return profaudit_load(path)
    finally:
        ncu_rep.prepare_reader = _PREPARE_READER
        ncu_rep.warm_reader = warm_reader


def profaudit_load_unprepared(path: Path) -> int:
    # not warmed either: a warm-up would load the library into this zygote, which is what it lacks
    return _with_prepare(_unprepared, path, warm=False)


def profaudit_load_unmoved(path: Path) -> int:
    return _with_prepare(_prepared_unmoved, path)


def profaudit_load_cold(path: Path) -> int:
    return _with_prepare(_prepared_cold, path, warm=False)


def _cpu() -> float:
    """CPU seconds of this process, its finished children, and profaudit's live zygotes with the
    children they reaped (parsers/isolate.py): their time counts against profaudit."""
    from profaudit.parsers.isolate import worker_cpu_seconds

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime + worker_cpu_seconds()


def _time(fn, path: Path) -> tuple[float, float]:
    c0, w0 = _cpu(), time.perf_counter()
    fn(path)
    wall = time.perf_counter() - w0  # the load returns before its child has exited ...
    return _cpu() - c0, wall  # ... whose CPU _cpu() waits for (worker_cpu_seconds settles)


def _finish_huge_page_move(files: list[Path], load=profaudit_load, key=None) -> tuple[int, float, int] | None:
    """Read the reports round-robin (with `load`, whose zygote is keyed by `key`, by default the
    reader's own) until that zygote's huge-page move has stopped progressing (it yields to every
    read and is paid for by forks): (pieces moved, its CPU s, reads it took)."""
    from profaudit.parsers import isolate

    last, reads = -1, 0
    while reads < 400:
        for p in files:
            load(p)
            reads += 1
        time.sleep(0.2)  # idle time, as between a dashboard's requests
        st = isolate.zygote_stats(key or _PREPARE_READER)
        if st is None:
            return None
        if st["pieces_moved"] == last:
            return st["pieces_moved"], st["move_cpu_s"], reads
        last = st["pieces_moved"]
    return last, st["move_cpu_s"], reads


def _serve_baseline() -> int:
    """The helper: one report path per line in, `[cpu s, wall s, values read]` per line out."""
    for line in sys.stdin:
        r0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        n = baseline(Path(line.rstrip("\n")))
        r1, w1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        cpu = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
        print(json.dumps([cpu, w1 - w0, n]), flush=True)
    return 0


def _serve_first_report() -> int:
    """The first-report helper: ncu_report's library loaded, no report ever read here; each path
    is read by the public-API baseline in a fresh forked child, whose CPU around that read alone
    (not its fork or exit) comes back. What reading a report costs a process that has read none --
    the state every isolated read starts from."""
    import os

    from profaudit.parsers import ncu_rep

    ncu_rep.prepare_reader()
    for line in sys.stdin:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            r0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            n = baseline(Path(line.rstrip("\n")))
            r1, w1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            os.write(w, json.dumps([r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, w1 - w0, n]).encode())
            os._exit(0)
        os.close(w)
        with os.fdopen(r, "rb") as fh:
            out = fh.read()
        os.waitpid(pid, 0)
        print(out.decode(), flush=True)
    return 0


class _Helper:
    def __init__(self, mode: str = "--serve-baseline"):
        self.proc = subprocess.Popen([sys.executable, __file__, mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def __call__(self, path: Path) -> tuple[float, float]:
        self.proc.stdin.write(f"{path}\n")
        self.proc.stdin.flush()
        cpu, wall, _n = json.loads(self.proc.stdout.readline())
        return cpu, wall

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def _less(saving: float) -> str:
    # a saving measured below zero (noise from neighbours, or a real loss) is printed as a cost
    return "less" if saving >= 0 else "more"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path, help="reports (default: the largest corpus .ncu-rep files)")
    ap.add_argument("--repeat", type=int, default=7, help="timed runs per file and side (median reported)")
    ap.add_argument("--top", type=int, default=4, help="how many of the largest corpus reports to use")
    ap.add_argument("--serve-baseline", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--serve-first-report", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve_baseline:
        return _serve_baseline()
    if args.serve_first_report:
        return _serve_first_report()
    files = args.files
    if not files:
        if not CORPUS.is_dir():
            print(f"no corpus at {CORPUS}; pass report files", file=sys.stderr)
            return 2
        files = sorted((p for p in CORPUS.iterdir() if p.is_file()), key=lambda p: p.stat().st_size, reverse=True)[: args.top]
    files = [p.resolve() for p in files]
    global _PREPARE_READER
    from profaudit.parsers import ncu_rep

    _PREPARE_READER = ncu_rep.prepare_reader

    helper = _Helper()
    first = _Helper("--serve-first-report")
    try:
        # warm every path once (imports, the reader's shared library, page cache, both zygotes)
        for p in files:
            profaudit_load(p)
            profaudit_load_unprepared(p)
            profaudit_load_unmoved(p)
            profaudit_load_cold(p)
            helper(p)
            first(p)
        moved = _finish_huge_page_move(files)
        _finish_huge_page_move(files, profaudit_load_cold, _prepared_cold)  # the cold column's zygote alike
        from profaudit.parsers import isolate

        warm_st = isolate.zygote_stats(_PREPARE_READER)
        print(
            f"{'report':44} {'MB':>5} {'rows':>7} {'ncu_report cpu s':>16} {'profaudit cpu s':>15} {'ratio':>6} {'wall ratio':>10} "
            f"{'cold cpu s':>10} {'ratio':>6} {'not moved cpu s':>15} {'ratio':>6} {'unprepared cpu s':>16} {'ratio':>6} "
            f"{'first-report cpu s':>18} {'pa/first':>8}"
        )
        worst = 0.0
        tot_b = tot_p = tot_c = tot_n = tot_u = tot_f = 0.0
        for p in files:
            tb, tp, tc, tn, tu, tf = [], [], [], [], [], []
            for _ in range(args.repeat):  # interleaved so drift hits every side alike
                tb.append(helper(p))
                tp.append(_time(profaudit_load, p))
                tc.append(_time(profaudit_load_cold, p))
                tn.append(_time(profaudit_load_unmoved, p))
                tu.append(_time(profaudit_load_unprepared, p))
                tf.append(first(p))
            mb, mp, mc, mn, mu, mf = (statistics.median(t[0] for t in ts) for ts in (tb, tp, tc, tn, tu, tf))
            wall = statistics.median(t[1] for t in tp) / statistics.median(t[1] for t in tb)
            tot_b, tot_p, tot_c, tot_n, tot_u, tot_f = tot_b + mb, tot_p + mp, tot_c + mc, tot_n + mn, tot_u + mu, tot_f + mf
            ratio = mp / mb
            worst = max(worst, ratio)
            print(
                f"{p.name[:44]:44} {p.stat().st_size / 1e6:5.2f} {profaudit_load(p):7d} {mb:16.4f} {mp:15.4f} {ratio:6.2f} {wall:10.2f} "
                f"{mc:10.4f} {mc / mb:6.2f} {mn:15.4f} {mn / mb:6.2f} {mu:16.4f} {mu / mb:6.2f} {mf:18.4f} {mp / mf:8.2f}"
            )
        print(
            f"{'all':44} {'':5} {'':7} {tot_b:16.4f} {tot_p:15.4f} {tot_p / tot_b:6.2f} {'':10} {tot_c:10.4f} {tot_c / tot_b:6.2f} "
            f"{tot_n:15.4f} {tot_n / tot_b:6.2f} {tot_u:16.4f} {tot_u / tot_b:6.2f} {tot_f:18.4f} {tot_p / tot_f:8.2f}"
        )
    finally:
        helper.close()
        first.close()
    if moved is not None:
        pieces, move_s, reads = moved
        per_read = (tot_n - tot_p) / len(files)
        pays = f"the move pays for itself after {move_s / per_read:.0f} reads" if per_read > 0 else "no saving measured per read"
        print(
            f"huge pages: {pieces} pieces of 2 MiB moved by the zygote for {move_s:.3f} CPU s once (during {reads} warm-up "
            f"reads, not in the columns); a read costs {abs(per_read) * 1e3:.1f} ms CPU {_less(per_read)} than with the same set-up not moved "
            f"(mean over these reports): {pays}"
        )
    if warm_st is not None and warm_st["warmed"]:
        per_read = (tot_c - tot_p) / len(files)
        pays = f"it pays for itself after {warm_st['warm_cpu_s'] / per_read:.1f} reads" if per_read > 0 else "no saving measured per read"
        print(
            f"warm-up: the zygote's warm-up cost {warm_st['warm_cpu_s'] * 1e3:.1f} ms CPU once (before its second read, not in the "
            f"columns); a read costs {abs(per_read) * 1e3:.1f} ms CPU {_less(per_read)} than from the cold zygote (mean over these reports): {pays}"
        )
    else:
        print("warm-up: the zygote was not warmed")
    print(f"worst ratio {worst:.2f} (goal <= {GOAL}): {'met' if worst <= GOAL else 'NOT met'}")
    return 0 if worst <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
