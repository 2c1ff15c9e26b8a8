"""Declaring benchmarks: a kernel (one or more variants), how to make its inputs, a reference, a
parameter sweep, and the work it does (FLOPs, minimum bytes) as functions of the parameters.

    from profaudit import bench

    def inputs(p, gen):                     # fresh random inputs; gen draws from a seeded stream
        return gen.randn((p["n"], p["n"]), p["dtype"]), gen.randn((p["n"], p["n"]), p["dtype"])

    MATMUL = bench.Benchmark(
        "matmul",
        backend="torch",
        inputs=inputs,
        reference=lambda a, b: a @ b,        # gets fp64 copies of the inputs where possible
        variants={"torch": torch.matmul, "naive": naive_matmul},
        params=bench.grid(n=[256, 512], dtype=["float32"]),
        flops=lambda p: 2 * p["n"] ** 3,
        bytes=lambda p: 3 * p["n"] ** 2 * 4,
        op="matmul",                         # optional: the audit recomputes FLOPs/bytes from the
        baseline="naive",                    # recorded input shapes and checks the two above
    )

`profaudit bench run FILE.py` imports the file and runs every `Benchmark` bound at module level.
A variant is called `fn(*inputs)` and returns its output, or, when the benchmark declares
`output=`, `fn(*inputs, out)` and writes into `out` (which the harness poisons with NaN before
each checked call). A variant or reference that takes a `params` keyword receives the case's
parameters. A variant that writes into its inputs is refused (each timed call would see different
data) unless the benchmark declares `mutates_inputs=True`.

`gen` (the second argument of `inputs`) draws on the host and converts to the backend:
`gen.randn(shape, dtype, scale=, mean=)`, `gen.rand(shape, dtype, low=, high=)` and
`gen.randint(shape, low, high, dtype="int32")` (index tensors); dtype is a name ("bfloat16",
"fp16", ...) or a torch/numpy/jax dtype. Parameter values may be any printable values (tuples
for shapes, torch dtypes); the case id shows them (`softmax[shape=[32, 64]]`).

An output is one array, a scalar (0-d), or a (nested) tuple/list/dict of them; the reference
returns the same structure. `reference=` is required: a file whose selected benchmarks lack one
is refused (exit 2). Every variant of a case must return the same output dtypes (the baseline's,
else the most common): the reference runs in float64, so a variant returning float64 for a
float32 case would pass its check while doing different work; it fails instead. A variant whose
call raises during warm-up or measurement is marked `error` with its exception; the other
variants go on. Triton's `@triton.autotune` needs a GPU to time its configs: in the interpreter
(no GPU) call the kernel with one config.
"""

from __future__ import annotations

import fnmatch
import hashlib
import importlib.util
import inspect
import itertools
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from profaudit.errors import InputError, UsageError, first_line

BACKENDS = ("torch", "triton", "jax", "numpy", "fake")
CACHE_MODES = ("cold", "hot", "rotate")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


def grid(**axes: Sequence[Any]) -> list[dict[str, Any]]:
    """Every combination of the given axes, in order: grid(n=[1, 2], dtype=["a"]) ->
    [{"n": 1, "dtype": "a"}, {"n": 2, "dtype": "a"}]."""
    for k, v in axes.items():
        if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
            raise UsageError(f"grid axis {k!r} must be a list of values, not {v!r}")
    keys = list(axes)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(list(axes[k]) for k in keys))]


@dataclass
class Variant:
    """One implementation of a benchmark.

    `compile_mode` (eager, torch.compile, max-autotune, jit, ...) and `tf32` (TF32 tensor-core
    math for fp32) describe how it computes when the harness cannot see it (a Triton `tl.dot`
    uses TF32 by default; say so). `model_ns(params)` is the simulated time per call, used only
    by the fake backend.

    `nondeterministic=(rtol, atol)` (or one number for both) declares that two calls on identical
    inputs may differ (atomics, split-K reductions): the harness then compares repeated calls
    within that tolerance instead of bit for bit, and records it. Without it a variant whose
    outputs differ between identical calls is refused (a result that changes from call to call
    is either racy or wrong on some calls).
    """

    fn: Callable
    name: str | None = None
    compile_mode: str | None = None
    tf32: bool | None = None
    cuda_graphs: bool | None = None
    model_ns: Callable[[dict], float] | None = None
    notes: str | None = None
    nondeterministic: float | tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise UsageError(f"variant {self.name!r}: fn must be callable, not {type(self.fn).__name__}")
        nd = self.nondeterministic
        if nd is not None:
            pair = (nd, nd) if isinstance(nd, (int, float)) and not isinstance(nd, bool) else nd
            try:
                rtol, atol = (float(x) for x in pair)
            except (TypeError, ValueError):
                raise UsageError(f"variant {self.name!r}: nondeterministic= takes a tolerance (rtol, atol) or one number, not {nd!r}") from None
            if not (rtol >= 0 and atol >= 0):
                raise UsageError(f"variant {self.name!r}: nondeterministic= tolerances must be >= 0 (got {nd!r})")
            self.nondeterministic = (rtol, atol)


def _as_fn(value: Any, what: str) -> Callable[[dict], Any] | None:
    if value is None:
        return None
    if callable(value):
        return value
    return lambda p, _v=value: _v


def _takes_two(fn: Callable) -> bool:
    """Whether fn can be called fn(params, gen) (True when its signature cannot be read)."""
    try:
        inspect.signature(fn).bind(None, None)
    except TypeError:
        return False
    except ValueError:
        return True
    return True


def accepts_params(fn: Callable) -> bool:
    """Whether `fn` takes a `params` keyword (the harness then passes the case's parameters)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return "params" in sig.parameters and sig.parameters["params"].kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class Benchmark:
    """A kernel benchmark: see the module docstring."""

    def __init__(
        self,
        name: str,
        *,
        backend: str,
        inputs: Callable[[dict, Any], Sequence[Any]],
        variants: Mapping[str, Callable | Variant] | Sequence[Variant] | Callable,
        reference: Callable | None = None,
        params: Sequence[Mapping[str, Any]] | Mapping[str, Sequence[Any]] | None = None,
        flops: Callable[[dict], float] | float | None = None,
        bytes: Callable[[dict], float] | float | None = None,  # noqa: A002 - the natural name for users
        output: Callable[[dict, Sequence[Any]], Any] | None = None,
        baseline: str | None = None,
        dtype: Callable[[dict], str] | str | None = None,
        shape: Callable[[dict], Any] | Any = None,
        op: Callable[[dict], str] | str | None = None,
        atol: Callable[[dict], float] | float | None = None,
        rtol: Callable[[dict], float] | float | None = None,
        cache: str | None = None,
        input_sets: int | None = None,
        reference_fp64: bool = True,
        mutates_inputs: bool = False,
        description: str | None = None,
    ):
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise UsageError(f"benchmark name {name!r}: use letters, digits and _ . + - (no spaces or slashes)")
        if backend not in BACKENDS:
            raise UsageError(f"benchmark {name!r}: backend {backend!r} is not one of {', '.join(BACKENDS)}")
        if not callable(inputs) or not _takes_two(inputs):
            raise UsageError(f"benchmark {name!r}: inputs must be a function (params, gen) -> tuple of inputs")
        if reference is not None and not callable(reference):
            raise UsageError(f"benchmark {name!r}: reference must be a function of the inputs, not {type(reference).__name__}")
        if cache is not None and cache not in CACHE_MODES:
            raise UsageError(f"benchmark {name!r}: cache {cache!r} is not one of {', '.join(CACHE_MODES)}")
        self.name = name
        self.backend = backend
        self.inputs = inputs
        self.reference = reference
        self.variants = self._variants(variants)
        if baseline is not None and baseline not in self.variants:
            raise UsageError(f"benchmark {name!r}: baseline {baseline!r} is not a variant ({', '.join(self.variants)})")
        self.baseline = baseline
        self.params = self._params(params)
        self.flops = _as_fn(flops, "flops")
        self.min_bytes = _as_fn(bytes, "bytes")
        self.output = output
        self.dtype = _as_fn(dtype, "dtype")
        self.shape = _as_fn(shape, "shape")
        # recorded so the audit can recompute FLOPs and bytes from the shape (profaudit.workload)
        self.op = _as_fn(op, "op")
        self.atol = _as_fn(atol, "atol")
        self.rtol = _as_fn(rtol, "rtol")
        self.cache = cache
        self.input_sets = input_sets
        self.reference_fp64 = reference_fp64
        # an in-place kernel makes every timed call see different data (x.mul_(2) reaches inf);
        # the harness refuses such a variant unless the benchmark says it is meant
        self.mutates_inputs = bool(mutates_inputs)
        self.description = description
        self.source_file: str | None = None

    def _variants(self, variants) -> dict[str, Variant]:
        out: dict[str, Variant] = {}
        if callable(variants) and not isinstance(variants, Variant):
            variants = {getattr(variants, "__name__", "kernel"): variants}
        items = variants.items() if isinstance(variants, Mapping) else [(v.name, v) for v in variants]
        for key, v in items:
            if not isinstance(v, Variant):
                v = Variant(v, name=key)
            # a list of Variant(fn) without names: the function's own name (torch.matmul -> matmul)
            name = key or v.name or getattr(v.fn, "__name__", None)
            if not name or not _NAME_RE.match(str(name)):
                raise UsageError(f"benchmark {self.name!r}: variant name {name!r}: use letters, digits and _ . + - (give it a name: Variant(fn, name=...) or a dict of variants)")
            v.name = str(name)
            if v.name in out:
                raise UsageError(f"benchmark {self.name!r}: two variants named {v.name!r}")
            out[v.name] = v
        if not out:
            raise UsageError(f"benchmark {self.name!r} declares no variants")
        return out

    def _params(self, params) -> list[dict[str, Any]]:
        if params is None:
            return [{}]
        if isinstance(params, Mapping):
            return grid(**params)
        out = []
        for p in params:
            if not isinstance(p, Mapping):
                raise UsageError(f"benchmark {self.name!r}: params must be a list of mappings (or use bench.grid)")
            out.append(dict(p))
        if not out:
            raise UsageError(f"benchmark {self.name!r}: params is empty")
        return out

    def cases(self) -> list["Case"]:
        return [Case(self, p) for p in self.params]

    def __repr__(self) -> str:
        return f"Benchmark({self.name!r}, backend={self.backend!r}, variants={list(self.variants)}, cases={len(self.params)})"


def _fmt_value(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (tuple, list)):
        # the logs store parameters as JSON, where a tuple comes back a list: the id a run
        # prints must be the id `bench compare -k` finds in its logs
        return str(_as_lists(v))
    return str(v)


def _as_lists(v: Any) -> Any:
    return [_as_lists(x) for x in v] if isinstance(v, (tuple, list)) else v


def params_slug(params: Mapping[str, Any]) -> str:
    """`dtype-float32_n-256` for {"n": 256, "dtype": "float32"}; `default` for no parameters."""
    if not params:
        return "default"

    def safe(x: Any) -> str:
        return re.sub(r"[^A-Za-z0-9.+-]+", "-", _fmt_value(x)).strip("-")

    text = "_".join(f"{safe(k)}-{safe(params[k])}" for k in sorted(params))
    if len(text) > 80:
        text = text[:64] + "-" + hashlib.sha1(text.encode()).hexdigest()[:10]
    return text or "default"


def case_id(benchmark: str, params: Mapping[str, Any]) -> str:
    """`matmul[dtype=float32,n=256]` (parameters in sorted order), `softmax` when there are none."""
    if not params:
        return benchmark
    inner = ",".join(f"{k}={_fmt_value(params[k])}" for k in sorted(params))
    return f"{benchmark}[{inner}]"


@dataclass
class Case:
    """One point of a benchmark's parameter sweep."""

    benchmark: Benchmark
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return case_id(self.benchmark.name, self.params)

    @property
    def slug(self) -> str:
        """A file-name-safe form of the parameters: `dtype-float32_n-256`, `default` when none."""
        return params_slug(self.params)

    def value(self, fn: Callable | None, default: Any = None) -> Any:
        if fn is None:
            return default
        v = fn(self.params)
        return default if v is None else v


def matches(case_id: str, pattern: str | None) -> bool:
    """`-k` matching, case-insensitive: a glob over the whole id when the pattern holds * or ?
    (brackets match themselves: case ids hold them), else a substring."""
    if not pattern:
        return True
    if "*" in pattern or "?" in pattern:
        glob = "".join("[[]" if ch == "[" else "[]]" if ch == "]" else ch for ch in pattern.lower())
        return fnmatch.fnmatchcase(case_id.lower(), glob)
    return pattern.lower() in case_id.lower()


# ------------------------------------------------------------------------------------------------
# benchmark files
# ------------------------------------------------------------------------------------------------


def load_benchmarks(path: str | os.PathLike) -> list[Benchmark]:
    """Import a benchmark file and return the `Benchmark`s bound at its top level, in order.

    The file's folder is put first on `sys.path` while it is imported, so it can import kernels
    from sibling files (a Triton kernel must live in a .py file). On a machine without an NVIDIA
    GPU, TRITON_INTERPRET=1 is set first (when unset) so Triton kernels run in the interpreter.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(p, "no such benchmark file" if not p.exists() else "not a file")
    if p.suffix != ".py":
        raise InputError(p, "a benchmark file is a Python file (.py)")
    from profaudit.bench.env import ensure_triton_mode

    ensure_triton_mode()
    mod_name = "profaudit_bench_" + hashlib.sha1(str(p.resolve()).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(mod_name, p)
    if spec is None or spec.loader is None:
        raise InputError(p, "cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    folder = str(p.resolve().parent)
    sys.path.insert(0, folder)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(mod_name, None)
        raise InputError(p, f"syntax error on line {exc.lineno}: {exc.msg}") from None
    except (UsageError, InputError) as exc:
        sys.modules.pop(mod_name, None)
        raise InputError(p, str(exc)) from None
    except SystemExit as exc:
        sys.modules.pop(mod_name, None)
        raise InputError(p, f"importing it called sys.exit({exc.code!r}) (a script's main block? guard it with if __name__ == '__main__')") from None
    except Exception as exc:
        sys.modules.pop(mod_name, None)
        from profaudit.errors import MissingExtraError

        if isinstance(exc, MissingExtraError):
            raise
        msg = first_line(exc)
        raise InputError(p, f"importing it failed: {type(exc).__name__}: {msg}") from None
    finally:
        try:
            sys.path.remove(folder)
        except ValueError:
            pass
    found: list[Benchmark] = []
    seen: set[int] = set()
    for value in vars(module).values():
        items = value if isinstance(value, (list, tuple)) else [value]
        for b in items:
            if isinstance(b, Benchmark) and id(b) not in seen:
                seen.add(id(b))
                b.source_file = str(p.resolve())
                found.append(b)
    if not found:
        raise InputError(p, "defines no profaudit.bench.Benchmark at module level")
    names = [b.name for b in found]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(p, f"two benchmarks are named {dup[0]!r}")
    return found


def require_reference(benchmarks: Sequence[Benchmark]) -> None:
    """Refuse benchmarks without a reference: nothing could tell a right kernel from a wrong one."""
    for b in benchmarks:
        if b.reference is None:
            raise InputError(b.source_file or b.name, f"benchmark {b.name!r} declares no reference=: its variants cannot be checked for correctness (declare reference=, a function of the inputs)")


def select_cases(benchmarks: Sequence[Benchmark], pattern: str | None = None, variants: Sequence[str] | None = None) -> list[tuple[Case, list[str]]]:
    """Cases whose id matches `pattern`, each with the variants to run (all, or those named)."""
    out = []
    for b in benchmarks:
        chosen = list(b.variants)
        if variants:
            chosen = [v for v in b.variants if v in variants]
            if not chosen:
                continue
        for c in b.cases():
            if matches(c.id, pattern):
                out.append((c, chosen))
    if not out:
        have = ", ".join(c.id for b in benchmarks for c in b.cases()[:3])
        what = f"-k {pattern!r}" if pattern else "the selection"
        if variants:
            what += f" with variants {', '.join(variants)}"
            known = list(dict.fromkeys(v for b in benchmarks for v in b.variants))
            unknown = [v for v in variants if v not in known]
            if unknown:
                raise UsageError(f"no benchmark has a variant {unknown[0]!r} (variants: {', '.join(known)})")
        raise UsageError(f"no benchmark case matches {what} (cases: {have})")
    return out
