"""profaudit's own timing log (`profaudit-timing` JSON Lines, see `profaudit.timinglog`)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import polars as pl

from profaudit import schema
from profaudit.errors import InputError
from profaudit.parsers.base import Probe, ReadOptions, new_profile, open_maybe_gzip

# Meta keys that are `metadata` columns; the rest of meta is kept as it is (extra_json).
_MD_KEYS = {"host": "host", "command_line": "command_line", "driver_version": "driver_version", "cuda_version": "cuda_version", "device_name": "device_name", "created": "capture_time"}
_RESERVED = {"source", "format", "path", "file_bytes", "kernel_count", "sample_count", "tool", "tool_version"}


class ProfauditTimingParser:
    name = "profaudit-timing"
    source = "profaudit"
    suffixes = (".jsonl", ".jsonl.gz", ".ndjson", ".json", ".json.gz", ".gz")
    description = "profaudit's own timing log (JSON Lines with a profaudit-timing header; written by profaudit bench)"

    def sniff(self, probe: Probe) -> bool:
        first = probe.head.split(b"\n", 1)[0]
        return first.lstrip().startswith(b"{") and b'"profaudit-timing"' in first and b'"format"' in first

    def read(self, path: Path, options: ReadOptions):
        from profaudit.timinglog import COLUMNS, read_header

        path = Path(path)
        try:
            with open_maybe_gzip(path) as fh:
                data = fh.read()
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise InputError(path, f"cannot read: {exc}") from None
        first, _, body = data.partition(b"\n")
        try:
            header = read_header(first)
        except ValueError as exc:
            raise InputError(path, str(exc)) from None
        meta: dict[str, Any] = header.get("meta") or {}
        if re.search(rb"\S", body) is None:
            raise InputError(path, "profaudit timing log holds a header but no samples")
        df = None
        declared = header.get("columns")
        if isinstance(declared, dict) and declared and all(c in COLUMNS for c in declared):
            # the writer lists what it wrote: parse with that schema (no inference pass), after
            # checking the first lines for keys it did not declare
            head_keys = self._keys_in(body[: 1 << 20])
            if head_keys is not None and head_keys <= set(declared):
                sch = schema.SAMPLES.polars_schema
                try:
                    df = pl.read_ndjson(body, schema={c: (pl.Utf8 if c == "params" else sch[c]) for c in declared})
                except Exception:
                    df = None
        if df is None:
            try:
                df = pl.read_ndjson(body, infer_schema_length=None)
            except Exception:
                df = None
        if df is None or any(isinstance(t, pl.Struct) for c, t in df.schema.items() if c != "params"):
            df = self._slow(path, body)
        unknown = [c for c in df.columns if c not in COLUMNS]
        if unknown:
            raise InputError(path, f"unknown sample field(s) {unknown[:6]} in a version-{header['version']} profaudit timing log")
        if "duration_ns" not in df.columns:
            raise InputError(path, "profaudit timing log samples lack duration_ns")
        from profaudit.timinglog import validate

        try:
            df = validate(df)
        except ValueError as exc:
            raise InputError(path, str(exc)) from None
        fills = {k: meta.get(k) for k in ("device_name", "time_source", "cache_state") if isinstance(meta.get(k), str)}
        if options.device and "device_name" not in fills:
            fills["device_name"] = options.device
        df = df.with_columns([(pl.col(k).fill_null(pl.lit(v)) if k in df.columns else pl.lit(v).alias(k)) for k, v in fills.items()])
        md: dict[str, Any] = {"tool": "profaudit", "tool_version": meta.get("profaudit_version"), "format_version": header["version"]}
        for k, v in meta.items():
            if k in _MD_KEYS:
                md[_MD_KEYS[k]] = v
            elif k in _RESERVED:
                md[f"meta_{k}"] = v
            else:
                md[k] = v
        return new_profile(path, self, {"samples": schema.conform("samples", df)}, md)

    @staticmethod
    def _keys_in(chunk: bytes) -> set[str] | None:
        keys: set[str] = set()
        for line in chunk.split(b"\n")[:-1][:1000]:
            if line.strip():
                try:
                    obj = json.loads(line)
                except ValueError:
                    return None
                if not isinstance(obj, dict) or isinstance(obj.get("params"), dict):
                    return None
                keys |= set(obj)
        return keys

    @staticmethod
    def _slow(path: Path, body: bytes) -> pl.DataFrame:
        """Line by line, to name the first bad line and to accept params given as objects."""
        from profaudit.samples import canonical_params

        rows = []
        for n, line in enumerate(body.split(b"\n"), 2):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except ValueError as exc:
                raise InputError(path, f"line {n} is not valid JSON: {exc}") from None
            if not isinstance(r, dict):
                raise InputError(path, f"line {n} is not a JSON object")
            if isinstance(r.get("params"), dict):
                r["params"] = canonical_params(r["params"])
            bad = [k for k, v in r.items() if isinstance(v, (dict, list))]
            if bad:
                raise InputError(path, f"line {n}: field(s) {bad} must be scalars")
            rows.append(r)
        keys: dict[str, None] = {}
        for r in rows:
            keys.update(dict.fromkeys(r))
        return pl.DataFrame({k: [r.get(k) for r in rows] for k in keys}, strict=False)


PARSER = ProfauditTimingParser()
