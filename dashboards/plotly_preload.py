"""Start loading plotly.js with the page, not after the page's content arrives; load the
dashboard's own plotly.js build, which holds only the trace types the dashboard draws.

dcc.Graph loads plotly.js only when the first graph mounts: on a chart page that is
after the Dash shell, its layout, the page callback and the figure have all arrived, and the
browser then parses and starts plotly.js with nothing else left to do, so the whole page costs
the sum of the two. Opening a chart page directly (a bookmark, a reload), the index page built
here fetches plotly.js at once and runs it as soon as the page's content has been requested: the
browser parses it while the server builds the page and its figure. Until it has run, `window.Plotly` is a thenable that resolves when it has:
dcc.Graph waits on `Promise.resolve(window.Plotly || <inject its own script>)`, so it waits for
this load instead of starting a second one, and plotly.js replaces the placeholder with itself.
Other pages (the kernel grid has no chart) get the placeholder without the download: navigating
from them to a chart page loads the same build when the first graph asks for it.

Once loaded, plotly draws WebGL at the screen's pixel ratio (`plotGlPixelRatio`; plotly's
default of 2 quadruples the pixels of every WebGL canvas on a standard screen).

The build (`PLOTLY_BUNDLE` in the assets folder, made by tools/build_plotly_bundle.py) registers
`PLOTLY_TRACES` only: plotly.js as Dash serves it registers every trace type (maps, 3-D, geo,
...), 4.8 MB whose start-up costs the browser's main thread about 0.9 s on each chart page; this
one is 1.6 MB and starts in about 0.1 s. Without the file (a checkout that dropped it) the loader
uses Dash's full plotly.js, as before.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterable

PLOTLY_JS = "_dash-component-suites/plotly/package_data/plotly.min.js"  # the URL dash-renderer gives dcc.Graph
# The dashboard's plotly.js build, in the assets folder (served, never put in an index by Dash:
# see app.py's assets_ignore), and the trace types it registers: every type a dashboard figure
# uses must be here (tests/test_dashboard_plotly_bundle.py reads the figure code for them).
PLOTLY_BUNDLE = "plotly-charts.min.js"
PLOTLY_TRACES = ("scatter", "scattergl", "bar", "violin", "waterfall")
BUNDLE_PATH = Path(__file__).resolve().parent / "assets" / PLOTLY_BUNDLE
_HEADER = re.compile(r"^/\* profaudit plotly\.js bundle: plotly\.js v(?P<version>[0-9.]+); traces: (?P<traces>[a-z0-9,]+) \*/")


def bundle_header(version: str, traces: Iterable[str]) -> str:
    """The bundle's first line (tools/build_plotly_bundle.py writes it, `bundle_info` reads it)."""
    return f"/* profaudit plotly.js bundle: plotly.js v{version}; traces: {','.join(traces)} */"


def bundle_info(path: Path = BUNDLE_PATH) -> tuple[str, tuple[str, ...]] | None:
    """(plotly.js version, trace types) of the bundle at `path`, None when there is none."""
    try:
        with open(path, encoding="utf-8") as fh:
            m = _HEADER.match(fh.readline())
    except OSError:
        return None
    return (m.group("version"), tuple(m.group("traces").split(","))) if m else None

_LOADER = """<script>
(function () {
  var charts = %(paths)s;
  var here = location.pathname.replace(/\\/+$/, "") || "/";
  if (window.Plotly) { return; }
  var src = %(src)s, started = false, fetch0 = window.fetch;
  var s = document.createElement("script");
  var loaded = new Promise(function (resolve, reject) {
    s.onload = function () {
      // WebGL at the screen's pixel ratio: plotly's default (2) draws each of its three WebGL
      // canvases, every one the size of the whole figure, at twice a standard screen's
      // resolution both ways: four times the pixels to clear, draw and hand to the compositor,
      // for no sharper a picture on that screen (and software WebGL pays for every pixel)
      var ratio = Math.min(4, Math.max(1, window.devicePixelRatio || 1));
      if (window.Plotly && window.Plotly.setPlotConfig) { window.Plotly.setPlotConfig({ plotGlPixelRatio: ratio }); }
      resolve(window.Plotly);
    };
    s.onerror = function (e) { window.Plotly = undefined; reject(e); };
  });
  function start() {
    if (started) { return; }
    started = true;
    if (window.fetch === watch) { window.fetch = fetch0; }
    s.async = true;
    s.src = src;
    document.head.appendChild(s);
  }
  window.Plotly = { then: function (ok, fail) { start(); return loaded.then(ok, fail); } };
  // A page without charts: loaded when a graph first asks for it (navigation to a chart page).
  if (charts.indexOf(here) < 0) { return; }
  // Download now; run it once the page's content has been asked for (the layout request holds
  // it, see first_paint.py; else the router callback's), so the server builds the page while the
  // browser parses plotly.js (running it first would hold that request back).
  var link = document.createElement("link");
  link.rel = "preload"; link.as = "script"; link.href = src;
  document.head.appendChild(link);
  function watch(input) {
    var r = fetch0.apply(this, arguments);
    var url = String((input && input.url) || input);
    if (url.indexOf("_dash-layout") >= 0 || url.indexOf("_dash-update-component") >= 0) { start(); }
    return r;
  }
  window.fetch = watch;
  setTimeout(start, 2000);  // a page that asks for nothing still gets it
})();
</script>"""


def plotly_src(app, bundle: bool = True) -> str:
    """The URL the browser loads plotly.js from: the dashboard's build when `bundle` and the file
    is there (served from the app's assets), else Dash's full plotly.js."""
    prefix = app.config.requests_pathname_prefix or "/"
    if bundle and bundle_info() is not None:
        return prefix + app.config.assets_url_path.strip("/") + "/" + PLOTLY_BUNDLE
    return prefix + PLOTLY_JS


def index_string(app, chart_paths: Iterable[str], head: str = "", *, bundle: bool = True) -> str:
    """Dash's index page for `app` with `head` (other scripts for the head) and the plotly.js
    loader for `chart_paths` (page paths as registered, e.g. "/roofline") in its head. The loader
    only for a locally served plotly.js (Dash's default); `bundle`: load the dashboard's build
    (the app must serve it from its assets folder), else Dash's full plotly.js."""
    index = app.index_string
    if "{%css%}" not in index:
        return index
    if head:
        index = index.replace("{%css%}", "{%css%}\n" + head, 1)
    if not app.config.serve_locally:
        return index
    prefix = app.config.requests_pathname_prefix or "/"
    paths = sorted({(prefix.rstrip("/") + "/" + p.strip("/")).rstrip("/") or "/" for p in chart_paths})
    loader = _LOADER % {"paths": json.dumps(paths), "src": json.dumps(plotly_src(app, bundle))}
    return index.replace("{%css%}", "{%css%}\n" + loader, 1)


__all__ = ["index_string", "plotly_src", "bundle_header", "bundle_info", "PLOTLY_JS", "PLOTLY_BUNDLE", "PLOTLY_TRACES"]
