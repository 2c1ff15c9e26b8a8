"""Chrome-trace assembly on two threads (`chrome_trace._Helper` / `_Task`): the same tables as on
one thread, errors in the order one thread raises them, and a task run by the thread that needs
it when the helper is still busy."""

from __future__ import annotations

import threading

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
