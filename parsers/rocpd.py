"""rocprofv3 SQLite databases (ROCm 7 default output, `<pid>_results.db`: the "rocpd" schema).

Layout (rocprofiler-sdk `rocpd_tables.sql`, schema version 3): every table is written with the
run's uuid appended (`rocpd_kernel_dispatch_<uuid>`) and a plain-named view over it
(`rocpd_kernel_dispatch`); databases merged from several processes hold several suffixed tables
and rows from each keep their own `guid`, so every join here matches on `id` and `guid`. This
reader uses the views where they exist and otherwise the union of the suffixed tables.

Two generations of the record tables exist, told apart by their columns:
- direct (what rocprofv3 writes today, rocm-systems): kernel dispatches, memory copies and regions
  carry `start`/`end` (integer ns) and their `pid`, `tid`, `agent_id`, `queue_id`, `stream_id`
  themselves; `rocpd_sample` rows (zero-length API calls and instant markers) point to a
  `rocpd_track` (pid, tid, category) and carry a `timestamp`;
- tracked (an earlier rocprofiler-sdk revision): records point to `rocpd_track` for pid, tid,
  agent, queue and stream and to `rocpd_timestamp` rows for their times.
Either way:
- Times are integer ns on rocprofiler's clock (the same one the JSON output writes).
- Names are ids into `rocpd_string`. Each record has an event (`rocpd_event`): its category names
  the domain (HIP_RUNTIME_API_EXT, HSA_CORE_API, MARKER_CORE_RANGE_API, KERNEL_DISPATCH, ...), its
  `stack_id` holds the internal correlation id that ties a kernel dispatch or copy to the HIP/HSA
  call that issued it (`correlation_id` holds the external, user-set one; it is used only where
  `stack_id` is absent), and a marker range's text is its `extdata.message`.
- Kernels (`rocpd_kernel_dispatch`): HSA semantics as in the JSON output, so `grid_size_*` count
  work-items and blocks per dimension are ceil(grid / workgroup); `group_segment_size` is the
  dispatch's LDS (shared memory) with the kernel symbol's as the static part;
  `private_segment_size` is scratch per work-item. Registers per thread are arch + accumulation
  VGPRs. Scratch, SGPRs, VGPR split and kernarg size go to `metrics` (kind `launch`), since no
  kernels column holds them; `kernels.kernel_id` is the launch order and the tool's
  `dispatch_id` is the metric `dispatch_id`; `stream` is the HSA queue.
- API calls and markers are `rocpd_region` rows; zero-length ones are samples and become
  zero-length ranges named by their marker text, else by their category. Each kernel's
  `nvtx_range` is the innermost marker range around its launching call.
- Counters (`--pmc`): `rocpd_pmc_event` rows share the dispatch's `event_id` and name their
  counter in `rocpd_info_pmc`; each becomes a `metrics` row of its kernel (kind `metric`).
- Devices: `rocpd_info_agent` (type GPU, `id` = the agent's node id that records point to);
  `product_name` ("AMD Instinct MI300X") is what device_specs match, `name` is the gfx target.
  `device_id` is the agent's GPU index (`type_index`).
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import polars as pl

from profaudit.errors import InputError
from profaudit.parsers.base import Probe, ReadOptions, apply_device_option, map_unique, new_profile
from profaudit.parsers.completeness import mark_incomplete
from profaudit.parsers.nsys_sqlite import SQLITE_MAGIC, check_sqlite_file, connect_readonly, sqlite_table_names
from profaudit.parsers.rocprof_sdk import _API_KIND, _COPY_DIRECTION, _strip_kd, nest_api_ranges

I64, F64, STR = pl.Int64, pl.Float64, pl.String
_TABLES = ("rocpd_metadata", "rocpd_string", "rocpd_info_node", "rocpd_info_process", "rocpd_info_agent", "rocpd_info_pmc",
           "rocpd_info_kernel_symbol", "rocpd_track", "rocpd_timestamp", "rocpd_event", "rocpd_pmc_event", "rocpd_region",
           "rocpd_sample", "rocpd_kernel_dispatch", "rocpd_memory_copy")
# the uuid suffix rocprofiler-sdk appends to every table name
_SUFFIX = re.compile(r"_[0-9A-Za-z_-]+")


class _Db:
    def __init__(self, path: Path):
        self.path = path
        check_sqlite_file(path)
        try:
            self.con = connect_readonly(path)
            rows = self.con.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')").fetchall()
        except sqlite3.DatabaseError as exc:
            raise InputError(path, f"damaged SQLite database: {exc}") from None
        except UnicodeDecodeError:
            # SQLite's message about a damaged schema quotes the damaged bytes, which sqlite3 cannot decode
            raise InputError(path, "damaged SQLite database: its schema holds bytes that are not UTF-8") from None
        if any(not isinstance(r[0], str) for r in rows):
            # a flipped bit can make a schema name a BLOB, which sqlite3 returns as bytes (was a
            # TypeError in the catch-all, fuzzing)
            raise InputError(path, "damaged SQLite database: a table name in its schema is not text")
        names = {r[0] for r in rows}
        self.src: dict[str, str] = {}
        for t in sorted(_TABLES, key=len, reverse=True):
            if t in names:
                self.src[t] = f'"{t}"'
                continue
            # longest names first, so rocpd_info_pmc's tables are not taken for rocpd_info_p...;
            # a suffixed table belongs to `t` only when no longer logical name also prefixes it
            parts = [n for n in names if n.startswith(t + "_") and _SUFFIX.fullmatch(n[len(t):])
                     and not any(n.startswith(o + "_") for o in _TABLES if len(o) > len(t) and o.startswith(t))]
            if parts:
                self.src[t] = "(" + " UNION ALL ".join(f'SELECT * FROM "{n}"' for n in sorted(parts)) + ")"
        self.cols: dict[str, set[str]] = {}
        for t in self.src:
            first = t if t in names else min(n for n in names if n.startswith(t + "_") and _SUFFIX.fullmatch(n[len(t):]))
            try:
                self.cols[t] = {r[1] for r in self.con.execute(f'PRAGMA table_info("{first}")')}
            except sqlite3.DatabaseError as exc:
                raise InputError(path, f"damaged SQLite database: {exc}") from None

    def direct(self, t: str) -> bool:
        """Whether `t` carries its own start/end (today's layout) rather than timestamp ids."""
        return "start" in self.cols.get(t, ()) and "start_id" not in self.cols.get(t, ())

    def span(self, t: str, a: str) -> tuple[str, str]:
        """(select list of start, end, pid, tid, agent_id, queue_id, stream_id; the joins it needs)
        for records of table `t` aliased `a`, in either layout (NULL for what a table lacks)."""
        if self.direct(t):
            have = self.cols.get(t, set())
            pick = lambda c: f'{a}."{c}"' if c in have else "NULL"  # noqa: E731
            return ", ".join(pick(c) for c in ("start", "end", "pid", "tid", "agent_id", "queue_id", "stream_id")), ""
        tr = self.cols.get("rocpd_track", set())
        pick = lambda c: f"T_{a}.{c}" if c in tr else "NULL"  # noqa: E731
        joins = (f"LEFT JOIN {{rocpd_timestamp}} TS_{a} ON TS_{a}.id = {a}.start_id AND TS_{a}.guid = {a}.guid "
                 f"LEFT JOIN {{rocpd_timestamp}} TE_{a} ON TE_{a}.id = {a}.end_id AND TE_{a}.guid = {a}.guid "
                 f"LEFT JOIN {{rocpd_track}} T_{a} ON T_{a}.id = {a}.track_id AND T_{a}.guid = {a}.guid ")
        return f"TS_{a}.value, TE_{a}.value, " + ", ".join(pick(c) for c in ("pid", "tid", "agent_id", "queue_id", "stream_id")), joins

    def corr(self) -> str:
        """The internal correlation id of an event row `E`."""
        return "COALESCE(E.stack_id, E.correlation_id)" if "stack_id" in self.cols.get("rocpd_event", ()) else "E.correlation_id"

    def has(self, t: str) -> bool:
        return t in self.src

    def frame(self, sql: str, schema: dict[str, pl.DataType]) -> pl.DataFrame:
        for t in sorted(self.src, key=len, reverse=True):
            sql = sql.replace("{" + t + "}", self.src[t])
        try:
            rows = self.con.execute(sql).fetchall()
        except sqlite3.DatabaseError as exc:
            raise InputError(self.path, f"damaged rocpd database: {exc}") from None
        try:
            return pl.DataFrame(rows, schema=schema, orient="row", strict=False)
        except (pl.exceptions.PolarsError, TypeError, OverflowError):
            pass
        # SQLite keeps any value in any column: name the column whose cells are not its type
        for i, (name, dtype) in enumerate(schema.items()):
            for r in rows:
                v = r[i]
                ok = (v is None or (isinstance(v, int) and -(1 << 63) <= v < (1 << 63)) if dtype == I64
                      else v is None or isinstance(v, (int, float)) if dtype == F64 else True)
                if not ok:
                    raise InputError(self.path, f"damaged rocpd database: {name} holds {v!r}, not an {'integer' if dtype == I64 else 'number'}")
        raise InputError(self.path, "damaged rocpd database: a query returned rows polars cannot hold")


def _json(text) -> dict:
    if not isinstance(text, str) or not text:
        return {}
    try:
        v = json.loads(text)
    except ValueError:
        return {}
    return v if isinstance(v, dict) else {}


class RocpdParser:
    name = "rocpd"
    source = "rocprof"
    suffixes = (".db", ".rpd", ".sqlite")
    description = "rocprofv3 SQLite database (ROCm 7 *_results.db, rocpd schema): kernels, copies, HIP/HSA API, markers, counters, agents"

    def sniff(self, probe: Probe) -> bool:
        head = probe.raw_head
        if head.startswith(SQLITE_MAGIC):
            if b"rocpd_" in head:
                return True
            # a schema larger than one page keeps no table text on page 1: ask SQLite itself
            names = sqlite_table_names(probe.path)
            if names is None:  # damaged: read() names the problem when the file is named as rocprofv3 names it
                return probe.name_endswith("_results.db")
            return any(n.startswith("rocpd_") for n in names)
        # a damaged or mislabelled results database is still ours to explain
        return probe.name_endswith("_results.db")

    def read(self, path: Path, options: ReadOptions):
        from profaudit.names import demangle, short_name

        path = Path(path)
        db = _Db(path)
        try:
            if not db.has("rocpd_kernel_dispatch") and not db.has("rocpd_region"):
                raise InputError(path, "SQLite database without rocpd tables (no rocpd_kernel_dispatch or rocpd_region): not a rocprofv3 results database")
            main = "rocpd_kernel_dispatch" if db.has("rocpd_kernel_dispatch") else "rocpd_region"
            for need in ("rocpd_string",) + (() if db.direct(main) else ("rocpd_timestamp", "rocpd_track")):
                if not db.has(need):
                    raise InputError(path, f"rocpd database without its {need} table (file damaged or written by another tool)")
            agents = self._agents(db)
            kernels, launch_events = self._kernels(db, agents, demangle, short_name)
            ranges, launch = self._ranges(db)
            if kernels is not None and launch is not None and launch.height:
                kernels = kernels.drop("nvtx_range").join(launch, on="correlation_id", how="left")
            metrics = self._metrics(db, kernels, launch_events)
            transfers = self._copies(db, agents)
            md = self._metadata(db, agents, kernels)
            unnamed = self._unnamed(db) if kernels is not None else 0
            if unnamed:
                mark_incomplete(md, f"{unnamed:,} of {kernels.height:,} kernel dispatches name a kernel symbol the database lacks: "
                                    "their names and registers are unknown")
        finally:
            db.con.close()
        if kernels is None and ranges is None and transfers is None:
            raise InputError(path, "rocpd database holds no kernel dispatches, API calls, markers or memory copies (was anything traced?)")
        tables = {"kernels": kernels, "ranges": ranges, "transfers": transfers, "metrics": metrics}
        apply_device_option(tables, md, options.device)
        return new_profile(path, self, tables, md)

    # -- agents ------------------------------------------------------------------------------
    @staticmethod
    def _agents(db: _Db) -> pl.DataFrame:
        if not db.has("rocpd_info_agent"):
            return pl.DataFrame(schema={"agent_id": I64, "guid": STR, "type": STR, "device_id": I64, "product_name": STR, "gfx": STR, "extdata": STR})
        return db.frame(
            "SELECT id, guid, type, COALESCE(type_index, logical_index), COALESCE(NULLIF(product_name, ''), NULLIF(model_name, ''), name), name, extdata FROM {rocpd_info_agent}",
            {"agent_id": I64, "guid": STR, "type": STR, "device_id": I64, "product_name": STR, "gfx": STR, "extdata": STR})

    # -- kernels -----------------------------------------------------------------------------
    def _kernels(self, db: _Db, agents: pl.DataFrame, demangle, short_name):
        if not db.has("rocpd_kernel_dispatch"):
            return None, None
        ev = "LEFT JOIN {rocpd_event} E ON E.id = K.event_id AND E.guid = K.guid" if db.has("rocpd_event") else ""
        cols = {
            "guid": STR, "dispatch_id": I64, "start_ns": I64, "end_ns": I64, "private_segment_size": I64, "shared_mem_bytes": I64,
            "block_x": I64, "block_y": I64, "block_z": I64, "wi_x": I64, "wi_y": I64, "wi_z": I64, "event_id": I64,
            "correlation_id": I64, "agent_id": I64, "stream": I64, "stream_id": I64, "process_id": I64, "thread_id": I64, "symbol_id": I64,
        }
        times, joins = db.span("rocpd_kernel_dispatch", "K")
        start, end, pid, tid, agent, queue, stream = times.split(", ")
        sel = (f"K.guid, K.dispatch_id, {start}, {end}, K.private_segment_size, K.group_segment_size, "
               "K.workgroup_size_x, K.workgroup_size_y, K.workgroup_size_z, K.grid_size_x, K.grid_size_y, K.grid_size_z, K.event_id, "
               + (f"{db.corr()}, " if ev else "NULL, ")
               + f"{agent}, {queue}, {stream}, {pid}, {tid}, K.kernel_id")
        K = db.frame(f"SELECT {sel} FROM {{rocpd_kernel_dispatch}} K {joins} {ev}", cols)
        # symbols are few: read once and joined here, not repeated on every dispatch row by SQLite
        scols = {"symbol_id": I64, "guid": STR, "kernel_name": STR, "display_name": STR, "static_shared_mem_bytes": I64, "static_private_segment_size": I64,
                 "sgpr_count": I64, "arch_vgpr_count": I64, "accum_vgpr_count": I64, "kernarg_segment_size": I64, "symbol_extdata": STR}
        S = (db.frame("SELECT id, guid, kernel_name, display_name, group_segment_size, private_segment_size, sgpr_count, arch_vgpr_count, "
                      "accum_vgpr_count, kernarg_segment_size, extdata FROM {rocpd_info_kernel_symbol}", scols)
             if db.has("rocpd_info_kernel_symbol") else pl.DataFrame(schema=scols))
        K = K.join(S.unique(["symbol_id", "guid"], keep="first"), on=["symbol_id", "guid"], how="left")
        if not K.height:
            return None, None
        K = K.join(agents.select("agent_id", "guid", "device_id", pl.col("product_name").alias("device_name")), on=["agent_id", "guid"], how="left")
        # the symbol's own demangled name (extdata) first, then ours of its mangled name
        ext = map_unique(K["symbol_extdata"], lambda t: _strip_kd(_json(t).get("demangled_kernel_name")) or None)
        raw = map_unique(K["kernel_name"], _strip_kd)
        K = K.with_columns(_raw=raw, _dem=ext, _ours=map_unique(raw, lambda r: demangle(r) if r.startswith("_Z") else None))
        K = K.with_columns(name=pl.coalesce("_dem", "_ours", "display_name", "_raw"),
                           mangled_name=pl.when(pl.col("_raw").str.starts_with("_Z")).then(pl.col("_raw")))
        blocks = [(-(-pl.col(f"wi_{a}") // pl.col(f"block_{a}"))).alias(f"grid_{a}") for a in "xyz"]
        K = K.with_columns(blocks).sort(["start_ns", "dispatch_id"], nulls_last=True)
        K = K.with_columns(
            source=pl.lit("rocprof"), kernel_id=pl.int_range(0, K.height, dtype=I64), short_name=map_unique(K["name"], short_name),
            category=pl.lit("kernel_dispatch"), duration_ns=(pl.col("end_ns") - pl.col("start_ns")).cast(F64),
            grid_size=pl.col("grid_x") * pl.col("grid_y") * pl.col("grid_z"), block_size=pl.col("block_x") * pl.col("block_y") * pl.col("block_z"),
            registers_per_thread=pl.when(pl.col("arch_vgpr_count").is_not_null() | pl.col("accum_vgpr_count").is_not_null())
            .then(pl.col("arch_vgpr_count").fill_null(0) + pl.col("accum_vgpr_count").fill_null(0)),
            dynamic_shared_mem_bytes=pl.when(pl.col("shared_mem_bytes") >= pl.col("static_shared_mem_bytes"))
            .then(pl.col("shared_mem_bytes") - pl.col("static_shared_mem_bytes")),
            nvtx_range=pl.lit(None, dtype=STR),
        )
        # launch attributes no kernels column holds: kept per kernel for the metrics table
        launch_cols = ["kernel_id", "dispatch_id", "private_segment_size", "static_private_segment_size", "sgpr_count", "arch_vgpr_count",
                       "accum_vgpr_count", "kernarg_segment_size", "event_id", "guid"]
        launch_events = K.select(launch_cols)
        keep = ["source", "device_name", "device_id", "kernel_id", "name", "short_name", "mangled_name", "category", "process_id", "stream",
                "correlation_id", "start_ns", "end_ns", "duration_ns", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
                "grid_size", "block_size", "registers_per_thread", "shared_mem_bytes", "static_shared_mem_bytes", "dynamic_shared_mem_bytes", "nvtx_range"]
        return K.select(keep), launch_events

    @staticmethod
    def _unnamed(db: _Db) -> int:
        """Dispatches whose kernel_id no row of rocpd_info_kernel_symbol holds (a foreign key to a
        lost row): they loaded without a name, exit 0, nothing said (s19 hostile fuzz, the
        symbol rows deleted). Without the symbol table every dispatch is one."""
        sym = ("NOT EXISTS (SELECT 1 FROM {rocpd_info_kernel_symbol} S WHERE S.id = K.kernel_id AND S.guid = K.guid)"
               if db.has("rocpd_info_kernel_symbol") else "1")
        return db.frame(f"SELECT count(*) FROM {{rocpd_kernel_dispatch}} K WHERE K.kernel_id IS NOT NULL AND {sym}", {"n": I64})["n"][0]

    # -- API calls and markers ---------------------------------------------------------------
    def _ranges(self, db: _Db):
        if not db.has("rocpd_region") and not db.has("rocpd_sample"):
            return None, None
        has_ev = db.has("rocpd_event")
        cols = {"category": STR, "op": STR, "message": STR, "thread_id": I64, "process_id": I64, "start_ns": I64, "end_ns": I64, "correlation_id": I64}
        ev_join = ("LEFT JOIN {rocpd_event} E ON E.id = R.event_id AND E.guid = R.guid "
                   "LEFT JOIN {rocpd_string} C ON C.id = E.category_id AND C.guid = E.guid") if has_ev else ""
        # only marker events carry a message: other API calls skip the JSON parse
        msg = "CASE WHEN C.string LIKE '%MARKER%' AND json_valid(E.extdata) THEN json_extract(E.extdata, '$.message') END"
        ev_sel = f"C.string, N.string, {msg}, " if has_ev else "NULL, N.string, NULL, "
        parts = []
        if db.has("rocpd_region"):
            times, joins = db.span("rocpd_region", "R")
            start, end, pid, tid = times.split(", ")[:4]
            parts.append(db.frame(
                f"SELECT {ev_sel} {tid}, {pid}, {start}, {end}, {db.corr() if has_ev else 'NULL'} FROM {{rocpd_region}} R "
                f"LEFT JOIN {{rocpd_string}} N ON N.id = R.name_id AND N.guid = R.guid {joins} " + ev_join, cols))
        if db.has("rocpd_sample") and has_ev and db.has("rocpd_track"):
            # zero-length API calls and instant markers (roctxMark) are samples on a thread's track
            # (today's layout: a `timestamp` column and no name of their own; earlier: timestamp and name ids)
            sc = db.cols.get("rocpd_sample", set())
            ts, tjoin = ("S.timestamp", "") if "timestamp" in sc else ("TI.value", "LEFT JOIN {rocpd_timestamp} TI ON TI.id = S.timestamp_id AND TI.guid = S.guid ")
            name = ("LEFT JOIN {rocpd_string} N ON N.id = S.name_id AND N.guid = S.guid ", "N.string") if "name_id" in sc else ("", "NULL")
            parts.append(db.frame(
                "SELECT C.string, " + name[1] + f", {msg}, T.tid, T.pid, "
                f"{ts}, {ts}, {db.corr()} FROM {{rocpd_sample}} S "
                "JOIN {rocpd_event} E ON E.id = S.event_id AND E.guid = S.guid "
                "JOIN {rocpd_string} C ON C.id = E.category_id AND C.guid = E.guid "
                "LEFT JOIN {rocpd_track} T ON T.id = S.track_id AND T.guid = S.guid " + tjoin + name[0]
                + "WHERE C.string LIKE '%\\_API%' ESCAPE '\\'", cols))
        R = pl.concat(parts) if parts else None
        if R is None or not R.height:
            return None, None
        from profaudit.parsers.chrome_trace import _clean_api

        is_marker = pl.col("category").fill_null("").str.contains("MARKER")
        R = R.with_columns(
            kind=map_unique(R["category"], lambda c: _API_KIND.get(c, c.lower())),
            # a sample of today's layout has no name of its own: its category stands in
            name=pl.when(is_marker & pl.col("message").is_not_null()).then(pl.col("message"))
            .otherwise(pl.coalesce(map_unique(R["op"], _clean_api), pl.col("category"))),
        )
        return nest_api_ranges(R.select("kind", "name", "thread_id", "process_id", "start_ns", "end_ns", "correlation_id"), "rocpd")

    # -- counters and launch attributes ------------------------------------------------------
    @staticmethod
    def _metrics(db: _Db, kernels, launch_events) -> pl.DataFrame | None:
        if kernels is None or launch_events is None:
            return None
        frames = []
        attrs = {"dispatch_id": "", "private_segment_size": "byte", "static_private_segment_size": "byte", "sgpr_count": "register",
                 "arch_vgpr_count": "register", "accum_vgpr_count": "register", "kernarg_segment_size": "byte"}
        for col, unit in attrs.items():
            f = launch_events.filter(pl.col(col).is_not_null())
            if f.height:
                frames.append(f.select("kernel_id", metric=pl.lit(col), unit=pl.lit(unit), value=pl.col(col).cast(F64),
                                       value_int=pl.col(col), kind=pl.lit("launch")))
        if db.has("rocpd_pmc_event") and db.has("rocpd_info_pmc"):
            pmc = db.frame(
                "SELECT P.event_id, P.guid, I.name, I.units, P.value, I.instance_id, I.block FROM {rocpd_pmc_event} P "
                "JOIN {rocpd_info_pmc} I ON I.id = P.pmc_id AND I.guid = P.guid",
                {"event_id": I64, "guid": STR, "metric": STR, "unit": STR, "value": F64, "instance": I64, "section": STR})
            if pmc.height:
                pmc = pmc.join(launch_events.select("event_id", "guid", "kernel_id"), on=["event_id", "guid"], how="inner")
                frames.append(pmc.select("kernel_id", "metric", "unit", "value", "instance", "section", kind=pl.lit("metric")))
        if not frames:
            return None
        return pl.concat(frames, how="diagonal_relaxed").sort("kernel_id", "kind", "metric", maintain_order=True)

    # -- memory copies -----------------------------------------------------------------------
    @staticmethod
    def _copies(db: _Db, agents: pl.DataFrame) -> pl.DataFrame | None:
        if not db.has("rocpd_memory_copy"):
            return None
        ev = db.has("rocpd_event")
        times, joins = db.span("rocpd_memory_copy", "M")
        start, end, _pid, _tid, _agent, queue, stream = times.split(", ")
        M = db.frame(
            f"SELECT M.guid, N.string, M.size, {start}, {end}, M.src_agent_id, M.dst_agent_id, COALESCE({queue}, {stream}), {db.corr() if ev else 'NULL'} "
            f"FROM {{rocpd_memory_copy}} M LEFT JOIN {{rocpd_string}} N ON N.id = M.name_id AND N.guid = M.guid {joins} "
            + ("LEFT JOIN {rocpd_event} E ON E.id = M.event_id AND E.guid = M.guid" if ev else ""),
            {"guid": STR, "name": STR, "bytes": F64, "start_ns": I64, "end_ns": I64, "src": I64, "dst": I64, "stream": I64, "correlation_id": I64})
        if not M.height:
            return None
        a = agents.select("agent_id", "guid", "type", "device_id")
        M = (M.join(a.rename({"agent_id": "src", "type": "src_type", "device_id": "src_dev"}), on=["src", "guid"], how="left")
              .join(a.rename({"agent_id": "dst", "type": "dst_type", "device_id": "dst_dev"}), on=["dst", "guid"], how="left"))
        kind_of = {"CPU": "host", "GPU": "device"}
        M = M.sort("start_ns", nulls_last=True).with_columns(
            transfer_id=pl.int_range(0, M.height, dtype=I64), kind=pl.lit("memcpy"),
            direction=map_unique(M["name"], lambda n: _COPY_DIRECTION.get(n.replace("MEMORY_COPY_", ""), n.replace("MEMORY_COPY_", "") or None)),
            src_kind=pl.col("src_type").replace_strict(kind_of, default=None), dst_kind=pl.col("dst_type").replace_strict(kind_of, default=None),
            duration_ns=(pl.col("end_ns") - pl.col("start_ns")).cast(F64),
            device_id=pl.when(pl.col("dst_type") == "GPU").then(pl.col("dst_dev")).otherwise(pl.col("src_dev")),
        )
        M = M.with_columns(throughput_bytes_per_s=pl.when(pl.col("duration_ns") > 0).then(pl.col("bytes") / (pl.col("duration_ns") * 1e-9)))
        return M.select("transfer_id", "kind", "direction", "src_kind", "dst_kind", "name", "bytes", "start_ns", "end_ns", "duration_ns",
                        "throughput_bytes_per_s", "device_id", "stream", "correlation_id")

    # -- metadata ----------------------------------------------------------------------------
    @staticmethod
    def _metadata(db: _Db, agents: pl.DataFrame, kernels) -> dict[str, Any]:
        md: dict[str, Any] = {"tool": "rocprofv3 (rocpd)", "time_origin": "relative"}
        if db.has("rocpd_metadata"):
            tags = dict(db.frame("SELECT tag, value FROM {rocpd_metadata}", {"tag": STR, "value": STR}).iter_rows())
            md["rocpd_schema_version"] = tags.get("schema_version")
            md["rocpd_metadata"] = tags or None
        if db.has("rocpd_info_node"):
            nodes = db.frame("SELECT hostname, system_name, release, version FROM {rocpd_info_node}", {"hostname": STR, "system": STR, "release": STR, "version": STR})
            if nodes.height:
                md["host"] = nodes["hostname"][0]
                md["os"] = " ".join(x for x in (nodes["system"][0], nodes["release"][0]) if x) or None
        if db.has("rocpd_info_process"):
            procs = db.frame("SELECT pid, command FROM {rocpd_info_process}", {"pid": I64, "command": STR})
            if procs.height:
                md["command_line"] = procs["command"][0]
                md["process_ids"] = procs["pid"].to_list()
        gpus = agents.filter(pl.col("type") == "GPU").unique(["guid", "agent_id"], keep="first").sort("device_id", nulls_last=True)
        names = gpus["product_name"].unique(maintain_order=True).drop_nulls().to_list()
        md["device_name"] = names[0] if names else None
        md["device_count"] = gpus.unique("device_id").height or None
        md["agents"] = [{"device_id": r["device_id"], "product_name": r["product_name"], "gfx": r["gfx"],
                         **{k: v for k, v in _json(r["extdata"]).items() if k in ("cu_count", "simd_count", "max_engine_clk_fcompute", "wave_front_size", "max_waves_per_simd", "lds_size_in_kb")}}
                        for r in gpus.iter_rows(named=True)] or None
        if kernels is not None and len(names) > 1:
            md["notes"] = [f"{len(names)} GPU models in one database: {', '.join(names)}"]
        return md


PARSER = RocpdParser()
