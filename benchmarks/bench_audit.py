"""Audit a claim over two timing logs of one million samples each, bootstrap included.

    .venv/bin/python benchmarks/bench_audit.py [--samples 1000000] [--repeat 3]

Writes two CSV logs (iteration, time_ms, sm_clock_mhz, temperature_c) with a warm-up head and a
claim file to a temporary folder, then times, best of --repeat:
  audit       gather + every rule + 10 000-resample bootstrap intervals (time and cycle space, four
              statistics), Mann-Whitney U, trend tests, on the loaded samples
  end to end  load_claim (CSV parsing) + audit
and, measured in the same run, the named baselines:
  naive numpy bootstrap   x[rng.integers(0, n, n)] per resample, median and mean, both sides; timed
                          over 20 resamples and scaled to the same 10 000 (running it in full would
                          take minutes)
  scipy Mann-Whitney U    scipy.stats.mannwhitneyu on the same two million samples
The target (issue 5, "Speed"): the audit in under 2 s on the 2-core development machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def write_logs(folder: Path, n: int) -> Path:
    rng = np.random.default_rng(0)
    for name, med, head in (("baseline", 1.0, 200), ("candidate", 0.48, 0)):
        t = rng.lognormal(np.log(med), 0.03, n)
        t[:head] *= 5.0
        pl.DataFrame(
            {
                "iteration": np.arange(n),
                "time_ms": t,
                "sm_clock_mhz": np.round(1980 + rng.normal(0, 3, n), 1),
                "temperature_c": np.round(rng.normal(62, 0.5, n), 1),
            }
        ).write_csv(folder / f"{name}.csv")
    meta = "{dtype: bf16, shape: [4, 8192, 8192], time_source: cuda_events, l2_flush: true, compile_mode: eager, cuda_graphs: false}"
    claim = folder / "claim.yaml"
    claim.write_text(
        f"""claim: "bench: 2.08x"
speedup: 2.08
statistic: median
device: "NVIDIA H100 80GB HBM3"
workload: {{bytes: 1.07e9}}
baseline: {{timings: baseline.csv, meta: {meta}}}
candidate: {{timings: candidate.csv, meta: {meta}}}
"""
    )
    return claim


def best(fn, repeat: int) -> tuple[float, object]:
    out, times = None, []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def naive_bootstrap_seconds(x: np.ndarray, y: np.ndarray, resamples: int, measured: int = 20) -> float:
    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    for _ in range(measured):
        for v in (x, y):
            r = v[rng.integers(0, v.size, v.size)]
            np.median(r)
            r.mean()
    return (time.perf_counter() - t0) / measured * resamples


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from scipy import stats as sps

    from profaudit.audit import audit, gather, load_claim
    from profaudit.audit.rules import RULES
    from profaudit.audit.stats import DEFAULT_RESAMPLES, mann_whitney
    from profaudit.audit.verdict import audit_evidence

    with tempfile.TemporaryDirectory() as tmp:
        claim_path = write_logs(Path(tmp), args.samples)
        t_load, claim = best(lambda: load_claim(claim_path), 1)
        audit(claim)  # warm imports (scipy.stats, specs) once, outside the timing

        t_audit, report = best(lambda: audit_evidence(gather(claim), RULES), args.repeat)
        t_e2e, _ = best(lambda: audit(claim_path), args.repeat)

        x, y = report.evidence.baseline.steady, report.evidence.candidate.steady
        t_naive = naive_bootstrap_seconds(x, y, DEFAULT_RESAMPLES)
        t_mw_scipy, _ = best(lambda: sps.mannwhitneyu(x, y, alternative="two-sided"), 1)
        t_mw, _ = best(lambda: mann_whitney(x, y), 1)

    sup = report.supported.interval
    print(f"samples per side          {args.samples:,} (steady state: {report.evidence.baseline.n:,} / {report.evidence.candidate.n:,})")
    print(f"verdict                   {report.verdict}; supported {sup.describe()}")
    print(f"interval method           {report.comparison.method}")
    print(f"audit (gather+rules+boot) {t_audit:8.3f} s   best of {args.repeat}   target < 2 s: {'met' if t_audit < 2 else 'MISSED'}")
    print(f"load_claim (CSV parsing)  {t_load:8.3f} s")
    print(f"end to end (load + audit) {t_e2e:8.3f} s   best of {args.repeat}")
    print(f"naive numpy bootstrap     {t_naive:8.1f} s   ({DEFAULT_RESAMPLES} resamples x 2 sides, median + mean, scaled from 20)  -> audit is {t_naive / t_audit:,.0f}x faster")
    print(f"scipy mannwhitneyu        {t_mw_scipy:8.3f} s   vs profaudit mann_whitney {t_mw:.3f} s  -> {t_mw_scipy / t_mw:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
