"""Build the native trace reader with AddressSanitizer + UndefinedBehaviorSanitizer and sweep it.

The build goes to a temporary folder (the installed extension is left alone), with malloc instead
of mmap for its buffers (-DTRACE_READER_MALLOC) so that ASan sees every overrun. The sweep runs the
corpus chrome traces' chunks and `--mutants` chunks mutated by the fuzz suite's mutators (plus cut
prefixes of every tenth) through it, against every chrome-trace schema; a sanitizer report aborts
the run (exit status not 0). Python itself is not instrumented: the sanitizer runtimes are
preloaded.

    .venv/bin/python tools/sanitize_trace_reader.py --mutants 3000 --seed 1
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SWEEP = r'''
import gzip, importlib.util, random, sys, time
from pathlib import Path
spec_ = importlib.util.spec_from_file_location("_trace_reader", sys.argv[1])
mod = importlib.util.module_from_spec(spec_); spec_.loader.exec_module(mod)
sys.path.insert(0, sys.argv[4])
from profaudit.parsers import chrome_trace as ct, jsonstream, trace_native
from tests.fuzz import mutators
specs = [trace_native._prepare(s)[0] for s in (*ct.SCHEMAS.values(), {**ct.SCHEMAS["kineto"], "ts": ct.STR})]
def unpacked(p):
    raw = p.read_bytes()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
chunks = []
for p in sorted(Path(sys.argv[5]).glob("*.json*")):
    text = unpacked(p)
    if ct.sniff_trace(text[:65536]):
        walker = jsonstream.TraceWalker(p, 4 << 10 if len(text) < (1 << 20) else 256 << 10)
        chunks += [it[1] for it in walker if it[0] == "events"]
stats = {"answered": 0, "declined": 0}
def run(data):
    for sp in specs:
        try:
            mod.scan(data, sp); stats["answered"] += 1
        except mod.Unsupported:
            stats["declined"] += 1
t = time.time()
for c in chunks:
    run(c)
print(f"corpus: {len(chunks)} chunks x {len(specs)} schemas: {stats}", flush=True)
rng = random.Random(int(sys.argv[2]))
small = [c for c in chunks if len(c) < 64 << 10] or [b'[{"ph":"X","name":"k","ts":1.5,"args":{"grid":[1,2,3]}}]']
ops = [*mutators.BYTE_MUTATORS, mutators.mutate_json, mutators.mutate_json_wide]
stats = {"answered": 0, "declined": 0}
for i in range(int(sys.argv[3])):
    data = rng.choice(small)
    for _ in range(rng.randint(1, 3)):
        try:
            m = rng.choice(ops)(data, rng)
        except Exception:
            m = None
        data = m.data if m is not None else data
    run(data)
    if i % 10 == 0:
        for k in range(1, 6):
            run(data[:-k])
# the shared zero blocks of all-null columns, and the count of column memory still handed out
# (every result above was dropped: a count left over is a leak or a miscount)
for n in (0, 1, 4095, 1 << 20):
    z = memoryview(mod.zeros(n))
    assert len(z) == n and z.tobytes().count(0) == n, n
assert mod.live_bytes() == 0, f"live_bytes {mod.live_bytes()} after every column was dropped"
print(f"mutated: {sys.argv[3]} inputs: {stats} in {time.time() - t:.0f} s; zeros/live_bytes ok; no sanitizer report", flush=True)
'''


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mutants", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--corpus", type=Path, default=Path(os.environ.get("PROFAUDIT_CORPUS", ROOT.parent / "shared" / "corpus")) / "chrome-trace")
    args = ap.parse_args(argv)
    cc = os.environ.get("CC", "gcc")
    runtimes = [subprocess.run([cc, f"-print-file-name={lib}"], capture_output=True, text=True).stdout.strip()
                for lib in ("libasan.so", "libubsan.so")]
    if not all(os.path.isabs(r) for r in runtimes):
        print(f"{cc} has no sanitizer runtimes (libasan/libubsan)")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        so = Path(tmp) / ("_trace_reader" + sysconfig.get_config_var("EXT_SUFFIX"))
        subprocess.run([cc, "-O1", "-g", "-DTRACE_READER_MALLOC", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
                        "-fno-sanitize-recover=undefined", "-shared", "-fPIC", "-I" + sysconfig.get_paths()["include"],
                        str(ROOT / "parsers" / "_trace_reader.c"), "-o", str(so)], check=True)
        env = {**os.environ, "LD_PRELOAD": " ".join(runtimes), "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1"}
        out = subprocess.run([sys.executable, "-c", SWEEP, str(so), str(args.seed), str(args.mutants), str(ROOT), str(args.corpus)],
                             env=env)
    return out.returncode


if __name__ == "__main__":
    sys.exit(main())
