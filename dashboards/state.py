"""What one dashboard serves: the profiles and claims it was given, its upload folder, its caches.

One `DashboardState` per app, kept in the Flask config (`STATE_KEY`) so that callbacks of several
apps in one process (the tests start many) each see their own. Every method that reads a file goes
through `AccessPolicy`; pages only ever name profiles and claims by the ids this object hands out.
Everything here calls the library's public API; no file format is parsed here.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import polars as pl

from profaudit.dashboards.access import AccessPolicy, looks_like_claim
from profaudit.dashboards.limits import DEFAULT_CALLBACK_TIMEOUT_S, check_timeout, run_limited, start, wait
from profaudit.errors import InputError, UsageError
from profaudit.profile import Profile, ProfileSet

STATE_KEY = "PROFAUDIT_DASHBOARD_STATE"
DEFAULT_MAX_UPLOAD_BYTES = 200 << 20
_CACHE_ENTRIES = 32
CLI = "command line"


@dataclass(frozen=True)
class ClaimEntry:
    id: str
    path: Path
    label: str
    origin: str  # CLI or "upload"
    # named on the command line itself (not found in a given folder, not uploaded): the user chose
    # this claim, so the files it names are theirs to audit wherever they lie
    trusted: bool = False


class DashboardState:
    """Profiles and claims the dashboard shows, and the only door to the files behind them."""

    def __init__(
        self,
        paths: Sequence[str | os.PathLike] = (),
        *,
        upload_dir: str | os.PathLike | None = None,
        max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES,
        specs: Sequence[str | os.PathLike] = (),
        load_options: dict[str, Any] | None = None,
        callback_timeout_s: float = DEFAULT_CALLBACK_TIMEOUT_S,
    ):
        if max_upload_bytes <= 0:
            raise UsageError(f"the upload limit must be positive, got {max_upload_bytes} bytes")
        self.paths = [os.fspath(p) for p in paths]
        self.specs = tuple(os.fspath(s) for s in specs)
        self.max_upload_bytes = int(max_upload_bytes)
        self.load_options = dict(load_options or {})
        # the most one callback waits for its heavy work (see `profaudit.dashboards.limits`)
        self.callback_timeout_s = check_timeout(callback_timeout_s)
        self.lock = threading.RLock()
        # Uploaded files are the user's data: a folder only this user can read (mkdtemp makes 0700).
        if upload_dir is None:
            self.upload_dir = Path(tempfile.mkdtemp(prefix="profaudit-dashboard-uploads-"))
            atexit.register(shutil.rmtree, self.upload_dir, True)
        else:
            self.upload_dir = Path(upload_dir)
            if not self.upload_dir.exists():
                self.upload_dir.mkdir(parents=True, mode=0o700)
            elif not self.upload_dir.is_dir():
                raise UsageError(f"upload folder {self.upload_dir} is not a folder")
        self.policy = AccessPolicy([*self.paths, *self.specs, self.upload_dir])
        self._groups: "OrderedDict[str, list[Profile]]" = OrderedDict()
        # profaudit datasets given on the command line, read only when a page needs their rows
        # (the Overview does not: see `summary`)
        self.datasets: list[str] = []
        self.skipped: list[tuple[str, str]] = []
        self.notes: list[str] = []
        self.claims: "OrderedDict[str, ClaimEntry]" = OrderedDict()
        self.version = 0
        self._ps: ProfileSet | None = None
        self._origins: dict[str, str] = {}
        self._cache: "OrderedDict[tuple, Any]" = OrderedDict()
        self._device_specs: dict | None = None
        if self.specs:
            self.device_specs  # noqa: B018 - a bad spec file is a command-line error, not a page error
        self._load_command_line()

    # -- loading ---------------------------------------------------------------------------------
    def _load_command_line(self) -> None:
        from profaudit.loader import expand, load

        profile_args: list[str] = []
        claim_files: list[Path] = []
        named: list[Path] = []
        for raw in self.paths:
            p = Path(raw)
            if p.is_file() and looks_like_claim(p):
                named.append(p)
                continue
            profile_args.append(raw)
            if p.is_dir() or any(ch in raw for ch in "*?["):
                claim_files += [f for f, _ in expand([raw]) if f.is_file() and self.policy.allows(f) and looks_like_claim(f)]
        for c in named:
            self._add_claim(c, CLI, trusted=True)
        for c in claim_files:
            self._add_claim(c, CLI)
        # a dataset of 10,000 profiles is not read at start: the Overview summarises it from its
        # manifests, and the first page that needs rows reads it (`ps`)
        from profaudit.dataset import is_dataset

        self.datasets = [raw for raw in profile_args if Path(raw).is_dir() and is_dataset(raw) and self.policy.allows(Path(raw))]
        profile_args = [raw for raw in profile_args if raw not in self.datasets]
        if not profile_args:
            return
        # A symlink inside a given folder that leads out of it is not read: the same rule the
        # claim check applies, so what a folder "contains" means one thing everywhere.
        inputs = expand(profile_args)
        escaping = [p for p, _ in inputs if not self.policy.allows(p)]
        if escaping:
            from profaudit.parsers import find_parser

            for p in escaping:
                self.notes.append(f"{p}: skipped: a symlink that leads outside the folders given on the command line")
            profile_args = [str(p) for p, explicit in inputs if self.policy.allows(p) and (explicit or find_parser(p) is not None)]
            if not profile_args:
                return
        try:
            ps = load(profile_args, skip_bad=True, **self.load_options)
        except InputError as exc:
            if exc.problem != "no profile or timing log found":
                raise
            self.notes.append(f"{exc.path}: {exc.problem}")
            return
        self._groups[CLI] = list(ps)
        self.skipped.extend(ps.skipped)
        self._changed()

    def _add_claim(self, path: Path, origin: str, trusted: bool = False) -> ClaimEntry:
        with self.lock:
            rp = path.resolve()
            for e in self.claims.values():
                if e.path.resolve() == rp:
                    return e
            cid = f"claim-{len(self.claims)}"
            label = self._cli_label(path) if origin == CLI else f"{path.name} (uploaded)"
            entry = ClaimEntry(cid, path, label, origin, trusted)
            self.claims[cid] = entry
            self._changed()
            return entry

    def _cli_label(self, path: Path) -> str:
        """A claim's path from the folder given on the command line (`claims/x.yaml`, not the
        whole absolute path)."""
        for raw in self.paths:
            root = Path(raw)
            if root.is_dir() and path.is_relative_to(root):
                return os.fspath(Path(root.resolve().name) / path.relative_to(root))
        return os.fspath(path)

    def add_uploaded_profile(self, path: Path) -> list[Profile]:
        """Load one uploaded file (already inside the upload folder); replaces an earlier upload of
        the same name."""
        from profaudit.loader import load

        if not self.policy.allows(path):  # pragma: no cover - uploads are written inside by construction
            raise InputError(path, "not inside the upload folder")
        ps = run_limited(lambda: load([str(path)], **self.load_options), f"loading {path.name}", self.callback_timeout_s)
        with self.lock:
            self._groups[f"upload:{path.name}"] = list(ps)
            self._changed()
        return list(ps)

    def add_uploaded_claim(self, path: Path) -> ClaimEntry:
        return self._add_claim(path, "upload")

    def forget_upload(self, name: str) -> None:
        with self.lock:
            if self._groups.pop(f"upload:{name}", None) is not None:
                self._changed()

    def _changed(self) -> None:
        with self.lock:
            self.version += 1
            self._ps = None
            self._cache.clear()

    # -- what pages read ---------------------------------------------------------------------------
    def _read_datasets(self) -> None:
        from profaudit.loader import load

        with self.lock:
            if self.datasets and "datasets" not in self._groups:
                ps = load(self.datasets, skip_bad=True, **self.load_options)
                # a dataset's profiles come before later uploads, as if loaded at start
                self._groups["datasets"] = list(ps)
                self.skipped.extend(ps.skipped)
                self._groups.move_to_end("datasets", last=False)
                self._ps = None

    @property
    def ps(self) -> ProfileSet:
        with self.lock:
            self._read_datasets()
            if self._ps is None:
                keyed = [(key, p) for key, group in self._groups.items() for p in group]
                self._ps = ProfileSet([p for _, p in keyed], skipped=list(self.skipped))
                # ProfileSet renames a repeated id (the same file uploaded that was given on the
                # command line becomes `id~2`) and keeps the order, so ids pair with their groups
                self._origins = {p.profile_id: ("upload" if key.startswith("upload:") else CLI) for (key, _), p in zip(keyed, self._ps, strict=True)}
            return self._ps

    def profile(self, pid: str) -> ProfileSet:
        ps = self.ps
        if pid not in ps:
            raise UsageError(f"no profile {pid!r} is loaded (it may have been replaced by an upload): reload the page")
        return ps.subset([pid])

    def subset(self, pids: Iterable[str] | None) -> ProfileSet:
        ps = self.ps
        if not pids:
            return ps
        missing = [p for p in pids if p not in ps]
        if missing:
            raise UsageError(f"no profile {missing[0]!r} is loaded (it may have been replaced by an upload): reload the page")
        return ps.subset(list(pids))

    def labels(self) -> dict[str, str]:
        """profile_id -> the shortest path suffix that tells the profile apart (see
        `profaudit.dashboards.labels`); what dropdowns and legends show, the id stays the value."""
        from profaudit.dashboards.labels import shortest_suffixes

        def build() -> dict[str, str]:
            md = self.ps.metadata
            return shortest_suffixes(dict(zip(md["profile_id"].to_list(), md["path"].to_list()))) if md.height else {}

        return self.cached(("labels",), build)

    def label(self, pid: str) -> str:
        return self.labels().get(pid, pid)

    def origin_of(self, pid: str) -> str:
        with self.lock:
            if self.datasets and "datasets" not in self._groups:
                # datasets not read yet (the Overview): their profiles were given on the command line
                uploaded = any(p.profile_id == pid for key, g in self._groups.items() if key.startswith("upload:") for p in g)
                return "upload" if uploaded else CLI
            self.ps  # noqa: B018 - builds the id -> origin map with the set
            return self._origins.get(pid, "")

    def summary(self):
        """Counts, sources, devices and metadata rows of everything loaded
        (`profaudit.dataset_summary.DatasetSummary`); datasets not read yet are summarised from
        their manifests and metadata without reading their data tables."""
        from profaudit.dataset_summary import summarize_dataset, summarize_profiles

        def build():
            with self.lock:
                if not self.datasets or "datasets" in self._groups:
                    return summarize_profiles(self.ps)
                eager = ProfileSet([p for g in self._groups.values() for p in g], skipped=list(self.skipped))
            # datasets first, as `ps` orders them once read
            total = None
            for d in self.datasets:
                total = summarize_dataset(d) if total is None else total + summarize_dataset(d)
            return total + summarize_profiles(eager)

        return self.cached(("summary",), build)

    def claim(self, cid: str) -> ClaimEntry:
        try:
            return self.claims[cid]
        except KeyError:
            raise UsageError(f"no claim {cid!r} is loaded: reload the page") from None

    def cached(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """Memoise per data version (uploads invalidate everything)."""
        full = (self.version, *key)
        with self.lock:
            if full in self._cache:
                self._cache.move_to_end(full)
                return self._cache[full]
        value = compute()
        with self.lock:
            self._store(full, value)
        return value

    def _store(self, full: tuple, value: Any) -> None:
        """Put one cache entry, dropping the least recently used past _CACHE_ENTRIES (hold the lock)."""
        self._cache[full] = value
        while len(self._cache) > _CACHE_ENTRIES:
            self._cache.popitem(last=False)

    def cached_limited(self, key: tuple, compute: Callable[[], Any], what: str) -> Any:
        """`cached`, with `compute` run under the callback time limit. The entry is the running
        computation itself, so a failure is cached like a result (a refresh of a failed audit
        answers at once with the same line) and a refresh after a timeout waits on the same
        computation again instead of starting a second one."""
        full = (self.version, *key)
        with self.lock:
            fut = self._cache.get(full)
            if fut is None:
                fut = start(compute)
                self._store(full, fut)
            else:
                self._cache.move_to_end(full)
        return wait(fut, what, self.callback_timeout_s)

    # -- library calls, cached -----------------------------------------------------------------------
    def kernels(self) -> pl.DataFrame:
        """The kernels table of every profile, with `_row` (a stable row key for the grid)."""
        return self.cached(("kernels",), lambda: self.ps.kernels.with_row_index("_row"))

    def kernel_profile_ids(self) -> list[str]:
        """Profiles with kernel rows, in load order (the roofline's default selection)."""
        k = self.ps.kernels
        return k["profile_id"].unique(maintain_order=True).to_list() if k.height else []

    def roofline(self, pids: Sequence[str] | None, device: str | None, sparse: bool) -> pl.DataFrame:
        """The roofline of `pids` (None or empty: every profile with kernels), cached."""
        from profaudit.roofline import roofline

        # "all" and the list of every profile with kernels give the same rows: one cache entry
        pids = tuple(pids) if pids else tuple(self.kernel_profile_ids())
        key = ("roofline", pids, device, sparse)
        return self.cached(key, lambda: roofline(self.subset(pids), device=device, clock="both", sparse=sparse, extra_specs=self.specs))

    def audit(self, cid: str, select: str | None, ignore: str | None):
        """Audit a claim after checking every file it names is allowed; cached per (claim content,
        the files it names as they are now, rules), failures included, and time-limited."""
        entry = self.claim(cid)
        try:
            digest = hashlib.sha256(entry.path.read_bytes()).hexdigest()
        except OSError as exc:
            raise InputError(entry.path, f"cannot read: {exc.strerror or exc}") from None
        key = ("audit", cid, digest, _evidence_identity(entry.path), select or "", ignore or "")
        try:
            return self.cached_limited(key, lambda: self._audit(entry, select, ignore), f"auditing {entry.path.name}")
        except InputError as exc:
            # an uploaded claim's line names its own path and its evidence's inside the server's
            # upload folder: the visitor sees them by the names they uploaded, never where they are kept
            from profaudit.dashboards.uploads import server_paths_hidden

            shown = server_paths_hidden(str(exc), self.upload_dir)
            if shown == str(exc):
                raise
            raise InputError(None, shown) from None

    def _audit(self, entry: ClaimEntry, select: str | None, ignore: str | None):
        from profaudit.audit import audit, load_claim

        if entry.trusted:
            # a claim file named on the command line: audited with the files it names, as
            # `profaudit audit CLAIM` would; uploaded and folder-found claims stay confined
            return audit(load_claim(entry.path), select=select or None, ignore=ignore or None)
        self.policy.check_claim(entry.path)
        claim = load_claim(entry.path)
        # Defence in depth: what the claim loader actually read must be inside the allowed set too.
        for side in claim.sides:
            read = [f for f in (*side.timing_paths, *side.profile_paths) if not any(ch in f for ch in "*?[")]
            for ps in (side.timing_profiles, side.profiles):
                if ps is not None and len(ps):
                    read += [p for p in ps.metadata["path"].to_list() if p]
            if any(not self.policy.allows(f) for f in read):
                raise InputError(entry.path, "names a file outside the files given to the dashboard")
        return audit(claim, select=select or None, ignore=ignore or None)

    def compare(self, baseline: str, candidate: str, match: str, intended: Sequence[str], device: str | None):
        from profaudit.compare import compare

        if baseline == candidate:
            raise UsageError("choose two different profiles to compare")
        key = ("compare", baseline, candidate, match, tuple(intended), device)
        pair = (self.profile(baseline), self.profile(candidate))  # an unknown id is a line at once, not cached
        return self.cached_limited(key, lambda: compare(*pair, match=match, intended=tuple(intended), device=device), "comparing the two profiles")

    def warm(self) -> None:
        """Fill the caches the Kernels, Roofline and Timing pages open with (run in a background
        thread): the first visit then costs what drawing costs, not seconds of one-off loading
        (the device specs' YAML, scipy.stats for the steady-state and drift detectors)."""
        try:
            self.device_specs  # noqa: B018
            if self.datasets:
                return  # a dataset is read by the first page that needs its rows, not up front
            self.kernels()
            if self.ps.kernels.height:
                self.roofline(None, None, False)
            import scipy.stats  # noqa: F401
        except Exception:  # the pages compute (and report) it themselves
            pass

    @property
    def device_specs(self) -> dict:
        """Every device spec by key, the shipped ones and `specs`, read once (not per callback)."""
        if self._device_specs is None:
            from profaudit.specs import load_specs

            self._device_specs = load_specs(self.specs)
        return self._device_specs

    def device_keys(self) -> list[str]:
        return sorted(self.device_specs)


def _evidence_identity(claim_path: Path) -> tuple:
    """(path, size, mtime_ns) of every file the claim names, as far as they can be listed: the part
    of an audit's cache key that changes when evidence is replaced on disk. A claim whose
    references cannot be listed gives () (its audit fails on the claim itself, which its content
    hash already keys)."""
    from profaudit.dashboards.access import _lexical, claim_references
    from profaudit.loader import expand

    try:
        refs = claim_references(claim_path)
    except InputError:
        return ()
    out: list[tuple] = []
    for _, ref in refs:
        try:
            files = [p for p, _ in expand([str(_lexical(ref, claim_path.parent))])]
        except (InputError, OSError, ValueError):
            out.append((ref, None))  # missing: the audit says so, and keys on the absence
            continue
        for f in files:
            try:
                st = f.stat()
                out.append((str(f), st.st_size, st.st_mtime_ns))
            except OSError:
                out.append((str(f), None))
    return tuple(out)


__all__ = ["DashboardState", "ClaimEntry", "STATE_KEY", "DEFAULT_MAX_UPLOAD_BYTES"]
