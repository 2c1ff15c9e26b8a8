"""profaudit's on-disk form: Parquet partitioned by ingest batch, one manifest per batch.

Layout 2 (written since 0.1; see `profaudit.dataset_v2` for the details and the reasons):

    DIR/_profaudit_dataset.json              format marker, layout, schema version
    DIR/_manifests/<batch>.json              one append-only manifest per ingest batch
    DIR/<table>/batch=<batch>/part-*.parquet rows of many profiles; `profile_id` is a column

Layout 1 (a folder per profile and a global `metadata.json`) is still read, and `profaudit dataset
convert` rewrites it as layout 2. DIR may be an fsspec URL (`s3://bucket/ds`).

Writes are atomic: a batch is visible once its manifest is written; a replaced dataset is built in
a sibling temporary folder and renamed into place.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, TypeVar

import polars as pl

from profaudit import schema
from profaudit.errors import InputError, UsageError, first_line
from profaudit.profile import Profile, ProfileSet

MARKER = "_profaudit_dataset.json"
FORMAT = "profaudit-dataset"
T = TypeVar("T")


def is_dataset(path) -> bool:
    from profaudit.datastore import is_url, local_path, open_store

    if is_url(path):
        # a missing fsspec backend (gcsfs, adlfs) is an InputError naming it: let it through
        store = open_store(path)
        try:
            return store.isfile(MARKER)
        except Exception:  # an unreachable bucket: not ours to claim
            return False
    return (local_path(path) / MARKER).is_file()


def _cannot_write(path: Path | str, exc: OSError) -> InputError:
    # an unwritable -o (read-only folder, /proc, a folder in the way, a full disk) is the user's to
    # fix: name the target, not our temporary sibling
    return InputError(path, f"cannot write: {exc.strerror or exc}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _temp_sibling(path: Path) -> str:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _cannot_write(path, exc) from None
    os.close(fd)
    # mkstemp makes the file private (0600); what we write is a report or a dataset meant to be
    # shared, so it gets the mode a plain open() would give it
    os.chmod(tmp, 0o666 & ~_umask())
    return tmp


def _write_via_temp(path: Path, write: Callable[[str], object]) -> None:
    """`write(temporary sibling)`, then rename it to `path`: nothing half-written is ever seen there."""
    tmp = _temp_sibling(path)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _cannot_write(path, exc) from None
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write a file through a temporary sibling and a rename."""
    _write_via_temp(Path(path), lambda tmp: Path(tmp).write_bytes(data))


def atomic_write_text(path: Path, text: str) -> None:
    # a lone UTF-16 surrogate (a claim's "\ud800", which JSON and YAML keep) has no UTF-8 form: it
    # is written escaped, as text, instead of failing the report (UnicodeEncodeError at the
    # catch-all: fuzz_surfaces claim #80 seed 4501)
    atomic_write_bytes(path, text.encode("utf-8", "backslashreplace"))


def atomic_write_frame(df: pl.DataFrame, path: Path, fmt: str) -> None:
    """Write a table as csv/json/parquet through a temporary file and a rename."""
    writers = {"parquet": df.write_parquet, "csv": df.write_csv, "json": df.write_json}
    if fmt not in writers:
        raise UsageError(f"cannot write format {fmt!r}")
    _write_via_temp(Path(path), writers[fmt])


def _check_target(out: Path) -> None:
    if out.exists():
        if not out.is_dir():
            raise UsageError(f"{out}: exists and is not a folder")
        # hidden names are writers' temporaries: another writer may be creating the dataset now
        if any(not e.name.startswith(".") for e in out.iterdir()) and not is_dataset(out):
            raise UsageError(f"{out}: folder exists, is not empty and is not a profaudit dataset; choose another -o")


def write_dataset(ps: ProfileSet, out, *, merge: bool = True, target_file_bytes: int | None = None, batch: str | None = None) -> Path | str:
    """Write `ps` to `out` as one new batch (id `batch`, default a fresh one). An existing dataset
    there is appended to (profiles already in it are superseded by their new copy) unless
    merge=False, which replaces it whole. `out` may be an fsspec URL."""
    from profaudit import dataset_v2 as v2
    from profaudit.datastore import is_url, local_path

    target = target_file_bytes or v2.TARGET_FILE_BYTES
    write_to(out, lambda store: v2.append(ps, store, target_file_bytes=target, batch=batch), merge=merge)
    return out if is_url(out) else local_path(out)


def write_to(out, write: Callable[[object], T], *, merge: bool) -> T:
    """Check `out` as the place for a new batch, then run `write(store)` there and return what it
    returns: the one set of target checks of every writer (`write_dataset`, `fleet.ingest`).

    merge=True: `out` is created, or appended to when it is a (layout-2) profaudit dataset; a
    folder or bucket holding anything else is refused. merge=False replaces the dataset there: a
    local one is built in a temporary sibling and swapped in; in a bucket (no rename) the old
    dataset's files are removed first."""
    from profaudit.datastore import open_store

    store = open_store(out)
    if store.remote:
        ours = is_dataset(out)  # one request to the bucket, not one per question
        if merge and ours:
            _refuse_layout_1(store)
        elif store.exists():
            if store.listdir("") and not ours:
                raise UsageError(f"{out}: exists, is not empty and is not a profaudit dataset; choose another -o")
            if ours:
                _remove_dataset(store)
        try:
            return write(store)
        except OSError as exc:  # a bucket that does not exist or refuses us: s3fs's FileNotFoundError / PermissionError
            raise _cannot_write(store.url(), exc) from None
    out = store.root
    _check_target(out)
    if merge:
        # a new dataset is appended to as well (not built aside and swapped in): another writer
        # may be creating it at this moment, and a swap would drop its batches
        if is_dataset(out):
            _refuse_layout_1(store)
        try:
            return write(store)
        except OSError as exc:
            raise _cannot_write(out, exc) from None
    result = []
    replace_dataset(out, lambda tmp: result.append(write(open_store(tmp))))
    return result[0]


def _refuse_layout_1(store) -> None:
    from profaudit import dataset_v2 as v2

    if v2.layout_of(store) < v2.LAYOUT:
        raise UsageError(f"{store.url()}: a layout-1 profaudit dataset cannot be appended to; run `profaudit dataset convert {store.url()}` first")


def _remove_dataset(store) -> None:
    """Delete a remote dataset's own files (manifests first, so no reader sees parts without them)."""
    from profaudit import dataset_v2 as v2

    for rel, _size, _mtime in store.files_under(v2.MANIFESTS):
        store.remove(rel)
    for table in v2.TABLES_WITH_METADATA:
        for rel, _size, _mtime in store.files_under(table):
            store.remove(rel)
    store.remove(MARKER)


def replace_dataset(out: Path, build: Callable[[Path], object]) -> None:
    """`build(temporary sibling folder)`, then swap it into place of `out` (local datasets)."""
    from profaudit.datastore import local_path

    out = local_path(out)
    _check_target(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp's 0700 would keep the dataset from its readers
    except OSError as exc:
        raise _cannot_write(out, exc) from None
    try:
        build(tmp)
        _swap_into_place(tmp, out)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            raise _cannot_write(out, exc) from None
        raise


def _swap_into_place(tmp: Path, out: Path) -> None:
    if out.exists():
        trash = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
        os.replace(out, trash / "old")
        try:
            os.replace(tmp, out)
        except BaseException:
            os.replace(trash / "old", out)
            raise
        shutil.rmtree(trash, ignore_errors=True)
    else:
        os.replace(tmp, out)


def read_dataset(path) -> ProfileSet:
    """Read a dataset (layout 1 or 2, a folder or an fsspec URL) into a ProfileSet."""
    from profaudit import dataset_v2 as v2
    from profaudit.datastore import open_store

    store = open_store(path)
    if v2.layout_of(store) >= v2.LAYOUT:
        return v2.read(store)
    return _read_layout_1(layout_1_root(store, path))


def layout_1_root(store, where) -> Path:
    """The folder of a layout-1 dataset: a local one only (`where` names it in the error)."""
    if store.remote:
        raise InputError(where, "a layout-1 dataset is read from a local folder only; copy it here and run `profaudit dataset convert`")
    return store.root


def _read_layout_1(path: Path) -> ProfileSet:
    from profaudit import dataset_v2 as v2
    from profaudit.datastore import LocalStore

    try:
        meta = v2.json_doc(LocalStore(path).read_bytes("metadata.json"))
    except (OSError, ValueError) as exc:
        raise InputError(path, f"broken profaudit dataset: {exc}") from None
    if not isinstance(meta, dict):
        raise InputError(path / "metadata.json", "broken profaudit dataset: expected a mapping of profile id to metadata")
    ids = _layout_1_marker(path)["profiles"]
    from profaudit.parsers.isolate import read_parquet_untrusted  # late, as in the v2 reader

    per_table: dict[str, dict[str, pl.DataFrame]] = {}
    for name in schema.DATA_TABLES:
        files = sorted((path / name).glob("profile_id=*/*.parquet"))
        parts: dict[str, pl.DataFrame] = {}
        for f in files:
            pid = f.parent.name.split("=", 1)[1]
            df = read_parquet_untrusted(f, f, "unreadable Parquet part")
            try:
                # checked per part, as the layout-2 reader does: a part of another table (two
                # parts swapped) was schema.conform's ValueError at the catch-all when the
                # profile was built (fuzz_surfaces dataset #14 seed 4201)
                schema.conform(schema.ALL_TABLES[name], df)
            except (ValueError, TypeError, pl.exceptions.PolarsError) as exc:
                raise InputError(f, f"part file does not hold the {name!r} table its folder says: {first_line(exc)[:300]}") from None
            parts[pid] = df
        per_table[name] = parts
    profiles = []
    for pid in ids:
        tables = {name: per_table[name].get(pid) for name in schema.DATA_TABLES}
        facts = meta.get(pid, {})
        if not isinstance(facts, dict):
            raise InputError(path / "metadata.json", f"broken profaudit dataset: the metadata of {pid!r} is not a mapping")
        profiles.append(Profile(pid, dict(facts), {k: v for k, v in tables.items() if v is not None}))
    return ProfileSet(profiles)


def _layout_1_marker(root: Path) -> dict:
    """A layout-1 dataset's marker, checked: a mapping whose `profiles` is a list of ids (a damaged
    one was a JSON error, an AttributeError or a TypeError at the catch-all)."""
    from profaudit import dataset_v2 as v2
    from profaudit.datastore import LocalStore

    f = root / MARKER
    try:
        marker = v2.json_doc(LocalStore(root).read_bytes(MARKER))
    except (OSError, ValueError) as exc:
        raise InputError(f, f"broken profaudit dataset marker: {exc}") from None
    if not isinstance(marker, dict):
        raise InputError(f, "broken profaudit dataset marker: expected a JSON object")
    ids = marker.get("profiles", [])
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise InputError(f, "broken profaudit dataset marker: 'profiles' is not a list of profile ids")
    return marker


def _parquet_rows(f: Path) -> int:
    """Rows a Parquet part's footer declares; a part that is cut, damaged or not a file is one line."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from profaudit.parsers.folderfiles import refuse_non_regular

    refuse_non_regular(f, f, "unreadable Parquet part")
    try:
        return pq.ParquetFile(f).metadata.num_rows
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise InputError(f, f"unreadable Parquet part: {first_line(exc)}") from None


def scan_table(path, table: str) -> pl.LazyFrame:
    """A lazy polars scan of one table across every profile of a dataset (for large datasets)."""
    from profaudit.scan import scan

    return scan(path, table, engine="polars")


def convert_dataset(src, out=None, *, target_file_bytes: int | None = None):
    """Rewrite a layout-1 dataset as layout 2, in place (atomically) or into `out`."""
    from profaudit import dataset_v2 as v2
    from profaudit.datastore import open_store

    if not is_dataset(src):
        raise InputError(src, "not a profaudit dataset")
    if v2.layout_of(open_store(src)) >= v2.LAYOUT and out is None:
        raise UsageError(f"{src}: already layout {v2.LAYOUT}; nothing to convert")
    ps = read_dataset(src)
    return write_dataset(ps, out if out is not None else src, merge=False, target_file_bytes=target_file_bytes)


def dataset_info(path) -> dict:
    """Profiles, batches, tables (rows, files, bytes) and size of a dataset of either layout."""
    from profaudit import dataset_v2 as v2
    from profaudit.datastore import open_store

    store = open_store(path)
    if not is_dataset(path):
        raise InputError(path, "not a profaudit dataset")
    if v2.layout_of(store) >= v2.LAYOUT:
        return v2.info(store)
    # a layout-1 dataset at a URL (simplecache::file://...) has a text root, not a folder: the
    # same one line read_dataset gives, not a TypeError at the catch-all (surfaces run s16, #341)
    root = layout_1_root(store, path)
    marker = _layout_1_marker(root)
    tables = {}
    for name in schema.ALL_TABLES:
        files = sorted((root / name).glob("profile_id=*/*.parquet"))
        if files:
            tables[name] = {"rows": sum(_parquet_rows(f) for f in files), "files": len(files), "bytes": sum(f.stat().st_size for f in files)}
    return {
        "dataset": str(root),
        "layout": 1,
        "schema_version": marker.get("schema_version"),
        "profiles": len(marker.get("profiles", [])),
        "batches": 0,
        "superseded_copies": 0,
        "bytes": sum(t["bytes"] for t in tables.values()),
        "tables": tables,
        "uncommitted_files": 0,
        "uncommitted_bytes": 0,
    }


def compact_dataset(path, *, target_file_bytes: int | None = None, orphan_age_s: float = 3600.0) -> dict:
    """Rewrite a layout-2 dataset's small batches into target-size files (see `dataset_v2.compact`)."""
    from profaudit import dataset_v2 as v2
    from profaudit.datastore import open_store

    if not is_dataset(path):
        raise InputError(path, "not a profaudit dataset")
    store = open_store(path)
    if v2.layout_of(store) < v2.LAYOUT:
        raise UsageError(f"{path}: a layout-1 dataset; run `profaudit dataset convert {path}` first")
    return v2.compact(store, target_file_bytes=target_file_bytes or v2.TARGET_FILE_BYTES, orphan_age_s=orphan_age_s)
