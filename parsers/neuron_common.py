"""What the AWS Neuron readers share: engine names, device names, summary facts, capture evidence.

Sources: aws-neuron-sdk `tools/neuron-explorer/profile-schema-reference.rst` (schema 7.4.0, SDK
2.31), `environment-variables.rst`, `how-to-profile-workload.rst`, `troubleshooting.rst`, and the
archived `neuron-profile` user guides. Units that bite: Summary `total_time` and every
`*_time` summary field are **seconds**; event tables are **nanoseconds**; clocks are GHz.
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

from profaudit.parsers.base import finite_number

# Engine labels across tool generations -> one category per NeuronCore engine.
_ENGINE_ALIASES = {
    "tensor": "tensor", "tensore": "tensor", "tensormatrix": "tensor", "tensormatrixe": "tensor", "pe": "tensor",
    "vector": "vector", "vectore": "vector", "dve": "vector",
    "scalar": "scalar", "scalare": "scalar", "act": "scalar", "activation": "scalar",
    "gpsimd": "gpsimd", "gpsimde": "gpsimd", "pool": "gpsimd", "poole": "gpsimd",
    "sync": "sync", "synce": "sync", "sp": "sync",
}


def engine_category(label: Any) -> str | None:
    """`TensorMatrix` / `TensorE` / `tensor` -> "tensor" etc.; unknown labels pass through lower-cased."""
    if label is None:
        return None
    key = re.sub(r"[^a-z]", "", str(label).lower())
    if not key:
        return None
    if key in _ENGINE_ALIASES:
        return _ENGINE_ALIASES[key]
    for prefix, cat in (("tensor", "tensor"), ("vector", "vector"), ("scalar", "scalar"), ("gpsimd", "gpsimd"), ("pool", "gpsimd"), ("sync", "sync")):
        if key.startswith(prefix):
            return cat
    return str(label).lower()


def col_i64(df: pl.DataFrame, col: str) -> pl.Expr:
    """Column `col` of an export table as Int64 (unparseable cells null), or a typed null where
    this export has no such column (field names vary across tool versions)."""
    return pl.col(col).cast(pl.Int64, strict=False) if col in df.columns else pl.lit(None, dtype=pl.Int64)


def col_f64(df: pl.DataFrame, col: str) -> pl.Expr:
    return pl.col(col).cast(pl.Float64, strict=False) if col in df.columns else pl.lit(None, dtype=pl.Float64)


def col_str(df: pl.DataFrame, col: str) -> pl.Expr:
    return pl.col(col).cast(pl.Utf8) if col in df.columns else pl.lit(None, dtype=pl.Utf8)


# EC2 instance family -> the accelerator in it (names as profaudit.specs device YAMLs spell them).
_FAMILY = {
    "trn1": "Trainium1", "trn1n": "Trainium1", "trn2": "Trainium2", "trn2u": "Trainium2", "trn3": "Trainium3",
    "inf1": "Inferentia1", "inf2": "Inferentia2",
}

# NeuronCore clock used for cycle counts (FORMATS.md section 4).
BASE_CLOCK_HZ = {"Inferentia1": 1.0e9, "Trainium1": 1.4e9, "Trainium2": 1.2e9}


def device_from_instance_type(instance_type: Any) -> str | None:
    if not instance_type:
        return None
    fam = str(instance_type).split(".")[0].lower()
    return _FAMILY.get(fam) or _FAMILY.get(re.sub(r"[a-z]+$", "", fam))


def hlo_short(hlo_name: Any) -> str | None:
    """`%add.1 = add(%dot, %custom-call.44)` -> `add.1`; plain names come back unchanged."""
    if hlo_name is None:
        return None
    s = str(hlo_name).strip()
    if not s:
        return None
    m = re.match(r"^%?([\w.\-]+)\s*=", s)
    if m:
        return m.group(1)
    return s.lstrip("%")


def hlo_short_expr(col: str) -> pl.Expr:
    return (
        pl.col(col).cast(pl.Utf8).str.strip_chars()
        .str.replace(r"^%?([\w.\-]+)\s*=.*$", "${1}")
        .str.strip_chars_start("%")
        .replace("", None)
    )


# Summary fields in seconds (everything named *_time except percentages) -> also given in ns.
def summary_facts(summary: dict[str, Any]) -> dict[str, Any]:
    """Canonical metadata keys from a Summary row (Parquet or JSON), units spelled out."""
    out: dict[str, Any] = {}

    def num(k):
        return finite_number(summary.get(k))

    tt = num("total_time")
    if tt is not None:
        out["neuron_total_time_s"] = tt
        out["neuron_total_time_ns"] = tt * 1e9
    for k in ("hbm_read_bytes", "hbm_write_bytes", "model_flops", "hardware_flops", "adjusted_hardware_flops",
              "transpose_flops", "mfu_estimated_percent", "mfu_max_achievable_estimated_percent", "hfu_estimated_percent",
              "mbu_estimated_percent", "mbu_min_read_util_percent", "mm_arithmetic_intensity", "peak_flops_bandwidth_ratio",
              "event_count", "trace_count", "neuroncore_cycle_count"):
        v = num(k)
        if v is not None:
            out[f"neuron_{k}"] = v
    # every Summary duration (`*_time`, e.g. tensor_engine_active_time) is in seconds
    for k in summary:
        if k.endswith("_time") and k != "total_time":
            v = num(k)
            if v is not None:
                out[f"neuron_{k}_s"] = v
    if out.get("neuron_hbm_read_bytes") is not None and out.get("neuron_hbm_write_bytes") is not None:
        out["neuron_hbm_bytes"] = out["neuron_hbm_read_bytes"] + out["neuron_hbm_write_bytes"]
    for k in ("nc_idx", "nd_idx"):
        if summary.get(k) is not None:
            out[f"neuron_{k}"] = summary[k]
    return out


_NTH_EXEC = re.compile(r"_exec_(\d+)\b")


def capture_evidence(file_name: str, executions: int | None) -> dict[str, Any]:
    """Whether the capture is known or assumed to include the first (cold) execution of the NEFF.

    Documented defaults: `NEURON_RT_INSPECT_DEVICE_PROFILE=1`/`model` captures the first
    execution of each NEFF per NeuronCore; `neuron-explorer capture` runs `--num-exec 1` and
    profiles every execution (`--profile-nth-exec 1`). Either way the profiled execution is the
    cold one: startup, first-touch and DMA ring setup are in its timing. Only
    `--profile-nth-exec N>1` (output named `profile_exec_N.ntff`) skips it.
    """
    m = _NTH_EXEC.search(file_name or "")
    out: dict[str, Any] = {}
    if executions is not None:
        out["neuron_executions_captured"] = executions
    if m and int(m.group(1)) > 1:
        out["capture_includes_first_execution"] = False
        out["capture_includes_first_execution_origin"] = "recorded"
        out["capture_note"] = f"file name says --profile-nth-exec={m.group(1)}: execution {m.group(1)} was profiled, not the first"
    else:
        out["capture_includes_first_execution"] = True
        out["capture_includes_first_execution_origin"] = "default"
        out["capture_note"] = (
            "Neuron device profiles capture the first execution of each NEFF by default (NEURON_RT_INSPECT_DEVICE_PROFILE=1/model; "
            "neuron-explorer capture --num-exec 1): startup and cold-cache effects are inside the profiled time unless "
            "--profile-nth-exec or session mode was used"
        )
    return out
