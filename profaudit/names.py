"""Kernel names: demangling, short names and the normal form used to match names across tools.

The same kernel is spelled differently by ncu (`f(float *, int)`), nsys, Kineto and c++filt
(`f(float*, int)`); GNU prints `> >` and `1ul`. Everything here is bracket-aware: `operator()`,
lambdas and `(anonymous namespace)` contain parentheses that are not parameter lists.
"""

from __future__ import annotations

import functools
import re

_OPEN = {"(": ")", "<": ">", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}


@functools.lru_cache(maxsize=65536)
def demangle(name: str) -> str:
    """Itanium-demangle `name` when it is mangled and a demangler is available; else return it."""
    if not name or not name.startswith("_Z"):
        return name
    try:
        import cxxfilt  # optional: ctypes binding to __cxa_demangle
    except ImportError:
        cxxfilt = None
    if cxxfilt is not None:
        try:
            return cxxfilt.demangle(name)
        except Exception:
            return name
    return _demangle_with_libstdcxx(name)


_CXA = None


def _demangle_with_libstdcxx(name: str) -> str:
    global _CXA
    import ctypes
    import ctypes.util

    if _CXA is None:
        lib = None
        for cand in ("stdc++", "c++"):
            path = ctypes.util.find_library(cand)
            if path:
                try:
                    lib = ctypes.CDLL(path)
                    break
                except OSError:
                    continue
        if lib is None:
            _CXA = False
            return name
        fn = lib.__cxa_demangle
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_int)]
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        libc.free.argtypes = [ctypes.c_void_p]
        _CXA = (fn, libc.free)
    if _CXA is False:
        return name
    fn, free = _CXA
    status = ctypes.c_int()
    ptr = fn(name.encode(), None, None, ctypes.byref(status))
    if status.value != 0 or not ptr:
        return name
    try:
        return ctypes.string_at(ptr).decode("utf-8", errors="replace")
    finally:
        free(ptr)


def _top_level_spans(s: str, opener: str) -> list[tuple[int, int]]:
    """(start, end) index pairs of top-level bracket groups of kind `opener` in `s`."""
    spans, stack = [], []
    closer = _OPEN[opener]
    i = 0
    while i < len(s):
        ch = s[i]
        # `operator<`, `operator<<`, `operator()` ... are names, not brackets
        if s.startswith("operator", i):
            m = re.match(r"operator\s*(\(\)|\[\]|<<=?|>>=?|<=>|<=|>=|->\*?|[-+*/%^&|!=<>~,]=?|new|delete)?", s[i:])
            if m:
                i += m.end()
                continue
        # nsys and c++filt spell the anonymous namespace `<unnamed>`: a name, not template arguments
        if s.startswith("<unnamed>", i):
            i += len("<unnamed>")
            continue
        if ch in _OPEN:
            stack.append((ch, i))
        elif ch in _CLOSE and stack:
            # a '>' inside '->' is not a bracket
            if ch == ">" and i > 0 and s[i - 1] == "-":
                i += 1
                continue
            op, start = stack.pop()
            if not stack and op == opener and ch == closer:
                spans.append((start, i + 1))
            elif op != _CLOSE[ch]:
                # unbalanced mix (e.g. a '<' comparison in an expression): give up on nesting
                stack.clear()
        i += 1
    return spans


@functools.lru_cache(maxsize=65536)
def short_name(name: str) -> str:
    """Base name: return type, parameter list and template arguments stripped, namespaces kept.

    `void at::native::vectorized_elementwise_kernel<4, Foo>(int, Foo)` ->
    `at::native::vectorized_elementwise_kernel`. Unmangled names (Triton, cuBLAS) come back as is.
    """
    if not name:
        return name
    s = _drop_parameters(demangle(name.strip()))
    # strip template arguments at top level
    angles = _top_level_spans(s, "<")
    for start, end in reversed(angles):
        s = s[:start] + s[end:]
    return _drop_return_type(s.strip()) or name


@functools.lru_cache(maxsize=65536)
def instance_name(name: str) -> str:
    """`short_name` with the template arguments kept: `void f<float, 128>(int, float*)` ->
    `f<float, 128>`. The arguments tell a kernel's instantiations apart; the return type and the
    parameter list rarely do and fill a narrow terminal column."""
    if not name:
        return name
    return _drop_return_type(_drop_parameters(demangle(name.strip())).strip()) or name


def _drop_parameters(s: str) -> str:
    """A trailing parameter list (the last top-level (...) that ends the string, plus cv/ref
    qualifiers) dropped."""
    parens = _top_level_spans(s, "(")
    if parens:
        start, end = parens[-1]
        tail = s[end:].strip()
        if tail in ("", "const", "volatile", "const volatile", "&", "&&", "const&", "const &") or tail.startswith("["):
            head = s[:start]
            if head.strip() and not head.rstrip().endswith(("(anonymous namespace)", "::")):
                s = head
    return s


def _drop_return_type(s: str) -> str:
    """A leading return type dropped: the last space at bracket depth 0 that is not inside a name."""
    depth = 0
    cut = -1
    for i, ch in enumerate(s):
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth = max(0, depth - 1)
        elif ch == " " and depth == 0:
            cut = i
    if cut >= 0:
        rest = s[cut + 1 :]
        if rest and not rest.startswith(("namespace)", "[")):
            s = rest
    return s


_WS = re.compile(r"\s+")
_SPACE_BEFORE_PTR = re.compile(r"\s+([*&])")
_INT_SUFFIX = re.compile(r"\b(\d+)(?:ul|ull|u|l|ll|UL|ULL|U|L|LL)\b")
_CLOSE_ANGLES = re.compile(r">\s+>")


@functools.lru_cache(maxsize=65536)
def normal_form(name: str) -> str:
    """A spelling-insensitive key: same kernel, same key, whichever tool printed it."""
    s = demangle(name.strip())
    s = _WS.sub(" ", s)
    s = _SPACE_BEFORE_PTR.sub(r"\1", s)
    s = s.replace("( ", "(").replace(" )", ")").replace(" ,", ",")
    s = re.sub(r",(?=\S)", ", ", s)
    prev = None
    while prev != s:
        prev = s
        s = _CLOSE_ANGLES.sub(">>", s)
    s = _INT_SUFFIX.sub(r"\1", s)
    if s.startswith("void "):
        s = s[5:]
    return s


_API_SUFFIX = re.compile(r"_v\d{4,5}$")


def clean_api_name(name: str) -> str:
    """`cudaLaunchKernel_v7000` -> `cudaLaunchKernel` (nsys API names carry version suffixes)."""
    return _API_SUFFIX.sub("", name) if name else name


# Generated kernel names: Triton / inductor hashes and autotune suffixes, cuBLAS tile variants.
_TRITON_HASH = re.compile(r"_[0-9a-f]{6,}$|_\d+$")


# Triton 2.x appends the argument specialisation to the kernel name (`_0d1d2de3c`: index plus
# d=divisible by 16, e=equal to 1, c=constexpr). At least two chunks, so `conv_3d` stays intact.
_TRITON_SIGNATURE = re.compile(r"_\d+[cde]+(?:\d+[cde]*)+$")
# XLA numbers HLO instructions per compilation (`loop_add_fusion_3`, `fusion.12`): the number is
# not the kernel's identity. Only plain HLO-style names (no C++ scope or parameter list) qualify.
_XLA_NAME = re.compile(r"^[A-Za-z0-9_.\-]*fusion[A-Za-z0-9_.\-]*$")
_XLA_NUMBER = re.compile(r"[._]\d+$")
# OpenMP offload kernels are `__omp_offloading_<device id>_<file id>_<function>_l<line>`; the ids
# (hex) change with the build and the machine, the function does not.
_OMP_OFFLOAD = re.compile(r"^__omp_offloading_[0-9a-f]+_[0-9a-f]+_")


def family_name(name: str) -> str:
    """A coarser key for generated kernels: `triton_poi_fused_add_0` -> `triton_poi_fused_add`.

    Also drops Triton 2.x specialisation suffixes (`matmul_kernel_0d1d2d3c` -> `matmul_kernel`)
    XLA instruction numbers (`loop_add_fusion_3` -> `loop_add_fusion`) and OpenMP offload ids
    (`__omp_offloading_31_18a80a1__Z3fooPd_l12` -> `__omp_offloading__Z3fooPd_l12`).
    """
    full = short_name(name)
    if _OMP_OFFLOAD.match(full):
        return _OMP_OFFLOAD.sub("__omp_offloading_", full)
    s = _TRITON_SIGNATURE.sub("", full)
    if s.startswith(("triton_", "triton__", "fused_", "Fused")):
        s = _TRITON_HASH.sub("", s)
    elif _XLA_NAME.match(s):
        while _XLA_NUMBER.search(s):
            s = _XLA_NUMBER.sub("", s)
    # old inductor names are `triton__0d1d2d`: stripping would leave nothing that identifies them
    return full if s.rstrip("_") in ("", "triton", "fused", "Fused") else s
