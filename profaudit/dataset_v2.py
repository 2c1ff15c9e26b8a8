"""Dataset layout 2: coarse Parquet partitions by ingest batch, one append-only manifest per batch.

    DS/_profaudit_dataset.json                      marker (format, layout 2, schema); written once
    DS/_manifests/<batch>.(s|f)<bytes>.json         one per committed batch, never rewritten
                                                    (s: a small batch, f: a full one; its Parquet bytes)
    DS/<table>/batch=<batch>/part-<task>-<n>.parquet   rows of many profiles, `profile_id` a column
    DS/metadata/batch=<batch>/part-<task>-<n>.parquet  one row per profile

Why this shape: appending N profiles writes N profiles' worth of Parquet and one small manifest,
whatever the dataset already holds (layout 1 re-read and re-wrote everything plus a global JSON).
A batch becomes visible when its manifest appears (written last, atomically), so two writers never
touch each other's files and a crashed one leaves no half batch in what profaudit reads. Part names
are fixed by (batch, task), so a retried task overwrites its own parts instead of adding copies.

A profile ingested again lands in a newer batch; readers keep its newest copy (manifest order is the
batch id order: a UTC timestamp, then a random suffix) and `compact` drops the superseded rows.
Glob readers (DuckDB, polars, dask) see every part file, superseded copies and the parts of an
ingest still running included; `profaudit dataset compact` leaves one copy of each profile.

Every append ends with `auto_compact`: small batches of about one size are merged four at a time,
so a dataset grown by many small appends is still a few files per table for a scan (55 files had
made a DuckDB group-by 2.4x one file), at a bounded number of rewrites per row.
"""

from __future__ import annotations

import io
import json
import logging
import posixpath
import re
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timezone

import polars as pl

from profaudit import __version__, schema
from profaudit.errors import InputError, UsageError, first_line
from profaudit.profile import Profile, ProfileSet

log = logging.getLogger(__name__)

MARKER = "_profaudit_dataset.json"
FORMAT = "profaudit-dataset"
MANIFESTS = "_manifests"
LAYOUT = 2
# Parquet files are cut when the rows gathered for one reach this many bytes in memory; Parquet's
# compression makes the files smaller still. Large enough that a scan opens few files, small enough
# that one task's part fits a worker's memory.
TARGET_FILE_BYTES = 128 << 20
TABLES_WITH_METADATA: tuple[str, ...] = (*schema.DATA_TABLES, "metadata")
# After each append, `auto_compact` merges small batches of one size class once this many have
# piled up (see there). 4 keeps a scan to a few files per table (a query over many small files
# pays a per-file cost: 55 files made a DuckDB group-by 2.4x one file) while a byte is rewritten
# once per size class it passes through (classes are powers of 4 above 64 KiB of what a batch's
# rows were appended as: about 5 below a full 128 MB batch; see `manifest_name`).
AUTO_COMPACT_FANOUT = 4
AUTO_COMPACT_BASE_BYTES = 64 << 10


def marker_doc() -> dict:
    # no timestamp: two writers creating the same dataset at once write identical markers
    return {
        "format": FORMAT,
        "layout": LAYOUT,
        "schema_version": schema.SCHEMA_VERSION,
        "tables": {name: {c.name: {"dtype": str(c.dtype), "unit": c.unit} for c in t.columns} for name, t in schema.ALL_TABLES.items()},
        "partitioning": "hive:batch",
    }


def new_batch_id(after: str | None = None) -> str:
    """Sortable and unique: UTC time to the microsecond, then 8 random hex digits. A compacted
    batch sorts right after the newest batch it replaces (`after`), so it keeps their place."""
    suffix = uuid.uuid4().hex[:8]
    if after:
        return f"{after}-c{suffix}"
    now = datetime.now(timezone.utc)
    return f"{now:%Y%m%dT%H%M%S}{now.microsecond:06d}-{suffix}"


def json_doc(raw: str | bytes):
    """`json.loads` of a dataset file (marker, manifest, metadata). Nesting past the interpreter's
    depth is damage like any other, a ValueError: json raises RecursionError there, which no
    reader's `except ValueError` caught (a marker nested 5,000 deep reached the catch-all)."""
    # json.loads decodes bytes with 'surrogatepass', so a surrogate written out as UTF-8 bytes
    # (ED A0 80) became a lone surrogate too (fuzz_long s19 final run, seed 2042, dataset #2737: a
    # manifest's profile id reached polars as a UnicodeEncodeError). Strict UTF-8 refuses those
    # bytes; a document that is not strict UTF-8 (UTF-16 with its BOM, say) keeps json's own
    # decoding and always pays for the check below.
    try:  # (utf-8-sig: a BOM is dropped, as json.loads does for bytes)
        text, data = (raw.decode("utf-8-sig"), raw) if isinstance(raw, bytes) else (raw, raw.encode("utf-8"))
        strict = True
    except UnicodeError:
        text, data, strict = raw, b"", False
    try:
        doc = json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deep") from None
    # A "\ud800" escape decodes to a lone surrogate, which no table (polars, Parquet) can hold: the
    # string reached polars as a UnicodeEncodeError, the catch-all (fuzz_surfaces s18, dataset #526,
    # a layout-1 marker's profile). Only such a document pays for the check.
    if not strict or _SURROGATE_ESCAPE.search(data):
        try:
            json.dumps(doc, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a string holds an unpaired UTF-16 surrogate (\\ud800-\\udfff), escaped or as bytes") from None
    return doc


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def read_marker(store) -> dict:
    try:
        marker = json_doc(store.read_bytes(MARKER))
    except (OSError, ValueError) as exc:
        raise InputError(store.url(), f"broken profaudit dataset: {exc}") from None
    if not isinstance(marker, dict) or marker.get("format") != FORMAT:
        raise InputError(store.url(), "not a profaudit dataset (bad marker)")
    major = str(marker.get("schema_version", "0")).split(".")[0]
    if major != schema.SCHEMA_VERSION.split(".")[0]:
        raise InputError(store.url(), f"dataset schema {marker.get('schema_version')} is not readable by this profaudit (schema {schema.SCHEMA_VERSION})")
    return marker


def layout_of(store) -> int:
    layout = read_marker(store).get("layout", 1)
    try:
        return int(layout)
    except (TypeError, ValueError, OverflowError):  # a damaged marker ({} or "x" or 1e999 as its layout)
        raise InputError(store.url(), f"broken profaudit dataset: its marker's layout is {str(layout)[:40]!r}, not a layout number") from None


def ensure_marker(store) -> None:
    """Create the marker of a new dataset; an existing one is left alone (one stat per append)."""
    if not store.exists(MARKER):
        store.write_bytes(MARKER, json.dumps(marker_doc(), indent=1).encode())


# --------------------------------------------------------------------------------------- writing


# Rows per Parquet row group: DuckDB's own row-group size. A query engine splits a scan by row
# group, so groups of one size spread evenly over its threads; left to itself polars cut a merged
# batch (many small frames stacked) into groups of 100,000 / 60,000 / 8,800 / ... rows, and a
# 2-thread DuckDB group-by over it used 5-10 % more CPU than over one evenly cut file.
ROW_GROUP_ROWS = 122_880


def _parquet_bytes(df: pl.DataFrame) -> bytes:
    buf = io.BytesIO()
    df.write_parquet(buf, statistics=True, row_group_size=ROW_GROUP_ROWS)
    return buf.getvalue()


def write_parts(ps: ProfileSet, store, batch: str, task: str, target_file_bytes: int = TARGET_FILE_BYTES) -> tuple[list[dict], list[dict]]:
    """Write the profiles of `ps` as part files of `batch`, named by `task` (a retried task writes
    the same names). Returns (profile entries, file entries) for the manifest."""
    profiles = ps.profiles()
    entries = [_entry(p) for p in profiles]
    files: list[dict] = []
    for table in TABLES_WITH_METADATA:
        groups: list[list[pl.DataFrame]] = [[]]
        ranges: list[list[int]] = [[0, 0]]  # each group's profiles: [first, end) in `entries`
        size = 0
        if table == "metadata":
            # one small row per profile: one frame for all of them, built at once
            frames = [schema.from_records("metadata", [p.metadata_row() for p in profiles])] if profiles else []
            spans = [(0, len(profiles))]
        else:
            frames = [p.tables[table] for p in profiles]
            spans = [(i, i + 1) for i in range(len(profiles))]
        for df, (lo, hi) in zip(frames, spans):
            if not df.height:
                continue
            if groups[-1] and size + df.estimated_size() > target_file_bytes:
                groups.append([])
                ranges.append([lo, hi])
                size = 0
            if not groups[-1]:
                ranges[-1] = [lo, hi]
            groups[-1].append(df)
            ranges[-1][1] = hi
            size += df.estimated_size()
        for n, (group, span) in enumerate((g, r) for g, r in zip(groups, ranges) if g):
            rel = f"{table}/batch={batch}/part-{task}-{n:03d}.parquet"
            df = pl.concat(group, how="vertical")
            data = _parquet_bytes(df)
            store.write_bytes(rel, data)
            files.append({"table": table, "path": rel, "rows": df.height, "bytes": len(data), "profile_range": span})
    return entries, files


def rename_profiles(store, files: list[dict], rename: dict[str, str]) -> None:
    """Rewrite uncommitted part files with some profile ids changed (same names, atomically)."""
    for f in files:
        df = pl.read_parquet(io.BytesIO(store.read_bytes(f["path"])))
        df = df.with_columns(pl.col("profile_id").replace(rename))
        data = _parquet_bytes(df)
        store.write_bytes(f["path"], data)
        f["bytes"] = len(data)


def _entry(p: Profile) -> dict:
    md = p.metadata
    return {
        "profile_id": p.profile_id,
        "source": md.get("source"),
        "format": md.get("format"),
        "path": md.get("path"),
        "rows": {t: p.tables[t].height for t in schema.DATA_TABLES if p.tables[t].height},
    }


def manifest_name(batch: str, files: list[dict], target_file_bytes: int, tier_bytes: int | None = None) -> str:
    """`<batch>.s<bytes>.json` for a small batch (under half the target file size), else
    `<batch>.f<bytes>.json`: what auto-compaction needs to know is in the name, so an append that
    has nothing to merge lists the manifest folder and reads no manifest. (Older profaudit named
    full and small batches alike `<batch>.json` or full ones so: `name_sizes` renames them.)

    The bytes are the batch's Parquet bytes, except for a merged batch: `tier_bytes`, the sum of
    the names' bytes of what it merged. Parquet's per-file overhead (tens of KB for a few hundred
    rows of a wide table) is paid once by the merge instead of four times, so four one-profile
    batches merged into one no bigger than each and it stayed in their size class: merged again
    three appends later, and again, until its rows alone filled the class (a thousand profiles
    rewritten every third append: 7-40x an append into an empty dataset, amortised). Summed, a
    merge always lands a class up, and a row is rewritten once per class, as `auto_compact` says.
    Small or full goes by the real bytes: summed overheads must not call a batch of a few MB full
    (never merged again), or a dataset grown one profile at a time would end in many such files."""
    size = sum(f["bytes"] for f in files)
    if size < target_file_bytes // 2:
        return f"{batch}.s{size if tier_bytes is None else max(size, tier_bytes)}.json"
    return f"{batch}.f{size}.json"


def _sized(name: str) -> bool:
    parts = name.split(".")
    return len(parts) == 3 and parts[1][:1] in ("s", "f") and parts[1][1:].isdigit()


def name_sizes(store, names: list[str], target_file_bytes: int) -> list[str]:
    """`names` (a listing of the manifest folder) with every manifest named without its size
    (`<batch>.json`, as profaudit named them before) renamed to the name it gets today: written
    under the new name, same bytes, then the old name removed. Auto-compaction decides from names
    alone, so an old-named small batch was never merged; this reads each such manifest once, on
    the first append by a profaudit that sizes names, and never again. A reader that lists both
    names meanwhile reads one batch (manifests are keyed by batch); two writers renaming at once
    write the same bytes."""
    out = []
    for name in names:
        if not name.endswith(".json") or _sized(name):
            out.append(name)
            continue
        try:
            raw = store.read_bytes(f"{MANIFESTS}/{name}")
        except FileNotFoundError:  # another writer renamed it or a compaction replaced it
            continue
        try:
            m = json_doc(raw)
            new = manifest_name(m["batch"], m["files"], target_file_bytes)
        except (ValueError, KeyError, TypeError):
            out.append(name)  # a damaged manifest: left for the readers to name
            continue
        store.write_bytes(f"{MANIFESTS}/{new}", raw)
        store.remove(f"{MANIFESTS}/{name}")
        out.append(new)
    return sorted(out)


def small_batch_bytes(name: str) -> int | None:
    """The Parquet bytes a manifest's name gives a small batch; None for a full (or older) one."""
    parts = name.split(".")
    if len(parts) == 3 and parts[2] == "json" and parts[1][:1] == "s" and parts[1][1:].isdigit():
        return int(parts[1][1:])
    return None


def size_class(nbytes: int, fanout: int = AUTO_COMPACT_FANOUT, base_bytes: int = AUTO_COMPACT_BASE_BYTES) -> int:
    """0 below `base_bytes`, then one more per factor `fanout`: batches of one class differ in
    size by less than `fanout`x, so merging them costs about what they hold."""
    c = 0
    while nbytes >= base_bytes:
        nbytes //= fanout
        c += 1
    return c


def commit_batch(
    store,
    batch: str,
    entries: list[dict],
    files: list[dict],
    *,
    replaces: list[str] | None = None,
    skipped: list | None = None,
    target_file_bytes: int = TARGET_FILE_BYTES,
    tier_bytes: int | None = None,
) -> dict:
    """Write the batch's manifest: the moment its parts become part of the dataset."""
    ensure_marker(store)
    manifest = {
        "format": "profaudit-dataset-batch",
        "layout": LAYOUT,
        "batch": batch,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "profaudit_version": __version__,
        "schema_version": schema.SCHEMA_VERSION,
        "replaces": list(replaces or []),
        "profiles": entries,
        "files": files,
        "skipped": [list(s) for s in (skipped or [])],
    }
    name = manifest_name(batch, files, target_file_bytes, tier_bytes)
    # no indentation: a 5,000-profile manifest took 6x as long to write indented (170 ms, on the
    # client while the cluster's workers wait), and `json.tool` shows it to a reader
    store.write_bytes(f"{MANIFESTS}/{name}", json.dumps(manifest, separators=(",", ":")).encode())
    manifest["_file"] = name
    return manifest


def append(ps: ProfileSet, store, *, target_file_bytes: int = TARGET_FILE_BYTES, batch: str | None = None, auto_compact_fanout: int | None = AUTO_COMPACT_FANOUT) -> dict:
    """Append `ps` as one new batch, then merge small batches if enough have piled up (see
    `auto_compact`; None turns that off); cost grows with `ps`, not with the dataset."""
    batch = batch or new_batch_id()
    ensure_marker(store)
    entries, files = write_parts(ps, store, batch, "00000", target_file_bytes)
    manifest = commit_batch(store, batch, entries, files, skipped=ps.skipped, target_file_bytes=target_file_bytes)
    if auto_compact_fanout:
        auto_compact_after_commit(store, fanout=auto_compact_fanout, target_file_bytes=target_file_bytes)
    return manifest


def auto_compact_after_commit(store, **kwargs) -> None:
    """`auto_compact` once a batch is committed: a merge that fails leaves the dataset readable as
    it was (or with replaced batches still around, which readers skip), so it must not turn a
    successful append or ingest into an error; it is logged instead."""
    try:
        auto_compact(store, **kwargs)
    except (OSError, InputError) as exc:
        log.warning("%s: automatic compaction stopped (%s); the appended batch is committed; `profaudit dataset compact` tidies up", store.url(), exc)


# --------------------------------------------------------------------------------------- reading


@dataclass
class Snapshot:
    """The committed state of a dataset: its live batches and, for each profile, the batch that
    holds its newest copy."""

    manifests: list[dict]
    owner: dict[str, str] = field(default_factory=dict)  # profile_id -> batch holding the newest copy
    replaced: list[dict] = field(default_factory=list)  # manifests of batches a compaction replaced (left by a crash)

    @property
    def ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for m in self.manifests:
            for e in m["profiles"]:
                if self.owner.get(e["profile_id"]) == m["batch"]:
                    seen.setdefault(e["profile_id"])
        return list(seen)

    def files(self, table: str) -> list[tuple[str, dict]]:
        """(batch, file entry) of every part of `table`, oldest batch first."""
        return [(m["batch"], f) for m in self.manifests for f in m["files"] if f["table"] == table]

    def superseded(self, batch: str) -> set[str]:
        """Profile ids in `batch` whose newest copy is in a later batch."""
        m = next(m for m in self.manifests if m["batch"] == batch)
        return {e["profile_id"] for e in m["profiles"] if self.owner.get(e["profile_id"]) != batch}


def snapshot(store, since: str | None = None) -> Snapshot:
    """The live batches. `since` (a batch id): only batches from that one on, which is all a merge
    of batches from there on needs (what supersedes or replaces a batch always sorts after it),
    without reading the manifests of the whole dataset."""
    read_marker(store)
    # a manifest listed and then gone was replaced by a compaction whose own manifest our listing
    # may predate: list again (a compaction writes its manifest before removing the old ones)
    for _ in range(4):
        try:
            return _snapshot(store, since)
        except _VanishedManifest:
            continue
    try:
        return _snapshot(store, since)
    except _VanishedManifest as exc:
        raise InputError(str(exc), "batch manifests keep disappearing while listed (compactions running back to back?); try again") from None


class _VanishedManifest(Exception):
    pass


def check_manifest(m, raw: bytes, where: str) -> None:
    """The shape of a parsed batch manifest, before anything indexes into it: a damaged one is one
    line naming the file and the field, not a TypeError (found by fuzzing). Every reader of
    manifests comes through here, so each is parsed and checked once. The usual, sound manifest
    passes a few isinstance checks; only a suspect one goes through the parsers' JSON checks,
    which word the problem (and import the parser registry: never on the path of a scan)."""
    if _looks_sound(m) and not _SURROGATE_ESCAPE.search(raw):
        _no_part_listed_twice(m, where)
        return
    from profaudit.parsers import jsonshape

    what = "broken batch manifest"
    m = jsonshape.mapping(m, what, where)
    # numbers=False: a batch name of NaN passed as text and then matched no batch (StopIteration)
    jsonshape.text(m.get("batch"), f"{what}: batch", where, optional=False, numbers=False)
    for key, fields in (("profiles", ("profile_id",)), ("files", ("table", "path"))):
        entries = m.get(key)
        if not isinstance(entries, list):
            raise InputError(where, f"{what}: {key}: expected a list, found {jsonshape.kind(entries)}")
        for i, e in enumerate(entries):
            e = jsonshape.mapping(e, f"{what}: {key}[{i}]", where)
            for k in fields:
                jsonshape.text(e.get(k), f"{what}: {key}[{i}].{k}", where, optional=False, numbers=False)
            if key == "profiles" and not _row_counts(e.get("rows")):
                raise InputError(where, f"{what}: profiles[{i}].rows: expected a mapping of table name to a whole number >= 0 (at most 2^63-1), found {jsonshape.kind(e.get('rows'))}")
            if key == "files":
                if not e["path"].strip():
                    raise InputError(where, f"{what}: files[{i}].path: empty")
                if not _inside_dataset(e["path"]):
                    raise InputError(where, f"{what}: files[{i}].path {e['path'][:200]!r}: not a path inside the dataset (absolute, a URL or through '..')")
                for k in ("rows", "bytes"):
                    if not _is_count(e.get(k)):
                        raise InputError(where, f"{what}: files[{i}].{k}: expected a whole number >= 0 (at most 2^63-1), found {jsonshape.kind(e.get(k))}")
    replaces = m.get("replaces", [])
    if not isinstance(replaces, list) or not all(isinstance(b, str) for b in replaces):
        raise InputError(where, f"{what}: replaces: expected a list of batch names")
    _no_part_listed_twice(m, where)


def _no_part_listed_twice(m: dict, where: str) -> None:
    """A manifest names each part file once: a reader reads a part once per entry, so one entry
    repeated 344,926 times (a 50 MB manifest) read the same part that often, past 98 CPU-s, and
    would have served its rows that many times (fuzz_long seed 3105, profaudit-dataset #88). The
    writer never repeats one; spellings of one path (`a/./b`) count as one."""
    first: dict[str, int] = {}
    for i, e in enumerate(m["files"]):
        key = posixpath.normpath(e["path"].replace("\\", "/"))
        j = first.setdefault(key, i)
        if j != i:
            raise InputError(where, f"broken batch manifest: files[{i}].path {e['path'][:200]!r}: the part files[{j}] names already (each part is listed once)")


def _looks_sound(m) -> bool:
    if not isinstance(m, dict) or not isinstance(m.get("batch"), str):
        return False
    for key, fields in (("profiles", ("profile_id",)), ("files", ("table", "path"))):
        entries = m.get(key)
        if not isinstance(entries, list):
            return False
        for e in entries:
            if not isinstance(e, dict) or not all(isinstance(e.get(k), str) for k in fields):
                return False
            # info sums a file's rows, compaction its bytes: a null, text or NaN there was a TypeError
            if key == "files" and not (e["path"].strip() and _is_count(e.get("rows")) and _is_count(e.get("bytes")) and _inside_dataset(e["path"])):
                return False
            # info subtracts a superseded profile's rows per table: a list, text or an unknown
            # table there was an AttributeError/TypeError/KeyError at the catch-all
            if key == "profiles" and not _row_counts(e.get("rows")):
                return False
    replaces = m.get("replaces", [])
    return isinstance(replaces, list) and all(isinstance(b, str) for b in replaces)


def _inside_dataset(path: str) -> bool:
    """A part path a manifest may name: relative to the dataset root and staying below it. The
    writer only writes `<table>/batch=<name>/part-*.parquet`; a manifest naming '../x', '/etc/x'
    or a URL made every reader open a file outside the dataset (fuzz_surfaces, session 16: its rows
    were counted and served as the dataset's own)."""
    if "\x00" in path or "://" in path or path.startswith(("/", "\\")) or (len(path) > 1 and path[1] == ":"):
        return False
    return ".." not in path.replace("\\", "/").split("/")


# a row or byte count past a signed 64-bit integer is a lie no writer makes, and polars' Int64
# columns (info's table) cannot hold it: 2^63 reached them as an i128, a ComputeError at the
# catch-all (fuzz_surfaces, session 16 final run, dataset #211)
COUNT_MAX = 2**63 - 1


def _is_count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= COUNT_MAX


def _row_counts(v) -> bool:
    """A profile entry's `rows`: absent, or data table -> count (what `_entry` writes)."""
    return v is None or (isinstance(v, dict) and all(t in schema.DATA_TABLES and _is_count(n) for t, n in v.items()))


def _snapshot(store, since: str | None = None, names: list[str] | None = None) -> Snapshot:
    manifests = []
    for name in store.listdir(MANIFESTS) if names is None else names:
        if not name.endswith(".json") or (since is not None and name.split(".", 1)[0] < since):
            continue
        try:
            raw = store.read_bytes(f"{MANIFESTS}/{name}")
        except FileNotFoundError:
            raise _VanishedManifest(store.url(f"{MANIFESTS}/{name}")) from None
        except OSError as exc:
            raise InputError(store.url(f"{MANIFESTS}/{name}"), f"broken batch manifest: {exc}") from None
        try:
            m = json_doc(raw)
        except ValueError as exc:
            raise InputError(store.url(f"{MANIFESTS}/{name}"), f"broken batch manifest: {exc}") from None
        check_manifest(m, raw, store.url(f"{MANIFESTS}/{name}"))
        m["_file"] = name  # not stored: where this manifest is, to remove it after a compaction
        manifests.append(m)
    # a compaction that was interrupted after writing its batch leaves the batches it replaced
    # behind for a moment: they are already covered
    replaced = {b for m in manifests for b in m.get("replaces", [])}
    # one manifest per batch (a commit retried after the batch changed size class wrote a second name)
    live = {m["batch"]: m for m in manifests if m["batch"] not in replaced}
    gone = [m for m in manifests if m["batch"] in replaced]
    manifests = sorted(live.values(), key=lambda m: m["batch"])
    owner = {e["profile_id"]: m["batch"] for m in manifests for e in m["profiles"]}
    return Snapshot(manifests, owner, gone)


def _live_frame(store, snap: Snapshot, table: str) -> pl.DataFrame:
    # late: a scan that never loads a table keeps the parsers package unimported
    from profaudit.parsers.isolate import read_parquet_untrusted

    frames = []
    for batch, f in snap.files(table):
        try:
            source = io.BytesIO(store.read_bytes(f["path"])) if store.remote else store.path(f["path"])
            if not store.remote and not source.exists():
                raise FileNotFoundError(f["path"])
        except FileNotFoundError:
            raise _MissingPart(store.url(f["path"]), "part file listed in its batch manifest is missing") from None
        except OSError as exc:
            # a damaged manifest's path that no file system takes (fuzzing: 4,096 characters,
            # ENAMETOOLONG from exists()) reached the loader's catch-all
            raise InputError(store.url(f["path"])[:200], f"part file listed in its batch manifest cannot be opened: {exc.strerror or exc}") from None
        df = read_parquet_untrusted(source, store.url(f["path"]), "unreadable Parquet part")
        gone = snap.superseded(batch)
        try:
            if gone:
                df = df.filter(~pl.col("profile_id").is_in(sorted(gone)))
            frames.append(schema.conform(schema.ALL_TABLES[table], df))
        except (ValueError, TypeError, pl.exceptions.PolarsError) as exc:
            # a part of another table (files swapped or renamed), or of columns of the wrong type:
            # named here, per part, for every caller (compaction reached the catch-all with it)
            raise InputError(store.url(f["path"]), f"part file does not hold the {table!r} table its manifest says: {first_line(exc)[:300]}") from None
    t = schema.ALL_TABLES[table]
    return pl.concat(frames, how="vertical") if frames else t.empty()


def _metadata_dict(store, row: dict) -> dict:
    md = {k: v for k, v in row.items() if k not in ("profile_id", "extra_json") and v is not None}
    if row.get("extra_json"):
        # written by json.dumps of a dict, so anything else is a damaged part (fuzz_surfaces s18,
        # dataset #1829: bytes set to 0x80 in a metadata part reached the catch-all as a JSONDecodeError)
        try:
            extra = json_doc(row["extra_json"])
        except ValueError as exc:
            raise InputError(store.url(), f"broken profaudit dataset: the metadata of profile {row.get('profile_id')!r:.80} holds extra_json that is not JSON ({first_line(exc)[:200]})") from None
        if not isinstance(extra, dict):
            raise InputError(store.url(), f"broken profaudit dataset: the metadata of profile {row.get('profile_id')!r:.80} holds extra_json that is a JSON {type(extra).__name__}, not an object")
        md.update(extra)
    return md


class _MissingPart(InputError):
    """A part file a manifest lists is gone: a compaction finished between our listing and our read."""


def read(store) -> ProfileSet:
    """Every live profile. A compaction that removes files while we read makes us list the
    manifests again once (its new batch holds the same rows); a file still missing is an error."""
    try:
        return _read(store)
    except _MissingPart:
        return _read(store)


def _by_profile(df: pl.DataFrame) -> dict:
    """{(profile_id,): rows} as `partition_by("profile_id", as_dict=True, maintain_order=True)`
    gives it; a frame of one profile is returned as it is: partition_by gathered a copy of all of
    it (a 200 MB rocprofv3 blow-up's 14 M-row metrics table: +4 GB and 27 s, engineer B, s16)."""
    if not df.height:
        return {}
    ids = df.get_column("profile_id").unique()
    if ids.len() == 1:
        return {(ids[0],): df}
    return df.partition_by("profile_id", as_dict=True, maintain_order=True)


def _read(store) -> ProfileSet:
    snap = snapshot(store)
    ids = snap.ids
    per_table = {}
    for table in schema.DATA_TABLES:
        df = _live_frame(store, snap, table)
        per_table[table] = _by_profile(df)
    meta = {r["profile_id"]: r for r in _live_frame(store, snap, "metadata").iter_rows(named=True)}
    profiles = []
    for pid in ids:
        tables = {t: per_table[t][(pid,)] for t in schema.DATA_TABLES if (pid,) in per_table[t]}
        profiles.append(Profile(pid, _metadata_dict(store, meta.get(pid, {"profile_id": pid})), tables))
    return ProfileSet(profiles)


# (dataset URL, names in _manifests) -> {table: live_files(table)}, most recently used last.
# A manifest is written once, under a name unique to its batch, and never rewritten: the listing
# of names changes with every new batch, compaction or removal, and only then. That holds on an
# object store too, where mtimes are upload times and a listing gives no content hash, and it
# costs one listing per scan instead of reading and parsing every manifest (3.2x the query
# itself when a scan re-read them all).
_LIVE_FILES_CACHE: OrderedDict = OrderedDict()
_LIVE_FILES_CACHE_DATASETS = 8


def live_files(store, table: str) -> tuple[list[str], set[tuple[str, str]], set[str]]:
    """(part URLs of `table`, (batch, profile id) pairs superseded in them, the URLs of the parts
    that may hold such a copy) for lazy scans: only those need filtering. Remembered per dataset
    until its manifest listing changes (see `_LIVE_FILES_CACHE`)."""
    names = [n for n in store.listdir(MANIFESTS) if n.endswith(".json")]
    key = (store.url(), tuple(names))
    entry = _LIVE_FILES_CACHE.get(key)
    if entry is None:
        read_marker(store)
        try:
            snap = _snapshot(store, names=names)
        except _VanishedManifest:
            # a compaction replaced a manifest as we listed: read afresh, and remember nothing,
            # as what was read no longer matches the listing
            return _live_files(store, snapshot(store), table)
        entry = _LIVE_FILES_CACHE[key] = (snap, {})
        while len(_LIVE_FILES_CACHE) > _LIVE_FILES_CACHE_DATASETS:
            _LIVE_FILES_CACHE.popitem(last=False)
    _LIVE_FILES_CACHE.move_to_end(key)
    snap, tables = entry
    if table not in tables:
        tables[table] = _live_files(store, snap, table)
    urls, gone, dirty = tables[table]
    return list(urls), set(gone), set(dirty)


def _live_files(store, snap: Snapshot, table: str) -> tuple[list[str], set[tuple[str, str]], set[str]]:
    files = snap.files(table)
    urls = [store.url(f["path"]) for _, f in files]
    # once per batch, not once per part file (a batch may hold many parts of one table)
    superseded = {batch: snap.superseded(batch) for batch in {b for b, _ in files}}
    gone = {(batch, pid) for batch, pids in superseded.items() for pid in pids}
    # a part whose `profile_range` (indices into its batch's profile list) holds no superseded
    # profile is read unfiltered: one re-ingested profile then costs a filter over one part of
    # its old batch, not over every part (a compacted 1M-row batch is several)
    positions: dict[str, list[int]] = {}
    for m in snap.manifests:
        if superseded.get(m["batch"]):
            gone_ids = superseded[m["batch"]]
            positions[m["batch"]] = [i for i, e in enumerate(m["profiles"]) if e["profile_id"] in gone_ids]
    dirty = set()
    for (batch, f), url in zip(files, urls):
        if not superseded.get(batch):
            continue
        r = f.get("profile_range")
        known = isinstance(r, list) and len(r) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in r)
        if not known or any(r[0] <= i < r[1] for i in positions[batch]):
            dirty.add(url)
    return urls, gone, dirty


# ---------------------------------------------------------------------------------- maintenance


def info(store) -> dict:
    """Profiles, batches, tables (rows, files, bytes), size, and what compaction would tidy."""
    marker = read_marker(store)
    snap = snapshot(store)
    tables: dict[str, dict] = {}
    listed = set()
    total_bytes = 0
    for m in snap.manifests:
        for i, f in enumerate(m["files"]):
            t = tables.setdefault(f["table"], {"rows": 0, "files": 0, "bytes": 0})
            t["rows"] += f["rows"]
            t["files"] += 1
            t["bytes"] += f["bytes"]
            total_bytes += f["bytes"]
            listed.add(f["path"])
            # each count passed check_manifest, but counts that are each in range can add up past
            # what a 64-bit total holds (2^63-1 rows beside 404 more): a lie, named where it tips over
            for k, n, whose in (("rows", t["rows"], f"the {f['table'][:100]!r} table's rows"), ("bytes", total_bytes, "the dataset's bytes")):
                if n > COUNT_MAX:
                    raise InputError(store.url(f"{MANIFESTS}/{m['_file']}"), f"broken batch manifest: files[{i}].{k}: {whose} add up past 2^63-1")
    # rows of superseded copies are counted apart so that `rows` is what a profaudit reader returns
    superseded = sum(len(snap.superseded(m["batch"])) for m in snap.manifests)
    for m in snap.manifests:
        gone = snap.superseded(m["batch"])
        # what this batch's own files hold per table: a superseded profile's rows come out of
        # them, and a manifest that says a profile has more rows than its files hold lies (a
        # negative row count was printed: deep manifest mutator, session 16)
        held: dict[str, int] = {}
        for f in m["files"]:
            held[f["table"]] = held.get(f["table"], 0) + f["rows"]
        for e in m["profiles"]:
            if e["profile_id"] in gone:
                for t, n in (e.get("rows") or {}).items():
                    if n > held.get(t, 0):
                        raise InputError(store.url(f"{MANIFESTS}/{m['_file']}"), f"broken batch manifest: profile {e['profile_id'][:100]!r} has {n:,} {t} rows but the batch's files hold {held.get(t, 0):,}")
                    held[t] -= n
                    tables[t]["rows"] -= n
                if "metadata" in tables:
                    tables["metadata"]["rows"] -= 1
    unlisted = [f for f in _part_files(store) if f[0] not in listed]
    return {
        "dataset": store.url(),
        "layout": int(marker.get("layout", 1)),
        "schema_version": marker.get("schema_version"),
        "profiles": len(snap.owner),
        "batches": len(snap.manifests),
        "superseded_copies": superseded,
        "bytes": sum(t["bytes"] for t in tables.values()),
        "tables": tables,
        "uncommitted_files": len(unlisted),
        "uncommitted_bytes": sum(f[1] for f in unlisted),
    }


def _part_files(store) -> list[tuple[str, int, float]]:
    out = []
    for table in TABLES_WITH_METADATA:
        out.extend(f for f in store.files_under(table) if f[0].endswith(".parquet"))
    return out


def _small(m: dict, target_file_bytes: int) -> bool:
    return sum(f["bytes"] for f in m["files"]) < target_file_bytes // 2


def _merge_batches(store, snap: Snapshot, chosen: list[dict], target_file_bytes: int) -> int:
    """Rewrite the live rows of the `chosen` batches as one new batch, then delete them; returns
    the number of part files removed. Crash-safe: the new manifest is written last of the new
    batch (temp + rename) and names the batches it replaces, so a reader sees either the old
    batches or the new one, never both nor neither; the old manifests go before their files."""
    names = {m["batch"] for m in chosen}
    sub = Snapshot(chosen, snap.owner)
    tables = {t: _live_frame(store, sub, t) for t in TABLES_WITH_METADATA}
    batch = new_batch_id(after=max(names))
    entries, files = _write_frames(store, batch, sub.ids, tables, target_file_bytes, chosen)
    # what the merged batches weighed in their names (their bytes, for a full or unsized one)
    tier = sum(_name_bytes(m) for m in chosen)
    commit_batch(store, batch, entries, files, replaces=sorted(names), target_file_bytes=target_file_bytes, tier_bytes=tier)
    return drop_batches(store, chosen)


def _name_bytes(m: dict) -> int:
    small = small_batch_bytes(m.get("_file", ""))
    return small if small is not None else sum(f["bytes"] for f in m["files"])


def _dead(m: dict, snap: Snapshot) -> bool:
    """Whether every profile of batch `m` has its newest copy in a later batch (`snap` holds every
    batch from `m` on: what supersedes a batch always sorts after it). A batch of no profiles
    (an ingest whose inputs were all skipped) records what was skipped: kept."""
    return bool(m["profiles"]) and all(snap.owner.get(e["profile_id"]) != m["batch"] for e in m["profiles"])


def drop_batches(store, dead: list[dict]) -> int:
    """Delete batches none of whose rows a reader keeps; returns the number of part files removed.
    Manifests first: a reader that listed one and then misses its file lists again (as after a
    merge), and a crash between the two leaves only unlisted files, which `compact` sweeps."""
    for m in dead:
        store.remove(f"{MANIFESTS}/{m['_file']}")
    removed = 0
    for m in dead:
        for f in m["files"]:
            store.remove(f["path"])
            removed += 1
    return removed


def finish_replaced(store, snap: Snapshot) -> int:
    """Delete what an interrupted compaction left: the batches its committed batch replaces (no
    reader reads them). Their files go first, the manifest last, so a crash here leaves a record
    to finish from. Returns the number of batches removed."""
    for m in snap.replaced:
        for f in m["files"]:
            store.remove(f["path"])
        store.remove(f"{MANIFESTS}/{m['_file']}")
    return len(snap.replaced)


def compact(store, *, target_file_bytes: int = TARGET_FILE_BYTES, orphan_age_s: float = 3600.0) -> dict:
    """Rewrite small batches (and batches holding superseded copies) into one batch of target-size
    files, then delete what it replaces. Part files no manifest lists and older than `orphan_age_s`
    (left by a crashed ingest; a running one's are younger) are deleted too.

    Readers are safe throughout: the new manifest names the batches it replaces, so a reader that
    sees both reads each row once; the old files go only after their manifests."""
    snap = snapshot(store)
    small = [m for m in snap.manifests if _small(m, target_file_bytes) or snap.superseded(m["batch"])]
    result = {"batches_before": len(snap.manifests), "batches_rewritten": 0, "files_removed": 0, "orphans_removed": 0}
    if len(small) > 1 or (small and snap.superseded(small[0]["batch"])):
        result["files_removed"] = _merge_batches(store, snap, small, target_file_bytes)
        result["batches_rewritten"] = len(small)
    after = snapshot(store)
    finish_replaced(store, after)
    listed = {f["path"] for m in after.manifests for f in m["files"]}
    now = time.time()
    for rel, _size, mtime in _part_files(store):
        if rel not in listed and now - mtime > orphan_age_s:
            store.remove(rel)
            result["orphans_removed"] += 1
    result["batches_after"] = len(snapshot(store).manifests)
    return result


def auto_compact(store, *, fanout: int = AUTO_COMPACT_FANOUT, target_file_bytes: int = TARGET_FILE_BYTES, base_bytes: int | None = None) -> dict:
    """Size-tiered compaction run after each append: once `fanout` small batches (under half the
    target file size) fall in one size class (`size_class`: powers of `fanout` above
    `base_bytes`), they are merged into one batch, which lands a class up; repeated until no class
    holds `fanout` small batches.

    Why tiers and not "merge every small batch": a merge only combines batches of about one size,
    so its cost is about what they hold, and a byte is rewritten once per class it climbs through
    (log_fanout(weight / base), the weight being the bytes the batch's rows were appended as: 5
    with the defaults for batches appended near their Parquet size, a few more for one-profile
    appends, whose bytes are mostly per-file overhead): appends stay O(their rows) amortised
    whatever the dataset holds, while a scan meets at most (fanout - 1) small batches per class
    instead of one per append. Which batches are small and how big is in the manifests' names: an
    append with nothing due lists one folder and reads nothing. Batches of a due class whose every
    profile was ingested again later are deleted instead of merged (`_dead`), so re-ingesting one
    profile over and over costs a manifest listing per append and a small read every few.

    Idempotent (nothing due, nothing done) and safe with concurrent writers: two writers merging
    the same batches at once each commit a batch replacing them; readers keep one copy of each
    profile (its newest) and the next `compact` drops the other; a writer that finds the parts
    already gone leaves the merge to the one that removed them. The append has committed before
    this runs, so a failure here never loses its batch (see `append`)."""
    if fanout < 2:
        raise UsageError(f"auto-compaction fan-out {fanout}: must be at least 2 (batches merged at once)")
    base = base_bytes or AUTO_COMPACT_BASE_BYTES
    result = {"merges": 0, "batches_rewritten": 0, "batches_dropped": 0, "files_removed": 0}

    def classes(names) -> dict[int, list]:
        by: dict[int, list] = {}
        for name in names:
            size = small_batch_bytes(name)
            if size is not None:  # an "s" name: small by its real bytes (its number may be more: see manifest_name)
                by.setdefault(size_class(size, fanout, base), []).append(name)
        return by

    def first_due(names) -> list | None:
        return next((v for _, v in sorted(classes(names).items()) if len(v) >= fanout), None)

    while True:
        listed = first_due(name_sizes(store, store.listdir(MANIFESTS), target_file_bytes))
        if listed is None:
            return result
        # the live batches from the oldest candidate on (a crashed merge's replaced ones drop out)
        snap = snapshot(store, since=min(n.split(".", 1)[0] for n in listed))
        by_file = {m["_file"]: m for m in snap.manifests}
        due = first_due(by_file)
        if due is None:
            # what the names counted were batches a crashed merge had replaced: finish that merge
            finish_replaced(store, snap)
            return result
        chosen = [by_file[n] for n in due]
        dead = [m for m in chosen if _dead(m, snap)]
        if dead:
            # every profile of these has a newer copy: nothing of them is read, so they are
            # deleted, not rewritten. A profile ingested again and again otherwise kept its class
            # due: the merge of its copies is one copy, small enough to stay in the class, so a
            # merge (reading and writing every table of four batches) came every third append
            result["files_removed"] += drop_batches(store, dead)
            result["batches_dropped"] += len(dead)
            continue
        try:
            result["files_removed"] += _merge_batches(store, snap, chosen, target_file_bytes)
        except _MissingPart:
            return result  # another writer is merging these very batches
        result["merges"] += 1
        result["batches_rewritten"] += len(chosen)


def _write_frames(store, batch: str, ids: list[str], tables: dict[str, pl.DataFrame], target: int, old: list[dict]) -> tuple[list[dict], list[dict]]:
    """Write already-stacked tables as target-size parts, keeping each profile's rows in one file."""
    by_id = {e["profile_id"]: e for m in old for e in m["profiles"]}
    entries = [by_id[pid] for pid in ids]
    position = {pid: i for i, pid in enumerate(ids)}
    files = []
    for table, df in tables.items():
        if not df.height:
            continue
        per_row = max(1, df.estimated_size() // df.height)
        rows_per_file = max(1, target // per_row)
        if rows_per_file > ROW_GROUP_ROWS:
            # whole row groups per file: no short group at each file's end
            rows_per_file -= rows_per_file % ROW_GROUP_ROWS
        n = 0
        start = 0
        while start < df.height:
            end = min(df.height, start + rows_per_file)
            # move the cut to a profile boundary so one profile's rows stay in one file
            if end < df.height:
                pid = df["profile_id"][end - 1]
                while end < df.height and df["profile_id"][end] == pid:
                    end += 1
            part = df.slice(start, end - start)
            rel = f"{table}/batch={batch}/part-00000-{n:03d}.parquet"
            data = _parquet_bytes(part)
            store.write_bytes(rel, data)
            at = [position[pid] for pid in part["profile_id"].unique().to_list() if pid in position]
            span = [min(at), max(at) + 1] if at else [0, 0]
            files.append({"table": table, "path": rel, "rows": part.height, "bytes": len(data), "profile_range": span})
            n += 1
            start = end
    return entries, files
