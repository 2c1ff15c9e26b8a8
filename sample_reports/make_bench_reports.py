"""Regenerate sample_reports/bench_cpu/ and the harness_*.yaml claims in sample_reports/claims/.

    .venv/bin/python sample_reports/make_bench_reports.py

Everything is measured here, on this machine's CPU, by profaudit's own harness:

1. examples/bench_compare_softmax.py (unfused vs fused torch softmax, 256x1024 fp32) with the
   default method for a CPU (hot cache, interleaved, noise target 0.5 %, <= 300 samples), into
   bench_cpu/softmax/.
2. The same file, unfused variant only, with --cache cold (CPU last-level cache flushed before
   every call), into bench_cpu/softmax_cold/.
3. Three claims, each audited, verdicts recorded in claims/harness_verdicts.json:
     harness_softmax_honest.yaml    `bench compare` on (1): the measured ratio of medians
     harness_softmax_inflated.yaml  the same logs, twice the measured speedup claimed
     harness_softmax_cold_vs_hot.yaml  cold-cache baseline (2) against the hot candidate (1),
                                     claiming the ratio those two logs give
torch runs single-threaded (torch.set_num_threads(1), recorded in each log's device info): on a
shared 2-core machine the second worker thread is descheduled often enough to make times bimodal.
Timings differ on every rerun; the verdicts of (1) depend on how quiet the machine is.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

OUT = HERE / "bench_cpu"
CLAIMS = HERE / "claims"
EXAMPLE = REPO / "examples" / "bench_compare_softmax.py"


def main() -> int:
    import torch

    from profaudit import bench
    from profaudit.audit import audit, load_claim
    from profaudit.audit.render import render
    from profaudit.bench.compare import _measured
    from profaudit.dataset import atomic_write_text

    torch.set_num_threads(1)
    if OUT.exists():
        shutil.rmtree(OUT)
    opts = dict(max_samples=300, max_time_s=3.0, seed=0)
    bench.run_file(EXAMPLE, OUT / "softmax", options=bench.RunOptions(**opts))
    bench.run_file(EXAMPLE, OUT / "softmax_cold", variants=["unfused"], options=bench.RunOptions(cache="cold", **opts))

    CLAIMS.mkdir(exist_ok=True)
    verdicts = {}
    honest = bench.compare_run(OUT / "softmax", "unfused", "fused", out_dir=CLAIMS, stem="harness_softmax_honest")[0]
    verdicts[honest.claim_path.name] = honest.verdict
    inflated = bench.compare_run(OUT / "softmax", "unfused", "fused", out_dir=CLAIMS, stem="harness_softmax_inflated", claimed=round(2 * honest.claimed, 2),
                                 description=f"fused softmax is {2 * honest.claimed:.2f}x faster than unfused (median per call)")[0]
    verdicts[inflated.claim_path.name] = inflated.verdict

    cold_log = next((OUT / "softmax_cold").rglob("*.jsonl"))
    hot_log = next((OUT / "softmax" / "softmax_rows" / "fused").glob("*.jsonl"))
    path = CLAIMS / "harness_softmax_cold_vs_hot.yaml"

    def claim_text(speedup: str | None) -> str:
        lines = [
            "# written by sample_reports/make_bench_reports.py: baseline timed with a flushed cache, candidate without",
            'claim: "fused softmax is faster than unfused (median per call)"',
        ]
        if speedup:
            lines.append(f"speedup: {speedup}")
        lines += [
            "statistic: median",
            "baseline:",
            "  label: unfused (cold cache)",
            f"  timings: {cold_log.relative_to(CLAIMS.parent).as_posix().join(['../', ''])}",
            "candidate:",
            "  label: fused (hot cache)",
            f"  timings: {hot_log.relative_to(CLAIMS.parent).as_posix().join(['../', ''])}",
        ]
        return "\n".join(lines) + "\n"

    atomic_write_text(path, claim_text(None))
    ratio = _measured(load_claim(path), "median")
    atomic_write_text(path, claim_text(f"{ratio:.3g}"))
    report = audit(path)
    atomic_write_text(path.with_suffix(".audit.md"), render(report, "markdown"))
    atomic_write_text(path.with_suffix(".audit.json"), render(report, "json"))
    verdicts[path.name] = report.verdict

    for name, v in verdicts.items():
        r = audit(CLAIMS / name)
        print(f"{name:36s} {v:13s} {'; '.join(r.reasons[:2])}")
    atomic_write_text(CLAIMS / "harness_verdicts.json", json.dumps(verdicts, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
