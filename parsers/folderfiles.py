"""The data files a folder reader takes must be regular files it can open.

A copy or a sync that went wrong leaves a folder where a file was, or a link that leads nowhere or
to itself. Filtered out with `is_file()`, such an entry vanished: the folder loaded without that
trace and said nothing (a silent partial load), or its open reached the loader's catch-all as an
`IsADirectoryError` or `OSError: Too many levels of symbolic links`. Here it is one line naming it.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from profaudit.errors import InputError
from profaudit.filekind import FILE, FOLDER, file_kind


def present(p: Path) -> bool:
    """Whether anything is at `p`: a file, a folder, or a link (even one that leads nowhere)."""
    return os.path.lexists(p)


def file_beside(p: Path) -> bool:
    """`p.is_file()` for a companion file whose name is made from the input's: False, not
    OSError, when that name is longer than a file name can be (ENAMETOOLONG: no such file can
    exist). A kernel trace named with 250 bytes looked for '<name>marker_api_trace.csv' beside it
    and the OSError reached the loader's catch-all (s19 hostile fuzz, xplane #382)."""
    try:
        return p.is_file()
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return False
        raise


def check_regular(root: Path, p: Path) -> Path:
    """`p` when it is (or links to) a regular file; else one InputError naming it within `root`."""
    try:
        kind = file_kind(p)  # follows links: a loop or a dangling link raises
    except OSError as exc:
        why = {errno.ELOOP: "a symbolic link that leads back to itself (a loop)",
               errno.ENOENT: "a symbolic link to nothing"}.get(exc.errno, os.strerror(exc.errno or 0) or type(exc).__name__)
        raise InputError(root, f"{_rel(root, p)}: cannot be opened: {why}") from None
    if kind != FILE:
        what = "a folder" if kind == FOLDER else "not a regular file"
        raise InputError(root, f"{_rel(root, p)}: {what} where a data file belongs")
    return p


def refuse_non_regular(source: str | os.PathLike, path: Path | str, what: str) -> None:
    """One InputError unless `source` is (or links to) a regular file: pyarrow's open of a FIFO
    where a Parquet file belongs blocks for ever, and a folder is no Parquet file."""
    try:
        kind = file_kind(source)
    except OSError as exc:
        raise InputError(path, f"{what}: {exc.strerror or exc}") from None
    if kind != FILE:
        raise InputError(path, f"{what}: not a regular file")


def regular_files(root: Path, candidates) -> list[Path]:
    """`candidates` (paths a reader matched by name), each checked with `check_regular`."""
    return [check_regular(root, p) for p in candidates]


def _rel(root: Path, p: Path) -> str:
    try:
        return str(p.relative_to(root))
    except ValueError:
        return p.name
