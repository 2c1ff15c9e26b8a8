"""JSON timing documents read whole (pyperf, Proton, asv; issue 13, size blow-ups): the lone-
surrogate walk is skipped only where the bytes cannot hold one, a document over the size limit is
one line, and pyperf's work grows linearly with its values."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from profaudit.errors import InputError
from profaudit.parsers import textsafe
from profaudit.parsers.base import load_json
from tests.read_cost import read_cost


@pytest.mark.parametrize("raw", [
    b'{"a": "plain", "b": [1, 2.5, {"c": "d"}]}',
    b'{"a": "\\ud800 lone escape"}',
    b'{"a": "\\uDC00x", "k\\ud83d": 1}',
    b'{"a": "\\ud83d\\ude00 a pair"}',
    '{"a": "\ud800 raw"}'.encode("utf-8", "surrogatepass"),
    '{"a": "\ud800 utf16"}'.encode("utf-16", "surrogatepass"),
    '{"a": "plain utf16"}'.encode("utf-16-le"),
])
def test_load_clean_json_equals_the_full_walk(tmp_path, raw):
    p = tmp_path / "d.json"
    p.write_bytes(raw)
    want = textsafe.clean(load_json(p, "doc"))
    got = textsafe.load_clean_json(p, "doc")
    assert got == want
    assert json.dumps(got, ensure_ascii=False).encode("utf-8")  # no lone surrogate left


def test_json_over_the_limit_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(textsafe, "JSON_LIMIT", 1000)
    doc = json.dumps({"version": "1.0", "benchmarks": [{"runs": [{"values": [0.5] * 400}]}]}).encode()
    p, gz = tmp_path / "big.json", tmp_path / "big.json.gz"
    p.write_bytes(doc)
    gz.write_bytes(gzip.compress(doc))
    with pytest.raises(InputError, match=r"pyperf JSON over 1,000 bytes: larger than a timing document") as e:
        textsafe.load_clean_json(p, "pyperf JSON")
    assert "\n" not in str(e.value)
    with pytest.raises(InputError, match="once decompressed"):
        textsafe.load_clean_json(gz, "pyperf JSON")
    small = tmp_path / "small.json"
    small.write_bytes(b'{"version": "1.0"}')
    assert textsafe.load_clean_json(small, "pyperf JSON") == {"version": "1.0"}


def _pyperf(runs: int) -> dict:
    run = {"metadata": {"date": "2024-01-01T00:00:00", "loops": 8}, "warmups": [[8, 0.001]], "values": [0.0011, 0.0012, 0.0013]}
    return {"version": "1.0", "metadata": {"name": "b", "unit": "second", "hostname": "h"}, "benchmarks": [{"runs": [run] * runs}]}


def test_pyperf_work_grows_linearly(tmp_path):
    out = []
    for runs in (2000, 4000):
        p = tmp_path / f"p{runs}.json"
        p.write_text(json.dumps(_pyperf(runs)))
        out.append(read_cost(p, "pyperf_json", "samples"))
    assert out[0]["rows"] == 4 * 2000 and out[1]["rows"] == 4 * 4000
    assert out[1]["calls"] < 3 * out[0]["calls"], out


def test_asv_sidecar_over_the_limit_is_one_line(tmp_path, monkeypatch):
    from profaudit.parsers import asv_results

    side = tmp_path / "benchmarks.json"
    side.write_text(json.dumps({"bench.x": {"unit": "seconds"}}) + " " * 2000)
    monkeypatch.setattr(textsafe, "JSON_LIMIT", 1000)
    with pytest.raises(InputError, match="over 1,000 bytes: larger than asv writes") as e:
        asv_results.AsvResultsParser._sidecar(side)
    assert "\n" not in str(e.value)
    monkeypatch.setattr(textsafe, "JSON_LIMIT", 64 << 20)
    assert asv_results.AsvResultsParser._sidecar(side) == {"bench.x": {"unit": "seconds"}}


@pytest.mark.parametrize("fmt", ["nvbench", "google-benchmark"])
def test_other_whole_json_readers_are_capped(tmp_path, monkeypatch, fmt):
    from profaudit.parsers import google_benchmark, nvbench
    from profaudit.parsers.base import ReadOptions

    p = tmp_path / "big.json"
    p.write_text(json.dumps({"benchmarks": [], "context": {"num_cpus": 1}}) + " " * 2000)
    monkeypatch.setattr(textsafe, "JSON_LIMIT", 1000)
    read = nvbench.read_json if fmt == "nvbench" else google_benchmark.read_json
    with pytest.raises(InputError, match="JSON over 1,000 bytes: larger than a timing document"):
        read(p, None, ReadOptions())


def test_google_benchmark_console_over_the_limit_is_one_line(tmp_path, monkeypatch):
    from profaudit.parsers import google_benchmark
    from profaudit.parsers.base import ReadOptions

    p = tmp_path / "run.txt"
    p.write_text("-" * 60 + "\nBenchmark   Time   CPU   Iterations\n" + "-" * 60 + "\n" + "BM_x   1.00 ns   1.00 ns   100\n" * 100)
    monkeypatch.setattr(textsafe, "JSON_LIMIT", 1000)
    with pytest.raises(InputError, match=r"console output over 1,000 bytes: save such runs as JSON"):
        google_benchmark.read_console(p, None, ReadOptions())
    monkeypatch.setattr(textsafe, "JSON_LIMIT", 64 << 20)
    assert google_benchmark.read_console(p, google_benchmark.PARSER, ReadOptions()).tables["samples"].height == 200


@pytest.mark.parametrize("kind", ["CSV", "Markdown"])
def test_nvbench_summaries_over_the_limit_are_one_line(tmp_path, monkeypatch, kind):
    from profaudit.parsers import nvbench
    from profaudit.parsers.base import ReadOptions

    p = tmp_path / "x.csv"
    p.write_text("Benchmark,Device,Device Name,Samples\n" + "b,0,GPU,10\n" * 200)
    monkeypatch.setattr(textsafe, "JSON_LIMIT", 1000)
    read = nvbench.read_csv if kind == "CSV" else nvbench.read_markdown
    with pytest.raises(InputError, match=f"nvbench {kind} over 1,000 bytes: larger than nvbench writes"):
        read(p, None, ReadOptions())
