"""Attach XLA cost analysis (`jax.stages.Compiled.cost_analysis()`) to profiles and benchmarks.

Most XLA GPU traces carry no FLOP or byte counts (TPU traces do), so XLA ops have no roofline
position. XLA's own cost analysis of the compiled program supplies them:

    compiled = jax.jit(f).lower(x).compile()
    ps = profaudit.load("logdir")
    ps = profaudit.xla.attach_cost_analysis(ps, compiled)           # module taken from `compiled`
    profaudit.xla.save_cost_analysis(compiled, "cost.json")          # the file form the CLI takes

How the cost is distributed:

- Per module (the default; `op=None`): `cost_analysis()` describes one execution of the whole
  module. The module's executions in the profile are found (distinct `run_id`s where XLA
  recorded them, else the module's `XLA Modules` ranges, else the n-th occurrence of each op), and
  each execution gets the whole per-execution cost, spread over that execution's op rows in
  proportion to their device time. A module that ran five times as five rows gives each row the
  module's FLOPs. Rows sit at their execution's average arithmetic intensity: a module-level
  roofline position, not a per-kernel one.
  `flops_method`/`dram_bytes_method` = "cost-analysis:module-execution".
- One module name can cover several compiled programs (jax compiles `jit_matmul` again for new
  shapes; xplane records each row's `program_id`). A cost analysis describes one of them, so such
  a module must be named with its program: `module="jit_matmul(19)"`.
- Per op (`op="fusion.3"`): the cost describes one execution of that HLO instruction and is set
  on every row of that op ("cost-analysis:op").

Rows that already have numbers (TPU traces record per-op costs) keep them unless
`overwrite=True`. A profile with no matching op rows (a timing log of the jitted function) gets
the per-call cost in its metadata (`xla_cost_analysis`) instead, for per-iteration rooflines.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

import polars as pl

from profaudit.errors import InputError, UsageError
from profaudit.profile import Profile, ProfileSet

_MODULE_RE = re.compile(r"^\s*HloModule\s+([^\s,]+)", re.M)
COST_FILE_FORMAT = "profaudit-xla-cost"


def normalise_cost(cost: Any) -> dict[str, float]:
    """One flat dict from what `cost_analysis()` returned (a dict; older jax: a list of one dict
    per device/partition, summed), or from a `Compiled` object. Keys are kept as XLA spells them
    ("flops", "bytes accessed", "transcendentals", "bytes accessed0{}", ...)."""
    if hasattr(cost, "cost_analysis"):
        cost = cost.cost_analysis()
    if isinstance(cost, (list, tuple)):
        merged: dict[str, float] = {}
        for part in cost:
            for k, v in (part or {}).items():
                if isinstance(v, (int, float)):
                    merged[k] = merged.get(k, 0.0) + float(v)
        return merged
    if isinstance(cost, dict):
        return {str(k): float(v) for k, v in cost.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    raise UsageError(f"cost analysis must be a dict, a list of dicts or a jax Compiled object, not {type(cost).__name__}")


def module_name_of(compiled: Any) -> str | None:
    """The HLO module name of a jax `Compiled` (e.g. "jit_f"), from its HLO text."""
    try:
        text = compiled.as_text()
    except Exception:
        return None
    m = _MODULE_RE.search(text or "")
    return m.group(1) if m else None


def _flops(cost: dict) -> float | None:
    v = cost.get("flops")
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) or v < 0 else float(v)


def _bytes(cost: dict) -> float | None:
    v = cost.get("bytes accessed", cost.get("bytes_accessed"))
    return None if v is None or v < 0 else float(v)


def _executions(profile: Profile, rows: pl.DataFrame, module: str) -> tuple[int, str]:
    """How many times the module ran in this profile, and how that was decided."""
    metrics = profile.tables["metrics"]
    if metrics.height:
        runs = metrics.filter(pl.col("kernel_id").is_in(rows["kernel_id"].implode()) & (pl.col("metric") == "run_id"))
        if runs.height:
            vals = runs.select(pl.coalesce(pl.col("value_str"), pl.col("value").cast(pl.Utf8))).to_series()
            return vals.n_unique(), "distinct run_id"
    ranges = profile.tables["ranges"]
    if ranges.height:
        mods = ranges.filter((pl.col("kind") == "xla_module") & (pl.col("name").str.replace(r"\(\d+\)$", "") == module))
        if mods.height:
            per_dev = mods.group_by("device_id").len()["len"]
            return int(per_dev.max()), "XLA Modules ranges"
    counts = Counter(rows["op_name"].fill_null(rows["name"]).to_list())
    # the count most ops share; on a tie the smaller one, since an op in a loop body runs a
    # multiple of the executions (body.1 six times, reduce.2 three: three executions)
    freq = Counter(counts.values())
    mode = min(freq, key=lambda c: (-freq[c], c))
    return int(mode), "most common per-op occurrence count"


def _execution_keys(profile: Profile, rows: pl.DataFrame, module: str, how: str, n_exec: int) -> pl.DataFrame:
    """kernel_id -> which execution of the module the row belongs to (`_exec`), decided the way the
    executions were counted: the row's run_id, the XLA Modules range around its start, or (no
    grouping recorded) the n-th occurrence of its op in time order."""
    if how == "distinct run_id":
        m = profile.tables["metrics"]
        runs = m.filter(pl.col("kernel_id").is_in(rows["kernel_id"].implode()) & (pl.col("metric") == "run_id"))
        keys = runs.select("kernel_id", pl.coalesce(pl.col("value_str"), pl.col("value").cast(pl.Utf8)).alias("_exec")).unique("kernel_id")
        return rows.select("kernel_id").join(keys, on="kernel_id", how="left")
    if how == "XLA Modules ranges":
        r = profile.tables["ranges"]
        mods = r.filter((pl.col("kind") == "xla_module") & (pl.col("name").str.replace(r"\(\d+\)$", "") == module)).select("range_id", "start_ns", "end_ns", "device_id")
        out = []
        for kid, start, dev in rows.select("kernel_id", "start_ns", "device_id").iter_rows():
            hit = mods.filter((pl.col("start_ns") <= start) & (pl.col("end_ns") >= start) & (pl.col("device_id").is_null() | pl.lit(dev is None) | (pl.col("device_id") == dev))) if start is not None else mods.head(0)
            out.append((kid, f"r{hit['range_id'][0]}" if hit.height else None))
        return pl.DataFrame(out, schema={"kernel_id": pl.Int64, "_exec": pl.Utf8}, orient="row")
    # no grouping recorded: the i-th of an op's c rows belongs to execution floor(i * n / c), so
    # there are never more executions than were counted (an op in a loop body runs several times
    # per execution; numbering its rows 0..c-1 made each of them an execution of its own and
    # gave the module's FLOPs c times)
    op = pl.col("op_name").fill_null(pl.col("name"))
    i, c = pl.int_range(pl.len()).over(op), pl.len().over(op)
    exec_no = pl.when(c > n_exec).then((i * n_exec) // c).otherwise(i)
    return rows.sort("start_ns", nulls_last=True).select("kernel_id", exec_no.cast(pl.Utf8).alias("_exec"))


_PROGRAM_RE = re.compile(r"^(.*)\((\d+)\)$")


def _programs(profile: Profile, rows: pl.DataFrame) -> pl.DataFrame:
    """kernel_id -> the XLA program id the row ran in (`_program`, text), where the trace records
    one (xplane's `program_id` stat): one module name can cover several compiled programs."""
    m = profile.tables["metrics"]
    if not m.height or not rows.height:
        return pl.DataFrame(schema={"kernel_id": pl.Int64, "_program": pl.Utf8})
    ids = m.filter(pl.col("kernel_id").is_in(rows["kernel_id"].implode()) & (pl.col("metric") == "program_id"))
    v = pl.coalesce(pl.col("value_int").cast(pl.Utf8), pl.col("value").cast(pl.Int64, strict=False).cast(pl.Utf8), pl.col("value_str"))
    return ids.select("kernel_id", v.alias("_program")).drop_nulls().unique("kernel_id")


def _one_program(profile: Profile, rows: pl.DataFrame, module: str, program: str | None) -> pl.DataFrame:
    """The rows of one compiled program. A cost analysis describes one compiled program; a module
    name that jax compiled several times (other shapes or options: `jit_matmul` as programs 19,
    32 and 59) has no single per-execution cost, so spreading one over all of them would count
    each program's executions with another program's FLOPs. `module(ID)` picks one."""
    progs = _programs(profile, rows)
    if program is not None:
        keep = progs.filter(pl.col("_program") == program)["kernel_id"]
        if keep.is_empty():
            have = sorted(set(progs["_program"].to_list()), key=int)
            raise UsageError(f"module {module!r} has no rows of program {program} in profile {profile.profile_id}" + (f"; its programs: {', '.join(have)}" if have else " (the trace records no program ids)"))
        return rows.filter(pl.col("kernel_id").is_in(keep.implode()))
    counts = progs.group_by("_program").len().sort(pl.col("_program").cast(pl.Int64))
    if counts.height > 1:
        listing = ", ".join(f"{pid} ({n} {'row' if n == 1 else 'rows'})" for pid, n in counts.iter_rows())
        raise UsageError(
            f"module {module!r} ran as {counts.height} compiled programs in profile {profile.profile_id} (program ids {listing}): "
            f"a cost analysis belongs to one; say which, as module '{module}({counts['_program'][0]})' (--module '{module}({counts['_program'][0]})')"
        )
    return rows


def _attach_one(profile: Profile, cost: dict, module: str | None, op: str | None, overwrite: bool) -> Profile:
    k = profile.tables["kernels"]
    flops, nbytes = _flops(cost), _bytes(cost)
    if flops is None and nbytes is None:
        raise UsageError("cost analysis has neither 'flops' nor 'bytes accessed'")
    program = None
    if module is not None and (pm := _PROGRAM_RE.match(module)) and not (k.height and k.filter(pl.col("module") == module).height):
        module, program = pm.group(1), pm.group(2)  # 'jit_matmul(19)': program 19 of module jit_matmul
    sel = pl.lit(True)
    if module is not None:
        sel = sel & (pl.col("module") == module)
    if op is not None:
        sel = sel & ((pl.col("op_name") == op) | (pl.col("name") == op))
    rows = k.filter(sel) if k.height and (module is not None or op is not None) else k.head(0)
    if rows.height and module is not None and (op is None or program is not None):
        rows = _one_program(profile, rows, module, program)
        sel = pl.col("kernel_id").is_in(rows["kernel_id"].implode())
    md = dict(profile.metadata)
    record = {"module": module, "op": op, "flops": flops, "bytes_accessed": nbytes,
              "transcendentals": cost.get("transcendentals"), "raw": cost}
    if rows.height == 0:
        md.setdefault("xla_cost_analysis", [])
        md["xla_cost_analysis"] = list(md["xla_cost_analysis"]) + [{**record, "applied_to": "metadata (no matching op rows)", "per": "call"}]
        return Profile(profile.profile_id, md, dict(profile.tables))
    if op is not None:
        method = "cost-analysis:op"
        row_flops = pl.lit(flops, dtype=pl.Float64)
        row_bytes = pl.lit(nbytes, dtype=pl.Float64)
        record.update(applied_to=f"{rows.height} rows of op {op}", per="op execution")
    else:
        n_exec, how = _executions(profile, rows, module)
        keys = _execution_keys(profile, rows, module, how, n_exec)
        # Each execution carries the module's whole per-execution cost, spread over that
        # execution's rows by device time: a module run five times as five single rows gives each
        # row the module's FLOPs, not a fifth of five times them in proportion to time. Rows whose
        # execution is unknown share what the known executions leave of the n_exec total.
        grouped = rows.select("kernel_id", "duration_ns").join(keys, on="kernel_id", how="left")
        grouped = grouped.with_columns(pl.col("_exec").fill_null("?"))
        d = pl.col("duration_ns").fill_null(0)
        tot = d.sum().over("_exec")
        cnt = pl.len().over("_exec")
        known = grouped.filter(pl.col("_exec") != "?")["_exec"].n_unique()
        weight = pl.when(pl.col("_exec") == "?").then(pl.lit(float(max(n_exec - known, 0)))).otherwise(pl.lit(1.0))
        share_df = grouped.select("kernel_id", (pl.when(tot > 0).then(d / tot).otherwise(1.0 / cnt) * weight).alias("_share"))
        k = k.join(share_df, on="kernel_id", how="left")
        share = pl.col("_share").fill_null(0.0)
        method = "cost-analysis:module-execution"
        row_flops = share * flops if flops is not None else pl.lit(None, dtype=pl.Float64)
        row_bytes = share * nbytes if nbytes is not None else pl.lit(None, dtype=pl.Float64)
        record.update(applied_to=f"{rows.height} rows of module {module}" + (f" program {program}" if program else ""), executions=n_exec, executions_from=how,
                      per="module execution: each execution's rows share its cost by device time")
    hit = sel
    fill_f = hit & (pl.col("flops_total").is_null() | pl.lit(overwrite)) & pl.lit(flops is not None)
    fill_b = hit & (pl.col("dram_bytes").is_null() | pl.lit(overwrite)) & pl.lit(nbytes is not None)
    new_k = k.with_columns(
        pl.when(fill_f).then(row_flops).otherwise(pl.col("flops_total")).alias("flops_total"),
        pl.when(fill_f).then(pl.lit(method)).otherwise(pl.col("flops_method")).alias("flops_method"),
        pl.when(fill_b).then(row_bytes).otherwise(pl.col("dram_bytes")).alias("dram_bytes"),
        pl.when(fill_b).then(pl.lit(None, dtype=pl.Float64)).otherwise(pl.col("dram_read_bytes")).alias("dram_read_bytes"),
        pl.when(fill_b).then(pl.lit(None, dtype=pl.Float64)).otherwise(pl.col("dram_write_bytes")).alias("dram_write_bytes"),
        pl.when(fill_b).then(pl.lit(method)).otherwise(pl.col("dram_bytes_method")).alias("dram_bytes_method"),
    ).drop("_share", strict=False)
    tables = dict(profile.tables)
    tables["kernels"] = new_k
    md["xla_cost_analysis"] = list(md.get("xla_cost_analysis") or []) + [record]
    return Profile(profile.profile_id, md, tables)


def attach_cost_analysis(target: Profile | ProfileSet, cost: Any, *, module: str | None = None, op: str | None = None,
                         overwrite: bool = False, profile_ids: Iterable[str] | None = None) -> Profile | ProfileSet:
    """Return `target` with XLA cost-analysis FLOPs and bytes on the matching op rows.

    `cost` is what `Compiled.cost_analysis()` returned, or the `Compiled` itself (its module name
    then becomes the default `module`). Without `module` the profile must hold exactly one HLO
    module. See the module docstring for how the cost is spread.
    """
    if module is None and hasattr(cost, "as_text"):
        module = module_name_of(cost)
    c = normalise_cost(cost)
    profiles = [target] if isinstance(target, Profile) else list(target)
    wanted = set(profile_ids) if profile_ids is not None else None
    out = []
    for p in profiles:
        if wanted is not None and p.profile_id not in wanted:
            out.append(p)
            continue
        mod = module
        if mod is None and op is None:
            mods = [m for m in p.tables["kernels"]["module"].drop_nulls().unique().to_list()]
            if len(mods) > 1:
                raise UsageError(f"profile {p.profile_id} holds {len(mods)} HLO modules ({', '.join(sorted(mods)[:6])}{'...' if len(mods) > 6 else ''}); say which one the cost belongs to (module=...)")
            mod = mods[0] if mods else None
        out.append(_attach_one(p, c, mod, op, overwrite))
    if isinstance(target, Profile):
        return out[0]
    return ProfileSet(out, skipped=target.skipped)


# --------------------------------------------------------------------------------------------
# the file form


def save_cost_analysis(cost: Any, path: str | Path, *, module: str | None = None, op: str | None = None) -> Path:
    """Write cost analysis as JSON the CLI (`profaudit xla-cost`) and `load_cost_file` read."""
    from profaudit.dataset import atomic_write_text

    if module is None and hasattr(cost, "as_text"):
        module = module_name_of(cost)
    entry = {"module": module, "op": op, "cost": normalise_cost(cost)}
    doc = {"format": COST_FILE_FORMAT, "version": 1, "entries": [entry]}
    atomic_write_text(Path(path), json.dumps(doc, indent=1, sort_keys=True))
    return Path(path)


def load_cost_file(path: str | Path) -> list[dict]:
    """Entries `{"module", "op", "cost"}` from a cost file: our format, or the bare JSON dump of
    `cost_analysis()` (a dict or a list of dicts; module/op then come from the caller)."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise InputError(path, f"not valid JSON: {exc}") from None
    if isinstance(doc, dict) and doc.get("format") == COST_FILE_FORMAT:
        entries = doc.get("entries")
        if not isinstance(entries, list) or not entries:
            raise InputError(path, "cost file has no entries")
        out = []
        for i, e in enumerate(entries):
            if not isinstance(e, dict) or not isinstance(e.get("cost"), (dict, list)):
                raise InputError(path, f"entry {i} has no 'cost' object")
            out.append({"module": e.get("module"), "op": e.get("op"), "cost": normalise_cost(e["cost"])})
        return out
    if isinstance(doc, (dict, list)):
        try:
            c = normalise_cost(doc)
        except UsageError as exc:
            raise InputError(path, str(exc)) from None
        if _flops(c) is None and _bytes(c) is None:
            raise InputError(path, "not a cost analysis: no 'flops' or 'bytes accessed' key")
        return [{"module": None, "op": None, "cost": c}]
    raise InputError(path, "not a cost analysis JSON object")


def attach_cost_file(target: Profile | ProfileSet, path: str | Path, *, module: str | None = None, op: str | None = None,
                     overwrite: bool = False) -> Profile | ProfileSet:
    """`attach_cost_analysis` for every entry of a cost file (module/op arguments fill gaps)."""
    for e in load_cost_file(path):
        target = attach_cost_analysis(target, e["cost"], module=e["module"] or module, op=e["op"] or op, overwrite=overwrite)
    return target
