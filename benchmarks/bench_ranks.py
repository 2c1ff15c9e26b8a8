"""A many-rank distributed run: `profaudit.ranks.load_run` against Holistic Trace Analysis'
`TraceAnalysis` on the same folder of traces, measured in the same run.

The run is synthetic (tests/ranks_synth.py, real Kineto event shapes): `--ranks` traces (default
64, 8 per host) of `--steps` ProfilerSteps with `--kernels` compute kernels each, two gradient
all-reduces per step overlapping the backward kernels, one late rank and per-host clock offsets;
times on whole microseconds, so that both sides must print the same mean idle time and overlap.

Each side runs in a child process that loads the run and computes the same analyses:
- profaudit: `load_run(folder)` then ranks (clock alignment), collectives matched across ranks,
  per-step temporal breakdown, stragglers;
- HTA: `TraceAnalysis(trace_dir=folder)` then `get_temporal_breakdown()` and
  `get_comm_comp_overlap()` (HTA has no per-step breakdown, no cross-rank matching of collectives).
Both parse ranks in worker processes with their defaults. Time is the wall time of load + analyses
inside the child; peak memory is the largest summed resident set of the child and its workers,
sampled every 20 ms with psutil (a sample can miss a short peak: both sides are sampled alike).

HTA 0.5 fails with pandas 3 (it writes int64 indices into an int8 column); `--hta-python` names an
interpreter where HTA and this checkout are both importable (e.g. a venv with `pandas<3`,
`holistictraceanalysis` and profaudit's dependencies).

    .venv/bin/python benchmarks/bench_ranks.py [--ranks 64] [--steps 4] [--kernels 120] [--hta-python PY] [--skip-hta]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the synthetic-run generator the tests use

PROFAUDIT_CHILD = """
import sys, time
import polars as pl
from profaudit.ranks import load_run
if __name__ == "__main__":
    t0 = time.perf_counter()
    run = load_run(sys.argv[1])
    r, c, bd, s = run.ranks, run.calls, run.step_breakdown, run.stragglers
    dt = time.perf_counter() - t0
    trace = bd.filter(pl.col("step").is_null())
    print("RESULT", dt, f"ranks={r.height} calls={c.height} collective_kernels={run.collectives.height} "
          f"top_straggler={s['rank'][0]} mean_overlap_pct={trace['overlap_pct'].mean():.2f} mean_idle_us={trace['idle_ns'].mean() / 1e3:.1f}")
"""

HTA_CHILD = """
import sys, time, logging
logging.disable(logging.CRITICAL)
if __name__ == "__main__":
    from hta.trace_analysis import TraceAnalysis
    t0 = time.perf_counter()
    ta = TraceAnalysis(trace_dir=sys.argv[1], include_last_profiler_step=True)
    b = ta.get_temporal_breakdown(visualize=False)
    o = ta.get_comm_comp_overlap(visualize=False)
    dt = time.perf_counter() - t0
    print("RESULT", dt, f"ranks={len(b)} mean_overlap_pct={o['comp_comm_overlap_pctg'].mean():.2f} mean_idle_us={b['idle_time(us)'].mean():.1f}")
"""


class ChildFailed(Exception):
    pass


def run_child(python: str, code: str, folder: Path) -> tuple[float, float, str]:
    """(seconds inside the child, peak summed RSS in MiB of the child and its workers, result line)."""
    import psutil

    proc = subprocess.Popen([python, "-c", code, str(folder)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO, text=True)
    parent = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            procs = [parent, *parent.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in procs if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.02)
    out, err = proc.communicate()
    line = next((l for l in out.splitlines() if l.startswith("RESULT")), None)
    if proc.returncode != 0 or line is None:
        lines = err.strip().splitlines()
        # the exception line, not the tail of a long repr it may end with
        why = next((l for l in reversed(lines) if l and not l[0].isspace() and ("Error" in l or "Exception" in l)), lines[-1] if lines else out[-300:])
        raise ChildFailed(f"exit {proc.returncode}: {why[:200]}")
    _, secs, rest = line.split(" ", 2)
    return float(secs), peak / 2**20, rest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--per-host", type=int, default=8)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--kernels", type=int, default=120, help="compute kernels per step and rank")
    ap.add_argument("--hta-python", default=sys.executable, help="interpreter with HTA (and this checkout) importable")
    ap.add_argument("--skip-hta", action="store_true")
    args = ap.parse_args(argv)

    from ranks_synth import make_run, write_run

    with tempfile.TemporaryDirectory(prefix="bench_ranks_") as tmp:
        folder = Path(tmp) / "run"
        docs, _ = make_run(world_size=args.ranks, steps=args.steps, ranks_per_host=args.per_host,
                           compute_kernels_per_step=args.kernels, late_rank=args.ranks // 3, whole_us=True, seed=0)
        files = write_run(folder, docs)
        del docs
        size = sum(f.stat().st_size for f in files) / 2**20
        print(f"run: {args.ranks} ranks x {args.steps} steps x {args.kernels} kernels, {size:.1f} MiB of JSON, {os.cpu_count()} CPUs")
        t, m, res = run_child(sys.executable, PROFAUDIT_CHILD, folder)
        print(f"profaudit.ranks.load_run + analyses: {t:8.2f} s  peak {m:8.1f} MiB  {res}")
        # one process: no worker interpreters to pay for (on few cores the pool gains little)
        ts, ms, _ = run_child(sys.executable, PROFAUDIT_CHILD.replace("load_run(sys.argv[1])", "load_run(sys.argv[1], parallel=False)"), folder)
        print(f"  the same, parallel=False:          {ts:8.2f} s  peak {ms:8.1f} MiB")
        if args.skip_hta:
            return 0
        try:
            th, mh, resh = run_child(args.hta_python, HTA_CHILD, folder)
        except ChildFailed as exc:
            # the baseline is not measured, and the output says so (make benchmarks goes on)
            print(f"HTA baseline NOT measured: it failed under {args.hta_python} ({exc}); "
                  "pass --hta-python with an interpreter where HTA runs (HTA 0.5 needs pandas < 3)")
            return 0
        print(f"HTA TraceAnalysis + breakdown/overlap: {th:8.2f} s  peak {mh:8.1f} MiB  {resh}")
        print(f"ratio: HTA time / profaudit time = {th / t:.2f} (parallel=False {th / ts:.2f}); "
              f"profaudit peak / HTA peak = {m / mh:.2f} (parallel=False {ms / mh:.2f})")
        print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall times stretch on a busy machine)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
