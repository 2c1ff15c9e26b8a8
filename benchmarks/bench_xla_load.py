"""Reading XSpace profiles: profaudit's pure-Python wire decoder against jax's C++ reader
(`jax.profiler.ProfileData`), measured in the same run on the same bytes.

Input: the largest usable xplane.pb of ../shared/corpus/xplane (a TensorFlow multi-GPU profile,
~23k events), repeated N times back to back (concatenated serialized messages are one valid XSpace
with N times the planes), so the scaling with profile size shows.

Measured:
- "decode": `decode_xspace` (every plane, line, event and stat into columnar lists) against
  `ProfileData.from_serialized_xspace` plus a loop that touches every event's name, start,
  duration and stats (the least a consumer of ProfileData does);
- "tables": the whole parser (`space_to_tables`: kernels, ranges, transfers, counters, metrics).

    .venv/bin/python benchmarks/bench_xla_load.py [--repeat 3] [--scale 1 4 16]
"""

from __future__ import annotations

import argparse
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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scale", type=int, nargs="+", default=[1, 4, 16])
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from jax.profiler import ProfileData

    from profaudit.parsers.xspace import decode_xspace
    from profaudit.parsers.xplane import space_to_tables

    files = sorted((p for p in CORPUS.glob("*.xplane.pb") if "tpu_inference_2" not in p.name), key=lambda p: p.stat().st_size)
    if not files:
        print(f"no corpus xplane files under {CORPUS}")
        return 0
    base = files[-1].read_bytes()

    def touch(pd):
        n = 0
        for plane in pd.planes:
            for line in plane.lines:
                for e in line.events:
                    _ = (e.name, e.start_ns, e.duration_ns, list(e.stats))
                    n += 1
        return n

    print(f"input: {files[-1].name} ({len(base) / 1e6:.1f} MB) x scale; best of {a.repeat}")
    print(f"{'scale':>5} {'MB':>7} {'events':>9} {'ours decode s':>14} {'ProfileData s':>14} {'ratio':>6} {'ours tables s':>14}")
    for s in a.scale:
        buf = base * s
        events = touch(ProfileData.from_serialized_xspace(buf))
        t_ours = best(lambda: decode_xspace(buf), a.repeat)
        t_cpp = best(lambda: touch(ProfileData.from_serialized_xspace(buf)), a.repeat)
        t_tab = best(lambda: space_to_tables(decode_xspace(buf)), a.repeat)
        print(f"{s:>5} {len(buf) / 1e6:>7.1f} {events:>9} {t_ours:>14.3f} {t_cpp:>14.3f} {t_ours / t_cpp:>6.2f} {t_tab:>14.3f}")
    print("ratio = ours / ProfileData (below 1: faster than jax's C++ reader plus a Python pass over its events)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
