"""Loading Nsight Compute reports: `profaudit.load` against `ncu_report` alone, side by side.

Baseline ("ncu_report alone"): open the report with `ncu_report.load_report` and read every metric
the way a user of the public API would -- for every action and every metric name: the metric
object, its unit and `value()`, every instance value and, where present, every correlation id.
That is the same information profaudit puts into its `metrics` table; profaudit additionally
validates the file framing, decodes the session block, derives the kernel table and builds polars
frames. Goal: profaudit / baseline <= 1.3 on the largest corpus reports.

Each read runs ncu_report in a fresh child (parsers/isolate.py: a reader kept between reads gave
later reports the first one's derived-metric units), forked from a zygote that has loaded
ncu_report's metrics library but read no report. The baseline reads in this process, which pays
that library load once; profaudit's zygote is forked at the first profaudit read, before this
process has read any report itself (as in the CLI, whose process never opens a report).

Times are CPU seconds of this process, its children, profaudit's zygote and the children the zygote
reaped (median of interleaved runs): on a shared machine wall time mostly measures the neighbours.
Wall-clock medians are printed too. Every ratio is per report; the goal holds for each.

    .venv/bin/python benchmarks/bench_ncu_load.py [--repeat 7] [--top 4] [FILES...]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
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


def _cpu() -> float:
    """CPU seconds of this process, its finished children, and profaudit's live zygote with the
    children it reaped (parsers/isolate.py): their time counts against profaudit."""
    from profaudit.parsers.isolate import worker_cpu_seconds

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime + worker_cpu_seconds()


def _time(fn, path: Path) -> tuple[float, float]:
    c0, w0 = _cpu(), time.perf_counter()
    fn(path)
    return _cpu() - c0, time.perf_counter() - w0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path, help="reports (default: the largest corpus .ncu-rep files)")
    ap.add_argument("--repeat", type=int, default=7, help="timed runs per file and side (median reported)")
    ap.add_argument("--top", type=int, default=4, help="how many of the largest corpus reports to use")
    args = ap.parse_args(argv)
    files = args.files
    if not files:
        if not CORPUS.is_dir():
            print(f"no corpus at {CORPUS}; pass report files", file=sys.stderr)
            return 2
        files = sorted((p for p in CORPUS.iterdir() if p.is_file()), key=lambda p: p.stat().st_size, reverse=True)[: args.top]

    # warm both paths once (imports, the reader's shared library, page cache); profaudit first,
    # so that its zygote is forked from a process that has not read a report in-process
    for p in files:
        profaudit_load(p)
        baseline(p)

    print(f"{'report':48} {'MB':>6} {'rows':>8} {'ncu_report cpu s':>16} {'profaudit cpu s':>15} {'ratio':>6} {'wall ratio':>10}")
    worst = 0.0
    tot_b = tot_p = 0.0
    for p in files:
        tb, tp = [], []
        for _ in range(args.repeat):  # interleaved so drift hits both sides alike
            tb.append(_time(baseline, p))
            tp.append(_time(profaudit_load, p))
        mb, mp = statistics.median(t[0] for t in tb), statistics.median(t[0] for t in tp)
        wall = statistics.median(t[1] for t in tp) / statistics.median(t[1] for t in tb)
        tot_b += mb
        tot_p += mp
        ratio = mp / mb
        worst = max(worst, ratio)
        print(f"{p.name[:48]:48} {p.stat().st_size / 1e6:6.2f} {profaudit_load(p):8d} {mb:16.4f} {mp:15.4f} {ratio:6.2f} {wall:10.2f}")
    print(f"{'all':48} {'':6} {'':8} {tot_b:16.4f} {tot_p:15.4f} {tot_p / tot_b:6.2f}")
    print(f"worst ratio {worst:.2f} (goal <= {GOAL}): {'met' if worst <= GOAL else 'NOT met'}")
    return 0 if worst <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
