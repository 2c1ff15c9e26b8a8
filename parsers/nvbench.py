"""NVIDIA nvbench results: `--json` (with `--jsonbin` per-sample files), `--csv` and `--md` output.

What lands in `samples` (nvbench keeps summaries per benchmark state, raw samples only with
`--jsonbin`):
- one summary row per state and statistic, `sample_count` = the measurement's sample count:
  cold GPU times (CUDA events around each isolated, cache-flushed launch) -> time_source
  `nvbench_cold`, cache_state `cold`; the host-timer view of the same cold launches ->
  `nvbench_cold_cpu` (cold); batch (back-to-back launches, no flush, one mean) -> `nvbench_batch`,
  cache_state `hot`; CPU-only benchmarks -> `nvbench_cpu_only`. Statistics: mean, median, min, max,
  q1, q3, stdev, iqr where the file has them. The CSV and Markdown printers only keep the
  relative noise (stdev / mean); there `stdev` = noise x mean, noted in the metadata.
- with `--jsonbin`, one raw row per cold sample from `<json>-bin/<n>.bin` (little-endian float32
  seconds, paths relative to the JSON), with the per-sample SM clock from `-freqs-bin/` when
  written; a missing sample file is noted in metadata and the summaries still load, a truncated
  one is an error.
- `params` = the state's axis values (power-of-two axes by value, not by exponent) plus the
  element counts the benchmark declared (`state.add_element_count`), all exact integers or
  strings; measured quantities (bandwidth, CUPTI metrics, byte counts) are not parameters.
  CSV and Markdown do not mark which columns are axes: any column that is not a known nvbench
  measurement is taken as a parameter, so a user-defined summary column would appear there too.

Markdown cells are rounded by nvbench (4 significant digits for times); the metadata says so.
Skipped states (`is_skipped`, "Skipped = Yes") are counted in metadata, not loaded.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from profaudit.errors import InputError
from profaudit.parsers.base import Probe, ReadOptions, finite_number, load_json, new_profile
from profaudit import samples
from profaudit.samples import canonical_params, ns_per, parse_scalar

_CSV_HEAD = "Benchmark,Device,Device Name"

# tag -> (measurement, statistic); measurement in cold_gpu, cold_cpu, batch, cpu_only
_TIME_TAGS: dict[str, tuple[str, str]] = {}
for _m, _prefix in (("cold_gpu", "nv/cold/time/gpu"), ("cold_cpu", "nv/cold/time/cpu"), ("batch", "nv/batch/time/gpu"), ("cpu_only", "nv/cpu_only/time/cpu")):
    for _s in ("mean", "median", "min", "max", "q1", "q3"):
        _TIME_TAGS[f"{_prefix}/{_s}"] = (_m, _s)
    _TIME_TAGS[f"{_prefix}/stdev/absolute"] = (_m, "stdev")
    _TIME_TAGS[f"{_prefix}/iqr/absolute"] = (_m, "iqr")
_REL_NOISE_TAGS = {"nv/cold/time/gpu/stdev/relative": "cold_gpu", "nv/cold/time/cpu/stdev/relative": "cold_cpu", "nv/cpu_only/time/cpu/stdev/relative": "cpu_only", "nv/batch/time/gpu/stdev/relative": "batch"}
_COUNT_TAGS = {"nv/cold/sample_size": "cold", "nv/batch/sample_size": "batch", "nv/cpu_only/sample_size": "cpu_only"}

_SOURCE = {"cold_gpu": "nvbench_cold", "cold_cpu": "nvbench_cold_cpu", "batch": "nvbench_batch", "cpu_only": "nvbench_cpu_only"}
_CACHE = {"cold_gpu": "cold", "cold_cpu": "cold", "batch": "hot", "cpu_only": "unknown"}
_COUNT_OF = {"cold_gpu": "cold", "cold_cpu": "cold", "batch": "batch", "cpu_only": "cpu_only"}

# Column names the CSV/Markdown printers give nvbench's own measurements (never parameters).
_KNOWN_MEASUREMENTS = {
    "Samples", "Batch", "Noise", "Elem/s", "GlobalMem BW", "BWPeak", "BWUtil", "HBWPeak", "LoadEff", "StoreEff",
    "L1HitRate", "L2HitRate", "Clock Rate", "Clock Scaling", "Walltime", "IQR", "Rel IQR",
}
_TIME_HEADER = re.compile(r"^(?:(Min|Max|Median|Q1|Q3) )?(CPU|GPU) Time$|^Batch GPU$")


def _summary_value(summ: dict, key: str = "value") -> Any:
    for item in summ.get("data") or []:
        if item.get("name") == key:
            return _axis_value(item)
    if key in summ:  # tolerate writers that flatten values onto the summary
        return summ[key]
    return None


def _axis_value(item: dict) -> Any:
    v, t = item.get("value"), item.get("type")
    if t == "int64":
        return int(v)
    if t == "float64":
        return float(v)
    return v


class _Rows:
    """Column lists for the samples frame."""

    COLS = ("benchmark", "params", "run", "iteration", "duration_ns", "statistic", "sample_count", "sm_clock_mhz", "phase", "cache_state", "time_source", "device_name", "calls_per_sample")

    def __init__(self):
        self.c: dict[str, list] = {k: [] for k in self.COLS}

    def add(self, **kw):
        for k in self.COLS:
            self.c[k].append(kw.get(k))

    def extend_raw(self, bench, params, times_s: np.ndarray, freqs_hz: np.ndarray | None, source, cache, device):
        n = len(times_s)
        self.c["benchmark"].extend([bench] * n)
        self.c["params"].extend([params] * n)
        self.c["run"].extend([0] * n)
        self.c["iteration"].extend(range(n))
        self.c["duration_ns"].extend((times_s.astype(np.float64) * 1e9).tolist())
        self.c["statistic"].extend([None] * n)
        self.c["sample_count"].extend([None] * n)
        self.c["sm_clock_mhz"].extend((freqs_hz.astype(np.float64) / 1e6).tolist() if freqs_hz is not None else [None] * n)
        self.c["phase"].extend(["measure"] * n)
        self.c["cache_state"].extend([cache] * n)
        self.c["time_source"].extend([source] * n)
        self.c["device_name"].extend([device] * n)
        self.c["calls_per_sample"].extend([1] * n)

    def frame(self) -> pl.DataFrame:
        return samples.frame(self.c)

    def __len__(self):
        return len(self.c["benchmark"])


# ---------------------------------------------------------------------------------------------
# JSON


def _read_bin(path: Path, json_path: Path, rel: str, size: int | None, what: str) -> np.ndarray | None:
    # nvbench records the path relative to the JSON's folder; older builds wrote it as given on the
    # command line (relative to the working directory), so also try "<sidecar folder>/<n>.bin" here.
    r = Path(rel)
    candidates = [json_path.parent / r, json_path.parent / r.parent.name / r.name]
    f = next((c for c in candidates if c.is_file()), None)
    if f is None:
        return None
    data = np.fromfile(f, dtype="<f4")
    if size is not None and len(data) != size:
        raise InputError(path, f"{what} file {rel} holds {len(data)} float32 values where the JSON says {size} (truncated or replaced)")
    return data


def read_json(path: Path, parser, options: ReadOptions):
    from profaudit.parsers.textsafe import read_capped

    read_capped(path, "nvbench JSON")  # read whole below: refused past the limit first
    doc = load_json(path, "nvbench JSON")
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise InputError(path, "nvbench JSON without a 'benchmarks' list")
    devices = {d.get("id"): d for d in doc.get("devices") or [] if isinstance(d, dict)}
    rows = _Rows()
    notes: list[str] = []
    skipped: list[dict] = []
    missing_bins: list[str] = []
    raw_states = 0
    derived_stdev = False
    for bench in doc["benchmarks"]:
        bname = bench.get("name")
        for st in bench.get("states") or []:
            dev = devices.get(st.get("device"), {})
            device = dev.get("name") or options.device
            params: dict[str, Any] = {}
            for item in st.get("axis_values") or []:
                params[item.get("name")] = _axis_value(item)
            if st.get("is_skipped"):
                skipped.append({"benchmark": bname, "state": st.get("name"), "reason": st.get("skip_reason")})
                continue
            summ = {s.get("tag"): s for s in st.get("summaries") or [] if isinstance(s, dict)}
            for tag, s in summ.items():
                if tag and tag.startswith("nv/element_count/"):
                    params[s.get("name") or tag.split("/", 2)[2]] = _summary_value(s)
            pj = canonical_params(params)
            counts = {kind: _summary_value(summ[tag]) for tag, kind in _COUNT_TAGS.items() if tag in summ}
            clock = finite_number(_summary_value(summ["nv/cold/sm_clock_rate/mean"])) if "nv/cold/sm_clock_rate/mean" in summ else None
            have: dict[tuple[str, str], float] = {}
            for tag, (meas, stat) in _TIME_TAGS.items():
                if tag in summ:
                    v = finite_number(_summary_value(summ[tag]))
                    if v is not None:
                        have[(meas, stat)] = v
            for tag, meas in _REL_NOISE_TAGS.items():
                rel = finite_number(_summary_value(summ[tag])) if tag in summ else None
                if (meas, "stdev") not in have and rel is not None and (meas, "mean") in have:
                    have[(meas, "stdev")] = rel * have[(meas, "mean")]
                    derived_stdev = True
            # CPU-only benchmarks time on the host; a cold CPU time exists only beside a GPU time.
            for (meas, stat), v in have.items():
                rows.add(
                    benchmark=bname, params=pj, run=0, iteration=0, duration_ns=v * 1e9, statistic=stat,
                    sample_count=counts.get(_COUNT_OF[meas]), sm_clock_mhz=(clock / 1e6 if clock and meas == "cold_gpu" and stat == "mean" else None),
                    phase="measure", cache_state=_CACHE[meas], time_source=_SOURCE[meas], device_name=device,
                )
            for tag, s in summ.items():
                if not tag or not tag.startswith("nv/json/bin:"):
                    continue
                measured = tag.split(":", 1)[1]  # nv/cold/sample_times or nv/cpu_only/sample_times
                meas = "cpu_only" if measured.startswith("nv/cpu_only") else "cold_gpu"
                rel = _summary_value(s, "filename")
                size = _summary_value(s, "size")
                if not rel:
                    notes.append(f"{bname} [{st.get('name')}]: nvbench could not write its sample file")
                    continue
                times = _read_bin(path, Path(path), rel, size, "sample-times")
                if times is None:
                    missing_bins.append(rel)
                    continue
                freqs = None
                ftag = "nv/json/freqs-bin:" + measured.replace("sample_times", "sample_freqs")
                if ftag in summ:
                    frel = _summary_value(summ[ftag], "filename")
                    if frel:
                        freqs = _read_bin(path, Path(path), frel, _summary_value(summ[ftag], "size"), "sample-frequencies")
                        if freqs is not None and len(freqs) != len(times):
                            raise InputError(path, f"{frel} holds {len(freqs)} clock samples for {len(times)} time samples")
                        if freqs is None:
                            missing_bins.append(frel)
                rows.extend_raw(bname, pj, times, freqs, _SOURCE[meas], _CACHE[meas], device)
                raw_states += 1
    if derived_stdev:
        notes.append("stdev rows derived as relative noise x mean (the file has no absolute stdev)")
    if missing_bins:
        notes.append(f"{len(missing_bins)} --jsonbin sample file(s) missing next to the JSON (first: {missing_bins[0]}); only summaries loaded for those states")
    if len(rows) == 0 and not skipped:
        raise InputError(path, "nvbench JSON holds no measured states")
    ver = ((doc.get("meta") or {}).get("version") or {})
    md = {
        "tool": "nvbench",
        "tool_version": (ver.get("nvbench") or {}).get("string"),
        "json_version": (ver.get("json") or {}).get("string"),
        "command_line": " ".join((doc.get("meta") or {}).get("argv") or []) or None,
        "devices": list(devices.values()),
        "raw_sample_states": raw_states,
    }
    return _profile(path, parser, rows, md, notes, skipped, devices)


def _profile(path, parser, rows: _Rows, md: dict, notes: list, skipped: list, devices: dict):
    df = rows.frame()
    names = df.get_column("device_name").drop_nulls().unique(maintain_order=True).to_list()
    md["device_name"] = names[0] if names else None
    # the throttling check compares sample clocks with the device's default clock (nvbench flags <75 %)
    first = next(iter(devices.values()), {}) if devices else {}
    if isinstance(first.get("sm_default_clock_rate"), (int, float)):
        md["sm_default_clock_mhz"] = first["sm_default_clock_rate"] / 1e6
    elif isinstance(first.get("SM Default Clock Rate"), str):
        m = re.match(r"([\d.]+)\s*MHz", first["SM Default Clock Rate"])
        if m:
            md["sm_default_clock_mhz"] = float(m.group(1))
    md["device_count"] = len(devices) or len(names) or None
    if skipped:
        md["skipped_states"] = skipped
    if notes:
        md["notes"] = notes
    return new_profile(path, parser, {"samples": df}, md)


# ---------------------------------------------------------------------------------------------
# CSV and Markdown share the column logic: headers are summary names (CSV adds a unit suffix).

_SUFFIX = re.compile(r"\s+\((sec|elem/sec|bytes/sec|bytes|pow2)\)$")


def _column_roles(headers: list[str], is_duration: list[bool]) -> list[tuple[str, Any]]:
    """Role of every column: ('bench'|'device_id'|'device_name'|'skipped'|'skip'|'param'|'time'|
    'noise_rel'|'count'|'ignore', detail)."""
    roles: list[tuple[str, Any]] = []
    kind = None
    for i, h in enumerate(headers):
        base = _SUFFIX.sub("", h).strip()
        suffix = (_SUFFIX.search(h).group(1) if _SUFFIX.search(h) else None)
        if i == 0 and h == "Benchmark":
            roles.append(("bench", None))
            continue
        if h == "Device":
            roles.append(("device_id", None))
            continue
        if h == "Device Name":
            roles.append(("device_name", None))
            continue
        if h == "Skipped":
            roles.append(("skipped", None))
            continue
        if suffix == "pow2":
            roles.append(("skip", None))
            continue
        m = _TIME_HEADER.match(base)
        if m and is_duration[i]:
            if base == "Batch GPU":
                kind = "batch"
                roles.append(("time", ("batch", "mean")))
            else:
                kind = "cpu" if m.group(2) == "CPU" else "gpu"
                stat = (m.group(1) or "mean").lower()
                roles.append(("time", (kind, stat)))
            continue
        if base in ("Noise", "IQR") and is_duration[i]:
            roles.append(("time", (kind, "stdev" if base == "Noise" else "iqr")) if kind else ("ignore", None))
            continue
        if base == "Noise":
            roles.append(("noise_rel", kind))
            continue
        if base in ("Samples", "Batch"):
            if base == "Batch":
                roles.append(("count", "batch"))
            else:
                nxt = next((_SUFFIX.sub("", headers[j]).strip() for j in range(i + 1, len(headers)) if _TIME_HEADER.match(_SUFFIX.sub("", headers[j]).strip())), None)
                roles.append(("count", "batch" if nxt == "Batch GPU" else "cold"))
            continue
        if base in _KNOWN_MEASUREMENTS or suffix in ("sec", "elem/sec", "bytes/sec", "bytes") or is_duration[i]:
            roles.append(("ignore", None))
            continue
        roles.append(("param", base))
    return roles


def _emit_row(rows: _Rows, roles, cells: list, parse_cell, device_names: dict, options, skipped: list, state: dict):
    bench = device_id = device_name = None
    params: dict[str, Any] = {}
    times: dict[tuple[str, str], float] = {}
    rel: dict[str, float] = {}
    counts: dict[str, int] = {}
    is_skipped = False
    for (role, detail), cell in zip(roles, cells):
        cell = cell.strip() if isinstance(cell, str) else cell
        if cell in ("", None):
            continue
        if role == "bench":
            bench = cell
        elif role == "device_id":
            device_id = parse_scalar(cell)
        elif role == "device_name":
            device_name = cell
        elif role == "skipped":
            is_skipped = cell.lower() == "yes"
        elif role == "param":
            params[detail] = parse_cell("param", cell)
        elif role == "time":
            v = parse_cell("time", cell)
            if v is not None:
                times[detail] = v
        elif role == "noise_rel":
            v = parse_cell("ratio", cell)
            if v is not None and detail:
                rel[detail] = v
        elif role == "count":
            v = parse_cell("count", cell)
            if v is not None:
                counts.setdefault(detail, v)
    if bench is None:
        bench = state.get("bench")
    if is_skipped:
        skipped.append({"benchmark": bench, "params": params})
        return
    device = device_name or device_names.get(device_id) or state.get("device") or options.device
    has_gpu = any(k[0] == "gpu" for k in times)
    for kind, r in rel.items():
        if (kind, "stdev") not in times and (kind, "mean") in times:
            times[(kind, "stdev")] = r * times[(kind, "mean")]
            state["derived"] = True
    pj = canonical_params(params)
    for (kind, stat), v in times.items():
        meas = {"gpu": "cold_gpu", "batch": "batch", "cpu": "cold_cpu" if has_gpu else "cpu_only"}[kind]
        rows.add(
            benchmark=bench, params=pj, run=0, iteration=0, duration_ns=v * 1e9, statistic=stat,
            sample_count=counts.get("batch" if meas == "batch" else "cold"), phase="measure",
            cache_state=_CACHE[meas], time_source=_SOURCE[meas], device_name=device,
        )


def _read_summary_text(path: Path, what: str, encoding: str) -> str:
    """The text of a CSV or Markdown summary (one row per benchmark state: kilobytes); past
    textsafe.JSON_LIMIT it is refused in one line (read row by row, 200 MB took over 3 GB)."""
    from profaudit.parsers.textsafe import JSON_LIMIT, read_capped, size_text

    data = read_capped(path, f"nvbench {what}", quiet=False, too_big=lambda _: (
        f"nvbench {what} over {size_text(JSON_LIMIT)}: larger than nvbench writes (one row per benchmark state); read its JSON output (--json FILE)"))
    return data.decode(encoding, errors="replace")


def read_csv(path: Path, parser, options: ReadOptions):
    text = _read_summary_text(path, "CSV", "utf-8-sig")
    try:
        table = [r for r in csv.reader(io.StringIO(text)) if any(c.strip() for c in r)]
    except csv.Error as exc:  # a stray carriage return or NUL inside an unquoted field
        raise InputError(path, f"malformed nvbench CSV: {exc}") from None
    if not table or table[0][:3] != ["Benchmark", "Device", "Device Name"]:
        raise InputError(path, "not nvbench CSV (expected a 'Benchmark,Device,Device Name,...' header)")
    headers = table[0]
    roles = _column_roles(headers, [h.endswith(" (sec)") for h in headers])

    def parse_cell(kind, cell):
        if kind == "param":
            return parse_scalar(cell)
        if kind == "count":
            v = parse_scalar(cell)
            return v if isinstance(v, int) else None
        return finite_number(cell)

    # nvbench's CSV printer writes every cell of every row and ends each line with a newline: a
    # short row or a missing last newline is a cut file whose last number may itself be cut
    if not text.endswith("\n"):
        raise InputError(path, "truncated nvbench CSV: the last line ends without a newline")
    rows, skipped, state = _Rows(), [], {}
    for n, rec in enumerate(table[1:], 2):
        if len(rec) != len(headers):
            raise InputError(path, f"line {n} has {len(rec)} cells for {len(headers)} columns")
        _emit_row(rows, roles, rec + [""] * (len(headers) - len(rec)), parse_cell, {}, options, skipped, state)
    if len(rows) == 0 and not skipped:
        raise InputError(path, "nvbench CSV holds no measured rows")
    notes = ["stdev rows derived as relative noise x mean (CSV keeps no absolute stdev)"] if state.get("derived") else []
    return _profile(path, parser, rows, {"tool": "nvbench", "layout": "csv"}, notes, skipped, {})


# Markdown ------------------------------------------------------------------------------------

_DUR = re.compile(r"^([-+0-9.eE]+|inf|nan)\s*(ns|us|ms|s)$")
_BYTES = re.compile(r"^[-+0-9.eE]+\s*(B|KiB|MiB|GiB|TiB)$")
_PCTCELL = re.compile(r"^[-+0-9.eE]+%$|^(inf|nan)%$", re.I)
_POW2 = re.compile(r"^2\^\d+\s*=\s*(\d+)$")


def _md_cell(kind: str, cell: str):
    if kind == "time":
        m = _DUR.match(cell)
        if not m:
            return None
        v = finite_number(m.group(1))
        return None if v is None else v * ns_per(m.group(2)) * 1e-9
    if kind == "ratio":
        v = finite_number(cell.rstrip("%"))
        return None if v is None else v / 100.0
    if kind == "count":
        v = parse_scalar(cell.rstrip("x"))
        return v if isinstance(v, int) else None
    m = _POW2.match(cell)
    if m:
        return int(m.group(1))
    return parse_scalar(cell)


def _md_table(lines: list[str], i: int) -> tuple[list[str], list[list[str]], int]:
    def cells(line):
        parts = line.strip().strip("|").split("|")
        return [p.strip() for p in parts]

    headers = cells(lines[i])
    i += 2  # header and the |---| rule
    body = []
    while i < len(lines) and lines[i].lstrip().startswith("|"):
        body.append(cells(lines[i]))
        i += 1
    return headers, body, i


def read_markdown(path: Path, parser, options: ReadOptions):
    lines = _read_summary_text(path, "Markdown", "utf-8").splitlines()
    device_names: dict[int, str] = {}
    devices: dict[int, dict] = {}
    cur_dev = None
    for line in lines:
        m = re.match(r"^## \[(\d+)\] `(.*)`\s*$", line)
        if m:
            cur_dev = int(m.group(1))
            device_names[cur_dev] = m.group(2)
            devices[cur_dev] = {"id": cur_dev, "name": m.group(2)}
            continue
        m = re.match(r"^\* ([^:]+): (.*)$", line)
        if m and cur_dev is not None:
            devices[cur_dev][m.group(1)] = m.group(2).strip()
        if line.startswith("# Benchmark Results") or line.startswith("# Log"):
            cur_dev = None
    try:
        start = next(i for i, l in enumerate(lines) if l.startswith("# Benchmark Results"))
    except StopIteration:
        raise InputError(path, "nvbench Markdown without a '# Benchmark Results' section") from None
    rows, skipped, state = _Rows(), [], {}
    i = start + 1
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^## (?!#)(.*)$", line)
        if m:
            state["bench"] = m.group(1).strip()
            state.pop("device", None)
            i += 1
            continue
        m = re.match(r"^### \[(\d+)\] (.*)$", line)
        if m:
            state["device"] = m.group(2).strip()
            i += 1
            continue
        if line.lstrip().startswith("|") and i + 1 < len(lines) and re.match(r"^\s*\|[-|: ]+\|\s*$", lines[i + 1]):
            headers, body, i = _md_table(lines, i)
            is_dur = [bool(body) and all(_DUR.match(r[k]) for r in body if k < len(r) and r[k]) and any(k < len(r) and r[k] for r in body) for k in range(len(headers))]
            roles = [("bench", None)] + _column_roles(["Benchmark"] + headers, [False] + is_dur)[1:]
            for k in range(len(headers)):
                if roles[k + 1][0] == "param" and body and all(_BYTES.match(r[k]) or _PCTCELL.match(r[k]) for r in body if k < len(r) and r[k]):
                    roles[k + 1] = ("ignore", None)
            for r in body:
                _emit_row(rows, roles, [state.get("bench")] + r, _md_cell, device_names, options, skipped, state)
            continue
        i += 1
    if len(rows) == 0:
        raise InputError(path, "nvbench Markdown holds no result tables")
    notes = ["Markdown values are rounded by nvbench (times to 4 significant digits)"]
    if state.get("derived"):
        notes.append("stdev rows derived as relative noise x mean (Markdown keeps no absolute stdev)")
    return _profile(path, parser, rows, {"tool": "nvbench", "layout": "markdown", "devices": list(devices.values())}, notes, skipped, devices)


# ---------------------------------------------------------------------------------------------


class NvbenchParser:
    name = "nvbench"
    source = "nvbench"
    suffixes = (".json", ".json.gz", ".csv", ".md", ".markdown")
    description = "NVIDIA nvbench --json (+ --jsonbin sample files), --csv and --md results"

    def sniff(self, probe: Probe) -> bool:
        if probe.is_dir:
            return False
        t = probe.text.lstrip("\ufeff \t\r\n")
        if t.startswith("{"):
            return '"benchmarks"' in t and ('"nvbench"' in t or '"nv/cold/' in t or '"nv/batch/' in t or '"nv/cpu_only/' in t)
        if t.startswith(_CSV_HEAD):
            return True
        return t.startswith("# Devices") and "# Benchmark Results" in t or t.startswith("# Benchmark Results") or ("# Benchmark Results" in t and "\n## [" in t and "# Log" in t)

    def read(self, path: Path, options: ReadOptions):
        path = Path(path)
        from profaudit.parsers.base import probe as _probe

        t = _probe(path).text.lstrip("\ufeff \t\r\n")
        if t.startswith("{"):
            return read_json(path, self, options)
        if t.startswith(_CSV_HEAD):
            return read_csv(path, self, options)
        return read_markdown(path, self, options)


PARSER = NvbenchParser()
