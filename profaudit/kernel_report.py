"""One kernel as an analysis view: what Nsight Compute's Details page shows, computed from the
metrics a profile holds, plus what any trace says about the kernel's launches.

For an ncu kernel the sections follow ncu's section identifiers (`SpeedOfLight`, `LaunchStats`,
`Occupancy`, `SchedulerStats`, `WarpStateStats`, `ComputeWorkloadAnalysis`, `InstructionStats`,
`MemoryWorkloadAnalysis`) and read the metrics those sections collect; a metric the report lacks
is named with the `--section` that collects it, never shown as zero. ncu's own rule results are
attached to the section that produced them, with their text. For every source (Kineto, nsys, XLA,
ncu) the `Launches` section summarises all launches of the kernel in its profile and `Roofline`
places the chosen launch where FLOPs and bytes are known.

    rep = kernel_report(profaudit.load("run.ncu-rep"), "gemm")
    print(render(rep, "md"))

`compare_kernel_reports(before, after)` puts two reports side by side and ranks what moved.
"""

from __future__ import annotations

import html as _html
import math
import re
import shlex
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import polars as pl

from profaudit.errors import UsageError
from profaudit.names import instance_name
from profaudit.fmt import MISSING, fmt_ns, fmt_num, fmt_pct, fmt_quantity, fmt_x, md_cell, plural

SECTOR_BYTES = 32  # an L1/L2 sector on every NVIDIA GPU since Maxwell


# ---------------------------------------------------------------------------------------------
# The report model
# ---------------------------------------------------------------------------------------------
@dataclass
class Item:
    """One labelled value. `unit` is the tool's unit string (formatted by `fmt_quantity`)."""

    label: str
    value: Any
    unit: str = ""
    metric: str | None = None


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]]


@dataclass
class RuleResult:
    rule: str
    section: str | None
    kind: str | None  # ncu message type: optimization, warning, info, error
    text: str
    speedup_pct: float | None = None
    speedup_kind: str | None = None  # local / global estimate


@dataclass
class Section:
    ident: str  # ncu section identifier, or Launches / Roofline / Rules
    title: str
    items: list[Item] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # metric names this report lacks
    collect: str | None = None  # the `ncu --section` identifiers that collect them, space-separated
    rules: list[RuleResult] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.items or self.tables or self.summary or self.rules)


@dataclass
class KernelReport:
    profile_id: str
    path: str | None
    source: str | None
    device: str | None
    kernel_id: int
    name: str
    short_name: str
    launch_index: int  # 0-based among this kernel's launches in the profile
    launches: int
    sections: list[Section]
    notes: list[str] = field(default_factory=list)

    def section(self, ident: str) -> Section | None:
        return next((s for s in self.sections if s.ident == ident), None)

    def value(self, section: str, label: str) -> Any:
        s = self.section(section)
        it = next((i for i in s.items if i.label == label), None) if s else None
        return it.value if it else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------------------------
# Choosing the kernel
# ---------------------------------------------------------------------------------------------
def _names_matching(k: pl.DataFrame, name: str) -> pl.DataFrame:
    """Exact name or short name first, then a literal substring, then a regular expression."""
    for expr in (
        (pl.col("short_name") == name) | (pl.col("name") == name),
        pl.col("name").str.contains(name, literal=True) | pl.col("short_name").str.contains(name, literal=True),
    ):
        hit = k.filter(expr)
        if hit.height:
            return hit
    try:
        return k.filter(pl.col("name").str.contains(name) | pl.col("short_name").str.contains(name))
    except pl.exceptions.ComputeError:
        return k.head(0)


def select_kernel(ps, name: str | None = None, *, kernel_id: int | None = None, launch: int | None = None, profile: str | None = None) -> dict[str, Any]:
    """The kernels-table row to report on, plus its launch index and launch count.

    `name` matches a kernel (exact, substring, then regex); several distinct kernels matching is a
    UsageError listing them. `launch` picks among that kernel's launches (default: the first);
    `kernel_id` picks a row directly.
    """
    k = ps.kernels
    if profile is not None:
        if profile not in ps:
            raise UsageError(f"--profile {profile!r}: not loaded; profiles: {_listing(list(ps.ids))}")
        k = k.filter(pl.col("profile_id") == profile)
    elif len(ps) > 1:
        raise UsageError(f"{len(ps)} profiles loaded; give one file, or --profile ID ({_listing(list(ps.ids), 5)})")
    where = next(iter(ps)).metadata.get("path") if len(ps) == 1 else profile
    if k.is_empty():
        raise UsageError(f"{where}: no kernels in this profile (timing logs hold samples: `profaudit kernels {where} -t samples`)")
    if kernel_id is not None:
        hit = k.filter(pl.col("kernel_id") == kernel_id)
        if hit.is_empty():
            raise UsageError(f"{where}: no kernel with kernel_id {kernel_id} (ids {k['kernel_id'].min()}..{k['kernel_id'].max()})")
        row = hit.row(0, named=True)
    else:
        if not name:
            distinct = k["short_name"].unique(maintain_order=True)
            if k["name"].null_count() and k.height > 1:
                # no name to choose by: only an id picks one of these
                raise UsageError(f"{where}: {k['name'].null_count()} of its {plural(k.height, 'kernel')} have no recorded name; choose one with --id N ({k['kernel_id'].min()}..{k['kernel_id'].max()})")
            if distinct.len() != 1:
                raise UsageError(f"{where}: {distinct.len()} kernels; choose one with -k NAME: {_listing(distinct.to_list())}")
            hit = k
        else:
            hit = _names_matching(k, name)
        if hit.is_empty():
            named = k["short_name"].drop_nulls().unique(maintain_order=True).to_list()
            ids = f"--id N ({k['kernel_id'].min()}..{k['kernel_id'].max()})"
            raise UsageError(f"{where}: no kernel matches {name!r}; " + (f"kernels: {_listing(named)}" if named else f"its kernels have no recorded names; choose one with {ids}"))
        distinct = hit["name"].unique(maintain_order=True)
        if distinct.len() > 1:
            exact = hit.filter(pl.col("short_name") == name)
            if exact["name"].n_unique() == 1:
                hit = exact
            else:
                raise UsageError(f"-k {name!r} matches {distinct.len()} kernels: {_tell_kernels_apart(hit)}; give a longer name or --id")
        # a name was matched, or the profile's one kernel has none (then it is its only launch)
        launches = (k.filter(pl.col("name") == hit["name"][0]) if hit["name"][0] is not None else hit.head(1)).sort("kernel_id")
        idx = launch or 0
        if not 0 <= idx < launches.height:
            raise UsageError(f"--launch {idx}: {hit['short_name'][0]} has {plural(launches.height, 'launch', 'launches')} (0..{launches.height - 1})")
        row = launches.row(idx, named=True)
    # launches of one kernel share its name; a row without a name (an ncu CSV without the Kernel
    # Name column) is only itself: rows of unknown name need not be one kernel
    same = (k.filter(pl.col("name") == row["name"]) if row["name"] is not None else k.filter(pl.col("kernel_id") == row["kernel_id"])).sort("kernel_id")
    pos = same["kernel_id"].to_list().index(row["kernel_id"])
    return {"row": row, "launch_index": pos, "launches": same}


def _tell_kernels_apart(hit: pl.DataFrame) -> str:
    """The kernels a name matched, as a person can tell them apart and pick one: short names when
    they differ; otherwise each instantiation with its template arguments, its first --id and its
    launch count (three 'cudnn::cnn::wgrad_alg0_engine' listed as one name read as one kernel)."""
    shorts = hit.group_by("name", maintain_order=True).agg(pl.col("short_name").first(), pl.col("kernel_id").min().alias("id"), pl.len().alias("n"))
    if shorts["short_name"].n_unique() == shorts.height:
        return _listing(shorts["short_name"].to_list())
    return _listing([f"{instance_name(r['name'])} (--id {r['id']}, {plural(r['n'], 'launch', 'launches')})" for r in shorts.iter_rows(named=True)], 5)


def _listing(names: Sequence[str], n: int = 8) -> str:
    names = [str(x) for x in names]
    return ", ".join(names[:n]) + (f", … ({len(names) - n} more)" if len(names) > n else "")


# ---------------------------------------------------------------------------------------------
# ncu metrics of one kernel
# ---------------------------------------------------------------------------------------------
class _Metrics:
    """The aggregate metrics of one ncu result by name, and the instanced rows."""

    def __init__(self, m: pl.DataFrame):
        agg = m.filter(pl.col("instance").is_null() & pl.col("kind").is_in(["metric", "launch", "device"]))
        self.values: dict[str, Any] = {}
        self.units: dict[str, str] = {}
        # ncu's CSV "details" export names values by their GUI label within a section title
        # ("Duration" in "GPU Speed Of Light Throughput"); kept apart so a label never shadows a metric
        self.labelled: dict[tuple[str, str], tuple[Any, str]] = {}
        for name, unit, value, vstr, vint, section in agg.select("metric", "unit", "value", "value_str", "value_int", "section").iter_rows():
            v = vint if vint is not None else (value if value is not None else vstr)
            if section is not None and "__" not in name:
                self.labelled[(section.strip().lower(), name.strip().lower())] = (v, unit or "")
                continue
            self.values[name] = v
            self.units[name] = unit or ""
        self.instanced = m.filter(pl.col("instance").is_not_null())
        self.rules = m.filter(pl.col("kind") == "rule")

    def get(self, *names: str) -> tuple[Any, str | None]:
        for n in names:
            v = self.values.get(n)
            if v is not None:
                return v, n
        return None, None

    def num(self, *names: str) -> float | None:
        v, _ = self.get(*names)
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        return float(v) if ok else None


# (label, metric names in order of preference); the first listed name is what a missing line names
SOL_ITEMS = (
    ("Duration", ("gpu__time_duration.sum",)),
    ("Compute (SM) Throughput", ("sm__throughput.avg.pct_of_peak_sustained_elapsed",)),
    ("Memory Throughput", ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",)),
    ("L1/TEX Cache Throughput", ("l1tex__throughput.avg.pct_of_peak_sustained_active",)),
    ("L2 Cache Throughput", ("lts__throughput.avg.pct_of_peak_sustained_elapsed",)),
    ("DRAM Throughput", ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "dram__throughput.avg.pct_of_peak_sustained_elapsed")),
    ("Elapsed Cycles", ("gpc__cycles_elapsed.max",)),
    ("SM Active Cycles", ("sm__cycles_active.avg",)),
    ("SM Frequency", ("gpc__cycles_elapsed.avg.per_second",)),
    ("DRAM Frequency", ("dram__cycles_elapsed.avg.per_second",)),
)
LAUNCH_ITEMS = (
    ("Grid Size", ("launch__grid_size",)),
    ("Block Size", ("launch__block_size",)),
    ("Threads", ("launch__thread_count",)),
    ("Registers Per Thread", ("launch__registers_per_thread",)),
    ("Static Shared Memory Per Block", ("launch__shared_mem_per_block_static",)),
    ("Dynamic Shared Memory Per Block", ("launch__shared_mem_per_block_dynamic",)),
    ("Driver Shared Memory Per Block", ("launch__shared_mem_per_block_driver",)),
    ("Shared Memory Configuration Size", ("launch__shared_mem_config_size",)),
    ("# SMs", ("launch__sm_count", "device__attribute_multiprocessor_count")),
    ("Waves Per SM", ("launch__waves_per_multiprocessor",)),
    ("Stream", ("launch__stream_id",)),
    ("Cluster Size", ("launch__cluster_size",)),
)
# metrics only newer ncu versions or GPUs record (barrier limit since 2023.x, clusters on Hopper):
# their absence says nothing is missing from the capture
OPTIONAL_METRICS = frozenset({"launch__occupancy_limit_barriers", "launch__cluster_size"})
OCCUPANCY_ITEMS = (
    ("Theoretical Occupancy", ("sm__maximum_warps_per_active_cycle_pct",)),
    ("Theoretical Active Warps per SM", ("sm__maximum_warps_avg_per_active_cycle",)),
    ("Achieved Occupancy", ("sm__warps_active.avg.pct_of_peak_sustained_active",)),
    ("Achieved Active Warps Per SM", ("sm__warps_active.avg.per_cycle_active",)),
    ("Block Limit Registers", ("launch__occupancy_limit_registers",)),
    ("Block Limit Shared Mem", ("launch__occupancy_limit_shared_mem",)),
    ("Block Limit Warps", ("launch__occupancy_limit_warps",)),
    ("Block Limit SM", ("launch__occupancy_limit_blocks",)),
    ("Block Limit Barriers", ("launch__occupancy_limit_barriers",)),
)
SCHEDULER_ITEMS = (
    ("One or More Eligible", ("smsp__issue_active.avg.pct_of_peak_sustained_active",)),
    ("No Eligible", ("smsp__issue_inst0.avg.pct_of_peak_sustained_active",)),
    ("Active Warps Per Scheduler", ("smsp__warps_active.avg.per_cycle_active",)),
    ("Eligible Warps Per Scheduler", ("smsp__warps_eligible.avg.per_cycle_active",)),
    ("Issued Warp Per Scheduler", ("smsp__issue_active.avg.per_cycle_active",)),
)
WARP_ITEMS = (
    ("Warp Cycles Per Issued Instruction", ("smsp__average_warp_latency_per_inst_issued.ratio",)),
    ("Warp Cycles Per Executed Instruction", ("smsp__average_warps_active_per_inst_executed.ratio",)),
    ("Avg. Active Threads Per Warp", ("smsp__thread_inst_executed_per_inst_executed.ratio",)),
    ("Avg. Not Predicated Off Threads Per Warp", ("smsp__thread_inst_executed_pred_on_per_inst_executed.ratio",)),
)
COMPUTE_ITEMS = (
    ("Executed Ipc Active", ("sm__inst_executed.avg.per_cycle_active",)),
    ("Executed Ipc Elapsed", ("sm__inst_executed.avg.per_cycle_elapsed",)),
    ("Issue Slots Busy", ("sm__instruction_throughput.avg.pct_of_peak_sustained_active", "sm__inst_issued.avg.pct_of_peak_sustained_active")),
)
INSTRUCTION_ITEMS = (
    ("Executed Instructions", ("smsp__inst_executed.sum",)),
    ("Issued Instructions", ("smsp__inst_issued.sum",)),
)
MEMORY_ITEMS = (
    ("Memory Throughput", ("dram__bytes.sum.per_second",)),
    ("L1/TEX Hit Rate", ("l1tex__t_sector_hit_rate.pct",)),
    ("L2 Hit Rate", ("lts__t_sector_hit_rate.pct",)),
    ("DRAM Read", ("dram__bytes_read.sum",)),
    ("DRAM Write", ("dram__bytes_write.sum",)),
)

_LIMITERS = {
    "Block Limit Registers": "registers",
    "Block Limit Shared Mem": "shared memory",
    "Block Limit Warps": "warps (block size)",
    "Block Limit SM": "blocks per SM",
    "Block Limit Barriers": "barriers",
}
# where a breakdown metric's unit prefix sits in the memory/compute hierarchy, in ncu's words
_UNIT_NAMES = {
    "dram": "DRAM", "fbpa": "DRAM (FB partition)", "lts": "L2", "l1tex": "L1/TEX", "ltc": "L2", "idc": "IDC (indexed constant cache)",
    "sm": "SM", "smsp": "SM sub-partition", "tpc": "TPC", "gpc": "GPC", "xbar": "crossbar", "pcie": "PCIe", "nvlink": "NVLink",
}
_SOL_BALANCED_POINTS = 10.0  # both sides high and this close: neither alone binds
_SOL_LATENCY_PCT = 60.0  # ncu's SOLBottleneck rule: neither unit above 60% of peak reads as latency-bound


def _items(section: Section, mx: _Metrics, spec) -> None:
    for label, names in spec:
        v, used = mx.get(*names)
        if v is None and (hit := mx.labelled.get((section.title.lower(), label.lower()))) is not None:
            section.items.append(Item(label, hit[0], hit[1], f"{section.title}: {label} (ncu CSV)"))
            continue
        if v is None:
            if names[0] not in OPTIONAL_METRICS:
                section.missing.append(names[0])
            continue
        section.items.append(Item(label, v, mx.units.get(used, ""), used))


def _num(section: Section, label: str) -> float | None:
    """A numeric item of `section` by its label (whatever source supplied it)."""
    it = next((i for i in section.items if i.label == label), None)
    v = it.value if it else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _section(ident: str, title: str, mx: _Metrics, spec, collect: str | None = None) -> Section:
    s = Section(ident, title, collect=collect or ident)
    _items(s, mx, spec)
    return s


def _breakdown(mx: _Metrics, base: str) -> list[tuple[str, float]]:
    """ncu's SOL breakdown of `base` (a `breakdown:` metric listing the sub-unit metrics), largest
    first, with the values the report holds."""
    raw = mx.values.get(f"breakdown:{base}")
    if not isinstance(raw, str):
        return []
    out = []
    for n in raw.split(","):
        v = mx.num(n.strip())
        if v is not None:
            out.append((n.strip(), v))
    return sorted(out, key=lambda t: -t[1])


def _unit_of(metric: str) -> str:
    return _UNIT_NAMES.get(metric.split("__", 1)[0], metric.split("__", 1)[0])


def _sol(mx: _Metrics) -> Section:
    s = _section("SpeedOfLight", "GPU Speed Of Light Throughput", mx, SOL_ITEMS)
    sm = _num(s, "Compute (SM) Throughput")
    mem = _num(s, "Memory Throughput")
    if sm is not None and mem is not None:
        side, top = ("compute", sm) if sm >= mem else ("memory", mem)
        if min(sm, mem) >= _SOL_LATENCY_PCT and abs(sm - mem) < _SOL_BALANCED_POINTS:
            s.summary.append(f"Balanced: compute ({fmt_pct(sm)}) and memory ({fmt_pct(mem)}) are both high; less of both work and traffic is the way down")
        elif top < _SOL_LATENCY_PCT:
            s.summary.append(
                f"Neither compute ({fmt_pct(sm)}) nor memory ({fmt_pct(mem)}) reaches {_SOL_LATENCY_PCT:.0f}% of peak: "
                "latency-bound (too little parallel work, stalls or launch overhead), not throughput-bound"
            )
        else:
            s.summary.append(f"{side.capitalize()}-bound: {side} throughput {fmt_pct(top)} of peak (the other: {fmt_pct(mem if side == 'compute' else sm)})")
    rows = []
    for base, what in (("sm__throughput.avg.pct_of_peak_sustained_elapsed", "compute"), ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "memory")):
        parts = _breakdown(mx, base)
        if parts:
            name, v = parts[0]
            s.summary.append(f"Binding {what} unit: {_unit_of(name)} ({name} at {fmt_pct(v)})")
        rows += [[what, _unit_of(n), n, fmt_pct(v)] for n, v in parts[:5]]
    if rows:
        s.tables.append(Table("SOL breakdown (top units per side)", ["side", "unit", "metric", "% of peak"], rows))
    return s


def _launch(mx: _Metrics) -> Section:
    s = _section("LaunchStats", "Launch Statistics", mx, LAUNCH_ITEMS)
    dims = []
    for kind in ("grid", "block"):
        xyz = [mx.num(f"launch__{kind}_dim_{a}") for a in "xyz"]
        if all(v is not None for v in xyz):
            dims.append(Item(f"{kind.capitalize()} Dimensions", "(" + ", ".join(str(int(v)) for v in xyz) + ")", "", f"launch__{kind}_dim_x/y/z"))
    s.items[2:2] = dims
    waves = mx.num("launch__waves_per_multiprocessor")
    if waves is not None and waves < 1:
        s.summary.append(f"The grid fills {fmt_num(waves)} of one wave: some SMs stay idle")
    return s


def _occupancy(mx: _Metrics) -> Section:
    s = _section("Occupancy", "Occupancy", mx, OCCUPANCY_ITEMS)
    theo = _num(s, "Theoretical Occupancy")
    ach = _num(s, "Achieved Occupancy")
    limits = {lab: _num(s, lab) for lab in _LIMITERS}
    known = {lab: v for lab, v in limits.items() if v is not None}
    if known:
        low = min(known.values())
        who = [_LIMITERS[lab] for lab, v in known.items() if v == low]
        s.summary.append(f"Limiter: {' and '.join(who)} ({plural(int(low), 'block') if float(low).is_integer() else fmt_num(low) + ' blocks'} per SM)")
    if theo is not None and ach is not None:
        s.summary.append(f"Achieved {fmt_pct(ach)} of {fmt_pct(theo)} theoretical ({theo - ach:.1f} points below theoretical: imbalance, tail effect or launch overhead)")
    return s


_STALL = re.compile(r"^smsp__average_warps_issue_stalled_(.+)_per_issue_active\.ratio$")
_PCSAMP = re.compile(r"^smsp__pcsamp_warps_issue_stalled_(.+)$")


def stall_reasons(mx: _Metrics) -> tuple[list[tuple[str, float]], str]:
    """Warp stall reasons, largest first: (reason, cycles per issued instruction) from
    WarpStateStats, else (reason, samples) from SourceCounters' PC sampling."""
    got = [(m.group(1), float(v)) for n, v in mx.values.items() if (m := _STALL.match(n)) and isinstance(v, (int, float))]
    if got:
        return sorted(got, key=lambda t: -t[1]), "cycles per issued instruction"
    got = [(m.group(1), float(v)) for n, v in mx.values.items() if (m := _PCSAMP.match(n)) and not n.endswith("_not_issued") and isinstance(v, (int, float))]
    return sorted(got, key=lambda t: -t[1]), "PC samples"


def _warp_state(mx: _Metrics) -> Section:
    s = _section("WarpStateStats", "Warp State Statistics", mx, WARP_ITEMS)
    reasons, what = stall_reasons(mx)
    # "selected" is the cycle the warp issued: ncu lists it, but it is not a stall
    stalls = [(r, v) for r, v in reasons if r != "selected"]
    total = sum(v for _, v in stalls)
    if stalls and total > 0:
        s.tables.append(Table(f"Warp stall reasons ({what}, ranked)", ["reason", what, "share"], [[r, fmt_num(v), fmt_pct(100 * v / total)] for r, v in stalls if v > 0]))
        top, v = stalls[0]
        s.summary.append(f"Top stall: {top} ({fmt_pct(100 * v / total)} of stall {'cycles' if what.startswith('cycles') else 'samples'})")
    elif not reasons:
        s.missing.append("smsp__average_warps_issue_stalled_*_per_issue_active.ratio")
    return s


_PIPE = re.compile(r"^sm__inst_executed_pipe_([a-z0-9_]+)\.avg\.pct_of_peak_sustained_active$")


def _compute(mx: _Metrics) -> Section:
    s = _section("ComputeWorkloadAnalysis", "Compute Workload Analysis", mx, COMPUTE_ITEMS)
    pipes = sorted(((m.group(1), float(v)) for n, v in mx.values.items() if (m := _PIPE.match(n)) and isinstance(v, (int, float))), key=lambda t: -t[1])
    if pipes:
        s.tables.append(Table("Instructions executed by pipe (% of the pipe's peak, active cycles)", ["pipe", "utilisation"], [[p, fmt_pct(v)] for p, v in pipes]))
        s.summary.append(f"Busiest pipe: {pipes[0][0]} at {fmt_pct(pipes[0][1])} of its peak")
    else:
        s.missing.append("sm__inst_executed_pipe_*.avg.pct_of_peak_sustained_active")
    return s


def _instructions(mx: _Metrics) -> Section:
    s = _section("InstructionStats", "Instruction Statistics", mx, INSTRUCTION_ITEMS)
    ops = mx.instanced.filter(pl.col("metric") == "sass__inst_executed_per_opcode")
    if ops.height:
        vals = ops.select("instance_key", pl.coalesce(pl.col("value_int").cast(pl.Float64), pl.col("value")).alias("v")).drop_nulls().sort("v", descending=True)
        total = vals["v"].sum()
        rows = [[str(op), fmt_num(int(v) if float(v).is_integer() else v), fmt_pct(100 * v / total) if total else MISSING] for op, v in vals.head(12).iter_rows()]
        s.tables.append(Table("Instruction mix (executed SASS opcodes, top 12)", ["opcode", "executed", "share"], rows))
    else:
        s.missing.append("sass__inst_executed_per_opcode")
    return s


def _hit(mx: _Metrics, hit: str, total: str) -> float | None:
    h, t = mx.num(hit), mx.num(total)
    return 100.0 * h / t if h is not None and t else None


def _memory(mx: _Metrics) -> Section:
    s = _section("MemoryWorkloadAnalysis", "Memory Workload Analysis", mx, MEMORY_ITEMS)
    rows = []

    def sectors_bytes(metric: str) -> tuple[float | None, str | None]:
        v = mx.num(metric)
        return (v * SECTOR_BYTES, metric) if v is not None else (None, None)

    # loads and stores always; atomics, reductions and local memory (register spills, stack
    # arrays) when they happened: what a kernel engineer looks for first in this chart
    for space, op, direction, always in (
        ("global", "ld", "load", True), ("global", "st", "store", True),
        ("global", "atom", "atomic", False), ("global", "red", "reduction", False),
        ("local", "ld", "load", False), ("local", "st", "store", False),
    ):
        l1 = f"l1tex__t_sectors_pipe_lsu_mem_{space}_op_{{}}.sum"
        b, used = sectors_bytes(l1.format(op))
        rate = mx.num(f"l1tex__t_sector_pipe_lsu_mem_{space}_op_{op}_hit_rate.pct")
        if rate is None:
            rate = _hit(mx, l1.format(op + "_lookup_hit"), l1.format(op))
        req = mx.num(f"l1tex__t_requests_pipe_lsu_mem_{space}_op_{op}.sum")
        if (b is not None or req is not None) and (always or (b or 0) > 0 or (req or 0) > 0):
            rows.append([f"kernel ↔ L1/TEX ({space})", direction, fmt_num(req), fmt_quantity(b, "byte"), fmt_pct(rate), used or ""])
            if space == "local" and (b or 0) > 0:
                s.summary.append(f"Local memory {direction}s: {fmt_quantity(b, 'byte')} (register spills or per-thread arrays the compiler placed in local memory)")
    for op, direction in (("ld", "load"), ("st", "store")):
        wf = mx.num(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum")
        conf = mx.num(f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum")
        if wf is not None:
            rows.append(["kernel ↔ shared memory", direction, f"{fmt_num(wf)} wavefronts", f"{fmt_num(conf)} bank conflicts" if conf is not None else MISSING, MISSING, f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"])
    for metric, direction, op in (("l1tex__m_xbar2l1tex_read_bytes.sum", "read", "read"), ("l1tex__m_l1tex2xbar_write_bytes.sum", "write", "write")):
        b = mx.num(metric)
        rate = _hit(mx, f"lts__t_sectors_srcunit_tex_op_{op}_lookup_hit.sum", f"lts__t_sectors_srcunit_tex_op_{op}.sum")
        if b is not None:
            rows.append(["L1/TEX ↔ L2", direction, MISSING, fmt_quantity(b, "byte"), fmt_pct(rate), metric])
    for metric, direction in (("dram__bytes_read.sum", "read"), ("dram__bytes_write.sum", "write")):
        b = mx.num(metric)
        if b is not None:
            rows.append(["L2 ↔ DRAM", direction, MISSING, fmt_quantity(b, mx.units.get(metric) or "byte"), MISSING, metric])
    if rows:
        s.tables.append(Table("Memory chart (per path and direction; hit rate at the receiving cache)", ["path", "direction", "requests", "bytes", "hit rate", "metric"], rows))
    if not any(r[0] != "L2 ↔ DRAM" for r in rows):
        # the chart's sectors come with MemoryWorkloadAnalysis_Chart; the section's own figures
        # (throughput, hit rates) with MemoryWorkloadAnalysis: name both when both are absent
        s.collect = "MemoryWorkloadAnalysis MemoryWorkloadAnalysis_Chart" if s.missing else "MemoryWorkloadAnalysis_Chart"
        s.missing.append("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")
    return s


_RULE_KIND = re.compile(r"^([a-z]+)")
# ncu's GUI links inside rule text: @section:Ident:Title@, @url:Title:https://...@
_SECTION_LINK = re.compile(r"@section:[A-Za-z0-9_]+:([^@]+)@")
_URL_LINK = re.compile(r"@url:([^:@]+):([^@]+)@")


def rule_text(text: str) -> str:
    """ncu's rule message with its GUI link markup turned into plain words."""
    text = _SECTION_LINK.sub(lambda m: m.group(1), text)
    return _URL_LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})", text)


def _rules(mx: _Metrics) -> list[RuleResult]:
    out = []
    for metric, section, text, value, key in mx.rules.select("metric", "section", "value_str", "value", "instance_key").iter_rows():
        if ":focus:" in metric or not text:
            continue
        kind = sp_kind = None
        if key:
            m = _RULE_KIND.match(key)
            kind = m.group(1) if m else None
            if "speedup=" in key:
                sp_kind = key.split("speedup=", 1)[1]
        out.append(RuleResult(metric, section, kind, rule_text(text.strip()), value, sp_kind))
    return out


def _attach_rules(sections: list[Section], rules: list[RuleResult]) -> Section | None:
    other = Section("Rules", "Other rule results")
    for r in rules:
        home = next((s for s in sections if r.section and (r.section == s.ident or r.section.startswith(s.ident + "_"))), None)
        (home or other).rules.append(r)
    return other if other.rules else None


def ncu_sections(metrics: pl.DataFrame) -> list[Section]:
    """The ncu Details sections of one kernel from its rows of the `metrics` table."""
    mx = _Metrics(metrics)
    sections = [_sol(mx), _launch(mx), _occupancy(mx), _memory(mx), _compute(mx), _instructions(mx), _section("SchedulerStats", "Scheduler Statistics", mx, SCHEDULER_ITEMS), _warp_state(mx)]
    other = _attach_rules(sections, _rules(mx))
    return sections + ([other] if other else [])


# ---------------------------------------------------------------------------------------------
# What any source says: launches and the roofline point
# ---------------------------------------------------------------------------------------------
def _distinct(df: pl.DataFrame, cols: Sequence[str], fmt: Callable[[tuple], str]) -> str | None:
    if not all(c in df.columns for c in cols):
        return None
    g = df.select(cols).drop_nulls().group_by(cols).len().sort("len", descending=True)
    if g.is_empty():
        return None
    parts = [f"{fmt(r[:-1])} ×{r[-1]:,}" if g.height > 1 else fmt(r[:-1]) for r in g.head(4).iter_rows()]
    return ", ".join(parts) + (f", … ({g.height - 4} more)" if g.height > 4 else "")


def launches_section(launches: pl.DataFrame) -> Section:
    s = Section("Launches", "Launches of this kernel in the profile")
    d = launches["duration_ns"].drop_nulls()
    s.items.append(Item("Launches", launches.height))
    if d.len() == 1:
        s.items.append(Item("Duration", float(d[0]), "ns", "duration_ns"))
    elif d.len():
        s.items += [
            Item("Total time", float(d.sum()), "ns", "duration_ns"),
            Item("Mean", float(d.mean()), "ns", "duration_ns"),
            Item("Median", float(d.median()), "ns", "duration_ns"),
            Item("Min", float(d.min()), "ns", "duration_ns"),
            Item("Max", float(d.max()), "ns", "duration_ns"),
        ]
        if d.len() > 1:
            s.items.append(Item("Std. dev.", float(d.std()), "ns", "duration_ns"))
            s.items.append(Item("p90", float(d.quantile(0.9, "linear")), "ns", "duration_ns"))
        if d.len() < launches.height:
            s.summary.append(f"{launches.height - d.len()} launch(es) without a recorded duration")
    else:
        s.summary.append("no launch has a recorded duration")
    dim = lambda t: "(" + ", ".join(str(x) for x in t) + ")"  # noqa: E731
    for label, cols, f in (
        ("Grid", ("grid_x", "grid_y", "grid_z"), dim),
        ("Block", ("block_x", "block_y", "block_z"), dim),
        ("Registers per thread", ("registers_per_thread",), lambda t: f"{t[0]:,}"),
        ("Shared memory per block", ("shared_mem_bytes",), lambda t: fmt_quantity(t[0], "byte")),
        ("Stream", ("stream",), lambda t: str(t[0])),
        ("Launching op", ("op_name",), lambda t: str(t[0])),
        ("NVTX range", ("nvtx_range",), lambda t: str(t[0])),
        ("Module", ("module",), lambda t: str(t[0])),
    ):
        v = _distinct(launches, cols, f)
        if v is not None:
            s.items.append(Item(label, v))
    occ = launches["achieved_occupancy_pct"].drop_nulls() if "achieved_occupancy_pct" in launches.columns else pl.Series([])
    if occ.len() == 1:
        s.items.append(Item("Achieved occupancy", float(occ[0]), "%", "achieved_occupancy_pct"))
    elif occ.len() > 1:  # a measured quantity: its spread, not a list of distinct values
        s.items.append(Item("Achieved occupancy", f"median {fmt_pct(occ.median())} ({fmt_pct(occ.min())} – {fmt_pct(occ.max())})", "", "achieved_occupancy_pct"))
    return s


def roofline_section(profile, kernel_id: int, device: str | None = None) -> Section:
    """The kernel's roofline point at boost clock (`profaudit.roofline` over its profile), or what
    it lacks."""
    from profaudit.roofline import roofline

    s = Section("Roofline", "Roofline point (boost-clock ceilings)")
    try:
        rf = roofline(profile, device, clock="boost").filter(pl.col("kernel_id") == kernel_id)
    except Exception as exc:  # an unknown --device names itself; the report stays useful without a roof
        s.summary.append(f"no roofline: {exc}")
        return s
    if rf.is_empty():
        return s
    r = rf.row(0, named=True)
    for label, col, unit in (
        ("FLOPs", "flops", "flop"),
        ("FLOP precisions", "flops_precisions", ""),
        ("DRAM bytes", "dram_bytes", "byte"),
        ("Arithmetic intensity (DRAM)", "ai_dram_flops_per_byte", "FLOP/byte"),
        ("Achieved FLOP/s", "achieved_flops_per_s", "FLOP/s"),
        ("Achieved DRAM bandwidth", "achieved_dram_bytes_per_s", "byte/s"),
        ("Attainable FLOP/s", "attainable_flops_per_s_boost", "FLOP/s"),
        ("% of roof", "roof_pct_boost", "%"),
        ("Bound", "bound_boost", ""),
        ("Device", "device_key", ""),
    ):
        if r.get(col) is not None:
            s.items.append(Item(label, r[col], unit, col))
    if r.get("roof_note"):
        s.summary.append(str(r["roof_note"]))
    if r.get("flops") is None and profile.metadata.get("source") == "xla":
        # XLA GPU traces carry no counts; jax's cost analysis of the compiled module does
        row = profile.kernels.filter(pl.col("kernel_id") == kernel_id).row(0, named=True)
        module = row.get("module") or "MODULE"
        from profaudit.xla import _programs

        same = profile.kernels.filter(pl.col("module") == module) if row.get("module") else profile.kernels.head(0)
        progs = _programs(profile, same)
        mine = progs.filter(pl.col("kernel_id") == kernel_id)["_program"]
        if progs["_program"].n_unique() > 1 and mine.len():
            module = f"'{module}({mine[0]})'"  # the module was compiled several times: this row's program
        s.summary.append(f"XLA ops get FLOPs and bytes from jax's cost analysis of their module: `profaudit xla-cost PROFILE --cost cost.json --module {module} -o DATASET` (cost.json from profaudit.xla.save_cost_analysis)")
    return s


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------
TRACE_NOTE = (
    "Hardware-counter sections (speed of light, memory chart, occupancy, stalls, pipes) need an Nsight Compute "
    "report of this kernel: `ncu --set full -k regex:{name} -o report <app>`"
)


def trace_note(row: dict, profile_device: str | None = None) -> str:
    """What a trace-only kernel lacks and which tool would give it, by where it ran."""
    device = (row.get("device_name") or profile_device or "").lower()
    if "cpu" in device:
        return "This kernel ran on the host CPU: the GPU counter sections (speed of light, memory chart, occupancy, stalls) do not apply"
    name = row.get("short_name") or row.get("name")
    if any(w in device for w in ("amd", "instinct", "radeon", "mi2", "mi3")):
        # the kernel's own name in the command, as the ncu one has it (was the placeholder KERNEL)
        return f"Hardware-counter sections need rocprofiler-compute (omniperf) counters of this kernel: `rocprof-compute profile -n WORKLOAD -k {shlex.quote(name or 'KERNEL')} -- <app>`"
    return TRACE_NOTE.format(name=re.escape(name or "KERNEL"))


def kernel_report(ps, name: str | None = None, *, kernel_id: int | None = None, launch: int | None = None, profile: str | None = None, device: str | None = None) -> KernelReport:
    """The analysis view of one kernel of a loaded ProfileSet (see the module docstring)."""
    pick = select_kernel(ps, name, kernel_id=kernel_id, launch=launch, profile=profile)
    row = pick["row"]
    p = ps[row["profile_id"]]
    sections: list[Section] = []
    notes: list[str] = []
    if row.get("source") == "ncu":
        m = p.metrics.filter(pl.col("kernel_id") == row["kernel_id"])
        sections += ncu_sections(m)
        if row.get("duration_ns") is None and not any(s.items for s in sections if s.ident == "SpeedOfLight"):
            # a failed replay leaves rule results saying why; a capture without counters (2019.x
            # reports keep launch and occupancy figures only) leaves none: say only what is known
            why = "; ncu's rule results below say why" if any(s.rules for s in sections) else ""
            notes.append(f"ncu recorded no hardware-counter measurements for this launch (no duration, throughput or memory figures){why}")
    else:
        notes.append(trace_note(row, p.metadata.get("device_name")))
    sections.append(launches_section(pick["launches"]))
    sections.append(roofline_section(p, row["kernel_id"], device))
    if pick["launches"].height > 1:
        notes.append(f"{pick['launches'].height} launches of this kernel; this is --launch {pick['launch_index']} (kernel_id {row['kernel_id']}), --launch 0..{pick['launches'].height - 1} shows another")
    return KernelReport(
        profile_id=p.profile_id,
        path=p.metadata.get("path"),
        source=row.get("source"),
        device=row.get("device_name") or p.metadata.get("device_name"),
        kernel_id=row["kernel_id"],
        name=row["name"] or MISSING,
        short_name=row.get("short_name") or row["name"] or f"kernel_id {row['kernel_id']} (the profile records no kernel name)",
        launch_index=pick["launch_index"],
        launches=pick["launches"].height,
        sections=sections,
        notes=notes,
    )


# ---------------------------------------------------------------------------------------------
# Rendering: Markdown, plain text, HTML from the same sections
# ---------------------------------------------------------------------------------------------
def item_text(it: Item) -> str:
    return fmt_quantity(it.value, it.unit) if not isinstance(it.value, str) else it.value


def collect_flags(s: Section) -> str:
    """The ncu options that collect what a section lacks: `--section MemoryWorkloadAnalysis
    --section MemoryWorkloadAnalysis_Chart` (`collect` holds the section identifiers)."""
    return " ".join(f"--section {c}" for c in (s.collect or s.ident).split())


def missing_line(s: Section) -> str | None:
    if not s.missing:
        return None
    what = "not in this report" if not (s.items or s.tables) else "missing"
    return f"{what}: {', '.join(s.missing)} (collect with `{collect_flags(s)}`)"


def rule_line(r: RuleResult) -> str:
    est = f" (estimated {r.speedup_kind + ' ' if r.speedup_kind and r.speedup_kind != 'unknown' else ''}speedup {fmt_pct(r.speedup_pct)})" if r.speedup_pct is not None else ""
    return f"[{r.kind or 'rule'}] {r.rule}{est}: {r.text}"


def _header(rep: KernelReport) -> list[tuple[str, str]]:
    return [
        ("kernel", rep.name),
        ("profile", rep.path or rep.profile_id),
        ("source", rep.source or MISSING),
        ("device", rep.device or MISSING),
        ("kernel_id", f"{rep.kernel_id} (--launch {rep.launch_index} of {rep.launches})"),
    ]


def render_markdown(rep: KernelReport) -> str:
    out = [f"# Kernel report: {rep.short_name}", ""]
    out += [f"- **{k}**: `{v}`" if k == "kernel" else f"- **{k}**: {v}" for k, v in _header(rep)]
    out += [f"- note: {n}" for n in rep.notes]
    for s in rep.sections:
        out += ["", f"## {s.title} (`{s.ident}`)", ""]
        out += [f"**{x}**  " for x in s.summary]
        if s.summary:
            out.append("")
        if s.items:
            out += ["| metric | value | from |", "|---|---:|---|"]
            out += [f"| {md_cell(i.label)} | {md_cell(item_text(i))} | {md_cell(i.metric or '')} |" for i in s.items]
            out.append("")
        for t in s.tables:
            out += [f"*{t.title}*", "", "| " + " | ".join(t.headers) + " |", "|" + "---|" * len(t.headers)]
            out += ["| " + " | ".join(md_cell(c) for c in r) + " |" for r in t.rows]
            out.append("")
        if (ml := missing_line(s)):
            out += [f"_{ml}_", ""]
        for r in s.rules:
            out.append(f"> {md_cell(rule_line(r))}")
            out.append(">")
        if s.rules:
            out.pop()
    return "\n".join(out).rstrip() + "\n"


def render_text(rep: KernelReport, width: int = 100) -> str:
    import textwrap

    def fill(text: str, first: str, rest: str = "    ") -> str:
        # lines break between words only: a metric name is never split across lines, nor a
        # `--section X` to copy (its spaces held by no-break spaces while filling)
        text = re.sub(r"`[^`]*`", lambda m: m.group(0).replace(" ", "\u00a0"), text)
        return textwrap.fill(text, width, initial_indent=first, subsequent_indent=rest, break_long_words=False, break_on_hyphens=False).replace("\u00a0", " ")

    out = [f"Kernel report: {rep.short_name}"]
    out += [f"  {k:<10} {v}" for k, v in _header(rep)]
    out += [fill(f"note: {n}", "  ") for n in rep.notes]
    for s in rep.sections:
        out += ["", f"{s.title} [{s.ident}]"]
        out += [fill(x, "  * ") for x in s.summary]
        if s.items:
            lw = max(len(i.label) for i in s.items)
            vals = [item_text(i) for i in s.items]
            vw = min(max(len(v) for v in vals), 40)
            out += [f"  {i.label:<{lw}}  {v:>{vw}}" for i, v in zip(s.items, vals)]
        for t in s.tables:
            out.append(f"  {t.title}")
            widths = [max(len(str(h)), *(len(str(r[j])) for r in t.rows)) for j, h in enumerate(t.headers)]
            out.append("    " + "  ".join(f"{h:<{w}}" for h, w in zip(t.headers, widths)).rstrip())
            out += ["    " + "  ".join(f"{c:<{w}}" for c, w in zip(r, widths)).rstrip() for r in t.rows]
        if (ml := missing_line(s)):
            out.append(fill(ml, "  - "))
        out += [fill(rule_line(r), "  > ") for r in s.rules]
    return "\n".join(out) + "\n"


_CSS = (
    "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}"
    "td.num{text-align:right;font-variant-numeric:tabular-nums}.missing{color:#a60}.rule{background:#f5f7ff;border-left:3px solid #57f;padding:4px 8px;margin:4px 0}"
    "code{font-size:90%}"
)


def render_html(rep: KernelReport, *, full_page: bool = True) -> str:
    e = _html.escape
    out = [f"<h1>Kernel report: {e(rep.short_name)}</h1>", "<table>"]
    out += [f"<tr><th>{e(k)}</th><td><code>{e(str(v))}</code></td></tr>" for k, v in _header(rep)]
    out.append("</table>")
    out += [f"<p class='missing'>{e(n)}</p>" for n in rep.notes]
    for s in rep.sections:
        out.append(f"<h2 id='{e(s.ident)}'>{e(s.title)} <small><code>{e(s.ident)}</code></small></h2>")
        out += [f"<p><b>{e(x)}</b></p>" for x in s.summary]
        if s.items:
            out.append("<table><tr><th>metric</th><th>value</th><th>from</th></tr>")
            out += [f"<tr><td>{e(i.label)}</td><td class='num'>{e(item_text(i))}</td><td><code>{e(i.metric or '')}</code></td></tr>" for i in s.items]
            out.append("</table>")
        for t in s.tables:
            out.append(f"<p><i>{e(t.title)}</i></p><table><tr>" + "".join(f"<th>{e(h)}</th>" for h in t.headers) + "</tr>")
            out += ["<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>" for r in t.rows]
            out.append("</table>")
        if (ml := missing_line(s)):
            out.append(f"<p class='missing'>{e(ml)}</p>")
        out += [f"<div class='rule'>{e(rule_line(r))}</div>" for r in s.rules]
    body = "\n".join(out)
    if not full_page:
        return body
    return f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{e(rep.short_name)}</title><style>{_CSS}</style></head><body>\n{body}\n</body></html>\n"


RENDERERS = {"md": render_markdown, "text": render_text, "html": render_html}


def render(rep: KernelReport, fmt: str = "md") -> str:
    if fmt == "json":
        import json

        return json.dumps(rep.to_dict(), indent=1, default=str)
    try:
        return RENDERERS[fmt](rep)
    except KeyError:
        raise UsageError(f"--format {fmt!r}: choose md, text, html or json") from None


# ---------------------------------------------------------------------------------------------
# Two reports side by side (a kernel pair inside compare)
# ---------------------------------------------------------------------------------------------
@dataclass
class PairRow:
    section: str
    label: str
    unit: str
    before: Any
    after: Any
    change: float | None  # percentage points for % values, relative % otherwise
    change_kind: str  # "points" or "relative"


def compare_kernel_reports(before: KernelReport, after: KernelReport) -> list[PairRow]:
    """Every labelled value of the two reports, side by side, largest move first (percentages
    by percentage points, everything else by relative change; unchanged values last)."""
    rows: list[PairRow] = []
    for sa in before.sections:
        sb = after.section(sa.ident)
        if sb is None:
            continue
        bi = {i.label: i for i in sb.items}
        for ia in sa.items:
            ib = bi.get(ia.label)
            if ib is None:
                continue
            a, b = ia.value, ib.value
            change, kind = None, "relative"
            if _is_num(a) and _is_num(b):
                if ia.unit == "%":
                    change, kind = float(b) - float(a), "points"
                elif float(a) != 0:
                    change = 100.0 * (float(b) - float(a)) / abs(float(a))
            rows.append(PairRow(sa.ident, ia.label, ia.unit, a, b, change, kind))
    return sorted(rows, key=lambda r: -abs(r.change) if r.change is not None else 0.0)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def pair_cells(r: PairRow) -> list[str]:
    """One moved value as printed in every format: section, metric, before, after, change."""
    ch = MISSING if r.change is None else (f"{r.change:+.1f} pts" if r.change_kind == "points" else fmt_pct(r.change, signed=True))
    b = r.before if isinstance(r.before, str) else fmt_quantity(r.before, r.unit)
    a = r.after if isinstance(r.after, str) else fmt_quantity(r.after, r.unit)
    return [r.section, r.label, b, a, ch]


def _pair_duration(before: KernelReport, after: KernelReport) -> str | None:
    d0 = before.value("SpeedOfLight", "Duration") or before.value("Launches", "Median")
    d1 = after.value("SpeedOfLight", "Duration") or after.value("Launches", "Median")
    if _is_num(d0) and _is_num(d1) and d1:
        return f"Duration {fmt_ns(d0)} → {fmt_ns(d1)}: {fmt_x(float(d0) / float(d1))}"
    return None


def render_pair_markdown(before: KernelReport, after: KernelReport, rows: list[PairRow] | None = None, top: int = 15) -> str:
    rows = compare_kernel_reports(before, after) if rows is None else rows
    out = [f"# Kernel pair: {before.short_name} → {after.short_name}", "",
           f"- **before**: {before.path or before.profile_id} (kernel_id {before.kernel_id})",
           f"- **after**: {after.path or after.profile_id} (kernel_id {after.kernel_id})", "",
           "| section | metric | before | after | change |", "|---|---|---:|---:|---:|"]
    out += ["| " + " | ".join(md_cell(x) for x in pair_cells(r)) + " |" for r in rows[:top]]
    if (d := _pair_duration(before, after)):
        out += ["", d]
    return "\n".join(out) + "\n"


def render_pair_text(before: KernelReport, after: KernelReport, rows: list[PairRow] | None = None, top: int = 15) -> str:
    """The pair as plain aligned text (what `-f text` asks for; the Markdown table is for files)."""
    rows = compare_kernel_reports(before, after) if rows is None else rows
    out = [f"Kernel pair: {before.short_name} → {after.short_name}",
           f"  before  {before.path or before.profile_id} (kernel_id {before.kernel_id})",
           f"  after   {after.path or after.profile_id} (kernel_id {after.kernel_id})", ""]
    cells = [["section", "metric", "before", "after", "change"]] + [pair_cells(r) for r in rows[:top]]
    widths = [max(len(c[j]) for c in cells) for j in range(5)]
    out += ["  " + "  ".join(f"{c:<{w}}" if j < 2 else f"{c:>{w}}" for j, (c, w) in enumerate(zip(row, widths))).rstrip() for row in cells]
    if (d := _pair_duration(before, after)):
        out += ["", d]
    return "\n".join(out) + "\n"
