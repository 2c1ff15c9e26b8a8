"""Timeline lanes and server-side decimation (profaudit.timeline_view) and the dashboard page."""

from __future__ import annotations

import polars as pl
import pytest

from profaudit.profile import Profile
from profaudit.timeline_view import decimate, timeline_events
from tests.conftest import corpus_file
from tests.test_trace_export import synthetic


def union(intervals):
    total, end = 0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def test_lanes_of_a_known_profile():
    ev = timeline_events(synthetic())
    assert ev["origin_ns"].unique().to_list() == [999_000]
    lanes = ev.select("lane", "lane_order").unique().sort("lane_order")["lane"].to_list()
    assert lanes == ["GPU 0 stream 7", "GPU 0 stream 8", "GPU 0 stream 9", "GPU 1 stream 7", "ranges (nvtx_push_pop)", "host 42 thread 1", "host 42 thread 2"]
    gemm = ev.filter((pl.col("name") == "gemm") & (pl.col("lane") == "GPU 0 stream 7")).row(0, named=True)
    assert (gemm["start_ns"], gemm["end_ns"]) == (1_000, 2_500)
    assert ev.filter(pl.col("kind") == "transfer")["name"].to_list() == ["memcpy HtoD"]
    assert "lost" not in ev["name"].to_list()  # no duration: not drawn


def _many(n_lanes=4, per_lane=3_000):
    rows = {"name": [], "stream": [], "start_ns": [], "duration_ns": [], "device_id": []}
    for lane in range(n_lanes):
        t = 0
        for i in range(per_lane):
            rows["name"].append(f"k{i % 7}")
            rows["stream"].append(lane)
            rows["device_id"].append(0)
            rows["start_ns"].append(t)
            d = 100 + (i * 37 % 500)
            rows["duration_ns"].append(float(d))
            t += d + (5_000 if i % 50 == 0 else 20)
    return Profile("many", {"source": "synthetic"}, {"kernels": pl.DataFrame(rows)})


def test_decimation_keeps_every_event_and_the_busy_time():
    ev = timeline_events(_many())
    seg, gap = decimate(ev, max_segments=300)
    assert gap > 0 and seg.height <= 300
    assert seg["count"].sum() == ev.height == 12_000
    for lane in ev["lane"].unique().to_list():
        e = ev.filter(pl.col("lane") == lane)
        s = seg.filter(pl.col("lane") == lane).sort("start_ns")
        assert s["busy_ns"].sum() == pytest.approx(union(zip(e["start_ns"], e["end_ns"])))
        # segments of a lane do not overlap and cover its first to last event
        assert all(a < b for a, b in zip(s["end_ns"].to_list()[:-1], s["start_ns"].to_list()[1:]))
        assert s["start_ns"].min() == e["start_ns"].min() and s["end_ns"].max() == e["end_ns"].max()


def test_a_window_draws_finer_and_small_views_are_exact():
    ev = timeline_events(_many())
    whole, g_whole = decimate(ev, max_segments=300)
    x1 = float(ev["end_ns"].max()) / 40
    part, g_part = decimate(ev, 0, x1, max_segments=300)
    assert g_part < g_whole
    inside = ev.filter((pl.col("end_ns") >= 0) & (pl.col("start_ns") <= x1))
    assert part["count"].sum() == inside.height
    tiny, g = decimate(ev, 0, 2_000, max_segments=300)
    assert g == 0 and (tiny["count"] == 1).all() and tiny.height == ev.filter(pl.col("start_ns") <= 2_000).height


def test_nested_ranges_count_once():
    r = pl.DataFrame({"name": ["outer", "inner", "inner2"], "kind": ["nvtx_push_pop"] * 3, "thread_id": [1] * 3, "process_id": [1] * 3,
                      "start_ns": [0, 10, 50], "duration_ns": [100.0, 20.0, 20.0]})
    ev = timeline_events(Profile("r", {}, {"ranges": r}))
    seg, _ = decimate(ev, max_segments=1)
    assert seg.height == 1 and seg.row(0, named=True)["busy_ns"] == 100 and seg["count"].item() == 3 and seg["name"].item() == "outer"


@pytest.mark.corpus
def test_xplane_trace_decimates_to_the_limit():
    import profaudit

    ps = profaudit.load(str(corpus_file("xplane", "34.83.195.179")))
    ev = timeline_events(ps.profiles()[0])
    k = ps.kernels
    assert ev.filter(pl.col("kind") == "kernel").height == k.filter(pl.col("start_ns").is_not_null()).height
    seg, _ = decimate(ev, max_segments=500)
    assert seg.height <= 500 and seg["count"].sum() == ev.height


def test_dashboard_page(tmp_path):
    pytest.importorskip("dash")
    from profaudit.dashboards.app import create_app
    from profaudit.dashboards.pages import timeline as page
    from profaudit.trace_export import write_chrome_trace

    # the page reads any loaded profile; a Chrome trace written from the synthetic one loads back
    path = tmp_path / "t.json"
    write_chrome_trace(_many(2, 1_500), path)
    app = create_app([str(path)], upload_dir=tmp_path / "u")
    assert app.server.test_client().get("/timeline").status_code == 200
    with app.server.test_request_context():
        lay = page.layout()
        pid = lay.children[1].children[1].value
        fig, note, msg = page.update(pid, {"xaxis.range[0]": 0.0, "xaxis.range[1]": 0.05})
        assert msg is None and "events in view" in note
        assert fig["layout"]["xaxis"]["range"] == [0.0, 0.05]
        n = sum(len(t["y"]) for t in fig["data"])
        assert 0 < n <= page.MAX_SEGMENTS
