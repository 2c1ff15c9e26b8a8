"""The device-spec plausibility range for compute units keeps the same margin as the other figures:
about a thousand times past the largest device that exists (Cerebras WSE-3, 900,000 cores on one
wafer). 1e6 left 10 % over it and refused a wafer four times its size (review G2, session 16)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from profaudit.errors import InputError

SPEC = Path(__file__).resolve().parents[1] / "device_specs" / "a100-sxm-40gb.yaml"


def _doc(count) -> dict:
    doc = yaml.safe_load(SPEC.read_text())
    doc["compute_units"]["value"] = count
    doc["compute_units"]["kind"] = "core"
    return doc


@pytest.mark.parametrize("count", [900_000, 3_600_000, 10**9])
def test_wafer_scale_core_counts_load(count):
    from profaudit.specs import parse_spec

    assert parse_spec(_doc(count), "wse.yaml").sm_count == count


@pytest.mark.parametrize("count", [10**9 + 1, 2**63])
def test_past_the_bound_is_one_line(count):
    from profaudit.specs import parse_spec

    with pytest.raises(InputError, match=r"wse.yaml: bad device spec: compute_units.value = .* compute units is not a plausible figure for one device \(expected 1 to 1e\+09\)"):
        parse_spec(_doc(count), "wse.yaml")


@pytest.mark.parametrize("count, shown", [(10**9 + 1, "1000000001"), (1.0000001e9, "1000000100.0"), (2**63, "9.22337e+18"), (10**300, "1e+300")])
def test_the_refused_figure_is_printed_so_that_it_is_outside_the_range(count, shown):
    # {x:g} rounded to six digits: 1,000,000,001 read "1e+09 ... (expected 1 to 1e+09)", a figure
    # inside the range it was refused for; written out in full only then, so that an integer of
    # 300 digits is still six (review E17-2)
    from profaudit.specs import parse_spec

    with pytest.raises(InputError) as exc:
        parse_spec(_doc(count), "wse.yaml")
    assert f"compute_units.value = {shown} compute units is not a plausible" in str(exc.value)
