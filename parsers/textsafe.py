"""Text from JSON documents in a form polars, Parquet and JSON writers accept.

JSON may spell a lone UTF-16 surrogate (`"\\ud800"`); Python's json module returns it as is, and
polars (and UTF-8 encoding generally) refuse such strings, so one damaged name or metadata value
would fail the whole profile after it was read. `clean()` replaces each lone surrogate with U+FFFD
(the replacement character) everywhere in a parsed document; valid text is returned unchanged.
"""

from __future__ import annotations

import re
from typing import Any

_LONE = re.compile(r"[\ud800-\udfff]")


def clean(obj: Any) -> Any:
    if isinstance(obj, str):
        return _LONE.sub("\ufffd", obj) if _LONE.search(obj) else obj
    if isinstance(obj, dict):
        return {clean(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [clean(v) for v in obj]
    return obj
