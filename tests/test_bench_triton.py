"""profaudit bench with Triton kernels in the Triton interpreter (TRITON_INTERPRET=1, CPU)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import os

import pytest

from profaudit.bench.env import has_nvidia_gpu

if not has_nvidia_gpu():
    # Triton decides at import whether its own library runs in the interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")

pytest.importorskip("torch")
pytest.importorskip("triton")

pytestmark = pytest.mark.skipif(has_nvidia_gpu(), reason="the interpreter path is the CPU path; on a GPU benchmarks/gpu_capture.sh covers Triton")

REPO = Path(__file__).resolve().parents[1]


def _opts(**kw):
    from profaudit.bench import RunOptions

    return RunOptions(**{**dict(min_samples=10, max_time_s=0.3, min_time_s=0.01, max_warmup_s=0.1, min_warmup_s=0.005, block_target_s=0.005), **kw})


def test_vector_add_and_softmax_examples(tmp_path):
    from profaudit import bench

    out = tmp_path / "tr"
    m = bench.run_file(REPO / "examples" / "bench_triton.py", out, options=_opts())
    assert m["failures"] == 0, [(c["id"], c["error"], {v: ve["error"] for v, ve in c["variants"].items()}) for c in m["cases"]]
    assert [c["id"] for c in m["cases"]] == ["vector_add[dtype=float32,n=16384]", "softmax[cols=256,dtype=float32,rows=32]"]
    for c in m["cases"]:
        for v, ve in c["variants"].items():
            assert ve["status"] == "ok" and ve["correctness"] == "both"
            meta = json.loads((out / ve["log"]).read_text().splitlines()[0])["meta"]
            assert meta["device_name"].endswith("[triton interpreter]")
            assert meta["framework"].endswith("(interpreter)") and meta["bench"]["host"]["triton_interpret"] is True
            assert meta["time_source"] == "host" and meta["bench"]["correctness"]["poisoned"] is True


BUGGY = """
import triton
import triton.language as tl

@triton.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

def add_floor_grid(x, y, out):
    # launches n // BLOCK programs: the tail of a size that is not a multiple of BLOCK stays unwritten
    _add[(x.numel() // 256,)](x, y, out, x.numel(), BLOCK=256)
    return out
"""

BENCH = """
import torch
from profaudit import bench
from buggy_triton_kernels import add_floor_grid

B = bench.Benchmark("add", backend="triton",
    inputs=lambda p, gen: (gen.randn(p["n"]), gen.randn(p["n"])),
    output=lambda p, ins: torch.empty_like(ins[0]),
    reference=lambda x, y: x + y,
    variants={"floor_grid": add_floor_grid}, params=[{"n": 1000}])
"""


def test_unwritten_tail_is_caught_by_poisoning(tmp_path):
    from profaudit import bench

    (tmp_path / "buggy_triton_kernels.py").write_text(textwrap.dedent(BUGGY))
    f = tmp_path / "bench_buggy.py"
    f.write_text(textwrap.dedent(BENCH))
    m = bench.run_file(f, tmp_path / "out", options=_opts())
    v = m["cases"][0]["variants"]["floor_grid"]
    assert v["status"] == "correctness_failed"
    # 1000 = 3 x 256 + 232: the last 232 elements keep the NaN poison
    assert "232 of 1000 elements" in v["error"] and "NaN" in v["error"]
