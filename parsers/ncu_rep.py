"""Nsight Compute reports (`.ncu-rep`, `.ncu-repz`, the 2019-era `.nsight-cuprof-report`).

Values come from NVIDIA's `ncu_report` reader; this module only renames and derives. Two things
the reader does not do are done here from the file's own framing:

* Integrity. `ncu_report` loads a truncated report without complaint (keeping the kernels before
  the cut) and "loads" random bytes as an empty report. The file is `NVR\\0`, a u32-length-prefixed
  FileHeader, then blocks: a u32-prefixed BlockHeader (NumSources=1, NumResults=2,
  SessionDetails=3, StringTable=4, PayloadSize=5, Process=6) followed by PayloadSize bytes holding
  NumSources + NumResults u32-prefixed entries. Every length is checked against the file (and the
  entries against PayloadSize) before the reader is trusted, and the number of kernels the reader
  returns must equal the NumResults the blocks declare. Layout seen in every corpus report from
  2019.x to 2025.2 (field names: extra-p's `ncu-report.ksy`/`ProfilerReport.proto` stubs).
* Session facts. The reader does not expose ReportSessionDetails: creation time (2), host and
  target SystemInfo (3, 4), DeviceAttributes (6), VersionInfo pairs (8: "CUDA Version",
  "Display Driver Version", "Nsight Compute Target" = the capturing ncu version), ProfilerSettings
  (10; its field 8 is the GUI's clock-control mode) and, in 2022+ reports, the ncu command line
  (11; not in the published .proto, seen as the command line in every 2022+ corpus report). They
  are decoded here with the shared protobuf wire reader.

Limits: a cut that falls exactly on the block boundary before a later kernel result (or before
the source block ncu writes right ahead of it) leaves the bytes a capture of fewer kernels would
have written: the format counts its results nowhere, and a result carries no index of a total
(thread, correlation id, handles, names, a timestamp) and nothing follows the last one. Such a cut
loads the results before it; only a recorded `-c N` larger than what is left marks the profile
`complete: false`. Every other record-boundary cut is refused (see `_check_complete`; tests/
test_ncu_rep_cuts.py cuts every corpus report at every record). `.ncu-repz` is the whole report in zstd
frames: it is decompressed to a temporary file for the same checks (needs `zstandard`), while the
reader opens the original.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import functools
import gc
import os
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from profaudit import schema
from profaudit.errors import InputError, require
from profaudit.names import short_name
from profaudit.parsers import ncu_common
from profaudit.parsers.base import Probe, ReadOptions, new_profile
from profaudit.parsers.completeness import mark_incomplete
from profaudit.parsers.isolate import run_isolated

# The child side (what reads through ncu_report, in the isolation zygote's children) is its own
# light module; its set-up and warm-up are named here too, where the bench swaps them.
from profaudit.parsers.ncu_child import AGG, COLS, NUM_COLS, Columns, nvperf_library, prepare_reader, read_actions, warm_reader  # noqa: F401
from profaudit.parsers.protowire import WireError, decode, iter_fields, text
from profaudit.parsers.textsafe import utf8_name

MAGIC = b"NVR\x00"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"  # .ncu-repz is the whole .ncu-rep in zstd frames
SUFFIXES = (".ncu-rep", ".ncu-repz", ".nsight-cuprof-report")
_U32 = struct.Struct("<I")
# A result entry starts with ThreadID, APICallID, ProgramHandle, KernelID, the three names and the
# launch dims; at most this much of it is read for them, never the metric payload behind.
_RESULT_HEAD_BYTES = 65536
# Whether the zygote is a fresh interpreter (isolate's `spawn`) or a copy of this process; the
# bench's "forked" column reads with False (read_report looks it up at each call).
SPAWN_ZYGOTE = True


# ---------------------------------------------------------------------------------------------
# The container
# ---------------------------------------------------------------------------------------------
@dataclass
class ResultHead:
    """The leading fields of one profile result, in file order."""

    process_id: int | None
    process_name: str | None
    host: str | None
    thread_id: int | None
    api_call_id: int | None
    mangled: str | None
    function: str | None
    global_size: tuple[int, int, int] | None = None  # GlobalWorkSize (10)
    local_size: tuple[int, int, int] | None = None  # LocalWorkSize (11)


@dataclass
class Container:
    file_version: int | None = None
    num_results: int = 0
    results: list[ResultHead] = field(default_factory=list)
    session: dict[str, Any] = field(default_factory=dict)
    devices: dict[int, str] = field(default_factory=dict)
    process_ids: set[int] = field(default_factory=set)


def _what_it_is(head: bytes) -> str:
    s = head.lstrip()[:1]
    if not head:
        return "it is empty"
    if s in (b"{", b"["):
        return "it looks like JSON"
    if head[:2] == b"\x1f\x8b":
        return "it is gzip data"
    if head[:4] == b"PK\x03\x04":
        return "it is a zip archive"
    if head.startswith(b"SQLite format 3"):
        return "it is an SQLite database"
    if head.startswith(b"NVIDIA"):
        return "it looks like an Nsight Systems report"
    return f"it starts with {head[:8]!r}"


def _session_facts(buf: bytes, f: dict[int, list], out: dict[str, Any], devices: dict[int, str]) -> None:
    """The facts of one ReportSessionDetails message, decoded (`f`), into `out` (later blocks add
    to earlier ones)."""
    if 2 in f and isinstance(f[2][0], int):
        out.setdefault("creation_time_s", f[2][0])
    for num, key in ((3, "host_system"), (4, "target_system")):
        if num in f:
            s = decode(buf, *f[num][0])
            info = {}
            for k, name in ((1, "os"), (2, "os_build"), (3, "cpu"), (4, "arch"), (5, "computer_name")):
                if k in s and isinstance(s[k][0], tuple):
                    info[name] = text(buf, s[k][0]).strip()
            if info:
                out.setdefault(key, info)
    for span in f.get(6, []):
        d = decode(buf, *span)
        if 1 in d and isinstance(d[1][0], int):
            name = text(buf, d[2][0]) if 2 in d and isinstance(d[2][0], tuple) else ""
            devices[d[1][0]] = name
        elif 2 in d and isinstance(d[2][0], tuple):
            devices.setdefault(0, text(buf, d[2][0]))
    for span in f.get(8, []):
        d = decode(buf, *span)
        if 1 in d and 2 in d:
            out.setdefault("versions", {})[text(buf, d[1][0])] = text(buf, d[2][0])
    if 9 in f:
        d = decode(buf, *f[9][0])
        if 1 in d and isinstance(d[1][0], tuple):
            out.setdefault("executable", text(buf, d[1][0]))
    if 10 in f:
        d = decode(buf, *f[10][0])
        if 8 in d and isinstance(d[8][0], tuple):
            out.setdefault("settings_clock_control", text(buf, d[8][0]))
        if 4 in d and isinstance(d[4][0], tuple):
            out.setdefault("settings_activity", text(buf, d[4][0]))
    if 11 in f and isinstance(f[11][0], tuple):
        out.setdefault("command_line", text(buf, f[11][0]).strip())


def _process(buf: bytes, span: tuple[int, int]) -> tuple[int | None, str | None, str | None]:
    d = decode(buf, *span)
    pid = d[1][0] if 1 in d and isinstance(d[1][0], int) else None
    host = text(buf, d[2][0]) if 2 in d and isinstance(d[2][0], tuple) else None
    name = text(buf, d[3][0]) if 3 in d and isinstance(d[3][0], tuple) else None
    return pid, host, name


def _xyz(buf: bytes, span) -> tuple[int, int, int] | None:
    if not isinstance(span, tuple):
        return None
    d = decode(buf, *span)
    vals = [d.get(k, [0])[0] for k in (1, 2, 3)]  # proto3 leaves zero fields out
    return tuple(vals) if all(isinstance(v, int) for v in vals) else None  # type: ignore[return-value]


def _result_head(f, pos: int, length: int, proc: tuple[int | None, str | None, str | None]) -> ResultHead:
    """The leading fields of the result entry at `pos` (its first `length` bytes are the message).

    The names come before the metric payload; a small window usually holds them, and it grows
    only for very long (templated) names.
    """
    window = 1024
    while True:
        f.seek(pos)
        buf = f.read(min(length, window))
        vals: dict[int, Any] = {}
        complete = len(buf) == length
        try:
            for fnum, _wt, v in iter_fields(buf):
                if fnum > 11:
                    complete = True
                    break
                vals.setdefault(fnum, v)
        except WireError:
            pass  # the window cut a field: widen it, or keep what was read before the cut
        if complete or window >= _RESULT_HEAD_BYTES:
            break
        window *= 4

    def s(k):
        v = vals.get(k)
        return text(buf, v) if isinstance(v, tuple) else None

    def i(k):
        v = vals.get(k)
        return v if isinstance(v, int) else None

    try:
        gsize, lsize = _xyz(buf, vals.get(10)), _xyz(buf, vals.get(11))
    except WireError:
        gsize = lsize = None
    return ResultHead(proc[0], proc[2], proc[1], i(1), i(2), s(5), s(6), gsize, lsize)


def scan_container(path: Path, label: Path | None = None) -> Container:
    """Validate the framing of a report and read its session facts and result heads.

    Raises InputError naming the byte offset where a truncated or corrupt file goes wrong. Only
    headers and the first bytes of each result are read, so this costs little even for large files.
    `label` is the file to name in errors when `path` is a decompressed copy.
    """
    size = os.path.getsize(path)
    c = Container()
    src = path
    path = label or path  # errors name the user's file, not a decompressed copy
    with open(src, "rb") as f:
        head = f.read(8)
        if head[:4] != MAGIC:
            raise InputError(path, f"not an Nsight Compute report: no NVR\\0 magic ({_what_it_is(head)})")
        if size < 8:
            raise InputError(path, f"truncated Nsight Compute report: {size} bytes, ends inside the file header")
        (hlen,) = _U32.unpack(head[4:8])
        if 8 + hlen > size:
            raise InputError(path, f"truncated Nsight Compute report: file header at byte 4 claims {hlen} bytes, file has {size}")
        fh = f.read(hlen)
        try:
            d = decode(fh)
            c.file_version = d[1][0] if 1 in d and isinstance(d[1][0], int) else None
        except WireError as exc:
            raise InputError(path, f"corrupt Nsight Compute report: file header unreadable ({exc})") from None
        off = 8 + hlen
        block = 0
        blocks: list[tuple[int, frozenset, int]] = []
        while off < size:
            if size - off < 4:
                raise InputError(path, f"truncated Nsight Compute report: ends inside the length of block {block} at byte {off}")
            f.seek(off)
            (blen,) = _U32.unpack(f.read(4))
            if off + 4 + blen > size:
                raise InputError(path, f"truncated Nsight Compute report: block {block} header at byte {off} claims {blen} bytes, {size - off - 4} remain")
            hb = f.read(blen)
            try:
                h = decode(hb)
            except WireError as exc:
                raise InputError(path, f"corrupt Nsight Compute report: block {block} header at byte {off} unreadable ({exc})") from None
            def num(k):
                v = h.get(k, [0])[0]
                return v if isinstance(v, int) else 0
            n_src, n_res, payload = num(1), num(2), num(5)
            proc: tuple[int | None, str | None, str | None] = (None, None, None)
            # the session message's fields, decoded once: for its facts and for the block's
            # field set (_check_complete); a message that does not decode has none
            sf: dict[int, list] = {}
            try:
                if 3 in h and isinstance(h[3][0], tuple):
                    sf = decode(hb, *h[3][0])
                    _session_facts(hb, sf, c.session, c.devices)
                if 6 in h and isinstance(h[6][0], tuple):
                    proc = _process(hb, h[6][0])
                    if proc[0] is not None:
                        c.process_ids.add(proc[0])
            except (WireError, IndexError, TypeError):  # session facts are optional: note, go on
                c.session.setdefault("unreadable_session_blocks", 0)
                c.session["unreadable_session_blocks"] += 1
            pstart = off + 4 + blen
            pend = pstart + payload
            if pend > size:
                raise InputError(path, f"truncated Nsight Compute report: block {block} at byte {off} declares {payload} payload bytes, only {size - pstart} remain")
            pos = pstart
            for k in range(n_src + n_res):
                if pend - pos < 4:
                    raise InputError(path, f"corrupt Nsight Compute report: block {block} at byte {off}: entry {k} of {n_src + n_res} lies outside its {payload}-byte payload")
                f.seek(pos)
                (elen,) = _U32.unpack(f.read(4))
                if pos + 4 + elen > pend:
                    raise InputError(path, f"corrupt Nsight Compute report: block {block} at byte {off}: entry {k} at byte {pos} claims {elen} bytes beyond its payload")
                if k >= n_src:
                    c.results.append(_result_head(f, pos + 4, elen, proc))
                pos += 4 + elen
            if pos != pend:
                raise InputError(path, f"corrupt Nsight Compute report: block {block} at byte {off}: entries fill {pos - pstart} of {payload} payload bytes")
            c.num_results += n_res
            blocks.append((n_src, n_res, frozenset(sf), off))
            off = pend
            block += 1
    _check_complete(path, c, blocks, size)
    return c


def _check_complete(path: Path, c: Container, blocks: list, size: int) -> None:
    """Cuts that fall exactly on a block boundary pass the framing check; these catch the ones
    that leave the report visibly unfinished.

    The file is append-only: a FileHeader holding only the format version, then blocks in the order
    ncu produces them, with no count of results anywhere and nothing written after the last result.
    Every corpus report (2019.x-2025.2) follows one of two layouts:

    * command line: session block (creation time, host), source block, first result (with the
      metric-name string table), then DeviceAttributes (6), VersionInfo (8, one block per pair),
      DeviceProperties (5), TargetSystemInfo (4) and, since 2022.3, the command line (11), each in a
      block of its own; then the other results, each preceded by a source block when it runs code
      of a module not seen before (2020.2 wrote only 6 and 8);
    * GUI: every session field in the first block, then sources and results.

    Refused: no result; no device information (a cut before ncu's first session block after the
    first result); a last block holding only 5/6/8 (the session sequence stops early); a report of
    2022.3 or later in the command-line layout without its command line (the sequence stops after
    4); a source block with no result after it (ncu writes one only right before the result that
    needs it). A cut between later results, or after the session sequence of the first, leaves the
    file a shorter capture would have been, byte for byte up to the cut: the framing cannot tell it
    (see `launch_count_shortfall` for the one hint a report can hold).
    """
    if not c.num_results:
        raise InputError(path, f"Nsight Compute report without kernel results: truncated after byte {size}, or the capture profiled nothing")
    seen = set().union(*(f for _s, _n, f, _o in blocks))
    if 6 not in seen:
        raise InputError(path, f"truncated Nsight Compute report: ends at byte {size}, before the device information ncu writes after the first kernel")
    n_src, n_res, fields, off = blocks[-1]
    if not n_res and fields and fields <= {5, 6, 8}:
        raise InputError(path, f"truncated Nsight Compute report: ends at byte {size} inside the session information (last block at byte {off})")
    if n_src and not n_res:
        raise InputError(path, f"truncated Nsight Compute report: ends at byte {size} after a source block (at byte {off}) whose kernel result is missing; ncu writes a source block right before the result that needs it")
    first_result = next(i for i, b in enumerate(blocks) if b[1])
    device_block = next(i for i, b in enumerate(blocks) if 6 in b[2])
    version = _target_version(c)
    if device_block > first_result and 11 not in seen and version is not None and version >= (2022, 3):
        raise InputError(path, f"truncated Nsight Compute report: ends at byte {size} inside the session information (no command line, which ncu {version[0]}.{version[1]} writes after the first kernel's system information)")


def _target_version(c: Container) -> tuple[int, int] | None:
    """(year, minor) of the capturing ncu ("Nsight Compute Target" = "2022.3.0.0 (build ...)")."""
    target = (c.session.get("versions") or {}).get("Nsight Compute Target") or ""
    parts = target.split(" ", 1)[0].split(".")
    if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
        return int(parts[0]), int(parts[1])
    return None


def launch_count_shortfall(c: Container) -> str | None:
    """Why a report may have lost results at a block boundary, when it can hold a hint: the
    recorded command line asked for `-c N` launches and fewer results are in the file. (The
    application may also have launched fewer kernels than asked, so this is not a refusal.)"""
    asked = ncu_common.launch_count(c.session.get("command_line"))
    if asked is None or c.num_results >= asked:
        return None
    return (
        f"the recorded ncu command line asked for {asked} kernel launches (-c {asked}) and the report holds "
        f"{c.num_results}: the application launched fewer, or the file was cut after its last whole result"
    )


# ---------------------------------------------------------------------------------------------
# Reading the report
# ---------------------------------------------------------------------------------------------
_NP_TYPES = {"q": "int64", "d": "float64"}
_NUM_ORDER = tuple(c for c in COLS if c in NUM_COLS)
_STR_ORDER = tuple(c for c in COLS if c not in NUM_COLS)
# columns whose array type is not the metrics table's dtype (none today: int64/float64 arrays and
# String texts are what the schema declares), cast once built; worked out once, not per chunk
_CAST = {
    c: t for c, t in schema.METRICS.polars_schema.items()
    if c in COLS and t != (pl.String if c not in NUM_COLS else pl.Float64 if NUM_COLS[c] == "d" else pl.Int64)
}


def _chunk_frame(ch: dict[str, Any], head: dict[str, Any] | None = None) -> pl.DataFrame:
    """A chunk of the child's typed columns (ncu_child.Columns.chunk) as a `metrics` frame: numbers
    wrapped from their arrays, texts gathered from the chunk's string table by code, integer
    correlation ids written as decimal text by polars; no Python work per row.

    All six text columns are gathered at once: their codes stand one after another in one array,
    the table is indexed with it once (`table[codes]`, a numpy array: one native gather, not
    `Series.gather`, which runs each call through the lazy engine) and each column is a slice of
    the result (no copy). A gather per column cost ~35 us of fixed overhead each, a quarter of this
    function on a one-chunk report (benchmarks/bench_ncu_load.py's "parent" stage).

    `head`, a chunk of rows this process made (the session rows), comes first in the same frame:
    its arrays go in front of the chunk's, its row numbers (nulls, integer ids) stay and the
    chunk's shift by the head's rows. Its strings go after the chunk's in the table, so only the
    head's few codes shift (past the chunk's table), never the chunk's. The same frame as the two
    built apart and concatenated, without the second frame and the concatenation's copy."""
    import numpy as np  # a core dependency; imported here, where polars frames are built from arrays

    strings, h = ch["strings"], 0
    if head is not None and head["rows"]:
        h = head["rows"]
        shift = np.int32(len(strings) - 1)  # a head code c > 0 is strings[c] = table[c + shift]
        strings = strings + head["strings"][1:]
    table = pl.Series(strings, dtype=pl.String, strict=False)  # code 0: the null
    key_rows, key_ids = np.frombuffer(ch["key_rows"], dtype=np.int64), np.frombuffer(ch["key_ids"], dtype=np.uint64)
    if h:
        key_rows = np.concatenate([np.frombuffer(head["key_rows"], dtype=np.int64), key_rows + h])
        key_ids = np.concatenate([np.frombuffer(head["key_ids"], dtype=np.uint64), key_ids])
    cols: list[pl.Series] = []
    for c in _NUM_ORDER:
        t = _NP_TYPES[NUM_COLS[c]]
        data, nulls = np.frombuffer(ch["num"][c], dtype=t), np.asarray(ch["nulls"][c], dtype=np.int64)
        if h:
            data = np.concatenate([np.frombuffer(head["num"][c], dtype=t), data])
            nulls = np.concatenate([np.asarray(head["nulls"][c], dtype=np.int64), nulls + h])
        col = pl.Series(c, data)
        if len(nulls):
            col = col.scatter(nulls, None)
        cols.append(col)
    parts, lengths = [], set()
    for c in _STR_ORDER:
        if h:
            first = np.frombuffer(head["codes"][c], dtype=np.int32)
            parts.append(np.where(first > 0, first + shift, first))
        parts.append(np.frombuffer(ch["codes"][c], dtype=np.int32))
        lengths.add(len(parts[-1]) + (len(parts[-2]) if h else 0))
    # code -1 (instance_key only: an integer id) is the null here, its text put below; every other
    # code is >= 0, so the view as unsigned is the same numbers
    codes = np.maximum(np.concatenate(parts), 0)
    # the slices below take each column's rows from one length: text columns of different lengths
    # made a frame that was refused (ShapeError) when each was gathered apart, and so they still
    # are (review F19-1; the child builds its columns in lockstep, so never seen)
    if len(lengths) != 1:
        raise ValueError(f"the reader's text columns differ in length ({sorted(lengths)})")
    n = lengths.pop()
    texts = table[codes.view(np.uint32)]
    for k, c in enumerate(_STR_ORDER):
        col = texts.slice(k * n, n).alias(c)
        if c == "instance_key" and len(key_rows):
            col = col.scatter(key_rows, pl.Series(key_ids).cast(pl.String))
        cols.append(col)
    by_name = {s.name: s for s in cols}
    return pl.DataFrame([by_name[c] if c not in _CAST else by_name[c].cast(_CAST[c]) for c in COLS])


class _MetricColumns(Columns):
    """The `metrics` table as frames: the child's chunks (each becomes a frame as it arrives, so a
    report with thousands of kernels never holds millions of Python values at once) after the
    rows this process adds itself (the session rows, through Columns.extend)."""

    def __init__(self):
        self.frames: list[pl.DataFrame] = []
        super().__init__(sink=lambda ch: self.frames.append(_chunk_frame(ch)))

    def chunk_frame(self, ch: dict[str, Any]) -> pl.DataFrame:
        """The frame of a chunk from the child, the rows added here since the last frame (the
        session rows) first in it (_chunk_frame's `head`)."""
        head = None
        if self.rows:
            head = self.chunk()
            self._reset()
        return _chunk_frame(ch, head)

    def add_frame(self, frame: pl.DataFrame) -> None:
        self.flush()  # rows added here before come first
        self.frames.append(frame)

    def frame(self) -> pl.DataFrame:
        self.flush()
        if not self.frames:
            return schema.METRICS.empty().drop("profile_id")
        return pl.concat(self.frames, how="vertical") if len(self.frames) > 1 else self.frames[0]


class _KernelRows:
    """The kernel rows, derived in this process from each chunk's aggregate rows as the chunk
    arrives (the child sends no second copy of them): ncu_common.derive_kernel_columns needs the
    schema and unit tables, which the child does not import."""

    def __init__(self, out: _MetricColumns):
        self.out = out
        self.rows: dict[int, dict[str, Any]] = {}
        self.unmeasured: list[int] = []
        self.device_ids: set = set()

    def add_chunk(self, ch: dict[str, Any]) -> None:
        frame = self.out.chunk_frame(ch)
        # each kernel's aggregate rows as Python values for the derivation, read from the chunk's
        # own arrays and string table: the same values the frame holds (its texts are that table
        # gathered, its values that array with the nulls set), without the polars select, gather
        # and to_list that took ~0.5 ms a chunk (a tenth of the parent's CPU on bobschreiner)
        strings, codes, value, nulls = ch["strings"], ch["codes"], ch["num"]["value"], ch["nulls"]["value"]
        for kid, start, n in ch[AGG]:
            end = start + n
            names = [strings[c] for c in codes["metric"][start:end]]
            values = value[start:end].tolist()
            for r in nulls[bisect.bisect_left(nulls, start) : bisect.bisect_left(nulls, end)]:
                values[r - start] = None  # row numbers, ascending (Columns._put_num appends them so)
            vals = dict(zip(names, values))
            for name, c in zip(names, codes["value_str"][start:end]):
                s = strings[c]
                if s is not None and vals.get(name) is None:
                    vals[name] = s
            row = ncu_common.derive_kernel_columns(vals, dict(zip(names, [strings[c] for c in codes["unit"][start:end]])))
            row["kernel_id"] = kid
            if _unmeasured(row, names):
                self.unmeasured.append(kid)
            if row.get("device_id") is not None:
                self.device_ids.add(row["device_id"])
            self.rows[kid] = row
        self.out.add_frame(frame)

    def kernels(self, heads: list[dict[str, Any]], path: Path) -> list[dict[str, Any]]:
        """The rows in kernel order, with the names, category and NVTX range the child read."""
        if len(self.rows) != len(heads):  # a child sends both, or neither: never seen
            raise InputError(path, f"corrupt Nsight Compute report: ncu_report gave metrics for {len(self.rows)} of {len(heads)} kernel results")
        kernels = []
        for kid, h in enumerate(heads):
            row = self.rows[kid]
            full, func, mangled = h["demangled"], h["function"], h["mangled"]
            row["name"] = full or func or mangled
            row["mangled_name"] = mangled or None
            row["short_name"] = short_name(full) if full else func
            if not row["short_name"]:
                row["short_name"] = func or row["name"]
            row["_function"] = func
            row["category"] = h["category"]
            row["nvtx_range"] = h["nvtx_range"]
            kernels.append(row)
        return kernels


def _session_metadata(c: Container, first_device: str | None, device_ids: set, reader_version: str | None) -> dict[str, Any]:
    s = c.session
    versions = s.get("versions", {})
    target = versions.get("Nsight Compute Target")
    md: dict[str, Any] = {"tool": "Nsight Compute"}
    md["tool_version"] = target.split()[0] if target else None
    md["driver_version"] = versions.get("Display Driver Version")
    md["cuda_version"] = versions.get("CUDA Version")
    sysinfo = s.get("target_system") or s.get("host_system") or {}
    md["host"] = sysinfo.get("computer_name") or None
    md["command_line"] = s.get("command_line")
    if "creation_time_s" in s:
        md["capture_time"] = _dt.datetime.fromtimestamp(s["creation_time_s"], tz=_dt.timezone.utc).isoformat()
    md.update(ncu_common.controls_from(s.get("command_line"), s.get("settings_clock_control")))
    if md["clock_control_origin"] == "recorded":
        md["clock_control_recorded_in"] = "command_line" if s.get("command_line") and "--clock-control" in s["command_line"] else "profiler_settings"
    names = [n for _, n in sorted(c.devices.items())]
    md["device_name"] = first_device or (names[0] if names else None)
    md["device_count"] = max(len(c.devices), len(device_ids)) or None
    extra: dict[str, Any] = {
        "reader": "ncu_report",
        "reader_version": reader_version,
        "file_format_version": c.file_version,
        "tool_version_full": target,
        "versions": versions or None,
        "target_system": s.get("target_system"),
        "host_system": s.get("host_system"),
        "session_devices": {str(k): v for k, v in sorted(c.devices.items())} or None,
        "executable": s.get("executable"),
        "profiler_settings_clock_control": s.get("settings_clock_control"),
        "process_ids": sorted(c.process_ids) or None,
        "declared_results": c.num_results,
    }
    if target is None:
        extra["tool_version_note"] = "the report does not record the capturing ncu version (reports before ~2020.1 do not)"
    if s.get("unreadable_session_blocks"):
        extra["unreadable_session_blocks"] = s["unreadable_session_blocks"]
    md.update({k: v for k, v in extra.items() if v is not None})
    return md


def _session_rows(c: Container, out: _MetricColumns) -> None:
    s = c.session
    metric, vstr, value, ints = [], [], [], []
    for k, v in (s.get("versions") or {}).items():
        metric.append(k)
        vstr.append(v)
        value.append(None)
        ints.append(None)
    for grp in ("target_system", "host_system"):
        for k, v in (s.get(grp) or {}).items():
            metric.append(f"{grp}.{k}")
            vstr.append(v)
            value.append(None)
            ints.append(None)
    if "creation_time_s" in s:
        metric.append("creation_time")
        vstr.append(None)
        value.append(float(s["creation_time_s"]))
        ints.append(s["creation_time_s"])
    if s.get("command_line"):
        metric.append("command_line")
        vstr.append(s["command_line"])
        value.append(None)
        ints.append(None)
    if metric:
        # through Columns, as the child's rows: they go first into the frame of the first chunk
        # that comes back (_MetricColumns.chunk_frame), not into a frame of their own that is
        # then concatenated (~0.2 ms per read of the parent's CPU)
        out.extend(
            len(metric), kernel_id=None, metric=metric, unit=["s" if m == "creation_time" else "" for m in metric],
            value=value, value_str=vstr, value_int=ints, kind="session",
        )


def _zstd_to_temp(path: Path, tmpdir: str) -> Path:
    """Decompress a .ncu-repz into `tmpdir` so its framing can be checked like a .ncu-rep's."""
    zstd = require("zstandard", "zstd", "checking .ncu-repz (zstd-compressed Nsight Compute) reports")
    out = Path(tmpdir) / "report.ncu-rep"
    with open(path, "rb") as fin, open(out, "wb") as fout:
        dobj = zstd.ZstdDecompressor().decompressobj()
        pending = b""
        while True:
            chunk = pending or fin.read(1 << 20)
            pending = b""
            if not chunk:
                break
            try:
                fout.write(dobj.decompress(chunk))
            except zstd.ZstdError as exc:
                raise InputError(path, f"corrupt .ncu-repz: zstd data unreadable ({exc})") from None
            if dobj.eof:  # one frame done; another may follow
                pending = dobj.unused_data
                if not pending and not (pending := fin.read(1 << 20)):
                    break
                dobj = zstd.ZstdDecompressor().decompressobj()
        if not dobj.eof:
            raise InputError(path, "truncated .ncu-repz: the zstd stream ends before its frame does")
    return out


def read_report(path: Path, options: ReadOptions | None = None):
    # the missing-package line comes from here, before any child is started for it
    require("ncu_report", "core", "reading Nsight Compute reports")
    path = Path(path)
    with open(path, "rb") as f:
        head = f.read(4)
    try:
        if head == ZSTD_MAGIC:
            with tempfile.TemporaryDirectory(prefix="profaudit-ncu-") as tmp:
                container = scan_container(_zstd_to_temp(path, tmp), label=path)
        else:
            container = scan_container(path)
    except OSError as exc:
        raise InputError.unreadable(path, exc) from None
    out = _MetricColumns()
    _session_rows(container, out)
    # The reader runs in a child of a zygote that is a fresh interpreter (parsers/ncu_child.py):
    # a damaged report that crashes it is one line, not a dead process (see parsers/isolate.py);
    # metric chunks stream back while it reads, and become kernel rows and frames here.
    st = os.stat(path)
    rows = _KernelRows(out)
    if utf8_name(path):
        warm = functools.partial(warm_reader, os.path.abspath(path), (st.st_ino, st.st_size, st.st_mtime_ns)) if warm_reader is not None else None
        res = run_isolated(path, functools.partial(read_actions, str(path)), rows.add_chunk, "the ncu_report reader", prepare=prepare_reader, warm=warm, spawn=SPAWN_ZYGOTE)
    else:
        # ncu_report takes a file name as UTF-8 text (SWIG's `char const *`): a name that is not
        # (its bytes kept as surrogate escapes) was refused as "argument 1 of type 'char const *'",
        # a wrong reason (fuzz s19, D). The reader opens it through a link with a plain name; the
        # zygote is not warmed with it (the link is gone by its next read)
        with tempfile.TemporaryDirectory(prefix="profaudit-ncu-") as tmp:
            link = os.path.join(tmp, "report" + (".ncu-repz" if head == ZSTD_MAGIC else ".ncu-rep"))
            os.symlink(os.path.abspath(path), link)
            try:
                res = run_isolated(path, functools.partial(read_actions, link), rows.add_chunk, "the ncu_report reader", prepare=prepare_reader, warm=None, spawn=SPAWN_ZYGOTE)
            except InputError as exc:
                if str(exc.path) == link:  # the reader's own line names the file it was given
                    raise InputError(path, exc.problem) from None
                raise
    if res["last_chunk"] is not None:
        rows.add_chunk(res["last_chunk"])
    kid = len(res["kernels"])
    if kid != container.num_results:
        raise InputError(
            path,
            f"corrupt Nsight Compute report: the file declares {container.num_results} kernel results "
            f"but ncu_report could read {kid}",
        )
    kernels = rows.kernels(res["kernels"], path)
    rule_count, unmeasured, device_ids, reader_version = res["rule_count"], rows.unmeasured, rows.device_ids, res["reader_version"]
    _attach_result_heads(kernels, container)
    kdf = _kernel_frame(kernels, path)
    # the first kernel's device name, from the rows the frame was built from (a text or None,
    # derive_kernel_columns' rule): the frame's column through drop_nulls ran a query, ~45 us
    first_device = next((k["device_name"] for k in kernels if k.get("device_name") is not None), None)
    md = _session_metadata(container, first_device, device_ids, reader_version)
    md["rule_results"] = rule_count
    shortfall = launch_count_shortfall(container)
    if shortfall:
        mark_incomplete(md, shortfall)
    if unmeasured:
        md["unmeasured_kernels"] = unmeasured
        md["unmeasured_note"] = (
            f"ncu recorded no measurements for {len(unmeasured)} kernel launch(es) (kernel_id "
            f"{', '.join(map(str, unmeasured[:10]))}{', ...' if len(unmeasured) > 10 else ''}): their rows have no "
            "duration, launch or counter values; their rule results say why ncu could not profile them"
        )
    return new_profile(path, PARSER, {"kernels": kdf, "metrics": out.frame()}, md)


def _unmeasured(row: dict, names) -> bool:
    """A result ncu could not profile (its replay failed; the rule results carry ncu's errors): it holds
    device attributes and replay bookkeeping (profiler__replayer_*), no duration and no launch__
    metrics. 2019-era captures without a duration still have their launch__ metrics."""
    return row.get("duration_ns") is None and not any(n.startswith("launch__") for n in names)


def _attach_result_heads(kernels: list[dict], c: Container) -> None:
    """Process, module, correlation ids (and, for 2019-era reports, grid/block dims) from the
    result heads, when they line up with the reader's actions.

    The reader does not expose them; results are matched to its actions by order and checked by
    name (mangled, else function name). If any pair disagrees nothing is attached: a wrong pid is
    worse than none.
    """
    if len(c.results) != len(kernels):
        return
    for k, h in zip(kernels, c.results):
        want = h.mangled or h.function
        have = k.get("mangled_name") if h.mangled else k.get("_function")
        if want is not None and have is not None and want != have:
            return
    for k, h in zip(kernels, c.results):
        k["process_id"] = h.process_id
        k["module"] = h.process_name
        k["correlation_id"] = h.api_call_id
        _dims_from_head(k, h)


def _dims_from_head(k: dict, h: ResultHead) -> None:
    """Grid/block dims for reports without launch__grid_dim_* (2019.x).

    GlobalWorkSize counted threads in 2019 reports and blocks in later ones, so it is used only
    where it agrees with the reader's own launch__grid_size / launch__block_size.
    """
    g, b = h.global_size, h.local_size
    if g is None or b is None or k.get("grid_x") is not None:
        return
    bs, gs = k.get("block_size"), k.get("grid_size")
    if bs is None or gs is None or b[0] * b[1] * b[2] != bs:
        return
    if g[0] * g[1] * g[2] == gs:
        grid = g
    elif all(bi and gi % bi == 0 for gi, bi in zip(g, b)) and (g[0] // b[0]) * (g[1] // b[1]) * (g[2] // b[2]) == gs:
        grid = (g[0] // b[0], g[1] // b[1], g[2] // b[2])
    else:
        return
    k["grid_x"], k["grid_y"], k["grid_z"] = grid
    if k.get("block_x") is None:
        k["block_x"], k["block_y"], k["block_z"] = b


def _kernel_frame(kernels: list[dict], path) -> pl.DataFrame:
    """Kernel rows as a frame with every declared column (keys a row lacks are null)."""
    declared = schema.KERNELS.polars_schema
    sch = {c: t for c, t in declared.items() if c != "profile_id"}
    if not kernels:
        return pl.DataFrame(schema=sch)
    for k in kernels:
        k["source"] = "ncu"
    try:
        return pl.from_dicts(kernels, schema=sch)
    except (OverflowError, pl.exceptions.ComputeError):
        # a damaged report can hold a launch figure past its column's integer type (fuzz_long s17
        # seed 2035, ncu-rep #2064): name the kernel and field instead of the catch-all's line.
        # Every integer column of the kernels table is Int64 (tests/test_ncu_rep_kernel_range.py
        # holds the schema to that); the figure in six digits, not the ~300 of that report's 1e300
        from profaudit.fmt import fmt_refused

        low, high = -(2**63), 2**63 - 1
        for i, k in enumerate(kernels):
            for c, v in k.items():
                if isinstance(v, int) and sch.get(c) == pl.Int64 and not low <= v <= high:
                    raise InputError(path, f"kernel {i}: {c} = {fmt_refused(v, low, high)} is outside the range of its column (Int64)") from None
        raise


class NcuReportParser:
    name = "ncu-rep"
    source = "ncu"
    suffixes = SUFFIXES
    description = "Nsight Compute report (.ncu-rep, .ncu-repz, 2019-era .nsight-cuprof-report) via ncu_report"

    def sniff(self, probe: Probe) -> bool:
        if probe.is_dir:
            return False
        # The suffix alone claims the file, so a damaged or misnamed report gets this parser's
        # specific error instead of "not a recognised format".
        return probe.name_endswith(*SUFFIXES) or probe.raw_head[:4] == MAGIC

    def read(self, path: Path, options: ReadOptions):
        # Reading creates millions of short-lived values and no reference cycles; the cyclic
        # collector's repeated full scans of the growing column lists would cost more than the
        # reading itself on large reports.
        enabled = gc.isenabled()
        gc.disable()
        try:
            return read_report(path, options)
        finally:
            if enabled:
                gc.enable()


PARSER = NcuReportParser()
