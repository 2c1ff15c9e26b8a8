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

Two other shapes load too:
- a pickled Measurement (or a list/dict of them), read with an unpickler that only builds the
  Measurement and TaskSpec records (no torch import, no other class: unpickling a file must not run
  its code); the rows are the same as for the JSON export;
- printed output, at its printed precision and without raw times: a Measurement's repr (`Median`,
  `IQR (q1 to q3)`, "N measurements, R runs per measurement") -> summary rows median, q1, q3, iqr
  (or mean for a single measurement) with `sample_count` = N and `calls_per_sample` = R; and a
  `Compare` table (`[--- label ---]`, `N threads:` groups, "Times are in microseconds (us).") ->
  one median row per cell, `benchmark` = label, `variant` = the column, `params` = {sub_label,
  num_threads} as for the JSON export, `sample_count` unknown.
"""

from __future__ import annotations

import io
import pickle
import re
from pathlib import Path
from typing import Any


from profaudit import samples
from profaudit.errors import InputError, first_line
from profaudit.parsers import jsonshape
from profaudit.parsers.base import Probe, ReadOptions, load_json, new_profile, open_maybe_gzip
from profaudit.samples import canonical_params, ns_per, parse_scalar


def _measurements(doc) -> tuple[list[dict], dict]:
    if isinstance(doc, dict) and "raw_times" in doc:
        return [doc], {}
    if isinstance(doc, list):
        return doc, {}
    if isinstance(doc, dict) and isinstance(doc.get("measurements"), list):
        return doc["measurements"], {k: v for k, v in doc.items() if k != "measurements"}
    return [], {}


_PICKLE_MODULE = b"torch.utils.benchmark.utils.common"
_MEAS_HEAD = re.compile(r"^<torch\.utils\.benchmark\.utils\.common\.Measurement object at 0x[0-9a-fA-F]+>\s*$")
_TIME = r"([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\s*(ns|us|ms|s)\b"
_MEDIAN = re.compile(r"^\s+Median:\s*" + _TIME)
_IQR = re.compile(r"^\s+IQR:\s*" + _TIME + r"\s*\(\s*([-+\d.eE]+)\s+to\s+([-+\d.eE]+)\s*\)")
_SINGLE = re.compile(r"^\s+" + _TIME + r"\s*$")
_COUNTS = re.compile(r"^\s+(\d+) measurements?, (\d+) runs?(?: per measurement)?\s*,\s*(\d+) threads?")
_CMP_TITLE = re.compile(r"^\[-+\s*(?P<label>.*?)\s*-+\]\s*$")
_CMP_THREADS = re.compile(r"^\s*(?P<n>\d+) threads?:\s*-*\s*$")
_CMP_UNITS = re.compile(r"^Times are in (?:\w+) \((?P<unit>ns|us|ms|s)\)\.")


class _Record:
    """Stand-in for Measurement / TaskSpec: keeps the pickled state as a plain dict."""

    def __setstate__(self, state):
        if isinstance(state, tuple):  # (dict state, slot state)
            merged = {}
            for part in state:
                if isinstance(part, dict):
                    merged.update(part)
            state = merged
        self.__dict__.update(state if isinstance(state, dict) else {})


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if module == _PICKLE_MODULE.decode() and name in ("Measurement", "TaskSpec"):
            return _Record
        if (module, name) in (("builtins", "object"), ("copyreg", "_reconstructor")):
            return getattr(__import__(module), name)
        raise pickle.UnpicklingError(f"refusing to build {module}.{name}")


def _as_plain(obj):
    if isinstance(obj, _Record):
        return {k: _as_plain(v) for k, v in obj.__dict__.items()}
    if isinstance(obj, dict):
        return {k: _as_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_as_plain(v) for v in obj]
    return obj


def _load_pickle(path: Path):
    with open_maybe_gzip(path) as fh:
        data = fh.read()
    try:
        return _as_plain(_SafeUnpickler(io.BytesIO(data)).load())
    except Exception as exc:  # any failure of a foreign pickle is a bad input, said in one line
        raise InputError(path, f"not a readable pickled torch.utils.benchmark Measurement ({first_line(exc, type(exc).__name__)})") from None


def _read_printed(path: Path, parser, options: ReadOptions):
    with open_maybe_gzip(path) as fh:
        lines = fh.read().decode("utf-8", errors="replace").splitlines()
    cols: dict[str, list] = {k: [] for k in ("benchmark", "variant", "params", "duration_ns", "statistic", "sample_count", "calls_per_sample")}

    def add(bench, variant, params, stat, v_ns, n=None, r=None):
        cols["benchmark"].append(bench)
        cols["variant"].append(variant)
        cols["params"].append(canonical_params(params))
        cols["duration_ns"].append(v_ns)
        cols["statistic"].append(stat)
        cols["sample_count"].append(n)
        cols["calls_per_sample"].append(r)

    # Measurement reprs
    i = 0
    while i < len(lines):
        if not _MEAS_HEAD.match(lines[i]):
            i += 1
            continue
        j = i + 1
        head: list[str] = []
        while j < len(lines) and lines[j].strip() and not lines[j].startswith(" "):
            head.append(lines[j].strip())
            j += 1
        title = head[0] if head else "measurement"
        label, _, sub = title.partition(": ")
        variant = head[1] if len(head) > 1 else None
        stats: dict[str, float] = {}
        n = r = threads = None
        while j < len(lines) and not _MEAS_HEAD.match(lines[j]) and (lines[j].startswith(" ") or not lines[j].strip()):
            line = lines[j]
            if m := _MEDIAN.match(line):
                stats["median"] = float(m.group(1)) * ns_per(m.group(2))
            elif m := _IQR.match(line):
                f = ns_per(m.group(2))
                stats.update(iqr=float(m.group(1)) * f, q1=float(m.group(3)) * f, q3=float(m.group(4)) * f)
            elif m := _COUNTS.match(line):
                n, r, threads = int(m.group(1)), int(m.group(2)), int(m.group(3))
            elif (m := _SINGLE.match(line)) and not stats:
                stats["mean"] = float(m.group(1)) * ns_per(m.group(2))
            j += 1
        params = {k: v for k, v in (("sub_label", parse_scalar(sub) if sub else None), ("num_threads", threads)) if v is not None}
        for stat, v in stats.items():
            add(label, variant, params, stat, v, n, r)
        i = j
    # Compare tables
    tables: list[tuple[str, list[tuple[int | None, str, list[str]]], list[str]]] = []
    label = columns = None
    threads = None
    unit_at: list[tuple[int, str]] = []
    for k, line in enumerate(lines):
        if m := _CMP_TITLE.match(line):
            label, columns, threads = m.group("label"), None, None
            tables.append((label, [], []))
            continue
        if m := _CMP_UNITS.match(line.strip()):
            unit_at.append((len(tables), m.group("unit")))
            label = None
            continue
        if label is None:
            continue
        if m := _CMP_THREADS.match(line):
            threads = int(m.group("n"))
            continue
        if "|" not in line:
            continue
        cells = [c.strip() for c in line.split("|")]
        if columns is None:
            columns = cells[1:]
            tables[-1][2].extend(columns)
            continue
        tables[-1][1].append((threads, cells[0], cells[1:]))
    for t_index, (label, rows, columns) in enumerate(tables):
        unit = next((u for upto, u in unit_at if upto > t_index), None)
        if unit is None:
            continue
        f = ns_per(unit)
        for threads, sub, cells in rows:
            for col, cell in zip(columns, cells):
                m = re.match(r"^([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)", cell.replace(",", ""))
                if not m:
                    continue
                params = {k: v for k, v in (("sub_label", parse_scalar(sub) if sub else None), ("num_threads", threads)) if v is not None}
                add(label, col or None, params, "median", float(m.group(1)) * f)
    if not cols["benchmark"]:
        raise InputError(path, "printed torch.utils.benchmark output without a Measurement or a Compare table with its 'Times are in ...' line")
    df = samples.frame(cols, iteration=0, run=0, phase="measure", cache_state="unknown", time_source="host", device_name=options.device)
    md = {"tool": "torch.utils.benchmark", "layout": "printed", "device_name": options.device,
          "notes": ["printed output: medians/quartiles at printed precision, no raw times"]}
    return new_profile(path, parser, {"samples": df}, md)


def _looks_json(text: str) -> bool:
    # a Compare table also starts with '[' ("[---- label ----]")
    return bool(re.match(r"\s*(\{|\[\s*[\[{\]\"]|\[\s*$)", text))


class TorchBenchmarkParser:
    name = "torch-benchmark"
    source = "torch-benchmark"
    suffixes = (".json", ".json.gz", ".pkl", ".pickle", ".txt", ".log", ".out")
    description = "torch.utils.benchmark Measurements: JSON export (dataclasses.asdict), pickles (read safely), printed reprs and Compare tables"

    def sniff(self, probe: Probe) -> bool:
        if probe.head[:1] == b"\x80" and _PICKLE_MODULE in probe.head:
            return True
        t = probe.text
        if _looks_json(t):
            return '"raw_times"' in t and '"number_per_run"' in t
        if "<torch.utils.benchmark.utils.common.Measurement object at 0x" in t:
            return True
        return bool(re.search(r"^\[-+ .* -+\]\s*$", t, re.M)) and bool(re.search(r"^\s*\d+ threads?: -+", t, re.M)) and bool(re.search(r"^Times are in \w+ \((ns|us|ms|s)\)\.", t, re.M))

    def read(self, path: Path, options: ReadOptions):
        path = Path(path)
        from profaudit.parsers.base import probe as _probe
        from profaudit.parsers.textsafe import read_capped

        # each form (JSON, pickle, printed text) is read whole, as one document into Python
        # objects: refused from its size first. A 200 MB JSON blow-up (one measurement 819,200
        # times) took 21 CPU-s and 1.7 GB to load, past the fuzz run's 30 CPU-s on a busy machine
        # (fuzz_long seed 3101, torch-benchmark #624); real files are kilobytes
        read_capped(path, "torch.utils.benchmark file")
        pr = _probe(path)
        if pr.head[:1] == b"\x80":
            doc = _load_pickle(path)
        elif not _looks_json(pr.text):
            return _read_printed(path, self, options)
        else:
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
            npr = jsonshape.int64(m["number_per_run"], f"measurement {i}: number_per_run", path)
            if npr <= 0:
                raise InputError(path, f"measurement {i} has number_per_run {npr}")
            ts = jsonshape.mapping(m.get("task_spec"), f"measurement {i}: task_spec", path, optional=True)
            ts = {k: jsonshape.text(ts.get(k), f"measurement {i}: task_spec.{k}", path) for k in ("label", "stmt", "description", "env", "sub_label")} | {
                "num_threads": jsonshape.int64(ts.get("num_threads"), f"measurement {i}: task_spec.num_threads", path)}
            bench = ts.get("label") or ts.get("stmt") or f"measurement_{i}"
            variant = ts.get("description")
            if ts.get("env"):
                variant = f"{variant or ''}@{ts['env']}"
            # parse_scalar: a numeric sub_label ("128") is a number, as params are everywhere else,
            # so a claim's params: {sub_label: 128} selects it
            params = {k: parse_scalar(ts[k]) if k == "sub_label" and isinstance(ts[k], str) else ts[k] for k in ("sub_label", "num_threads") if ts.get(k) is not None}
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
            cols["duration_ns"] += [jsonshape.number(x, f"measurement {i}: raw_times[{k}]", path, optional=False) / npr * 1e9 for k, x in enumerate(raw)]
            cols["calls_per_sample"] += [npr] * n
            if m.get("metadata"):
                user_meta.append({"benchmark": bench, "variant": variant, "metadata": m["metadata"]})
        if not cols["benchmark"]:
            raise InputError(path, "measurements hold no raw_times")
        device = meta.get("device_name") or meta.get("device") or options.device
        source = meta.get("time_source") if isinstance(meta.get("time_source"), str) else "host"
        df = samples.frame(cols, phase="measure", cache_state="unknown", time_source=source, device_name=device if isinstance(device, str) else None)
        md: dict[str, Any] = {
            "tool": "torch.utils.benchmark",
            "device_name": device if isinstance(device, str) else None,
            "measurement_count": len(ms),
            "measurement_metadata": user_meta or None,
            "log_meta": meta or None,
        }
        return new_profile(path, self, {"samples": df}, md)


PARSER = TorchBenchmarkParser()
