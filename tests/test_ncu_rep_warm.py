"""The `.ncu-rep` zygote's warm-up (ncu_rep.warm_reader) leaves no report's state behind: a report
read after the zygote warmed up on another report comes out exactly as from a zygote never warmed,
including two reports of one GPU and one ncu version whose derived metrics ncu_report names with
different units. The same check with a warm-up that also asks for units (what must never be done)
fails, so the check can tell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from profaudit.parsers import isolate
from tests.conftest import corpus_file

pytestmark = [pytest.mark.corpus, pytest.mark.skipif(not isolate.can_isolate(), reason="needs fork")]

# Run in a new interpreter: this test process may have read reports through ncu_report itself,
# and a forked zygote (the fallback where none can be spawned) would be a copy of it.
_COMPARE = """
import json, sys
import profaudit
from profaudit.parsers import isolate, ncu_rep

first, second, mode = sys.argv[1:4]
if mode == "units":
    from tests.isolated_helpers import warm_with_units
    ncu_rep.warm_reader = warm_with_units

def rows(path):
    p = next(iter(profaudit.load(path, parallel=False)))
    # repr: NaN values compare equal as text
    return {"kernels": repr(p.kernels.rows()), "metrics": [repr(r) for r in p.metrics.rows()], "units": p.metrics["unit"].to_list()}

cold = rows(second)  # the first read of a zygote: it is never warmed before it
isolate._stop_worker()
rows(first)  # a fresh zygote; this read is the one its warm-up will use
warm = rows(second)
st = isolate.zygote_stats(ncu_rep.prepare_reader)
diff = [i for i, (a, b) in enumerate(zip(cold["metrics"], warm["metrics"])) if a != b]
print(json.dumps({
    "warmed": st["warmed"], "warm_cpu_s": st["warm_cpu_s"],
    "same_kernels": cold["kernels"] == warm["kernels"],
    "same_rows": len(cold["metrics"]) == len(warm["metrics"]) and not diff,
    "unit_changes": sorted({(cold["units"][i], warm["units"][i]) for i in diff if cold["units"][i] != warm["units"][i]}),
}))
"""


def _compare(first: Path, second: Path, mode: str = "values") -> dict:
    repo = Path(__file__).parents[1]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    out = subprocess.run([sys.executable, "-c", _COMPARE, str(first), str(second), mode], capture_output=True, text=True, cwd=str(repo), env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


# (warming report, report read after it): one GPU (RTX 4090) and one ncu version (2023.1.0) whose
# derived metrics have other units; and an sm_89 report before an sm_75 one of the same ncu version.
SAME_KEY = ("Lashi0812__CudaProgramming__smemReduceInteger.ncu-rep", "Lashi0812__CudaProgramming__smemTranspose.ncu-rep")
OTHER_GPU = ("victor-lvsy__seq_align__profile.ncu-rep", "armleth__cuda-mlp-inference__report.ncu-rep")


@pytest.mark.parametrize("pair", [SAME_KEY, OTHER_GPU], ids=["same-gpu-and-version", "other-gpu"])
def test_a_report_read_after_the_warm_up_is_as_read_cold(pair):
    pytest.importorskip("ncu_report")
    first, second = (corpus_file("ncu-rep", name) for name in pair)
    got = _compare(first, second)
    assert got["warmed"] and got["warm_cpu_s"] > 0  # the warm-up did run before the second read
    assert got["same_kernels"] and got["same_rows"], got


def test_a_warm_up_that_asks_for_units_would_leak():
    """The check above can fail: warmed with unit() calls, the second report of the same GPU and
    ncu version gets the first report's units for its derived metrics."""
    pytest.importorskip("ncu_report")
    first, second = (corpus_file("ncu-rep", name) for name in SAME_KEY)
    got = _compare(first, second, "units")
    assert got["warmed"] and not got["same_rows"]
    assert ["byte", "sector"] in got["unit_changes"] or ["sector", "byte"] in got["unit_changes"], got
