"""`ingest(paths, out, executor=...)`: parse many inputs on a pool or a cluster into one dataset batch.

Each task parses a chunk of inputs and writes its own Parquet parts straight into the dataset (part
names fixed by batch and task, so a task the cluster retries after losing a worker overwrites what
its first attempt wrote); only the manifest entries travel back. The client writes the batch
manifest last, which is what makes the batch part of the dataset. Any
`concurrent.futures.Executor` works: a process pool, or a Dask cluster's `Client.get_executor()`.

Cost model (what benchmarks/bench_dataset_scale.py measures): a batch of N inputs in `tasks`
chunks on W workers takes about  c_client + (tasks * c_task + N * c_file) / W,  where c_file is
parsing one input, c_task writing one chunk's parts (a Parquet file per non-empty table) and
scheduling it, and c_client expanding the inputs plus writing the manifest (the part no worker
shares). The tasks' work divides by W because the chunks shrink towards the end of the plan
(`plan_chunks`): the workers run out of work within a few inputs of each other. Not in the model:
a LocalCluster's scheduler runs in the client's process, so on a machine with no spare core its
background work (~37 ms a second) and ~3 ms per task come out of the workers' share.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass, field
from typing import Any, Callable

from profaudit.errors import InputError, ProfauditError, first_line
from profaudit.loader import _as_list

# a task gathers at most this many inputs, and at most this many bytes of them, so that its parts
# stay near the target file size and a lost worker costs little to redo
_CHUNK_MAX_FILES = 256
_CHUNK_MAX_BYTES = 256 << 20
# Guided self-scheduling: each task takes 1 / (_TASKS_PER_WORKER * workers) of the inputs not yet
# planned, so tasks shrink geometrically towards the end (to _CHUNK_MIN_FILES). Large tasks first
# keep the per-task cost (scheduling, one Parquet file per table) low; small ones last let the
# workers finish together. With equal chunks a run ended up to one whole chunk after the first
# worker fell idle: 0.5-1 s of a 9 s ingest of 5,000 logs on 2 workers, sizeable against 2x.
_TASKS_PER_WORKER = 4
_CHUNK_MIN_FILES = 8


class TaskFailed(ProfauditError):
    """A task failed on the executor for a reason that is not a bad input (a worker lost too often)."""


@dataclass
class IngestResult:
    """What one ingest added: its batch, each profile's metadata, the inputs it skipped."""

    dataset: str
    batch: str
    profiles: list[dict] = field(default_factory=list)  # metadata of each profile, profile_id included
    skipped: list[tuple[str, str]] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    files: int = 0

    @property
    def ids(self) -> list[str]:
        return [p["profile_id"] for p in self.profiles]


@dataclass
class _TaskResult:
    task: str
    inputs: list[str]
    entries: list[dict]
    files: list[dict]
    metadata: list[dict]
    problems: list[tuple[str, ProfauditError]]


def executor_workers(executor: Executor) -> int:
    """How many tasks `executor` runs at once (a Dask client's executor: its cluster's threads)."""
    n = getattr(executor, "_max_workers", None)
    if n:
        return int(n)
    client = getattr(executor, "_client", None)
    if client is not None:
        try:
            return max(1, sum(client.nthreads().values()))
        except Exception:  # a client that lost its scheduler: size for one worker
            return 1
    return os.cpu_count() or 1


def plan_chunks(inputs: list[tuple[Any, bool]], workers: int, chunk_size: int | None = None) -> list[list[tuple[Any, bool]]]:
    """Consecutive chunks of the inputs (input order is kept, so the batch lists profiles in the
    order a local load would), shrinking towards the end (see `_TASKS_PER_WORKER`); `chunk_size`
    fixes their length instead."""
    from profaudit.loader import input_size

    # `expand`'s sizes, from the stat that found each input (another stat per input costs the
    # client as much as the rest of the planning)
    size_of = getattr(inputs, "size_of", input_size)
    n = len(inputs)
    share = max(1, workers) * _TASKS_PER_WORKER
    # a small batch still spreads over every worker: the floor never exceeds an equal share
    floor = min(_CHUNK_MIN_FILES, math.ceil(n / share)) if n else 1
    chunks: list[list] = []
    i = 0
    while i < n:
        want = chunk_size or max(floor, min(_CHUNK_MAX_FILES, math.ceil((n - i) / share)))
        chunk: list = []
        size = 0
        while i < n and len(chunk) < want:
            b = size_of(inputs[i][0])
            if chunk and size + b > _CHUNK_MAX_BYTES:
                break
            chunk.append(inputs[i])
            size += b
            i += 1
        chunks.append(chunk)
    return chunks


def _ingest_task(store, batch: str, task: str, inputs: list[tuple[Any, bool]], options, target_file_bytes: int) -> _TaskResult:
    """Runs on a worker: parse the chunk, write its parts, return the manifest entries."""
    from profaudit import dataset_v2 as v2
    from profaudit.loader import read_one
    from profaudit.profile import ProfileSet, _jsonable

    profiles = []
    problems: list[tuple[str, ProfauditError]] = []
    for path, explicit in inputs:
        try:
            profiles.extend(read_one(path, explicit, options))
        except ProfauditError as exc:
            problems.append((str(path), exc))
    ps = ProfileSet(profiles)
    entries, files = v2.write_parts(ps, store, batch, task, target_file_bytes)
    metadata = [{"profile_id": p.profile_id, **_jsonable(p.metadata)} for p in ps]
    return _TaskResult(task, [str(p) for p, _ in inputs], entries, files, metadata, problems)


def ingest(
    paths,
    out,
    *,
    executor: Executor | None = None,
    skip_bad: bool = False,
    replace: bool = False,
    progress: Callable[[str], None] | None = None,
    chunk_size: int | None = None,
    target_file_bytes: int | None = None,
    options=None,
    **option_kwargs,
) -> IngestResult:
    """Read `paths` (files, folders, globs, fsspec URLs) and append them to the dataset `out` as one
    batch (`replace=True`: `out` holds only this batch afterwards).

    Without an executor the inputs are loaded here (a local process pool for many large ones) and
    written in target-size files. With one, each task of `executor` parses a chunk of inputs and
    writes its own parts. Unreadable inputs raise the first `InputError` in input order, as
    `profaudit.load` does, and leave the dataset as it was; `skip_bad=True` lists them in
    `IngestResult.skipped` instead.
    """
    from profaudit import dataset_v2 as v2
    from profaudit.dataset import write_dataset, write_to
    from profaudit.datastore import open_store
    from profaudit.loader import load, read_options

    target = target_file_bytes or v2.TARGET_FILE_BYTES
    options = options if options is not None else read_options(**option_kwargs)
    if executor is None:
        from profaudit.profile import _jsonable

        ps = load(paths, options=options, skip_bad=skip_bad, progress=progress)
        batch = v2.new_batch_id()
        write_dataset(ps, out, merge=not replace, target_file_bytes=target, batch=batch)
        return IngestResult(
            str(out),
            batch,
            [{"profile_id": p.profile_id, **_jsonable(p.metadata)} for p in ps],
            list(ps.skipped),
            {"kernels": ps.kernels.height, "samples": ps.samples.height},
            0,
        )

    from profaudit.loader import expand

    inputs = expand(paths)
    if not inputs:
        raise InputError(", ".join(_as_list(paths)), "no profile or timing log found")
    r = write_to(out, lambda store: _run(inputs, store, executor, options, skip_bad, progress, chunk_size, target, paths), merge=not replace)
    r.dataset = open_store(out).url()  # not the temporary folder a replaced local dataset was built in
    return r


def _run(inputs, store, executor: Executor, options, skip_bad: bool, progress, chunk_size, target: int, paths) -> IngestResult:
    from profaudit import dataset_v2 as v2
    from profaudit.loader import SkippedInput

    v2.ensure_marker(store)
    batch = v2.new_batch_id()
    chunks = plan_chunks(inputs, executor_workers(executor), chunk_size)
    futures = {executor.submit(_ingest_task, store, batch, f"{i:05d}", chunk, options, target): i for i, chunk in enumerate(chunks)}
    results: list[_TaskResult | None] = [None] * len(chunks)
    failure: BaseException | None = None
    for fut in as_completed(futures):
        i = futures[fut]
        try:
            results[i] = fut.result()
        except ProfauditError as exc:
            failure = failure or exc
        except Exception as exc:  # the cluster's own failure (a worker lost too often, a lost scheduler)
            msg = first_line(exc)
            first = str(chunks[i][0][0])
            failure = failure or TaskFailed(f"the task for {len(chunks[i])} input(s) from {first} failed on the executor: {type(exc).__name__}: {msg}")
        if progress:
            for path, _ in chunks[i]:
                progress(str(path))
    done = [r for r in results if r is not None]
    if failure is None and not skip_bad:
        # what a local load would raise: the first unreadable input in input order
        failure = next((exc for r in done for _, exc in r.problems if not isinstance(exc, SkippedInput)), None)
    if failure is not None:
        # nothing of this batch is committed; drop its parts so no glob reader sees them
        for r in done:
            for f in r.files:
                store.remove(f["path"])
        raise failure
    entries, files, metadata, skipped = _merge(done, store)
    if not entries and not skipped:
        for f in files:
            store.remove(f["path"])
        raise InputError(", ".join(_as_list(paths)), "no profile or timing log found")
    v2.commit_batch(store, batch, entries, files, skipped=skipped, target_file_bytes=target)
    v2.auto_compact_after_commit(store, target_file_bytes=target)  # as a local append does: few small batches pile up
    rows = {"kernels": sum(e["rows"].get("kernels", 0) for e in entries), "samples": sum(e["rows"].get("samples", 0) for e in entries)}
    return IngestResult(store.url(), batch, metadata, skipped, rows, len(files))


def _merge(done: list[_TaskResult], store):
    """Stack the tasks' entries in input order. Two chunks may hold profiles with the same id (the
    same file under two folders): the later copy is renamed `id~2` in its parts, as a local load
    names it."""
    from profaudit import dataset_v2 as v2

    entries: list[dict] = []
    files: list[dict] = []
    metadata: list[dict] = []
    skipped: list[tuple[str, str]] = []
    seen: set[str] = set()
    for r in done:
        rename = {}
        own = {e["profile_id"] for e in r.entries}
        for e in r.entries:
            pid = e["profile_id"]
            if pid in seen:
                n = 2
                while f"{pid}~{n}" in seen or f"{pid}~{n}" in own:
                    n += 1
                rename[pid] = f"{pid}~{n}"
            seen.add(rename.get(pid, pid))
        if rename:
            v2.rename_profiles(store, r.files, rename)
        # a task's `profile_range`s count from its own first profile: make them the batch's
        for f in r.files:
            if "profile_range" in f:
                f["profile_range"] = [f["profile_range"][0] + len(entries), f["profile_range"][1] + len(entries)]
        for e, md in zip(r.entries, r.metadata):
            entries.append({**e, "profile_id": rename.get(e["profile_id"], e["profile_id"])})
            metadata.append({**md, "profile_id": rename.get(md["profile_id"], md["profile_id"])})
        files.extend(r.files)
        skipped.extend((path, str(exc)) for path, exc in r.problems)
    return entries, files, metadata, skipped
