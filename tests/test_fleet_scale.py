"""Fleet-scale ingest plumbing (issue 12): inputs expanded once (a progress bar's count and the
ingest share one expansion), the guided chunk plan (large tasks first, small ones last, input
order kept), one input per file however it is named, and a distributed run's per-rank rows
built once per table."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import profaudit.loader as loader
from profaudit.dataset import read_dataset
from profaudit.errors import InputError
from profaudit.fleet import _CHUNK_MAX_FILES, _CHUNK_MIN_FILES, ingest, plan_chunks
from profaudit.loader import Inputs, expand


def _logs(folder: Path, n: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        p = folder / f"log{i:03d}.csv"
        p.write_text("iteration,time_ms\n" + "\n".join(f"{j},{1.0 + 0.01 * ((i + j) % 7)}" for j in range(5)) + "\n")
        out.append(p)
    return out


def _fake_inputs(n: int, size: int = 100) -> Inputs:
    return Inputs([(f"in{i}", True) for i in range(n)], sizes={f"in{i}": size for i in range(n)})


def test_expand_returns_an_expansion_that_is_used_as_it_is(tmp_path):
    files = _logs(tmp_path / "in", 3)
    inputs = expand([str(tmp_path / "in")])
    assert isinstance(inputs, Inputs) and [p for p, _ in inputs] == files
    assert inputs.paths == [str(tmp_path / "in")]
    assert all(inputs.size_of(p) == p.stat().st_size for p in files)
    assert expand(inputs) is inputs
    # the error names what the user typed, not the expansion
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError) as e:
        loader.load(expand([str(empty)]))
    assert str(empty) in str(e.value) and "no profile" in str(e.value)


def test_one_input_per_file_however_named_but_hard_links_stay_two(tmp_path):
    (a,) = _logs(tmp_path / "in", 1)
    link = tmp_path / "link.csv"
    link.symlink_to(a)
    dotted = tmp_path / "in" / ".." / "in" / a.name
    assert [p for p, _ in expand([str(a), str(link), str(dotted)])] == [a]
    # a hard link is a second name a resolved path keeps apart, as it always did: both are read
    hard = tmp_path / "hard.csv"
    os.link(a, hard)
    assert [p for p, _ in expand([str(a), str(hard)])] == [a, hard]
    with pytest.raises(InputError, match="no such file or folder"):
        expand([str(tmp_path / "missing.csv")])
    with pytest.raises(InputError, match="no such file or folder"):
        expand([str(a / "below-a-file")])


def test_cli_ingest_expands_its_inputs_once(tmp_path, cli, monkeypatch):
    _logs(tmp_path / "in", 4)
    calls = []
    real = loader.expand
    monkeypatch.setattr(loader, "expand", lambda paths: calls.append(type(paths).__name__) or real(paths))
    r = cli("ingest", tmp_path / "in", "-o", tmp_path / "ds")
    assert r.code == 0, r
    # the CLI's expansion, then the library receiving it (an Inputs, returned at once)
    assert calls == ["list", "Inputs"]
    assert len(read_dataset(tmp_path / "ds")) == 4


def test_chunks_shrink_towards_the_end_and_keep_input_order():
    inputs = _fake_inputs(5000)
    chunks = plan_chunks(inputs, 2)
    sizes = [len(c) for c in chunks]
    assert [x for c in chunks for x in c] == list(inputs)  # every input once, in order
    assert sizes[0] == _CHUNK_MAX_FILES and max(sizes) == _CHUNK_MAX_FILES
    assert sizes == sorted(sizes, reverse=True)
    # the last tasks are small, so the two workers end within a few inputs of each other
    assert sizes[-2] == _CHUNK_MIN_FILES and sizes[-1] <= _CHUNK_MIN_FILES
    assert len(chunks) < 5000 / _CHUNK_MIN_FILES / 4  # and few tasks in all


def test_a_small_batch_spreads_over_every_worker_and_a_fixed_chunk_is_kept():
    assert [len(c) for c in plan_chunks(_fake_inputs(4), 2)] == [1, 1, 1, 1]
    assert [len(c) for c in plan_chunks(_fake_inputs(10), 2, chunk_size=4)] == [4, 4, 2]
    assert plan_chunks(_fake_inputs(0), 2) == []
    # bytes cut a chunk too: two inputs of 200 MB never share a task
    assert [len(c) for c in plan_chunks(_fake_inputs(3, 200 << 20), 1)] == [1, 1, 1]


def test_guided_chunks_ingest_the_same_dataset_as_a_local_ingest(tmp_path):
    files = _logs(tmp_path / "in", 40)
    local = ingest([str(p) for p in files], tmp_path / "local")
    with ThreadPoolExecutor(2) as ex:
        fanned = ingest(expand([str(p) for p in files]), tmp_path / "fanned", executor=ex)
    a, b = read_dataset(tmp_path / "local"), read_dataset(tmp_path / "fanned")
    assert fanned.ids == local.ids and a.ids == b.ids
    assert a.samples.equals(b.samples)


def test_rank_rows_are_built_once_per_table(tmp_path, monkeypatch):
    from ranks_synth import make_run, write_run

    import profaudit.ranks.activity as activity
    from profaudit.ranks import load_run

    docs, _truth = make_run(world_size=2, steps=2, ranks_per_host=2, seed=3)
    write_run(tmp_path, docs)
    run = load_run(tmp_path, parallel=False)
    built = []
    real = activity.with_rank
    monkeypatch.setattr(activity, "with_rank", lambda df, ident, table: built.append(table) or real(df, ident, table))
    run.summary()
    run.step_breakdown  # noqa: B018 - a property that reads ranges and kernels again
    assert sorted(built) == sorted(set(built)) and {"kernels", "ranges"} <= set(built)
    assert run.ranks["kernel_count"].sum() == run.rank_rows("kernels").height
