"""torch.utils.benchmark files are read whole, in each of their forms (JSON, pickle, printed text):
past textsafe.JSON_LIMIT they are refused in one line from their size, before the parse
(fuzz_long seed 3101, torch-benchmark #624: a 200 MB JSON blow-up of one measurement took 21
CPU-s and 1.7 GB, a timeout in the fuzz run)."""

from __future__ import annotations

import json

import pytest

from conftest import assert_one_line_error
from profaudit.parsers import textsafe, torch_benchmark
from profaudit.parsers.base import ReadOptions

_M = {"number_per_run": 100, "raw_times": [0.00012, 0.00011, 0.00013, 0.000115],
      "task_spec": {"stmt": "x * 2", "setup": "pass", "global_setup": "", "label": "scale", "sub_label": "64", "description": "eager",
                    "env": None, "num_threads": 1}, "metadata": None}


def test_over_the_limit_is_refused_from_its_size(tmp_path, monkeypatch, cli):
    p = tmp_path / "torch_measurements.json"
    p.write_text(json.dumps([_M] * 50))
    monkeypatch.setattr(textsafe, "JSON_LIMIT", p.stat().st_size - 1)
    # the parse never runs: the size alone refuses it
    monkeypatch.setattr(torch_benchmark, "load_json", lambda *a: pytest.fail("parsed a document over the limit"))
    assert_one_line_error(cli("summary", p), "torch.utils.benchmark file over")


def test_at_the_limit_is_read(tmp_path, monkeypatch):
    p = tmp_path / "torch_measurements.json"
    p.write_text(json.dumps([_M] * 50))
    monkeypatch.setattr(textsafe, "JSON_LIMIT", p.stat().st_size)
    prof = torch_benchmark.PARSER.read(p, ReadOptions())
    assert prof.tables["samples"].height == 50 * 4
