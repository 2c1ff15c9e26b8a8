"""`load(paths)`: expand files, folders and globs, pick a parser for each, stack the profiles."""

from __future__ import annotations

import ast
import errno
import glob
import gzip
import os
import stat
import sys
import zlib
from concurrent.futures import Executor
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Sequence

from profaudit.errors import InputError, ProfauditError, first_line
from profaudit.profile import Profile, ProfileSet

# Parallel parsing pays for its process start-up only when there is enough to parse.
_PARALLEL_MIN_FILES = 2
_PARALLEL_MIN_BYTES = 8 << 20

ProgressFn = Callable[[str], None]


def _as_list(paths) -> list[str]:
    if isinstance(paths, Inputs):
        return list(paths.paths)
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    return [os.fspath(p) for p in paths]


class Inputs(list):
    """What `expand` returns: (input, explicit) pairs, plus the paths they were expanded from
    (`paths`, for messages) and each local input's size from the stat that found it (`sizes`).
    Passed back to `expand`, `load` or `fleet.ingest` it is used as it is: a caller that needs the
    count first (a progress bar) expands once, not twice."""

    def __init__(self, items=(), paths: Sequence[str] = (), sizes: dict | None = None):
        super().__init__(items)
        self.paths = list(paths)
        self.sizes = sizes if sizes is not None else {}

    def size_of(self, p) -> int:
        n = self.sizes.get(p)
        return input_size(p) if n is None else n


# errno values for which a path is simply not there (what Path.exists() treats as False)
_MISSING_ERRNOS = frozenset((errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP))

# the kernel's pseudo-file systems: no profile lives there, and a walk of one never ends in
# reasonable time (/proc/self/task/*/..., one folder per process and thread)
_PSEUDO_FS = ("/proc", "/sys")


def _in_pseudo_fs(d: Path) -> bool:
    real = os.path.realpath(d)
    return any(real == root or real.startswith(root + "/") for root in _PSEUDO_FS)


def expand(paths: str | os.PathLike | Sequence[str | os.PathLike], *, max_entries: int | None = None) -> Inputs:
    """Files and directory-formats to read, each with whether the user named it explicitly.

    Folders are walked: a folder that a directory parser claims (a profaudit dataset, a JAX log
    directory, a Neuron Explorer profile) is one input; other files inside count only if some
    parser recognises them (`explicit=False`), so unrelated files in a folder are skipped. Links
    to folders found inside are walked (a results folder of links to runs on scratch space), each
    folder once however it is reached, so a link back to an ancestor ends the walk there (as
    `find -L`). Folders of /proc and /sys are refused when named and skipped when met.
    `max_entries`: the most folder entries the walks of one named folder may list before it is
    refused (a claim's evidence).
    An `Inputs` (an earlier expansion) is returned as it is.
    """
    if isinstance(paths, Inputs):
        return paths
    from profaudit.datastore import expand_url, is_url
    from profaudit.parsers import find_parser

    out = Inputs(paths=_as_list(paths))
    seen: set = set()
    seen_urls: set[str] = set()

    def add(p: Path, explicit: bool, st: os.stat_result | None = None) -> None:
        # One input per file, however it is named (symlinks, `a/../a`). Identity by inode from the
        # one stat already made; realpath (an lstat per path component: most of the time of
        # expanding 5,000 files) only for a file with several hard links, which are separate
        # names of one file that a resolved path keeps apart.
        if st is None:
            try:
                st = p.stat()
            except OSError:  # a dangling link a glob matched: reading it says what is wrong
                st = None
        if st is not None and (st.st_nlink == 1 or stat.S_ISDIR(st.st_mode)):
            key = (st.st_dev, st.st_ino)
        else:
            key = p.resolve()
        if key not in seen:
            seen.add(key)
            out.append((p, explicit))
            out.sizes[p] = st.st_size if st is not None and stat.S_ISREG(st.st_mode) else 0

    listed = [0, None]  # folder entries listed under the named folder being walked, and that folder
    walked: set[tuple[int, int]] = set()  # (st_dev, st_ino) of every folder walked in this expansion

    def walk(d: Path, named: bool = False) -> None:
        if named:
            listed[:] = [0, d]
        if _in_pseudo_fs(d):
            if named:
                raise InputError(d, "a folder of the kernel's /proc or /sys: it holds no profiles or timing logs")
            return  # met while walking `/`: nothing there to read
        # each folder is walked once however it is reached: a link back to an ancestor (or to a
        # folder already walked) ends there instead of going round until ELOOP, and its files are
        # counted once (fuzz_surfaces batch #379 walked in circles). Links to other folders are
        # still walked: skipping them silently dropped every profile behind them (review E17-3)
        try:
            st = d.stat()
        except OSError:
            st = None  # iterdir below says what is wrong with it
        if st is not None:
            if (st.st_dev, st.st_ino) in walked:
                return
            walked.add((st.st_dev, st.st_ino))
        if find_parser(d) is not None:
            add(d, False)
            return
        try:
            entries = sorted(d.iterdir())
        except OSError as exc:
            raise InputError(d, f"cannot list folder: {exc.strerror or exc}") from None
        listed[0] += len(entries)
        if max_entries is not None and listed[0] > max_entries:
            raise InputError(listed[1], f"more than {max_entries:,} entries in the folders under it: name the files, or a folder holding only them")
        for e in entries:
            if e.name.startswith("."):
                continue
            if e.is_dir():
                walk(e)  # a link to a folder too; /proc and /sys behind one are skipped there
            elif e.is_file():
                add(e, False)

    for raw in _as_list(paths):
        if not raw.strip():
            # Path("") is ".": an empty argument (an unset shell variable) would load the cwd
            raise InputError(repr(raw), "empty path")
        if "\x00" in raw:
            # no shell passes one, but a path read from a file (a pairs CSV, a claim) can hold one,
            # and os.stat raises ValueError on it, not OSError
            raise InputError(repr(raw), "a path cannot hold a NUL character")
        if is_url(raw):
            for item, explicit in expand_url(raw):
                if item.url not in seen_urls:
                    seen_urls.add(item.url)
                    out.append((item, explicit))
            continue
        if raw.startswith("file://"):
            raw = raw[len("file://"):]  # file:///x is the local /x
        if any(ch in raw for ch in "*?["):
            matches = sorted(glob.glob(raw, recursive=True))
            if not matches:
                raise InputError(raw, "no file matches this pattern")
            for m in matches:
                mp = Path(m)
                if mp.is_dir():
                    walk(mp, named=True)
                else:
                    add(mp, True)
            continue
        p = Path(raw)
        try:
            st = os.stat(raw)
        except OSError as exc:
            if exc.errno in _MISSING_ERRNOS:
                raise InputError(p, "no such file or folder") from None
            raise InputError(p, f"cannot read: {exc.strerror or exc}") from None
        if stat.S_ISDIR(st.st_mode):
            if not _in_pseudo_fs(p) and find_parser(p) is not None:
                add(p, True, st)
            else:
                walk(p, named=True)  # a /proc or /sys folder is refused there, before any sniffing
        else:
            add(p, True, st)
    return out


def read_one(path: Path, explicit: bool = True, options=None) -> list[Profile]:
    """Parse one input. Unrecognised inputs raise when explicit, else return []."""
    from profaudit.datastore import RemoteInput, read_remote
    from profaudit.parsers import ReadOptions, find_parser, probe

    if isinstance(path, RemoteInput):
        return read_remote(path, explicit, options, read_one)
    options = options or ReadOptions()
    if not path.is_dir() and not path.is_file() and path.exists():
        # a pipe (`<(zcat trace.json.gz)`) would be half eaten by the format sniffing, or block
        # forever with no writer; devices are no profiles either
        raise InputError(path, "not a regular file (a pipe or a device): save it to a file first")
    pr = probe(path)
    if not pr.is_dir and pr.raw_head == b"":
        if explicit:
            raise InputError(path, "empty file")
        return []
    parser = find_parser(path, pr)
    zeros = None if pr.is_dir else _zero_filled_tail(path, pr, parser)
    if zeros and explicit:
        raise InputError(path, zeros)
    if parser is None:
        if explicit:
            raise InputError(path, _unrecognised_reason(pr))
        return []
    if zeros:
        # found by walking a folder: a file that no parser claims was skipped above, as any
        # unrelated file is (a preallocated log, an array of zeros beside the results: review
        # F19-4); one a catch-all parser claims is skipped as its refusal would be
        if getattr(parser, "generic", False):
            raise SkippedInput(path, zeros)
        raise InputError(path, zeros)
    from profaudit.panic_stderr import is_rust_panic, panic_reports_off_stderr

    try:
        with panic_reports_off_stderr():  # a Rust panic is the one line below, not also its hook's report
            result = parser.read(path, options)
    except InputError as exc:
        # A folder may hold unrelated CSV/JSON files that a catch-all parser (the generic timing
        # table) sniffs as its own; found by walking, not named by the user, they are skipped.
        if not explicit and getattr(parser, "generic", False):
            raise SkippedInput(exc.path, exc.problem) from None
        raise
    except ProfauditError:
        raise
    except MemoryError:
        raise InputError(path, f"out of memory while reading as {parser.name}") from None
    except RecursionError:
        # any parser's recursion (json, a tree walk), caught once here, at the one boundary every
        # profile read passes; dataset files have no such boundary (dataset info, compact, read...),
        # so dataset_v2.json_doc turns json's into the ValueError their readers word per file
        raise InputError(path, f"nested too deeply to read as {parser.name}") from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        # compressed data cut short, or damaged past the part the format sniffing decompressed (a
        # CRC or length check that fails only at the end): whatever reads the stream, the input is
        # the problem. Readers that meant to say it themselves already did; several never expected it
        raise InputError(path, f"damaged or cut compressed data: {first_line(exc, type(exc).__name__)}") from None
    except UnicodeError as exc:
        # undecodable bytes, or JSON's "\ud800" escape (a lone surrogate: a string no UTF-8 file,
        # table or terminal can hold) anywhere in a value
        what = "a lone surrogate (\\ud800-\\udfff escape)" if "surrogate" in str(exc) else getattr(exc, "reason", "invalid bytes")
        raise InputError(path, f"holds text that is not valid Unicode: {what}") from None
    except Exception as exc:  # a parser bug or an unforeseen corruption: still one line
        msg = first_line(exc, type(exc).__name__)
        raise UnexpectedReadError(path, f"cannot read as {parser.name}: {type(exc).__name__}: {msg}") from None
    except BaseException as exc:
        # polars' PanicException (a Rust panic on damaged Parquet/IPC data) is a BaseException:
        # it would pass every `except Exception` and print a traceback
        if not is_rust_panic(exc):
            raise
        msg = first_line(exc, "panic")
        raise InputError(path, f"damaged data: the native decoder failed while reading as {parser.name} ({msg[:200]})") from None
    profiles = result if isinstance(result, list) else [result]
    from profaudit.parsers.completeness import check_read

    check_read(path, parser, profiles)  # a text file cut inside its last line loads as incomplete
    return profiles


# the zero bytes at the end of a text file that make it damaged, not a text with a stray NUL (a C
# string's terminator written with it): a filesystem block, what preallocation and a crash leave
ZERO_TAIL_BYTES = 4096
# and at the end of any other file but an SQLite database read as one (its free pages may be
# zeros, and SQLite reads only the pages it needs): no corpus file ends in more than 2
ZERO_TAIL_BINARY_BYTES = 1 << 20
SQLITE_READERS = frozenset({"nsys-sqlite", "rocpd"})


def _zero_tail_problem(kind: str, n: int) -> str:
    return (f"{kind} that ends in {n:,} or more zero bytes (NUL): the file was preallocated or zero-filled by a crash; "
            "take it again from where it was written")


def _zero_filled_tail(path: Path, pr, parser=None) -> str | None:
    """The problem with a file that ends in zeros, or None. Read whole, such a file costs its full
    size: s19 hostile fuzz, a 1 GiB sparse file (the seed's text, then a hole) peaked at 2.15 GB
    in the ncu-csv and KernelBench readers before a refusal, a 5 GiB one at 5.2 GB in the xplane
    reader; a 6 GiB ncu CSV took 86 s and 6.4 GB ('out of memory'), a 6 GiB Chrome trace ran past
    120 s. One or two reads of the tail instead."""
    # text, then nothing but zeros if any (a short text's tail is in its head already); a binary
    # format that starts with text (SQLite's "SQLite format 3\0") has other bytes after its NUL
    head, _, rest = pr.raw_head[:1024].partition(b"\x00")
    text = bool(head) and not pr.gzipped and not rest.strip(b"\x00") and head[:4] != b"\x28\xb5\x2f\xfd"
    if text:
        import codecs

        try:
            codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
        except UnicodeDecodeError:
            text = False  # not UTF-8 text (a binary format, another encoding)
    # an SQLite database under another format's name is read by that format's reader, whole (s19,
    # xplane #212 of seed 1903: one under an .xplane.pb name, made a 5 GiB sparse file, 5.2 GB)
    if not text and pr.raw_head.startswith(b"SQLite format 3\x00") and getattr(parser, "name", None) in SQLITE_READERS:
        return None
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            for n in (ZERO_TAIL_BYTES, ZERO_TAIL_BINARY_BYTES):
                if size < len(head) + n:
                    return None
                f.seek(size - n)
                tail = f.read(n)
                if len(tail) != n or tail.strip(b"\x00"):
                    return None
                if text:
                    return _zero_tail_problem("text", n)
    except OSError:
        return None
    return _zero_tail_problem("data", ZERO_TAIL_BINARY_BYTES)


class UnexpectedReadError(InputError):
    """The loader's last resort: a parser raised something it did not mean to (a bug or an
    unvalidated corruption). Still one line for the user; tests and the fuzz suite tell it apart
    from a parser's own deliberate InputError by this type."""


class SkippedInput(InputError):
    """An input found by walking a folder that a catch-all parser could not read: listed, not fatal."""


def _unrecognised_reason(pr) -> str:
    from profaudit.parsers import REGISTRY

    if pr.gzipped and not pr.head:
        return "gzip data is truncated or corrupt"
    # a parser may recognise a near miss (a file of its family it cannot read) and say what it is
    for p in REGISTRY:
        why = getattr(p, "diagnose", None) and p.diagnose(pr)
        if why:
            return why
    return "not a recognised profile or timing-log format (`profaudit formats` lists what profaudit reads)"


def _workers_can_start() -> bool:
    """Whether worker processes can start without re-running the caller's script.

    `spawn` re-imports the main module in every worker. A script that calls `load()` at its top
    level, without an `if __name__ == "__main__":` guard, would load again inside each worker,
    which multiprocessing refuses, and the pool breaks. Interactive sessions, notebooks,
    `python -c`, `python -m pkg` (a `__main__` module is not re-imported) and guarded scripts,
    console entry points such as `profaudit` included, are safe.
    """
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name is not None and (name == "__main__" or name.endswith(".__main__")):
        return True
    path = getattr(main, "__file__", None)
    if path is None:
        return True
    try:
        tree = ast.parse(Path(path).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return False
    return any(isinstance(node, ast.If) and _is_main_test(node.test) for node in tree.body)


def _is_main_test(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and any(
        isinstance(s, ast.Constant) and s.value == "__main__" for s in sides
    )


def _read_worker(args):
    path, explicit, options = args
    return read_one(path, explicit, options)


def load(
    paths,
    *,
    options=None,
    parallel: bool | None = None,
    skip_bad: bool = False,
    progress: ProgressFn | None = None,
    executor: Executor | None = None,
    **option_kwargs,
) -> ProfileSet:
    """Load profiles and timing logs from files, folders and globs into one ProfileSet.

    `skip_bad=True` keeps going past unreadable files and lists them in `ProfileSet.skipped`;
    otherwise the first unreadable input raises `InputError` naming the file and the problem.
    Keyword options (`device=`, `nsys=`, `time_column=`, ...) become `ReadOptions`.
    `parallel=None` parses many large inputs in worker processes, except when called from the top
    level of a script without an `if __name__ == "__main__":` guard (workers would re-run it).
    `executor=` parses every input as one task of any `concurrent.futures.Executor` instead (a
    Dask cluster's `Client.get_executor()`, a process pool of your own); the profiles come back to
    this process. Inputs may be fsspec URLs (`s3://bucket/run/*.json`): each is copied to a local
    temporary file where it is parsed (on the worker, with an executor) and its `path` stays the URL.
    """
    options = options if options is not None else read_options(**option_kwargs)
    inputs = expand(paths)
    if not inputs:
        raise InputError(", ".join(_as_list(paths)), "no profile or timing log found")
    total = sum(inputs.size_of(p) for p, _ in inputs)
    if executor is not None:
        parallel = True
    elif parallel is None:
        parallel = len(inputs) >= _PARALLEL_MIN_FILES and total >= _PARALLEL_MIN_BYTES and (os.cpu_count() or 1) > 1 and _workers_can_start()
    profiles: list[Profile] = []
    skipped: list[tuple[str, str]] = []

    def collect(path: Path, result_or_exc) -> None:
        if isinstance(result_or_exc, ProfauditError):
            if not skip_bad and not isinstance(result_or_exc, SkippedInput):
                raise result_or_exc
            skipped.append((str(path), str(result_or_exc)))
        else:
            profiles.extend(result_or_exc)
        if progress:
            progress(str(path))

    if parallel:
        with _executor_or_pool(executor, len(inputs)) as pool:
            futures = [(p, pool.submit(_read_worker, (p, ex, options))) for p, ex in inputs]
            for p, fut in futures:
                try:
                    res = fut.result()
                except ProfauditError as exc:
                    res = exc
                collect(p, res)
    else:
        for p, ex in inputs:
            try:
                res = read_one(p, ex, options)
            except ProfauditError as exc:
                res = exc
            collect(p, res)
    if not profiles and not skipped:
        raise InputError(", ".join(_as_list(paths)), "no profile or timing log found")
    return ProfileSet(profiles, skipped=skipped)


def read_options(**option_kwargs):
    """`ReadOptions` from keyword options; keys it does not declare go to its `extra`."""
    from profaudit.parsers import ReadOptions

    known = ReadOptions.__dataclass_fields__
    extra = {k: v for k, v in option_kwargs.items() if k not in known}
    return ReadOptions(**{k: v for k, v in option_kwargs.items() if k in known}, extra=extra)


def input_size(p) -> int:
    """Bytes of one expanded input (0 for a folder format)."""
    from profaudit.datastore import RemoteInput

    if isinstance(p, RemoteInput):
        return p.size
    return p.stat().st_size if p.is_file() else 0


@contextmanager
def _executor_or_pool(executor: Executor | None, n_inputs: int):
    """The caller's executor, left running; else a spawn process pool of our own, shut down after."""
    if executor is not None:
        yield executor
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    workers = min(n_inputs, os.cpu_count() or 1)
    with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn")) as pool:
        yield pool


def load_one(path, **kw) -> Profile:
    """`load` for an input that holds exactly one profile; returns that Profile."""
    ps = load(path, **kw)
    if len(ps) != 1:
        raise InputError(path, f"holds {len(ps)} profiles where one was expected")
    return next(iter(ps))

