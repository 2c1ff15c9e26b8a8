"""Make the example claims in sample_reports/claims/ from real timing logs measured here.

    .venv/bin/python sample_reports/make_claims.py

1. Runs claims/bench_softmax.py with profaudit's own bench harness on the CPU (torch), three
   process-level repetitions, into claims/logs/ (profaudit-timing JSON Lines + manifest.json).
2. Writes four claim files over those logs, each a kind of claim the audit must judge:
     softmax_torch_vs_naive.yaml        the measured median speedup, honestly stated
     softmax_overstated.yaml            the same logs, a median speedup 1.5x the measured one
     softmax_bf16_vs_fp32.yaml          a bf16 candidate against an fp32 baseline
     softmax_same_kernel.yaml           torch.softmax against F.softmax (the same kernel), "1.01x"
3. Audits each and records the verdicts it got in claims/verdicts.json (the tests re-audit the
   claims and expect the same verdicts: the logs are fixed and the bootstrap is seeded).
Timings differ on every rerun; the claims are rewritten from the new measurements.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

CLAIMS = HERE / "claims"
LOGS = CLAIMS / "logs"


def log(variant: str, dtype: str) -> list[str]:
    runs = sorted((LOGS / "softmax" / variant).glob(f"cols-1024_dtype-{dtype}_rows-1024*.jsonl"))
    if not runs:
        raise SystemExit(f"no timing log for {variant} {dtype} under {LOGS}")
    return [str(p.relative_to(CLAIMS)) for p in runs]


def measured(baseline: list[str], candidate: list[str], statistic: str) -> float:
    from profaudit.audit import audit, load_claim

    probe = CLAIMS / "_probe.yaml"
    probe.write_text(yaml_claim(None, None, statistic, baseline, candidate, "probe"))
    try:
        report = audit(load_claim(probe), select="PA4")
    finally:
        probe.unlink()
    return report.comparison.intervals[statistic].estimate


def yaml_claim(text: str | None, speedup: str | None, statistic: str, baseline: list[str], candidate: list[str], label_c: str, label_b: str = "naive softmax (4 passes)") -> str:
    lines = []
    if text:
        lines.append(f'claim: "{text}"')
    if speedup:
        lines.append(f"speedup: {speedup}")
    lines.append(f"statistic: {statistic}")
    lines.append("baseline:")
    lines.append(f"  label: {label_b}")
    lines.append(f"  timings: [{', '.join(baseline)}]")
    lines.append("candidate:")
    lines.append(f"  label: {label_c}")
    lines.append(f"  timings: [{', '.join(candidate)}]")
    return "# written by sample_reports/make_claims.py; every fact besides the claim comes from the timing logs' headers\n" + "\n".join(lines) + "\n"


def main() -> int:
    from profaudit import bench
    from profaudit.audit import audit

    if LOGS.exists():
        shutil.rmtree(LOGS)
    opts = bench.RunOptions(min_samples=60, max_time_s=1.0, seed=0)
    bench.run_file(CLAIMS / "bench_softmax.py", LOGS, options=opts, processes=3)

    naive32, torch32, func32, torch16 = log("naive", "float32"), log("torch", "float32"), log("functional", "float32"), log("torch", "bfloat16")
    honest = measured(naive32, torch32, "median")
    same = measured(torch32, func32, "median")
    claims = {
        "softmax_torch_vs_naive.yaml": yaml_claim(f"torch.softmax is {honest:.2f}x faster than a naive softmax (1024x1024 fp32, CPU)", f"{honest:.2f}", "median", naive32, torch32, "torch.softmax"),
        "softmax_overstated.yaml": yaml_claim(f"torch.softmax is {1.5 * honest:.2f}x faster than a naive softmax", f"{1.5 * honest:.2f}", "median", naive32, torch32, "torch.softmax"),
        "softmax_bf16_vs_fp32.yaml": yaml_claim("our bf16 softmax beats the fp32 baseline", None, "median", naive32, torch16, "torch.softmax bf16"),
        "softmax_same_kernel.yaml": yaml_claim("F.softmax is 1% faster than torch.softmax", "1.01", "median", torch32, func32, "F.softmax", "torch.softmax"),
    }
    verdicts = {}
    # Only this script's own files are written: other scripts keep claims in the same folder.
    for name, text in claims.items():
        path = CLAIMS / name
        path.write_text(text)
        report = audit(path)
        verdicts[name] = report.verdict
        iv = report.supported.interval
        print(f"{name:32s} {report.verdict:13s} supported {iv.describe() if iv else 'n/a'}")
    print(f"measured: median {honest:.3f}x, same kernel {same:.3f}x")
    (CLAIMS / "verdicts.json").write_text(json.dumps(verdicts, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
