"""profaudit's on-disk form: a Hive-partitioned Parquet dataset plus a metadata JSON.

Layout (every table partitioned by profile, readable as it is by DuckDB, Spark, Dask, polars):

    DIR/_profaudit_dataset.json              format marker, schema version, profile ids
    DIR/metadata.json                        run metadata of every profile
    DIR/<table>/profile_id=<id>/part-0.parquet

Writes are atomic: the whole dataset is built in a sibling temporary folder and renamed into place,
so a reader never sees half a dataset and a failed ingest leaves the old one untouched.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

import polars as pl

from profaudit import __version__, schema
from profaudit.errors import InputError, UsageError
from profaudit.profile import Profile, ProfileSet

MARKER = "_profaudit_dataset.json"
FORMAT = "profaudit-dataset"


def is_dataset(path: Path) -> bool:
    return (Path(path) / MARKER).is_file()


def _cannot_write(path: Path, exc: OSError) -> InputError:
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
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_frame(df: pl.DataFrame, path: Path, fmt: str) -> None:
    """Write a table as csv/json/parquet through a temporary file and a rename."""
    writers = {"parquet": df.write_parquet, "csv": df.write_csv, "json": df.write_json}
    if fmt not in writers:
        raise UsageError(f"cannot write format {fmt!r}")
    _write_via_temp(Path(path), writers[fmt])


def write_dataset(ps: ProfileSet, out: Path, *, merge: bool = True) -> Path:
    """Write `ps` to `out`. An existing dataset there is merged (same ids replaced) unless merge=False."""
    out = Path(out)
    if out.exists():
        if not out.is_dir():
            raise UsageError(f"{out}: exists and is not a folder")
        if any(out.iterdir()) and not is_dataset(out):
            raise UsageError(f"{out}: folder exists, is not empty and is not a profaudit dataset; choose another -o")
        if merge and is_dataset(out):
            old = read_dataset(out)
            merged = ProfileSet(p for p in old if p.profile_id not in ps)
            for p in ps:
                merged.add(p)
            ps = merged
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp's 0700 would keep the dataset from its readers
    except OSError as exc:
        raise _cannot_write(out, exc) from None
    try:
        for p in ps:
            for name, df in p.tables.items():
                if df.height:
                    part = tmp / name / f"profile_id={p.profile_id}"
                    part.mkdir(parents=True, exist_ok=True)
                    df.drop("profile_id").write_parquet(part / "part-0.parquet", statistics=True)
            mpart = tmp / "metadata" / f"profile_id={p.profile_id}"
            mpart.mkdir(parents=True, exist_ok=True)
            schema.from_records("metadata", [p.metadata_row()]).drop("profile_id").write_parquet(mpart / "part-0.parquet")
        meta = {p.profile_id: _json_safe(p.metadata) for p in ps}
        (tmp / "metadata.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
        marker = {
            "format": FORMAT,
            "schema_version": schema.SCHEMA_VERSION,
            "profaudit_version": __version__,
            "profiles": ps.ids,
            "tables": {name: {c.name: {"dtype": str(c.dtype), "unit": c.unit} for c in t.columns} for name, t in schema.ALL_TABLES.items()},
            "partitioning": "hive:profile_id",
        }
        (tmp / MARKER).write_text(json.dumps(marker, indent=1))
        _swap_into_place(tmp, out)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            raise _cannot_write(out, exc) from None
        raise
    return out


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


def _json_safe(md: dict) -> dict:
    from profaudit.profile import _jsonable

    return _jsonable(md)


def read_dataset(path: Path) -> ProfileSet:
    path = Path(path)
    try:
        marker = json.loads((path / MARKER).read_text())
        meta = json.loads((path / "metadata.json").read_text())
    except (OSError, ValueError) as exc:
        raise InputError(path, f"broken profaudit dataset: {exc}") from None
    if marker.get("format") != FORMAT:
        raise InputError(path, "not a profaudit dataset (bad marker)")
    major = str(marker.get("schema_version", "0")).split(".")[0]
    if major != schema.SCHEMA_VERSION.split(".")[0]:
        raise InputError(path, f"dataset schema {marker.get('schema_version')} is not readable by this profaudit (schema {schema.SCHEMA_VERSION})")
    ids: list[str] = list(marker.get("profiles", []))
    per_table: dict[str, dict[str, pl.DataFrame]] = {}
    for name in schema.DATA_TABLES:
        files = sorted((path / name).glob("profile_id=*/*.parquet"))
        parts: dict[str, pl.DataFrame] = {}
        for f in files:
            pid = f.parent.name.split("=", 1)[1]
            try:
                parts[pid] = pl.read_parquet(f)
            except Exception as exc:  # polars raises several error types for damaged files
                raise InputError(f, f"unreadable Parquet part: {exc}") from None
        per_table[name] = parts
    profiles = []
    for pid in ids:
        tables = {name: per_table[name].get(pid) for name in schema.DATA_TABLES}
        profiles.append(Profile(pid, dict(meta.get(pid, {})), {k: v for k, v in tables.items() if v is not None}))
    return ProfileSet(profiles)


def scan_table(path: Path, table: str) -> pl.LazyFrame:
    """A lazy scan of one table across every profile of a dataset (for large datasets)."""
    t = schema.TABLES[table]
    files = list((Path(path) / table).glob("profile_id=*/*.parquet"))
    if not files:
        return t.empty().lazy()
    lf = pl.scan_parquet(str(Path(path) / table / "**" / "*.parquet"), hive_partitioning=True)
    return lf.with_columns(pl.col("profile_id").cast(pl.Utf8)).select(t.names)

