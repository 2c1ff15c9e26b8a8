"""What an overview shows of a dataset (profiles, rows per table, sources, devices, the metadata
row of each profile) without reading its data tables.

A 10,000-profile dataset holds millions of kernel rows; an overview needs none of them. Row counts
come from the batch manifests (layout 2) or the Parquet footers (layout 1); the profile list is the
metadata table (one small row per profile); device names in the data tables come from a lazy
distinct query that reads that one column. `summarize_profiles` gives the same summary of profiles
already in memory, so one overview page serves both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from profaudit import schema
from profaudit.profile import ProfileSet

# data tables whose rows name the device they ran on (the overview lists every reported name)
DEVICE_TABLES = ("kernels", "samples")


@dataclass
class DatasetSummary:
    profiles: int
    rows: dict[str, int]  # data table -> live rows (superseded copies not counted)
    metadata: pl.DataFrame  # the metadata table: one row per profile, schema columns
    devices: list[str] = field(default_factory=list)  # every device name reported, sorted
    sources: dict[str, int] = field(default_factory=dict)  # "source / format" -> profiles

    def __add__(self, other: "DatasetSummary") -> "DatasetSummary":
        return DatasetSummary(
            self.profiles + other.profiles,
            {t: self.rows.get(t, 0) + other.rows.get(t, 0) for t in schema.DATA_TABLES},
            pl.concat([self.metadata, other.metadata], how="vertical"),
            sorted(set(self.devices) | set(other.devices)),
            _count_sources(pl.concat([self.metadata, other.metadata], how="vertical")),
        )


def _count_sources(md: pl.DataFrame) -> dict[str, int]:
    if not md.height:
        return {}
    label = pl.concat_str([pl.col("source").fill_null("?"), pl.lit(" / "), pl.col("format").fill_null("?")])
    counts = md.group_by(label.alias("s")).len().sort("s")
    return dict(zip(counts["s"].to_list(), counts["len"].to_list()))


def _names(values) -> set[str]:
    return {v for v in values if v}


def empty_summary() -> DatasetSummary:
    return DatasetSummary(0, {t: 0 for t in schema.DATA_TABLES}, schema.ALL_TABLES["metadata"].empty())


def summarize_profiles(ps: ProfileSet) -> DatasetSummary:
    """The summary of profiles already loaded."""
    md = ps.metadata
    devices = _names(md["device_name"].to_list()) if md.height else set()
    for t in DEVICE_TABLES:
        df = getattr(ps, t)
        if df.height:
            devices |= _names(df["device_name"].unique().to_list())
    return DatasetSummary(len(ps), {t: getattr(ps, t).height for t in schema.DATA_TABLES}, md, sorted(devices), _count_sources(md))


def summarize_dataset(path) -> DatasetSummary:
    """The summary of the dataset at `path` (folder or URL, layout 1 or 2), its data tables unread:
    only manifests (or Parquet footers), the metadata table, and one distinct-values query on the
    `device_name` column of each table in DEVICE_TABLES."""
    from profaudit.dataset import dataset_info
    from profaudit.scan import scan

    info = dataset_info(path)
    rows = {t: int(info["tables"].get(t, {}).get("rows", 0)) for t in schema.DATA_TABLES}
    md = scan(path, "metadata").collect()
    devices = _names(md["device_name"].to_list())
    for t in DEVICE_TABLES:
        if rows[t]:
            devices |= _names(scan(path, t).select("device_name").unique().collect()["device_name"].to_list())
    return DatasetSummary(info["profiles"], rows, md, sorted(devices), _count_sources(md))


__all__ = ["DatasetSummary", "summarize_dataset", "summarize_profiles", "empty_summary"]
