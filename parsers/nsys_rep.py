"""Nsight Systems reports (`.nsys-rep`, and `.qdrep` from nsys before 2021.4).

Only `nsys` reads these, so this parser runs `nsys export --type sqlite` and reads the export with
the SQLite parser. The export is cached under the user's cache folder (never next to the input,
which may be read-only), named by a hash of the report's bytes, so a report is exported once.

nsys is found, in order: `ReadOptions.nsys` (`--nsys` / `load(nsys=...)`), the PROFAUDIT_NSYS
environment variable, `nsys` on PATH. Without one, reading fails with a single line saying how to
export by hand.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from profaudit.errors import InputError
from profaudit.parsers.base import Probe, ReadOptions

REP_MAGIC = b"NVIDIA Tegra Profiler Report"
ENV_NSYS = "PROFAUDIT_NSYS"
ENV_CACHE = "PROFAUDIT_CACHE_DIR"
# `nsys export` on a multi-GB report takes minutes; an hour means it hangs.
EXPORT_TIMEOUT_S = float(os.environ.get("PROFAUDIT_NSYS_TIMEOUT_S", "3600"))


def cache_dir() -> Path:
    """$PROFAUDIT_CACHE_DIR, else $XDG_CACHE_HOME/profaudit, else ~/.cache/profaudit."""
    if os.environ.get(ENV_CACHE):
        return Path(os.environ[ENV_CACHE])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "profaudit"


def find_nsys(options: ReadOptions | None = None, for_path: Path | None = None) -> str | None:
    """The nsys to run: the option, then $PROFAUDIT_NSYS, then PATH. A named one that is missing is an error."""
    named = [(options.nsys if options else None, "--nsys"), (os.environ.get(ENV_NSYS), ENV_NSYS)]
    for cand, origin in named:
        if not cand:
            continue
        p = Path(cand).expanduser()
        if p.is_dir():
            p = p / "nsys"
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
        found = shutil.which(str(cand))
        if found:
            return found
        raise InputError(for_path, f"the nsys executable {str(cand)!r} given by {origin} does not exist or is not executable")
    return shutil.which("nsys")


def file_digest(path: Path) -> str:
    """Hash of the whole report: a stale export read for a changed report would be silently wrong."""
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def manual_hint(path: Path) -> str:
    out = Path(path).with_suffix(".sqlite").name
    return f"nsys export --type sqlite -o {out} {Path(path).name}"


def export_sqlite(path: Path, nsys: str) -> Path:
    """The cached SQLite export of `path`, running `nsys export` when there is none yet."""
    path = Path(path)
    digest = file_digest(path)
    folder = cache_dir() / "nsys-export"
    target = folder / f"{digest}.sqlite"
    if target.is_file() and target.stat().st_size > 0:
        return target
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(path, f"cannot create the export cache {folder}: {exc.strerror or exc} (set {ENV_CACHE}, or run `{manual_hint(path)}`)") from None
    fd, tmp = tempfile.mkstemp(prefix=f".{digest}.", suffix=".sqlite", dir=folder)
    os.close(fd)
    os.unlink(tmp)  # nsys refuses to overwrite without --force-overwrite; let it create the file
    cmd = [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "-o", tmp, str(path)]
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(path, f"`nsys export` did not finish within {EXPORT_TIMEOUT_S:.0f} s") from None
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(path, f"cannot run {nsys}: {exc.strerror or exc}") from None
    produced = Path(tmp)
    if proc.returncode != 0 or not produced.is_file() or produced.stat().st_size == 0:
        produced.unlink(missing_ok=True)
        lines = [l.strip() for l in (proc.stderr or "").splitlines() + (proc.stdout or "").splitlines() if l.strip()]
        why = lines[-1] if lines else ("no output file" if proc.returncode == 0 else f"exit status {proc.returncode}")
        raise InputError(path, f"`nsys export --type sqlite` failed: {why}")
    os.replace(produced, target)
    return target


def check_report_file(path: Path) -> None:
    """Raise InputError for a file that cannot be an Nsight Systems report, before nsys sees it."""
    from profaudit.parsers.nsys_sqlite import describe_lfs_pointer

    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as exc:
        raise InputError.unreadable(path, exc) from None
    if head.startswith(REP_MAGIC):
        return
    if not head:
        raise InputError(path, "empty file")
    lfs = describe_lfs_pointer(head)
    if lfs:
        raise InputError(path, lfs)
    if head.startswith(b"SQLite format 3\x00"):
        raise InputError(path, f"an SQLite database named {path.suffix}: rename it to .sqlite to read it as an nsys export")
    raise InputError(path, f"not an Nsight Systems report (no {REP_MAGIC.decode()!r} header)")


class NsysRepParser:
    name = "nsys-rep"
    source = "nsys"
    suffixes = (".nsys-rep", ".qdrep")
    description = "Nsight Systems report (.nsys-rep, .qdrep), exported to SQLite with nsys"

    def sniff(self, probe: Probe) -> bool:
        # a damaged or stand-in `.nsys-rep` (Git LFS pointer, HTML error page, truncated) is still
        # ours to explain
        return probe.raw_head.startswith(REP_MAGIC) or probe.name_endswith(*self.suffixes)

    def read(self, path: Path, options: ReadOptions):
        from profaudit.parsers import nsys_sqlite

        path = Path(path)
        check_report_file(path)
        nsys = find_nsys(options, path)
        if nsys is None:
            sibling = path.with_suffix(".sqlite")
            also = f" (a {sibling.name} lies next to it: if it was exported from this report, load that)" if sibling.is_file() else ""
            raise InputError(
                path,
                f"reading {path.suffix} needs the nsys executable, which is not on PATH (give it with --nsys or {ENV_NSYS}), "
                f"or export by hand: `{manual_hint(path)}` and load the .sqlite{also}",
            )
        sqlite_path = export_sqlite(path, nsys)
        return nsys_sqlite.read_sqlite(sqlite_path, options, parser=self, display_path=path, extra_metadata={"sqlite_export": str(sqlite_path), "nsys_exporter": nsys})


PARSER = NsysRepParser()
