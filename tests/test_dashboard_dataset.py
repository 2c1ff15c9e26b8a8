"""A 10,000-profile dataset opens in the dashboard lazily: the Overview's counts, sources and devices
come from `profaudit.dataset_summary` (manifests, the metadata table, one-column distinct queries),
never from reading the data tables."""

from __future__ import annotations

import re

import polars as pl
import pytest

pytest.importorskip("dash")

from profaudit import dataset_v2 as v2  # noqa: E402
from profaudit import schema  # noqa: E402
from profaudit.dataset import read_dataset, write_dataset  # noqa: E402
from profaudit.dataset_summary import summarize_dataset, summarize_profiles  # noqa: E402
from profaudit.datastore import open_store  # noqa: E402
from profaudit.profile import Profile, ProfileSet  # noqa: E402

N = 10_000
H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"


def _write_big_dataset(ds) -> None:
    """10,000 profiles of 2 kernels in one batch (two Parquet files: kernels and metadata), written
    as an ingest would, without building 10,000 Profile objects; then one profile re-ingested."""
    ids = [f"p{i:05d}" for i in range(N)]
    kernels = schema.conform(
        "kernels",
        pl.DataFrame(
            {
                "profile_id": [p for p in ids for _ in range(2)],
                "kernel_id": [0, 1] * N,
                "name": ["gemm", "softmax"] * N,
                "duration_ns": [float(1000 + i % 97) for i in range(2 * N)],
                # the last profile's kernels name a device its metadata does not
                "device_name": [H100] * (2 * N - 2) + [A100] * 2,
            }
        ),
    )
    meta = schema.conform(
        "metadata",
        pl.DataFrame(
            {
                "profile_id": ids,
                "source": ["nsys"] * (N - 100) + ["ncu"] * 100,
                "format": ["sqlite"] * (N - 100) + ["ncu-rep"] * 100,
                "device_name": [H100] * N,
                "kernel_count": [2] * N,
                "path": [f"runs/{p}.sqlite" for p in ids],
            }
        ),
    )
    store = open_store(ds)
    v2.ensure_marker(store)
    batch = v2.new_batch_id()
    files = []
    for table, df in (("kernels", kernels), ("metadata", meta)):
        rel = f"{table}/batch={batch}/part-00000-000.parquet"
        data = v2._parquet_bytes(df)
        store.write_bytes(rel, data)
        files.append({"table": table, "path": rel, "rows": df.height, "bytes": len(data)})
    entries = [{"profile_id": p, "source": "nsys", "format": "sqlite", "path": f"runs/{p}.sqlite", "rows": {"kernels": 2}} for p in ids]
    v2.commit_batch(store, batch, entries, files)
    # p00000 again, now with 3 kernels: its first copy is superseded and must not be counted
    k = pl.DataFrame({"kernel_id": [0, 1, 2], "name": ["a", "b", "c"], "duration_ns": [1.0, 2.0, 3.0], "device_name": [H100] * 3})
    write_dataset(ProfileSet([Profile("p00000", {"source": "nsys", "format": "sqlite", "device_name": H100}, {"kernels": k})]), ds)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    ds = tmp_path_factory.mktemp("bigds") / "ds"
    _write_big_dataset(ds)
    return ds


@pytest.fixture
def no_full_reads(monkeypatch):
    """Fail on any read of whole tables; record the plan of every lazy query collected."""
    plans: list[str] = []

    def refuse(*_a, **_k):
        raise AssertionError("a whole table was read")

    monkeypatch.setattr(v2, "_live_frame", refuse)
    monkeypatch.setattr(v2, "read", refuse)
    real_collect = pl.LazyFrame.collect

    def collect(self, *a, **k):
        plans.append(self.explain())
        return real_collect(self, *a, **k)

    monkeypatch.setattr(pl.LazyFrame, "collect", collect)
    return plans


def _projected(plan: str, table: str) -> list[tuple[int, int]]:
    """(columns read, columns in the file) of each scan of `table` in a polars plan."""
    out = []
    lines = plan.splitlines()
    for i, line in enumerate(lines):
        if "SCAN" in line and f"/{table}/batch=" in line:
            m = next((re.search(r"PROJECT (\d+)/(\d+) COLUMNS", x) for x in lines[i + 1 : i + 4] if "PROJECT" in x), None)
            out.append((int(m.group(1)), int(m.group(2))) if m else (-1, -1))
    return out


def test_summary_counts_without_reading_the_data_tables(big, no_full_reads):
    sm = summarize_dataset(big)
    assert sm.profiles == N
    assert sm.rows["kernels"] == 2 * N - 2 + 3 and sm.rows["samples"] == 0
    assert sm.metadata.height == N and sm.metadata["profile_id"].n_unique() == N
    assert sm.devices == sorted([A100, H100])
    assert sm.sources == {"ncu / ncu-rep": 100, "nsys / sqlite": N - 100}
    # the kernels table was only ever asked for its distinct device names: one column (plus the
    # two that drop the superseded copy), never the rows
    kernel_scans = [p for plan in no_full_reads for p in _projected(plan, "kernels")]
    assert kernel_scans and all(0 < read <= 3 < total for read, total in kernel_scans)
    assert all(plan.lstrip().startswith("UNIQUE") for plan in no_full_reads if "/kernels/batch=" in plan)


def test_summary_of_a_dataset_matches_the_summary_of_its_profiles(tmp_path):
    ps = ProfileSet(
        [
            Profile("a", {"source": "nsys", "format": "sqlite", "device_name": H100}, {"kernels": pl.DataFrame({"kernel_id": [0, 1], "name": ["x", "y"], "duration_ns": [1.0, 2.0]})}),
            Profile("b", {"source": "timing", "format": "csv"}, {"samples": pl.DataFrame({"iteration": [0, 1, 2], "duration_ns": [5.0, 6.0, 7.0], "device_name": [A100] * 3})}),
        ]
    )
    ds = write_dataset(ps, tmp_path / "ds")
    lazy, eager = summarize_dataset(ds), summarize_profiles(read_dataset(ds))
    assert (lazy.profiles, lazy.rows, lazy.devices, lazy.sources) == (eager.profiles, eager.rows, eager.devices, eager.sources)
    assert lazy.rows["kernels"] == 2 and lazy.rows["samples"] == 3 and lazy.devices == sorted([A100, H100])


def test_dashboard_overview_of_a_10000_profile_dataset_reads_no_data_table(big, tmp_path, no_full_reads):
    from profaudit.dashboards.app import create_app
    from profaudit.dashboards.pages import overview

    app = create_app([str(big)], upload_dir=tmp_path / "u")
    st = app._profaudit_state
    with app.server.test_request_context():
        page = overview.content(st)
    cards = {c.id: c.children[0].children for c in page[0].children}
    assert cards["ov-count-profiles"] == "10,000"
    assert cards["ov-count-kernel-rows"] == f"{2 * N + 1:,}"
    assert cards["ov-count-timing-samples"] == "0"
    text = str(page)
    assert "the first 500 of 10,000 profiles" in text and A100 in text and H100 in text
    sources = next(c for c in page if getattr(c, "id", None) == "ov-sources")
    assert "nsys / sqlite" in str(sources) and "9,900" in str(sources) and "ncu / ncu-rep" in str(sources)
    assert "datasets" not in st._groups  # nothing read into memory


def test_a_page_that_needs_rows_reads_the_dataset_then(tmp_path):
    from profaudit.dashboards.app import create_app

    ps = ProfileSet([Profile(f"q{i}", {"source": "nsys", "device_name": H100}, {"kernels": pl.DataFrame({"kernel_id": [0], "name": ["k"], "duration_ns": [float(i)]})}) for i in range(3)])
    ds = write_dataset(ps, tmp_path / "ds")
    st = create_app([str(ds)], upload_dir=tmp_path / "u")._profaudit_state
    assert st.summary().profiles == 3 and "datasets" not in st._groups
    assert st.ps.ids == ["q0", "q1", "q2"] and st.kernels().height == 3
    assert st.origin_of("q1") == "command line"
    assert st.summary().rows["kernels"] == 3
