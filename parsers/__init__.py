"""The parser registry: one module per source format, listed once, in sniffing order.

`find_parser(path)` returns the first parser whose suffix and content sniff both match; a file with
an unexpected suffix is then offered to every parser's sniff. Order matters only where two formats
share a suffix (.json, .csv): the more specific sniff comes first.
"""

from __future__ import annotations

from pathlib import Path

from profaudit.errors import InputError
from profaudit.parsers import dataset
from profaudit.parsers import neuron_json, neuron_ntff, neuron_parquet, xla_logdir, xplane
from profaudit.parsers import ncu_csv, ncu_rep
from profaudit.parsers import nsys_rep, nsys_sqlite, nsys_stats_csv
from profaudit.parsers import nvprof_csv
from profaudit.parsers import google_benchmark, kernelbench, nvbench, profaudit_timing, proton, pytest_benchmark, timing_table, torch_benchmark
from profaudit.parsers import asv_results, asv_results_dir, pyperf_json
from profaudit.parsers import chrome_trace, rocpd, rocprof_compute, rocprof_sdk, rocprofv3_csv, rocprofv3_csv_dir
from profaudit.parsers.base import Parser, Probe, ReadOptions, probe

REGISTRY: list[Parser] = [
    dataset.PARSER,
    xla_logdir.PARSER,
    rocprof_compute.PARSER,
    asv_results_dir.PARSER,
    rocprofv3_csv_dir.PARSER,
    xplane.PARSER,
    neuron_parquet.PARSER,
    neuron_json.PARSER,
    neuron_ntff.PARSER,
    ncu_rep.PARSER,
    # before any generic CSV parser: its sniff needs ncu's own header columns
    ncu_csv.PARSER,
    # before nsys SQLite: both claim .db; its sniff needs rocpd_ tables or a *_results.db name
    rocpd.PARSER,
    nsys_sqlite.PARSER,
    nsys_rep.PARSER,
    # legacy nvprof --csv logs, before nsys stats (an nvprof unified-memory table has `Total Time`):
    # its sniff needs nvprof's `==PID==` lines or its own quoted headers
    nvprof_csv.PARSER,
    # rocprofv3 --output-format csv traces: its sniff needs their own header columns
    rocprofv3_csv.PARSER,
    # before any generic CSV parser: its sniff looks for nsys stats' own headers and preamble
    nsys_stats_csv.PARSER,
    # timing logs: the tool-specific formats before the generic table, which claims any
    # CSV/JSON whose header has a time-like column; keep timing_table.PARSER last
    profaudit_timing.PARSER,
    nvbench.PARSER,
    pytest_benchmark.PARSER,
    pyperf_json.PARSER,
    asv_results.PARSER,
    google_benchmark.PARSER,
    kernelbench.PARSER,
    torch_benchmark.PARSER,
    proton.PARSER,
    # traces: after the tool-specific JSON logs (their sniffs are narrower), before the generic table
    rocprof_sdk.PARSER,
    chrome_trace.PARSER,
    timing_table.PARSER,
]


def by_name(name: str) -> Parser:
    for p in REGISTRY:
        if p.name == name:
            return p
    raise KeyError(f"no parser named {name!r}; parsers: {[p.name for p in REGISTRY]}")


def find_parser(path: Path, pr: Probe | None = None) -> Parser | None:
    """The parser for `path`, or None when no parser recognises it."""
    pr = pr or probe(Path(path))
    # the lowered name once, and each parser's suffixes in one endswith (a file's parsers are those
    # without "/"): _suffix_ok per parser lowered the name 29 times, ~60 us of every load
    is_dir = pr.is_dir
    name = "" if is_dir else pr.path.name.lower()
    suffix_matches = [p for p in REGISTRY if is_dir == ("/" in p.suffixes) and (is_dir or name.endswith(p.suffixes))]
    for p in suffix_matches:
        if p.sniff(pr):
            return p
    for p in REGISTRY:
        if p not in suffix_matches and (pr.is_dir == ("/" in p.suffixes)) and p.sniff(pr):
            return p
    return None


def _suffix_ok(p: Parser, pr: Probe) -> bool:
    if pr.is_dir:
        return True
    name = pr.path.name.lower()
    return any(name.endswith(s) for s in p.suffixes if s != "/")


def describe_formats() -> list[dict]:
    return [{"parser": p.name, "source": p.source, "suffixes": " ".join(p.suffixes), "description": p.description} for p in REGISTRY]


__all__ = ["REGISTRY", "Parser", "Probe", "ReadOptions", "by_name", "find_parser", "describe_formats", "InputError"]
