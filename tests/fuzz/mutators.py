"""Structure-aware mutators for fuzzing every parser's `read`.

Each mutator takes the seed's bytes and a `random.Random` and returns a `Mutant`: the new bytes,
a label saying what was done (kept with reproducers), and, for truncations, whether the cut
left a text file ending mid-line or a binary file short of its end (what the parser must then
notice: refuse, or load with `complete: false`).

Families: raw bytes (cuts, bit flips, extreme integers), JSON structure (type swaps, deletions,
deep nesting, huge and non-finite numbers), CSV cells and units, SQLite tables and rows, and
protobuf fields (varints and lengths set to 2^31, 2^32-1, 2^63, 2^64-1). gzip and zstd seeds are
decompressed, mutated and recompressed so the mutation reaches the parser, not just the CRC.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import random
import sqlite3
from dataclasses import dataclass

EXTREME_INTS = (0, 1, -1, 2**31 - 1, 2**31, 2**32 - 1, 2**63 - 1, 2**63, 2**64 - 1, 10**30)
EXTREME_TEXT = ("", " ", "nan", "inf", "-inf", "1e309", "-1e309", "NaN", "Infinity", "1e-400", "18446744073709551616", "-0",
                "999999999999999999999999", "\x00", "é", "\ufffd", "1,5", "--", "0x10", "1 us", "1 zs", "12:34")
EXTREME_JSON = (None, True, False, 0, -1, 2**63, 2**64, -2**63 - 1, 10**400, 1e308, float("inf"), float("-inf"), float("nan"),
                "", "x", "1e309", [], {}, [[]], {"": None}, [None] * 3, "\ud800")
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


@dataclass
class Mutant:
    data: bytes
    label: str
    # a cut that removed content a parser must notice (mid-line for text, any for binary)
    cut_incomplete: bool = False


def _is_text(data: bytes) -> bool:
    head = data[:4096]
    return b"\x00" not in head and (not head or sum(32 <= b < 127 or b in (9, 10, 13) for b in head) / len(head) > 0.9)


# --------------------------------------------------------------------------------------------
# bytes
# --------------------------------------------------------------------------------------------
def truncate(data: bytes, rng: random.Random) -> Mutant:
    if len(data) < 2:
        return Mutant(b"", "truncate to 0")
    text = _is_text(data)
    mode = rng.choice(["any", "line", "tail"]) if text else rng.choice(["any", "tail"])
    if mode == "line" and b"\n" in data[:-1]:
        # cut right after a newline: a shorter but well-formed text file
        nls = [i for i, b in enumerate(data[:-1]) if b == 10]
        cut = rng.choice(nls) + 1
    elif mode == "tail":
        cut = max(1, len(data) - rng.randint(1, min(64, len(data) - 1)))
    else:
        cut = rng.randint(1, len(data) - 1)
    out = data[:cut]
    if text:
        dropped = data[cut:]
        incomplete = bool(dropped.strip()) and not out.endswith(b"\n")
    else:
        incomplete = True
    return Mutant(out, f"truncate at {cut} of {len(data)} ({mode})", incomplete)


def bitflip(data: bytes, rng: random.Random) -> Mutant:
    if not data:
        return Mutant(b"\x00", "empty -> NUL")
    b = bytearray(data)
    n = rng.choice([1, 1, 2, 4, 16])
    where = []
    for _ in range(n):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
        where.append(i)
    return Mutant(bytes(b), f"bitflip at {where[:4]}")


def set_bytes(data: bytes, rng: random.Random) -> Mutant:
    if len(data) <= 8:
        return bitflip(data, rng)
    b = bytearray(data)
    i = rng.randrange(len(b) - 8)
    width = rng.choice([1, 2, 4, 8])
    v = rng.choice([0, 0xFF, 0x7F, 0x80])
    b[i : i + width] = bytes([v]) * width
    return Mutant(bytes(b), f"set {width} bytes at {i} to {v:#x}")


def splice(data: bytes, rng: random.Random) -> Mutant:
    """Delete, duplicate or insert a chunk."""
    if len(data) < 4:
        return bitflip(data, rng)
    i = rng.randrange(len(data))
    j = min(len(data), i + rng.randint(1, max(1, min(4096, len(data) // 4))))
    mode = rng.choice(["delete", "duplicate", "insert"])
    if mode == "delete":
        return Mutant(data[:i] + data[j:], f"delete [{i}:{j}]")
    if mode == "duplicate":
        return Mutant(data[:j] + data[i:j] + data[j:], f"duplicate [{i}:{j}]")
    junk = rng.choice([b"\x00" * 8, b"\xff" * 8, b"\n", b",", b'"', b"{", b"]", os.urandom(16)])
    return Mutant(data[:i] + junk + data[i:], f"insert {junk[:8]!r} at {i}")


BYTE_MUTATORS = (truncate, bitflip, set_bytes, splice)


# --------------------------------------------------------------------------------------------
# JSON (and JSON lines)
# --------------------------------------------------------------------------------------------
def _nodes(doc, path=()):
    yield path, doc
    if isinstance(doc, dict):
        for k, v in list(doc.items())[:200]:
            yield from _nodes(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:200]):
            yield from _nodes(v, path + (i,))


def _set(doc, path, value):
    if not path:
        return value
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = value
    return doc


_DEEP = "\x00deep\x00"


def _dumps(doc, label: str = "") -> tuple[bytes, str]:
    text = json.dumps(doc, allow_nan=True)
    if "\x00" in label:
        label, deep = label.split("\x00", 1)
        text = text.replace(json.dumps(_DEEP), deep, 1)
    return text.encode("utf-8", "surrogatepass"), label


def mutate_json_doc(doc, rng: random.Random):
    nodes = list(_nodes(doc))
    path, node = rng.choice(nodes)
    op = rng.choice(["replace", "replace", "delete", "nest", "grow", "swap_type"])
    if op == "delete" and path:
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        del parent[path[-1]]
        return doc, f"delete {list(path)[-3:]}"
    if op == "nest":
        # built as text after dumping (json.dumps itself would hit the recursion limit)
        depth = rng.choice([50, 1500, 5000])
        opener, closer = ("[", "]") if rng.random() < 0.5 else ('{"a":', "}")
        inner = json.dumps(node, allow_nan=True) if not isinstance(node, (dict, list)) else "0"
        return _set(doc, path, _DEEP), f"nest {depth} deep at {list(path)[-3:]}" + f"\x00{opener * depth}{inner}{closer * depth}"
    if op == "grow" and isinstance(node, list) and node:
        return _set(doc, path, node * rng.choice([2, 10, 100])), f"repeat list at {list(path)[-3:]}"
    if op == "swap_type":
        swapped = {dict: lambda v: list(v.values()), list: lambda v: {str(i): x for i, x in enumerate(v)}, str: lambda v: [v], int: str, float: str, bool: str}
        fn = swapped.get(type(node), lambda v: {"v": v})
        return _set(doc, path, fn(node)), f"swap type {type(node).__name__} at {list(path)[-3:]}"
    value = rng.choice(EXTREME_JSON)
    return _set(doc, path, value), f"set {list(path)[-3:]} = {value!r:.40}"


def mutate_json(data: bytes, rng: random.Random) -> Mutant | None:
    try:
        doc = json.loads(data)
    except ValueError:
        return mutate_jsonl(data, rng)
    doc, label = mutate_json_doc(doc, rng)
    data, label = _dumps(doc, label)
    return Mutant(data, "json: " + label)


def mutate_jsonl(data: bytes, rng: random.Random) -> Mutant | None:
    lines = data.split(b"\n")
    idx = [i for i, l in enumerate(lines) if l.strip()]
    if not idx:
        return None
    i = rng.choice(idx)
    try:
        doc = json.loads(lines[i])
    except ValueError:
        return None
    doc, label = mutate_json_doc(doc, rng)
    lines[i], label = _dumps(doc, label)
    return Mutant(b"\n".join(lines), f"jsonl line {i}: {label}")


# --------------------------------------------------------------------------------------------
# CSV / delimited text
# --------------------------------------------------------------------------------------------
def mutate_csv(data: bytes, rng: random.Random) -> Mutant | None:
    text = data.decode("utf-8", "replace")
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error:
        return None
    cells = [(i, j) for i, r in enumerate(rows) for j in range(len(r))]
    if not cells:
        return None
    op = rng.choice(["cell", "cell", "cell", "unit", "drop_col", "dup_rows", "drop_row"])
    i, j = rng.choice(cells)
    if op == "unit":
        units = ["ns", "us", "usec", "ms", "s", "Kbyte", "Gbyte/s", "%", "cycle", "", "zs", "furlong"]
        rows[i][j] = rng.choice(units)
        label = f"unit cell ({i},{j}) = {rows[i][j]!r}"
    elif op == "drop_col":
        for r in rows:
            if j < len(r):
                del r[j]
        label = f"drop column {j}"
    elif op == "dup_rows":
        k = rng.choice([2, 50, 1000])
        rows = rows[: i + 1] + [rows[i]] * k + rows[i + 1 :]
        label = f"repeat row {i} x{k}"
    elif op == "drop_row":
        del rows[i]
        label = f"drop row {i}"
    else:
        rows[i][j] = rng.choice(EXTREME_TEXT + tuple(str(v) for v in EXTREME_INTS))
        label = f"cell ({i},{j}) = {rows[i][j]!r}"
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return Mutant(out.getvalue().encode("utf-8", "surrogatepass"), "csv: " + label)


def mutate_lines(data: bytes, rng: random.Random) -> Mutant | None:
    """Whitespace-separated text (console tables, markdown): replace one token."""
    lines = data.split(b"\n")
    idx = [i for i, l in enumerate(lines) if l.split()]
    if not idx:
        return None
    i = rng.choice(idx)
    toks = lines[i].split(b" ")
    k = rng.randrange(len(toks))
    toks[k] = rng.choice(EXTREME_TEXT + ("|", "||", "ms", "ns", "us", "s")).encode()
    lines[i] = b" ".join(toks)
    return Mutant(b"\n".join(lines), f"line {i} token {k}")


# --------------------------------------------------------------------------------------------
# SQLite
# --------------------------------------------------------------------------------------------
def mutate_sqlite(data: bytes, rng: random.Random) -> Mutant | None:
    """Drop or rename a table or column, delete rows, set values to extremes: on the database
    deserialized in memory (no temporary file to write, fsync and unlink for every mutant)."""
    con = sqlite3.connect(":memory:")
    try:
        try:
            con.deserialize(data)
            tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        except (sqlite3.Error, UnicodeDecodeError):
            return None
        if not tables:
            return None
        t = rng.choice(tables)
        op = rng.choice(["drop", "delete", "value", "value", "value", "nulls", "rename"])
        try:
            cols = [r[1] for r in con.execute(f'PRAGMA table_info("{t}")')]
            c = rng.choice(cols) if cols else None
            if op == "drop":
                con.execute(f'DROP TABLE "{t}"')
                label = f"drop table {t}"
            elif op == "delete":
                con.execute(f'DELETE FROM "{t}" WHERE rowid % {rng.choice([1, 2, 7])} = 0')
                label = f"delete rows of {t}"
            elif op == "nulls" and c:
                con.execute(f'UPDATE "{t}" SET "{c}" = NULL')
                label = f"null {t}.{c}"
            elif op == "rename" and c:
                con.execute(f'ALTER TABLE "{t}" RENAME COLUMN "{c}" TO "{c}_x"')
                label = f"rename {t}.{c}"
            elif c:
                v = rng.choice([2**63 - 1, -(2**63), 2**31, -1, 0, 1e308, float("inf"), float("nan"), "text", "", b"\x00\xff", None])
                if isinstance(v, float) and v != v:
                    v = None  # sqlite stores NaN as NULL
                con.execute(f'UPDATE "{t}" SET "{c}" = ? WHERE rowid IN (SELECT rowid FROM "{t}" ORDER BY random() LIMIT {rng.choice([1, 5, 1000000])})', (v,))
                label = f"set {t}.{c} = {v!r:.30}"
            else:
                label = f"nothing in {t}"
            con.commit()
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            return Mutant(data, f"sqlite op failed: {exc}")
        return Mutant(con.serialize(), "sqlite: " + label)
    finally:
        con.close()


# --------------------------------------------------------------------------------------------
# protobuf wire format
# --------------------------------------------------------------------------------------------
def _varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _read_varint(data: bytes, pos: int, end: int) -> tuple[int, int] | None:
    """(value, position after it), or None when the varint runs past `end`."""
    v = shift = 0
    while pos < end:
        b = data[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, pos
    return None


def _scan_varints(data: bytes, start: int, end: int, out: list, depth: int = 0) -> None:
    """Spans (start, end, wire type) of varint fields and length prefixes in a protobuf message
    (best effort: stops where the bytes stop looking like protobuf)."""
    pos = start
    while pos < end and len(out) < 5000:
        tag = _read_varint(data, pos, end)
        if tag is None:
            return
        t, pos = tag
        wt = t & 7
        if t >> 3 == 0 or wt in (3, 4, 6, 7):
            return
        if wt in (0, 2):
            val = _read_varint(data, pos, end)
            if val is None:
                return
            v, after = val
            out.append((pos, after, wt))
            pos = after
            if wt == 2:
                if pos + v > end:
                    return
                if depth < 6 and v > 2:
                    _scan_varints(data, pos, pos + v, out, depth + 1)
                pos += v
        else:
            pos += 8 if wt == 1 else 4


def mutate_protobuf(data: bytes, rng: random.Random, start: int = 0) -> Mutant | None:
    """Set a varint field or a length prefix to an extreme value (re-encoded in place)."""
    spots: list = []
    _scan_varints(data, start, len(data), spots)
    if not spots:
        return None
    a, b, wt = rng.choice(spots)
    v = rng.choice(EXTREME_INTS[1:] if wt == 0 else (0, 1, 2**31, 2**32 - 1, 2**63, 2**64 - 1))
    return Mutant(data[:a] + _varint(v) + data[b:], f"protobuf {'length' if wt == 2 else 'varint'} at {a} = {v}")


def mutate_ncu_rep(data: bytes, rng: random.Random) -> Mutant | None:
    """Inside one block of an .ncu-rep (past its framing): protobuf fields of a header or result."""
    if data[:4] != b"NVR\x00" or len(data) < 16:
        return None
    import struct

    (hlen,) = struct.unpack_from("<I", data, 4)
    off = 8 + hlen
    entries = []
    while off + 4 <= len(data):
        (blen,) = struct.unpack_from("<I", data, off)
        entries.append((off + 4, off + 4 + blen))
        # payload entries
        pos = off + 4 + blen
        payload_end = len(data)
        k = 0
        while pos + 4 <= payload_end and k < 64:
            (elen,) = struct.unpack_from("<I", data, pos)
            if pos + 4 + elen > payload_end:
                break
            entries.append((pos + 4, pos + 4 + min(elen, 4096)))
            pos += 4 + elen
            k += 1
            if rng.random() < 0.3:
                break
        break_here = pos <= off
        off = pos if not break_here else len(data)
        if len(entries) > 200:
            break
    if not entries:
        return None
    a, b = rng.choice(entries)
    spots: list = []
    _scan_varints(data, a, b, spots)
    if not spots:
        return None
    s, e, wt = rng.choice(spots)
    v = rng.choice((2**31, 2**31 - 1, 2**32 - 1, 2**63, 2**64 - 1, 0))
    return Mutant(data[:s] + _varint(v) + data[e:], f"ncu-rep field at {s} ({'length' if wt == 2 else 'varint'}) = {v}")


# --------------------------------------------------------------------------------------------
# choosing
# --------------------------------------------------------------------------------------------
def structured_for(data: bytes, name: str):
    """The structure-aware mutators that fit this seed."""
    n = name.lower()
    if data.startswith(b"SQLite format 3"):
        return [mutate_sqlite]
    if data[:4] == b"NVR\x00":
        return [mutate_ncu_rep]
    if n.endswith((".pb", ".ntff", ".neff", ".hatchet")) and not _is_text(data):
        return [mutate_protobuf]
    if n.endswith(".pb"):
        return [mutate_protobuf]
    s = data.lstrip()[:1]
    if s in (b"{", b"["):
        return [mutate_json]
    if n.endswith((".csv", ".tsv")):
        return [mutate_csv, mutate_lines]
    if _is_text(data):
        return [mutate_csv, mutate_lines, mutate_jsonl]
    return [mutate_protobuf]


def _wrap(data: bytes) -> tuple[bytes, str]:
    if data[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(data), "gzip"
        except (OSError, EOFError):
            return data, ""
    if data[:4] == ZSTD_MAGIC:
        try:
            import zstandard

            return zstandard.ZstdDecompressor().decompress(data, max_output_size=1 << 30), "zstd"
        except Exception:
            return data, ""
    return data, ""


def _rewrap(data: bytes, how: str) -> bytes:
    if how == "gzip":
        return gzip.compress(data, compresslevel=1, mtime=0)
    if how == "zstd":
        import zstandard

        return zstandard.ZstdCompressor(level=1).compress(data)
    return data


def mutate(data: bytes, name: str, rng: random.Random) -> Mutant:
    """One mutant of a seed file's bytes: about half structure-aware, half raw bytes, inside the
    compression where the seed is gzip/zstd (and sometimes on the compressed bytes)."""
    inner, how = _wrap(data)
    if how and rng.random() < 0.15:
        m = rng.choice(BYTE_MUTATORS)(data, rng)
        m.label = f"{how} bytes: {m.label}"
        return m
    m = None
    if rng.random() < 0.55:
        for fn in rng.sample(structured_for(inner, name), k=len(structured_for(inner, name))):
            m = fn(inner, rng)
            if m is not None:
                break
    if m is None:
        m = rng.choice(BYTE_MUTATORS)(inner, rng)
    if how:
        m = Mutant(_rewrap(m.data, how), f"{how}: {m.label}", m.cut_incomplete)
    # a second round now and then: combined damage
    if rng.random() < 0.1 and m.data:
        m2 = rng.choice(BYTE_MUTATORS[1:])(m.data, rng)
        m = Mutant(m2.data, f"{m.label}; {m2.label}", m.cut_incomplete)
    return m
