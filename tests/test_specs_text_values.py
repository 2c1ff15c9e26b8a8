"""Device-spec text values that are not text: YAML's "\\ud800" escape builds a lone UTF-16 surrogate,
which `devices` put into a polars table and died of (internal error, exit 3), and compute_capability
kept the str() of anything (a list, a mapping, .inf, true). Each is one line naming the field (s19,
found by a sweep of YAML value forms over every leaf of a spec; the surfaces fuzz writes neither)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import assert_one_line_error

SPEC = Path(__file__).resolve().parents[1] / "device_specs" / "a10.yaml"


def _spec(tmp_path, old: str, new: str) -> Path:
    text = SPEC.read_text()
    assert old in text
    p = tmp_path / "spec.yaml"
    p.write_text(text.replace(old, new, 1))
    return p


@pytest.mark.parametrize("old, new, field", [
    ("name: NVIDIA A10\n", 'name: "NVIDIA \\ud800 A10"\n', "name"),
    ("- NVIDIA A10\n", '- "A10 \\udfff"\n', "aliases[0]"),
    ("compute_capability: '8.6'\n", 'compute_capability: "8.\\ud800"\n', "compute_capability"),
])
def test_a_lone_surrogate_is_one_line(tmp_path, cli, old, new, field):
    res = cli("devices", "--spec", _spec(tmp_path, old, new))
    assert_one_line_error(res, f"bad device spec: {field} holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape): not text")


@pytest.mark.parametrize("value, shown", [("[1, 2]", "[1, 2]"), ("{a: 1}", "{'a': 1}"), (".inf", "inf"), ("true", "True"), ("-8.6", "-8.6"),
                                          (str(10**39), str(10**39)), (str(10**400), "an integer of 401 digits"), (".nan", "nan")])
def test_a_compute_capability_that_is_no_version_is_one_line(tmp_path, cli, value, shown):
    res = cli("devices", "--spec", _spec(tmp_path, "compute_capability: '8.6'\n", f"compute_capability: {value}\n"))
    assert_one_line_error(res, f"bad device spec: compute_capability must be a version such as '8.6', got {shown}")


@pytest.mark.parametrize("value, want", [("'8.6'", "8.6"), ("8.6", "8.6"), ("9", "9")])
def test_a_compute_capability_as_text_or_number_reads_as_before(tmp_path, value, want):
    from profaudit.specs import read_spec_file

    assert read_spec_file(_spec(tmp_path, "compute_capability: '8.6'\n", f"compute_capability: {value}\n")).compute_capability == want
