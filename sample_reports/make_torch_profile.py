"""Capture the small PyTorch profiler (Kineto) trace in sample_reports/torch_cpu/.

Run from the repository root:  .venv/bin/python sample_reports/make_torch_profile.py
It profiles a few CPU iterations of a matmul + softmax + layer norm block with
torch.profiler (record_shapes, with_flops) and writes a gzipped Chrome trace.
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

OUT = Path(__file__).resolve().parent / "torch_cpu"


def block(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    y = x @ w
    y = torch.softmax(y, dim=-1)
    return torch.nn.functional.layer_norm(y, y.shape[-1:])


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x = torch.randn(256, 512)
    w = torch.randn(512, 512)
    OUT.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp())
    sched = schedule(wait=1, warmup=2, active=5, repeat=1)
    with profile(activities=[ProfilerActivity.CPU], schedule=sched, record_shapes=True, with_flops=True,
                 on_trace_ready=lambda p: p.export_chrome_trace(str(tmp / "trace.json"))) as prof:
        for step in range(8):
            with record_function(f"step_{step}"):
                block(x, w)
            prof.step()
    data = json.loads((tmp / "trace.json").read_text())
    # Host paths and user names are of no use to a reader of the sample; the trace stays as made.
    target = OUT / "matmul_softmax_layernorm.pt.trace.json.gz"
    with gzip.open(target, "wt", compresslevel=9) as f:
        json.dump(data, f)
    shutil.rmtree(tmp)
    info = {
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "threads": 1,
        "shapes": {"x": [256, 512], "w": [512, 512]},
        "schedule": {"wait": 1, "warmup": 2, "active": 5},
    }
    (OUT / "capture.json").write_text(json.dumps(info, indent=1) + "\n")
    print(f"wrote {target} ({os.path.getsize(target)} bytes)")


if __name__ == "__main__":
    main()
