"""The native Chrome-trace chunk reader against polars' JSON reader, chunk by chunk, in one run.

Both read the same chunks (cut by the parser's own TraceWalker from a generated Kineto trace) into
the same frames: `_read_json` with the native reader (parsers/trace_native.py) and with it off,
which is polars' `read_json` in 256 KiB pieces, the path every chunk took before. CPU time is
`time.process_time` on one thread (POLARS_MAX_THREADS=1 is set below so that polars' idle pool
adds nothing); each side's median of --repeat runs is reported, with the ratio. The first chunk's
frames are checked to be identical before timing.

    .venv/bin/python benchmarks/bench_trace_native.py --size-mb 200 --repeat 3
    .venv/bin/python benchmarks/bench_trace_native.py --trace /tmp/t1g.json
"""

from __future__ import annotations

import os

os.environ.setdefault("POLARS_MAX_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_trace_load import DEFAULT_SOURCE, generate  # noqa: E402


def _run(chunks: list[bytes], schema, native: bool) -> float:
    from profaudit.parsers import chrome_trace as ct

    os.environ["PROFAUDIT_NATIVE_TRACE"] = "1" if native else "0"
    t = time.process_time()
    for c in chunks:
        ct._read_json(c, schema, ct.PIECE_BYTES)
    return time.process_time() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=200.0, help="size of the generated trace (default 200)")
    ap.add_argument("--trace", type=Path, help="cut this trace instead of generating one")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--schema", default="kineto", help="chrome_trace.SCHEMAS key (default kineto)")
    args = ap.parse_args(argv)

    from profaudit.parsers import chrome_trace as ct
    from profaudit.parsers import jsonstream, trace_native

    if not trace_native._native:
        print("the native trace reader is not built (pip install -e . with a C compiler)")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        path = args.trace
        if path is None:
            path = Path(tmp) / "trace.json"
            generate(DEFAULT_SOURCE, path, args.size_mb, gz=False)
        chunks = [item[1] for item in jsonstream.TraceWalker(path) if item[0] == "events"]
    schema = ct.SCHEMAS[args.schema]
    mb = sum(map(len, chunks)) / 1e6
    os.environ["PROFAUDIT_NATIVE_TRACE"] = "1"
    a = ct._read_json(chunks[0], schema, ct.PIECE_BYTES)
    os.environ["PROFAUDIT_NATIVE_TRACE"] = "0"
    b = ct._read_json(chunks[0], schema, ct.PIECE_BYTES)
    if not trace_native.identical(a, b):
        print("the native frame differs from polars' on the first chunk")
        return 1
    os.environ["PROFAUDIT_NATIVE_TRACE"] = "1"
    declined = 0
    for c in chunks:
        try:
            trace_native.read_events(c, schema)
        except trace_native.Unsupported:
            declined += 1
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.repeat):
        for native in (False, True):
            times[native].append(_run(chunks, schema, native))
    pol, nat = statistics.median(times[False]), statistics.median(times[True])
    print(f"{len(chunks)} chunks, {mb:.0f} MB of events, schema {args.schema}; the native reader declined {declined}")
    print(f"polars read_json (pieces): {pol:.2f} CPU-s = {pol / mb * 1000:.2f} CPU-s/GB ({mb / pol:.0f} MB/s per core)")
    print(f"native reader:             {nat:.2f} CPU-s = {nat / mb * 1000:.2f} CPU-s/GB ({mb / nat:.0f} MB/s per core)")
    print(f"ratio polars / native: {pol / nat:.2f}x less CPU (median of {args.repeat}; "
          f"load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
