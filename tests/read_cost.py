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
    # polars' thread count is the machine's core count unless set, and the streaming engine holds
    # batches in flight per thread: the same read grew 122 MB on 2 threads and 141 MB on 32 for the
    # same 9.7 MB added, and CI machines have more cores than this one. Pinned, the peak is the read's.
    env = {**os.environ, "POLARS_MAX_THREADS": "2"}
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=REPO, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])
