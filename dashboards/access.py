"""Which files the dashboard may read: only what the user named on the command line or uploaded.

The browser never sends a path. Pages choose profiles and claims by opaque ids that map to state
held on the server. The one way a path can reach the server from outside the command line is a
claim file: its `timings:` and `profile:` entries name files relative to the claim, and an uploaded
(or merely passed) claim can name anything (`../../home/me/.ssh/id_rsa`, `/etc/shadow`, a glob, a
symlink). `AccessPolicy.check_claim` resolves every such reference the way the claim loader will
and refuses the claim, before anything is opened, unless each file it would read lies inside the
allowed set: the files and folders given on the command line and the private upload folder.

Two checks, both needed:
- lexical, before touching the file system: the normalised absolute reference must lie under an
  allowed root, so a claim cannot even probe whether a file outside exists;
- resolved, after expanding globs and folders exactly as `profaudit.loader.expand` does: every file
  the loader would open, with symlinks followed, must lie under an allowed root, so a symlink
  inside an allowed folder cannot lead out of it.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from profaudit.errors import InputError

# Claim-file keys that name files (see profaudit.audit.claim: SIDE_KEYS, `_as_paths`). A test pins
# the claim module's key sets, so a new path-bearing key cannot slip past this list unnoticed.
CLAIM_SIDES = ("baseline", "candidate")
CLAIM_PATH_KEYS = ("timings", "profile")
# A claim is a small YAML file; anything larger is not one (and is not worth parsing to find out).
CLAIM_MAX_BYTES = 1 << 20
CLAIM_SUFFIXES = (".yaml", ".yml")


def _lexical(p: str | os.PathLike, base: Path | None = None) -> Path:
    """Absolute, `..`-free path without following symlinks (what the string says)."""
    s = os.path.expanduser(os.fspath(p))
    if not os.path.isabs(s):
        s = os.path.join(os.fspath(base) if base is not None else os.getcwd(), s)
    return Path(os.path.normpath(s))


def _inside(p: Path, root: Path) -> bool:
    return p == root or p.is_relative_to(root)


@dataclass(frozen=True)
class _Root:
    lexical: Path
    resolved: Path
    is_dir: bool


class AccessPolicy:
    """The set of files the dashboard may open: named files, everything under named folders."""

    def __init__(self, roots: Iterable[str | os.PathLike] = ()):
        self._roots: list[_Root] = []
        for r in roots:
            self.add(r)

    def add(self, path: str | os.PathLike) -> None:
        raw = os.fspath(path)
        matches = sorted(glob.glob(raw, recursive=True)) if any(ch in raw for ch in "*?[") else [raw]
        for m in matches:
            lex = _lexical(m)
            res = Path(m).resolve()
            self._roots.append(_Root(lex, res, res.is_dir()))

    @property
    def roots(self) -> list[Path]:
        return [r.resolved for r in self._roots]

    def _match(self, p: Path, attr: str) -> bool:
        for r in self._roots:
            root = getattr(r, attr)
            if (r.is_dir and _inside(p, root)) or p == root:
                return True
        return False

    def allows_lexically(self, path: str | os.PathLike, base: Path | None = None) -> bool:
        lex = _lexical(path, base)
        return self._match(lex, "lexical") or self._match(lex, "resolved")

    def allows(self, path: str | os.PathLike) -> bool:
        """True when `path`, with symlinks followed, is a named file or lies under a named folder."""
        return self._match(Path(path).resolve(), "resolved")

    # -- claims ----------------------------------------------------------------------------------
    def check_claim(self, claim_path: str | os.PathLike) -> list[Path]:
        """Refuse a claim (InputError naming the claim and the reference) unless it and every file
        it makes the loader read are allowed. Returns those files."""
        from profaudit.loader import expand

        claim_path = Path(claim_path)
        if not self.allows(claim_path):
            raise InputError(claim_path, "not one of the files given to the dashboard")
        files: list[Path] = []
        for where, ref in claim_references(claim_path):
            shown = f"{where}: {ref}"
            if not self.allows_lexically(ref, claim_path.parent):
                raise InputError(claim_path, f"{shown}: outside the files given to the dashboard (pass it, or its folder, on the command line, or upload it beside the claim)")
            lex = _lexical(ref, claim_path.parent)
            pattern = any(ch in str(ref) for ch in "*?[")
            if not pattern:
                try:
                    exists = lex.exists()
                except OSError:
                    # a name the file system refuses (ENAMETOOLONG past PATH_MAX: exists() only
                    # swallows ENOENT-like errors) reached the catch-all as a traceback naming the
                    # server's upload folder (fuzz_surfaces, s16 final run, upload #172): it names
                    # nothing that can be read, so it is treated like a missing file
                    exists = False
                if not exists:
                    continue  # the claim loader reports the missing file with the claim's own wording
                if not self.allows(lex):
                    raise InputError(claim_path, f"{shown}: leads outside the files given to the dashboard (through a symlink)")
            try:
                found = [p for p, _ in expand([str(lex)])]
            except InputError:
                continue  # same: a pattern without matches is the claim loader's to report
            for f in found:
                if not self.allows(f):
                    raise InputError(claim_path, f"{shown}: leads outside the files given to the dashboard (through a symlink or pattern)")
                files.append(f.resolve())
        return files


def claim_references(claim_path: str | os.PathLike) -> list[tuple[str, str]]:
    """Every (where, reference) a claim file makes the claim loader open, as written.

    A claim this cannot read (too large, not YAML, not a mapping) raises InputError: a claim whose
    references cannot be listed is never handed to the claim loader.
    """
    path = Path(claim_path)
    data, problem = _read_yaml_mapping(path)
    if data is None:
        raise InputError(path, problem)
    out: list[tuple[str, str]] = []
    for role in CLAIM_SIDES:
        side = data.get(role)
        if isinstance(side, (str, os.PathLike)):
            out.append((role, os.fspath(side)))
            continue
        if not isinstance(side, Mapping):
            continue
        for key in CLAIM_PATH_KEYS:
            for ref in _items(side.get(key)):
                out.append((f"{role}.{key}", ref))
    return out


def _items(value: Any) -> Iterator[str]:
    if value is None:
        return
    for it in value if isinstance(value, (list, tuple)) else [value]:
        # Non-strings are the claim loader's to reject; stringified here so nothing escapes the check.
        yield os.fspath(it) if isinstance(it, (str, os.PathLike)) else str(it)


def _read_yaml_mapping(path: Path) -> tuple[Mapping | None, str]:
    """(mapping, "") or (None, why not)."""
    from profaudit import safe_yaml

    try:
        if path.stat().st_size > CLAIM_MAX_BYTES:
            return None, f"larger than {CLAIM_MAX_BYTES >> 20} MiB: not a claim file"
        # the bounded loader: an upload with nested aliases is refused before it expands
        data = safe_yaml.load(path.read_text(encoding="utf-8"), path)
    except OSError as exc:
        return None, f"cannot read: {exc.strerror or exc}"
    except UnicodeDecodeError:
        return None, "not UTF-8 text: not a claim file"
    except InputError as exc:
        return None, exc.problem
    if not isinstance(data, Mapping):
        return None, "a claim file is a YAML mapping with baseline and candidate"
    return data, ""


def looks_like_claim(path: str | os.PathLike) -> bool:
    """A YAML mapping with a baseline and a candidate: what `profaudit audit` takes as a claim."""
    p = Path(path)
    if not p.name.lower().endswith(CLAIM_SUFFIXES) or not p.is_file():
        return False
    data, _ = _read_yaml_mapping(p)
    if data is not None:
        return all(k in data for k in CLAIM_SIDES)
    # a claim whose content the bounded loader refuses (aliases beyond the budget) is still a
    # claim: the audit page then says why it is refused, instead of "not a profile format"
    from profaudit import safe_yaml

    try:
        if p.stat().st_size > CLAIM_MAX_BYTES:
            return False
        keys = safe_yaml.top_level_keys(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return False
    return keys is not None and all(k in keys for k in CLAIM_SIDES)


__all__ = ["AccessPolicy", "claim_references", "looks_like_claim", "CLAIM_PATH_KEYS"]
