"""The pytest plugin (profaudit.pytest_plugin), run in throwaway pytest sessions through pytester.

Budgets are tiny (0.05 s per case). The regression is a 2 ms sleep against a microsecond numpy
add, so the comparison is decided by a 1000x difference, not by this machine's speed.
"""

from __future__ import annotations

import importlib.metadata
import json

# Imported before the in-process sessions, which drop the modules they import: numpy and scipy
# cannot be imported twice in one process.
import numpy  # noqa: F401
import pytest
import scipy.stats  # noqa: F401

import profaudit.bench.session  # noqa: F401
import profaudit.compare.timing  # noqa: F401

pytest_plugins = ["pytester"]

FAST = '''
import numpy as np

def inputs(p, gen):
    return gen.randn((256,), "float32"), gen.randn((256,), "float32")

def test_add(profaudit_bench):
    r = profaudit_bench(np.add, inputs=inputs, reference=lambda a, b: a + b, backend="numpy")
    assert r["median_ns"] > 0 and r["samples"] >= 5
'''

SLOW = FAST.replace("profaudit_bench(np.add,", "profaudit_bench(slow_add,").replace(
    "def test_add", "import time\n\ndef slow_add(a, b):\n    time.sleep(0.002)\n    return a + b\n\ndef test_add"
)

BUDGET = ["--profaudit-max-time", "0.05", "--profaudit-min-samples", "6", "-p", "no:cacheprovider"]


def _plugin_args() -> list[str]:
    # installed (entry point) the plugin loads itself; from a source tree without the refreshed
    # metadata it is named explicitly. Asked the way pytest (pluggy) asks: every distribution's
    # entry points. `entry_points()` keeps one distribution per name, so a stale profaudit.egg-info
    # in the checkout (first on sys.path) hid the installed plugin from it while pytest loaded it,
    # and naming it again made every inner session fail ("already registered")
    eps = (ep for d in importlib.metadata.distributions() for ep in d.entry_points if ep.group == "pytest11")
    return [] if any(ep.value == "profaudit.pytest_plugin" for ep in eps) else ["-p", "profaudit.pytest_plugin"]


def run(pytester, *args):
    return pytester.runpytest_inprocess(*_plugin_args(), *BUDGET, *args)


def test_saves_then_passes_against_itself(pytester):
    pytester.makepyfile(test_k=FAST)
    r = run(pytester, "--profaudit-save", "base")
    r.assert_outcomes(passed=1)
    logs = list((pytester.path / ".profaudit" / "base").rglob("*.jsonl"))
    assert len(logs) == 1 and logs[0].parts[-3:-1] == ("test_k.test_add", "callable")
    header = json.loads(logs[0].read_text().splitlines()[0])
    assert header["format"] and header["meta"]["bench"]["status"] == "ok"
    # the median through profaudit.fmt.fmt_ns: three significant digits and the unit that fits
    r.stdout.re_match_lines([r".*profaudit benchmarks.*", r"test_k\.test_add callable: median \d+(\.\d+)? (ns|µs|ms|s) over \d{1,3}(,\d{3})* samples$"])
    same = run(pytester, "--profaudit-compare", "base", "--profaudit-max-slowdown", "1000%")
    same.assert_outcomes(passed=1)
    assert same.ret == 0
    same.stdout.fnmatch_lines(["profaudit compare: pass*"])


def test_regression_against_the_baseline_fails_the_session(pytester, monkeypatch):
    pytester.makepyfile(test_k=FAST)
    run(pytester, "--profaudit-save", "base").assert_outcomes(passed=1)
    pytester.makepyfile(test_k=SLOW)
    step = pytester.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    r = run(pytester, "--profaudit-compare", "base", "--profaudit-fail-on", "regression", "--profaudit-max-slowdown", "5%")
    r.assert_outcomes(passed=1)  # the test itself passes; the session fails on the gate
    assert r.ret == 1
    r.stdout.fnmatch_lines(["profaudit compare: FAIL (--fail-on regression, --max-slowdown 5%)*", "  test_k.test_add: significantly slower*"])
    assert "test_k.test_add" in step.read_text()
    assert (pytester.path / ".profaudit" / "latest" / "compare.md").is_file()
    # report only
    r = run(pytester, "--profaudit-compare", "base", "--profaudit-fail-on", "none")
    assert r.ret == 0


def test_inert_unless_used(pytester):
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    r = run(pytester)
    r.assert_outcomes(passed=1)
    assert "profaudit benchmarks" not in r.stdout.str()
    assert not (pytester.path / ".profaudit").exists()


def test_bad_options_and_wrong_kernels_are_reported(pytester):
    pytester.makepyfile(test_k=FAST)
    r = run(pytester, "--profaudit-compare", "nothing-saved")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["*no stored run*nothing-saved*"])
    pytester.makepyfile(test_w=FAST.replace("reference=lambda a, b: a + b", "reference=lambda a, b: a - b").replace("test_add", "test_wrong"))
    r = run(pytester, "test_w.py")
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*test_w.test_wrong* callable: correctness_failed*"])


def test_entry_point_is_declared():
    import tomllib
    from pathlib import Path

    doc = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert doc["project"]["entry-points"]["pytest11"]["profaudit"] == "profaudit.pytest_plugin"


def test_not_timed_under_xdist_workers(pytester):
    pytest.importorskip("xdist")
    pytester.makepyfile(test_k=FAST)
    r = pytester.runpytest_subprocess(*_plugin_args(), *BUDGET, "-n", "1", "-rs")
    r.assert_outcomes(skipped=1)
    r.stdout.fnmatch_lines(["*does not time under pytest-xdist workers*"])


def test_plugin_uses_only_public_profaudit_names():
    # the plugin is a client of the bench harness like any user's harness: private helpers
    # (profaudit.bench.session._run_one, ...) may change shape without notice
    import ast
    import inspect

    import profaudit.pytest_plugin as plugin

    private = [f"{n.module}.{a.name}" for n in ast.walk(ast.parse(inspect.getsource(plugin)))
               if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("profaudit") for a in n.names if a.name.startswith("_")]
    assert private == []
