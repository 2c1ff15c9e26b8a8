"""A layout-2 batch manifest names each part file once (profaudit/dataset_v2.py check_manifest). A
part listed again was read again, once per entry: fuzz_long seed 3105, profaudit-dataset #88, one
entry repeated 344,926 times (a 50 MB manifest) read the same part that often, a timeout past 98
CPU-s, and its rows would have been served that many times. Now it is one line naming the manifest
and both entries, whatever the command."""

from __future__ import annotations

import json

import pytest

from conftest import assert_one_line_error


def _dataset(tmp_path):
    from profaudit.dataset import write_dataset
    from profaudit.profile import ProfileSet
    from tests.test_dataset_v2 import _profile

    ds = tmp_path / "ds"
    write_dataset(ProfileSet([_profile("a", 3)]), ds)
    (man,) = sorted((ds / "_manifests").glob("*.json"))
    return ds, man


@pytest.mark.parametrize("spelling", ["same", "dot"])
def test_a_part_listed_twice_is_one_line(tmp_path, cli, spelling):
    ds, man = _dataset(tmp_path)
    doc = json.loads(man.read_text())
    entry = dict(doc["files"][0])
    if spelling == "dot":  # another spelling of the same path
        head, _, tail = entry["path"].rpartition("/")
        entry["path"] = f"{head}/./{tail}"
    doc["files"] = doc["files"] + [entry] * 3
    man.write_text(json.dumps(doc))
    n = len(doc["files"]) - 3
    for argv in (("summary", ds), ("dataset", "info", ds)):
        res = cli(*argv)
        assert_one_line_error(res, f"broken batch manifest: files[{n}].path ")
        assert f"the part files[0] names already (each part is listed once)" in res.err and man.name in res.err


def test_a_sound_dataset_still_reads(tmp_path, cli):
    ds, _ = _dataset(tmp_path)
    assert cli("dataset", "info", ds).code == 0
    assert cli("summary", ds).code == 0
