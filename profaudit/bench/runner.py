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
   changes global precision flags (TF32, reduced-precision reductions) is refused. Then
   `repeat_calls` more calls on the very same inputs must give bit-identical outputs (or agree
   within the variant's declared `nondeterministic=(rtol, atol)`): a result that changes between
   identical calls is racy or wrong on some calls.
3. Warm-up: timed calls, logged as `phase=warmup`, until each variant is steady (the median of
   its last window within max(5 %, 3 noise SE) of the window before), at least
   `min_warmup_calls` calls and `min_warmup_s` have passed; or `max_warmup_s` ran out
   (recorded: `warmup_steady: false`). The minimum number of calls wins over the time budget,
   up to `hard_time_s`; a run cut there records `stopped_short: true`. A warm-up that settled at a slow plateau shows as a head
   in the measured samples; the audit's own detector (FAIRNESS P1) finds it during measurement,
   and when it is a clear warm-up (a leading run above 1.5x the steady median, in all at most
   half of the variant's measured calls) those calls are relabelled warm-up and measuring
   continues (`warmup_extended`). Anything else (drift, bimodality) stays for the audit to see.
4. Measurement: rounds that run every variant once, in a fresh random order each round
   (FAIRNESS P4; seeded per run and case), grouped in blocks of about `block_target_s` (on
   CUDA each block runs behind a blocking kernel: profaudit.bench.backend_torch). When a
   variant takes under `batch_below_ns` per call and the cache is not flushed per call, every
   variant of the case is timed in batches of the same number of back-to-back calls (about
   `batch_target_ns` of the fastest; `calls_per_sample` records it, samples stay per call).
   Telemetry (NVML clocks, temperature, power, throttle reasons) is read in a background
   thread while each block runs (profaudit.bench.sampler), optionally after a thermal
   cool-down. It stops when every variant has `min_samples` samples, `min_time_s`
   has passed and the median's relative standard error is under `noise_target` for every
   variant; or at `max_samples`; or at `max_time_s` once `min_samples` are in (minimums win
   over the budget up to `hard_time_s`). The standard error is not estimated from fewer than
   MIN_SE_SAMPLES samples. Each variant's times right after another variant's call are tested
   against those after its own call or first in a block (Mann-Whitney): a significant order
   effect (a neighbour that changes its time) is recorded.
   Spot checks: `spot_checks` rounds, at random places among the blocks (a seeded stream the
   code under test cannot see), are timed calls like the others but checked: each variant runs
   once, as a control, on the values the timed calls used, in the untouched buffers (a write,
   even of the same values, would reset a cache keyed on the buffer's write count), then once
   on newly drawn values (written in place), each after the same host work; the outputs are poisoned
   with finite random values (a kernel that works only when its output holds NaN, or returns
   a stale result, fails), every output is verified and the inputs compared with what was
   installed. A variant whose calls on new values take over 3x its controls (in 3/4 of the
   pairs over 2x, the fastest over 2x) is fast only on values it has seen (memoised) and fails
   when a second round of as many pairs, run at once on values drawn afresh, shows it again
   (a burst of load that hit the first round's calls on new values does not return on cue).
   The control's host work copies the fresh call's (arrays made and held, the same bytes
   written, into scratch buffers instead of the inputs). Caught variants leave the rounds.
5. Correctness after timing: the inputs must still hold what was drawn; the first input set is
   refilled *in place* with new random values (same buffers), the reference recomputed, and
   every variant checked again (NaN-poisoned): a kernel that returns a cached or stale result
   fails here (FAIRNESS P8).
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
from profaudit.bench.sampler import BlockSampler, cool_down
from profaudit.bench.spec import Case, Variant, accepts_params
from profaudit.errors import UsageError, first_line

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
    # sabotage checks (see the module docstring): timed iterations poisoned and verified on fresh
    # inputs (2 timed calls per variant per spot check, on top of max_samples), and repeat calls
    # on identical inputs before timing
    spot_checks: int = 8
    repeat_calls: int = 2
    # minimums (min_warmup_calls, min_samples) win over the time budgets up to this limit per
    # phase; past it the run stops short and records it (stopped_short)
    hard_time_s: float = 120.0
    randomise_order: bool = True
    telemetry_interval_s: float = 0.005
    # thermal cool-down: before each measured block, wait (at most cooldown_max_s) until the GPU
    # reads under cooldown_c degrees; None: never
    cooldown_c: float | None = None
    cooldown_max_s: float = 30.0
    # tiny variants (warm-up median under batch_below_ns; hot or rotating caches, device timers)
    # are timed in batches of back-to-back calls lasting about batch_target_ns; 0: never
    batch_below_ns: float = 20_000.0
    batch_target_ns: float = 200_000.0
    max_batch: int = 1000

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
        if self.spot_checks < 1 or self.repeat_calls < 1:
            raise UsageError(f"spot_checks and repeat_calls must be at least 1 (got {self.spot_checks}, {self.repeat_calls}): they are what catches a kernel that is right only when checked")
        if self.min_warmup_calls < 0 or not self.hard_time_s > 0:
            raise UsageError("min_warmup_calls must be >= 0 and hard_time_s positive")
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


# below this many samples the MAD-based standard error is not reported: 3 samples spread 3x can
# have a MAD near zero and "0.19 %" would be a number, not a measurement
MIN_SE_SAMPLES = 10


def rel_se_median(x: Sequence[float]) -> float:
    """Relative standard error of the median, from the MAD (robust to a few outliers); inf for
    fewer than MIN_SE_SAMPLES samples (too few to estimate it)."""
    a = np.asarray(x, dtype=np.float64)
    if a.size < MIN_SE_SAMPLES:
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
    msg = first_line(exc)
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
        return backend.bind(v.fn, args, kw, v.name, p, v.model_ns, s, compile_mode=v.compile_mode, cuda_graphs=v.cuda_graphs)

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
        # The outputs copied as the call returned, before the harness's own device-wide sync:
        # reading them waits for the stream the timer measures (a CUDA tensor's copy, a JAX
        # array's block), nothing else. Work left running after the return (a worker thread
        # on the CPU, a side stream nobody joined) is not in any timed call, and shows here as
        # an output that is wrong now and right after the sync.
        raw = out_buffer(v.name, s) if b.output is not None else ret
        at_return = None if raw is None else [np.array(a, copy=True) for a in host_outputs(backend, raw)]
        backend.sync()
        if ret is None and b.output is None:
            return check.CheckResult(False, "the variant returned None: return the output (or declare output= and write into the buffer it gets)"), []
        got = produced(v, s, ret)
        rtol, atol = tolerances[v.name]
        res = check.compare(got, refs[s], rtol, atol)
        if res.ok and at_return is not None and not check.same_values(at_return, got):
            early = check.compare(at_return, refs[s], rtol, atol)
            if not early.ok:
                res = check.CheckResult(False, f"its output was not complete when the call returned, only after the harness synchronised ({early.message}): work still running after the return escapes the timer", early.max_abs_err, early.max_rel_err, early.mismatched, early.elements, early.nan_outputs)
        return res, got

    tolerances = {name: tolerance(case, v, dtype, backend) for name, v in variants.items()}
    for name in variants:
        why = check.degenerate(refs[0], *tolerances[name])
        if why:
            raise CaseError(why)

    def restore_drawn() -> None:
        # the variants share the inputs: after one wrote into them, the others get back the values drawn
        for k in checked_sets:
            again = make_inputs(k)
            if not all(backend.copy_into(dst, src) for dst, src in zip(sets[k], again) if backend.is_array(dst)):
                sets[k] = again

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
            orig0 = _host_copy(backend, sets[0])
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
                    restore_drawn()
                    break
                r.correctness[f"before_set{s}"] = res.as_dict()
                if not res.ok:
                    r.status, r.error = "correctness_failed", f"before timing, input set {s}: {res.message}"
                    break
                if s == 0:
                    # host copies: on the host backends `got` aliases the output buffer the next
                    # (poisoned) call overwrites
                    got0 = [np.array(g, copy=True) for g in got]
            if r.status == "ok" and opts.repeat_calls > 0:

                def again(v=v, name=name):
                    if b.mutates_inputs:
                        # "identical inputs": the values of the first checked call, put back
                        new = _from_host(backend, sets[0], orig0)
                        if not all(backend.copy_into(dst, src) for dst, src in zip(sets[0], new) if backend.is_array(dst)):
                            raise CaseError("cannot restore the inputs of a mutates_inputs=True benchmark in place for the repeat-call check")
                    return checked_call(v, 0, bound[name][0])

                calls += _repeat_check(v, r, got0, again, opts.repeat_calls)
                if b.mutates_inputs:
                    restore_drawn()
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
    declared = case.value(case.benchmark.dtype) or case.params.get("dtype")
    if b.output is None:  # an output= buffer's dtype is the benchmark's own choice, not the variant's
        _check_output_precision(results, out_dtypes, dtype if declared is not None else None)
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
    device_name = cres.info.get("device_name")
    # one seeded stream per (run, case) for the round order and for when spot checks happen:
    # reproducible, and unknowable to the code under test
    order_rng = np.random.default_rng(_seed(opts.seed, case.id, run_idx, "order"))
    spot_rng = np.random.default_rng(_seed(opts.seed, case.id, run_idx, "spot"))
    hard_ns = max(opts.hard_time_s, opts.max_time_s, opts.max_warmup_s) * 1e9
    # the inputs' values as drawn (or last refilled): a variant that writes into them is found
    snapshots = {s: _host_copy(backend, sets[s]) for s in range(n_sets)}

    batch: dict[str, int] = {}  # back-to-back calls per sample of a tiny variant (step 4)

    def per_sample(n: str, c: BoundCall) -> BoundCall:
        """`c` as one timed sample of `n`: its batch of back-to-back calls when `n` is batched."""
        return _batched(c, batch[n]) if batch.get(n, 1) > 1 else c

    def next_call(n: str) -> BoundCall:
        c = bound[n][nxt[n] % n_sets]
        nxt[n] += 1
        return per_sample(n, c)

    def order(rnd: int, names: list[str]) -> list[str]:
        if not opts.interleave or len(names) < 2:
            return names
        if opts.randomise_order:
            # a fresh random order every round: a variant's neighbour (an allocation-heavy call
            # before it, a cache it inherits) is not always the same one (order effects below)
            return [names[i] for i in order_rng.permutation(len(names))]
        k = rnd % len(names)
        return names[k:] + names[:k]

    position: dict[str, list[int]] = {n: [] for n in live}

    def record(names: list[str], starts, durs, phase: str, sample: dict | None, reps: list[int] | None = None) -> None:
        if not origin and starts:
            origin.append(starts[0])
        for i, (n, st, d) in enumerate(zip(names, starts, durs)):
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
                # the timer's own word at each block: a device timer that had to fall back to
                # the host clock says so from then on (profaudit.bench.jax_timer)
                "time_source": timer.time_source,
                "device_name": device_name,
                "calls_per_sample": reps[i] if reps else 1,
            }
            if sample:
                row.update({k: v for k, v in sample.items() if v is not None})
            results[n].rows.append(row)
            iteration[n] += 1

    thermal = {"waits": 0, "seconds": 0.0}
    tele_blocks = {"blocks": 0, "samples": 0, "errors": None}

    def run_block(names: list[str], phase: str, calls: list[BoundCall] | None = None) -> list:
        """Time one block of calls and record it; a failing call ends the case with one line.
        Telemetry is read in a background thread while the block runs (profaudit.bench.sampler)."""
        if phase == "measure" and tele is not None and opts.cooldown_c is not None:
            waited = cool_down(tele.sample, opts.cooldown_c, opts.cooldown_max_s)
            if waited > 0:
                thermal["waits"] += 1
                thermal["seconds"] += waited
        todo = calls if calls is not None else [next_call(n) for n in names]
        sampler = BlockSampler(tele.sample, opts.telemetry_interval_s) if tele is not None else None
        try:
            if sampler is not None:
                with sampler:
                    starts, durs = timer.run(todo, flush)
            else:
                starts, durs = timer.run(todo, flush)
        except UsageError:
            raise
        except _USER_ERRORS as exc:
            what = "warm-up" if phase == "warmup" else "measurement"
            who = getattr(exc, "profaudit_variant", None)
            if who in names:
                raise _VariantFailed(who, f"a call failed during {what}: {_exc_text(exc)}") from None
            raise CaseError(f"a call failed during {what}: {_exc_text(exc)}") from None
        # a batch's time is that of its calls together: the sample is the time per call
        reps = [getattr(c, "repeat", 1) for c in todo]
        durs = [d / r for d, r in zip(durs, reps)]
        sample = None
        if sampler is not None:
            sample = sampler.summary()
            tele_blocks["blocks"] += 1
            tele_blocks["samples"] += sampler.count
            tele_blocks["errors"] = tele_blocks["errors"] or sampler.error
        record(names, starts, durs, phase, sample, reps)
        return durs

    def inputs_changed(s: int) -> bool:
        return not b.mutates_inputs and not all(np.array_equal(x, y, equal_nan=True) for x, y in zip(snapshots[s], _host_copy(backend, sets[s])))

    def install(s: int, new: Sequence[Any]) -> None:
        """`new`'s values into input set s (same buffers where the backend can; else new
        arrays, and every variant's call on that set is bound again)."""
        if not all(backend.copy_into(dst, src) for dst, src in zip(sets[s], new) if backend.is_array(dst)):
            sets[s] = tuple(new)
            for n2 in bound:
                bound[n2][s] = bind(variants[n2], s)
        snapshots[s] = _host_copy(backend, sets[s])
        backend.sync()

    def refill(s: int, tag: str) -> None:
        install(s, make_inputs(s, tag))

    def restore(s: int, host: list[np.ndarray]) -> None:
        install(s, _from_host(backend, sets[s], host))

    def inputs_intact(suspects: list[str], when: str) -> None:
        """Whether the inputs still hold their values (a refill would hide a write into them):
        with one variant running it is named; with several the check after each spot-checked
        call names the one that does it again."""
        changed = [s for s in range(n_sets) if inputs_changed(s)]
        if not changed:
            return
        cres.info.setdefault("inputs_changed_during_timing", []).append({"input_sets": changed, "found": when})
        alive = [n for n in suspects if results[n].status == "ok"]
        if len(alive) == 1:
            n = alive[0]
            results[n].status = "correctness_failed"
            results[n].error = f"during timing ({when}): input set {changed[0]} no longer holds the values drawn for it: the variant wrote into its inputs after the checks before timing (declare mutates_inputs=True if that is the point)"
            caught.add(n)

    # warm-up
    groups = [list(live)] if opts.interleave else [[n] for n in live]
    failed: set[str] = set()
    caught: set[str] = set()  # failed a check during timing (correctness_failed, log kept)

    def drop(exc: _VariantFailed, group: list[str], *series: dict) -> None:
        # the failing variant gets the error; the others keep their place in the rounds
        results[exc.variant].status, results[exc.variant].error = "error", str(exc)
        failed.add(exc.variant)
        group.remove(exc.variant)
        for d in series:
            d.pop(exc.variant, None)

    warm_info: dict[str, dict] = {}
    meas_info: dict[str, dict] = {}
    spot_info: dict[str, dict] = {n: {"checks": 0, "iterations": [], "durations_ns": [], "control_durations_ns": []} for n in live}
    confirm_info: dict[str, dict] = {}  # the second round of a variant whose spot checks looked memoised
    scratch: dict[int, tuple] = {}  # per input set: the buffers a control writes instead of the inputs
    spots_done = 0
    measured: dict[str, list[float]] = {}
    for group in groups:
        # every group (each variant, when not interleaved) gets its own spot checks
        spots_done = 0
        warm = {n: [] for n in group}
        t0 = clock.now_ns()
        rnd = 0
        wall0 = time.perf_counter()
        warm_stop = None
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
            wall = time.perf_counter() - wall0
            steady = all(is_steady(warm[n]) for n in group)
            # the minimum number of calls wins over the time budget (up to the hard limit)
            enough = rnd >= opts.min_warmup_calls
            if enough and steady and spent >= opts.min_warmup_s:
                warm_stop = "steady"
                break
            if enough and (spent >= opts.max_warmup_s or wall >= max(opts.max_warmup_s, 1.0) * 4):
                warm_stop = "time_budget"
                break
            if spent * 1e9 >= hard_ns or wall * 1e9 >= hard_ns:
                warm_stop = "hard_time_limit"
                break
        if not group:
            continue
        for n in group:
            warm_info[n] = {
                "calls": len(warm[n]),
                "min_calls": opts.min_warmup_calls,
                "time_s": round((clock.now_ns() - t0) / 1e9, 6),
                "steady": is_steady(warm[n]),
                "stop_reason": warm_stop,
                "median_ns": _median(warm[n][-max(3, len(warm[n]) // 3) :]),
            }

        # measurement; a variant of a few microseconds is timed in batches of back-to-back calls
        # (nvbench's batch measurement): per-call events would be as coarse as the kernel, and
        # a flush between calls is impossible, so only without the cold-cache flush
        if cache_mode != "cold" and getattr(timer, "supports_batches", False) and opts.batch_below_ns > 0:
            meds = [warm_info[n]["median_ns"] for n in group if warm_info[n]["median_ns"] > 0]
            if meds and min(meds) < opts.batch_below_ns:
                # one batch size for every variant of the case: variants timed differently
                # (calls per sample) are not comparable (the audit's PA303); sized on the
                # fastest, and no batch of the slowest over 50x the target
                size = math.ceil(opts.batch_target_ns / min(meds))
                size = min(size, max(2, int(50 * opts.batch_target_ns // max(meds))), opts.max_batch)
                for n in group:
                    batch[n] = int(max(2, size))
        per_round = sum(warm_info[n]["median_ns"] * batch.get(n, 1) for n in group)
        rounds_per_block = int(min(256, max(1, opts.block_target_s * 1e9 // max(per_round, 1.0))))
        samples = {n: [] for n in group}
        extended = {n: 0 for n in group}
        t0 = clock.now_ns()
        wall0 = time.perf_counter()
        reason = None
        noise: dict[str, float] = {}
        cooled0 = thermal["seconds"]

        def summary(n: str, why: str | None) -> dict:
            return {
                "samples": len(samples[n]),
                "min_samples": opts.min_samples,
                "time_s": round((clock.now_ns() - t0) / 1e9, 6),
                "stop_reason": why,
                "rel_se_median": noise.get(n, rel_se_median(samples[n])),
                "median_ns": _median(samples[n]),
                "rounds_per_block": rounds_per_block,
            }

        def retire(n: str) -> None:
            """A variant caught by a check leaves the rounds; its samples so far stay in its log."""
            meas_info[n] = summary(n, "variant_failed")
            ext = extended.pop(n)
            warm_info[n]["warmup_extended"] = ext
            warm_info[n]["calls"] += ext
            measured[n] = samples.pop(n)
            noise.pop(n, None)
            group.remove(n)

        def checked_timed_call(n: str, s: int, ref: list[np.ndarray], what: str, into: dict[str, dict]) -> bool:
            """Time one call of `n` on input set s like any other, with its output poisoned
            with finite random values first, then verify its output against `ref` and its
            inputs against what they held; a variant that fails leaves the rounds. Its time
            goes into `into[n]` (the spot checks' record, or the confirming round's). Returns
            whether it passed."""
            v = variants[n]
            if b.output is not None:
                for o in check.leaves(out_buffer(n, s)):
                    _poison_finite(backend, o, spot_rng)
            backend.sync()
            got: list = []
            base = per_sample(n, bound[n][s])
            call = BoundCall(lambda base=base: got.append(base()), n, base.params, base.model_ns, s)
            call.repeat = base.repeat
            it = iteration[n]
            durs = run_block([n], "measure", [call])
            samples[n].append(durs[0])
            position[n].append(-1)  # a checked call: kept out of the order-effect test
            info = into[n]
            if what == "fresh":
                info["checks"] += 1
                info["iterations"].append(it)
                info["durations_ns"].append(float(durs[0]))
            else:
                info["control_durations_ns"].append(float(durs[0]))
            ret = got[0] if got else None
            if ret is None and b.output is None:
                res = check.CheckResult(False, "the variant returned None")
            else:
                res = check.compare(produced(v, s, ret), ref, *tolerances[n])
            why = None
            if inputs_changed(s):
                why = f"during timing (spot check at timed iteration {it}): it wrote into its inputs after the checks before timing; every later timed call saw different data"
                refill(s, f"spot{spots_done}-{n}-restore")
            elif not res.ok:
                inputs = "fresh inputs" if what == "fresh" else "the values the timed calls used"
                why = f"during timing (spot check at timed iteration {it}, {inputs}, output poisoned): {res.message}"
            if why:
                results[n].status, results[n].error = "correctness_failed", why
                results[n].correctness["during_timing"] = res.as_dict() | {"iteration": it}
                caught.add(n)
                retire(n)
            return why is None

        def spot_round(rnd: int, who: list[str] | None = None, into: dict[str, dict] | None = None) -> int:
            """One round of checked timed calls (module docstring, step 4) of `who` (default:
            every variant of the group), timed into `into` (default: the spot checks' record).
            Each variant gets two: a control on the values the timed calls have been using, in
            their untouched buffers, then one on newly drawn values; each right after an untimed
            call of the variant, with the same host work around it (see `untimed`): a variant
            fast only on values or buffers it has seen shows as the difference between the two,
            while a slowdown from the host work itself (a GPU or thread pool idling, memory just
            allocated) hits both alike."""
            nonlocal spots_done
            into = spot_info if into is None else into
            inputs_intact(group, f"before spot check {spots_done + 1}")
            for n in [n for n in group if n in caught]:
                retire(n)
            members = [n for n in group if who is None or n in who]
            if not members:
                return rnd
            names = order(rnd, members)
            s = int(spot_rng.integers(n_sets))
            seen = snapshots[s]  # what the timed calls ran on
            # Every control runs before any fresh values go in, on the buffers exactly as the
            # timed calls left them: writing even the same values back bumps a tensor's write
            # counter (torch's `_version`, a dirty bit), so a cache keyed on the buffer and its
            # write count would miss on a rewritten control as on a fresh call and the two would
            # time alike. The control gets the same host work without the write; the variants'
            # order is random per round.
            if inputs_changed(s):
                restore(s, seen)  # a variant wrote into them (recorded above): the controls need what was drawn
            if s not in scratch:
                # buffers shaped like input set s that no variant sees: the control's stand-in
                # for the write of new values into the inputs (same bytes moved, same cache traffic)
                # (copies: a host backend's from_numpy may hand back the very array it got)
                scratch[s] = _from_host(backend, sets[s], [np.array(h, copy=True) for h in seen])

            def untimed(n: str) -> None:
                # Each checked call comes right after an untimed call of the same variant on the
                # buffers as they are (the state a timed call meets: whatever ran last, the
                # previous round's restore when the rounds come back to back after the stopping
                # rule), with the same small host work between the two for the control and the
                # fresh call; the heavy host work (values drawn or made, the reference) comes
                # before. A thread pool that fell asleep during host work, or an allocator that
                # gave memory back, then costs both alike: without this an honest kernel's fresh
                # calls read as many times slower than its controls on a loaded machine. A write
                # into the inputs this call makes is the variant's, and its checked call says so.
                # A benchmark that declares mutates_inputs gets none: its calls change the very
                # values the checked call and its reference are about to use.
                if b.mutates_inputs:
                    return
                try:
                    bound[n][s]()
                except _USER_ERRORS:  # the checked call makes the same call through run_block, which reports it
                    pass

            for n in names:
                if n in group:
                    # The control's host work is the fresh call's, step for step, but for the
                    # values: arrays made in new host memory (as drawing new values makes them)
                    # holding the buffers' values as they are (what the control runs on: a
                    # benchmark that declares mutates_inputs leaves the last timed call's writes
                    # there), held until the call returns (as the fresh call holds its new
                    # values), the reference computed from them, the untimed call, then the same
                    # bytes written (into the scratch buffers, not the inputs) and the inputs
                    # copied to the host. Before, only the fresh call met memory just allocated
                    # and still held: an honest kernel that pays for that (first touch, an
                    # allocator that has to grow) read as memoised (tests/test_bench_memo_symmetry.py
                    # models it).
                    held = _from_host(backend, sets[s], _host_copy(backend, sets[s]))
                    ref = ref_of(held)
                    untimed(n)
                    for dst, src in zip(scratch[s], held):
                        if backend.is_array(dst):
                            backend.copy_into(dst, src)
                    _host_copy(backend, sets[s])
                    backend.sync()
                    checked_timed_call(n, s, ref, "control", into)
                    del held
            for n in names:
                if n in group:
                    new = make_inputs(s, f"spot{spots_done}-{n}")
                    ref = ref_of(new)
                    untimed(n)
                    install(s, new)
                    checked_timed_call(n, s, ref, "fresh", into)
                    del new
            restore(s, seen)
            spots_done += 1
            return rnd + 1

        def stop_reason(wall: float) -> str | None:
            n_min = min(len(v) for v in samples.values())
            spent = (clock.now_ns() - t0) / 1e9
            if n_min >= opts.max_samples:
                return "max_samples"
            # the minimum number of samples wins over the time budget (up to the hard limit)
            if n_min >= opts.min_samples and spent >= opts.min_time_s and all(x <= opts.noise_target for x in noise.values()):
                return "noise_target"
            if n_min >= opts.min_samples and (spent >= opts.max_time_s or wall >= opts.max_time_s * 4):
                return "time_budget"
            if spent * 1e9 >= hard_ns or wall * 1e9 >= hard_ns:
                return "hard_time_limit"
            return None

        while reason is None and group:
            if spots_done < opts.spot_checks and spot_rng.random() < 0.3:
                rnd = spot_round(rnd)
                if not group:
                    break
            names_all: list[str] = []
            pos_all: list[int] = []
            left = opts.max_samples - min(len(v) for v in samples.values())
            for _ in range(max(1, min(rounds_per_block, left))):
                names_r = order(rnd, group)
                for n in names_r:
                    # 1: right after another variant's call; 0: first in the block or after its own
                    pos_all.append(int(bool(names_all) and names_all[-1] != n))
                    names_all.append(n)
                rnd += 1
            try:
                durs = run_block(names_all, "measure")
            except _VariantFailed as exc:
                drop(exc, group, samples, extended, noise)
                continue
            for n, d, k in zip(names_all, durs, pos_all):
                samples[n].append(d)
                position[n].append(k)
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
                    position[n] = position[n][head:]
                    extended[n] += head
                    moved = 0
                    for row in results[n].rows:
                        if row["phase"] == "measure" and moved < head:
                            row["phase"] = "warmup"
                            moved += 1
            noise = {n: rel_se_median(samples[n]) for n in group}
            # a thermal cool-down is a pause, not measuring time
            reason = stop_reason(time.perf_counter() - wall0 - thermal["seconds"] + cooled0)
        # every spot check happens, even when the stopping rule came first: the checks are
        # timed calls like the others (their samples count)
        while group and spots_done < opts.spot_checks:
            rnd = spot_round(rnd)
        # A variant whose spot checks look memoised is checked again, at once, by a second round
        # of as many pairs on values drawn afresh: the verdict needs both. A memoised result is
        # fast on seen values every time; a burst of load on a busy machine that happened to
        # land on the calls on new values (the CI run that flagged an honest CPU matmul at 23.6x)
        # does not come back on cue. Every variant of the group takes that round, not the
        # suspects alone: its calls are timed calls whose samples count, like the first round's,
        # so a falsely suspected honest variant must not end with more (and slower) samples than
        # the variants it is compared with.
        suspects = [n for n in group if _memo_suspect(spot_info[n]["durations_ns"], spot_info[n]["control_durations_ns"])]
        if suspects:
            for n in group:
                confirm_info[n] = {"checks": 0, "iterations": [], "durations_ns": [], "control_durations_ns": []}
        for _ in range(opts.spot_checks if suspects else 0):
            if not any(n in group for n in suspects):
                break
            rnd = spot_round(rnd, None, confirm_info)
        if group:
            noise = {n: rel_se_median(samples[n]) for n in group}
        for n in group:
            meas_info[n] = summary(n, reason)
            warm_info[n]["warmup_extended"] = extended[n]
            warm_info[n]["calls"] += extended[n]
            measured[n] = samples[n]

    # a variant fast only on repeated input values: its spot-checked calls on new values take
    # several times as long as their controls on the values it has seen
    for n in live:
        if n in failed or n in caught:
            continue
        why = _memo_suspect(spot_info[n]["durations_ns"], spot_info[n]["control_durations_ns"])
        again = _memo_suspect(confirm_info[n]["durations_ns"], confirm_info[n]["control_durations_ns"]) if why and n in confirm_info else None
        if why and again:
            results[n].status, results[n].error = "correctness_failed", f"during timing: {why}; a second round of spot checks on values drawn afresh confirmed it ({_memo_evidence(confirm_info[n]['durations_ns'], confirm_info[n]['control_durations_ns'])})"
            caught.add(n)

    live = [n for n in live if n not in failed]
    if not live:
        return

    # ---------------------------------------------------------------- correctness after timing
    # inputs first: a variant that wrote into them during timing (after the checks before it)
    inputs_intact([n for n in live if n not in caught], "after timing")
    fresh = make_inputs(0, "recheck")
    in_place = True
    for dst, src in zip(sets[0], fresh):
        if backend.is_array(dst):
            in_place = backend.copy_into(dst, src) and in_place
    if not in_place:
        sets[0] = fresh
    snapshots[0] = _host_copy(backend, sets[0])
    ref_after = ref_of(sets[0])
    if check.same_values(ref_after, refs[0]):
        raise CaseError("the reference output did not change when the inputs got new values: the check cannot detect stale results")
    refs[0] = ref_after
    drawn0 = snapshots[0]
    for n in live:
        v = variants[n]
        r = results[n]
        if b.mutates_inputs and in_place:
            restore(0, drawn0)  # as declared, the variant before it wrote into them
        try:
            call = bound[n][0] if in_place else bind(v, 0)
            res, _ = checked_call(v, 0, call)
        except _USER_ERRORS as exc:
            res = check.CheckResult(False, f"the call failed: {_exc_text(exc)}")
        r.correctness["after_timing"] = res.as_dict()
        r.correctness["after_inputs_refilled_in_place"] = in_place
        if not res.ok and n not in caught:
            r.status, r.error = "correctness_failed", f"after timing (inputs refilled{' in place' if in_place else ''}): {res.message}"
        elif res.ok and inputs_changed(0) and n not in caught:
            # one call on fresh inputs, then the inputs compared: names the variant that writes
            # into them when several ran
            r.status, r.error = "correctness_failed", "after timing: the call wrote into its inputs (declare mutates_inputs=True if that is the point)"
            caught.add(n)
            refill(0, f"recheck-{n}")
            refs[0] = ref_of(sets[0])
        if n in caught:
            res = check.CheckResult(False, r.error or "")
        r.correctness["checked"] = "both" if res.ok and r.status == "ok" else "before_timing"
        r.correctness["spot_checks"] = spot_info[n]["checks"]
        r.correctness["spot_check_iterations"] = spot_info[n]["iterations"]
        # the memoisation test's evidence: checked calls on new values, controls on the same values
        r.correctness["spot_check_durations_ns"] = spot_info[n]["durations_ns"]
        r.correctness["control_durations_ns"] = spot_info[n]["control_durations_ns"]
        if n in confirm_info:
            # the confirming round's evidence, run only when the spot checks looked memoised
            r.correctness["confirm_durations_ns"] = confirm_info[n]["durations_ns"]
            r.correctness["confirm_control_durations_ns"] = confirm_info[n]["control_durations_ns"]
    order_effects = {n: _order_effect(measured.get(n, []), position.get(n, [])) for n in live} if opts.interleave and len(live) > 1 else {}

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
        time_source=timer.time_source,
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
        r.summary = {"warmup": warm_info.get(n), "measure": meas_info.get(n), "order_effect": order_effects.get(n)}
        w, mi = warm_info.get(n) or {}, meas_info.get(n) or {}
        n_samples = int(mi.get("samples") or 0)
        se = mi.get("rel_se_median")
        se_ok = se is not None and math.isfinite(se) and n_samples >= MIN_SE_SAMPLES
        minimums = int(w.get("calls") or 0) >= opts.min_warmup_calls and n_samples >= opts.min_samples
        facts = {
            # what the audit reads to tell a measured steady state from a run that stopped short
            "warmup_steady": bool(w.get("steady")),
            "warmup_calls": int(w.get("calls") or 0),
            "min_warmup_calls": opts.min_warmup_calls,
            "samples": n_samples,
            "min_samples": opts.min_samples,
            "stop_reason": mi.get("stop_reason"),
            "noise_target": opts.noise_target,
            "noise_target_met": bool(se_ok and se <= opts.noise_target),
            "rel_se_median": float(se) if se_ok else None,
            "rel_se_note": None if se_ok else f"not reported: {n_samples} samples (fewer than {MIN_SE_SAMPLES}) are too few to estimate the standard error of the median",
            "minimums_met": minimums,
            "stopped_short": not minimums,
            "timing_method": _method(getattr(bound[n][0], "method", None) or getattr(timer, "method", "per_call"), batch.get(n, 1)),
            "spot_checks": spot_info[n]["checks"],
            "determinism_checked": bool((r.correctness.get("determinism") or {}).get("repeat_calls")),
            "nondeterministic_tolerance": list(v.nondeterministic) if v.nondeterministic is not None else None,
            "order_randomised": bool(opts.interleave and opts.randomise_order and len(live) > 1),
            "order_effect": order_effects.get(n),
            "timer_fallback": getattr(timer, "fallback_reason", None),
            "telemetry_sampling": f"background thread every {opts.telemetry_interval_s * 1e3:g} ms during each timed block ({tele_blocks['samples']} readings over {tele_blocks['blocks']} blocks)" if tele is not None else None,
            "thermal_cooldown": {"below_c": opts.cooldown_c, "waits": thermal["waits"], "seconds": round(thermal["seconds"], 3)} if opts.cooldown_c is not None else None,
        }
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
            "calls_per_sample": batch.get(n, 1),
            "synchronized": True,
            "time_source": timer.time_source,
            **{k: v2 for k, v2 in before.items()},
            **{k: v2 for k, v2 in facts.items() if v2 is not None},
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


# Bits of the floating types a case may declare, to tell a narrower output from the declared one.
_FLOAT_BITS = {"float64": 64, "float32": 32, "float16": 16, "bfloat16": 16}


def _check_output_precision(results: dict[str, VariantResult], out_dtypes: dict[str, list[str]], declared: str | None) -> None:
    """Fail a variant that returns a floating output narrower than the dtype the benchmark
    declares (`dtype=` or a `dtype` parameter): a float32 case answered in float16 computed in
    half precision, whatever tolerance let its values through, and the log would record float32
    for it. Checked per variant, so a lone variant (no other to compare with) is held to it too;
    integer and boolean outputs (indices, masks) are not precisions of the computation."""
    want = _FLOAT_BITS.get(declared or "")
    if want is None:
        return
    for n, got in out_dtypes.items():
        if results[n].status != "ok":
            continue
        narrow = [(i, d) for i, d in enumerate(got) if _FLOAT_BITS.get(d, want) < want]
        if narrow:
            i, d = narrow[0]
            results[n].status = "correctness_failed"
            results[n].error = f"output {i} is {d}, narrower than the {declared} the benchmark declares: it computed in a lower precision than the case asks for"


def _repeat_check(v: Variant, r: VariantResult, first: list[np.ndarray], call, repeats: int) -> int:
    """Call the variant `repeats` more times on the very inputs of its first checked call and
    compare: bit for bit, or within its declared `nondeterministic=` tolerance. A result that
    changes between identical calls is racy, or wrong on some calls (which one check before and
    one after timing catch only by luck). Returns the calls made; fails `r` on a difference."""
    nd = v.nondeterministic
    made = 0
    for k in range(repeats):
        res, again = call()
        made += 1
        if not res.ok:
            r.status, r.error = "correctness_failed", f"before timing, repeat call {k + 1} on identical inputs: {res.message}"
            break
        if nd is None:
            same = check.same_values(again, first)
            detail = "" if same else check.compare(again, first, 0.0, 0.0).message.replace("the reference", "the first call")
        else:
            cmp = check.compare(again, first, nd[0], nd[1])
            same, detail = cmp.ok, cmp.message.replace("the reference", "the first call")
        if not same:
            r.status = "correctness_failed"
            what = f"beyond its declared nondeterministic=({nd[0]:g}, {nd[1]:g})" if nd is not None else "(bit for bit)"
            r.error = (
                f"before timing, repeat call {k + 1} on identical inputs gave different outputs {what}: {detail}; "
                "a result that changes between identical calls is racy or wrong on some calls "
                "(declare Variant(nondeterministic=(rtol, atol)) if that is meant)"
            )
            break
    r.correctness["determinism"] = {"repeat_calls": made, "tolerance": list(nd) if nd is not None else "bit-exact", "ok": r.status == "ok"}
    return made


def _batched(c: BoundCall, n: int) -> BoundCall:
    """`n` back-to-back calls of `c` as one timed call (returns the last call's output)."""

    def many(c=c, n=n):
        out = None
        for _ in range(n):
            out = c()
        return out

    bc = BoundCall(many, c.variant, c.params, c.model_ns, c.input_set, method=c.method)
    bc.repeat = n
    return bc


def _method(method: str, batch: int) -> str:
    """The timing method recorded: a batch of back-to-back calls keeps what it runs behind."""
    if batch <= 1:
        return method
    return "back_to_back_batch_behind_blocking_kernel" if "blocking" in method else ("back_to_back_batch_of_graph_replays" if method == "cuda_graph" else "back_to_back_batch")


def _host_copy(backend: Backend, ins: Sequence[Any]) -> list[np.ndarray]:
    return [np.array(backend.to_numpy(a), copy=True) for a in ins if backend.is_array(a)]


def _from_host(backend: Backend, ins: Sequence[Any], host: Sequence[np.ndarray]) -> tuple:
    """`ins` with its arrays replaced by backend arrays holding `host`'s values (same dtypes)."""
    it = iter(host)
    return tuple(backend.from_numpy(np.asarray(next(it)), _dtype_of(backend, x)) if backend.is_array(x) else x for x in ins)


def _poison_finite(backend: Backend, out: Any, rng: np.random.Generator) -> None:
    """Fill an output buffer with finite random values: unlike NaN, nothing a kernel can test for
    to decide whether it is being checked (a kernel that skips work when its output holds no NaN
    leaves these, and fails)."""
    host = np.asarray(backend.to_numpy(out))
    if host.dtype.kind == "f" or host.dtype.kind == "V":
        junk = rng.standard_normal(host.shape) * 7.0 + 3.0
    elif host.dtype.kind == "b":
        junk = rng.random(host.shape) < 0.5
    else:
        junk = rng.integers(0, 100, size=host.shape)
    name = _dtype_of(backend, out)
    try:
        src = backend.from_numpy(np.asarray(junk), name)
    except UsageError:
        backend.poison(out)
        return
    if not backend.copy_into(out, src):
        backend.poison(out)


def _memo_suspect(fresh: Sequence[float], control: Sequence[float]) -> str | None:
    """Why the spot-checked calls on new input values look like a different, slower computation
    than the control calls just before them on the values the timed calls used, untouched (after
    the same host work), or None. A kernel that memoises its result on the input values or
    buffers passes every check (new values: it computes) and is fast whenever it is timed on
    what it has seen. Flagged when the fresh calls' median is over 3x the controls', at least 3/4
    of the pairs (a fresh call and its control) have the fresh call over 2x slower, and even the
    fastest fresh call took over 2x the controls' median. Load only ever adds time to a call: a
    memoising kernel computes on every new value, so its fastest fresh call is still a whole
    computation, while an honest one needs every one of its fresh calls slowed to reach that
    (one slow control on a busy machine does not hide a memo, a few slow fresh calls do not
    make one). The run's verdict also needs a second round to agree (`_run`)."""
    k = min(len(fresh), len(control))
    if k < 3:
        return None
    c, o = np.asarray(fresh[:k], dtype=np.float64), np.asarray(control[:k], dtype=np.float64)
    mc, mo = float(np.median(c)), float(np.median(o))
    slower = int(np.sum(c > 2 * o))
    if mo > 0 and mc > 3 * mo and 4 * slower >= 3 * k and float(c.min()) > 2 * mo:
        return (
            f"the {k} spot-checked calls on new input values took {mc / mo:.1f}x as long as the control calls "
            f"on the values the timed calls used ({slower} of {k} pairs over 2x): its speed comes from recognising inputs "
            "it has seen (a result memoised on input values or buffers), not from the computation"
        )
    return None


def _memo_evidence(fresh: Sequence[float], control: Sequence[float]) -> str:
    """The confirming round's numbers, as `_memo_suspect` judged them."""
    k = min(len(fresh), len(control))
    c, o = np.asarray(fresh[:k], dtype=np.float64), np.asarray(control[:k], dtype=np.float64)
    return f"{float(np.median(c)) / float(np.median(o)):.1f}x, {int(np.sum(c > 2 * o))} of {k} pairs over 2x"


def _order_effect(samples: Sequence[float], after_other: Sequence[int]) -> dict | None:
    """A variant's times right after another variant's call against those first in a block or
    right after its own call (the random order gives both), with a Mann-Whitney test:
    significant when p < 0.001 and the medians differ by over 5 %. None when either group has
    fewer than 10 samples."""
    x = np.asarray(samples, dtype=np.float64)
    pos = np.asarray(after_other[: len(x)])
    alone, other = x[pos == 0], x[pos == 1]
    if alone.size < 10 or other.size < 10:
        return None
    from scipy.stats import mannwhitneyu

    p = float(mannwhitneyu(alone, other, alternative="two-sided").pvalue)
    ma, mo = float(np.median(alone)), float(np.median(other))
    ratio = mo / ma if ma > 0 else math.inf
    return {
        "after_self_median_ns": ma,
        "after_other_median_ns": mo,
        "ratio": round(ratio, 4),
        "p_value": p,
        "after_self_samples": int(alone.size),
        "after_other_samples": int(other.size),
        "significant": bool(p < 1e-3 and abs(ratio - 1) > 0.05),
    }


def _shape_of(case: Case, backend: Backend, ins) -> Any:
    if case.benchmark.shape is not None:
        return case.value(case.benchmark.shape)
    shapes = [list(backend.array_shape(x)) for x in ins if backend.is_array(x)]
    return shapes[0] if len(shapes) == 1 else shapes
