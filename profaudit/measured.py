"""Measured ceilings: peaks a microbenchmark reached on the user's own GPU, beside the datasheet.

A datasheet peak is what the vendor says the part can do at its boost clock; a measured ceiling is
what a benchmark actually sustained on this board, in this system, at whatever clock it held. A
roofline against measured ceilings answers "how close is this kernel to what this GPU really
does", which is what rocprofiler-compute (Omniperf) users compare against.

Sources read:
- rocprofiler-compute's `roofline.csv` (its roofline microbenchmark, written into the workload
  folder): one row per device, first column `devID`, then bandwidths in GB/s (`HBMBw`, `MALLBw`,
  `L2Bw`, `L1Bw`, `LDSBw`) and peaks in GFLOP/s or GOP/s (`FP64Flops`, `FP32Flops`, `FP16Flops`,
  `BF16Flops`, `MFMAF64Flops`, `MFMAF32Flops`, `MFMAF16Flops`, `MFMABF16Flops`, `MFMAF8Flops`,
  `MFMAF6Flops`, `MFMAF4Flops`, `MFMAI8Ops`). Giga means 1e9 here (the benchmark divides bytes and
  FLOPs by 1e9). `MFMAF32Flops` (full-FP32 matrix ops) has no profaudit precision key (tf32_tensor
  is another format) and `MFMAF6Flops` none either: both stay in `other` and are shown, not used.
- a folder holding `roofline.csv` (a rocprofiler-compute workload folder).
- a ceilings file written by `profaudit bench ceilings` (JSON, `"format": "profaudit-ceilings"`,
  see profaudit.bench.ceilings): its `roofs` (bytes/s per memory level, FLOP/s per precision,
  each the best-of-N rate of the microbenchmark named in `from`) and the device it ran on, which
  must be the device the profiles name (a ceiling of another GPU is refused). Files from the
  simulated (`fake`) backend are refused: they are not measurements.

`measured_spec()` turns them into a `DeviceSpec` that `roofline()` and `ceilings()` take as
`device=`: its key ends in `@measured`, its name in "(measured ceilings)", and every value cites the
source `measured` (the file and device row it came from). It holds only what was measured: a
datasheet figure mixed in would be drawn and tabled under the measured label, so a precision or
level the benchmark did not run has no roof there (the datasheet roofline, without --ceilings,
still has it). Measured values carry no clock (the benchmark does not record the clock it ran at),
so kernel-clock roofs are left null for them rather than rescaled from a guess.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from profaudit.errors import InputError
from profaudit.specs import DeviceSpec, Source, Value

GIGA = 1e9
# roofline.csv column -> profaudit precision (compute) or memory level (bandwidth)
PEAK_COLUMNS = {
    "FP64Flops": "fp64", "FP32Flops": "fp32", "FP16Flops": "fp16", "BF16Flops": "bf16",
    "MFMAF64Flops": "fp64_tensor", "MFMAF16Flops": "fp16_tensor", "MFMABF16Flops": "bf16_tensor",
    "MFMAF8Flops": "fp8_tensor", "MFMAF4Flops": "fp4_tensor", "MFMAI8Ops": "int8_tensor",
}
BANDWIDTH_COLUMNS = {"HBMBw": "dram", "MALLBw": "llc", "L2Bw": "l2", "L1Bw": "l1", "LDSBw": "lds"}
MEASURED_SOURCE = "measured"
CEILINGS_FORMAT = "profaudit-ceilings"
CEILINGS_VERSION = 1
BENCH_SOURCE = "profaudit bench ceilings"


@dataclass(frozen=True)
class MeasuredCeilings:
    """What one benchmark run measured on one device (FLOP/s, bytes/s)."""

    peaks_flops_per_s: Mapping[str, float]
    bandwidths_bytes_per_s: Mapping[str, float]
    source: str  # what measured them, in words
    path: str
    device_index: str | None = None
    other: Mapping[str, float] = field(default_factory=dict)  # measured figures without a profaudit key, in the file's units
    device_name: str | None = None  # the device the file says it measured (ceilings files; roofline.csv has none)


MAX_ROOFLINE_CSV_BYTES = 1 << 20


def read_roofline_csv(path: str | Path, device: str | int | None = None) -> MeasuredCeilings:
    """rocprofiler-compute's roofline.csv (or a folder holding one) -> MeasuredCeilings.

    `device` picks the `devID` row; without it the file must hold one device (or every row the
    same numbers), so a multi-GPU file is never silently read as GPU 0."""
    p = Path(path)
    if p.is_dir():
        p = p / "roofline.csv"
        if not p.is_file():
            raise InputError(path, "folder without roofline.csv (run rocprof-compute profile with its roofline benchmark)")
    try:
        # one row per GPU of a few hundred bytes: a file past 1 MiB is not one the benchmark wrote,
        # and reading it whole cost ~15x its size (a 200 MB blow-up peaked at 3.1 GB: fuzz_long
        # seed 2031, rocprof-compute #1044)
        # The read itself is bounded, not only the size stat says: a device or a link to one
        # (/dev/zero) has no size and would be read for ever
        from profaudit.parsers.textsafe import read_capped

        raw = read_capped(
            p, "roofline.csv", MAX_ROOFLINE_CSV_BYTES, decompress=False, quiet=False,
            too_big=lambda size: f"roofline.csv of {size / 2**20:,.1f} MiB: the roofline benchmark writes one row per GPU (a few KB); refused over {MAX_ROOFLINE_CSV_BYTES // 2**20} MiB",
        )
        text = raw.decode("utf-8-sig")
    except OSError as exc:
        raise InputError(p, f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InputError(p, "not a roofline.csv: not UTF-8 text") from None
    try:
        rows = [r for r in csv.reader(io.StringIO(text)) if any(c.strip() for c in r)]
    except csv.Error as exc:  # a cell over the csv module's 128 KiB field limit, a NUL
        raise InputError(p, f"not a readable roofline.csv: {exc}") from None
    if not rows:
        raise InputError(p, "empty roofline.csv")
    head = [h.strip() for h in rows[0]]
    known = set(PEAK_COLUMNS) | set(BANDWIDTH_COLUMNS)
    if not head or not (set(head) & known):
        raise InputError(p, "not a rocprofiler-compute roofline.csv (no HBMBw, L2Bw, FP32Flops, MFMA...Flops columns)")
    data = rows[1:]
    if not data:
        raise InputError(p, "roofline.csv has a header but no device rows (the roofline benchmark did not finish?)")
    for i, r in enumerate(data):
        if len(r) != len(head):
            raise InputError(p, f"row {i + 2} has {len(r)} cells for {len(head)} columns (file cut short?)")
    id_col = 0 if head[0] not in known else None
    if device is not None:
        if id_col is None:
            raise InputError(p, "roofline.csv has no devID column to pick a device by")
        data = [r for r in data if r[id_col].strip() == str(device)]
        if not data:
            raise InputError(p, f"roofline.csv has no row for device {device}")
    elif len({tuple(r[1 if id_col == 0 else 0:]) for r in data}) > 1:
        ids = [r[id_col].strip() for r in data] if id_col is not None else [str(i) for i in range(len(data))]
        raise InputError(p, f"roofline.csv measured {len(data)} devices ({', '.join(ids)}) with different results: choose one")
    row = data[0]
    peaks, bws, other = {}, {}, {}
    for h, cell in zip(head, row):
        if h not in known and h not in ("MFMAF32Flops", "MFMAF6Flops"):
            continue
        try:
            v = float(cell)
        except ValueError:
            raise InputError(p, f"column {h}: {cell.strip()!r} is not a number") from None
        if not math.isfinite(v) or v < 0:
            raise InputError(p, f"column {h}: {cell.strip()!r} is not a rate")
        if v == 0:
            continue  # the benchmark writes 0 for what this GPU cannot run: not a ceiling
        if h in PEAK_COLUMNS:
            peaks[PEAK_COLUMNS[h]] = v * GIGA
        elif h in BANDWIDTH_COLUMNS:
            bws[BANDWIDTH_COLUMNS[h]] = v * GIGA
        else:
            other[h] = v
    if not peaks and not bws:
        raise InputError(p, "roofline.csv holds no non-zero ceiling")
    return MeasuredCeilings(MappingProxyType(peaks), MappingProxyType(bws), "rocprofiler-compute roofline benchmark", str(p),
                            row[id_col].strip() if id_col is not None else None, MappingProxyType(other))


def read_ceilings(path: str | Path, device: str | int | None = None) -> MeasuredCeilings:
    """Any measured-ceilings input: a `profaudit bench ceilings` file (JSON) or rocprofiler-compute's
    roofline.csv (or its workload folder)."""
    p = Path(path)
    if p.is_file():
        try:
            with p.open("rb") as f:
                head = f.read(64).lstrip()
        except OSError as exc:
            raise InputError(p, f"cannot read: {exc.strerror or exc}") from None
        if head.startswith(b"{"):
            return read_ceilings_file(p)
    return read_roofline_csv(path, device)


def read_ceilings_file(path: str | Path) -> MeasuredCeilings:
    """A `profaudit bench ceilings` file -> MeasuredCeilings (its `roofs`, validated)."""
    import json

    from profaudit.schema import MEMORY_LEVELS, PRECISIONS

    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(p, f"cannot read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(p, f"not a ceilings file: invalid JSON ({str(exc).splitlines()[0]})") from None
    if not isinstance(doc, dict) or doc.get("format") != CEILINGS_FORMAT:
        raise InputError(p, f'not a profaudit ceilings file (no "format": "{CEILINGS_FORMAT}"; write one with profaudit bench ceilings)')
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise InputError(p, f"ceilings file version {version!r} is not a version number")
    if version > CEILINGS_VERSION:
        raise InputError(p, f"ceilings file version {version} was written by a newer profaudit (this one reads up to {CEILINGS_VERSION})")
    if doc.get("simulated"):
        raise InputError(p, "ceilings from the simulated (fake) backend are not measurements: measure with --backend torch or numpy")
    roofs = doc.get("roofs")
    if not isinstance(roofs, dict):
        raise InputError(p, "ceilings file has no roofs object")
    tables = {}
    for table, keys in (("bandwidth_bytes_per_s", MEMORY_LEVELS), ("peak_flops_per_s", PRECISIONS)):
        got = roofs.get(table, {})
        if not isinstance(got, dict):
            raise InputError(p, f"roofs.{table} is not an object")
        tables[table] = {}
        for k, entry in got.items():
            if k not in keys:
                raise InputError(p, f"roofs.{table}: unknown key {k!r} (known: {', '.join(keys)})")
            v = entry.get("value") if isinstance(entry, dict) else None
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise InputError(p, f"roofs.{table}.{k}: value {v!r} is not a positive rate")
            tables[table][k] = float(v)
    if not tables["bandwidth_bytes_per_s"] and not tables["peak_flops_per_s"]:
        raise InputError(p, "ceilings file holds no roof (every microbenchmark failed? see its measurements)")
    name = doc.get("device_name")
    return MeasuredCeilings(MappingProxyType(tables["peak_flops_per_s"]), MappingProxyType(tables["bandwidth_bytes_per_s"]),
                            f"{BENCH_SOURCE}, {doc.get('statistic', 'best of N').split(':')[0]}", str(p), None,
                            device_name=str(name) if isinstance(name, str) and name else None)


def measured_spec(m: MeasuredCeilings, base: DeviceSpec | None = None) -> DeviceSpec:
    """A DeviceSpec holding only the measured ceilings, labelled as such; `base` (the datasheet
    spec of the measured device) lends its identity (key, name, vendor, clocks), not its peaks."""
    where = f"{m.path}" + (f", devID {m.device_index}" if m.device_index is not None else "")
    src = Source(MEASURED_SOURCE, f"measured: {m.source} ({where})", note="measured on the user's GPU, not a datasheet figure")
    mv = lambda v: Value(float(v), (MEASURED_SOURCE,), None, "measured")  # noqa: E731
    peaks = MappingProxyType({p: mv(v) for p, v in m.peaks_flops_per_s.items()})
    # lds has no roofline level in profaudit; it stays in the measured figures (metadata)
    bws = MappingProxyType({lv: mv(v) for lv, v in m.bandwidths_bytes_per_s.items() if lv != "lds"})
    sources = MappingProxyType({MEASURED_SOURCE: src})
    notes = (f"measured ceilings from {where}",)
    if base is None:
        return DeviceSpec(key="measured", name="measured ceilings", vendor="", scope="device", peaks_dense=peaks,
                          bandwidths=bws, sources=sources, notes=notes, path=m.path)
    return replace(base, key=f"{base.key}@measured", name=f"{base.name} (measured ceilings)", peaks_dense=peaks,
                   peaks_sparse=MappingProxyType({}), bandwidths=bws, other_peaks=MappingProxyType({}), sources=sources,
                   conflicts=(), notes=notes)


def as_metadata(m: MeasuredCeilings) -> dict:
    """The measured ceilings as profile metadata (units in the keys)."""
    return {
        "source": m.source, "path": m.path, "device_index": m.device_index,
        "peak_flops_per_s": dict(m.peaks_flops_per_s), "bandwidth_bytes_per_s": dict(m.bandwidths_bytes_per_s),
        "other_giga_per_s": dict(m.other) or None,
    }


def measured_device(ps, path: str | Path, device=None, extra_specs=()) -> DeviceSpec:
    """The spec `roofline(..., device=)` draws against for `--ceilings PATH`: the measured file over
    the datasheet of `device`, or of the one device the profiles name (a measurement belongs to one
    GPU, so profiles naming several models are refused rather than all drawn against it)."""
    from profaudit.errors import UsageError
    from profaudit.specs import get_spec, load_specs, resolve_device

    m = read_ceilings(path)
    if device is not None:
        base = device if isinstance(device, DeviceSpec) else get_spec(device, extra_specs)
        return measured_spec(m, base)
    names = set(ps.kernels["device_name"].drop_nulls().unique().to_list()) if ps.kernels.height else set()
    if not names and ps.metadata.height:
        names = set(ps.metadata["device_name"].drop_nulls().to_list())
    specs = load_specs(extra_specs)
    found = {s.key: s for s in (resolve_device(n, specs=specs).spec for n in names) if s is not None}
    if len(found) > 1:
        raise UsageError(f"--ceilings: the profiles name {len(found)} devices ({', '.join(sorted(found))}); measured ceilings belong to one: pass --device")
    own = resolve_device(m.device_name, specs=specs).spec if m.device_name else None
    if m.device_name and found and (own is None or own.key not in found):
        raise UsageError(f"--ceilings {path}: measured on {m.device_name} but the profiles ran on {next(iter(found))}: measure on that GPU (or pass --device to draw anyway)")
    return measured_spec(m, next(iter(found.values()), own))
