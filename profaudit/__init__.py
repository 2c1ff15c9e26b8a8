"""profaudit: audit GPU/accelerator kernel profiles and the speedup claims built on them.

    import profaudit
    ps = profaudit.load("report.ncu-rep")      # ProfileSet of polars tables
    ps.kernels                                   # one row per kernel execution
    profaudit.roofline(ps)                       # achieved FLOP/s and bandwidth vs device ceilings
"""

__version__ = "0.1.0"

from profaudit.errors import InputError, MissingExtraError, ProfauditError, UsageError  # noqa: E402
from profaudit.loader import load, load_one  # noqa: E402
from profaudit.profile import Profile, ProfileSet  # noqa: E402
# `profaudit.compare` is the function; its package is reached as `from profaudit.compare import ...`
from profaudit.compare import compare  # noqa: E402


def audit_claim(*args, **kwargs):
    """Audit a speedup claim (see `profaudit.audit.audit`). `from profaudit import audit` gives the
    audit package, whose module object is itself callable: `audit("claim.yaml")`."""
    from profaudit.audit import audit

    return audit(*args, **kwargs)


__all__ = [
    "__version__",
    "load",
    "load_one",
    "Profile",
    "ProfileSet",
    "compare",
    "audit_claim",
    "ProfauditError",
    "InputError",
    "MissingExtraError",
    "UsageError",
]
