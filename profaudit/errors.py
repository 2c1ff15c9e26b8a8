"""Errors a user can act on. The CLI prints each as one line and exits 2."""

from __future__ import annotations

import os


class ProfauditError(Exception):
    """Base class: a problem with what the user gave us, not a bug in profaudit."""

    exit_code = 2


class InputError(ProfauditError):
    """A file (or folder) that cannot be read as what it claims to be."""

    def __init__(self, path: str | os.PathLike | None, problem: str):
        self.path = None if path is None else os.fspath(path)
        self.problem = problem.strip().rstrip(".")
        super().__init__(str(self))

    def __str__(self) -> str:
        return one_line(f"{self.path}: {self.problem}" if self.path else self.problem)

    @classmethod
    def unreadable(cls, path: str | os.PathLike | None, exc: OSError) -> "InputError":
        """The one line for a file the OS will not read: 'cannot read: Permission denied'."""
        return cls(path, f"cannot read: {exc.strerror or exc}")


# what would break or rewrite the one line on a terminal or in a log: every character
# str.splitlines breaks at (CR, LF, VT, FF, FS-RS, NEL, U+2028/9) and the other C0 controls (ESC
# starts terminal sequences), shown as escapes. A file may be named "a\nb.json" (s19 hostile
# fuzz: its error was two lines, the second looking like a line of its own)
_BREAKING = {c: repr(chr(c))[1:-1] for c in (*range(0, 9), *range(10, 32), 0x7F, 0x85, 0x2028, 0x2029)}


def one_line(text: str) -> str:
    """`text` with line breaks and control characters written as escapes (tabs kept)."""
    return text.translate(_BREAKING)


def first_line(exc: BaseException, default: str = "") -> str:
    """The first line of an exception's text (`default` when it has none): what fits in the one
    line a user sees, without a native library's multi-line report."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else default


class MissingExtraError(ProfauditError):
    """An optional dependency is needed for this feature."""

    def __init__(self, module: str, extra: str, feature: str):
        self.module, self.extra, self.feature = module, extra, feature
        super().__init__(
            f"{feature} needs the Python package {module!r}: pip install 'profaudit[{extra}]'"
        )


class UsageError(ProfauditError):
    """Options that do not fit together or name something that does not exist."""


def require(module: str, extra: str, feature: str):
    """Import an optional dependency late, with an error that names the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - exercised where the extra is absent
        raise MissingExtraError(module, extra, feature) from exc


# Errors cross process boundaries in parallel loads; rebuild them (subclasses too) from their fields.
InputError.__reduce__ = lambda self: (type(self), (self.path, self.problem))  # type: ignore[assignment]
MissingExtraError.__reduce__ = lambda self: (MissingExtraError, (self.module, self.extra, self.feature))  # type: ignore[assignment]
