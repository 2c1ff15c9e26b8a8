"""Hostile input of kinds the other mutators (tests/fuzz/mutators.py) do not make (session 19).

An outside fuzzer of the same kind will try mutation strategies we did not think of; these are the
ones found missing when mutators.py, harness.py and tools/fuzz_surfaces.py were read side by side:

  cross-format  another format's whole file under this one's name, or a polyglot: this file's head
                (what the sniffers look at) followed by another format's body, and the reverse
  encodings     UTF-32 with and without a BOM, UTF-16 without one, overlong UTF-8 sequences, the
                line breaks only Unicode knows (U+2028, U+2029, NEL, VT, FF), tabs for separators,
                no trailing newline at all, the whole text on one line, a zero-filled tail (what a
                crash leaves in a preallocated file), zstd / bz2 / xz copies under the plain name
  dialects      JSON with trailing commas, comments, single quotes, Python literals, unquoted
                keys, JSON Lines <-> one array; CSV with ';' and decimal commas, Excel's 'sep='
                line and ="..." cells, every cell quoted, header names padded or recased
  numbers       one edge value in EVERY numeric cell, token or JSON number at once; hex floats,
                thousands separators, decimal commas; duplicate CSV column names
  structure     a record duplicated, records in reverse order, start and end swapped (negative
                durations) in CSV, JSON and SQLite; a table's ids pointing at deleted rows
  filesystem    (on the written file, `fs_hostile`) a name with a newline, a CR, non-UTF-8 bytes,
                or 255 bytes long; a sparse file gigabytes long; the path made a folder, a FIFO, a
                link loop, a link to /dev/zero; an SQLite write-ahead log or hot rollback journal
                beside the database holding what the database file alone does not

`mutate_hostile` is called by `mutators.mutate` for HOSTILE_RATE of the mutants, `fs_hostile` by
`harness.write_mutant` for FS_RATE of the file mutants. PROFAUDIT_FUZZ_HOSTILE_RATE and
PROFAUDIT_FUZZ_FS_RATE override both rates for a run that exercises only these kinds (a worker of
tools/fuzz_long.py inherits the environment).
"""

from __future__ import annotations

import bz2
import csv
import io
import json
import lzma
import os
import random
import re
import shutil
import sqlite3
import stat
from pathlib import Path

from tests.fuzz.mutators import EDGE_NUMBERS, Mutant, _is_text, _looks_numeric, _sqlite_edit

HOSTILE_RATE = float(os.environ.get("PROFAUDIT_FUZZ_HOSTILE_RATE", "0.1"))
FS_RATE = float(os.environ.get("PROFAUDIT_FUZZ_FS_RATE", "0.03"))

# numbers as people and other tools write them: C99 hex floats, thousands separators (English and
# European), a decimal comma, a leading plus, a unit glued on, a percent sign, exponent without digits
LOCALE_NUMBERS = ("0x1.8p+3", "0x10", "1,234,567", "1.234.567,5", "1 234 567", "1,5", "+5", "5ms", "50%", "1e", ".", "1_000", "٣")
# the line breaks str.splitlines and Unicode know that "\n"-splitting readers do not
ODD_BREAKS = ("\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1e")
# overlong encodings of '/', '.', NUL and a surrogate, and a lone continuation byte: invalid UTF-8
OVERLONG = (b"\xc0\xaf", b"\xe0\x80\xae", b"\xc0\x80", b"\xf0\x80\x80\xaf", b"\xed\xa0\x80", b"\x80", b"\xf8\x88\x80\x80\x80")
SQLITE_MAGIC = b"SQLite format 3\x00"
JOURNAL_MAGIC = b"\xd9\xd5\x05\xf9\x20\xa1\x63\xd7"


# --------------------------------------------------------------------------------------------
# cross-format
# --------------------------------------------------------------------------------------------
def cross_format(data: bytes, donor: bytes | None, rng: random.Random) -> Mutant | None:
    """Another format's file where this one is expected: whole (a file renamed to the wrong
    extension), or a polyglot that starts like one format and goes on as the other."""
    if not donor or donor == data:
        return None
    op = rng.choice(["whole", "whole", "head_of_this", "head_of_donor"])
    if op == "whole":
        return Mutant(donor, "another format's file under this name")
    # the head a sniffer looks at: the first line of a text file, else its first 64 bytes
    def head(b: bytes) -> bytes:
        if _is_text(b) and b"\n" in b[:4096]:
            return b[: b.index(b"\n") + 1]
        return b[:64]

    if op == "head_of_this":
        h = head(data)
        return Mutant(h + donor, f"polyglot: this file's first {len(h)} bytes, then another format's file")
    h = head(donor)
    return Mutant(h + data, f"polyglot: another format's first {len(h)} bytes, then this file")


# --------------------------------------------------------------------------------------------
# encodings and text shape
# --------------------------------------------------------------------------------------------
def encode_hostile(data: bytes, rng: random.Random) -> Mutant | None:
    if not data or not _is_text(data):
        return None
    text = data.decode("utf-8", "replace")
    op = rng.choice(["utf32", "utf16_nobom", "overlong", "breaks", "tabs", "no_newline", "one_line", "nul_tail", "compressed"])
    if op == "utf32":
        enc = rng.choice(["utf-32", "utf-32-le", "utf-32-be"])
        bom = rng.random() < 0.5
        body = text.encode(enc)
        if enc == "utf-32" and not bom:
            body = body[4:]  # Python's "utf-32" writes a BOM; without it, native order and no mark
        elif enc != "utf-32" and bom:
            body = {"utf-32-le": b"\xff\xfe\x00\x00", "utf-32-be": b"\x00\x00\xfe\xff"}[enc] + body
        return Mutant(body, f"encode {enc} {'with' if bom else 'without'} BOM")
    if op == "utf16_nobom":
        enc = rng.choice(["utf-16-le", "utf-16-be"])
        return Mutant(text.encode(enc), f"encode {enc} without BOM")
    if op == "overlong":
        i = rng.randrange(len(data))
        seq = rng.choice(OVERLONG)
        return Mutant(data[:i] + seq + data[i:], f"invalid UTF-8 {seq!r} at {i}")
    if op == "breaks":
        br = rng.choice(ODD_BREAKS)
        if rng.random() < 0.5:
            # inside a line: a reader that splits with str.splitlines sees one more line
            i = rng.randrange(len(text))
            return Mutant((text[:i] + br + text[i:]).encode("utf-8"), f"{br!r} inside the text at {i}")
        return Mutant(text.replace("\n", br).encode("utf-8"), f"every newline made {br!r}")
    if op == "tabs":
        if b"," in data:
            return Mutant(data.replace(b",", b"\t"), "commas made tabs")
        return Mutant(re.sub(rb"(?<=\S) (?=\S)", b"\t", data), "spaces between tokens made tabs")
    if op == "no_newline":
        stripped = data.rstrip(b"\r\n")
        return None if stripped == data else Mutant(stripped, "no newline at the end")
    if op == "one_line":
        try:
            doc = json.loads(data)
        except ValueError:
            return Mutant(data.replace(b"\r\n", b" ").replace(b"\n", b" "), "every newline made a space (one line)")
        return Mutant(json.dumps(doc, separators=(",", ":"), allow_nan=True).encode("utf-8", "surrogatepass"), "JSON on one line")
    if op == "nul_tail":
        # a file preallocated, or cut by a crash after its size was written: zeros after the text
        n = rng.choice([1, 512, 65536, 1 << 20])
        return Mutant(data + b"\x00" * n, f"{n} zero bytes after the text")
    how = rng.choice(["zstd", "bz2", "xz"])
    if how == "bz2":
        return Mutant(bz2.compress(data, 1), "bz2-compressed under the plain name")
    if how == "xz":
        return Mutant(lzma.compress(data, preset=0), "xz-compressed under the plain name")
    try:
        import zstandard
    except ImportError:
        return Mutant(bz2.compress(data, 1), "bz2-compressed under the plain name")
    return Mutant(zstandard.ZstdCompressor(level=1).compress(data), "zstd-compressed under the plain name")


# --------------------------------------------------------------------------------------------
# dialects: what other writers of "the same" format produce
# --------------------------------------------------------------------------------------------
def json_dialect(data: bytes, rng: random.Random) -> Mutant | None:
    """JSON as lenient writers and hand edits leave it: trailing commas, // and /* */ comments,
    single quotes, Python's True/None, unquoted keys, a JSON Lines file made one array (and the
    reverse)."""
    text = data.decode("utf-8", "replace")
    if text.lstrip()[:1] not in ("{", "["):
        return None
    op = rng.choice(["trailing_comma", "comment", "single_quotes", "python", "unquoted_keys", "lines_array"])
    if op == "trailing_comma":
        new = re.sub(r"([^\s,\[{])(\s*)([}\]])", r"\1,\2\3", text, count=rng.choice([1, 10**9]))
        return Mutant(new.encode("utf-8"), "JSON with trailing commas")
    if op == "comment":
        i = next((m.end() for m in re.finditer(r",\s*\n", text)), None)
        note = rng.choice(["// written by hand\n", "/* a comment */", "# hash comment\n"])
        return None if i is None else Mutant((text[:i] + note + text[i:]).encode("utf-8"), f"JSON with a comment {note.strip()!r}")
    if op == "single_quotes":
        return Mutant(text.replace('"', "'").encode("utf-8"), "JSON with single quotes")
    if op == "python":
        new = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", text)))
        return None if new == text else Mutant(new.encode("utf-8"), "JSON with Python's True/False/None")
    if op == "unquoted_keys":
        new = re.sub(r'"([A-Za-z_][A-Za-z0-9_]*)"\s*:', r"\1:", text)
        return None if new == text else Mutant(new.encode("utf-8"), "JSON with unquoted keys")
    lines = [l for l in text.splitlines() if l.strip()]
    if len(lines) > 1 and all(l.lstrip().startswith("{") for l in lines):
        return Mutant(("[" + ",\n".join(lines) + "]").encode("utf-8"), "JSON Lines made one JSON array")
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(doc, list) and doc:
        return Mutant("\n".join(json.dumps(x, allow_nan=True) for x in doc).encode("utf-8", "surrogatepass"), "JSON array made JSON Lines")
    return None


def csv_dialect(data: bytes, rng: random.Random) -> Mutant | None:
    """CSV as spreadsheets write it: semicolons with decimal commas (a European locale), a
    'sep=' first line (Excel), every cell quoted, header names padded with spaces or in another
    case, Excel's ="..." text cells."""
    table = _csv_table(data)
    if table is None:
        return None
    rows, hi = table
    op = rng.choice(["semicolon", "sep_line", "quote_all", "pad_header", "case_header", "excel_text"])
    out = io.StringIO()
    if op == "semicolon":
        conv = [[c.replace(".", ",") if _looks_numeric(c) else c for c in r] if i > hi else r for i, r in enumerate(rows)]
        csv.writer(out, delimiter=";", lineterminator="\n").writerows(conv)
        return Mutant(out.getvalue().encode("utf-8"), "CSV with ';' and decimal commas")
    if op == "sep_line":
        return Mutant(b"sep=,\n" + _csv_bytes(rows), "CSV with Excel's 'sep=,' first line")
    if op == "quote_all":
        csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
        return Mutant(out.getvalue().encode("utf-8"), "CSV with every cell quoted")
    if op == "pad_header":
        rows[hi] = [f" {c} " for c in rows[hi]]
        return Mutant(_csv_bytes(rows), "CSV header names padded with spaces")
    if op == "case_header":
        rows[hi] = [c.upper() if rng.random() < 0.5 else c.lower() for c in rows[hi]]
        return Mutant(_csv_bytes(rows), "CSV header names in another case")
    for r in rows[hi + 1 :]:
        for c, v in enumerate(r):
            if _looks_numeric(v) and rng.random() < 0.5:
                r[c] = f'="{v}"'
    return Mutant(_csv_bytes(rows), "CSV with Excel's =\"...\" cells")


# --------------------------------------------------------------------------------------------
# numbers
# --------------------------------------------------------------------------------------------
def _json_numbers_all(doc, value):
    """Every number (not bool) in `doc` replaced by the placeholder `value`."""
    if isinstance(doc, dict):
        return {k: _json_numbers_all(v, value) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_json_numbers_all(v, value) for v in doc]
    if isinstance(doc, (int, float)) and not isinstance(doc, bool):
        return value
    return doc


_RAW = "\x00raw\x00"


def numbers_everywhere(data: bytes, rng: random.Random) -> Mutant | None:
    """One edge or locale-written number in every numeric place at once (JSON numbers, CSV
    cells, whitespace-separated tokens): a reader that guards the first numeric field it meets
    must guard them all."""
    value = rng.choice(EDGE_NUMBERS + LOCALE_NUMBERS)
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        doc = None
    if isinstance(doc, (dict, list)):
        # bare (1e309, NaN, 0x10 ...: not JSON) or quoted
        raw = value if rng.random() < 0.5 else json.dumps(value)
        text = json.dumps(_json_numbers_all(doc, _RAW), allow_nan=True).replace(json.dumps(_RAW), raw)
        return Mutant(text.encode("utf-8", "surrogatepass"), f"every JSON number = {raw}")
    if not _is_text(data):
        return None
    text = data.decode("utf-8", "replace")
    if text.count(",") > text.count("\n"):
        try:
            rows = list(csv.reader(io.StringIO(text)))
        except csv.Error:
            return None
        n = 0
        for r in rows[1:]:
            for c, v in enumerate(r):
                if _looks_numeric(v):
                    r[c] = value
                    n += 1
        if not n:
            return None
        return Mutant(_csv_bytes(rows), f"every numeric CSV cell ({n}) = {value!r}")
    n = 0

    def sub(m):
        nonlocal n
        n += 1
        return value

    new = re.sub(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])", sub, text)
    return Mutant(new.encode("utf-8"), f"every number token ({n}) = {value!r}") if n else None


def _csv_table(data: bytes) -> tuple[list[list[str]], int] | None:
    """(rows, index of the header: the first row of 3 or more cells) of a CSV text, or None."""
    if not _is_text(data):
        return None
    try:
        rows = list(csv.reader(io.StringIO(data.decode("utf-8", "replace"))))
    except csv.Error:
        return None
    hi = next((i for i, r in enumerate(rows) if len(r) > 2), None)
    return None if hi is None else (rows, hi)


def _csv_bytes(rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode("utf-8", "surrogatepass")


def duplicate_columns(data: bytes, rng: random.Random) -> Mutant | None:
    """A CSV header naming one column twice (another column renamed to it), or a BOM-prefixed
    duplicate: which of the two does the reader take?"""
    table = _csv_table(data)
    if table is None:
        return None
    rows, hi = table
    head = rows[hi]
    a, b = rng.sample(range(len(head)), 2)
    name = head[a] if rng.random() < 0.7 else "\ufeff" + head[a]
    head[b] = name
    return Mutant(_csv_bytes(rows), f"CSV column {b} renamed to column {a}'s name {name!r}")


# --------------------------------------------------------------------------------------------
# structure
# --------------------------------------------------------------------------------------------
_START = re.compile(r"(^|_)(start|begin|ts)(_|$)|^start|Start", re.I)
_END = re.compile(r"(^|_)(end|stop|finish)(_|$)|^end|End", re.I)


def _pairs(keys) -> list[tuple[str, str]]:
    starts = [k for k in keys if _START.search(k)]
    ends = [k for k in keys if _END.search(k)]
    return [(s, e) for s in starts for e in ends if s != e]


def records_hostile(data: bytes, rng: random.Random) -> Mutant | None:
    """A record duplicated (the same kernel id twice), the records reversed, or start and end
    swapped in every record (negative durations, reversed timestamps)."""
    op = rng.choice(["duplicate", "reverse", "swap"])
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        doc = None
    if isinstance(doc, (dict, list)):
        lists = []

        def walk(node, depth=0):
            if depth > 50:
                return
            if isinstance(node, list) and len(node) > 1 and all(isinstance(x, dict) for x in node[:20]):
                lists.append(node)
            for v in (node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()):
                walk(v, depth + 1)

        walk(doc)
        if not lists:
            return None
        lst = rng.choice(lists)
        if op == "duplicate":
            i = rng.randrange(len(lst))
            lst.insert(i + 1, json.loads(json.dumps(lst[i])))
            label = f"JSON record {i} of {len(lst) - 1} duplicated"
        elif op == "reverse":
            lst.reverse()
            label = f"JSON list of {len(lst)} records reversed"
        else:
            n = 0
            for rec in lst:
                for s, e in _pairs(rec.keys())[:1]:
                    rec[s], rec[e] = rec[e], rec[s]
                    n += 1
            if not n:
                return None
            label = f"start and end swapped in {n} JSON records"
        return Mutant(json.dumps(doc, allow_nan=True).encode("utf-8", "surrogatepass"), label)
    table = _csv_table(data)
    if table is None:
        return None
    rows, hi = table
    body = [i for i in range(hi + 1, len(rows)) if len(rows[i]) == len(rows[hi])]
    if len(body) < 2:
        return None
    if op == "duplicate":
        i = rng.choice(body)
        rows.insert(i + 1, list(rows[i]))
        label = f"CSV row {i} duplicated"
    elif op == "reverse":
        picked = [rows[i] for i in body][::-1]
        for i, r in zip(body, picked):
            rows[i] = r
        label = f"{len(body)} CSV rows reversed"
    else:
        pairs = _pairs(rows[hi])
        if not pairs:
            return None
        s, e = rng.choice(pairs)
        si, ei = rows[hi].index(s), rows[hi].index(e)
        for i in body:
            rows[i][si], rows[i][ei] = rows[i][ei], rows[i][si]
        label = f"CSV columns {s!r} and {e!r} swapped in {len(body)} rows"
    return Mutant(_csv_bytes(rows), label)


def sqlite_hostile(data: bytes, rng: random.Random) -> Mutant | None:
    """In one table: start and end swapped (negative durations), rows in reverse order, one row
    duplicated (same id twice), or the rows another table's ids point at deleted."""
    return _sqlite_edit(data, rng, _sqlite_op, "sqlite hostile: ")


def _sqlite_op(con, t: str, cols: list[str], rng: random.Random) -> str | None:
    if not cols:
        return None
    op = rng.choice(["swap", "reverse", "duplicate", "orphans"])
    if op == "swap":
        pairs = _pairs(cols)
        if not pairs:
            return None
        s, e = pairs[0]
        con.execute(f'UPDATE "{t}" SET "{s}" = "{e}", "{e}" = "{s}"')
        return f"{t}: {s} and {e} swapped"
    if op == "reverse":
        con.execute(f'CREATE TABLE "{t}__rev" AS SELECT * FROM "{t}" ORDER BY rowid DESC')
        con.execute(f'DELETE FROM "{t}"')
        con.execute(f'INSERT INTO "{t}" SELECT * FROM "{t}__rev"')
        con.execute(f'DROP TABLE "{t}__rev"')
        return f"{t}: rows in reverse order"
    if op == "duplicate":
        # a table with a PRIMARY KEY refuses a second row: its rowid-free copy goes in as a new row
        # only where the schema allows, which is what a second export merged in does
        try:
            con.execute(f'INSERT INTO "{t}" SELECT * FROM "{t}" LIMIT 1')
        except sqlite3.DatabaseError:
            return None
        return f"{t}: first row duplicated"
    ids = [c for c in cols if c.lower() in ("id", "_id") or c.lower().endswith("id")]
    if not ids:
        return None
    con.execute(f'DELETE FROM "{t}" WHERE rowid IN (SELECT rowid FROM "{t}" ORDER BY random() LIMIT {rng.choice([1, 3])})')
    return f"{t}: rows deleted that other tables may point at ({', '.join(ids[:2])})"


def mutate_hostile(data: bytes, name: str, rng: random.Random, donor: bytes | None = None) -> Mutant | None:
    """One mutant of a kind the other mutators do not make (None when none fits this seed)."""
    fns = [lambda d, r: cross_format(d, donor, r)]
    if data.startswith(SQLITE_MAGIC):
        fns.append(sqlite_hostile)
    elif _is_text(data):
        fns += [encode_hostile, encode_hostile, numbers_everywhere, duplicate_columns, records_hostile, json_dialect, csv_dialect]
    for fn in rng.sample(fns, k=len(fns)):
        try:
            m = fn(data, rng)
        except (RecursionError, ValueError, sqlite3.DatabaseError):
            m = None
        if m is not None:
            m.label = "hostile: " + m.label
            return m
    return None


# --------------------------------------------------------------------------------------------
# filesystem (on the mutant written by harness.write_mutant)
# --------------------------------------------------------------------------------------------
def _rename(path: Path, new_stem: bytes) -> Path:
    suffix = "".join(path.suffixes[-2:]) if path.name.endswith((".gz", ".zst")) else path.suffix
    new = os.path.join(os.fsencode(path.parent), new_stem + os.fsencode(suffix))
    os.rename(path, new)
    return Path(os.fsdecode(new))


def fs_hostile(path: Path, rng: random.Random) -> tuple[Path, str, bool]:
    """Damage to the written mutant file at `path` as a file system can hold it. Returns the path
    to read (renamed files keep their suffix), a label, and whether content the reader must notice
    was left out (an SQLite log beside the database: a load that ignores it is not whole)."""
    is_db = path.read_bytes()[:16] == SQLITE_MAGIC if path.is_file() else False
    ops = ["newline_name", "cr_name", "bytes_name", "long_name", "unicode_name", "sparse", "folder", "fifo", "loop", "devzero"]
    if is_db:
        ops += ["wal", "wal", "journal", "journal"]
    op = rng.choice(ops)
    if op == "newline_name":
        return _rename(path, b"a\nb"), "name with a newline", False
    if op == "cr_name":
        return _rename(path, b"run\r\x1b[2Kfake"), "name with a CR and a terminal escape", False
    if op == "bytes_name":
        return _rename(path, b"caf\xe9\xff"), "name that is not UTF-8", False
    if op == "long_name":
        return _rename(path, b"n" * (250 - len(os.fsencode(path.suffix)))), "name 250 bytes long", False
    if op == "unicode_name":
        return _rename(path, "ケルネル\u202e\u200bтест".encode()), "name with CJK, RTL override, zero-width space", False
    if op == "sparse":
        # holes read as zeros; no disk is used
        size = rng.choice([1 << 30, 5 << 30])
        os.truncate(path, max(size, path.stat().st_size))
        return path, f"sparse file of {size >> 30} GiB (the content, then zeros)", False
    if op in ("wal", "journal"):
        try:
            return path, *_sqlite_sidecar(path, op, rng)
        except sqlite3.DatabaseError as exc:  # an earlier mutation left nothing sqlite3 can change
            for side in ("-wal", "-shm", "-journal"):
                Path(f"{path}{side}").unlink(missing_ok=True)
            return path, f"{op}: not made ({exc})", False
    path.unlink()
    if op == "folder":
        path.mkdir()
        (path / "data").write_bytes(b"x")
        return path, "a folder under the file's name", False
    if op == "fifo":
        os.mkfifo(path)
        return path, "a FIFO under the file's name", False
    if op == "loop":
        os.symlink(path.name, path)
        return path, "a link to itself", False
    os.symlink("/dev/zero", path)
    return path, "a link to /dev/zero", False


def _sqlite_sidecar(path: Path, op: str, rng: random.Random) -> tuple[str, bool]:
    """The database as a copy taken while a writer had it open: in WAL mode with committed rows
    still only in `-wal`, or torn mid-transaction with its hot rollback journal (`-journal`)
    beside it."""
    before = path.read_bytes()
    con = sqlite3.connect(path, isolation_level=None)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        if not tables:
            return "no table to change", False
        t = rng.choice(tables)
        if op == "wal":
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA wal_autocheckpoint=0")
            con.execute(f'DELETE FROM "{t}" WHERE rowid % 2 = 0')
            # copies taken while the connection is open: the database file without the change,
            # the change in the log (closing would fold it in and remove the log)
            db, log = path.read_bytes(), Path(f"{path}-wal").read_bytes()
        else:
            con.execute(f'DELETE FROM "{t}" WHERE rowid % 2 = 0')
            db, log = path.read_bytes(), b""
    finally:
        con.close()
    for s in ("-wal", "-shm", "-journal"):
        Path(f"{path}{s}").unlink(missing_ok=True)
    if op == "journal":
        db, log = _torn_with_journal(before, db)
    if not log:
        return f"{op}: nothing was logged", False
    path.write_bytes(db)
    Path(f"{path}-{op}").write_bytes(log)
    return f"{t}: a change of half its rows only in the {op} beside the database", True


def _torn_with_journal(before: bytes, after: bytes) -> tuple[bytes, bytes]:
    """A writer killed while writing a transaction's pages: the database file holds the first
    half of the changed pages new and the rest old, and the hot journal beside it holds the old
    pages (SQLite's rollback-journal format: an 8-byte magic, record count, checksum nonce, the
    original size in pages, sector and page size, padded to a sector; then per page its number,
    its bytes and a checksum), from which sqlite3 would roll the file back."""
    page = int.from_bytes(before[16:18], "big")
    page = 65536 if page == 1 else page
    n = max(len(before), len(after)) // page
    changed = [i for i in range(n) if before[i * page : (i + 1) * page] != after[i * page : (i + 1) * page]]
    if not changed:
        return after, b""
    nonce = 0x5EED
    head = JOURNAL_MAGIC + len(changed).to_bytes(4, "big") + nonce.to_bytes(4, "big") + (len(before) // page).to_bytes(4, "big")
    head += (512).to_bytes(4, "big") + page.to_bytes(4, "big")
    out = [head.ljust(512, b"\0")]
    for i in changed:
        old = before[i * page : (i + 1) * page].ljust(page, b"\0")
        ck = (nonce + sum(old[k] for k in range(page - 200, 0, -200))) & 0xFFFFFFFF
        out.append((i + 1).to_bytes(4, "big") + old + ck.to_bytes(4, "big"))
    torn = bytearray(after)
    for i in changed[len(changed) // 2 :]:
        torn[i * page : (i + 1) * page] = before[i * page : (i + 1) * page].ljust(page, b"\0")
    return bytes(torn), b"".join(out)


def copy_input(src: Path, dst: Path) -> None:
    """A reproducer's copy of an input file as it is: a link as a link (a loop, one to /dev/zero),
    a FIFO as a FIFO, a sparse file with its holes (only its data is copied), and an SQLite log
    or journal beside it too. Nothing when `src` is gone."""
    try:
        st = os.lstat(src)
    except OSError:
        return
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(src), dst)
    elif stat.S_ISFIFO(st.st_mode):
        os.mkfifo(dst)
    elif stat.S_ISDIR(st.st_mode):
        shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)
    elif stat.S_ISREG(st.st_mode):
        with open(src, "rb") as fi, open(dst, "wb") as fo:
            end = st.st_size
            pos = 0
            while pos < end:
                try:
                    pos = os.lseek(fi.fileno(), pos, os.SEEK_DATA)
                except OSError:  # no data after pos (ENXIO), or no SEEK_DATA: the rest is a hole
                    break
                hole = os.lseek(fi.fileno(), pos, os.SEEK_HOLE)
                fi.seek(pos)
                fo.seek(pos)
                while pos < hole:
                    chunk = fi.read(min(1 << 20, hole - pos))
                    if not chunk:
                        break
                    fo.write(chunk)
                    pos += len(chunk)
            fo.truncate(end)
    for side in ("-wal", "-journal"):
        if os.path.isfile(f"{src}{side}"):
            shutil.copyfile(f"{src}{side}", f"{dst}{side}")
