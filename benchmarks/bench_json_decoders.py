"""Decoding Kineto trace events into columns: the Chrome-trace parser's decoder against the other
JSON readers one could put in its place, on the same events, measured in the same run.

Why this exists: a 1 GB Kineto trace at 200 MB/s of wall time on 2 cores leaves 10 s of CPU time
for everything (decode, shaping, tables). The decoder is half of the parser's CPU time; this
measures whether another reader (or reading NDJSON instead of the events array) would free enough.

The events come from a trace generated like `bench_trace_load.py` does (replicated corpus events,
Kineto's `<us>.<3 digits>` timestamps), cut into chunks by the parser's own `TraceWalker`. Only
events whose pid and tid are numbers are kept (all but the handful of metadata events), because
Arrow's JSON reader refuses a column that holds numbers and text; every reader then decodes the
same events. Inputs each reader needs (NDJSON text, a file for DuckDB) are prepared before the
clock starts, so the NDJSON readers are measured without the cost of making NDJSON.

Measured per reader: CPU time (user + system of every thread, `time.process_time`) to turn all
chunks into a table (or, for orjson, Python objects; for the numpy scan, only the positions of
the quotes and of the brackets, commas and colons outside strings: the first pass of a numpy
tokenizer, before any value is extracted). Baseline: the parser's decoder, polars' JSON reader
over 256 KiB pieces of each chunk (`chrome_trace._read_json`). Ratio = baseline CPU / reader CPU
(above 1: the reader is faster). Median of `--repeat` runs, readers interleaved.

    .venv/bin/python benchmarks/bench_json_decoders.py [--size-mb 40] [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_trace_load import DEFAULT_SOURCE, generate  # noqa: E402

from profaudit.parsers import chrome_trace as ct  # noqa: E402
from profaudit.parsers.jsonstream import TraceWalker  # noqa: E402


def _numeric_ids(chunk: bytes) -> list[dict]:
    return [e for e in orjson.loads(chunk) if isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int)]


def _arrow_type(t: pl.DataType):
    import pyarrow as pa

    if isinstance(t, pl.Struct):
        return pa.struct([pa.field(f.name, _arrow_type(f.dtype)) for f in t.fields])
    if isinstance(t, pl.List):
        return pa.list_(pa.int64())
    return {pl.String: pa.string(), pl.Float64: pa.float64(), pl.Int64: pa.int64()}[t]


def readers(workdir: Path, arrays: list[bytes], lines: list[bytes]):
    """(name, prepared input per chunk, function of one input) for every reader available."""
    schema = ct.SCHEMAS["kineto"]
    out = [
        ("parser's decoder: polars read_json, 256 KiB pieces (baseline)", arrays,
         lambda b: ct._read_json(b, schema, ct.PIECE_BYTES).height),
        ("polars read_json, whole 4 MB chunk", arrays, lambda b: pl.read_json(io.BytesIO(b), schema=schema).height),
        ("polars read_ndjson, same schema", lines, lambda b: pl.read_ndjson(io.BytesIO(b), schema=schema).height),
        ("orjson.loads (Python objects, no columns)", arrays, lambda b: len(orjson.loads(b))),
    ]
    try:
        import pyarrow.json as pj
    except ImportError:
        pj = None
    if pj is not None:
        # Arrow reads a number only into a number column: pid, tid and flow ids as the file has them
        import pyarrow as pa

        fields = [pa.field(k, pa.int64() if k in ("pid", "tid", "id") else _arrow_type(v)) for k, v in schema.items()]
        opts = pj.ParseOptions(explicit_schema=pa.schema(fields), unexpected_field_behavior="ignore")
        out.append(("pyarrow.json (NDJSON, explicit schema)", lines,
                    lambda b: pj.read_json(io.BytesIO(b), parse_options=opts).num_rows))
    try:
        import duckdb
    except ImportError:
        duckdb = None
    if duckdb is not None:
        con = duckdb.connect()
        files = []
        for i, b in enumerate(lines):
            p = workdir / f"chunk{i}.ndjson"
            p.write_bytes(b)
            files.append(str(p))
        def sql_type(k: str, v: pl.DataType) -> str:
            if isinstance(v, pl.Struct):  # (DuckDB's field names ignore case: "external id" is left out)
                seen: dict[str, str] = {}
                for f in v.fields:
                    seen.setdefault(f.name.lower(), f'"{f.name}" {sql_type(f.name, f.dtype)}')
                return "STRUCT(" + ", ".join(seen.values()) + ")"
            if isinstance(v, pl.List):
                return "BIGINT[]"
            return "BIGINT" if v == pl.Int64 or k in ("pid", "tid", "id") else "DOUBLE" if v == pl.Float64 else "VARCHAR"

        args = ", ".join(f'"{k}": \'{sql_type(k, v)}\'' for k, v in schema.items())
        out.append(("duckdb read_json (NDJSON, columns given)", files,
                    lambda f: len(con.sql(f"select * from read_json('{f}', format='newline_delimited', "
                                          f"columns={{{args}}})").to_arrow_table())))
    lut = np.zeros(256, bool)
    lut[list(b"{}[],:")] = True

    def scan(b: bytes) -> int:
        a = np.frombuffer(b, np.uint8)
        quotes = np.flatnonzero(a == 0x22)  # (this input holds no escaped quotes)
        marks = np.flatnonzero(lut[a])
        return int((np.searchsorted(quotes, marks) % 2 == 0).sum())

    out.append(("numpy structural scan only (no values)", arrays, scan))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=40.0, help="size of the generated trace (default 40)")
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="corpus Kineto trace to replicate")
    ap.add_argument("--repeat", type=int, default=3, help="runs per reader (median reported)")
    args = ap.parse_args(argv)
    if not args.source.is_file():
        raise SystemExit(f"no source trace at {args.source}; pass --source")
    with tempfile.TemporaryDirectory(prefix="bench_json_") as tmp:
        tmp = Path(tmp)
        path = tmp / "trace.json"
        generate(args.source, path, args.size_mb, False)
        arrays, lines = [], []
        for item in TraceWalker(path):
            if item[0] != "events":
                continue
            events = _numeric_ids(item[1])
            arrays.append(orjson.dumps(events))
            lines.append(b"\n".join(orjson.dumps(e) for e in events))
        path.unlink()
        mb = sum(map(len, arrays)) / 1e6
        n = sum(len(orjson.loads(a)) for a in arrays)
        print(f"{n:,} events in {len(arrays)} chunks, {mb:.1f} MB of JSON (compact), from {args.source.name}")
        table = readers(tmp, arrays, lines)
        times: dict[str, list[float]] = {name: [] for name, _, _ in table}
        failed: dict[str, str] = {}
        for _ in range(args.repeat):
            for name, inputs, fn in table:
                if name in failed:
                    continue
                c0 = time.process_time()
                try:
                    rows = sum(fn(x) for x in inputs)
                except Exception as exc:  # a reader that cannot read these events is a result too
                    failed[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}"
                    continue
                times[name].append(time.process_time() - c0)
                if "scan" not in name and rows != n:
                    failed[name] = f"read {rows:,} rows, not {n:,}"
        base = statistics.median(times[table[0][0]])
        for name, _, _ in table:
            if name in failed:
                print(f"{name:58s} failed: {failed[name]}")
                continue
            c = statistics.median(times[name])
            print(f"{name:58s} {c:6.2f} s CPU {mb / c:7.1f} MB/s of CPU time  baseline/this {base / c:5.2f}x")
        print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
