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
        k = _bounded_repeat(len(json.dumps(node, allow_nan=True)), rng.choice([2, 10, 100]))
        return _set(doc, path, node * k), f"repeat list at {list(path)[-3:]} x{k}"
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
        k = _bounded_repeat(sum(len(c) + 1 for c in rows[i]), rng.choice([2, 50, 1000]))
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
def _sqlite_edit(data: bytes, rng: random.Random, edit, prefix: str) -> Mutant | None:
    """`edit(con, table, columns, rng) -> label` applied to one table of the database deserialized
    in memory (no temporary file to write, fsync and unlink for every mutant); None when the seed
    is no database, has no table, or the edit declines (returns None)."""
    con = sqlite3.connect(":memory:")
    try:
        try:
            con.deserialize(data)
            tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
        except (sqlite3.Error, UnicodeDecodeError):
            return None
        if not tables:
            return None
        t = rng.choice(tables)
        try:
            cols = [r[1] for r in con.execute(f'PRAGMA table_info("{t}")')]
            label = edit(con, t, cols, rng)
            if label is None:
                return None
            con.commit()
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            return Mutant(data, f"sqlite op failed: {exc}")
        return Mutant(con.serialize(), prefix + label)
    finally:
        con.close()


def mutate_sqlite(data: bytes, rng: random.Random) -> Mutant | None:
    """Drop or rename a table or column, delete rows, set values to extremes."""
    return _sqlite_edit(data, rng, _classic_edit, "sqlite: ")


def _classic_edit(con, t: str, cols: list[str], rng: random.Random) -> str:
    op = rng.choice(["drop", "delete", "value", "value", "value", "nulls", "rename"])
    c = rng.choice(cols) if cols else None
    if op == "drop":
        con.execute(f'DROP TABLE "{t}"')
        return f"drop table {t}"
    if op == "delete":
        con.execute(f'DELETE FROM "{t}" WHERE rowid % {rng.choice([1, 2, 7])} = 0')
        return f"delete rows of {t}"
    if op == "nulls" and c:
        con.execute(f'UPDATE "{t}" SET "{c}" = NULL')
        return f"null {t}.{c}"
    if op == "rename" and c:
        con.execute(f'ALTER TABLE "{t}" RENAME COLUMN "{c}" TO "{c}_x"')
        return f"rename {t}.{c}"
    if c:
        v = rng.choice([2**63 - 1, -(2**63), 2**31, -1, 0, 1e308, float("inf"), float("nan"), "text", "", b"\x00\xff", None])
        if isinstance(v, float) and v != v:
            v = None  # sqlite stores NaN as NULL
        con.execute(f'UPDATE "{t}" SET "{c}" = ? WHERE rowid IN (SELECT rowid FROM "{t}" ORDER BY random() LIMIT {rng.choice([1, 5, 1000000])})', (v,))
        return f"set {t}.{c} = {v!r:.30}"
    return f"nothing in {t}"


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
    (best effort: stops where the bytes stop looking like protobuf). `end` is clamped to the data:
    a stacked edit can leave a length prefix claiming more than there is (an IndexError made 6
    ncu-rep mutants of the s14 100k run impossible)."""
    pos, end = start, min(end, len(data))
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


def mutate(data: bytes, name: str, rng: random.Random, donor: bytes | None = None) -> Mutant:
    """One mutant of a seed file's bytes: about a third the wider kinds (encodings, edge numbers,
    duplicated keys, splices with `donor`, another seed's bytes ...), a third structure-aware, a
    third raw bytes, inside the compression where the seed is gzip/zstd (and sometimes on the
    compressed bytes); now and then gzip-compressed under its own name, or blown up in size
    (BLOWUP_RATE)."""
    inner, how = _wrap(data)
    if how and rng.random() < 0.15:
        m = rng.choice(BYTE_MUTATORS)(data, rng)
        m.label = f"{how} bytes: {m.label}"
        return m
    if BLOWUP_RATE and rng.random() < BLOWUP_RATE:
        m = blowup(inner, rng)
        if m is not None:
            return Mutant(_rewrap(m.data, how), f"{how}: {m.label}" if how else m.label)
    m = None
    try:
        # kinds added in session 19 (cross-format, encodings, numbers everywhere, records,
        # SQLite edits): tests/fuzz/hostile.py
        from tests.fuzz import hostile

        if rng.random() < hostile.HOSTILE_RATE:
            m = hostile.mutate_hostile(inner, name, rng, _wrap(donor)[0] if donor is not None else None)
        if m is None and rng.random() < 0.35:
            m = mutate_wide(inner, name, rng, _wrap(donor)[0] if donor is not None else None)
        if m is None and rng.random() < 0.55:
            for fn in rng.sample(structured_for(inner, name), k=len(structured_for(inner, name))):
                m = fn(inner, rng)
                if m is not None:
                    break
    except RecursionError:
        # JSON an earlier damage nested past the interpreter's depth (json.loads, or a walk of
        # its nodes): no structure to edit, so its bytes are (fuzz_surfaces seed 4703, a
        # dataset's JSON damaged twice: a RecursionError counted as a generator error)
        m = None
    if m is None:
        m = rng.choice(BYTE_MUTATORS)(inner, rng)
    elif rng.random() < STACK_RATE:
        m = _stack(m, name, rng)
    if how:
        m = Mutant(_rewrap(m.data, how), f"{how}: {m.label}", m.cut_incomplete)
    elif rng.random() < 0.03:
        # gzip around any of these, the name unchanged: readers that sniff content must still
        # refuse or read it in one line
        gz, how = _gzip_trailer_damage(gzip.compress(m.data, compresslevel=1, mtime=0), rng)
        m = Mutant(gz, f"gzipped{how}: {m.label}", m.cut_incomplete)
    # a second round now and then: combined damage
    if rng.random() < 0.1 and m.data:
        m = second_round(m, rng.choice(BYTE_MUTATORS[1:])(m.data, rng))
    return m


def second_round(m: Mutant, m2: Mutant) -> Mutant:
    """`m2`, a byte edit made on `m`'s bytes, as one mutant named by both edits. A cut text that
    the second edit leaves ending on a whole line (a delete of its last, partial line) is a shorter
    well-formed file, as a cut at a line end is (`truncate`): the parser's load of it is right, not
    a silent partial (s15 final run, google-benchmark #252). A binary cut stays a cut."""
    cut = m.cut_incomplete and not (_is_text(m2.data) and m2.data.endswith(b"\n"))
    return Mutant(m2.data, f"{m.label}; {m2.label}", cut)


def _gzip_trailer_damage(gz: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Now and then a gzip stream whose trailer (CRC-32, length) is cut or wrong: checked only
    once the whole stream is read, past what the format sniffing decompresses (s14: the catch-all
    in three readers). Returns the bytes and a label part ('' when left alone)."""
    r = rng.random()
    if r < 0.15:
        k = rng.randint(1, 8)
        return gz[:-k], f" without the last {k} trailer bytes"
    if r < 0.3:
        b = bytearray(gz)
        i = len(b) - rng.randint(1, 8)
        b[i] ^= 0xFF
        return bytes(b), f" with trailer byte {i} flipped"
    return gz, ""


# the share of structured mutants that get 1-3 more structured edits (see `_stack`)
STACK_RATE = 0.12

# bytes one repetition edit (a JSON list, a CSV row, SQLite rows) may add. Size blow-ups are their
# own kind (`blowup`, BLOWUP_RATE) with their own bounds; without this cap stacked edits made them
# by accident: a donor appended whole made one CSV row of megabytes, then "repeat row x1000" wrote
# a 193 MB rocprofv3 agent_info.csv (s14 confirmation run: the mutator alone peaked at 4.2 GB and
# ran out of the worker's address space, and the memory it left behind was charged to a later input)
GROW_LIMIT = 4 << 20


def _bounded_repeat(unit: int, k: int) -> int:
    """`k` copies of something `unit` bytes long, fewer when they would add over GROW_LIMIT (at least 1)."""
    return max(1, min(k, GROW_LIMIT // max(1, unit)))


def _stack(m: Mutant, name: str, rng: random.Random) -> Mutant:
    """More structure-aware edits on top of one: damage no single edit makes (two fields that
    must agree both changed, a value set and its unit cell changed, a table's rows deleted and a
    column renamed), the way havoc-style fuzzers stack their mutations. Stops at the first edit
    that does not apply (a document one edit made unparsable, or too deep to parse again). Never
    on a cut: an edit that re-serialises the text (csv.writer) could end it on a whole line again,
    and the harness would take the parser's correct load of it for a silent partial."""
    if m.cut_incomplete:
        return m
    for _ in range(rng.randint(1, 3)):
        try:
            m2 = rng.choice(structured_for(m.data, name))(m.data, rng)
        except (ValueError, RecursionError, UnicodeError):
            break
        if m2 is None or m2.label.startswith("sqlite op failed"):
            break
        m = Mutant(m2.data, f"{m.label}; {m2.label}", m2.cut_incomplete)
    return m


# --------------------------------------------------------------------------------------------
# wider kinds (session 13): what an independent fuzzer of the same kind tries that the families
# above do not: other text encodings and line ends, very long tokens, numbers at the edges in the
# numeric fields themselves, duplicated JSON keys, every wrong JSON type for one field, nesting
# right at the readers' depth limits, SQLite type affinity, views and repetition, CSV header and
# column-count damage, two files spliced together, gzip around any of these, and size blow-ups.
# --------------------------------------------------------------------------------------------
# numbers as text where a number belongs: beyond float range, beyond 64 bits, signed zero,
# non-finite spelled bare (JSON5 / Python json) and quoted, thousands separators, hex, empty
EDGE_NUMBERS = ("1e309", "-1e309", "-0", "-0.0", "9223372036854775807", "9223372036854775808", "18446744073709551615",
                "18446744073709551616", "-9223372036854775809", "NaN", "Infinity", "-Infinity", "nan", "inf", "1e-400",
                "4.9e-324", "1.7976931348623157e308", "1,234", "1_000", "0x1F", "0b101", "1e", ".", "", " 12 ", "+5", "00012")
# the readers' nesting limits (rocprof-sdk 64, metadata and YAML 100, Python's recursion ~1000)
DEPTHS_AT_LIMITS = (63, 64, 65, 99, 100, 101, 998, 999, 1000, 1001)
WRONG_TYPES = (None, True, 0, -1, 1.5, "", "x", "1", [], [1], {}, {"a": 1})

# the share of mutants that are size blow-ups (tens of MB each): 0 unless a long run asks
BLOWUP_RATE = 0.0


def _placeholder(i: int) -> str:
    return f"\x00raw{i}\x00"


def _dumps_raw(doc, raw: dict[str, str]) -> bytes:
    """json.dumps with placeholders replaced by raw JSON text (bare NaN, 1e309, duplicated keys:
    what json.dumps cannot write)."""
    text = json.dumps(doc, allow_nan=True)
    for ph, r in raw.items():
        text = text.replace(json.dumps(ph), r, 1)
    return text.encode("utf-8", "surrogatepass")


def _json_or_lines(data: bytes):
    """(documents, how): the whole JSON document, or the JSON Lines records (how = 'jsonl'), or None."""
    try:
        return [json.loads(data)], "json"
    except ValueError:
        pass
    lines = data.split(b"\n")
    docs = []
    for l in lines:
        if l.strip():
            try:
                docs.append(json.loads(l))
            except ValueError:
                return None, ""
    return (docs, "jsonl") if docs else (None, "")


def _rejoin(docs, how: str, raw: dict[str, str], which: int) -> bytes:
    if how == "json":
        return _dumps_raw(docs[0], raw)
    return b"\n".join(_dumps_raw(d, raw if i == which else {}) for i, d in enumerate(docs)) + b"\n"


def mutate_json_wide(data: bytes, rng: random.Random) -> Mutant | None:
    """Numbers at the edges in a numeric field, a duplicated key, each wrong type for a field,
    nesting at the depth limits, a very long string."""
    docs, how = _json_or_lines(data)
    if not docs:
        return None
    which = rng.randrange(len(docs))
    doc = docs[which]
    nodes = list(_nodes(doc))
    op = rng.choice(["number", "number", "dupkey", "wrongtype", "wrongtype", "depth", "longstr"])
    raw: dict[str, str] = {}
    ph = _placeholder(0)
    if op == "number":
        nums = [(p, v) for p, v in nodes if p and isinstance(v, (int, float)) and not isinstance(v, bool)]
        if not nums:
            return None
        path, _ = rng.choice(nums)
        text = rng.choice(EDGE_NUMBERS)
        quoted = rng.random() < 0.3 or text in ("", "1,234", "1_000", "0b101", ".", " 12 ", "1e")
        raw[ph] = json.dumps(text) if quoted else text
        docs[which] = _set(doc, path, ph)
        label = f"number {list(path)[-3:]} = {raw[ph]}"
    elif op == "dupkey":
        dicts = [(p, v) for p, v in nodes if isinstance(v, dict) and v]
        if not dicts:
            return None
        path, d = rng.choice(dicts)
        key = rng.choice(list(d))
        other = rng.choice(WRONG_TYPES + (d[key],))
        first = rng.random() < 0.5  # the duplicate before or after the original
        body = ", ".join(f"{json.dumps(k)}: {json.dumps(v, allow_nan=True)}" for k, v in d.items())
        dup = f"{json.dumps(key)}: {json.dumps(other)}"
        raw[ph] = "{" + (f"{dup}, {body}" if first else f"{body}, {dup}") + "}"
        docs[which] = _set(doc, path, ph)
        label = f"duplicate key {list(path)[-2:] + [key]} = {other!r:.20} ({'first' if first else 'last'})"
    elif op == "wrongtype":
        fields = [(p, v) for p, v in nodes if p]
        if not fields:
            return None
        path, v = rng.choice(fields)
        choices = [w for w in WRONG_TYPES if type(w) is not type(v)]
        w = rng.choice(choices)
        docs[which] = _set(doc, path, w)
        label = f"wrong type {list(path)[-3:]} = {w!r:.20} (was {type(v).__name__})"
    elif op == "depth":
        depth = rng.choice(DEPTHS_AT_LIMITS)
        path, node = rng.choice(nodes)
        opener, closer = ("[", "]") if rng.random() < 0.5 else ('{"a":', "}")
        inner = json.dumps(node, allow_nan=True) if not isinstance(node, (dict, list)) else "0"
        raw[ph] = opener * depth + inner + closer * depth
        docs[which] = _set(doc, path, ph)
        label = f"nest {depth} deep at {list(path)[-3:]}"
    else:
        strs = [(p, v) for p, v in nodes if p and isinstance(v, str)]
        if not strs:
            return None
        path, v = rng.choice(strs)
        n = rng.choice([4096, 65536, 1 << 20])
        docs[which] = _set(doc, path, (v or "x") * (n // max(1, len(v or "x"))))
        label = f"long string ({n} chars) at {list(path)[-3:]}"
    return Mutant(_rejoin(docs, how, raw, which), f"json+: {label}")


def encode_text(data: bytes, rng: random.Random) -> Mutant | None:
    """The same text in another encoding or with other line ends: UTF-16 with a BOM, a UTF-8 BOM,
    Latin-1 bytes, NUL bytes, CRLF or bare CR line ends."""
    if not _is_text(data) or not data:
        return None
    op = rng.choice(["utf16", "bom8", "latin1", "nul", "crlf", "cr", "mixed"])
    if op == "utf16":
        enc = rng.choice(["utf-16", "utf-16-le", "utf-16-be"])
        bom = {"utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff"}.get(enc, b"")
        return Mutant(bom + data.decode("utf-8", "replace").encode(enc), f"encode {enc} with BOM")
    if op == "bom8":
        return Mutant(b"\xef\xbb\xbf" + data, "UTF-8 BOM before the text")
    if op == "latin1":
        # a name or cell with bytes that are Latin-1, not UTF-8
        i = rng.randrange(len(data))
        return Mutant(data[:i] + rng.choice([b"\xe9", b"\xb5s", b"caf\xe9", b"\xff\xfe"]) + data[i:], f"Latin-1 bytes at {i}")
    if op == "nul":
        i = rng.randrange(len(data))
        return Mutant(data[:i] + b"\x00" * rng.choice([1, 4]) + data[i:], f"NUL bytes at {i}")
    lf = data.replace(b"\r\n", b"\n")
    if op == "crlf":
        return Mutant(lf.replace(b"\n", b"\r\n"), "CRLF line ends")
    if op == "cr":
        return Mutant(lf.replace(b"\n", b"\r"), "CR line ends")
    lines = lf.split(b"\n")
    return Mutant(b"".join(l + rng.choice([b"\n", b"\r\n", b"\r"]) for l in lines[:-1]) + lines[-1], "mixed line ends")


def mutate_csv_wide(data: bytes, rng: random.Random) -> Mutant | None:
    """Numbers at the edges in a numeric cell, a repeated header, a row with missing or extra
    cells, a quoted newline inside a cell, a very long cell."""
    text = data.decode("utf-8", "replace")
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error:
        return None
    body = [i for i, r in enumerate(rows) if len(r) > 1]
    if len(body) < 2:
        return None
    head = body[0]
    op = rng.choice(["number", "number", "header", "short", "extra", "newline", "long"])
    i = rng.choice(body[1:])
    if op == "number":
        nums = [(r, c) for r in body[1:] for c, v in enumerate(rows[r]) if _looks_numeric(v)]
        if not nums:
            return None
        r, c = rng.choice(nums)
        rows[r][c] = rng.choice(EDGE_NUMBERS)
        label = f"number cell ({r},{c}) = {rows[r][c]!r}"
    elif op == "header":
        rows.insert(i, list(rows[head]))
        label = f"header repeated at row {i}"
    elif op == "short":
        rows[i] = rows[i][: rng.randrange(1, len(rows[i]))]
        label = f"row {i} cut to {len(rows[i])} cells"
    elif op == "extra":
        rows[i] = rows[i] + [rng.choice(["", "1", "x", "1e309"])] * rng.choice([1, 3])
        label = f"row {i} with extra cells"
    elif op == "newline":
        c = rng.randrange(len(rows[i]))
        rows[i][c] = rows[i][c][:3] + rng.choice(["\n", "\r\n", "\n\n"]) + rows[i][c][3:]
        label = f"quoted newline in cell ({i},{c})"
    else:
        c = rng.randrange(len(rows[i]))
        rows[i][c] = "x" * rng.choice([4096, 1 << 20])
        label = f"cell ({i},{c}) {len(rows[i][c])} chars long"
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return Mutant(out.getvalue().encode("utf-8", "surrogatepass"), "csv+: " + label)


def _looks_numeric(v: str) -> bool:
    try:
        float(v)
        return True
    except ValueError:
        return False


def mutate_lines_wide(data: bytes, rng: random.Random) -> Mutant | None:
    """Console and Markdown tables: a number token at the edges, a very long line."""
    lines = data.split(b"\n")
    spots = [(i, k) for i, l in enumerate(lines) for k, t in enumerate(l.split(b" ")) if _looks_numeric(t.decode("latin-1").strip("|"))]
    if rng.random() < 0.2 or not spots:
        i = rng.randrange(len(lines))
        lines[i] = lines[i] + b" " + b"x" * rng.choice([4096, 1 << 20])
        return Mutant(b"\n".join(lines), f"line {i} made {len(lines[i])} bytes long")
    i, k = rng.choice(spots)
    toks = lines[i].split(b" ")
    toks[k] = rng.choice(EDGE_NUMBERS).encode()
    lines[i] = b" ".join(toks)
    return Mutant(b"\n".join(lines), f"line {i} number token {k} = {toks[k]!r}")


def mutate_sqlite_wide(data: bytes, rng: random.Random) -> Mutant | None:
    """A column's values stored as TEXT, BLOB or REAL (SQLite keeps what it is given), a view in
    place of a table, rows repeated many times, NULLs in an id column."""
    return _sqlite_edit(data, rng, _wide_edit, "sqlite+: ")


def _wide_edit(con, t: str, cols: list[str], rng: random.Random) -> str | None:
    if not cols:
        return None
    op = rng.choice(["affinity", "affinity", "view", "repeat", "null_id"])
    c = rng.choice(cols)
    if op == "affinity":
        kind = rng.choice(["TEXT", "BLOB", "REAL"])
        expr = {"TEXT": f'CAST("{c}" AS TEXT)', "BLOB": f'CAST(CAST("{c}" AS TEXT) AS BLOB)', "REAL": f'CAST("{c}" AS REAL)'}[kind]
        con.execute(f'UPDATE "{t}" SET "{c}" = {expr}')
        return f"{t}.{c} values as {kind}"
    if op == "view":
        con.execute(f'ALTER TABLE "{t}" RENAME TO "{t}__base"')
        con.execute(f'CREATE VIEW "{t}" AS SELECT * FROM "{t}__base"')
        return f"{t} a view"
    if op == "repeat":
        n = con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]
        if not n:
            return None
        times, most = 0, rng.choice([3, 8, 17])
        def size() -> int:
            return con.execute("PRAGMA page_count").fetchone()[0] * con.execute("PRAGMA page_size").fetchone()[0]

        base = size()
        # doubling to at most ~200,000 rows (a big but loadable profile) and ~64 MiB added (a
        # doubling adds at most the file's size): rows an earlier stacked edit made wide must
        # not make a size blow-up
        while n * 2 <= 200_000 and times < most and 2 * size() - base <= 16 * GROW_LIMIT:
            con.execute(f'INSERT INTO "{t}" SELECT * FROM "{t}"')
            n *= 2
            times += 1
        return f"{t} rows doubled {times} times ({n} rows)"
    ids = [x for x in cols if x.lower().endswith("id")] or cols
    c = rng.choice(ids)
    con.execute(f'UPDATE "{t}" SET "{c}" = NULL WHERE rowid IN (SELECT rowid FROM "{t}" LIMIT {rng.choice([1, 10])})')
    return f"NULL in {t}.{c}"


def splice_files(data: bytes, donor: bytes, rng: random.Random) -> Mutant:
    """Two files made one: this one's head with another's tail, another file inserted inside this
    one, or this one followed by the whole other (concatenated exports)."""
    if not data or not donor:
        return Mutant(data + donor, "concatenated with an empty file")
    op = rng.choice(["head_tail", "insert", "concat"])
    if op == "head_tail":
        i, j = rng.randrange(len(data)), rng.randrange(len(donor))
        return Mutant(data[:i] + donor[j:], f"head [:{i}] + donor tail [{j}:]")
    if op == "insert":
        i = rng.randrange(len(data))
        chunk = donor[: rng.choice([64, 4096, len(donor)])]
        return Mutant(data[:i] + chunk + data[i:], f"donor's first {len(chunk)} bytes inserted at {i}")
    return Mutant(data + rng.choice([b"", b"\n"]) + donor, "donor appended whole")


def blowup(data: bytes, rng: random.Random, target: int | None = None) -> Mutant | None:
    """A valid record repeated until the file is 50-200 MB: it must load within the memory and
    time bounds, or be refused in one line."""
    target = target or rng.choice([50, 100, 200]) << 20
    docs, how = _json_or_lines(data) if data.lstrip()[:1] in (b"{", b"[") else (None, "")
    if how == "json":
        lists = [(p, v) for p, v in _nodes(docs[0]) if isinstance(v, list) and v]
        if lists:
            path, lst = max(lists, key=lambda pv: len(json.dumps(pv[1][:1], allow_nan=True)) * len(pv[1]))
            one = len(json.dumps(lst[:1], allow_nan=True)) or 1
            k = max(1, target // one)
            doc = _set(docs[0], path, lst[:1] * k) if path else lst[:1] * k
            return Mutant(json.dumps(doc, allow_nan=True).encode("utf-8", "surrogatepass"), f"blow-up: list {list(path)[-3:]} x{k}")
    if data.startswith(b"SQLite format 3"):
        return None  # rows by repetition: mutate_sqlite_wide's 'repeat'
    if _is_text(data):
        lines = data.split(b"\n")
        body = [l for l in lines[1:] if l.strip()] or lines
        rec = rng.choice(body) + b"\n"
        k = max(1, target // len(rec))
        head = b"\n".join(lines[: lines.index(rec.rstrip(b"\n")) + 1]) + b"\n" if rec.rstrip(b"\n") in lines else data
        tail = data[len(head):]
        return Mutant(head + rec * k + tail, f"blow-up: a line repeated x{k}")
    return None


def mutate_wide(data: bytes, name: str, rng: random.Random, donor: bytes | None = None) -> Mutant | None:
    """One of the wider kinds that fits this seed (None when none does)."""
    fns = []
    if data.startswith(b"SQLite format 3"):
        fns.append(mutate_sqlite_wide)
    elif data.lstrip()[:1] in (b"{", b"[") or name.lower().endswith((".json", ".jsonl")):
        fns.append(mutate_json_wide)
    elif _is_text(data):
        fns += [mutate_csv_wide, mutate_lines_wide]
    if _is_text(data):
        fns.append(encode_text)
    if donor is not None:
        fns.append(lambda d, r: splice_files(d, donor, r))
    for fn in rng.sample(fns, k=len(fns)):
        m = fn(data, rng)
        if m is not None:
            return m
    return None
