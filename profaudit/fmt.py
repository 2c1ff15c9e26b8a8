"""Numbers for people: the one formatter behind the CLI tables, the dashboard and the reports.

Two rules keep a printed number honest:

* an exact integer prints exact, with thousands separators (``134,243,200``), whatever its
  storage type (ncu keeps counters as doubles);
* a number that is not exact prints visibly rounded: three significant digits with a unit and an
  SI prefix (``97.8 ms``, ``1.13 MB``, ``2.00 TFLOP/s``), or at most four significant digits
  without one; never six digits padded with zeros that read as measured.

A missing value is always ``—`` (None, NaN); microseconds are always ``µs``.
"""

from __future__ import annotations

import math
from typing import Any

MISSING = "—"
# integers beyond 2**53 are not exact in a float; print them rounded rather than with fake digits
_EXACT_FLOAT_INT = 2**53

_SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_TIME = (("s", 1e9), ("ms", 1e6), ("µs", 1e3))


def is_missing(v: Any) -> bool:
    """True for what prints as MISSING: None, NaN, infinities, and values that are not numbers."""
    if v is None:
        return True
    try:
        return not math.isfinite(float(v))
    except (TypeError, ValueError):
        return True


def _g3(v: float, signed: bool = False) -> str:
    # three significant digits, trailing zeros kept (2.00, 10.0) so the rounding is visible and
    # columns read evenly
    s = f"{v:+#.3g}" if signed else f"{v:#.3g}"
    s = s[:-1] if s.endswith(".") else s
    if "e" in s:  # #.3g goes scientific from 1e3 up only after the callers' scaling failed
        s = f"{v:+.3g}" if signed else f"{v:.3g}"
    return s


def is_exact_int(v: Any) -> bool:
    """True for ints and for floats holding an integer that a float represents exactly."""
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    return isinstance(v, float) and math.isfinite(v) and v.is_integer() and abs(v) <= _EXACT_FLOAT_INT


def fmt_int(v: Any, signed: bool = False) -> str:
    """1,234,567 (exact)."""
    if is_missing(v):
        return MISSING
    return f"{int(v):+,}" if signed else f"{int(v):,}"


def fmt_num(v: Any, signed: bool = False) -> str:
    """A bare number (no unit): exact integers exact with separators; others to four significant
    digits (1,234.5 / 97.83 / 0.1235), scientific outside [1e-3, 1e15)."""
    if isinstance(v, bool):
        return str(v)
    if is_missing(v):
        return MISSING
    if isinstance(v, str):
        return v
    if is_exact_int(v):
        return fmt_int(v, signed)
    f = float(v)
    a = abs(f)
    sign = "+" if signed else ""
    if a >= 1e15 or (a != 0 and a < 1e-4):
        return f"{f:{sign}.3e}".replace("e+0", "e+").replace("e-0", "e-")
    if a >= 1e3:
        # one decimal: a non-integer must not look like an exact integer
        return f"{f:{sign},.1f}"
    return f"{f:{sign}.4g}"


def fmt_refused(x: int | float, low: float, high: float) -> str:
    """A figure refused for lying outside [low, high], as its one-line message shows it: six
    significant digits (:g), so a damaged file's 10**300 is not printed as 301 digits, unless six
    digits round it into the range it is refused for (1,000,000,001 against 1e9, 2**63 against
    Int64's 2**63 - 1: "9.22337e+18" would read as a value in range); then as written (repr: exact
    for an int, the shortest round trip for a float). An int past a float's range gets its count
    of digits (fmt_int_digits). Shared by the device-spec limits and the .ncu-rep kernel columns."""
    try:
        shown = f"{x:g}"
    except OverflowError:
        return fmt_int_digits(x)
    return repr(x) if low <= float(shown) <= high else shown


def int_digits(n: int) -> int:
    """How many decimal digits |n| has, without writing it out: str() of an int over Python's
    4,300-digit limit raises ValueError (a YAML hex scalar builds one; it is not held by the limit
    int(str) applies to decimal text), and below it str() is quadratic in the length."""
    n = abs(n)
    if n < 10:
        return 1
    # math.log10 takes an int of any size (its mantissa and exponent), within ~1e-9 of the truth
    # at 10 million digits; digits = floor(log10 n) + 1 wherever log10 n is not that close to an
    # integer. Next to a power of ten the powers settle it exactly (10**k costs seconds at millions
    # of digits: only there, never for a run-of-the-mill 0xfff...)
    x = math.log10(n)
    k = int(x)
    eps = 1e-12 * (x + 1)
    if eps < x - k < 1 - eps:
        return k + 1
    while k > 0 and 10**k > n:
        k -= 1
    while 10 ** (k + 1) <= n:
        k += 1
    return k + 1


def fmt_int_digits(n: int) -> str:
    """An integer too large to show, as every refusal message shows it: "an integer of 4,817
    digits" (a count with thousands separators, as every other count in a message; the
    device-spec, claim and .ncu-rep messages wrote it three ways before, 1,000+ digits bare in two)."""
    return f"an integer of {int_digits(n):,} digits"


def time_unit(ns: float) -> tuple[str, float]:
    """The largest unit a duration of `ns` nanoseconds fits: ('ms', 1e6) for 97.8e6 (axis scales)."""
    a = abs(ns)
    return next(((unit, scale) for unit, scale in _TIME if a >= scale), ("ns", 1.0))


def fmt_ns(v: Any, signed: bool = False) -> str:
    """A duration in nanoseconds with the largest fitting unit: 512 ns, 1.00 µs, 97.8 ms, 3.20 s."""
    if is_missing(v):
        return MISSING
    v = float(v)
    unit, scale = time_unit(float(f"{v:.3g}"))  # 999.9 ns prints as 1.00 µs, not 1.00e+03 ns
    if scale > 1:
        return _g3(v / scale, signed) + f" {unit}"
    if is_exact_int(v):
        return fmt_int(v, signed) + " ns"
    return _g3(v, signed) + " ns"


def fmt_si(v: Any, unit: str = "", signed: bool = False) -> str:
    """20.0 TFLOP/s, 3.35 TB/s, 40.0 M: three significant digits with an SI prefix; numbers below
    1,000 that are exact integers print exact (512 B)."""
    if is_missing(v):
        return MISSING
    v = float(v)
    a = abs(float(f"{v:.3g}"))
    for scale, prefix in _SI:
        if a >= scale:
            return f"{_g3(v / scale, signed)} {prefix}{unit}"
    body = fmt_int(v, signed) if is_exact_int(v) else _g3(v, signed)
    return f"{body} {unit}".rstrip()


def fmt_bytes(v: Any, signed: bool = False) -> str:
    """Bytes with decimal prefixes, as vendors quote bandwidth: 1.13 MB, 512 B."""
    return fmt_si(v, "B", signed)


def fmt_pct(v: Any, signed: bool = False, digits: int = 1) -> str:
    """A percentage already in percent (62.3%). A non-zero value that rounds to zero prints as
    <0.1% so that a busy-but-barely unit is not shown idle."""
    if is_missing(v):
        return MISSING
    v = float(v)
    if v != 0 and abs(v) < 0.5 * 10**-digits:
        return f"<{10**-digits:.{digits}f}%" if v > 0 else f">-{10**-digits:.{digits}f}%"
    return f"{v:+.{digits}f}%" if signed else f"{v:.{digits}f}%"


def fmt_x(v: Any) -> str:
    """A ratio: 1.25x."""
    return MISSING if is_missing(v) else _g3(float(v)) + "x"


def fmt_interval(low: Any, high: Any) -> str:
    """A ratio's interval at the precision of fmt_x: [1.10, 1.40]; — when either end is unknown."""
    if is_missing(low) or is_missing(high):
        return MISSING
    return f"[{_g3(float(low))}, {_g3(float(high))}]"


def fmt_speedup(estimate: Any, low: Any = None, high: Any = None) -> str:
    """A speedup with its interval when it has one: 1.25x [1.10, 1.40], or 1.25x alone."""
    if is_missing(estimate):
        return MISSING
    rng = fmt_interval(low, high)
    return fmt_x(estimate) if rng == MISSING else f"{fmt_x(estimate)} {rng}"


def fmt_p(v: Any) -> str:
    """A p-value: two significant digits, <1e-4 below that."""
    return MISSING if is_missing(v) else (f"{float(v):.2g}" if float(v) >= 1e-4 else "<1e-4")


def p_is(v: Any) -> str:
    """'p=0.031', or 'p<1e-4' below the precision fmt_p prints (never 'p=<1e-4')."""
    s = fmt_p(v)
    return f"p{s}" if s.startswith("<") else f"p={s}"


# units as tools and the schema spell them -> how to print a value in that unit
_BYTE_UNITS = {"byte", "bytes", "b"}


def fmt_quantity(v: Any, unit: str | None = None, signed: bool = False) -> str:
    """A value in `unit` (a schema unit or a tool's unit string such as ncu's 'byte/s', 'hz',
    'nsecond', '%'): time and bytes scaled to a readable prefix, percentages as percent, rates
    with an SI prefix, counts exact."""
    from profaudit.samples import ns_per  # the one table of time unit spellings (ncu's 'nsecond', 'usecond', ...)

    if isinstance(v, str):
        return v
    if is_missing(v):
        return MISSING
    u = (unit or "").strip()
    lu = u.lower()
    scale = ns_per(lu)
    if scale is not None:
        return fmt_ns(float(v) * scale, signed)
    if lu in _BYTE_UNITS:
        return fmt_bytes(v, signed)
    if lu == "%":
        return fmt_pct(v, signed)
    if lu in ("hz",):
        return fmt_si(v, "Hz", signed)
    if lu.startswith("byte/") or lu.startswith("bytes/"):
        return fmt_si(v, "B/" + u.split("/", 1)[1], signed)
    if "/s" in lu or lu.endswith("per_second"):
        return fmt_si(v, u, signed)
    if lu in ("flop", "flops"):
        return fmt_si(v, "FLOP", signed)
    body = fmt_num(v, signed)
    return f"{body} {u}".rstrip() if u else body


# table cells: declared units whose values read better scaled (134 MB, 1.41 GHz, 2.10 GFLOP); a column
# in any other unit (duration_ns, counts) prints plain numbers, since its name already says the unit
_SCALED_UNITS = {"byte", "Hz", "flop", "FLOP/s", "byte/s", "%"}
# derived tables (roofline, compare) are not all declared in the schema; their names carry the unit
_UNIT_SUFFIXES = (("_flops_per_s", "FLOP/s"), ("_bytes_per_s", "byte/s"), ("_hz", "Hz"), ("_bytes", "byte"), ("_pct", "%"))


def fmt_cell(v: Any, unit: str = "") -> str:
    """A table cell (CLI tables, notebook tables): exact integers exact with separators, other
    numbers visibly rounded; byte, Hz, FLOP and percent columns with an SI prefix or a % sign;
    ratio columns (unit x) as fmt_x prints every speedup (2.28x, 1.00x: a ratio of exactly 1 is
    still an estimate, never the exact-looking integer 1)."""
    if unit == "x" and isinstance(v, (int, float)) and not isinstance(v, bool):
        return fmt_x(v)
    if unit in _SCALED_UNITS and isinstance(v, (int, float)) and not isinstance(v, bool):
        return fmt_quantity(v, unit)
    return fmt_num(v) if not isinstance(v, str) else v


def column_units(df: Any) -> dict[str, str]:
    """Column name -> unit for a polars frame's columns: the schema's declared unit, else the unit
    its name ends in (numeric columns only)."""
    from profaudit import schema

    units: dict[str, str] = {}
    # the stored tables, then the derived ones (ranks, collectives, ...) and the batch verdict
    # tables (their speedups in x) where the schema has them
    for t in (*schema.TABLES.values(), *schema.DERIVED_TABLES.values(), *schema.BATCH_TABLES.values()):
        for c in t.columns:
            if c.name in df.columns and c.unit:
                units.setdefault(c.name, c.unit)
    for c in df.columns:
        if c not in units and df.schema[c].is_numeric():
            units[c] = next((u for sfx, u in _UNIT_SUFFIXES if c.endswith(sfx) or f"{sfx}_" in c), "")
    return units


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 claim', '2 claims', '1,204 kernels'."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def fmt_params(params: Any) -> str:
    """Benchmark parameters as `--params` takes them: 'Axis Size=8192, Num Elements=1024' for the
    canonical JSON '{"Axis Size":8192,"Num Elements":1024}' the parsers store (text values bare,
    others as JSON); '' for none. Text that is not a JSON object prints as it is."""
    import json

    if params is None or params == "":
        return ""
    try:
        d = json.loads(params) if isinstance(params, str) else params
    except ValueError:
        return str(params)
    if not isinstance(d, dict):
        return str(params)
    return ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in d.items())


def md_cell(v: Any) -> str:
    """Text for a Markdown table cell or list item: pipes escaped, on one line."""
    return str(v).replace("|", "\\|").replace("\n", " ")
