"""Start loading plotly.js with the page, not after the page's content arrives.

dcc.Graph loads plotly.js (4.8 MB) only when the first graph mounts: on a chart page that is
after the Dash shell, its layout, the page callback and the figure have all arrived, and the
browser then parses and starts plotly.js with nothing else left to do, so the whole page costs
the sum of the two. Opening a chart page directly (a bookmark, a reload), the index page built
here fetches plotly.js at once and runs it as soon as the page's content has been requested: the
browser parses it while the server builds the page and its figure. Until it has run, `window.Plotly` is a thenable that resolves when it has:
dcc.Graph waits on `Promise.resolve(window.Plotly || <inject its own script>)`, so it waits for
this load instead of starting a second one, and plotly.js replaces the placeholder with itself.
Other pages (the kernel grid has no chart) do not load it; navigating to a chart page from them
loads it the usual way.
"""

from __future__ import annotations

import json
from typing import Iterable

PLOTLY_JS = "_dash-component-suites/plotly/package_data/plotly.min.js"  # the URL dash-renderer gives dcc.Graph

_LOADER = """<script>
(function () {
  var charts = %(paths)s;
  var here = location.pathname.replace(/\\/+$/, "") || "/";
  if (charts.indexOf(here) < 0 || window.Plotly) { return; }
  var src = %(src)s, started = false, fetch0 = window.fetch;
  var s = document.createElement("script");
  var loaded = new Promise(function (resolve, reject) {
    s.onload = function () { resolve(window.Plotly); };
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
  window.Plotly = { then: function (ok, fail) { start(); return loaded.then(ok, fail); } };
})();
</script>"""


def index_string(app, chart_paths: Iterable[str], head: str = "") -> str:
    """Dash's index page for `app` with `head` (other scripts for the head) and the plotly.js
    loader for `chart_paths` (page paths as registered, e.g. "/roofline") in its head. The loader
    only for a locally served plotly.js (Dash's default)."""
    index = app.index_string
    if "{%css%}" not in index:
        return index
    if head:
        index = index.replace("{%css%}", "{%css%}\n" + head, 1)
    if not app.config.serve_locally:
        return index
    prefix = app.config.requests_pathname_prefix or "/"
    paths = sorted({(prefix.rstrip("/") + "/" + p.strip("/")).rstrip("/") or "/" for p in chart_paths})
    loader = _LOADER % {"paths": json.dumps(paths), "src": json.dumps(prefix + PLOTLY_JS)}
    return index.replace("{%css%}", "{%css%}\n" + loader, 1)


__all__ = ["index_string", "PLOTLY_JS"]
