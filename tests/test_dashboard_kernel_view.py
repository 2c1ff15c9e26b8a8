"""Dashboard kernel analysis view and roofline click mapping, called directly (no browser): the
Kernels page detail shows the kernel-report sections; a roofline click that arrives without
customdata (WebGL + typed arrays) still finds its kernel from curveNumber and pointIndex."""

from __future__ import annotations

import polars as pl
import pytest

pytest.importorskip("dash")
pytest.importorskip("dash_ag_grid")

from dashboard_data import make_inputs  # noqa: E402
from profaudit.dashboards.app import create_app  # noqa: E402
from profaudit.dashboards.pages import kernels as kernels_page  # noqa: E402
from profaudit.dashboards.pages import roofline as roofline_page  # noqa: E402
from profaudit.schema import MEMORY_LEVELS  # noqa: E402


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    inputs = make_inputs(tmp_path_factory.mktemp("kv"), n_kernels=60)
    return create_app([inputs["data"]], upload_dir=tmp_path_factory.mktemp("up") / "u", max_upload_bytes=100 * 1024)


@pytest.fixture
def st(app):
    with app.server.test_request_context():
        yield app._profaudit_state


def walk(c):
    yield c
    kids = getattr(c, "children", None)
    if isinstance(kids, (list, tuple)):
        for k in kids:
            yield from walk(k)
    elif isinstance(kids, (str, int, float)):
        yield kids
    elif kids is not None:
        yield from walk(kids)


def text(c) -> str:
    return " ".join(str(x) for x in walk(c) if isinstance(x, (str, int, float)))


def by_id(c, ident):
    return next(x for x in walk(c) if getattr(x, "id", None) == ident)


def test_kernel_detail_is_the_analysis_view(st):
    row = st.kernels().row(0, named=True)
    detail = kernels_page.kernel_detail(st, row["_row"])
    assert f"profile {row['profile_id']}, kernel {row['kernel_id']}" in text(by_id(detail, "kn-detail-title"))
    report = by_id(detail, "kn-detail-report")
    ids = [getattr(x, "id", None) for x in walk(report)]
    assert "kr-SpeedOfLight" in ids and "kr-Launches" in ids and "kr-Roofline" in ids
    # the SOL duration is the kernel's duration, through the one formatter
    from profaudit.fmt import fmt_ns

    assert fmt_ns(row["duration_ns"]) in text(by_id(detail, "kr-SpeedOfLight"))
    # metrics this synthetic report lacks are named with the section that collects them
    absent = text(by_id(detail, "kn-detail-absent"))
    assert "Warp State Statistics" in absent and "--section WarpStateStats" in absent
    assert "smsp__average_warp_latency_per_inst_issued.ratio" in absent
    # the raw metrics stay available, folded
    assert any(getattr(x, "id", None) == "kn-metrics" for x in walk(detail))


def test_roofline_click_without_customdata_maps_by_point_index(st):
    pids = st.kernel_profile_ids()
    levels, precisions, clocks = list(MEMORY_LEVELS), ["fp32", "fp16_tensor"], ["boost"]
    fig, notes, view, msg = roofline_page.update(pids, roofline_page.AS_REPORTED, levels, precisions, clocks, [])
    traces = fig["data"]
    curve = next(i for i, t in enumerate(traces) if t.get("type") == "scattergl")
    rows = roofline_page.trace_rows(st, pids, roofline_page.AS_REPORTED, [], levels, precisions, clocks, view)
    pi = len(rows[curve]) - 1  # the last point of that trace
    want = int(rows[curve][pi])
    click = {"points": [{"curveNumber": curve, "pointIndex": pi, "pointNumber": pi, "x": 1.0, "y": 1.0}]}
    out = roofline_page.show_point(click, pids, roofline_page.AS_REPORTED, [], levels, precisions, clocks, view)
    rf = st.roofline(pids, None, False)
    r = rf.row(want, named=True)
    assert f"profile {r['profile_id']}, kernel {r['kernel_id']}" in text(by_id(out, "rf-detail-title"))
    assert any(getattr(x, "id", None) == "rf-kr-report" for x in walk(out))
    # the same point with customdata gives the same kernel
    out2 = roofline_page.show_point({"points": [{"customdata": want}]}, pids, roofline_page.AS_REPORTED, [])
    assert text(by_id(out2, "rf-detail-title")) == text(by_id(out, "rf-detail-title"))


def test_rows_survive_a_lost_cache(st):
    pids = st.kernel_profile_ids()
    levels, precisions, clocks = ["dram"], ["fp32"], ["boost"]
    rows = roofline_page.trace_rows(st, pids, roofline_page.AS_REPORTED, [], levels, precisions, clocks, None)
    st._cache.clear()  # a restart or eviction: rebuilt from the same controls, identically
    again = roofline_page.trace_rows(st, pids, roofline_page.AS_REPORTED, [], levels, precisions, clocks, None)
    assert [None if r is None else r.tolist() for r in rows] == [None if r is None else r.tolist() for r in again]


def test_compare_shows_a_kernel_pair(app, st):
    from profaudit.dashboards.pages import compare as compare_page

    out, msg = compare_page.run(1, "gemm-before", "gemm-after", "auto", [], compare_page.NO_DEVICE)
    assert msg == ""
    pair = by_id(out, "cp-pair")
    assert pair.options and pair.value == pair.options[0]["value"]
    table = by_id(out, "cp-pair-table")
    assert "section" in text(table) and "Duration" in text(table)
    # choosing another matched kernel redraws the pair
    other = pair.options[-1]["value"]
    view, msg = compare_page.show_pair(other, "gemm-before", "gemm-after", "auto", [], compare_page.NO_DEVICE)
    assert msg == "" and "before" in text(view)
