"""Loading an Nsight Systems SQLite export with one million kernel rows: `profaudit.load` against
the bare `sqlite3` SELECT of the same rows, measured in the same run.

The file is generated in a temporary folder from a real corpus export: its schema (every CREATE
TABLE, so the 2026 kernel table with all 39 columns), its StringIds and all its other rows are
copied, and the kernel table is filled with synthetic launches (64 templated kernel names, four
streams, varying grids, registers and dynamic shared memory). `--api` also adds one
`cudaLaunchKernel` runtime row per kernel, so the API-call ranges are loaded and nested too.

Baseline ("bare SELECT"): `sqlite3` with the same read-only immutable URI,
`SELECT <the 19 kernel columns profaudit reads> FROM CUPTI_ACTIVITY_KIND_KERNEL` and `fetchall()`:
no name lookup, no frame. profaudit additionally resolves names through StringIds, maps devices,
derives process ids, sizes and durations, orders the rows, reads every other table and conforms
everything to the schema. Goal: profaudit / baseline <= 1.5.

    .venv/bin/python benchmarks/bench_nsys_load.py [--rows 1000000] [--repeat 3] [--api] [--schema-from FILE]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SCHEMA = REPO.parent / "shared" / "corpus" / "nsys-sqlite" / "0x822a5b87__test-cuda__report1.sqlite"
GOAL = 1.5
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
COLUMNS = [
    "start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid", "demangledName", "shortName", "mangledName",
    "registersPerThread", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "staticSharedMemory", "dynamicSharedMemory",
]


def generate(src: Path, dst: Path, rows: int, api: bool) -> None:
    s = sqlite3.connect(f"file:{src}?mode=ro&immutable=1", uri=True)
    d = sqlite3.connect(dst)
    tables = [(n, sql) for n, sql in s.execute("SELECT name, sql FROM sqlite_master WHERE type='table' AND sql IS NOT NULL")]
    if KERNEL not in {n for n, _ in tables}:
        raise SystemExit(f"{src} has no {KERNEL} table to copy the schema from")
    for _, sql in tables:
        d.execute(sql)
    d.commit()
    d.execute("ATTACH DATABASE ? AS src", (f"file:{src}?mode=ro&immutable=1",))
    for name, _ in tables:
        if name not in (KERNEL,) and not (api and name == RUNTIME):
            d.execute(f'INSERT INTO main."{name}" SELECT * FROM src."{name}"')
    gpid = s.execute(f"SELECT globalPid FROM {KERNEL} LIMIT 1").fetchone()
    gpid = gpid[0] if gpid else (1 << 48) + (4242 << 24)
    base = (d.execute("SELECT max(id) FROM StringIds").fetchone()[0] or 0) + 1
    names = [(base + i, f"void ns{i % 7}::kernel_{i}<float, {i % 5}, (bool){i % 2}>(const float *, float *, int)") for i in range(64)]
    shorts = [(base + 64 + i, f"kernel_{i}") for i in range(64)]
    launch = base + 128
    d.executemany("INSERT INTO StringIds (id, value) VALUES (?, ?)", names + shorts + [(launch, "cudaLaunchKernel_v7000")])
    cols = [r[1] for r in d.execute(f"PRAGMA table_info({KERNEL})")]
    expr = {
        "start": "i * 3000 + (i * 7919) % 700", "end": "i * 3000 + (i * 7919) % 700 + 1000 + (i * 104729) % 1500",
        "deviceId": "0", "contextId": "1", "streamId": "7 + i % 4", "correlationId": "100 + 2 * i", "globalPid": str(gpid),
        "demangledName": f"{base} + i % 64", "shortName": f"{base + 64} + i % 64", "mangledName": "NULL",
        "registersPerThread": "32 + i % 8", "gridX": "1 + i % 1000", "gridY": "1 + i % 3", "gridZ": "1",
        "blockX": "256", "blockY": "1", "blockZ": "1", "staticSharedMemory": "0", "dynamicSharedMemory": "(i % 3) * 1024",
    }
    sel = ", ".join(expr.get(c, "0") for c in cols)
    d.execute(
        f"WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < {rows - 1}) "
        f"INSERT INTO {KERNEL} ({', '.join(chr(34) + c + chr(34) for c in cols)}) SELECT {sel} FROM c"
    )
    if api:
        rcols = [r[1] for r in d.execute(f"PRAGMA table_info({RUNTIME})")]
        rexpr = {
            "start": "i * 3000 - 900", "end": "i * 3000 - 100", "eventClass": "0", "globalTid": str(gpid + 17),
            "correlationId": "100 + 2 * i", "nameId": str(launch), "returnValue": "0",
        }
        rsel = ", ".join(rexpr.get(c, "NULL") for c in rcols)
        d.execute(
            f"WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < {rows - 1}) "
            f"INSERT INTO {RUNTIME} ({', '.join(chr(34) + c + chr(34) for c in rcols)}) SELECT {rsel} FROM c"
        )
    d.commit()
    d.execute("DETACH DATABASE src")
    d.close()
    s.close()


def bare_select(path: Path) -> int:
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        rows = con.execute(f"SELECT {', '.join(chr(34) + c + chr(34) for c in COLUMNS)} FROM {KERNEL}").fetchall()
    finally:
        con.close()
    return len(rows)


def profaudit_load(path: Path) -> int:
    import profaudit

    ps = profaudit.load(path, parallel=False)
    return ps.kernels.height


def timed(fn, path: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    n = fn(path)
    return time.perf_counter() - t0, n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--api", action="store_true", help="also one cudaLaunchKernel row per kernel")
    ap.add_argument("--schema-from", type=Path, default=DEFAULT_SCHEMA, help="nsys SQLite export to copy the schema and strings from")
    args = ap.parse_args(argv)
    if not args.schema_from.is_file():
        print(f"schema source {args.schema_from} not found (the corpus is ../shared/corpus); pass --schema-from", file=sys.stderr)
        return 2
    sys.path.insert(0, str(REPO))
    with tempfile.TemporaryDirectory(prefix="bench_nsys_") as tmp:
        db = Path(tmp) / "synthetic_1m.sqlite"
        t0 = time.perf_counter()
        generate(args.schema_from, db, args.rows, args.api)
        print(f"generated {args.rows:,} kernel rows{' + as many API rows' if args.api else ''} from the schema of {args.schema_from.name} "
              f"in {time.perf_counter() - t0:.2f} s ({db.stat().st_size / 1e6:.0f} MB)")
        profaudit_load(db)  # warm imports and the page cache for both contenders alike
        bare_select(db)
        base_t, prof_t = [], []
        for _ in range(args.repeat):
            t, n = timed(bare_select, db)
            base_t.append(t)
            assert n == args.rows, n
            t, n = timed(profaudit_load, db)
            prof_t.append(t)
            assert n == args.rows, n
        b, p = statistics.median(base_t), statistics.median(prof_t)
        ratio = p / b
        print(f"bare sqlite3 SELECT + fetchall : median {b:.3f} s  (runs: {', '.join(f'{x:.3f}' for x in base_t)})")
        print(f"profaudit.load                 : median {p:.3f} s  (runs: {', '.join(f'{x:.3f}' for x in prof_t)})")
        print(f"ratio profaudit / bare SELECT  : {ratio:.2f}x  (goal <= {GOAL}x: {'met' if ratio <= GOAL else 'NOT met'})")
        print(f"throughput                     : {args.rows / p / 1e6:.2f} M kernel rows/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
