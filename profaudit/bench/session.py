"""Running a benchmark file and writing what it measured.

    manifest = profaudit.bench.run_file("examples/bench_softmax_torch.py", "out/", pattern="n=1024")

Output folder:

    OUT/manifest.json                                 what ran, where its logs are, the environment
    OUT/<benchmark>/<variant>/<params>.jsonl          one profaudit-timing log per case and variant
    OUT/<benchmark>/<variant>/<params>.run<k>.jsonl   the same, per process, with --processes N
                                                      (or auto, the CLI default: one process, and
                                                      more when a noise target was missed)
    OUT/claims/, OUT/ncu/                             written by `bench compare` and `bench ncu`

Every log holds the per-iteration samples (warm-up rows labelled `phase=warmup`) and, in its
header, every fact the audit reads (time source, synchronisation, cache state and flush, clock
control, warm-up count, interleaving, dtype, TF32, compile mode, correctness and tolerances,
FLOPs, bytes, shape, device, driver, versions, governor), so `profaudit audit` needs no `meta:` in
claim files. Files are written atomically; the manifest is rewritten after each case.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from contextlib import closing
from typing import Any, Callable, Iterable, Iterator, Sequence

from profaudit.bench.backends import Backend, get_backend
from profaudit.bench.env import host_environment
from profaudit.bench.runner import CaseResult, RunOptions, run_case
from profaudit.bench.spec import Case, load_benchmarks, require_reference, select_cases
from profaudit.errors import InputError, UsageError
from profaudit.fmt import plural

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "profaudit-bench-manifest"
MANIFEST_VERSION = 1


def log_path(outdir: Path, case: Case, variant: str, run_index: int | None = None) -> Path:
    name = case.slug + (f".run{run_index}" if run_index is not None else "") + ".jsonl"
    return Path(outdir) / case.benchmark.name / variant / name


def _sha256(path: str | os.PathLike) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def _clean(obj: Any) -> Any:
    """JSON-safe: NaN/inf -> None, numpy scalars -> Python, tuples -> lists."""
    import math

    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        try:
            return _clean(obj.item())
        except (TypeError, ValueError):
            return str(obj)
    if obj is None or isinstance(obj, (str, int, bool)):
        return obj
    return str(obj)


def read_manifest(outdir: str | os.PathLike) -> dict:
    p = Path(outdir) / MANIFEST
    try:
        doc = json.loads(p.read_text())
    except FileNotFoundError:
        raise InputError(outdir, f"no {MANIFEST} here: not a profaudit bench output folder (run profaudit bench run FILE.py -o {outdir})") from None
    except (OSError, ValueError) as exc:
        raise InputError(p, f"cannot read the bench manifest: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT:
        raise InputError(p, f"not a profaudit bench manifest (no \"format\": \"{MANIFEST_FORMAT}\")")
    if int(doc.get("version", 0)) > MANIFEST_VERSION:
        raise InputError(p, f"bench manifest version {doc.get('version')} was written by a newer profaudit")
    return doc


def write_manifest(outdir: str | os.PathLike, doc: dict, name: str = MANIFEST) -> Path:
    from profaudit.dataset import atomic_write_text

    p = Path(outdir) / name
    atomic_write_text(p, json.dumps(_clean(doc), indent=1, allow_nan=False) + "\n")
    return p


class _Backends:
    """One backend instance per (backend name, device) for the whole run."""

    def __init__(self, opts: RunOptions):
        self.opts = opts
        self.cache: dict[str, Backend] = {}

    def get(self, name: str) -> Backend:
        if name not in self.cache:
            o = dict(self.opts.backend_options)
            # the simulated device draws its noise per process, like a real one
            o.setdefault("seed", self.opts.seed * 1_000_003 + self.opts.run_index)
            self.cache[name] = get_backend(name, self.opts.device, o)
        return self.cache[name]

    def close(self) -> None:
        for b in self.cache.values():
            b.close()


def _variant_meta(case: Case, cres: CaseResult, vname: str, backend: Backend, host: dict, dev: dict, gpu: dict, tele_source: str, opts: RunOptions, file_sha: str | None) -> dict:
    r = cres.variants[vname]
    b = case.benchmark
    libs = {k.lower(): v for k, v in host["libraries"].items()}
    m: dict[str, Any] = {
        "benchmark": b.name,
        "variant": vname,
        "case": case.id,
        "params": case.params,
        "host": host["host"],
        "command_line": host["command_line"],
        "device_name": dev.get("device_name"),
        "device_uuid": gpu.get("uuid") or dev.get("device_uuid"),
        "mig_profile": {"disabled": "none", "enabled": "enabled (slice not identified)"}.get(str(gpu.get("mig_mode"))),
        "driver_version": gpu.get("driver_version"),
        "cuda_version": dev.get("cuda_runtime_version") or gpu.get("cuda_driver_version"),
        "framework": backend.framework(),
        "versions": libs,
        "libraries": libs,
        # the harness never locks or changes clocks: the GPU runs at its default boost behaviour
        "clock_control": "none",
        "default_clock_mhz": gpu.get("max_sm_clock_mhz"),
        "power_limit_w": gpu.get("power_limit_w"),
        "repetitions": opts.repetitions,
    }
    gov = host.get("host_governor") or {}
    if gov.get("available"):
        m["host_governor"] = gov["governor"]
    turbo = host.get("cpu_turbo") or {}
    if turbo.get("available"):
        m["cpu_turbo"] = turbo["turbo"]
    facts = dict(r.meta)
    sources = dict(facts.pop("_sources", {}))
    m.update(facts)
    xla = sources.pop("xla_cost_analysis", None)
    if xla:
        # the shape profaudit.xla.attach_cost_analysis gives a timing log's metadata
        m["xla_cost_analysis"] = [
            {k: xla.get(k) for k in ("module", "flops", "bytes_accessed", "transcendentals", "raw")} | {"op": None, "applied_to": "metadata (no matching op rows)", "per": "call"}
        ] if xla.get("available") else [{"available": False, "reason": xla.get("reason")}]
    m["bench"] = {
        "harness": "profaudit bench",
        "file": b.source_file,
        "file_sha256": file_sha,
        "backend": backend.name,
        "device": dev,
        "gpu": gpu,
        "telemetry": tele_source,
        "host": {k: host[k] for k in ("python", "python_executable", "platform", "machine", "cpu_model", "cpu_count", "cpu_cache_bytes", "cpu_cache_source", "host_governor", "cpu_turbo", "git", "triton_interpret", "env")},
        "precision_flags": backend.precision_flags(),
        "options": opts.as_dict(),
        "run_index": opts.run_index,
        "cache": {k: cres.info.get(k) for k in ("cache_mode", "cache_state", "cache_bytes", "cache_bytes_source", "flush_bytes", "input_sets", "input_bytes_per_set", "rotation_covers_cache")},
        "warmup": r.summary.get("warmup"),
        "measure": r.summary.get("measure"),
        "correctness": r.correctness,
        "sources": sources,
        "status": r.status,
        "error": r.error,
    }
    return _clean({k: v for k, v in m.items() if v is not None})


def run_file(
    path: str | os.PathLike,
    outdir: str | os.PathLike,
    *,
    pattern: str | None = None,
    variants: Sequence[str] | None = None,
    options: RunOptions | None = None,
    progress: Callable[[str], None] | None = None,
    processes: int | str = 1,
    auto_processes: int = 3,
) -> dict:
    """Run the benchmarks of a file into `outdir`; return the manifest (also written there).

    `processes > 1` repeats the whole run in that many fresh Python processes, one after the
    other (process-level repetitions, FAIRNESS P10); each writes `.run<k>.jsonl` logs.
    `processes="auto"` (the CLI's default) runs once here and, when any variant missed its noise
    target, `auto_processes - 1` more times in fresh processes (`manifest["auto_processes"]`
    says whether and why)."""
    opts = (options or RunOptions()).validate()
    path = Path(path)
    outdir = Path(outdir)
    if outdir.exists() and not outdir.is_dir():
        raise UsageError(f"{outdir}: exists and is not a folder")
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(outdir, f"cannot write: {exc.strerror or exc}") from None
    if processes == "auto":
        return _run_auto(path, outdir, pattern, variants, opts, auto_processes, progress)
    if not isinstance(processes, int) or processes < 1:
        raise UsageError(f"processes must be a positive number or 'auto', not {processes!r}")
    if processes > 1:
        return _run_processes(path, outdir, pattern, variants, opts, processes, progress)
    return _run_in_process(path, outdir, pattern, variants, opts, progress, manifest_name=MANIFEST)


def _run_in_process(path: Path, outdir: Path, pattern, variants, opts: RunOptions, progress, manifest_name: str, run_index: int | None = None) -> dict:
    benches = load_benchmarks(path)
    selected = select_cases(benches, pattern, variants)
    require_reference(list({id(c.benchmark): c.benchmark for c, _ in selected}.values()))
    host = host_environment(path)
    file_sha = _sha256(path)
    manifest: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        "version": MANIFEST_VERSION,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "status": "running",
        "file": str(path.resolve()),
        "file_sha256": file_sha,
        "pattern": pattern,
        "variants_selected": list(variants) if variants else None,
        "command_line": host["command_line"],
        "options": opts.as_dict(),
        "processes": opts.repetitions,
        "environment": host,
        "cases": [],
    }
    outdir.mkdir(parents=True, exist_ok=True)
    write_manifest(outdir, manifest, manifest_name)
    failures = 0
    with closing(run_cases(selected, opts, outdir, host=host, file_sha=file_sha, run_index=run_index, progress=progress)) as entries:
        for entry in entries:
            failures += sum(1 for v in entry["variants"].values() if v["status"] != "ok")
            manifest["cases"].append(entry)
            write_manifest(outdir, manifest, manifest_name)
    manifest["status"] = "complete"
    manifest["failures"] = failures
    manifest["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    write_manifest(outdir, manifest, manifest_name)
    return manifest


def run_cases(selected: Iterable[tuple[Case, Sequence[str]]], opts: RunOptions, outdir: str | os.PathLike, *, host: dict,
              file_sha: str | None = None, run_index: int | None = None, progress: Callable[[str], None] | None = None) -> Iterator[dict]:
    """Run each (case, variant names), write every measured variant's timing log under `outdir`,
    and yield each case's manifest entry as it finishes (`status`, `error`, and per variant
    `status`, `median_ns`, `samples`, `log` relative to `outdir`, ...). One backend instance per
    backend serves all the cases; they are closed when the iteration ends. `run_file` drives this
    for a benchmark file; harnesses that build their own cases (the pytest plugin) call it directly.
    `host` is `profaudit.bench.env.host_environment(...)`."""
    outdir = Path(outdir)
    backends = _Backends(opts)
    try:
        for case, vnames in selected:
            if progress:
                progress(case.id)
            yield _run_one(case, list(vnames), backends, opts, host, file_sha, outdir, run_index)
    finally:
        backends.close()


def _run_one(case: Case, vnames: list[str], backends: _Backends, opts: RunOptions, host: dict, file_sha: str | None, outdir: Path, run_index: int | None) -> dict:
    from profaudit.timinglog import write_timing_log

    b = case.benchmark
    entry: dict[str, Any] = {"id": case.id, "benchmark": b.name, "params": case.params, "backend": b.backend, "status": "ok", "error": None, "variants": {}}
    try:
        backend = backends.get(b.backend)
    except UsageError as exc:
        entry["status"], entry["error"] = "error", str(exc)
        for v in vnames:
            entry["variants"][v] = {"status": "error", "error": f"backend unavailable: {exc}", "log": None}
        return entry
    dev = backend.device_info()
    tele = backend.telemetry() if opts.telemetry else None
    gpu = tele.identity() if tele is not None else {"available": False, "reason": "telemetry disabled (--no-telemetry)"}
    tele_source = tele.source if tele is not None and tele.available else (gpu.get("reason") or "unavailable")
    cres = run_case(case, vnames, backend, opts, tele if (tele is not None and tele.available) else None, device_name=dev.get("device_name"))
    entry.update(status=cres.status, error=cres.error, device_name=dev.get("device_name"), cache_mode=cres.info.get("cache_mode"), interleaved=cres.info.get("interleaved"), time_source=cres.info.get("time_source"))
    for vname in vnames:
        r = cres.variants[vname]
        ve: dict[str, Any] = {"status": r.status, "error": r.error, "log": None}
        if r.measured:
            meta = _variant_meta(case, cres, vname, backend, host, dev, gpu, tele_source, opts, file_sha)
            rows = [dict(row, params=_canon(row["params"])) for row in r.rows]
            lp = log_path(outdir, case, vname, run_index)
            write_timing_log(lp, rows, meta)
            ve["log"] = str(lp.relative_to(outdir))
            meas = r.summary.get("measure") or {}
            warm = r.summary.get("warmup") or {}
            ve.update(
                median_ns=meas.get("median_ns"),
                samples=meas.get("samples"),
                min_samples=opts.min_samples,
                stop_reason=meas.get("stop_reason"),
                # the log's facts (None below the sample count the SE needs: rel_se_note says so)
                rel_se_median=meta.get("rel_se_median"),
                rel_se_note=meta.get("rel_se_note"),
                noise_target=opts.noise_target,
                noise_target_met=meta.get("noise_target_met"),
                stopped_short=meta.get("stopped_short"),
                warmup_calls=warm.get("calls"),
                min_warmup_calls=opts.min_warmup_calls,
                warmup_steady=warm.get("steady"),
                order_effect=meta.get("order_effect"),
                spot_checks=meta.get("spot_checks"),
                correctness=r.correctness.get("checked"),
                dtype=meta.get("dtype"),
                flops=meta.get("flops"),
                bytes=meta.get("bytes"),
            )
        entry["variants"][vname] = ve
    return entry


def _canon(params: dict) -> str:
    from profaudit.samples import canonical_params

    return canonical_params(params)


# ------------------------------------------------------------------------------------------------
# process-level repetitions
# ------------------------------------------------------------------------------------------------


def _spawn(path: Path, outdir: Path, pattern, variants, opts: RunOptions, k: int, processes: int, progress) -> dict:
    """Run repetition k of `processes` in a fresh Python process; its part manifest."""
    import dataclasses

    child_opts = dataclasses.replace(opts, run_index=k, repetitions=processes)
    argv = [sys.executable, "-m", "profaudit.bench.child", "run", str(path.resolve()), str(outdir.resolve()), json.dumps(child_opts.as_dict()), str(k)]
    if pattern:
        argv += ["--pattern", pattern]
    for v in variants or ():
        argv += ["--variant", v]
    if progress:
        progress(f"process {k + 1}/{processes}")
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()
        raise UsageError(f"benchmark process {k} failed (exit {proc.returncode}): {tail[-1] if tail else 'no output'}")
    return read_part(outdir, k)


def _run_processes(path: Path, outdir: Path, pattern, variants, opts: RunOptions, processes: int, progress) -> dict:
    outdir.mkdir(parents=True, exist_ok=True)
    parts = [_spawn(path, outdir, pattern, variants, opts, k, processes, progress) for k in range(processes)]
    return _merge(outdir, parts)


def noise_unmet(manifest: dict) -> list[str]:
    """'case variant' for every measured variant whose noise target was not met."""
    return [f"{c['id']} {v}" for c in manifest.get("cases", []) for v, ve in c["variants"].items() if ve.get("log") and ve.get("noise_target_met") is False]


def _run_auto(path: Path, outdir: Path, pattern, variants, opts: RunOptions, processes: int, progress) -> dict:
    """One run in this process; when any variant missed its noise target, `processes - 1` more
    in fresh processes, so the spread between runs is measured (FAIRNESS P10) and the interval
    the audit computes covers it. Three identical single-process runs gave medians 11-124 %
    apart with non-overlapping intervals: a missed noise target means one run is not enough."""
    import dataclasses

    first_opts = dataclasses.replace(opts, run_index=0, repetitions=1)
    first = _run_in_process(path, outdir, pattern, variants, first_opts, progress, manifest_name="manifest.run0.json", run_index=0)
    unmet = noise_unmet(first)
    if not unmet or processes < 2:
        return _merge(outdir, [first], {"noise_target_met": not unmet, "extra_processes": 0,
                                        "reason": None if not unmet else f"noise target missed by {len(unmet)} variant(s); --auto-processes {processes} allows no more"})
    # the first run's logs now belong to a set of `processes` runs: their headers say so
    for c in first["cases"]:
        for ve in c["variants"].values():
            if ve.get("log"):
                _set_repetitions(outdir / ve["log"], processes)
    parts = [first] + [_spawn(path, outdir, pattern, variants, opts, k, processes, progress) for k in range(1, processes)]
    return _merge(outdir, parts, {"noise_target_met": False, "extra_processes": processes - 1,
                                  "reason": f"noise target missed in the first run by {plural(len(unmet), 'variant')}: {', '.join(unmet[:5])}"})


def _set_repetitions(log: Path, processes: int) -> None:
    """Rewrite a timing log's header with `repetitions` (and the options' record) = processes."""
    from profaudit.dataset import atomic_write_text

    head, _, body = log.read_text().partition("\n")
    h = json.loads(head)
    h["meta"]["repetitions"] = processes
    if isinstance(h["meta"].get("bench"), dict) and isinstance(h["meta"]["bench"].get("options"), dict):
        h["meta"]["bench"]["options"]["repetitions"] = processes
    atomic_write_text(log, json.dumps(h, ensure_ascii=False, allow_nan=False) + "\n" + body)


def _merge(outdir: Path, parts: list[dict], auto_processes: dict | None = None) -> dict:
    """One manifest from the part manifests of process-level runs (per variant: a list per run);
    `auto_processes` (processes="auto": whether and why more runs were made) is written with it."""
    processes = len(parts)
    merged = dict(parts[0])
    merged["status"] = "complete"
    merged["cases"] = []
    for i, case in enumerate(parts[0]["cases"]):
        c = dict(case)
        c["variants"] = {}
        for vname, ve in case["variants"].items():
            runs = [p["cases"][i]["variants"].get(vname, {}) for p in parts]
            c["variants"][vname] = {
                "status": "ok" if all(r.get("status") == "ok" for r in runs) else next(r.get("status") for r in runs if r.get("status") != "ok"),
                "error": next((r.get("error") for r in runs if r.get("error")), None),
                "logs": [r.get("log") for r in runs if r.get("log")],
                "log": None,
                "median_ns": [r.get("median_ns") for r in runs],
                "samples": [r.get("samples") for r in runs],
                "min_samples": ve.get("min_samples"),
                "stop_reason": [r.get("stop_reason") for r in runs],
                "rel_se_median": [r.get("rel_se_median") for r in runs],
                "noise_target": ve.get("noise_target"),
                "noise_target_met": [r.get("noise_target_met") for r in runs],
                "stopped_short": [r.get("stopped_short") for r in runs],
                "warmup_steady": [r.get("warmup_steady") for r in runs],
                "warmup_calls": [r.get("warmup_calls") for r in runs],
                "min_warmup_calls": ve.get("min_warmup_calls"),
                "order_effect": [r.get("order_effect") for r in runs],
                "correctness": [r.get("correctness") for r in runs],
                "dtype": ve.get("dtype"),
            }
        c["status"] = "ok" if all(p["cases"][i]["status"] == "ok" for p in parts) else "error"
        merged["cases"].append(c)
    merged["failures"] = sum(p.get("failures", 0) for p in parts)
    merged["processes"] = processes
    if auto_processes is not None:
        merged["auto_processes"] = auto_processes
    write_manifest(outdir, merged)
    for k in range(processes):
        (outdir / f"manifest.run{k}.json").unlink(missing_ok=True)
    return merged




def read_part(outdir: Path, k: int) -> dict:
    p = outdir / f"manifest.run{k}.json"
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"benchmark process {k} left no readable manifest: {exc}") from None


def run_child(path: str, outdir: str, options_json: str, run_index: int, pattern: str | None, variants: list[str]) -> int:
    """Entry point of one process-level repetition (profaudit.bench.child)."""
    fields = json.loads(options_json)
    opts = RunOptions(**fields)
    _run_in_process(Path(path), Path(outdir), pattern, variants or None, opts, None, manifest_name=f"manifest.run{run_index}.json", run_index=run_index)
    return 0
