"""Nsight Compute CSV cells and kernel columns as polars expressions: what `ncu_common.parse_number`,
`number_format` and `derive_kernel_columns` do to one cell or one kernel, done to whole columns.

Why: a `--page raw` export of thousands of kernels is 50-500 MB, and a Python call per cell or per
kernel cost about 1 CPU-s and 100 MB of memory per MB of file. Here Python runs only once per
*distinct* text that needs it (kernel names, unit strings, odd number spellings), never per row
or per cell. Every rule mirrors its scalar twin in `ncu_common` exactly (same float operations in
the same order, same rounding): tests/test_ncu_vector.py checks them against each other.
"""

from __future__ import annotations

from typing import Callable, Iterable

import polars as pl

from profaudit.parsers import ncu_common as nc

# What Python's str.strip() removes (str.isspace): Rust's whitespace lacks \x1c-\x1f.
PY_WS = "".join(c for c in map(chr, range(0x3001)) if c.isspace())
_WS_CLASS = r"[\s\x1c-\x1f]"

# Number spellings read here without Python, each exactly as parse_number reads it: a plain
# decimal (float() and polars' parser both round correctly), and thousands separators.
_PLAIN = r"^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$"
_GROUPED = r"^[-+]?[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?$"
_INT = r"^[-+]?[0-9]+$"
_MISSING = sorted(nc._MISSING)
_NO_TEXT = ["", "n/a", "N/A"]  # missing cells that keep no value_str (ncu_csv._value)


def strip(e: pl.Expr) -> pl.Expr:
    return e.str.strip_chars(PY_WS)


def map_unique(s: pl.Series, fn: Callable, dtype: pl.DataType) -> pl.Series:
    """`fn` applied to each distinct value of `s` once (nulls stay null)."""
    u = s.unique(maintain_order=True).drop_nulls()
    if not len(u):
        return pl.Series(s.name, [None] * len(s), dtype=dtype)
    table = pl.DataFrame({"k": u, "v": pl.Series([fn(x) for x in u.to_list()], dtype=dtype, strict=False)})
    return s.to_frame("k").join(table, on="k", how="left", maintain_order="left")["v"].alias(s.name)


def _int_of(text: pl.Expr) -> pl.Expr:
    """ncu_csv._number's exact integer of an already comma-free, stripped text."""
    i = text.cast(pl.Int64, strict=False)
    # abs(int(s)) < 2**63: -2**63 itself is out, as Python computes it
    return pl.when(text.str.contains(_INT) & (i != -(2**63))).then(i)


def value_frame(cells: pl.Series, dc: bool) -> pl.DataFrame:
    """(value, value_int, value_str) of metric cells, as ncu_csv._value gives them cell by cell.

    Plain decimals (and with the decimal point, thousands separators) are read by polars; the
    distinct cells of any other spelling go through `_value` itself."""
    from profaudit.parsers import ncu_csv

    s = strip(pl.col("c").fill_null(""))
    fast_num = s.str.contains(_INT) if dc else s.str.contains(_PLAIN) | s.str.contains(_GROUPED)
    plain = (s.str.replace_all(".", "", literal=True) if dc else s.str.replace_all(",", "", literal=True))
    df = pl.DataFrame({"c": cells}).select(
        s.alias("s"),
        fast_num.alias("num"),
        s.is_in(_MISSING).alias("miss"),
        plain.cast(pl.Float64, strict=False).alias("v"),
        _int_of(plain).alias("vi"),
    )
    slow = ~(df["num"] | df["miss"])
    out = df.select(
        pl.when("num").then("v").alias("value"),
        pl.when("num").then("vi").alias("value_int"),
        pl.when(pl.col("miss") & ~pl.col("s").is_in(_NO_TEXT)).then("s").alias("value_str"),
    )
    if slow.any():
        # odd spellings ('1_000', ' inf', Unicode digits, version strings): _value, once per text
        odd = cells.filter(slow).fill_null("")
        u = odd.unique(maintain_order=True)
        got = [ncu_csv._value(c, dc) for c in u.to_list()]
        table = pl.DataFrame({
            "c": u,
            "value": pl.Series([g[0] for g in got], dtype=pl.Float64),
            "value_int": pl.Series([g[1] for g in got], dtype=pl.Int64, strict=False),
            "value_str": pl.Series([g[2] for g in got], dtype=pl.String),
        })
        fixed = odd.to_frame("c").join(table, on="c", how="left", maintain_order="left")
        idx = slow.arg_true()
        out = pl.DataFrame({c: out[c].scatter(idx, fixed[c]) for c in ("value", "value_int", "value_str")})
    return out


def number_format(chunks: Iterable[pl.Series], enough: int = 20000) -> str:
    """ncu_common.number_format over the cells of `chunks`, in order (majority of the first
    `enough` cells that only one convention can read). Chunks after the deciding one are never
    built: the caller yields them lazily."""
    s = strip(pl.col("c"))
    en = pl.any_horizontal([s.str.contains(p.pattern) for p in nc._EN_ONLY])
    eu = pl.any_horizontal([s.str.contains(p.pattern) for p in nc._EU_ONLY])
    n_en = n_eu = 0
    for cells in chunks:
        # a cell either convention could decide has a ',' or a '.'
        cells = cells.filter(cells.str.contains(r"[,.]"))
        part = cells.to_frame("c").select(en.alias("en"), (~en & eu).alias("eu"))
        dec = part.filter(pl.col("en") | pl.col("eu")).head(enough - n_en - n_eu)
        n_en += int(dec["en"].sum())
        n_eu += int(dec["eu"].sum())
        if n_en + n_eu >= enough:
            break
    return "decimal_comma" if n_eu > n_en else "decimal_point"


def unit_factors(unit: str | None) -> tuple[float, ...]:
    """The multipliers `ncu_common.to_base` applies to a value in `unit`, in its order."""
    if unit is None:
        return ()
    u = unit.strip()
    if not u or u == "-":
        return ()
    num = nc._numerator(u)
    if num is not None:
        return (num[0],)
    if "/" in u:
        top, _, bottom = u.partition("/")
        bottom_ns = nc.ns_per(bottom.strip())
        if bottom_ns is not None:
            per_second = 1e9 / bottom_ns
            t = nc._numerator(top)
            if t is not None and t[1] == "byte":
                return (t[0], per_second)
            if top.strip().lower() in ("cycle", "cycles"):
                return (per_second,)
            if t is None:
                return (per_second,)
        t = nc._numerator(top)
        if t is not None and t[1] == "byte" and t[0] != 1.0:
            return (t[0],)
    return ()


def to_base(e: pl.Expr, unit: str | None) -> pl.Expr:
    for f in unit_factors(unit):
        e = e * f
    return e


# ---------------------------------------------------------------------------------------------
# derive_kernel_columns over a frame: one column per metric, every kernel with the same metrics
# ---------------------------------------------------------------------------------------------
_F = pl.Float64
_NULL_F = pl.lit(None, dtype=_F)
_NULL_S = pl.lit(None, dtype=pl.String)


def _int(e: pl.Expr) -> pl.Expr:
    # int(round(f)) of a finite f: round half to even; beyond Int64 is null (what the frame made of
    # Python's big integer)
    return pl.when(e.is_finite()).then(e.round(0, mode="half_to_even").cast(pl.Int64, strict=False))


def _truthy(e: pl.Expr) -> pl.Expr:
    return e.is_not_null() & (e != 0)


def _joined(parts: list[pl.Expr], sep: str) -> pl.Expr:
    """The non-null parts joined by `sep` (null when none is)."""
    if not parts:
        return _NULL_S
    j = pl.concat_list(parts).list.drop_nulls()
    return pl.when(j.list.len() > 0).then(j.list.join(sep))


class KernelFrame:
    """derive_kernel_columns for a frame whose kernels all have the same metrics (`keys`).

    `col(name)` names the frame's column holding metric `name` as read: finite, else null
    (ncu_common._finite). Intermediate results are materialised column by column (`_put`): nested
    expressions that repeat a sub-expression grow exponentially."""

    def __init__(self, keys: Iterable[str], units: dict[str, str], col: Callable[[str], str]):
        keys = set(keys)
        self.alias = {new: old for old, new in nc.LEGACY_METRICS.items() if old in keys and new not in keys}
        self.keys = keys | set(self.alias)
        self.units = {**units, **{new: units.get(old, "") for new, old in self.alias.items()}}
        self._col = col
        self._n = 0

    def raw(self, name: str) -> pl.Expr:
        if name not in self.keys:
            return _NULL_F
        return pl.col(self._col(self.alias.get(name, name)))

    def get(self, name: str) -> pl.Expr:
        return to_base(self.raw(name), self.units.get(name, ""))

    def _put(self, exprs: dict[str, pl.Expr] | pl.Expr) -> list[pl.Expr] | pl.Expr:
        """Materialise expressions as temporary columns; returns references to them."""
        single = isinstance(exprs, pl.Expr)
        items = [exprs] if single else list(exprs.values())
        refs = []
        for e in items:
            self._n += 1
            name = f"_k{self._n}"
            self.frame = self.frame.with_columns(e.alias(name))
            refs.append(pl.col(name))
        return refs[0] if single else refs

    def counter_total(self, base: str) -> tuple[pl.Expr, pl.Expr]:
        """(total, how) as ncu_common._counter_total gives them (materialised)."""
        v = self.raw(base + ".sum")
        rate = self.raw(base + ".sum.per_cycle_elapsed")
        unit = base.split("__", 1)[0]
        cycles = self.raw(f"{unit}__cycles_elapsed.avg")
        hz_name = f"{unit}__cycles_elapsed.avg.per_second"
        hz = to_base(self.raw(hz_name), self.units.get(hz_name, "hz"))
        dur = self.raw("gpu__time_duration.sum")
        dur_s = to_base(dur, self.units.get("gpu__time_duration.sum", "ns")) * 1e-9
        total = (
            pl.when(v.is_not_null()).then(v)
            .when(rate.is_null()).then(_NULL_F)
            .when(cycles.is_not_null()).then(rate * cycles)
            .when(hz.is_null() | dur.is_null()).then(_NULL_F)
            .otherwise(rate * hz * dur_s)
        )
        how = (
            pl.when(v.is_not_null()).then(pl.lit("sum"))
            .when(rate.is_null()).then(_NULL_S)
            .when(cycles.is_not_null()).then(pl.lit("rate*cycles"))
            .when(hz.is_null() | dur.is_null()).then(_NULL_S)
            .otherwise(pl.lit("rate*hz*duration"))
        )
        t, h = self._put({"t": total, "h": how})
        return t, h

    def flop_columns(self) -> dict[str, pl.Expr]:
        out: dict[str, pl.Expr] = {c: _NULL_F for c in nc.FLOP_COLUMNS}
        hows: list[pl.Expr] = []
        counted: list[pl.Expr] = []
        incomplete: list[pl.Expr] = []
        for col, letter, (wa, wm, wf) in nc.VECTOR_PRECISIONS:
            totals = []
            for op in ("add", "mul", "fma"):
                t, how = self.counter_total(f"smsp__sass_thread_inst_executed_op_{letter}{op}_pred_on")
                totals.append(t)
                hows.append(how)
            every = pl.all_horizontal([t.is_not_null() for t in totals])
            some = pl.any_horizontal([t.is_not_null() for t in totals])
            out[col] = self._put(pl.when(every).then(wa * totals[0] + wm * totals[1] + wf * totals[2]))
            counted.append(pl.when(every).then(pl.lit(col[6:])))
            incomplete.append(pl.when(~every & some).then(pl.lit(col[6:])))
        used = [pl.when(pl.any_horizontal([h == k for h in hows]).fill_null(False)).then(pl.lit(k)) for k in ("rate*cycles", "rate*hz*duration", "sum")]
        counted_s, incomplete_s, used_s = self._put({"c": _joined(counted, ","), "i": _joined(incomplete, ","), "u": _joined(used, "/")})
        parts = [
            pl.format("sass-counters({}):{}", used_s, counted_s),
            pl.format("incomplete:{}", incomplete_s),
        ]
        if any(k.startswith(nc._VECTOR_HINT) for k in self.keys):
            parts.append(pl.when(counted_s.is_null() & incomplete_s.is_null()).then(pl.lit("sass-counters:none")))

        tensor, sparse, dense_only, unattributed = self._tensor_flops()
        names = sorted(tensor)
        out.update(tensor)
        any_tensor = pl.any_horizontal([tensor[c].is_not_null() for c in names]) if names else pl.lit(False)
        listed = _joined([pl.when(tensor[c].is_not_null()).then(pl.lit(c[6:-7])) for c in names], ",")
        tensor_part = pl.format("tensor-ops-path{}:{}", pl.when(sparse).then(pl.lit("+sparse")).otherwise(pl.lit("")), listed)
        if any(k.startswith(nc._TENSOR_PCT_HINT) for k in self.keys):
            tensor_part = pl.when(any_tensor).then(tensor_part).otherwise(pl.lit("tensor:unknown(pct-or-inst-only)"))
        else:
            tensor_part = pl.when(any_tensor).then(tensor_part)
        parts.append(tensor_part)
        parts.append(pl.format("dense-only:{}", _joined(dense_only, ",")))
        parts.append(pl.format("not-attributed:{}", _joined(unattributed, ",")))

        acc = _NULL_F
        for c in nc.FLOAT_FLOP_COLUMNS:  # sum() of the present ones, left to right from 0
            f = out[c]
            acc = self._put(pl.when(f.is_null()).then(acc).when(acc.is_null()).then(0.0 + f).otherwise(acc + f))
        out["flops_total"] = acc
        out["flops_method"] = _joined(parts, ";")
        return out

    def _tensor_flops(self):
        groups: dict[tuple, dict[str, str]] = {}
        for base in nc.tensor_counter_bases(self.keys):
            m = nc._OPS_PATH.match(base)
            if m:
                groups.setdefault((m.group("op"), m.group("src"), m.group("dst")), {})[m.group("sp") or "all"] = base
        per_col: dict[str, dict[bool, pl.Expr]] = {}
        sparse = pl.lit(False)
        dense: dict[str, list[pl.Expr]] = {}
        unattr: dict[str, list[pl.Expr]] = {}
        for (op, src, _dst), forms in groups.items():
            if "all" in forms:
                total = self.counter_total(forms["all"])[0]
            else:
                on = self.counter_total(forms["on"])[0] if "on" in forms else _NULL_F
                off = self.counter_total(forms["off"])[0] if "off" in forms else _NULL_F
                total = self._put(pl.when(on.is_null() & off.is_null()).then(_NULL_F).otherwise(on.fill_null(0.0) + off.fill_null(0.0)))
                sparse = self._put(sparse | _truthy(on).fill_null(False))
                dense.setdefault(src, []).append(off.is_not_null() & on.is_null())
            col = nc._tensor_column(src)
            if col is None:
                unattr.setdefault(src, []).append(_truthy(total).fill_null(False))
                continue
            slot = per_col.setdefault(col, {})
            prev = slot.get(op is not None)
            # slot[k] = slot.get(k, 0.0) + total, for the groups whose total is known
            if prev is None:
                slot[op is not None] = self._put(pl.when(total.is_not_null()).then(0.0 + total))
            else:
                slot[op is not None] = self._put(pl.when(total.is_null()).then(prev).otherwise(prev.fill_null(0.0) + total))
        tensor = {}
        for col, t in per_col.items():
            if False in t and True in t:
                tensor[col] = self._put(pl.when(t[False].is_not_null()).then(t[False]).otherwise(t[True]))
            else:
                tensor[col] = t[False] if False in t else t[True]
        dense_only = [pl.when(pl.any_horizontal(v)).then(pl.lit(s)) for s, v in sorted(dense.items())]
        unattributed = [pl.when(pl.any_horizontal(v)).then(pl.lit(s)) for s, v in sorted(unattr.items())]
        return tensor, sparse, dense_only, unattributed

    def apply(self, frame: pl.DataFrame, display_name: pl.Expr | None = None) -> pl.DataFrame:
        """derive_kernel_columns' row for every kernel of `frame`, one column each."""
        self.frame = frame
        get = self.get
        row: dict[str, pl.Expr] = {}
        dur = self._put(get("gpu__time_duration.sum"))
        row["duration_ns"] = dur
        for col, metric, kind in nc.KERNEL_METRIC_COLUMNS:  # the per-kernel reader's own table
            row[col] = _int(get(metric)) if kind == "int" else get(metric)
        st, dy = self._put({"s": _int(get("launch__shared_mem_per_block_static")), "d": _int(get("launch__shared_mem_per_block_dynamic"))})
        row["static_shared_mem_bytes"] = st
        row["dynamic_shared_mem_bytes"] = dy
        both = (st.cast(pl.Int128) + dy.cast(pl.Int128)).cast(pl.Int64, strict=False)
        # `x is not None` in derive: an integer beyond Int64 is set there (null only in the frame)
        st_set = get("launch__shared_mem_per_block_static").is_finite() & get("launch__shared_mem_per_block_dynamic").is_finite()
        row["shared_mem_bytes"] = pl.when(st_set).then(both).otherwise(_int(get("launch__shared_mem_per_block")))
        dev = get("launch__device_id")
        row["device_id"] = pl.when(dev.is_finite()).then(_int(dev)).otherwise(_int(get("device__attribute_device_index")))
        metric_of = {c: m for c, m, _ in nc.KERNEL_METRIC_COLUMNS}
        for name in ("grid_x", "block_x", "grid_size", "block_size"):
            row[f"_set_{name}"] = get(metric_of[name]).is_finite().fill_null(False)

        rd, wr, total, rate = self._put({
            "r": get("dram__bytes_read.sum"), "w": get("dram__bytes_write.sum"), "t": get("dram__bytes.sum"), "p": get("dram__bytes.sum.per_second"),
        })
        row["dram_read_bytes"], row["dram_write_bytes"] = rd, wr
        rw = rd.is_not_null() & wr.is_not_null()
        by_rate = rate.is_not_null() & dur.is_not_null()
        row["dram_bytes"] = pl.when(total.is_not_null()).then(total).when(rw).then(rd + wr).when(by_rate).then(rate * dur * 1e-9).otherwise(_NULL_F)
        row["dram_bytes_method"] = (
            pl.when(total.is_not_null()).then(pl.lit("sum")).when(rw).then(pl.lit("read+write")).when(by_rate).then(pl.lit("rate*duration")).otherwise(_NULL_S)
        )
        for col, level in (("l2_bytes", "lts"), ("l1_bytes", "l1tex")):
            b, sec = get(f"{level}__t_bytes.sum"), get(f"{level}__t_sectors.sum")
            row[col] = pl.when(b.is_not_null()).then(b).otherwise(sec * 32.0)
        row.update(self.flop_columns())

        def per_dur(cyc: pl.Expr) -> pl.Expr:
            return pl.when(cyc.is_not_null() & _truthy(dur)).then(cyc / (dur * 1e-9))

        row["sm_clock_hz"] = pl.coalesce(
            get("gpc__cycles_elapsed.avg.per_second"),
            per_dur(get("gpc__cycles_elapsed.max")),
            get("sm__cycles_elapsed.avg.per_second"),
            get("smsp__cycles_elapsed.avg.per_second"),
            per_dur(get("sm__cycles_elapsed.avg")),
        )
        row["mem_clock_hz"] = pl.coalesce(get("dram__cycles_elapsed.avg.per_second"), per_dur(get("dram__cycles_elapsed.avg")))
        row["device_name"] = display_name if display_name is not None and "device__attribute_display_name" in self.keys else _NULL_S
        out = self.frame.select([v.alias(k) for k, v in row.items()])
        self.frame = None
        return out
