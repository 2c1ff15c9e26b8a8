"""The baseline pages of bench_dashboard.py, served from a process of their own.

Dash includes every component library the Python process has imported in every app's index page,
so a baseline app built next to the dashboard would load dash-ag-grid's 1.3 MB bundle too: not a
minimal page. This process imports dash alone and serves, each on its own port:

- `empty`: an empty Dash page (one Div);
- `chart`: a Dash page holding one two-point WebGL plotly chart in its initial layout, plotly.js
  loaded as Dash loads it for any chart page (dcc.Graph fetches it from the local server when it
  mounts) — the floor under a chart page;
- `chart-preloaded`: the same page with the dashboard's own loading (its plotly.js build, which
  holds only the trace types the dashboard draws, fetched with the index page and started while
  the layout is asked for, dcc's graph chunk in the index; the dashboard's plotly_preload.py and
  first_paint.py, read as files so the profaudit package and its imports stay out, and the build
  served from the dashboard's assets folder) — what 2 points would cost with everything the
  dashboard does.

It prints one `name url` line per page, a line `ready`, and serves until its stdin closes.

    .venv/bin/python benchmarks/dashboard_floor.py
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _module(name: str):
    # the modules import nothing from profaudit at module level
    spec = importlib.util.spec_from_file_location(f"_floor_{name}", REPO / "dashboards" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def apps() -> dict:
    import dash
    from dash import dcc, html

    empty = dash.Dash("floor_empty", title="empty")
    empty.layout = html.Div("ready", id="ready")
    figure = {"data": [{"type": "scattergl", "x": [1, 2], "y": [1, 2]}], "layout": {}}
    chart = dash.Dash("floor_chart", title="chart")
    chart.layout = html.Div(dcc.Graph(id="chart", figure=figure))
    # the dashboard's assets folder serves its plotly.js build; ".*": Dash puts none of the files
    # in the index (the dashboard's style sheet is page chrome this baseline leaves out)
    pre = dash.Dash("floor_chart_preloaded", title="chart", assets_folder=str(REPO / "dashboards" / "assets"), assets_ignore=".*")
    pre.layout = html.Div(dcc.Graph(id="chart", figure=figure))
    preload, first_paint = _module("plotly_preload"), _module("first_paint")
    pre.index_string = preload.index_string(pre, ["/"])
    interpolate = pre.interpolate_index

    def interpolate_index(**parts):
        parts["scripts"] = first_paint.page_scripts(parts["scripts"], "/", chunks=("graph",), grid=False)
        return interpolate(**parts)

    pre.interpolate_index = interpolate_index
    return {"empty": empty, "chart": chart, "chart-preloaded": pre}


def main() -> int:
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    servers = []
    for name, app in apps().items():
        srv = make_server("127.0.0.1", 0, app.server, threaded=True)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        print(name, f"http://127.0.0.1:{srv.server_port}", flush=True)
    print("ready", flush=True)
    sys.stdin.read()  # the benchmark closes it when done
    for srv in servers:
        srv.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
