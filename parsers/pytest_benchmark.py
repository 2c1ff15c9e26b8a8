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

The terminal table (`Name (time in us)  Min  Max  Mean  StdDev  Median  IQR  Outliers  OPS  Rounds
Iterations`, any `--benchmark-columns` subset, one table per group) loads too, at its printed
precision: one summary row per time column, the unit from each table's header, `sample_count` =
Rounds, `calls_per_sample` = Iterations; the "(1.37)" ratios to the best row and thousands
separators are dropped. A row from a `--benchmark-compare` run ("test_x (0001_abc)", "(NOW)")
keeps the run label as its `variant`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any


from profaudit import samples
from profaudit.errors import InputError
from profaudit.parsers import jsonshape
from profaudit.parsers.base import Probe, ReadOptions, load_json, new_profile, open_maybe_gzip
from profaudit.samples import canonical_params, ns_per

_STATS = (("min", "min"), ("max", "max"), ("mean", "mean"), ("stddev", "stdev"), ("median", "median"), ("q1", "q1"), ("q3", "q3"), ("iqr", "iqr"), ("total", "total"))


_TABLE_HEAD = re.compile(r"^Name \(time in (?P<unit>ns|us|ms|s)\)\s{2,}(?P<cols>\S.*?)\s*$", re.M)
_TIME_COLS = {"min": "min", "max": "max", "mean": "mean", "stddev": "stdev", "median": "median", "iqr": "iqr"}
# a cell: outlier counts "138;8154", or a number (thousands separators allowed) with an optional
# "(1.37)" / "(>1000.0)" / "(inf)" ratio to the best row
_CELL = re.compile(r"(?P<out>\d+;\d+)|(?P<num>[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)(?:\s*\([^)]*\))?")
_ROW_NAME = re.compile(r"^(?P<name>\S.*?)\s{2,}(?=[-+]?[\d.]|nan|inf)")
_GROUP = re.compile(r"^-+ benchmark(?: '(?P<group>.*)')?: \d+ tests? -+$")
_RUN_LABEL = re.compile(r"^(?P<test>.*\S)\s+\((?P<label>NOW|\d{4}_[^)]*)\)$")


def _read_console(path: Path, parser, options: ReadOptions):
    with open_maybe_gzip(path) as fh:
        lines = fh.read().decode("utf-8", errors="replace").splitlines()
    cols: dict[str, list] = {k: [] for k in ("benchmark", "variant", "params", "duration_ns", "statistic", "sample_count", "calls_per_sample")}
    groups: list[str] = []
    header: list[str] | None = None
    f = None
    for line in lines:
        m = _TABLE_HEAD.match(line)
        if m:
            header = [c.strip().split(" (")[0].lower() for c in re.split(r"\s{2,}", m.group("cols"))]
            f = ns_per(m.group("unit"))
            continue
        g = _GROUP.match(line.strip())
        if g:
            header = None  # each group's table has its own header (and maybe its own unit)
            if g.group("group"):
                groups.append(g.group("group"))
            continue
        if header is None:
            continue
        nm = _ROW_NAME.match(line)
        if not nm:
            continue
        cells = [c for c in _CELL.finditer(line, nm.end())]
        if len(cells) != len(header):
            continue
        name, variant = nm.group("name"), None
        lm = _RUN_LABEL.match(name)
        if lm:
            name, variant = lm.group("test"), lm.group("label")
        vals: dict[str, float] = {}
        for col, c in zip(header, cells):
            if c.group("num") is not None:
                vals[col] = float(c.group("num").replace(",", ""))
        rounds = vals.get("rounds")
        iters = vals.get("iterations")
        for col, stat in _TIME_COLS.items():
            v = vals.get(col)
            if v is None or v != v or v < 0:
                continue
            cols["benchmark"].append(name)
            cols["variant"].append(variant)
            cols["params"].append("{}")
            cols["duration_ns"].append(v * f)
            cols["statistic"].append(stat)
            cols["sample_count"].append(int(rounds) if rounds is not None else None)
            cols["calls_per_sample"].append(int(iters) if iters is not None else None)
    if not cols["benchmark"]:
        raise InputError(path, "pytest-benchmark table without timed rows")
    df = samples.frame(cols, iteration=0, run=0, phase="measure", cache_state="unknown", time_source="host", device_name=options.device)
    md: dict[str, Any] = {
        "tool": "pytest-benchmark",
        "layout": "console",
        "notes": ["console table: times at printed precision; no raw rounds"],
        "groups": groups or None,
        "device_name": options.device,
    }
    return new_profile(path, parser, {"samples": df}, md)


class PytestBenchmarkParser:
    name = "pytest-benchmark"
    source = "pytest-benchmark"
    suffixes = (".json", ".json.gz", ".txt", ".log", ".out")
    description = "pytest-benchmark --benchmark-json / --benchmark-save files (seconds per iteration; raw rounds when saved) and its terminal table"

    def sniff(self, probe: Probe) -> bool:
        t = probe.text
        if not t.lstrip().startswith("{"):
            return _TABLE_HEAD.search(t) is not None
        if not (t.lstrip().startswith("{") and '"benchmarks"' in t):
            return False
        if ('"machine_info"' in t or '"commit_info"' in t) and ('"stats"' in t or '"fullname"' in t or '"benchmarks": []' in t):
            return True
        # Files trimmed by hand or by a CI step often drop machine_info/commit_info; the stats block
        # with pytest-benchmark's own outlier fields is still unmistakable.
        return '"stats"' in t and '"rounds"' in t and ('"iqr_outliers"' in t or '"ld15iqr"' in t or '"stddev_outliers"' in t)

    def read(self, path: Path, options: ReadOptions):
        path = Path(path)
        from profaudit.parsers.base import probe as _probe

        if not _probe(path).text.lstrip().startswith("{"):
            return _read_console(path, self, options)
        from profaudit.parsers.textsafe import read_capped

        # refused from its size before the parse: read whole, 200 MB of it took 2.5 GB
        read_capped(path, "pytest-benchmark JSON")
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
        for i, b in enumerate(benches):
            b = jsonshape.mapping(b, f"benchmarks[{i}]", path)
            stats = b.get("stats")
            if not isinstance(stats, dict):
                raise InputError(path, f"benchmark {b.get('name')!r} has no stats")
            # text (a number is its text, as before); a list or a mapping here reached the catch-all
            name = jsonshape.text(b.get("name") or b.get("fullname"), f"benchmarks[{i}].name", path)
            if b.get("group") is not None:
                groups[name] = b.get("group")
            params = b.get("params") if isinstance(b.get("params"), dict) else {}
            pj = canonical_params(params)
            iters = jsonshape.int64(stats.get("iterations"), f"benchmark {name!r}: stats.iterations", path)
            rounds = jsonshape.int64(stats.get("rounds"), f"benchmark {name!r}: stats.rounds", path)
            timer = jsonshape.mapping(b.get("options"), f"benchmark {name!r}: options", path, optional=True).get("timer")
            if timer:
                timers.add(str(timer))
            data = stats.get("data")
            if isinstance(data, list) and data:
                raw_benchmarks += 1
                n = len(data)
                cols["benchmark"] += [name] * n
                cols["params"] += [pj] * n
                cols["iteration"] += list(range(n))
                cols["duration_ns"] += [None if x is None else jsonshape.number(x, f"benchmark {name!r}: stats.data[{k}]", path) * 1e9 for k, x in enumerate(data)]
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
                    # 1e400 reads as inf and 10**400 overflows float(): neither is a time
                    cols["duration_ns"].append(jsonshape.number(v, f"benchmark {name!r}: stats.{key}", path) * 1e9)
                    cols["statistic"].append(stat)
                    cols["sample_count"].append(rounds)
                    cols["calls_per_sample"].append(iters)
                    cols["run"].append(0)
        df = samples.frame(cols, phase="measure", cache_state="unknown", time_source="host", device_name=options.device)
        mi = jsonshape.mapping(doc.get("machine_info") or {}, "machine_info", path)
        cpu = mi.get("cpu") if isinstance(mi.get("cpu"), dict) else {}  # free-form like the rest of machine_info (kept in extra_json)
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
