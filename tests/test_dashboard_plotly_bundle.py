"""The dashboard's plotly.js build (dashboards/assets/plotly-charts.min.js, made by
tools/build_plotly_bundle.py) registers every trace type the package's figures use, and exactly
the types its first line names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("dash")
go = pytest.importorskip("plotly.graph_objects")

from browser_util import browser_missing, launch  # noqa: E402
from profaudit.dashboards.plotly_preload import BUNDLE_PATH, PLOTLY_TRACES, bundle_header, bundle_info  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
# where figures the dashboard shows are built (pages call into the library for some of them)
SOURCES = ("profaudit", "parsers", "dashboards")


def trace_types() -> dict[str, str]:
    """plotly's trace classes: {class name: trace type}, e.g. {"Scattergl": "scattergl"}."""
    from plotly.basedatatypes import BaseTraceType

    out = {}
    for name in dir(go):
        cls = getattr(go, name)
        if isinstance(cls, type) and issubclass(cls, BaseTraceType) and cls is not BaseTraceType:
            out[name] = cls().type
    return out


def used_trace_types(text: str, types: dict[str, str]) -> set[str]:
    """Trace types a source text builds: go.Bar(...), fig.add_bar(...), {"type": "scattergl"}."""
    known = set(types.values())
    used = {types[c] for c in re.findall(r"\bgo\.([A-Z]\w*)\(", text) if c in types}
    used |= {t for t in re.findall(r"\.add_([a-z0-9]+)\(", text) if t in known}
    used |= {t for t in re.findall(r"""["']type["']\s*:\s*["']([a-z0-9]+)["']""", text) if t in known}
    return used


def test_the_scan_finds_trace_types_in_each_spelling():
    types = trace_types()
    text = 'go.Figure(go.Heatmap(z=z)); fig.add_box(y=y); fig.add_trace({"type": "sankey"}); xaxis={"type": "log"}; fig.add_hline(y=1)'
    assert used_trace_types(text, types) == {"heatmap", "box", "sankey"}


def test_bundle_registers_every_trace_type_the_package_draws():
    info = bundle_info()
    assert info is not None, f"{BUNDLE_PATH} is missing or has no header: run tools/build_plotly_bundle.py"
    version, traces = info
    assert traces == PLOTLY_TRACES  # built from the list the dashboard declares
    types = trace_types()
    used = set()
    for folder in SOURCES:
        for path in (REPO / folder).rglob("*.py"):
            used |= used_trace_types(path.read_text(encoding="utf-8"), types)
    assert {"scatter", "scattergl"} <= used  # the scan sees the roofline's traces
    missing = used - set(traces)
    assert not missing, f"figures use trace types the dashboard's plotly.js build lacks: {sorted(missing)}; add them to PLOTLY_TRACES and run tools/build_plotly_bundle.py"


def test_header_round_trips(tmp_path):
    p = tmp_path / "b.js"
    p.write_text(bundle_header("4.1.1", ("scatter", "bar")) + "\n/* licence */\nvar Plotly=1;\n")
    assert bundle_info(p) == ("4.1.1", ("scatter", "bar"))
    p.write_text("/* plotly.js v4.1.1 */\n")
    assert bundle_info(p) is None
    assert bundle_info(tmp_path / "absent.js") is None


@pytest.mark.browser
def test_bundle_in_a_browser_registers_what_its_header_names_and_draws_each():
    why = browser_missing()
    if why:
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    version, traces = bundle_info()
    figure = {"data": [{"type": t, "y": [1, 3, 2]} if t != "waterfall" else {"type": t, "y": [1, -1, 2]} for t in traces], "layout": {}}
    with sync_playwright() as pw:
        browser = launch(pw)
        try:
            page = browser.new_page()
            page.set_content("<div id='g' style='width:600px;height:400px'></div>")
            page.add_script_tag(path=str(BUNDLE_PATH))
            got = page.evaluate("() => [Plotly.version, Object.keys(Plotly.PlotSchema.get().traces).sort()]")
            assert got == [version, sorted(traces)]
            drawn = page.evaluate("f => Plotly.newPlot('g', f.data, f.layout).then(gd => gd._fullData.map(t => [t.type, t.visible]))", figure)
            assert drawn == [[t, True] for t in traces]
        finally:
            browser.close()
