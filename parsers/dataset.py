"""profaudit's own ingested dataset (a folder written by `profaudit ingest`)."""

from __future__ import annotations

from pathlib import Path

from profaudit.errors import InputError
from profaudit.parsers import jsonshape
from profaudit.parsers.base import Probe, ReadOptions


class DatasetParser:
    name = "profaudit-dataset"
    source = "profaudit"
    suffixes = ("/",)
    description = "a folder written by `profaudit ingest -o DIR` (Parquet partitioned by ingest batch + one manifest per batch; layout 1 read too)"

    def sniff(self, probe: Probe) -> bool:
        from profaudit.dataset import is_dataset

        return probe.is_dir and is_dataset(probe.path)

    def read(self, path: Path, options: ReadOptions):
        from profaudit.dataset import read_dataset

        _check_manifests(Path(path))
        try:
            return list(read_dataset(path))
        except ValueError as exc:
            # a part file whose bytes were damaged can still decode, with a column name no table
            # declares (Parquet pages carry no checksum by default)
            raise InputError(path, f"damaged dataset: {str(exc).splitlines()[0][:200]}") from None


def _check_manifests(path: Path) -> None:
    """The shape of each local batch manifest, before the dataset code indexes into it: a damaged
    manifest is one line naming the file and the field, not a TypeError (found by fuzzing)."""
    import json

    d = path / "_manifests"
    if not d.is_dir():
        return
    for f in sorted(d.glob("*.json")):
        try:
            m = json.loads(f.read_bytes())
        except (OSError, ValueError):
            continue  # the dataset reader words unreadable manifests itself
        where = "broken batch manifest"
        m = jsonshape.mapping(m, where, f)
        jsonshape.text(m.get("batch"), f"{where}: batch", f, optional=False)
        for key, fields in (("profiles", ("profile_id",)), ("files", ("table", "path"))):
            entries = m.get(key)
            if not isinstance(entries, list):
                raise InputError(f, f"{where}: {key}: expected a list, found {jsonshape.kind(entries)}")
            for i, e in enumerate(entries):
                e = jsonshape.mapping(e, f"{where}: {key}[{i}]", f)
                for k in fields:
                    jsonshape.text(e.get(k), f"{where}: {key}[{i}].{k}", f, optional=False, numbers=False)
        replaces = m.get("replaces", [])
        if not isinstance(replaces, list) or not all(isinstance(b, str) for b in replaces):
            raise InputError(f, f"{where}: replaces: expected a list of batch names")


PARSER = DatasetParser()
