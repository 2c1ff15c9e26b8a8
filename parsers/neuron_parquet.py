"""AWS Neuron Explorer profiles: a directory of Parquet tables (`<name>@latest/Instruction.parquet`, ...).

`neuron-explorer view` writes one Parquet file per table (big ones split as `X_0.parquet`,
`X_1.parquet`); the schema is documented in aws-neuron-sdk
`tools/neuron-explorer/profile-schema-reference.rst` (7.4.0 at SDK 2.31). Mapping:

- `Instruction` -> `kernels`: one row per NeuronCore engine instruction. `name`/`short_name` =
  `opcode`, `op_name` = the HLO instruction (`hlo_name`, else the opcode), `category` = engine
  (tensor, vector, scalar, gpsimd, sync), `module` = the NEFF, `flops_total` = `raw_flops`
  (2 per MAC, as the tool counts), `dram_read/write_bytes` = `hbm_read/write_bytes` (measured by
  the tool per instruction: "tool"). `adjusted_flops` (BF16-equivalent), SBUF/PSUM/spill bytes and
  wait times go to `metrics`.
- `DmaPacket` -> `transfers` (kind "dma", direction = queue type, bytes = `transfer_bytes`).
- `HbmUsage`, `Throttle` (k/n utilisation limit), the other `*Usage` series -> `counters`;
  `Throttle` events and `SystemProfileEvents` also -> `ranges`.
- `Summary` -> metadata (seconds converted: `neuron_total_time_s`, `neuron_total_time_ns`), HBM
  read/write bytes, MFU/MBU estimates; `Metadata` -> device (from `instance_type`), versions,
  clocks; `Warning` rows -> metadata (check them first: they flag missing data).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import polars as pl

from profaudit.errors import InputError
from profaudit.parsers.isolate import read_parquet_untrusted
from profaudit.parsers.base import Probe, ReadOptions, apply_device_option, map_unique, new_profile
from profaudit.parsers.neuron_common import (
    BASE_CLOCK_HZ,
    capture_evidence,
    col_f64,
    col_i64,
    col_str,
    device_from_instance_type,
    engine_category,
    hlo_short_expr,
    summary_facts,
)

_MARKER_TABLES = ("Instruction", "Summary", "DmaPacket", "Metadata", "SystemProfileEvents")
# kernels per slice of the metrics long form (see instructions_to_kernels)
_METRIC_SLICE_KERNELS = 1 << 17
_INSTRUCTION_METRICS = (
    "adjusted_flops", "flops_transpose", "adjusted_flops_transpose", "sbuf_read_bytes", "sbuf_write_bytes",
    "psum_read_bytes", "psum_write_bytes", "spill_save_bytes", "spill_reload_bytes", "evt_wait_time_ns", "dma_wait_time_ns",
)
_USAGE_TABLES = ("DmaUsage", "SbufUsage", "PsumUsage", "CpuUsage", "HostMemUsage", "SystemProfileHbmUsage")


def table_files(d: Path) -> dict[str, list[Path]]:
    """Table name -> its Parquet part files (`X.parquet`, `X_0.parquet`, `X_1.parquet`, ...)."""
    out: dict[str, list[Path]] = {}
    for f in sorted(Path(d).glob("*.parquet")):
        m = re.match(r"^([A-Za-z][A-Za-z0-9]*?)(?:_(\d+))?\.parquet$", f.name)
        if m:
            out.setdefault(m.group(1), []).append(f)
    return out


def read_tables(d: Path, names: set[str] | None = None) -> dict[str, pl.DataFrame]:
    out = {}
    for name, files in table_files(d).items():
        if names is not None and name not in names:
            continue
        parts = []
        for f in files:
            parts.append(read_parquet_untrusted(f, f, "unreadable Parquet table"))
        out[name] = pl.concat(parts, how="diagonal_relaxed") if len(parts) > 1 else parts[0]
    return out


def _first_row(df: pl.DataFrame | None) -> dict[str, Any]:
    if df is None or df.height == 0:
        return {}
    return df.row(0, named=True)


def instructions_to_kernels(ins: pl.DataFrame, *, device_name: str | None, device_id: int | None, module: str | None) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """Instruction rows -> (kernels, metrics). Shared with the JSON reader (same field names)."""
    cols = ins.columns
    start = col_i64(ins, "start_ts") if "start_ts" in cols else col_i64(ins, "timestamp")
    if "duration_ns" in cols:
        dur = col_f64(ins, "duration_ns")
    elif "duration" in cols:
        dur = col_f64(ins, "duration")
    else:
        dur = (col_f64(ins, "end_ts") - start.cast(pl.Float64))
    end = col_i64(ins, "end_ts") if "end_ts" in cols else (start + dur.cast(pl.Int64, strict=False))
    engine_col = "engine" if "engine" in cols else "label" if "label" in cols else None
    if engine_col:
        category = map_unique(ins.get_column(engine_col).cast(pl.Utf8), engine_category)
    else:
        category = pl.lit(None, dtype=pl.Utf8)
    opcode = col_str(ins, "opcode")
    op_name = pl.coalesce(hlo_short_expr("hlo_name"), opcode) if "hlo_name" in cols else opcode
    rd, wr = col_f64(ins, "hbm_read_bytes"), col_f64(ins, "hbm_write_bytes")
    dram = pl.when(rd.is_null() & wr.is_null()).then(None).otherwise(rd.fill_null(0) + wr.fill_null(0))
    flops = col_f64(ins, "raw_flops")
    base = ins.with_row_index("_row").select(
        pl.col("_row"),
        opcode.alias("name"),
        opcode.alias("short_name"),
        op_name.alias("op_name"),
        category.alias("category"),
        start.alias("start_ns"),
        end.alias("end_ns"),
        dur.alias("duration_ns"),
        rd.alias("dram_read_bytes"),
        wr.alias("dram_write_bytes"),
        dram.alias("dram_bytes"),
        pl.when(dram.is_not_null()).then(pl.lit("tool")).alias("dram_bytes_method"),
        flops.alias("flops_total"),
        pl.when(flops.is_not_null()).then(pl.lit("tool")).alias("flops_method"),
    )
    base = base.sort(["start_ns", "_row"], nulls_last=True).with_row_index("kernel_id").with_columns(
        pl.col("kernel_id").cast(pl.Int64),
        pl.lit("neuron").alias("source"),
        pl.lit(device_name, dtype=pl.Utf8).alias("device_name"),
        pl.lit(device_id, dtype=pl.Int64).alias("device_id"),
        pl.lit(module, dtype=pl.Utf8).alias("module"),
    )
    metric_cols = [c for c in _INSTRUCTION_METRICS if c in cols]
    extra = [c for c in ("engine", "label", "pcore_idx", "pc", "bir_id", "performance_mode", "nki_source_location", "layer", "hlo_name") if c in cols]
    metrics = None
    if metric_cols or extra:
        # built in slices of kernels, in kernel order: the long form is ~6x the instruction rows,
        # and built whole (unpivots, their filtered copies, the concatenation, a join for the
        # kernel ids, a sort) a 200 MB Instruction table (1.5 M rows, 9.9 M metric rows) peaked at
        # 2.9 GB, of which 0.65 GB the Parquet read. A slice's rows are final once sorted, so only
        # one slice's intermediates are alive at a time
        order = base.get_column("_row")  # the instruction row of each kernel id
        rank = pl.col("metric").replace_strict({c: i for i, c in enumerate(metric_cols + extra)}, return_dtype=pl.UInt32)
        slices = []
        for lo in range(0, max(len(order), 1), _METRIC_SLICE_KERNELS):  # one (empty) slice for no rows, as before
            rows = order.slice(lo, _METRIC_SLICE_KERNELS)
            sub = ins.select(metric_cols + extra).gather(rows).with_columns(pl.int_range(lo, lo + len(rows), dtype=pl.Int64).alias("kernel_id"))
            parts = []
            if metric_cols:
                num = sub.select(["kernel_id", *[pl.col(c).cast(pl.Float64, strict=False) for c in metric_cols]])
                long = num.unpivot(index="kernel_id", on=metric_cols, variable_name="metric", value_name="value").drop_nulls("value")
                parts.append(long.with_columns(
                    pl.when(pl.col("metric").str.ends_with("_ns")).then(pl.lit("ns"))
                    .when(pl.col("metric").str.contains("bytes")).then(pl.lit("byte"))
                    .otherwise(pl.lit("flop")).alias("unit"),
                    pl.lit(None, dtype=pl.Utf8).alias("value_str"),
                    pl.lit("metric").alias("kind"),
                ))
            if extra:
                sv = sub.select(["kernel_id", *[pl.col(c).cast(pl.Utf8) for c in extra]])
                long = sv.unpivot(index="kernel_id", on=extra, variable_name="metric", value_name="value_str").drop_nulls("value_str")
                parts.append(long.with_columns(pl.lit("").alias("unit"), pl.lit(None, dtype=pl.Float64).alias("value"), pl.lit("launch").alias("kind")))
            # each kernel's rows in the order of `metric_cols + extra`
            slices.append(pl.concat([p.select("kernel_id", "metric", "value", "unit", "value_str", "kind") for p in parts])
                          .with_columns(rank.alias("_rank")).sort("kernel_id", "_rank")
                          .select("metric", "value", "unit", "value_str", "kind", "kernel_id"))
        metrics = pl.concat(slices)
    return base.drop("_row"), metrics


def dma_to_transfers(dma: pl.DataFrame, device_id: int | None) -> pl.DataFrame:
    cols = dma.columns
    start = col_i64(dma, "start_ts") if "start_ts" in cols else col_i64(dma, "timestamp")
    dur = col_f64(dma, "duration_ns") if "duration_ns" in cols else col_f64(dma, "duration")
    end = col_i64(dma, "end_ts") if "end_ts" in cols else (start + dur.cast(pl.Int64, strict=False))
    nbytes = pl.coalesce(col_f64(dma, "transfer_bytes"), col_f64(dma, "size"), col_f64(dma, "bytes"), col_f64(dma, "write_bytes"))
    tput = col_f64(dma, "throughput")
    df = dma.select(
        pl.lit("dma").alias("kind"),
        col_str(dma, "queue_type").alias("direction"),
        pl.coalesce(col_str(dma, "queue_name"), col_str(dma, "queue_type"), col_str(dma, "label"), col_str(dma, "name")).alias("name"),
        nbytes.alias("bytes"),
        start.alias("start_ns"),
        end.alias("end_ns"),
        dur.alias("duration_ns"),
        pl.coalesce(tput, pl.when(dur > 0).then(nbytes / (dur * 1e-9))).alias("throughput_bytes_per_s"),
        pl.lit(device_id, dtype=pl.Int64).alias("device_id"),
        col_i64(dma, "queue_idx").alias("stream"),
    )
    return df.sort("start_ns", nulls_last=True).with_row_index("transfer_id").with_columns(pl.col("transfer_id").cast(pl.Int64))


def _counters(tables: dict[str, pl.DataFrame], device_id: int | None) -> pl.DataFrame | None:
    parts = []
    hbm = tables.get("HbmUsage")
    if hbm is not None and hbm.height and "timestamp" in hbm.columns:
        for col, canon, unit in (("current_throughput", "hbm_throughput_bytes_per_s", "byte/s"), ("total_transfer_bytes", "hbm_transfer_bytes_cumulative", "byte")):
            if col in hbm.columns:
                parts.append(hbm.select(pl.lit(canon).alias("counter"), pl.lit(f"HbmUsage.{col}").alias("raw_name"), pl.lit(unit).alias("unit"),
                                        col_i64(hbm, "timestamp").alias("timestamp_ns"), col_f64(hbm, col).alias("value"),
                                        pl.lit(device_id, dtype=pl.Int64).alias("device_id")))
    thr = tables.get("Throttle")
    if thr is not None and thr.height and {"k", "n", "timestamp"} <= set(thr.columns):
        parts.append(thr.select(
            pl.lit("throttle_utilization_limit").alias("counter"),
            pl.concat_str(pl.lit("Throttle."), col_str(thr, "type").fill_null("unknown")).alias("raw_name"),
            pl.lit("fraction").alias("unit"),
            col_i64(thr, "timestamp").alias("timestamp_ns"),
            pl.when(col_f64(thr, "n") > 0).then(col_f64(thr, "k") / col_f64(thr, "n")).alias("value"),
            pl.lit(device_id, dtype=pl.Int64).alias("device_id"),
        ))
    for name in _USAGE_TABLES:
        t = tables.get(name)
        if t is None or not t.height or "timestamp" not in t.columns:
            continue
        num = [c for c, dt in t.schema.items() if dt.is_numeric() and c not in ("timestamp", "pcore_idx", "nc_idx", "duration", "cpu_id")]
        for c in num:
            parts.append(t.select(pl.lit(f"{name}.{c}").alias("counter"), pl.lit(f"{name}.{c}").alias("raw_name"),
                                  pl.lit("byte" if "bytes" in c or c == "usage" else "%" if "percent" in c or c == "util" else "").alias("unit"),
                                  col_i64(t, "timestamp").alias("timestamp_ns"), col_f64(t, c).alias("value"),
                                  pl.lit(device_id, dtype=pl.Int64).alias("device_id")))
    return pl.concat(parts, how="vertical_relaxed") if parts else None


def _ranges(tables: dict[str, pl.DataFrame], device_id: int | None) -> pl.DataFrame | None:
    parts = []
    thr = tables.get("Throttle")
    if thr is not None and thr.height and "timestamp" in thr.columns:
        d = col_f64(thr, "duration")
        parts.append(thr.select(pl.lit("throttle").alias("kind"), col_str(thr, "type").alias("name"), pl.lit("Throttle").alias("domain"),
                                pl.lit(device_id, dtype=pl.Int64).alias("device_id"), col_i64(thr, "timestamp").alias("start_ns"),
                                (col_i64(thr, "timestamp") + d.cast(pl.Int64, strict=False)).alias("end_ns"), d.alias("duration_ns")))
    ev = tables.get("SystemProfileEvents")
    if ev is not None and ev.height:
        src = col_str(ev, "trace_event_source")
        parts.append(ev.select(
            pl.when(src == "neuron_rt").then(pl.lit("neuron_runtime_api")).when(src.str.contains("framework")).then(pl.lit("framework")).otherwise(pl.lit("host")).alias("kind"),
            col_str(ev, "name").alias("name"), src.alias("domain"), col_i64(ev, "process_id").alias("process_id"), col_i64(ev, "thread_id").alias("thread_id"),
            col_i64(ev, "nc_idx").alias("device_id"), col_i64(ev, "start_ts").alias("start_ns"), col_i64(ev, "end_ts").alias("end_ns"),
            col_f64(ev, "duration_ns").alias("duration_ns"),
        ))
    if not parts:
        return None
    df = pl.concat(parts, how="diagonal_relaxed").sort("start_ns", nulls_last=True)
    return df.with_row_index("range_id").with_columns(pl.col("range_id").cast(pl.Int64))


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def tables_to_profile_parts(tables: dict[str, pl.DataFrame], source_name: str) -> tuple[dict[str, pl.DataFrame | None], dict[str, Any]]:
    md_row = _first_row(tables.get("Metadata"))
    neff_row = _first_row(tables.get("NeffHeader"))
    summary = _first_row(tables.get("Summary"))
    md: dict[str, Any] = {}
    device = device_from_instance_type(md_row.get("instance_type"))
    device_id = md_row.get("neuroncore_idx")
    module = neff_row.get("network_name")
    execs = tables.get("ExecutionInfo")
    if module is None and execs is not None and "neff_name" in execs.columns:
        names = execs["neff_name"].drop_nulls().unique().to_list()
        module = names[0] if len(names) == 1 else None
    tabs: dict[str, pl.DataFrame | None] = {}
    ins = tables.get("Instruction")
    if ins is not None and ins.height:
        tabs["kernels"], tabs["metrics"] = instructions_to_kernels(ins, device_name=device, device_id=device_id, module=module)
    dma = tables.get("DmaPacket")
    if dma is not None and dma.height:
        tabs["transfers"] = dma_to_transfers(dma, device_id)
    tabs["counters"] = _counters(tables, device_id)
    tabs["ranges"] = _ranges(tables, device_id)

    md["tool"] = "neuron-explorer"
    if md_row.get("explorer_version"):
        md["tool_version"] = str(md_row["explorer_version"])
    if device:
        md["device_name"] = device
    if md_row.get("instance_type"):
        md["instance_type"] = md_row["instance_type"]
    if md_row.get("driver_version"):
        md["driver_version"] = str(md_row["driver_version"])
    if md_row.get("runtime_version"):
        md["cuda_version"] = f"neuron-runtime {md_row['runtime_version']}"
    if md_row.get("first_ts"):
        md["capture_time"] = str(md_row["first_ts"])
    md["device_count"] = 1 if (device or ins is not None) else None
    clock = md_row.get("neuroncore_clock_freq")
    if clock is not None:
        md["neuroncore_clock_hz"] = float(clock) * 1e9  # the table says GHz
    elif device in BASE_CLOCK_HZ:
        md["neuroncore_clock_hz"] = BASE_CLOCK_HZ[device]
        md["neuroncore_clock_origin"] = "documented base clock"
    if md_row.get("num_physical_cores") is not None:
        # a chip spec covers every NeuronCore; this profile is one (logical) core: pass it as
        # roofline(..., cores=) to scale the chip's ceilings
        md["neuroncores_in_profile"] = int(md_row["num_physical_cores"])
    if md_row:
        md["neuron_metadata"] = {k: _clean(v) for k, v in md_row.items()}
        v = str(md_row.get("profile_schema_version") or "")
        if v and v.split(".")[0] not in ("7",):
            md["neuron_schema_note"] = f"profile schema {v}: this reader follows schema 7.x; renamed fields read as null"
    if neff_row:
        md["neff"] = {k: _clean(v) for k, v in neff_row.items()}
    if summary:
        md["neuron_summary"] = {k: _clean(v) for k, v in summary.items()}
        md.update(summary_facts(summary))
    warn = tables.get("Warning")
    if warn is not None and warn.height:
        md["neuron_warnings"] = [f"{r.get('category')}: {r.get('message')}" for r in warn.iter_rows(named=True)]
    n_exec = execs.height if execs is not None else None
    md.update(capture_evidence(source_name, n_exec))
    return tabs, md


class NeuronParquetParser:
    name = "neuron_parquet"
    source = "neuron"
    suffixes = ("/",)
    description = "AWS Neuron Explorer profile: folder of Parquet tables (Instruction, DmaPacket, HbmUsage, Throttle, Summary, ...)"

    def sniff(self, probe: Probe) -> bool:
        if not probe.is_dir:
            return False
        try:
            names = set(table_files(probe.path))
        except OSError:
            return False
        return bool(names & set(_MARKER_TABLES)) and ("Instruction" in names or "Summary" in names or "SystemProfileEvents" in names)

    def read(self, path: Path, options: ReadOptions):
        path = Path(path)
        tables = read_tables(path)
        tabs, md = tables_to_profile_parts(tables, path.name)
        apply_device_option(tabs, md, options.device)
        if not any(v is not None and v.height for v in tabs.values()) and "neuron_summary" not in md:
            raise InputError(path, "Neuron Explorer folder holds no Instruction, DmaPacket, Summary or system-profile rows")
        return new_profile(path, self, tabs, md)


PARSER = NeuronParquetParser()
