"""A claim file named on the command line is audited with the files it names (they are the
user's own); claims found inside a given folder, and uploaded ones, stay confined."""

from __future__ import annotations

import pytest

pytest.importorskip("dash")

from dashboard_data import make_inputs, write_claim  # noqa: E402
from profaudit.dashboards.app import create_app  # noqa: E402
from profaudit.errors import InputError  # noqa: E402


def test_named_claim_reads_its_files_folder_claims_stay_confined(tmp_path):
    inputs = make_inputs(tmp_path / "in", n_kernels=10)
    # the usual layout: a claim beside (not inside) its logs' folder
    named = write_claim(inputs["root"] / "my_claim.yaml", "data/logs/baseline.jsonl", "data/logs/candidate.jsonl")
    app = create_app([str(named), str(inputs["data"])], upload_dir=tmp_path / "up" / "u", max_upload_bytes=1000)
    with app.server.test_request_context():
        st = app._profaudit_state
        by_name = {e.path.name: e for e in st.claims.values()}
        assert by_name["my_claim.yaml"].trusted and not by_name["evil_rel.yaml"].trusted
        rep = st.audit(by_name["my_claim.yaml"].id, None, None)
        assert rep.verdict in ("PASS", "WARN", "FAIL", "INCONCLUSIVE")
        # a claim found in the given folder that names a file outside it is still refused
        with pytest.raises(InputError, match="outside the files given"):
            st.audit(by_name["evil_rel.yaml"].id, None, None)


def test_named_evil_claim_is_the_users_choice(tmp_path):
    inputs = make_inputs(tmp_path / "in", n_kernels=10)
    evil = inputs["data"] / "claims" / "evil_abs.yaml"
    app = create_app([str(evil)], upload_dir=tmp_path / "up" / "u", max_upload_bytes=1000)
    with app.server.test_request_context():
        st = app._profaudit_state
        (entry,) = st.claims.values()
        # named explicitly: audited as `profaudit audit` would, the outside log read
        rep = st.audit(entry.id, None, None)
        assert rep.verdict in ("PASS", "WARN", "FAIL", "INCONCLUSIVE")
