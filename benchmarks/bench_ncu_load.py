"""Loading Nsight Compute reports: `profaudit.load` against `ncu_report` alone, side by side.

The baseline read ("ncu_report alone"): open the report with `ncu_report.load_report` and read
every metric the way a careful user of the public API would -- for every action and every metric
name: the metric object, its unit (asked once per metric name within the report, as profaudit's
child does: a per-report cache, never shared between reports), `value()`, every instance value and,
where present, every correlation id. That is the same information profaudit puts into its `metrics`
table; profaudit additionally validates the file framing, decodes the session block, derives the
kernel table and builds polars frames.

GOAL: profaudit / first-report baseline <= 1.3 for each report (the "pa/first" column). The
first-report baseline is that read as the first report of a process that has loaded ncu_report's
library and read no report: the state any correct isolated read starts from. It is measured in its
best case, in the very state profaudit's child starts from: a child of profaudit's own zygote (set-up
done, library data on huge pages, warmed as the zygote is warmed), with the cyclic collector off
(as profaudit's child reads), its CPU taken around the read alone. So the two sides pay:
  - baseline: ncu_report's open, unit() once per metric name, values, instances and correlation
    ids, through the public API's Python wrappers; no fork, no exit, no transfer, no frames;
  - profaudit: the request to the zygote, the fork, the child's start (death signal, memory cap,
    its work unpickled), the same reads through the wrappers' SWIG entry points plus rule results
    and NVTX ranges, typed columns pickled through the pipe, the child's exit (counted though not
    waited for), and in this process the file's framing checks, session rows, kernel rows and
    polars frames.

The warm ratio (profaudit / a helper that has read every report before) is printed for information
and is not the goal: that helper's saving over the first-report read is the state ncu_report keeps
between reports -- above all its units registry, which hands one report's derived-metric units to
later reports (it gave smemTranspose's 'byte' metric 'sector' after smemReduceInteger) and which
no correct isolated read may share. The warm helper stays up for the whole run, so it pays
ncu_report's per-process set-up once, as a script reading many reports in one process does. This
process never opens a report itself, as the CLI never does.

Each profaudit read runs ncu_report in a fresh child (parsers/isolate.py) of a zygote that is a
fresh interpreter (parsers/ncu_child.py: no polars, none of the package's heavy modules), which has
loaded ncu_report's metrics library but read no report. Three more columns measure the same loads,
in the same run: "cold", a zygote never warmed (see below); "not moved", a zygote whose set-up is
not moved onto huge pages (see below); "forked", a zygote forked from this process, as every read
was before the spawned zygote (each fork and exit then carries polars and the whole package). What
a read costs beyond the first-report baseline is fixed per read, whatever the report's size: the
zygote's fork, the child's start and exit (page tables for the library's ~110 MB of data), the
transfer, and this process's framing checks and frames (10-14 ms on a shared 2-core machine at
load 11-16); it dominates reports the baseline reads in a few tens of milliseconds (bobschreiner).
The table after the columns says where each read's CPU goes, stage by stage.
Against the warm helper a read also pays ncu_report's first-report work. It has two parts. One
does not depend on the report (opening, reaching the actions, reading values: any earlier report, of any GPU and
ncu version, saves it; the warm-up below does). The other is the units: `unit()` on a metric name
not yet asked in the process costs ~15 us of CPU, ~8-11 ms for a 558-metric GH200 report
(bobschreiner), and only a report of the same GPU read with its units saves it -- the registry that
hands the first report's derived-metric units to later reports, which no isolated read may share.
(Half of such a call compiles a table of regular expressions that ncu_report builds and drops on
every call: see the comment on `unit_cache` in parsers/ncu_child.py.)
The warm helper, having read every report before, pays neither; the first-report baseline pays the
units, as profaudit's child does (the warm-up below saves both of them the first part).

From its second read on, the zygote is warm: before forking for that read it has opened a report
an earlier child read to the end and read its first kernel's metric values (ncu_child.warm_reader),
which builds ncu_report's caches that do not depend on the report (what a process that has read
any report skips: opening, reaching the actions, reading values); never the units registry, which
is per report. The "cold" column reads the same loads with a zygote that is never warmed (same
set-up, same huge-page move); the warm-up's CPU (once per zygote, in the warm-up reads, outside the
columns) is printed with how many reads its saving takes to pay for it.

The first-report baseline (see GOAL above) reads in a fresh child of the reader's own zygote per
read, through the same isolate.run_isolated as profaudit; only the child's CPU around the read
comes back. Its read lives in benchmarks/ncu_reads.py, which imports nothing the child has not
loaded (this file's imports, done in the child before the timed read, left the read a few hundred
page faults fewer than profaudit's child meets). The ratio columns of "cold", "not moved" and
"forked" are against it too.

The zygote moves the library's data onto huge pages while idle, spending on it at most twice what
its forks have cost so far (isolate._HugePageMover); that makes forks and exits cheaper once it is
done. The bench measures steady state: its warm-up reads until the move stops progressing, and it
prints what the move cost (CPU seconds, once per zygote, outside the timed reads) and how many
reads' savings pay for it.

Times are CPU seconds (median of interleaved runs): for profaudit, this process, its children, the
live zygotes and the children they reaped -- a load returns before its child has exited, and the
CPU count waits for that exit (isolate.settle), so the exit is counted though not waited for; for
each baseline, the reading process's own around each read.
On a shared machine wall time mostly measures the neighbours; a wall-clock ratio (against the
first-report baseline) is printed too.

The breakdown (ms, medians): "fork+exit", an isolated read whose child does nothing, in the reader's
zygote (and, for comparison, in the forked one); "open", `ncu_report.load_report`; "unit()", the
reader's read with its unit() calls minus the same read without them (net: on some reports unit()
makes the reads after it cheaper, and the difference is below zero); "values, instances, rules",
the rest of the reader's read; "transfer", pickling its messages in the child and unpickling them
here; "parent", `profaudit.load` with the child's messages replayed (framing checks, session and
kernel rows, frames). The reader's stages are read in fresh children of the reader's own zygote,
as the first-report baseline is, so "read - first" compares two reads made in the same state.

    .venv/bin/python benchmarks/bench_ncu_load.py [--repeat 7] [--top 4] [FILES...]
"""

from __future__ import annotations

import argparse
import functools
import json
import pickle
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import ncu_reads  # this folder (the script's) is on the path, as on the zygote's: see ncu_reads
from ncu_reads import _own_cpu, baseline

REPO = Path(__file__).resolve().parents[1]
_PREPARE_READER = None  # ncu_rep.prepare_reader itself, kept before the bench swaps the name
CORPUS = REPO.parent / "shared" / "corpus" / "ncu-rep"
GOAL = 1.3


def profaudit_load(path: Path) -> int:
    import profaudit

    ps = profaudit.load(path, parallel=False)
    return ps.metrics.height


# The zygotes of the other columns, each keyed by its own set-up object (isolate keeps one zygote
# per set-up): partials of the reader's set-up, so that a spawned zygote can import them by name.
_PREPARED_UNMOVED = None  # the set-up without the huge-page move: what the move saves per read
_PREPARED_COLD = None  # the set-up, moved as usual, in a zygote never warmed: what the warm-up saves
_PREPARED_FORKED = None  # the set-up in a zygote forked from this process: what the spawned one saves


def _variants() -> None:
    global _PREPARED_UNMOVED, _PREPARED_COLD, _PREPARED_FORKED
    from profaudit.parsers import ncu_child

    _PREPARED_UNMOVED = functools.partial(ncu_child.prepare_reader, huge_pages=False)
    _PREPARED_COLD = functools.partial(ncu_child.prepare_reader)
    _PREPARED_FORKED = functools.partial(ncu_child.prepare_reader)


def _with_prepare(prepare, path: Path, warm: bool = True, spawn: bool = True) -> int:
    from profaudit.parsers import ncu_rep

    warm_reader = ncu_rep.warm_reader
    ncu_rep.prepare_reader = prepare  # read_report looks these names up at each call
    ncu_rep.SPAWN_ZYGOTE = spawn
    if not warm:
        ncu_rep.warm_reader = None
    try:
        return profaudit_load(path)
    finally:
        ncu_rep.prepare_reader = _PREPARE_READER
        ncu_rep.warm_reader = warm_reader
        ncu_rep.SPAWN_ZYGOTE = True


def profaudit_load_forked(path: Path) -> int:
    return _with_prepare(_PREPARED_FORKED, path, spawn=False)


def profaudit_load_unmoved(path: Path) -> int:
    return _with_prepare(_PREPARED_UNMOVED, path)


def profaudit_load_cold(path: Path) -> int:
    return _with_prepare(_PREPARED_COLD, path, warm=False)


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
    reader's own) until that zygote's huge-page move is done, every piece tried (it yields to every
    read and is paid for by forks): (pieces moved, its CPU s, reads it took).

    Done, not "no progress in one round": each read buys the move twice its fork's CPU, and where
    a piece costs more than one round buys (~6 ms in a VM that backs memory lazily; one report is
    a round of one read), a round moves nothing while the move is far from done. Stopping there
    left 2 to 23 of bobschreiner's ~55 pieces moved from run to run, and its fork+exit at 11-14 ms
    instead of the ~5 ms of a zygote that has read a while (a dashboard's steady state)."""
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
        if st["pieces_left"] == 0 or (st["pieces_left"] is None and st["pieces_moved"] == last):
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


class _FirstReport:
    """The first-report baseline: each read in a fresh child of profaudit's own zygote for the
    reader (isolate.run_isolated with the reader's set-up), which has loaded the library, moved its
    data onto huge pages and been warmed, and has read no report -- exactly where profaudit's child
    starts. The child runs first_report_read, named through this file's module as the zygote
    imports it (the zygote has the bench's folder on its path, as this process has)."""

    def __init__(self):
        self.read = ncu_reads.first_report_read

    def __call__(self, path: Path) -> tuple[float, float]:
        from profaudit.parsers import isolate

        cpu, wall, _n = isolate.run_isolated(path, functools.partial(self.read, str(path)), lambda c: None, "the baseline reader", prepare=_PREPARE_READER, spawn=True)
        return cpu, wall


class _Stages:
    """The breakdown's reader stages: each path read in two fresh children of the reader's own
    zygote (set-up done, huge pages, warmed; where profaudit's child and the first-report baseline
    read), with and without unit() (see child_stages)."""

    def __init__(self):
        self.work = ncu_reads.child_stages

    def ask(self, path: Path) -> dict:
        from profaudit.parsers import isolate

        got = {u: isolate.run_isolated(path, functools.partial(self.work, str(path), u), lambda c: None, "the breakdown reader", prepare=_PREPARE_READER, spawn=True) for u in (True, False)}
        with_u, without = got[True], got[False]
        return {"open": with_u["open"], "units": with_u["read"] - without["read"], "rest": without["read"] - without["open"], "encode": with_u["encode"], "payload": with_u["payload"]}


def _parent_only(path: Path, chunks: list, res: dict) -> float:
    """CPU of this process for a profaudit.load whose isolated read is replayed from a child's
    messages: validation of the file's framing, session rows, kernel rows, frames, the Profile."""
    from profaudit.parsers import ncu_rep

    def replay(p, work, on_chunk, what, **kw):
        for ch in chunks:
            on_chunk(ch)
        return res

    real = ncu_rep.run_isolated
    ncu_rep.run_isolated = replay
    try:
        c = _own_cpu()
        profaudit_load(path)
        return _own_cpu() - c
    finally:
        ncu_rep.run_isolated = real


def _empty_read(prepare, spawn: bool):
    """An isolated read whose child does nothing (`id(send)`), in the zygote of `prepare`: the
    request, the fork, the child's exit and the reply."""
    from profaudit.parsers import isolate

    def read(path: Path) -> int:
        return isolate.run_isolated(path, id, lambda c: None, "t", prepare=prepare, spawn=spawn)

    return read


class _Helper:
    def __init__(self, mode: str = "--serve-baseline", *extra: str):
        self.proc = subprocess.Popen([sys.executable, __file__, mode, *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, path: Path):
        self.proc.stdin.write(f"{path}\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def __call__(self, path: Path) -> tuple[float, float]:
        cpu, wall, _n = self.ask(path)
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
    args = ap.parse_args(argv)
    if args.serve_baseline:
        return _serve_baseline()
    files = args.files
    if not files:
        if not CORPUS.is_dir():
            print(f"no corpus at {CORPUS}; pass report files", file=sys.stderr)
            return 2
        files = sorted((p for p in CORPUS.iterdir() if p.is_file()), key=lambda p: p.stat().st_size, reverse=True)[: args.top]
    files = [p.resolve() for p in files]
    global _PREPARE_READER
    from profaudit.parsers import isolate, ncu_rep

    _PREPARE_READER = ncu_rep.prepare_reader
    _variants()
    empty_spawned, empty_forked = _empty_read(_PREPARE_READER, True), _empty_read(_PREPARED_FORKED, False)

    helper = _Helper()
    first = _FirstReport()
    parts = _Stages()
    breakdown = []
    try:
        # warm every path once (imports, the reader's shared library, page cache, every zygote)
        for p in files:
            profaudit_load(p)
            profaudit_load_forked(p)
            profaudit_load_unmoved(p)
            profaudit_load_cold(p)
            helper(p)
            first(p)
        moved = _finish_huge_page_move(files)
        _finish_huge_page_move(files, profaudit_load_cold, _PREPARED_COLD)  # the other moved zygotes alike
        _finish_huge_page_move(files, profaudit_load_forked, _PREPARED_FORKED)
        warm_st = isolate.zygote_stats(_PREPARE_READER)
        print(
            f"{'report':44} {'MB':>5} {'rows':>7} {'first-report cpu s':>18} {'profaudit cpu s':>15} {'pa/first':>8} {'wall ratio':>10} "
            f"{'cold cpu s':>10} {'ratio':>6} {'not moved cpu s':>15} {'ratio':>6} {'forked cpu s':>12} {'ratio':>6} "
            f"{'warm ncu_report cpu s':>21} {'warm ratio':>10}"
        )
        worst = worst_warm = 0.0
        tot_b = tot_p = tot_c = tot_n = tot_k = tot_f = 0.0
        for p in files:
            tb, tp, tc, tn, tk, tf = [], [], [], [], [], []
            st: dict[str, list[float]] = {k: [] for k in ("spawned", "forked", "open", "units", "rest", "transfer", "parent")}
            for _ in range(args.repeat):  # interleaved so drift hits every side alike
                tb.append(helper(p))
                tp.append(_time(profaudit_load, p))
                tc.append(_time(profaudit_load_cold, p))
                tn.append(_time(profaudit_load_unmoved, p))
                tk.append(_time(profaudit_load_forked, p))
                tf.append(first(p))
                st["spawned"].append(_time(empty_spawned, p)[0])
                st["forked"].append(_time(empty_forked, p)[0])
                got = parts.ask(p)
                c = _own_cpu()
                chunks, res = pickle.loads(got["payload"])
                st["transfer"].append(got["encode"] + _own_cpu() - c)
                st["parent"].append(_parent_only(p, chunks, res))
                for k in ("open", "units", "rest"):
                    st[k].append(got[k])
            mb, mp, mc, mn, mk, mf = (statistics.median(t[0] for t in ts) for ts in (tb, tp, tc, tn, tk, tf))
            breakdown.append((p, mp, mf, {k: statistics.median(v) for k, v in st.items()}))
            wall = statistics.median(t[1] for t in tp) / statistics.median(t[1] for t in tf)
            tot_b, tot_p, tot_c, tot_n, tot_k, tot_f = tot_b + mb, tot_p + mp, tot_c + mc, tot_n + mn, tot_k + mk, tot_f + mf
            worst, worst_warm = max(worst, mp / mf), max(worst_warm, mp / mb)
            print(
                f"{p.name[:44]:44} {p.stat().st_size / 1e6:5.2f} {profaudit_load(p):7d} {mf:18.4f} {mp:15.4f} {mp / mf:8.3f} {wall:10.2f} "
                f"{mc:10.4f} {mc / mf:6.2f} {mn:15.4f} {mn / mf:6.2f} {mk:12.4f} {mk / mf:6.2f} {mb:21.4f} {mp / mb:10.2f}"
            )
        print(
            f"{'all':44} {'':5} {'':7} {tot_f:18.4f} {tot_p:15.4f} {tot_p / tot_f:8.3f} {'':10} {tot_c:10.4f} {tot_c / tot_f:6.2f} "
            f"{tot_n:15.4f} {tot_n / tot_f:6.2f} {tot_k:12.4f} {tot_k / tot_f:6.2f} {tot_b:21.4f} {tot_p / tot_b:10.2f}"
        )
    finally:
        helper.close()
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
    per_read = (tot_k - tot_p) / len(files)
    print(f"spawned zygote: a read costs {abs(per_read) * 1e3:.1f} ms CPU {_less(per_read)} than from a zygote forked from this process (mean over these reports)")
    print()
    print("where a read's CPU goes (ms, medians; the stages are measured apart, so their sum only approximates the profaudit column):")
    print(
        f"{'report':44} {'fork+exit':>9} {'(forked)':>8} {'open':>6} {'unit()':>7} {'values, instances, rules':>24} {'transfer':>8} "
        f"{'parent':>7} {'sum':>7} {'profaudit':>9} {'first-report':>12} {'read - first':>12}"
    )
    for p, mp, mf, m in breakdown:
        total = m["spawned"] + m["open"] + m["units"] + m["rest"] + m["transfer"] + m["parent"]
        read = m["open"] + m["units"] + m["rest"]
        print(
            f"{p.name[:44]:44} {m['spawned'] * 1e3:9.1f} {m['forked'] * 1e3:8.1f} {m['open'] * 1e3:6.1f} {m['units'] * 1e3:7.1f} "
            f"{m['rest'] * 1e3:24.1f} {m['transfer'] * 1e3:8.1f} {m['parent'] * 1e3:7.1f} {total * 1e3:7.1f} {mp * 1e3:9.1f} "
            f"{mf * 1e3:12.1f} {(read - mf) * 1e3:12.1f}"
        )
    print(
        "fork+exit: an isolated read whose child does nothing, in the reader's zygote (and in one forked from this process); "
        "open: ncu_report.load_report; unit(): the read with unit() minus without (net; below zero where unit() makes later reads cheaper); transfer: pickling the messages in the child "
        "and unpickling here; parent: profaudit.load with the child's messages replayed (framing checks, session and kernel rows, frames); "
        "first-report: the goal's baseline read; read - first: profaudit's own read of the report (open + unit() + values, instances, "
        "rules) minus it. What profaudit pays beyond the first-report read is about fork+exit + (read - first) + transfer + parent"
    )
    print(
        f"warm ratio (information, not the goal): worst {worst_warm:.2f}; the warm helper has read every report before, and what "
        "that saves it is the state ncu_report keeps between reports (its units registry above all), which no isolated read may share"
    )
    print(
        f"worst pa/first {worst:.3f} (goal <= {GOAL}, against ncu_report's first-report read: a fresh child of the reader's warmed "
        f"zygote, its CPU around the read alone): {'met' if worst <= GOAL else 'NOT met'}"
    )
    return 0 if worst <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
