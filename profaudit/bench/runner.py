"""The measurement method: correctness first, warm-up to a steady state, interleaved timed
samples under a recorded cache mode, a stopping rule, correctness again after timing.

For each case (one point of a benchmark's sweep) and the variants chosen:

1. Inputs: fresh random input sets from a seed derived from (run seed, case id, process index);
   floating inputs must not be constant. Cache mode `cold` flushes the cache before every timed
   call with a buffer of twice the device's L2 (GPU: driver attribute, else device spec) or the
   CPU's last-level cache; `hot` runs calls back to back on one input set; `rotate` cycles through
   enough input sets to cover twice the cache, without flushing. The default is `cold` on GPUs
   (FAIRNESS P2) and `hot` on host CPUs, where a flush between calls idles the framework's worker
   threads and the time measured becomes their wake-up (a 25 us torch matmul measures ~900 us
   after a 2 ms flush on a 2-thread VM); either way both variants run in the same mode.
2. Correctness before timing: each variant runs on (up to) two input sets with its output buffer
   poisoned (NaN) first and is compared with the reference on float64 inputs, with dtype
   tolerances. A reference that an all-zero output would match is refused. A variant that
   changes global precision flags (TF32, reduced-precision reductions) is refused.
3. Warm-up: timed calls, logged as `phase=warmup`, until each variant is steady (the median of
   its last window within max(5 %, 3 noise SE) of the window before), at least
   `min_warmup_calls` calls and `min_warmup_s` have passed; or `max_warmup_s` ran out
   (recorded: `warmup_steady: false`). A warm-up that settled at a slow plateau shows as a head
   in the measured samples; the audit's own detector (FAIRNESS P1) finds it during measurement,
   and when it is a clear warm-up (a leading run above 1.5x the steady median, in all at most
   half of the variant's measured calls) those calls are relabelled warm-up and measuring
   continues (`warmup_extended`). Anything else (drift, bimodality) stays for the audit to see.
4. Measurement: rounds that run every variant once, in ABBA-alternating order (FAIRNESS P4),
   grouped in blocks of about `block_target_s`; telemetry (NVML clocks, temperature, power,
   throttle reasons) is sampled once per block outside the timed calls. It stops when every
   variant has `min_samples` samples, `min_time_s` has passed and the median's relative standard
   error is under `noise_target` for every variant; or at `max_time_s` / `max_samples`.
5. Correctness after timing: the first input set is refilled *in place* with new random values
   (same buffers), the reference recomputed, and every variant checked again: a kernel that
   returns a cached or stale result fails here (FAIRNESS P8).
"""

from __future__ import annotations

import hashlib
import math
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

from profaudit.bench import check
from profaudit.bench.backends import Backend, BoundCall, dtype_name
from profaudit.audit.stats import steady_state
from profaudit.bench.spec import Case, Variant, accepts_params
from profaudit.errors import UsageError

# Relative standard error of the median from the MAD: SE(median) ~ 1.2533 sigma / sqrt(n),
# sigma ~ 1.4826 MAD for normal data.
_SE_MEDIAN = 1.2533 * 1.4826


@dataclass
class RunOptions:
    cache: str | None = None  # cold, hot, rotate; None: the benchmark's choice, else cold
    min_samples: int = 30
    max_samples: int = 100_000
    min_time_s: float = 0.05
    max_time_s: float = 2.0
    noise_target: float = 0.005
    min_warmup_calls: int = 3
    min_warmup_s: float = 0.025
    max_warmup_s: float = 1.0
    block_target_s: float = 0.02
    seed: int = 0
    interleave: bool = True
    input_sets: int | None = None
    device: str = "auto"
    backend_options: dict = field(default_factory=dict)
    telemetry: bool = True
    run_index: int = 0
    repetitions: int = 1

    def validate(self) -> "RunOptions":
        from profaudit.bench.spec import CACHE_MODES

        if self.cache is not None and self.cache not in CACHE_MODES:
            raise UsageError(f"cache mode {self.cache!r}: choose {', '.join(CACHE_MODES)}")
        if self.min_samples < 2 or self.max_samples < self.min_samples:
            raise UsageError(f"need 2 <= min_samples <= max_samples (got {self.min_samples}, {self.max_samples})")
        if not (self.max_time_s > 0 and self.min_time_s >= 0 and self.noise_target > 0):
            raise UsageError("max_time_s and noise_target must be positive, min_time_s >= 0")
        if self.input_sets is not None and self.input_sets < 1:
            raise UsageError("input_sets must be at least 1")
        return self

    def as_dict(self) -> dict:
        return asdict(self)


class CaseError(Exception):
    """A case cannot run at all (inputs, reference or setup failed)."""


class _VariantFailed(Exception):
    """One variant's call raised during warm-up or measurement; the others can go on."""

    def __init__(self, variant: str, text: str):
        super().__init__(text)
        self.variant = variant


# what a call into benchmark code may raise that the harness reports instead of dying: a
# variant that calls sys.exit() must not end the run without a word
_USER_ERRORS = (Exception, SystemExit)


@dataclass
class VariantResult:
    name: str
    status: str = "ok"  # ok, correctness_failed, error
    error: str | None = None
    rows: list[dict] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    correctness: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def measured(self) -> bool:
        return any(r["phase"] == "measure" for r in self.rows)


@dataclass
class CaseResult:
    case: Case
    variants: dict[str, VariantResult]
    status: str = "ok"
    error: str | None = None
    info: dict[str, Any] = field(default_factory=dict)


def _seed(base: int, *parts: Any) -> int:
    h = hashlib.sha256(":".join(str(p) for p in (base, *parts)).encode()).digest()
    return int.from_bytes(h[:8], "little") & 0x7FFF_FFFF_FFFF_FFFF


def _median(x: Sequence[float]) -> float:
    return float(np.median(np.asarray(x, dtype=np.float64))) if len(x) else math.nan


def rel_se_median(x: Sequence[float]) -> float:
    """Relative standard error of the median, from the MAD (robust to a few outliers)."""
    a = np.asarray(x, dtype=np.float64)
    if a.size < 3:
        return math.inf
    m = float(np.median(a))
    if m <= 0:
        return math.inf
    mad = float(np.median(np.abs(a - m)))
    return _SE_MEDIAN * mad / (m * math.sqrt(a.size))


def is_steady(d: Sequence[float]) -> bool:
    """The median of the last window is within max(5 %, 3 SE) of the median of the window before."""
    n = len(d)
    if n < 6:
        return False
    w = max(3, min(n // 3, 25))
    last = np.asarray(d[-w:], dtype=np.float64)
    prev = np.asarray(d[-2 * w : -w], dtype=np.float64)
    ml, mp = float(np.median(last)), float(np.median(prev))
    if mp <= 0 or ml <= 0:
        return False
    both = np.concatenate([prev, last])
    m = float(np.median(both))
    spread = 1.4826 * float(np.median(np.abs(both - m))) / m if m > 0 else math.inf
    tol = max(0.05, 3 * spread / math.sqrt(w))
    return abs(ml / mp - 1) <= tol


# framework errors whose own text does not say what to do
_HINTS = (
    (
        "active drivers",
        "Triton found no GPU driver: in the interpreter (no GPU) @triton.autotune cannot time its configs; "
        "on a CPU call the kernel with one config (kernel.fn[grid](..., BLOCK=...)) or run on a GPU",
    ),
)


def _exc_text(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, SystemExit):
        msg = f"the code called sys.exit({exc.code!r})"
    hint = next((h for needle, h in _HINTS if needle in msg), None)
    return f"{type(exc).__name__}: {msg}{where}" + (f" ({hint})" if hint else "")


def case_dtype(case: Case, backend: Backend, ins: Sequence[Any]) -> str | None:
    """The dtype a case computes in: the benchmark's `dtype=` or the case's `dtype` parameter,
    else the first floating input's (else the first array input's)."""
    declared = case.value(case.benchmark.dtype) or case.params.get("dtype")
    if declared is not None:
        return dtype_name(declared)
    arrays = [backend.array_dtype(x) for x in ins if backend.is_array(x)]
    return next((d for d in arrays if d.startswith(("float", "bfloat"))), arrays[0] if arrays else None)


def variant_tf32(v: Variant, dtype: str | None, backend: Backend) -> bool | None:
    """Whether the variant's fp32 math may use TF32: as it declares, else as the backend allows."""
    if v.tf32 is not None:
        return bool(v.tf32) if dtype == "float32" else None
    return backend.tf32_allowed(dtype)


def tolerance(case: Case, v: Variant, dtype: str | None, backend: Backend) -> tuple[float, float]:
    """(rtol, atol) of a variant's correctness check: the benchmark's, else its dtype's default."""
    rtol, atol = check.default_tolerance(dtype, variant_tf32(v, dtype, backend))
    return float(case.value(case.benchmark.rtol, rtol)), float(case.value(case.benchmark.atol, atol))


def host_outputs(backend: Backend, out: Any) -> list[np.ndarray]:
    """The arrays of an output (see `check.leaves`) on the host."""
    return [backend.to_numpy(o) if backend.is_array(o) else np.asarray(o) for o in check.leaves(out)]


def reference_outputs(case: Case, backend: Backend, ins: Sequence[Any], params: dict) -> list[np.ndarray]:
    """The reference's outputs for `ins` (on float64 copies unless the benchmark says otherwise)."""
    b = case.benchmark
    args = [backend.to_reference(x) if (b.reference_fp64 and backend.is_array(x)) else x for x in ins]
    kw = {"params": params} if accepts_params(b.reference) else {}
    return host_outputs(backend, b.reference(*args, **kw))


class _Clock:
    """The budget clock: the timer's own when it has one (the fake device's simulated time),
    else the host's monotonic clock."""

    def __init__(self, timer):
        self.timer = timer

    def now_ns(self) -> float:
        c = getattr(self.timer, "clock_ns", None)
        return float(c) if c is not None else float(time.perf_counter_ns())


def run_case(case: Case, variant_names: Sequence[str], backend: Backend, opts: RunOptions, telemetry=None, device_name: str | None = None) -> CaseResult:
    """Run one case: correctness, warm-up, interleaved measurement, correctness again."""
    b = case.benchmark
    variants: dict[str, Variant] = {n: b.variants[n] for n in variant_names}
    results = {n: VariantResult(n) for n in variants}
    cres = CaseResult(case, results, info={"device_name": device_name})
    try:
        _run(case, variants, results, cres, backend, opts, telemetry)
    except CaseError as exc:
        cres.status, cres.error = "error", str(exc)
        for r in results.values():
            if r.status == "ok" and not r.measured:
                r.status, r.error = "error", f"case not run: {exc}"
    return cres


def _run(case: Case, variants: dict[str, Variant], results: dict[str, VariantResult], cres: CaseResult, backend: Backend, opts: RunOptions, telemetry) -> None:
    b = case.benchmark
    p = dict(case.params)
    run_idx = opts.run_index
    cache_mode = opts.cache or b.cache or backend.default_cache_mode()
    if b.output is not None and not backend.supports_out:
        raise CaseError(f"the {backend.name} backend has immutable arrays: declare no output= and return the outputs")

    # ---------------------------------------------------------------- inputs
    def make_inputs(i: int, tag: str = "set"):
        gen = backend.generator(_seed(opts.seed, case.id, run_idx, tag, i))
        try:
            ins = b.inputs(p, gen)
        except UsageError as exc:
            # a parameter the harness cannot honour (gen.randn(..., "fp8")): the file is wrong
            from profaudit.errors import InputError

            raise InputError(b.source_file or b.name, f"{case.id}: inputs(): {exc}") from None
        except _USER_ERRORS as exc:
            raise CaseError(f"inputs() failed: {_exc_text(exc)}") from None
        ins = tuple(ins) if isinstance(ins, (list, tuple)) else (ins,)
        for k, x in enumerate(ins):
            if backend.is_array(x):
                a = backend.to_numpy(x)
                if a.dtype.kind == "f" and a.size > 1 and np.all(a == a.flat[0]):
                    raise CaseError(f"input {k} is constant ({a.flat[0]!r} everywhere): a correctness check on it proves little; draw inputs with gen.randn / gen.rand")
        return ins

    sets = [make_inputs(0)]
    in_bytes = sum(backend.nbytes(x) for x in sets[0] if backend.is_array(x))
    cache_bytes, cache_src = backend.cache_bytes()
    flush_bytes = max(2 * int(cache_bytes), 1 << 20)
    if cache_mode == "rotate":
        need = int(math.ceil(2 * cache_bytes / max(in_bytes, 1))) + 1
        n_sets = opts.input_sets or b.input_sets or min(max(need, 2), 4096)
    else:
        n_sets = opts.input_sets or b.input_sets or 1
    for i in range(1, n_sets):
        sets.append(make_inputs(i))
    rotation_covers = n_sets * in_bytes >= 2 * cache_bytes
    if cache_mode == "cold":
        cache_state = "cold"
    elif cache_mode == "rotate":
        cache_state = "cold" if rotation_covers else "hot"
    else:
        cache_state = "hot"

    # ---------------------------------------------------------------- dtype, reference
    dtype = case_dtype(case, backend, sets[0])

    def ref_of(ins) -> list[np.ndarray]:
        if b.reference is None:
            raise CaseError("no reference= declared: correctness cannot be checked (declare one)")
        try:
            return reference_outputs(case, backend, ins, p)
        except _USER_ERRORS as exc:
            raise CaseError(f"reference failed: {_exc_text(exc)}") from None

    refs: dict[int, list[np.ndarray]] = {0: ref_of(sets[0])}
    checked_sets = [0] + ([1] if n_sets > 1 else [])
    for s in checked_sets[1:]:
        refs[s] = ref_of(sets[s])

    # ---------------------------------------------------------------- binding
    outs: dict[tuple[str, int], Any] = {}
    bound: dict[str, list[BoundCall]] = {}

    def out_buffer(v: str, s: int):
        key = (v, s)
        if key not in outs:
            try:
                outs[key] = b.output(p, sets[s])
            except _USER_ERRORS as exc:
                raise CaseError(f"output() failed: {_exc_text(exc)}") from None
        return outs[key]

    def bind(v: Variant, s: int) -> BoundCall:
        args = list(sets[s])
        if b.output is not None:
            args.append(out_buffer(v.name, s))
        kw = {"params": p} if accepts_params(v.fn) else {}
        return backend.bind(v.fn, args, kw, v.name, p, v.model_ns, s)

    out_dtypes: dict[str, list[str]] = {}

    def produced(v: Variant, s: int, ret: Any) -> list[np.ndarray]:
        raw = out_buffer(v.name, s) if b.output is not None else ret
        # the device dtypes (host copies of bfloat16 are float32): recorded to compare variants
        out_dtypes[v.name] = [_dtype_of(backend, o) for o in check.leaves(raw)]
        return host_outputs(backend, raw)

    def checked_call(v: Variant, s: int, call: BoundCall) -> tuple[check.CheckResult, list[np.ndarray]]:
        if b.output is not None:
            for o in check.leaves(out_buffer(v.name, s)):
                backend.poison(o)
            backend.sync()
        ret = call()
        backend.sync()
        if ret is None and b.output is None:
            return check.CheckResult(False, "the variant returned None: return the output (or declare output= and write into the buffer it gets)"), []
        got = produced(v, s, ret)
        rtol, atol = tolerances[v.name]
        return check.compare(got, refs[s], rtol, atol), got

    tolerances = {name: tolerance(case, v, dtype, backend) for name, v in variants.items()}
    for name in variants:
        why = check.degenerate(refs[0], *tolerances[name])
        if why:
            raise CaseError(why)

    # ---------------------------------------------------------------- correctness before timing
    flags0 = backend.precision_flags()
    pre_calls: dict[str, int] = {}
    out_bytes: dict[str, int] = {}
    for name, v in variants.items():
        r = results[name]
        r.correctness = {"sets_checked_before": len(checked_sets), "rtol": tolerances[name][0], "atol": tolerances[name][1], "poisoned": b.output is not None}
        try:
            bound[name] = [bind(v, s) for s in range(n_sets)]
            calls = 0
            for s in checked_sets:
                before = None if b.mutates_inputs else [np.array(backend.to_numpy(a), copy=True) for a in sets[s] if backend.is_array(a)]
                res, got = checked_call(v, s, bound[name][s])
                calls += 1
                if before is not None and not all(np.array_equal(x, np.asarray(backend.to_numpy(a)), equal_nan=True) for x, a in zip(before, (a for a in sets[s] if backend.is_array(a)))):
                    r.status, r.error = "error", (
                        f"{name} writes into its inputs: every timed call would see different data; copy them inside the "
                        "variant, use output= for a result buffer, or declare mutates_inputs=True if that is the point"
                    )
                    r.correctness[f"before_set{s}"] = res.as_dict()
                    # the other variants share these inputs: give them back their drawn values
                    for k in checked_sets:
                        again = make_inputs(k)
                        if not all(backend.copy_into(dst, src) for dst, src in zip(sets[k], again) if backend.is_array(dst)):
                            sets[k] = again
                    break
                r.correctness[f"before_set{s}"] = res.as_dict()
                if not res.ok:
                    r.status, r.error = "correctness_failed", f"before timing, input set {s}: {res.message}"
                    break
            out_bytes[name] = sum(int(np.asarray(g).nbytes) for g in got)
            pre_calls[name] = calls
        except CaseError:
            raise
        except _USER_ERRORS as exc:
            # the variant column names it already
            r.status, r.error = "error", _exc_text(exc)
            continue
        flags1 = backend.precision_flags()
        if flags1 != flags0:
            changed = {k: (flags0.get(k), flags1.get(k)) for k in set(flags0) | set(flags1) if flags0.get(k) != flags1.get(k)}
            r.status, r.error = "error", f"calling it changed global precision flags {changed}"
            raise CaseError(f"variant {name!r} changed global precision flags {changed}: every variant after it would run under different numerics")
    _check_output_dtypes(variants, results, out_dtypes, b.baseline)
    live = [n for n in variants if results[n].status == "ok"]
    if not live:
        return

    # ---------------------------------------------------------------- timing
    timer = backend.timer()
    clock = _Clock(timer)
    flush = backend.flusher(flush_bytes) if cache_mode == "cold" else None
    tele = telemetry
    before = tele.before_run() if tele is not None else {}
    nxt = {n: 0 for n in live}
    iteration = {n: 0 for n in live}
    origin: list[float] = []
    time_source = timer.time_source
    device_name = cres.info.get("device_name")

    def next_call(n: str) -> BoundCall:
        c = bound[n][nxt[n] % n_sets]
        nxt[n] += 1
        return c

    def order(rnd: int, names: list[str]) -> list[str]:
        if not opts.interleave or len(names) < 2:
            return names
        k = rnd % len(names)
        return names[k:] + names[:k]

    def record(names: list[str], starts, durs, phase: str, sample: dict | None) -> None:
        if not origin and starts:
            origin.append(starts[0])
        for n, st, d in zip(names, starts, durs):
            row = {
                "benchmark": case.benchmark.name,
                "variant": n,
                "params": p,
                "run": run_idx,
                "iteration": iteration[n],
                "duration_ns": float(d),
                "timestamp_ns": float(st - origin[0]),
                "phase": phase,
                "cache_state": cache_state,
                "time_source": time_source,
                "device_name": device_name,
                "calls_per_sample": 1,
            }
            if sample:
                row.update({k: v for k, v in sample.items() if v is not None})
            results[n].rows.append(row)
            iteration[n] += 1

    def run_block(names: list[str], phase: str) -> list:
        """Time one block of calls and record it; a failing call ends the case with one line."""
        try:
            starts, durs = timer.run([next_call(n) for n in names], flush)
        except UsageError:
            raise
        except _USER_ERRORS as exc:
            what = "warm-up" if phase == "warmup" else "measurement"
            who = getattr(exc, "profaudit_variant", None)
            if who in names:
                raise _VariantFailed(who, f"a call failed during {what}: {_exc_text(exc)}") from None
            raise CaseError(f"a call failed during {what}: {_exc_text(exc)}") from None
        record(names, starts, durs, phase, tele.sample() if tele is not None else None)
        return durs

    # warm-up
    groups = [list(live)] if opts.interleave else [[n] for n in live]
    failed: set[str] = set()

    def drop(exc: _VariantFailed, group: list[str], *series: dict) -> None:
        # the failing variant gets the error; the others keep their place in the rounds
        results[exc.variant].status, results[exc.variant].error = "error", str(exc)
        failed.add(exc.variant)
        group.remove(exc.variant)
        for d in series:
            d.pop(exc.variant, None)
    warm_info: dict[str, dict] = {}
    meas_info: dict[str, dict] = {}
    for group in groups:
        warm = {n: [] for n in group}
        t0 = clock.now_ns()
        rnd = 0
        wall0 = time.perf_counter()
        while group:
            names = order(rnd, group)
            try:
                durs = run_block(names, "warmup")
            except _VariantFailed as exc:
                drop(exc, group, warm)
                continue
            for n, d in zip(names, durs):
                warm[n].append(d)
            rnd += 1
            spent = (clock.now_ns() - t0) / 1e9
            steady = all(is_steady(warm[n]) for n in group)
            if spent >= opts.max_warmup_s or time.perf_counter() - wall0 >= max(opts.max_warmup_s, 1.0) * 4:
                break
            if steady and rnd >= opts.min_warmup_calls and spent >= opts.min_warmup_s:
                break
        if not group:
            continue
        for n in group:
            warm_info[n] = {"calls": len(warm[n]), "time_s": round((clock.now_ns() - t0) / 1e9, 6), "steady": is_steady(warm[n]), "median_ns": _median(warm[n][-max(3, len(warm[n]) // 3) :])}

        # measurement
        per_round = sum(warm_info[n]["median_ns"] for n in group)
        rounds_per_block = int(min(256, max(1, opts.block_target_s * 1e9 // max(per_round, 1.0))))
        samples = {n: [] for n in group}
        extended = {n: 0 for n in group}
        t0 = clock.now_ns()
        wall0 = time.perf_counter()
        reason = None
        noise: dict[str, float] = {}
        while reason is None and group:
            names_all: list[str] = []
            left = opts.max_samples - min(len(v) for v in samples.values())
            for _ in range(max(1, min(rounds_per_block, left))):
                names_all += order(rnd, group)
                rnd += 1
            try:
                durs = run_block(names_all, "measure")
            except _VariantFailed as exc:
                drop(exc, group, samples, extended, noise)
                continue
            for n, d in zip(names_all, durs):
                samples[n].append(d)
            for n in group:
                # a warm-up that looked steady at a slow level (clock ramp, lazy init over many
                # calls) leaves a head in the samples: the audit's own P1 detector finds it; those
                # calls become warm-up and measuring goes on (recorded as warmup_extended)
                st = steady_state(np.asarray(samples[n], dtype=np.float64)) if len(samples[n]) <= 5000 else None
                # only a clear warm-up: a leading run well above the steady level (the P1
                # threshold), shorter than what remains; bimodal or drifting series stay as they are
                head = st.start if st is not None and "threshold" in st.method and st.head_median > 1.5 * st.median else 0
                # never more than half of the variant's measured calls in all: beyond that it is
                # not a warm-up but a change of regime, which the log keeps and the audit reports
                if head and 2 * (extended[n] + head) > extended[n] + len(samples[n]):
                    head = 0
                if head:
                    samples[n] = samples[n][head:]
                    extended[n] += head
                    moved = 0
                    for row in results[n].rows:
                        if row["phase"] == "measure" and moved < head:
                            row["phase"] = "warmup"
                            moved += 1
            n_min = min(len(v) for v in samples.values())
            spent = (clock.now_ns() - t0) / 1e9
            wall = time.perf_counter() - wall0
            noise = {n: rel_se_median(samples[n]) for n in group}
            if n_min >= opts.max_samples:
                reason = "max_samples"
            elif spent >= opts.max_time_s or wall >= opts.max_time_s * 4:
                reason = "time_budget"
            elif n_min >= opts.min_samples and spent >= opts.min_time_s and all(x <= opts.noise_target for x in noise.values()):
                reason = "noise_target"
        for n in group:
            meas_info[n] = {
                "samples": len(samples[n]),
                "time_s": round((clock.now_ns() - t0) / 1e9, 6),
                "stop_reason": reason,
                "rel_se_median": noise.get(n, math.inf),
                "median_ns": _median(samples[n]),
                "rounds_per_block": rounds_per_block,
            }
            warm_info[n]["warmup_extended"] = extended[n]
            warm_info[n]["calls"] += extended[n]

    live = [n for n in live if n not in failed]
    if not live:
        return

    # ---------------------------------------------------------------- correctness after timing
    fresh = make_inputs(0, "recheck")
    in_place = True
    for dst, src in zip(sets[0], fresh):
        if backend.is_array(dst):
            in_place = backend.copy_into(dst, src) and in_place
    if not in_place:
        sets[0] = fresh
    ref_after = ref_of(sets[0])
    if check.same_values(ref_after, refs[0]):
        raise CaseError("the reference output did not change when the inputs got new values: the check cannot detect stale results")
    refs[0] = ref_after
    for n in live:
        v = variants[n]
        r = results[n]
        try:
            call = bound[n][0] if in_place else bind(v, 0)
            res, _ = checked_call(v, 0, call)
        except _USER_ERRORS as exc:
            res = check.CheckResult(False, f"the call failed: {_exc_text(exc)}")
        r.correctness["after_timing"] = res.as_dict()
        r.correctness["after_inputs_refilled_in_place"] = in_place
        if not res.ok:
            r.status, r.error = "correctness_failed", f"after timing (inputs refilled{' in place' if in_place else ''}): {res.message}"
        r.correctness["checked"] = "both" if res.ok else "before_timing"

    # ---------------------------------------------------------------- per-variant facts
    cres.info.update(
        cache_mode=cache_mode,
        cache_state=cache_state,
        cache_bytes=int(cache_bytes),
        cache_bytes_source=cache_src,
        flush_bytes=flush_bytes if cache_mode == "cold" else None,
        input_sets=n_sets,
        input_bytes_per_set=int(in_bytes),
        rotation_covers_cache=rotation_covers if cache_mode == "rotate" else None,
        dtype=dtype,
        time_source=time_source,
        telemetry_before=before,
        interleaved=bool(opts.interleave and len(live) > 1),
    )
    for n in live:
        v = variants[n]
        r = results[n]
        flops = case.value(b.flops)
        nbytes = case.value(b.min_bytes)
        ci = backend.compile_info(n)
        flops_src = "declared" if flops is not None else None
        bytes_src = "declared" if nbytes is not None else None
        xla = ci.get("xla_cost_analysis") or {}
        if flops is None and xla.get("flops"):
            flops, flops_src = float(xla["flops"]), "xla cost_analysis (flops)"
        if nbytes is None:
            nbytes, bytes_src = float(in_bytes + out_bytes.get(n, 0)), "derived: input bytes + output bytes (minimum traffic from shapes and dtypes)"
        r.summary = {"warmup": warm_info.get(n), "measure": meas_info.get(n)}
        r.meta = {
            "dtype": dtype,
            "tf32": variant_tf32(v, dtype, backend),
            "compile_mode": v.compile_mode or backend.compile_mode_of(v.fn) or backend.compile_mode_default,
            "cuda_graphs": bool(v.cuda_graphs) if v.cuda_graphs is not None else False,
            "warmup_iterations": pre_calls.get(n, 0) + (warm_info.get(n) or {}).get("calls", 0),
            "interleaved": bool(opts.interleave and len(live) > 1),
            "l2_flush": (cache_mode == "cold") if cache_mode != "rotate" else None,
            "correctness_checked": r.correctness.get("checked", "before_timing"),
            "rtol": tolerances[n][0],
            "atol": tolerances[n][1],
            "flops": float(flops) if flops is not None else None,
            "bytes": float(nbytes) if nbytes is not None else None,
            "shape": _shape_of(case, backend, sets[0]),
            "op": case.value(b.op),
            "calls_per_sample": 1,
            "synchronized": True,
            "time_source": time_source,
            **{k: v2 for k, v2 in before.items()},
        }
        if dtype == "float16":
            flags = backend.precision_flags()
            if "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction" in flags:
                r.meta["allow_fp16_reduced_precision"] = bool(flags["torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction"])
        r.meta["_sources"] = {"flops": flops_src, "bytes": bytes_src, **ci}


def _dtype_of(backend: Backend, x: Any) -> str:
    if backend.is_array(x):
        try:
            return backend.array_dtype(x)
        except UsageError:  # complex, fp8 ...: not in the canonical list, still comparable
            return str(getattr(x, "dtype", type(x).__name__)).replace("torch.", "")
    return np.asarray(x).dtype.name


def _check_output_dtypes(variants: dict[str, Variant], results: dict[str, VariantResult], out_dtypes: dict[str, list[str]], baseline: str | None) -> None:
    """Fail a variant whose outputs have other dtypes than the others': the reference runs in
    float64, so a kernel that computes and returns float64 (or float32 for a float16 case) passes
    a check it should not, and does different work than the variants it is timed against."""
    ok = [n for n in variants if results[n].status == "ok" and n in out_dtypes]
    for n in ok:
        results[n].correctness["output_dtypes"] = out_dtypes[n]
    if len(ok) < 2:
        return
    if baseline in ok:
        ref_name = baseline
    else:
        # the dtypes most variants produce (ties: the first variant's)
        counts: dict[tuple, int] = {}
        for n in ok:
            counts[tuple(out_dtypes[n])] = counts.get(tuple(out_dtypes[n]), 0) + 1
        best = max(counts.values())
        ref_name = next(n for n in ok if counts[tuple(out_dtypes[n])] == best)
    want = out_dtypes[ref_name]
    for n in ok:
        got = out_dtypes[n]
        if n == ref_name or got == want:
            continue
        if len(got) != len(want):
            continue  # a different number of outputs fails the reference comparison itself
        i = next(k for k, (g, w) in enumerate(zip(got, want)) if g != w)
        results[n].status = "correctness_failed"
        results[n].error = (
            f"output {i} is {got[i]} but {ref_name}'s is {want[i]}: variants must return the same dtypes "
            "(the reference runs in float64, so a wider output passes its check while doing different work)"
        )


def _shape_of(case: Case, backend: Backend, ins) -> Any:
    if case.benchmark.shape is not None:
        return case.value(case.benchmark.shape)
    shapes = [list(backend.array_shape(x)) for x in ins if backend.is_array(x)]
    return shapes[0] if len(shapes) == 1 else shapes
