"""Profile labels (shortest distinguishing path suffix) and the pair Compare opens on."""

from __future__ import annotations

import pytest

pytest.importorskip("dash")

from profaudit.dashboards.labels import sensible_pair, shortest_suffixes  # noqa: E402


def test_shortest_suffixes():
    paths = {
        "report-1": "/data/exp/naive/run0/report.ncu-rep",
        "report-2": "/data/exp/fused/run0/report.ncu-rep",
        "other-3": "/data/exp/fused/other.ncu-rep",
        "nopath": None,
    }
    got = shortest_suffixes(paths)
    assert got["report-1"] == "naive/…/report.ncu-rep" and got["report-2"] == "fused/…/report.ncu-rep"
    assert got["other-3"] == "other.ncu-rep"  # its name alone tells it apart
    assert got["nopath"] == "nopath"
    # two run folders under one variant: the run folder is what differs
    got = shortest_suffixes({"a": "/x/fused/run0/r.json", "b": "/x/fused/run1/r.json"})
    assert got == {"a": "run0/r.json", "b": "run1/r.json"}
    # one file holding several profiles keeps the ids (a path would not tell them apart)
    assert shortest_suffixes({"f#0": "/x/ranks.json", "f#1": "/x/ranks.json"}) == {"f#0": "f#0", "f#1": "f#1"}


def test_sensible_pair():
    def p(pid, label, kind, fmt="ncu-rep", dev="H100"):
        return {"profile_id": pid, "label": label, "kind": kind, "format": fmt, "device": dev}

    profiles = [
        p("log", "bench.json", "samples", "pytest-benchmark", None),
        p("fused", "fused/…/report.ncu-rep", "kernels"),
        p("trace", "trace.json", "kernels", "chrome-trace", "A100"),
        p("naive", "naive/…/report.ncu-rep", "kernels"),
    ]
    # same kind, format and device; the naive one is the baseline though loaded second
    assert sensible_pair(profiles) == ("naive", "fused")
    assert sensible_pair([profiles[0], profiles[2]]) is None  # a timing log and a trace: no pair
    assert sensible_pair([p("a", "x/a.json", "samples", "gbench"), p("b", "x/b.json", "samples", "gbench")]) == ("a", "b")
