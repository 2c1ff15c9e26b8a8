"""Telemetry read while the timed block runs, and the thermal cool-down (profaudit.bench.sampler),
with stand-in telemetry: no NVML, no GPU, no dependence on this machine's speed."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest


def test_summary_takes_the_worst_of_the_block():
    from profaudit.bench.sampler import summarise

    s = summarise([
        {"sm_clock_mhz": 1980.0, "mem_clock_mhz": 2619.0, "temperature_c": 51.0, "power_w": 300.0, "throttle_reasons": "none"},
        {"sm_clock_mhz": 1410.0, "mem_clock_mhz": 2619.0, "temperature_c": 58.0, "power_w": 690.0, "throttle_reasons": "sw_power_cap"},
        {"sm_clock_mhz": 1600.0, "mem_clock_mhz": None, "temperature_c": 57.0, "power_w": 650.0, "throttle_reasons": "sw_power_cap,hw_slowdown"},
    ])
    assert s == {"sm_clock_mhz": 1410.0, "mem_clock_mhz": 2619.0, "temperature_c": 58.0, "power_w": 690.0, "throttle_reasons": "sw_power_cap,hw_slowdown"}
    assert summarise([]) is None
    assert summarise([{"sm_clock_mhz": 1.0, "throttle_reasons": "none"}])["throttle_reasons"] == "none"


def test_samples_are_taken_while_the_block_runs():
    from profaudit.bench.sampler import BlockSampler

    state = {"in_block": False}
    threads = set()

    def sample():
        threads.add(threading.current_thread().name)
        # the GPU throttles only while the block runs
        return {"sm_clock_mhz": 1200.0 if state["in_block"] else 1980.0, "throttle_reasons": "hw_slowdown" if state["in_block"] else "none"}

    with BlockSampler(sample, interval_s=0.001) as smp:
        assert smp.count >= 1  # one reading before the block's first call
        state["in_block"] = True
        n0 = smp.count
        deadline = time.monotonic() + 10
        while smp.count <= n0 + 1 and time.monotonic() < deadline:  # the "kernels" run...
            time.sleep(0.001)
        state["in_block"] = False
    assert threads == {"profaudit-telemetry"}  # never on the timing thread
    s = smp.summary()
    assert s["sm_clock_mhz"] == 1200.0 and s["throttle_reasons"] == "hw_slowdown"
    n = smp.count
    time.sleep(0.01)
    assert smp.count == n  # stopped with the block


def test_a_failing_telemetry_read_never_ends_the_block():
    from profaudit.bench.sampler import BlockSampler

    def boom():
        raise RuntimeError("NVML_ERROR_GPU_IS_LOST")

    with BlockSampler(boom, interval_s=0.001) as smp:
        pass
    assert smp.summary() is None and "GPU_IS_LOST" in smp.error


def test_cool_down_waits_until_under_the_threshold():
    from profaudit.bench.sampler import cool_down

    temps = iter([91.0, 86.0, 79.0, 70.0])
    slept = []
    waited = cool_down(lambda: {"temperature_c": next(temps)}, 80.0, 30.0, sleep=slept.append, step_s=0.5)
    assert slept == [0.5, 0.5] and waited == 1.0
    # bounded: a GPU that never cools is waited for at most max_s
    slept.clear()
    assert cool_down(lambda: {"temperature_c": 95.0}, 80.0, 1.2, sleep=slept.append, step_s=0.5) == pytest.approx(1.2)
    assert cool_down(lambda: {}, 80.0, 30.0, sleep=slept.append) == 0.0  # no temperature: no wait


class _CoolingTelemetry:
    """A GPU that is hot at first and cools one degree per cool-down reading (its 0.25 s sleeps)."""

    available = True
    source = "test"

    def __init__(self):
        self.t = 86.0
        self.reads = 0

    def sample(self):
        self.reads += 1
        if threading.current_thread() is threading.main_thread():
            # the cool-down's reads (the block sampler's run on its own thread, during the work)
            self.t = max(60.0, self.t - 1.0)
        return {"sm_clock_mhz": 1500.0, "temperature_c": self.t, "power_w": 100.0, "throttle_reasons": "none"}

    def before_run(self):
        return {}


def test_run_records_cool_downs_and_block_telemetry():
    from profaudit import bench
    from profaudit.bench.backends import get_backend
    from profaudit.bench.runner import run_case

    b = bench.Benchmark("v", backend="fake", inputs=lambda p, g: (g.randn((32,), "float32"), g.randn((32,), "float32")),
                        reference=lambda x, y: x + y, variants={"a": bench.Variant(lambda x, y: x + y, model_ns=lambda p: 2e4)})
    opts = bench.RunOptions(min_samples=20, max_samples=60, min_time_s=0.0, max_time_s=0.01, min_warmup_s=0.0, max_warmup_s=0.01,
                            block_target_s=0.001, cooldown_c=80.0, cooldown_max_s=2.0, spot_checks=2).validate()
    tele = _CoolingTelemetry()
    res = run_case(b.cases()[0], ["a"], get_backend("fake", options={"seed": 1}), opts, tele)
    r = res.variants["a"]
    assert r.status == "ok", r.error
    tc = r.meta["thermal_cooldown"]
    assert tc["below_c"] == 80.0 and tc["waits"] >= 1 and tc["seconds"] > 0
    assert "background thread" in r.meta["telemetry_sampling"]
    measured = [row for row in r.rows if row["phase"] == "measure"]
    # every block's rows carry what the thread read during it
    assert measured and all(row["temperature_c"] is not None and row["sm_clock_mhz"] == 1500.0 for row in measured)
    assert np.isfinite([row["duration_ns"] for row in measured]).all()
