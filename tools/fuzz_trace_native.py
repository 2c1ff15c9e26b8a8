"""Differential fuzzing of the native Chrome-trace event reader (parsers/_trace_reader.c) against
polars: mutated real chunks, each read by both, in a child process that a crash cannot take down
with the run.

Chunks are captured as the Chrome-trace parser hands them to the native reader while it loads
every corpus trace (and sample_reports'), with the schema it asked for, then cut into pieces of
about --piece bytes between events. Each mutant is a piece with 1-3 mutations: the fuzz mutators'
bytes and JSON kinds (tests/fuzz/mutators.py), and token edits aimed at a hand-written JSON
reader (numbers in every spelling polars reads differently, escapes and surrogates, control
characters, whitespace, repeated keys, nulls, wrong types, deep lists). The contract
(parsers/trace_native.py): the native reader returns exactly `pl.read_json(chunk, schema=...)`'s
frame or declines. Outcomes per mutant: same, declined, polars-only-fails (the native reader
answered a chunk polars refuses: a finding), different (a finding), crash (the child died: a
finding, its mutant saved).

    nice -n 10 .venv/bin/python tools/fuzz_trace_native.py --mutants 20000 --out /tmp/fuzz-native

Exit status 1 when anything but same/declined was seen.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# number spellings a hand-written reader may read unlike polars: exponents, signs, leading zeros,
# fractions on integers, beyond 64 bits, beyond double range, subnormals, many digits
NUMBERS = [b"0", b"-0", b"0.0", b"-0.0", b"1e3", b"1E3", b"1e+3", b"1.0", b"1.5e0", b"01", b"-01", b"+1", b".5", b"5.", b"1e",
           b"9223372036854775807", b"9223372036854775808", b"-9223372036854775808", b"-9223372036854775809",
           b"18446744073709551616", b"1e308", b"1e309", b"-1e309", b"4.9e-324", b"2.4703282292062327e-324", b"1e-400",
           b"0.1000000000000000055511151231257827", b"123456789012345678901234567890", b"1.7976931348623157e308",
           b"NaN", b"Infinity", b"-Infinity", b"nan", b"0x10", b"1_000", b"00", b"-", b"1.2.3", b"2.5e-5", b"1e-7"]
STRINGS = [b'""', b'"\\u00e9"', b'"\\ud83d\\ude00"', b'"\\ud800"', b'"\\udc00"', b'"\\u0000"', b'"a\\"b"', b'"\\\\"', b'"\\/"',
           b'"\\b\\f\\n\\r\\t"', b'"\\x41"', b'"\\u12"', b'"\xc3\xa9"', b'"\xff"', b'"\xc3"', b'"\xed\xa0\x80"', b'"\x01"',
           b'"a\tb"', b'"' + b"x" * 70000 + b'"', b'"\\u0041"']
OTHERS = [b"null", b"true", b"false", b"[]", b"{}", b"[1]", b"[[1]]", b"[null]", b"[1,null]", b'{"a":1}', b"[" * 70 + b"]" * 70,
          b"[1,]", b"[,1]", b"{,}", b'{"x":1,"x":2}']
_TOKEN = re.compile(rb'-?\d[\d.eE+-]*|"(?:[^"\\]|\\.)*"|true|false|null')
_KEY = re.compile(rb'"([A-Za-z_ ]+)"\s*:')


def token_edit(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    toks = list(_TOKEN.finditer(data))
    if not toks:
        return data, "no token"
    t = rng.choice(toks)
    op = rng.random()
    if op < 0.1:
        keys = list(_KEY.finditer(data))
        if keys:
            k = rng.choice(keys)
            # the key again beside itself: a repeated key
            dup = data[k.start():k.end()] + b"0,"
            return data[: k.start()] + dup + data[k.start():], f"repeat key {k.group(1)[:20]!r}"
    if op < 0.2:
        ws = rng.choice([b" ", b"\t", b"\n", b"\r\n", b"\x0b", b"\xc2\xa0", b"/**/"])
        i = rng.choice([t.start(), t.end()])
        return data[:i] + ws + data[i:], f"whitespace {ws!r} at {i}"
    pool = rng.choice([NUMBERS, NUMBERS, STRINGS, OTHERS])
    new = rng.choice(pool)
    return data[: t.start()] + new + data[t.end():], f"token {data[t.start():t.end()][:20]!r} -> {new[:24]!r}"


def mutate(piece: bytes, rng: random.Random) -> tuple[bytes, str]:
    from tests.fuzz import mutators

    labels = []
    data = piece
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        r = rng.random()
        if r < 0.75:
            data, lab = token_edit(data, rng)
        else:
            fn = rng.choice([*mutators.BYTE_MUTATORS, mutators.mutate_json, mutators.mutate_json_wide])
            try:
                m = fn(data, rng)
            except (ValueError, RecursionError, UnicodeError):  # the JSON kinds re-parse: an earlier edit may forbid it
                continue
            if m is None:
                continue
            data, lab = m.data, m.label
        labels.append(lab[:80])
    return data, "; ".join(labels)


# ------------------------------------------------------------------------------------------------
# the child: reads (index, mutant) pairs, answers one outcome each
# ------------------------------------------------------------------------------------------------
def child(schemas_file: Path) -> int:
    import pickle

    import polars as pl

    from profaudit.parsers import trace_native

    schemas = pickle.loads(schemas_file.read_bytes())
    out = sys.stdout.buffer
    inp = sys.stdin.buffer
    while True:
        head = inp.readline()
        if not head:
            return 0
        i, si, n = map(int, head.split())
        data = inp.read(n)
        schema = schemas[si]
        try:
            got = trace_native.read_events(data, schema)
        except trace_native.Unsupported:
            res = "declined"
        else:
            try:
                ref = pl.read_json(io.BytesIO(data), schema=schema)
            except Exception as exc:  # noqa: BLE001 - any refusal by polars
                res = f"polars-only-fails {type(exc).__name__}: {str(exc)[:120]}"
            else:
                res = "same" if trace_native.identical(ref, got) else f"different: polars {ref.head(3)} native {got.head(3)}"
        out.write((json.dumps({"i": i, "res": res}) + "\n").encode())
        out.flush()


def capture_chunks(piece: int, max_files: int) -> tuple[list[tuple[bytes, int]], list]:
    """(piece, schema index) pairs from loading the corpus traces, and the schemas."""
    from profaudit.loader import read_one
    from profaudit.parsers import find_parser, jsonstream, trace_native
    from tests.fuzz.harness import CORPUS, _candidates

    seen: list[tuple[bytes, object]] = []
    real = trace_native.read_events

    def spy(chunk, schema):
        seen.append((bytes(chunk), schema))
        return real(chunk, schema)

    trace_native.read_events = spy
    try:
        paths = [p for p in _candidates([CORPUS, REPO / "sample_reports"])
                 if p.is_file() and (find_parser(p) is not None and find_parser(p).name == "chrome-trace")]
        paths.sort(key=lambda p: p.stat().st_size)
        for p in paths[:max_files]:
            try:
                read_one(p)
            except Exception:
                pass
    finally:
        trace_native.read_events = real
    schemas, pieces = [], []
    for chunk, schema in seen:
        if schema not in schemas:
            schemas.append(schema)
        si = schemas.index(schema)
        for pc in jsonstream.split_events(chunk, piece):
            pieces.append((pc, si))
    return pieces, schemas


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--mutants", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--piece", type=int, default=4096, help="bytes per piece of a captured chunk (cut between events)")
    ap.add_argument("--max-files", type=int, default=40, help="corpus traces to capture chunks from, smallest first")
    ap.add_argument("--budget-s", type=float, default=1800)
    ap.add_argument("--out", type=Path, default=Path("fuzz-native-out"))
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child)
    import pickle

    from profaudit.parsers import trace_native

    if trace_native._native is None:
        print("the native trace reader is not built here: nothing to fuzz", file=sys.stderr)
        return 2
    pieces, schemas = capture_chunks(args.piece, args.max_files)
    if not pieces:
        print("no Chrome-trace chunks captured (corpus absent?)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    schemas_file = args.out / "schemas.pickle"
    schemas_file.write_bytes(pickle.dumps(schemas))
    print(f"{len(pieces)} pieces of {len(schemas)} schemas captured", flush=True)
    counts: Counter = Counter()
    t0 = time.monotonic()

    def spawn():
        return subprocess.Popen([sys.executable, __file__, "--child", str(schemas_file)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                cwd=str(REPO))

    proc = spawn()
    for i in range(args.mutants):
        if time.monotonic() - t0 > args.budget_s:
            break
        rng = random.Random(f"{args.seed}/{i}")
        piece, si = rng.choice(pieces)
        data, label = mutate(piece, rng)
        try:
            proc.stdin.write(f"{i} {si} {len(data)}\n".encode() + data)
            proc.stdin.flush()
            line = proc.stdout.readline()
        except BrokenPipeError:
            line = b""
        if not line:
            code = proc.wait()
            res = f"crash (exit {code})"
            proc = spawn()
        else:
            res = json.loads(line)["res"]
        kind = res.split()[0].rstrip(":") if not res.startswith("crash") else "crash"
        counts[kind] += 1
        if kind not in ("same", "declined"):
            dest = args.out / f"{kind}-{i}.json"
            dest.write_bytes(data)
            (args.out / f"{kind}-{i}.txt").write_text(f"schema: {schemas[si]}\nmutation: {label}\nresult: {res}\nrng: {args.seed}/{i}\n")
            print(f"FINDING #{i} {kind}: {label[:160]} -> {res[:300]}", flush=True)
    proc.stdin.close()
    proc.wait()
    n = sum(counts.values())
    print(f"{n} mutants in {time.monotonic() - t0:.0f} s: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()), flush=True)
    return 1 if set(counts) - {"same", "declined"} else 0


if __name__ == "__main__":
    sys.exit(main())
