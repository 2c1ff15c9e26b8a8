"""Chart pages opened directly fetch plotly.js with the page (dashboards/plotly_preload.py): once,
shared with dcc.Graph, only on pages that draw charts, and the dashboard's own build of it."""

from __future__ import annotations

import json
import logging
import re

import pytest

pytest.importorskip("dash")

from browser_util import browser_missing, launch  # noqa: E402
from profaudit.dashboards.plotly_preload import PLOTLY_BUNDLE, PLOTLY_JS, bundle_info, index_string  # noqa: E402


def _loader_config(index: str) -> tuple[list[str], str]:
    paths = json.loads(re.search(r"var charts = (\[.*?\]);", index).group(1))
    src = json.loads(re.search(r"var src = (\".*?\"),", index).group(1))
    return paths, src


def test_index_names_the_chart_pages_under_the_url_prefix():
    import dash

    app = dash.Dash(__name__, url_base_pathname="/pa/")
    index = index_string(app, ["/roofline", "/timing/"])
    assert bundle_info() is not None  # the build is in the assets folder (tools/build_plotly_bundle.py)
    assert _loader_config(index) == (["/pa/roofline", "/pa/timing"], "/pa/assets/" + PLOTLY_BUNDLE)
    # without the build: Dash's own plotly.js
    assert _loader_config(index_string(app, ["/roofline"], bundle=False)) == (["/pa/roofline"], "/pa/" + PLOTLY_JS)
    for placeholder in ("{%metas%}", "{%css%}", "{%config%}", "{%scripts%}", "{%renderer%}", "{%app_entry%}"):
        assert placeholder in index  # Dash still fills the page in
    plain = dash.Dash(__name__ + ".cdn", serve_locally=False)
    assert index_string(plain, ["/roofline"]) == plain.index_string  # plotly.js from a CDN: untouched


@pytest.mark.browser
def test_roofline_loads_plotly_once_and_the_grid_not_at_all(tmp_path):
    why = browser_missing()
    if why:
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    from dashboard_data import make_inputs
    from profaudit.dashboards.app import ServerThread, create_app

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    inputs = make_inputs(tmp_path / "in")
    app = create_app([inputs["data"]], upload_dir=tmp_path / "up")
    assert _loader_config(app.index_string)[0] == ["/compare", "/ranks", "/roofline", "/timeline", "/timing"]
    with ServerThread(app) as srv, sync_playwright() as pw:
        browser = launch(pw)
        try:
            fetched = {}
            roofline_ready = "() => (document.querySelector('#rf-graph .js-plotly-plot')?._fullData || []).some(t => t.type === 'scattergl') && !!document.querySelector('#rf-graph canvas')"
            for path, ready in (
                ("/roofline", roofline_ready),
                ("/kernels", "() => !!document.querySelector('#kn-grid .ag-center-cols-container .ag-row[row-id] .ag-cell')"),
            ):
                ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
                page = ctx.new_page()
                page.set_default_timeout(30_000)
                urls: list[str] = []
                page.on("request", lambda r, urls=urls: urls.append(r.url))
                page.goto(srv.url + path)
                page.wait_for_function(ready)
                fetched[path] = sum(PLOTLY_BUNDLE in u for u in urls)
                assert not any(PLOTLY_JS in u for u in urls)  # Dash's full plotly.js: never
                if path == "/roofline":
                    # asked for with the page, before the page's content (and its figure: both
                    # come with the layout, see first_paint.py) is
                    first = next(i for i, u in enumerate(urls) if PLOTLY_BUNDLE in u)
                    assert first < next(i for i, u in enumerate(urls) if "_dash-layout" in u)
                    # the placeholder was replaced by plotly.js itself, which drew the chart
                    assert page.evaluate("() => typeof window.Plotly.newPlot === 'function' && typeof window.Plotly.then === 'undefined'")
                    # WebGL drawn at the screen's pixel ratio (1 here), not plotly's default of 2
                    gl = page.evaluate("() => { const gd = document.querySelector('#rf-graph .js-plotly-plot'); const c = gd.querySelector('canvas.gl-canvas-context');"
                                       " return [gd._context.plotGlPixelRatio, c.width, Math.floor(gd._fullLayout.width)]; }")
                    assert gl[0] == 1 and gl[1] == gl[2], gl
                else:
                    # from a page without charts to one with: the same build, when the graph asks
                    page.click("#nav-roofline")
                    page.wait_for_function(roofline_ready)
                    fetched["/kernels -> /roofline"] = sum(PLOTLY_BUNDLE in u for u in urls)
                    assert not any(PLOTLY_JS in u for u in urls)
                ctx.close()
        finally:
            browser.close()
    assert fetched == {"/roofline": 1, "/kernels": 0, "/kernels -> /roofline": 1}
