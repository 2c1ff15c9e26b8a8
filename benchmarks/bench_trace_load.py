"""Loading a large PyTorch profiler (Kineto) trace: `profaudit.load` against Holistic Trace
Analysis' trace parser on the same file, measured in the same run.

The trace is generated in a temporary folder from a real corpus trace (default: HTA's
ns-resolution V100 trace, 68,692 events): its events are replicated with shifted timestamps and
shifted correlation / External / flow ids until the file reaches `--size-mb` (uncompressed), and
written the way Kineto writes today (`ts`/`dur` as `<us>.<3 digits>` relative to
`baseTimeNanoseconds`). `--gzip` writes `.json.gz` instead.

Each loader runs in a child process (a fresh interpreter that imports its library first). Time is
measured around the load call inside the child; peak memory is the child's maximum resident set
size from `wait4` (interpreter and libraries included on both sides).

Baseline: `hta.common.trace_parser.parse_trace_dataframe(path, ParserConfig.get_default_cfg())`,
HTA's trace loader with its default backend, which `TraceAnalysis` runs for every rank. It builds
one frame of events; profaudit builds kernels (with launch, op and annotation attribution),
transfers, nested ranges, counters and metadata. Goals: HTA time / profaudit time >= 5 and
profaudit peak RSS <= HTA peak RSS / 4.

    .venv/bin/python benchmarks/bench_trace_load.py [--size-mb 300] [--gzip] [--source TRACE] [--repeat 1]
    .venv/bin/python benchmarks/bench_trace_load.py --size-mb 1000 --skip-hta      # the 1 GB case
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from decimal import Decimal
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus" / "chrome-trace"
DEFAULT_SOURCE = CORPUS / "facebookresearch__HolisticTraceAnalysis__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
GOAL_TIME, GOAL_MEM = 5.0, 0.25
ID_STRIDE = 10_000_000
_MARK = re.compile(r'"@@(TS|DUR|ID-?\d+)@@"')

PROFAUDIT_CHILD = """
import sys, time
import profaudit
t0 = time.perf_counter()
ps = profaudit.load(sys.argv[1], parallel=False)
dt = time.perf_counter() - t0
print("RESULT", dt, f"kernels={ps.kernels.height} ranges={ps.ranges.height} transfers={ps.transfers.height}")
"""

HTA_CHILD = """
import sys, time, logging
logging.disable(logging.CRITICAL)
from hta.common.trace_parser import parse_trace_dataframe
from hta.configs.parser_config import ParserConfig
t0 = time.perf_counter()
meta, df, sym = parse_trace_dataframe(sys.argv[1], ParserConfig.get_default_cfg())
dt = time.perf_counter() - t0
print("RESULT", dt, f"events={len(df)}")
"""


def _ns(v) -> int:
    return int((Decimal(str(v)) * 1000).to_integral_value())


def _fmt(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def generate(src: Path, dst: Path, size_mb: float, gz: bool) -> tuple[int, int]:
    """Write a Kineto-style trace of about `size_mb` MB (uncompressed) built from `src`; returns
    (events written, copies of the source)."""
    raw = src.read_bytes()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw, parse_float=Decimal)
    events = [e for e in doc.get("traceEvents", []) if isinstance(e, dict) and e.get("ph") and "ts" in e]
    header = {k: v for k, v in doc.items() if k != "traceEvents"}
    starts = [_ns(e["ts"]) for e in events]
    t0 = min(starts)
    t1 = max(s + _ns(e.get("dur", 0)) for s, e in zip(starts, events))
    base = (t0 // 10**12) * 10**12
    span = t1 - t0 + 1_000_000
    templates = []
    for e, start in zip(events, starts):
        e = dict(e)
        dur = _fmt(_ns(e["dur"])) if "dur" in e else None
        e["ts"] = "@@TS@@"
        if dur is not None:
            e["dur"] = "@@DUR@@"
        if isinstance(e.get("args"), dict):
            e["args"] = {k: (f"@@ID{v}@@" if k in ("correlation", "External id") and isinstance(v, int) else v) for k, v in e["args"].items()}
        if isinstance(e.get("id"), int):
            e["id"] = f"@@ID{e['id']}@@"
        parts = _MARK.split(orjson.dumps(e, default=str).decode())
        templates.append((parts, start - base, dur))
    header["baseTimeNanoseconds"] = base
    head = orjson.dumps(header, default=str).decode()[:-1] + ',\n  "traceEvents": [\n'
    target = int(size_mb * 1e6)
    written, copies, n_events = len(head), 0, 0
    out = gzip.open(dst, "wt", compresslevel=1) if gz else open(dst, "w")
    with out:
        out.write(head)
        while written < target:
            shift, id_shift = copies * span, copies * ID_STRIDE
            buf = []
            for parts, rel, dur in templates:
                s = []
                for i, p in enumerate(parts):
                    if not i % 2:
                        s.append(p)
                    elif p == "TS":
                        s.append(_fmt(rel + shift))
                    elif p == "DUR":
                        s.append(dur)
                    else:
                        s.append(str(int(p[2:]) + id_shift))
                buf.append("  " + "".join(s))
            text = ("" if copies == 0 else ",\n") + ",\n".join(buf)
            out.write(text)
            written += len(text)
            copies += 1
            n_events += len(buf)
        out.write("\n  ]\n}\n")
    return n_events, copies


def run_child(code: str, path: Path, workdir: Path) -> tuple[float, float, float, str]:
    """(seconds inside the load call, peak RSS in MB, CPU seconds of the whole child, summary)."""
    out_p, err_p = workdir / "child.out", workdir / "child.err"
    with open(out_p, "w") as out, open(err_p, "w") as err:
        proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=out, stderr=err, cwd=REPO)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = out_p.read_text()
    line = next((l for l in text.splitlines() if l.startswith("RESULT")), None)
    if proc.returncode != 0 or line is None:
        tail = err_p.read_text().strip().splitlines()
        raise SystemExit(f"child failed (exit {proc.returncode}): {tail[-1] if tail else text}")
    _, seconds, summary = line.split(" ", 2)
    return float(seconds), usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime, summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=300.0, help="uncompressed size of the generated trace (default 300)")
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="corpus Kineto trace to replicate")
    ap.add_argument("--gzip", action="store_true", help="write and load .json.gz")
    ap.add_argument("--repeat", type=int, default=1, help="runs per loader (median reported)")
    ap.add_argument("--skip-hta", action="store_true", help="profaudit only (HTA needs ~7x the file size in memory)")
    ap.add_argument("--keep", type=Path, help="write the generated trace here and keep it")
    args = ap.parse_args(argv)
    if not args.source.is_file():
        raise SystemExit(f"no source trace at {args.source}; pass --source")
    with tempfile.TemporaryDirectory(prefix="bench_trace_") as tmp:
        tmp = Path(tmp)
        path = args.keep or tmp / ("trace.json.gz" if args.gzip else "trace.json")
        n_events, copies = generate(args.source, path, args.size_mb, args.gzip)
        size = path.stat().st_size
        raw_mb = args.size_mb if args.gzip else size / 1e6
        print(f"trace: {path.name}, {size / 1e6:.1f} MB on disk (~{raw_mb:.0f} MB of JSON), {n_events:,} events "
              f"({copies} copies of {args.source.name})")
        results = {}
        for name, code in (("profaudit", PROFAUDIT_CHILD), ("hta", HTA_CHILD)):
            if name == "hta" and args.skip_hta:
                continue
            runs = [run_child(code, path, tmp) for _ in range(args.repeat)]
            t = statistics.median(r[0] for r in runs)
            m = max(r[1] for r in runs)
            c = statistics.median(r[2] for r in runs)
            results[name] = (t, m, c)
            print(f"{name:10s} load {t:7.2f} s  {raw_mb / t:7.1f} MB/s  peak RSS {m:8.0f} MB  child CPU {c:6.2f} s  ({runs[-1][3]})")
        load = os.getloadavg()[0]
        if "hta" in results:
            (pt, pm, pc), (ht, hm, hc) = results["profaudit"], results["hta"]
            tr, mr = ht / pt, pm / hm
            print(f"time ratio HTA/profaudit = {tr:.2f}x (goal >= {GOAL_TIME:g}x: {'met' if tr >= GOAL_TIME else 'NOT met'}); "
                  f"CPU-time ratio {hc / pc:.2f}x (includes interpreter start-up and imports)")
            print(f"memory ratio profaudit/HTA = {mr:.3f} (goal <= {GOAL_MEM:g}: {'met' if mr <= GOAL_MEM else 'NOT met'})")
        print(f"load average during the run: {load:.1f} on {os.cpu_count()} CPUs (wall-time ratios shrink on a busy machine: "
              "profaudit decodes on several threads, HTA on one)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
