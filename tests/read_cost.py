"""The Python work and peak memory of one parser read, measured in a fresh interpreter (the size
blow-up tests of ncu-csv, nvprof-csv and pyperf): Python calls counted with sys.setprofile, which
does not depend on the machine's speed, and ru_maxrss before and after the read."""

from __future__ import annotations

import json
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
    path = Path(sys.argv[1])
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    calls = [0]
    def count(frame, event, arg):
        calls[0] += 1
    sys.setprofile(count)
    p = mod.{call}
    sys.setprofile(None)
    print(json.dumps({{"calls": calls[0], "base_kb": base, "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      "rows": p.tables[{table!r}].height}}))
    """
)


def read_cost(path: Path, module: str, table: str, call: str = "PARSER.read(path, ReadOptions())") -> dict:
    """`calls`, `base_kb`, `peak_kb` and the height of `table` (`rows`) for `profaudit.parsers.<module>.<call>`."""
    code = _CHILD.format(module=module, call=call, table=table)
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])
