"""The fuzz harness's next-command stage (tests/fuzz/downstream.py) runs the CLI through a click
command built once instead of letting Typer rebuild it on every call. These tests hold it to
giving what `profaudit.cli.main` gives: the same exit code and stderr for output, a deliberate
refusal and an internal error, and the real app back in place afterwards."""

from __future__ import annotations

import contextlib
import io

import pytest

import profaudit.cli as cli
from profaudit.loader import load
from tests.fuzz import downstream


def _plain(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(argv)
    return rc, err.getvalue()


@pytest.fixture()
def timing(tmp_path):
    f = tmp_path / "timings.csv"
    f.write_text("kernel,size,time_ms\nsoftmax,1024,0.125\nsoftmax,2048,0.25\nmatmul,1024,1.5\n")
    return f


@pytest.mark.parametrize("argv", [["summary"], ["kernels", "-t", "samples", "--format", "csv"], ["gaps"], ["roofline"],
                                  ["kernels", "-t", "nosuchtable"], ["compare", "SELF", "--format", "json"]])
def test_built_cli_answers_as_main_does(timing, argv):
    argv = [argv[0], str(timing)] + [str(timing) if a == "SELF" else a for a in argv[1:]]
    plain = _plain(argv)
    built = downstream._cli(argv)
    assert built == plain
    assert cli.app is downstream._BUILT.app and not isinstance(cli.app, downstream._BuiltApp)


def test_internal_error_is_exit_3_through_the_built_cli(timing, monkeypatch):
    """An exception inside a command still reaches main's catch-all (exit 3): the finding the
    stage exists to see."""
    import profaudit.timeline as timeline

    monkeypatch.setattr(timeline, "idle_summary", lambda *a, **k: [][1])
    argv = ["gaps", str(timing)]
    plain = _plain(argv)
    built = downstream._cli(argv)
    assert plain[0] == 3 and "internal error: IndexError" in plain[1]
    assert built == plain


def test_after_load_sees_a_command_that_breaks(timing, tmp_path, monkeypatch):
    ps = load(timing)
    assert downstream.after_load(timing, ps, None, tmp_path / "after") is None
    import profaudit.timeline as timeline

    monkeypatch.setattr(timeline, "idle_summary", lambda *a, **k: {}["x"])
    problem = downstream.after_load(timing, ps, None, tmp_path / "after")
    assert problem is not None and problem.startswith("gaps (exit 3)") and "KeyError" in problem


def test_each_input_runs_one_form_of_compare(timing, tmp_path):
    ps = load(timing)
    seed = tmp_path / "seed.csv"
    forms = {}
    for pick in (0, 1, 2, 3):
        cmds = [c for c in downstream.commands(timing, ps, seed, tmp_path, pick) if c[0] == "compare"]
        assert len(cmds) == 1
        forms[pick] = cmds[0]
    assert forms[0] == forms[2] == ["compare", str(timing), str(timing), "--format", "json"]
    assert forms[1] == forms[3] == ["compare", str(seed), str(timing)]
    # without a seed to compare against, the input is compared with itself
    assert [c for c in downstream.commands(timing, ps, None, tmp_path, 1) if c[0] == "compare"] == [forms[0]]


def test_profiles_with_kernels_also_get_ranks_or_collectives(tmp_path):
    """The distributed view (`ranks`, `collectives`) runs on inputs with kernels or copies, one of
    the two per input; a timing table has neither."""
    import polars as pl

    from profaudit.profile import Profile, ProfileSet

    kernels = pl.DataFrame({"kernel_id": [0], "name": ["k"], "start_ns": [0], "end_ns": [10], "duration_ns": [10]})
    ps = ProfileSet([Profile(profile_id="p", tables={"kernels": kernels}, metadata={})])
    f = tmp_path / "x.sqlite"
    names = {tuple(c[:1]) for pick in range(4) for c in downstream.commands(f, ps, None, tmp_path, pick) if c[0] in ("ranks", "collectives")}
    assert names == {("ranks",), ("collectives",)}
    for pick in range(4):
        assert sum(c[0] in ("ranks", "collectives") for c in downstream.commands(f, ps, None, tmp_path, pick)) == 1
    timing = tmp_path / "t.csv"
    timing.write_text("kernel,size,time_ms\nsoftmax,1024,0.125\n")
    assert not any(c[0] in ("ranks", "collectives") for c in downstream.commands(timing, load(timing), None, tmp_path, 2))
