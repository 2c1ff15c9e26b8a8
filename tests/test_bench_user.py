"""profaudit bench on benchmark files written the way users write them: scalar outputs, params
baked into JAX programs, wrong output dtypes, a variant that fails mid-run, broken files."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import assert_one_line_error

FAST = dict(min_samples=10, max_samples=100, min_time_s=0.002, max_time_s=0.05, min_warmup_s=0.002, max_warmup_s=0.03, block_target_s=0.002)


def opts(**kw):
    from profaudit.bench import RunOptions

    return RunOptions(**{**FAST, **kw})


def write(tmp_path: Path, body: str, name: str = "bench_user.py") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return p


def header(out: Path, rel: str) -> dict:
    return json.loads((out / rel).read_text().splitlines()[0])["meta"]


# ------------------------------------------------------------------------------------------------
# correct kernels
# ------------------------------------------------------------------------------------------------


def test_scalar_outputs_are_compared():
    from profaudit.bench import check

    ok = check.compare([np.float32(3.0)], [np.float64(3.0)], 1e-4, 1e-4)
    assert ok.ok and ok.elements == 1
    bad = check.compare([np.asarray(np.float32(3.5))], [np.asarray(3.0)], 1e-4, 1e-4)
    assert not bad.ok and "1 of 1 elements" in bad.message and bad.max_abs_err == pytest.approx(0.5)
    nan = check.compare([np.asarray(np.nan)], [np.asarray(3.0)], 1e-4, 1e-4)
    assert not nan.ok and nan.nan_outputs == 1


def test_kernel_returning_a_scalar_runs(tmp_path):
    from profaudit import bench

    f = write(tmp_path, """
        import numpy as np
        from profaudit import bench
        B = bench.Benchmark("norm", backend="numpy",
            inputs=lambda p, gen: (gen.randn(1000, "float32"),),
            reference=lambda x: np.sqrt((x * x).sum()),
            variants={"linalg": np.linalg.norm, "manual": lambda x: np.sqrt(np.dot(x, x)),
                      "wrong": lambda x: np.abs(x).sum()})
    """)
    m = bench.run_file(f, tmp_path / "out", options=opts())
    vs = m["cases"][0]["variants"]
    assert vs["linalg"]["status"] == "ok" and vs["manual"]["status"] == "ok", vs
    assert vs["linalg"]["correctness"] == "both"
    assert vs["wrong"]["status"] == "correctness_failed" and "1 of 1 elements" in vs["wrong"]["error"]
    meta = header(tmp_path / "out", vs["manual"]["log"])
    assert meta["bench"]["correctness"]["after_timing"]["elements"] == 1


JAX_PARAMS = """
import functools
import jax
import jax.numpy as jnp
from profaudit import bench

def power(x, *, params):
    return x ** params["p"]

@functools.partial(jax.jit, static_argnums=(1,))
def _power_static(x, p):
    return x ** p

POW = bench.Benchmark("pow", backend="jax",
    inputs=lambda p, gen: (gen.rand(512, "float32", low=0.5, high=1.5),),
    reference=lambda x, params: x ** params["p"],
    variants={"kw": power, "static": lambda x, params: _power_static(x, params["p"])},
    params=bench.grid(p=[2, 3]))

# another benchmark whose variant has the same name and input shapes as POW's
DOUBLE = bench.Benchmark("double", backend="jax",
    inputs=lambda p, gen: (gen.rand(512, "float32", low=0.5, high=1.5),),
    reference=lambda x: 2 * x,
    variants={"kw": lambda x: 2 * x})
"""


def test_jax_programs_follow_params_and_functions(tmp_path):
    pytest.importorskip("jax")
    from profaudit import bench

    out = tmp_path / "out"
    m = bench.run_file(write(tmp_path, JAX_PARAMS), out, options=opts())
    assert m["failures"] == 0, [(c["id"], v, ve["error"]) for c in m["cases"] for v, ve in c["variants"].items() if ve["status"] != "ok"]
    flops = {}
    for c in m["cases"]:
        for v, ve in c["variants"].items():
            meta = header(out, ve["log"])
            flops[(c["id"], v)] = meta["xla_cost_analysis"][0]["flops"]
    # x**2 is one multiply per element, x**3 two: each case carries its own program's cost
    assert flops[("pow[p=2]", "kw")] == 512 and flops[("pow[p=3]", "kw")] == 1024
    assert flops[("pow[p=3]", "static")] == 1024


# ------------------------------------------------------------------------------------------------
# wrong kernels
# ------------------------------------------------------------------------------------------------


def test_wider_output_dtype_is_caught(tmp_path):
    from profaudit import bench

    f = write(tmp_path, """
        import numpy as np
        from profaudit import bench
        B = bench.Benchmark("mm", backend="numpy",
            inputs=lambda p, gen: (gen.randn((32, 32), "float32", scale=0.2), gen.randn((32, 32), "float32", scale=0.2)),
            reference=lambda a, b: a @ b,
            variants={"f32": lambda a, b: a @ b, "f64": lambda a, b: a.astype(np.float64) @ b.astype(np.float64)},
            baseline="f32")
    """)
    m = bench.run_file(f, tmp_path / "out", options=opts())
    vs = m["cases"][0]["variants"]
    assert vs["f32"]["status"] == "ok"
    assert vs["f64"]["status"] == "correctness_failed"
    assert "output 0 is float64 but f32's is float32" in vs["f64"]["error"]
    meta = header(tmp_path / "out", vs["f32"]["log"])
    assert meta["bench"]["correctness"]["output_dtypes"] == ["float32"]


FLAKY = """
import numpy as np
from profaudit import bench

class Flaky:
    calls = 0
    def __call__(self, x):
        Flaky.calls += 1
        if Flaky.calls == 8:
            raise RuntimeError("illegal memory access")
        return x + 1

B = bench.Benchmark("flaky", backend="numpy",
    inputs=lambda p, gen: (gen.randn(64, "float32"),),
    reference=lambda x: x + 1,
    variants={"good": lambda x: x + 1, "flaky": Flaky()})
"""


def test_a_variant_failing_mid_run_is_named_and_the_others_go_on(tmp_path, cli):
    from profaudit import bench

    out = tmp_path / "out"
    m = bench.run_file(write(tmp_path, FLAKY), out, options=opts())
    vs = m["cases"][0]["variants"]
    assert vs["flaky"]["status"] == "error"
    assert vs["flaky"]["error"].startswith("a call failed during warm-up: RuntimeError: illegal memory access")
    assert vs["good"]["status"] == "ok" and vs["good"]["correctness"] == "both" and vs["good"]["samples"] >= FAST["min_samples"]
    # no log for the failed one: compare says why instead of "no such variant"
    res = cli("bench", "compare", out, "--baseline", "good", "--candidate", "flaky")
    assert_one_line_error(res, "'flaky' has no timing log in flaky: error: a call failed during warm-up")


CACHED = """
import numpy as np
from profaudit import bench

_memo = {}
def cached(x):
    if "r" not in _memo:
        _memo["r"] = np.tanh(x)
    return _memo["r"]

B = bench.Benchmark("tanh", backend="numpy",
    inputs=lambda p, gen: (gen.randn(256, "float32"),),
    reference=np.tanh,
    variants={"base": np.tanh, "cached": cached})
"""


def test_compare_refuses_a_variant_that_failed_its_check(tmp_path, cli):
    from profaudit import bench

    out = tmp_path / "out"
    m = bench.run_file(write(tmp_path, CACHED), out, options=opts())
    assert m["cases"][0]["variants"]["cached"]["status"] == "correctness_failed"
    (o,) = bench.compare_run(out, "base", "cached")
    assert o.verdict == "FAIL" and o.claim_path is None
    assert "the candidate 'cached' correctness failed in the benchmark run" in o.reasons[0]
    assert "during timing (spot check at timed iteration" in o.reasons[0]
    assert not (out / "claims").exists() or not list((out / "claims").glob("*.yaml"))
    res = cli("bench", "compare", out, "--baseline", "base", "--candidate", "cached")
    assert res.code == 1 and "FAIL tanh: no claim written" in res.out and "Traceback" not in res.err


def test_variant_calling_sys_exit_is_reported(tmp_path):
    from profaudit import bench

    f = write(tmp_path, """
        import sys
        from profaudit import bench
        def quits(x):
            sys.exit(1)
        B = bench.Benchmark("q", backend="numpy", inputs=lambda p, gen: (gen.randn(8, "float32"),),
            reference=lambda x: x * 2, variants={"good": lambda x: x * 2, "quits": quits})
    """)
    m = bench.run_file(f, tmp_path / "out", options=opts())
    vs = m["cases"][0]["variants"]
    assert vs["good"]["status"] == "ok"
    assert vs["quits"]["status"] == "error" and "called sys.exit(1)" in vs["quits"]["error"]


def test_triton_autotune_in_the_interpreter_gets_a_hint():
    from profaudit.bench.runner import _exc_text

    try:
        raise RuntimeError("0 active drivers ([]). There should only be one.")
    except RuntimeError as exc:
        text = _exc_text(exc)
    assert "@triton.autotune cannot time its configs" in text


# ------------------------------------------------------------------------------------------------
# broken files: one line, exit 2
# ------------------------------------------------------------------------------------------------

BROKEN = {
    "sys_exit": ("import sys\nsys.exit(3)\n", "importing it called sys.exit(3)"),
    "inputs_signature": (
        "from profaudit import bench\n"
        "B = bench.Benchmark('b', backend='numpy', inputs=lambda p: (p,), reference=lambda x: x, variants={'a': lambda x: x})\n",
        "inputs must be a function (params, gen)",
    ),
    "no_reference": (
        "from profaudit import bench\n"
        "B = bench.Benchmark('noref', backend='numpy', inputs=lambda p, gen: (gen.randn(4),), variants={'a': lambda x: x * 2})\n",
        "benchmark 'noref' declares no reference=",
    ),
    "bad_dtype_param": (
        "from profaudit import bench\n"
        "B = bench.Benchmark('bd', backend='numpy', inputs=lambda p, gen: (gen.randn(4, p['dtype']),), reference=lambda x: x * 2,\n"
        "    variants={'a': lambda x: x * 2}, params={'dtype': ['fp8']})\n",
        "bd[dtype=fp8]: inputs(): unsupported dtype 'fp8'",
    ),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_broken_files_give_one_line(tmp_path, cli, kind):
    text, needle = BROKEN[kind]
    f = tmp_path / f"{kind}.py"
    f.write_text(text)
    res = cli("bench", "run", f, "-o", tmp_path / "out", "--max-time", "0.05", "--warmup-max-time", "0.02")
    assert_one_line_error(res, needle)
    assert kind in res.err  # names the file


def test_ncu_command_refuses_a_file_without_reference_unless_unchecked(tmp_path, cli):
    text, needle = BROKEN["no_reference"]
    f = tmp_path / "noref.py"
    f.write_text(text)
    assert_one_line_error(cli("ncu-command", f, "-o", tmp_path), needle)
    res = cli("ncu-command", f, "-o", tmp_path, "--no-check")
    assert res.code == 0 and "--variant a" in res.out


def test_tuple_params_give_the_same_case_id_in_run_and_compare(tmp_path, cli):
    from profaudit import bench

    f = write(tmp_path, """
        import numpy as np
        from profaudit import bench
        B = bench.Benchmark("sm", backend="numpy",
            inputs=lambda p, gen: (gen.randn(p["shape"], "float32"),),
            reference=lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True),
            variants={"a": lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True),
                      "b": lambda x: np.exp(x - x.max(-1, keepdims=True)) / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)},
            params=bench.grid(shape=[(4, 8), (2, 3, 8)]))
    """)
    out = tmp_path / "out"
    m = bench.run_file(f, out, options=opts())
    ids = [c["id"] for c in m["cases"]]
    assert ids == ["sm[shape=[4, 8]]", "sm[shape=[2, 3, 8]]"]
    (o,) = bench.compare_run(out, "a", "b", pattern=ids[1])
    assert o.case_id == ids[1]


def test_unknown_variant_lists_the_variants(tmp_path, cli):
    f = write(tmp_path, FLAKY)
    res = cli("bench", "run", f, "-o", tmp_path / "out", "--variant", "goood")
    assert_one_line_error(res, "no benchmark has a variant 'goood' (variants: good, flaky)")


def test_variant_returning_none_is_told_to_return(tmp_path):
    from profaudit import bench

    f = write(tmp_path, """
        from profaudit import bench
        def forgot(x):
            y = x * 2
        B = bench.Benchmark("f", backend="numpy", inputs=lambda p, gen: (gen.randn(8, "float32"),),
            reference=lambda x: x * 2, variants={"good": lambda x: x * 2, "forgot": forgot})
    """)
    m = bench.run_file(f, tmp_path / "out", options=opts())
    vs = m["cases"][0]["variants"]
    assert vs["good"]["status"] == "ok"
    assert vs["forgot"]["status"] == "correctness_failed" and "returned None" in vs["forgot"]["error"]


def test_torch_compiled_variant_is_recorded_as_compiled():
    torch = pytest.importorskip("torch")
    from profaudit.bench.backend_torch import TorchBackend

    b = TorchBackend("cpu")

    def f(x):
        return x + 1

    # wrapping compiles nothing until the first call: cheap
    assert b.compile_mode_of(torch.compile(f)) == "torch.compile"
    assert b.compile_mode_of(torch.compile(torch.nn.Linear(2, 2))) == "torch.compile"
    assert b.compile_mode_of(f) is None and b.compile_mode_of(torch.nn.Linear(2, 2)) is None


def test_unnamed_variants_in_a_list_take_the_function_name():
    from profaudit import bench
    from profaudit.errors import UsageError

    b = bench.Benchmark("x", backend="numpy", inputs=lambda p, g: (), reference=np.add,
                        variants=[bench.Variant(np.add), bench.Variant(np.subtract, name="sub")])
    assert list(b.variants) == ["add", "sub"]
    with pytest.raises(UsageError, match="variant name '<lambda>'.*Variant\\(fn, name=...\\)"):
        bench.Benchmark("x", backend="numpy", inputs=lambda p, g: (), reference=np.add, variants=[bench.Variant(lambda a, b: a)])
