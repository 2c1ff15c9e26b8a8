"""A modelled clock for tests that run the bench harness over real kernels (torch on the CPU).

Host timing of real calls depends on how busy the machine is: on a loaded CI machine it flaked
verdicts that are about the harness, not about the machine (PA101 saw a 1.08x warm-up head; an
honest kernel's spot checks took 23.6x its controls). A subclass says what one call costs in its
model; every call still runs for real, so the value checks, repeat calls and spot checks see real
outputs. The harness's budget clock follows the modelled time (`clock_ns`) and no batches are
asked for, so the samples and every verdict are the same on any machine at any load. The logs say
`fake`, the simulated device's time source, so they never pass as measurements.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


class ModelledClock(ABC):
    """A timer for the torch backend (`TorchBackend.timer`) reporting modelled times with seeded
    lognormal noise of `noise` (relative) and `gap_ns` between calls."""

    time_source = "fake"
    synchronized = True

    def __init__(self, gap_ns: float = 2_000.0, noise: float = 0.01, seed: int = 0):
        self.gap_ns, self.noise = gap_ns, noise
        self.clock_ns = 0.0
        self.rng = np.random.default_rng(seed)

    @abstractmethod
    def call_ns(self, c) -> float:
        """Run the bound call `c` (its `repeat` calls) and return the modelled time of one, without noise."""

    def run(self, calls, flush):
        starts, durs = [], []
        for c in calls:
            if flush is not None:
                flush()
            t = self.call_ns(c) * float(np.exp(self.rng.normal(0.0, self.noise))) * c.repeat
            starts.append(self.clock_ns)
            durs.append(t)
            self.clock_ns += t + self.gap_ns
        return starts, durs
