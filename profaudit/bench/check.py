"""Correctness checks: outputs against a reference, with tolerances chosen by dtype.

An element passes when |out - ref| <= atol + rtol * |ref| (numpy.isclose), with NaN never equal:
a poisoned output buffer that a kernel did not write fails. The reference runs on float64 copies
of the inputs where the backend has float64, so the tolerance measures the kernel's error, not
the reference's. Defaults (rtol, atol) by the computation's dtype; they stay within the limits
the audit accepts (PA304) and assume outputs of order one (scale inputs so they are, e.g. a
matmul's inputs by 1/sqrt(K)):

    float64 1e-7, 1e-9 | float32 1e-4, 1e-4 | float32 with TF32 5e-3, 5e-3
    float16 5e-3, 1e-3 | bfloat16 2e-2, 1e-2 | integers and bool: exact
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-9),
    "float32": (1e-4, 1e-4),
    "tf32": (5e-3, 5e-3),
    "float16": (5e-3, 1e-3),
    "bfloat16": (2e-2, 1e-2),
}


def default_tolerance(dtype: str | None, tf32: bool | None = False) -> tuple[float, float]:
    """(rtol, atol) for a computation in `dtype`; exact for integer types."""
    if dtype == "float32" and tf32:
        return TOLERANCES["tf32"]
    if dtype in TOLERANCES:
        return TOLERANCES[dtype]
    if dtype is None:
        return TOLERANCES["float32"]
    return (0.0, 0.0)


def leaves(out: Any) -> list[Any]:
    """The arrays of an output: one array, or a (nested) tuple/list/dict of them."""
    if isinstance(out, dict):
        return [x for k in sorted(out) for x in leaves(out[k])]
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in leaves(o)]
    return [out]


@dataclass
class CheckResult:
    ok: bool
    message: str
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    mismatched: int = 0
    elements: int = 0
    nan_outputs: int = 0
    details: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "ok": self.ok,
            "message": self.message,
            "max_abs_err": _num(self.max_abs_err),
            "max_rel_err": _num(self.max_rel_err),
            "mismatched_elements": self.mismatched,
            "elements": self.elements,
            "nan_outputs": self.nan_outputs,
            **self.details,
        }


def _num(v):
    return None if v is None or not math.isfinite(v) else float(v)


def compare(out: Sequence[np.ndarray], ref: Sequence[np.ndarray], rtol: float, atol: float) -> CheckResult:
    """Compare host arrays elementwise; shapes must match exactly."""
    if len(out) != len(ref):
        return CheckResult(False, f"the kernel returned {len(out)} output array(s), the reference {len(ref)}")
    worst_abs = worst_rel = 0.0
    bad = total = nans = 0
    first_bad = None
    for i, (o, r) in enumerate(zip(out, ref)):
        o, r = np.asarray(o), np.asarray(r)
        if o.shape != r.shape:
            return CheckResult(False, f"output {i} has shape {o.shape}, the reference {r.shape}")
        # a scalar output (x.sum(), a norm) is a 0-d array: numpy ufuncs turn those into numpy
        # scalars, which cannot be indexed; one element keeps the code below uniform
        o, r = np.atleast_1d(o), np.atleast_1d(r)
        total += r.size
        if r.dtype.kind in "biu" and o.dtype.kind in "biu":
            mism = o != r
            n = int(mism.sum())
            if n:
                bad += n
                first_bad = first_bad or (i, tuple(int(x) for x in np.argwhere(mism)[0]))
                worst_abs = max(worst_abs, float(np.abs(o.astype(np.float64) - r.astype(np.float64)).max()))
            continue
        of, rf = o.astype(np.float64), r.astype(np.float64)
        nans += int((np.isnan(of) & ~np.isnan(rf)).sum())
        close = np.isclose(of, rf, rtol=rtol, atol=atol, equal_nan=False)
        # a NaN in the reference must be a NaN in the output (and only there)
        both_nan = np.isnan(of) & np.isnan(rf)
        close |= both_nan
        n = int((~close).sum())
        diff = np.abs(of - rf)
        diff[both_nan] = 0.0
        finite = np.isfinite(diff)
        if finite.any():
            worst_abs = max(worst_abs, float(diff[finite].max()))
            denom = np.abs(rf[finite])
            rel = diff[finite] / np.where(denom > 0, denom, np.inf)
            worst_rel = max(worst_rel, float(rel.max()) if rel.size else 0.0)
        if not finite.all():
            worst_abs = math.inf
        if n:
            bad += n
            if first_bad is None:
                first_bad = (i, tuple(int(x) for x in np.argwhere(~close)[0]))
    if bad:
        where = f"; first at output {first_bad[0]} index {list(first_bad[1])}" if first_bad else ""
        nan_note = f" ({nans} NaN where the reference is finite: a poisoned element the kernel did not write, or a NaN it produced)" if nans else ""
        msg = f"{bad} of {total} elements differ from the reference beyond rtol={rtol:g}, atol={atol:g} (max abs error {worst_abs:.3g}){nan_note}{where}"
        return CheckResult(False, msg, worst_abs, worst_rel, bad, total, nans)
    return CheckResult(True, f"{total} elements within rtol={rtol:g}, atol={atol:g} (max abs error {worst_abs:.3g})", worst_abs, worst_rel, 0, total, 0)


def degenerate(ref: Sequence[np.ndarray], rtol: float, atol: float) -> str | None:
    """Why a check against `ref` could not tell a wrong kernel from a right one, or None.

    A reference that an all-zero output would match within tolerance (METR's near-zero-output
    filter, FAIRNESS P3) or that holds no elements makes the check meaningless."""
    total = sum(int(np.asarray(r).size) for r in ref)
    if total == 0:
        return "the reference output is empty"
    zeros_pass = True
    for r in ref:
        rf = np.asarray(r).astype(np.float64)
        if not np.all(np.abs(rf) <= atol + rtol * np.abs(rf)):
            zeros_pass = False
            break
    if zeros_pass:
        return f"an all-zero output would match the reference within rtol={rtol:g}, atol={atol:g}: the outputs are too small for the check to mean anything (scale the inputs up)"
    return None


def same_values(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> bool:
    if len(a) != len(b):
        return False
    return all(np.asarray(x).shape == np.asarray(y).shape and np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True) for x, y in zip(a, b))
