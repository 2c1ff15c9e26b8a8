"""Session-14 additions to the fuzz mutators (tests/fuzz/mutators.py) and harness: stacked
structure-aware edits (several edits in one input, each named in its label, never on a cut),
damage to a folder format's file set, and gzip streams with a cut or wrong trailer."""

from __future__ import annotations

import json
import random

import pytest

from tests.fuzz import mutators

DOC = json.dumps({"context": {"date": "2024-01-01", "num_cpus": 8},
                  "benchmarks": [{"name": f"BM_x/{i}", "real_time": 1.5 * i, "cpu_time": 1.4, "time_unit": "ns", "iterations": 10}
                                 for i in range(1, 9)]}).encode()
CSV = b"kernel,size,time_ms\n" + b"".join(b"k%d,%d,%d.5\n" % (i, 1 << i, i) for i in range(12))


def test_stack_adds_edits_each_named():
    labels = []
    for n in range(40):
        rng = random.Random(n)
        first = mutators.mutate_json(DOC, rng)
        stacked = mutators._stack(first, "bench.json", rng)
        extra = stacked.label.split("; ")[1:]
        assert stacked.label.startswith(first.label)
        assert all(e.startswith(("json: ", "jsonl line")) for e in extra)
        labels.append(len(extra))
    # 1-3 further edits; the stack stops early only when the document no longer parses
    assert max(labels) == 3 and sum(labels) >= 40


def test_stack_on_csv_edits_the_csv():
    rng = random.Random(3)
    m = mutators._stack(mutators.mutate_csv(CSV, rng), "timings.csv", rng)
    assert m.label.count("; ") >= 1 and m.data != CSV


def test_a_cut_is_never_stacked_on():
    """A cut file must stay cut: a stacked edit that re-serialises the text (csv.writer) would
    end it on a whole line and the harness would call the parser's correct load a silent partial."""
    cuts = 0
    for n in range(60):
        rng = random.Random(n)
        m = mutators.truncate(CSV, rng)
        if not m.cut_incomplete:
            continue
        cuts += 1
        assert mutators._stack(m, "timings.csv", rng) is m
    assert cuts >= 5


def test_folder_damage_and_the_next_mutant_starts_from_the_whole_seed(tmp_path, monkeypatch):
    """A folder seed's mutant may lose, empty, double or rename one of its files, or have a folder or
    a link to itself in its place; the folder is reused for the next mutant, which must again hold
    every file of the seed (one changed)."""
    from tests.fuzz import harness

    seed_dir = tmp_path / "seed" / "run"
    seed_dir.mkdir(parents=True)
    for name in ("1_kernel_trace.csv", "1_agent_info.csv", "1_marker_api_trace.csv"):
        (seed_dir / name).write_bytes(CSV)
    seed = harness.Seed("rocprofv3-csv-dir", seed_dir)
    want = sorted(p.name for p in seed_dir.iterdir())
    ops = set()
    for n in range(24):
        monkeypatch.setattr(harness, "FOLDER_OP_RATE", 1.0)
        out, m = harness.write_mutant(seed, random.Random(n), tmp_path / "m")
        assert m.label.startswith("folder: ") and not m.cut_incomplete
        ops.add(m.label.split()[1])
        entries = sorted((p.name, p.is_file() and not p.is_symlink()) for p in out.iterdir())
        assert entries != [(w, True) for w in want] or m.label.startswith("folder: empty")
        monkeypatch.setattr(harness, "FOLDER_OP_RATE", 0.0)
        out, m = harness.write_mutant(seed, random.Random(1000 + n), tmp_path / "m")
        assert sorted(p.name for p in out.iterdir()) == want
        changed = [p.name for p in out.iterdir() if p.read_bytes() != CSV]
        assert len(changed) <= 1
    assert ops == {"delete", "empty", "copy", "rename", "folder", "loop"}


def test_gzip_trailer_damage_is_made_and_fails_the_gzip_check():
    import gzip
    import zlib

    seen = set()
    for n in range(60):
        gz, how = mutators._gzip_trailer_damage(gzip.compress(CSV, mtime=0), random.Random(n))
        if not how:
            assert gzip.decompress(gz) == CSV
            continue
        seen.add(how.split()[0])
        with pytest.raises((EOFError, gzip.BadGzipFile, zlib.error)):
            gzip.decompress(gz)
    assert seen == {"without", "with"}


def test_protobuf_scan_stops_at_the_end_of_the_data():
    """A stacked edit can leave a length prefix claiming more bytes than the report holds: the scan
    of the field it frames must stop at the data's end (an IndexError there made 6 ncu-rep mutants
    of the s14 100k run impossible to make)."""
    from tests.fuzz.mutators import _scan_varints

    data = bytes([0x08, 0x96, 0x81])  # field 1, a varint whose continuation runs off the end
    spots: list = []
    _scan_varints(data, 0, 64, spots)
    assert spots == []
    whole = bytes([0x08, 0x96, 0x01, 0x10])  # field 1 = 150, then a cut tag
    _scan_varints(whole, 0, 64, spots)
    assert spots == [(1, 3, 0)]


# Google Benchmark console output, the format of the s15 final run's false positive (#252)
CONSOLE = (b"2026-12-02T05:00:00+00:00\nRunning ./bench\n"
           b"---------------------------------------------------------------\n"
           b"Benchmark                     Time             CPU   Iterations\n"
           b"---------------------------------------------------------------\n"
           + b"".join(b"BM_scan/%-18d %6d ns %14d ns %12d\n" % (1 << i, 100 * (i + 1), 99 * (i + 1), 1000000 >> i) for i in range(12)))


def test_a_cut_that_the_second_edit_ends_on_a_whole_line_is_judged_like_a_truncation_at_a_line_end(tmp_path):
    """e9780c0: a cut inside a line, then a second-round delete of that partial last line, leaves a
    shorter well-formed file. Google Benchmark's correct load of it is `ok`; the harness had kept
    the cut's flag and called it a silent partial (s15 final run, seed 2029, google-benchmark #252:
    truncate at 930, delete [768:930])."""
    from tests.fuzz import harness

    row = CONSOLE.index(b"BM_scan/64")
    at = row + 20  # inside that row, past its name
    cut = mutators.Mutant(CONSOLE[:at], f"truncate at {at} of {len(CONSOLE)} (any)", True)
    whole = mutators.second_round(cut, mutators.Mutant(cut.data[:row] + cut.data[at:], f"delete [{row}:{at}]"))
    assert whole.data == CONSOLE[:row] and whole.data.endswith(b"\n")
    assert not whole.cut_incomplete and whole.label == f"truncate at {at} of {len(CONSOLE)} (any); delete [{row}:{at}]"
    f = tmp_path / "bench.txt"
    f.write_bytes(whole.data)
    assert harness.verdict(f, whole) == ("ok", "")
    # the verdict the flag decides: with the cut's flag kept, the same load was a silent partial
    assert harness.verdict(f, mutators.Mutant(whole.data, whole.label, True))[0] == "silent_partial"
    # the cut alone (mid-line) is no silent partial either: the reader marks it incomplete
    f.write_bytes(cut.data)
    assert harness.verdict(f, cut)[0] == "incomplete"


def test_a_second_edit_that_leaves_a_cut_mid_line_or_cuts_binary_keeps_it_a_cut():
    at = CONSOLE.index(b"BM_scan/64") + 20
    cut = mutators.Mutant(CONSOLE[:at], "truncate", True)
    flipped = mutators.second_round(cut, mutators.Mutant(cut.data[:10] + b"X" + cut.data[11:], "set 1 bytes at 10"))
    assert flipped.cut_incomplete and not flipped.data.endswith(b"\n")
    # binary data that a delete happens to end on a newline byte is still cut
    blob = bytes(range(256)) * 4
    bcut = mutators.Mutant(blob[:700], "truncate", True)
    assert mutators.second_round(bcut, mutators.Mutant(blob[:11], "delete [11:700]")).cut_incomplete
    # what was not a cut does not become one
    assert not mutators.second_round(mutators.Mutant(CONSOLE, "bitflip"), mutators.Mutant(CONSOLE[:at], "delete")).cut_incomplete


def test_mutate_judges_its_second_rounds_with_second_round(monkeypatch):
    seen = []
    real = mutators.second_round
    monkeypatch.setattr(mutators, "second_round", lambda m, m2: seen.append((m, m2)) or real(m, m2))
    for n in range(200):
        mutators.mutate(CONSOLE, "bench.txt", random.Random(n))
    assert len(seen) >= 5 and all(m2.label and m2.data is not None for _, m2 in seen)
