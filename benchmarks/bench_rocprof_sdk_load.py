"""rocprofiler-sdk JSON: the nesting check riding on the parser's own passes against the check as
a pass of its own before parsing (what the reader did until this change), measured in the same run.

The file is generated in a temporary folder (`--records` HIP API calls and as many kernel
dispatches, the shapes tests/test_chrome_trace.py builds), plain or gzip-compressed (`--gz`).

Baseline ("separate pass"): `jsonshape.max_depth` over the whole (decompressed) text in 4 MiB
chunks, then `profaudit.load` — the read the loader made before parsing until the check moved into
the stream. Candidate: `profaudit.load` alone (it scans each byte once, as ijson's passes read it).
Both load the same file with the same result; the ratio is candidate / baseline (< 1: faster).

    .venv/bin/python benchmarks/bench_rocprof_sdk_load.py [--records 50000] [--repeat 3] [--gz]
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path


def document(n: int) -> dict:
    cpu, gpu = {"handle": 1}, {"handle": 2}
    ops = [{"kind": "NONE", "operations": []}] * 5 + [{"kind": "HIP_RUNTIME_API", "operations": ["hipApiName", "hipLaunchKernel"]}]
    ops += [{"kind": "KERNEL_DISPATCH", "operations": ["NONE", "ENQUEUE", "COMPLETE"]}]
    dispatch = [{"kind": 6, "operation": 2, "thread_id": 9, "correlation_id": {"internal": i, "external": 0},
                 "start_timestamp": 1_000 + 100 * i, "end_timestamp": 1_050 + 100 * i,
                 "dispatch_info": {"agent_id": gpu, "queue_id": {"handle": 3}, "kernel_id": 3, "group_segment_size": 1280,
                                   "workgroup_size": {"x": 256, "y": 1, "z": 1}, "grid_size": {"x": 4096, "y": 1, "z": 1}}} for i in range(n)]
    api = [{"kind": 5, "operation": 1, "thread_id": 9, "correlation_id": {"internal": i}, "start_timestamp": 990 + 100 * i,
            "end_timestamp": 1_010 + 100 * i} for i in range(n)]
    return {"rocprofiler-sdk-tool": [{
        "metadata": {"pid": 77, "node": {"hostname": "h"}, "command": ["./app"]},
        "agents": [{"id": cpu, "type": 1, "name": "cpu"}, {"id": gpu, "type": 2, "gpu_index": 0, "name": "gfx942", "product_name": "AMD Instinct MI300X"}],
        "strings": {"buffer_records": ops},
        "kernel_symbols": [{"kernel_id": 3, "kernel_name": "_Z3addPfS_.kd", "arch_vgpr_count": 12, "accum_vgpr_count": 4, "group_segment_size": 256}],
        "buffer_records": {"hip_api": api, "kernel_dispatch": dispatch},
    }]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--gz", action="store_true", help="gzip-compressed file (the check's own pass also decompresses)")
    args = ap.parse_args()

    import profaudit
    from profaudit.parsers import jsonshape
    from profaudit.parsers.base import open_maybe_gzip

    with tempfile.TemporaryDirectory() as tmp:
        text = json.dumps(document(args.records)).encode()
        path = Path(tmp) / ("results.json.gz" if args.gz else "results.json")
        path.write_bytes(gzip.compress(text, 6) if args.gz else text)

        def depth_pass():
            with open_maybe_gzip(path) as f:
                jsonshape.max_depth(iter(lambda: f.read(1 << 22), b""), 64)

        def separate_pass():
            depth_pass()
            return profaudit.load(path)

        def in_stream():
            return profaudit.load(path)

        want = in_stream().kernels.height
        assert want == args.records and separate_pass().kernels.height == want
        base, cand, alone = [], [], []
        for _ in range(args.repeat):  # alternated, so that drift in the machine's load hits both
            for fn, out in ((separate_pass, base), (in_stream, cand), (depth_pass, alone)):
                t = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t)
    mb = len(text) / 1e6
    b, c = statistics.median(base), statistics.median(cand)
    print(f"rocprofiler-sdk JSON, {args.records:,} dispatches + {args.records:,} API calls, {mb:.1f} MB of JSON{' (gzip)' if args.gz else ''}, median of {args.repeat}")
    print(f"  baseline  separate depth pass + load: {b:.3f} s  (runs: {', '.join(f'{x:.3f}' for x in base)})")
    print(f"  candidate depth check in the passes:  {c:.3f} s  (runs: {', '.join(f'{x:.3f}' for x in cand)})")
    print(f"  ratio candidate / baseline: {c / b:.3f}")
    print(f"  the separate pass alone: {statistics.median(alone) * 1e3:.1f} ms = {statistics.median(alone) / b:.1%} of the baseline (what the change removes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
