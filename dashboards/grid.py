"""AG Grid's infinite row model on the server: its sort and filter models as polars expressions.

The grid asks for rows `startRow..endRow` with the sort and filter models the user set in the
column headers; the server filters and sorts the kernels table (100k+ rows take milliseconds in
polars) and returns only that block, so the browser never holds the whole table.

Semantics follow AG Grid's built-in filters: text filters compare case-insensitively; `inRange`
excludes both bounds (AG Grid's default); `blank` matches null (and NaN for numbers). Column ids
and filter types the grid never sends are refused (UsageError), not ignored.
"""

from __future__ import annotations

import json
import math
from typing import Any, Mapping, Sequence

import polars as pl

from profaudit.errors import UsageError

# JavaScript numbers are doubles: integers beyond 2^53 (nanosecond timestamps since the epoch) are
# sent as text so the grid shows them exactly.
_JS_SAFE_INT = 2**53

_TEXT_TYPES = {"equals", "notEqual", "contains", "notContains", "startsWith", "endsWith", "blank", "notBlank"}
_NUMBER_TYPES = {"equals", "notEqual", "greaterThan", "greaterThanOrEqual", "lessThan", "lessThanOrEqual", "inRange", "blank", "notBlank"}


def _column(schema: Mapping[str, pl.DataType], col: Any) -> str:
    if not isinstance(col, str) or col not in schema:
        raise UsageError(f"the grid asked for an unknown column {col!r}")
    return col


def _text_condition(col: str, cond: Mapping) -> pl.Expr:
    t = cond.get("type")
    if t not in _TEXT_TYPES:
        raise UsageError(f"column {col}: unsupported text filter {t!r}")
    c = pl.col(col).cast(pl.Utf8)
    if t == "blank":
        return c.is_null() | (c == "")
    if t == "notBlank":
        return c.is_not_null() & (c != "")
    v = str(cond.get("filter") if cond.get("filter") is not None else "").lower()
    lc = c.str.to_lowercase()
    expr = {
        "equals": lc == v,
        "notEqual": lc != v,
        "contains": lc.str.contains(v, literal=True),
        "notContains": ~lc.str.contains(v, literal=True),
        "startsWith": lc.str.starts_with(v),
        "endsWith": lc.str.ends_with(v),
    }[t]
    # AG Grid keeps nulls for the negative filters and drops them for the positive ones.
    return expr.fill_null(t in ("notEqual", "notContains"))


def _num(col: str, v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise UsageError(f"column {col}: filter value {v!r} is not a number") from None
    return f


def _number_condition(col: str, cond: Mapping, dtype: pl.DataType) -> pl.Expr:
    t = cond.get("type")
    if t not in _NUMBER_TYPES:
        raise UsageError(f"column {col}: unsupported number filter {t!r}")
    c = pl.col(col).cast(pl.Float64)
    if t == "blank":
        return c.is_null() | c.is_nan()
    if t == "notBlank":
        return c.is_not_null() & ~c.is_nan()
    v = _num(col, cond.get("filter"))
    if t == "inRange":
        hi = _num(col, cond.get("filterTo"))
        return ((c > v) & (c < hi)).fill_null(False)
    expr = {
        "equals": c == v,
        "notEqual": c != v,
        "greaterThan": c > v,
        "greaterThanOrEqual": c >= v,
        "lessThan": c < v,
        "lessThanOrEqual": c <= v,
    }[t]
    return expr.fill_null(t == "notEqual")


def _condition(col: str, cond: Mapping, dtype: pl.DataType) -> pl.Expr:
    if not isinstance(cond, Mapping):
        raise UsageError(f"column {col}: malformed filter")
    if "conditions" in cond or "condition1" in cond:
        parts = cond.get("conditions") or [c for c in (cond.get("condition1"), cond.get("condition2")) if c]
        exprs = [_condition(col, p, dtype) for p in parts]
        if not exprs:
            return pl.lit(True)
        op = str(cond.get("operator", "AND")).upper()
        if op not in ("AND", "OR"):
            raise UsageError(f"column {col}: unsupported filter operator {op!r}")
        return pl.all_horizontal(exprs) if op == "AND" else pl.any_horizontal(exprs)
    kind = cond.get("filterType") or ("number" if dtype.is_numeric() else "text")
    if kind == "number":
        return _number_condition(col, cond, dtype)
    if kind == "text":
        return _text_condition(col, cond)
    raise UsageError(f"column {col}: unsupported filter kind {kind!r}")


def filter_expr(filter_model: Mapping | None, schema: Mapping[str, pl.DataType]) -> pl.Expr | None:
    """One expression for the whole filter model (None when nothing is filtered)."""
    if not filter_model:
        return None
    exprs = [_condition(_column(schema, col), cond, schema[col]) for col, cond in filter_model.items()]
    return pl.all_horizontal(exprs) if exprs else None


def apply(df: pl.DataFrame, sort_model: Sequence[Mapping] | None, filter_model: Mapping | None) -> pl.DataFrame:
    expr = filter_expr(filter_model, df.schema)
    if expr is not None:
        df = df.filter(expr)
    if sort_model:
        cols, desc = [], []
        for s in sort_model:
            cols.append(_column(df.schema, s.get("colId")))
            d = s.get("sort")
            if d not in ("asc", "desc"):
                raise UsageError(f"column {s.get('colId')}: sort must be asc or desc")
            desc.append(d == "desc")
        df = df.sort(cols, descending=desc, nulls_last=True, maintain_order=True)
    return df


def view_key(sort_model, filter_model) -> str:
    return json.dumps([sort_model or [], filter_model or {}], sort_keys=True, default=str)


def rows_for_grid(df: pl.DataFrame) -> list[dict]:
    """JSON-safe rows: NaN/inf become null, integers JavaScript cannot hold become text."""
    out = df.to_dicts()
    floats = [c for c, t in df.schema.items() if t in (pl.Float32, pl.Float64)]
    ints = [c for c, t in df.schema.items() if t.is_integer()]
    for r in out:
        for c in floats:
            v = r[c]
            if v is not None and not math.isfinite(v):
                r[c] = None
        for c in ints:
            v = r[c]
            if v is not None and abs(v) >= _JS_SAFE_INT:
                r[c] = str(v)
    return out


__all__ = ["apply", "filter_expr", "rows_for_grid", "view_key"]
