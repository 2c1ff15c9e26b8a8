"""Audit a claim whose sides attach nsys SQLite exports with many timed calls (issue 11).

    .venv/bin/python benchmarks/bench_audit_trace.py [--calls 5000] [--repeat 3]

Writes two nsys exports in the real schema (tests/audit_traces.py): per timed call an NVTX range,
three kernel launches on two streams and, on the candidate, a helper thread's kernel that its
events miss. Times, best of --repeat:
  load    profaudit.load of both exports
  audit   gather + every rule, including the trace reading (per-call GPU time as the union of
          kernel intervals, one-time work per call, host gaps, graph launches, kernel names) and
          the trace-corrected supported speedup with its 10 000-resample bootstrap
and prints the supported speedup with what corrected it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    import profaudit
    from audit_fixtures import claim, side
    from audit_traces import calls, nsys_sqlite
    from profaudit.audit import audit

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        base = calls(a.calls, [("gemm_kernel", 7, 60_000, 0), ("bias_kernel", 7, 20_000, 0), ("side_kernel", 14, 15_000, -15_000)])
        cand = calls(a.calls, [("fused_kernel", 7, 30_000, 0)], helper=[("helper_kernel", 14, 50_000)])
        nsys_sqlite(d / "b.sqlite", base)
        nsys_sqlite(d / "c.sqlite", cand)
        best_load = best_audit = float("inf")
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            pb, pc = profaudit.load(str(d / "b.sqlite")), profaudit.load(str(d / "c.sqlite"))
            t1 = time.perf_counter()
            meta = {"timed_range": "call", "profiled_calls": a.calls}
            b = side("baseline", 80_000, seed=1, n=200, runs=1, meta=meta, profiles=pb)
            c = side("candidate", 30_000, seed=2, n=200, runs=1, meta=meta, profiles=pc)
            report = audit(claim(b, c, speedup=2.67, workload={}))
            t2 = time.perf_counter()
            best_load, best_audit = min(best_load, t1 - t0), min(best_audit, t2 - t1)
        kernels = pb.kernels.height + pc.kernels.height
        print(f"{a.calls} timed calls per side, {kernels} kernels, {pb.ranges.height + pc.ranges.height} ranges")
        print(f"load  {best_load:.2f} s   audit {best_audit:.2f} s   (best of {a.repeat})")
        print(f"verdict {report.verdict}; supported {report.supported.interval.describe() if report.supported.interval else report.supported.status}")
        for e in report.supported.corrected_by:
            print(f"  corrected by {e}")


if __name__ == "__main__":
    main()
