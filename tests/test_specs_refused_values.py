"""A device spec's refused value is shown in its one line the way a reader can use: a number by
fmt_refused's rule (six digits unless that rounds it into range), anything else as the start of its
repr. A damaged or hostile spec's -10**300 printed 301 digits, a 100,000-character string and a
50,000-item list were quoted whole (review F18-3)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from profaudit.errors import InputError

SPEC = Path(__file__).resolve().parents[1] / "device_specs" / "a100-sxm-40gb.yaml"


def _refusal(value) -> str:
    from profaudit.specs import parse_spec

    doc = yaml.safe_load(SPEC.read_text())
    doc["compute_units"]["value"] = value
    with pytest.raises(InputError) as got:
        parse_spec(doc, "bad.yaml")
    return str(got.value)


@pytest.mark.parametrize("value, shown", [
    (-10**300, "got -1e+300"),
    (-(2**70), "got -1.18059e+21"),
    (0, "got 0"),
    (-0.5, "got -0.5"),
    (float("nan"), "got nan"),
    (float("-inf"), "got -inf"),
    (1.5, "must be a whole number, got 1.5"),
    ("x" * 100_000, "must be a number, got '" + "x" * 59 + "... (100,002 characters written out)"),
    (list(range(50_000)), "must be a positive number, got [0, 1, 2, 3"),
])
def test_a_refused_value_is_shown_short(value, shown):
    line = _refusal(value)
    assert shown in line and "\n" not in line, line[:300]
    assert len(line) < 200, len(line)


def test_a_short_value_is_shown_whole():
    assert "got 'many'" in _refusal("many")
    assert "got [1, 2]" in _refusal([1, 2])
