"""Checked reads of values from parsed JSON: a wrong type or an out-of-range number becomes one
InputError line naming the field and what was expected, instead of an AttributeError or TypeError
deep inside a parser (seen when fuzzing: a list where a name was, a mapping as a time unit,
1e308 as a duration, strings among timing samples)."""

from __future__ import annotations

import math
from typing import Any

from profaudit.errors import InputError

_INT64 = 2**63


def kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int) and not -_INT64 <= v < _INT64:  # repr of an integer over 4,300 digits raises
        if v.bit_length() > 14000:
            return "the number of over 4,000 digits"
        return f"the number {str(v)[:20]}... ({len(str(v))} digits)"
    if isinstance(v, (int, float)):
        return f"the number {v!r}"[:60]
    if isinstance(v, str):
        return f"the text {v[:30]!r}"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


def mapping(v: Any, where: str, path, *, optional: bool = False) -> dict:
    """`v` as a JSON object ({} for a missing optional one)."""
    if v is None and optional:
        return {}
    if not isinstance(v, dict):
        raise InputError(path, f"{where}: expected a JSON object, found {kind(v)}")
    return v


def text(v: Any, where: str, path, *, optional: bool = True, numbers: bool = True) -> str | None:
    """`v` as text: numbers are written out (names like 128 are common) unless `numbers=False`
    (a file path, a key), lists and objects refused."""
    if v is None and optional:
        return None
    if isinstance(v, str):
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:  # JSON's "\ud800": a lone surrogate no file or table can hold
            raise InputError(path, f"{where}: not valid Unicode text ({v[:30]!r})") from None
        return v
    if numbers and isinstance(v, (int, float)) and not isinstance(v, bool) and not (isinstance(v, int) and not -_INT64 <= v < _INT64):
        return str(v)
    raise InputError(path, f"{where}: expected text, found {kind(v)}")


def number(v: Any, where: str, path, *, optional: bool = True) -> float | None:
    """`v` as a finite float (numeric text accepted); None stays None where optional."""
    if v is None and optional:
        return None
    if isinstance(v, str):
        try:
            f = float(v)
        except ValueError:
            raise InputError(path, f"{where}: expected a number, found {kind(v)}") from None
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        try:
            f = float(v)
        except OverflowError:
            raise InputError(path, f"{where}: the number {str(v)[:30]} is out of range") from None
    else:
        raise InputError(path, f"{where}: expected a number, found {kind(v)}")
    if not math.isfinite(f):
        raise InputError(path, f"{where}: expected a finite number, found {kind(v)}")
    return f


def finite(v: Any) -> float | None:
    """`v` as a finite float when it is a JSON number, else None (text, booleans, NaN, infinities
    and integers beyond float range are no value, not an error)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:  # an integer beyond any float
        return None
    return f if math.isfinite(f) else None


def int64(v: Any, where: str, path, *, optional: bool = True) -> int | None:
    """`v` as an integer that fits Int64 (integral floats accepted)."""
    if v is None and optional:
        return None
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        v = int(v)
    if not isinstance(v, int) or isinstance(v, bool):
        raise InputError(path, f"{where}: expected an integer, found {kind(v)}")
    if not -_INT64 <= v < _INT64:
        raise InputError(path, f"{where}: the integer {v} is out of range (beyond 64 bits)")
    return v


def max_depth(chunks, limit: int) -> int:
    """The deepest [ / { nesting of a JSON text given as byte chunks, outside strings, stopping as
    soon as it passes `limit`. Vectorised (numpy, over the few structural bytes only) so that a large
    file costs milliseconds per MB: a damaged file nested thousands deep is refused before a parser
    spends seconds (or its recursion limit) on it."""
    scan = DepthScan()
    for chunk in chunks:
        if scan.feed(chunk) > limit:
            break
    return scan.deepest


class DepthScan:
    """max_depth's scan fed one chunk at a time, for a reader that already holds each chunk on its
    way to the parser (rocprof_sdk's stream wrapper): the check costs no read of its own."""

    def __init__(self) -> None:
        import numpy as np

        self._np = np
        self._table = np.zeros(256, dtype=np.int8)  # +1 open, -1 close, 2 quote
        self._table[[0x5B, 0x7B]], self._table[[0x5D, 0x7D]], self._table[0x22] = 1, -1, 2
        self.depth, self.inside, self.deepest, self.carry = 0, 0, 0, b""

    def feed(self, chunk: bytes) -> int:
        """Scan the next chunk; the deepest nesting seen so far."""
        np = self._np
        chunk = self.carry + chunk
        # escapes go first: pairs of backslashes, then an escaped quote (a run of backslashes cut by
        # the chunk's end waits for the next chunk, where it may pair or escape a quote)
        body = chunk.rstrip(b"\\")
        self.carry = chunk[len(body):]
        body = body.replace(b"\\\\", b"").replace(b'\\"', b"")
        if not body:
            return self.deepest
        c = self._table[np.frombuffer(body, dtype=np.uint8)]
        c = c[c != 0]
        if not c.size:
            return self.deepest
        quote = c == 2
        par = (np.cumsum(quote, dtype=np.int64) + self.inside) & 1  # 1: inside a string
        step = np.where(quote | (par == 1), 0, c).astype(np.int64)
        d = self.depth + np.cumsum(step)
        self.deepest = max(self.deepest, int(d.max()))
        self.depth, self.inside = int(d[-1]), int(par[-1])
        return self.deepest
