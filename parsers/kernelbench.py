"""KernelBench (ScalingIntelligence/KernelBench) timing files.

Two shapes, both milliseconds rounded by KernelBench to 3 significant figures:
- baseline timing JSON (`results/timing/<hw>/baseline_time_<config>.json`):
  `{"level1": {"1_Square_matrix_multiplication_.py": {mean, std, min, max, num_trials, hardware,
  device} | null, ...}, ...}` -> summary rows (mean, stdev, min, max; `sample_count` =
  num_trials) per problem; `benchmark` = "level<L>/<problem file stem>", `params` =
  {"level": L, "problem_id": N}, `variant` = the configuration from the file name
  (`torch`, `torch_compile_inductor_default`, ...); that configuration also gives the metadata
  `compile_mode` and `cuda_graphs`, which the audit compares between sides. Null entries (the
  problem failed to run) are counted in metadata.
- eval results (`runs/<run>/eval_results.json`): `{"<problem_id>": [{sample_id, compiled,
  correctness, metadata, runtime, runtime_stats}, ...]}` (older files: one object per problem) ->
  the same summary rows per timed sample, `benchmark` = "problem_<N>", `params` = {"problem_id": N},
  `variant` = "sample_<id>". Untimed samples (runtime -1, not compiled, incorrect) are counted in
  metadata with their correctness, which the audit's correctness check reads (`correctness`).
`time_source` = cuda_events (KernelBench's default timing method; the files do not record it,
so metadata says `time_source_origin: default`); the cache state is unknown.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl

from profaudit import samples
from profaudit.errors import InputError
from profaudit.parsers import jsonshape
from profaudit.parsers.base import Probe, ReadOptions, load_json, new_profile
from profaudit.samples import canonical_params

_STATS = (("mean", "mean"), ("std", "stdev"), ("min", "min"), ("max", "max"))
_LEVEL = re.compile(r"^level(\d+)$")
_PROBLEM = re.compile(r"^(\d+)_(.*?)(\.py)?$")


def _stats_rows(cols: dict, bench: str, variant: str | None, params: dict, stats: dict, device: str | None, path: Path) -> int:
    pj = canonical_params(params)
    n = 0
    for key, stat in _STATS:
        v = stats.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0:
            cols["benchmark"].append(bench)
            cols["variant"].append(variant)
            cols["params"].append(pj)
            cols["duration_ns"].append(jsonshape.number(v, f"{bench}: {key}", path) * 1e6)
            cols["statistic"].append(stat)
            cols["sample_count"].append(jsonshape.int64(stats.get("num_trials"), f"{bench}: num_trials", path))
            cols["device_name"].append(jsonshape.text(stats.get("hardware"), f"{bench}: hardware", path) or device)
            n += 1
    return n


def _frame(cols: dict) -> pl.DataFrame:
    return samples.frame(cols, iteration=0, phase="measure", cache_state="unknown", time_source="cuda_events")


def execution_mode(config: str | None) -> tuple[str | None, bool | None]:
    """(compile_mode, cuda_graphs) a KernelBench timing configuration name stands for.

    KernelBench names its baseline files after the configuration it timed: `torch` (eager),
    `torch_compile_<backend>[_<mode>]` (torch.compile with that backend and mode). Inductor's
    reduce-overhead and max-autotune modes and the cudagraphs backend replay CUDA graphs.
    """
    if not config:
        return None, None
    if config == "torch":
        return "eager", False
    m = re.match(r"^torch_compile_(?P<backend>[a-z0-9]+)(?:_(?P<mode>.+))?$", config)
    if not m:
        return None, None
    backend, mode = m.group("backend"), m.group("mode")
    graphs = backend == "cudagraphs" or mode in ("reduce-overhead", "max-autotune")
    if mode is not None and mode not in ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"):
        return f"torch.compile {backend} {mode}", None
    return " ".join(x for x in ("torch.compile", backend, mode) if x), graphs


def _new_cols() -> dict:
    return {k: [] for k in ("benchmark", "variant", "params", "duration_ns", "statistic", "sample_count", "device_name")}


def is_baseline(doc) -> bool:
    return isinstance(doc, dict) and bool(doc) and all(_LEVEL.match(str(k)) and isinstance(v, dict) for k, v in doc.items())


def is_eval_results(doc) -> bool:
    if not isinstance(doc, dict) or not doc:
        return False
    for k, v in doc.items():
        if not str(k).isdigit():
            return False
        entries = v if isinstance(v, list) else [v]
        if not entries or not all(isinstance(e, dict) and "compiled" in e and "correctness" in e for e in entries):
            return False
    return True


class KernelBenchParser:
    name = "kernelbench"
    source = "kernelbench"
    suffixes = (".json", ".json.gz")
    description = "KernelBench baseline timing JSON (level -> problem -> stats) and eval_results.json"

    def sniff(self, probe: Probe) -> bool:
        t = probe.text.lstrip()
        if not t.startswith("{"):
            return False
        if re.match(r'\{\s*"level\d+"\s*:\s*\{', t) and ('"num_trials"' in t or "null" in t[:2000]):
            return True
        return bool(re.match(r'\{\s*"\d+"\s*:\s*[\[{]', t)) and '"compiled"' in t and '"correctness"' in t

    def read(self, path: Path, options: ReadOptions):
        path = Path(path)
        doc = load_json(path, "KernelBench JSON")
        if is_baseline(doc):
            return self._baseline(path, doc, options)
        if is_eval_results(doc):
            return self._eval(path, doc, options)
        raise InputError(path, "neither a KernelBench baseline timing file (level -> problem -> stats) nor eval_results.json")

    def _baseline(self, path: Path, doc: dict, options: ReadOptions):
        stem = path.name.split(".json")[0]
        variant = stem[len("baseline_time_"):] if stem.startswith("baseline_time_") else None
        m = re.search(r"baseline_time_(.+)$", stem)
        if variant is None and m:
            variant = m.group(1)
        cols = _new_cols()
        failed: list[str] = []
        hardware = set()
        for level_key, problems in doc.items():
            level = int(_LEVEL.match(level_key).group(1))
            for fname, stats in problems.items():
                pm = _PROBLEM.match(fname)
                pid = int(pm.group(1)) if pm else None
                bench = f"{level_key}/{fname[:-3] if fname.endswith('.py') else fname}"
                if not isinstance(stats, dict):
                    failed.append(bench)
                    continue
                if stats.get("hardware"):
                    hardware.add(jsonshape.text(stats["hardware"], f"{bench}: hardware", path))
                params = {"level": level, **({"problem_id": pid} if pid is not None else {})}
                if _stats_rows(cols, bench, variant, params, stats, options.device, path) == 0:
                    failed.append(bench)
        if not cols["benchmark"]:
            raise InputError(path, f"KernelBench baseline file with no timed problems ({len(failed)} null)")
        compile_mode, cuda_graphs = execution_mode(variant)
        md: dict[str, Any] = {
            "tool": "kernelbench",
            "layout": "baseline_time",
            # from the configuration in the file name (KernelBench's naming), not from the file body
            "compile_mode": compile_mode,
            "cuda_graphs": cuda_graphs,
            "device_name": sorted(hardware)[0] if hardware else options.device,
            "device_count": len(hardware) or None,
            "variant": variant,
            "failed_problems": failed or None,
            "time_source_origin": "default",
            "notes": ["KernelBench rounds every statistic to 3 significant figures"],
        }
        return new_profile(path, self, {"samples": _frame(cols)}, md)

    def _eval(self, path: Path, doc: dict, options: ReadOptions):
        cols = _new_cols()
        untimed: list[dict] = []
        correctness: dict[str, Any] = {}
        hardware = set()
        for pid_s, entries in doc.items():
            pid = int(pid_s)
            for e in entries if isinstance(entries, list) else [entries]:
                sid = e.get("sample_id")
                variant = f"sample_{sid}" if sid is not None else None
                bench = f"problem_{pid}"
                meta = e.get("metadata") or {}
                correctness[f"{bench}/{variant}"] = {"compiled": e.get("compiled"), "correctness": e.get("correctness"), "correctness_trials": meta.get("correctness_trials")}
                stats = e.get("runtime_stats") or {}
                hw = stats.get("hardware") or meta.get("hardware")
                if hw:
                    hardware.add(hw)
                n = _stats_rows(cols, bench, variant, {"problem_id": pid}, stats, hw or options.device, path) if isinstance(stats, dict) else 0
                if n == 0:
                    rt = e.get("runtime")
                    if isinstance(rt, (int, float)) and rt >= 0:
                        # old files kept only the mean as `runtime`
                        n = _stats_rows(cols, bench, variant, {"problem_id": pid}, {"mean": rt}, hw or options.device, path)
                if n == 0:
                    untimed.append({"problem_id": pid, "sample_id": sid, "compiled": e.get("compiled"), "correctness": e.get("correctness")})
        if not cols["benchmark"]:
            raise InputError(path, f"KernelBench eval results with no timed samples ({len(untimed)} untimed: not compiled, incorrect or not measured)")
        md: dict[str, Any] = {
            "tool": "kernelbench",
            "layout": "eval_results",
            "device_name": sorted(hardware)[0] if hardware else options.device,
            "device_count": len(hardware) or None,
            "correctness": correctness,
            "untimed_samples": untimed or None,
            "time_source_origin": "default",
            "notes": ["KernelBench rounds every statistic to 3 significant figures"],
        }
        return new_profile(path, self, {"samples": _frame(cols)}, md)


PARSER = KernelBenchParser()
