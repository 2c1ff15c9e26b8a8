"""Reading XSpace profiles: profaudit's column-wise (numpy) XSpace decoder and table builder against
jax's C++ reader (`jax.profiler.ProfileData`), measured in the same run on the same bytes.

Input: the largest usable xplane.pb of ../shared/corpus/xplane (a TensorFlow multi-GPU profile,
~23k events), repeated N times back to back (concatenated serialized messages are one valid XSpace
with N times the planes), so the scaling with profile size shows.

Measured (best of --repeat):
- "decode": `decode_xspace` (every plane, line, event and stat into columns);
- "decode+tables": the whole parser (`space_to_tables(decode_xspace(...))`: kernels, ranges with
  nesting, transfers, counters, metrics);
- baseline, for both ratios: `ProfileData.from_serialized_xspace` plus a loop that touches every
  event's name, start, duration and stats (the least a consumer of ProfileData does);
- memory: the peak resident growth of one read in a fresh, warmed-up process (the file's bytes
  already read), ours (decode+tables) and the baseline's, next to the size of the tables built.

    .venv/bin/python benchmarks/bench_xla_load.py [--repeat 3] [--scale 1 4 16] [--no-memory]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "xplane"


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def _input() -> Path | None:
    files = sorted((p for p in CORPUS.glob("*.xplane.pb") if "tpu_inference_2" not in p.name), key=lambda p: p.stat().st_size)
    return files[-1] if files else None


def _status_bytes(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def _memory_child(reader: str, scale: int) -> None:
    """Run in a fresh process, warmed up on the unscaled file: the peak resident growth of one
    read (ours: decode+tables; ProfileData: parse plus the pass over its events). Linux only."""
    sys.path.insert(0, str(ROOT))
    base = _input().read_bytes()
    if reader == "ours":
        from profaudit.parsers.xplane import space_to_tables
        from profaudit.parsers.xspace import decode_xspace

        def read(b: bytes) -> int:
            tables, _ = space_to_tables(decode_xspace(b))
            return sum(t.estimated_size() for t in tables.values() if t is not None)
    else:
        from jax.profiler import ProfileData

        def read(b: bytes) -> int:
            _touch(ProfileData.from_serialized_xspace(b))
            return 0

    read(base)
    buf = base * scale
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # restart the peak (VmHWM) from the current resident size
    before = _status_bytes("VmRSS")
    size = read(buf)
    print(json.dumps({"peak_growth": max(0, _status_bytes("VmHWM") - before), "tables": size}))


def _memory(reader: str, scale: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--memory-child", reader, str(scale)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _touch(pd) -> int:
    n = 0
    for plane in pd.planes:
        for line in plane.lines:
            for e in line.events:
                _ = (e.name, e.start_ns, e.duration_ns, list(e.stats))
                n += 1
    return n


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scale", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--no-memory", action="store_true", help="skip the peak-memory runs")
    ap.add_argument("--memory-child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.memory_child:
        _memory_child(a.memory_child[0], int(a.memory_child[1]))
        return 0
    sys.path.insert(0, str(ROOT))
    from jax.profiler import ProfileData
    from profaudit.parsers.xplane import space_to_tables
    from profaudit.parsers.xspace import decode_xspace

    path = _input()
    if path is None:
        print(f"no corpus xplane files under {CORPUS}")
        return 0
    base = path.read_bytes()

    print(f"input: {path.name} ({len(base) / 1e6:.1f} MB) x scale; best of {a.repeat}")
    head = f"{'scale':>5} {'MB':>7} {'events':>9} {'ProfileData s':>14} {'decode s':>9} {'ratio':>6} {'decode+tables s':>16} {'ratio':>6}"
    if not a.no_memory:
        head += f" {'peak MB':>8} {'PD peak MB':>11} {'tables MB':>10}"
    print(head)
    # one untimed read of each first: imports and first-use setup are not what is measured
    _touch(ProfileData.from_serialized_xspace(base))
    space_to_tables(decode_xspace(base))
    for s in a.scale:
        buf = base * s
        events = _touch(ProfileData.from_serialized_xspace(buf))
        t_cpp = best(lambda b=buf: _touch(ProfileData.from_serialized_xspace(b)), a.repeat)
        t_dec = best(lambda b=buf: decode_xspace(b), a.repeat)
        t_all = best(lambda b=buf: space_to_tables(decode_xspace(b)), a.repeat)
        row = f"{s:>5} {len(buf) / 1e6:>7.1f} {events:>9} {t_cpp:>14.3f} {t_dec:>9.3f} {t_dec / t_cpp:>6.2f} {t_all:>16.3f} {t_all / t_cpp:>6.2f}"
        if not a.no_memory:
            ours, theirs = _memory("ours", s), _memory("profiledata", s)
            row += f" {ours['peak_growth'] / 1e6:>8.0f} {theirs['peak_growth'] / 1e6:>11.0f} {ours['tables'] / 1e6:>10.0f}"
        print(row)
    print("ratio = ours / ProfileData (jax's C++ reader plus a Python pass over its events); below 1: ours is faster")
    if not a.no_memory:
        print("peak MB = resident growth of one read in a warmed-up process, the file's bytes already in memory "
              "(ours: decode + tables; PD: ProfileData + the pass); tables MB = the size of the tables built")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
