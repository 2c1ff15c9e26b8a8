"""What `compare` holds beside the profiles it compares (issue 13: `profaudit compare F F` on a
200 MB rocprofv3 kernel trace peaked at 2.7 GB): the per-side launch copy leaves out columns null
in every row and is not made at all for launches already in order, launch pairs without a join
copy, and significance without a Python object per launch. The results are those of the plain sort."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl

from profaudit.compare.kernels import _strictly_ascending, prepare
from tests.test_rocprofv3_csv_scale import _HEAD, _LINE

REPO = Path(__file__).resolve().parents[1]


def test_strictly_ascending_is_the_tuple_order():
    rng = random.Random(7)
    keys = ["a", "b", "c"]
    for _ in range(2000):
        n = rng.randint(2, 6)
        df = pl.DataFrame({k: [rng.choice([0, 1, 2, None] if rng.random() < 0.1 else [0, 1, 2]) for _ in range(n)] for k in keys},
                          schema={k: pl.Int64 for k in keys})
        rows = df.rows()
        want = all(None not in r for r in rows) and all(rows[i] > rows[i - 1] for i in range(1, n))
        assert _strictly_ascending(df, keys) == want, rows


def _kernels(order: list[int], profiles: list[str]) -> pl.DataFrame:
    from profaudit import schema

    n = len(order)
    return schema.conform("kernels", pl.DataFrame({
        "profile_id": [profiles[i % len(profiles)] for i in range(n)],
        "kernel_id": list(range(n)),
        "name": [f"k{i % 3}" for i in range(n)],
        "start_ns": [order[i] * 10 if i % 11 else None for i in range(n)],
        "duration_ns": [float(i % 5) for i in range(n)],
    }))


def test_prepare_is_the_plain_sort():
    """Columns null everywhere are put back, not sorted, and rows already in order are not
    sorted: the frame is the one the plain sort of every column gives, in every case."""
    from profaudit.compare.match import entity_expr

    rng = random.Random(3)
    for case in range(12):
        n = 50
        order = list(range(n)) if case % 3 == 0 else rng.sample(range(n), n)
        profiles = ["p0"] if case % 2 else ["p1", "p0"]
        k = _kernels(order, profiles)
        if case % 3 == 0:
            k = k.with_columns(pl.col("start_ns").fill_null(strategy="forward").fill_null(0))  # in order, no nulls: no sort
        ids = sorted(set(profiles))
        pord = {p: i for i, p in enumerate(ids)}
        want = (k.with_columns(entity_expr(), pl.col("profile_id").replace_strict(pord, default=len(pord), return_dtype=pl.Int64).alias("_pord"))
                .sort(["_pord", "start_ns", "kernel_id"], nulls_last=True).with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("_order")))
        got = prepare(k, ids)
        assert got.schema == want.schema
        assert got.equals(want, null_equal=True), case


_CHILD = textwrap.dedent(
    """
    import json, sys
    def peak_kb():
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) for l in fh if l.startswith("VmHWM:"))
    from profaudit.loader import load
    from profaudit.compare import compare
    from profaudit.compare.core import Side
    ps = load(sys.argv[1])
    ps.kernels, ps.metrics, ps.metadata
    base = peak_kb()
    c = compare(Side("baseline", "a", ps), Side("candidate", "a", ps))
    print(json.dumps({"grown_kb": peak_kb() - base, "launches": ps.kernels.height, "pairs": c.pairs.height}))
    """
)


def test_self_compare_peak_per_launch(tmp_path):
    """A kernel trace of 300,000 launches compared with itself, after the profile is read: the
    peak's growth per launch. Measured as tests/read_cost.py does (fresh interpreter, VmHWM, polars
    on 2 threads, jemalloc decay off): 206 bytes now, 575 before (a sorted copy of every kernel
    column, nulls included; a left join and a sort of the launches for the pairs; a Python
    number and a list slot per launch and list in significance)."""
    f = tmp_path / "1_kernel_trace.csv"
    f.write_text(_HEAD + _LINE * 300_000)
    env = {**os.environ, "POLARS_MAX_THREADS": "2", "_RJEM_MALLOC_CONF": "dirty_decay_ms:0,muzzy_decay_ms:0"}
    r = subprocess.run([sys.executable, "-c", _CHILD, str(f)], capture_output=True, text=True, cwd=REPO, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["launches"] == got["pairs"] == 300_000
    per_launch = got["grown_kb"] * 1024 / got["launches"]
    assert per_launch < 380, f"{per_launch:.0f} bytes per launch"
