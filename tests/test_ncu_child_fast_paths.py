"""The `.ncu-rep` child's cheaper paths give the same bytes as the general ones they stand in for:
Columns.extend_instances against Columns.extend (codes, nulls, flushes, string order), the
instance reader's all-null columns as None, the metric entry points called with SWIG's pointer
object instead of the proxy (a corpus report's whole answer, byte for byte), and isolate's message
framing for answers larger than a pipe holds (written with writev, read in place with readv). The
child runs with the cyclic collector off."""

from __future__ import annotations

import functools
import gc
import os
import pickle
import random
import threading
import time
from array import array

import pytest

from profaudit.parsers import isolate, ncu_child
from profaudit.parsers.ncu_child import Columns, IntKeys
from tests.conftest import corpus_files

_U64 = (1 << 64) - 1


def _pick_list(rng: random.Random, n: int, pool: list, null_share: float) -> list:
    return [None if rng.random() < null_share else rng.choice(pool) for _ in range(n)]


def _random_instances(rng: random.Random) -> dict:
    """One instanced metric's arguments, covering what the reader hands over and the odd cases
    (a value a column cannot hold, text ids, ids past the ids metric's count)."""
    n = rng.choice([1, 2, 5, 29, 64, 130]) if rng.random() < 0.97 else rng.randint(4090, 4200)
    value_pool = [0.0, -1.25, 1e300, float("inf"), float("nan"), 3, 1 << 70]
    value = _pick_list(rng, n, value_pool, rng.choice([0.0, 0.0, 0.3, 1.0]))
    value_str = None if rng.random() < 0.6 else _pick_list(rng, n, ["", "x", "ünïcode", "a;b", str(_U64)], rng.choice([0.0, 0.5, 1.0]))
    value_int = None if rng.random() < 0.5 else _pick_list(rng, n, [0, 7, -3, (1 << 63) - 1, 1 << 63, _U64, 1.5], rng.choice([0.0, 0.3, 1.0]))
    pick = rng.random()
    if pick < 0.3:
        keys = None
    elif pick < 0.8:
        k = rng.randint(0, n)
        keys = IntKeys(array("Q", [rng.choice([0, 1, 12345, (1 << 63) + 5, _U64]) for _ in range(k)]), n - k)
    else:
        keys = _pick_list(rng, n, ["0", "sm_1", "", "ünï"], 0.3)
    return {
        "n": n, "kid": rng.randint(0, 5), "metric": rng.choice(["sm__a", "dram__b", "l1tex__c", "new__" + str(rng.randint(0, 9))]),
        "unit": rng.choice(["byte", "sector", "", None, "cycle"]), "kind": rng.choice(["metric", "launch", "device"]),
        "value": value, "value_str": value_str, "value_int": value_int, "keys": keys,
    }


def _copy(v):
    if isinstance(v, IntKeys):
        return IntKeys(array("Q", v.ids), v.pad)
    return list(v) if isinstance(v, list) else v


@pytest.mark.parametrize("seed", range(12))
def test_extend_instances_equals_extend(seed):
    rng = random.Random(seed)
    flush_rows = rng.choice([50, 300, 250_000])
    chunks_a: list = []
    chunks_b: list = []
    a, b = Columns(sink=chunks_a.append), Columns(sink=chunks_b.append)
    a.FLUSH_ROWS = b.FLUSH_ROWS = flush_rows
    for _ in range(rng.randint(5, 40)):
        if rng.random() < 0.25:  # an aggregate block or rule rows in between: new strings, other codes
            n = rng.randint(1, 20)
            cols = {"kernel_id": rng.randint(0, 5), "metric": [f"m{rng.randint(0, 30)}" for _ in range(n)], "unit": rng.choice(["byte", None, "new"]),
                    "value": _pick_list(rng, n, [1.0, 2.5], 0.2), "section": rng.choice([None, "Launch"]), "kind": rng.choice(["rule", "metric"])}
            a.extend(n, **{k: _copy(v) for k, v in cols.items()})
            b.extend(n, **{k: _copy(v) for k, v in cols.items()})
            continue
        i = _random_instances(rng)
        n = i["n"]
        a.extend(
            n, kernel_id=i["kid"], metric=i["metric"], unit=i["unit"], value=list(i["value"]),
            value_str=[None] * n if i["value_str"] is None else list(i["value_str"]),
            value_int=[None] * n if i["value_int"] is None else list(i["value_int"]),
            instance=list(range(n)), instance_key=_copy(i["keys"]), kind=i["kind"],
        )
        b.extend_instances(n, i["kid"], i["metric"], i["unit"], i["kind"], list(i["value"]), _copy(i["value_str"]), _copy(i["value_int"]), _copy(i["keys"]))
    chunks_a.append(a.chunk())
    chunks_b.append(b.chunk())
    assert len(chunks_a) == len(chunks_b)
    for x, y in zip(chunks_a, chunks_b):
        assert pickle.dumps(x) == pickle.dumps(y)


class _FakeSwig:
    """The accessors _instance_values calls, over a metric given as a list of (kind, value)."""

    K_DOUBLE, K_FLOAT, K_UINT32, K_UINT64, K_STRING = 1, 2, 3, 4, 5

    @staticmethod
    def kind(m, i):
        return m[i][0]

    @staticmethod
    def as_double(m, i):
        return float(m[i][1])

    @staticmethod
    def as_uint64(m, i):
        return int(m[i][1])

    @staticmethod
    def as_string(m, i):
        return str(m[i][1])


@pytest.mark.parametrize("metric", [
    [(1, 0.5), (1, 2.0)],  # doubles: no text, no integer
    [(4, 3), (4, 5)],  # integers in range: no text
    [(4, 3), (4, _U64)],  # one past int64: text for it
    [(5, "a"), (5, "b")],  # text: no integer
    [(9, 0), (9, 1)],  # a kind the reader does not know
    [(1, 0.5), (4, 7), (5, "x")],  # mixed kinds
])
def test_instance_values_all_null_columns_as_none(metric):
    sw = _FakeSwig()
    lists = ncu_child._instance_values(sw, metric, len(metric))
    nones = ncu_child._instance_values(sw, metric, len(metric), True)
    for full, short in zip(lists, nones):
        assert short == full or (short is None and full == [None] * len(metric))
    assert lists[0] == nones[0]  # values always come as a list


def _write_messages(fd: int, messages: list) -> None:
    for m in messages:
        isolate._send(fd, m)
    os.close(fd)


@pytest.mark.parametrize("size", [0, 100, (1 << 16) - 40, 1 << 16, (1 << 16) + 1, 300_000, 3 << 20])
def test_large_messages_cross_the_pipe_whole(size):
    r, w = os.pipe()
    payload = ("chunk", {"blob": bytes(range(256)) * (size // 256) + b"x" * (size % 256), "n": size})
    messages = [payload, ("done", size)]
    t = threading.Thread(target=_write_messages, args=(w, messages))
    t.start()
    try:
        got = [isolate._recv(r, time.monotonic() + 60) for _ in range(3)]
    finally:
        t.join()
        os.close(r)
    assert got == [payload, ("done", size), None]


@pytest.mark.parametrize("size", [100, 300_000])
def test_a_message_cut_short_is_end_of_file(size):
    r, w = os.pipe()
    data = pickle.dumps(b"y" * size)
    framed = isolate._LEN.pack(len(data)) + data

    def write_part():
        view = memoryview(framed)[: len(framed) - 7]
        while view:
            view = view[os.write(w, view):]
        os.close(w)

    t = threading.Thread(target=write_part)
    t.start()
    try:
        assert isolate._recv(r, time.monotonic() + 60) is None
    finally:
        t.join()
        os.close(r)


def _collector_state(send):
    return gc.isenabled()


@pytest.mark.skipif(not isolate.can_isolate(), reason="needs fork")
def test_the_child_reads_without_the_cyclic_collector(tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(b"x")
    assert gc.isenabled()
    try:
        assert isolate.run_isolated(f, functools.partial(_collector_state), lambda c: None, "the test reader") is False
    finally:
        isolate._stop_worker()
    assert gc.isenabled()  # this process's collector is untouched


class _Proxy:
    def __init__(self, this):
        self.this = this


def test_pointer_is_the_proxys_this_and_passes_anything_else_on():
    inner = object()
    assert ncu_child._pointer(_Proxy(inner)) is inner
    assert ncu_child._pointer(None) is None  # a damaged report's missing metric: refused by the entry point, as before
    assert ncu_child._pointer(inner) is inner


def _answer(path: str, proxies: bool, send) -> bytes:
    """A child's whole answer for `path` (chunks and result, pickled), with the entry points given
    the proxies (as before _pointer) or the pointer objects (as the reader does)."""
    if proxies:
        ncu_child._pointer = lambda m: m  # this child's own copy of the module: it ends after the read
    chunks: list = []
    res = ncu_child.read_actions(path, chunks.append)
    return pickle.dumps((chunks, res), protocol=pickle.HIGHEST_PROTOCOL)


_SMALL_REPORTS = sorted(corpus_files("ncu-rep", "*.ncu-rep"), key=lambda p: p.stat().st_size)[:3]


@pytest.mark.corpus
@pytest.mark.skipif(not isolate.can_isolate(), reason="needs fork")
@pytest.mark.parametrize("path", _SMALL_REPORTS, ids=[p.name for p in _SMALL_REPORTS])
def test_pointer_calls_read_what_proxy_calls_read(path):
    pytest.importorskip("ncu_report")
    prepare = functools.partial(ncu_child.prepare_reader, huge_pages=False)  # its own zygote, forked from here
    try:
        via_proxy, via_pointer = (
            isolate.run_isolated(path, functools.partial(_answer, str(path), proxies), lambda c: None, "the test reader", prepare=prepare)
            for proxies in (True, False)
        )
    finally:
        isolate._stop_worker()
    assert via_pointer == via_proxy
