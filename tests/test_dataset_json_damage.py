"""Damage inside a dataset's JSON that json.loads accepts or that sits inside a Parquet cell is one
line naming the dataset (fuzz_surfaces s18 final run, seed 4810): a layout-1 marker whose profile is
"\\ud800" (a lone surrogate, which polars cannot hold: a UnicodeEncodeError, dataset #526), and a
metadata part whose extra_json is not JSON (a JSONDecodeError, dataset #1829)."""

from __future__ import annotations

import json

import polars as pl
import pytest

from conftest import assert_one_line_error
from profaudit import dataset_v2 as v2
from profaudit.dataset import read_dataset, write_dataset
from profaudit.profile import ProfileSet
from tests.test_dataset_v2 import _profile, _write_layout_1


def test_json_doc_refuses_a_lone_surrogate_and_keeps_a_pair():
    with pytest.raises(ValueError, match="unpaired UTF-16 surrogate"):
        v2.json_doc(b'{"profiles": ["a", "\\ud800"]}')
    with pytest.raises(ValueError, match="unpaired UTF-16 surrogate"):
        v2.json_doc('{"x": "\\udfff\\ud800"}')  # low before high is no pair
    assert v2.json_doc(b'{"x": "\\ud83d\\ude00", "y": "\\u00e9"}') == {"x": "\U0001F600", "y": "\u00e9"}


def test_json_doc_refuses_a_surrogate_written_as_utf8_bytes():
    """fuzz_long s19 final run, seed 2042, dataset #2737: a manifest's profile id held the bytes
    ED A0 80 (a surrogate in UTF-8's form, which strict UTF-8 refuses); json.loads decodes bytes
    with 'surrogatepass', so it became a lone surrogate and reached polars as a UnicodeEncodeError.
    A UTF-8 BOM and a UTF-16 document still read as json.loads reads them."""
    with pytest.raises(ValueError, match="unpaired UTF-16 surrogate"):
        v2.json_doc(b'{"profiles": [{"profile_id": "\xed\xa0\x80torch"}]}')
    with pytest.raises(ValueError, match="unpaired UTF-16 surrogate"):
        v2.json_doc('{"x": "\ud800"}')  # text that already holds one
    assert v2.json_doc(b'\xef\xbb\xbf{"x": "\xc3\xa9"}') == {"x": "\u00e9"}
    assert v2.json_doc('{"x": 1}'.encode("utf-16")) == {"x": 1}


def test_a_manifest_with_a_surrogate_in_utf8_bytes_is_one_line(tmp_path, cli):
    ds = tmp_path / "ds"
    write_dataset(ProfileSet([_profile("a", 3)]), ds)
    (man,) = (ds / "_manifests").glob("*.json")
    raw = man.read_bytes()
    pid = json.loads(raw)["profiles"][0]["profile_id"].encode()
    man.write_bytes(raw.replace(b'"' + pid + b'"', b'"\xed\xa0\x80' + pid + b'"'))
    assert_one_line_error(cli("roofline", ds, "-f", "json"), "unpaired UTF-16 surrogate")


def test_a_layout_1_marker_with_a_lone_surrogate_profile_is_one_line(tmp_path, cli):
    ds = _write_layout_1(ProfileSet([_profile("a", 3)]), tmp_path / "ds")
    marker = json.loads((ds / v2.MARKER).read_text())
    marker["profiles"].append("\ud800")
    (ds / v2.MARKER).write_text(json.dumps(marker))  # ensure_ascii: written as the escape
    assert_one_line_error(cli("roofline", ds, "-f", "json"), "unpaired UTF-16 surrogate")


@pytest.mark.parametrize("extra, needle", [
    ('{"note": "made for a"', "holds extra_json that is not JSON"),
    ("[1, 2]", "holds extra_json that is a JSON list, not an object"),
])
def test_a_metadata_part_with_damaged_extra_json_is_one_line(tmp_path, cli, extra, needle):
    ds = tmp_path / "ds"
    write_dataset(ProfileSet([_profile("a", 3)]), ds)
    assert next(iter(read_dataset(ds))).metadata["note"] == "made for a"  # kept in extra_json
    (part,) = (ds / "metadata").rglob("*.parquet")
    df = pl.read_parquet(part)
    assert "extra_json" in df.columns
    df.with_columns(extra_json=pl.lit(extra)).write_parquet(part)
    assert_one_line_error(cli("roofline", ds, "-f", "json"), needle)
