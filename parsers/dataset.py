"""profaudit's own ingested dataset (a folder written by `profaudit ingest`)."""

from __future__ import annotations

from pathlib import Path

from profaudit.errors import InputError
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

        # the dataset reader checks each batch manifest's shape as it parses it (dataset_v2.check_manifest)
        try:
            return list(read_dataset(path))
        except ValueError as exc:
            # a part file whose bytes were damaged can still decode, with a column name no table
            # declares (Parquet pages carry no checksum by default)
            raise InputError(path, f"damaged dataset: {str(exc).splitlines()[0][:200]}") from None


PARSER = DatasetParser()
