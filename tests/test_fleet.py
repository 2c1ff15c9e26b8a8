"""load/ingest on any concurrent.futures.Executor, `ingest --engine dask` on a LocalCluster, and a
worker killed mid-ingest: every input ends in the dataset exactly once."""

from __future__ import annotations

import json
import os
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path

import pytest

import profaudit
from profaudit.dataset import dataset_info, read_dataset
from profaudit.fleet import ingest

distributed = pytest.importorskip("distributed")


def _logs(folder: Path, n: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        rows = "\n".join(f"{j},{1.0 + 0.01 * ((i * 7 + j) % 5)}" for j in range(20))
        p = folder / f"log{i}.csv"
        p.write_text("iteration,time_ms\n" + rows + "\n")
        out.append(p)
    return out


def _bad(folder: Path) -> Path:
    bad = folder / "bad.ncu-rep"
    bad.write_bytes(b"NVR\x00\x10\x00\x00\x00abc")
    return bad


@pytest.fixture(scope="module")
def cluster():
    # in-process workers: light, and enough to exercise the client, the scheduler and the futures
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as c:
        yield c


def test_executor_ingest_equals_local_ingest_and_renames_twins_alike(tmp_path):
    _logs(tmp_path / "in", 5)
    (tmp_path / "in" / "sub").mkdir()
    # the same file under two folders: a local load keeps both, the second as `id~2`
    (tmp_path / "in" / "sub" / "log0.csv").write_bytes((tmp_path / "in" / "log0.csv").read_bytes())
    local = ingest([str(tmp_path / "in")], tmp_path / "local")
    with ThreadPoolExecutor(2) as ex:
        fanned = ingest([str(tmp_path / "in")], tmp_path / "fanned", executor=ex, chunk_size=2)
    assert fanned.ids == local.ids and fanned.ids[-1].endswith("~2")
    a, b = read_dataset(tmp_path / "local"), read_dataset(tmp_path / "fanned")
    assert a.ids == b.ids and a.samples.equals(b.samples) and a.metadata.equals(b.metadata)
    # one task per chunk of two inputs: three parts per table, one manifest
    assert dataset_info(tmp_path / "fanned")["tables"]["samples"]["files"] == 3


def test_load_accepts_any_executor(tmp_path, cluster):
    files = _logs(tmp_path, 3)
    serial = profaudit.load(files, parallel=False)
    with ThreadPoolExecutor(2) as ex:
        assert profaudit.load(files, executor=ex).samples.equals(serial.samples)
    with distributed.Client(cluster) as client:
        on_cluster = profaudit.load(files, executor=client.get_executor())
    assert on_cluster.ids == serial.ids and on_cluster.samples.equals(serial.samples)


def test_cli_dask_engine_reports_skip_bad_exactly_as_local(tmp_path, cli, cluster):
    _logs(tmp_path / "in", 3)
    bad = _bad(tmp_path / "in")
    args = [str(tmp_path / "in" / "log0.csv"), str(bad), str(tmp_path / "in" / "log1.csv"), str(tmp_path / "in" / "log2.csv"), "--skip-bad"]
    local = cli("ingest", *args, "-o", str(tmp_path / "local"))
    dask = cli("ingest", *args, "-o", str(tmp_path / "dask"), "--engine", "dask", "--scheduler", cluster.scheduler_address)
    assert local.code == dask.code == 0, (local, dask)
    assert "bad.ncu-rep" in local.err
    assert dask.err.replace(str(tmp_path / "dask"), "DS") == local.err.replace(str(tmp_path / "local"), "DS")
    assert read_dataset(tmp_path / "dask").ids == read_dataset(tmp_path / "local").ids
    assert "ingest_task" in cluster.scheduler.task_prefixes  # the tasks ran on the cluster


def test_cli_dask_engine_bad_input_is_one_line_and_writes_nothing(tmp_path, cli, cluster):
    from conftest import assert_one_line_error

    _logs(tmp_path / "in", 2)
    bad = _bad(tmp_path / "in")
    res = cli("ingest", str(tmp_path / "in" / "log0.csv"), str(bad), "-o", str(tmp_path / "ds"), "--engine", "dask", "--scheduler", cluster.scheduler_address)
    assert_one_line_error(res, "bad.ncu-rep")
    # the good input's task wrote its part before the client saw the bad one: removed again
    assert not list((tmp_path / "ds").rglob("*.parquet")) and not list((tmp_path / "ds").glob("_manifests/*.json"))


def test_cli_dask_engine_finds_the_scheduler_by_env_and_by_file(tmp_path, cli, cluster, monkeypatch):
    _logs(tmp_path / "in", 2)
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.scheduler_address)
    res = cli("ingest", str(tmp_path / "in"), "-o", str(tmp_path / "ds"), "--engine", "dask")
    assert res.code == 0, res
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS")
    sched = tmp_path / "scheduler.json"
    sched.write_text(json.dumps({"address": cluster.scheduler_address, "type": "Scheduler"}))
    res = cli("ingest", str(tmp_path / "in"), "-o", str(tmp_path / "ds"), "--engine", "dask", "--scheduler-file", str(sched))
    assert res.code == 0, res
    info = dataset_info(tmp_path / "ds")
    assert (info["batches"], info["profiles"], info["superseded_copies"]) == (2, 2, 2)
    res = cli("ingest", str(tmp_path / "in"), "-o", str(tmp_path / "ds"), "--scheduler", cluster.scheduler_address)
    assert res.code == 2 and "--engine dask" in res.err


class _DieOnceExecutor(Executor):
    """Wraps a Dask client's executor; the first task to finish kills its worker process right
    after writing its parts (before its result reaches the client), as a lost node would."""

    def __init__(self, inner, marker: Path):
        self._inner, self._marker = inner, str(marker)
        self._client = inner._client

    def submit(self, fn, /, *args, **kwargs):
        return self._inner.submit(_run_then_die_once, self._marker, fn, *args, **kwargs)


def _run_then_die_once(marker: str, fn, *args, **kwargs):
    result = fn(*args, **kwargs)
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return result
    os.close(fd)
    os._exit(1)


@pytest.mark.slow
def test_worker_killed_mid_ingest_every_input_exactly_once(tmp_path):
    files = _logs(tmp_path / "in", 6)
    marker = tmp_path / "died"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c, distributed.Client(c) as client:
        r = ingest([str(p) for p in files], tmp_path / "ds", executor=_DieOnceExecutor(client.get_executor(), marker), chunk_size=1)
    assert marker.exists()  # a worker did die
    back = read_dataset(tmp_path / "ds")
    assert back.ids == r.ids == profaudit.load(files, parallel=False).ids
    assert back.samples.height == 6 * 20
    assert sorted(back.metadata["path"].to_list()) == sorted(str(p) for p in files)
    # the retried task rewrote its own parts: no file outside the manifest, none twice
    info = dataset_info(tmp_path / "ds")
    assert info["uncommitted_files"] == 0 and info["tables"]["samples"]["files"] == 6


def test_cli_engine_mistakes_are_one_line(tmp_path, cli):
    from conftest import assert_one_line_error

    _logs(tmp_path / "in", 1)
    out = str(tmp_path / "ds")
    assert_one_line_error(cli("ingest", str(tmp_path / "in"), "-o", out, "--engine", "spark"), "--engine spark: choose one of local, dask")
    assert_one_line_error(cli("ingest", str(tmp_path / "in"), "-o", out, "--engine", "dask", "--scheduler-file", str(tmp_path / "nope.json")), "no such file")
    assert_one_line_error(cli("ingest", str(tmp_path / "in"), "-o", out, "--engine", "dask", "--scheduler", "tcp://a:1", "--scheduler-file", "f"), "give one")
    # addresses and scheduler files distributed itself refuses (a ValueError, a bare assert)
    assert_one_line_error(cli("ingest", str(tmp_path / "in"), "-o", out, "--engine", "dask", "--scheduler", "localhost"), "--scheduler localhost: missing port number")
    assert_one_line_error(cli("ingest", str(tmp_path / "in"), "-o", out, "--engine", "dask", "--scheduler", "http://h:1"), "unknown address scheme 'http'")
    broken = tmp_path / "scheduler.json"
    broken.write_text('{"not": "an address"}')
    assert_one_line_error(cli("ingest", str(tmp_path / "in"), "-o", out, "--engine", "dask", "--scheduler-file", str(broken)), "names no scheduler address")
    assert not (tmp_path / "ds").exists()


def test_file_urls_are_local_paths(tmp_path, cli):
    files = _logs(tmp_path / "in", 2)
    url = f"file://{tmp_path / 'ds'}"
    res = cli("ingest", f"file://{tmp_path / 'in'}", "-o", url)
    assert res.code == 0, res
    assert (tmp_path / "ds" / "_manifests").is_dir()
    assert profaudit.load(url).ids == profaudit.load(files, parallel=False).ids
    assert profaudit.scan(url, "samples").collect().height == 40


def test_urls_fsspec_cannot_open_are_one_line(cli):
    from conftest import assert_one_line_error

    assert_one_line_error(cli("kernels", "zzz://bucket/run.json"), "zzz://bucket/run.json: not a URL fsspec can open")
    assert_one_line_error(cli("dataset", "info", "zzz://bucket/ds"), "zzz://bucket/ds")
    try:
        import gcsfs  # noqa: F401
    except ImportError:
        assert_one_line_error(cli("ingest", "gs://bucket/runs/", "-o", "gs://bucket/ds"), "gcsfs")


def test_the_local_cluster_profaudit_starts_has_no_worker_profiler(monkeypatch):
    # nobody sees its samples (no dashboard), and taking them cost the workers CPU on every task
    from profaudit.executors import dask_client

    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    with dask_client(n_workers=1) as client:
        sampling = client.run(lambda dask_worker: "profile" in dask_worker.periodic_callbacks)
    assert list(sampling.values()) == [False]
    # the process's own Dask config is as it was
    import dask

    assert dask.config.get("distributed.worker.profile.enabled") is True
