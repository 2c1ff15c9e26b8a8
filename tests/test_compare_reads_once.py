"""`profaudit compare FILE FILE` reads FILE once (issue 13: a 200 MB blow-up compared with itself
was read twice, twice the time and the memory of one read), and prints what two reads printed:
the same ProfileSet on both sides must compare like two equal copies."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import corpus_files

REPO = Path(__file__).resolve().parents[1]
# timing logs (the sample trace is a CPU-only run, which compare refuses: no kernels)
SAMPLES = [REPO / "sample_reports" / "bench_cpu" / "softmax" / "softmax_rows" / "fused" / "cols-1024_dtype-float32_rows-256.jsonl",
           REPO / "sample_reports" / "bench_cpu" / "softmax" / "softmax_rows" / "unfused"]
# one small file of each of several corpus formats (kernels, metrics, samples, ranges)
CORPUS = [p for sub in ("ncu-csv", "nsys-sqlite", "chrome-trace", "google-benchmark", "pytest-benchmark", "nvbench", "ncu-rep")
          for p in sorted(corpus_files(sub), key=lambda p: p.stat().st_size)[:1]]


@pytest.fixture
def reads(monkeypatch):
    """The paths the CLI's loader was asked for, in order."""
    import profaudit.cli.common as common

    seen: list[str] = []
    real = common.load_with_progress

    def counting(paths, **kw):
        seen.extend(str(p) for p in paths)
        return real(paths, **kw)

    monkeypatch.setattr(common, "load_with_progress", counting)
    return seen


def _both_ways(cli, monkeypatch, reads, a, b, *opts):
    """(output read once, output read twice): the second with the same-input check turned off."""
    import profaudit.cli.compare_cmd as compare_cmd

    once = cli("compare", a, b, *opts)
    assert reads == [str(a)], reads
    reads.clear()
    monkeypatch.setattr(compare_cmd, "same_input", lambda x, y: False)
    twice = cli("compare", a, b, *opts)
    # a refused baseline (exit 2) stops before the candidate is read
    assert reads == ([str(a), str(b)] if twice.code != 2 else reads[:2]), (reads, twice)
    return once, twice


@pytest.mark.parametrize("fmt", ["json", "markdown"])
@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_a_sample_compared_with_itself_is_read_once_with_the_same_output(cli, monkeypatch, reads, path, fmt):
    once, twice = _both_ways(cli, monkeypatch, reads, path, path, "--format", fmt)
    assert (once.code, once.out, once.err) == (twice.code, twice.out, twice.err)
    assert once.code == 0 and once.out


@pytest.mark.corpus
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_a_corpus_file_compared_with_itself_is_read_once_with_the_same_output(cli, monkeypatch, reads, path):
    once, twice = _both_ways(cli, monkeypatch, reads, path, path, "--format", "json")
    assert (once.code, once.out, once.err) == (twice.code, twice.out, twice.err)


def test_two_spellings_of_one_file_are_one_input_and_a_copy_is_two(cli, monkeypatch, reads, tmp_path):
    from profaudit.cli.compare_cmd import same_input

    f = tmp_path / "t.jsonl"
    f.write_bytes(SAMPLES[0].read_bytes())
    (tmp_path / "link.jsonl").symlink_to(f)
    (tmp_path / "copy.jsonl").write_bytes(f.read_bytes())
    monkeypatch.chdir(tmp_path)
    assert same_input("t.jsonl", f"{os.curdir}/t.jsonl") and same_input("link.jsonl", str(f))
    assert not same_input("t.jsonl", "copy.jsonl")  # equal bytes, two files: each is read
    assert not same_input("t.jsonl", "absent.jsonl") and not same_input("*.jsonl", "t.jsonl")
    assert cli("compare", "t.jsonl", "./t.jsonl", "--format", "json").code == 0
    assert reads == ["t.jsonl"]
    reads.clear()
    assert cli("compare", "t.jsonl", "copy.jsonl", "--format", "json").code == 0
    assert reads == ["t.jsonl", "copy.jsonl"]
