"""JAX/TensorBoard log directories (`plugins/profile/<run>/<host>.xplane.pb`), captured here on the CPU."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import assert_one_line_error

jax = pytest.importorskip("jax")

import profaudit  # noqa: E402
from profaudit.errors import InputError  # noqa: E402
from tests.test_xla_xplane import _capture  # noqa: E402


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("tb") / "logs"
    _capture(d, steps=2)
    return d


def test_log_dir_run_dir_and_profile_folder(logdir):
    run = next((logdir / "plugins" / "profile").iterdir())
    for target in (logdir, logdir / "plugins" / "profile", run):
        ps = profaudit.load(target)
        assert len(ps) == 1
        p = next(iter(ps))
        assert p.metadata["format"] == "xplane"
        assert p.metadata["run"] == run.name
        assert p.metadata["trace_json_skipped"].endswith(".trace.json.gz")
        assert p.kernels.height >= 2


def test_multi_host_and_multi_run(logdir, tmp_path):
    d = tmp_path / "logs"
    shutil.copytree(logdir, d)
    run = next((d / "plugins" / "profile").iterdir())
    src = next(run.glob("*.xplane.pb"))
    shutil.copy(src, run / "otherhost.xplane.pb")
    run2 = run.parent / "2030_01_01_00_00_00"
    run2.mkdir()
    shutil.copy(src, run2 / src.name)
    ps = profaudit.load(d)
    assert len(ps) == 3
    assert sorted(p.metadata["run"] for p in ps) == sorted([run.name, run.name, run2.name])
    assert {p.metadata.get("host") for p in ps} >= {"otherhost"} or any("otherhost" in p.metadata["path"] for p in ps)


def test_nested_log_dir_found_by_walk(logdir, tmp_path):
    d = tmp_path / "experiments" / "exp1"
    shutil.copytree(logdir, d)
    ps = profaudit.load(tmp_path / "experiments")
    assert len(ps) == 1


def test_trace_json_only_run_uses_the_registered_trace_reader(logdir, tmp_path):
    run = tmp_path / "plugins" / "profile" / "r1"
    run.mkdir(parents=True)
    trace = next(next((logdir / "plugins" / "profile").iterdir()).glob("*.trace.json.gz"))
    shutil.copy(trace, run / trace.name)
    from profaudit.parsers import find_parser

    reader = find_parser(run / trace.name)
    if reader is None:
        with pytest.raises(InputError, match="trace.json.gz"):
            profaudit.load(tmp_path)
    else:
        ps = profaudit.load(tmp_path)
        assert len(ps) == 1 and next(iter(ps)).metadata.get("xplane_missing") is True


def test_damaged_xplane_in_run_one_line(logdir, tmp_path, cli):
    d = tmp_path / "logs"
    shutil.copytree(logdir, d)
    x = next(d.glob("plugins/profile/*/*.xplane.pb"))
    x.write_bytes(x.read_bytes()[:100])
    res = cli("kernels", str(d))
    assert_one_line_error(res, "corrupt or truncated XSpace")
    assert x.name in res.err


def test_empty_plugins_profile_is_not_claimed(tmp_path):
    (tmp_path / "plugins" / "profile" / "run").mkdir(parents=True)
    from profaudit.parsers import find_parser

    assert find_parser(tmp_path) is None
