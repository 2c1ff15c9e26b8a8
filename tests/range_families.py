"""Random families of nested ranges for the nesting tests of the Kineto reader
(tests/test_chrome_trace.py and tests/test_chrome_trace_deep_nesting.py): both compare
`chrome_trace.nest_sorted` with the per-range stack walk on the same kind of input, so one
generator makes it, sized by each test."""

from __future__ import annotations

import random
from typing import Callable

import numpy as np


def families(seed: int, laminar: bool, *, groups: int, span: int, max_rows: int, twins: Callable[[random.Random], int], outliving: int):
    """(group, start, end, kind) of random ranges, sorted as `nest_sorted` wants them (by group,
    start, longest first). Each of `groups` groups holds a tree of ranges over [0, span) up to
    6 levels deep, with `twins(rng)` identical copies after each range (each nests in the one
    before: one level per twin); unless `laminar`, some ranges end past their parent's end and
    `outliving` more per group start anywhere. Rows stop at `max_rows`. The same seed and sizes
    give the same ranges: the draws are made in one fixed order."""
    rng = random.Random(seed)
    rows: list[tuple[int, int, int]] = []
    for g in range(groups):
        def tree(lo, hi, d):
            t = lo
            while t < hi and len(rows) < max_rows:
                a = t + rng.randrange(0, 5)
                b = min(hi, a + rng.choice([0, 0, 1, 3, 10, 50, 200]))
                if a > hi:
                    break
                rows.append((g, a, b))
                for _ in range(twins(rng)):
                    rows.append((g, a, b))
                if d < 6 and b - a > 2:
                    tree(a, b, d + 1)
                t = b if laminar or rng.random() < 0.8 else max(a, b - 1)

        tree(0, span, 0)
        if not laminar:  # ranges that outlive the one they start in
            rows.extend((g, x, x + rng.randrange(1, 400)) for x in rng.sample(range(span), outliving))
    rows.sort(key=lambda r: (r[0], r[1], -r[2]))
    g, s, e = (np.array(c, dtype=np.int64) for c in zip(*rows))
    kinds = [rng.choice(["cpu_op", "user_annotation", "cuda_runtime"]) for _ in rows]
    return g, s, e, kinds
