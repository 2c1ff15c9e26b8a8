"""A page's first render without needless round trips (dashboards/first_paint.py): the layout
request names its page and gets it; per-page scripts leave the grid bundle out of pages without a
grid and load it when a grid first appears; the dcc chunks a page needs come with its index."""

from __future__ import annotations

import json
import logging
import re

import pytest

pytest.importorskip("dash")

from browser_util import BENIGN_CONSOLE, browser_missing, launch  # noqa: E402
from profaudit.dashboards.first_paint import LOCATION_HEADER, page_scripts  # noqa: E402

SCRIPTS = """<script src="/_dash-component-suites/dash/deps/react@18.v1.min.js"></script>
<script src="/_dash-component-suites/dash_ag_grid/dash_ag_grid.v35_3_0m1.min.js"></script>
<script src="/_dash-component-suites/dash/dash-renderer/build/dash_renderer.v4.min.js"></script>
<script src="/_dash-component-suites/dash/dcc/dash_core_components.v4.js"></script>
<script src="/_dash-component-suites/dash/dcc/dash_core_components-shared.v4.js"></script>
<script src="/_dash-component-suites/dash/html/dash_html_components.v4.min.js"></script>
<script src="/_dash-component-suites/dash/dash_table/bundle.v7.js"></script>
"""


def _srcs(html: str) -> list[str]:
    return re.findall(r'<script src="([^"]*)"', html)


def test_page_scripts_without_grid_defer_the_grid_and_table_bundles_and_add_chunks_after_dcc():
    out = page_scripts(SCRIPTS, "/pa/", chunks=("dropdown", "graph"), grid=False)
    srcs = _srcs(out)
    assert not any("dash_ag_grid" in s or "dash_table" in s for s in srcs)
    # the placeholders name the bundles they load, each where the bundle was
    assert 'var src = "/_dash-component-suites/dash_ag_grid/dash_ag_grid.v35_3_0m1.min.js"' in out
    assert 'var src = "/_dash-component-suites/dash/dash_table/bundle.v7.js"' in out
    assert out.index("window.dash_ag_grid = stand") < out.index("dash_renderer.v4")
    shared = srcs.index("/_dash-component-suites/dash/dcc/dash_core_components-shared.v4.js")
    assert srcs[shared + 1 : shared + 3] == ["/pa/_dash-component-suites/dash/dcc/async-dropdown.js", "/pa/_dash-component-suites/dash/dcc/async-graph.js"]
    assert srcs[-1] == "/_dash-component-suites/dash/html/dash_html_components.v4.min.js"


def test_page_scripts_with_grid_keep_its_bundle_in_place():
    out = page_scripts(SCRIPTS, "/", chunks=("dropdown",), grid=True)
    srcs = _srcs(out)
    assert srcs[1] == "/_dash-component-suites/dash_ag_grid/dash_ag_grid.v35_3_0m1.min.js"
    assert "/_dash-component-suites/dash/dcc/async-graph.js" not in srcs
    assert "/_dash-component-suites/dash/dcc/async-dropdown.js" in srcs
    assert "window.dash_ag_grid = stand" not in out and "window.dash_table = stand" in out


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from dashboard_data import make_inputs
    from profaudit.dashboards.app import create_app

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    inputs = make_inputs(tmp_path_factory.mktemp("fp"))
    return create_app([inputs["data"]], upload_dir=tmp_path_factory.mktemp("up") / "u", warm=False)


def _ids(node, out=None) -> dict:
    """id -> props of every component in a layout JSON."""
    out = {} if out is None else out
    if isinstance(node, dict):
        props = node.get("props")
        if isinstance(props, dict) and isinstance(props.get("id"), str):
            out[props["id"]] = props
        for v in node.values():
            _ids(v, out)
    elif isinstance(node, list):
        for v in node:
            _ids(v, out)
    return out


def test_layout_request_naming_a_page_gets_that_page_with_location_matching(app):
    client = app.server.test_client()
    href = "http://127.0.0.1:8050/roofline?x=1#top"
    ids = _ids(json.loads(client.get("/_dash-layout", headers={LOCATION_HEADER: href}).data))
    assert "rf-graph" in ids and ids["rf-graph"]["figure"]["data"], "the roofline and its figure come with the layout"
    loc = ids["_pages_location"]
    assert (loc["pathname"], loc["search"], loc["hash"], loc["href"], loc["refresh"]) == ("/roofline", "?x=1", "#top", href, "callback-nav")
    assert ids["_pages_store"]["data"] == {"title": "Roofline · profaudit"}
    # the router callback (which would build the page again) is not asked for at load: dcc.Location
    # finds every prop it reports already equal to the browser's location (checked in the browser test)
    ids = _ids(json.loads(client.get("/_dash-layout", headers={LOCATION_HEADER: "http://h/kernels"}).data))
    assert "kn-grid" in ids and "rf-graph" not in ids


@pytest.mark.parametrize("headers", [{}, {LOCATION_HEADER: "http://h/no-such-page"}])
def test_layout_request_without_a_known_page_gets_the_empty_container(app, headers):
    ids = _ids(json.loads(app.server.test_client().get("/_dash-layout", headers=headers).data))
    assert "_pages_content" in ids and "pathname" not in ids["_pages_location"]
    assert not any(i.startswith(("rf-", "kn-")) for i in ids)


def test_index_of_each_page_loads_only_the_bundles_it_uses(app):
    client = app.server.test_client()
    roof, kern = client.get("/roofline").get_data(as_text=True), client.get("/kernels").get_data(as_text=True)
    assert not any("dash_ag_grid" in s for s in _srcs(roof)) and "window.dash_ag_grid = stand" in roof
    assert any("dash_ag_grid" in s for s in _srcs(kern))
    assert any(s.endswith("/dcc/async-graph.js") for s in _srcs(roof))
    assert not any(s.endswith("/dcc/async-graph.js") for s in _srcs(kern))
    assert LOCATION_HEADER in roof and LOCATION_HEADER in kern  # the fetch hook is on every page


@pytest.mark.browser
def test_roofline_renders_without_router_callback_and_a_grid_loads_on_navigation(app):
    why = browser_missing()
    if why:
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    from profaudit.dashboards.app import ServerThread

    with ServerThread(app) as srv, sync_playwright() as pw:
        browser = launch(pw)
        try:
            ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = ctx.new_page()
            page.set_default_timeout(30_000)
            problems: list[str] = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" and not any(b in m.text for b in BENIGN_CONSOLE) else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            urls: list[str] = []
            page.on("request", lambda r: urls.append(r.url))
            page.goto(srv.url + "/roofline")
            page.wait_for_function("() => (document.querySelector('#rf-graph .js-plotly-plot')?._fullData || []).some(t => t.type === 'scattergl') && !!document.querySelector('#rf-graph canvas')")
            assert not any("_dash-update-component" in u for u in urls), "the page came with the layout: no callback before its chart"
            assert not any("dash_ag_grid" in u for u in urls)
            assert sum(u.endswith("/dcc/async-graph.js") for u in urls) == 1  # from the index, not fetched again by dcc
            # a client-side navigation to the grid page loads the grid bundle once and shows rows
            page.click("#nav-kernels")
            page.wait_for_selector("#kn-grid .ag-center-cols-container .ag-row[row-id] .ag-cell")
            assert sum("/dash_ag_grid/dash_ag_grid." in u for u in urls) == 1
            assert page.evaluate("() => typeof window.dash_ag_grid.AgGrid") == "function"
            # and back: the roofline is built by the router callback this time
            page.click("#nav-roofline")
            page.wait_for_function("() => (document.querySelector('#rf-graph .js-plotly-plot')?._fullData || []).some(t => t.type === 'scattergl')")
            assert any("_dash-update-component" in u for u in urls)
            assert not problems, problems
            ctx.close()
        finally:
            browser.close()


def test_pages_are_matched_under_the_routes_prefix_and_chunks_fetched_under_the_requests_prefix(tmp_path):
    """Behind a proxy that strips /pa/, Flask sees /roofline while the browser asks for /pa/..."""
    import dash
    from dash import html

    from profaudit.dashboards import first_paint

    app = dash.Dash(__name__ + ".proxied", routes_pathname_prefix="/", requests_pathname_prefix="/pa/")
    first_paint.install(app, lambda container: html.Div(container), ["/roofline"], ["/kernels"])
    client = app.server.test_client()
    roof = _srcs(client.get("/roofline").get_data(as_text=True))
    assert "/pa/_dash-component-suites/dash/dcc/async-graph.js" in roof
    assert "/pa/_dash-component-suites/dash/dcc/async-graph.js" not in _srcs(client.get("/kernels").get_data(as_text=True))
