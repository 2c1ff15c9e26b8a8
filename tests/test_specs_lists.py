"""Device-spec fields that hold lists (aliases, notes, conflicts, conflicts[i].values, match_patterns)
share one check (specs._list): a number, a text or a mapping in their place is the same one line each
field gave before, and absent is empty."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from profaudit.errors import InputError

SPEC = Path(__file__).resolve().parents[1] / "device_specs" / "a100-sxm-40gb.yaml"
CONFLICT_VALUES = [{"source": "nvidia-a100-datasheet", "value": 1.5e12}, {"source": "nvidia-a100-datasheet", "value": 1.6e12}]


def _doc(**changes) -> dict:
    doc = yaml.safe_load(SPEC.read_text())
    doc.update(changes)
    return doc


def _source_key() -> str:
    return next(iter(yaml.safe_load(SPEC.read_text())["sources"]))


@pytest.mark.parametrize("bad", [float("-inf"), 2**64, "rtx", {"a": "b"}])
@pytest.mark.parametrize("field, message", [
    ("aliases", "aliases must be a list"),
    ("notes", "notes must be a list"),
    ("conflicts", "conflicts must be a list"),
    ("conflicts[0].values", "conflicts[0].values must be a list"),
    ("match_patterns", "match_patterns must be a list of regular expressions"),
])
def test_a_field_that_is_not_a_list_is_the_same_one_line(bad, field, message):
    from profaudit.specs import parse_spec

    if field == "conflicts[0].values":
        doc = _doc(conflicts=[{"field": "hbm_bytes_per_s", "values": bad, "resolution": "r"}])
    else:
        doc = _doc(**{field: bad})
    with pytest.raises(InputError) as exc:
        parse_spec(doc, "spec.yaml")
    assert str(exc.value) == f"spec.yaml: bad device spec: {message}"


def test_absent_lists_are_empty_and_lists_are_read():
    from profaudit.specs import parse_spec

    src = _source_key()
    values = [{**v, "source": src} for v in CONFLICT_VALUES]
    doc = _doc(aliases=None, notes=["one", "two"], match_patterns=None,
               conflicts=[{"field": "hbm_bytes_per_s", "values": values, "resolution": "datasheet"}])
    spec = parse_spec(doc, "spec.yaml")
    assert spec.aliases == () and spec.notes == ("one", "two") and spec.match_patterns == ()
    assert [v[0] for v in spec.conflicts[0].values] == [1.5e12, 1.6e12]
    assert parse_spec(_doc(conflicts=None), "spec.yaml").conflicts == ()
