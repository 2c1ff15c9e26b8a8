"""--plotlyjs embed|cdn|directory for compare and roofline HTML."""

from __future__ import annotations

import pytest

from tests.conftest import assert_one_line_error
from tests.test_compare_headline import gbench


@pytest.fixture
def pair(tmp_path):
    gbench(tmp_path / "b.json", {"BM_a": 2_000, "BM_b": 1_000}, seed=1)
    gbench(tmp_path / "c.json", {"BM_a": 1_000, "BM_b": 1_000}, seed=2)
    return tmp_path / "b.json", tmp_path / "c.json"


def test_compare_html_modes(pair, cli, tmp_path):
    b, c = pair
    sizes = {}
    for mode in ("embed", "cdn", "directory"):
        out = tmp_path / mode / "report.html"
        out.parent.mkdir()
        assert cli("compare", b, c, "-f", "html", "-o", out, "--plotlyjs", mode).code == 0
        sizes[mode] = out.stat().st_size
        text = out.read_text()
        assert "Plotly.newPlot" in text
        if mode == "cdn":
            assert 'src="https://cdn.plot.ly/plotly-' in text
        if mode == "directory":
            assert 'src="plotly.min.js"' in text
            bundle = out.parent / "plotly.min.js"
            assert bundle.stat().st_size > 1_000_000
    assert sizes["embed"] > 1_000_000 and sizes["cdn"] < 200_000 and sizes["directory"] < 200_000
    assert not (tmp_path / "cdn" / "plotly.min.js").exists()


def test_plotlyjs_directory_needs_a_file_and_modes_are_checked(pair, cli):
    b, c = pair
    assert_one_line_error(cli("compare", b, c, "-f", "html", "--plotlyjs", "directory"), "--output")
    assert_one_line_error(cli("compare", b, c, "-f", "html", "--plotlyjs", "inline"), "--plotlyjs")


def test_roofline_chart_modes(tmp_path):
    import plotly.graph_objects as go

    from profaudit.roofline_plot import write_html

    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4]))
    write_html(fig, tmp_path / "cdn.html", plotlyjs="cdn")
    write_html(fig, tmp_path / "dir.html", plotlyjs="directory")
    write_html(fig, tmp_path / "emb.html")
    assert "cdn.plot.ly" in (tmp_path / "cdn.html").read_text() and (tmp_path / "cdn.html").stat().st_size < 100_000
    assert 'src="plotly.min.js"' in (tmp_path / "dir.html").read_text() and (tmp_path / "plotly.min.js").is_file()
    assert (tmp_path / "emb.html").stat().st_size > 1_000_000


def test_roofline_cli_checks_the_mode(cli, tmp_path):
    assert_one_line_error(cli("roofline", tmp_path / "x.ncu-rep", "--plotlyjs", "inline", "--html", tmp_path / "r.html"), "--plotlyjs")
