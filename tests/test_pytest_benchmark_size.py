"""pytest-benchmark JSON is read whole (issue 13, size blow-ups): past textsafe.JSON_LIMIT it is
refused in one line from its size, before the parse (a 200 MB blow-up took 2.5 GB to read)."""

from __future__ import annotations

import json

import pytest

from conftest import assert_one_line_error
from profaudit.parsers import pytest_benchmark, textsafe
from profaudit.parsers.base import ReadOptions

_STATS = {"min": 5.4e-06, "max": 0.0016, "mean": 7.2e-06, "stddev": 8.3e-06, "rounds": 40, "median": 6.5e-06, "iqr": 5.9e-07, "q1": 6.2e-06,
          "q3": 6.8e-06, "iqr_outliers": 3, "stddev_outliers": 1, "outliers": "1;3", "ld15iqr": 5.4e-06, "hd15iqr": 7.6e-06, "ops": 138887.5,
          "total": 0.00029, "iterations": 1, "data": [7.2e-06] * 40}


def _doc(n: int) -> str:
    bench = {"group": None, "name": "test_fib", "fullname": "t.py::test_fib", "params": None, "options": {"timer": "perf_counter"}, "stats": _STATS}
    return json.dumps({"benchmarks": [bench] * n, "datetime": "2026-10-07T15:55:43+00:00", "version": "5.3.0"})


def test_over_the_limit_is_refused_from_its_size(tmp_path, monkeypatch, cli):
    p = tmp_path / "bench.json"
    p.write_text(_doc(20))
    monkeypatch.setattr(textsafe, "JSON_LIMIT", p.stat().st_size - 1)
    # the parse never runs: the size alone refuses it
    monkeypatch.setattr(pytest_benchmark, "load_json", lambda *a: pytest.fail("parsed a document over the limit"))
    assert_one_line_error(cli("summary", p), f"pytest-benchmark JSON over {p.stat().st_size - 1:,} bytes: larger than a timing document")


def test_at_the_limit_is_read(tmp_path, monkeypatch):
    p = tmp_path / "bench.json"
    p.write_text(_doc(20))
    monkeypatch.setattr(textsafe, "JSON_LIMIT", p.stat().st_size)
    prof = pytest_benchmark.PARSER.read(p, ReadOptions())
    prof = prof[0] if isinstance(prof, list) else prof
    assert prof.tables["samples"].height > 0
