"""profaudit bench on JAX (CPU): AOT compile outside timing, block_until_ready, cost analysis."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

jax = pytest.importorskip("jax")

REPO = Path(__file__).resolve().parents[1]


def _opts(**kw):
    from profaudit.bench import RunOptions

    return RunOptions(**{**dict(min_samples=15, max_time_s=0.3, min_time_s=0.01, max_warmup_s=0.1, min_warmup_s=0.005, block_target_s=0.005), **kw})


def test_jax_matmul_example(tmp_path):
    from profaudit import bench

    out = tmp_path / "jx"
    m = bench.run_file(REPO / "examples" / "bench_jax_matmul.py", out, options=_opts())
    assert m["failures"] == 0, [(c["id"], c["error"], {v: ve["error"] for v, ve in c["variants"].items()}) for c in m["cases"]]
    c = m["cases"][0]
    for v in ("naive", "matmul"):
        meta = json.loads((out / c["variants"][v]["log"]).read_text().splitlines()[0])["meta"]
        assert meta["framework"] == f"jax {jax.__version__}" and meta["compile_mode"] == "jit"
        assert meta["time_source"] == "host" and meta["synchronized"] is True
        assert meta["correctness_checked"] == "both"
        (xla,) = meta["xla_cost_analysis"]  # the metadata shape profaudit.xla gives timing logs
        assert xla["per"] == "call" and xla["module"].startswith("jit_") and xla["bytes_accessed"] > 0
        if v == "matmul":
            # XLA counts a 256^3 dot as 2*m*k*n FLOPs, the number the benchmark declares
            assert xla["flops"] == meta["flops"] == 2 * 256**3


TRACED = """
import jax.numpy as jnp
import numpy as np
from profaudit import bench

TRACES = []

def f(x):
    TRACES.append(1)          # runs only while jax traces the function
    return jnp.tanh(x) * 2.0

B = bench.Benchmark("tanh2", backend="jax",
    inputs=lambda p, gen: (gen.randn((256, 256), "float32"),),
    reference=lambda x: np.tanh(x) * 2.0,
    variants={"f": f}, params=[{"n": 256}])
"""


def test_traced_and_compiled_once_before_timing(tmp_path):
    from profaudit import bench

    f = tmp_path / "bench_traced.py"
    f.write_text(textwrap.dedent(TRACED))
    m = bench.run_file(f, tmp_path / "out", options=_opts())
    ve = m["cases"][0]["variants"]["f"]
    assert ve["status"] == "ok", ve
    import sys

    mod = next(v for k, v in sys.modules.items() if k.startswith("profaudit_bench_") and getattr(v, "__file__", "") == str(f))
    # one trace for all calls (two checks, warm-up, measurement, re-check): compiled ahead of time
    assert len(mod.TRACES) == 1
    meta = json.loads((tmp_path / "out" / ve["log"]).read_text().splitlines()[0])["meta"]
    assert meta["bytes"] == 2 * 256 * 256 * 4  # derived: input + output bytes
    assert meta["bench"]["sources"]["bytes"].startswith("derived")
    import profaudit

    (prof,) = list(profaudit.load(str(tmp_path / "out" / ve["log"])))
    assert prof.metadata["xla_cost_analysis"][0]["flops"] > 0


def test_output_buffers_are_refused_for_jax(tmp_path):
    from profaudit import bench

    f = tmp_path / "bench_out.py"
    f.write_text(textwrap.dedent(TRACED).replace('variants={"f": f}', 'variants={"f": f}, output=lambda p, ins: None'))
    m = bench.run_file(f, tmp_path / "out", options=_opts())
    assert "immutable" in m["cases"][0]["error"]


EAGER = """
import jax
import jax.numpy as jnp
import numpy as np
from profaudit import bench

TRACES = []

def f(x):
    TRACES.append(1)          # jitted: runs once (tracing); eager: on every call
    return jnp.tanh(x) * 2.0

B = bench.Benchmark("tanh2", backend="jax",
    inputs=lambda p, gen: (gen.randn((64, 64), "float32"),),
    reference=lambda x: np.tanh(x) * 2.0,
    variants={"eager": bench.Variant(f, compile_mode="eager"), "jit": bench.Variant(f, compile_mode="jit"),
              "jitted_said_eager": bench.Variant(jax.jit(f), compile_mode="eager")},
    params=[{"n": 64}])
"""


def test_jax_eager_is_really_eager(tmp_path):
    import sys

    from profaudit import bench

    f = tmp_path / "bench_eager.py"
    f.write_text(textwrap.dedent(EAGER))
    m = bench.run_file(f, tmp_path / "out", options=_opts())
    v = m["cases"][0]["variants"]
    assert v["eager"]["status"] == "ok" and v["jit"]["status"] == "ok", (v["eager"], v["jit"])
    assert v["jitted_said_eager"]["status"] == "error" and "jax.jit-wrapped" in v["jitted_said_eager"]["error"]
    mod = next(x for k, x in sys.modules.items() if k.startswith("profaudit_bench_") and getattr(x, "__file__", "") == str(f))
    header = lambda ve: json.loads((tmp_path / "out" / ve["log"]).read_text().splitlines()[0])["meta"]  # noqa: E731
    calls = len([r for r in (tmp_path / "out" / v["eager"]["log"]).read_text().splitlines()[1:]])
    # every eager call ran the Python body (one per timed/warm-up row, plus the checks); jit traced once
    assert len(mod.TRACES) >= calls + 1
    assert header(v["eager"])["compile_mode"] == "eager" and "xla_cost_analysis" not in header(v["eager"])
    assert header(v["jit"])["compile_mode"] == "jit" and header(v["jit"])["xla_cost_analysis"][0]["flops"] > 0
