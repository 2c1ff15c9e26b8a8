"""The native Chrome-trace chunk reader against polars' JSON reader, chunk by chunk, in one run.

Both read the same chunks (cut by the parser's own TraceWalker from a generated Kineto trace) into
the same frames: `_read_json` with the native reader (parsers/trace_native.py) and with it off,
which is polars' `read_json` in 256 KiB pieces, the path every chunk took before. CPU time is
`time.process_time` on one thread (POLARS_MAX_THREADS=1 is set below so that polars' idle pool
adds nothing); each side's median of --repeat runs is reported, with the ratio. The first chunk's
frames are checked to be identical before timing.

`--baseline-rev REV` also compares the C reader's scan alone (`_trace_reader.scan`, the chunk to
column buffers) of the working tree against that of git revision REV: both sources are compiled
the same way in a temporary folder (gcc -O2, or $CC) and timed in alternation, for a change to the
C code.

    .venv/bin/python benchmarks/bench_trace_native.py --size-mb 200 --repeat 3
    .venv/bin/python benchmarks/bench_trace_native.py --trace /tmp/t1g.json
    .venv/bin/python benchmarks/bench_trace_native.py --trace /tmp/t300.json --baseline-rev 4115a4b --repeat 5
"""

from __future__ import annotations

import os

os.environ.setdefault("POLARS_MAX_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import sysconfig  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_trace_load import DEFAULT_SOURCE, generate  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SOURCE = "parsers/_trace_reader.c"


def _build(source: bytes, folder: Path):
    """The reader compiled from `source` (C text) in `folder`, imported as a module."""
    import importlib.util

    folder.mkdir(parents=True)
    (folder / "_trace_reader.c").write_bytes(source)
    so = folder / ("_trace_reader" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run([os.environ.get("CC", "gcc"), "-O2", "-std=gnu11", "-shared", "-fPIC", "-I" + sysconfig.get_paths()["include"],
                    str(folder / "_trace_reader.c"), "-o", str(so)], check=True)
    spec = importlib.util.spec_from_file_location("_trace_reader", so)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def compare_scans(chunks: list[bytes], schema, rev: str, repeat: int, tmp: Path) -> None:
    """scan() of the working tree's reader against revision `rev`'s, same compiler flags, alternated."""
    from profaudit.parsers import trace_native

    old = _build(subprocess.run(["git", "show", f"{rev}:{SOURCE}"], cwd=REPO, capture_output=True, check=True).stdout, tmp / "base")
    new = _build((REPO / SOURCE).read_bytes(), tmp / "work")
    spec = trace_native._prepare(schema)[0]
    mb = sum(map(len, chunks)) / 1e6
    times: dict[str, list[float]] = {"base": [], "work": []}
    for _ in range(repeat):
        for name, mod in (("base", old), ("work", new)):
            t = time.process_time()
            for c in chunks:
                try:
                    mod.scan(c, spec)
                except mod.Unsupported:
                    pass
            times[name].append(time.process_time() - t)
    b, w = statistics.median(times["base"]), statistics.median(times["work"])
    print(f"scan() of {rev}: {b / mb * 1000:.2f} CPU-s/GB; of the working tree: {w / mb * 1000:.2f} CPU-s/GB; "
          f"ratio working tree / {rev} = {w / b:.3f} (median of {repeat}, alternated; load average {os.getloadavg()[0]:.1f})")


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
    ap.add_argument("--baseline-rev", help="also compare scan() with the C reader of this git revision")
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
    if args.baseline_rev:
        with tempfile.TemporaryDirectory() as tmp:
            compare_scans(chunks, schema, args.baseline_rev, args.repeat, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
