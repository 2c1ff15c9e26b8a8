"""The memoisation test of the bench harness (profaudit/bench/runner.py: spot checks, `_memo_suspect`)
must not flag an honest kernel whose calls on new values are slowed by something that is not the
kernel: in a fresh-clone CI run on a loaded 2-core machine an honest CPU torch matmul's spot checks
took 23.6x its controls and the harness called it memoised (a wrong correctness_failed verdict).

Two causes, each on a modelled clock (tests/modelled_clock.py: every call runs for real, its time is
modelled, so the verdicts do not depend on this machine's load):
- host state the fresh call met and its control did not: the fresh call ran while the arrays just
  made for its new values were alive, the control after the harness had already dropped its own
  (`_AllocStateClock` charges a call that meets arrays made since the previous timed call: first
  touch, an allocator that had to grow). The control now does the fresh call's host work step for
  step, so both pay alike.
- a burst of load that happened to land on the calls on new values (`_BurstClock` slows the first
  round's calls on new values only). A flag now needs a second round, run at once on values drawn
  afresh, to agree; a memoised result is fast on seen values every time, a burst does not return on cue.

Beside the honest variant run two memoisers, one keyed on the input values and one on the buffers
and torch's write counter (the version cache of benchmarks/cpu_torch_sabotage.py): both are still
caught, by both rounds, whatever the clock charges the fresh calls."""

from __future__ import annotations

import json
import textwrap
import weakref
from pathlib import Path

import numpy as np
import pytest

from tests.modelled_clock import ModelledClock

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="CPU torch calls; the memoisers here key on CPU buffers")

# what each variant's last call ran on and whether it computed: the variants write it, the clock reads it
PROBE: dict = {}

BENCH = """
import torch
from profaudit import bench
from {module} import PROBE

def _seen(name, x, y, computed):
    PROBE[name] = (hash((x.numpy().tobytes(), y.numpy().tobytes())), computed)

def honest(x, y):
    _seen("honest", x, y, True)
    return x @ y

def _memo(store, name, key, x, y):
    hit = key in store
    if not hit:
        store.clear()
        store[key] = x @ y
    _seen(name, x, y, not hit)
    return store[key]

VALUES, BUFFERS = {}, {}
def value_memo(x, y):
    return _memo(VALUES, "value_memo", (x.numpy().tobytes(), y.numpy().tobytes()), x, y)

def buffer_memo(x, y):
    # the version cache of benchmarks/cpu_torch_sabotage.py: the buffers and torch's write counter
    return _memo(BUFFERS, "buffer_memo", (x.data_ptr(), y.data_ptr(), x._version, y._version), x, y)

B = bench.Benchmark(
    "memo_symmetry", backend="torch",
    inputs=lambda p, gen: (gen.randn((p["n"], p["n"]), "float32", scale=p["n"] ** -0.5), gen.randn((p["n"], p["n"]), "float32", scale=p["n"] ** -0.5)),
    reference=lambda x, y: x @ y,
    variants={"honest": honest, "value_memo": value_memo, "buffer_memo": buffer_memo},
    params=bench.grid(n=[64]), dtype="float32", baseline="honest")
"""

# spot rounds back to back after a stopping rule met at once, and spot rounds among measured blocks
BACK_TO_BACK = dict(min_samples=3, max_time_s=0.001, min_time_s=0.0, max_warmup_s=0.01, min_warmup_s=0.001, block_target_s=0.001)
QUICK = dict(min_samples=20, max_time_s=0.3, min_time_s=0.01, max_warmup_s=0.1, min_warmup_s=0.005, block_target_s=0.005)

FIXED_NS, WORK_NS = 5_000.0, 200_000.0  # a lookup costs the fixed part, a computing call both
SLOW = 25.0  # the factor on the work of a call the cause slows (the CI run saw 23.6x)


class _WorkClock(ModelledClock):
    """A call costs FIXED_NS, plus WORK_NS when it computed (its probe says so) times
    `factor(c, digest, pre)` (`digest`: the values it ran on; `pre`: what `pre_call` saw just before
    it); the fresh and control calls of an honest variant time alike unless the model charges one."""

    def __init__(self):
        super().__init__()
        self.seen: dict[str, set] = {}
        self.timed: dict[str, int] = {}
        self.charged: dict[str, int] = {}

    def factor(self, c, digest, pre) -> float:
        return 1.0

    def call_ns(self, c) -> float:
        pre = self.pre_call()
        c()
        digest, computed = PROBE[c.variant]
        f = self.factor(c, digest, pre) if computed else 1.0
        if f != 1.0:
            self.charged[c.variant] = self.charged.get(c.variant, 0) + 1
        self.seen.setdefault(c.variant, set()).add(digest)
        self.timed[c.variant] = self.timed.get(c.variant, 0) + 1
        return FIXED_NS + (WORK_NS * f if computed else 0.0)

    def pre_call(self):
        return None


class _AllocStateClock(_WorkClock):
    """Slows the work of a call that meets arrays the harness made from host values since the previous
    timed call and still holds (every array made through the backend's from_numpy is tracked)."""

    def __init__(self):
        super().__init__()
        self.made: list = []

    def track(self, monkeypatch) -> None:
        from profaudit.bench.backend_torch import TorchBackend

        orig = TorchBackend.from_numpy

        def from_numpy(backend, a, dtype):
            t = orig(backend, a, dtype)
            self.made.append(weakref.ref(t))
            return t

        monkeypatch.setattr(TorchBackend, "from_numpy", from_numpy)

    def pre_call(self):
        alive = any(r() is not None for r in self.made)
        self.made.clear()
        return alive

    def factor(self, c, digest, alive) -> float:
        return SLOW if alive else 1.0


class _BurstClock(_WorkClock):
    """Slows the work of each variant's first `spell` calls on values it had not been timed on (its
    first timed call aside): a burst of load over the first spot-check round's calls on new values."""

    def __init__(self, spell: int = 8):
        super().__init__()
        self.spell = spell
        self.burst: dict[str, int] = {}

    def factor(self, c, digest, pre) -> float:
        n = c.variant
        new = self.timed.get(n, 0) > 0 and digest not in self.seen.get(n, set())
        if new and self.burst.get(n, 0) < self.spell:
            self.burst[n] = self.burst.get(n, 0) + 1
            return SLOW
        return 1.0


def _run(tmp_path, monkeypatch, clock: _WorkClock, regime: dict) -> tuple[dict, Path]:
    from profaudit import bench
    from profaudit.bench.backend_torch import TorchBackend

    PROBE.clear()
    f = tmp_path / "memo_symmetry_bench.py"
    # this module as pytest imported it (the name depends on its import mode): the same PROBE
    f.write_text(textwrap.dedent(BENCH).replace("{module}", __name__))
    monkeypatch.setattr(TorchBackend, "timer", lambda self: clock)
    out = tmp_path / "out"
    m = bench.run_file(f, out, options=bench.RunOptions(seed=5, **regime))
    return m["cases"][0], out


def _correctness(out: Path, ve: dict) -> dict:
    with open(out / ve["log"]) as fh:
        return json.loads(fh.readline())["meta"]["bench"]["correctness"]


def _ratio(fresh, control) -> float:
    return float(np.median(fresh) / np.median(control))


def _memoisers_caught_twice(case: dict, out: Path) -> None:
    """Both memoisers are caught by the first round and confirmed by the second, and the line prints
    the ratios their own durations give."""
    v = case["variants"]
    for n in ("value_memo", "buffer_memo"):
        assert v[n]["status"] == "correctness_failed", (n, v[n]["error"])
        why = v[n]["error"]
        assert "\n" not in why and why.startswith("during timing: the 8 spot-checked calls") and "memoised on input values or buffers" in why, why
        c = _correctness(out, v[n])
        first = _ratio(c["spot_check_durations_ns"], c["control_durations_ns"])
        again = _ratio(c["confirm_durations_ns"], c["confirm_control_durations_ns"])
        assert len(c["confirm_durations_ns"]) == len(c["confirm_control_durations_ns"]) == 8, c
        # every control a lookup, every fresh call a computation, in both rounds
        assert all(d < 1.1 * FIXED_NS for d in c["control_durations_ns"] + c["confirm_control_durations_ns"]), c
        assert f"took {first:.1f}x as long" in why and f"confirmed it ({again:.1f}x, 8 of 8 pairs over 2x)" in why, (first, again, why)


@pytest.mark.parametrize("regime", [BACK_TO_BACK, QUICK], ids=["back_to_back", "quick"])
def test_an_honest_kernel_slowed_by_fresh_allocations_is_not_called_memoised(tmp_path, monkeypatch, regime):
    # before the control copied the fresh call's host work, only the fresh calls met arrays just
    # made and still held: the honest variant's spot checks took ~25x its controls and it failed
    clock = _AllocStateClock()
    clock.track(monkeypatch)
    case, out = _run(tmp_path, monkeypatch, clock, regime)
    assert case["time_source"] == "fake", case["error"]
    v = case["variants"]
    assert v["honest"]["status"] == "ok", v["honest"]["error"]
    c = _correctness(out, v["honest"])
    # the cause is in the model: the honest variant's checked calls were charged, both kinds alike
    assert clock.charged["honest"] >= 16, clock.charged
    assert _ratio(c["spot_check_durations_ns"], c["control_durations_ns"]) == pytest.approx(1.0, abs=0.05)
    # the memoisers looked memoised, so the second round ran, for every variant alike (its calls
    # are samples: a round for the suspects alone would give them more, and slower, samples)
    assert len(c["confirm_durations_ns"]) == len(c["confirm_control_durations_ns"]) == 8, c
    assert _ratio(c["confirm_durations_ns"], c["confirm_control_durations_ns"]) == pytest.approx(1.0, abs=0.05)
    _memoisers_caught_twice(case, out)


@pytest.mark.parametrize("regime", [BACK_TO_BACK, QUICK], ids=["back_to_back", "quick"])
def test_a_burst_of_load_on_the_first_rounds_fresh_calls_is_not_called_memoised(tmp_path, monkeypatch, regime):
    # the CI run's pattern: the first round's calls on new values ~25x their controls. One round
    # alone flagged it; the second round, on values drawn afresh, times like the controls
    clock = _BurstClock(spell=8)
    case, out = _run(tmp_path, monkeypatch, clock, regime)
    v = case["variants"]
    assert v["honest"]["status"] == "ok", v["honest"]["error"]
    c = _correctness(out, v["honest"])
    assert clock.burst["honest"] == 8
    first = _ratio(c["spot_check_durations_ns"], c["control_durations_ns"])
    assert first > 20, first  # the first round alone looks memoised
    from profaudit.bench.runner import _memo_suspect

    assert _memo_suspect(c["spot_check_durations_ns"], c["control_durations_ns"]) is not None
    # ... the second one does not, and its evidence is in the log
    assert len(c["confirm_durations_ns"]) == len(c["confirm_control_durations_ns"]) == 8
    assert _ratio(c["confirm_durations_ns"], c["confirm_control_durations_ns"]) == pytest.approx(1.0, abs=0.05)
    assert _memo_suspect(c["confirm_durations_ns"], c["confirm_control_durations_ns"]) is None
    _memoisers_caught_twice(case, out)


def test_memo_suspect_needs_every_fresh_call_slow():
    from profaudit.bench.runner import _memo_suspect

    ctrl = [90_000.0] * 8
    # a burst over 7 of 8 fresh calls (22x median, 7 of 8 pairs over 2x): the eighth computed as
    # fast as the controls, so the kernel is not fast only on values it has seen
    assert _memo_suspect([2_000_000.0] * 7 + [95_000.0], ctrl) is None
    # a memoiser: every fresh call computes (~40x a lookup); two controls slowed by load do not hide it
    why = _memo_suspect([200_000.0] * 8, [5_000.0] * 6 + [3_000_000.0] * 2)
    assert why is not None and "took 40.0x as long" in why and "(6 of 8 pairs over 2x)" in why, why
    # fewer than 3 pairs: no verdict either way
    assert _memo_suspect([200_000.0] * 2, [5_000.0] * 2) is None
