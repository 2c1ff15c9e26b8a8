"""`profaudit devices`: list the device specs, show one, or say which spec a reported name matches."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import polars as pl
import typer

from profaudit.cli.common import FORMAT_OPTION, OUTPUT_OPTION, Format, emit_frame, emit_json, emit_text

SPEC_OPTION = typer.Option(None, "--spec", help="A device spec YAML file (or folder of them) to add; repeatable.")


def _summary(specs) -> pl.DataFrame:
    rows = []
    for s in sorted(specs.values(), key=lambda s: (s.vendor, s.key)):
        rows.append({
            "key": s.key,
            "name": s.name,
            "scope": s.scope,
            "compute_units": s.sm_count,
            "boost_clock_mhz": None if s.boost_clock_hz is None else s.boost_clock_hz / 1e6,
            "memory_gib": None if s.memory_bytes is None else s.memory_bytes / 2**30,
            "dram_tb_per_s": None if "dram" not in s.bandwidths else s.bandwidths["dram"].value / 1e12,
            "fp64_tflops": _tf(s, "fp64"),
            "fp32_tflops": _tf(s, "fp32"),
            "bf16_tensor_tflops": _tf(s, "bf16_tensor"),
            "fp8_tensor_tflops": _tf(s, "fp8_tensor"),
        })
    return pl.DataFrame(rows)


def _tf(s, p):
    v = s.peak_flops_per_s(p)
    return None if v is None else v / 1e12


def _detail_text(spec, match_reason: str | None) -> str:
    from profaudit.roofline import ceilings

    lines = [f"{spec.key}: {spec.name}"]
    if match_reason:
        lines.append(f"  matched by: {match_reason}")
    facts = [("vendor", spec.vendor), ("architecture", spec.architecture), ("form factor", spec.form_factor), ("scope", spec.scope),
             ("compute units", f"{spec.sm_count} {spec.compute_unit_kind or ''}".strip() if spec.sm_count else None),
             ("boost clock", f"{spec.boost_clock_hz / 1e6:.0f} MHz" if spec.boost_clock_hz else "not published"),
             ("base clock", f"{spec.base_clock_hz / 1e6:.0f} MHz" if spec.base_clock_hz else None),
             ("memory", f"{spec.memory_bytes / 2**30:.1f} GiB {spec.memory_type or ''}".strip() if spec.memory_bytes else None),
             ("L2 cache", f"{spec.l2_cache_bytes / 2**20:.1f} MiB" if spec.l2_cache_bytes else None),
             ("file", spec.path)]
    lines += [f"  {k}: {v}" for k, v in facts if v is not None]
    lines.append("  ceilings (dense; clock each figure assumes):")
    c = ceilings(spec)
    for r in c.iter_rows(named=True):
        val = f"{r['flops_per_s'] / 1e12:,.1f} TFLOP/s" if r["kind"] == "compute" else f"{r['bytes_per_s'] / 1e9:,.0f} GB/s"
        clk = f" @ {r['clock_hz'] / 1e6:.0f} MHz" if r["clock_hz"] else ""
        lines.append(f"    {r['ceiling']:<12} {val:>22}{clk}   [{r['source']}]" + (f" ({r['derivation']})" if r["derivation"] else ""))
    if spec.peaks_sparse:
        lines.append("  sparse (2:4) tensor peaks: " + ", ".join(f"{p} {v.value / 1e12:,.1f} TFLOP/s" for p, v in spec.peaks_sparse.items()))
    if spec.other_peaks:
        lines.append("  other published peaks: " + ", ".join(f"{p} {v.value / 1e12:,.1f} T/s" for p, v in spec.other_peaks.items()))
    for conf in spec.conflicts:
        vals = "; ".join(f"{v:g} ({src}{', ' + n if n else ''})" for v, src, n in conf.values)
        lines.append(f"  conflict in {conf.field}: {vals} -> {conf.resolution}")
    for n in spec.notes:
        lines.append(f"  note: {n}")
    lines.append("  sources:")
    for s in spec.sources.values():
        lines.append(f"    [{s.key}] {s.title}" + (f" <{s.url}>" if s.url else ""))
        if s.note:
            lines.append(f"      ({s.note})")
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    @app.command("devices")
    def devices(
        name: Optional[str] = typer.Argument(None, help="A spec key or a device name as a tool reports it (e.g. 'NVIDIA H100 80GB HBM3')."),
        spec: Optional[List[Path]] = SPEC_OPTION,
        fmt: Format = FORMAT_OPTION,
        output: Optional[Path] = OUTPUT_OPTION,
    ) -> None:
        """List device specs, or show the one a key or reported device name matches (exit 2 when none does)."""
        from profaudit.errors import UsageError
        from profaudit.roofline import ceilings
        from profaudit.specs import load_specs, resolve_device

        specs = load_specs(spec or ())
        if name is None:
            emit_frame(_summary(specs), fmt, output, title=f"device specs ({len(specs)})", limit=0)
            return
        m = resolve_device(name, specs=specs)
        if m.spec is None:
            raise UsageError(f"device {name!r}: {m.reason}")
        if fmt is Format.json:
            d = m.spec.to_dict()
            d["matched_by"] = m.reason
            emit_json(d, output)
        elif fmt is Format.table:
            emit_text(_detail_text(m.spec, m.reason), output)
        else:
            emit_frame(ceilings(m.spec), fmt, output, title=m.spec.key, limit=0)
