"""torch.utils.benchmark `Measurement`s exported as JSON.

`Measurement` has no file format of its own (it is usually pickled); profaudit reads the plain
export `dataclasses.asdict(measurement)` — or `measurement.__getstate__()`, the same fields — as
JSON. Accepted shapes:
- one measurement: `{"number_per_run": N, "raw_times": [...], "task_spec": {...}, "metadata": ...}`;
- a list of them;
- an object with a list under `measurements` (other top-level keys are run metadata, e.g.
  `device`, `time_source`).
`raw_times` are seconds per block of `number_per_run` calls (never the `repr`, which rescales).
Each block is one raw row: `duration_ns` = raw_time / number_per_run x 1e9, `calls_per_sample` =
number_per_run. `benchmark` = task_spec.label (else the stmt), `variant` = task_spec.description
(the column in `Compare`; `@env` appended when an env is set), `params` = {"sub_label": ...,
"num_threads": ...}; repeated measurements of one task spec are `run` 0, 1, ... in file order.
`time_source` = host (Timer uses a host clock and synchronises CUDA around blocks) unless the
export's metadata says otherwise; the cache state is unknown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from profaudit import samples
from profaudit.errors import InputError
from profaudit.parsers.base import Probe, ReadOptions, load_json, new_profile
from profaudit.samples import canonical_params


def _measurements(doc) -> tuple[list[dict], dict]:
    if isinstance(doc, dict) and "raw_times" in doc:
        return [doc], {}
    if isinstance(doc, list):
        return doc, {}
    if isinstance(doc, dict) and isinstance(doc.get("measurements"), list):
        return doc["measurements"], {k: v for k, v in doc.items() if k != "measurements"}
    return [], {}


class TorchBenchmarkParser:
    name = "torch-benchmark"
    source = "torch-benchmark"
    suffixes = (".json", ".json.gz")
    description = "torch.utils.benchmark Measurements exported as JSON (dataclasses.asdict: raw_times, number_per_run, task_spec)"

    def sniff(self, probe: Probe) -> bool:
        t = probe.text
        return t.lstrip()[:1] in "[{" and '"raw_times"' in t and '"number_per_run"' in t

    def read(self, path: Path, options: ReadOptions):
        path = Path(path)
        doc = load_json(path, "JSON")
        ms, meta = _measurements(doc)
        if not ms:
            raise InputError(path, "no torch.utils.benchmark measurements (expected objects with raw_times, number_per_run, task_spec)")
        cols: dict[str, list] = {k: [] for k in ("benchmark", "variant", "params", "run", "iteration", "duration_ns", "calls_per_sample")}
        runs: dict[tuple, int] = {}
        user_meta = []
        for i, m in enumerate(ms):
            if not isinstance(m, dict) or not isinstance(m.get("raw_times"), list) or not isinstance(m.get("number_per_run"), int):
                raise InputError(path, f"measurement {i} lacks raw_times (a list) or number_per_run (an integer)")
            npr = m["number_per_run"]
            if npr <= 0:
                raise InputError(path, f"measurement {i} has number_per_run {npr}")
            ts = m.get("task_spec") or {}
            bench = ts.get("label") or ts.get("stmt") or f"measurement_{i}"
            variant = ts.get("description")
            if ts.get("env"):
                variant = f"{variant or ''}@{ts['env']}"
            params = {k: ts.get(k) for k in ("sub_label", "num_threads") if ts.get(k) is not None}
            pj = canonical_params(params)
            key = (bench, variant, pj)
            run = runs.get(key, 0)
            runs[key] = run + 1
            raw = m["raw_times"]
            bad = next((x for x in raw if not isinstance(x, (int, float)) or isinstance(x, bool)), None)
            if bad is not None:
                raise InputError(path, f"measurement {i} has a non-numeric raw time {bad!r}")
            n = len(raw)
            cols["benchmark"] += [bench] * n
            cols["variant"] += [variant] * n
            cols["params"] += [pj] * n
            cols["run"] += [run] * n
            cols["iteration"] += list(range(n))
            cols["duration_ns"] += [float(x) / npr * 1e9 for x in raw]
            cols["calls_per_sample"] += [npr] * n
            if m.get("metadata"):
                user_meta.append({"benchmark": bench, "variant": variant, "metadata": m["metadata"]})
        if not cols["benchmark"]:
            raise InputError(path, "measurements hold no raw_times")
        device = meta.get("device_name") or meta.get("device") or options.device
        source = meta.get("time_source") if isinstance(meta.get("time_source"), str) else "host"
        df = samples.frame(cols).with_columns(
            pl.lit("measure").alias("phase"),
            pl.lit("unknown").alias("cache_state"),
            pl.lit(source).alias("time_source"),
            pl.lit(device if isinstance(device, str) else None, dtype=pl.Utf8).alias("device_name"),
        )
        md: dict[str, Any] = {
            "tool": "torch.utils.benchmark",
            "device_name": device if isinstance(device, str) else None,
            "measurement_count": len(ms),
            "measurement_metadata": user_meta or None,
            "log_meta": meta or None,
        }
        return new_profile(path, self, {"samples": df}, md)


PARSER = TorchBenchmarkParser()
