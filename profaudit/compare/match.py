"""Kernel matching across two profiles: which baseline kernels correspond to which candidate kernels.

Matching works on distinct names ("entities"), never on individual launches, so 100k launches of a
few hundred kernels cost a few hundred key computations plus joins. Each level below tries to pair
the entities that earlier levels left unmatched, from the most to the least certain:

    exact            the same name string
    mangled          the same mangled name (one tool demangled, the other did not)
    normal           `names.normal_form`: whitespace, `> >`, `1ul`, `void ` differ between tools
    short            base name without template arguments/parameters (a retuned template instance);
                     CUTLASS-style wrappers (`cutlass::Kernel<Op>`) are keyed by their operator
    unqualified      the base name without its namespaces, where one side names the kernel with
                     none (ncu's default `--kernel-name-base function` against a full name)
    family           `names.family_name`: Triton/inductor hashes, numbering, autotune suffixes
    library-variant  vendor library kernels with tile sizes, arch and library-version prefixes
                     removed (`ampere_sgemm_128x64_nn` ~ `volta_sgemm_64x64_nn`,
                     `cudnn_train_volta_scudnn_128x64_..._v1` ~ `volta_scudnn_128x64_..._v1`)
    op               the framework op that launched them (aten::mm on two vendors' BLAS kernels)
    op-class         the operation class of library or user kernels (`ampere_sgemm_*` ~
                     `sm80_xmma_gemm_*` ~ `matmul_tiled`: all GEMMs; conv by direction, NCCL by
                     collective, attention, norms, softmax)
    nvtx             the enclosing NVTX range
    fuzzy            token + sequence similarity, one-to-one, above a threshold

A level that finds the same key on both sides makes one group of every entity with that key, so a
group can hold several names per side (three baseline GEMM variants against two candidate ones).
Every group records the level (`method`) and its confidence (`score`). Launches inside a group are
then aligned by order, within the enclosing NVTX range or framework op where both sides record one.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Callable

import polars as pl

from profaudit.names import family_name, normal_form, short_name

MATCH_MODES: tuple[str, ...] = ("auto", "exact", "name", "fuzzy")

# (method, score). Scores are confidences for the reader, not probabilities.
LEVEL_SCORES: dict[str, float] = {
    "exact": 1.0,
    "mangled": 1.0,
    "normal": 0.98,
    "short": 0.9,
    "unqualified": 0.88,
    "family": 0.85,
    "library-variant": 0.75,
    "op": 0.7,
    "op-class": 0.55,
    "nvtx": 0.5,
}

_NAME_LEVELS = ("exact", "mangled", "normal", "short", "unqualified", "family")
_ALL_LEVELS = _NAME_LEVELS + ("library-variant", "op", "op-class", "nvtx")
MODE_LEVELS: dict[str, tuple[str, ...]] = {
    "exact": ("exact", "mangled"),
    "name": _NAME_LEVELS,
    "auto": _ALL_LEVELS,
    "fuzzy": _ALL_LEVELS,
}
# Similarity a fuzzy pair needs. `auto` only takes near-identical spellings (`reduce_v1` ~
# `reduce_v2`); `fuzzy` also pairs loosely related names (`stencil_naive` ~ `stencil_tiled`).
FUZZY_THRESHOLD: dict[str, float | None] = {"exact": None, "name": None, "auto": 0.65, "fuzzy": 0.45}

UNNAMED = "<unnamed>"


def entity_expr() -> pl.Expr:
    """The entity (distinct name) a kernel row belongs to."""
    return pl.coalesce(
        pl.col("name"), pl.col("short_name"), pl.col("mangled_name"), pl.col("op_name"), pl.lit(UNNAMED)
    ).alias("entity")


def mode_of(col: str) -> pl.Expr:
    # most frequent non-null value; ties broken alphabetically so the result is stable
    return pl.col(col).drop_nulls().mode().sort().first().alias(col)


def entities(kernels: pl.DataFrame) -> pl.DataFrame:
    """One row per distinct kernel name: launches, time, and the context needed for matching."""
    k = kernels.with_columns(entity_expr())
    return (
        k.group_by("entity")
        .agg(
            pl.col("mangled_name").drop_nulls().first(),
            mode_of("op_name"),
            mode_of("nvtx_range"),
            pl.len().alias("count"),
            pl.col("duration_ns").sum().alias("total_ns"),
        )
        .sort("entity")
    )


# --- keys ---------------------------------------------------------------------------------------

# Kernels whose identity lives in their first template argument.
_WRAPPERS = frozenset({"cutlass::Kernel", "cutlass::Kernel2", "cutlass::device_kernel", "cutlass::kernel", "cute::kernel"})


def _first_template_arg(s: str) -> str | None:
    start = s.find("<")
    if start < 0:
        return None
    depth, i0 = 0, start + 1
    for i in range(start, len(s)):
        ch = s[i]
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
            if depth == 0:
                return s[i0:i].strip() or None
        elif ch == "," and depth == 1:
            return s[i0:i].strip() or None
    return None


def base_name(entity: str, mangled: str | None = None) -> str:
    """The identity-bearing base name: `short_name`, or the operator of a CUTLASS-style wrapper."""
    full = mangled or entity
    s = short_name(full)
    if s in _WRAPPERS:
        arg = _first_template_arg(normal_form(full))
        if arg:
            return short_name(arg)
    return s


_ARCH_PREFIX = re.compile(r"^(?:maxwell|pascal|volta|turing|ampere|ada|hopper|blackwell|sm_?\d+[a-z]?|gfx\d+[a-z]?)_", re.I)
# cuDNN 8 prefixed its kernels with the sub-library (`cudnn_train_`, `cudnn_infer_`,
# `cask_cudnn_infer::`): the same kernel under an older or newer cuDNN.
_LIB_VERSION_PREFIX = re.compile(r"^cudnn_(?:train|infer|ops|cnn|adv)_|(?<=cask_cudnn)_(?:train|infer)(?=::)", re.I)
# tokens that carry tuning, not the operation: tile shapes, stages, warp layouts, alignments
_TUNING_TOKEN = re.compile(
    r"^(?:[a-z]*\d+x\d+(?:x\d+)*[a-z0-9]*|\d+|tilesize\w*|stages?\d*|warpsize\w*|align[a-z]*\d*|ldg\d*|swizzle\w*|cga\w*|splitk\d*|sk\d*|v\d+)$",
    re.I,
)


def library_variant(entity: str, mangled: str | None = None) -> str | None:
    """Vendor-library kernel name with arch prefix and tuning tokens removed, else None.

    Prefixed with the class so that two classes never share a variant key.
    """
    cls = library_class(mangled or entity)
    if cls is None:
        return None
    s = _LIB_VERSION_PREFIX.sub("", base_name(entity, mangled).lower())
    s = _ARCH_PREFIX.sub("", s)
    toks = [t for t in re.split(r"[_:]+", s) if t]
    if toks and toks[0] == "cijk":
        # Tensile (rocBLAS/hipBLASLt): the problem type (transposes, data types) comes before
        # the macro tile `MT...`; everything after it is tuning
        cut = next((i for i, t in enumerate(toks) if re.match(r"mt\d", t)), len(toks))
        toks = toks[:cut]
    toks = [t for t in toks if not _TUNING_TOKEN.match(t)]
    return f"{cls}:{'_'.join(toks)}" if toks else None


_CLASSES: tuple[tuple[str, re.Pattern], ...] = tuple(
    (label, re.compile(rx, re.I))
    for label, rx in (
        ("nccl", r"^nccl(?:dev)?kernel"),
        ("attention", r"flash|fmha|attention|_attn|attn_"),
        ("conv", r"conv(?!ert)|fprop|dgrad|wgrad|winograd|implicit_gemm|im2col|[shx]cudnn|cask_cudnn"),
        ("gemv", r"gemv"),
        ("gemm-splitk-reduce", r"splitkreduce|splitk_reduce"),
        ("gemm", r"gemm|matmul|^cijk_|nvjet|xmma|tensorop|hmma|imma|wmma|cublaslt|\bmm_|_mm\b"),
        ("norm-layer", r"layer_?norm"),
        ("norm-rms", r"rms_?norm"),
        ("norm-batch", r"batch_?norm|\bbn_(?:fw|bw)"),
        ("softmax", r"softmax"),
    )
)
_CONV_DIR = (("dgrad", re.compile(r"dgrad|bwd_?data|backward_?data", re.I)), ("wgrad", re.compile(r"wgrad|bwd_?(?:filter|weight)|backward_?(?:filter|weight)", re.I)))
_NCCL_COLL = re.compile(r"^nccl(?:dev)?kernel_([A-Za-z]+)", re.I)


def library_class(entity: str) -> str | None:
    """Coarse class of a library or framework kernel (gemm, conv:fprop, nccl:AllReduce, ...)."""
    s = short_name(entity)
    probe = entity if s in _WRAPPERS else s
    for label, rx in _CLASSES:
        if rx.search(probe):
            if label == "nccl":
                m = _NCCL_COLL.match(probe)
                return f"nccl:{m.group(1)}" if m else "nccl"
            if label == "conv":
                for d, drx in _CONV_DIR:
                    if drx.search(probe):
                        return f"conv:{d}"
                return "conv:fprop"
            if label == "attention":
                return "attention:bwd" if re.search(r"bwd|backward|dq|dkdv", probe, re.I) else "attention:fwd"
            return label
    return None


def _unqualified(base: str) -> str:
    """`ns::inner::saxpy` -> `saxpy` (the last `::` component outside brackets)."""
    depth, cut = 0, -1
    for i, ch in enumerate(base):
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth = max(0, depth - 1)
        elif ch == ":" and depth == 0 and base.startswith("::", i):
            cut = i + 2
    return base[cut:] if cut > 0 else base


def _key_fn(level: str) -> Callable[[dict], str | None]:
    if level == "exact":
        return lambda r: r["entity"]
    if level == "mangled":
        return lambda r: r["mangled_name"] or (r["entity"] if r["entity"].startswith("_Z") else None)
    if level == "normal":
        return lambda r: normal_form(r["mangled_name"] or r["entity"])
    if level == "short":
        return lambda r: base_name(r["entity"], r["mangled_name"])
    if level == "unqualified":
        return lambda r: _unqualified(base_name(r["entity"], r["mangled_name"]))
    if level == "family":
        return lambda r: family_name(base_name(r["entity"], r["mangled_name"]))
    if level == "op":
        return lambda r: r["op_name"]
    if level == "library-variant":
        return lambda r: library_variant(r["entity"], r["mangled_name"])
    if level == "op-class":
        return lambda r: library_class(r["mangled_name"] or r["entity"])
    if level == "nvtx":
        return lambda r: r["nvtx_range"]
    raise ValueError(level)


# --- fuzzy --------------------------------------------------------------------------------------

_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])|(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])")
# tokens so common in kernel names that sharing them says nothing
_STOP = frozenset({"kernel", "void", "global", "device", "cuda", "gpu", "impl", "native", "at", "std", "detail", "d", "k", "fn"})


def _tokens(s: str) -> frozenset[str]:
    # split before lower-casing: camelCase boundaries are token boundaries
    return frozenset(t.lower() for t in _SPLIT.split(s) if t and t.lower() not in _STOP)


def similarity(a: str, b: str) -> float:
    """Mean of token-set Jaccard and difflib's sequence ratio on the family names, in [0, 1]."""
    fa, fb = family_name(a), family_name(b)
    ta, tb = _tokens(fa), _tokens(fb)
    jac = len(ta & tb) / len(ta | tb) if (ta or tb) else 0.0
    return 0.5 * jac + 0.5 * difflib.SequenceMatcher(None, fa.lower(), fb.lower(), autojunk=False).ratio()


# Pairs scored at most; beyond it the remaining left names are not tried (deterministic order).
_FUZZY_MAX_PAIRS = 200_000
# A token shared by more right-side names than this says little about which one is meant
# (`new`, `fused`, `sm80`): it does not nominate candidates on its own.
_COMMON_TOKEN_MIN = 20
_COMMON_TOKEN_SHARE = 0.05


def fuzzy_pairs(left: list[str], right: list[str], threshold: float) -> list[tuple[str, str, float]]:
    """Greedy one-to-one pairs with similarity >= threshold, best first (ties by name).

    Only pairs sharing an informative token are scored (without a shared token the Jaccard half
    is 0 and the pair cannot reach a useful score), and difflib's cheap upper bound
    (`quick_ratio`) skips pairs that cannot reach the threshold before the full ratio is computed.
    """
    if not left or not right:
        return []
    fam = {x: family_name(x) for x in (*left, *right)}
    toks = {x: _tokens(f) for x, f in fam.items()}
    index: dict[str, list[str]] = {}
    for r in right:
        for t in toks[r]:
            index.setdefault(t, []).append(r)
    common = max(_COMMON_TOKEN_MIN, int(_COMMON_TOKEN_SHARE * len(right)))
    scored: list[tuple[float, str, str]] = []
    n = 0
    for l in left:
        seen: set[str] = set()
        for t in toks[l]:
            hits = index.get(t, ())
            if len(hits) <= common:
                seen.update(hits)
        lo = fam[l].lower()
        for r in sorted(seen):
            n += 1
            tl, tr = toks[l], toks[r]
            jac = len(tl & tr) / len(tl | tr)
            sm = difflib.SequenceMatcher(None, lo, fam[r].lower(), autojunk=False)
            if 0.5 * jac + 0.5 * sm.quick_ratio() < threshold:
                continue
            sim = 0.5 * jac + 0.5 * sm.ratio()
            if sim >= threshold:
                scored.append((-sim, l, r))
        if n > _FUZZY_MAX_PAIRS:
            break
    scored.sort()
    used_l: set[str] = set()
    used_r: set[str] = set()
    out = []
    for neg, l, r in scored:
        if l in used_l or r in used_r:
            continue
        used_l.add(l)
        used_r.add(r)
        out.append((l, r, round(-neg, 4)))
    return out


# --- matching -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    group_id: int
    method: str
    score: float
    key: str
    baseline: tuple[str, ...]
    candidate: tuple[str, ...]


def match_entities(eb: pl.DataFrame, ec: pl.DataFrame, mode: str = "auto", *, levels: tuple[str, ...] | None = None) -> list[Group]:
    """Groups of baseline/candidate entities, level by level (see the module docstring).

    `eb`/`ec` are `entities()` frames (at least `entity`; `mangled_name`, `op_name`,
    `nvtx_range` where known). Entities in no group are the removed (baseline) and added
    (candidate) kernels. `levels` restricts the mode's levels (timing logs have no ops or ranges).
    """
    if mode not in MATCH_MODES:
        raise ValueError(f"match mode {mode!r}; choose one of {', '.join(MATCH_MODES)}")
    ctx = {"mangled_name": None, "op_name": None, "nvtx_range": None}
    left = {r["entity"]: {**ctx, **r} for r in eb.iter_rows(named=True)}
    right = {r["entity"]: {**ctx, **r} for r in ec.iter_rows(named=True)}
    groups: list[Group] = []
    for level in MODE_LEVELS[mode]:
        if levels is not None and level not in levels:
            continue
        if not left or not right:
            break
        fn = _key_fn(level)
        inv_l: dict[str, list[str]] = {}
        inv_r: dict[str, list[str]] = {}
        for e, r in left.items():
            k = fn(r)
            if k:
                inv_l.setdefault(k, []).append(e)
        for e, r in right.items():
            k = fn(r)
            if k:
                inv_r.setdefault(k, []).append(e)
        for key in sorted(inv_l.keys() & inv_r.keys()):
            bl, cl = sorted(inv_l[key]), sorted(inv_r[key])
            if level == "unqualified" and not (_bare(bl, left) or _bare(cl, right)):
                continue  # two different namespaces' kernels of one name are not the same kernel
            groups.append(Group(len(groups), level, LEVEL_SCORES[level], key, tuple(bl), tuple(cl)))
            for e in bl:
                del left[e]
            for e in cl:
                del right[e]
    threshold = FUZZY_THRESHOLD[mode]
    if threshold is not None and left and right:
        for l, r, sim in fuzzy_pairs(sorted(left), sorted(right), threshold):
            groups.append(Group(len(groups), "fuzzy", sim, f"{base_name(l)} ~ {base_name(r)}", (l,), (r,)))
    return groups


def _bare(entities: list[str], rows: dict[str, dict]) -> bool:
    """Every one of these entities is named without a namespace."""
    return all("::" not in base_name(e, rows[e]["mangled_name"]) for e in entities)


def groups_frame(groups: list[Group]) -> pl.DataFrame:
    """entity -> group_id for both sides (`side` is 'baseline' or 'candidate')."""
    rows_side, rows_entity, rows_gid = [], [], []
    for g in groups:
        for e in g.baseline:
            rows_side.append("baseline")
            rows_entity.append(e)
            rows_gid.append(g.group_id)
        for e in g.candidate:
            rows_side.append("candidate")
            rows_entity.append(e)
            rows_gid.append(g.group_id)
    return pl.DataFrame(
        {"side": rows_side, "entity": rows_entity, "group_id": rows_gid},
        schema={"side": pl.Utf8, "entity": pl.Utf8, "group_id": pl.Int64},
    )


def align_instances(kb: pl.DataFrame, kc: pl.DataFrame) -> pl.DataFrame:
    """Pair the launches of each matched group: the i-th baseline launch with the i-th candidate one.

    Inputs carry `group_id`, `_order` (launch order within the side), `nvtx_range`, `op_name`,
    `profile_id`, `kernel_id`, `duration_ns`. Where both sides put most of a group's launches in an
    NVTX range (else a framework op), launches are aligned within the same range/op, so a kernel
    reused by two layers pairs layer with layer. Returns one row per aligned pair with the
    alignment context (`nvtx`, `op` or `order`).
    """
    cols = ["group_id", "_order", "nvtx_range", "op_name", "profile_id", "kernel_id", "duration_ns"]

    def grouped(k: pl.DataFrame) -> pl.DataFrame:
        # with every launch matched (a profile against itself) the filter would only copy them all
        out = k.select(cols)
        return out if not out["group_id"].null_count() else out.filter(pl.col("group_id").is_not_null())

    b = grouped(kb)
    # a profile compared with itself: one side's launches serve both (each is 2 M rows of a
    # 200 MB capture, and so is each ranked copy below)
    c = b if kc is kb else grouped(kc)
    cov = (
        pl.concat([b.with_columns(pl.lit(0).alias("_s")), c.with_columns(pl.lit(1).alias("_s"))])
        .group_by("group_id", "_s")
        .agg(pl.col("nvtx_range").is_not_null().mean().alias("nv"), pl.col("op_name").is_not_null().mean().alias("op"))
        .group_by("group_id")
        .agg(pl.col("nv").min(), pl.col("op").min(), pl.len().alias("sides"))
        .with_columns(
            pl.when((pl.col("sides") == 2) & (pl.col("nv") >= 0.5))
            .then(pl.lit("nvtx"))
            .when((pl.col("sides") == 2) & (pl.col("op") >= 0.5))
            .then(pl.lit("op"))
            .otherwise(pl.lit("order"))
            .alias("context")
        )
        .select("group_id", "context")
    )

    def ranked(df: pl.DataFrame) -> pl.DataFrame:
        # the group's context as a new column, not a left join (which copied every column of the
        # launches), and no sort where the launches already stand in launch order (a prepared side
        # does: `_order` is its row number), as in compare.kernels.with_group_ids
        context = dict(zip(cov["group_id"].to_list(), cov["context"].to_list()))
        df = df.with_columns(pl.col("group_id").replace_strict(context, default=None, return_dtype=pl.Utf8).alias("context"))
        if not df["_order"].is_sorted() or df["_order"].null_count():
            df = df.sort("_order")
        return (
            df.with_columns(
                pl.when(pl.col("context") == "nvtx")
                .then(pl.col("nvtx_range"))
                .when(pl.col("context") == "op")
                .then(pl.col("op_name"))
                .otherwise(pl.lit(""))
                .fill_null("")
                .alias("_ctx")
            )
            .with_columns(pl.int_range(pl.len()).over("group_id", "_ctx").alias("_rank"))
        )

    # what the pairs are made of, before the join copies both sides' rows into one frame
    keep = ["group_id", "_ctx", "_rank", "profile_id", "kernel_id", "duration_ns"]
    rb = ranked(b).select("context", *keep)
    if c is b:
        # (group_id, _ctx, _rank) is unique per launch, so each launch pairs with itself: the join's
        # answer without its hash table and copy
        pairs = rb.with_columns(pl.col(x).alias(f"{x}_c") for x in ("profile_id", "kernel_id", "duration_ns"))
    else:
        pairs = rb.join(ranked(c).select(keep), on=["group_id", "_ctx", "_rank"], how="inner", suffix="_c")
    return pairs.select(
        "group_id",
        "context",
        pl.col("_ctx").alias("context_value"),
        pl.col("_rank").alias("instance"),
        pl.col("profile_id").alias("baseline_profile_id"),
        pl.col("kernel_id").alias("baseline_kernel_id"),
        pl.col("profile_id_c").alias("candidate_profile_id"),
        pl.col("kernel_id_c").alias("candidate_kernel_id"),
        pl.col("duration_ns").alias("baseline_duration_ns"),
        pl.col("duration_ns_c").alias("candidate_duration_ns"),
    ).sort("group_id", "context_value", "instance")
