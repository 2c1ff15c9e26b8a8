"""Executors for work that fans out: a Dask cluster's, found the way Dask users expect.

profaudit schedules nothing itself: a batch of tasks goes to a `concurrent.futures.Executor`, and
for a cluster that is Dask distributed's `Client.get_executor()` (LocalCluster on one machine,
`Client(address)` on a running scheduler; SLURM and Kubernetes clusters through dask-jobqueue or
dask-kubernetes hand out the same address or scheduler file).
"""

from __future__ import annotations

import os
from contextlib import ExitStack, contextmanager
from typing import Iterator

from profaudit.errors import UsageError, first_line, require

ENGINES = ("local", "dask")


@contextmanager
def dask_client(scheduler: str | None = None, scheduler_file: str | None = None, *, n_workers: int | None = None) -> Iterator:
    """A connected `distributed.Client`: to `scheduler` (tcp://HOST:8786), to the one a scheduler
    file names, to `$DASK_SCHEDULER_ADDRESS` (Dask's own config key `scheduler-address`), or else
    to a LocalCluster started here (one single-threaded worker process per core, no dashboard and
    no worker profiler) and stopped after.

    The client is never made the process's default (`set_as_default=False`): work goes through
    `client.get_executor()`, and a default client outlives a failed connection. distributed
    registers a client as the default, and points dask's `scheduler` setting at it, before it
    connects; when `Client(address)` then raised (a bad address, nobody listening) the half-made
    client stayed the default, so a later bare `.compute()` in the same process (a dashboard, a
    test worker) went to it and waited for a scheduler that never came."""
    distributed = require("distributed", "fleet", "--engine dask")
    import dask

    if scheduler and scheduler_file:
        raise UsageError("--scheduler and --scheduler-file name the same thing: give one")
    if scheduler_file and not os.path.isfile(scheduler_file):
        raise UsageError(f"--scheduler-file {scheduler_file}: no such file")
    address = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS") or dask.config.get("scheduler-address", None)
    with ExitStack() as stack:
        try:
            if scheduler_file:
                client = distributed.Client(scheduler_file=scheduler_file, timeout="30s", set_as_default=False)
            elif address:
                client = distributed.Client(address, timeout="30s", set_as_default=False)
            else:
                # no dashboard, so nobody sees the workers' statistical profiler (a stack sample of
                # the running task every 10 ms): off, it gave back ~12 % of the workers' CPU in an
                # ingest of 2,000 small logs on 2 cores (benchmarks/bench_dataset_scale.py uses
                # this cluster). Worker processes take their config from here when they start
                stack.enter_context(dask.config.set({"distributed.worker.profile.enabled": False}))
                cluster = stack.enter_context(distributed.LocalCluster(n_workers=n_workers or os.cpu_count() or 1, threads_per_worker=1, processes=True, dashboard_address=None))
                client = distributed.Client(cluster, set_as_default=False)
        except OSError as exc:  # no scheduler listening there, or a timeout reaching it
            raise UsageError(f"cannot reach the Dask scheduler {scheduler_file or address}: {exc}") from None
        except (ValueError, TypeError, KeyError, AssertionError) as exc:
            # distributed's own checks: an address without a port or of an unknown scheme
            # (ValueError), a scheduler file that is no JSON object naming an address (an assert
            # deep inside distributed, with no text)
            if scheduler_file:
                where, default = f"--scheduler-file {scheduler_file}", 'names no scheduler address (a JSON object with "address", as `dask scheduler --scheduler-file` writes it)'
            else:
                source = "--scheduler" if scheduler else "DASK_SCHEDULER_ADDRESS" if os.environ.get("DASK_SCHEDULER_ADDRESS") else "Dask's scheduler-address setting"
                where, default = f"{source} {address}", "not a scheduler address"
            raise UsageError(f"{where}: {first_line(exc, default)}") from None
        with client:
            yield client


@contextmanager
def engine_executor(engine: str, scheduler: str | None = None, scheduler_file: str | None = None) -> Iterator:
    """The executor an `--engine` option names: None for local (the library's own process pool)."""
    if engine not in ENGINES:
        raise UsageError(f"--engine {engine}: choose one of {', '.join(ENGINES)}")
    if engine == "local":
        if scheduler or scheduler_file:
            raise UsageError("--scheduler and --scheduler-file go with --engine dask")
        yield None
        return
    with dask_client(scheduler, scheduler_file) as client:
        yield client.get_executor()
