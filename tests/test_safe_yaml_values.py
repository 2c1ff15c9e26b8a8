"""User YAML (claims, device specs, dashboard uploads) whose scalar PyYAML resolves but Python cannot
build: one line naming the file, exit 2, never an internal error (review G1, session 16)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import assert_one_line_error

SPEC = Path(__file__).resolve().parents[1] / "device_specs" / "a100-sxm-40gb.yaml"


@pytest.mark.parametrize("value, needle", [
    ("1" + "0" * 5000, "Exceeds the limit (4300 digits) for integer string conversion"),
    ("2026-13-45", "month must be in 1..12"),
])
def test_a_value_python_cannot_build_is_an_input_error(value, needle):
    from profaudit import safe_yaml
    from profaudit.errors import InputError

    with pytest.raises(InputError) as info:
        safe_yaml.load(f"a: {value}\n", "c.yaml")
    msg = str(info.value)
    assert msg.startswith("c.yaml: not valid YAML: a value cannot be read: ") and needle in msg, msg
    assert "set_int_max_str_digits" not in msg and "\n" not in msg


def test_a_claim_with_a_5001_digit_confidence_is_one_line(tmp_path, cli):
    claim = tmp_path / "c.yaml"
    claim.write_text("baseline:\n  timings: a.csv\ncandidate:\n  timings: b.csv\nconfidence: 1" + "0" * 5000 + "\n")
    assert_one_line_error(cli("audit", claim), "c.yaml: not valid YAML: a value cannot be read")


def test_a_device_spec_with_a_5001_digit_count_is_one_line(tmp_path, cli):
    text = SPEC.read_text()
    assert "  value: 108\n" in text  # compute_units of the A100
    spec = tmp_path / "spec.yaml"
    spec.write_text(text.replace("  value: 108\n", "  value: 1" + "0" * 5000 + "\n", 1))
    assert_one_line_error(cli("devices", "--spec", spec), "not valid")


def test_a_dashboard_upload_with_a_5001_digit_number_is_not_a_crash(tmp_path):
    from dashboards.access import looks_like_claim

    claim = tmp_path / "c.yaml"
    claim.write_text("baseline:\n  timings: a.csv\ncandidate:\n  timings: b.csv\nconfidence: 1" + "0" * 5000 + "\n")
    assert looks_like_claim(claim) is True  # still a claim (the audit page then says why it is refused)
