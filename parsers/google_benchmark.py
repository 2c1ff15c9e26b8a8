"""Google Benchmark results: `--benchmark_format=json` / `--benchmark_out` JSON and console text.

JSON (any schema since 2016): doubles may be bare `NaN`/`Infinity` (not strict JSON), so it is read
with a tolerant loader. Mapping:
- `run_type: iteration` runs (or, in old files without run_type, runs whose name has no
  aggregate suffix) are raw rows: `duration_ns` = `real_time` x `time_unit`, `run` =
  `repetition_index` (each repetition is a separate timed batch), `iteration` = 0,
  `calls_per_sample` = `iterations` (the row is the mean over that many calls);
- `aggregate` runs with a time unit (mean, median, stddev -> stdev, min, max, user aggregates) are
  summary rows with `sample_count` = `repetitions`; `cv` and other `aggregate_unit: percentage`
  rows are ratios, not times, and complexity rows (BigO, RMS) are not timings: both are counted
  in metadata and not loaded;
- `time_source` = `host` for wall-clock `real_time`, `manual` for `UseManualTime` runs (name
  suffix `/manual_time`: the benchmark timed itself, often with CUDA events); the same runs'
  `cpu_time` becomes rows with `time_source` = `host_cpu`;
- `benchmark` = the family name (run_name up to the first '/'), `params` = the arguments
  (`n:1024` -> {"n": 1024}, positional -> arg0, arg1, ...; `threads`); flags like `real_time`,
  `min_time:` or `repeats:` are not parameters;
- runs with `error_occurred` or `skipped` are counted in metadata (first message kept); a file
  whose runs carry no times at all is an error.

Console text (the default reporter's table) loads too, at its printed precision: rows become raw
(or aggregate) rows as above, `calls_per_sample` from the Iterations column.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl

from profaudit import samples
from profaudit.errors import InputError
from profaudit.parsers import jsonshape
from profaudit.parsers.base import Probe, ReadOptions, new_profile, open_maybe_gzip
from profaudit.samples import canonical_params, ns_per, parse_scalar

_AGG_SUFFIX = re.compile(r"_(mean|median|stddev|cv|BigO|RMS)$")
_STAT = {"mean": "mean", "median": "median", "stddev": "stdev", "min": "min", "max": "max"}
_FLAGS = re.compile(r"^(real_time|manual_time|process_time|min_time:.*|min_warmup_time:.*|iterations:.*|repeats:.*|threads:\d+)$")

_BARE = re.compile(r'("(?:[^"\\]|\\.)*")|(-?\bnan\b|-?\binf\b|-?\bNaN\b|-?\bInfinity\b)', re.I)


def tolerant_json(text: str):
    """json.loads that also accepts bare nan/inf/-nan (Python already takes NaN and Infinity)."""
    try:
        return json.loads(text)
    except ValueError:
        pass

    def fix(m):
        if m.group(1):
            return m.group(1)
        tok = m.group(2).lower()
        if "inf" in tok:
            return "-Infinity" if tok.startswith("-") else "Infinity"
        return "NaN"

    return json.loads(_BARE.sub(fix, text))


def split_name(run_name: str) -> tuple[str, dict[str, Any], set[str]]:
    """'BM_gemm/n:1024/8/real_time' -> ('BM_gemm', {'n': 1024, 'arg1': 8}, {'real_time'})."""
    parts = run_name.split("/")
    family, params, flags = parts[0], {}, set()
    pos = 0
    for p in parts[1:]:
        if _FLAGS.match(p):
            if p.startswith("threads:"):
                params["threads"] = int(p.split(":", 1)[1])
            else:
                flags.add(p.split(":", 1)[0])
            continue
        if ":" in p:
            k, v = p.split(":", 1)
            params[k] = parse_scalar(v)
        else:
            params[f"arg{pos}"] = parse_scalar(p)
            pos += 1
    return family, params, flags


class _Cols:
    KEYS = ("benchmark", "params", "run", "iteration", "duration_ns", "statistic", "sample_count", "calls_per_sample", "time_source", "phase", "cache_state")

    def __init__(self):
        self.c = {k: [] for k in self.KEYS}

    def add(self, **kw):
        for k in self.KEYS:
            self.c[k].append(kw.get(k))

    def frame(self, device) -> pl.DataFrame:
        return samples.frame(self.c).with_columns(pl.lit(device).cast(pl.Utf8).alias("device_name"))

    def __len__(self):
        return len(self.c["benchmark"])


def read_json(path: Path, parser, options: ReadOptions):
    from profaudit.parsers.textsafe import read_capped

    read_capped(path, "Google Benchmark JSON")  # read whole below: refused past the limit first
    with open_maybe_gzip(path) as fh:
        text = fh.read().decode("utf-8", errors="replace")
    try:
        doc = tolerant_json(text)
    except ValueError as exc:
        raise InputError(path, f"not valid Google Benchmark JSON: {exc}") from None
    runs = doc.get("benchmarks") if isinstance(doc, dict) else None
    if not isinstance(runs, list):
        raise InputError(path, "Google Benchmark JSON without a 'benchmarks' list")
    cols = _Cols()
    errors: list[str] = []
    skipped_runs: list[str] = []
    not_times: list[str] = []
    untimed = 0
    seen: dict[tuple, int] = {}
    for r in runs:
        if not isinstance(r, dict):
            continue
        name = str(r.get("name", ""))
        if r.get("error_occurred"):
            errors.append(f"{name}: {r.get('error_message', '')}".strip())
            continue
        if r.get("skipped"):
            skipped_runs.append(f"{name}: {r.get('skip_message', '')}".strip())
            continue
        run_type = r.get("run_type")
        agg = r.get("aggregate_name")
        if run_type is None:
            m = _AGG_SUFFIX.search(name)
            if m:
                run_type, agg = "aggregate", m.group(1)
        run_name = jsonshape.text(r.get("run_name"), f"benchmark {name!r}: run_name", path) or (_AGG_SUFFIX.sub("", name) if run_type == "aggregate" else name)
        family, params, flags = split_name(run_name)
        if agg in ("BigO", "RMS") or "big_o" in r or "rms" in r:
            not_times.append(name)
            continue
        if run_type == "aggregate" and (r.get("aggregate_unit") == "percentage" or agg == "cv"):
            not_times.append(name)
            continue
        unit = jsonshape.text(r.get("time_unit", "ns"), f"benchmark {name!r}: time_unit", path) or "ns"
        f = ns_per(unit)
        real, cpu = jsonshape.finite(r.get("real_time")), jsonshape.finite(r.get("cpu_time"))
        if f is None or (real is None and cpu is None):
            untimed += 1
            continue
        pj = canonical_params(params)
        src = "manual" if "manual_time" in flags else "host"
        common = dict(benchmark=family, params=pj, phase="measure", cache_state="unknown",
                      calls_per_sample=jsonshape.int64(r.get("iterations"), f"benchmark {name!r}: iterations", path))
        if run_type == "aggregate":
            stat = _STAT.get(agg, agg or "aggregate")
            # An aggregate's `iterations` is the number of repetitions it summarises (the library
            # sets it to the report count), not calls per sample: the per-repetition iteration
            # count is not in the row, so calls_per_sample is unknown.
            n = r.get("repetitions") if isinstance(r.get("repetitions"), int) and not isinstance(r.get("repetitions"), bool) else r.get("iterations")
            n = jsonshape.int64(n, f"benchmark {name!r}: repetitions", path)
            common.update(statistic=stat, sample_count=n, run=None, iteration=0, calls_per_sample=None)
        else:
            key = (family, pj)
            run = jsonshape.int64(r.get("repetition_index"), f"benchmark {name!r}: repetition_index", path)
            if run is None:  # old files: repetitions are repeated rows of one name
                run = seen.get(key, 0)
            seen[key] = max(seen.get(key, 0), run + 1)
            common.update(statistic=None, sample_count=None, run=run, iteration=0)
        if real is not None:
            cols.add(duration_ns=real * f, time_source=src, **common)
        if cpu is not None:
            cols.add(duration_ns=cpu * f, time_source="host_cpu", **common)
    if len(cols) == 0:
        why = []
        if errors:
            why.append(f"{len(errors)} errored (first: {errors[0]})")
        if untimed:
            why.append(f"{untimed} without real_time/cpu_time")
        if not_times:
            why.append(f"{len(not_times)} complexity/ratio aggregates")
        raise InputError(path, "no timed runs" + (": " + "; ".join(why) if why else ""))
    # free-form values inside it (a list of hosts) are kept in extra_json by Profile.metadata_row
    ctx = jsonshape.mapping(doc.get("context"), "context", path, optional=True)
    md: dict[str, Any] = {
        "tool": "google-benchmark",
        "tool_version": ctx.get("library_version"),
        "capture_time": ctx.get("date"),
        "host": ctx.get("host_name"),
        "command_line": ctx.get("executable"),
        "context": ctx or None,
        "cpu_scaling_enabled": ctx.get("cpu_scaling_enabled"),
        "errored_runs": errors or None,
        "skipped_runs": skipped_runs or None,
        "not_time_aggregates": not_times or None,
        "untimed_runs": untimed or None,
        "device_name": options.device,
    }
    return new_profile(path, parser, {"samples": cols.frame(options.device)}, md)


# console ---------------------------------------------------------------------------------------

_HDR = re.compile(r"^Benchmark\s+Time\s+CPU\s+Iterations")
_ROW = re.compile(r"^(?P<name>\S+)\s+(?P<t>[-+0-9.eE]+|nan|inf)\s*(?P<tu>ns|us|ms|s)\s+(?P<c>[-+0-9.eE]+|nan|inf)\s*(?P<cu>ns|us|ms|s)\s+(?P<it>\d+)?")
_OTHER_AGG = re.compile(r"^(?P<name>\S+)\s+[-+0-9.eE]+\s*(%|N|N\^2|N\^3|lgN|NlgN|\(1\)|)\s+[-+0-9.eE]+\s*(%|N|N\^2|N\^3|lgN|NlgN|\(1\)|)(\s+\d+)?\s*$")
_ERR = re.compile(r"^(?P<name>\S+)\s+ERROR OCCURRED: ?(?P<msg>.*)$")


def sniff_console(text: str) -> bool:
    lines = text.splitlines()[:80]
    for i, l in enumerate(lines):
        if _HDR.match(l.strip()) and i > 0 and set(lines[i - 1].strip()) == {"-"}:
            return True
    return False


def read_console(path: Path, parser, options: ReadOptions):
    from profaudit.parsers.textsafe import JSON_LIMIT, read_capped, size_text

    # read line by line in Python (~0.2 CPU-s and 12 MB per MB); console tables are for people
    data = read_capped(path, "Google Benchmark console output", quiet=False, too_big=lambda _: (
        f"Google Benchmark console output over {size_text(JSON_LIMIT)}: save such runs as JSON (--benchmark_out=FILE --benchmark_out_format=json)"))
    lines = data.decode("utf-8", errors="replace").splitlines()
    del data
    start = next((i for i, l in enumerate(lines) if _HDR.match(l.strip())), None)
    if start is None:
        raise InputError(path, "no 'Benchmark Time CPU Iterations' table")
    cols = _Cols()
    errors, not_times, preamble = [], [], lines[:start]
    reps: dict[tuple, int] = {}
    names: dict[str, tuple[str, str, str]] = {}
    for line in lines[start + 1:]:
        s = line.strip()
        if not s or set(s) == {"-"}:
            continue
        m = _ERR.match(s)
        if m:
            errors.append(f"{m.group('name')}: {m.group('msg')}")
            continue
        m = _ROW.match(s)
        if not m:
            if _OTHER_AGG.match(s):
                not_times.append(s.split()[0])
            continue
        name = m.group("name")
        agg_m = _AGG_SUFFIX.search(name)
        agg = agg_m.group(1) if agg_m else None
        if agg in ("cv", "BigO", "RMS"):
            not_times.append(name)
            continue
        known = names.get(name)
        if known is None:
            # a name repeats on every repetition: split and canonicalise it once
            family, params, flags = split_name(_AGG_SUFFIX.sub("", name))
            known = names[name] = (family, canonical_params(params), "manual" if "manual_time" in flags else "host")
        family, pj, src = known
        it = int(m.group("it")) if m.group("it") else None
        if agg:
            # The console prints the repetition count in an aggregate's Iterations column.
            common = dict(statistic=_STAT.get(agg, agg), sample_count=it if it is not None else reps.get((family, pj)), run=None)
        else:
            run = reps.get((family, pj), 0)
            reps[(family, pj)] = run + 1
            common = dict(statistic=None, sample_count=None, run=run)
        for val, unit, ts in ((m.group("t"), m.group("tu"), src), (m.group("c"), m.group("cu"), "host_cpu")):
            try:
                v = jsonshape.finite(float(val))
            except ValueError:  # the row pattern lets '--' or '1e' through as a number: no time
                raise InputError(path, f"benchmark {name!r}: the time {val!r} is not a number") from None
            if v is not None:
                cols.add(benchmark=family, params=pj, iteration=0, duration_ns=v * ns_per(unit), time_source=ts, phase="measure", cache_state="unknown", calls_per_sample=None if agg else it, **common)
    if len(cols) == 0:
        raise InputError(path, "Google Benchmark console output with no timed rows" + (f" ({len(errors)} errored, first: {errors[0]})" if errors else ""))
    md: dict[str, Any] = {
        "tool": "google-benchmark",
        "layout": "console",
        "notes": ["console output: times at printed precision"],
        "preamble": [l for l in preamble if l.strip() and set(l.strip()) != {"-"}][:40] or None,
        "cpu_scaling_enabled": True if any("CPU scaling is enabled" in l for l in preamble) else None,
        "errored_runs": errors or None,
        "not_time_aggregates": not_times or None,
        "device_name": options.device,
    }
    return new_profile(path, parser, {"samples": cols.frame(options.device)}, md)


class GoogleBenchmarkParser:
    name = "google-benchmark"
    source = "google-benchmark"
    suffixes = (".json", ".json.gz", ".txt", ".log", ".out")
    description = "Google Benchmark JSON (bare NaN/Infinity tolerated) and console output"

    def sniff(self, probe: Probe) -> bool:
        t = probe.text
        s = t.lstrip()
        if s.startswith("{"):
            if '"benchmarks"' not in t:
                return False
            return ('"context"' in t and ('"num_cpus"' in t or '"library_build_type"' in t or '"mhz_per_cpu"' in t)) or (
                '"run_type"' in t and ('"per_family_instance_index"' in t or '"repetition_index"' in t)
            ) or ('"real_time"' in t and '"cpu_time"' in t and '"time_unit"' in t)
        return sniff_console(t)

    def read(self, path: Path, options: ReadOptions):
        path = Path(path)
        from profaudit.parsers.base import probe as _probe

        if _probe(path).text.lstrip().startswith("{"):
            return read_json(path, self, options)
        return read_console(path, self, options)


PARSER = GoogleBenchmarkParser()
