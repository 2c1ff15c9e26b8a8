"""Inputs and datasets at s3:// URLs, against a real S3-compatible server (moto in server mode,
spoken to over HTTP by s3fs, pyarrow, DuckDB and dask), not a mock of our own."""

from __future__ import annotations

import json
import logging

import pytest

import profaudit
from profaudit.dataset import compact_dataset, dataset_info, read_dataset

moto_server = pytest.importorskip("moto.server")
pytest.importorskip("s3fs")
fsspec = pytest.importorskip("fsspec")


@pytest.fixture(scope="module")
def s3():
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    mp = pytest.MonkeyPatch()
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        mp.setenv(k, "testing")
    mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
    # fsspec's own configuration: every s3:// URL profaudit, dask or pyarrow opens goes to the server
    mp.setitem(fsspec.config.conf, "s3", {"endpoint_url": f"http://{host}:{port}", "key": "testing", "secret": "testing"})
    fs = fsspec.filesystem("s3", skip_instance_cache=True)
    fs.mkdir("runs")
    for i in range(3):
        rows = "\n".join(f"{j},{1.0 + 0.01 * ((i * 7 + j) % 5)}" for j in range(20))
        fs.pipe_file(f"runs/ci/log{i}.csv", ("iteration,time_ms\n" + rows + "\n").encode())
    fs.pipe_file("runs/bad/bad.ncu-rep", b"NVR\x00\x10\x00\x00\x00abc")
    yield fs
    mp.undo()
    server.stop()


def _local_copies(fs, tmp_path):
    for i in range(3):
        (tmp_path / f"log{i}.csv").write_bytes(fs.cat_file(f"runs/ci/log{i}.csv"))
    return sorted(tmp_path.glob("log*.csv"))


def test_load_from_s3_matches_local_and_keeps_the_url(s3, tmp_path):
    local = profaudit.load(_local_copies(s3, tmp_path), parallel=False)
    remote = profaudit.load("s3://runs/ci/*.csv")
    assert remote.ids == local.ids and remote.samples.equals(local.samples)
    assert remote.metadata["path"].to_list() == [f"s3://runs/ci/log{i}.csv" for i in range(3)]
    assert profaudit.load("s3://runs/ci/").ids == local.ids  # a folder walk


def test_bad_s3_inputs_are_one_line_naming_the_url(s3, cli):
    from conftest import assert_one_line_error

    assert_one_line_error(cli("kernels", "s3://runs/bad/bad.ncu-rep"), "s3://runs/bad/bad.ncu-rep")
    assert_one_line_error(cli("kernels", "s3://runs/nope/x.csv"), "s3://runs/nope/x.csv: no such file or folder")
    # a dataset in a bucket that is not there: s3fs's FileNotFoundError reached the catch-all
    assert_one_line_error(cli("ingest", "s3://runs/ci/", "-o", "s3://nobucket/ds"), "s3://nobucket/ds: cannot write: The specified bucket does not exist")


def test_dataset_on_s3_appends_scans_and_compacts(s3):
    ds = "s3://runs/ds1"
    profaudit.ingest("s3://runs/ci/*.csv", ds)
    profaudit.ingest(["s3://runs/ci/log0.csv"], ds)  # re-ingested: supersedes its first copy
    back = read_dataset(ds)
    assert back.ids == ["log1-d86dfbf7", "log2-3a36fa2d", "log0-e1e51f97"] and back.samples.height == 60
    counts = {
        "polars": profaudit.scan(ds, "samples", engine="polars").collect().height,
        "duckdb": profaudit.scan(ds, "samples", engine="duckdb").aggregate("count(*)").fetchall()[0][0],
        # the threaded scheduler, named: a bare compute() goes to whatever distributed client is the
        # process default, and one an earlier test on this xdist worker left behind (its cluster gone)
        # made this wait forever in CI
        "dask": len(profaudit.scan(ds, "samples", engine="dask").compute(scheduler="threads")),
    }
    assert counts == {"polars": 60, "duckdb": 60, "dask": 60}
    info = dataset_info(ds)
    assert (info["profiles"], info["batches"], info["superseded_copies"]) == (3, 2, 1)
    assert compact_dataset(ds)["batches_after"] == 1
    assert s3.ls("runs/ds1/_manifests", refresh=True) and len(s3.ls("runs/ds1/samples", refresh=True)) == 1
    again = read_dataset(ds)
    assert again.samples.sort("profile_id", "iteration").equals(back.samples.sort("profile_id", "iteration"))


def test_cli_ingest_s3_to_s3_on_a_dask_cluster(s3, cli):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as c:
        res = cli("ingest", "s3://runs/ci/", "s3://runs/bad/bad.ncu-rep", "--skip-bad", "-o", "s3://runs/ds2", "--engine", "dask", "--scheduler", c.scheduler_address)
    assert res.code == 0, res
    assert "warning: skipped s3://runs/bad/bad.ncu-rep" in res.err
    res = cli("dataset", "info", "s3://runs/ds2", "--format", "json")
    assert json.loads(res.out)["profiles"] == 3
    assert profaudit.load("s3://runs/ds2").ids == profaudit.load("s3://runs/ci/").ids


def test_s3_scans_read_the_manifests_once_per_change(s3, monkeypatch):
    """The listing of manifest names keys the scan's cache: on S3 it changes with each batch and
    each compaction as it does on a disk (no mtimes involved)."""
    from profaudit import dataset_v2 as v2
    from profaudit.datastore import FsspecStore

    ds = "s3://runs/scan-cache"
    profaudit.ingest("s3://runs/ci/log0.csv", ds)
    real = FsspecStore.read_bytes
    reads = []
    monkeypatch.setattr(FsspecStore, "read_bytes", lambda self, rel: (reads.append(rel) if rel.startswith(v2.MANIFESTS) else None) or real(self, rel))
    first = profaudit.scan(ds, "samples", engine="polars").collect()
    assert len(reads) == 1
    assert profaudit.scan(ds, "samples", engine="polars").collect().equals(first) and len(reads) == 1
    profaudit.ingest(["s3://runs/ci/log1.csv", "s3://runs/ci/log2.csv"], ds)
    grown = profaudit.scan(ds, "samples", engine="polars").collect()
    assert len(reads) == 3 and grown["profile_id"].n_unique() == 3
    compact_dataset(ds)
    reads.clear()
    assert sorted(profaudit.scan(ds, "samples", engine="polars").collect().rows()) == sorted(grown.rows())
    assert len(reads) == 1  # the compacted batch's manifest, read afresh
