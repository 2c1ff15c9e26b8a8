"""A page's first render without round trips it does not need.

Dash pages draws a page in three steps: the index page, then the app layout (`/_dash-layout`,
an empty page container), then — once `dcc.Location` has mounted and reported the URL — a
callback that returns the page's layout. On a chart page the last step also waits for plotly.js
to finish starting, because the browser runs it meanwhile; and the chart's own code (dcc's
`async-graph.js` chunk) is only asked for once the chart mounts. Each is a wait in series before
anything is drawn. Here:

- the layout request carries the page's URL (a header added by a small fetch hook in the index
  page), and the app layout already holds that page's layout, with `dcc.Location` told the URL it
  will find, so the router callback does not run at load (it still runs on every navigation);
- the index page includes the dcc chunks a page draws with (graph on chart pages, dropdown
  everywhere) as plain scripts, which webpack registers as loaded;
- dash-ag-grid's 1.3 MB bundle is left out of pages without a grid (and dash_table's, which no
  page uses, out of every page): a placeholder namespace loads it the first time one of its
  components is rendered (navigating to the Kernels page from another page); the Kernels page
  opened directly gets the grid bundle in its index as before.

Without the header (another client, a proxy that drops it) the app layout is the plain page
container and the router callback fills it, as Dash does by default.
"""

from __future__ import annotations

import json
import re
from typing import Callable, Iterable
from urllib.parse import urlsplit

LOCATION_HEADER = "X-Profaudit-Location"
# dcc chunks as dcc's webpack runtime names them (the URL it would fetch them from)
DCC_CHUNK = "_dash-component-suites/dash/dcc/async-{}.js"
# Component libraries whose bundles load only when one of their components is first rendered:
# namespace -> the URL part that names its bundle. dash_table is one because Dash includes it in
# every index and no page here uses it.
LAZY_LIBRARIES = {"dash_ag_grid": "/_dash-component-suites/dash_ag_grid/", "dash_table": "/_dash-component-suites/dash/dash_table/"}
GRID_NAMESPACE = "dash_ag_grid"

_FETCH_HOOK = """<script>
(function () {
  // The layout request says which page it is for (first_paint.py): the server puts that page in it.
  var fetch0 = window.fetch;
  window.fetch = function (input, init) {
    if (String((input && input.url) || input).indexOf("_dash-layout") >= 0) {
      init = Object.assign({}, init || {});
      var h = new Headers(init.headers || {});
      h.set(%(header)s, location.href);
      init.headers = h;
    }
    return fetch0.call(this, input, init);
  };
})();
</script>"""

# A stand-in for a component library's namespace on pages whose index left its bundle out (one
# line of it per library: a page that uses none pays nothing). dash-renderer
# looks components up as window[namespace][type] when it renders them; each stand-in component
# loads the bundle once, renders nothing until it has run, then renders the real component with the
# same props. The namespace keeps pointing at the stand-ins so a grid's component type never
# changes (a change would remount the grid and lose its rows).
_PLACEHOLDER = """<script>
(function () {
  if (window.%(ns)s) { return; }
  var src = %(src)s, real = null, loading = null, made = {};
  function load() {
    if (!loading) {
      loading = new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        s.src = src;
        s.onload = function () { real = window.%(ns)s; window.%(ns)s = stand; resolve(real); };
        s.onerror = function (e) { loading = null; reject(e); };
        document.head.appendChild(s);
      });
    }
    return loading;
  }
  function standIn(name) {
    function Lazy(props) {
      var React = window.React, st = React.useState(!!real), ready = st[0], setReady = st[1];
      React.useEffect(function () {
        if (!ready) { load().then(function () { setReady(true); }); }
      }, []);
      return ready && real[name] ? React.createElement(real[name], props) : null;
    }
    Lazy.displayName = "Lazy" + name;
    return Lazy;
  }
  var stand = new Proxy({}, {
    get: function (t, name) {
      if (typeof name !== "string" || name === "then") { return undefined; }
      return made[name] || (made[name] = standIn(name));
    }
  });
  window.%(ns)s = stand;
})();
</script>"""

_SCRIPT_TAG = re.compile(r'<script src="([^"]*)"></script>\n?')


def index_hook() -> str:
    """The script (for the index page's head) that names the page in the layout request."""
    return _FETCH_HOOK % {"header": json.dumps(LOCATION_HEADER)}


def page_chunks(chart: bool) -> tuple[str, ...]:
    """The dcc chunks a dashboard page draws with: every page has dropdowns, chart pages graphs."""
    return ("dropdown", "graph") if chart else ("dropdown",)


def page_scripts(scripts: str, prefix: str, *, chunks: Iterable[str], grid: bool) -> str:
    """Dash's script tags for one page: the grid bundle (when the page has no grid) and the
    DataTable bundle replaced by placeholders that load them on first use (LAZY_LIBRARIES); dcc's
    `chunks` (e.g. "graph") right after dcc's bundle."""
    out, dcc_done = [], False
    eager = {GRID_NAMESPACE} if grid else set()
    extra = "".join(f'<script src="{prefix}{DCC_CHUNK.format(c)}"></script>\n' for c in chunks)
    pos = 0
    for m in _SCRIPT_TAG.finditer(scripts):
        out.append(scripts[pos : m.start()])
        pos = m.end()
        src = m.group(1)
        lazy = next((ns for ns, part in LAZY_LIBRARIES.items() if part in src and ns not in eager), None)
        if lazy:
            out.append(_PLACEHOLDER % {"ns": lazy, "src": json.dumps(src)} + "\n")
            continue
        out.append(m.group(0))
        if not dcc_done and "/_dash-component-suites/dash/dcc/" in src:
            # after dcc's last bundle file (main and shared come in a row)
            nxt = _SCRIPT_TAG.match(scripts, m.end())
            if not (nxt and "/_dash-component-suites/dash/dcc/" in nxt.group(1)):
                out.append(extra)
                dcc_done = True
    out.append(scripts[pos:])
    return "".join(out)


def install(app, shell: Callable, chart_paths: Iterable[str], grid_paths: Iterable[str]) -> None:
    """Serve `shell(page_container)` as the app layout with the requested page already in it,
    and per-page scripts in the index (see the module docstring)."""
    import flask

    prefix = app.config.requests_pathname_prefix or "/"  # URLs as the browser asks for them
    # pages as Flask sees their paths (behind a proxy that strips a prefix, it differs from the above)
    routes = app.config.routes_pathname_prefix or "/"
    norm = lambda p: (routes.rstrip("/") + "/" + p.strip("/")).rstrip("/") or "/"  # noqa: E731
    charts, grids = {norm(p) for p in chart_paths}, {norm(p) for p in grid_paths}
    interpolate = app.interpolate_index

    def interpolate_index(**parts):
        here = flask.request.path.rstrip("/") or "/" if flask.has_request_context() else None
        if here is not None and "scripts" in parts:
            parts["scripts"] = page_scripts(parts["scripts"], prefix, chunks=page_chunks(here in charts), grid=here in grids)
        return interpolate(**parts)

    app.interpolate_index = interpolate_index
    app.layout = lambda: shell(page_container(app, _requested_href()))


def _requested_href() -> str | None:
    import flask

    if not flask.has_request_context():
        return None
    href = flask.request.headers.get(LOCATION_HEADER)
    return href if href and len(href) <= 8192 else None


def page_container(app, href: str | None):
    """`dash.page_container` with the page at `href` already rendered in it (None: left empty
    for the router callback, as Dash's own container)."""
    import dash
    from dash import dcc, html

    if href is None:
        return dash.page_container
    page = _page_at(app, href)
    if page is None:  # an unknown path: the router callback draws Dash's 404
        return dash.page_container
    content, title, url = page
    # Every prop set to what dcc.Location reads from window.location on mount, so it has nothing
    # to report and the router callback (which would build this page again) does not run.
    return html.Div(
        [
            dcc.Location(id="_pages_location", refresh="callback-nav", pathname=url.path, search=f"?{url.query}" if url.query else "", hash=f"#{url.fragment}" if url.fragment else "", href=href),
            html.Div(content, id="_pages_content", disable_n_clicks=True),
            dcc.Store(id="_pages_store", data={"title": title}),
            html.Div(id="_pages_dummy", disable_n_clicks=True),
        ]
    )


def _page_at(app, href: str):
    """(layout, title, split URL) of the registered page at `href`, or None."""
    from dash._pages import _parse_query_string, _path_to_page

    url = urlsplit(href)
    page, variables = _path_to_page(app.strip_relative_path(url.path))
    if not page:
        return None
    layout, title = page.get("layout", ""), page["title"]
    query = _parse_query_string(f"?{url.query}" if url.query else "")
    content = layout(**{**(variables or {}), **query}) if callable(layout) else layout
    if callable(title):
        title = title(**(variables or {}))
    return content, title, url


__all__ = ["LOCATION_HEADER", "index_hook", "install", "page_chunks", "page_container", "page_scripts"]
