"""Capture the small JAX profile in sample_reports/jax_cpu/.

Run from the repository root:  .venv/bin/python sample_reports/make_jax_profile.py
It jit-compiles a two-layer MLP forward pass (x 256x512 @ w1 512x512 -> gelu -> @ w2 512x256 -> sum,
float32), runs it once untraced (compilation), then profiles five calls with jax.profiler, each in
a StepTraceAnnotation, on the CPU backend with one host device. The run folder is renamed to a fixed
name so reruns replace it; the cost analysis of the compiled module is written beside it in the
profaudit cost-file format (`profaudit xla-cost --cost`).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "jax_cpu"
RUN = "run_0"
STEPS = 5


def mlp(x, w1, w2):
    return (jax.nn.gelu(x @ w1) @ w2).sum()


def main() -> None:
    sys.path.insert(0, str(ROOT.parent))
    from profaudit.xla import save_cost_analysis

    key = jax.random.PRNGKey(0)
    k1, k2, k3 = jax.random.split(key, 3)
    x = jax.random.normal(k1, (256, 512), jnp.float32)
    w1 = jax.random.normal(k2, (512, 512), jnp.float32) * 0.05
    w2 = jax.random.normal(k3, (512, 256), jnp.float32) * 0.05
    f = jax.jit(mlp)
    f(x, w1, w2).block_until_ready()  # compile outside the trace
    tmp = Path(tempfile.mkdtemp())
    jax.profiler.start_trace(str(tmp))
    try:
        for i in range(STEPS):
            with jax.profiler.StepTraceAnnotation("mlp_step", step_num=i):
                f(x, w1, w2).block_until_ready()
    finally:
        jax.profiler.stop_trace()
    runs = sorted((tmp / "plugins" / "profile").iterdir())
    if OUT.exists():
        shutil.rmtree(OUT)
    target = OUT / "plugins" / "profile" / RUN
    target.parent.mkdir(parents=True)
    shutil.move(str(runs[-1]), target)
    shutil.rmtree(tmp)
    compiled = f.lower(x, w1, w2).compile()
    save_cost_analysis(compiled, OUT / "cost_analysis.json")
    info = {
        "jax": jax.__version__,
        "jaxlib": jax.lib.__version__ if hasattr(jax.lib, "__version__") else None,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
        "program": "sum(gelu(x @ w1) @ w2), x 256x512, w1 512x512, w2 512x256, float32",
        "traced_steps": STEPS,
        "files": sorted(str(p.relative_to(OUT)) for p in OUT.rglob("*") if p.is_file()),
    }
    (OUT / "capture.json").write_text(json.dumps(info, indent=1) + "\n")
    print(json.dumps(info, indent=1))


if __name__ == "__main__":
    main()
