"""What a path is, for the readers that must open only regular files.

A FIFO or a device where a file belongs blocks an open() or a read for ever (no writer, no end),
and a folder is no file: the folder readers, the dataset store, the Parquet opens and the device
spec reader each refuse those before opening. They share this one stat-and-classify step; each
keeps its own message, since each names the problem in its own terms (a data file in a folder, a
dataset part, a spec file).
"""

from __future__ import annotations

import os
import stat

FILE, FOLDER, OTHER = "file", "folder", "other"


def file_kind(path: str | os.PathLike) -> str:
    """FILE, FOLDER or OTHER (a FIFO, a device, a socket) for what `path` is or links to. Links
    are followed, so a link that leads nowhere or to itself raises the OSError of its stat
    (ENOENT, ELOOP), as every other failure to stat does: the caller words it."""
    mode = os.stat(path).st_mode
    if stat.S_ISREG(mode):
        return FILE
    return FOLDER if stat.S_ISDIR(mode) else OTHER
