"""User YAML (claims, device specs, dashboard uploads) whose scalar PyYAML resolves but Python cannot
build: one line naming the file, exit 2, never an internal error (review G1, session 16)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import assert_one_line_error

SPEC = Path(__file__).resolve().parents[1] / "device_specs" / "a100-sxm-40gb.yaml"


def _limit() -> int:
    limit = sys.get_int_max_str_digits()  # 4,300 unless PYTHONINTMAXSTRDIGITS says otherwise
    if limit == 0 or limit > 6000:
        pytest.skip("Python's int/str digit limit is off or above the test's 6,021-digit values")
    return limit


def test_a_date_python_cannot_build_is_an_input_error():
    from profaudit import safe_yaml
    from profaudit.errors import InputError

    with pytest.raises(InputError) as info:
        safe_yaml.load("a: 2026-13-45\n", "c.yaml")
    msg = str(info.value)
    assert msg.startswith("c.yaml: not valid YAML: a value cannot be read: ") and "month must be in 1..12" in msg, msg


# An integer past Python's int<->str limit, in every notation YAML 1.1 reads as an int. Decimal text
# was refused by int() itself (Python's message, no line); 0x / 0 / 0b / sexagesimal scalars are
# built by arithmetic, which the limit does not hold, and got through to the checks: a claim's
# message was Python's "Exceeds the limit ...", a device spec's an internal error (s19, E). 6,021
# decimal digits each (10**6020 and 2**20000 are 6,021 digits long; str() of either would raise).
HUGE = {
    "decimal": "1" + "0" * 6020,
    "decimal with sign and underscores": "+1" + "_0" * 6020,
    "hex": hex(2**20000),
    "octal": "0" + oct(2**20000)[2:],
    "binary": bin(2**20000),
    # 1:0:0:...:0 in base 60 with 3,386 zeros is 60**3386, 6,021 digits
    "sexagesimal": "1" + ":0" * 3386,
}


@pytest.mark.parametrize("notation", sorted(HUGE))
def test_an_integer_past_pythons_limit_is_refused_with_its_line(notation):
    from profaudit import safe_yaml
    from profaudit.errors import InputError

    limit = _limit()
    with pytest.raises(InputError) as info:
        safe_yaml.load(f"a: 1\nb:\n  - {HUGE[notation]}\n", "c.yaml")
    assert str(info.value) == f"c.yaml: not valid YAML: line 3: an integer of 6,021 digits, more than the {limit:,} Python reads"


def test_integers_up_to_the_limit_still_load():
    from profaudit import safe_yaml

    limit = _limit()
    assert safe_yaml.load(f"a: 0x{'f' * 16}\nb: {'9' * limit}\n", "c.yaml") == {"a": 2**64 - 1, "b": 10**limit - 1}


def test_a_claim_with_a_5001_digit_confidence_is_one_line(tmp_path, cli):
    limit = _limit()
    claim = tmp_path / "c.yaml"
    claim.write_text("baseline:\n  timings: a.csv\ncandidate:\n  timings: b.csv\nconfidence: 1" + "0" * 5000 + "\n")
    assert_one_line_error(cli("audit", claim), f"c.yaml: not valid YAML: line 5: an integer of 5,001 digits, more than the {limit:,} Python reads")


@pytest.mark.parametrize("field", ["best_of", "sm_clock_mhz"])
def test_a_claim_with_a_hex_integer_past_the_limit_is_one_line(tmp_path, cli, field):
    limit = _limit()
    claim = tmp_path / "c.yaml"
    claim.write_text(f"baseline:\n  timings: a.csv\n  meta:\n    {field}: {HUGE['hex']}\ncandidate:\n  timings: b.csv\n")
    assert_one_line_error(cli("audit", claim), f"c.yaml: not valid YAML: line 4: an integer of 6,021 digits, more than the {limit:,} Python reads")


@pytest.mark.parametrize("old", ["schema_version: 1\n", "  value: 108\n"])
def test_a_device_spec_with_a_hex_integer_past_the_limit_is_one_line(tmp_path, cli, old):
    # before: "profaudit: internal error: ValueError: Exceeds the limit ..." (exit 3) on every field
    limit = _limit()
    text = SPEC.read_text()
    assert old in text
    spec = tmp_path / "spec.yaml"
    spec.write_text(text.replace(old, old.replace(old.strip().split()[-1], HUGE["hex"]), 1))
    line = text[: text.index(old)].count("\n") + 1
    assert_one_line_error(cli("devices", "--spec", spec), f"not valid YAML: line {line}: an integer of 6,021 digits, more than the {limit:,} Python reads")


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
