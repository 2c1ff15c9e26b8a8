"""The dashboard's bounds on one callback: audits are cached per (claim content, files it names),
failures included, and the heavy work of a callback stops being waited for after the
callback time limit (`profaudit dashboard --callback-timeout`)."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("dash")
pytest.importorskip("dash_ag_grid")

from profaudit.dashboards import limits  # noqa: E402
from profaudit.dashboards.app import create_app  # noqa: E402
from profaudit.dashboards.pages import audit as audit_page  # noqa: E402
from profaudit.dashboards.state import DashboardState  # noqa: E402
from profaudit.errors import InputError  # noqa: E402

from conftest import assert_one_line_error  # noqa: E402

# nine levels of ten aliases: 10^9 nodes once expanded, 0.5 KB on disk
LAUGHS = "baseline: {timings: b.jsonl}\ncandidate: {timings: c.jsonl}\nl0: &l0 [lol]\n" + "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 10)
)


def _text(component) -> str:
    if component is None or isinstance(component, str):
        return component or ""
    kids = getattr(component, "children", None)
    if isinstance(kids, (list, tuple)):
        return " ".join(_text(k) for k in kids)
    return _text(kids) if kids is not None else str(component)


def _app(tmp_path, claim_text: str, **kw):
    data = tmp_path / "data"
    data.mkdir()
    (data / "claim.yaml").write_text(claim_text)
    app = create_app([str(data / "claim.yaml")], upload_dir=tmp_path / "uploads", warm=False, **kw)
    st = app._profaudit_state
    (cid,) = st.claims
    return app, st, cid, data / "claim.yaml"


def _count_audits(monkeypatch, inner=None) -> list:
    calls: list = []
    real = DashboardState._audit

    def counted(self, entry, select, ignore):
        calls.append(entry.path.name)
        return (inner or real)(self, entry, select, ignore)

    monkeypatch.setattr(DashboardState, "_audit", counted)
    return calls


def test_failed_audit_is_computed_once_across_refreshes(tmp_path, monkeypatch):
    claim_text = "baseline: {timings: b.jsonl}\ncandidate: {timings: c.jsonl}\n"
    app, st, cid, claim = _app(tmp_path, claim_text)
    calls = _count_audits(monkeypatch)
    with app.server.test_request_context():
        out1, msg1 = audit_page.run(1, cid, "", "")
        out2, msg2 = audit_page.run(2, cid, "", "")
        assert out1 is None and out2 is None
        line = _text(msg1)
        assert "b.jsonl" in line, line  # the named timing log does not exist: the audit fails
        assert _text(msg2) == line
        assert calls == ["claim.yaml"]
        # other rules are another audit
        audit_page.run(3, cid, "PA1", "")
        assert len(calls) == 2
        # the claim's content is part of the key: an edited claim is audited again
        claim.write_text(claim_text.replace("c.jsonl", "c2.jsonl"))
        audit_page.run(4, cid, "", "")
        assert len(calls) == 3


def test_billion_laughs_claim_is_refused_once(tmp_path, monkeypatch):
    # recognised as a claim from its top-level keys, refused by the bounded YAML loader in its
    # one audit, and the refusal is cached across refreshes
    app, st, cid, claim = _app(tmp_path, LAUGHS)
    calls = _count_audits(monkeypatch)
    with app.server.test_request_context():
        out1, msg1 = audit_page.run(1, cid, "", "")
        out2, msg2 = audit_page.run(2, cid, "", "")
        line = _text(msg1)
        assert out1 is None and "claim.yaml" in line and "alias" in line, line
        assert _text(msg2) == line
        assert calls == ["claim.yaml"]


def test_evidence_replaced_on_disk_is_audited_again(tmp_path, monkeypatch):
    app, st, cid, claim = _app(tmp_path, "baseline: {timings: b.jsonl}\ncandidate: {timings: c.jsonl}\n")
    calls = _count_audits(monkeypatch)
    with app.server.test_request_context():
        _, msg = audit_page.run(1, cid, "", "")
        assert "b.jsonl" in _text(msg)  # the named timing log does not exist yet
        audit_page.run(2, cid, "", "")
        assert len(calls) == 1
        (claim.parent / "b.jsonl").write_text("{}\n")
        audit_page.run(3, cid, "", "")
        assert len(calls) == 2


def test_slow_audit_stops_at_the_limit_with_one_line(tmp_path, monkeypatch):
    release = threading.Event()

    def slow(self, entry, select, ignore):
        release.wait(30)  # stands for a runaway computation; let go at the end of the test
        raise InputError(entry.path, "finished late")

    app, st, cid, _ = _app(tmp_path, "baseline: {timings: b.jsonl}\ncandidate: {timings: c.jsonl}\n", callback_timeout_s=0.5)
    calls = _count_audits(monkeypatch, slow)
    try:
        with app.server.test_request_context():
            out, msg = audit_page.run(1, cid, "", "")
            line = _text(msg)
            assert out is None
            assert line.startswith("stopped after 0.5 s: auditing claim.yaml took longer than"), line
            assert "--callback-timeout" in line and "\n" not in line
            # a refresh waits on the same computation instead of starting a second one
            _, msg = audit_page.run(2, cid, "", "")
            assert _text(msg).startswith("stopped after 0.5 s")
            assert len(calls) == 1
            release.set()
            # once it ends, a refresh shows its outcome
            for _ in range(100):
                _, msg = audit_page.run(3, cid, "", "")
                if "finished late" in _text(msg):
                    break
            assert "finished late" in _text(msg)
            assert len(calls) == 1
    finally:
        release.set()


def test_run_limited_outcomes():
    assert limits.run_limited(lambda: 42, "x", 5) == 42
    with pytest.raises(ValueError, match="boom"):
        limits.run_limited(lambda: (_ for _ in ()).throw(ValueError("boom")), "x", 5)

    class Panic(BaseException):  # like polars' PanicException: not an Exception
        pass

    def panics():
        raise Panic("rust panicked\nbacktrace ...")

    with pytest.raises(RuntimeError, match="^Panic: rust panicked$"):
        limits.run_limited(panics, "x", 5)
    # the function's own TimeoutError is its outcome, not the limit
    with pytest.raises(TimeoutError) as ei:
        limits.run_limited(lambda: (_ for _ in ()).throw(TimeoutError("socket")), "x", 5)
    assert not isinstance(ei.value, limits.CallbackTimeout)
    ev = threading.Event()
    with pytest.raises(limits.CallbackTimeout, match=r"^stopped after 0\.2 s: loading x\.csv"):
        limits.run_limited(lambda: ev.wait(10), "loading x.csv", 0.2)
    ev.set()


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf")])
def test_bad_limit_is_refused(tmp_path, bad):
    from profaudit.errors import UsageError

    with pytest.raises(UsageError, match="positive number of seconds"):
        DashboardState([], upload_dir=tmp_path / "u", callback_timeout_s=bad)


def test_cli_bad_callback_timeout(cli):
    assert_one_line_error(cli("dashboard", "--callback-timeout", "0", "--no-browser"), "--callback-timeout")
