"""The parser protocol and what every parser shares: probing a file, ids, building a Profile.

A parser is a module-level object with `name`, `source`, `suffixes`, `sniff(probe)` and
`read(path, options)`. `sniff` must be cheap (it sees at most the first `HEAD_BYTES`, decompressed
when the file is gzip) and must not import heavy optional packages; `read` does the work.
"""

from __future__ import annotations

import gzip
import hashlib
import math
import os
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import polars as pl

from profaudit.errors import InputError
from profaudit.profile import Profile

HEAD_BYTES = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class Probe:
    """What a parser may look at to decide whether a path is its format."""

    path: Path
    is_dir: bool
    suffix: str  # lower-cased compound suffix of interest, e.g. ".json.gz", ".ncu-rep"
    raw_head: bytes  # first bytes as stored
    head: bytes  # first bytes after gunzip where the file is gzip
    gzipped: bool

    @property
    def text(self) -> str:
        return self.head.decode("utf-8", errors="replace")

    def name_endswith(self, *endings: str) -> bool:
        n = self.path.name.lower()
        return any(n.endswith(e) for e in endings)


@dataclass
class ReadOptions:
    """Options the loader passes to every parser; parsers ignore what does not concern them."""

    device: str | None = None  # override the device name for spec matching
    nsys: str | None = None  # path to an nsys executable
    neuron_profile: str | None = None  # path to neuron-profile / neuron-explorer
    time_column: str | None = None  # timing logs: the column that holds the time
    time_unit: str | None = None  # timing logs: unit of that column when its name has none
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Parser(Protocol):
    name: str
    source: str
    suffixes: tuple[str, ...]
    description: str

    def sniff(self, probe: Probe) -> bool: ...

    def read(self, path: Path, options: ReadOptions) -> Profile | list[Profile]: ...

    # Optional: `diagnose(probe) -> str | None` names what an unclaimed file is when the parser
    # recognises a near miss of its family (the loader asks when no parser claims the file).


_COMPOUND_SUFFIXES = (".xplane.pb", ".json.gz", ".csv.gz", ".jsonl.gz")


def compound_suffix(path: Path) -> str:
    name = path.name.lower()
    for s in _COMPOUND_SUFFIXES:
        if name.endswith(s):
            return s
    return path.suffix.lower()


def probe(path: Path) -> Probe:
    path = Path(path)
    if path.is_dir():
        return Probe(path, True, "", b"", b"", False)
    try:
        with open(path, "rb") as f:
            raw = f.read(HEAD_BYTES)
    except OSError as exc:
        raise InputError.unreadable(path, exc) from None
    head, gz = raw, False
    if raw[:2] == GZIP_MAGIC:
        gz = True
        try:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            head = d.decompress(raw, HEAD_BYTES)
        except zlib.error:
            head = b""
    return Probe(path, False, compound_suffix(path), raw, head, gz)


def finite_number(v: Any) -> float | None:
    """`v`, a number or numeric text ("12.5", "1e-3"), as a finite float; None for anything else
    (None, other text, NaN, infinities, an integer beyond float range): for vendor fields that are
    numbers in one tool version and text in another."""
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        return None
    return f if math.isfinite(f) else None


def csv_cells(line: str, delimiter: str = ",") -> list[str] | None:
    """One CSV line's cells ([] for an empty line), or None when the csv module refuses it (a field
    over its size limit): the CSV parsers' sniffing and header detection ask this of many lines."""
    import csv

    try:
        return next(csv.reader([line], delimiter=delimiter), [])
    except csv.Error:
        return None


class DamagedGzip(gzip.BadGzipFile, EOFError):
    """A gzip stream whose compressed data is damaged. zlib reports that as `zlib.error`, which
    neither the readers that catch a cut gzip (EOFError) nor those that catch unreadable files
    (OSError) expected: it reached the loader's catch-all (fuzzing: a folder's .csv gzipped, then
    bytes inserted). As both, every reader's existing handler says it in one line."""


def _zlib_guarded(name: str):
    base = getattr(gzip.GzipFile, name)

    def method(self, *args):
        try:
            return base(self, *args)
        except zlib.error as exc:
            raise DamagedGzip(f"damaged gzip data: {exc}") from None

    method.__name__ = name
    return method


class _GzipReader(gzip.GzipFile):
    """gzip.GzipFile whose damaged data raises DamagedGzip instead of zlib.error."""

    read = _zlib_guarded("read")
    read1 = _zlib_guarded("read1")
    readinto = _zlib_guarded("readinto")
    readline = _zlib_guarded("readline")
    readlines = _zlib_guarded("readlines")
    peek = _zlib_guarded("peek")


def open_maybe_gzip(path: Path):
    """Binary file object, transparently gunzipped."""
    with open(path, "rb") as f:
        magic = f.read(2)
    return _GzipReader(path, "rb") if magic == GZIP_MAGIC else open(path, "rb")


def load_json(path: Path, what: str):
    """Parse a (possibly gzipped) JSON document; any damage becomes one InputError line."""
    import json

    try:
        with open_maybe_gzip(path) as fh:
            return json.load(fh)
    except (ValueError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        # ValueError covers JSONDecodeError and UnicodeDecodeError; EOFError a truncated gzip
        raise InputError(path, f"not valid {what}: {exc or type(exc).__name__}") from None


def map_unique(values: pl.Series, fn, dtype: pl.DataType = pl.String) -> pl.Series:
    """`fn` applied once per distinct non-null value, aligned with `values` (null stays null).

    Names repeat across millions of rows: demangling, short names and API-name cleaning run in
    Python once per distinct string, never per row."""
    uniq = values.drop_nulls().unique()
    mapped = pl.Series([fn(v) for v in uniq.to_list()], dtype=dtype)
    return values.replace_strict(uniq, mapped, default=None, return_dtype=dtype)


def apply_device_option(tables: dict[str, Any], metadata: dict[str, Any], device: str | None) -> None:
    """`--device NAME` overrides the device a profile names (the reported name is kept beside it)
    and the kernels' device_name; nothing happens without one."""
    if not device:
        return
    metadata["device_name_reported"] = metadata.get("device_name")
    metadata["device_name"] = device
    kernels = tables.get("kernels")
    if kernels is not None and kernels.height:
        tables["kernels"] = kernels.with_columns(pl.lit(device).alias("device_name"))


_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


def content_hash(path: Path, window: int = 64 << 10) -> str:
    """A stable content key: the size plus five 64 KiB windows spread over the file.

    Hashing whole multi-gigabyte traces would cost seconds for no gain. Profiles differ all over
    (timestamps, counters, names), so two different files that agree in size and in five windows,
    including the head and the tail, do not occur in practice. Files up to five windows long are
    hashed whole.
    """
    h = hashlib.blake2b(digest_size=8)
    size = os.path.getsize(path)
    h.update(str(size).encode())
    with open(path, "rb") as f:
        if size <= 5 * window:
            h.update(f.read())
        else:
            for k in range(5):
                f.seek((size - window) * k // 4)
                h.update(f.read(window))
    return h.hexdigest()


def make_profile_id(path: Path, suffix: str = "") -> str:
    """`<file stem>-<8 hex of content hash>`: readable, stable for the same bytes, safe in paths."""
    path = Path(path)
    stem = path.name
    for ext in (".gz", ".json", ".trace", ".pt", ".xplane.pb", ".pb", ".sqlite", ".csv", ".ncu-rep", ".nsys-rep", ".qdrep"):
        if stem.lower().endswith(ext) and len(stem) > len(ext):
            stem = stem[: -len(ext)]
    stem = _SLUG.sub("_", stem).strip("._-")[:48] or "profile"
    # os.fsencode: the same bytes as str.encode() for every UTF-8 name, and a folder named in
    # other bytes (held as surrogate escapes) no longer fails (s19 hostile fuzz, rocprof-compute)
    digest = content_hash(path)[:8] if path.is_file() else hashlib.blake2b(os.fsencode(path.resolve()), digest_size=4).hexdigest()
    return f"{stem}{('-' + _SLUG.sub('_', suffix)) if suffix else ''}-{digest}"


def new_profile(
    path: Path,
    parser: Parser,
    tables: dict[str, Any],
    metadata: dict[str, Any] | None = None,
    *,
    id_suffix: str = "",
    profile_id: str | None = None,
) -> Profile:
    """Build a Profile with the metadata every parser must set (source, format, path, size)."""
    path = Path(path)
    md = {
        "source": parser.source,
        "format": parser.name,
        # a name that is not valid UTF-8 arrives with surrogate escapes, which polars, Parquet and
        # JSON refuse: keep its undecodable bytes visible as \xNN instead
        "path": os.fsencode(path).decode("utf-8", "backslashreplace"),
        "file_bytes": path.stat().st_size if path.is_file() else None,
    }
    md.update({k: v for k, v in (metadata or {}).items() if v is not None})
    pid = profile_id or make_profile_id(path, id_suffix)
    return Profile(pid, md, {k: v for k, v in tables.items() if v is not None})
