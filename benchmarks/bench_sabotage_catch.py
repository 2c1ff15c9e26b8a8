"""How often `profaudit bench` catches sabotaged candidates, and what the checks cost.

Each saboteur of issue 17 runs beside an honest variant on the numpy backend (real host timing,
real calls), with several harness seeds; the table gives how many runs caught it (status
correctness_failed) and with which check, and how many runs passed the honest variant. Then the
torch saboteurs of benchmarks/cpu_torch_sabotage.py (a cache keyed on the buffers' write counter,
work handed to a thread, bfloat16 inside a float32 case, half the rows, a float16 output) on CPU
torch, all in one case per seed. Last, the wall time of one case with the default 8 spot checks
against 1 (what the checks cost).

    .venv/bin/python benchmarks/bench_sabotage_catch.py [seeds]
"""

from __future__ import annotations

import sys
import tempfile
import textwrap
import time
from pathlib import Path

HEADER = """
import numpy as np
from profaudit import bench

def inputs(p, gen):
    return (gen.randn((p["n"], p["n"]), "float32", scale=p["n"] ** -0.5), gen.randn((p["n"], p["n"]), "float32", scale=p["n"] ** -0.5))

def honest(x, y, out):
    np.matmul(x, y, out=out)
"""

SABOTEURS = {
    # a result cache keyed on the input values: right on every check, a lookup when timed
    "memo_values": """
CACHE = {}
def cand(x, y, out):
    key = x[0, :8].tobytes() + y[0, :8].tobytes()
    if key not in CACHE:
        CACHE[key] = x @ y
    np.copyto(out, CACHE[key])
""",
    # writes into its input after the checks before timing
    "mutates_later": """
CALLS = [0]
def cand(x, y, out):
    CALLS[0] += 1
    if CALLS[0] > 5:
        x *= 0.5
    np.matmul(x, y, out=out)
""",
    # works only when the output buffer holds NaN (only when checked with NaN poison)
    "nan_only": """
def cand(x, y, out):
    if np.isnan(out).any():
        np.matmul(x, y, out=out)
""",
    # wrong on 30 % of calls
    "wrong_30pct": """
RNG = np.random.default_rng(SEED)
def cand(x, y, out):
    np.matmul(x, y, out=out)
    if RNG.random() < 0.3:
        out *= 1.5
""",
}

BENCH = """
B = bench.Benchmark("mm", backend="numpy", inputs=inputs, reference=lambda x, y: x @ y,
    output=lambda p, ins: np.empty_like(ins[0]), variants={"honest": honest, "cand": cand},
    params=[{"n": 160}], cache="hot")
"""


def main(seeds: int) -> int:
    from profaudit import bench

    opts = dict(min_samples=30, max_time_s=0.3, max_warmup_s=0.2, min_warmup_s=0.01, block_target_s=0.005)
    print(f"{'saboteur':<14} {'caught':>8} {'honest ok':>10}  how (first run that caught it)")
    with tempfile.TemporaryDirectory() as d:
        for name, code in SABOTEURS.items():
            caught = honest_ok = 0
            how = ""
            for seed in range(seeds):
                f = Path(d) / f"{name}_{seed}.py"
                f.write_text(textwrap.dedent(HEADER) + code.replace("SEED", str(seed)) + BENCH)
                m = bench.run_file(f, Path(d) / f"{name}_{seed}", options=bench.RunOptions(seed=seed, **opts))
                v = m["cases"][0]["variants"]
                if v["cand"]["status"] == "correctness_failed":
                    caught += 1
                    how = how or (v["cand"]["error"] or "")[:70]
                honest_ok += v["honest"]["status"] == "ok"
            print(f"{name:<14} {caught:>5}/{seeds} {honest_ok:>7}/{seeds}  {how}")
        torch_table(seeds, opts, Path(d))
        # what the checks cost: one honest case, 8 spot checks against 1
        f = Path(d) / "clean.py"
        f.write_text(textwrap.dedent(HEADER) + "cand = honest\n" + BENCH)
        for k in (1, 8):
            t0 = time.perf_counter()
            bench.run_file(f, Path(d) / f"clean{k}", options=bench.RunOptions(spot_checks=k, **opts))
            print(f"one case, 2 variants, spot_checks={k}: {time.perf_counter() - t0:.2f} s wall")
    return 0


def torch_table(seeds: int, opts: dict, d: Path) -> None:
    """Catch counts of the CPU torch saboteurs: one case holding all of them per harness seed."""
    import importlib.util

    from profaudit import bench

    here = Path(__file__).resolve().parent
    if importlib.util.find_spec("torch") is None:
        print("torch saboteurs: skipped (torch is not installed)")
        return
    sys.path.insert(0, str(here))
    from cpu_torch_sabotage import BENCHMARKS, EXPECTED

    if not BENCHMARKS:
        print("torch saboteurs: skipped (a GPU is visible: benchmarks/gpu_sabotage.py covers it)")
        return
    caught = {n: 0 for n in EXPECTED}
    how = {n: "" for n in EXPECTED}
    t0 = time.perf_counter()
    for seed in range(seeds):
        m = bench.run_file(here / "cpu_torch_sabotage.py", d / f"torch_{seed}", options=bench.RunOptions(seed=seed, **opts))
        for n, ve in m["cases"][0]["variants"].items():
            caught[n] += ve["status"] == EXPECTED[n]
            if ve["status"] == "correctness_failed" and not how[n]:
                how[n] = (ve["error"] or "")[:70]
    print(f"\ntorch (CPU) saboteurs, one case of {len(EXPECTED)} variants per seed ({time.perf_counter() - t0:.1f} s wall for {seeds})")
    print(f"{'variant':<14} {'as expected':>11}  how (first run that caught it)")
    for n in EXPECTED:
        print(f"{n:<14} {caught[n]:>8}/{seeds}  {how[n] if n != 'honest' else 'status ok'}")


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
