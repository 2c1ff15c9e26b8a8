"""The dashboard's Ranks page over a synthetic distributed run: the figures carry the library's
numbers (profaudit.ranks), the page renders over HTTP, and a folder without GPU kernels says so."""

from __future__ import annotations

import pytest

pytest.importorskip("dash")

import polars as pl  # noqa: E402

from profaudit.dashboards.app import create_app  # noqa: E402
from profaudit.dashboards.pages import ranks as ranks_page  # noqa: E402
from profaudit.ranks import load_run  # noqa: E402
from profaudit.specs import get_spec  # noqa: E402

from ranks_synth import make_run, write_run  # noqa: E402


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    docs, _ = make_run(world_size=4, steps=2, ranks_per_host=2, late_rank=2, seed=31)
    d = tmp_path_factory.mktemp("dash_run")
    write_run(d, docs)
    return d


@pytest.fixture(scope="module")
def app(folder, tmp_path_factory):
    return create_app([folder], upload_dir=tmp_path_factory.mktemp("up") / "u", warm=False)


def _graph(layout, gid):
    stack = [layout]
    while stack:
        c = stack.pop()
        if getattr(c, "id", None) == gid:
            return c.figure
        ch = getattr(c, "children", None)
        if isinstance(ch, (list, tuple)):
            stack.extend(ch)
        elif ch is not None and not isinstance(ch, str):
            stack.append(ch)
    raise AssertionError(f"no component {gid}")


def test_page_renders(app):
    assert app.server.test_client().get("/ranks").status_code == 200


def test_figures_carry_the_library_numbers(app, folder):
    run = load_run(folder, parallel=False)
    with app.server.test_request_context():
        layout = ranks_page.layout()
        bars = _graph(layout, "rk-breakdown")["data"]
        trace = run.step_breakdown.filter(pl.col("step").is_null()).sort("rank")
        assert [b["name"] for b in bars] == [p[1] for p in ranks_page.PARTS]
        assert list(bars[0]["y"]) == pytest.approx((trace["compute_ns"] / 1e6).to_list())
        assert list(bars[3]["y"]) == pytest.approx((trace["idle_ns"] / 1e6).to_list())
        late = _graph(layout, "rk-stragglers")["data"][0]
        assert list(late["x"]) == ["2"] and list(late["y"]) == pytest.approx([run.stragglers["wait_caused_ns"][0] / 1e6])
        bw = _graph(layout, "rk-bandwidth")
        assert sorted(bw["data"][0]["x"]) == sorted(run.calls["msg_bytes"].to_list())
        lines = sorted(s["y0"] for s in bw["layout"]["shapes"])
        assert lines == sorted(v.value / 1e9 for v in get_spec("h100-sxm").interconnects.values())
        step1, msg = ranks_page.update("1")
        want = run.step_breakdown.filter(pl.col("step") == 1).sort("rank")["exposed_communication_ns"] / 1e6
        assert list(step1["data"][1]["y"]) == pytest.approx(want.to_list()) and msg == ""


def test_no_gpu_profiles_says_so(tmp_path):
    log = tmp_path / "times.csv"
    log.write_text("benchmark,time_ms\nmatmul,1.5\nmatmul,1.6\n")
    app = create_app([log], upload_dir=tmp_path / "u", warm=False)
    with app.server.test_request_context():
        text = str(ranks_page.layout())
    assert "No profile with GPU kernels is loaded" in text
