"""Where a dataset lives: a local folder or an fsspec URL (`s3://`, `gs://`, `abfs://`, `file://`).

The dataset code talks to a `Store`, never to `os` or a cloud SDK, so the same layout logic writes
a folder on a laptop and a bucket on a fleet. Each write is all-or-nothing: a local file goes
through a temporary sibling and a rename; an object store's PUT is atomic by itself (an object
appears whole or not at all), so it is written in place.
"""

from __future__ import annotations

import errno
import os
import posixpath
import tempfile
from pathlib import Path

from profaudit.filekind import OTHER, file_kind


def is_url(target: str | os.PathLike) -> bool:
    """Whether `target` names an fsspec location other than the local file system."""
    s = os.fspath(target)
    return "://" in s and not s.startswith("file://")


def local_path(target: str | os.PathLike) -> Path:
    s = os.fspath(target)
    return Path(s[len("file://"):]) if s.startswith("file://") else Path(s)


class LocalStore:
    """A dataset folder on a local (or mounted, shared) file system."""

    remote = False

    def __init__(self, root: str | os.PathLike):
        self.root = local_path(root)

    def __repr__(self) -> str:
        return f"LocalStore({str(self.root)!r})"

    def __reduce__(self):
        return (LocalStore, (str(self.root),))

    def path(self, rel: str) -> Path:
        return self.root / rel if rel else self.root

    def url(self, rel: str = "") -> str:
        return str(self.path(rel))

    def exists(self, rel: str = "") -> bool:
        return self.path(rel).exists()

    def isfile(self, rel: str) -> bool:
        return self.path(rel).is_file()

    def read_bytes(self, rel: str) -> bytes:
        p = self.path(rel)
        # a FIFO (or a device) where a dataset file belongs would block the read for ever; a
        # folder is an IsADirectoryError from open() anyway
        if file_kind(p) == OTHER:
            raise OSError(errno.EINVAL, "not a regular file", str(p))
        return p.read_bytes()

    def write_bytes(self, rel: str, data: bytes) -> None:
        """Write through a temporary sibling and a rename: a reader, or a retried task writing the
        same name, never sees half a file."""
        from profaudit.dataset import atomic_write_bytes

        atomic_write_bytes(self.path(rel), data)

    def listdir(self, rel: str) -> list[str]:
        """Names in a folder (none when it is absent), hidden temporaries left out."""
        try:
            return sorted(n for n in os.listdir(self.path(rel)) if not n.startswith("."))
        except FileNotFoundError:
            return []

    def files_under(self, rel: str) -> list[tuple[str, int, float]]:
        """(relative path, size, mtime) of every file below `rel`, hidden temporaries left out."""
        out = []
        base = self.path(rel)
        for dirpath, dirs, files in os.walk(base):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for f in files:
                if f.startswith("."):
                    continue
                full = Path(dirpath) / f
                try:
                    st = full.stat()
                except OSError as exc:
                    # a link to itself or to nothing where a part belongs: the dataset is
                    # damaged, and the one line names the entry (s16 surfaces run, dataset #238)
                    from profaudit.errors import InputError

                    raise InputError(full, f"cannot read this dataset file: {exc.strerror or exc}") from None
                out.append((full.relative_to(self.root).as_posix(), st.st_size, st.st_mtime))
        return sorted(out)

    def size(self, rel: str) -> int:
        return self.path(rel).stat().st_size

    def remove(self, rel: str) -> None:
        self.path(rel).unlink(missing_ok=True)
        # drop the partition folder once its last file has gone
        parent = self.path(rel).parent
        try:
            if parent != self.root and not any(parent.iterdir()):
                parent.rmdir()
        except OSError:
            pass

    def local_copy(self, rel: str) -> Path:
        return self.path(rel)

    def arrow_filesystem(self):
        return None


class FsspecStore:
    """A dataset under an fsspec URL; `storage_options` go to `fsspec.url_to_fs` unchanged."""

    remote = True

    def __init__(self, url: str, storage_options: dict | None = None):
        from profaudit.errors import require

        self.url_root = url.rstrip("/")
        self.storage_options = dict(storage_options or {})
        self.fs, self.root = url_to_fs(self.url_root, self.storage_options)
        self.root = self.root.rstrip("/")
        self.protocol = url.split("://", 1)[0]

    def __repr__(self) -> str:
        return f"FsspecStore({self.url_root!r})"

    def __reduce__(self):
        return (FsspecStore, (self.url_root, self.storage_options))

    def _p(self, rel: str) -> str:
        return posixpath.join(self.root, rel) if rel else self.root

    def url(self, rel: str = "") -> str:
        return f"{self.protocol}://{self._p(rel)}"

    def exists(self, rel: str = "") -> bool:
        return self.fs.exists(self._p(rel))

    def isfile(self, rel: str) -> bool:
        return self.fs.isfile(self._p(rel))

    def read_bytes(self, rel: str) -> bytes:
        return self.fs.cat_file(self._p(rel))

    def write_bytes(self, rel: str, data: bytes) -> None:
        self.fs.pipe_file(self._p(rel), data)

    def listdir(self, rel: str) -> list[str]:
        try:
            entries = self.fs.ls(self._p(rel), detail=False, refresh=True)
        except FileNotFoundError:
            return []
        names = sorted(posixpath.basename(e.rstrip("/")) for e in entries)
        return [n for n in names if n and not n.startswith(".")]

    def files_under(self, rel: str) -> list[tuple[str, int, float]]:
        base = self._p(rel)
        try:
            found = self.fs.find(base, detail=True)
        except FileNotFoundError:
            return []
        out = []
        for full, info in found.items():
            relpath = posixpath.relpath(full, self.root)
            if any(part.startswith(".") for part in relpath.split("/")):
                continue
            mtime = info.get("LastModified") or info.get("mtime") or info.get("created") or 0
            out.append((relpath, int(info.get("size") or 0), mtime.timestamp() if hasattr(mtime, "timestamp") else float(mtime)))
        return sorted(out)

    def size(self, rel: str) -> int:
        return int(self.fs.size(self._p(rel)))

    def remove(self, rel: str) -> None:
        try:
            self.fs.rm_file(self._p(rel))
        except FileNotFoundError:
            pass

    def arrow_filesystem(self):
        """The pyarrow view of this fsspec file system (for lazy scans by polars and DuckDB)."""
        from pyarrow.fs import FSSpecHandler, PyFileSystem

        return PyFileSystem(FSSpecHandler(self.fs))


def url_to_fs(url: str, storage_options: dict | None = None):
    """fsspec's (file system, path) for a URL; a protocol whose backend is not installed (gcsfs for
    gs://, adlfs for abfs://) is one line naming the URL and what to install."""
    import tarfile
    import zipfile

    from profaudit.errors import InputError, first_line, require

    fsspec = require("fsspec", "fleet", "paths at URLs")
    try:
        return fsspec.core.url_to_fs(url, **(storage_options or {}))
    except ImportError as exc:
        raise InputError(url, f"{exc}".strip().rstrip(".")) from None
    except ValueError as exc:  # an unknown protocol
        raise InputError(url, f"not a URL fsspec can open: {exc}") from None
    except OSError as exc:
        # file systems that connect or open in their constructor: ftp:// refused, zip://x::/a/folder
        raise InputError(url, f"cannot open: {exc.strerror or exc}") from None
    except (TypeError, KeyError, zipfile.BadZipFile, tarfile.TarError) as exc:
        # a chained URL whose inner file is not the archive it names, or options that do not fit
        raise InputError(url, f"cannot open: {type(exc).__name__}: {first_line(exc)}") from None


def open_store(target, storage_options: dict | None = None) -> LocalStore | FsspecStore:
    if isinstance(target, (LocalStore, FsspecStore)):
        return target
    if is_url(target):
        return FsspecStore(os.fspath(target), storage_options)
    return LocalStore(target)


def download(url: str, into: str | os.PathLike, storage_options: dict | None = None) -> Path:
    """Copy a remote file or folder to a local folder, keeping its name (profile ids derive from
    the name and the bytes, so a downloaded input gets the id the same file gets locally)."""
    fs, p = url_to_fs(url, storage_options)
    dest = Path(into) / posixpath.basename(p.rstrip("/"))
    if fs.isdir(p):
        fs.get(p.rstrip("/") + "/", str(dest), recursive=True)
    else:
        fs.get_file(p, str(dest))
    return dest


def scratch_dir() -> str:
    return tempfile.mkdtemp(prefix="profaudit-remote-")


class RemoteInput:
    """One input at an fsspec URL, as `loader.expand` lists it: parsed from a local copy."""

    def __init__(self, url: str, size: int = 0, is_dataset: bool = False):
        self.url, self.size, self.is_dataset = url, size, is_dataset

    def __repr__(self) -> str:
        return f"RemoteInput({self.url!r})"

    def __str__(self) -> str:
        return self.url

    def __eq__(self, other) -> bool:
        return isinstance(other, RemoteInput) and other.url == self.url

    def __hash__(self) -> int:
        return hash(self.url)

    @property
    def name(self) -> str:
        return posixpath.basename(self.url.rstrip("/"))


def expand_url(raw: str) -> list[tuple[RemoteInput, bool]]:
    """What `raw` names: a profaudit dataset (one input), the files a glob matches, the files
    below a folder (found, not named: unrecognised ones are skipped), or one file."""
    from profaudit.dataset import is_dataset
    from profaudit.errors import InputError

    from urllib.parse import urlsplit

    protocol = raw.split("://", 1)[0]
    fs, p = url_to_fs(raw)
    try:
        if is_dataset(raw):
            return [(RemoteInput(raw.rstrip("/"), 0, True), True)]
        # an http(s) URL's host may hold brackets (an IPv6 address): only its path can be a pattern
        pattern = urlsplit(raw).path if protocol in ("http", "https") else p
        if any(ch in pattern for ch in "*?["):
            found = fs.glob(p, detail=True)
            if not found:
                raise InputError(raw, "no file matches this pattern")
            return [(RemoteInput(f"{protocol}://{k}", int(v.get("size") or 0)), True) for k, v in sorted(found.items()) if v.get("type") != "directory"]
        if fs.isdir(p):
            found = fs.find(p, detail=True)
            return [
                (RemoteInput(f"{protocol}://{k}", int(v.get("size") or 0)), False)
                for k, v in sorted(found.items())
                if not any(part.startswith(".") for part in posixpath.relpath(k, p).split("/"))
            ]
        if not fs.exists(p):
            raise InputError(raw, "no such file or folder")
        return [(RemoteInput(raw, int(fs.size(p) or 0)), True)]
    except InputError:
        raise
    except (OSError, ValueError) as exc:
        raise InputError(raw, f"cannot reach: {exc}") from None
    except TypeError as exc:  # fsspec's HTTP glob passes an option aiohttp refuses (fsspec, not us)
        raise InputError(raw, f"cannot reach: {type(exc).__name__}: {exc}") from None


def read_remote(item: RemoteInput, explicit: bool, options, read_local) -> list:
    """Parse a remote input through a local copy; errors and `path` name the URL, not the copy."""
    import shutil

    from profaudit.errors import InputError

    if item.is_dataset:
        from profaudit.dataset import read_dataset

        return list(read_dataset(item.url))
    tmp = scratch_dir()
    try:
        try:
            local = download(item.url, tmp)
        except (OSError, ValueError) as exc:
            raise InputError(item.url, f"cannot download: {exc}") from None
        try:
            profiles = read_local(local, explicit, options)
        except InputError as exc:
            raise type(exc)(item.url, exc.problem) from None
        for p in profiles:
            p.metadata["path"] = item.url
        return profiles
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
