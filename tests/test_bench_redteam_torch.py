"""Sabotaged torch kernels run through profaudit's own harness on CPU torch (engineer G, session 13):
benchmarks/cpu_torch_sabotage.py holds them (a cache keyed on the buffers' write counter, work
handed to a thread, bfloat16 inside a float32 case, half the rows, a float16 output) beside an
honest variant. Each is caught with one line naming the check; the honest one stays ok. The
harness retires a caught variant and keeps timing the rest, so the file runs one case.

The catch of the buffer-version cache is a timing verdict (its spot-checked calls on new values
against controls on the values it has seen), so the strict test times the real calls on a
modelled clock (`_WorkClock`): the same log at any load. On the host clock, a busy CI machine
made the honest variant's spot checks take 23.6x its controls and flagged it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.modelled_clock import ModelledClock

torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[1]
QUICK = dict(min_samples=20, max_time_s=0.3, min_time_s=0.01, max_warmup_s=0.1, min_warmup_s=0.005, block_target_s=0.005)

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="CPU saboteurs; on a GPU benchmarks/gpu_capture.sh runs gpu_sabotage.py")


# the stopping rule met at once: the spot-check rounds then come back to back, with no timed call
# between a round's restore and the next round's controls
BACK_TO_BACK = dict(min_samples=3, max_time_s=0.001, min_time_s=0.0, max_warmup_s=0.01, min_warmup_s=0.001, block_target_s=0.001)

N = 128  # cpu_torch_sabotage's one case
FULL_FLOPS = 2 * N**3


def _matmul_flops_mode():
    """A torch dispatch mode that counts the matrix-multiply FLOPs run on this thread. Torch's
    mode stack is per thread, so work a call hands to another thread (async_worker) is not
    counted, as a timer that stops when the call returns would not see it either."""
    from torch.utils._python_dispatch import TorchDispatchMode

    mm = {torch.ops.aten.mm.default, torch.ops.aten.addmm.default, torch.ops.aten.bmm.default}

    class MatmulFlops(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.flops = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func in mm:
                a = args[-2]  # addmm(bias, a, b): the operands are the last two
                self.flops += 2 * out.numel() * a.shape[-1]
            return out

    return MatmulFlops()


class _WorkClock(ModelledClock):
    """Modelled device time (tests/modelled_clock.py): a fixed cost per call plus the
    matrix-multiply work the call did on the calling thread, with seeded 1% noise. A cache hit does
    no multiply, so it times as a lookup, as it would on a quiet machine; an honest call always does
    the whole multiply, so its fresh and control calls time alike whatever else runs on the host."""

    def __init__(self, fixed_ns: float = 5_000.0, ns_per_flop: float = 0.05):
        super().__init__()
        self.fixed_ns, self.ns_per_flop = fixed_ns, ns_per_flop
        self.flops: dict[str, list[int]] = {}

    def call_ns(self, c) -> float:
        with _matmul_flops_mode() as work:
            c()
        self.flops.setdefault(c.variant, []).append(work.flops)
        return self.fixed_ns + work.flops / c.repeat * self.ns_per_flop


def _run(tmp_path, monkeypatch, regime, clock: _WorkClock | None):
    from profaudit import bench
    from profaudit.bench.backend_torch import TorchBackend

    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    if clock is not None:
        monkeypatch.setattr(TorchBackend, "timer", lambda self: clock)
    return bench.run_file(REPO / "benchmarks" / "cpu_torch_sabotage.py", tmp_path / "out", options=bench.RunOptions(seed=3, **regime))


def _checks(out: Path, ve: dict) -> dict:
    """The correctness facts the variant's log header records (spot checks and their controls)."""
    with open(out / ve["log"]) as f:
        return json.loads(f.readline())["meta"]["bench"]["correctness"]


def _value_checks_catch(v: dict) -> None:
    """The saboteurs the value checks catch, whatever the clock says."""
    # async_worker is caught by a value check; which values it shows (NaN where its worker had not
    # written yet, or a product of inputs the harness had already changed) depends on where the
    # worker thread is when the output is copied, so the line is not pinned beyond that
    assert v["async_worker"]["status"] == "correctness_failed" and "elements differ from the reference" in v["async_worker"]["error"], v["async_worker"]["error"]
    assert "beyond rtol=0.0001" in v["bf16_inside"]["error"]
    assert "elements differ from the reference" in v["half_rows"]["error"]
    # deterministic: caught by the first check, before any timing
    for n in ("bf16_inside", "half_rows", "half_dtype"):
        assert v[n]["status"] == "correctness_failed" and v[n]["error"].startswith("before timing, input set 0: "), (n, v[n]["error"])
        assert v[n]["log"] is None, n  # never timed
    assert all("\n" not in (ve["error"] or "") for ve in v.values())


@pytest.mark.parametrize("regime", [QUICK, BACK_TO_BACK], ids=["quick", "back_to_back"])
def test_sabotaged_torch_variants_are_caught_and_the_honest_one_is_not(tmp_path, monkeypatch, regime):
    from profaudit import bench
    from profaudit.errors import UsageError

    clock = _WorkClock()
    m = _run(tmp_path, monkeypatch, regime, clock)
    from cpu_torch_sabotage import EXPECTED

    case = m["cases"][0]
    assert case["time_source"] == "fake"
    v = case["variants"]
    assert {n: ve["status"] for n, ve in v.items()} == EXPECTED, {n: ve["error"] for n, ve in v.items()}
    _value_checks_catch(v)
    # the buffer-version cache passes every value check: only the timing of its spot checks
    # (a control on the untouched inputs against a call on new values) shows the lookup
    why = v["version_cache"]["error"]
    assert why.startswith("during timing: the ") and "memoised on input values or buffers" in why, why
    # the modelled clock timed the honest and the caching variant (and async_worker when it got
    # through the checks before timing); the others never got past those checks
    timed = {n for n, ve in v.items() if ve["log"] is not None}
    assert {"honest", "version_cache"} <= timed <= {"honest", "version_cache", "async_worker"}
    assert set(clock.flops) == timed
    # every honest call did the whole multiply, so its spot checks time like their controls
    assert set(clock.flops["honest"]) == {FULL_FLOPS}
    hc = _checks(tmp_path / "out", v["honest"])
    assert v["honest"]["spot_checks"] == hc["spot_checks"] == 8
    assert len(hc["spot_check_durations_ns"]) == len(hc["control_durations_ns"]) == 8
    ratio = np.median(hc["spot_check_durations_ns"]) / np.median(hc["control_durations_ns"])
    assert ratio == pytest.approx(1.0, abs=0.05), ratio
    # the harness's controls really ran on buffers the cache had seen (no multiply: a lookup), and
    # every call on new values computed; a control that rewrote the inputs (bumping the write
    # counter) would have missed the cache, timed like the fresh call, and let it through
    vc = _checks(tmp_path / "out", v["version_cache"])
    assert len(vc["spot_check_durations_ns"]) == len(vc["control_durations_ns"]) == 8
    lookup_ns, full_ns = clock.fixed_ns, clock.fixed_ns + FULL_FLOPS * clock.ns_per_flop
    assert all(d < 1.1 * lookup_ns for d in vc["control_durations_ns"]), vc["control_durations_ns"]
    assert all(0.9 * full_ns < d < 1.1 * full_ns for d in vc["spot_check_durations_ns"]), vc["spot_check_durations_ns"]
    assert "(8 of 8 pairs over 2x)" in why, why
    # the ratio the line prints is the one its own durations give
    shown = np.median(vc["spot_check_durations_ns"]) / np.median(vc["control_durations_ns"])
    assert f"took {shown:.1f}x as long" in why, (shown, why)
    # no claim for a caught variant: bench compare refuses to write one and gives the check's line
    for cand in ("version_cache", "async_worker", "bf16_inside", "half_rows", "half_dtype"):
        if cand in timed:
            o = bench.compare_run(tmp_path / "out", "honest", cand)[0]
            assert o.verdict == "FAIL" and o.claim_path is None and o.report is None, cand
            assert o.reasons == [f"the candidate {cand!r} correctness failed in the benchmark run ({Path(v[cand]['log']).name}): {v[cand]['error']}"], o.reasons
            continue
        # caught before timing: no timing log at all, and compare says why
        with pytest.raises(UsageError) as exc:
            bench.compare_run(tmp_path / "out", "honest", cand)
        assert f"{cand!r} has no timing log in cpu_sabotage[n=128]: correctness_failed: {v[cand]['error']}" in str(exc.value), str(exc.value)


def test_saboteurs_on_the_host_clock_are_caught_by_the_value_checks(tmp_path, monkeypatch):
    """The real host timer, back to back: the value checks that catch four saboteurs before any
    timing do not depend on how busy the machine is. Whether the version cache's lookups time as
    such (and the honest variant's checks like its controls) does, so that verdict is asserted on
    the modelled clock above only."""
    m = _run(tmp_path, monkeypatch, BACK_TO_BACK, None)
    case = m["cases"][0]
    assert case["time_source"] == "host"
    _value_checks_catch(case["variants"])
    # timed for real: both variants that pass the value checks have samples
    assert all(case["variants"][n]["samples"] >= 3 for n in ("honest", "version_cache"))
