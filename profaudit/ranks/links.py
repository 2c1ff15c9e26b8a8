"""The interconnect ceilings a run's collectives are measured against: each rank's device matched
to its `device_specs/` entry, and that entry's per-direction link bandwidths (NVLink, PCIe,
InfiniBand, xGMI). A rank whose device no spec covers, or whose spec lists no links, has no rows:
unknown, never guessed."""

from __future__ import annotations

import polars as pl

SCHEMA = {"rank": pl.Int64, "device_key": pl.Utf8, "link": pl.Utf8, "bytes_per_s": pl.Float64, "source": pl.Utf8}


def interconnect_peaks(ranks: pl.DataFrame) -> pl.DataFrame:
    """One row per rank and link: `rank`, `device_key`, `link`, `bytes_per_s` (one direction), `source`."""
    from profaudit.specs import match_device

    rows = []
    cache: dict[str | None, object] = {}
    for r in ranks.select("rank", "device_name").iter_rows(named=True):
        name = r["device_name"]
        if name not in cache:
            cache[name] = match_device(name) if name else None
        spec = cache[name]
        if spec is None:
            continue
        for link, v in spec.interconnects.items():
            rows.append({"rank": r["rank"], "device_key": spec.key, "link": link, "bytes_per_s": v.value, "source": spec.source_titles(v.source)})
    return pl.DataFrame(rows, schema=SCHEMA)
