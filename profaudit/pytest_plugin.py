"""pytest plugin: time callables through profaudit's bench harness and gate on a stored baseline.

Installed with the package (entry point `pytest11`), and inert unless a test uses the
`profaudit_bench` fixture or a `--profaudit-*` option is given::

    def test_add(profaudit_bench):
        r = profaudit_bench(
            np.add,
            inputs=lambda p, gen: (gen.randn((4096,), "float32"), gen.randn((4096,), "float32")),
            reference=lambda a, b: a + b,        # the harness checks correctness before and after
            backend="numpy",
        )
        r["median_ns"]

(`profaudit_bench(bench.Benchmark(...))` runs a whole declared benchmark.) Each call runs the
harness's method (`profaudit.bench.runner`: correctness, warm-up to a steady state, stopping rule,
sabotage checks) and writes its timing logs under `--profaudit-storage` (default `.profaudit`)
/ `--profaudit-save` (default `latest`). `--profaudit-compare NAME` compares this session's logs
with the stored run NAME at the end of the session, with the same gating as `profaudit compare`
(`--profaudit-fail-on regression|any-significant|none`, `--profaudit-max-slowdown 5%`): a gated
regression makes the session exit 1, a pair that is not comparable exits 4 (pytest's own
"usage error" code shares that number; the summary says which). The Markdown summary is written
beside the logs and appended to `$GITHUB_STEP_SUMMARY` when set.

Budgets: `--profaudit-max-time` (seconds of measurement per case, default 1) and
`--profaudit-min-samples` (default 30).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import pytest

_STATE = pytest.StashKey[dict]()
VARIANT = "callable"


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("profaudit", "profaudit benchmarks (profaudit_bench fixture)")
    g.addoption("--profaudit-storage", default=".profaudit", help="Folder of stored benchmark runs (default .profaudit).")
    g.addoption("--profaudit-save", default="latest", help="Name of this session's run under the storage folder (default latest).")
    g.addoption("--profaudit-compare", default=None, metavar="NAME", help="Compare this session's run with the stored run NAME at the end.")
    g.addoption("--profaudit-fail-on", default="regression", help="With --profaudit-compare: regression, any-significant or none (as profaudit compare --fail-on).")
    g.addoption("--profaudit-max-slowdown", default="0%", help="With --profaudit-compare: allowed slowdown per case and on the geomean (5%, 1.05x).")
    g.addoption("--profaudit-max-time", type=float, default=1.0, help="Seconds of measurement per case (default 1).")
    g.addoption("--profaudit-min-samples", type=int, default=30, help="Minimum timed samples per case (default 30).")


def _state(config: pytest.Config) -> dict:
    return config.stash.setdefault(_STATE, {"cleaned": False, "cases": [], "gate": None, "summary": None, "error": None})


def pytest_configure(config: pytest.Config) -> None:
    from profaudit.errors import UsageError

    name = config.getoption("--profaudit-compare")
    if name is None:
        return
    from profaudit.compare.gate import check_fail_on, parse_slowdown

    try:
        check_fail_on(config.getoption("--profaudit-fail-on"))
        parse_slowdown(config.getoption("--profaudit-max-slowdown"))
    except UsageError as exc:
        raise pytest.UsageError(f"profaudit: {exc}") from None
    base = Path(config.getoption("--profaudit-storage")) / name
    if not base.is_dir():
        raise pytest.UsageError(f"profaudit: --profaudit-compare {name}: no stored run {base} (save one with --profaudit-save {name})")
    if name == config.getoption("--profaudit-save"):
        raise pytest.UsageError(f"profaudit: --profaudit-compare {name} is also this session's --profaudit-save: it would be overwritten")


def _run_dir(config: pytest.Config) -> Path:
    return Path(config.getoption("--profaudit-storage")) / config.getoption("--profaudit-save")


def _bench_name(nodeid: str) -> str:
    """A benchmark name (letters, digits, _ . + -) from a test id: module.test[param]."""
    path, _, rest = nodeid.partition("::")
    stem = Path(path).stem
    return re.sub(r"[^A-Za-z0-9_.+-]+", "-", f"{stem}.{rest.replace('::', '.')}").strip("-")


def _options(config: pytest.Config):
    from profaudit.bench.runner import RunOptions

    t = float(config.getoption("--profaudit-max-time"))
    n = int(config.getoption("--profaudit-min-samples"))
    if not t > 0 or n < 2:
        raise pytest.UsageError("profaudit: --profaudit-max-time must be positive and --profaudit-min-samples at least 2")
    return RunOptions(
        min_samples=n, max_time_s=t, min_time_s=min(0.05, t / 2), min_warmup_s=min(0.025, t / 4),
        max_warmup_s=min(1.0, t), block_target_s=min(0.02, t / 4), hard_time_s=max(10.0, 20 * t), telemetry=False,
    ).validate()


class _Runner:
    """The `profaudit_bench` fixture's callable."""

    def __init__(self, request: pytest.FixtureRequest):
        self.request = request
        self.config = request.config

    def __call__(self, fn: Callable | Any, *, inputs: Callable | None = None, reference: Callable | None = None,
                 backend: str = "numpy", params: Any = None, name: str | None = None, **bench_kwargs: Any) -> dict | list[dict]:
        from profaudit.bench.spec import Benchmark

        if hasattr(self.config, "workerinput"):
            # pytest-xdist workers run tests side by side: every timing would include the others'
            # load (FAIRNESS P13), and each worker would gate on a part of the run
            pytest.skip("profaudit_bench does not time under pytest-xdist workers: run benchmarks with -p no:xdist (or -n 0)")
        if isinstance(fn, Benchmark):
            bench = fn
        else:
            if inputs is None or reference is None:
                raise pytest.UsageError("profaudit_bench(fn, inputs=..., reference=...): the harness needs inputs (params, gen) -> tuple and a reference to check fn against")
            bench = Benchmark(name or _bench_name(self.request.node.nodeid), backend=backend, inputs=inputs, reference=reference,
                              variants={VARIANT: fn}, params=params, **bench_kwargs)
        out = [self._run_case(case, list(bench.variants)) for case in bench.cases()]
        return out[0] if len(out) == 1 and not isinstance(fn, Benchmark) else out

    def _run_case(self, case, vnames: list[str]) -> dict:
        from profaudit.bench.env import host_environment
        from profaudit.bench.session import run_cases

        st = _state(self.config)
        outdir = _run_dir(self.config)
        if not st["cleaned"]:
            # this session's run replaces the stored one of the same name (stale cases would be compared)
            for old in outdir.rglob("*.jsonl") if outdir.is_dir() else ():
                old.unlink()
            st["cleaned"] = True
        [entry] = run_cases([(case, vnames)], _options(self.config), outdir, host=host_environment(str(self.request.node.path)))
        bad = {v: ve for v, ve in entry["variants"].items() if ve["status"] != "ok"}
        if bad:
            pytest.fail("; ".join(f"{case.id} {v}: {ve['status']}: {ve['error']}" for v, ve in bad.items()), pytrace=False)
        st["cases"].append(entry)
        res = {"case": case.id, "variants": {v: {"median_ns": ve.get("median_ns"), "samples": ve.get("samples"), "log": str(outdir / ve["log"])} for v, ve in entry["variants"].items()}}
        if len(res["variants"]) == 1:
            res.update(next(iter(res["variants"].values())))
        return res


@pytest.fixture
def profaudit_bench(request: pytest.FixtureRequest) -> _Runner:
    """Time a callable through profaudit's bench harness (see `profaudit.pytest_plugin`)."""
    return _Runner(request)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    name = config.getoption("--profaudit-compare")
    st = _state(config)
    if name is None or not st["cases"]:
        return
    from profaudit.compare import compare
    from profaudit.compare.ci_report import write_reports
    from profaudit.compare.gate import gate_comparison
    from profaudit.errors import ProfauditError

    base = Path(config.getoption("--profaudit-storage")) / name
    cur = _run_dir(config)
    try:
        cmp = compare(str(base), str(cur))
        gate = gate_comparison(cmp, fail_on=config.getoption("--profaudit-fail-on"), max_slowdown=config.getoption("--profaudit-max-slowdown"))
        gate.title = f"profaudit benchmarks: {cur.name} vs {name}"
        st["summary"] = write_reports(gate, summary=cur / "compare.md", cmp=cmp)
    except ProfauditError as exc:
        st["error"] = str(exc)
        session.exitstatus = 4
        return
    st["gate"] = gate
    if gate.exit_code and session.exitstatus == 0:
        session.exitstatus = gate.exit_code


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    st = config.stash.get(_STATE, None)
    if not st or not st["cases"]:
        return
    from profaudit.fmt import fmt_ns, plural

    tr = terminalreporter
    tr.section("profaudit benchmarks")
    for e in st["cases"]:
        for v, ve in e["variants"].items():
            med = ve.get("median_ns")
            tr.write_line(f"{e['id']} {v}: median {fmt_ns(med)} over {plural(ve.get('samples') or 0, 'sample')}" if med is not None else f"{e['id']} {v}: {ve['status']}")
    tr.write_line(f"saved under {_run_dir(config)}")
    if st["error"]:
        tr.write_line(f"profaudit: error: {st['error']}", red=True)
    gate = st["gate"]
    if gate is not None:
        tr.write_line(f"profaudit compare: {gate.summary_line()}", red=gate.status != "pass", green=gate.status == "pass")
        for c in gate.failures:
            tr.write_line(f"  {c.name}: {c.reason}")
