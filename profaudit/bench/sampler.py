"""Telemetry sampled *while* a timed block runs, and an optional thermal cool-down between blocks.

A single NVML reading after a block sees an idle GPU: its clock has already recovered, its
power is the idle draw, and a throttle event during the block is gone. `BlockSampler` reads the
telemetry in a background thread from just before the block's first call until the block has
synchronised, and summarises what the block ran under: the lowest SM and memory clocks, the
highest temperature and power, and every throttle reason seen. NVML calls go through ctypes,
which releases the GIL, so the thread costs the timing loop little; the CUDA-event timer runs
its block behind a blocking kernel, so host-side jitter does not reach the event intervals.

`cool_down(telemetry, below_c, max_s)` waits (sleeping, nothing on the GPU) until the GPU is
under a temperature before the next block, like nsight-python's `thermal_mode`, so that a long
sweep does not time its later cases on a hotter, lower-clocked GPU.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

# how often the thread reads the telemetry: NVML refreshes clocks and power every few ms
DEFAULT_INTERVAL_S = 0.005


def summarise(samples: list[dict[str, Any]]) -> dict[str, Any] | None:
    """What a block ran under: minimum clocks, maximum temperature and power, the throttle
    reasons seen ('none' when none). None for no samples."""
    if not samples:
        return None

    def vals(key: str) -> list[float]:
        return [float(s[key]) for s in samples if s.get(key) is not None]

    out: dict[str, Any] = {}
    for key, pick in (("sm_clock_mhz", min), ("mem_clock_mhz", min), ("temperature_c", max), ("power_w", max)):
        v = vals(key)
        out[key] = pick(v) if v else None
    reasons: list[str] = []
    seen_any = False
    for s in samples:
        r = s.get("throttle_reasons")
        if r is None:
            continue
        seen_any = True
        for name in str(r).split(","):
            name = name.strip()
            if name and name != "none" and name not in reasons:
                reasons.append(name)
    out["throttle_reasons"] = ",".join(reasons) if reasons else ("none" if seen_any else None)
    return out


class BlockSampler:
    """Context manager: telemetry samples in a background thread for the duration of the block.

    The first sample is taken before `__enter__` returns (so even a block shorter than the
    interval has one taken while it was being queued), then one every `interval_s` until
    `__exit__`; `summary()` gives the block's figures and `count` how many samples were read."""

    def __init__(self, sample: Callable[[], dict[str, Any] | None], interval_s: float = DEFAULT_INTERVAL_S):
        self._sample = sample
        self.interval_s = float(interval_s)
        self.samples: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._first = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: str | None = None

    def _loop(self) -> None:
        while True:
            try:
                s = self._sample()
            except Exception as exc:  # telemetry must never end a benchmark: record and stop
                self.error = f"{type(exc).__name__}: {exc}"
                self._first.set()
                return
            if s:
                self.samples.append(s)
            self._first.set()
            if self._stop.wait(self.interval_s):
                return

    def __enter__(self) -> "BlockSampler":
        self._thread = threading.Thread(target=self._loop, name="profaudit-telemetry", daemon=True)
        self._thread.start()
        self._first.wait(5.0)
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)

    @property
    def count(self) -> int:
        return len(self.samples)

    def summary(self) -> dict[str, Any] | None:
        return summarise(list(self.samples))


def cool_down(sample: Callable[[], dict[str, Any] | None], below_c: float, max_s: float, sleep: Callable[[float], None] = time.sleep, step_s: float = 0.25) -> float:
    """Sleep until the temperature reads under `below_c` (or `max_s` passed); the seconds waited.
    A telemetry without temperature waits not at all."""
    waited = 0.0
    while waited < max_s:
        s = sample() or {}
        t = s.get("temperature_c")
        if t is None or float(t) < below_c:
            break
        d = min(step_s, max_s - waited)
        sleep(d)
        waited += d
    return waited
