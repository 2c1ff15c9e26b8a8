"""A small protobuf wire-format reader (no generated classes, no protoc, no `protobuf` package).

Messages are decoded from their field numbers, one field at a time: the small messages nested in
profiles (HloProto, MemoryAccessBreakdown, ProfileOptions, Nsight Compute report sections) and the
few big messages of an XSpace, whose millions of events and stats `xspace.py` then decodes
column-wise with numpy. Everything here works on one immutable `bytes` buffer and integer offsets,
so a sub-message is never copied before it is needed, and every length is checked against its
enclosing message: a file mangled by a text conversion or cut short raises `WireError` with the
byte offset, never an IndexError deep inside a parser.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")

TWO_63 = 1 << 63
TWO_64 = 1 << 64

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message (truncated, overrun, bad wire type)."""

    def __init__(self, offset: int, problem: str):
        self.offset = offset
        self.problem = problem
        super().__init__(f"{problem} at byte {offset}")


def varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """Decode one base-128 varint at `pos`; return (value, next position)."""
    result = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise WireError(start, "varint runs past the end of its message")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise WireError(start, "varint longer than 10 bytes")


def signed64(v: int) -> int:
    """A varint read as int64 (two's complement over 64 bits)."""
    return v - TWO_64 if v >= TWO_63 else v


def iter_fields(buf: bytes, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int, object]]:
    """Yield (field number, wire type, value) for every field of the message in buf[start:end].

    Varints come back as unsigned ints, fixed64/fixed32 as raw unsigned ints, and length-delimited
    fields as a `(start, end)` pair of offsets into `buf` (checked to lie inside the message).
    Groups (wire types 3/4, unused by proto3) are rejected as corruption.
    """
    if end is None:
        end = len(buf)
    pos = start
    while pos < end:
        key, pos = varint(buf, pos, end)
        field, wt = key >> 3, key & 7
        if field == 0:
            raise WireError(pos, "field number 0")
        if wt == VARINT:
            v, pos = varint(buf, pos, end)
            yield field, wt, v
        elif wt == LEN:
            n, pos = varint(buf, pos, end)
            if pos + n > end:
                raise WireError(pos, f"field {field} claims {n} bytes but only {end - pos} remain")
            yield field, wt, (pos, pos + n)
            pos += n
        elif wt == FIXED64:
            if pos + 8 > end:
                raise WireError(pos, "fixed64 runs past the end of its message")
            yield field, wt, _U64.unpack_from(buf, pos)[0]
            pos += 8
        elif wt == FIXED32:
            if pos + 4 > end:
                raise WireError(pos, "fixed32 runs past the end of its message")
            yield field, wt, _U32.unpack_from(buf, pos)[0]
            pos += 4
        else:
            raise WireError(pos, f"wire type {wt} (field {field}) is not valid here")


def decode(buf: bytes, start: int = 0, end: int | None = None) -> dict[int, list]:
    """Every field of one message, grouped by field number (repeated fields keep their order).

    The same fields, values and errors (offsets, messages) as grouping `iter_fields`, in one loop:
    a one-byte key, varint or length (nearly every one) is read in place, longer ones by `varint`.
    The generator and a `varint` call per number were most of the CPU of reading an Nsight Compute
    report's framing and session facts (messages of hundreds of fields decoded whole, to check them)."""
    if end is None:
        end = len(buf)
    out: dict[int, list] = {}
    pos = start
    while pos < end:
        key = buf[pos]
        if key < 0x80:
            pos += 1
        else:
            key, pos = varint(buf, pos, end)
        field, wt = key >> 3, key & 7
        if field == 0:
            raise WireError(pos, "field number 0")
        if wt == VARINT:
            if pos < end and buf[pos] < 0x80:
                v = buf[pos]
                pos += 1
            else:
                v, pos = varint(buf, pos, end)
        elif wt == LEN:
            if pos < end and buf[pos] < 0x80:
                n = buf[pos]
                pos += 1
            else:
                n, pos = varint(buf, pos, end)
            if pos + n > end:
                raise WireError(pos, f"field {field} claims {n} bytes but only {end - pos} remain")
            v = (pos, pos + n)
            pos += n
        elif wt == FIXED64:
            if pos + 8 > end:
                raise WireError(pos, "fixed64 runs past the end of its message")
            v = _U64.unpack_from(buf, pos)[0]
            pos += 8
        elif wt == FIXED32:
            if pos + 4 > end:
                raise WireError(pos, "fixed32 runs past the end of its message")
            v = _U32.unpack_from(buf, pos)[0]
            pos += 4
        else:
            raise WireError(pos, f"wire type {wt} (field {field}) is not valid here")
        got = out.get(field)
        if got is None:
            out[field] = [v]
        else:
            got.append(v)
    return out


def text(buf: bytes, span: tuple[int, int]) -> str:
    # some writers (2019-era ncu) store C strings with their terminating NUL
    return buf[span[0] : span[1]].decode("utf-8", errors="replace").rstrip("\x00")
