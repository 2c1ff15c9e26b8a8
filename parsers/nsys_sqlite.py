"""Nsight Systems SQLite exports (`nsys export --type sqlite`), every schema from nsys 2020.3 on.

The exporter creates tables lazily and has added (and renamed) columns over the years, so nothing
here assumes a table or column exists: `_Db` lists `sqlite_master` and `PRAGMA table_info` once and
every query is built from what is there (a missing column reads as NULL).

Facts this relies on (see FORMATS.md section 2):
- times are integer ns on one session time base (0 = session start; can be negative);
  `TARGET_INFO_SESSION_START_TIME.utcEpochNs` anchors it;
- names are ids into `StringIds`; kernel `deviceId` is the CUDA ordinal inside the launching
  process (mapped to `TARGET_INFO_GPU.id` through `TARGET_INFO_CUDA_DEVICE`);
- `globalPid`/`globalTid` pack `pid = (g >> 24) & 0xFFFFFF`, `tid = g & 0xFFFFFF`;
- correlation ids are unique per process only; NVTX domains are per process;
- GPU_METRICS values are integers whose unsigned 32-bit values were once stored signed (nsys bug);
  clock rows say MHz but some captures hold Hz.

Speed: the big tables (kernels, API calls, NVTX) hold only integers, so SQLite formats each chunk of
rows as CSV text itself (`printf` + `group_concat`) and polars parses it; that is cheaper than the
Python tuples a plain `fetchall` builds (see benchmarks/bench_nsys_load.py).
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import re
import sqlite3
import urllib.parse
from pathlib import Path
from typing import Any, Iterable

import polars as pl

from profaudit.errors import InputError
from profaudit.parsers.completeness import mark_incomplete
from profaudit.parsers.base import Probe, ReadOptions, map_unique, new_profile

SQLITE_MAGIC = b"SQLite format 3\x00"
_NSYS_MARKERS = (b"StringIds", b"CUPTI_ACTIVITY_KIND_", b"TARGET_INFO_", b"NVTX_EVENTS", b"META_DATA_EXPORT", b"EXPORT_META_DATA")
_NSYS_TABLES = {
    "StringIds", "ThreadNames", "ProcessStreams", "TARGET_INFO_GPU", "TARGET_INFO_CUDA_GPU", "TARGET_INFO_SESSION_START_TIME",
    "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "META_DATA_EXPORT", "EXPORT_META_DATA",
}

KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
API_TABLES = ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER")
_CHUNK_ROWS = 250_000
_PID_SHIFT = 1 << 24

# nsys's own enumerations, used when the export carries no ENUM_* tables (2020.x schemas). These are
# nsys's numbering, not CUPTI's (CUPTI puts UNKNOWN first for memory kinds): checked against the
# ENUM tables of newer exports and against the copyKind/srcKind/dstKind triples of the 2020.3 corpus file.
MEMCPY_KINDS = {
    0: "Unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA",
    8: "DtoD", 9: "HtoH", 10: "PtoP", 11: "UVM HtoD", 12: "UVM DtoH", 13: "UVM DtoD",
}
MEM_KINDS = {0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed", 5: "Device Static", 6: "Managed Static", 7: "Unknown"}

NVTX_PUSH_POP = (59, 70)  # NvtxPushPopRange, NvtxtPushPopRange
NVTX_START_END = (60, 71)  # NvtxStartEndRange, NvtxtStartEndRange
NVTX_DOMAIN_CREATE = 75

# GPU metric names (the part before " [unit]") with a canonical counter name and its unit.
_CANONICAL_METRICS = {
    "gpc clock frequency": ("sm_clock_hz", "Hz"),
    "sm clock frequency": ("sm_clock_hz", "Hz"),
    "sys clock frequency": ("sys_clock_hz", "Hz"),
    "dram clock frequency": ("mem_clock_hz", "Hz"),
    "memory clock frequency": ("mem_clock_hz", "Hz"),
    "gr active": ("gr_active_pct", "%"),
    "sms active": ("sm_active_pct", "%"),
    "sm active": ("sm_active_pct", "%"),
    "sm issue": ("sm_issue_pct", "%"),
    "tensor active": ("tensor_active_pct", "%"),
    "dram read bandwidth": ("dram_read_bw_pct", "%"),
    "dram write bandwidth": ("dram_write_bw_pct", "%"),
}
# A GPU clock above this many "MHz" is really a value in Hz (100 GHz is no GPU clock).
_MHZ_PLAUSIBLE_MAX = 100_000.0


_LFS_POINTER = re.compile(rb"^version https://git-lfs\.github\.com/spec/v1\s.*?size (\d+)", re.S)


def describe_lfs_pointer(head: bytes) -> str | None:
    """The problem with a Git LFS pointer checked out in place of the file it stands for, or None."""
    m = _LFS_POINTER.match(head)
    if not m:
        return None
    return f"a Git LFS pointer to a {int(m.group(1))}-byte file, not the file itself; fetch it with `git lfs pull`"


def _describe_non_sqlite(head: bytes) -> str:
    if not head:
        return "empty file"
    lfs = describe_lfs_pointer(head)
    if lfs:
        return lfs
    if head.strip(b"\x00") == b"":
        return "the SQLite header page is all zeros (the file is damaged or was never fully written); re-export it with `nsys export --type sqlite`"
    try:
        text = head[:60].decode("utf-8")
        if text.isprintable() or all(ch.isprintable() or ch in "\r\n\t" for ch in text):
            first = text.strip().splitlines()[0][:40] if text.strip() else ""
            return f"not an SQLite database: it starts with text ({first!r})"
    except UnicodeDecodeError:
        pass
    return "not an SQLite database (no 'SQLite format 3' header)"


def check_sqlite_file(path: Path) -> None:
    """Raise InputError for a file that cannot be a complete SQLite database, before SQLite sees it."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as exc:
        raise InputError.unreadable(path, exc) from None
    if not head.startswith(SQLITE_MAGIC):
        raise InputError(path, _describe_non_sqlite(head))
    if len(head) < 100:
        raise InputError(path, f"truncated SQLite database: {size} bytes, shorter than its 100-byte header")
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        raise InputError(path, f"damaged SQLite header (page size {page_size})")
    pages = int.from_bytes(head[28:32], "big")
    # The in-header page count is only authoritative when its version stamp matches the change counter.
    if pages and head[24:28] == head[92:96] and size < pages * page_size:
        raise InputError(path, f"truncated SQLite database: {size} bytes where its header promises {pages * page_size}")
    if size % page_size:
        raise InputError(path, f"truncated SQLite database: {size} bytes is not a whole number of {page_size}-byte pages")
    problem = _sidecar_problem(path, page_size)
    if problem:
        raise InputError(path, problem)


WAL_MAGICS = (b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")
JOURNAL_MAGIC = b"\xd9\xd5\x05\xf9\x20\xa1\x63\xd7"


def _sidecar_problem(path: Path, page_size: int) -> str | None:
    """What a log beside the database says about it: the reader opens the file immutable (no
    locks, nothing written beside the input), and SQLite then reads the database file alone.
    A copy taken while a writer had it open can hold committed rows only in `-wal` (WAL mode),
    or half a transaction whose old pages are in a hot `-journal`: read alone, the file is
    stale or torn, and was loaded as whole (s19 hostile fuzz, a WAL copy: 4 kernels loaded where
    sqlite3 itself sees 2)."""
    wal = Path(f"{path}-wal")
    head = _first_bytes(wal, 32 + 24)
    # a log with at least one frame whose salts match its header (frames of an earlier
    # generation, left after a checkpoint reset the log, do not count)
    if len(head) == 56 and head[:4] in WAL_MAGICS and head[16:24] == head[32 + 8 : 32 + 16]:
        return (f"a write-ahead log beside it ({wal.name}) holds changes the database file lacks (a copy taken while it was open for writing): "
                f"open the database once with sqlite3 so that they are written into it, or copy it again once its writer has closed it")
    journal = Path(f"{path}-journal")
    if _first_bytes(journal, 8) == JOURNAL_MAGIC:
        return (f"a rollback journal beside it ({journal.name}) says a write to it was interrupted, so the file may hold half of it: "
                f"open the database once with sqlite3 to roll it back, or copy it again once its writer has closed it")
    return None


def _first_bytes(p: Path, n: int) -> bytes:
    """Up to `n` bytes from the start of `p`; none where it cannot be read (absent, above all)."""
    try:
        with open(p, "rb") as f:
            return f.read(n)
    except OSError:
        return b""


_lenient_text = functools.partial(str, encoding="utf-8", errors="replace")


def connect_readonly(path: Path) -> sqlite3.Connection:
    """Read-only, immutable connection: no locks, no journal, nothing written next to the input."""
    # quoting the raw bytes keeps a file name that is not valid UTF-8 intact (a str would hold
    # surrogate escapes, which sqlite3 cannot encode)
    uri = "file:" + urllib.parse.quote(os.fsencode(Path(path).resolve())) + "?mode=ro&immutable=1"
    con = sqlite3.connect(uri, uri=True)
    # Some exports store binary blobs as TEXT (nsys 2022.4 put a serialized GPU descriptor in
    # TARGET_INFO_SYSTEM_ENV.value), and NVTX strings are whatever bytes the application passed;
    # one such cell must not fail the whole file.
    con.text_factory = _lenient_text
    return con


def sqlite_table_names(path: Path) -> set[str] | None:
    """The database's table and view names, or None when SQLite cannot read them (a sniff then
    claims the file so that read() names the damage)."""
    try:
        con = connect_readonly(path)
        try:
            return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        finally:
            con.close()
    except (sqlite3.DatabaseError, UnicodeDecodeError):
        # a damaged schema makes SQLite's own error message hold the damaged bytes, which the
        # sqlite3 module then fails to decode
        return None


class _Db:
    """A connection plus the tables and columns this export has."""

    def __init__(self, path: Path):
        self.path = Path(path)
        check_sqlite_file(self.path)
        try:
            self.con = connect_readonly(self.path)
            self.tables = {r[0] for r in self.con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        except sqlite3.DatabaseError as exc:
            raise InputError(self.path, f"damaged SQLite database: {exc}") from None
        except UnicodeDecodeError:
            # SQLite's message about a damaged schema quotes the damaged bytes, which sqlite3 cannot decode
            raise InputError(self.path, "damaged SQLite database: its schema holds bytes that are not UTF-8") from None
        self._cols: dict[str, dict[str, str]] = {}

    def close(self) -> None:
        self.con.close()

    def has(self, table: str, *cols: str) -> bool:
        if table not in self.tables:
            return False
        have = self.columns(table)
        return all(c in have for c in cols)

    def columns(self, table: str) -> dict[str, str]:
        """Column name -> declared type (upper case), in table order."""
        if table not in self._cols:
            self._cols[table] = {r[1]: (r[2] or "").upper() for r in self.con.execute(f'PRAGMA table_info("{table}")')} if table in self.tables else {}
        return self._cols[table]

    def col(self, table: str, name: str, *fallbacks: str) -> str:
        """SQL for the first of these columns that exists, else NULL."""
        have = self.columns(table)
        for c in (name, *fallbacks):
            if c in have:
                return f'"{c}"'
        return "NULL"

    def rows(self, sql: str, params: Iterable = ()) -> list[tuple]:
        return self.con.execute(sql, tuple(params)).fetchall()

    def frame(self, table: str, spec: dict[str, tuple[str, Any]], where: str | None = None) -> pl.DataFrame:
        """`SELECT <expr> AS <alias>, ... FROM table [WHERE ...]` as a polars frame.

        `spec` maps alias -> (SQL expression, polars dtype). Integer/float-only selections go
        through the CSV fast path; anything else (text) through cursor rows.
        """
        schema = {a: dt for a, (_, dt) in spec.items()}
        if table not in self.tables:
            return pl.DataFrame(schema=schema)
        numeric = all(dt in (pl.Int64, pl.Float64) for dt in schema.values()) and all(
            self._numeric_expr(table, e) for e, _ in spec.values()
        )
        if numeric:
            try:
                return self._frame_csv(table, spec, where)
            except sqlite3.OperationalError as exc:
                if "rowid" not in str(exc):
                    raise
            except pl.exceptions.PolarsError:
                pass  # a text value in an INTEGER column: read it the slow, forgiving way
        return self._frame_rows(table, spec, where)

    def _numeric_expr(self, table: str, expr: str) -> bool:
        m = re.fullmatch(r'"([^"]+)"', expr.strip())
        if not m:
            return True  # computed expressions and NULL are built from integer columns here
        t = self.columns(table).get(m.group(1), "")
        return any(k in t for k in ("INT", "REAL", "NUM", "FLOA", "DOUB")) or t == ""

    def _frame_csv(self, table: str, spec, where) -> pl.DataFrame:
        aliases = list(spec)
        schema = {a: spec[a][1] for a in aliases}
        fmt = ",".join(["%s"] * len(aliases))
        exprs = ", ".join(spec[a][0] for a in aliases)
        lo, hi = self.con.execute(f'SELECT min(rowid), max(rowid) FROM "{table}"').fetchone()
        if lo is None:
            return pl.DataFrame(schema=schema)
        cond = f" AND ({where})" if where else ""
        sql = f"SELECT group_concat(printf('{fmt}', {exprs}), char(10)) FROM \"{table}\" WHERE rowid >= ? AND rowid < ?{cond}"
        frames = []
        for a in range(lo, hi + 1, _CHUNK_ROWS):
            text = self.con.execute(sql, (a, a + _CHUNK_ROWS)).fetchone()[0]
            if text:
                frames.append(pl.read_csv(text.encode(), has_header=False, new_columns=aliases, schema=schema))
        return pl.concat(frames) if frames else pl.DataFrame(schema=schema)

    def _frame_rows(self, table: str, spec, where) -> pl.DataFrame:
        schema = {a: dt for a, (_, dt) in spec.items()}
        sql = f'SELECT {", ".join(e for e, _ in spec.values())} FROM "{table}"' + (f" WHERE {where}" if where else "")
        cur = self.con.execute(sql)
        frames = []
        while True:
            rows = cur.fetchmany(_CHUNK_ROWS)
            if not rows:
                break
            frames.append(rows_frame(rows, schema))
        return pl.concat(frames) if frames else pl.DataFrame(schema=schema)


def rows_frame(rows: list[tuple], schema: dict[str, Any]) -> pl.DataFrame:
    """SQLite rows as a frame, column by column and non-strict: SQLite lets any cell hold any type
    (a name stored as a BLOB, text in an id column), and one odd cell becomes null instead of
    failing the table (polars' row builder raised on it)."""
    if not rows:
        return pl.DataFrame(schema=schema)
    return pl.DataFrame([pl.Series(a, c, dtype=dt, strict=False) for (a, dt), c in zip(schema.items(), zip(*rows))])


# ---------------------------------------------------------------------------------------- helpers

def _pid(col: str) -> pl.Expr:
    return ((pl.col(col) // _PID_SHIFT) % _PID_SHIFT).cast(pl.Int64)


def _tid(col: str) -> pl.Expr:
    return (pl.col(col) % _PID_SHIFT).cast(pl.Int64)


def _int_cell(db: _Db, v, where: str) -> int:
    """A nanosecond count from one cell: an integer of 0..2^63 (a damaged file holds text or bytes)."""
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if not isinstance(v, int) or not 0 <= v < 2**63:
        raise InputError(db.path, f"damaged SQLite database: {where} holds {v!r:.40} where a nanosecond count belongs")
    return v


def _name_cell(v) -> str | None:
    """A device name from one cell: a name stored as a BLOB (a damaged export) is decoded like
    TEXT cells are (invalid bytes replaced), instead of reaching polars as bytes in a text column."""
    return _text_cell(v) or None


def _id_cell(db: _Db, v, where: str) -> int | None:
    """An id (pid, GPU id) from one cell: NULL or an integer that fits Int64 (a damaged file holds
    bytes, text or 1e308, which no id column can hold)."""
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**63:
        v = int(v)
    if v is None or (isinstance(v, int) and -(2**63) <= v < 2**63):
        return v
    raise InputError(db.path, f"damaged SQLite database: {where} holds {v!r:.40} where an integer id belongs")


def _strings(db: _Db) -> pl.DataFrame:
    if not db.has("StringIds", "id", "value"):
        return pl.DataFrame(schema={"id": pl.Int64, "value": pl.Utf8})
    strings = db.frame("StringIds", {"id": ('"id"', pl.Int64), "value": ('"value"', pl.Utf8)})
    dup = strings.filter(pl.col("id").is_duplicated())["id"]
    if dup.len():  # its primary key: two names for one id is a damaged database
        raise InputError(db.path, f"damaged SQLite database: StringIds holds id {dup[0]} more than once")
    return strings


def _unnamed_rows(db: _Db, table: str, names: tuple[str, ...], where: str = "") -> int:
    """Rows of `table` that give a name id (any of the integer columns `names`) none of which
    StringIds holds: a foreign key to a row the export lost, whose record would load unnamed
    without a word (s19 hostile fuzz: rows of StringIds deleted; every row gone was already
    refused). `where`: what else makes the name unknown (NVTX: no inline text)."""
    ids = [c for c in names if "INT" in db.columns(table).get(c, "")]
    if not ids or not db.has("StringIds", "id"):
        return 0
    some = " OR ".join(f'"{c}" IS NOT NULL' for c in ids)
    lost = " AND ".join(f'("{c}" IS NULL OR "{c}" NOT IN (SELECT id FROM StringIds))' for c in ids)
    return db.rows(f'SELECT count(*) FROM "{table}" WHERE ({some}) AND {lost}' + (f" AND {where}" if where else ""))[0][0]


def _lookup(expr: pl.Expr, strings: pl.DataFrame) -> pl.Expr:
    return expr.replace_strict(strings["id"], strings["value"], default=None, return_dtype=pl.Utf8)


def _kv(db: _Db, table: str) -> dict[str, str | None]:
    """A name/value table as text: every use of these cells is textual (a version, a path, a
    command line), and SQLite gives a cell any storage class whatever the column's type. A BLOB is
    decoded as TEXT cells are (invalid bytes replaced), a number is its digits, NULL stays None."""
    if not db.has(table, "name", "value"):
        return {}
    out: dict[str, str | None] = {}
    for k, v in db.rows(f'SELECT name, value FROM "{table}"'):
        out.setdefault(_text_cell(k) or "", _text_cell(v))
    return out


def _text_cell(v) -> str | None:
    if v is None:
        return None
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**63:
        # a whole REAL is the integer's digits, as _id_cell reads 1.0 as id 1: 12060.0 (a CUDA
        # driver version) read '12060.0', which no version rule takes for 12.6 (review F18-9)
        return str(int(v))
    return _lenient_text(v) if isinstance(v, bytes) else str(v)


# ---------------------------------------------------------------------------------------- devices

def _gpus(db: _Db) -> tuple[list[dict], pl.DataFrame, pl.DataFrame]:
    """GPUs for metadata, plus two maps from kernel deviceId to (device_id, device_name):
    per process (pid, cuda ordinal) and, as a fallback, by ordinal alone."""
    gpus: list[dict] = []
    pid_rows: list[tuple] = []
    if "TARGET_INFO_GPU" in db.tables:
        cols = db.columns("TARGET_INFO_GPU")
        idcol = "id" if "id" in cols else ("deviceId" if "deviceId" in cols else None)
        want = [c for c in ("name", "busLocation", "chipName", "smCount", "clockRate", "totalMemory", "memoryBandwidth", "l2CacheSize", "computeMajor", "computeMinor", "uuid", "cuDevice") if c in cols]
        sel = ([f'"{idcol}"'] if idcol else ["NULL"]) + [f'"{c}"' for c in want]
        for row in db.rows(f'SELECT {", ".join(sel)} FROM TARGET_INFO_GPU'):
            d = dict(zip(["id"] + want, row))
            d["id"] = _id_cell(db, d["id"], f"TARGET_INFO_GPU.{idcol}")
            g = {
                "id": d.get("id"),
                "name": _name_cell(d.get("name")),
                "bus": d.get("busLocation"),
                "chip": d.get("chipName"),
                "sm_count": d.get("smCount"),
                "peak_clock_hz": d.get("clockRate"),  # a constant peak core clock, not the running clock
                "memory_bytes": d.get("totalMemory"),
                "memory_bandwidth_bytes_per_s": d.get("memoryBandwidth"),
                "l2_cache_bytes": d.get("l2CacheSize"),
                "compute_capability": f"{d['computeMajor']}.{d['computeMinor']}" if d.get("computeMajor") is not None and d.get("computeMinor") is not None else None,
                "uuid": d.get("uuid"),
                # the CUDA ordinal, which kernel deviceId holds; on multi-GPU nodes it need not equal
                # `id` (CUDA orders fastest first, nsys by its own enumeration)
                "cuda_ordinal": d.get("cuDevice") if isinstance(d.get("cuDevice"), int) and d["cuDevice"] >= 0 else None,
            }
            gpus.append({k: v for k, v in g.items() if v is not None})
    if db.has("TARGET_INFO_CUDA_DEVICE", "gpuId", "cudaId"):
        names = {g.get("id"): g.get("name") for g in gpus}
        pidcol = db.col("TARGET_INFO_CUDA_DEVICE", "pid")
        for gpu_id, cuda_id, pid in db.rows(f"SELECT gpuId, cudaId, {pidcol} FROM TARGET_INFO_CUDA_DEVICE"):
            gpu_id, cuda_id, pid = (_id_cell(db, v, f"TARGET_INFO_CUDA_DEVICE.{c}") for v, c in ((gpu_id, "gpuId"), (cuda_id, "cudaId"), (pid, "pid")))
            pid_rows.append((pid, cuda_id, gpu_id, names.get(gpu_id)))
    if db.has("TARGET_INFO_CUDA_GPU", "name"):
        # nsys 2020.x-2021.x: one row per (process, CUDA ordinal); 2021 exports also have a slim
        # TARGET_INFO_GPU (name, bus), whose entry this completes rather than repeats.
        c = db.columns("TARGET_INFO_CUDA_GPU")
        sel = [db.col("TARGET_INFO_CUDA_GPU", "deviceId"), db.col("TARGET_INFO_CUDA_GPU", "pid"), '"name"']
        extra = [x for x in ("pciBusId", "numMultiprocessors", "coreClockRate", "globalMemorySize", "globalMemoryBandwidth", "l2CacheSize", "computeCapabilityMajor", "computeCapabilityMinor") if x in c]
        by_bus = {(g.get("bus"), g.get("name")): g for g in gpus if g.get("bus")}
        seen = set()
        for row in db.rows(f'SELECT {", ".join(sel + [f"{chr(34)}{x}{chr(34)}" for x in extra])} FROM TARGET_INFO_CUDA_GPU'):
            dev, pid, name = row[0], row[1], _name_cell(row[2])
            d = dict(zip(extra, row[3:]))
            pid_rows.append((pid, dev, dev, name or None))
            key = (d.get("pciBusId"), name)
            if key in seen:
                continue
            seen.add(key)
            mem = d.get("globalMemorySize")
            bw = d.get("globalMemoryBandwidth")
            g = {
                "id": dev, "name": name or None, "bus": d.get("pciBusId"), "sm_count": d.get("numMultiprocessors"),
                # this older table gives the core clock in kHz
                "peak_clock_hz": d["coreClockRate"] * 1000 if d.get("coreClockRate") is not None else None,
                # 2020.3 wrote the memory size in MiB (32510 for a 32 GB V100), 2021 in bytes: no GPU
                # has under 1 MiB of memory, so a smaller number is MiB
                "memory_bytes": (mem * 2**20 if mem < 2**20 else mem) if isinstance(mem, int) and mem > 0 else None,
                # kB/s (760080000 for a 760 GB/s RTX 3080); 0 where it was not recorded
                "memory_bandwidth_bytes_per_s": bw * 1000 if isinstance(bw, int) and bw > 0 else None,
                "l2_cache_bytes": d.get("l2CacheSize") or None,
                # both halves or none: an export with only one column (fuzzing: Minor renamed) was a KeyError
                "compute_capability": f"{d['computeCapabilityMajor']}.{d['computeCapabilityMinor']}"
                if d.get("computeCapabilityMajor") is not None and d.get("computeCapabilityMinor") is not None else None,
            }
            g = {k: v for k, v in g.items() if v is not None}
            same = by_bus.get(key)
            if same is not None:
                for k, v in g.items():
                    same.setdefault(k, v)
            else:
                gpus.append(g)
    by_pid = rows_frame(pid_rows, {"_pid": pl.Int64, "_cuda": pl.Int64, "_dev": pl.Int64, "_dname": pl.Utf8}).unique(["_pid", "_cuda"], keep="first")
    # Without a per-process map, a kernel's CUDA ordinal finds its GPU through TARGET_INFO_GPU.cuDevice,
    # and only where that column is missing through the GPU id itself.
    any_rows = [(g.get("cuda_ordinal", g.get("id")), g.get("id"), g.get("name")) for g in gpus if g.get("id") is not None]
    by_any = rows_frame(any_rows, {"_cuda": pl.Int64, "_dev2": pl.Int64, "_dname2": pl.Utf8}).unique(["_cuda"], keep="first")
    return gpus, by_pid, by_any


def _map_devices(df: pl.DataFrame, by_pid: pl.DataFrame, by_any: pl.DataFrame, gpus: list[dict]) -> pl.DataFrame:
    """Replace the CUDA ordinal in `device_id` by the GPU id, and add `device_name`."""
    if df.height == 0:
        return df.with_columns(pl.lit(None, dtype=pl.Utf8).alias("device_name"))
    out = df.join(by_pid, left_on=["process_id", "device_id"], right_on=["_pid", "_cuda"], how="left")
    out = out.join(by_any, left_on="device_id", right_on="_cuda", how="left")
    names = {g.get("name") for g in gpus if g.get("name")}
    only = next(iter(names)) if len(names) == 1 else None
    return out.with_columns(
        pl.coalesce(pl.col("_dev"), pl.col("_dev2"), pl.col("device_id")).alias("device_id"),
        pl.coalesce(pl.col("_dname"), pl.col("_dname2"), pl.lit(only, dtype=pl.Utf8)).alias("device_name"),
    ).drop(["_dev", "_dname", "_dev2", "_dname2"])


# ---------------------------------------------------------------------------------------- tables

def _kernels(db: _Db, strings: pl.DataFrame, by_pid, by_any, gpus, processes: pl.DataFrame) -> pl.DataFrame:
    if KERNEL_TABLE not in db.tables:
        return pl.DataFrame()
    t = KERNEL_TABLE
    cols = db.columns(t)
    I = pl.Int64
    spec = {
        "start_ns": (db.col(t, "start"), I),
        "end_ns": (db.col(t, "end"), I),
        "device_id": (db.col(t, "deviceId"), I),
        "context_id": (db.col(t, "contextId"), I),
        "stream": (db.col(t, "streamId"), I),
        "correlation_id": (db.col(t, "correlationId"), I),
        "_gpid": (db.col(t, "globalPid"), I),
        "grid_x": (db.col(t, "gridX"), I), "grid_y": (db.col(t, "gridY"), I), "grid_z": (db.col(t, "gridZ"), I),
        "block_x": (db.col(t, "blockX"), I), "block_y": (db.col(t, "blockY"), I), "block_z": (db.col(t, "blockZ"), I),
        "registers_per_thread": (db.col(t, "registersPerThread"), I),
        "static_shared_mem_bytes": (db.col(t, "staticSharedMemory"), I),
        "dynamic_shared_mem_bytes": (db.col(t, "dynamicSharedMemory"), I),
    }
    name_cols = {"_demangled": "demangledName", "_short": "shortName", "_mangled": "mangledName"}
    for alias, c in name_cols.items():
        is_id = c in cols and "INT" in cols[c]
        spec[alias] = (db.col(t, c), I if is_id or c not in cols else pl.Utf8)
    k = db.frame(t, spec)
    resolved = []
    for alias in name_cols:
        e = pl.col(alias)
        resolved.append((_lookup(e, strings) if k.schema[alias] == pl.Int64 else e.cast(pl.Utf8)).alias(alias))
    k = k.with_columns(resolved)
    if k["_demangled"].null_count() and k["_mangled"].null_count() < k.height:
        from profaudit.names import demangle

        k = k.with_columns(map_unique(k["_mangled"], demangle).alias("_dm")).with_columns(pl.coalesce(pl.col("_demangled"), pl.col("_dm")).alias("_demangled"))
    k = k.with_columns(pl.coalesce(pl.col("_demangled"), pl.col("_short"), pl.col("_mangled")).alias("name"))
    if k["_short"].null_count():
        from profaudit.names import short_name

        k = k.with_columns(map_unique(k["name"], short_name).alias("_sn")).with_columns(pl.coalesce(pl.col("_short"), pl.col("_sn")).alias("_short"))
    k = k.with_columns(
        _pid("_gpid").alias("process_id"),
        (pl.col("end_ns") - pl.col("start_ns")).cast(pl.Float64).alias("duration_ns"),
        (pl.col("grid_x") * pl.col("grid_y") * pl.col("grid_z")).alias("grid_size"),
        (pl.col("block_x") * pl.col("block_y") * pl.col("block_z")).alias("block_size"),
        (pl.col("static_shared_mem_bytes") + pl.col("dynamic_shared_mem_bytes")).alias("shared_mem_bytes"),
        pl.col("_short").alias("short_name"),
        pl.col("_mangled").alias("mangled_name"),
        pl.lit("nsys").alias("source"),
    )
    k = _map_devices(k, by_pid, by_any, gpus)
    if processes.height:
        k = k.join(processes.rename({"process_id": "_p", "process_name": "module"}), left_on="process_id", right_on="_p", how="left")
    k = k.sort(["start_ns", "correlation_id"], nulls_last=True).with_row_index("kernel_id").with_columns(pl.col("kernel_id").cast(pl.Int64))
    return k.drop([c for c in k.columns if c.startswith("_")])


def _enum(db: _Db, table: str, builtin: dict[int, str], short: bool) -> dict[int, str]:
    if not db.has(table, "id"):
        return dict(builtin)
    col = "name" if short and "name" in db.columns(table) else ("label" if "label" in db.columns(table) else "name")
    out = {}
    for i, v in db.rows(f'SELECT id, "{col}" FROM "{table}"'):
        # SQLite keeps any value in any column: an id or a label of another type is damage, not a
        # name to show (a BLOB label reached polars' String column as a TypeError: fuzz_long s17
        # seed 2034, nsys-sqlite #2438). An id is read as every id cell is; a BLOB label is refused,
        # not decoded as _name_cell decodes a device name: a label is shown as the kind of every
        # transfer that has it, and X'00ff' decoded would show as '\x00\ufffd' (checked, s18).
        i = _id_cell(db, i, f"{table}.id")
        if i is None:
            raise InputError(db.path, f"damaged SQLite database: {table}.id holds None where an integer id belongs")
        if v is not None and not isinstance(v, str):
            raise InputError(db.path, f"damaged SQLite database: {table}.{col} of id {i} holds {v!r:.40} where a text label belongs")
        if short and table == "ENUM_CUDA_MEMCPY_OPER":
            # CUDA_MEMCPY_KIND_HTOD -> HtoD, CUDA_MEMCPY_KIND_UVM_DTOH -> UVM DtoH
            tail = str(v).replace("CUDA_MEMCPY_KIND_", "")
            uvm = tail.startswith("UVM_")
            tail = tail[4:] if uvm else tail
            m = re.fullmatch(r"([A-Z])TO([A-Z])", tail)
            v = (("UVM " if uvm else "") + f"{m.group(1)}to{m.group(2)}") if m else builtin.get(i, str(v))
        out[int(i)] = v
    return out


def _transfers(db: _Db, by_pid, by_any, gpus) -> pl.DataFrame:
    I = pl.Int64
    frames = []
    copy_kinds = _enum(db, "ENUM_CUDA_MEMCPY_OPER", MEMCPY_KINDS, short=True)
    mem_kinds = _enum(db, "ENUM_CUDA_MEM_KIND", MEM_KINDS, short=False)
    common = lambda t: {  # noqa: E731
        "start_ns": (db.col(t, "start"), I), "end_ns": (db.col(t, "end"), I), "device_id": (db.col(t, "deviceId"), I),
        "stream": (db.col(t, "streamId"), I), "correlation_id": (db.col(t, "correlationId"), I), "_gpid": (db.col(t, "globalPid"), I),
        "bytes": (db.col(t, "bytes"), pl.Float64),
    }
    ck = pl.DataFrame({"_k": list(copy_kinds), "_v": list(copy_kinds.values())}, schema={"_k": I, "_v": pl.Utf8})
    mk = pl.DataFrame({"_k": list(mem_kinds), "_v": list(mem_kinds.values())}, schema={"_k": I, "_v": pl.Utf8})
    t = "CUPTI_ACTIVITY_KIND_MEMCPY"
    if t in db.tables:
        m = db.frame(t, {**common(t), "_copy": (db.col(t, "copyKind"), I), "_src": (db.col(t, "srcKind"), I), "_dst": (db.col(t, "dstKind"), I)})
        m = m.with_columns(
            pl.lit("memcpy").alias("kind"),
            pl.col("_copy").replace_strict(ck["_k"], ck["_v"], default=None, return_dtype=pl.Utf8).alias("direction"),
            pl.col("_src").replace_strict(mk["_k"], mk["_v"], default=None, return_dtype=pl.Utf8).alias("src_kind"),
            pl.col("_dst").replace_strict(mk["_k"], mk["_v"], default=None, return_dtype=pl.Utf8).alias("dst_kind"),
        ).with_columns(
            pl.when(pl.col("direction").str.starts_with("UVM "))
            .then(pl.lit("[CUDA Unified Memory memcpy ") + pl.col("direction").str.slice(4) + pl.lit("]"))
            .otherwise(pl.lit("[CUDA memcpy ") + pl.col("direction").fill_null("Unknown") + pl.lit("]"))
            .alias("name")
        )
        frames.append(m)
    t = "CUPTI_ACTIVITY_KIND_MEMSET"
    if t in db.tables:
        s = db.frame(t, {**common(t), "_mem": (db.col(t, "memKind"), I)})
        s = s.with_columns(
            pl.lit("memset").alias("kind"),
            pl.lit(None, dtype=pl.Utf8).alias("direction"),
            pl.lit(None, dtype=pl.Utf8).alias("src_kind"),
            pl.col("_mem").replace_strict(mk["_k"], mk["_v"], default=None, return_dtype=pl.Utf8).alias("dst_kind"),
            pl.lit("[CUDA memset]").alias("name"),
        )
        frames.append(s)
    if not frames:
        return pl.DataFrame()
    keep = ["kind", "direction", "src_kind", "dst_kind", "name", "bytes", "start_ns", "end_ns", "device_id", "stream", "correlation_id", "_gpid"]
    tr = pl.concat([f.select(keep) for f in frames], how="vertical_relaxed")
    tr = tr.with_columns(
        _pid("_gpid").alias("process_id"),
        (pl.col("end_ns") - pl.col("start_ns")).cast(pl.Float64).alias("duration_ns"),
    ).with_columns(
        pl.when(pl.col("duration_ns") > 0).then(pl.col("bytes") * 1e9 / pl.col("duration_ns")).otherwise(None).alias("throughput_bytes_per_s")
    )
    tr = _map_devices(tr, by_pid, by_any, gpus).drop("device_name")
    tr = tr.sort(["start_ns", "correlation_id"], nulls_last=True).with_row_index("transfer_id").with_columns(pl.col("transfer_id").cast(pl.Int64))
    return tr.drop(["_gpid", "process_id"])


def _nvtx(db: _Db, strings: pl.DataFrame) -> pl.DataFrame:
    t = "NVTX_EVENTS"
    if not db.has(t, "start", "eventType"):
        return pl.DataFrame()
    I = pl.Int64
    kinds = NVTX_PUSH_POP + NVTX_START_END + (NVTX_DOMAIN_CREATE,)
    where = f'"eventType" IN ({", ".join(map(str, kinds))})'
    cols = db.columns(t)
    spec = {
        "_rid": ("rowid", I),
        "start_ns": ('"start"', I), "end_ns": (db.col(t, "end"), I), "_type": ('"eventType"', I),
        "_gtid": (db.col(t, "globalTid"), I), "_domain": (db.col(t, "domainId"), I),
    }
    text_is_id = "textId" in cols and "INT" in cols["textId"]
    spec["_textid"] = (db.col(t, "textId") if text_is_id else "NULL", I)
    n = db.frame(t, spec, where)
    if "text" in cols:
        texts = db.frame(t, {"_rid": ("rowid", I), "_text": ('"text"', pl.Utf8)}, f"{where} AND \"text\" IS NOT NULL")
        n = n.join(texts, on="_rid", how="left")
    else:
        n = n.with_columns(pl.lit(None, dtype=pl.Utf8).alias("_text"))
    n = n.with_columns(
        pl.coalesce(_lookup(pl.col("_textid"), strings), pl.col("_text")).alias("name"),
        _pid("_gtid").alias("process_id"),
        _tid("_gtid").alias("thread_id"),
    )
    # Domains are per process: the DomainCreate row's text names (process, domainId).
    domains = n.filter(pl.col("_type") == NVTX_DOMAIN_CREATE).select(
        pl.col("process_id").alias("_dp"), pl.col("_domain").alias("_dd"), pl.col("name").alias("domain")
    ).unique(["_dp", "_dd"], keep="first")
    r = n.filter(pl.col("_type") != NVTX_DOMAIN_CREATE)
    r = r.join(domains, left_on=["process_id", "_domain"], right_on=["_dp", "_dd"], how="left")
    r = r.with_columns(
        pl.when(pl.col("_type").is_in(list(NVTX_PUSH_POP))).then(pl.lit("nvtx_push_pop")).otherwise(pl.lit("nvtx_start_end")).alias("kind"),
        pl.lit("nvtx").alias("_family"),
    )
    return r.select("kind", "name", "domain", "process_id", "thread_id", "start_ns", "end_ns", "_family")


def _api(db: _Db, strings: pl.DataFrame) -> pl.DataFrame:
    frames = []
    I = pl.Int64
    for t in API_TABLES:
        if not db.has(t, "start"):
            continue
        a = db.frame(t, {
            "start_ns": ('"start"', I), "end_ns": (db.col(t, "end"), I), "_gtid": (db.col(t, "globalTid"), I),
            "correlation_id": (db.col(t, "correlationId"), I), "_nameid": (db.col(t, "nameId"), I), "_class": (db.col(t, "eventClass"), I),
        })
        frames.append(a)
    if not frames:
        return pl.DataFrame()
    a = pl.concat(frames)
    from profaudit.names import clean_api_name

    used = strings.filter(pl.col("id").is_in(a["_nameid"].unique().drop_nulls().implode()))
    cleaned = used.with_columns(pl.Series("value", [clean_api_name(v) for v in used["value"].to_list()], dtype=pl.Utf8))
    a = a.with_columns(_lookup(pl.col("_nameid"), cleaned).alias("name"))
    # The function name says which API it belongs to; eventClass (0 runtime, 1 driver) covers names that do not.
    a = a.with_columns(
        pl.when(pl.col("name").str.starts_with("cuda")).then(pl.lit("cuda_runtime"))
        .when(pl.col("name").str.contains(r"^cu[A-Z]")).then(pl.lit("cuda_driver"))
        .when(pl.col("_class") == 1).then(pl.lit("cuda_driver"))
        .otherwise(pl.lit("cuda_runtime")).alias("kind"),
        _pid("_gtid").alias("process_id"),
        _tid("_gtid").alias("thread_id"),
        pl.lit("api").alias("_family"),
    )
    return a.select("kind", "name", "process_id", "thread_id", "start_ns", "end_ns", "correlation_id", "_family")


def _ranges(db: _Db, strings: pl.DataFrame) -> pl.DataFrame:
    from profaudit.timeline import nest_ranges

    parts = [p for p in (_nvtx(db, strings), _api(db, strings)) if p.height]
    if not parts:
        return pl.DataFrame()
    r = pl.concat(parts, how="diagonal_relaxed")
    r = r.sort(["start_ns", "end_ns"], nulls_last=True).with_row_index("range_id").with_columns(
        pl.col("range_id").cast(pl.Int64),
        (pl.col("end_ns") - pl.col("start_ns")).cast(pl.Float64).alias("duration_ns"),
        pl.lit("").alias("profile_id"),
    )
    # NVTX stacks and API-call stacks nest independently on a thread.
    r = nest_ranges(r, by=("process_id", "thread_id", "_family"))
    return r.drop(["_family", "profile_id"])


def _counters(db: _Db, notes: list[str], gpus: list[dict]) -> pl.DataFrame:
    if not db.has("GPU_METRICS", "timestamp", "metricId", "value"):
        return pl.DataFrame()
    I = pl.Int64
    vt = db.columns("GPU_METRICS").get("value", "")
    vdt = pl.Float64 if any(x in vt for x in ("REAL", "FLOA", "DOUB")) else I
    g = db.frame("GPU_METRICS", {
        "timestamp_ns": ('"timestamp"', I), "_type": (db.col("GPU_METRICS", "typeId"), I),
        "_metric": ('"metricId"', I), "_value": ('"value"', vdt),
    })
    g = g.with_columns(pl.col("_value").cast(pl.Float64))
    if db.has("TARGET_INFO_GPU_METRICS", "metricId", "metricName"):
        info = rows_frame(
            db.rows(f'SELECT DISTINCT {db.col("TARGET_INFO_GPU_METRICS", "typeId")}, metricId, metricName FROM TARGET_INFO_GPU_METRICS'),
            {"_type": I, "_metric": I, "raw_name": pl.Utf8},
        )
        if info["_type"].null_count() == info.height or g["_type"].null_count() == g.height:
            g = g.join(info.drop("_type").unique("_metric"), on="_metric", how="left")
        else:
            g = g.join(info.unique(["_type", "_metric"]), on=["_type", "_metric"], how="left")
    else:
        g = g.with_columns(pl.lit(None, dtype=pl.Utf8).alias("raw_name"))
    g = g.with_columns(pl.coalesce(pl.col("raw_name"), pl.lit("metric ") + pl.col("_metric").cast(pl.Utf8)).alias("raw_name"))
    # Unsigned 32-bit values once stored as signed (nsys bug): a negative sample is value + 2^32.
    # A cast value far above everything else that metric recorded (> 4x its largest non-negative
    # sample) was not a wrapped large value but garbage, and is dropped.
    negative = int((g["_value"] < 0).sum())
    if negative:
        nulls_before = g["_value"].null_count()
        neg = pl.col("_value") < 0
        cast = pl.col("_value") + 2.0**32
        top = pl.when(~neg).then(pl.col("_value")).otherwise(None).max().over("raw_name")
        g = g.with_columns(
            pl.when(~neg).then(pl.col("_value")).when(top.is_null() | (cast <= 4 * top)).then(cast).otherwise(None).alias("_value")
        )
        dropped = int(g["_value"].null_count()) - nulls_before
        notes.append(
            f"{negative} negative GPU metric samples read as unsigned 32-bit (nsys signed/unsigned export bug)"
            + (f"; {dropped} of them implausible after that and dropped" if dropped else "")
        )
    names = g["raw_name"].unique().to_list()
    canon: dict[str, tuple[str, str, float]] = {}
    for raw in names:
        m = re.match(r"^(.*?)\s*\[([^\]]*)\]\s*$", raw or "")
        base, unit = (m.group(1), m.group(2)) if m else (raw or "", "")
        c = _CANONICAL_METRICS.get(base.strip().lower())
        scale = 1.0
        if c and c[1] == "Hz":
            if unit.strip().lower() == "mhz":
                med = g.filter(pl.col("raw_name") == raw)["_value"].median()
                if med is not None and med > _MHZ_PLAUSIBLE_MAX:
                    notes.append(f"GPU metric {raw!r} holds values around {med:.4g}: already Hz despite its MHz label")
                else:
                    scale = 1e6
            elif unit.strip().lower() == "khz":
                scale = 1e3
            canon[raw] = (c[0], "Hz", scale)
        elif c:
            canon[raw] = (c[0], c[1], 1.0)
        else:
            canon[raw] = (raw, unit.replace("Throughput ", "").strip() or "", 1.0)
    cmap = pl.DataFrame(
        {"raw_name": list(canon), "counter": [v[0] for v in canon.values()], "unit": [v[1] for v in canon.values()], "_scale": [v[2] for v in canon.values()]},
        schema={"raw_name": pl.Utf8, "counter": pl.Utf8, "unit": pl.Utf8, "_scale": pl.Float64},
    )
    g = g.join(cmap, on="raw_name", how="left")
    ids = {gp.get("id") for gp in gpus if gp.get("id") is not None}
    if len(ids) == 1:
        device = pl.lit(next(iter(ids)), dtype=pl.Int64)
    else:
        # The GPU index sits in the low byte of typeId as third-party readers decode it; NVIDIA
        # does not document it, so say where the number came from.
        device = pl.col("_type") % 256
        if g.height:
            notes.append("GPU metric device_id taken from the low byte of GPU_METRICS.typeId (undocumented encoding)")
    return g.select(
        "counter", "raw_name", "unit", "timestamp_ns", (pl.col("_value") * pl.col("_scale")).alias("value"), device.alias("device_id")
    ).sort(["device_id", "counter", "timestamp_ns"], nulls_last=True)


def _processes(db: _Db) -> pl.DataFrame:
    if not db.has("PROCESSES", "name"):
        return pl.DataFrame(schema={"process_id": pl.Int64, "process_name": pl.Utf8})
    pidexpr = db.col("PROCESSES", "pid")
    rows = db.rows(f'SELECT {pidexpr}, {db.col("PROCESSES", "globalPid")}, name FROM PROCESSES')
    out = []
    for pid, gpid, name in rows:
        pid, gpid = _id_cell(db, pid, "PROCESSES.pid"), _id_cell(db, gpid, "PROCESSES.globalPid")
        if pid is None and gpid is not None:
            pid = (gpid >> 24) & 0xFFFFFF
        out.append((pid, name))
    return rows_frame(out, {"process_id": pl.Int64, "process_name": pl.Utf8}).unique("process_id", keep="first")


# ---------------------------------------------------------------------------------------- metadata

def _cuda_version(v: str | None) -> str | None:
    try:
        n = int(v)  # the driver reports 12060 for 12.6
    except (TypeError, ValueError):
        return v or None
    return f"{n // 1000}.{(n % 1000) // 10}"


def _driver_version(v: str | None) -> str | None:
    """NvDriverVersion as the driver prints it. nsys 2022.x wrote a Linux driver as one integer
    (5452906 for 545.29.06, next to CudaDriverVersion 12030, the CUDA 12.3 that driver ships);
    "0" means the host had no NVIDIA driver loaded (a login node)."""
    v = (v or "").strip()
    if v in ("", "0"):
        return None
    if v.isdigit() and len(v) == 7:
        n = int(v)
        return f"{n // 10000}.{n // 100 % 100:02d}.{n % 100:02d}"
    return v


def _metadata(db: _Db, gpus: list[dict], kernels: pl.DataFrame, ranges: pl.DataFrame, processes: pl.DataFrame, notes: list[str]) -> dict[str, Any]:
    export = _kv(db, "META_DATA_EXPORT") or _kv(db, "EXPORT_META_DATA")
    capture = _kv(db, "META_DATA_CAPTURE")
    env = _kv(db, "TARGET_INFO_SYSTEM_ENV")
    md: dict[str, Any] = {"tool": "nsys"}
    # The version that wrote the SQLite; the capture's own version shows in its install path.
    md["tool_version"] = export.get("EXPORT_PRODUCT_VERSION")
    m = re.search(r"nsight-systems[-/](\d{4}\.\d+(?:\.\d+)*)", env.get("TargetInstallDir", "") or "")
    if m:
        md["nsys_capture_version"] = m.group(1)
        md["tool_version"] = md["tool_version"] or m.group(1)
    if export.get("EXPORT_SCHEMA_VERSION"):
        md["nsys_export_schema_version"] = export["EXPORT_SCHEMA_VERSION"]
    named = [g for g in gpus if g.get("name")]
    if kernels.height and "device_name" in kernels.columns and kernels["device_name"].null_count() < kernels.height:
        md["device_name"] = kernels.group_by("device_name").len().sort("len", descending=True).drop_nulls("device_name")["device_name"][0]
    elif named:
        md["device_name"] = named[0]["name"]
    ids = {(g.get("bus"), g.get("name"), g.get("uuid")) for g in gpus}
    md["device_count"] = len(ids) if gpus else None
    if gpus:
        md["gpus"] = gpus
    md["driver_version"] = _driver_version(env.get("NvDriverVersion"))
    md["cuda_version"] = _cuda_version(env.get("CudaDriverVersion"))
    if md["cuda_version"]:
        md["cuda_version_origin"] = "driver (CudaDriverVersion: the CUDA version the driver supports)"
    md["host"] = env.get("Hostname") or capture.get("DEVICE_DISPLAY_NAME") or None
    cmds = []
    for k, v in capture.items():
        mm = re.fullmatch(r"PROCESS_(\d+):COMMAND", k)
        if mm and v:
            args = capture.get(f"PROCESS_{mm.group(1)}:ARGUMENTS") or capture.get(f"PROCESS_{mm.group(1)}:ARGS")
            cmds.append(f"{v} {args}".strip() if args else str(v))
    if not cmds and processes.height and (kernels.height or ranges.height):
        # No recorded launch command: name the processes that did CUDA work.
        pids = pl.concat([f["process_id"] for f in (kernels, ranges) if f.height]).drop_nulls().unique()
        cmds = processes.filter(pl.col("process_id").is_in(pids.implode()))["process_name"].drop_nulls().to_list()
    md["command_line"] = " ; ".join(cmds) if cmds else None
    if capture.get("PROCESS_0:WORKING_DIR"):
        md["working_dir"] = capture["PROCESS_0:WORKING_DIR"]
    if db.has("TARGET_INFO_SESSION_START_TIME", "utcEpochNs"):
        row = db.rows("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1")
        if row and row[0][0] is not None:
            ns = _int_cell(db, row[0][0], "TARGET_INFO_SESSION_START_TIME.utcEpochNs")
            md["session_start_utc_ns"] = ns
            md["capture_time"] = _dt.datetime.fromtimestamp(ns // 1_000_000_000, tz=_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{ns % 1_000_000_000:09d}Z"
    if db.has("ANALYSIS_DETAILS", "duration"):
        row = db.rows("SELECT duration FROM ANALYSIS_DETAILS LIMIT 1")
        if row and row[0][0] is not None:
            md["session_duration_ns"] = _int_cell(db, row[0][0], "ANALYSIS_DETAILS.duration")
    md["time_base"] = "ns since session start (nsys session time; can be negative)"
    md["nsys_tables"] = sorted(t for t in db.tables if not t.startswith("ENUM_"))
    if notes:
        md["notes"] = list(notes)
    return md


# ---------------------------------------------------------------------------------------- entry points

def read_sqlite(path: Path, options: ReadOptions | None = None, *, parser=None, display_path: Path | None = None, extra_metadata: dict | None = None):
    """Read one nsys SQLite export into a Profile. `display_path` names the file the user gave
    (a .nsys-rep whose export this is); ids and metadata then refer to it."""
    path = Path(path)
    shown = Path(display_path) if display_path is not None else path
    options = options or ReadOptions()
    db = _Db(path)
    try:
        if not (db.tables & _NSYS_TABLES):
            raise InputError(shown, "SQLite database without Nsight Systems tables (no StringIds, TARGET_INFO_* or CUPTI_ACTIVITY_* table)")
        notes: list[str] = []
        named = [t for t in (KERNEL_TABLE, *API_TABLES) if t in db.tables]
        if named and not db.has("StringIds", "id", "value"):
            # every kernel and API name is an id into StringIds: without it all would load unnamed
            raise InputError(shown, f"incomplete Nsight Systems export: {named[0]} is present but the StringIds table that names its rows is missing")
        strings = _strings(db)
        gpus, by_pid, by_any = _gpus(db)
        processes = _processes(db)
        kernels = _kernels(db, strings, by_pid, by_any, gpus, processes)
        transfers = _transfers(db, by_pid, by_any, gpus)
        ranges = _ranges(db, strings)
        counters = _counters(db, notes, gpus)
        launches = 0
        if KERNEL_TABLE not in db.tables:
            if ranges.height:
                launches = ranges.filter(
                    pl.col("kind").is_in(["cuda_runtime", "cuda_driver"]) & pl.col("name").str.contains(r"^cu(?:da)?LaunchKernel|^cu(?:da)?LaunchCooperativeKernel|^cu(?:da)?GraphLaunch")
                ).height
            if launches:
                notes.append(
                    f"no CUDA kernel records although the CUDA API trace has {launches} kernel or graph launch calls: "
                    "GPU activity was not collected (seen under WSL, and when the capture ends before the records are flushed)"
                )
            else:
                notes.append("no CUDA kernel table in this export (kernels were not traced, or the capture saw none)")
        md = _metadata(db, gpus, kernels, ranges, processes, notes)
        if KERNEL_TABLE not in db.tables and launches:
            mark_incomplete(md, f"no CUDA kernel table although the CUDA API trace has {launches} kernel or graph launch calls")
        nvtx_text = '"text" IS NULL' if "text" in db.columns("NVTX_EVENTS") else ""
        for table, ids, where, what in ((KERNEL_TABLE, ("demangledName", "shortName", "mangledName"), "", "kernel records"),
                                        *((t, ("nameId",), "", "CUDA API calls") for t in API_TABLES),
                                        ("NVTX_EVENTS", ("textId",), nvtx_text, "NVTX events")):
            unnamed = _unnamed_rows(db, table, ids, where)
            if unnamed:
                mark_incomplete(md, f"{unnamed:,} {what} in {table} name only string ids that StringIds lacks: their names are unknown")
    except sqlite3.DatabaseError as exc:
        raise InputError(shown, f"damaged SQLite database: {exc}") from None
    finally:
        db.close()
    if kernels.height and ranges.height:
        from profaudit.timeline import attribute_kernels_to_nvtx

        # NVTX without any CUDA API table (a capture range that left the launch calls out) has
        # no launch to attribute a kernel through
        if (ranges["kind"].is_in(["nvtx_push_pop"])).any() and "correlation_id" in ranges.columns:
            attributed = attribute_kernels_to_nvtx(
                kernels=kernels.with_columns(pl.lit("").alias("profile_id")), ranges=ranges.with_columns(pl.lit("").alias("profile_id"))
            )
            kernels = kernels.with_columns(attributed["nvtx_range"])
    if options.device:
        md["device_name"] = options.device
        md["device_name_origin"] = "option"
        if kernels.height:
            kernels = kernels.with_columns(pl.col("device_name").fill_null(options.device))
    if extra_metadata:
        md.update(extra_metadata)
    tables = {"kernels": kernels, "transfers": transfers, "ranges": ranges, "counters": counters}
    return new_profile(shown, parser or PARSER, {k: (v if v.height else None) for k, v in tables.items()}, md)


class NsysSqliteParser:
    name = "nsys-sqlite"
    source = "nsys"
    suffixes = (".sqlite", ".sqlite3", ".db")
    description = "Nsight Systems SQLite export (nsys export --type sqlite), nsys 2020.3 to 2026 schemas"

    def sniff(self, probe: Probe) -> bool:
        head = probe.raw_head
        if head.startswith(SQLITE_MAGIC):
            if any(m in head for m in _NSYS_MARKERS):
                return True
            if probe.name_endswith(".sqlite", ".sqlite3"):
                return self._has_nsys_tables(probe.path)
            return False
        # A damaged or mislabelled `.sqlite` is still ours to explain (zeroed header, text, truncation).
        return probe.name_endswith(".sqlite", ".sqlite3")

    @staticmethod
    def _has_nsys_tables(path: Path) -> bool:
        names = sqlite_table_names(path)
        return names is None or bool(names & _NSYS_TABLES)  # damaged (None): let read() name the problem

    def read(self, path: Path, options: ReadOptions):
        return read_sqlite(Path(path), options, parser=self)


PARSER = NsysSqliteParser()
