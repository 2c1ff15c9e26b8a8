"""Where the CPU time of loading a Kineto trace goes, stage by stage (issue 12's 1 GB case).

The Chrome-trace parser decodes chunks on worker threads and polars runs its own threads, so a
profiler of one thread sees little. Here the load runs serially instead: chunks are decoded on the
calling thread (the worker pool is replaced by one that runs each task at once) and every stage is
timed with `time.process_time` (CPU time of the whole process). Run it under
`POLARS_MAX_THREADS=1` so that polars' own pool adds no idle spinning; the total is then close to
the CPU time of a threaded load, which `bench_trace_load.py` measures.

Stages (nested ones are part of their parent; shares are of the load's total CPU time):
- walker: cutting the file into chunks of whole events (`jsonstream.TraceWalker`, gzip included)
- decode_chunk: everything done per chunk, of which
  - _read_json: the JSON decode, of which pl.read_json is polars' reader alone (the rest: cutting
    chunks into pieces and stacking the pieces' frames)
  - _shape: typing, classification (_chunk_classes) and splitting into per-table frames
- assemble: the tables from the chunks' frames, of which _ranges (nesting: _nest_order and
  nest_sorted), _kernel_rows, _kernels, _transfers

    POLARS_MAX_THREADS=1 .venv/bin/python benchmarks/trace_load_stages.py --size-mb 1000
    POLARS_MAX_THREADS=1 .venv/bin/python benchmarks/trace_load_stages.py --trace /tmp/t1g.json
    POLARS_MAX_THREADS=1 .venv/bin/python benchmarks/trace_load_stages.py --trace /tmp/t1g.json --block-mb 2

`--block-mb` sets the walker's block size (`jsonstream.BLOCK_BYTES`; a chunk is about two blocks
of events) for the chunk-size effect: each chunk costs a fixed amount of query planning and
Python work in shaping, and a stacked column has one piece per chunk in assembly.
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import resource
import sys
import tempfile
import time
from concurrent.futures import Future
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_trace_load import DEFAULT_SOURCE, _json_mb, generate  # noqa: E402

STAGES = ["walker", "decode_chunk", "_read_json", "pl.read_json", "_shape", "_chunk_classes", "assemble", "_ranges",
          "_nest_order", "nest_sorted", "_kernel_rows", "_kernels", "_transfers"]
DEPTH = {"_read_json": 1, "pl.read_json": 2, "_shape": 1, "_chunk_classes": 2, "_ranges": 1, "_nest_order": 2,
         "nest_sorted": 2, "_kernel_rows": 1, "_kernels": 1, "_transfers": 1}


class _SerialPool:
    """A stand-in for the worker pool that runs each task on the calling thread."""

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def submit(self, fn, *args, **kwargs) -> Future:
        fut: Future = Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed back through the future, as the pool does
            fut.set_exception(exc)
        return fut


def instrument(spent: collections.Counter) -> None:
    """Time the parser's stages into `spent` (CPU seconds per stage)."""
    import polars as pl

    from profaudit.parsers import chrome_trace as ct
    from profaudit.parsers import jsonstream

    def timed(fn, label):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            spent["calls:" + label] += 1
            t = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label] += time.process_time() - t
        return wrapper

    for name in ("decode_chunk", "_read_json", "_shape", "_chunk_classes", "assemble", "_ranges", "_nest_order",
                 "nest_sorted", "_kernel_rows", "_kernels", "_transfers"):
        setattr(ct, name, timed(getattr(ct, name), name))
    # polars' reader through a stand-in module, so that nothing else using polars is affected
    shim = type(sys)("polars_timed")
    shim.__dict__.update(pl.__dict__)
    shim.read_json = timed(pl.read_json, "pl.read_json")
    ct.pl = shim
    walk = jsonstream.TraceWalker.__iter__

    def walk_timed(self):
        it = walk(self)
        while True:
            t = time.process_time()
            try:
                item = next(it)
            except StopIteration:
                return
            finally:
                spent["walker"] += time.process_time() - t
            yield item

    jsonstream.TraceWalker.__iter__ = walk_timed
    ct.ThreadPoolExecutor = _SerialPool


def measure(path: Path) -> tuple[float, float, collections.Counter, str]:
    """(CPU seconds, wall seconds, CPU seconds per stage, table sizes) of one serial load."""
    import profaudit
    import profaudit.parsers  # noqa: F401  (parser modules imported before the clock starts)

    spent: collections.Counter = collections.Counter()
    instrument(spent)
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    ps = profaudit.load(path, parallel=False)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    return cpu, wall, spent, f"kernels={ps.kernels.height} ranges={ps.ranges.height} transfers={ps.transfers.height}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=300.0, help="size of the generated trace (default 300)")
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="corpus Kineto trace to replicate")
    ap.add_argument("--epoch-ns", action="store_true", help="absolute ns-digit timestamps (see bench_trace_load.py)")
    ap.add_argument("--trace", type=Path, help="load this trace instead of generating one")
    ap.add_argument("--block-mb", type=float, help="the walker's block size in MiB (default: the parser's own)")
    args = ap.parse_args(argv)
    from profaudit.parsers import jsonstream

    if args.block_mb is not None:
        if not args.block_mb > 0:
            raise SystemExit("--block-mb must be positive")
        jsonstream.BLOCK_BYTES = int(args.block_mb * (1 << 20))
    if os.environ.get("POLARS_MAX_THREADS") != "1":
        print("note: POLARS_MAX_THREADS is not 1: polars' idle threads add CPU time no stage accounts for")
    with tempfile.TemporaryDirectory(prefix="trace_stages_") as tmp:
        if args.trace is not None:
            if not args.trace.is_file():
                raise SystemExit(f"no trace at {args.trace}")
            path = args.trace
        else:
            if not args.source.is_file():
                raise SystemExit(f"no source trace at {args.source}; pass --source")
            path = Path(tmp) / "trace.json"
            generate(args.source, path, args.size_mb, False, args.epoch_ns)
        mb = _json_mb(path)
        cpu, wall, spent, summary = measure(path)
    gb = mb / 1000
    print(f"trace: {path.name}, {mb:.0f} MB of JSON ({summary}); {spent['calls:decode_chunk']} chunks "
          f"(walker block {jsonstream.BLOCK_BYTES / (1 << 20):g} MiB)")
    print(f"load, serial: {cpu:.2f} s CPU = {cpu / gb:.2f} CPU-s/GB ({wall:.2f} s wall, load average "
          f"{os.getloadavg()[0]:.1f}); an idle 2-core machine at this CPU time: {2 * mb / cpu:.0f} MB/s at best")
    for name in STAGES:
        v = spent.get(name, 0.0)
        print(f"{'  ' * DEPTH.get(name, 0)}{name:{24 - 2 * DEPTH.get(name, 0)}s} {v:7.2f} s {v / gb:6.2f} CPU-s/GB {100 * v / cpu:5.1f}%")
    top = spent["walker"] + spent["decode_chunk"] + spent["assemble"]
    print(f"{'other (loader, tail)':24s} {cpu - top:7.2f} s {(cpu - top) / gb:6.2f} CPU-s/GB {100 * (cpu - top) / cpu:5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
