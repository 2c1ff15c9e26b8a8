"""What a rule returns (`Finding`) and what every rule is (`Rule`).

Severity is ordered and maps one to one onto the verdict a finding can force:
INFO (no effect) < WARN < INCONCLUSIVE < FAIL. Status says whether the rule checked and passed,
checked and found a problem, or could not check for lack of evidence (DESIGN: unknown is an
answer; a rule never passes silently).
"""

from __future__ import annotations

import enum
import math
import re
import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Iterable

if TYPE_CHECKING:  # pragma: no cover
    from profaudit.audit.evidence import Evidence
    from profaudit.audit.stats import Interval


class Severity(enum.IntEnum):
    INFO = 0
    WARN = 1
    INCONCLUSIVE = 2
    FAIL = 3

    @property
    def label(self) -> str:
        return self.name.lower()


class Status(str, enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    UNKNOWN = "unknown"


PITFALLS: dict[str, str] = {
    "P1": "warmup, JIT, autotune or compile inside the timed region",
    "P2": "cold vs hot cache, including persisting L2",
    "P3": "mismatched or weak baseline",
    "P4": "clock drift, thermal or power throttling, clock-state differences",
    "P5": "ncu replay durations mixed with event or nsys timings",
    "P6": "host timing without device synchronisation",
    "P7": "work escaping the timer",
    "P8": "cached or reused results",
    "P9": "too few samples, noise, outliers, mean vs median, best-of-N",
    "P10": "statistical significance of the speedup",
    "P11": "below the launch-overhead floor or timer resolution",
    "P12": "physically impossible results",
    "P13": "multi-GPU, MIG and contention",
    "P14": "CPU frequency governor for host-bound work",
}

FAMILIES = {"1": "method", "2": "environment", "3": "workload", "4": "statistics", "5": "physics"}


@dataclass
class Finding:
    rule: str  # code, e.g. PA101
    name: str  # kebab-case rule name
    severity: Severity
    status: Status
    pitfalls: tuple[str, ...]
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    side: str | None = None  # baseline, candidate, both, or None
    # A corrected speedup the rule can vouch for (e.g. steady-state, cycle space, same statistic).
    correction: "Interval | None" = None
    # The sides are not comparable (different dtype, device, time source ...): no speedup holds.
    non_comparable: bool = False
    # How `correction` was obtained, in words ("median instead of the contaminated mean").
    correction_note: str = ""
    # The timing does not measure what the claim says (work escaping the timer, compile inside the
    # timed region ...): without a `correction`, the measured ratio is not a supported speedup.
    # None: decided by severity (a FAIL invalidates unless the rule judges only the claim).
    invalidates: bool | None = None

    @property
    def triggered(self) -> bool:
        return self.status is Status.FAIL

    def as_dict(self) -> dict:
        d = {
            "rule": self.rule,
            "name": self.name,
            "severity": self.severity.label,
            "status": self.status.value,
            "pitfalls": list(self.pitfalls),
            "message": self.message,
            "evidence": _jsonable(self.evidence),
        }
        if self.side:
            d["side"] = self.side
        if self.correction is not None:
            d["correction"] = self.correction.as_dict()
            if self.correction_note:
                d["correction_note"] = self.correction_note
        if self.non_comparable:
            d["non_comparable"] = True
        return d


class Rule:
    """Base class of every audit rule. Subclasses set the class attributes and `check`.

    The class docstring documents the rule: a first line, then "What it detects", "Why it
    matters" and "Example" paragraphs (shown by `profaudit rules --explain`).
    """

    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]  # the most severe outcome this rule can report
    pitfalls: ClassVar[tuple[str, ...]]
    needs: ClassVar[tuple[str, ...]]  # evidence the rule reads, in words
    # How decisive a "cannot check" is: WARN for the facts that decide comparability,
    # INCONCLUSIVE where the verdict itself depends on the missing evidence, INFO otherwise. The
    # audit's verdict never counts it (it lists it as coverage and an assumption); `profaudit
    # compare` reads it to label a comparison "with warnings".
    unknown_severity: ClassVar[Severity] = Severity.INFO
    # The rule judges the claim against the recomputed numbers (statistic choice, interval), not
    # the measurement: its FAIL does not make the recomputed speedup unsupported.
    judges_claim_only: ClassVar[bool] = False
    # The rule's problem is the timer (it missed or added host work): the per-call GPU time of
    # both sides' traces is a valid correction.
    trace_corrects: ClassVar[bool] = False

    CODE_RE: ClassVar[re.Pattern] = re.compile(r"^PA[1-5]\d\d$")
    NAME_RE: ClassVar[re.Pattern] = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)+$")

    def check(self, ev: "Evidence") -> list[Finding]:  # pragma: no cover - abstract
        raise NotImplementedError

    # ------------------------------------------------------------------ documentation
    @classmethod
    def summary(cls) -> str:
        doc = cls.explanation()
        return doc.splitlines()[0].strip() if doc else ""

    @classmethod
    def explanation(cls) -> str:
        # cleandoc, not dedent: a docstring's first line has no indentation, so dedent removed
        # none from the rest and `profaudit rules CODE` printed every later line indented
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def family(cls) -> str:
        return FAMILIES.get(cls.code[2], "?")

    @classmethod
    def describe(cls) -> dict:
        return {
            "code": cls.code,
            "name": cls.name,
            "family": cls.family(),
            "severity": cls.severity.label,
            "pitfalls": ", ".join(cls.pitfalls),
            "needs": "; ".join(cls.needs),
            "summary": cls.summary(),
        }

    # ------------------------------------------------------------------ result helpers
    def ok(self, message: str, side: str | None = None, **evidence: Any) -> Finding:
        return Finding(self.code, self.name, Severity.INFO, Status.PASS, self.pitfalls, message, evidence, side)

    def flag(
        self,
        severity: Severity,
        message: str,
        side: str | None = None,
        *,
        correction: "Interval | None" = None,
        pitfalls: Iterable[str] | None = None,
        non_comparable: bool = False,
        correction_note: str = "",
        invalidates: bool | None = None,
        **evidence: Any,
    ) -> Finding:
        if severity > self.severity:
            raise ValueError(f"{self.code} declared severity {self.severity.label} but reported {severity.label}")
        return Finding(
            self.code,
            self.name,
            severity,
            Status.FAIL,
            tuple(pitfalls) if pitfalls else self.pitfalls,
            message,
            evidence,
            side,
            correction,
            non_comparable and severity >= Severity.FAIL,
            correction_note,
            invalidates,
        )

    def cannot(self, missing: str, side: str | None = None, *, severity: Severity | None = None, **evidence: Any) -> Finding:
        return Finding(
            self.code,
            self.name,
            self.unknown_severity if severity is None else severity,
            Status.UNKNOWN,
            self.pitfalls,
            f"cannot check: {missing}",
            evidence,
            side,
        )


def _jsonable(v: Any) -> Any:
    from profaudit.audit.evidence import Fact

    if isinstance(v, Fact):
        return v.as_dict()
    if hasattr(v, "as_dict"):
        return _jsonable(v.as_dict())
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set)):
        return [_jsonable(x) for x in v]
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, enum.Enum):
        return v.value
    try:
        import numpy as np

        if isinstance(v, np.generic):
            return _jsonable(v.item())
        if isinstance(v, np.ndarray):
            return _jsonable(v.tolist())
    except ImportError:  # pragma: no cover
        pass
    if isinstance(v, (str, int, bool)) or v is None:
        return v
    return str(v)
