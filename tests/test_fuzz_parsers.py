"""Property: every registered parser, given a mutant of a real input (corpus, sample_reports or the
suite's own fixtures), loads it, loads it marked incomplete, or refuses it with a deliberate one-line
InputError. It never reaches the loader's catch-all (UnexpectedReadError), never lets another
exception escape, and never loads a cut file as whole. Mutations: raw bytes (cuts, bit flips,
extreme integers), JSON structure, CSV cells and units, SQLite tables and rows, protobuf fields,
and the wider kinds (encodings, edge numbers, duplicated keys, splices of two seeds ...)
(tests/fuzz/mutators.py). Some loaded inputs also go through the commands a user runs next
(tests/fuzz/downstream.py), where an internal error counts the same. A short deterministic run here; tools/fuzz_long.py runs long."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from profaudit.parsers import REGISTRY
from tests.fuzz.harness import discover_seeds, verdict, write_mutant

EXAMPLES = 40
# small seeds keep this file to seconds per format; the long run takes the big ones
SEED_BYTES = 400_000
SEEDS_PER_FORMAT = 2
AFTER_EVERY = 10


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    return discover_seeds(tmp_path_factory.mktemp("fuzz-seeds"), max_bytes=SEED_BYTES, per_format=SEEDS_PER_FORMAT)


@pytest.mark.parametrize("fmt", [p.name for p in REGISTRY])
def test_mutants_are_read_or_refused_deliberately(fmt, seeds, tmp_path):
    if fmt not in seeds:
        pytest.skip(f"no seed input for {fmt} here (corpus absent, or the format needs an external tool)")
    bad: list[str] = []

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(st.integers(min_value=0, max_value=2**32 - 1), st.integers(min_value=0, max_value=SEEDS_PER_FORMAT - 1))
    def check(n, which):
        seed = seeds[fmt][which % len(seeds[fmt])]
        donors = [s for lst in seeds.values() for s in lst]
        path, mutant = write_mutant(seed, random.Random(n), tmp_path / "m", donors)
        # one input in AFTER_EVERY that loads also goes through the commands a user runs next
        # (summary, kernels, roofline, kernel-report, compare, export-trace, ingest): ten times a read
        v, detail = verdict(path, mutant, seed=seed, after=tmp_path / "after" if n % AFTER_EVERY == 0 else None)
        if v in ("undeliberate", "silent_partial"):
            bad.append(f"{v}: {seed.path.name} {mutant.label} -> {detail}")
        assert v in ("ok", "incomplete", "rejected"), bad[-1]

    check()


def test_the_catch_all_is_seen_by_the_verdict(tmp_path, monkeypatch):
    """The property above would be vacuous if the verdict could not see the catch-all: a parser
    bug must come out as `undeliberate`."""
    from profaudit.parsers import google_benchmark

    f = tmp_path / "bench.json"
    f.write_text('{"context": {}, "benchmarks": [{"name": "BM_x", "real_time": 1, "cpu_time": 1, "time_unit": "ns"}]}\n')
    monkeypatch.setattr(google_benchmark.PARSER, "read", lambda path, options: [][1])
    v, detail = verdict(f)
    assert v == "undeliberate" and "cannot read as google-benchmark: IndexError" in detail
