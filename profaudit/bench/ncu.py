"""Nsight Compute collection for a benchmark case: the exact `ncu` command, and running it.

`ncu_plan(file, outdir, ...)` builds one command per (case, variant): ncu launches
`python -m profaudit.bench.child target ...`, which makes the case's inputs, checks the variant
against the reference, runs `warmup` untimed calls, then `calls` calls each inside an NVTX range
named for the case; ncu profiles only the kernels inside that range (`--nvtx --nvtx-include
RANGE`). The range is a start/end range, which is process-wide: a push/pop range belongs to the
thread that pushed it, and kernels launched from other threads (autograd's backward engine)
would be missed. Its domain is the one the backend emits in (jax through the `nvtx` package:
`profaudit@RANGE`; torch: the default domain). With `filter="kernel"` it selects kernels by
name instead: `--launch-skip` counts the checked call and the warm-up (`launches_per_call`
matching launches each) plus an upper bound on the harness's own kernels in that process
(input conversion, output fill and poison; the reference runs on the host), and the target runs
that many extra calls after the profiled ones so that an overcounted skip still profiles the
variant; `--launch-count` is `calls x launches_per_call`.

Choices, each recorded beside the report:

- `--clock-control none` by default: profaudit never changes the GPU's clocks (nor power or MIG
  settings). ncu's own default, `base`, locks the clocks to base for the duration of the
  profile; durations then run slower than the timing logs' (FAIRNESS P5) and locking needs
  privileges and is refused on MIG slices. Byte and instruction counters do not depend on the
  clock, so the roofline inputs are the same either way; `gpu__time_duration` under `none` is at
  the clocks the GPU chose, and `sm__cycles_elapsed.avg.per_second` records them.
- `--cache-control` follows the case's timing cache mode: the benchmark's declared `cache=`,
  else this file's own timing run in the output folder (same path and content), else cold: `all`
  (flush every cache before each replay pass) for cold timings, `none` for hot or rotating ones,
  so the counters describe the same cache state as the times. Under `all` with kernel replay
  every kernel starts cold, so for a variant of several kernels the later ones' DRAM traffic is
  overstated against the timing (flushed once per call); the plan says so, and
  `--replay-mode range` profiles the call as one unit.
- Sections and metrics for the hierarchical roofline: Speed of Light, the roofline charts, memory
  and compute workload analysis, launch statistics and occupancy; plus DRAM read/write bytes,
  L2 (lts) and L1 (l1tex) bytes, the SASS FLOP counters (`.sum`), tensor-pipe instructions,
  `gpu__time_duration` and the SM/GPC clock rates. Sections the installed ncu does not know are
  dropped (and listed) before running.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

from profaudit.errors import ProfauditError, UsageError
from profaudit.fmt import plural

DEFAULT_SECTIONS = (
    "SpeedOfLight",
    "SpeedOfLight_RooflineChart",
    "SpeedOfLight_HierarchicalSingleRooflineChart",
    "SpeedOfLight_HierarchicalHalfRooflineChart",
    "SpeedOfLight_HierarchicalDoubleRooflineChart",
    "SpeedOfLight_HierarchicalTensorRooflineChart",
    "MemoryWorkloadAnalysis",
    "ComputeWorkloadAnalysis",
    "LaunchStats",
    "Occupancy",
)

_FLOP_COUNTERS = tuple(
    f"smsp__sass_thread_inst_executed_op_{p}{op}_pred_on.sum" for p in ("d", "f", "h") for op in ("add", "mul", "fma")
)
DEFAULT_METRICS = (
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg.per_second",
    "gpc__cycles_elapsed.avg.per_second",
    "gpc__cycles_elapsed.max",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_bytes.sum",
    "l1tex__t_bytes.sum",
    *_FLOP_COUNTERS,
    "sm__inst_executed_pipe_tensor.sum",
)

CLOCK_REASONS = {
    "none": "profaudit never changes GPU clocks: the profile runs at the clocks the GPU chooses, like the timing logs (ncu's default 'base' would lock them to base clock, needs privileges, is refused on MIG, and makes gpu__time_duration incomparable with event timings, FAIRNESS P5); byte and instruction counters do not depend on the clock",
    "base": "clocks locked to base by ncu for the profile (requested explicitly): durations are at base clock, slower than unlocked event timings (FAIRNESS P5)",
}


class NcuNotFound(ProfauditError):
    """ncu is not installed or not on PATH (exit 2, one line)."""


@dataclass
class NcuOptions:
    calls: int = 1  # profiled calls (each inside the NVTX range)
    warmup: int = 5  # untimed calls before the profiled ones
    cache_control: str | None = None  # all / none; None: from the case's cache mode
    clock_control: str = "none"
    filter: str = "nvtx"  # nvtx or kernel
    kernel_name: str | None = None  # regex, for filter="kernel"
    launch_skip: int | None = None
    launch_count: int | None = None
    launches_per_call: int = 1  # kernel filter: matching launches one call of the variant makes
    sections: tuple[str, ...] = DEFAULT_SECTIONS
    metrics: tuple[str, ...] = DEFAULT_METRICS
    section_set: str | None = None  # ncu --set NAME instead of sections
    replay_mode: str = "kernel"
    check: bool = True
    seed: int = 0
    device: str = "auto"
    extra_args: tuple[str, ...] = ()
    ncu: str | None = None  # path to ncu; default: $NCU or ncu on PATH

    def validate(self) -> "NcuOptions":
        if self.calls < 1 or self.warmup < 0:
            raise UsageError("--calls must be >= 1 and --warmup >= 0")
        if self.cache_control not in (None, "all", "none"):
            raise UsageError(f"--cache-control {self.cache_control!r}: choose all or none")
        if self.clock_control not in ("none", "base"):
            raise UsageError(f"--clock-control {self.clock_control!r}: choose none (default: never change clocks) or base")
        if self.filter not in ("nvtx", "kernel"):
            raise UsageError(f"--filter {self.filter!r}: choose nvtx or kernel")
        if self.launches_per_call < 1:
            raise UsageError("--launches-per-call must be at least 1")
        if self.filter == "kernel" and not self.kernel_name:
            raise UsageError("--filter kernel needs --kernel-name REGEX (the kernel of the variant)")
        if self.replay_mode not in ("kernel", "application", "range", "app-range"):
            raise UsageError(f"--replay-mode {self.replay_mode!r}: choose kernel, application, range or app-range")
        return self


@dataclass
class NcuPlan:
    case_id: str
    benchmark: str
    variant: str
    argv: list[str]
    report: Path  # the .ncu-rep ncu will write
    sidecar: Path
    range_name: str
    cache_control: str
    cache_reason: str
    clock_control: str
    clock_reason: str
    options: NcuOptions
    dropped_sections: list[str] = field(default_factory=list)
    tensor_metrics: list[str] | None = None  # added from `ncu --query-metrics`; None: not asked / unavailable
    launch_skip_breakdown: dict | None = None  # kernel filter: what the launch skip counts
    extra_calls: int = 0  # kernel filter: calls after the profiled ones (a skip that overcounts lands there)

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    def as_dict(self, outdir: Path | None = None) -> dict:
        def rel(p: Path) -> str:
            try:
                return str(p.relative_to(outdir)) if outdir else str(p)
            except ValueError:
                return str(p)

        o = self.options
        return {
            "case": self.case_id,
            "benchmark": self.benchmark,
            "variant": self.variant,
            "command": self.command,
            "argv": self.argv,
            "report": rel(self.report),
            "target_sidecar": rel(self.sidecar),
            "nvtx_range": self.range_name if o.filter == "nvtx" else None,
            "nvtx_filter": self.argv[self.argv.index("--nvtx-include") + 1] if "--nvtx-include" in self.argv else None,
            "nvtx_range_kind": "start/end (process-wide: kernels launched by other threads inside it are profiled)" if o.filter == "nvtx" else None,
            "launch_skip_breakdown": self.launch_skip_breakdown,
            "extra_calls_after_profiled": self.extra_calls,
            "filter": o.filter,
            "kernel_name": o.kernel_name,
            "warmup_calls": o.warmup,
            "profiled_calls": o.calls,
            "cache_control": self.cache_control,
            "cache_control_reason": self.cache_reason,
            "clock_control": self.clock_control,
            "clock_control_reason": self.clock_reason,
            "replay_mode": o.replay_mode,
            "sections": None if o.section_set else [s for s in o.sections if s not in self.dropped_sections],
            "section_set": o.section_set,
            "sections_dropped": self.dropped_sections,
            "metrics": list(o.metrics),
            "tensor_flop_metrics": self.tensor_metrics,
        }


def range_name(case_id: str, variant: str) -> str:
    """An NVTX range name ncu's filter syntax takes literally: letters, digits, _ . - only."""
    raw = f"profaudit.{case_id}.{variant}"
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", raw.replace("=", "-").replace(",", "_").replace("[", ".").replace("]", "")).strip("_")


def find_ncu(explicit: str | None = None) -> str | None:
    if explicit:
        p = shutil.which(explicit) or (explicit if Path(explicit).is_file() and os.access(explicit, os.X_OK) else None)
        return p
    env = os.environ.get("NCU")
    if env:
        return shutil.which(env) or (env if Path(env).is_file() else None)
    return shutil.which("ncu")


def require_ncu(explicit: str | None = None) -> str:
    path = find_ncu(explicit)
    if path is None:
        where = f"{explicit!r} is not an executable" if explicit else "ncu (Nsight Compute CLI) is not on PATH"
        raise NcuNotFound(f"{where}: install Nsight Compute (it ships with the CUDA toolkit) or pass --ncu /path/to/ncu; `profaudit ncu-command` prints the command without running it")
    return path


def _ncu_listing(ncu: str, flag: str, timeout: float) -> str | None:
    """What `ncu FLAG` prints, or None when it cannot run or fails (no GPU, old ncu)."""
    try:
        proc = subprocess.run([ncu, flag], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def available_sections(ncu: str) -> set[str] | None:
    """Section identifiers the installed ncu knows (first column of `ncu --list-sections`)."""
    out = _ncu_listing(ncu, "--list-sections", 60)
    if out is None:
        return None
    names = set()
    for line in out.splitlines():
        tok = line.strip().split()
        if tok and re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", tok[0]):
            names.add(tok[0])
    return names or None


_TENSOR_OPS = re.compile(r"sm__ops_path_tensor_src_[a-z0-9_]+")


def tensor_flop_metrics(ncu: str) -> list[str] | None:
    """The tensor-core operation counters this ncu offers on this GPU, as `.sum` metrics.

    Tensor FLOPs come from `sm__ops_path_tensor_src_<in>[_dst_<acc>][_sparsity_*]`, whose names
    depend on the chip (FORMATS.md 1.3), so they are asked of the installed ncu instead of being
    hard-coded; the per-instruction `_op_<inst>_` variants are left out (the parser counts the
    all-instruction counter once). None when ncu cannot list metrics (no GPU, old ncu)."""
    out = _ncu_listing(ncu, "--query-metrics", 120)
    if out is None:
        return None
    names = {tok[0] for tok in (line.split() for line in out.splitlines()) if tok and _TENSOR_OPS.fullmatch(tok[0])}
    return [f"{n}.sum" for n in sorted(names)]


def ncu_version(ncu: str) -> str | None:
    try:
        proc = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [l.strip() for l in proc.stdout.splitlines() if l.strip()]
    return lines[-1] if lines else None


def _timed_cache_modes(outdir: Path, file: Path) -> dict[str, str]:
    """case id -> cache mode of this file's own timing run in OUTDIR (its manifest names the same
    file with the same content: a run of another file, or of an older version of this one, says
    nothing); {} without one."""
    try:
        from profaudit.bench.session import _sha256, read_manifest

        doc = read_manifest(outdir)
        same = doc.get("file") == str(file) and doc.get("file_sha256") == _sha256(file)
        modes: dict[str, str] = {}
        for c in doc.get("cases", []) if same else []:
            if c.get("cache_mode"):
                modes.setdefault(c.get("id"), c["cache_mode"])
        return modes
    except ProfauditError:
        return {}


def _cache_mode_for(outdir: Path, case_id: str, declared: str | None, timed: Callable[[], dict[str, str]]) -> tuple[str, str]:
    """The timing cache mode the profile must match: the benchmark's declared `cache=`; else the
    mode of this file's own timing run in OUTDIR (`timed`: `_timed_cache_modes`, read once for
    all cases); else the GPU default, cold."""
    if declared:
        return declared, "the benchmark's declared cache mode"
    mode = timed().get(case_id)
    if mode:
        return mode, f"this file's timing run in {outdir / 'manifest.json'} (--cache given there)"
    return "cold", "the default cache mode on a GPU (cold; the benchmark declares none)"


# under --cache-control all ncu flushes before *every* kernel it profiles, while the cold
# timings flush once per call: kernels after a call's first found its data in L2 when timed
_MULTI_KERNEL_NOTE = (
    "; every profiled kernel starts with cold caches, so for a variant of several kernels (an unfused "
    "chain) the later kernels' DRAM traffic is overstated against its timing, which flushed only before "
    "each call; --replay-mode range profiles the call as one unit, flushed once"
)


def nvtx_filter_for(backend: str, name: str) -> str:
    """The --nvtx-include expression matching the range the target emits (same API and domain
    as the backend's `nvtx_range`): jax through the `nvtx` package names a domain."""
    from profaudit.bench.backends import nvtx_include

    domain = None
    if backend == "jax":
        from profaudit.bench.backend_jax import nvtx_api

        domain = nvtx_api()[1]
    return nvtx_include(name, domain)


def harness_launches(case) -> int:
    """An upper bound on the kernels the profiled process launches itself before the variant's
    warm-up (the launch skip must count them): two per array input (dtype conversion on upload,
    and on the copy back to the host the check reads), three per output buffer (allocation fill,
    NaN poison, conversion for the host copy). The reference runs on the host there
    (`run_target`), so it launches none."""
    from profaudit.bench.backends import get_backend

    b = case.benchmark
    backend = get_backend("numpy")
    try:
        ins = b.inputs(dict(case.params), backend.generator(0))
    except Exception:  # inputs that need the real backend: assume a handful
        return 8
    ins = tuple(ins) if isinstance(ins, (list, tuple)) else (ins,)
    n_out = 0
    if b.output is not None:
        from profaudit.bench.check import leaves

        try:
            n_out = len(leaves(b.output(dict(case.params), ins)))
        except Exception:
            n_out = 1
    return 2 * len(ins) + 3 * n_out


def ncu_plan(
    file: str | os.PathLike,
    outdir: str | os.PathLike,
    *,
    pattern: str | None = None,
    variants: Sequence[str] | None = None,
    options: NcuOptions | None = None,
    ncu: str | None = None,
    python: str | None = None,
) -> list[NcuPlan]:
    """One ncu command per selected (case, variant); nothing is run."""
    from profaudit.bench.spec import load_benchmarks, require_reference, select_cases

    o = (options or NcuOptions()).validate()
    file = Path(file).resolve()
    outdir = Path(outdir).resolve()
    benches = load_benchmarks(file)
    exe = ncu or o.ncu or find_ncu() or "ncu"
    py = python or sys.executable
    plans = []
    selected = select_cases(benches, pattern, variants)
    if o.check:
        # the profiled process checks the variant first: say now, not on the GPU machine
        require_reference(list({id(c.benchmark): c.benchmark for c, _ in selected}.values()))
    # the timing run's manifest (and the file's hash) is read once, and only if a case declares no cache mode
    timed = functools.cache(lambda: _timed_cache_modes(outdir, file))
    for case, vnames in selected:
        mode, mode_src = _cache_mode_for(outdir, case.id, case.benchmark.cache, timed)
        if o.cache_control:
            cc, cc_reason = o.cache_control, "requested explicitly"
        else:
            cc = "all" if mode == "cold" else "none"
            cc_reason = f"follows the timing cache mode {mode!r} ({mode_src}): " + ("ncu flushes every cache before each replay pass, as the cold timings flush L2" if cc == "all" else "no flushing, as the timings ran with warm caches")
        if cc == "all" and o.replay_mode == "kernel":
            cc_reason += _MULTI_KERNEL_NOTE
        # the kernel filter's launch skip counts the harness's own launches: one count per case
        # (it draws the case's inputs), not per variant
        harness = harness_launches(case) if o.filter != "nvtx" else 0
        for v in vnames:
            rng = range_name(case.id, v)
            stem = f"{case.benchmark.name}__{v}__{case.slug}"
            report_base = outdir / "ncu" / stem
            sidecar = outdir / "ncu" / f"{stem}.target.json"
            argv = [exe, "--target-processes", "all", "--replay-mode", o.replay_mode, "--cache-control", cc, "--clock-control", o.clock_control]
            extra_calls = 0
            skip_parts = None
            if o.filter == "nvtx":
                # a start/end range: process-wide, so kernels other threads launch inside it count
                argv += ["--nvtx", "--nvtx-include", nvtx_filter_for(case.benchmark.backend, rng)]
                if o.launch_count is not None:
                    argv += ["--launch-count", str(o.launch_count)]
            else:
                # the skip counts every matching launch before the profiled calls: the checked
                # call and the warm-up (launches_per_call each) and the harness's own GPU work; as
                # the latter may not match the regex, the target runs that many extra calls
                # after the profiled ones so a skip that overcounts still lands on the variant
                lpc = o.launches_per_call
                skip_parts = {"warmup_calls": o.warmup, "check_calls": 1 if o.check else 0, "launches_per_call": lpc, "harness_launches_max": harness}
                skip = o.launch_skip if o.launch_skip is not None else (o.warmup + (1 if o.check else 0)) * lpc + harness
                count = o.launch_count if o.launch_count is not None else o.calls * lpc
                extra_calls = -(-harness // lpc)
                argv += ["--kernel-name-base", "function", "--kernel-name", f"regex:{o.kernel_name}", "--launch-skip", str(skip), "--launch-count", str(count)]
            if o.section_set:
                argv += ["--set", o.section_set]
            else:
                for s in o.sections:
                    argv += ["--section", s]
            if o.metrics:
                argv += ["--metrics", ",".join(o.metrics)]
            argv += list(o.extra_args)
            argv += ["--export", str(report_base), "--force-overwrite"]
            argv += [py, "-m", "profaudit.bench.child", "target", str(file), "--case", case.id, "--variant", v, "--warmup", str(o.warmup), "--calls", str(o.calls + extra_calls), "--range", rng, "--seed", str(o.seed), "--device", o.device, "--sidecar", str(sidecar)]
            if not o.check:
                argv.append("--no-check")
            if o.filter == "nvtx":
                argv.append("--require-nvtx")
            plan = NcuPlan(case.id, case.benchmark.name, v, argv, report_base.with_name(report_base.name + ".ncu-rep"), sidecar, rng, cc, cc_reason, o.clock_control, CLOCK_REASONS[o.clock_control], o)
            plan.launch_skip_breakdown = skip_parts
            plan.extra_calls = extra_calls
            plans.append(plan)
    return plans


def run_ncu(plans: Sequence[NcuPlan], outdir: str | os.PathLike, *, ncu: str | None = None, echo=None, timeout_s: float | None = None) -> list[dict]:
    """Run each plan's ncu command; record every run (command, choices, result) in the manifest."""
    outdir = Path(outdir).resolve()
    exe = require_ncu(ncu or (plans[0].options.ncu if plans else None))
    known = available_sections(exe)
    version = ncu_version(exe)
    (outdir / "ncu").mkdir(parents=True, exist_ok=True)
    records = []
    for plan in plans:
        argv = list(plan.argv)
        argv[0] = exe
        if known is not None and not plan.options.section_set:
            keep, dropped = [], []
            i = 0
            out_argv = []
            while i < len(argv):
                if argv[i] == "--section" and i + 1 < len(argv):
                    (keep if argv[i + 1] in known else dropped).append(argv[i + 1])
                    if argv[i + 1] in known:
                        out_argv += argv[i : i + 2]
                    i += 2
                    continue
                out_argv.append(argv[i])
                i += 1
            argv = out_argv
            plan.dropped_sections = dropped
        if "--metrics" in argv and plan.tensor_metrics is None:
            tensor = tensor_flop_metrics(exe)
            if tensor:
                i = argv.index("--metrics") + 1
                have = argv[i].split(",")
                argv[i] = ",".join(have + [m for m in tensor if m not in have])
            plan.tensor_metrics = tensor
        plan.argv = argv
        if echo:
            echo(plan.command)
        env = dict(os.environ)
        env.pop("TRITON_INTERPRET", None)
        started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout_s)
            rc, out, err = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as exc:
            rc, out, err = 124, exc.stdout or "", f"timed out after {timeout_s} s"
        rec = plan.as_dict(outdir)
        rec.update(ncu=exe, ncu_version=version, started=started, returncode=rc, report_exists=plan.report.is_file())
        rec["ncu_errors"] = [l.strip() for l in (out + "\n" + (err or "")).splitlines() if "==ERROR==" in l][:20]
        rec["target"] = _read_json(plan.sidecar)
        if plan.report.is_file():
            rec["kernels_profiled"] = _count_kernels(plan.report)
            k = rec["kernels_profiled"]
            if plan.cache_control == "all" and plan.options.replay_mode == "kernel" and k and k > plan.options.calls:
                # the variant is several kernels: each was profiled from cold caches, unlike its timing
                rec["cache_note"] = (
                    f"{k} kernels for {plural(plan.options.calls, 'call')}: under --cache-control all each started with cold caches, "
                    "while the timing flushed once per call; the later kernels' DRAM bytes are overstated (--replay-mode range: one flush per call)"
                )
        (outdir / "ncu" / (plan.report.name[: -len(".ncu-rep")] + ".log")).write_text(f"$ {plan.command}\n\n--- stdout\n{out}\n--- stderr\n{err}\n")
        records.append(rec)
        _record_in_manifest(outdir, rec)
    return records


def _read_json(p: Path) -> dict | None:
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None


def _count_kernels(report: Path) -> int | None:
    try:
        from profaudit.loader import load

        return int(load([str(report)]).kernels.height)
    except Exception:  # the report is the product; reading it back is a courtesy
        return None


def _record_in_manifest(outdir: Path, rec: dict) -> None:
    from profaudit.bench.session import MANIFEST, MANIFEST_FORMAT, MANIFEST_VERSION, write_manifest

    p = outdir / MANIFEST
    try:
        doc = json.loads(p.read_text())
        if doc.get("format") != MANIFEST_FORMAT:
            raise ValueError
    except (OSError, ValueError):
        doc = {"format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "status": "ncu-only", "cases": []}
    runs = [r for r in doc.get("ncu", []) if not (r.get("case") == rec["case"] and r.get("variant") == rec["variant"])]
    runs.append(rec)
    doc["ncu"] = runs
    write_manifest(outdir, doc)


# ------------------------------------------------------------------------------------------------
# the profiled process
# ------------------------------------------------------------------------------------------------


def run_target(file: str, case_id: str, variant: str, *, warmup: int, calls: int, range_name: str, check: bool = True, seed: int = 0, device: str = "auto", sidecar: str | None = None, backend_options: dict | None = None, require_nvtx: bool = False) -> dict:
    """What runs under ncu: inputs, a correctness check, warm-up, then `calls` calls inside the
    NVTX range. No cache flush of our own: ncu's --cache-control decides the cache state."""
    from profaudit.bench import check as chk
    from profaudit.bench.backends import get_backend
    from profaudit.bench.runner import _seed, case_dtype, host_outputs, reference_outputs, tolerance
    from profaudit.bench.spec import accepts_params, load_benchmarks

    benches = load_benchmarks(file)
    case = next((c for b in benches for c in b.cases() if c.id == case_id), None)
    if case is None:
        raise UsageError(f"{file}: no case {case_id!r}")
    b = case.benchmark
    if variant not in b.variants:
        raise UsageError(f"{case_id}: no variant {variant!r} ({', '.join(b.variants)})")
    v = b.variants[variant]
    p = dict(case.params)
    backend = get_backend(b.backend, device, backend_options)
    if require_nvtx and not backend.nvtx_available():
        raise UsageError(f"the {backend.name} backend on {backend.device_kind} has no NVTX API here, so ncu's NVTX filter would profile nothing: pip install nvtx, or use --filter kernel --kernel-name REGEX")
    ins = tuple(b.inputs(p, backend.generator(_seed(seed, case.id, 0, "set", 0))))
    args = list(ins)
    out = None
    if b.output is not None:
        out = b.output(p, ins)
        args.append(out)
    kw = {"params": p} if accepts_params(v.fn) else {}
    # as the timing run binds it: a cuda_graphs=True variant is profiled as graph replays, an
    # eager JAX variant un-jitted
    call = backend.bind(v.fn, args, kw, variant, p, v.model_ns, 0, compile_mode=v.compile_mode, cuda_graphs=v.cuda_graphs)
    result: dict[str, Any] = {"case": case_id, "variant": variant, "range": range_name, "warmup_calls": warmup, "profiled_calls": calls, "device": backend.device_info(), "framework": backend.framework(), "call_method": call.method or "plain call", "nvtx_domain": backend.nvtx_domain}
    if check and b.reference is not None:
        if out is not None:
            for o in chk.leaves(out):
                backend.poison(o)
        ret = call()
        backend.sync()
        # the same reference, dtype and tolerance as the timing run's check (profaudit.bench.runner),
        # computed on the host: its kernels would otherwise count in ncu's launch skip
        got = host_outputs(backend, out if out is not None else ret)
        ref_backend, ref_ins = backend, ins
        if backend.device_kind == "cuda" and b.backend in ("torch", "triton"):
            from profaudit.bench.backend_torch import TorchBackend

            ref_backend = TorchBackend("cpu")
            ref_ins = tuple(ref_backend.from_numpy(backend.to_numpy(x), backend.array_dtype(x)) if backend.is_array(x) else x for x in ins)
        ref = reference_outputs(case, ref_backend, ref_ins, p)
        res = chk.compare(got, ref, *tolerance(case, v, case_dtype(case, backend, ins), backend))
        result["correctness"] = res.as_dict()
        result["check_calls"] = 1
        if not res.ok:
            raise UsageError(f"{case_id} {variant}: wrong result before profiling: {res.message}")
    for _ in range(warmup):
        call()
    backend.sync()
    for _ in range(calls):
        with backend.nvtx_range(range_name):
            call()
            backend.sync()
    backend.close()
    if sidecar:
        from profaudit.dataset import atomic_write_text

        atomic_write_text(Path(sidecar), json.dumps(result, indent=1, default=str) + "\n")
    return result
