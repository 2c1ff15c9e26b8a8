"""Claim files: what a speedup claim says and the evidence attached to each side.

```yaml
claim: "fused softmax is 2.1x faster than torch eager"
speedup: 2.1              # baseline time / candidate time, as claimed
statistic: mean           # mean, median, min, max, trimmed_mean, total, best_of, pNN
workload: {flops: 1.1e12, bytes: 3.2e10, precision: fp16_tensor}   # optional
device: "NVIDIA H100 80GB HBM3"                                     # optional
baseline:
  label: torch eager
  timings: baseline.csv   # any timing log profaudit reads (or a list: process-level runs)
  profile: baseline.ncu-rep   # optional, any profile (or a list)
  meta: {dtype: fp32, tf32: false, time_source: cuda_events, ...}
candidate: {...same keys...}
```

Paths are relative to the claim file. A side may also select rows of a shared log with
`benchmark`, `variant` and `params`, and pass `time_column` / `time_unit` to the timing-log
reader. `META_KEYS` lists every `meta` key with its type and meaning; unknown keys are an error
(a typo must not silently disable a check) unless they start with `x_`.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import polars as pl

from profaudit import safe_yaml, schema
from profaudit.audit.stats import Statistic, parse_statistic
from profaudit.errors import InputError
from profaudit.fmt import fmt_int_digits

CLAIM_VERSION = 1

# ---------------------------------------------------------------------------------------------
# meta keys: name -> (type, meaning)
# ---------------------------------------------------------------------------------------------

META_KEYS: dict[str, tuple[str, str]] = {
    "device": ("str", "device name (as nvidia-smi or the profiler prints it)"),
    "device_uuid": ("str", "GPU UUID: tells two boards of the same model apart"),
    "mig_profile": ("str", "MIG slice the run used (e.g. 3g.40gb); empty or 'none' for a whole GPU"),
    "driver": ("str", "GPU driver version"),
    "cuda_version": ("str", "CUDA / ROCm / Neuron runtime version"),
    "dtype": ("dtype", "element type of the computation: fp32, fp16, bf16, fp8, tf32, int8, fp64"),
    "tf32": ("bool", "TF32 tensor-core math allowed for fp32 matmuls/convolutions"),
    "allow_fp16_reduced_precision": ("bool", "torch allow_fp16_reduced_precision_reduction"),
    "shape": ("shape", "problem shape (list, 'MxNxK', or mapping of dimension names)"),
    "batch_size": ("int", "batch size"),
    "op": ("str", "the operation, for FLOPs and bytes recomputed from shape and dtype: matmul/gemm/bmm/linear, attention, causal_attention, softmax, layernorm, rmsnorm, unary, binary/add/mul"),
    "flops": ("float", "useful FLOPs per call as this side counts them"),
    "bytes": ("float", "minimum bytes moved per call as this side counts them"),
    "compile_mode": ("str", "eager, or the compiler mode (torch.compile default, max-autotune, jit, xla ...)"),
    "cuda_graphs": ("bool", "calls replayed through CUDA graphs"),
    "kernels_per_call": ("float", "kernel launches per timed call (from a trace)"),
    "framework": ("str", "framework and version, e.g. 'torch 2.4.0'"),
    "versions": ("versions", "library versions, mapping name -> version (any other '<lib>_version' key is added here)"),
    "time_source": ("str", "what produced the times: cuda_events, host, ncu, nsys, kineto, do_bench, nvbench_cold, nvbench_batch, nki.benchmark, ..."),
    "synchronized": ("bool", "the device was synchronised before the host clock was read"),
    "l2_flush": ("bool", "L2 cache flushed (or a large buffer written) before each timed call"),
    "cache_control": ("str", "ncu --cache-control in effect: all or none"),
    "clock_control": ("str", "clock state: base / locked (clocks locked) or none / unlocked (default boost behaviour)"),
    "sm_clock_mhz": ("float", "SM clock the side ran at, when locked or logged once"),
    "default_clock_mhz": ("float", "the device's default (maximum boost) SM clock, for the throttling threshold"),
    "warmup_iterations": ("int", "untimed calls before timing started"),
    "warmup_steady": ("bool", "warm-up ended with the times steady (profaudit bench; false: it stopped on its time budget)"),
    "stop_reason": ("str", "why measuring stopped (profaudit bench): noise_target, max_samples, time_budget, hard_time_limit, variant_failed"),
    "noise_target": ("float", "relative standard error of the median the harness measured towards"),
    "noise_target_met": ("bool", "the harness reached its noise target before stopping"),
    "minimums_met": ("bool", "the harness reached its minimum warm-up calls and samples"),
    "stopped_short": ("bool", "the harness ran out of its hard time limit before its minimums"),
    "timing_method": ("str", "how a sample was timed: per_call, back_to_back (several calls per sample), cuda_graph, simulated"),
    "repetitions": ("int", "process-level repetitions (separate runs) behind the samples"),
    "interleaved": ("bool", "baseline and candidate alternated (ABAB) rather than ran in blocks"),
    "power_limit_w": ("float", "board power limit in watts"),
    "host_governor": ("str", "CPU frequency governor (performance, powersave, schedutil, ...)"),
    "cpu_turbo": ("bool", "CPU turbo / boost enabled"),
    "gpu_busy_pct": ("float", "share of the timed range the GPU was busy (from a trace), percent"),
    "gpu_util_before_pct": ("float", "GPU utilisation just before the run started, percent"),
    "other_gpu_processes": ("pids", "other processes on the GPU during the run (a count or a list)"),
    "correctness_checked": ("checked", "output compared with a reference: true, false, before_timing (only before the timing loop), after_timing, both"),
    "atol": ("float", "absolute tolerance of the correctness check"),
    "rtol": ("float", "relative tolerance of the correctness check"),
    "dram_bytes": ("float", "DRAM bytes per call measured by a counter tool"),
    "l2_bytes": ("float", "L2 bytes per call measured by a counter tool"),
    "calls_per_sample": ("int", "back-to-back calls each timing sample averages (times stay per call; > 1 amortises launches)"),
    "best_of": ("int", "the reported time is the best of this many runs, configurations or kernels"),
    "timed_range": ("str", "NVTX range (or annotation) that wraps the timed region in the attached trace: once around the loop, or once per sample or call; 'ProfilerStep' also names torch.profiler's ProfilerStep#N"),
    "call_range": ("str", "NVTX range that wraps one timed call in the attached trace (per-call GPU time, one-time work per call)"),
    "profiled_calls": ("int", "calls captured in the attached profile"),
    "sparse": ("bool", "structured sparsity is used (and proven), so sparse peaks apply"),
    "notes": ("str", "free text"),
}

SIDE_KEYS = {"label", "timings", "profile", "meta", "benchmark", "variant", "params", "kernel", "time_column", "time_unit"}
TOP_KEYS = {"claim", "speedup", "statistic", "workload", "device", "baseline", "candidate", "confidence", "noise_threshold", "intended_differences", "version", "notes"}
WORKLOAD_KEYS = {"flops", "bytes", "precision", "sparse"}

_DTYPES = {
    "fp64": ("fp64", "float64", "double", "f64", "torch.float64", "torch.double", "np.float64"),
    "fp32": ("fp32", "float32", "float", "single", "f32", "torch.float32", "torch.float", "np.float32", "ieee"),
    "tf32": ("tf32", "tensorfloat32", "tensor_float32", "tensorfloat-32"),
    "fp16": ("fp16", "float16", "half", "f16", "torch.float16", "torch.half", "np.float16"),
    "bf16": ("bf16", "bfloat16", "torch.bfloat16"),
    "fp8": ("fp8", "float8", "fp8_e4m3", "fp8_e5m2", "e4m3", "e5m2", "float8_e4m3fn", "float8_e5m2", "torch.float8_e4m3fn", "torch.float8_e5m2"),
    "fp4": ("fp4", "nvfp4", "mxfp4", "float4"),
    "int8": ("int8", "i8", "torch.int8"),
    "int4": ("int4", "i4"),
}
_DTYPE_LOOKUP = {alias: canon for canon, aliases in _DTYPES.items() for alias in aliases}


def normalise_dtype(value: Any) -> str:
    key = str(value).strip().lower().replace(" ", "")
    if key in _DTYPE_LOOKUP:
        return _DTYPE_LOOKUP[key]
    if key.startswith("torch.") and key[6:] in _DTYPE_LOOKUP:
        return _DTYPE_LOOKUP[key[6:]]
    # Mixed precision and exotic types compare by their literal name.
    return key


def normalise_shape(value: Any) -> str:
    """Canonical text for a shape: '[4096, 4096]' for lists and 'MxN' strings, sorted JSON for maps."""
    if isinstance(value, Mapping):
        return json.dumps({str(k): value[k] for k in sorted(value, key=str)}, sort_keys=True, default=str)
    if isinstance(value, (list, tuple)):
        return json.dumps([_int_if_whole(v) for v in value], default=str)
    text = str(value).strip()
    parts = [p for p in re.split(r"\s*[x×*,]\s*|\s+", text.strip("()[] ")) if p]
    if parts and all(re.fullmatch(r"\d+", p) for p in parts):
        return json.dumps([int(p) for p in parts])
    return text


def _int_if_whole(v: Any) -> Any:
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and re.fullmatch(r"\d+", v.strip()):
        return int(v)
    return v


_TRUE = {"true", "yes", "on", "1", "y"}
_FALSE = {"false", "no", "off", "0", "n", "none"}


def _to_bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)) and v in (0, 1):
        return bool(v)
    s = str(v).strip().lower()
    if s in _TRUE:
        return True
    if s in _FALSE:
        return False
    raise ValueError(f"expected true or false, got {v!r}")


def _to_float(v: Any) -> float:
    if isinstance(v, bool):
        raise ValueError(f"expected a number, got {v!r}")
    try:
        f = float(str(v).replace("_", "")) if isinstance(v, str) else float(v)
    except (TypeError, ValueError):
        raise ValueError(f"expected a number, got {_shown(v)}") from None
    except OverflowError:  # an integer past the float range (YAML/JSON read 1 and 40 zeros as one)
        raise ValueError(f"expected a finite number >= 0, got {fmt_int_digits(v)}") from None
    if not math.isfinite(f) or f < 0:
        raise ValueError(f"expected a finite number >= 0, got {_shown(v)}")
    return f


def _shown(v: Any) -> str:
    """A value in a one-line message, cut to a readable length (a hostile claim's value can be 100 KB)."""
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def _to_int(v: Any) -> int:
    f = _to_float(v)
    if not f.is_integer():
        raise ValueError(f"expected a whole number, got {v!r}")
    return int(f)


def _to_pids(v: Any) -> int:
    if isinstance(v, (list, tuple)):
        return len(v)
    return _to_int(v)


_CHECKED = {"true": "yes", "yes": "yes", "false": "no", "no": "no", "before_timing": "before_timing", "before": "before_timing", "after_timing": "after_timing", "after": "after_timing", "both": "both"}


def _to_checked(v: Any) -> str:
    key = str(v).strip().lower() if not isinstance(v, bool) else ("true" if v else "false")
    if key not in _CHECKED:
        raise ValueError(f"expected true, false, before_timing, after_timing or both, got {v!r}")
    return _CHECKED[key]


def _to_versions(v: Any) -> dict[str, str]:
    if not isinstance(v, Mapping):
        raise ValueError("expected a mapping of library name to version")
    return {str(k).strip().lower(): str(x).strip() for k, x in v.items()}


_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "str": lambda v: str(v).strip(),
    "bool": _to_bool,
    "int": _to_int,
    "float": _to_float,
    "dtype": normalise_dtype,
    "shape": normalise_shape,
    "versions": _to_versions,
    "pids": _to_pids,
    "checked": _to_checked,
}


def validate_meta(meta: Any, where: str, path: str | os.PathLike | None) -> dict[str, Any]:
    """Check and normalise one side's `meta` mapping. `where` names it in errors (baseline.meta)."""
    if meta is None:
        return {}
    if not isinstance(meta, Mapping):
        raise InputError(path, f"{where}: expected a mapping of key: value")
    out: dict[str, Any] = {}
    versions: dict[str, str] = {}
    for raw_key, value in meta.items():
        key = str(raw_key).strip()
        if key.startswith("x_"):
            out[key] = value
            continue
        if value is None:
            continue
        if key.endswith("_version") and key not in META_KEYS:
            versions[key[: -len("_version")].lower()] = str(value).strip()
            continue
        if key not in META_KEYS:
            import difflib

            close = difflib.get_close_matches(key, list(META_KEYS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else " (prefix custom keys with x_)"
            raise InputError(path, f"{where}.{key}: unknown meta key{hint}")
        kind = META_KEYS[key][0]
        try:
            out[key] = _CONVERTERS[kind](value)
        except ValueError as exc:
            raise InputError(path, f"{where}.{key}: {exc}") from None
    if versions:
        out["versions"] = {**versions, **out.get("versions", {})}
    if out.get("dtype") == "tf32":
        # TF32 is fp32 storage with tensor-core math: record both facts.
        out["dtype"] = "fp32"
        out.setdefault("tf32", True)
    return out


# ---------------------------------------------------------------------------------------------
# Sides and claims
# ---------------------------------------------------------------------------------------------


@dataclass
class Side:
    """One side of a comparison: its timing samples, attached profiles and metadata."""

    role: str  # "baseline" or "candidate"
    label: str
    samples: pl.DataFrame  # the samples table (schema.SAMPLES), already selected for this side
    meta: dict[str, Any] = field(default_factory=dict)
    profiles: Any = None  # ProfileSet of attached profiles (`profile:`), or None
    timing_profiles: Any = None  # ProfileSet the timings came from (their metadata is evidence too)
    timing_paths: tuple[str, ...] = ()
    profile_paths: tuple[str, ...] = ()
    meta_origin: str = ""  # where `meta` came from, e.g. "claim.yaml: baseline.meta"
    kernel_filter: str | None = None  # `kernel:` regex that selected the timed kernel
    times_from_kernels: bool = False  # the samples are kernel durations of the timing files
    # median time per parameter set of the same benchmark in the same log (a size sweep), or None
    sweep: pl.DataFrame | None = None

    @classmethod
    def from_durations(
        cls,
        role: str,
        durations_ns: Sequence[float] | np.ndarray,
        *,
        label: str | None = None,
        meta: Mapping[str, Any] | None = None,
        profiles: Any = None,
        **columns: Sequence[Any] | np.ndarray,
    ) -> "Side":
        """A side from per-iteration durations (ns) and optional aligned sample columns
        (`sm_clock_mhz=`, `temperature_c=`, `run=`, `phase=`, ...). `meta` is validated."""
        d = np.asarray(durations_ns, dtype=np.float64)
        data: dict[str, Any] = {"duration_ns": d, "iteration": np.arange(d.size, dtype=np.int64)}
        for k, v in columns.items():
            if k not in schema.SAMPLES.polars_schema:
                raise ValueError(f"samples have no column {k!r}")
            data[k] = list(v) if not isinstance(v, np.ndarray) else v
            if isinstance(data[k], list) and len(data[k]) != d.size:
                raise ValueError(f"column {k!r} has {len(data[k])} values for {d.size} durations")
        frame = schema.conform("samples", pl.DataFrame(data, strict=False), f"{role}-synthetic")
        return cls(role, label or role, frame, validate_meta(meta or {}, f"{role}.meta", None), profiles, None, (), (), f"{role}.meta")


@dataclass
class Claim:
    """A speedup claim: two sides plus what was claimed and how."""

    baseline: Side
    candidate: Side
    speedup: float | None = None
    speedup_text: str | None = None  # as written, for the rounding tolerance
    statistic: Statistic | None = None
    description: str | None = None
    workload: dict[str, Any] = field(default_factory=dict)  # flops, bytes, precision, sparse
    device: str | None = None
    confidence: float = 0.95
    noise_threshold: float = 0.01
    intended_differences: tuple[str, ...] = ()
    path: str | None = None

    @property
    def sides(self) -> tuple[Side, Side]:
        return (self.baseline, self.candidate)

    @property
    def origin(self) -> str:
        return Path(self.path).name if self.path else "claim"


def _as_paths(value: Any, base: Path, where: str, claim_path: Path | None) -> list[Path]:
    items = value if isinstance(value, (list, tuple)) else [value]
    out = []
    for it in items:
        if not isinstance(it, (str, os.PathLike)) or not str(it).strip():
            raise InputError(claim_path, f"{where}: expected a file path or a list of paths")
        p = Path(os.path.expanduser(str(it)))
        if not p.is_absolute():
            p = base / p
        try:
            exists = p.exists()
        except OSError as exc:
            # a name no file system takes (over 255 bytes a component: ENAMETOOLONG; fuzz_surfaces
            # batch #37 seed 2026) is the claim's problem, not the catch-all's
            raise InputError(claim_path, f"{where}: {str(it)[:120]}: cannot be a file ({exc.strerror or exc})") from None
        if any("\ud800" <= ch <= "\udfff" for ch in str(it)):
            # a lone surrogate (JSON "\ud800") is not text any file name or table can hold
            raise InputError(claim_path, f"{where}: {ascii(str(it))[:120]}: not a valid file name (a lone UTF-16 surrogate)")
        if not exists and not any(ch in str(it) for ch in "*?["):
            raise InputError(claim_path, f"{where}: {it}: no such file or folder")
        out.append(p)
    return out


# the most folder entries a claim's evidence folder may hold below it: a folder of run logs holds
# hundreds; evidence linking to / walked the whole machine (fuzz_surfaces batch #379, seed 4501)
EVIDENCE_MAX_ENTRIES = 20_000


def _load(paths: list[Path], where: str, claim_path: Path | None, **options):
    from profaudit.loader import expand, load

    try:
        inputs = expand([str(p) for p in paths], max_entries=EVIDENCE_MAX_ENTRIES)
        return load(inputs, **{k: v for k, v in options.items() if v is not None})
    except InputError as exc:
        # Keep the failing file's own one-line message; say which claim key pointed at it.
        raise InputError(exc.path, f"{exc.problem} (from {where}{' in ' + str(claim_path) if claim_path else ''})") from None


def _samples_of(ps, kernel_regex: str | None) -> pl.DataFrame:
    """Timing samples of a ProfileSet: its samples table, or its kernel durations as samples
    (one row per launch, `kernel_regex` choosing the kernels by name)."""
    from profaudit.samples import samples_from_kernels

    if ps.samples.height:
        return ps.samples
    out = samples_from_kernels(ps)
    if kernel_regex and out.height:
        out = out.filter(pl.col("benchmark").str.contains(kernel_regex))
    return out


def _select(samples: pl.DataFrame, side: Mapping[str, Any], where: str, claim_path: Path | None, shown: str) -> pl.DataFrame:
    df = samples
    for key in ("benchmark", "variant"):
        want = side.get(key)
        if want is not None:
            df = df.filter(pl.col(key) == str(want))
            if df.height == 0:
                have = sorted({str(v) for v in samples[key].drop_nulls().unique().to_list()})
                raise InputError(claim_path, f"{where}.{key}: no samples with {key} {want!r} in {shown} (have: {', '.join(have[:12]) or 'none'})")
    params = side.get("params")
    if params is not None:
        if not isinstance(params, Mapping):
            raise InputError(claim_path, f"{where}.params: expected a mapping of parameter: value")
        from profaudit.samples import select as select_samples

        df = select_samples(df, params={str(k): v for k, v in params.items()})
        if df.height == 0:
            raise InputError(claim_path, f"{where}.params: no samples with parameters {dict(params)} in {shown}")
    if df.height == 0:
        raise InputError(claim_path, f"{where}: {shown} holds no timing samples")
    if df["time_source"].drop_nulls().n_unique() > 1:
        # One benchmark timed several ways (nvbench GPU and CPU times): keep the most direct.
        from profaudit.samples import preferred

        df = preferred(df)
    groups = df.select("benchmark", "variant", "params").unique(maintain_order=True)
    if groups.height > 1:
        raise InputError(claim_path, f"{where}: {shown} holds {_choices(groups, where, claim_path is None)}")
    return df


def _params_text(params: Any) -> str:
    """Canonical params JSON as `--params` takes it: 'Axis Size=2, Num Elements=8'."""
    try:
        d = json.loads(params) if params else {}
    except ValueError:
        return str(params)
    return ", ".join(f"{k}={v}" for k, v in d.items()) if isinstance(d, dict) else str(params)


def _choices(groups: pl.DataFrame, where: str, from_cli: bool) -> str:
    """What a side could mean, and how to say which: named in the words of the claim file's keys,
    or of the command line's options when the side came from `-b`/`-c` (`where` is the role)."""
    varying = [c for c in ("benchmark", "variant", "params") if groups[c].n_unique() > 1]
    what = {("params",): "parameter sets", ("variant",): "variants"}.get(tuple(varying), "benchmarks")
    names = []
    for row in groups.iter_rows(named=True):
        parts = [str(row[c]) for c in ("benchmark", "variant") if row[c] is not None and c in varying]
        if "params" in varying and row["params"]:
            parts.append(_params_text(row["params"]))
        names.append(" / ".join(parts) or "(unnamed)")
    listed = "; ".join(names[:6]) + ("; ..." if len(names) > 6 else "")
    first = groups.row(0, named=True)
    if from_cli:
        opts = {"benchmark": f"--{where}-benchmark", "variant": f"--{where}-variant", "params": "--params"}
        how = " and ".join(opts[c] for c in varying)
        # the first one, written as the options take it (one parameter shown: --params repeats)
        vals = {c: (_params_text(first[c]).split(", ")[0] if c == "params" else first[c]) for c in varying}
        example = " ".join(f"{opts[c]} '{vals[c]}'" for c in varying if vals[c])
    else:
        how = " and ".join(f"{where}.{c}" for c in varying)
        example = ""
    return f"{groups.height} {what} ({listed}); choose one with {how or where + '.benchmark, .variant or .params'}" + (f" (e.g. {example})" if example else "")


def load_side(spec: Any, role: str, base: Path, claim_path: Path | None, *, device: str | None = None) -> Side:
    """Build one side from its claim-file mapping (or a bare path string)."""
    where = role
    if isinstance(spec, (str, os.PathLike)):
        spec = {"timings": str(spec)}
    if not isinstance(spec, Mapping):
        raise InputError(claim_path, f"{where}: expected a mapping with timings, profile, meta")
    unknown = set(map(str, spec)) - SIDE_KEYS
    if unknown:
        raise InputError(claim_path, f"{where}.{sorted(unknown)[0]}: unknown key (side keys: {', '.join(sorted(SIDE_KEYS))})")
    meta = validate_meta(spec.get("meta"), f"{where}.meta", claim_path)
    label = str(spec.get("label") or role)
    if spec.get("kernel") is not None:
        try:
            re.compile(str(spec["kernel"]))
        except re.error as exc:
            raise InputError(claim_path, f"{where}.kernel: not a regular expression ({exc})") from None
        except (RecursionError, OverflowError):  # sre's parser on thousands of nested groups (fuzz_surfaces claim #373 seed 4501)
            raise InputError(claim_path, f"{where}.kernel: not a usable regular expression: nested too deeply") from None
    timing_ps = profile_ps = None
    timing_paths: list[Path] = []
    profile_paths: list[Path] = []
    if spec.get("profile") is not None:
        profile_paths = _as_paths(spec["profile"], base, f"{where}.profile", claim_path)
        profile_ps = _load(profile_paths, f"{where}.profile", claim_path, device=device)
    if spec.get("timings") is not None:
        timing_paths = _as_paths(spec["timings"], base, f"{where}.timings", claim_path)
        timing_ps = _load(timing_paths, f"{where}.timings", claim_path, device=device, time_column=spec.get("time_column"), time_unit=spec.get("time_unit"))
        shown = ", ".join(p.name for p in timing_paths)
        samples = _samples_of(timing_ps, spec.get("kernel"))
        if len(timing_paths) > 1 and samples.height and samples["run"].null_count() == samples.height:
            # Several files on one side are process-level runs, in the order given.
            order = {pid: i for i, pid in enumerate(timing_ps.ids)}
            samples = samples.with_columns(pl.col("profile_id").replace_strict(order, return_dtype=pl.Int64).alias("run"))
        from_kernels = timing_ps.samples.height == 0
    elif profile_ps is not None:
        shown = ", ".join(p.name for p in profile_paths)
        samples = _samples_of(profile_ps, spec.get("kernel"))
        from_kernels = True
    else:
        raise InputError(claim_path, f"{where}: needs timings (a timing log) or a profile")
    if spec.get("kernel") is not None and samples.height == 0:
        raise InputError(claim_path, f"{where}.kernel: no kernel in {shown} matches {spec['kernel']!r}")
    selected = _select(samples, spec, where, claim_path, shown)
    from profaudit.samples import params_medians

    sweep = params_medians(samples, selected)
    origin = f"{claim_path.name if claim_path else 'claim'}: {where}.meta"
    kernel = str(spec["kernel"]) if spec.get("kernel") is not None else None
    return Side(role, label, selected, meta, profile_ps, timing_ps, tuple(map(str, timing_paths)), tuple(map(str, profile_paths)), origin, kernel, from_kernels, sweep)


def _raw_scalar(text: str, key: str) -> str | None:
    """The characters a top-level scalar was written with (YAML turns 2.10 into 2.1)."""
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    if not isinstance(node, yaml.MappingNode):
        return None
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode) and k.value == key and isinstance(v, yaml.ScalarNode):
            return v.value
    return None


def parse_speedup(value: Any, where: str, path: Any) -> float:
    text = str(value).strip().lower()
    if text.endswith("x") or text.endswith("×"):
        text = text[:-1].strip()
    # "~1.0x" / "≈1.0": an approximate claim is still a number (the audit widens by its digits)
    text = text.lstrip("~≈").strip()
    try:
        f = float(text)
    except ValueError:
        raise InputError(path, f"{where}: expected a number such as 2.1 (baseline time / candidate time), got {value!r}") from None
    if not math.isfinite(f) or f <= 0:
        raise InputError(path, f"{where}: expected a positive number, got {value!r}")
    return f


def _statistic(value: Any, where: str, path: Any) -> Statistic | None:
    try:
        return parse_statistic(value)
    except ValueError as exc:
        raise InputError(path, f"{where}: {exc}") from None


def _workload(value: Any, path: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(path, "workload: expected a mapping with flops, bytes, precision")
    out: dict[str, Any] = {}
    for k, v in value.items():
        key = str(k)
        if key not in WORKLOAD_KEYS:
            raise InputError(path, f"workload.{key}: unknown key (workload keys: {', '.join(sorted(WORKLOAD_KEYS))})")
        if v is None:
            continue
        try:
            if key in ("flops", "bytes"):
                out[key] = _to_float(v)
            elif key == "sparse":
                out[key] = _to_bool(v)
            else:
                p = str(v).strip().lower()
                if p not in schema.PRECISIONS:
                    raise ValueError(f"expected one of {', '.join(schema.PRECISIONS)}, got {v!r}")
                out[key] = p
        except ValueError as exc:
            raise InputError(path, f"workload.{key}: {exc}") from None
    return out


def _fraction(value: Any, where: str, path: Any, default: float, lo: float, hi: float) -> float:
    if value is None:
        return default
    try:
        f = float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int past the float range
        raise InputError(path, f"{where}: expected a number, got {_shown(value)}") from None
    if not (lo < f < hi):
        raise InputError(path, f"{where}: expected a number between {lo} and {hi}, got {_shown(value)}")
    return f


def load_claim(path: str | os.PathLike) -> Claim:
    """Read and validate a claim file; load every timing log and profile it names."""
    p = Path(path)
    if not p.is_file():
        raise InputError(p, "no such claim file" if not p.exists() else "not a file")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(p, f"cannot read claim file: {exc}") from None
    # aliases are budgeted: a few-hundred-byte "billion laughs" claim is refused in milliseconds
    data = safe_yaml.load(text, p)
    if not isinstance(data, Mapping):
        raise InputError(p, "a claim file is a YAML mapping with baseline and candidate")
    unknown = set(map(str, data)) - TOP_KEYS
    if unknown:
        raise InputError(p, f"{sorted(unknown)[0]}: unknown key (claim keys: {', '.join(sorted(TOP_KEYS))})")
    version = data.get("version", CLAIM_VERSION)
    if version != CLAIM_VERSION:
        raise InputError(p, f"version: this profaudit reads claim files of version {CLAIM_VERSION}, not {version!r}")
    for role in ("baseline", "candidate"):
        if data.get(role) is None:
            raise InputError(p, f"{role}: missing (a claim compares a baseline with a candidate)")
    device = str(data["device"]).strip() if data.get("device") is not None else None
    base = p.parent
    baseline = load_side(data["baseline"], "baseline", base, p, device=device)
    candidate = load_side(data["candidate"], "candidate", base, p, device=device)
    speedup = parse_speedup(data["speedup"], "speedup", p) if data.get("speedup") is not None else None
    intended = data.get("intended_differences") or []
    if isinstance(intended, str):
        intended = [intended]
    if not isinstance(intended, (list, tuple)) or any(str(k) not in META_KEYS for k in intended):
        bad = [str(k) for k in (intended if isinstance(intended, (list, tuple)) else [intended]) if str(k) not in META_KEYS]
        raise InputError(p, f"intended_differences: expected a list of meta keys{', not ' + repr(bad[0]) if bad else ''}")
    return Claim(
        baseline=baseline,
        candidate=candidate,
        speedup=speedup,
        speedup_text=_raw_scalar(text, "speedup") if speedup is not None else None,
        statistic=_statistic(data.get("statistic"), "statistic", p),
        description=str(data["claim"]) if data.get("claim") is not None else None,
        workload=_workload(data.get("workload"), p),
        device=device,
        confidence=_fraction(data.get("confidence"), "confidence", p, 0.95, 0.5, 1.0),
        noise_threshold=_fraction(data.get("noise_threshold"), "noise_threshold", p, 0.01, 0.0, 0.5),
        intended_differences=tuple(str(k) for k in intended),
        path=str(p),
    )


def _side_label(role: str, spec: Mapping[str, Any], baseline: Any, candidate: Any) -> str:
    """What tells the sides apart in a report, as a claim file's `label` would: the variant or
    benchmark the side chose, else its file names when the sides' files differ, else the role."""
    for key in ("variant", "benchmark"):
        if spec.get(key):
            return str(spec[key])

    def names(paths: Any) -> list[str]:
        return [Path(str(p)).name for p in (paths if isinstance(paths, (list, tuple)) else [paths])]

    if names(baseline) != names(candidate):
        return ", ".join(names(baseline if role == "baseline" else candidate))
    return role


def claim_from_paths(
    baseline: str | os.PathLike | Sequence[str | os.PathLike],
    candidate: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    claimed: float | str | None = None,
    statistic: str | None = None,
    device: str | None = None,
    baseline_meta: Mapping[str, Any] | None = None,
    candidate_meta: Mapping[str, Any] | None = None,
    benchmark: str | None = None,
    baseline_variant: str | None = None,
    candidate_variant: str | None = None,
    time_column: str | None = None,
    time_unit: str | None = None,
    baseline_select: Mapping[str, Any] | None = None,
    candidate_select: Mapping[str, Any] | None = None,
) -> Claim:
    """The `--baseline A --candidate B [--claimed X]` form: a claim without a claim file.

    `baseline_select` / `candidate_select` choose per side what a claim file's side keys choose
    (`benchmark`, `variant`, `params`, `kernel`); they override the shared `benchmark`."""
    sides = []
    for role, paths, meta, variant, chosen in (("baseline", baseline, baseline_meta, baseline_variant, baseline_select), ("candidate", candidate, candidate_meta, candidate_variant, candidate_select)):
        spec: dict[str, Any] = {"timings": [str(x) for x in paths] if isinstance(paths, (list, tuple)) else str(paths)}
        if meta:
            spec["meta"] = dict(meta)
        if benchmark:
            spec["benchmark"] = benchmark
        if variant:
            spec["variant"] = variant
        if time_column:
            spec["time_column"] = time_column
        if time_unit:
            spec["time_unit"] = time_unit
        spec.update({k: v for k, v in (chosen or {}).items() if v is not None and v != {}})
        spec["label"] = _side_label(role, spec, baseline, candidate)
        sides.append(load_side(spec, role, Path.cwd(), None, device=device))
    speedup = parse_speedup(claimed, "--claimed", None) if claimed is not None else None
    return Claim(
        sides[0],
        sides[1],
        speedup=speedup,
        speedup_text=str(claimed) if claimed is not None else None,
        statistic=_statistic(statistic, "--statistic", None),
        device=device,
    )
