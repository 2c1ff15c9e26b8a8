"""Where an HTML report gets plotly.js: embedded, from the CDN, or from a shared file.

`embed` (the default) makes a report that works offline but carries 4.8 MB of plotly.js each;
`cdn` references cdn.plot.ly (the version of the installed plotly); `directory` references
`plotly.min.js` beside the report and writes that file once, so a folder of reports shares it.
"""

from __future__ import annotations

import os
from pathlib import Path

from profaudit.errors import UsageError

MODES = ("embed", "cdn", "directory")
BUNDLE = "plotly.min.js"


def check_mode(mode: str, output: str | os.PathLike | None, *, needs_file: bool = True) -> str:
    """Validate `--plotlyjs`; `directory` needs the report written to a file (the bundle goes
    beside it)."""
    if mode not in MODES:
        raise UsageError(f"--plotlyjs {mode!r}: choose one of {', '.join(MODES)}")
    if mode == "directory" and needs_file and output is None:
        raise UsageError("--plotlyjs directory writes plotly.min.js beside the report: give the report a file (--output)")
    return mode


def include_arg(mode: str) -> bool | str:
    """plotly's `include_plotlyjs` value for a mode."""
    check_mode(mode, None, needs_file=False)
    return {"embed": True, "cdn": "cdn", "directory": "directory"}[mode]


def ensure_bundle(mode: str, report: str | os.PathLike | None) -> Path | None:
    """For `directory`: write plotly.min.js beside `report` unless the same bundle is there."""
    if mode != "directory" or report is None:
        return None
    from plotly.offline import get_plotlyjs

    from profaudit.dataset import atomic_write_text

    target = Path(report).parent / BUNDLE
    js = get_plotlyjs()
    try:
        same = target.is_file() and target.stat().st_size == len(js.encode("utf-8")) and target.read_text(encoding="utf-8") == js
    except OSError:
        same = False
    if not same:
        atomic_write_text(target, js)
    return target
