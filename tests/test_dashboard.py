"""Dashboard without a browser: file access, uploads, the grid's server-side model, and every page's
callbacks called directly against an app over synthetic inputs (tests/dashboard_data.py)."""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import socket
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

pytest.importorskip("dash")
pytest.importorskip("dash_ag_grid")

from dashboard_data import make_inputs, timing_samples, write_claim, LOG_META  # noqa: E402
from profaudit.dashboards import access, grid, uploads  # noqa: E402
from profaudit.dashboards.app import check_port, create_app  # noqa: E402
from profaudit.dashboards.pages import audit as audit_page  # noqa: E402
from profaudit.dashboards.pages import compare as compare_page  # noqa: E402
from profaudit.dashboards.pages import kernels as kernels_page  # noqa: E402
from profaudit.dashboards.pages import overview as overview_page  # noqa: E402
from profaudit.dashboards.pages import roofline as roofline_page  # noqa: E402
from profaudit.dashboards.pages import timing as timing_page  # noqa: E402
from profaudit.errors import InputError, UsageError  # noqa: E402
from profaudit.timinglog import write_timing_log  # noqa: E402

from conftest import REPO, assert_one_line_error  # noqa: E402


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return make_inputs(tmp_path_factory.mktemp("dash"))


@pytest.fixture(scope="module")
def app(inputs, tmp_path_factory):
    return create_app([inputs["data"]], upload_dir=tmp_path_factory.mktemp("uploads") / "u", max_upload_bytes=300 * 1024)


@pytest.fixture
def ctx(app):
    with app.server.test_request_context():
        yield app._profaudit_state


@pytest.fixture(scope="module")
def upload_app(inputs, tmp_path_factory):
    """A second app for the tests that upload (so the read-only tests see fixed data)."""
    return create_app([inputs["data"]], upload_dir=tmp_path_factory.mktemp("uploads2") / "u", max_upload_bytes=300 * 1024)


@pytest.fixture
def uctx(upload_app):
    with upload_app.server.test_request_context():
        yield upload_app._profaudit_state


def text_of(component) -> str:
    """All text in a Dash component tree."""
    if component is None:
        return ""
    if isinstance(component, (str, int, float)):
        return str(component)
    if isinstance(component, (list, tuple)):
        return " ".join(text_of(c) for c in component)
    if isinstance(component, dict):
        return " ".join(text_of(v) for v in component.values())
    return text_of(getattr(component, "children", None))


def find(component, cid):
    if isinstance(component, (list, tuple)):
        for c in component:
            r = find(c, cid)
            if r is not None:
                return r
        return None
    if getattr(component, "id", None) == cid:
        return component
    ch = getattr(component, "children", None)
    return find(ch, cid) if ch is not None and not isinstance(ch, str) else None


def data_url(data: bytes, mime: str = "application/octet-stream") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


# --- file access --------------------------------------------------------------------------------


def test_claim_module_keys_pinned():
    """access.py lists the claim keys that name files; a new side key must be reviewed there."""
    from profaudit.audit.claim import SIDE_KEYS, TOP_KEYS

    assert SIDE_KEYS == {"label", "timings", "profile", "meta", "benchmark", "variant", "params", "kernel", "time_column", "time_unit"}
    assert TOP_KEYS == {"claim", "speedup", "statistic", "workload", "device", "baseline", "candidate", "confidence", "noise_threshold", "intended_differences", "version", "notes"}
    assert set(access.CLAIM_PATH_KEYS) == {"timings", "profile"}


def test_policy_allows_only_given(inputs):
    pol = access.AccessPolicy([inputs["data"]])
    assert pol.allows(inputs["baseline"])
    assert pol.allows(inputs["data"] / "claims" / "good.yaml")
    assert not pol.allows(inputs["secret"])
    assert not pol.allows(inputs["data"].parent)
    assert not pol.allows_lexically("../outside/secret.jsonl", inputs["data"])
    assert not pol.allows_lexically(str(inputs["data"]) + "/../outside/secret.jsonl")
    # a sibling folder whose name starts like the allowed one is not inside it
    sib = inputs["root"] / "data-evil"
    sib.mkdir(exist_ok=True)
    assert not pol.allows(sib)
    if "link" in inputs:
        assert pol.allows_lexically(inputs["link"])
        assert not pol.allows(inputs["link"])  # resolved: it leads outside
    single = access.AccessPolicy([inputs["baseline"]])
    assert single.allows(inputs["baseline"]) and not single.allows(inputs["candidate"])


@pytest.mark.parametrize("name, needle", [
    ("evil_abs.yaml", "outside the files given"),
    ("evil_rel.yaml", "outside the files given"),
    ("evil_glob.yaml", "outside the files given"),
    ("evil_link.yaml", "through a symlink"),
])
def test_claims_naming_outside_files_are_refused(app, inputs, name, needle, monkeypatch):
    path = inputs["data"] / "claims" / name
    if not path.exists():
        pytest.skip("no symlinks on this file system")
    st = app._profaudit_state
    cid = next(cid for cid, e in st.claims.items() if e.path.name == name)
    opened = []
    import profaudit.loader as loader

    real = loader.read_one
    monkeypatch.setattr(loader, "read_one", lambda p, *a, **k: opened.append(Path(p)) or real(p, *a, **k))
    with pytest.raises(InputError) as ei:
        st.audit(cid, None, None)
    assert needle in str(ei.value) and name in str(ei.value)
    assert not opened, "nothing may be read before the claim is refused"
    # the same audit through the loader works once the check is out of the way: the refusal is
    # the check's doing, not a broken claim
    monkeypatch.setattr(st.policy, "check_claim", lambda p: [])
    with pytest.raises(InputError, match="names a file outside"):
        st._audit(st.claims[cid], None, None)
    assert opened


def test_glob_inside_that_matches_a_symlink_out_is_refused(inputs, tmp_path):
    if "link" not in inputs:
        pytest.skip("no symlinks on this file system")
    c = write_claim(inputs["data"] / "claims" / "glob_in.yaml", "../logs/*.jsonl", "../logs/candidate.jsonl")
    try:
        with pytest.raises(InputError, match="through a symlink or pattern"):
            access.AccessPolicy([inputs["data"]]).check_claim(c)
    finally:
        c.unlink()


def test_good_claim_passes_and_lists_its_files(inputs):
    files = access.AccessPolicy([inputs["data"]]).check_claim(inputs["good"])
    assert set(files) == {inputs["baseline"].resolve(), inputs["candidate"].resolve()}


def test_claim_that_cannot_be_read_is_refused(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("baseline: [unclosed\n")
    with pytest.raises(InputError, match="not valid YAML"):
        access.AccessPolicy([tmp_path]).check_claim(bad)
    big = tmp_path / "big.yaml"
    big.write_text("baseline: a\ncandidate: b\n# " + "x" * (access.CLAIM_MAX_BYTES + 10))
    with pytest.raises(InputError, match="not a claim file"):
        access.AccessPolicy([tmp_path]).check_claim(big)
    with pytest.raises(InputError, match="not one of the files"):
        access.AccessPolicy([tmp_path / "elsewhere"]).check_claim(bad)


def test_claim_references_cover_every_form(tmp_path):
    c = tmp_path / "c.yaml"
    c.write_text("baseline: a.csv\ncandidate:\n  timings: [b1.csv, b2.csv]\n  profile: p.ncu-rep\n")
    assert access.claim_references(c) == [("baseline", "a.csv"), ("candidate.timings", "b1.csv"), ("candidate.timings", "b2.csv"), ("candidate.profile", "p.ncu-rep")]


def test_state_skips_symlinks_out_of_given_folders(app, inputs):
    st = app._profaudit_state
    assert "gemm-before" in st.ps and "gemm-after" in st.ps
    paths = [p for p in st.ps.metadata["path"].to_list() if p]
    assert not any("secret" in p or "escape" in p for p in paths)
    if "link" in inputs:
        assert any("escape.jsonl" in n and "symlink" in n for n in st.notes)


# --- uploads ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 100, 1001])
def test_decoded_size_matches_decoding(n):
    raw = os.urandom(n)
    assert uploads.decoded_size(data_url(raw)) == len(raw)


@pytest.mark.parametrize("name, want", [
    ("../../etc/passwd", "passwd"),
    ("..\\..\\win\\x.csv", "x.csv"),
    (".bashrc", "bashrc"),
    ("..", "upload"),
    ("a\x00b\nc.csv", "abc.csv"),
    ("report.ncu-rep", "report.ncu-rep"),
    ("", "upload"),
])
def test_safe_name(name, want):
    assert uploads.safe_name(name) == want


def test_safe_name_keeps_suffix_when_cut():
    n = uploads.safe_name("x" * 500 + ".pt.trace.json.gz")
    assert len(n) <= 120 and n.endswith(".pt.trace.json.gz")


def _log_bytes(tmp_path, variant="up", n=40) -> bytes:
    p = write_timing_log(tmp_path / f"{variant}.jsonl", timing_samples(variant, 20_000.0, n, seed=9), LOG_META)
    return p.read_bytes()


def test_upload_valid_log_is_loaded(upload_app, uctx, tmp_path):
    st = uctx
    before = len(st.ps)
    res = uploads.store_uploads(st, [data_url(_log_bytes(tmp_path))], ["../../sneaky/up.jsonl"])
    assert [r.ok for r in res] == [True], res
    assert (st.upload_dir / "up.jsonl").is_file()
    assert len(st.ps) == before + 1
    assert any(p.samples.height == 48 for p in st.ps)
    assert not [p for p in st.upload_dir.iterdir() if p.name.startswith(".staging")]


def test_upload_oversize_refused_before_decoding(upload_app, uctx, monkeypatch):
    st = uctx
    monkeypatch.setattr(uploads.base64, "b64decode", lambda *a, **k: pytest.fail("decoded an oversize upload"))
    res = uploads.store_uploads(st, [data_url(b"x" * (st.max_upload_bytes + 1))], ["big.csv"])
    assert not res[0].ok and "over the" in res[0].text
    # two files under the cap each, over it together
    half = data_url(b"y" * (st.max_upload_bytes // 2 + 10))
    res = uploads.store_uploads(st, [half, half], ["a.csv", "b.csv"])
    assert all(not r.ok and "over the" in r.text for r in res)
    assert not (st.upload_dir / "big.csv").exists()


def test_upload_bad_inputs_give_messages(upload_app, uctx):
    st = uctx
    cases = [
        ([data_url(b"hello, this is not a profile\n")], ["notes.txt"], "not a profile, timing log or claim file"),
        ([data_url(b"a: 1\n", "text/yaml")], ["conf.yaml"], "only as a claim file"),
        (["data:text/csv;base64,@@@@"], ["x.csv"], "not valid base64"),
        (["plain text"], ["x.csv"], "not a base64 data URL"),
        ([data_url(b"")], ["empty.csv"], "empty file"),
        ([data_url(b'{"traceEvents": [{"ph": "X", "name": ')], ["cut.json"], ""),
    ]
    for contents, names, needle in cases:
        res = uploads.store_uploads(st, contents, names)
        assert len(res) == 1 and not res[0].ok, (names, res)
        assert needle in res[0].text, res[0].text
        assert "\n" not in res[0].text
        assert not (st.upload_dir / uploads.safe_name(names[0])).exists()


def test_upload_claim_with_its_logs_then_audit(upload_app, uctx, tmp_path):
    st = uctx
    b = write_timing_log(tmp_path / "ub.jsonl", timing_samples("eager", 40_000.0, 120, seed=11), LOG_META).read_bytes()
    c = write_timing_log(tmp_path / "uc.jsonl", timing_samples("fused", 30_000.0, 120, seed=12), LOG_META).read_bytes()
    claim = b"speedup: 1.3\nstatistic: median\nbaseline: {timings: ub.jsonl}\ncandidate: {timings: uc.jsonl}\n"
    res = uploads.store_uploads(st, [data_url(claim), data_url(b), data_url(c)], ["myclaim.yaml", "ub.jsonl", "uc.jsonl"])
    assert all(r.ok for r in res), res
    cid = next(cid for cid, e in st.claims.items() if e.path.name == "myclaim.yaml")
    view, msg = audit_page.run(1, cid, "", "")
    assert msg == ""
    assert find(view, "au-verdict") is not None
    assert "1.3" in text_of(view)


def test_uploaded_claim_cannot_reach_out(upload_app, uctx, inputs):
    st = uctx
    evil = f"baseline: {{timings: {inputs['secret']}}}\ncandidate: {{timings: ../../{inputs['secret'].parent.name}/secret.jsonl}}\n".encode()
    res = uploads.store_uploads(st, [data_url(evil)], ["evil.yaml"])
    assert res[0].ok
    cid = next(cid for cid, e in st.claims.items() if e.path.name == "evil.yaml")
    out, msg = audit_page.run(1, cid, "", "")
    assert out is None and "outside the files given to the dashboard" in text_of(msg)


def _zip_bytes(members: list[tuple], method=None) -> bytes:
    """A zip built member by member: (name, bytes) or (ZipInfo, bytes)."""
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method or zipfile.ZIP_DEFLATED) as zf:
        for name, data in members:
            zf.writestr(name, data)
    return buf.getvalue()


def test_upload_zip_of_a_folder_format_is_loaded(upload_app, uctx):
    st = uctx
    run = REPO / "sample_reports" / "jax_cpu"
    members = [(f"jax_cpu/{f.relative_to(run).as_posix()}", f.read_bytes()) for f in sorted(run.rglob("*")) if f.is_file() and "plugins" in f.parts]
    before = len(st.ps)
    res = uploads.store_uploads(st, [data_url(_zip_bytes(members), "application/zip")], ["jaxrun.zip"])
    assert [r.ok for r in res] == [True], res
    assert "unpacked to jaxrun/" in res[0].text
    assert (st.upload_dir / "jaxrun" / "plugins" / "profile").is_dir()
    new = [p for p in st.ps][before:]
    assert new and any(p.kernels.height > 0 for p in new)
    assert not [p for p in st.upload_dir.iterdir() if p.name.startswith(".staging")]
    # a second upload of the same name replaces the first
    res = uploads.store_uploads(st, [data_url(_zip_bytes(members), "application/zip")], ["jaxrun.zip"])
    assert res[0].ok and len(st.ps) == before + len(new)


def test_upload_zip_of_timing_logs(upload_app, uctx, tmp_path):
    st = uctx
    members = [("a.jsonl", _log_bytes(tmp_path, "za", 30)), ("sub/b.jsonl", _log_bytes(tmp_path, "zb", 30)), ("__MACOSX/._a.jsonl", b"\0junk")]
    res = uploads.store_uploads(st, [data_url(_zip_bytes(members))], ["logs.zip"])
    assert res[0].ok, res
    assert res[0].text.count("samples") == 2


def test_upload_hostile_zips_are_refused(upload_app, uctx, tmp_path):
    import stat as stat_
    import zipfile

    st = uctx
    log = _log_bytes(tmp_path, "h", 20)
    link = zipfile.ZipInfo("run/link.jsonl")
    link.external_attr = (stat_.S_IFLNK | 0o777) << 16
    bomb = b"\0" * (st.max_upload_bytes * uploads.ZIP_EXPANSION_LIMIT + 1)
    good = _zip_bytes([("ok.jsonl", log)])
    cases = [
        (_zip_bytes([("../escape.jsonl", log)]), "outside its folder"),
        (_zip_bytes([("run/../../escape.jsonl", log)]), "outside its folder"),
        (_zip_bytes([("/etc/escape.jsonl", log)]), "absolute path"),
        (_zip_bytes([("C:/escape.jsonl", log)]), "absolute path"),
        (_zip_bytes([(link, b"/etc/passwd")]), "link or special file"),
        (_zip_bytes([("zeros.bin", bomb)]), "unpacks to"),
        (good[: len(good) // 2], "not a readable zip"),
        (_zip_bytes([("notes.txt", b"nothing to see")]), "nothing loaded from the archive"),
    ]
    assert len(cases[5][0]) < st.max_upload_bytes  # the bomb itself is small
    for i, (raw, needle) in enumerate(cases):
        res = uploads.store_uploads(st, [data_url(raw, "application/zip")], [f"h{i}.zip"])
        assert len(res) == 1 and not res[0].ok, (i, res)
        assert needle in res[0].text and "\n" not in res[0].text, (i, res[0].text)
        assert not (st.upload_dir / f"h{i}").exists()
    assert not (st.upload_dir.parent / "escape.jsonl").exists() and not (st.upload_dir / "escape.jsonl").exists()
    assert not [p for p in st.upload_dir.iterdir() if p.name.startswith(".staging")]


def test_request_body_over_the_limit_is_refused(app):
    limit = app.server.config["MAX_CONTENT_LENGTH"]
    assert limit == uploads.request_limit(app._profaudit_state.max_upload_bytes)
    r = app.server.test_client().post("/_dash-update-component", data=b"{" + b" " * (limit + 10) + b"}", content_type="application/json")
    assert r.status_code == 413


# --- grid -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n = 500
    return pl.DataFrame({
        "name": rng.choice(["Gemm_A", "softmax", "LayerNorm", None], n).tolist(),
        "duration_ns": pl.Series(rng.uniform(0, 100, n)).scatter([3, 7], None),
        "kernel_id": np.arange(n, dtype=np.int64),
        "start_ns": (np.arange(n, dtype=np.int64) + 1_790_000_000_000_000_000),
    })


def test_grid_filters_match_polars(frame):
    fm = {"name": {"filterType": "text", "type": "contains", "filter": "GEMM"}, "duration_ns": {"filterType": "number", "type": "greaterThan", "filter": 50}}
    got = grid.apply(frame, None, fm)
    want = frame.filter(pl.col("name").str.to_lowercase().str.contains("gemm") & (pl.col("duration_ns") > 50))
    assert got.equals(want)
    fm = {"duration_ns": {"filterType": "number", "operator": "OR", "conditions": [{"type": "lessThan", "filter": 10}, {"type": "inRange", "filter": 40, "filterTo": 60}]}}
    got = grid.apply(frame, None, fm)
    d = pl.col("duration_ns")
    assert got.equals(frame.filter((d < 10) | ((d > 40) & (d < 60))))
    assert grid.apply(frame, None, {"name": {"filterType": "text", "type": "blank"}}).height == frame["name"].null_count()
    assert grid.apply(frame, None, {"name": {"filterType": "text", "type": "notEqual", "filter": "softmax"}}).height == frame.height - (frame["name"] == "softmax").sum()
    assert grid.apply(frame, None, {"duration_ns": {"filterType": "number", "type": "notBlank"}}).height == frame.height - 2


def test_grid_sort_and_bad_models(frame):
    got = grid.apply(frame, [{"colId": "duration_ns", "sort": "desc"}], None)
    vals = got["duration_ns"].to_list()
    assert vals[:-2] == sorted(vals[:-2], reverse=True) and vals[-2:] == [None, None]
    with pytest.raises(UsageError, match="unknown column"):
        grid.apply(frame, [{"colId": "__class__", "sort": "asc"}], None)
    with pytest.raises(UsageError, match="unknown column"):
        grid.apply(frame, None, {"../etc": {"filterType": "text", "type": "contains", "filter": "x"}})
    with pytest.raises(UsageError, match="unsupported"):
        grid.apply(frame, None, {"name": {"filterType": "text", "type": "regex", "filter": ".*"}})
    with pytest.raises(UsageError, match="not a number"):
        grid.apply(frame, None, {"duration_ns": {"filterType": "number", "type": "equals", "filter": "abc"}})


def test_rows_for_grid_are_json_safe(frame):
    rows = grid.rows_for_grid(frame.head(5).with_columns(pl.lit(float("nan")).alias("x")))
    json.dumps(rows, allow_nan=False)
    assert rows[0]["start_ns"] == str(frame["start_ns"][0])  # beyond 2^53: exact as text
    assert rows[0]["kernel_id"] == 0 and rows[0]["x"] is None


# --- pages, callbacks called directly ----------------------------------------------------------


def test_every_page_layout_and_http(app):
    c = app.server.test_client()
    for path in ("/", "/kernels", "/roofline", "/timing", "/compare", "/audit"):
        assert c.get(path).status_code == 200
    with app.server.test_request_context():
        from profaudit.dashboards.pages import PAGES
        import importlib

        for name in PAGES:
            layout = importlib.import_module(f"profaudit.dashboards.pages.{name}").layout()
            # no page offers a free-text field that could name a file: the only text inputs are
            # the audit's rule prefixes
            inputs_ = _all_of_type(layout, "Input")
            assert {getattr(i, "id", None) for i in inputs_} <= {"au-select", "au-ignore"}


def _all_of_type(component, typename):
    out = []
    if isinstance(component, (list, tuple)):
        for c in component:
            out += _all_of_type(c, typename)
        return out
    if type(component).__name__ == typename:
        out.append(component)
    ch = getattr(component, "children", None)
    if ch is not None and not isinstance(ch, str):
        out += _all_of_type(ch, typename)
    return out


def test_overview_counts_and_audit_summary(app, ctx):
    st = ctx
    content = overview_page.content(st)
    t = text_of(content)
    assert f"{st.ps.kernels.height:,}" in t and "h100-sxm" in t
    assert "Nsight Compute 2024.3.2.0" in t and "base (default)" in t and "all (default)" in t
    summary = overview_page.refresh_audits(0)
    rows = find(summary, "ov-audit-table")
    txt = text_of(rows)
    assert "good.yaml" in txt and "evil_abs.yaml" in txt and "outside the files given" in txt


def test_kernels_rows_filter_sort(app, ctx):
    st = ctx
    k = st.ps.kernels
    req = {"startRow": 0, "endRow": 100, "sortModel": [{"colId": "duration_ns", "sort": "desc"}], "filterModel": {"short_name": {"filterType": "text", "type": "contains", "filter": "softmax"}}}
    resp, view, count, msg = kernels_page.get_rows(req)
    want = k.filter(pl.col("short_name").str.contains("softmax")).sort("duration_ns", descending=True)
    assert resp["rowCount"] == want.height and len(resp["rowData"]) == 100
    assert [r["duration_ns"] for r in resp["rowData"]] == want["duration_ns"].head(100).to_list()
    assert count == f"{want.height:,} of {k.height:,} kernels" and msg == ""
    resp2, *_ = kernels_page.get_rows({**req, "startRow": 100, "endRow": 200})
    assert [r["duration_ns"] for r in resp2["rowData"]] == want["duration_ns"].slice(100, 100).to_list()
    bad, _, _, msg = kernels_page.get_rows({**req, "sortModel": [{"colId": "nope", "sort": "asc"}]})
    assert bad == {"rowData": [], "rowCount": 0} and "unknown column" in text_of(msg)


def test_kernels_click_shows_metrics(app, ctx):
    st = ctx
    k = st.kernels()
    row = k.filter((pl.col("profile_id") == "gemm-after") & (pl.col("kernel_id") == 5)).row(0, named=True)
    detail = kernels_page.show_kernel({"rowId": str(row["_row"]), "colId": "short_name"})
    assert "gemm-after, kernel 5" in text_of(find(detail, "kn-detail-title"))
    g = find(detail, "kn-metrics")
    m = st.ps.metrics.filter((pl.col("profile_id") == "gemm-after") & (pl.col("kernel_id") == 5))
    assert len(g.rowData) == m.height == 4
    dur = next(r["value"] for r in g.rowData if r["metric"] == "gpu__time_duration.sum")
    assert dur == pytest.approx(row["duration_ns"])
    assert "h100-sxm" in text_of(detail)


def test_kernels_csv_export_is_the_filtered_view(app, ctx):
    st = ctx
    fm = {"profile_id": {"filterType": "text", "type": "equals", "filter": "gemm-before"}}
    out, msg = kernels_page.export_csv(1, {"sortModel": [{"colId": "kernel_id", "sort": "desc"}], "filterModel": fm}, ["profile_id", "kernel_id", "duration_ns"])
    rows = list(csv.DictReader(io.StringIO(out["content"])))
    want = st.ps.kernels.filter(pl.col("profile_id") == "gemm-before").sort("kernel_id", descending=True)
    assert len(rows) == want.height and rows[0]["kernel_id"] == str(want["kernel_id"][0])
    assert set(rows[0]) == {"profile_id", "kernel_id", "duration_ns"}


def test_roofline_points_and_toggles(app, ctx):
    from profaudit.roofline import roofline

    st = ctx
    pids = ["gemm-before", "gemm-after"]
    fig, notes, view, msg = roofline_page.update(pids, roofline_page.AS_REPORTED, ["dram", "l2", "l1"], ["fp32", "fp16_tensor"], ["boost", "kernel"], [])
    assert msg == ""
    rf = roofline(st.subset(pids))
    pts = [t for t in fig["data"] if t["type"] == "scattergl"]
    want = sum(int(((rf[f"ai_{lv}_flops_per_byte"] > 0) & (rf["achieved_flops_per_s"] > 0)).sum()) for lv in ("dram", "l2", "l1"))
    got = sum(len(base64.b64decode(t["customdata"]["bdata"])) // 4 for t in pts)
    assert got == want > 0
    x = np.frombuffer(base64.b64decode(pts[0]["x"]["bdata"]), dtype=np.float64)
    assert np.all(x > 0)
    names = [t["name"] for t in fig["data"] if t["type"] == "scatter"]
    assert any("fp16_tensor" in n and "datasheet" in n for n in names)
    assert any("fp16_tensor" in n and "measured" in n for n in names)
    # the measured-clock ceiling is the datasheet peak rescaled to the median kernel clock
    from profaudit.specs import get_spec

    spec = get_spec("h100-sxm")
    clk = float(rf["kernel_clock_hz"].median())
    meas = next(t for t in fig["data"] if t["type"] == "scatter" and "fp16_tensor" in t["name"] and "measured" in t["name"])
    assert meas["y"][0] == pytest.approx(spec.peak_flops_per_s("fp16_tensor", clock_hz=clk))
    fig2, _, _, _ = roofline_page.update(pids, roofline_page.AS_REPORTED, ["dram"], ["fp32"], ["boost"], [])
    assert all("L1" not in t["name"] and "L2" not in t["name"] for t in fig2["data"] if t["type"] == "scattergl")
    assert not any("fp16_tensor" in t["name"] or "measured" in t["name"] for t in fig2["data"] if t["type"] == "scatter")
    fig3, _, _, _ = roofline_page.update(pids, "a100-sxm-80gb", ["dram"], ["fp32"], ["boost"], [])
    assert any(t["name"].startswith("a100-sxm-80gb") for t in fig3["data"] if t["type"] == "scatter")
    _, _, _, msg = roofline_page.update(pids, "no-such-gpu", ["dram"], ["fp32"], ["boost"], [])
    assert "no device spec" in text_of(msg)


def test_roofline_level_of_detail(app, ctx):
    """Past the exact-point limit, one point per occupied screen cell; a zoom re-bins its range."""
    from profaudit.dashboards.figures import BINS_X, BINS_Y, MARKER_SIZE, PLOT_PX, roofline_figure

    st = ctx
    rf = st.roofline(["gemm-before", "gemm-after"], None, False)
    specs = roofline_page._specs(st, rf)
    exact = roofline_figure(rf, specs, levels=["dram"], precisions=["fp32"], clocks=["boost"])
    coarse = roofline_figure(rf, specs, levels=["dram"], precisions=["fp32"], clocks=["boost"], max_exact=10)
    assert exact.sent == exact.points == coarse.points > coarse.sent > 0

    def pts(res):
        out = []
        for t in res.figure["data"]:
            if t["type"] == "scattergl":
                out.append((np.frombuffer(base64.b64decode(t["x"]["bdata"]), np.float64), np.frombuffer(base64.b64decode(t["customdata"]["bdata"]), np.int32), t["text"]))
        return out

    for x, idx, _ in pts(coarse):
        assert np.allclose(x, rf["ai_dram_flops_per_byte"].to_numpy()[idx])  # each point is a real kernel
    merged = sum(int(t.split(" and ")[1].split()[0].replace(",", "")) + 1 if " and " in t else 1 for _, _, ts in pts(coarse) for t in ts)
    assert merged == coarse.points  # every kernel is counted in exactly one cell
    lx = np.log10(rf["ai_dram_flops_per_byte"].to_numpy())
    view = (float(np.nanmin(lx)) - 0.01, float(np.nanmin(lx)) + 0.2, 0.0, 20.0)
    zoomed = roofline_figure(rf, specs, levels=["dram"], precisions=["fp32"], clocks=["boost"], max_exact=10, view=view)
    assert zoomed.figure["layout"]["xaxis"]["range"] == [view[0], view[1]]
    for x, _, _ in pts(zoomed):
        assert np.all((np.log10(x) >= view[0]) & (np.log10(x) <= view[1]))
    # a cell is under half a marker at the chart's default size: merging in it hides nothing
    assert PLOT_PX[0] / BINS_X <= MARKER_SIZE / 2 and PLOT_PX[1] / BINS_Y <= MARKER_SIZE / 2
    assert roofline_page.view_from_relayout({"xaxis.range[0]": -1, "xaxis.range[1]": 2, "yaxis.range[0]": 9, "yaxis.range[1]": 14}, None) == [-1.0, 2.0, 9.0, 14.0]
    assert roofline_page.view_from_relayout({"xaxis.range": [0, 1]}, [-1, 2, 9, 14]) == [0.0, 1.0, 9, 14]
    assert roofline_page.view_from_relayout({"xaxis.autorange": True}, [-1, 2, 9, 14]) is None
    assert roofline_page.view_from_relayout({"dragmode": "pan"}, None) is None


def test_profile_text_is_shown_literally_in_charts():
    from profaudit.dashboards.figures import plain

    assert plain("gemm<float, 128>&%{x}") == "gemm&lt;float, 128&gt;&amp;&#37;{x}"


def test_roofline_figure_is_built_once_per_controls(app, ctx):
    pids = ["gemm-before", "gemm-after"]
    first = roofline_page.update(pids, roofline_page.AS_REPORTED, ["dram"], ["fp32"], ["boost"], [])[0]
    assert roofline_page.update(pids, roofline_page.AS_REPORTED, ["dram"], ["fp32"], ["boost"], [])[0] is first  # a revisit: the cached figure
    assert roofline_page.update(pids, roofline_page.AS_REPORTED, ["dram", "l2"], ["fp32"], ["boost"], [])[0] is not first  # other controls: another


def test_roofline_click_shows_kernel(app, ctx):
    pids = ["gemm-before", "gemm-after"]
    out = roofline_page.show_point({"points": [{"customdata": 3}]}, pids, roofline_page.AS_REPORTED, [])
    assert "gemm-before, kernel 3" in text_of(out)


def test_timing_marks_warmup_drift_and_throttling(app, ctx):
    opts = timing_page.cases(timing_page.samples_of(ctx, "samples"))
    case = next(o["value"] for o in opts if timing_page.case_of(ctx, "samples", o["value"])[0] == "softmax")
    trace, violin, ecdf, stats, msg = timing_page.update("samples", case)
    assert msg == ""
    rows = find(stats, "tm-stats-table")
    body = rows.children[1].children
    cells = {r.children[0].children: [c.children for c in r.children] for r in body}
    eager = next(v for k, v in cells.items() if k.startswith("eager"))
    fused = next(v for k, v in cells.items() if k.startswith("fused"))
    assert eager[2].startswith("8 / 6") and fused[2].startswith("8 / 6")  # labelled / detected warm-up
    assert eager[6] == "yes" and fused[6] == "no"  # the baseline drifts by 6 %
    thr = int(fused[7].split()[0])
    s = timing_samples("fused", 33_000.0, 300, seed=4, throttle_every=25)
    assert thr == int((s["throttle_reasons"] == "sw_thermal_slowdown").sum()) == 12
    names = [t.name for t in trace.data]
    assert sum(len(t.x) for t in trace.data if t.name == "throttled") == 12
    assert any("SM clock" in n for n in names) and any("temperature" in n for n in names)
    assert sorted(t.name for t in trace.data if t.showlegend is not False) == sorted(["eager", "fused", "warm-up (labelled or detected)", "throttled", "drift (Theil-Sen; dashed = significant)", "SM clock (right axis)", "temperature (right axis)"])
    assert trace.layout.yaxis2.title.text == "SM clock (MHz)"
    assert [t.name for t in violin.data] == ["eager", "fused"]
    opts_k, value, _, _ = timing_page.choose_source("kernels")
    assert value is not None and any("softmax_warp_forward" in o["label"] for o in opts_k)


def test_compare_report(app, ctx):
    out, msg = compare_page.run(1, "gemm-before", "gemm-after", "auto", [], compare_page.NO_DEVICE)
    assert msg == ""
    t = text_of(out)
    assert "comparable" in t and find(out, "cp-findings") is not None and find(out, "cp-waterfall") is not None
    # fairness first: the findings come before the figures
    kids = out.children
    assert kids.index(find(kids, "cp-findings")) < kids.index(find(kids, "cp-waterfall"))
    _, msg = compare_page.run(1, "gemm-before", "gemm-before", "auto", [], compare_page.NO_DEVICE)
    assert "two different profiles" in text_of(msg)
    _, msg = compare_page.run(1, "gemm-before", "no-such", "auto", [], compare_page.NO_DEVICE)
    assert "no profile 'no-such'" in text_of(msg)


def test_audit_good_claim(app, ctx):
    st = ctx
    cid = next(cid for cid, e in st.claims.items() if e.path.name == "good.yaml")
    view, msg = audit_page.run(1, cid, "", "")
    from profaudit.audit import audit

    rep = audit(str(next(e.path for e in st.claims.values() if e.path.name == "good.yaml")))
    assert rep.verdict in text_of(find(view, "au-verdict"))
    iv = rep.supported.interval
    from profaudit.fmt import fmt_ns, fmt_speedup

    assert fmt_speedup(iv.estimate, iv.low, iv.high) in text_of(find(view, "au-summary"))  # as the CLI prints it
    rep.elapsed_s = 0.0042  # a fast audit: its time, not '0.00 s'
    assert fmt_ns(4.2e6) == "4.20 ms" and "4.20 ms" in text_of(find(audit_page.report_view(rep), "au-summary"))
    assert len(find(view, "au-findings").children[1].children) == len(rep.findings)
    _, msg = audit_page.run(1, cid, "PA9", "")
    assert "PA9" in text_of(msg)
    out, dl_msg = audit_page.export(1, cid, "", "")
    assert out["filename"] == "audit.html" and "<html" in out["content"].lower()


def test_guarded_turns_exceptions_into_messages():
    from profaudit.dashboards.ui import guarded

    @guarded(fallback=["keep", None], msg_at=1)
    def boom():
        raise RuntimeError("kaput\nsecond line")

    out = boom()
    assert out[0] == "keep" and "internal error: RuntimeError: kaput" in text_of(out[1]) and "second line" not in text_of(out[1])

    @guarded()
    def bad_input():
        raise InputError("x.csv", "truncated")

    assert text_of(bad_input()) == "x.csv: truncated"


# --- serving and the CLI -------------------------------------------------------------------------


def test_port_taken_is_one_line_exit_2(cli):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    port = s.getsockname()[1]
    try:
        with pytest.raises(UsageError, match="already in use"):
            check_port("127.0.0.1", port)
        res = cli("dashboard", str(REPO / "sample_reports"), "--port", str(port), "--no-browser")
        assert_one_line_error(res, "already in use")
    finally:
        s.close()


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_cli_bad_inputs(cli, tmp_path):
    assert_one_line_error(cli("dashboard", str(tmp_path / "missing.csv"), "--port", str(_free_port()), "--no-browser"), "no such file")
    assert_one_line_error(cli("dashboard", "--port", "0", "--no-browser"), "between 1 and 65535")
    assert_one_line_error(cli("dashboard", "--max-upload-mb", "0", "--no-browser"), "--max-upload-mb")
    assert_one_line_error(cli("dashboard", "--host", "256.1.1.1", "--no-browser"), "--host")


def test_cli_serves_on_loopback(tmp_path):
    """The real command: it listens on 127.0.0.1, serves the pages, and stops on SIGINT."""
    import signal
    import subprocess
    import sys
    import urllib.request

    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "profaudit", "dashboard", str(REPO / "sample_reports" / "jax_cpu"), "--port", str(port), "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 90
        body = None
        while time.time() < deadline and proc.poll() is None:
            try:
                # a refused connection (not listening yet) returns at once; the timeout is for a
                # page being built, which a loaded CI machine can take past 5 s to serve (and each
                # retry asked for it again, so could time out again until the deadline)
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/roofline", timeout=60).read().decode()
                break
            except OSError:
                time.sleep(0.3)
        assert body is not None and "<title>" in body, proc.stderr.read() if proc.poll() is not None else "no answer"
        conns = [c for c in __import__("psutil").net_connections("tcp") if c.laddr and c.laddr.port == port and c.status == "LISTEN"] if _has_psutil() else []
        assert all(c.laddr.ip == "127.0.0.1" for c in conns)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
    assert "profaudit dashboard: 1 profile, 0 claims;" in err and f"http://localhost:{port}/" in err


def _has_psutil() -> bool:
    try:
        import psutil  # noqa: F401
    except ImportError:
        return False
    return True


def test_page_that_fails_to_build_shows_a_message(app):
    from profaudit.dashboards.app import safe_layout

    def broken(**_):
        raise RuntimeError("cannot build")

    with app.server.test_request_context():
        out = safe_layout(broken, "Broken")()
    assert "internal error: RuntimeError: cannot build" in text_of(out)


def test_sample_reports_found_and_served():
    from profaudit.cli.dashboard_cmd import sample_reports

    found = sample_reports()
    assert found is not None and found.resolve() == (REPO / "sample_reports").resolve()
    app = create_app([found])
    assert len(app._profaudit_state.ps) >= 1
    c = app.server.test_client()
    for path in ("/", "/kernels", "/roofline", "/timing", "/compare", "/audit"):
        assert c.get(path).status_code == 200


def test_assets_ship_with_the_package():
    from profaudit.dashboards.app import ASSETS

    names = {p.name for p in ASSETS.iterdir()}
    assert {"style.css", "dashAgGridFunctions.js"} <= names
    import tomllib

    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    # a data-only package of its own: shipped, and no setuptools "absent from packages" warning
    assert "profaudit.dashboards.assets" in data["tool"]["setuptools"]["packages"]
    assert data["tool"]["setuptools"]["package-data"]["profaudit.dashboards.assets"] == ["*"]
