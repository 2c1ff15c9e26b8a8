"""Text from JSON documents in a form polars, Parquet and JSON writers accept.

JSON may spell a lone UTF-16 surrogate (`"\\ud800"`); Python's json module returns it as is, and
polars (and UTF-8 encoding generally) refuse such strings, so one damaged name or metadata value
would fail the whole profile after it was read. `clean()` replaces each lone surrogate with U+FFFD
(the replacement character) everywhere in a parsed document; valid text is returned unchanged.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable

_LONE = re.compile(r"[\ud800-\udfff]")


def clean(obj: Any) -> Any:
    if isinstance(obj, str):
        return _LONE.sub("\ufffd", obj) if _LONE.search(obj) else obj
    if isinstance(obj, dict):
        return {clean(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [clean(v) for v in obj]
    return obj


# A lone surrogate reaches a parsed document only through a `\uD800`-`\uDFFF` escape or, since
# json decodes bytes with 'surrogatepass', as its UTF-8-style bytes (ED A0-BF ..). A pair of
# escapes matches too (json joins it into one character; clean() then changes nothing).
_MAYBE_LONE = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


# Read whole, a JSON document takes 15-25 times its size in Python objects (a 50 MB pyperf file:
# ~1 GB and ~12 CPU-s). Timing documents are kilobytes to a few MB; past this they are refused.
JSON_LIMIT = 64 << 20


def size_text(n: int) -> str:
    """A byte limit as a refusal prints it: whole MiB as such (the limits in use), any other size in
    bytes, so a limit under 1 MiB does not read "over 0 MiB"."""
    return f"{n >> 20} MiB" if n >= 1 << 20 and not n % (1 << 20) else f"{n:,} bytes"


def read_capped(path, what: str, limit: int | None = None, *, decompress: bool = True,
                too_big: Callable[[int], str] | None = None, quiet: bool = True) -> bytes | None:
    """The file's bytes, refused in one InputError line past `limit` (JSON_LIMIT when None).

    At most limit + 1 bytes are ever read, so a device or a link to one (/dev/zero reports size 0)
    is refused like a large file instead of being read for ever. `decompress` reads a gzipped file's
    decompressed bytes (the limit then bounds those). The refusal says `too_big(size)`, size being
    the larger of the size the file system reports and the bytes read; by default, the timing-document
    text. A file that cannot be read gives None when `quiet` (the caller's own reader then says what
    is wrong with it); otherwise its OSError propagates for the caller to word."""
    from profaudit.errors import InputError

    # looked up per call, not bound as a default: tests lower the module's JSON_LIMIT
    limit = JSON_LIMIT if limit is None else limit
    try:
        if decompress:
            from profaudit.parsers.base import open_maybe_gzip

            opened = open_maybe_gzip(path)
        else:
            opened = open(path, "rb")
        with opened as fh:
            data = fh.read(limit + 1)
            # the size a refusal names: what the file system reports, at least what was read
            size = max(os.fstat(fh.fileno()).st_size, len(data)) if too_big is not None and len(data) > limit else len(data)
    except Exception:
        if quiet:
            return None
        raise
    if len(data) > limit:
        if too_big is not None:
            raise InputError(path, too_big(size))
        raise InputError(
            path,
            f"{what} over {size_text(limit)}{' once decompressed' if decompress and _gz(path) else ''}: larger than a "
            "timing document this reader takes whole (about 20x its size in memory); split it into smaller files",
        )
    return data


# orjson does not survive a failed allocation: under an address-space limit (`ulimit -v`, RLIMIT_AS)
# or strict overcommit, where malloc returns NULL instead of the kernel's OOM killer acting, a
# document too big for the room left segfaults the process (exit 139) instead of raising
# MemoryError (s17 fuzz, neuron_json crash-451: a 200 MB document under a 3 GB cap). Measured:
# 42 MB of `{}` objects needs 1.2-1.6 GB of address space, 45 MB of small records ~1.1 GB, so
# 48x the document plus 256 MiB covers the worst shapes with room to spare. Without such a limit
# nothing is checked: an allocation then does not fail, the process is killed from outside.
_ORJSON_SPACE_PER_BYTE = 48
_ORJSON_SPACE_BASE = 256 << 20


def _address_space_left() -> int | None:
    """Bytes of address space this process may still map under RLIMIT_AS or strict overcommit
    (vm.overcommit_memory = 2), the smaller where both apply; None where neither is in force."""
    import resource

    left = None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    try:
        if soft != resource.RLIM_INFINITY:
            with open("/proc/self/status", "rb") as fh:
                vm = next(int(line.split()[1]) << 10 for line in fh if line.startswith(b"VmSize:"))
            left = soft - vm
        with open("/proc/sys/vm/overcommit_memory", "rb") as fh:
            strict = fh.read().strip() == b"2"
        if strict:
            with open("/proc/meminfo", "rb") as fh:
                info = {k: int(v.split()[0]) << 10 for k, v in (line.split(b":", 1) for line in fh) if k in (b"CommitLimit", b"Committed_AS")}
            commit = info[b"CommitLimit"] - info[b"Committed_AS"]
            left = commit if left is None else min(left, commit)
    except (OSError, StopIteration, KeyError, ValueError):
        return left  # no /proc (not Linux): the RLIMIT_AS figure alone, if it could be read
    return left


# polars does not survive a failed allocation either: Rust's allocation-error handler aborts the
# process (exit 134; in polars 2.1's CSV reader threads with nothing at all on stderr, see
# nvprof_csv). Its allocator (jemalloc) keeps the address space it has mapped and grows it in
# ever larger steps, so a read takes far more address space than
# memory: a rocprofv3 kernel trace of 200 MB (2.1 M dispatches) peaked at 1.85 GB RSS and 6.9 GB of
# address space, and aborted under the fuzz worker's 6 GB cap (s18 fuzz seed 3111,
# rocprofv3-csv-dir crash-61). Measured on such traces (address space grown by the read, polars and
# the reader already imported): 2 MB 1.0 GB, 10 MB 1.2 GB, 25 MB 1.6 GB, 50 MB 2.2 GB, 100 MB 3.5 GB,
# 200 MB 6.4 GB; 32x the file plus 1.25 GiB covers each with room to spare.
POLARS_CSV_SPACE_PER_BYTE = 32
POLARS_CSV_SPACE_BASE = 5 << 28


def check_orjson_room(path, nbytes: int, what: str = "JSON document") -> None:
    """Refuse in one InputError line a whole document orjson would need more address space for than
    this process has left under a limit (see above); nothing happens where no limit is in force."""
    check_room(path, nbytes, what, _ORJSON_SPACE_PER_BYTE, _ORJSON_SPACE_BASE)


def check_room(path, nbytes: int, what: str, per_byte: int, base: int) -> None:
    """Refuse in one InputError line an input of `nbytes` whose reader needs `per_byte` times its
    size plus `base` bytes of address space, when this process has less left under a limit (see
    above): a reader that cannot survive a failed allocation (orjson, polars) is not started on it.
    Nothing happens where no limit is in force."""
    if nbytes < 1 << 20:
        return  # a process with less left than a 1 MiB input's reader needs fails anywhere, not only here
    left = _address_space_left()
    if left is None:
        return
    need = nbytes * per_byte + base
    if need > left:
        from profaudit.errors import InputError
        from profaudit.fmt import fmt_bytes

        raise InputError(
            path,
            f"a {what} of {fmt_bytes(nbytes)} needs up to {fmt_bytes(need)} of memory to read, and this process's "
            f"memory limit (ulimit -v or strict overcommit) leaves {fmt_bytes(max(left, 0))}",
        )


def load_clean_json(path, what: str) -> Any:
    """`clean(load_json(path, what))`, without walking the document when its bytes cannot hold a
    lone surrogate: the walk copies every list and mapping, which doubled the time and memory of a
    50 MB timing file. A document over JSON_LIMIT (decompressed) is one InputError line."""
    from profaudit.parsers.base import load_json

    data = read_capped(path, what)
    doc = load_json(path, what)
    # UTF-16/32 documents (json detects them from the first bytes) are walked whatever they hold
    if data is None or data[:4].count(0) or data[:2] in (b"\xff\xfe", b"\xfe\xff") or _MAYBE_LONE.search(data):
        return clean(doc)
    return doc


def _gz(path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def utf8_name(path) -> bool:
    """Whether a path's name can be given to polars and pyarrow, which take paths as UTF-8 text
    only: a name that is not UTF-8 (b'caf\\xe9.csv', held by Python as surrogate escapes) made
    polars raise "TypeError: Object does not have a .read() method" (s19 hostile fuzz,
    rocprofv3-csv #50)."""
    try:
        os.fspath(path).encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def polars_source(path):
    """`path` for polars' readers: itself, or the file's bytes when its name cannot be UTF-8."""
    if utf8_name(path):
        return path
    with open(path, "rb") as f:
        return f.read()
