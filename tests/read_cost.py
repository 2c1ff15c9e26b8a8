"""The Python work and peak memory of one parser read, measured in a fresh interpreter (the size
blow-up tests of ncu-csv, nvprof-csv, pyperf, rocprofv3-csv and API range nesting): Python calls counted with sys.setprofile, which
does not depend on the machine's speed, and the peak RSS before and after the read (VmHWM: ru_maxrss
survives execve, so the child's would start at the pytest process's own peak and a read that stays
below it would seem to take nothing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_CHILD = textwrap.dedent(
    """
    import json, resource, sys
    from pathlib import Path
    from profaudit.parsers import {module} as mod
    from profaudit.parsers.base import ReadOptions
    def peak_kb():
        try:
            with open("/proc/self/status") as fh:
                return next(int(l.split()[1]) for l in fh if l.startswith("VmHWM:"))
        except (OSError, StopIteration):
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    path = Path(sys.argv[1])
    base = peak_kb()
    calls = [0]
    def count(frame, event, arg):
        calls[0] += 1
    sys.setprofile(count)
    p = mod.{call}
    sys.setprofile(None)
    print(json.dumps({{"calls": calls[0], "base_kb": base, "peak_kb": peak_kb(),
                      "rows": p.tables[{table!r}].height}}))
    """
)


def read_cost(path: Path, module: str, table: str, call: str = "PARSER.read(path, ReadOptions())") -> dict:
    """`calls`, `base_kb`, `peak_kb` and the height of `table` (`rows`) for `profaudit.parsers.<module>.<call>`."""
    code = _CHILD.format(module=module, call=call, table=table)
    # The peak must be the read's live bytes, not the machine's: polars' jemalloc returns freed pages
    # on a timer (dirty/muzzy decay), so how much was purged before the peak depended on the machine's
    # speed and load (one read's growth ranged 108-184 MB over 5 runs at load 20); with decay at 0
    # every run agrees to 1 MB. Its thread count is the core count unless set, and the streaming
    # engine holds batches in flight per thread (122 MB grown on 2 threads, 141 on 32): pinned too.
    # pyarrow's CPU pool (column decoding in iter_batches, Parquet reads) is sized by the cores too,
    # unless OMP_NUM_THREADS says otherwise (review F18-11)
    env = {**os.environ, "POLARS_MAX_THREADS": "2", "OMP_NUM_THREADS": "2", "_RJEM_MALLOC_CONF": "dirty_decay_ms:0,muzzy_decay_ms:0"}
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=REPO, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])
