"""Comparing two profiles of 100k kernel launches each: `profaudit.compare` against a naive
per-launch Python matcher, measured in the same run.

The synthetic pair looks like a real training-step trace: a few hundred distinct kernels (templated
C++ kernels, Triton/inductor kernels, cuBLAS GEMMs) with log-normal launch counts, each launched
many times. The candidate renames part of them the way real tool/compiler changes do (another
tool's spelling of the same template, inductor renumbering, a different cuBLAS tile), drops a few
and adds a few, and changes durations.

The baseline ("naive") is what one writes first: a Python loop over every launch that keys it by
`names.normal_form` (cached, as ours), pairs the i-th baseline launch of a key with the i-th
candidate launch, and sums per key in dicts. It does far less than `compare` (no family, library
or fuzzy levels, no statistics, no fairness audit, no report), so the ratio understates the gap.

    .venv/bin/python benchmarks/bench_compare.py [--launches 100000] [--names 300] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl


def synthetic_pair(launches: int, names: int, seed: int = 0):
    from profaudit.profile import Profile

    rng = np.random.default_rng(seed)
    base_names, cand_names = [], []
    for i in range(names):
        kind = i % 4
        if kind == 0:
            b = f"void at::native::vectorized_elementwise_kernel<4, at::native::Functor{i}<float>, at::detail::Array<char*, 3> >(int, at::native::Functor{i}<float>, at::detail::Array<char*, 3>)"
            c = b.replace("> >", ">>").replace("char*", "char *")  # another tool's spelling
        elif kind == 1:
            b = f"triton_poi_fused_op{i}_{rng.integers(0, 9)}"
            c = f"triton_poi_fused_op{i}_{rng.integers(10, 19)}"  # inductor renumbered
        elif kind == 2:
            tile = ("128x64", "64x64", "128x128", "64x32")[i % 4]
            b = f"ampere_sgemm_{tile}_nn_{i}"
            c = b
        else:
            b = f"void kernel_{i}<{i % 7}>(float*, float const*, int)"
            c = b
        base_names.append(b)
        cand_names.append(c)
    weights = rng.lognormal(0.0, 1.5, size=names)  # long-tailed launch counts, every kernel launched
    means = rng.lognormal(mean=9.0, sigma=1.2, size=names)  # ~8 us median, long tail
    scale = rng.choice([0.5, 0.9, 1.0, 1.0, 1.0, 1.1], size=names)  # candidate's change per kernel
    removed = set(rng.choice(names, size=max(1, names // 30), replace=False).tolist())
    n_new = max(1, names // 30)
    # (name, weight, mean duration) per side; a kernel keeps its weight and mean across sides
    side_b = list(zip(base_names, weights, means))
    side_c = [(cand_names[i], weights[i], means[i] * scale[i]) for i in range(names) if i not in removed]
    side_c += [(f"new_kernel_{j}", float(np.median(weights)), float(np.median(means))) for j in range(n_new)]

    def frame(side, seed_):
        r = np.random.default_rng(seed_)
        w = np.array([x[1] for x in side])
        m = np.array([x[2] for x in side])
        idx = r.choice(len(side), size=launches, p=w / w.sum())
        d = m[idx] * (1 + 0.02 * r.standard_normal(launches))
        start = np.cumsum(d + 500).astype(np.int64) - d.astype(np.int64)
        return pl.DataFrame(
            {
                "kernel_id": np.arange(launches, dtype=np.int64),
                "name": np.asarray([x[0] for x in side], dtype=object)[idx],
                "duration_ns": d,
                "start_ns": start,
                "end_ns": start + d.astype(np.int64),
            }
        )

    md = {"source": "nsys", "device_name": "NVIDIA H100 80GB HBM3"}
    b = Profile("baseline", dict(md), {"kernels": frame(side_b, seed + 1)})
    c = Profile("candidate", dict(md), {"kernels": frame(side_c, seed + 2)})
    return b, c


def naive_match(kb: pl.DataFrame, kc: pl.DataFrame):
    """Per-launch Python: key by normal form, pair by order, sum per key."""
    from profaudit.names import normal_form

    queues: dict[str, list[tuple[int, float]]] = {}
    for kid, name, d in zip(kc["kernel_id"].to_list(), kc["name"].to_list(), kc["duration_ns"].to_list()):
        queues.setdefault(normal_form(name), []).append((kid, d))
    for q in queues.values():
        q.reverse()
    pairs, removed = [], []
    totals: dict[str, list[float]] = {}
    for kid, name, d in zip(kb["kernel_id"].to_list(), kb["name"].to_list(), kb["duration_ns"].to_list()):
        key = normal_form(name)
        t = totals.setdefault(key, [0.0, 0.0])
        t[0] += d
        q = queues.get(key)
        if q:
            ck, cd = q.pop()
            pairs.append((kid, ck))
            t[1] += cd
        else:
            removed.append(kid)
    added = [k for q in queues.values() for k, _ in q]
    return len(pairs), len(removed), len(added), totals


def run(launches: int, names: int, repeat: int) -> None:
    from profaudit.compare import compare
    from profaudit.compare.kernels import prepare
    from profaudit.compare.match import align_instances, entities, groups_frame, match_entities
    from profaudit.names import normal_form

    b, c = synthetic_pair(launches, names)
    kb, kc = b.kernels, c.kernels
    print(f"\npair: {kb.height:,} vs {kc.height:,} launches, {kb['name'].n_unique()} vs {kc['name'].n_unique()} distinct names launched")
    compare(b, c)  # imports and name caches: every timing below starts warm

    def best(fn):
        ts = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            out = fn()
            ts.append(time.perf_counter() - t0)
        return min(ts), out

    def ours_matching():
        pb, pc = prepare(kb, ["baseline"]), prepare(kc, ["candidate"])
        groups = match_entities(entities(pb), entities(pc))
        g = groups_frame(groups)
        pb = pb.join(g.filter(pl.col("side") == "baseline").drop("side"), on="entity", how="left")
        pc = pc.join(g.filter(pl.col("side") == "candidate").drop("side"), on="entity", how="left")
        return align_instances(pb, pc)

    normal_form.cache_clear()
    t_naive, (n_pairs, n_removed, n_added, _) = best(lambda: naive_match(kb, kc))
    t_match, pairs = best(ours_matching)
    t_full, cmp = best(lambda: compare(b, c))
    tested = cmp.matched.filter(~pl.col("significance").is_in(["untested"])).height
    print(f"  baseline  naive per-launch Python matcher (normal form, then order): {t_naive:7.3f} s  ({n_pairs:,} launches paired)")
    print(f"  compare   matching only (all levels, launch alignment):            {t_match:7.3f} s  ({pairs.height:,} launches paired)  speed ratio vs naive {t_naive / t_match:5.2f}x")
    print(f"  compare() end to end (+ {tested} significance tests, fairness audit):  {t_full:7.3f} s  ({cmp.matched.height} groups, {cmp.added.height} added, {cmp.removed.height} removed)  speed ratio vs naive {t_naive / t_full:5.2f}x")
    print(f"  match methods: {cmp.methods}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=100_000)
    ap.add_argument("--names", type=int, default=300, help="distinct kernel names (the realistic case; a second run uses 20x more)")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    run(a.launches, a.names, a.repeat)
    run(a.launches, a.names * 20, a.repeat)


if __name__ == "__main__":
    main()
