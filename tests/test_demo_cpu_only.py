"""The demo and the dashboard say plainly that the embedded samples are CPU-only (no empty
roofline chart without a word)."""

from __future__ import annotations

import pytest

from conftest import SAMPLES


def test_demo_note_names_cpu_only_samples():
    import profaudit
    from profaudit.cli.demo_cmd import cpu_only_note

    ps = profaudit.load([str(SAMPLES / "jax_cpu")])
    note = cpu_only_note(ps)
    assert "without a GPU" in note and "CPU-only (kernels on CPU)" in note and "--reports DIR" in note


def test_roofline_page_on_cpu_only_profiles_says_so(tmp_path):
    pytest.importorskip("dash")
    from profaudit.dashboards.app import create_app
    from profaudit.dashboards.pages import roofline as rp

    app = create_app([str(SAMPLES / "jax_cpu")], upload_dir=tmp_path / "u", max_upload_bytes=1000)
    with app.server.test_request_context():
        st = app._profaudit_state
        fig, notes, _view, msg = rp.update(st.kernel_profile_ids(), rp.AS_REPORTED, ["dram"], ["fp32"], ["boost"], [])
    assert fig["layout"]["annotations"][0]["text"] == "CPU-only samples: no GPU roofline"
    assert "CPU-only" in notes.children and msg == ""
