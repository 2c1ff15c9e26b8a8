"""`profaudit bench ceilings`: measure memory-bandwidth and FLOP ceilings; write a ceilings file
that `profaudit roofline --ceilings FILE` draws against (profaudit.bench.ceilings)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer


def ceilings_cmd(
    output: Path = typer.Option(Path("ceilings.json"), "--output", "-o", help="Ceilings file to write (JSON)."),
    backend: str = typer.Option("torch", "--backend", help="torch (CUDA or CPU) or numpy (CPU)."),
    device: str = typer.Option("auto", "--device", help="auto, cuda, cuda:1, cpu (numpy: cpu)."),
    array_bytes: Optional[int] = typer.Option(None, "--array-bytes", min=4096, help="Bytes per bandwidth array (default: 8x the L2 or CPU cache, at least 64 MiB)."),
    matmul_n: Optional[int] = typer.Option(None, "--matmul-n", min=16, help="GEMM size n (n x n x n; default 8192 on CUDA, 2048 on a CPU)."),
    only: Optional[List[str]] = typer.Option(None, "--only", help="Only these microbenchmarks (copy, triad, reduce, fma_fp32, matmul_fp16_tensor, ...; repeatable)."),
    min_samples: int = typer.Option(30, "--min-samples", help="Measured samples per microbenchmark at least."),
    max_time: float = typer.Option(2.0, "--max-time", help="Measurement budget per microbenchmark (s)."),
    # the kernels are profaudit's own, so the sabotage spot checks (new values drawn on the host
    # for arrays of hundreds of MiB) matter less than for user code: 2 by default, not bench run's 8
    spot_checks: int = typer.Option(2, "--spot-checks", min=1, help="Timed calls per microbenchmark verified on new input values (bench run's spot checks)."),
    telemetry: bool = typer.Option(True, "--telemetry/--no-telemetry", help="Read GPU clocks through NVML (recorded per measurement)."),
) -> None:
    """Measure this device's ceilings (best of N) through the bench harness and write a ceilings file for `roofline --ceilings`.

    Exit 0 when every microbenchmark ran and passed its correctness checks, 1 when one failed (the file is written with the others), 2 for unusable options."""
    from profaudit.bench import RunOptions
    from profaudit.bench.ceilings import run_ceilings
    from profaudit.cli.common import stderr_console
    from profaudit.errors import UsageError
    from profaudit.fmt import fmt_ns, fmt_si

    if backend not in ("torch", "numpy"):
        raise UsageError(f"--backend {backend!r}: choose torch or numpy")
    if backend == "numpy" and device not in ("auto", "cpu"):
        raise UsageError(f"--backend numpy runs on the cpu, not {device!r}")
    console = stderr_console()
    opts = RunOptions(min_samples=min_samples, max_time_s=max_time, telemetry=telemetry, spot_checks=spot_checks)
    doc = run_ceilings(output, backend=backend, device=device, opts=opts, array_bytes=array_bytes, matmul_n=matmul_n, only=only,
                       progress=lambda msg: console.print(msg, markup=False, highlight=False))
    print(f"{doc['device_name']} ({doc['framework']}): {doc['statistic']}")
    for rec in doc["measurements"]:
        unit, suffix = ("bytes_per_s", "B/s") if rec["kind"] == "bandwidth" else ("flops_per_s", "FLOP/s")
        if rec["status"] != "ok":
            print(f"  {rec['name']:<20} {rec['roof']:<12} FAILED: {rec.get('error')}")
            continue
        print(f"  {rec['name']:<20} {rec['roof']:<12} best {fmt_si(rec[f'best_{unit}'], suffix):>12} ({fmt_ns(rec['best_ns'])})"
              f"  median {fmt_si(rec[f'median_{unit}'], suffix):>12}  {rec['samples']} samples")
    for s in doc["not_measured"]:
        print(f"  {s['name']:<20} {s['roof']:<12} not measured: {s['why']}")
    console.print(f"wrote {output} (use: profaudit roofline PROFILE --ceilings {output})", markup=False, highlight=False)
    if any(r["status"] != "ok" for r in doc["measurements"]):
        raise typer.Exit(1)
