"""Device specifications: the ceilings a roofline is drawn against.

One YAML file per device under `device_specs/` (shipped as `profaudit.device_specs`); users add their
own files with the same layout (`load_specs(extra_paths=...)`, `--spec FILE`). Every number carries its
unit in its key, names its source, and, for compute and on-chip bandwidth, the clock it assumes, so a
peak can be rescaled to the clock a kernel actually ran at.

File layout (schema_version 1), every number written as a mapping::

    key: h100-sxm                    # unique id (the file stem by convention)
    name: NVIDIA H100 SXM5 80GB
    vendor: NVIDIA
    scope: device                    # what one spec describes: device | gcd | chip | tensorcore
    aliases: [NVIDIA H100 80GB HBM3] # names tools report, matched after normalisation
    match_patterns: ['\\bh100\\b.*\\bsxm5?\\b']   # regexes over the normalised name
    family_pattern: '\\bh100\\b'     # names that belong to the family but not to one variant
    compute_units: {value: 132, kind: SM, source: nv-hopper-wp}
    boost_clock_mhz: {value: 1980, source: nv-driver}
    memory_bytes: {value: 85899345920, source: nv-h100-ds}
    l2_cache_bytes: {value: 52428800, source: nv-hopper-wp}
    bandwidth_bytes_per_s:
      dram: {value: 3.35e+12, source: nv-h100-ds}
      l1: {value: 3.345e+13, clock_mhz: 1980, source: nv-cuda-guide, derivation: '128 B/clk/SM x 132 x 1980 MHz'}
    peak_flops_per_s_dense:
      fp32: {value: 6.7e+13, clock_mhz: 1980, source: nv-h100-ds}
    peak_flops_per_s_sparse:
      fp16_tensor: {value: 1.979e+15, clock_mhz: 1830, source: nv-h100-ds}
    sources:
      nv-h100-ds: {title: NVIDIA H100 Tensor Core GPU Datasheet, url: https://..., note: 'verified: ...'}

Precision keys are `profaudit.schema.PRECISIONS`. Bandwidth keys are `profaudit.schema.MEMORY_LEVELS`
(dram, l2, l1) plus the on-chip levels in `EXTRA_BANDWIDTH_LEVELS` (drawn on charts; kernels tables
carry no byte counts for them). Bandwidth of on-chip levels scales with the core clock; DRAM/HBM
bandwidth does not.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence

from profaudit.errors import InputError, UsageError
from profaudit.filekind import OTHER, file_kind
from profaudit.fmt import fmt_int, fmt_int_digits, fmt_refused
from profaudit.schema import MEMORY_LEVELS, PRECISIONS

SCHEMA_VERSION = 1

# On-chip levels some vendors publish beyond dram/l2/l1. Meaning:
#   llc  - a memory-side last-level cache between L2 and DRAM (AMD Infinity Cache / MALL)
#   vmem - TPU vector memory (per TensorCore scratchpad)
#   cmem - TPU v4 common memory
#   sbuf - AWS NeuronCore state buffer;  psum - NeuronCore partial-sum buffer;  sram - NeuronCore SRAM total
EXTRA_BANDWIDTH_LEVELS: tuple[str, ...] = ("llc", "vmem", "cmem", "sbuf", "psum", "sram")
BANDWIDTH_LEVELS: tuple[str, ...] = MEMORY_LEVELS + EXTRA_BANDWIDTH_LEVELS
SCOPES = ("device", "gcd", "chip", "tensorcore")
_PER_CORE_KINDS = ("TensorCore", "NeuronCore")

_TOP_KEYS = {
    "schema_version", "key", "name", "vendor", "architecture", "compute_capability", "gfx_target", "form_factor", "scope",
    "aliases", "match_patterns", "family_pattern", "compute_units", "boost_clock_mhz", "base_clock_mhz", "memory_bytes",
    "memory_type", "l2_cache_bytes", "bandwidth_bytes_per_s", "on_chip_memories", "peak_flops_per_s_dense",
    "peak_flops_per_s_sparse", "other_peaks_ops_per_s", "interconnect_bytes_per_s", "conflicts", "notes", "sources",
}
# Links between devices, bytes per second in ONE direction per device (what nccl-tests' busbw is
# compared with): NVLink, PCIe (host link), InfiniBand (the scale-out NIC a reference system gives
# each GPU), xGMI (AMD Infinity Fabric between GPUs).
INTERCONNECTS: tuple[str, ...] = ("nvlink", "pcie", "infiniband", "xgmi")
_ENTRY_KEYS = {"value", "source", "clock_mhz", "derivation", "note", "kind"}
_KEY_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


# --------------------------------------------------------------------------------------------------
# Data classes


@dataclass(frozen=True)
class Source:
    key: str
    title: str
    url: str | None = None
    publisher: str | None = None
    # How far the figures citing this source were checked against the vendor's own text (shipped
    # specs say 'verified: ...' or 'unverified: ...'); shown by `profaudit devices NAME`.
    note: str | None = None


@dataclass(frozen=True)
class Value:
    """One published (or derived) number with its provenance."""

    value: float
    source: tuple[str, ...]
    clock_hz: float | None = None
    derivation: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class Conflict:
    field: str
    values: tuple[tuple[float, str, str | None], ...]  # (value, source key, note)
    resolution: str


@dataclass(frozen=True)
class DeviceSpec:
    """One device's ceilings. Immutable; mappings are read-only views."""

    key: str
    name: str
    vendor: str
    scope: str
    architecture: str | None = None
    form_factor: str | None = None
    compute_capability: str | None = None
    sm_count: int | None = None
    compute_unit_kind: str | None = None
    boost_clock_hz: float | None = None
    base_clock_hz: float | None = None
    memory_bytes: int | None = None
    memory_type: str | None = None
    l2_cache_bytes: int | None = None
    peaks_dense: Mapping[str, Value] = field(default_factory=lambda: MappingProxyType({}))
    peaks_sparse: Mapping[str, Value] = field(default_factory=lambda: MappingProxyType({}))
    bandwidths: Mapping[str, Value] = field(default_factory=lambda: MappingProxyType({}))
    other_peaks: Mapping[str, Value] = field(default_factory=lambda: MappingProxyType({}))
    on_chip_capacity_bytes: Mapping[str, Value] = field(default_factory=lambda: MappingProxyType({}))
    interconnects: Mapping[str, Value] = field(default_factory=lambda: MappingProxyType({}))
    aliases: tuple[str, ...] = ()
    match_patterns: tuple[str, ...] = ()
    family_pattern: str | None = None
    sources: Mapping[str, Source] = field(default_factory=lambda: MappingProxyType({}))
    conflicts: tuple[Conflict, ...] = ()
    notes: tuple[str, ...] = ()
    path: str | None = None
    schema_version: int = SCHEMA_VERSION
    scaled_from: str | None = None

    # -- compute -----------------------------------------------------------------------------------
    def precisions(self, *, sparse: bool = False) -> tuple[str, ...]:
        table = self.peaks_sparse if sparse else self.peaks_dense
        return tuple(p for p in PRECISIONS if p in table)

    def peak(self, precision: str, *, sparse: bool = False) -> Value | None:
        _check_precision(precision)
        return (self.peaks_sparse if sparse else self.peaks_dense).get(precision)

    def peak_flops_per_s(self, precision: str, *, sparse: bool = False, clock_hz: float | None = None) -> float | None:
        """Peak FLOP/s (ops/s for int8) of `precision`; None when the device has no such peak.

        With `clock_hz`, the datasheet figure is scaled linearly from the clock it assumes; None when
        the vendor states no clock for it (the figure cannot be moved to another clock).
        """
        v = self.peak(precision, sparse=sparse)
        if v is None:
            return None
        if clock_hz is None:
            return v.value
        if v.clock_hz is None or not _positive(clock_hz):
            return None
        return v.value * clock_hz / v.clock_hz

    def peak_clock_hz(self, precision: str, *, sparse: bool = False) -> float | None:
        v = self.peak(precision, sparse=sparse)
        return None if v is None else v.clock_hz

    # -- memory ------------------------------------------------------------------------------------
    def levels(self) -> tuple[str, ...]:
        return tuple(lv for lv in BANDWIDTH_LEVELS if lv in self.bandwidths)

    def bandwidth(self, level: str) -> Value | None:
        if level not in BANDWIDTH_LEVELS:
            raise UsageError(f"no memory level {level!r}; levels: {', '.join(BANDWIDTH_LEVELS)}")
        return self.bandwidths.get(level)

    def bandwidth_bytes_per_s(self, level: str, clock_hz: float | None = None) -> float | None:
        """Peak bandwidth of `level` in bytes/s.

        DRAM/HBM bandwidth is set by the memory clock and is returned unchanged whatever `clock_hz`;
        on-chip levels scale linearly with the core clock from the clock their figure assumes
        (None when that clock is unknown).
        """
        v = self.bandwidth(level)
        if v is None:
            return None
        if clock_hz is None or level == "dram":
            return v.value
        if v.clock_hz is None or not _positive(clock_hz):
            return None
        return v.value * clock_hz / v.clock_hz

    # -- derived specs -----------------------------------------------------------------------------
    @property
    def cores_per_device(self) -> int | None:
        return self.sm_count if self.compute_unit_kind in _PER_CORE_KINDS else None

    def scaled_to_cores(self, cores: int) -> "DeviceSpec":
        """The share of this device that `cores` of its TensorCores/NeuronCores own.

        Compute peaks and HBM bandwidth scale by cores / cores_per_device. The HBM share is an
        approximation (one core may draw more than its share when the others idle); it is the
        ceiling the vendor's per-core figures imply (e.g. 16 DMA engines per NeuronCore-v2).
        """
        total = self.cores_per_device
        if total is None:
            raise UsageError(f"{self.key}: --cores applies to TPU and Neuron devices (compute units are {self.compute_unit_kind or 'unknown'})")
        if not isinstance(cores, int) or cores < 1 or cores > total:
            raise UsageError(f"{self.key}: cores must be between 1 and {total}, got {cores}")
        if cores == total:
            return self
        f = cores / total

        def scale(m: Mapping[str, Value]) -> Mapping[str, Value]:
            return MappingProxyType({k: replace(v, value=v.value * f, derivation=_join(v.derivation, f"{cores}/{total} of the {self.scope} figure")) for k, v in m.items()})

        return replace(
            self,
            key=f"{self.key}@{cores}core",
            name=f"{self.name} ({cores} of {total} {self.compute_unit_kind}s)",
            sm_count=cores,
            peaks_dense=scale(self.peaks_dense),
            peaks_sparse=scale(self.peaks_sparse),
            bandwidths=scale(self.bandwidths),
            memory_bytes=None if self.memory_bytes is None else int(self.memory_bytes * f),
            scaled_from=self.key,
            notes=self.notes + (f"scaled to {cores} of {total} {self.compute_unit_kind}s",),
        )

    # -- presentation ------------------------------------------------------------------------------
    def source_titles(self, keys: Iterable[str]) -> str:
        return "; ".join(self.sources[k].title if k in self.sources else k for k in keys)

    def to_dict(self) -> dict[str, Any]:
        def val(v: Value | None) -> dict | None:
            if v is None:
                return None
            d = {"value": v.value, "source": list(v.source)}
            if v.clock_hz is not None:
                d["clock_hz"] = v.clock_hz
            if v.derivation:
                d["derivation"] = v.derivation
            if v.note:
                d["note"] = v.note
            return d

        return {
            "schema_version": self.schema_version,
            "key": self.key,
            "name": self.name,
            "vendor": self.vendor,
            "architecture": self.architecture,
            "form_factor": self.form_factor,
            "scope": self.scope,
            "compute_units": self.sm_count,
            "compute_unit_kind": self.compute_unit_kind,
            "boost_clock_hz": self.boost_clock_hz,
            "base_clock_hz": self.base_clock_hz,
            "memory_bytes": self.memory_bytes,
            "memory_type": self.memory_type,
            "l2_cache_bytes": self.l2_cache_bytes,
            "bandwidth_bytes_per_s": {k: val(v) for k, v in self.bandwidths.items()},
            "peak_flops_per_s_dense": {k: val(v) for k, v in self.peaks_dense.items()},
            "peak_flops_per_s_sparse": {k: val(v) for k, v in self.peaks_sparse.items()},
            "other_peaks_ops_per_s": {k: val(v) for k, v in self.other_peaks.items()},
            "on_chip_capacity_bytes": {k: val(v) for k, v in self.on_chip_capacity_bytes.items()},
            "interconnect_bytes_per_s": {k: val(v) for k, v in self.interconnects.items()},
            "aliases": list(self.aliases),
            "conflicts": [{"field": c.field, "values": [{"value": a, "source": b, "note": n} for a, b, n in c.values], "resolution": c.resolution} for c in self.conflicts],
            "notes": list(self.notes),
            "sources": {k: {"title": s.title, "url": s.url, "publisher": s.publisher, "note": s.note} for k, s in self.sources.items()},
            "path": self.path,
        }


def _join(a: str | None, b: str) -> str:
    return f"{a}; {b}" if a else b


def _positive(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def _check_precision(p: str) -> None:
    if p not in PRECISIONS:
        raise UsageError(f"no precision {p!r}; precisions: {', '.join(PRECISIONS)}")


# --------------------------------------------------------------------------------------------------
# Parsing and validation


class _Bad(Exception):
    pass


# What one device can plausibly have, about a thousand times beyond the largest shipped figure and
# below the smallest: a spec with a peak of 1e308 (or 1e-320) passed the positivity check and
# printed a 300-digit bandwidth (or "0 GB/s") in `devices` and every roofline built on it.
_LIMITS = {
    # the floors admit edge parts: a USB 2.0 accelerator (Coral: 6e7 B/s), a PCIe Gen3 x1 NPU
    # (Hailo-8L: 9.85e8 B/s a direction), a microcontroller NPU's external RAM (1e8-8e8 B/s) or
    # its Cortex-M core (~1e8 flop/s); 1e9 refused them (review G2, session 16)
    "ops_per_s": (1e7, 1e19, "op/s"),  # shipped: 6.8e10 .. 2e16
    "bytes_per_s": (1e7, 1e17, "B/s"),  # shipped: 3.2e10 .. 5.2e13
    "clock_mhz": (1.0, 1e5, "MHz"),  # shipped: 585 .. 2,620
    "bytes": (1024, 2**50, "bytes"),  # shipped: 1 MiB .. 288 GiB
    # a thousand times past the largest device that exists, as for the figures above: Cerebras
    # WSE-3's 900,000 cores on one wafer (1e6 left it 10 %, so its successor would have been
    # refused; review G2, session 16). Nothing is allocated per unit, so a high bound costs nothing
    "count": (1, 1_000_000_000, "compute units"),  # shipped: 1 .. 304
}


def _got(x: Any) -> str:
    """A refused value as its one-line message shows it: a number by fmt_refused's rule (a damaged
    file's -10**300 is not printed as 301 digits), anything else as the start of its repr (a
    100,000-character string or a 50,000-item list was quoted whole; review F18-3)."""
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return fmt_refused(x, 5e-324, math.inf)  # refused for not being positive and finite
    shown = repr(x)
    return shown if len(shown) <= 60 else f"{shown[:60]}... ({len(shown):,} characters written out)"


def _num(x: Any, where: str, *, integer: bool = False, limits: str | None = None) -> float:
    if isinstance(x, bool):
        raise _Bad(f"{where} must be a number, got {x!r}")
    if isinstance(x, str):
        # YAML 1.1 reads `1e12` (no dot) as a string; accept it rather than make users learn that.
        try:
            x = float(x.replace("_", ""))
        except ValueError:
            raise _Bad(f"{where} must be a number, got {_got(x)}") from None
    if isinstance(x, int) and not isinstance(x, bool) and abs(x) > 2**1023:
        # math.isfinite/float() raise OverflowError on an int past the float range (YAML reads
        # 1 followed by 400 zeros as one): the catch-all's line before
        raise _Bad(f"{where} must be a finite number, got {fmt_int_digits(x)}")
    if not isinstance(x, (int, float)) or not math.isfinite(x) or x <= 0:
        raise _Bad(f"{where} must be a positive number, got {_got(x)}")
    if limits is not None:
        lo, hi, unit = _LIMITS[limits]
        if not lo <= x <= hi:
            # six digits unless they round the figure into the range it is refused for (1,000,000,001
            # compute units read "1e+09 ... (expected 1 to 1e+09)"), never an integer of 300 digits
            # whole (review E17-2): the rule fmt_refused keeps for every refused figure
            raise _Bad(f"{where} = {fmt_refused(x, lo, hi)} {unit} is not a plausible figure for one device (expected {lo:g} to {hi:g})")
    if integer:
        if float(x) != int(x):
            raise _Bad(f"{where} must be a whole number, got {_got(x)}")
        return int(x)
    return float(x)


def _str(x: Any, where: str, *, optional: bool = False) -> str | None:
    if x is None and optional:
        return None
    if not isinstance(x, str) or not x.strip():
        raise _Bad(f"{where} must be a non-empty string")
    try:
        x.encode("utf-8")
    except UnicodeEncodeError:
        # YAML's "\ud800" escape builds a lone UTF-16 surrogate, which is no text: `devices` put the
        # name in a polars table and died of polars' UTF-8 encoding (internal error, exit 3; s19)
        raise _Bad(f"{where} holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape): not text") from None
    return x.strip()


def _capability(x: Any) -> str | None:
    """compute_capability as written ('8.6', or 8.6 read as a number): any other value was kept as
    its str() (a list, a mapping, .inf, a lone surrogate; s19)."""
    if x is None:
        return None
    # 0 <= x < 1000 compared as numbers: math.isfinite raised OverflowError on an int past a
    # float's range (fuzz_surfaces s19 seed 4822, spec #866: 10**39... as compute_capability)
    if isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x < 1000:
        return str(x)
    if isinstance(x, str):
        return _str(x, "compute_capability")
    raise _Bad(f"compute_capability must be a version such as '8.6', got {_got(x)}")


def _mapping(x: Any, where: str, *, optional: bool = True) -> Mapping:
    if x is None and optional:
        return {}
    if not isinstance(x, Mapping):
        raise _Bad(f"{where} must be a mapping")
    return x


def _value(x: Any, where: str, sources: Mapping[str, Source], *, limits: str, integer: bool = False, clock_ok: bool = True) -> Value:
    if not isinstance(x, Mapping):
        raise _Bad(f"{where} must be a mapping with 'value' and 'source' (got {type(x).__name__})")
    extra = set(x) - _ENTRY_KEYS
    if extra:
        raise _Bad(f"{where} has unknown key(s) {sorted(extra)}")
    if "value" not in x:
        raise _Bad(f"{where} has no 'value'")
    if "source" not in x:
        raise _Bad(f"{where} has no 'source' (every number names where it comes from)")
    src = x["source"]
    srcs = (src,) if isinstance(src, str) else tuple(src) if isinstance(src, list) else None
    if not srcs or not all(isinstance(s, str) for s in srcs):
        raise _Bad(f"{where}.source must be a source key or a list of them")
    for s in srcs:
        if s not in sources:
            raise _Bad(f"{where}.source {s!r} is not a key of 'sources'")
    clock = x.get("clock_mhz")
    if clock is not None and not clock_ok:
        raise _Bad(f"{where} takes no clock_mhz")
    return Value(
        value=_num(x["value"], f"{where}.value", integer=integer, limits=limits),
        source=srcs,
        clock_hz=None if clock is None else _num(clock, f"{where}.clock_mhz", limits="clock_mhz") * 1e6,
        derivation=_str(x.get("derivation"), f"{where}.derivation", optional=True),
        note=_str(x.get("note"), f"{where}.note", optional=True),
    )


def _regex(p: Any, where: str) -> str:
    p = _str(p, where)
    try:
        re.compile(p)
    except re.error as exc:
        raise _Bad(f"{where} is not a valid regular expression: {exc}") from None
    except (RecursionError, OverflowError):  # sre's parser on thousands of nested groups
        raise _Bad(f"{where} is not a usable regular expression: nested too deeply") from None
    return p


def _list(x: Any, where: str, what: str = "a list") -> list:
    """`x` as a list, [] when absent. Anything else is one line: a number (-inf, 2^64) is not
    iterable, and a text or a mapping would be taken item by item (one-letter patterns, keys)."""
    if x is None:
        return []
    if not isinstance(x, list):
        raise _Bad(f"{where} must be {what}")
    return x


def _str_list(x: Any, where: str) -> tuple[str, ...]:
    return tuple(_str(v, f"{where}[{i}]") for i, v in enumerate(_list(x, where)))


def parse_spec(doc: Any, path: str | os.PathLike | None = None) -> DeviceSpec:
    """Validate one parsed YAML document; raise InputError(path, one-line problem) when it is wrong."""
    try:
        return _parse(doc, None if path is None else str(path))
    except _Bad as exc:
        raise InputError(path, f"bad device spec: {exc}") from None


def _parse(doc: Any, path: str | None) -> DeviceSpec:
    if not isinstance(doc, Mapping):
        raise _Bad("the file must hold one mapping (key: value pairs)")
    unknown = set(doc) - _TOP_KEYS
    if unknown:
        raise _Bad(f"unknown key(s) {sorted(unknown)}")
    ver = doc.get("schema_version")
    if ver != SCHEMA_VERSION:
        raise _Bad(f"schema_version must be {SCHEMA_VERSION}, got {ver!r}")
    key = _str(doc.get("key"), "key")
    if not _KEY_RE.match(key):
        raise _Bad(f"key {key!r} must be lower-case letters, digits, '.', '_' or '-'")
    name = _str(doc.get("name"), "name")
    vendor = _str(doc.get("vendor"), "vendor")
    scope = _str(doc.get("scope", "device"), "scope")
    if scope not in SCOPES:
        raise _Bad(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")

    sources: dict[str, Source] = {}
    for sk, sv in _mapping(doc.get("sources"), "sources", optional=False).items():
        sv = _mapping(sv, f"sources.{sk}", optional=False)
        bad = set(sv) - {"title", "url", "publisher", "note"}
        if bad:
            raise _Bad(f"sources.{sk} has unknown key(s) {sorted(bad)}")
        sources[str(sk)] = Source(
            str(sk),
            _str(sv.get("title"), f"sources.{sk}.title"),
            _str(sv.get("url"), f"sources.{sk}.url", optional=True),
            _str(sv.get("publisher"), f"sources.{sk}.publisher", optional=True),
            _str(sv.get("note"), f"sources.{sk}.note", optional=True),
        )
    if not sources:
        raise _Bad("sources is empty: every number must name its source")

    def opt_value(k: str, **kw) -> Value | None:
        return None if doc.get(k) is None else _value(doc[k], k, sources, **kw)

    cu = doc.get("compute_units")
    sm_count = kind = None
    if cu is not None:
        v = _value(cu, "compute_units", sources, limits="count", integer=True, clock_ok=False)
        sm_count, kind = int(v.value), _str(cu.get("kind"), "compute_units.kind", optional=True)
    boost = opt_value("boost_clock_mhz", limits="clock_mhz", clock_ok=False)
    base = opt_value("base_clock_mhz", limits="clock_mhz", clock_ok=False)
    mem = opt_value("memory_bytes", limits="bytes", integer=True, clock_ok=False)
    l2 = opt_value("l2_cache_bytes", limits="bytes", integer=True, clock_ok=False)

    def peaks(section: str, allowed: Sequence[str] | None) -> dict[str, Value]:
        out = {}
        for p, e in _mapping(doc.get(section), section).items():
            if allowed is not None and p not in allowed:
                raise _Bad(f"{section}.{p}: unknown precision; precisions: {', '.join(allowed)}")
            out[str(p)] = _value(e, f"{section}.{p}", sources, limits="ops_per_s")
        return out

    dense = peaks("peak_flops_per_s_dense", PRECISIONS)
    sparse = peaks("peak_flops_per_s_sparse", PRECISIONS)
    other = peaks("other_peaks_ops_per_s", None)
    for p, s in sparse.items():
        d = dense.get(p)
        if d is not None and d.value > s.value * (1 + 1e-9):
            raise _Bad(f"peak_flops_per_s_dense.{p} ({d.value:g}) exceeds peak_flops_per_s_sparse.{p} ({s.value:g})")

    bws = {}
    for lv, e in _mapping(doc.get("bandwidth_bytes_per_s"), "bandwidth_bytes_per_s").items():
        if lv not in BANDWIDTH_LEVELS:
            raise _Bad(f"bandwidth_bytes_per_s.{lv}: unknown memory level; levels: {', '.join(BANDWIDTH_LEVELS)}")
        v = _value(e, f"bandwidth_bytes_per_s.{lv}", sources, limits="bytes_per_s")
        if lv != "dram" and v.clock_hz is None and boost is not None:
            # An on-chip figure without its own clock is taken at the boost clock it was derived from.
            v = replace(v, clock_hz=boost.value * 1e6)
        bws[str(lv)] = v

    links = {}
    for ln, e in _mapping(doc.get("interconnect_bytes_per_s"), "interconnect_bytes_per_s").items():
        if ln not in INTERCONNECTS:
            raise _Bad(f"interconnect_bytes_per_s.{ln}: unknown link; links: {', '.join(INTERCONNECTS)}")
        links[str(ln)] = _value(e, f"interconnect_bytes_per_s.{ln}", sources, limits="bytes_per_s", clock_ok=False)

    caps = {}
    for lv, e in _mapping(doc.get("on_chip_memories"), "on_chip_memories").items():
        e = _mapping(e, f"on_chip_memories.{lv}", optional=False)
        bad = set(e) - {"capacity_bytes", "note"}
        if bad:
            raise _Bad(f"on_chip_memories.{lv} has unknown key(s) {sorted(bad)}")
        if lv not in EXTRA_BANDWIDTH_LEVELS and lv not in MEMORY_LEVELS:
            raise _Bad(f"on_chip_memories.{lv}: unknown level; levels: {', '.join(BANDWIDTH_LEVELS)}")
        if e.get("capacity_bytes") is not None:
            caps[str(lv)] = _value(e["capacity_bytes"], f"on_chip_memories.{lv}.capacity_bytes", sources, limits="bytes", integer=True, clock_ok=False)

    conflicts = []
    for i, c in enumerate(_list(doc.get("conflicts"), "conflicts")):
        c = _mapping(c, f"conflicts[{i}]", optional=False)
        vals = []
        for j, v in enumerate(_list(c.get("values"), f"conflicts[{i}].values")):
            v = _mapping(v, f"conflicts[{i}].values[{j}]", optional=False)
            sk = _str(v.get("source"), f"conflicts[{i}].values[{j}].source")
            if sk not in sources:
                raise _Bad(f"conflicts[{i}].values[{j}].source {sk!r} is not a key of 'sources'")
            vals.append((_num(v.get("value"), f"conflicts[{i}].values[{j}].value"), sk, _str(v.get("note"), "note", optional=True)))
        if len(vals) < 2:
            raise _Bad(f"conflicts[{i}] needs at least two values")
        conflicts.append(Conflict(_str(c.get("field"), f"conflicts[{i}].field"), tuple(vals), _str(c.get("resolution"), f"conflicts[{i}].resolution")))

    raw_patterns = _list(doc.get("match_patterns"), "match_patterns", "a list of regular expressions")
    patterns = tuple(_regex(p, f"match_patterns[{i}]") for i, p in enumerate(raw_patterns))
    family = None if doc.get("family_pattern") is None else _regex(doc["family_pattern"], "family_pattern")
    return DeviceSpec(
        key=key,
        name=name,
        vendor=vendor,
        scope=scope,
        architecture=_str(doc.get("architecture"), "architecture", optional=True),
        form_factor=_str(doc.get("form_factor"), "form_factor", optional=True),
        compute_capability=_capability(doc.get("compute_capability")),
        sm_count=sm_count,
        compute_unit_kind=kind,
        boost_clock_hz=None if boost is None else boost.value * 1e6,
        base_clock_hz=None if base is None else base.value * 1e6,
        memory_bytes=None if mem is None else int(mem.value),
        memory_type=_str(doc.get("memory_type"), "memory_type", optional=True),
        l2_cache_bytes=None if l2 is None else int(l2.value),
        peaks_dense=MappingProxyType(dense),
        peaks_sparse=MappingProxyType(sparse),
        bandwidths=MappingProxyType(bws),
        other_peaks=MappingProxyType(other),
        on_chip_capacity_bytes=MappingProxyType(caps),
        interconnects=MappingProxyType(links),
        aliases=_str_list(doc.get("aliases"), "aliases"),
        match_patterns=patterns,
        family_pattern=family,
        sources=MappingProxyType(sources),
        conflicts=tuple(conflicts),
        notes=_str_list(doc.get("notes"), "notes"),
        path=path,
    )


def read_spec_file(path: str | os.PathLike) -> DeviceSpec:
    p = Path(path)
    try:
        # a FIFO or a device would block or never end (fuzz_surfaces spec #37: a FIFO named
        # spec.yaml hung `devices --spec`): only a regular file is opened
        # (a failed stat raises what open() would: the handlers below word it)
        if file_kind(p) == OTHER:
            raise InputError(p, "not a regular file (a pipe or a device): save the spec to a file first")
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(p, "no such file") from None
    except IsADirectoryError:
        raise InputError(p, "is a folder, not a device spec file") from None
    except UnicodeDecodeError:
        raise InputError(p, "not a text (YAML) file") from None
    except OSError as exc:
        raise InputError(p, f"cannot read: {exc.strerror or exc}") from None
    if not text.strip():
        raise InputError(p, "empty file")
    from profaudit import safe_yaml

    # the alias and depth budget of claim files: a spec nested 1,500 deep was a RecursionError at
    # the catch-all (fuzz_surfaces spec #31), and aliases could expand without bound
    doc = safe_yaml.load(text, p)
    try:
        return parse_spec(doc, p)
    except RecursionError:
        raise InputError(p, f"nested more than {safe_yaml.MAX_DEPTH} levels deep") from None


# --------------------------------------------------------------------------------------------------
# Loading


@lru_cache(maxsize=1)
def _package_specs() -> dict[str, DeviceSpec]:
    from importlib import resources

    import yaml

    # libyaml's parser when PyYAML was built with it: the pure-Python one spent ~0.9 s (1.5-5 s on a
    # busy machine) on the 84 shipped files, paid by every command that matches a device (each
    # `audit`). The shipped files are ours, so the C parser's lack of a nesting limit does not
    # matter here; user files keep safe_yaml's budgeted pure-Python path.
    # tests/test_specs_cloader.py checks both loaders read every shipped file alike.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out: dict[str, DeviceSpec] = {}
    root = resources.files("profaudit.device_specs")
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".yaml"):
            continue
        spec = parse_spec(yaml.load(entry.read_text(encoding="utf-8"), Loader=loader), f"device_specs/{entry.name}")
        if spec.key in out:
            raise InputError(f"device_specs/{entry.name}", f"duplicate device key {spec.key!r}")
        out[spec.key] = spec
    return out


def _expand_paths(extra_paths: Iterable[str | os.PathLike]) -> list[Path]:
    files: list[Path] = []
    for raw in extra_paths or ():
        p = Path(raw)
        if p.is_dir():
            files.extend(sorted(q for q in p.iterdir() if q.suffix in (".yaml", ".yml") and q.is_file()))
        else:
            files.append(p)
    return files


def load_specs(extra_paths: Iterable[str | os.PathLike] = ()) -> dict[str, DeviceSpec]:
    """All device specs by key: the shipped ones plus the user's files (or folders of *.yaml).

    A user file whose key equals a shipped one replaces it (that is how a user corrects or
    re-clocks a shipped spec); two user files with the same key are an error.
    """
    specs = dict(_package_specs())
    seen: dict[str, Path] = {}
    for f in _expand_paths(extra_paths):
        spec = read_spec_file(f)
        if spec.key in seen:
            raise InputError(f, f"device key {spec.key!r} is also defined in {seen[spec.key]}")
        seen[spec.key] = f
        specs[spec.key] = spec
    return specs


# --------------------------------------------------------------------------------------------------
# Matching reported names


def normalize_name(name: str) -> str:
    """Lower case, punctuation to single spaces: 'NVIDIA A100-SXM4-40GB' -> 'nvidia a100 sxm4 40gb'."""
    return re.sub(r"[^a-z0-9]+", " ", str(name).lower()).strip()


# Longest reported device name matched against the specs (real ones are under 64 characters).
MAX_DEVICE_NAME_CHARS = 256


@dataclass(frozen=True)
class Match:
    """The outcome of matching a reported device name: the spec, or None and why."""

    name: str
    spec: DeviceSpec | None
    reason: str
    candidates: tuple[str, ...] = ()


def _fits(spec: DeviceSpec, memory_bytes: float | None, sm_count: int | None) -> bool:
    # A driver never reports more memory than is fitted, and reserves a few percent of it.
    if memory_bytes is not None and spec.memory_bytes is not None:
        if not (0.85 * spec.memory_bytes <= memory_bytes <= spec.memory_bytes):
            return False
    if sm_count is not None and spec.sm_count is not None and spec.sm_count != sm_count:
        return False
    return True


def resolve_device(
    name: str | None,
    *,
    memory_bytes: float | None = None,
    sm_count: int | None = None,
    extra_paths: Iterable[str | os.PathLike] = (),
    specs: Mapping[str, DeviceSpec] | None = None,
) -> Match:
    """Match a name a tool reported ('NVIDIA H100 80GB HBM3', 'TPU v5 lite') to one spec.

    Order: spec key, then aliases (after normalisation), then each spec's match patterns, then its
    family pattern. More than one candidate, or a family without a variant, is ambiguous: the
    optional `memory_bytes`/`sm_count` the tool also reported may settle it; otherwise the answer is
    None with the reason. Nothing is guessed.
    """
    specs = load_specs(extra_paths) if specs is None else specs
    if name is None or not str(name).strip():
        return Match(str(name), None, "no device name was reported")
    raw = str(name)
    if len(raw) > MAX_DEVICE_NAME_CHARS:
        # No tool reports a device name this long; the match patterns, written for short names,
        # can take quadratic time on a long one that repeats a real name (a damaged or hostile
        # file), so such a text is refused before any pattern sees it.
        return Match(raw[:60] + "…", None, f"not a device name: a text of {fmt_int(len(raw))} characters (a reported device name is at most {MAX_DEVICE_NAME_CHARS})")
    norm = normalize_name(raw)
    for s in specs.values():
        if norm == normalize_name(s.key):
            return Match(raw, s, f"spec key {s.key}")
    hinted = memory_bytes is not None or sm_count is not None
    alias_hits = [s for s in specs.values() if any(norm == normalize_name(a) for a in s.aliases)]
    if len(alias_hits) == 1:
        s = alias_hits[0]
        if hinted and not _fits(s, memory_bytes, sm_count):
            return Match(raw, None, f"{raw!r} is an alias of {s.key} but the reported memory size / SM count does not fit it (a MIG slice or another variant?): pass --device KEY or --spec FILE", (s.key,))
        return Match(raw, s, f"alias of {s.key}")
    pattern_hits = alias_hits or [s for s in specs.values() if any(re.search(p, norm) for p in s.match_patterns)]

    def settle(cands: list[DeviceSpec], family: bool) -> Match:
        keys = tuple(s.key for s in cands)
        if hinted:
            fit = [s for s in cands if _fits(s, memory_bytes, sm_count)]
            if len(fit) == 1:
                return Match(raw, fit[0], f"{raw!r} could be {', '.join(keys)}; only {fit[0].key} fits the reported memory size / SM count", keys)
            if not fit:
                return Match(raw, None, f"{raw!r} could be {', '.join(keys)} by name, but none fits the reported memory size / SM count: pass --device KEY or --spec FILE", keys)
            keys = tuple(s.key for s in fit)
        if family:
            return Match(raw, None, f"not matched: {raw!r} is in the family of {', '.join(keys)} but names no variant profaudit has a spec for: pass --device KEY or --spec FILE", keys)
        return Match(raw, None, f"ambiguous: {raw!r} matches {', '.join(keys)}: pass --device KEY", keys)

    if len(pattern_hits) == 1:
        s = pattern_hits[0]
        if hinted and not _fits(s, memory_bytes, sm_count):
            return Match(raw, None, f"{raw!r} matches {s.key} by name but not the reported memory size / SM count: pass --device KEY or --spec FILE", (s.key,))
        return Match(raw, s, f"name pattern of {s.key}")
    if pattern_hits:
        return settle(pattern_hits, False)
    family_hits = [s for s in specs.values() if s.family_pattern and re.search(s.family_pattern, norm)]
    if family_hits:
        return settle(family_hits, True)
    return Match(raw, None, f"unknown device {raw!r}: no spec matches (profaudit devices lists them; --spec FILE adds one)")


def match_device(name: str | None, **kw) -> DeviceSpec | None:
    """The spec for a reported device name, or None when it is unknown or ambiguous (see explain_match)."""
    return resolve_device(name, **kw).spec


def explain_match(name: str | None, **kw) -> str:
    """Why `name` matched the spec it did, or why it matched none."""
    return resolve_device(name, **kw).reason


def get_spec(key_or_name: "str | DeviceSpec", extra_paths: Iterable[str | os.PathLike] = ()) -> DeviceSpec:
    """A spec by key or reported name; UsageError naming the problem when there is none."""
    if isinstance(key_or_name, DeviceSpec):
        return key_or_name
    specs = load_specs(extra_paths)
    m = resolve_device(key_or_name, specs=specs)
    if m.spec is None:
        raise UsageError(f"device {key_or_name!r}: {m.reason}; known keys: {', '.join(sorted(specs))}")
    return m.spec


__all__ = [
    "BANDWIDTH_LEVELS",
    "Conflict",
    "DeviceSpec",
    "EXTRA_BANDWIDTH_LEVELS",
    "Match",
    "SCHEMA_VERSION",
    "Source",
    "Value",
    "explain_match",
    "get_spec",
    "load_specs",
    "match_device",
    "normalize_name",
    "parse_spec",
    "read_spec_file",
    "resolve_device",
]
