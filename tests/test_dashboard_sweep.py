"""Dashboard defects found by driving it over real public files (a sweep of Nsight Compute, Nsight
Systems, Kineto, nvprof and timing files), each pinned here on synthetic data of the same shape:
multi-kilobyte C++ template kernel names, profiles without FLOP counts, many devices whose specs
lack a memory level, timing logs on a device known only through --spec."""

from __future__ import annotations


import numpy as np
import polars as pl
import pytest

pytest.importorskip("dash")
pytest.importorskip("dash_ag_grid")

from dashboard_data import LONG, LOG_META, long_name_profile, profile, timing_samples  # noqa: E402
from profaudit.dashboards.app import create_app  # noqa: E402
from profaudit.dashboards.figures import roofline_figure  # noqa: E402
from profaudit.dashboards.pages import audit as audit_page  # noqa: E402
from profaudit.dashboards.pages import compare as compare_page  # noqa: E402
from profaudit.dashboards.pages import kernels as kernels_page  # noqa: E402
from profaudit.dashboards.pages import roofline as roofline_page  # noqa: E402
from profaudit.dashboards.pages import timing as timing_page  # noqa: E402
from profaudit.dashboards.ui import OPTION_LABEL_MAX, option_label  # noqa: E402
from profaudit.dataset import write_dataset  # noqa: E402
from profaudit.profile import ProfileSet  # noqa: E402
from profaudit.timinglog import write_timing_log  # noqa: E402

ACME_SPEC = """
schema_version: 1
key: acme-x1
name: Acme X1
vendor: Example
scope: device
aliases: [Acme X1]
compute_units: {value: 10, kind: SM, source: mine}
boost_clock_mhz: {value: 2000, source: mine}
bandwidth_bytes_per_s:
  dram: {value: 1e12, source: mine}
peak_flops_per_s_dense:
  fp32: {value: 1.0e+13, clock_mhz: 2000, source: mine}
sources:
  mine: {title: a test device}
"""


@pytest.fixture(scope="module")
def sweep_app(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    data = root / "data"
    data.mkdir()
    write_dataset(ProfileSet([long_name_profile("kineto-long-names"), profile("gemm", 40, seed=1, with_metrics=False)]), data / "profiles")
    # every sample at 1400 MHz: the Acme X1's spec says 2000 MHz boost, so all are throttled
    s = timing_samples("acme", 20_000.0, 60, seed=9).with_columns(pl.lit(1400.0).alias("sm_clock_mhz"), pl.lit("none").alias("throttle_reasons"), pl.lit("Acme X1").alias("device_name"))
    write_timing_log(data / "acme.jsonl", s, {**LOG_META, "device_name": "Acme X1"})
    spec = root / "acme.yaml"
    spec.write_text(ACME_SPEC)
    return create_app([data], specs=[spec], upload_dir=root / "up", warm=False)


@pytest.fixture
def sctx(sweep_app):
    with sweep_app.server.test_request_context():
        yield sweep_app._profaudit_state


def test_option_label_bounds_and_keeps_both_ends():
    assert option_label("short name") == "short name"
    cut = option_label(LONG.format(7))
    assert len(cut) == OPTION_LABEL_MAX and cut.startswith("void at::native::elementwise_kernel<128") and cut.endswith("7>(int, Params)") and "…" in cut
    assert option_label("a\n  b") == "a b"


def test_dropdown_labels_from_profiles_stay_short(sweep_app, sctx):
    """Dash's dropdown stalls the browser tab on option labels of thousands of characters (the
    Timing page of a Kineto trace never drew): every label built from profile data is bounded."""
    df = timing_page.samples_of(sctx, "kernels")
    opts = timing_page.cases(df)
    for o in opts:
        assert len(o["label"]) <= OPTION_LABEL_MAX, o["label"][:80]
        assert len(o["value"]) <= 40  # the dropdown indexes values too
        bench, _ = timing_page.case_of(sctx, "kernels", o["value"])
        assert o["label"].endswith(("1 profile", "profiles")) and o["label"][:30] == bench[:30]  # the value names the full case
    long_opts = [o for o in opts if len(timing_page.case_of(sctx, "kernels", o["value"])[0]) > 1000]
    want = df.filter(pl.col("benchmark").str.len_chars() > 1000).select("benchmark", "params").unique().height
    assert len({o["label"] for o in long_opts}) == len(long_opts) == want >= 30  # the kept tail tells them apart
    for options in (compare_page._options(sctx), audit_page.claim_options(sctx)):
        assert all(len(o["label"]) <= OPTION_LABEL_MAX for o in options)
    lay = roofline_page.layout()
    rf_opts = next(c for c in _walk(lay) if getattr(c, "id", None) == "rf-profiles").options
    assert all(len(o["label"]) <= OPTION_LABEL_MAX for o in rf_opts)
    # choosing a case still works with the full name in the value
    trace, _, _, _, msg = timing_page.update("kernels", long_opts[0]["value"])
    assert msg == "" and len(trace.data) > 0


def _walk(c):
    yield c
    kids = getattr(c, "children", None)
    for k in kids if isinstance(kids, (list, tuple)) else [kids] if kids is not None and not isinstance(kids, str) else []:
        yield from _walk(k)


def test_roofline_flops_axis_has_si_prefixes(sweep_app, sctx):
    # plotly's default tick labels write 1e9 as "1B" (billion) next to hover text in G
    fig, _, _, msg = roofline_page.update(["gemm"], roofline_page.AS_REPORTED, ["dram"], ["fp32"], ["boost"], [])
    assert msg == ""
    assert fig["layout"]["yaxis"]["exponentformat"] == "SI"
    assert fig["layout"]["xaxis"].get("exponentformat") in (None, "B")  # 0.001 FLOP/B stays 0.001, not "1m"
    assert "%{y:.3s}FLOP/s" in next(t for t in fig["data"] if t["type"] == "scattergl")["hovertemplate"]


def test_roofline_level_notes_only_where_points_lack_a_ceiling(sweep_app, sctx):
    st = sctx
    rf = st.roofline(["gemm"], None, False)
    specs = roofline_page._specs(st, rf)
    key = rf["device_key"][0]
    assert "l2" not in specs[key].levels()  # the H100 spec publishes no L2 bandwidth
    res = roofline_figure(rf, specs, levels=["dram", "l2"], precisions=["fp32"], clocks=["boost"])
    l2 = [n for n in res.notes if "L2" in n]
    assert l2 == [f"{key}'s spec publishes no L2 bandwidth, so L2 points on it have no memory ceiling"]
    # two devices without L2 bandwidth: one note naming both, not one per device
    other = "rtx-3080"
    two = rf.with_columns(pl.when(pl.col("kernel_id") % 2 == 0).then(pl.lit(other)).otherwise(pl.col("device_key")).alias("device_key"))
    specs2 = {**specs, other: st.device_specs[other]}
    assert "l2" not in specs2[other].levels()
    notes = [n for n in roofline_figure(two, specs2, levels=["dram", "l2"], precisions=["fp32"], clocks=["boost"]).notes if "L2" in n]
    assert len(notes) == 1 and key in notes[0] and other in notes[0] and notes[0].startswith("the specs of")
    # and devices without a measured clock share one note too
    unclocked = two.with_columns(pl.lit(None, pl.Float64).alias("kernel_clock_hz"))
    notes = [n for n in roofline_figure(unclocked, specs2, levels=["dram"], precisions=["fp32"], clocks=["boost", "kernel"]).notes if "measured" in n]
    assert len(notes) == 1 and notes[0].startswith("no measured kernel clock on ") and key in notes[0] and other in notes[0] and notes[0].endswith("so they have no ceilings at the measured clock")
    # no FLOPs, so no points: nothing is said about ceilings that points lack
    none = roofline_figure(rf.with_columns(pl.lit(None, pl.Float64).alias("achieved_flops_per_s")), specs, levels=["dram", "l2"], precisions=["fp32"], clocks=["boost"])
    assert not any("bandwidth" in n for n in none.notes) and any("no points to place" in n for n in none.notes)


def test_kernel_detail_without_flops_states_no_achieved_rate(sweep_app, sctx):
    st = sctx
    k = st.kernels()
    row = int(k.filter(pl.col("profile_id") == "kineto-long-names")["_row"][0])
    line = kernels_page._roofline_line(st, "kineto-long-names", int(k["kernel_id"][row]))
    assert line.startswith("Roofline on h100-sxm: no FLOP counts") and "achieved" not in line
    gemm = int(k.filter((pl.col("profile_id") == "gemm") & pl.col("flops_fp16_tensor").is_not_null())["kernel_id"][0])
    assert "achieved" in kernels_page._roofline_line(st, "gemm", gemm)


def test_timing_throttling_uses_devices_given_with_spec(sweep_app, sctx):
    """A device known only from --spec gives its boost clock to the throttling mark, as it does to
    the roofline; without it every sample at one steady clock would look unthrottled."""
    opts = timing_page.cases(timing_page.samples_of(sctx, "samples"))
    trace, _, _, _, msg = timing_page.update("samples", opts[0]["value"])
    assert msg == ""
    thr = [t for t in trace.data if t.name == "throttled"]
    assert thr and sum(len(t.x) for t in thr) == 68  # 8 warm-up + 60 measured, all at 1400 of 2000 MHz
    assert np.all(np.isfinite(np.asarray(thr[0].y, dtype=float)))


def test_timing_case_dropdown_is_bounded_and_searched_on_the_server(sweep_app, sctx, monkeypatch):
    """A Kineto trace has thousands of (kernel, launch shape) cases; a dropdown of all of them took
    the browser seconds to build. The most-sampled are listed, the rest are found by typing."""
    monkeypatch.setattr(timing_page, "MAX_CASE_OPTIONS", 5)
    every = timing_page.cases(timing_page.samples_of(sctx, "kernels"))
    assert len(every) > 5
    shown, total = timing_page.case_options(sctx, "kernels")
    assert [o["value"] for o in shown] == [o["value"] for o in every[:5]] and total == len(every)
    lay = timing_page.layout()  # this app opens on its timing log: one case, no hint
    assert next(c for c in _walk(lay) if getattr(c, "id", None) == "tm-case-hint").children == ""
    # typing finds a case that is not listed, by its full name in any case; the chosen one stays
    rare = every[-1]
    bench, _ = timing_page.case_of(sctx, "kernels", rare["value"])
    opts, msg = timing_page.search_cases(bench[2:].upper(), "kernels", every[0]["value"])
    assert msg == "" and rare["value"] in [o["value"] for o in opts] and every[0]["value"] in [o["value"] for o in opts]
    assert timing_page.search_cases("no such kernel anywhere", "kernels", None)[0] == []
    assert rare["value"] in [o["value"] for o in timing_page.search_cases(rare["label"], "kernels", None)[0]]  # the label as shown
    opts, _, _, hint = timing_page.choose_source("kernels")
    assert len(opts) == 5 and f"of {len(every):,}" in hint


def test_file_uploaded_again_is_told_apart_from_the_command_line_copy(tmp_path):
    """Uploading a profile the dashboard was already given keeps both (`id~2`); the Overview said
    the upload came from the command line and left the renamed copy's origin blank."""
    import base64

    from profaudit.dashboards import uploads
    from profaudit.dashboards.pages import overview as overview_page

    data = tmp_path / "data"
    write_dataset(ProfileSet([profile("gemm", 20, seed=1, with_metrics=False)]), data / "run")
    log = write_timing_log(data / "t.jsonl", timing_samples("x", 20_000.0, 20, seed=2), LOG_META)
    app = create_app([data], upload_dir=tmp_path / "up", warm=False)
    st = app._profaudit_state
    with app.server.test_request_context():
        res = uploads.store_uploads(st, ["data:application/json;base64," + base64.b64encode(log.read_bytes()).decode()], ["t.jsonl"])
        assert res[0].ok, res[0].text
        ids = st.ps.metadata["profile_id"].to_list()
        twin = next(i for i in ids if i.endswith("~2"))
        assert st.origin_of(twin) == "upload" and st.origin_of(twin[:-2]) == "command line" and st.origin_of("gemm") == "command line"
        rows = overview_page.profiles_table(st).children[1].children
        given = {r.children[0].children: r.children[-1].children for r in rows}
        assert given[twin] == "upload" and given[twin[:-2]] == "command line"


def test_roofs_only_for_devices_with_points(sweep_app, sctx):
    """A folder of mixed profiles: roofs of devices whose kernels have no FLOPs are left out when
    other devices have points (the chart had fifteen devices' roofs around three devices' points)."""
    st = sctx
    rf = st.roofline(["gemm"], None, False)
    key = rf["device_key"][0]
    other = "rtx-3080"
    mixed = pl.concat([rf, rf.with_columns(pl.lit(other).alias("device_key"), pl.lit(None, pl.Float64).alias("achieved_flops_per_s"))])
    specs = {key: st.device_specs[key], other: st.device_specs[other]}
    res = roofline_figure(mixed, specs, levels=["dram"], precisions=["fp32"], clocks=["boost"])
    roofs = [t["name"] for t in res.figure["data"] if t["type"] == "scatter"]
    assert roofs and all(n.startswith(f"{key}:") for n in roofs)
    assert f"no roofs drawn for {other}: none of its kernels has FLOPs and bytes to place" in res.notes
    # no points anywhere: every device's roofs stay, for reference
    none = roofline_figure(mixed.with_columns(pl.lit(None, pl.Float64).alias("achieved_flops_per_s")), specs, levels=["dram"], precisions=["fp32"], clocks=["boost"])
    assert {n.split(":")[0] for n in (t["name"] for t in none.figure["data"] if t["type"] == "scatter")} == {key, other}


def test_kernel_detail_keeps_long_names_bounded(sweep_app, sctx):
    """A 4,000-character name filled the detail title and made its table thousands of pixels tall:
    the title is shortened and long values sit in a bounded box, the full text still there."""
    from profaudit.dashboards.ui import LONG_TEXT

    st = sctx
    k = st.kernels()
    row = k.filter(pl.col("profile_id") == "kineto-long-names").row(0, named=True)
    detail = kernels_page.kernel_detail(st, row["_row"])
    title = next(c for c in _walk(detail) if getattr(c, "id", None) == "kn-detail-title").children
    assert len(title) < 260 and title.endswith(f"profile kineto-long-names, kernel {row['kernel_id']}")
    boxes = [c for c in _walk(detail) if getattr(c, "className", None) == "long-text"]
    assert {b.children for b in boxes} >= {row["name"]} and all(len(b.children) > LONG_TEXT for b in boxes)
    rf = st.roofline(["kineto-long-names"], None, False)
    point = roofline_page.show_point({"points": [{"customdata": 0}]}, ["kineto-long-names"], roofline_page.AS_REPORTED, [])
    assert len(next(c for c in _walk(point) if getattr(c, "id", None) == "rf-detail-title").children) < 260 and rf.height
