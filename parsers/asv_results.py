"""airspeed velocity (asv) results: `results/<machine>/<commit>-<env>.json`, with the run's
`results/benchmarks.json` (and `results/<machine>/machine.json`) beside it where present.

A results file (format version 2, asv >= 0.5) is `{"commit_hash", "env_name", "date" (ms since the
epoch), "params" (the machine: machine, cpu, num_cpu, os, ram, arch, python, ...), "python",
"requirements", "env_vars", "result_columns": [...], "results": {benchmark: [one value per
column]}, "durations", "version": 2}`. Each benchmark's row is positional: `result` (one value
per parameter combination, the itertools.product of `params` in order; null = failed, NaN =
skipped), `params` (one list of repr() strings per parameter), `version`, `started_at` (ms),
`duration` (s), `stats_ci_99_a`/`stats_ci_99_b`, `stats_q_25`/`stats_q_75`, `stats_number`
(calls each sample averages), `stats_repeat` (samples), `samples` (only with
`--record-samples`), `profile`; trailing null columns are dropped by asv. Version 1 files
(`results: {name: {result, params, stats, samples}}` or a bare number) are read the way asv's own
upgrade reads them.

Rows (`samples`): for each parameter combination with a result, `median` (asv's result is the
median of its samples), `q1`/`q3` and the 99% confidence bounds `ci99_low`/`ci99_high` as summary
rows with `sample_count` = stats_repeat, plus one raw row per recorded sample; `calls_per_sample`
= stats_number; `params` = {param name: value} (names from benchmarks.json, else asv's own
`param1`, `param2`...; values parsed back from their repr, a string where that fails);
`timestamp_ns` = started_at. Only timing benchmarks are read: `type` time (unit seconds) in
benchmarks.json, or, without it, a `time_`/`timeraw_` method name; `track_`/`mem_`/`peakmem_`
benchmarks are named in metadata. `time_source` = host (asv times with timeit.default_timer).
"""

from __future__ import annotations

import ast
import itertools
import json
import math
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from profaudit import samples
from profaudit.errors import InputError
from profaudit.parsers import jsonshape
from profaudit.parsers.base import Probe, ReadOptions, new_profile
from profaudit.parsers.textsafe import clean, load_clean_json
from profaudit.samples import canonical_params

_STAT_COLUMNS = (("stats_q_25", "q1"), ("stats_q_75", "q3"), ("stats_ci_99_a", "ci99_low"), ("stats_ci_99_b", "ci99_high"))
_TIME_METHOD = re.compile(r"(?:^|\.)(?:time|timeraw)_[^.]*$")


def _param_value(text):
    """asv stores each parameter value as its repr(): "10" -> 10, "'fast'" -> "fast"."""
    if not isinstance(text, str):
        return text
    try:
        v = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text
    return v if isinstance(v, (int, float, str, bool)) or v is None else text


def _v1_to_columns(results: dict) -> tuple[list[str], dict[str, list]]:
    """asv format version 1 -> the version-2 positional layout (asv's own upgrade does the same)."""
    cols = ["result", "params", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25", "stats_q_75", "stats_number", "stats_repeat", "samples"]
    out = {}
    for name, v in results.items():
        if not isinstance(v, dict):
            v = {"result": [v], "params": []}
        res = v.get("result")
        res = res if isinstance(res, list) else [res]
        stats = v.get("stats")
        stats = stats if isinstance(stats, list) else [stats] * len(res) if stats is not None else [None] * len(res)

        def pick(fn):
            return [fn(z) if isinstance(z, dict) else None for z in stats]

        ci = lambda z, i: (z.get("ci_99") or [None, None])[i]
        out[name] = [res, v.get("params") or [], pick(lambda z: ci(z, 0)), pick(lambda z: ci(z, 1)), pick(lambda z: z.get("q_25")),
                     pick(lambda z: z.get("q_75")), pick(lambda z: z.get("number")), pick(lambda z: z.get("repeat")), v.get("samples")]
    return cols, out


class AsvResultsParser:
    name = "asv"
    source = "timing"
    suffixes = (".json",)
    description = "airspeed velocity (asv) results/<machine>/<commit>-<env>.json, with results/benchmarks.json for units and parameter names"

    def sniff(self, probe: Probe) -> bool:
        t = probe.text
        # asv writes commit_hash and env_name first, so a file cut short still shows them; format-1
        # files of early asv have no env_name but their python and requirements
        return t.lstrip().startswith("{") and '"commit_hash"' in t and ('"env_name"' in t or ('"requirements"' in t and '"python"' in t))

    def read(self, path: Path, options: ReadOptions):
        path = Path(path)
        doc = load_clean_json(path, "asv results JSON")
        if not isinstance(doc, dict) or not isinstance(doc.get("results"), dict):
            raise InputError(path, "not an asv results file (no 'results' object)")
        version = doc.get("version", 1)
        if version == 2:
            columns = doc.get("result_columns")
            if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns) or "result" not in columns:
                raise InputError(path, "asv results file without 'result_columns' naming a 'result' column")
            rows = doc["results"]
        elif version == 1:
            columns, rows = _v1_to_columns(doc["results"])
        else:
            raise InputError(path, f"asv results format version {version!r} is not supported (1 and 2 are)")
        bench_defs = self._sidecar(path.parent.parent / "benchmarks.json")
        machine = self._sidecar(path.parent / "machine.json")

        cols: dict[str, list] = {k: [] for k in ("benchmark", "params", "iteration", "duration_ns", "statistic", "sample_count", "calls_per_sample", "timestamp_ns")}
        not_time: dict[str, str] = {}
        failed: list[str] = []
        skipped: list[str] = []
        for name, row in rows.items():
            if not isinstance(row, list):
                raise InputError(path, f"benchmark {name!r}: its results are not a list")
            r = dict(zip(columns, row))
            bdef = bench_defs.get(name) if isinstance(bench_defs.get(name), dict) else {}
            kind = bdef.get("type") or ("time" if _TIME_METHOD.search(name) else None)
            if kind != "time" or bdef.get("unit", "seconds") != "seconds":
                not_time[name] = str(bdef.get("unit") or kind or "unknown")
                continue
            values = r.get("result")
            values = values if isinstance(values, list) else [values]
            axes = r.get("params") or []
            if not isinstance(axes, list) or not all(isinstance(a, list) for a in axes):
                raise InputError(path, f"benchmark {name!r}: 'params' is not a list of value lists")
            # counted before the combinations are made: a damaged file with 200 axes asks for 2**200
            n_combos = math.prod(len(a) for a in axes)
            if n_combos != len(values):
                raise InputError(path, f"benchmark {name!r}: {len(values)} result(s) for {n_combos} parameter combination(s)")
            combos = list(itertools.product(*axes)) if axes else [()]
            names = bdef.get("param_names") or [f"param{i + 1}" for i in range(len(axes))]
            if not isinstance(names, list):
                raise InputError(path.parent.parent / "benchmarks.json", f"benchmark {name!r}: param_names: expected a list, found {jsonshape.kind(names)}")
            started = jsonshape.finite(r.get("started_at"))
            per = {c: (r.get(c) if isinstance(r.get(c), list) else [None] * len(values)) for c in ("stats_number", "stats_repeat", "samples", *(s for s, _ in _STAT_COLUMNS))}
            for j, combo in enumerate(combos):
                median = jsonshape.finite(values[j])
                if median is None:
                    # asv writes null for a failed benchmark and NaN for a skipped one
                    (skipped if isinstance(values[j], float) and math.isnan(values[j]) else failed).append(name + (f" {list(combo)}" if combo else ""))
                    continue
                pj = canonical_params({str(n): _param_value(v) for n, v in zip(names, combo)})
                # counts asv writes as integers: another type (a row whose columns were shifted, a
                # hand edit) is one line; a list here reached the catch-all from the frame builder
                number = jsonshape.int64(per["stats_number"][j] if j < len(per["stats_number"]) else None, f"results.{name}: stats_number", path)
                repeat = jsonshape.int64(per["stats_repeat"][j] if j < len(per["stats_repeat"]) else None, f"results.{name}: stats_repeat", path)
                stats = [("median", median)] + [(stat, jsonshape.finite(per[c][j]) if j < len(per[c]) else None) for c, stat in _STAT_COLUMNS]
                for stat, v in stats:
                    if v is not None:
                        self._row(cols, name, pj, 0, v, stat, repeat, number, started)
                raw = per["samples"][j] if j < len(per["samples"]) else None
                for k, v in enumerate(raw if isinstance(raw, list) else []):
                    if (sec := jsonshape.finite(v)) is not None:
                        self._row(cols, name, pj, k, sec, None, None, number, started)
        if not cols["benchmark"]:
            why = (f"every timing benchmark failed or was skipped ({len(failed)} failed, {len(skipped)} skipped)" if failed or skipped
                   else f"no timing benchmarks (only {', '.join(sorted(set(not_time.values())))})" if not_time else "no benchmarks")
            raise InputError(path, f"asv results hold no timings: {why}")
        df = samples.frame(cols, run=0, phase="measure", cache_state="unknown", time_source="host", device_name=options.device)
        mparams = doc.get("params") if isinstance(doc.get("params"), dict) else {}
        reqs = doc.get("requirements") if isinstance(doc.get("requirements"), dict) else {}
        date = jsonshape.finite(doc.get("date"))
        if date is not None and not 0 <= date < 253402300800000:  # ms since 1970, before year 10000
            raise InputError(path, f"date: {doc.get('date')!r} is not a time in ms since 1970 (out of range)")
        md: dict[str, Any] = {
            "tool": "asv",
            "capture_time": datetime.fromtimestamp(date / 1e3, tz=timezone.utc).isoformat() if date is not None else None,
            "host": mparams.get("machine") or machine.get("machine"),
            "device_name": options.device,
            "time_source": "host",
            "commit_hash": doc.get("commit_hash"),
            "env_name": doc.get("env_name"),
            "python_version": doc.get("python"),
            "machine": {**{k: v for k, v in machine.items() if k != "version"}, **mparams} or None,
            "cpu_model_name": mparams.get("cpu") or machine.get("cpu"),
            "versions": {str(k): str(v) for k, v in reqs.items() if v not in (None, "")} or None,
            "env_vars": doc.get("env_vars") or None,
            "benchmarks_json": bool(bench_defs),
            "non_time_benchmarks": not_time or None,
            "failed_benchmarks": failed or None,
            "skipped_benchmarks": skipped or None,
        }
        if not bench_defs:
            md["notes"] = ["no results/benchmarks.json beside the results folder: timing benchmarks told by their time_ name, parameters named param1, param2, ..."]
        return new_profile(path, self, {"samples": df}, md)

    @staticmethod
    def _row(cols, name, pj, it, seconds, stat, count, number, started_ms):
        cols["benchmark"].append(name)
        cols["params"].append(pj)
        cols["iteration"].append(it)
        cols["duration_ns"].append(float(seconds) * 1e9)
        cols["statistic"].append(stat)
        cols["sample_count"].append(count if stat is not None else None)
        cols["calls_per_sample"].append(number)
        cols["timestamp_ns"].append(started_ms * 1e6 if started_ms is not None else None)

    @staticmethod
    def _sidecar(p: Path) -> dict:
        """benchmarks.json / machine.json: optional; a damaged one is an error naming it."""
        if not p.is_file():
            return {}
        from profaudit.parsers import textsafe

        try:
            # read whole (~20x its size in memory): at most JSON_LIMIT + 1 bytes are read to know
            data = textsafe.read_capped(p, "asv JSON", decompress=False, quiet=False, too_big=lambda _: (
                f"asv JSON beside the results file over {textsafe.size_text(textsafe.JSON_LIMIT)}: larger than asv writes; too big to read whole"))
            d = json.loads(data.decode("utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(p, f"not valid asv JSON beside the results file: {exc}") from None
        return clean(d) if isinstance(d, dict) else {}


PARSER = AsvResultsParser()
