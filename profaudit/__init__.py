"""profaudit: audit GPU/accelerator kernel profiles and the speedup claims built on them.

    import profaudit
    ps = profaudit.load("report.ncu-rep")      # ProfileSet of polars tables
    ps.kernels                                   # one row per kernel execution
    profaudit.roofline(ps)                       # achieved FLOP/s and bandwidth vs device ceilings
"""

__version__ = "0.1.0"

from typing import TYPE_CHECKING  # noqa: E402

from profaudit.errors import InputError, MissingExtraError, ProfauditError, UsageError  # noqa: E402
from profaudit.fleet import ingest  # noqa: E402
from profaudit.loader import load, load_one  # noqa: E402
from profaudit.profile import Profile, ProfileSet  # noqa: E402
from profaudit.scan import scan  # noqa: E402


def audit_claim(*args, **kwargs):
    """Audit a speedup claim (see `profaudit.audit.audit`). `profaudit.audit` is the audit package,
    itself callable: `profaudit.audit("claim.yaml")`."""
    from profaudit.audit import audit

    return audit(*args, **kwargs)


_CALLABLE_MODULES = ("roofline", "audit", "compare")

if TYPE_CHECKING:
    # Type checkers and IDEs see the three entry points as the functions they are. At run time
    # each name is its module made callable (profaudit._callable): `import profaudit.audit.rules`
    # and `profaudit.compare.match` need the module, and a plain function would hide it.
    from profaudit.audit import audit as audit
    from profaudit.compare.core import compare as compare
    from profaudit.roofline import roofline as roofline


def __getattr__(name: str):
    # Imported on first use so that `import profaudit` stays light; each is a callable module.
    if name in _CALLABLE_MODULES:
        import importlib

        return importlib.import_module(f"profaudit.{name}")
    raise AttributeError(f"module 'profaudit' has no attribute {name!r}")


__all__ = [
    "__version__",
    "load",
    "load_one",
    "scan",
    "ingest",
    "Profile",
    "ProfileSet",
    "roofline",
    "audit",
    "compare",
    "audit_claim",
    "ProfauditError",
    "InputError",
    "MissingExtraError",
    "UsageError",
]
