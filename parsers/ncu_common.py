"""What the Nsight Compute report and CSV parsers share: units, section labels, and the kernel columns
derived from raw ncu metrics (bytes per memory level, FLOPs per precision, clocks, occupancy).

Both parsers first collect, per kernel, a mapping from the ncu metric name to its value in base
units (`ns`, `byte`, `Hz`, counts), then call `derive_kernel_columns`. The choices made there are
the contract other modules rely on; they are spelled out next to each rule below.
"""

from __future__ import annotations

import bisect
import math
import re
from typing import Any, Mapping

from profaudit import schema
from profaudit.samples import ns_per

# ---------------------------------------------------------------------------------------------
# Units
# ---------------------------------------------------------------------------------------------
# ncu prints SI (decimal) prefixes: "Shared Memory Configuration Size  Kbyte  32.77" for 32768
# bytes. Spellings changed across versions (2019-2021: nsecond/usecond/cycle/nsecond; 2022+:
# ns/us/hz/Ghz); both are accepted, case-insensitively for the prefix letters. Time units are
# profaudit.samples' (`ns_per`), which knows every spelling of both.
_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}
_BYTE = re.compile(r"^([kmgtp]?)(?:byte|b)$", re.IGNORECASE)
_HZ = re.compile(r"^([kmgtp]?)hz$", re.IGNORECASE)


def _numerator(unit: str) -> tuple[float, str] | None:
    """(factor, base) for a unit without a denominator: Kbyte -> (1e3, byte), Ghz -> (1e9, Hz)."""
    u = unit.strip()
    t = ns_per(u)
    if t is not None:
        return t, "ns"
    m = _BYTE.match(u)
    if m:
        return _PREFIX[m.group(1).lower()], "byte"
    m = _HZ.match(u)
    if m:
        return _PREFIX[m.group(1).lower()], "Hz"
    return None


def to_base(value: float | None, unit: str | None) -> tuple[float | None, str]:
    """Convert `value` in ncu's `unit` to profaudit's base unit; return (value, base unit).

    Time -> ns; bytes -> byte; frequency -> Hz; `X/<time>` rates -> X per second (`cycle/second`
    and `cycle/nsecond` become Hz, `Gbyte/second` becomes byte/s). Anything else (counts, %,
    inst/cycle, block, register/thread, `byte/block` ...) comes back unchanged.
    """
    if value is None or unit is None:
        return value, unit or ""
    u = unit.strip()
    if not u or u == "-":
        return value, ""
    num = _numerator(u)
    if num is not None:
        return value * num[0], num[1]
    if "/" in u:
        top, _, bottom = u.partition("/")
        bottom = bottom.strip()
        bottom_ns = ns_per(bottom)
        if bottom_ns is not None:
            per_second = 1e9 / bottom_ns  # e.g. 1/nsecond = 1e9/s
            t = _numerator(top)
            if t is not None and t[1] == "byte":
                return value * t[0] * per_second, "byte/s"
            if top.strip().lower() in ("cycle", "cycles"):
                return value * per_second, "Hz"
            if t is None:
                return value * per_second, f"{top.strip()}/s"
        t = _numerator(top)
        if t is not None and t[1] == "byte" and t[0] != 1.0:
            return value * t[0], f"byte/{bottom}"
    return value, u


# ---------------------------------------------------------------------------------------------
# Section labels (CSV `--page details` prints labels, not metric names)
# ---------------------------------------------------------------------------------------------
# Read from `IMetric.label()` of the corpus reports (ncu 2020.2-2025.2). Only labels that name one
# metric in every version are mapped; "SM Frequency" is gpc__cycles_elapsed.avg.per_second in
# current versions (sm__/smsp__cycles_elapsed.avg.per_second in old ones; same clock domain).
LABEL_TO_METRIC: dict[str, str] = {
    "Duration": "gpu__time_duration.sum",
    "DRAM Frequency": "dram__cycles_elapsed.avg.per_second",
    # the same row's label in 2019-2020.1 exports ("GPU Speed Of Light" section, unit cycle/second)
    "Memory Frequency": "dram__cycles_elapsed.avg.per_second",
    "SM Frequency": "gpc__cycles_elapsed.avg.per_second",
    "Elapsed Cycles": "gpc__cycles_elapsed.max",
    "SM Active Cycles": "sm__cycles_active.avg",
    "Registers Per Thread": "launch__registers_per_thread",
    "Block Size": "launch__block_size",
    "Grid Size": "launch__grid_size",
    "Threads": "launch__thread_count",
    "# SMs": "launch__sm_count",
    "Waves Per SM": "launch__waves_per_multiprocessor",
    "Static Shared Memory Per Block": "launch__shared_mem_per_block_static",
    "Dynamic Shared Memory Per Block": "launch__shared_mem_per_block_dynamic",
    "Driver Shared Memory Per Block": "launch__shared_mem_per_block_driver",
    "Shared Memory Configuration Size": "launch__shared_mem_config_size",
    "Function Cache Configuration": "launch__func_cache_config",
    "Achieved Occupancy": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "Theoretical Occupancy": "sm__maximum_warps_per_active_cycle_pct",
    "DRAM Bandwidth": "dram__bytes.sum.per_second",
    "Read Bytes": "dram__bytes_read.sum",
    "Write Bytes": "dram__bytes_write.sum",
    "Compute (SM) Throughput": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "DRAM Throughput": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "L2 Hit Rate": "lts__t_sector_hit_rate.pct",
    "L1/TEX Hit Rate": "l1tex__t_sector_hit_rate.pct",
}


def label_to_metric(label: str, unit: str) -> str | None:
    """The metric a details-page label stands for, or None when the label is not mapped.

    "Memory Throughput" is two metrics: the SOL percentage and the Memory Workload Analysis rate
    (dram__bytes.sum.per_second); the unit tells them apart.
    """
    if label == "Memory Throughput":
        if "/" in (unit or "") and unit.strip() != "%":
            return "dram__bytes.sum.per_second"
        return "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
    return LABEL_TO_METRIC.get(label)


# The `kind` of a metrics row (device attribute, launch configuration, measured metric) is decided
# in the report reader's child-side module, which imports nothing heavy; the CSV parsers use it too.
from profaudit.parsers.ncu_child import metric_kind  # noqa: E402, F401


# ---------------------------------------------------------------------------------------------
# Numbers in CSV cells
# ---------------------------------------------------------------------------------------------
_THOUSANDS = re.compile(r"^[-+]?\d{1,3}(?:,\d{3})+(?:\.\d*)?(?:[eE][-+]?\d+)?$")
_DECIMAL_COMMA = re.compile(r"^[-+]?\d+,\d+$")
_MISSING = {"", "n/a", "N/A", "na", "NA", "-", "--"}


def parse_number(cell: str, decimal_comma: bool = False) -> float | None:
    """A CSV cell as a float, or None when it is not a number.

    `1,234,567.5` has thousands separators (ncu's default); a single comma that cannot be a
    thousands separator (`9,00`, `0,5`) is a locale decimal comma. `n/a` and empty cells are None.
    With `decimal_comma` (a file `number_format` found to be written in a comma-decimal locale) `.`
    groups thousands and `,` is the decimal point: `117.344` is 117344, `65,77` is 65.77.
    """
    s = cell.strip()
    if s in _MISSING:
        return None
    if decimal_comma:
        if _EU_NUMBER.match(s):
            return float(s.replace(".", "").replace(",", "."))
        return None
    try:
        return float(s)
    except ValueError:
        pass
    if _THOUSANDS.match(s):
        return float(s.replace(",", ""))
    if _DECIMAL_COMMA.match(s):
        return float(s.replace(",", "."))
    return None


# ncu formats numbers with the host's locale (seen in exports from German/European Windows hosts:
# `27.595.520` bytes, `65,77` %, and `117.344` ns meaning 117344 ns). A cell such as `117.344` or
# `1,234` reads either way, so the choice is made once per file from the cells that cannot.
_EU_NUMBER = re.compile(r"^[-+]?(?:\d{1,3}(?:\.\d{3})+|\d+)(?:,\d+)?(?:[eE][-+]?\d+)?$")
_EU_ONLY = (
    re.compile(r"^[-+]?\d{1,3}(?:\.\d{3}){2,}(?:,\d+)?$"),  # 27.595.520: two or more dot groups
    re.compile(r"^[-+]?\d{1,3}(?:\.\d{3})+,\d+$"),  # 1.234,5
    re.compile(r"^[-+]?\d+,(?:\d{1,2}|\d{4,})$"),  # 65,77 / 0,5 / 3,1415: not a thousands group
)
_EN_ONLY = (
    re.compile(r"^[-+]?\d{1,3}(?:,\d{3}){2,}(?:\.\d+)?$"),  # 1,234,567
    re.compile(r"^[-+]?\d{1,3}(?:,\d{3})+\.\d+$"),  # 1,234.5
    re.compile(r"^[-+]?\d+\.(?:\d{1,2}|\d{4,})(?:[eE][-+]?\d+)?$"),  # 65.77 / 0.5 / 3.1415
)


def number_format(cells, enough: int = 20000) -> str:
    """'decimal_point' or 'decimal_comma' for the value cells of one CSV file.

    Decided by the cells only one convention can read, by majority (a stray version-like string
    such as `12.4` among the values must not flip a whole file), over at most `enough` such
    cells; a tie, or a file without any (only integers and three-decimal values), is read with
    the decimal point, ncu's default.
    """
    eu = en = 0
    for c in cells:
        s = c.strip()
        if not s or ("," not in s and "." not in s):
            continue
        if any(p.match(s) for p in _EN_ONLY):
            en += 1
        elif any(p.match(s) for p in _EU_ONLY):
            eu += 1
        else:
            continue
        if eu + en >= enough:
            break
    return "decimal_comma" if eu > en else "decimal_point"


_DIMS = re.compile(r"^\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)$")


def parse_dims(cell: str | None) -> tuple[int, int, int] | None:
    """`(256, 1, 1)` -> (256, 1, 1)."""
    if not cell:
        return None
    m = _DIMS.match(cell.strip())
    if not m:
        return None
    dims = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
    return dims if max(dims) < 2**63 else None  # beyond any launch: damage, unknown


# ---------------------------------------------------------------------------------------------
# Kernel columns from raw metrics
# ---------------------------------------------------------------------------------------------
def _num(v: Any) -> float | None:
    if v is None or isinstance(v, str):
        return None
    f = float(v)
    return f


def _finite(v: Any) -> float | None:
    f = _num(v)
    return f if f is not None and math.isfinite(f) else None


def _int(v: Any) -> int | None:
    f = _finite(v)
    return int(round(f)) if f is not None else None


def id_value(v: float | None) -> int | None:
    """An id cell (process, context, stream, device) as an integer; a value no id can have
    (infinite, beyond Int64: damage) is unknown."""
    f = _finite(v)
    return int(f) if f is not None and abs(f) < 2**63 else None


def _counter_total(vals: Mapping[str, Any], base: str, units: Mapping[str, str] | None = None) -> tuple[float | None, str | None]:
    """Total count of counter `base` over the kernel: `.sum`, else `.sum.per_cycle_elapsed` times
    the elapsed cycles of the counter's own unit (`smsp__`, `sm__`).

    ncu defines X.sum.per_cycle_elapsed = X.sum / <unit>__cycles_elapsed.avg; FORMATS.md 1.3 checks
    it: fadd 35.187 inst/cycle x smsp__cycles_elapsed.avg 28419.6 = 1.000e6 for a 1000x1000 add.
    """
    v = _finite(vals.get(base + ".sum"))
    if v is not None:
        return v, "sum"
    rate = _finite(vals.get(base + ".sum.per_cycle_elapsed"))
    if rate is None:
        return None, None
    unit = base.split("__", 1)[0]
    cycles = _finite(vals.get(f"{unit}__cycles_elapsed.avg"))
    if cycles is not None:
        return rate * cycles, "rate*cycles"
    # `--set roofline` keeps only <unit>__cycles_elapsed.avg.per_second, which ncu computes as
    # cycles / gpu__time_duration (T4: 28419.6 cycles / 52576 ns = 540.54 MHz, as reported)
    units = units or {}
    hz_name = f"{unit}__cycles_elapsed.avg.per_second"
    hz = _finite(vals.get(hz_name))
    dur = _finite(vals.get("gpu__time_duration.sum"))
    if hz is None or dur is None:
        return None, None
    hz = to_base(hz, units.get(hz_name, "hz"))[0]
    dur_s = to_base(dur, units.get("gpu__time_duration.sum", "ns"))[0] * 1e-9
    return rate * hz * dur_s, "rate*hz*duration"


# SASS thread-instruction counters per vector precision: (column, letter, weights add/mul/fma).
# FP64/FP32: FMA counts 2 (ncu's own roofline: derived__..._ffma_pred_on_x2). FP16: the counters
# count HADD2/HMUL2/HFMA2 thread instructions, each working on a packed pair, so ncu 2024+ weights
# them x2/x2/x4 (derived__smsp__..._hadd_pred_on_x2, _hfma_pred_on_x4); that weighting is also the
# one under which the datasheet FP16 vector peak holds (A100: 128 HFMA/SM/clk x4 x 108 SMs x
# 1.41 GHz = 78 TFLOP/s). A scalar half op (one lane) is over-counted by 2.
VECTOR_PRECISIONS = (
    ("flops_fp64", "d", (1.0, 1.0, 2.0)),
    ("flops_fp32", "f", (1.0, 1.0, 2.0)),
    ("flops_fp16", "h", (2.0, 2.0, 4.0)),
)

# Tensor-pipe op counters (Ampere and later):
#   sm__ops_path_tensor_src_<in>[_dst_<acc>][_sparsity_<on|off>]            (all tensor instructions)
#   sm__ops_path_tensor_op_<inst>_src_<in>[_dst_<acc>][_sparsity_<on|off>]  (one instruction family:
#   hmma, imma, hgmma, utcqmma ... on Ada/Hopper/Blackwell; [2nd-hand names, not in the corpus])
# Their unit is one FLOP (an FMA counts 2): on A100 the .sum.peak_sustained of src_fp16_dst_fp32
# is 221184/clk = 2048 per SM, and 108 SMs x 1.41 GHz x 2048 = 312 TFLOP/s, the dense FP16 tensor
# peak; src_fp64 gives 128/SM (19.5 TFLOP/s), src_tf32 1024/SM (156), src_int8 4096/SM (624 TOPS).
# sparsity_on counters count dense-equivalent ops (their peak is twice the dense one); they are
# added to the same column and flops_method says "sparse" when they are non-zero. To avoid double
# counting, a counter without a sparsity suffix is used instead of its on/off pair, and the
# all-instruction counters instead of the per-instruction ones.
_OPS_PATH = re.compile(
    r"^sm__ops_path_tensor_(?:op_(?P<op>[a-z0-9]+)_)?src_(?P<src>[a-z0-9]+(?:_(?!dst_|sparsity_)[a-z0-9]+)*)"
    r"(?:_dst_(?P<dst>[a-z0-9]+))?(?:_sparsity_(?P<sp>on|off))?$"
)
_TENSOR_SRC = {
    "fp64": "flops_fp64_tensor",
    "tf32": "flops_tf32_tensor",
    "fp16": "flops_fp16_tensor",
    "bf16": "flops_bf16_tensor",
    "fp8": "flops_fp8_tensor",
    "e4m3": "flops_fp8_tensor",
    "e5m2": "flops_fp8_tensor",
    "fp4": "flops_fp4_tensor",
    "e2m1": "flops_fp4_tensor",
    "int8": "flops_int8_tensor",
}


def _tensor_column(src: str) -> str | None:
    """The column of a counter's source type; None when it has no column (int4, int1, fp6) or
    mixes types a column cannot hold (`fp4_fp6_fp8`: ops of three precisions in one count)."""
    cols = {_TENSOR_SRC.get(t) for t in src.split("_")}
    return cols.pop() if len(cols) == 1 else None


FLOP_COLUMNS = tuple(schema.flops_columns())
# flops_total adds the floating-point columns only: int8 tensor ops are not FLOPs.
FLOAT_FLOP_COLUMNS = tuple(c for c in FLOP_COLUMNS if "int" not in c)
# Reports that profiled the SM at all (any smsp__ or sm__ metric) but not the SASS op counters.
_VECTOR_HINT = ("smsp__", "sm__")
_TENSOR_PCT_HINT = ("sm__inst_executed_pipe_tensor", "sm__pipe_tensor", "smsp__inst_executed_pipe_tensor", "sm__ops_path_tensor")


_TENSOR_PREFIX = "sm__ops_path_tensor_"


def tensor_counter_bases(names) -> list[str]:
    """The distinct ops_path tensor counters (without rollup suffix) among metric `names`."""
    out = set()
    for n in names:
        if n.startswith(_TENSOR_PREFIX):
            out.add(n.split(".", 1)[0])
    return sorted(out)


class _SortedNames:
    """A kernel's metric names sorted once, so that "is there a name starting with P" and "the names
    starting with P" are bisections instead of a pass over every name: a GH200 report's kernel has
    ~558 metrics, and flop_columns' three passes were ~170 of derive_kernel_columns' ~180 us
    (benchmarks/bench_ncu_load.py's "parent" stage). Names that do not sort (not all text: never
    seen) are scanned one by one as before."""

    __slots__ = ("keys", "names")

    def __init__(self, keys):
        self.keys = keys
        try:
            self.names: list[str] | None = sorted(keys)
        except TypeError:
            self.names = None

    def _from(self, prefix: str) -> int:
        return bisect.bisect_left(self.names, prefix)

    def any_prefixed(self, prefixes: tuple[str, ...]) -> bool:
        names = self.names
        if names is not None:
            try:
                for p in prefixes:
                    i = self._from(p)
                    if i < len(names) and names[i].startswith(p):  # the first name >= p, if any starts with p
                        return True
                return False
            except TypeError:  # names of one type that is not text: the scan below says what it says
                pass
        return any(k.startswith(prefixes) for k in self.keys)

    def tensor_counter_bases(self) -> list[str]:
        names = self.names
        if names is not None:
            try:
                i = self._from(_TENSOR_PREFIX)
            except TypeError:
                return tensor_counter_bases(self.keys)
            out = set()
            while i < len(names) and names[i].startswith(_TENSOR_PREFIX):
                out.add(names[i].split(".", 1)[0])
                i += 1
            return sorted(out)
        return tensor_counter_bases(self.keys)


def _tensor_flops(vals: Mapping[str, Any], units: Mapping[str, str] | None, names: _SortedNames | None = None) -> tuple[dict[str, float], dict[str, str]]:
    groups: dict[tuple, dict[str, str]] = {}
    for base in (names.tensor_counter_bases() if names is not None else tensor_counter_bases(vals.keys())):
        m = _OPS_PATH.match(base)
        if m:
            groups.setdefault((m.group("op"), m.group("src"), m.group("dst")), {})[m.group("sp") or "all"] = base
    per_col: dict[str, dict[bool, float]] = {}  # column -> {is_per_instruction: total}
    sparse = False
    dense_only: set[str] = set()
    unattributed: set[str] = set()
    for (op, src, _dst), forms in groups.items():
        if "all" in forms:
            total, _ = _counter_total(vals, forms["all"], units)
        else:
            on = _counter_total(vals, forms["on"], units)[0] if "on" in forms else None
            off = _counter_total(vals, forms["off"], units)[0] if "off" in forms else None
            total = None if on is None and off is None else (on or 0.0) + (off or 0.0)
            if on:
                sparse = True
            if off is not None and on is None:
                dense_only.add(src)
        if total is None:
            continue
        col = _tensor_column(src)
        if col is None:
            if total:
                unattributed.add(src)
            continue
        slot = per_col.setdefault(col, {})
        slot[op is not None] = slot.get(op is not None, 0.0) + total
    tensor = {col: (t[False] if False in t else t[True]) for col, t in per_col.items()}
    notes = {"sparse": "+sparse" if sparse else "", "dense-only": ",".join(sorted(dense_only)), "not-attributed": ",".join(sorted(unattributed))}
    return tensor, notes


def flop_columns(vals: Mapping[str, Any], units: Mapping[str, str] | None = None) -> dict[str, Any]:
    """FLOP columns per precision, flops_total and flops_method from raw ncu counters.

    A precision is null unless every counter it needs was collected (absence is not zero). A
    tensor precision is null when the report only has tensor percentages or warp-instruction
    counts (Volta/Turing, or sections without the ops_path counters): the FLOPs of one HMMA depend
    on its shape, which the counters do not record.
    """
    out: dict[str, Any] = {c: None for c in FLOP_COLUMNS}
    names = _SortedNames(vals)
    parts: list[str] = []
    how_set: set[str] = set()
    counted: list[str] = []
    incomplete: list[str] = []
    for col, letter, (wa, wm, wf) in VECTOR_PRECISIONS:
        totals = []
        for op in ("add", "mul", "fma"):
            t, how = _counter_total(vals, f"smsp__sass_thread_inst_executed_op_{letter}{op}_pred_on", units)
            totals.append(t)
            if how:
                how_set.add(how)
        if all(t is not None for t in totals):
            out[col] = wa * totals[0] + wm * totals[1] + wf * totals[2]
            counted.append(col[6:])
        elif any(t is not None for t in totals):
            incomplete.append(col[6:])
    if counted:
        parts.append(f"sass-counters({'/'.join(sorted(how_set))}):{','.join(counted)}")
    if incomplete:
        parts.append(f"incomplete:{','.join(incomplete)}")
    if not counted and not incomplete and names.any_prefixed(_VECTOR_HINT):
        parts.append("sass-counters:none")

    tensor, notes = _tensor_flops(vals, units, names)
    if tensor:
        out.update(tensor)
        parts.append(f"tensor-ops-path{notes.pop('sparse', '')}:{','.join(c[6:-7] for c in sorted(tensor))}")
    elif names.any_prefixed(_TENSOR_PCT_HINT):
        parts.append("tensor:unknown(pct-or-inst-only)")
    for key in ("dense-only", "not-attributed"):
        if notes.get(key):
            parts.append(f"{key}:{notes[key]}")

    floats = [out[c] for c in FLOAT_FLOP_COLUMNS if out.get(c) is not None]
    out["flops_total"] = sum(floats) if floats else None
    out["flops_method"] = ";".join(parts) if parts else None
    return out


# Metric names of the first Nsight Compute releases (2019.x; seen in .nsight-cuprof-report files
# of Pascal, Volta/Xavier and Turing captures) and the current metric each one is. Checked on
# those reports: gpu__time_duration 5952 ns vs gpc__elapsed_cycles_max 10768 / gpc__frequency
# 1.798 GHz = 5989 ns; sm__active_warps_avg_per_active_cycle_pct 28.2 % = 18.05 active warps of
# 64 (achieved occupancy). The reader gives these values with an empty unit, in ns, bytes and Hz.
LEGACY_METRICS: dict[str, str] = {
    "gpu__time_duration": "gpu__time_duration.sum",
    "gpc__frequency": "gpc__cycles_elapsed.avg.per_second",
    "dram__frequency": "dram__cycles_elapsed.avg.per_second",
    "gpc__elapsed_cycles_max": "gpc__cycles_elapsed.max",
    "sm__elapsed_cycles_avg": "sm__cycles_elapsed.avg",
    "sm__active_warps_avg_per_active_cycle_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "dram__read_bytes": "dram__bytes_read.sum",
    "dram__write_bytes": "dram__bytes_write.sum",
    "dram__bytes_per_sec": "dram__bytes.sum.per_second",
}


def _with_legacy(vals: Mapping[str, Any], units: Mapping[str, str]) -> tuple[Mapping[str, Any], Mapping[str, str]]:
    """`vals`/`units` with current names filled in from 2019-era names where only those exist."""
    found = [(old, new) for old, new in LEGACY_METRICS.items() if old in vals and new not in vals]
    if not found:
        return vals, units
    vals, units = dict(vals), dict(units)
    for old, new in found:
        vals[new] = vals[old]
        if old in units:
            units[new] = units[old]
    return vals, units


# Kernel columns that are one ncu metric each, as (column, metric, kind): `int` is the metric's
# value rounded to a whole number, `float` the value in base units. Both readers of a kernel's
# metrics use this one table: derive_kernel_columns (one kernel, Python values) and
# ncu_vector.KernelFrame.apply (a frame of kernels, polars expressions).
KERNEL_METRIC_COLUMNS: tuple[tuple[str, str, str], ...] = (
    *((f"{what}_{axis}", f"launch__{what}_dim_{axis}", "int") for axis in "xyz" for what in ("grid", "block")),
    ("grid_size", "launch__grid_size", "int"),
    ("block_size", "launch__block_size", "int"),
    ("registers_per_thread", "launch__registers_per_thread", "int"),
    ("context_id", "launch__context_id", "int"),
    ("stream", "launch__stream_id", "int"),
    ("achieved_occupancy_pct", "sm__warps_active.avg.pct_of_peak_sustained_active", "float"),
    ("theoretical_occupancy_pct", "sm__maximum_warps_per_active_cycle_pct", "float"),
)


def derive_kernel_columns(vals: Mapping[str, Any], units: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Kernel-table columns from one kernel's ncu metrics.

    `vals` maps ncu metric names to numbers (or strings); `units` maps the same names to ncu's
    unit strings, and every value used here goes through `to_base` first, so a CSV printed with
    `--print-units auto` (usecond, Kbyte, Ghz) lands in ns, bytes and Hz. 2019-era metric names
    (`LEGACY_METRICS`) stand in for their current names.
    """
    vals, units = _with_legacy(vals, units or {})

    def get(name: str) -> float | None:
        v = _finite(vals.get(name))
        if v is None:
            return None
        return to_base(v, units.get(name, ""))[0]

    row: dict[str, Any] = {}
    dur = get("gpu__time_duration.sum")
    row["duration_ns"] = dur
    for col, metric, kind in KERNEL_METRIC_COLUMNS:
        row[col] = _int(get(metric)) if kind == "int" else get(metric)

    st = _int(get("launch__shared_mem_per_block_static"))
    dy = _int(get("launch__shared_mem_per_block_dynamic"))
    row["static_shared_mem_bytes"] = st
    row["dynamic_shared_mem_bytes"] = dy
    # static + dynamic is what the program asked for; launch__shared_mem_per_block (newer ncu) is
    # the same sum. Driver-reserved shared memory is not included.
    row["shared_mem_bytes"] = st + dy if st is not None and dy is not None else _int(get("launch__shared_mem_per_block"))
    row["device_id"] = _int(get("launch__device_id"))
    if row["device_id"] is None:
        row["device_id"] = _int(get("device__attribute_device_index"))

    rd = get("dram__bytes_read.sum")
    wr = get("dram__bytes_write.sum")
    row["dram_read_bytes"] = rd
    row["dram_write_bytes"] = wr
    total = get("dram__bytes.sum")
    method = "sum" if total is not None else None
    if total is None and rd is not None and wr is not None:
        total, method = rd + wr, "read+write"
    if total is None:
        rate = get("dram__bytes.sum.per_second")
        if rate is not None and dur is not None:
            total, method = rate * dur * 1e-9, "rate*duration"
    row["dram_bytes"] = total
    row["dram_bytes_method"] = method

    # lts__t_bytes is defined as lts__t_sectors x 32 (a 32-byte L2 sector); same for l1tex__t_bytes.
    l2 = get("lts__t_bytes.sum")
    if l2 is None:
        sec = get("lts__t_sectors.sum")
        l2 = sec * 32.0 if sec is not None else None
    row["l2_bytes"] = l2
    l1 = get("l1tex__t_bytes.sum")
    if l1 is None:
        sec = get("l1tex__t_sectors.sum")
        l1 = sec * 32.0 if sec is not None else None
    row["l1_bytes"] = l1

    row.update(flop_columns(vals, units))

    # The clock the kernel ran at. SMs run on the GPC clock; gpc__cycles_elapsed.avg.per_second
    # is what current ncu shows as "SM Frequency". sm__cycles_elapsed.avg.per_second divides SM
    # cycles (counted from when the SM's monitor starts) by the whole duration, so on short
    # kernels it reads low (T4, 52 us kernel: 540.5 MHz vs 584.3 MHz for gpc, base clock 585).
    clk = get("gpc__cycles_elapsed.avg.per_second")
    if clk is None:
        cyc = get("gpc__cycles_elapsed.max")
        if cyc is not None and dur:
            clk = cyc / (dur * 1e-9)
    if clk is None:
        clk = get("sm__cycles_elapsed.avg.per_second")
    if clk is None:
        clk = get("smsp__cycles_elapsed.avg.per_second")
    if clk is None:
        # what sm__cycles_elapsed.avg.per_second is, for `--metrics` captures that kept the count only
        cyc = get("sm__cycles_elapsed.avg")
        if cyc is not None and dur:
            clk = cyc / (dur * 1e-9)
    row["sm_clock_hz"] = clk
    mclk = get("dram__cycles_elapsed.avg.per_second")
    if mclk is None:
        cyc = get("dram__cycles_elapsed.avg")
        if cyc is not None and dur:
            mclk = cyc / (dur * 1e-9)
    row["mem_clock_hz"] = mclk
    dn = vals.get("device__attribute_display_name")
    row["device_name"] = dn if isinstance(dn, str) else None
    return row


# ---------------------------------------------------------------------------------------------
# Clock and cache control
# ---------------------------------------------------------------------------------------------
# ncu defaults (ncu --help since 2019.1): --clock-control base, --cache-control all.
DEFAULT_CLOCK_CONTROL = "base"
DEFAULT_CACHE_CONTROL = "all"


def _flag_value(tokens: list[str], flag: str) -> str | None:
    for i, t in enumerate(tokens):
        if t == flag and i + 1 < len(tokens):
            return tokens[i + 1]
        if t.startswith(flag + "="):
            return t.split("=", 1)[1]
    return None


def _ncu_args(command_line: str) -> list[str]:
    # Plain whitespace split: ncu's flags and their values never contain spaces, and shlex would
    # eat the backslashes of Windows paths.
    return command_line.split()


def controls_from(command_line: str | None, settings_clock: str | None = None) -> dict[str, str]:
    """clock_control / cache_control and their origin.

    `recorded` when the report says so (the recorded ncu command line has the flag, or the GUI's
    saved profiler settings name a clock mode); otherwise ncu's default with origin `default`.
    """
    out = {
        "clock_control": DEFAULT_CLOCK_CONTROL,
        "clock_control_origin": "default",
        "cache_control": DEFAULT_CACHE_CONTROL,
        "cache_control_origin": "default",
    }
    if command_line:
        tokens = _after_ncu(_ncu_args(command_line))
        clock = _flag_value(tokens, "--clock-control")
        cache = _flag_value(tokens, "--cache-control")
        if clock:
            out["clock_control"], out["clock_control_origin"] = clock.lower(), "recorded"
        if cache:
            out["cache_control"], out["cache_control_origin"] = cache.lower(), "recorded"
    if out["clock_control_origin"] == "default" and settings_clock:
        out["clock_control"], out["clock_control_origin"] = settings_clock.strip().lower(), "recorded"
    return out


def _after_ncu(tokens: list[str]) -> list[str]:
    """The tokens after the ncu executable (the whole line when it does not name ncu).

    The profiled program's own arguments follow ncu's; none of the programs seen so far take an
    argument spelled `--clock-control`/`--cache-control`, so no attempt is made to tell them apart
    (that would need ncu's full option table, which changes between versions).
    """
    for i, t in enumerate(tokens):
        base = t.replace("\\", "/").rsplit("/", 1)[-1].lower()
        if base in ("ncu", "ncu.exe", "nv-nsight-cu-cli", "nv-nsight-cu-cli.exe"):
            return tokens[i + 1 :]
    return tokens


# ncu options that take no value (ncu --help, 2020.1-2025.x): every other option is followed by its
# value, so the first bare token that is not an option's value is the profiled program, after which
# flags (`python -c ...`) are the program's own.
_NCU_SWITCHES = frozenset({
    "-f", "--force-overwrite", "--nvtx", "--quiet", "--call-stack", "--details-all", "--csv", "--print-fp",
    "--open-in-ui", "--print-rule-details", "--disable-extra-suffixes", "--list-sets", "--list-sections",
    "--list-rules", "--list-chips", "--query-metrics", "--version", "-v", "--help", "-h",
})


def launch_count(command_line: str | None) -> int | None:
    """The `-c N` / `--launch-count N` a recorded ncu command line asked for (the most results ncu
    keeps), or None when it asked none or the line is not ncu's. Only ncu's own options count."""
    if not command_line:
        return None
    tokens = _ncu_args(command_line)
    rest = _after_ncu(tokens)
    if len(rest) == len(tokens):  # the line does not name ncu: nothing to tell its options apart
        return None
    i = 0
    while i < len(rest):
        t = rest[i]
        if not t.startswith("-"):
            return None  # the profiled program: what follows are its arguments
        name, eq, val = t.partition("=")
        if name in ("-c", "--launch-count"):
            val = val if eq else (rest[i + 1] if i + 1 < len(rest) else "")
            return int(val) if val.isdigit() and int(val) > 0 else None
        i += 1 if (eq or name in _NCU_SWITCHES) else 2
    return None
