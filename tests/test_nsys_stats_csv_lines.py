"""nsys stats CSV text is split one line at a time (parsers/nsys_stats_csv.py `_lines`), and a note
met again is kept as the one string: a 200 MB file of one `SKIPPED: ...` line repeated 2.47 M
times (s18 fuzz seed 3113, nsys-stats-csv #480, a RISE line: 1,846 MB peak in a worker whose bound
is 2,048) held every line of the file as a list and every note as a copy of its own. The read alone
peaked at 1,217 MB for it and now at 507 MB, the same notes in the same order."""

from __future__ import annotations

import random
import tracemalloc

import pytest

from profaudit.parsers import nsys_stats_csv
from profaudit.parsers.base import ReadOptions

_BREAKS = ["\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", ""]


@pytest.mark.parametrize("seed", range(12))
def test_lines_are_splitlines_whatever_the_cut(seed):
    rng = random.Random(seed)
    text = "".join(rng.choice(["a", "bb", " x,y ", "", "é"]) + rng.choice(_BREAKS) for _ in range(rng.randint(0, 400)))
    if rng.random() < 0.3:
        text += "\r"  # a text ending in \r, and pieces whose cut falls just after a \r\n
    for chunk in (1, 2, 3, 7, 64, 1 << 20):
        assert list(nsys_stats_csv._lines(text, chunk)) == text.splitlines(), (seed, chunk)


def test_a_cut_never_parts_crlf():
    text = "a\r\nb\r\n\r\nc"
    for chunk in range(1, len(text) + 2):
        assert list(nsys_stats_csv._lines(text, chunk)) == ["a", "b", "", "c"]


def _skipped_file(path, n: int):
    head = "\nNOTICE: Existing SQLite export found: r.sqlite\n        It is assumed file was previously exported from: r.nsys-rep\n\n"
    line = "SKIPPED: benchmark/results/nsys_qwen3_local.sqlite does not contain CUDA trace data.\n"
    path.write_text(head + line * n)
    return line.strip()


def test_a_repeated_note_is_kept_each_time_as_one_string(tmp_path):
    note = _skipped_file(tmp_path / "x_cuda_api_sum.csv", 5_000)
    p = nsys_stats_csv.PARSER.read(tmp_path / "x_cuda_api_sum.csv", ReadOptions())
    notes = p.metadata["notes"]
    assert notes[0].startswith("NOTICE: Existing SQLite export found: r.sqlite It is assumed")
    assert notes[1:] == [note] * 5_000 and p.metadata["empty_reason"] == note
    assert len({id(n) for n in notes[1:]}) == 1


def test_splitting_a_repeated_note_holds_no_copy_per_line(tmp_path):
    # Python's own allocations, counted by tracemalloc (the same on any machine): 200,000 notes of
    # 85 characters were ~27 MB of line list plus ~27 MB of note copies; now a list of references
    _skipped_file(tmp_path / "x_cuda_api_sum.csv", 200_000)
    text = (tmp_path / "x_cuda_api_sum.csv").read_text()
    tracemalloc.start()
    try:
        notes, blocks, _ = nsys_stats_csv.split_output(text)
        console = nsys_stats_csv.looks_like_console(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(notes) == 200_001 and not blocks and console is None
    assert peak < 8 << 20, peak
