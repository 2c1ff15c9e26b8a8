"""nvprof summary tables read column by column (issue 13, size blow-ups): the same samples and
errors as the row-by-row reader, and Python work that does not grow with the rows."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from profaudit.errors import InputError
from profaudit.parsers import nvprof_csv
from profaudit.parsers.base import ReadOptions
from tests.read_cost import read_cost


_HEAD = '==4242== NVPROF is profiling process 4242, command: ./app\n==4242== Profiling result:\n'
_COLS = '"Type","Time(%)","Time","Calls","Avg","Min","Max","Name"\n'


def _row(rng: random.Random) -> str:
    typ = rng.choice(["GPU activities", "", "API calls", "Other stuff"])
    name = rng.choice(["void k<float>(float*)", "[CUDA memcpy HtoD]", "[Unified Memory x]", "cudaMalloc", "k2"])
    def t():
        return rng.choice([f"{rng.uniform(0, 999):.3f}", f"{rng.uniform(0, 99):.2f}us", "-", "", "1e3ms", ".5"])
    calls = rng.choice(["1", "40", "1e3", "", "2.0"])
    return ",".join(f'"{c}"' for c in (typ, f"{rng.uniform(0, 100):.2f}", t(), calls, t(), t(), t(), name)) + "\n"


def _summary(rng: random.Random, rows: int, units: str = '"","%","ms","","us","us","ms",""\n') -> str:
    return _HEAD + _COLS + units + "".join(_row(rng) for _ in range(rows))


def _read(path: Path, fast: bool):
    old = nvprof_csv.FAST_SUMMARY
    nvprof_csv.FAST_SUMMARY = fast
    try:
        p = nvprof_csv.PARSER.read(path, ReadOptions())
    except InputError as exc:
        return ("error", str(exc))
    finally:
        nvprof_csv.FAST_SUMMARY = old
    return ("ok", [(t, df.write_ndjson()) for t, df in sorted(p.tables.items())], json.dumps(p.metadata, sort_keys=True, default=str))


def test_summary_columns_match_rows(tmp_path):
    rng = random.Random(16)
    cases = [_summary(rng, rng.randint(1, 30)) for _ in range(30)]
    cases += [
        _summary(rng, 5, units=""),  # no units row: a bare number has no unit
        _summary(rng, 3) + '"GPU activities","1","x","1","1","1","1","bad"\n',  # not a number
        _summary(rng, 3) + '"GPU activities","1","1","2.5","1","1","1","half a call"\n',
        _summary(rng, 3) + '"GPU activities","1","1","1e30","1","1","1","huge count"\n',
        _summary(rng, 3) + '"GPU activities","1","1","1","1","1","1","caf\u00e9 \u00b5s"\n',  # non-ASCII: row by row
    ]
    for i, text in enumerate(cases):
        p = tmp_path / f"s{i}.csv"
        p.write_text(text)
        assert _read(p, True) == _read(p, False), text[:3000]


@pytest.mark.parametrize("rows", [20_000])
def test_summary_python_work_does_not_grow_per_row(tmp_path, rows):
    line = '"GPU activities","50.0","1.5","40","37.5","30","45","void k<float>(float*)"\n'
    out = []
    for n in (rows, 2 * rows):
        p = tmp_path / f"b{n}.csv"
        p.write_text(_HEAD + _COLS + '"","%","ms","","us","us","ms",""\n' + line * n)
        out.append(read_cost(p, "nvprof_csv", "samples"))
    assert out[0]["rows"] == 4 * rows and out[1]["rows"] == 8 * rows
    # the log's lines are split row by row (split(), ~8 calls each); the summary adds none (row by
    # row it made ~180 per row)
    assert out[1]["calls"] < 3 * out[0]["calls"]
    assert out[1]["calls"] - out[0]["calls"] < 20 * rows, out


def test_aggregate_table_over_the_row_limit_is_one_line(tmp_path, monkeypatch):
    p = tmp_path / "big.csv"
    p.write_text(_summary(random.Random(1), 50))
    monkeypatch.setattr(nvprof_csv, "AGGREGATE_ROW_LIMIT", 40)
    r = _read(p, True)
    assert r[0] == "error" and "summary table (line 3) with 50 rows: more than nvprof prints for one run (at most 40 read)" in r[1]
    monkeypatch.setattr(nvprof_csv, "AGGREGATE_ROW_LIMIT", 50)
    assert _read(p, True)[0] == "ok"


def _trace_blowup(path: Path, blocks: int) -> Path:
    from tests.test_nvprof_csv import TRACE_WITH_API

    lines = TRACE_WITH_API.splitlines(keepends=True)
    path.write_text("".join(lines[:3]) + "".join(lines[3:]) * blocks)
    return path


def test_trace_memory_per_mb(tmp_path):
    """A trace is read as text and converted in batches (a real 200 MB trace holds 2.4 M rows):
    what a 20 MB trace adds to the peak over a 10 MB one, per MB. With the whole table as a text
    frame beside the converted one it was about 14 MB per MB (2.9 GB for 200 MB); now about 8."""
    blocks = 30_000
    a = read_cost(_trace_blowup(tmp_path / "a.csv", blocks), "nvprof_csv", "kernels")
    b = read_cost(_trace_blowup(tmp_path / "b.csv", 2 * blocks), "nvprof_csv", "kernels")
    assert a["rows"] == blocks and b["rows"] == 2 * blocks  # one kernel per block of 4 rows
    added_mb = ((tmp_path / "b.csv").stat().st_size - (tmp_path / "a.csv").stat().st_size) / 2**20
    grown_mb = ((b["peak_kb"] - b["base_kb"]) - (a["peak_kb"] - a["base_kb"])) / 1024
    assert added_mb > 8
    assert grown_mb < 11 * added_mb, (grown_mb, added_mb)


@pytest.mark.parametrize("at", [1, 5_000])
def test_trace_row_with_extra_cells_is_one_line(tmp_path, at):
    # the batched read must parse every field of every row: one that parsed only the fields it
    # uses would load a row with more cells than the header without a word
    from tests.test_nvprof_csv import TRACE_WITH_API

    lines = TRACE_WITH_API.splitlines(keepends=True)
    body = lines[3:] * 2_000
    body[at] = body[at].rstrip("\n") + ",9\n"
    p = tmp_path / "t.csv"
    p.write_text("".join(lines[:3]) + "".join(body))
    with pytest.raises(InputError, match="malformed nvprof trace"):
        nvprof_csv.PARSER.read(p, ReadOptions())


def test_row_with_an_empty_name_says_so(tmp_path):
    from tests.test_nvprof_csv import TRACE_WITH_API

    lines = TRACE_WITH_API.splitlines(keepends=True)
    p = tmp_path / "t.csv"
    p.write_text("".join(lines[:3]) + lines[2] * 3 + "".join(lines[3:]))  # the units row again: every cell, no Name
    with pytest.raises(InputError, match="row 1 has an empty Name cell; malformed table"):
        nvprof_csv.PARSER.read(p, ReadOptions())


def test_metric_table_over_its_row_limit_is_refused_from_the_line_count(tmp_path, monkeypatch):
    from tests.test_nvprof_csv import EVENTS

    lines = EVENTS.splitlines(keepends=True)
    row = next(i for i, line in enumerate(lines) if line.startswith('"') and "Event Name" not in line)
    p = tmp_path / "events.csv"
    p.write_text("".join(lines[: row + 1]) + lines[row] * 59 + "".join(lines[row + 1:]))
    rows = sum(1 for line in p.read_text().splitlines() if line.startswith('"') and "Event Name" not in line)
    monkeypatch.setattr(nvprof_csv, "METRIC_ROW_LIMIT", rows - 1)
    # refused before a row is read: the rows are never split into cells
    monkeypatch.setattr(nvprof_csv, "_rows", lambda *a: pytest.fail("read the rows of a table over the limit"))
    with pytest.raises(InputError, match=rf"nvprof events table \(line \d+\) with {rows:,} rows: more than nvprof prints for one run \(at most {rows - 1:,} read\)"):
        nvprof_csv.PARSER.read(p, ReadOptions())
    monkeypatch.undo()
    monkeypatch.setattr(nvprof_csv, "METRIC_ROW_LIMIT", rows)
    prof = nvprof_csv.PARSER.read(p, ReadOptions())
    assert prof.tables["metrics"].height > 0
