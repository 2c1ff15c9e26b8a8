"""First render of the kernel grid and the roofline for a 100k-kernel profile, in headless Chromium.

Baselines, measured in the same run and the same browser, served the same way: the first render of
an empty Dash page (one Div), and of a Dash page holding one two-point WebGL plotly chart (what
loading and starting plotly.js costs before any data: the floor under every chart page). Each
time is from `page.goto` to the element being on screen in a fresh browser context: the grid's
first data row; the roofline's WebGL points drawn (plotly finished plotting a figure holding
them). "cold" is the first visit after the app started (the app warms its caches in the
background from the start, as `profaudit dashboard` does); "warm" the median of later visits.

    .venv/bin/python benchmarks/bench_dashboard.py [--kernels 100000] [--repeat 3]

Goal (issue 8): under 2 s for each in that browser.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from browser_util import browser_missing, launch  # noqa: E402


def timed_visit(browser, url: str, ready_js: str) -> float:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = ctx.new_page()
    page.set_default_timeout(120_000)
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_function(ready_js, polling="raf")
    dt = time.perf_counter() - t0
    ctx.close()
    return dt


GRID_READY = "() => !!document.querySelector('#kn-grid .ag-center-cols-container .ag-row[row-id] .ag-cell')"
ROOF_READY = """() => {
  const g = document.querySelector('#rf-graph .js-plotly-plot');
  return !!(g && g._fullData && g._fullData.some(t => t.type === 'scattergl' && t.visible !== false)
            && g.querySelector('canvas') && !document.querySelector('[data-dash-is-loading="true"]'));
}"""
EMPTY_READY = "() => !!document.querySelector('#ready')"
CHART_READY = "() => { const g = document.querySelector('#chart .js-plotly-plot'); return !!(g && g._fullData && g.querySelector('canvas')); }"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    why = browser_missing()
    if why:
        print(f"bench_dashboard: skipped: {why}")
        return 0
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    import dash
    from dash import dcc, html
    from playwright.sync_api import sync_playwright

    from dashboard_data import profile
    from profaudit.dashboards.app import ServerThread, create_app
    from profaudit.dataset import write_dataset
    from profaudit.profile import ProfileSet

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        write_dataset(ProfileSet([profile("bench-100k", args.kernels, seed=7, with_metrics=False)]), Path(tmp) / "profile")
        t_write = time.perf_counter() - t0
        t0 = time.perf_counter()
        app = create_app([Path(tmp) / "profile"], upload_dir=Path(tmp) / "uploads")
        t_load = time.perf_counter() - t0
        empty = dash.Dash(__name__ + ".empty", title="empty")
        empty.layout = html.Div("ready", id="ready")
        chart = dash.Dash(__name__ + ".chart", title="chart")
        chart.layout = html.Div(dcc.Graph(id="chart", figure={"data": [{"type": "scattergl", "x": [1, 2], "y": [1, 2]}], "layout": {}}))
        time.sleep(2.0)  # let the app's background warm-up finish, as it would before a user arrives
        with ServerThread(app) as srv, ServerThread(empty) as base, ServerThread(chart) as base2, sync_playwright() as pw:
            browser = launch(pw)
            results = {}
            for name, url, ready in (
                ("empty Dash page (baseline)", base.url + "/", EMPTY_READY),
                ("2-point WebGL chart page (baseline)", base2.url + "/", CHART_READY),
                ("kernel grid, 100k rows", srv.url + "/kernels", GRID_READY),
                ("roofline, 100k kernels x 3 levels", srv.url + "/roofline", ROOF_READY),
            ):
                times = [timed_visit(browser, url, ready) for _ in range(args.repeat + 1)]
                results[name] = (times[0], statistics.median(times[1:]))
            browser.close()
        st = app._profaudit_state
        rf = st.roofline(st.ps.ids, None, False)
        from profaudit.dashboards.figures import roofline_figure
        from profaudit.dashboards.pages.roofline import _specs
        from dash._utils import to_json

        fig = roofline_figure(rf, _specs(st, rf), levels=["dram", "l2", "l1"], precisions=["fp32", "fp16_tensor"], clocks=["boost", "kernel"])
        payload = len(to_json(fig.figure))

    base_cold, base_warm = results["empty Dash page (baseline)"]
    chart_cold, chart_warm = results["2-point WebGL chart page (baseline)"]
    print(f"dashboard first render, {args.kernels:,} kernels (dataset written in {t_write:.2f} s, app loaded in {t_load:.2f} s)")
    print(f"roofline figure: {fig.points:,} points sent as {fig.sent:,} distinct positions, {payload / 1e6:.1f} MB JSON")
    print(f"{'':38} {'cold s':>8} {'warm s':>8} {'warm / empty page':>18} {'warm / chart page':>18} {'goal < 2 s':>11}")
    for name, (cold, warm) in results.items():
        ok = "" if "baseline" in name else ("met" if max(cold, warm) < 2.0 else "MISSED")
        print(f"{name:38} {cold:8.3f} {warm:8.3f} {warm / base_warm:18.2f} {warm / chart_warm:18.2f} {ok:>11}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
