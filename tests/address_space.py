"""Run one profaudit call in a child whose address space is capped (RLIMIT_AS) at its size once
everything is imported plus `room_mb`: where orjson, polars or the loaders meet an allocation that
fails (ulimit -v, strict overcommit), which must be one InputError line and never a segfault
(tests/test_orjson_room.py, tests/test_kineto_comms_room.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

_CHILD = textwrap.dedent(
    """
    import resource, sys
    import profaudit
    from profaudit.errors import ProfauditError
    {imports}

    def vsz():
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) * 1024 for l in fh if l.startswith("VmSize"))

    # the limit is set once everything is imported, so only the read meets it; the hard limit is
    # kept (a runner may set one, which only root could raise), and the cap stays under it
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    cap = vsz() + (int(sys.argv[2]) << 20)
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    try:
        print({call})
    except ProfauditError as exc:
        print(exc)
        sys.exit(2)
    """
)


def run_with_room(path, room_mb: int, call: str = "(profaudit.load(sys.argv[1]), 'loaded')[1]", imports: str = "") -> subprocess.CompletedProcess:
    """`call` (an expression of `sys.argv[1]`, the path) in a capped child: exit 2 and the line on
    stdout for a ProfauditError, else exit 0 and the call's value printed."""
    code = _CHILD.format(imports=imports, call=call)
    return subprocess.run([sys.executable, "-c", code, str(path), str(room_mb)], capture_output=True, text=True, timeout=300)


def refused_line(path, room_mb: int, imports: str = "import polars") -> str:
    """The line a capped child printed refusing `path` to `profaudit.load`, checked to be one
    InputError line that names the file (exit 2: no abort, no traceback, no load)."""
    out = run_with_room(path, room_mb, imports=imports)
    assert out.returncode == 2, (out.returncode, out.stdout[-500:], out.stderr[-2000:])
    line = out.stdout.strip()
    assert "\n" not in line and line.startswith(str(path) + ": "), line
    return line
