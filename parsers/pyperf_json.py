"""pyperf JSON (`python -m pyperf timeit ... -o bench.json`, `Runner(...)` scripts, `.json.gz`).

Layout (format version "1.0", pyperf >= 1.0): `{"version": "1.0", "metadata": {...},
"benchmarks": [{"metadata": {...}, "runs": [{"metadata": {...}, "warmups": [[loops, value], ...],
"values": [...]}]}]}`. Metadata is layered: what every benchmark shares sits at the top, what
every run of one benchmark shares in the benchmark, the rest in the run; a run sees all three,
the innermost winning (pyperf's own loader merges them the same way).

Every value is already per loop iteration: pyperf times `loops` x `inner_loops` calls and divides.
So one `samples` row per value, `calls_per_sample` = loops x inner_loops, `run` = the run's index
(each run is a separate worker process), `iteration` = the value's index within its run,
`phase` = measure; each warmup `[loops, value]` is a row with `phase` = warmup (its value is per
loop too). Calibration runs hold warmups only. Only benchmarks whose unit is `second` are
timings: memory (`byte`) and counter (`integer`) benchmarks are left out and named in metadata.
`time_source` = host (pyperf reads `time.perf_counter`; its `timer` metadata is kept).

Metadata the audit reads as recorded facts: `host_governor` (the `governor:` of `cpu_config`
when every CPU agrees), `cpu_turbo` (`intel_pstate:turbo` / `no turbo`), `repetitions` (runs
with values), `warmup_iterations` (calls in a run's warmups, loops x inner_loops per warmup
value, when equal across runs), `calls_per_sample`
(when equal across runs); `cpu_affinity`, `cpu_config`, `cpu_freq`, `cpu_model_name`,
`isolated_cpus` (CPUs marked `isolated` in `cpu_config`), `nohz_full`, `aslr`, `timer`,
`python_version` ... are kept as they are. Older JSON versions (pyperf < 1.0, integer `version`)
are refused by name.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from profaudit import samples
from profaudit.errors import InputError
from profaudit.parsers import jsonshape
from profaudit.parsers.base import Probe, ReadOptions, new_profile
from profaudit.parsers.textsafe import load_clean_json

_SNIFF = re.compile(r'^\s*\{\s*"benchmarks"\s*:\s*\[\s*\{\s*"(?:metadata|runs)"\s*:')
# pyperf metadata kept verbatim in the profile metadata (the rest stays under `pyperf_metadata`)
_KEEP = ("cpu_affinity", "cpu_config", "cpu_count", "cpu_freq", "cpu_model_name", "cpu_temp", "nohz_full", "aslr", "timer",
         "python_implementation", "python_version", "python_executable", "platform", "boot_time", "load_avg_1min", "runnable_threads")


def _merged(*layers: Any) -> dict:
    out: dict = {}
    for m in layers:
        if isinstance(m, dict):
            out.update(m)
    return out


def _int(v, where: str, path: Path) -> int | None:
    """A loop count: None when absent or not a whole number; refused when beyond 64 bits (no
    calls-per-sample column holds it, and float() of it overflows)."""
    if not isinstance(v, (int, float)) or isinstance(v, bool) or (isinstance(v, float) and not (math.isfinite(v) and v.is_integer())):
        return None
    return jsonshape.int64(v, where, path)


def _cpu_config_facts(cpu_config: str | None) -> dict[str, Any]:
    """`0-3=driver:intel_pstate, intel_pstate:turbo, governor:performance; 4=...; idle:intel_idle`
    -> governor (when every CPU group agrees), turbo, isolated CPUs."""
    if not isinstance(cpu_config, str):
        return {}
    governors, turbo, isolated = set(), set(), []
    for part in cpu_config.split(";"):
        cpus, _, items = part.strip().partition("=")
        if not items:
            continue
        flags = [x.strip() for x in items.split(",")]
        for f in flags:
            if f.startswith("governor:"):
                governors.add(f.split(":", 1)[1])
            elif f == "intel_pstate:turbo":
                turbo.add(True)
            elif f == "intel_pstate:no turbo":
                turbo.add(False)
        if "isolated" in flags:
            isolated.append(cpus.strip())
    return {
        "host_governor": next(iter(governors)) if len(governors) == 1 else None,
        "host_governors": sorted(governors) if len(governors) > 1 else None,
        "cpu_turbo": next(iter(turbo)) if len(turbo) == 1 else None,
        "isolated_cpus": ",".join(isolated) or None,
    }


class PyperfParser:
    name = "pyperf"
    source = "timing"
    suffixes = (".json", ".json.gz")
    description = "pyperf JSON (pyperf timeit / Runner -o): every value of every run and warmup, CPU tuning metadata"

    def sniff(self, probe: Probe) -> bool:
        t = probe.text
        if _SNIFF.match(t):
            return '"runs"' in t
        # files written by hand or other tools in another key order
        s = t.lstrip()
        return s.startswith("{") and '"benchmarks"' in s and '"runs"' in s and ('"values"' in s or '"warmups"' in s) and re.search(r'"version"\s*:\s*("1\.0"|\d+)', s) is not None

    def read(self, path: Path, options: ReadOptions):
        path = Path(path)
        doc = load_clean_json(path, "pyperf JSON")
        if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
            raise InputError(path, "not a pyperf JSON file (no 'benchmarks' list)")
        version = doc.get("version")
        if version != "1.0":
            raise InputError(path, f"pyperf JSON format version {version!r} is not supported (only \"1.0\", written by pyperf 1.0 and later; convert with a newer pyperf: python -m pyperf convert --stdout FILE)")
        top = doc.get("metadata")
        cols: dict[str, list] = {k: [] for k in ("benchmark", "run", "iteration", "duration_ns", "calls_per_sample", "phase")}
        skipped: dict[str, str] = {}
        run_meta: list[dict] = []
        for bi, b in enumerate(doc["benchmarks"]):
            if not isinstance(b, dict) or not isinstance(b.get("runs"), list):
                raise InputError(path, f"benchmark {bi} has no 'runs' list")
            bmeta = _merged(top, b.get("metadata"))
            name = str(bmeta.get("name") or f"benchmark_{bi}")
            unit = bmeta.get("unit", "second")
            if unit != "second":
                skipped[name] = str(unit)
                continue
            for ri, r in enumerate(b["runs"]):
                if not isinstance(r, dict):
                    raise InputError(path, f"benchmark {name!r}: run {ri} is not an object")
                m = _merged(bmeta, r.get("metadata"))
                where = f"benchmark {name!r}: run {ri}"
                loops, inner = _int(m.get("loops"), f"{where} loops", path), _int(m.get("inner_loops", 1), f"{where} inner_loops", path)
                values, warmups = r.get("values") or [], r.get("warmups") or []
                if not isinstance(values, list) or not isinstance(warmups, list):
                    raise InputError(path, f"benchmark {name!r}: run {ri} 'values' and 'warmups' must be lists")
                for wi, w in enumerate(warmups):
                    if not (isinstance(w, list) and len(w) == 2 and all(isinstance(x, (int, float)) for x in w)):
                        raise InputError(path, f"benchmark {name!r}: run {ri} warmup {wi} is not a [loops, value] pair")
                    wloops = _int(w[0], f"{where} warmup {wi} loops", path)
                    value = jsonshape.number(w[1], f"{where} warmup {wi} value", path, optional=False)
                    self._row(cols, name, ri, wi, value, wloops * (inner or 1) if wloops else None, "warmup")
                for vi, v in enumerate(values):
                    if not isinstance(v, (int, float)) or isinstance(v, bool):
                        raise InputError(path, f"benchmark {name!r}: run {ri} value {vi} is not a number")
                    v = jsonshape.number(v, f"{where} value {vi}", path, optional=False)  # 1e400 is inf, 10**400 overflows
                    self._row(cols, name, ri, vi, v, loops * (inner or 1) if loops else None, "measure")
                wcalls = [_int(w[0], f"{where} warmup loops", path) for w in warmups]
                run_meta.append({"benchmark": name, "has_values": bool(values),
                                 "warmups": sum(c * (inner or 1) for c in wcalls) if None not in wcalls else None, "calls": loops * (inner or 1) if loops else None, "date": m.get("date"), "meta": m})
        if not cols["benchmark"]:
            if skipped:
                raise InputError(path, f"pyperf JSON holds no timings: every benchmark has a non-time unit ({', '.join(f'{k}: {v}' for k, v in skipped.items())})")
            raise InputError(path, "pyperf JSON holds no benchmark values (no runs with values or warmups)")
        df = samples.frame(cols, cache_state="unknown", time_source="host", device_name=options.device)
        return new_profile(path, self, {"samples": df}, self._metadata(top, run_meta, skipped, options, path))

    @staticmethod
    def _row(cols, name, run, it, value, calls, phase):
        cols["benchmark"].append(name)
        cols["run"].append(run)
        cols["iteration"].append(it)
        cols["duration_ns"].append(float(value) * 1e9)
        cols["calls_per_sample"].append(calls)
        cols["phase"].append(phase)

    @staticmethod
    def _metadata(top, run_meta: list[dict], skipped: dict, options: ReadOptions, path: Path) -> dict[str, Any]:
        measured = [r for r in run_meta if r["has_values"]]
        first = (measured or run_meta)[0]["meta"]
        # a key is a fact of the file only when every measured run agrees on it
        def agreed(key):
            vals = {repr(r["meta"].get(key)) for r in measured or run_meta}
            return first.get(key) if len(vals) == 1 else None

        per_bench: dict[str, int] = {}
        for r in measured:
            per_bench[r["benchmark"]] = per_bench.get(r["benchmark"], 0) + 1
        warm = {r["warmups"] for r in measured}
        calls = {r["calls"] for r in measured}
        dates = sorted(str(r["date"]) for r in run_meta if r.get("date"))
        md: dict[str, Any] = {
            "tool": "pyperf",
            "tool_version": jsonshape.text(agreed("perf_version"), "metadata perf_version", path),
            "host": agreed("hostname"),
            "command_line": agreed("command"),
            "capture_time": dates[0] if dates else None,
            "device_name": options.device,
            "time_source": "host",
            "repetitions": min(per_bench.values()) if per_bench and len(set(per_bench.values())) == 1 else None,
            "runs_per_benchmark": per_bench or None,
            "warmup_iterations": next(iter(warm)) if len(warm) == 1 and None not in warm else None,
            "calls_per_sample": next(iter(calls)) if len(calls) == 1 and None not in calls else None,
            "calibration_runs": sum(1 for r in run_meta if not r["has_values"]) or None,
            "non_time_benchmarks": skipped or None,
            "pyperf_metadata": top if isinstance(top, dict) and top else None,
        }
        for k in _KEEP:
            md[k] = agreed(k)
        md.update({k: v for k, v in _cpu_config_facts(agreed("cpu_config")).items() if v is not None})
        return md


PARSER = PyperfParser()
