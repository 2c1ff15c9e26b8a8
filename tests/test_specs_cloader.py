"""The shipped device specs are read with libyaml's parser (profaudit.specs._package_specs) because
the pure-Python one cost ~1 s per command; both must read every shipped file to the same specs."""

from __future__ import annotations

import math
from importlib import resources

import pytest
import yaml

from profaudit import specs

pytestmark = pytest.mark.skipif(not hasattr(yaml, "CSafeLoader"), reason="PyYAML built without libyaml: the pure-Python loader is the only one used")


def _same(a, b) -> bool:
    # NaN-aware structural equality, types included (an int read as a float would change printed numbers)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def _shipped():
    root = resources.files("profaudit.device_specs")
    return sorted((e for e in root.iterdir() if e.name.endswith(".yaml")), key=lambda e: e.name)


def test_both_loaders_read_every_shipped_file_alike():
    files = _shipped()
    assert len(files) > 10
    for entry in files:
        text = entry.read_text(encoding="utf-8")
        assert _same(yaml.load(text, Loader=yaml.CSafeLoader), yaml.safe_load(text)), entry.name


def test_package_specs_equal_the_pure_python_read():
    pure = {}
    for entry in _shipped():
        s = specs.parse_spec(yaml.safe_load(entry.read_text(encoding="utf-8")), f"device_specs/{entry.name}")
        pure[s.key] = s
    assert specs._package_specs() == pure
