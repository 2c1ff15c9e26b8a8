"""`Profile` (one input's tables + run metadata) and `ProfileSet` (many, keyed by `profile_id`)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

import polars as pl

from profaudit import schema


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


# Free-form metadata (a benchmark's context, machine_info) is kept whole in extra_json; a value
# nested deeper than this cannot be written there (json and _jsonable recurse), so it is refused
# when the profile is made, inside the read, instead of failing ps.metadata later.
_MAX_METADATA_DEPTH = 100


# values that are never containers, told by their exact type: isinstance against typing's Mapping
# costs ~0.9 us a value (an ABC check), and nearly every metadata value is one of these
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _check_nesting(metadata: Mapping, where) -> None:
    # scalars never go on the stack: only a container can nest
    stack = [(v, 1) for v in metadata.values() if type(v) not in _SCALARS]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (Mapping, list, tuple, set)):
            if depth >= _MAX_METADATA_DEPTH:
                from profaudit.errors import InputError

                raise InputError(where, f"its metadata holds a value nested more than {_MAX_METADATA_DEPTH} deep")
            stack.extend((x, depth + 1) for x in (v.values() if isinstance(v, Mapping) else v) if type(x) not in _SCALARS)


def _fits(value: Any) -> bool:
    """Whether a metadata value can sit in its declared column: containers never can, nor
    integers beyond Int64, whatever the column (polars builds no column of any type from one:
    a host name of 2**63 failed the text column); scalars of another type are cast as before."""
    if isinstance(value, (Mapping, list, tuple, set, bytes)):
        return False
    if isinstance(value, str) and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a JSON "\ud800" (lone surrogate): JSON-escaped in extra_json
            return False
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        return False
    return True


@dataclass
class Profile:
    """One profile: the normalised tables of one input plus its run metadata.

    `metadata` keys declared in `schema.METADATA` become columns of `ProfileSet.metadata`; any
    other key is kept and lands in `extra_json`.
    """

    profile_id: str
    metadata: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in schema.DATA_TABLES:
            self.tables[name] = schema.conform(name, self.tables.get(name), self.profile_id)
        unknown = set(self.tables) - set(schema.DATA_TABLES)
        if unknown:
            raise ValueError(f"unknown tables {sorted(unknown)}")
        self.metadata.setdefault("kernel_count", self.tables["kernels"].height)
        self.metadata.setdefault("sample_count", self.tables["samples"].height)
        _check_nesting(self.metadata, self.metadata.get("path") or self.profile_id)

    def __repr__(self) -> str:
        # one line (the dataclass repr printed every table: 55 kB for one trace)
        from profaudit.notebook import profile_repr

        return profile_repr(self)

    def _repr_html_(self) -> str:
        from profaudit.notebook import profile_html

        return profile_html(self)

    def __getattr__(self, name: str) -> pl.DataFrame:
        tables = self.__dict__.get("tables", {})
        if name in tables:
            return tables[name]
        raise AttributeError(name)

    def metadata_row(self) -> dict[str, Any]:
        keys = schema.metadata_keys()
        row = {"profile_id": self.profile_id}
        extra = {}
        for k, v in self.metadata.items():
            if k in keys and _fits(v):
                row[k] = v
            else:
                # a declared key holding a list or mapping (pytest-benchmark and Google Benchmark
                # metadata are free-form) keeps its value in extra_json instead of failing the table
                extra[k] = v
        row["extra_json"] = json.dumps(_jsonable(extra), sort_keys=True) if extra else None
        return row

    @property
    def extra(self) -> dict[str, Any]:
        keys = set(schema.metadata_keys())
        return {k: v for k, v in self.metadata.items() if k not in keys}


class ProfileSet:
    """Profiles keyed by `profile_id`; each table is one polars frame across all of them.

    `ps.kernels`, `ps.metrics`, `ps.ranges`, `ps.transfers`, `ps.counters`, `ps.samples` and
    `ps.metadata` are polars DataFrames (empty with the declared columns where no profile has
    rows). `ps.to_pandas("kernels")` converts at the boundary.
    """

    def __init__(self, profiles: Iterable[Profile] = (), skipped: Iterable[tuple[str, str]] = ()):
        self._profiles: dict[str, Profile] = {}
        self._cache: dict[str, pl.DataFrame] = {}
        self.skipped: list[tuple[str, str]] = list(skipped)
        for p in profiles:
            self.add(p)

    def add(self, profile: Profile) -> None:
        pid = profile.profile_id
        if pid in self._profiles:
            # The same content given twice (a copy under another name) keeps both, distinguishably.
            n = 2
            while f"{pid}~{n}" in self._profiles:
                n += 1
            profile = Profile(f"{pid}~{n}", dict(profile.metadata), {k: v for k, v in profile.tables.items()})
        self._profiles[profile.profile_id] = profile
        self._cache.clear()

    # container protocol
    def __len__(self) -> int:
        return len(self._profiles)

    def __iter__(self) -> Iterator[Profile]:
        return iter(self._profiles.values())

    def __contains__(self, pid: object) -> bool:
        return pid in self._profiles

    def __getitem__(self, pid: str) -> Profile:
        try:
            return self._profiles[pid]
        except KeyError:
            raise KeyError(f"no profile {pid!r}; have {list(self._profiles)}") from None

    def __repr__(self) -> str:
        return f"ProfileSet({len(self)} profiles: {', '.join(list(self._profiles)[:5])}{'...' if len(self) > 5 else ''})"

    def _repr_html_(self) -> str:
        from profaudit.notebook import profileset_html

        return profileset_html(self)

    @property
    def ids(self) -> list[str]:
        return list(self._profiles)

    def profiles(self) -> list[Profile]:
        return list(self._profiles.values())

    def subset(self, ids: Iterable[str]) -> "ProfileSet":
        return ProfileSet(self[i] for i in ids)

    def table(self, name: str) -> pl.DataFrame:
        if name == "metadata":
            return self.metadata
        if name not in schema.TABLES:
            raise KeyError(f"no table {name!r}; tables are {list(schema.ALL_TABLES)}")
        if name not in self._cache:
            frames = [p.tables[name] for p in self._profiles.values() if p.tables[name].height]
            self._cache[name] = pl.concat(frames, how="vertical") if frames else schema.TABLES[name].empty()
        return self._cache[name]

    @property
    def metadata(self) -> pl.DataFrame:
        if "metadata" not in self._cache:
            rows = [p.metadata_row() for p in self._profiles.values()]
            self._cache["metadata"] = schema.from_records("metadata", rows)
        return self._cache["metadata"]

    kernels = property(lambda self: self.table("kernels"))
    metrics = property(lambda self: self.table("metrics"))
    ranges = property(lambda self: self.table("ranges"))
    transfers = property(lambda self: self.table("transfers"))
    counters = property(lambda self: self.table("counters"))
    samples = property(lambda self: self.table("samples"))

    def to_pandas(self, name: str = "kernels"):
        """One table (kernels, metrics, ranges, transfers, counters, samples or metadata) as pandas."""
        return self.table(name).to_pandas()

    def merged(self, other: "ProfileSet") -> "ProfileSet":
        out = ProfileSet(self, skipped=self.skipped + other.skipped)
        for p in other:
            out.add(p)
        return out
