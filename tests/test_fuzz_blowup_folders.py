"""tools/fuzz_blowup.py blows up folder formats too (issue 13: the sweep skipped rocprofv3 CSV
folders, Neuron Explorer Parquet folders, rocprof-compute workloads and datasets): a copy of the
folder whose biggest table file the format reads is grown to the size asked, the rest unchanged,
and the copy still reads as its format with the repeated rows."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import polars as pl
import pytest

from profaudit.loader import read_one
from profaudit.profile import ProfileSet

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def fuzz_blowup():
    spec = importlib.util.spec_from_file_location("fuzz_blowup", REPO / "tools" / "fuzz_blowup.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _files(root: Path) -> dict[str, bytes]:
    return {str(f.relative_to(root)): f.read_bytes() for f in sorted(root.rglob("*")) if f.is_file()}


def test_a_csv_folder_grows_its_biggest_table_and_still_loads(tmp_path, fuzz_blowup):
    from tests.test_rocprofv3_csv import make_output

    seed = make_output(tmp_path / "seed")
    before = _files(seed)
    target = 256 << 10
    out, blown, label, size = fuzz_blowup.blowup_folder(seed, "rocprofv3-csv-dir", tmp_path / "m", target, random.Random(1))
    assert _files(seed) == before  # the seed itself is never touched
    after = _files(out)
    assert set(after) == set(before)
    changed = [k for k in after if after[k] != before[k]]
    rel = str(blown.relative_to(out))
    # the biggest file the format reads (agent_info and the API traces are smaller) grew; no other file changed
    biggest = max((k for k in before if k.endswith(("counter_collection.csv", "kernel_trace.csv", "agent_info.csv", "api_trace.csv", "memory_copy_trace.csv"))), key=lambda k: len(before[k]))
    assert changed == [rel] == [biggest]
    assert len(after[rel]) == size >= target and label.startswith(f"{rel}: blow-up: a line repeated x")
    assert after[rel].split(b"\n", 1)[0] == before[rel].split(b"\n", 1)[0]  # the header is kept
    small = ProfileSet(read_one(seed, explicit=True))
    big = ProfileSet(read_one(out, explicit=True))
    table = "metrics" if "counter_collection" in rel else "kernels"
    assert big.table(table).height > 100 * small.table(table).height


def test_a_parquet_folder_repeats_rows_of_its_biggest_table(tmp_path, fuzz_blowup):
    from tests.test_neuron import make_explorer_profile

    seed = make_explorer_profile(tmp_path / "seed")
    target = 512 << 10
    out, blown, label, size = fuzz_blowup.blowup_folder(seed, "neuron_parquet", tmp_path / "m", target, random.Random(1))
    import pyarrow.parquet as pq

    rows = {f.name: pq.ParquetFile(f).metadata.num_rows for f in seed.glob("*.parquet")}
    assert blown.name == max(rows, key=lambda n: (rows[n], (seed / n).stat().st_size))  # the table with the most rows
    was, now = pl.read_parquet(seed / blown.name), pl.read_parquet(blown)
    assert now.schema == was.schema and blown.stat().st_size == size >= 0.95 * target  # about the size asked (Parquet footer and pages aside)
    # the seed's rows, over and over, in order
    reps = now.height // was.height
    assert reps > 10 and now.head(reps * was.height).equals(pl.concat([was] * reps))
    assert label == f"{blown.name}: blow-up: {was.height} rows repeated to {now.height}"
    assert ProfileSet(read_one(out, explicit=True)).kernels.height > ProfileSet(read_one(seed, explicit=True)).kernels.height


def test_a_folder_of_binary_data_only_has_no_blowup(tmp_path, fuzz_blowup):
    seed = tmp_path / "run"
    (seed / "plugins" / "profile" / "r").mkdir(parents=True)
    (seed / "plugins" / "profile" / "r" / "vm.xplane.pb").write_bytes(bytes(range(256)) * 4)
    # not read: a JAX run is read from its xplane.pb
    (seed / "plugins" / "profile" / "r" / "vm.trace.json").write_text('{"traceEvents": [{"ph": "X", "name": "a"}]}')
    assert fuzz_blowup.blowup_folder(seed, "xla_logdir", tmp_path / "m", 1 << 20, random.Random(1)) is None
    assert not (tmp_path / "m" / "run").exists()


def test_a_compressed_member_is_sized_decompressed(tmp_path, fuzz_blowup):
    """The size printed for a gzip'd member is what --size-mb asked for, as for a gzip'd file
    format: the blow-up is of the decompressed text (repeated lines compress to almost nothing)."""
    import gzip
    import json

    seed = tmp_path / "run"
    seed.mkdir()
    events = [{"ph": "X", "name": "k", "ts": 1, "dur": 2, "pid": 0, "tid": 0}] * 3
    (seed / "host.trace.json.gz").write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    target = 256 << 10
    out, blown, label, size = fuzz_blowup.blowup_folder(seed, "xla_logdir", tmp_path / "m", target, random.Random(1))
    inner = gzip.decompress(blown.read_bytes())
    assert size == len(inner) >= 0.9 * target and blown.stat().st_size < size // 10
    assert len(json.loads(inner)["traceEvents"]) > 1000
