"""Chrome-trace assembly on two threads (`chrome_trace._Helper` / `_Task`): the same tables as on
one thread, errors in the order one thread raises them, a task run by the thread that needs it
when the helper is still busy, and the nesting pass in two halves of the groups equal to it whole."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from polars.testing import assert_frame_equal

from profaudit.parsers import chrome_trace as ct
from tests.conftest import corpus_file


def _load(path, threads: int, monkeypatch):
    monkeypatch.setattr(ct, "_threads", lambda: threads)
    meta, acc, form = ct.stream_events(path)
    return ct.assemble(path, ct.ChromeTraceParser(), meta, acc, form)


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["rank-0.Apr_03_18_51_38", "mi250_minitoy_train_ROCm6_2", "resnet50_num_workers_0"])
def test_threaded_assembly_builds_the_tables_one_thread_builds(name, monkeypatch):
    path = corpus_file("chrome-trace", name)
    one, two = _load(path, 1, monkeypatch), _load(path, 2, monkeypatch)
    assert one.metadata == two.metadata
    assert set(one.tables) == set(two.tables)
    for t, a in one.tables.items():
        b = two.tables[t]
        assert (a is None) == (b is None), t
        if a is not None:
            assert_frame_equal(a, b, check_exact=True, check_dtypes=True, check_row_order=True)
    assert one.ranges.height and one.kernels.height  # (traces with both sides)


@pytest.mark.corpus
@pytest.mark.parametrize("threads", [1, 2])
def test_an_error_of_the_device_side_comes_before_one_of_the_ranges(threads, monkeypatch):
    path = corpus_file("chrome-trace", "rank-0.Apr_03_18_51_38")

    def device_fails(*args):
        raise LookupError("device side")

    def ranges_fail(*args):
        raise RuntimeError("ranges side")

    monkeypatch.setattr(ct, "_kernel_rows", device_fails)
    monkeypatch.setattr(ct, "_nest_order", ranges_fail)
    with pytest.raises(LookupError, match="device side"):
        _load(path, threads, monkeypatch)


def test_a_task_the_busy_helper_has_not_started_runs_on_the_thread_that_asks():
    release = threading.Event()
    ran_on = []
    with ct._Helper(True) as helper:
        blocker = helper.submit(release.wait, 30)
        task = helper.submit(lambda: ran_on.append(threading.current_thread()) or 7)
        assert task.result() == 7  # the helper still waits on `release`
        assert ran_on == [threading.main_thread()]
        release.set()
        assert blocker.result() is True
    assert ran_on == [threading.main_thread()]  # once: the helper skipped it when it got there


def test_a_task_error_is_raised_where_its_result_is_asked():
    def fails():
        raise ValueError("in the task")

    with ct._Helper(True) as helper:
        task = helper.submit(fails)
        with pytest.raises(ValueError, match="in the task"):
            task.result()
    with ct._Helper(False) as helper:  # one thread: run at submission, raised at the result
        task = helper.submit(fails)
        with pytest.raises(ValueError, match="in the task"):
            task.result()


def _family(rng: np.random.Generator, groups: int, laminar: bool, deep: int = 0):
    """Sorted (group, start, -end) ranges: nested trees per group, twins, zero-length ranges, and
    (not `laminar`) ranges that only partly overlap; `deep`: one group of that many nested twins."""
    rows = []
    for grp in range(groups):
        def tree(lo: int, hi: int, d: int) -> None:
            t = lo
            while t < hi:
                a = t + int(rng.integers(0, 5))
                b = min(hi, a + int(rng.choice([0, 1, 3, 10, 50, 200])))
                if a > hi:
                    break
                rows.append((grp, a, b))
                if rng.random() < 0.2:
                    rows.append((grp, a, b))  # an identical twin
                if not laminar and rng.random() < 0.05:
                    rows.append((grp, a + 1, b + 7))  # partly inside, partly after
                if d < 5 and b - a > 2:
                    tree(a + 1, b - 1, d + 1)
                t = b + 1
        tree(0, int(rng.integers(50, 3000)), 0)
    rows += [(groups, 10, 1000)] * deep
    a = np.array(rows, dtype=np.int64)
    g, s, e = a[:, 0], a[:, 1], a[:, 2]
    o = np.lexsort((-e, s, g))
    g, s, e = g[o], s[o], e[o]
    return g, s, e, rng.random(len(g)) < 0.3, rng.random(len(g)) < 0.3


@pytest.mark.parametrize("laminar", [True, False])
@pytest.mark.parametrize("deep", [0, 600])
@pytest.mark.parametrize("parallel", [True, False])
def test_the_nesting_pass_in_two_halves_equals_it_whole(laminar, deep, parallel, monkeypatch):
    monkeypatch.setattr(ct, "_HALVES_MIN", 2)
    rng = np.random.default_rng(7 + laminar + deep)
    for groups in (1, 2, 3, 40):
        g, s, e, ann, op = _family(rng, groups, laminar, deep)
        whole = ct.nest_sorted(g, s, e, ann, op)
        with ct._Helper(parallel) as helper:
            halves = ct._nest_halves(helper, g, s, e, ann, op)()
        for x, y in zip(whole, halves):
            assert x.dtype == y.dtype and np.array_equal(x, y)
        assert whole[1].max() >= (deep - 1 if deep else 1)  # (nested, and as deep as built)
