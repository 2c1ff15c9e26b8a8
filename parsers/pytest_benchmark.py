"""pytest-benchmark JSON (`--benchmark-json`, `--benchmark-save` storage files), old and new schemas.

Every time pytest-benchmark writes is seconds per iteration: a round runs the function
`stats.iterations` times and records the round time divided by that. So:
- `stats.data` present (always in `--benchmark-json`; in saved files with `--benchmark-save-data`):
  one raw row per round, `iteration` = round index, `calls_per_sample` = `stats.iterations`;
- and always one summary row per statistic pytest-benchmark computed (min, max, mean, stddev ->
  stdev, median, q1, q3, iqr, total), `sample_count` = `stats.rounds`, so the audit can check a
  claim's statistic against the tool's own and recompute it from `data`.
`time_source` is `host` (the `options.timer`, e.g. perf_counter, is kept in metadata), warmup
rounds are never in the file (`phase` = measure), the cache state is unknown. `benchmark` = the
test's `name` (with its `[param-id]`), `params` = the test's `params` dict (new schema) or `{}`;
benchmark groups are kept in metadata (`groups`). Errored benchmarks are omitted by pytest-benchmark
itself; a file with no benchmarks is an error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from profaudit import samples
from profaudit.errors import InputError
from profaudit.parsers.base import Probe, ReadOptions, load_json, new_profile
from profaudit.samples import canonical_params

_STATS = (("min", "min"), ("max", "max"), ("mean", "mean"), ("stddev", "stdev"), ("median", "median"), ("q1", "q1"), ("q3", "q3"), ("iqr", "iqr"), ("total", "total"))


class PytestBenchmarkParser:
    name = "pytest-benchmark"
    source = "pytest-benchmark"
    suffixes = (".json", ".json.gz")
    description = "pytest-benchmark --benchmark-json / --benchmark-save files (seconds per iteration; raw rounds when saved)"

    def sniff(self, probe: Probe) -> bool:
        t = probe.text
        return t.lstrip().startswith("{") and '"benchmarks"' in t and ('"machine_info"' in t or '"commit_info"' in t) and ('"stats"' in t or '"fullname"' in t or '"benchmarks": []' in t)

    def read(self, path: Path, options: ReadOptions):
        path = Path(path)
        doc = load_json(path, "pytest-benchmark JSON")
        benches = doc.get("benchmarks") if isinstance(doc, dict) else None
        if not isinstance(benches, list):
            raise InputError(path, "pytest-benchmark JSON without a 'benchmarks' list")
        if not benches:
            raise InputError(path, "pytest-benchmark JSON lists no benchmarks (pytest-benchmark omits errored ones)")
        cols: dict[str, list] = {k: [] for k in ("benchmark", "params", "iteration", "duration_ns", "statistic", "sample_count", "calls_per_sample", "run")}
        timers = set()
        groups: dict[str, Any] = {}
        raw_benchmarks = 0
        for b in benches:
            stats = b.get("stats")
            if not isinstance(stats, dict):
                raise InputError(path, f"benchmark {b.get('name')!r} has no stats")
            name = b.get("name") or b.get("fullname")
            if b.get("group") is not None:
                groups[name] = b.get("group")
            params = b.get("params") if isinstance(b.get("params"), dict) else {}
            pj = canonical_params(params)
            iters = stats.get("iterations")
            rounds = stats.get("rounds")
            timer = (b.get("options") or {}).get("timer")
            if timer:
                timers.add(str(timer))
            data = stats.get("data")
            if isinstance(data, list) and data:
                raw_benchmarks += 1
                n = len(data)
                cols["benchmark"] += [name] * n
                cols["params"] += [pj] * n
                cols["iteration"] += list(range(n))
                cols["duration_ns"] += [float(x) * 1e9 if x is not None else None for x in data]
                cols["statistic"] += [None] * n
                cols["sample_count"] += [None] * n
                cols["calls_per_sample"] += [iters] * n
                cols["run"] += [0] * n
            for key, stat in _STATS:
                v = stats.get(key)
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    cols["benchmark"].append(name)
                    cols["params"].append(pj)
                    cols["iteration"].append(0)
                    cols["duration_ns"].append(float(v) * 1e9)
                    cols["statistic"].append(stat)
                    cols["sample_count"].append(rounds)
                    cols["calls_per_sample"].append(iters)
                    cols["run"].append(0)
        df = samples.frame(cols).with_columns(
            pl.lit("measure").alias("phase"),
            pl.lit("unknown").alias("cache_state"),
            pl.lit("host").alias("time_source"),
            pl.lit(options.device).cast(pl.Utf8).alias("device_name"),
        )
        mi = doc.get("machine_info") or {}
        cpu = mi.get("cpu") or {}
        md: dict[str, Any] = {
            "tool": "pytest-benchmark",
            "tool_version": doc.get("version"),
            "capture_time": doc.get("datetime"),
            "host": mi.get("node"),
            "device_name": options.device,
            "machine_info": mi,
            "commit_info": doc.get("commit_info"),
            "timers": sorted(timers),
            "raw_benchmarks": raw_benchmarks,
            "groups": groups or None,
            "cpu_brand": cpu.get("brand_raw") or cpu.get("brand"),
        }
        if raw_benchmarks < len(benches):
            md["notes"] = [f"{len(benches) - raw_benchmarks} of {len(benches)} benchmark(s) have no raw 'data' (saved without --benchmark-save-data): summaries only"]
        return new_profile(path, self, {"samples": df}, md)


PARSER = PytestBenchmarkParser()
