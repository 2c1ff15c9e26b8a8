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

`--threaded` times the load as it runs (decoding on worker threads, assembly in
polars' own pool) in wall and CPU time per phase, decoding (`stream_events`) and assembly
(`assemble`), the median of `--repeat` loads; with `--baseline-parser FILE` (another version of
`parsers/chrome_trace.py`, e.g. `git show REV:parsers/chrome_trace.py > /tmp/old.py`) the same
loads alternate with that version's, and the baseline/current ratios of each phase are printed.
Wall times need a quiet machine: a second core's gain is what other work takes first.

    .venv/bin/python benchmarks/trace_load_stages.py --trace /tmp/t1g.json --threaded --repeat 3 --baseline-parser /tmp/old.py

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


def load_module(file: Path):
    """Another version of the Chrome-trace parser module, beside the current one."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("profaudit.parsers._baseline_chrome_trace", file)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def phases(mod, path: Path) -> tuple[float, float, float, float]:
    """(decode wall, decode CPU, assembly wall, assembly CPU) of one threaded load by `mod`."""
    import gc

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    gc.collect()
    w0, c0 = time.perf_counter(), cpu()
    meta, acc, form = mod.stream_events(path)
    w1, c1 = time.perf_counter(), cpu()
    prof = mod.assemble(path, mod.ChromeTraceParser(), meta, acc, form)
    w2, c2 = time.perf_counter(), cpu()
    del prof, meta, acc
    return w1 - w0, c1 - c0, w2 - w1, c2 - c1


def threaded(path: Path, mb: float, repeat: int, baseline: Path | None) -> None:
    import statistics

    import profaudit.parsers  # noqa: F401  (imported before the clock starts)
    from profaudit.parsers import chrome_trace

    mods = [("current", chrome_trace)] + ([("baseline", load_module(baseline))] if baseline else [])
    runs: dict[str, list] = {name: [] for name, _ in mods}
    loads = []
    for _ in range(repeat):
        for name, mod in mods:  # alternated, so that both see the same machine
            loads.append(os.getloadavg()[0])
            runs[name].append(phases(mod, path))
    gb = mb / 1000
    med = {name: [statistics.median(r[i] for r in rs) for i in range(4)] for name, rs in runs.items()}
    for name, (dw, dc, aw, ac) in med.items():
        print(f"{name:9s} decode {dw:6.2f} s wall {dc / gb:6.2f} CPU-s/GB | assembly {aw:6.2f} s wall {ac / gb:6.2f} CPU-s/GB "
              f"(CPU/wall {ac / aw:4.2f}) | load {dw + aw:6.2f} s wall = {mb / (dw + aw):6.1f} MB/s, {(dc + ac) / gb:5.2f} CPU-s/GB")
    if baseline:
        (dw, _, aw, _), (bdw, _, baw, _) = med["current"], med["baseline"]
        print(f"baseline/current wall time: decode {bdw / dw:.2f}x, assembly {baw / aw:.2f}x, whole load {(bdw + baw) / (dw + aw):.2f}x")
    print(f"medians of {repeat} loads each; load average {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} CPUs "
          f"(wall times of a busy machine understate what a second core gives)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=300.0, help="size of the generated trace (default 300)")
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="corpus Kineto trace to replicate")
    ap.add_argument("--epoch-ns", action="store_true", help="absolute ns-digit timestamps (see bench_trace_load.py)")
    ap.add_argument("--trace", type=Path, help="load this trace instead of generating one")
    ap.add_argument("--block-mb", type=float, help="the walker's block size in MiB (default: the parser's own)")
    ap.add_argument("--threaded", action="store_true", help="wall and CPU time of decoding and assembly as the load runs")
    ap.add_argument("--repeat", type=int, default=3, help="loads per version with --threaded (default 3)")
    ap.add_argument("--baseline-parser", type=Path, help="with --threaded: another chrome_trace.py, loaded alternately")
    args = ap.parse_args(argv)
    if args.baseline_parser is not None and not args.baseline_parser.is_file():
        raise SystemExit(f"no baseline parser at {args.baseline_parser}")
    if args.repeat < 1:
        raise SystemExit("--repeat must be at least 1")
    from profaudit.parsers import jsonstream

    if args.block_mb is not None:
        if not args.block_mb > 0:
            raise SystemExit("--block-mb must be positive")
        jsonstream.BLOCK_BYTES = int(args.block_mb * (1 << 20))
    if os.environ.get("POLARS_MAX_THREADS") != "1" and not args.threaded:
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
        if args.threaded:
            print(f"trace: {path.name}, {mb:.0f} MB of JSON")
            threaded(path, mb, args.repeat, args.baseline_parser)
            return 0
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
