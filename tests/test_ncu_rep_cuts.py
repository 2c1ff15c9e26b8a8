"""Nsight Compute reports cut exactly at a record boundary (issue 13: 227 of 515 such cuts loaded the
kernels before the cut without a word).

Every corpus report is cut after each record: the file header, each block header, each entry of a
block's payload, each whole block. A cut inside a block is refused by the framing check; a cut
between blocks that removed session information, or left a source block without its result, is
refused by the completeness check. What is left loads: a file cut after a later result, which is
byte for byte the file a capture of fewer kernels would have written (the format holds no count of
results and writes nothing after the last one); the one hint a report can hold, a recorded `-c N`,
makes such a cut load as `complete: false`. The project ships no .ncu-rep of its own
(sample_reports/ holds none), so only the corpus is cut.
"""

from __future__ import annotations

import os
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest

from profaudit.errors import InputError
from profaudit.parsers import ncu_rep
from profaudit.parsers.protowire import decode, iter_fields
from tests.conftest import assert_one_line_error, corpus_files, corpus_ids, run_cli

REPORTS = [p for p in corpus_files("ncu-rep") if p.suffix != ".ncu-repz"]
pytestmark = [pytest.mark.corpus, pytest.mark.skipif(not REPORTS, reason="corpus ncu-rep folder not present")]


@dataclass
class Block:
    start: int  # offset of the block's length prefix
    header_end: int
    end: int  # end of its payload
    entry_ends: list[int]
    n_src: int
    n_res: int
    session: frozenset


def _blocks(data: bytes) -> tuple[int, list[Block]]:
    """The file header's end and every block, decoded independently of ncu_rep.scan_container."""
    (hlen,) = struct.unpack_from("<I", data, 4)
    off = 8 + hlen
    first = off
    out = []
    while off < len(data):
        (blen,) = struct.unpack_from("<I", data, off)
        h = decode(data, off + 4, off + 4 + blen)
        n_src, n_res, payload = (h.get(k, [0])[0] for k in (1, 2, 5))
        session = frozenset(f for f, _w, _v in iter_fields(data, *h[3][0])) if 3 in h else frozenset()
        pos, ends = off + 4 + blen, []
        for _ in range(n_src + n_res):
            (elen,) = struct.unpack_from("<I", data, pos)
            pos += 4 + elen
            ends.append(pos)
        end = off + 4 + blen + payload
        assert pos == end
        out.append(Block(off, off + 4 + blen, end, ends, n_src, n_res, session))
        off = end
    return first, out


def _undetectable(blocks: list[Block], i: int) -> bool:
    """A cut before block i that leaves what a capture of fewer kernels writes: at least one result
    kept, only results and their sources removed, and no source block left without its result."""
    kept, removed = blocks[:i], blocks[i:]
    return (
        any(b.n_res for b in kept)
        and not any(b.session for b in removed)
        and not (kept[-1].n_src and not kept[-1].n_res)
    )


def _scan(path: Path) -> int | str:
    try:
        return ncu_rep.scan_container(path).num_results
    except InputError as exc:
        return exc.problem


@pytest.mark.parametrize("src", REPORTS, ids=corpus_ids(REPORTS))
def test_every_record_boundary_cut_is_refused_or_a_shorter_capture(tmp_path, src):
    data = src.read_bytes()
    header_end, blocks = _blocks(data)
    inside = {4, header_end}  # after the magic; after the file header (no block at all)
    for b in blocks:
        inside.add(b.start + 4)  # the block's length prefix alone
        if b.header_end < b.end:
            inside.add(b.header_end)  # its header, not its payload
        inside.update(b.entry_ends[:-1])  # some of its entries
    between = {b.start: i for i, b in enumerate(blocks) if i}
    inside -= set(between)
    cut = tmp_path / src.name
    shutil.copyfile(src, cut)
    # cut from the end backwards: one copy, truncated further each time
    silent = []
    for at in sorted(inside | set(between), reverse=True):
        os.truncate(cut, at)
        got = _scan(cut)
        if at in inside or not _undetectable(blocks, between[at]):
            # a damaged block, a cut session sequence, a source without its result, no result at all
            assert isinstance(got, str), (at, got)
            assert "truncated" in got or "corrupt" in got or "without kernel results" in got, got
        elif isinstance(got, int):
            assert got == sum(b.n_res for b in blocks[: between[at]])
            silent.append(at)
        else:  # the 2020.2 layout: a cut right after its last version block is refused, not loaded
            assert "inside the session information" in got, got
    # the shorter capture loads whole, with the kernels before the cut, through the isolated reader
    if silent:
        at = min(silent)
        os.truncate(cut, 0)
        with open(cut, "wb") as fh:
            fh.write(data[:at])
        res = run_cli("kernels", cut, "--format", "csv")
        assert res.code == 0, res.err
        n = sum(b.n_res for b in blocks if b.end <= at)
        assert len(res.out.strip().splitlines()) == 1 + n


def test_a_recorded_launch_count_flags_a_cut_after_a_whole_result(tmp_path):
    """`ncu -c 3`, three results: cut after the first or second, the report says it may be partial."""
    src = next((p for p in REPORTS if "AlpriElse" in p.name), None)
    if src is None:
        pytest.skip("AlpriElse report not in corpus")
    data = src.read_bytes()
    _, blocks = _blocks(data)
    results = [b for b in blocks if b.n_res]
    assert len(results) == 3 and ncu_rep.ncu_common.launch_count(ncu_rep.scan_container(src).session["command_line"]) == 3
    import profaudit

    whole = next(iter(profaudit.load(src, parallel=False)))
    assert whole.metadata.get("complete") is not False
    for k, b in enumerate(results[1:], start=1):
        cut = tmp_path / f"cut{k}.ncu-rep"
        cut.write_bytes(data[: b.start])
        res = run_cli("kernels", cut, "--format", "csv")
        assert res.code == 0
        assert len(res.out.strip().splitlines()) == 1 + k
        warning = [line for line in res.err.splitlines() if "incomplete" in line]
        assert len(warning) == 1 and f"asked for 3 kernel launches (-c 3) and the report holds {k}" in warning[0], res.err
        prof = next(iter(profaudit.load(cut, parallel=False)))
        assert prof.metadata["complete"] is False and prof.kernels.height == k


def test_a_source_block_without_its_result_is_refused(tmp_path):
    """ncu writes a module's source block right before the first result that runs its code: a file
    that ends with one lost that result."""
    for src in REPORTS:
        data = src.read_bytes()
        _, blocks = _blocks(data)
        for i, b in enumerate(blocks[:-1]):
            if b.n_src and not b.n_res and any(x.n_res for x in blocks[:i]):
                assert blocks[i + 1].n_res  # the evidence: the next block is the result
                cut = tmp_path / "cut.ncu-rep"
                cut.write_bytes(data[: b.end])
                assert_one_line_error(run_cli("kernels", cut), "whose kernel result is missing")
                return
    pytest.skip("no corpus report has a source block after its first result")


def test_a_2022_report_cut_before_its_command_line_is_refused(tmp_path):
    """ncu 2022.3+ writes the command line (session field 11) last in the first result's session
    sequence; a report of that age cut right before it is refused, where a 2021 report that ends
    after the same block (field 4) is whole."""
    for src in REPORTS:
        data = src.read_bytes()
        _, blocks = _blocks(data)
        at = next((b.start for b in blocks if b.session == {11}), None)
        if at is not None and any(b.n_res for b in blocks if b.end <= at):
            cut = tmp_path / "cut.ncu-rep"
            cut.write_bytes(data[:at])
            assert_one_line_error(run_cli("kernels", cut), "no command line")
            return
    pytest.skip("no corpus report records its command line")


def test_every_2022_3_or_later_command_line_report_records_its_command_line():
    """The evidence behind the check above: each corpus report captured by ncu 2022.3 or later in
    the command-line layout (device information after the first result) holds field 11."""
    checked = 0
    for src in REPORTS:
        data = src.read_bytes()
        _, blocks = _blocks(data)
        c = ncu_rep.scan_container(src)
        version = ncu_rep._target_version(c)
        first = next(i for i, b in enumerate(blocks) if b.n_res)
        device = next(i for i, b in enumerate(blocks) if 6 in b.session)
        if version and version >= (2022, 3) and device > first:
            assert "command_line" in c.session, src.name
            checked += 1
    if not checked:
        pytest.skip("no such report in the corpus")
