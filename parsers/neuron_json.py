"""AWS Neuron JSON exports: `neuron-profile view --output-format json` / `summary-json`, and
Profiler 2.0's `system_profile.json` and `device_profile_model_<id>.json`.

Documented shapes (aws-neuron-sdk `archive/profiler/neuron-profile-user-guide.rst`,
`neuron-profiler-2-0-beta-user-guide.rst`):

- device JSON: `{"summary": [{total_time (s), event_count, ...}], "instruction": [{timestamp (ns),
  duration (ns), label (engine row, e.g. "TensorMatrix"), hlo_name, opcode, operands, ...}], ...}`;
  other top-level arrays hold DMA and other events (`*dma*` arrays -> transfers).
- summary-json: the summary object alone (or a list of them, or `{"summary": [...]}`).
- system_profile.json: `trace_events` (items either flat or keyed by event type, e.g.
  `{"Neuron_Runtime_API_Event": {...}}`, with `timestamp` in Unix-epoch ns, `duration` ns, `name`,
  `group`, `instance_id`, `lnc_idx`, `process_id`, `thread_id`), `mem_usage` and `cpu_util` samples.

No public file of these exports exists to test against; the tests build files that follow these
documented shapes. Field names beyond the documented examples are read when they match the
Parquet schema's names (`raw_flops`, `hbm_read_bytes`, ...).
"""

from __future__ import annotations

import json

import re
from pathlib import Path
from typing import Any

import polars as pl

from profaudit.errors import InputError
from profaudit.parsers import jsonshape
from profaudit.parsers.base import HEAD_BYTES, Probe, ReadOptions, apply_device_option, new_profile
from profaudit.parsers.neuron_common import capture_evidence, col_f64, col_i64, col_str, device_from_instance_type, summary_facts
from profaudit.parsers.neuron_parquet import dma_to_transfers, instructions_to_kernels

_DEVICE_HEAD = re.compile(rb'"(instruction|summary)"\s*:\s*\[')
_SYSTEM_HEAD = re.compile(rb'"(Neuron_Runtime_API_Event|Framework_Event|trace_events|mem_usage|cpu_util)"')
_SUMMARY_KEYS = (b'"total_time"', b'"event_count"', b'"nc_idx"', b'"mfu_estimated_percent"', b'"hbm_read_bytes"', b'"trace_count"')


def _kind(head: bytes) -> str | None:
    h = head.lstrip()
    if not h[:1] in (b"{", b"["):
        return None
    if _SYSTEM_HEAD.search(head) and (b'"instance_id"' in head or b'"trace_events"' in head):
        return "system"
    if _DEVICE_HEAD.search(head) and (b'"instruction"' in head or b'"total_time"' in head):
        return "device"
    if b'"total_time"' in head and sum(k in head for k in _SUMMARY_KEYS) >= 2:
        return "summary"
    return None


def _frame(rows: list) -> pl.DataFrame | None:
    rows = [r for r in rows if isinstance(r, dict)]
    if not rows:
        return None
    # every field of these tables is a scalar; a list or object where one belongs (damage) is kept
    # as its JSON text rather than failing a later cast
    rows = [{k: (json.dumps(v) if isinstance(v, (list, dict)) else v) for k, v in r.items()} for r in rows]
    try:
        return pl.DataFrame(rows, infer_schema_length=None, strict=False)
    except Exception:
        # heterogeneous values (a number here, a string there): read everything as text, cast later
        keys = list(dict.fromkeys(k for r in rows for k in r))
        return pl.DataFrame({k: [None if r.get(k) is None else str(r.get(k)) for r in rows] for k in keys})


def _summary_row(doc: Any) -> dict:
    if isinstance(doc, dict) and "summary" in doc:
        doc = doc["summary"]
    if isinstance(doc, list):
        doc = next((d for d in doc if isinstance(d, dict)), {})
    return doc if isinstance(doc, dict) else {}


def _system(doc: dict) -> tuple[dict, dict]:
    events = doc.get("trace_events")
    if events is None:
        events = [v for k, v in doc.items() if k.endswith("_Event")]
    flat = []
    for e in events if isinstance(events, list) else [events]:
        if not isinstance(e, dict):
            continue
        if "timestamp" in e or "name" in e:
            flat.append(dict(e))
        else:
            for typ, ev in e.items():
                if isinstance(ev, dict):
                    flat.append({**ev, "_event_type": typ})
    tabs: dict[str, pl.DataFrame | None] = {}
    df = _frame(flat)
    if df is not None:
        ts, dur = col_i64(df, "timestamp"), col_f64(df, "duration")
        etype, group = col_str(df, "_event_type"), col_str(df, "group")
        kind = (
            pl.when(etype.str.contains("(?i)runtime") | group.str.starts_with("nrt")).then(pl.lit("neuron_runtime_api"))
            .when(etype.str.contains("(?i)framework") | group.str.starts_with("framework")).then(pl.lit("framework"))
            .otherwise(pl.lit("host"))
        )
        r = df.select(
            kind.alias("kind"),
            col_str(df, "name").alias("name"),
            group.alias("domain"),
            col_i64(df, "process_id").alias("process_id"),
            col_i64(df, "thread_id").alias("thread_id"),
            col_i64(df, "lnc_idx").alias("device_id"),
            ts.alias("start_ns"),
            (ts + dur.cast(pl.Int64, strict=False)).alias("end_ns"),
            dur.alias("duration_ns"),
        ).sort("start_ns", nulls_last=True)
        tabs["ranges"] = r.with_row_index("range_id").with_columns(pl.col("range_id").cast(pl.Int64))
    parts = []
    mem = _frame(doc.get("mem_usage") or [])
    if mem is not None and "timestamp" in mem.columns:
        for col, canon, unit in (("usage", "host_memory_used_bytes", "byte"), ("percent_usage", "host_memory_used_percent", "%")):
            if col in mem.columns:
                parts.append(mem.select(pl.lit(canon).alias("counter"), pl.lit(f"mem_usage.{col}").alias("raw_name"), pl.lit(unit).alias("unit"),
                                        pl.col("timestamp").cast(pl.Int64, strict=False).alias("timestamp_ns"),
                                        pl.col(col).cast(pl.Float64, strict=False).alias("value")))
    cpu = _frame(doc.get("cpu_util") or [])
    if cpu is not None and "timestamp" in cpu.columns and "util" in cpu.columns:
        cid = pl.col("cpu_id").cast(pl.Utf8) if "cpu_id" in cpu.columns else pl.lit("all")
        parts.append(cpu.select(pl.lit("cpu_utilization_percent").alias("counter"), pl.concat_str(pl.lit("cpu_util.cpu"), cid).alias("raw_name"),
                                pl.lit("%").alias("unit"), pl.col("timestamp").cast(pl.Int64, strict=False).alias("timestamp_ns"),
                                pl.col("util").cast(pl.Float64, strict=False).alias("value")))
    if parts:
        tabs["counters"] = pl.concat(parts, how="vertical_relaxed")
    md: dict[str, Any] = {"neuron_json_kind": "system_profile", "time_base": "unix_epoch"}
    if df is not None and "instance_id" in df.columns:
        inst = df["instance_id"].cast(pl.Utf8).drop_nulls().unique().to_list()
        md["host"] = inst[0] if len(inst) == 1 else None
        md["instance_ids"] = sorted(inst)
    return tabs, md


def _device(doc: dict, path: Path) -> tuple[dict, dict]:
    name = path.name
    summary = _summary_row(doc.get("summary", {}))
    device = device_from_instance_type(summary.get("instance_type"))
    for k in ("nc_idx", "nd_idx"):  # core/device indices: a number beyond 64 bits fits no id column
        v = summary.get(k)  # (orjson gives an integer beyond 64 bits as a float)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and not abs(v) < 2**63:
            jsonshape.int64(v, f"summary {k}", path)
    device_id = summary.get("nc_idx")
    try:
        device_id = int(device_id) if device_id is not None else None
    except (TypeError, ValueError):
        device_id = None
    if device_id is not None:
        # nc_idx written as text ("-9223372036854775809") passes the number check above
        jsonshape.int64(device_id, "summary nc_idx", path)
    module = summary.get("neff_name") or summary.get("network_name")
    m = re.match(r"^device_profile_model_(\w+)\.json$", name)
    md: dict[str, Any] = {"neuron_json_kind": "device_profile"}
    if m:
        md["neuron_model_id"] = m.group(1)
    tabs: dict[str, pl.DataFrame | None] = {}
    ins = _frame(doc.get("instruction") or [])
    if ins is not None:
        tabs["kernels"], tabs["metrics"] = instructions_to_kernels(ins, device_name=device, device_id=device_id, module=module)
    dma_rows: list = []
    other: dict[str, int] = {}
    for k, v in doc.items():
        if k in ("summary", "instruction") or not isinstance(v, list):
            continue
        if "dma" in k.lower():
            dma_rows.extend(r for r in v if isinstance(r, dict))
        other[k] = len(v)
    dma = _frame(dma_rows)
    if dma is not None:
        tabs["transfers"] = dma_to_transfers(dma, device_id)
    if other:
        md["neuron_json_arrays"] = other
    if summary:
        md["neuron_summary"] = summary
        md.update(summary_facts(summary))
    if device:
        md["device_name"] = device
        md["instance_type"] = summary.get("instance_type")
    md.update(capture_evidence(name, None))
    return tabs, md


class NeuronJsonParser:
    name = "neuron_json"
    source = "neuron"
    suffixes = (".json",)
    description = "AWS Neuron profile JSON: neuron-profile view --output-format json / summary-json, Profiler 2.0 system/device JSON"

    def sniff(self, probe: Probe) -> bool:
        return not probe.is_dir and _kind(probe.head) is not None

    def read(self, path: Path, options: ReadOptions):
        import orjson

        from profaudit.parsers.textsafe import check_orjson_room

        path = Path(path)
        try:
            raw = path.read_bytes()
            check_orjson_room(path, len(raw), "Neuron JSON profile")
            doc = orjson.loads(raw)
        except OSError as exc:
            raise InputError.unreadable(path, exc) from None
        except orjson.JSONDecodeError as exc:
            raise InputError(path, f"not valid JSON (truncated?): {exc}") from None
        kind = _kind(raw[:HEAD_BYTES])
        del raw
        if kind == "system" and isinstance(doc, dict):
            tabs, md = _system(doc)
        elif kind == "device" and isinstance(doc, dict) and isinstance(doc.get("instruction", []), list):
            tabs, md = _device(doc, path)
        else:
            summary = _summary_row(doc)
            if not summary or "total_time" not in summary:
                raise InputError(path, "JSON looks like a Neuron export but holds no summary, instruction or trace_events")
            tabs = {}
            md = {"neuron_json_kind": "summary", "neuron_summary": summary, **summary_facts(summary)}
            dev = device_from_instance_type(summary.get("instance_type"))
            if dev:
                md["device_name"] = dev
            md.update(capture_evidence(path.name, None))
        md.setdefault("tool", "neuron-profile")
        apply_device_option(tabs, md, options.device)
        return new_profile(path, self, tabs, md)


PARSER = NeuronJsonParser()
