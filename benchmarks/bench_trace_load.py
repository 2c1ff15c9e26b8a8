"""Loading a large PyTorch profiler (Kineto) trace: `profaudit.load` against Holistic Trace
Analysis' trace parser on the same file, measured in the same run.

The trace is generated in a temporary folder from a real corpus trace (default: HTA's
ns-resolution V100 trace, 68,692 events): its events are replicated with shifted timestamps and
shifted correlation / External / flow ids until the file reaches `--size-mb` (uncompressed), and
written the way Kineto writes today (`ts`/`dur` as `<us>.<3 digits>` relative to
`baseTimeNanoseconds`). `--gzip` writes `.json.gz` instead; `--epoch-ns` writes `ts` as absolute
Unix-epoch microseconds with three decimals and no base, as ns-resolution Kineto of 2024 did (the
source trace's own form: doubles cannot hold those times, the parser reads them as text).
`--trace FILE` loads a trace written earlier with `--keep` instead of generating one.

Each loader runs in a child process (a fresh interpreter that imports its library first: for
profaudit that includes the parser modules `load` would otherwise import on first use, as HTA's
child imports its parser module). Measured inside the child around the load call: wall time and
CPU time (user + system of every thread, `getrusage(RUSAGE_SELF)`); for the whole child: CPU time
and peak resident set size from `wait4` (interpreter and libraries included on both sides).

Both children run with byte-compiled modules, as an installed package does: a development
checkout run with PYTHONDONTWRITEBYTECODE (this project's machines set it) compiles every
profaudit module from source in each child, while HTA's site-packages hold their .pyc files. The
children write bytecode under the temporary folder (PYTHONPYCACHEPREFIX, never into the tree), and
one unmeasured child per loader imports its library first.

CPU time is the figure that survives a busy machine: wall time shrinks profaudit's lead when other
work competes for the cores (profaudit decodes on several threads, HTA on one), CPU time does not.

Baseline: `hta.common.trace_parser.parse_trace_dataframe(path, ParserConfig.get_default_cfg())`,
HTA's trace loader with its default backend, which `TraceAnalysis` runs for every rank. It builds
one frame of events; profaudit builds kernels (with launch, op and annotation attribution),
transfers, nested ranges, counters and metadata. HTA needs pandas < 3: `--hta-python` (or
`HTA_PYTHON`) names an interpreter of another virtual environment that has it. Goals: HTA time /
profaudit time >= 5, in CPU time as well as wall time, and profaudit peak RSS <= HTA peak RSS / 4.

`--baseline-parser FILE` also loads the trace with another version of the Chrome-trace parser
module (e.g. `git show REV:parsers/chrome_trace.py > /tmp/old.py`), in the same run, for the
CPU-time ratio of a change.

    .venv/bin/python benchmarks/bench_trace_load.py [--size-mb 300] [--gzip] [--epoch-ns] [--source TRACE] [--repeat 1]
        [--hta-python /path/to/venv/bin/python] [--baseline-parser /tmp/old_chrome_trace.py] [--keep F | --trace F]
    .venv/bin/python benchmarks/bench_trace_load.py --size-mb 1000 --skip-hta      # the 1 GB case

The 1 GB case's goal is >= 200 MB/s of wall time; the run prints the measured rate and the rate
its CPU time allows on an idle machine with every core busy (a busy machine only measures less).
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
GOAL_RATE = 200.0  # MB of JSON per second of wall time, the 1 GB case (issue 12)
ID_STRIDE = 10_000_000
_MARK = re.compile(r'"@@(TS|DUR|ID-?\d+)@@"')

_CPU = """
import resource
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
"""

# each child is its setup (imports) and then the measured load; a warm-up runs the setup alone
PROFAUDIT_SETUP = _CPU + """
import sys, time
import profaudit, profaudit.parsers
if len(sys.argv) > 2:  # another version of the Chrome-trace parser module, in place of the current one
    import importlib.util
    spec = importlib.util.spec_from_file_location("profaudit.parsers._baseline_chrome_trace", sys.argv[2])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    reg = profaudit.parsers.REGISTRY
    reg[[p.name for p in reg].index(mod.PARSER.name)] = mod.PARSER
"""
PROFAUDIT_CHILD = PROFAUDIT_SETUP + """
c0, t0 = cpu(), time.perf_counter()
ps = profaudit.load(sys.argv[1], parallel=False)
dt, dc = time.perf_counter() - t0, cpu() - c0
print("RESULT", dt, dc, f"kernels={ps.kernels.height} ranges={ps.ranges.height} transfers={ps.transfers.height}")
"""

HTA_SETUP = _CPU + """
import sys, time, logging
logging.disable(logging.CRITICAL)
from hta.common.trace_parser import parse_trace_dataframe
from hta.configs.parser_config import ParserConfig
"""
HTA_CHILD = HTA_SETUP + """
c0, t0 = cpu(), time.perf_counter()
meta, df, sym = parse_trace_dataframe(sys.argv[1], ParserConfig.get_default_cfg())
dt, dc = time.perf_counter() - t0, cpu() - c0
print("RESULT", dt, dc, f"events={len(df)}")
"""


def _ns(v) -> int:
    return int((Decimal(str(v)) * 1000).to_integral_value())


def _fmt(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def generate(src: Path, dst: Path, size_mb: float, gz: bool, epoch: bool = False) -> tuple[int, int]:
    """Write a Kineto-style trace of about `size_mb` MB (uncompressed) built from `src`; returns
    (events written, copies of the source). With `epoch`, `ts` is absolute (see the docstring)."""
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
    if epoch:
        header.pop("baseTimeNanoseconds", None)
    else:
        header["baseTimeNanoseconds"] = base
    origin = base if epoch else 0
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
                        s.append(_fmt(origin + rel + shift))
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


def _json_mb(path: Path) -> float:
    """MB of JSON text in `path` (decompressed, for a gzip file)."""
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    if not gz:
        return path.stat().st_size / 1e6
    n = 0
    with gzip.open(path, "rb") as f:
        while block := f.read(1 << 24):
            n += len(block)
    return n / 1e6


def child_env(workdir: Path) -> dict[str, str]:
    """The children's environment: bytecode written and read under `workdir` (see the module
    docstring)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
    return env


def warm_up(setup: str, path: Path, workdir: Path, python: str, extra: tuple[str, ...] = ()) -> None:
    """Run a child's setup once, unmeasured, so that the measured children find bytecode."""
    proc = subprocess.run([python, "-c", setup, str(path), *extra], cwd=REPO, env=child_env(workdir),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()
        raise SystemExit(f"warm-up import failed (exit {proc.returncode}): {tail[-1] if tail else python}")


def run_child(code: str, path: Path, workdir: Path, python: str = sys.executable,
              extra: tuple[str, ...] = ()) -> tuple[float, float, float, float, str]:
    """(seconds inside the load call, CPU seconds inside the load call, peak RSS in MB, CPU
    seconds of the whole child, summary)."""
    out_p, err_p = workdir / "child.out", workdir / "child.err"
    with open(out_p, "w") as out, open(err_p, "w") as err:
        proc = subprocess.Popen([python, "-c", code, str(path), *extra], stdout=out, stderr=err, cwd=REPO,
                                env=child_env(workdir))
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = out_p.read_text()
    line = next((l for l in text.splitlines() if l.startswith("RESULT")), None)
    if proc.returncode != 0 or line is None:
        tail = err_p.read_text().strip().splitlines()
        raise SystemExit(f"child failed (exit {proc.returncode}): {tail[-1] if tail else text}")
    _, seconds, cpu, summary = line.split(" ", 3)
    return float(seconds), float(cpu), usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime, summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=300.0, help="uncompressed size of the generated trace (default 300)")
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="corpus Kineto trace to replicate")
    ap.add_argument("--gzip", action="store_true", help="write and load .json.gz")
    ap.add_argument("--epoch-ns", action="store_true", help="absolute Unix-epoch ts with ns digits, no baseTimeNanoseconds")
    ap.add_argument("--repeat", type=int, default=1, help="runs per loader (median reported)")
    ap.add_argument("--skip-hta", action="store_true", help="profaudit only (HTA needs ~7x the file size in memory)")
    ap.add_argument("--keep", type=Path, help="write the generated trace here and keep it")
    ap.add_argument("--trace", type=Path, help="load this trace (written earlier with --keep) instead of generating one")
    ap.add_argument("--hta-python", default=os.environ.get("HTA_PYTHON", sys.executable),
                    help="interpreter with holistictraceanalysis installed (default: $HTA_PYTHON, else this one)")
    ap.add_argument("--baseline-parser", type=Path, help="another chrome_trace.py to load the trace with, in the same run")
    args = ap.parse_args(argv)
    if not args.source.is_file():
        raise SystemExit(f"no source trace at {args.source}; pass --source")
    if args.baseline_parser is not None and not args.baseline_parser.is_file():
        raise SystemExit(f"no parser module at {args.baseline_parser}")
    if args.trace is not None and not args.trace.is_file():
        raise SystemExit(f"no trace at {args.trace}")
    with tempfile.TemporaryDirectory(prefix="bench_trace_") as tmp:
        tmp = Path(tmp)
        if args.trace is not None:
            path = args.trace
            size = path.stat().st_size
            raw_mb = _json_mb(path)
            print(f"trace: {path}, {size / 1e6:.1f} MB on disk ({raw_mb:.0f} MB of JSON), as written earlier")
        else:
            path = args.keep or tmp / ("trace.json.gz" if args.gzip else "trace.json")
            n_events, copies = generate(args.source, path, args.size_mb, args.gzip, args.epoch_ns)
            size = path.stat().st_size
            raw_mb = args.size_mb if args.gzip else size / 1e6
            print(f"trace: {path.name}, {size / 1e6:.1f} MB on disk (~{raw_mb:.0f} MB of JSON), {n_events:,} events "
                  f"({copies} copies of {args.source.name}{', epoch-ns timestamps' if args.epoch_ns else ''})")
        loaders = [("profaudit", PROFAUDIT_SETUP, PROFAUDIT_CHILD, sys.executable, ())]
        if args.baseline_parser is not None:
            loaders.append(("baseline", PROFAUDIT_SETUP, PROFAUDIT_CHILD, sys.executable, (str(args.baseline_parser.resolve()),)))
        if not args.skip_hta:
            loaders.append(("hta", HTA_SETUP, HTA_CHILD, args.hta_python, ()))
        for name, setup, code, python, extra in loaders:
            warm_up(setup, path, tmp, python, extra)
        results = {}
        for _ in range(args.repeat):  # loaders interleaved, so a change in the machine's load hits all of them
            for name, setup, code, python, extra in loaders:
                results.setdefault(name, []).append(run_child(code, path, tmp, python, extra))
        med = {}
        for name, runs in results.items():
            t, c = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
            m, cc = max(r[2] for r in runs), statistics.median(r[3] for r in runs)
            med[name] = (t, c, m, cc)
            print(f"{name:10s} load {t:7.2f} s wall {raw_mb / t:7.1f} MB/s | {c:6.2f} s CPU = {c / (raw_mb / 1000):5.2f} CPU-s/GB "
                  f"({raw_mb / c:6.1f} MB/s of CPU time) | "
                  f"peak RSS {m:6.0f} MB  whole-child CPU {cc:6.2f} s  ({runs[-1][4]})")
        load = os.getloadavg()[0]
        (pt, pc, pm, pcc) = med["profaudit"]
        cores = os.cpu_count() or 1
        # what the wall time would be with the load call's CPU time spread evenly over every core
        # and nothing else running: the wall rate a quiet machine cannot beat without less CPU
        print(f"profaudit CPU time / {cores} cores = {pc / cores:.2f} s: {raw_mb * cores / pc:.1f} MB/s of wall time at best "
              "on an idle machine")
        best = raw_mb * cores / pc
        print(f"goal >= {GOAL_RATE:g} MB/s of wall time: measured {raw_mb / pt:.1f} MB/s "
              f"({'met' if raw_mb / pt >= GOAL_RATE else 'NOT met'} at load {os.getloadavg()[0]:.1f}); at this CPU time an idle "
              f"{cores}-core machine reaches {best:.1f} MB/s at best ({'within reach' if best >= GOAL_RATE else 'NOT reachable'}: "
              f"needs <= {cores * 1000 / GOAL_RATE:.1f} CPU-s/GB, this run {pc / (raw_mb / 1000):.2f})")
        if "baseline" in med:
            bt, bc, bm, bcc = med["baseline"]
            print(f"baseline/profaudit: CPU time {bc / pc:.2f}x, wall time {bt / pt:.2f}x, whole-child CPU {bcc / pcc:.2f}x, "
                  f"peak RSS {pm / bm:.2f}x of the baseline's")
        if "hta" in med:
            ht, hc, hm, hcc = med["hta"]
            tr, cr, mr = ht / pt, hc / pc, pm / hm
            print(f"time ratio HTA/profaudit = {tr:.2f}x (goal >= {GOAL_TIME:g}x: {'met' if tr >= GOAL_TIME else 'NOT met'})")
            print(f"CPU-time ratio HTA/profaudit = {cr:.2f}x (goal >= {GOAL_TIME:g}x: {'met' if cr >= GOAL_TIME else 'NOT met'}); "
                  f"whole child, interpreter start-up and imports included: {hcc / pcc:.2f}x")
            print(f"memory ratio profaudit/HTA = {mr:.3f} (goal <= {GOAL_MEM:g}: {'met' if mr <= GOAL_MEM else 'NOT met'})")
        print(f"load average during the run: {load:.1f} on {os.cpu_count()} CPUs (wall-time ratios shrink on a busy machine: "
              "profaudit decodes on several threads, HTA on one)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
