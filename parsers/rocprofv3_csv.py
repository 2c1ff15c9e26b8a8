"""rocprofv3 CSV output (`rocprofv3 --output-format csv`): one file per record kind, named
`<prefix>kernel_trace.csv`, `hip_api_trace.csv`, `hsa_api_trace.csv`, `marker_api_trace.csv`,
`memory_copy_trace.csv`, `counter_collection.csv`, with `agent_info.csv` beside them.

Each file loads on its own (a folder of them loads as one profile per file, so nothing is counted
twice); `agent_info.csv` beside it names the devices. Columns, as rocprofiler-sdk writes them:
- kernel trace: Kind, Agent_Id, Queue_Id, Stream_Id, Thread_Id, Dispatch_Id, Kernel_Id,
  Kernel_Name, Correlation_Id, Start_Timestamp, End_Timestamp, LDS_Block_Size, Scratch_Size,
  VGPR_Count, Accum_VGPR_Count, SGPR_Count, Workgroup_Size_X/Y/Z, Grid_Size_X/Y/Z (older
  releases lack Stream_Id). Grid sizes count work-items (HSA), so blocks are ceil(grid /
  workgroup). LDS_Block_Size is the kernel symbol's static LDS rounded up to the allocation
  granularity, not the dispatch's LDS, so it is kept as the metric `lds_block_size` and the
  kernels' shared-memory columns stay null; Scratch_Size (the dispatch's private segment per
  work-item), SGPR_Count, Dispatch_Id and Kernel_Id are metrics too (kind `launch`). Registers
  per thread are VGPR_Count + Accum_VGPR_Count. A kernel's `nvtx_range` is the innermost marker
  range around its launching HIP call when `marker_api_trace.csv` and `hip_api_trace.csv` with
  the same prefix are beside it.
- API and marker traces: Domain, Function, Process_Id, Thread_Id, Correlation_Id,
  Start_Timestamp, End_Timestamp -> `ranges` (a marker range's Function is its message).
- memory copies: Kind, Direction, [Stream_Id,] Source_Agent_Id, Destination_Agent_Id,
  Correlation_Id, Start_Timestamp, End_Timestamp -> `transfers` (this CSV records no byte count).
- counter collection: one row per dispatch and counter (Grid_Size and Workgroup_Size are the
  total work-items and work-group size) -> one `kernels` row per dispatch and its counters as
  `metrics` (kind `metric`).
Files written by `rocpd convert -f csv` (a Guid column first, Lds_Block_Size / Vgpr_Count /
Sgpr_Count spelled in another case) read the same: column names are matched without regard to case.
Agent ids are printed as the tool's agent index (`--agent-index`: absolute by default, the
agent's node id); `device_id` keeps that number.

Traces run to millions of rows (a 200 MB kernel trace is 2 M dispatches): each file is scanned in
batches, keeping only the columns its record kind uses, cast to numbers as they are read; no Python
runs per row.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import polars as pl

from profaudit.errors import InputError, first_line
from profaudit.parsers.base import GZIP_MAGIC, Probe, ReadOptions, apply_device_option, map_unique, new_profile, open_maybe_gzip
from profaudit.parsers.completeness import CUT_LAST_LINE, mark_incomplete, unterminated_last_line
from profaudit.parsers.folderfiles import check_regular, file_beside, present
from profaudit.parsers.rocprof_sdk import _API_KIND, _COPY_DIRECTION, _strip_kd, nest_api_ranges
from profaudit.parsers.textsafe import POLARS_CSV_SPACE_BASE, POLARS_CSV_SPACE_PER_BYTE, check_room, polars_source

I64, F64, STR = pl.Int64, pl.Float64, pl.String
_KINDS = {
    "kernel": {"Kind", "Agent_Id", "Queue_Id", "Kernel_Name", "Correlation_Id", "Start_Timestamp", "End_Timestamp", "Grid_Size_X", "Workgroup_Size_X"},
    "counter": {"Correlation_Id", "Dispatch_Id", "Agent_Id", "Kernel_Name", "Counter_Name", "Counter_Value", "Start_Timestamp", "End_Timestamp"},
    "copy": {"Kind", "Direction", "Source_Agent_Id", "Destination_Agent_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp"},
    "api": {"Domain", "Function", "Process_Id", "Thread_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp"},
}
# what each kind's reader uses beyond what the sniff needs
_REQUIRED = {"kernel": {f"{w}_Size_{a}" for w in ("Workgroup", "Grid") for a in "XYZ"}, "counter": {"Grid_Size", "Workgroup_Size"},
             "copy": set(), "api": set()}
_SUFFIXES = ("kernel_trace.csv", "counter_collection.csv", "memory_copy_trace.csv", "hip_api_trace.csv", "hsa_api_trace.csv",
             "marker_api_trace.csv", "rccl_api_trace.csv", "scratch_memory_trace.csv", "memory_allocation_trace.csv")


# what each kind's reader takes from the file, and as what: a column not here is never held
_COLUMNS: dict[str, dict[str, tuple[str, ...]]] = {
    "kernel": {"ints": ("Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp",
                        "LDS_Block_Size", "Scratch_Size", "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count",
                        *(f"{w}_Size_{a}" for w in ("Workgroup", "Grid") for a in "XYZ")),
               "text": ("Agent_Id", "Kernel_Name")},
    "counter": {"ints": ("Correlation_Id", "Dispatch_Id", "Queue_Id", "Process_Id", "Thread_Id", "Grid_Size", "Workgroup_Size", "LDS_Block_Size",
                         "Scratch_Size", "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count", "Start_Timestamp", "End_Timestamp"),
                "floats": ("Counter_Value",), "text": ("Agent_Id", "Kernel_Name", "Counter_Name")},
    "copy": {"ints": ("Stream_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp"), "text": ("Direction", "Source_Agent_Id", "Destination_Agent_Id")},
    "api": {"ints": ("Process_Id", "Thread_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp"), "text": ("Domain", "Function")},
}


def _header(text: str) -> list[str]:
    first = text.split("\n", 1)[0].strip("\r\ufeff")
    try:
        return next(csv.reader([first]))
    except (csv.Error, StopIteration):
        return []


# every column this reader uses, in rocprofv3's spelling; `rocpd convert -f csv` writes some in
# another case (Lds_Block_Size, Vgpr_Count, Accum_Vgpr_Count, Sgpr_Count) and adds a Guid column
_NAMES = ("Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Process_Id", "Dispatch_Id", "Kernel_Id", "Kernel_Name", "Correlation_Id",
          "Start_Timestamp", "End_Timestamp", "LDS_Block_Size", "Scratch_Size", "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count",
          "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z", "Grid_Size", "Workgroup_Size",
          "Counter_Name", "Counter_Value", "Direction", "Source_Agent_Id", "Destination_Agent_Id", "Domain", "Function",
          "Node_Id", "Logical_Node_Id", "Agent_Type", "Product_Name", "Model_Name", "Name")
_CANON = {n.lower(): n for n in _NAMES}


def _canon(cols) -> list[str]:
    return [_CANON.get(c.lower(), c) for c in cols]


def _kind(cols) -> str | None:
    have = set(_canon(cols))
    for k, need in _KINDS.items():
        if need <= have:
            return k
    return None


def _agent_no(col: str) -> pl.Expr:
    """"Agent 4" or "4" -> 4."""
    return pl.col(col).str.extract(r"(\d+)", 1).cast(I64, strict=False)


def _prefix(path: Path) -> str:
    n = path.name
    for s in _SUFFIXES:
        if n.endswith(s):
            return n[: -len(s)]
    return n[: -len(".csv")] + "_" if n.endswith(".csv") else n


# kernel trace columns kept as launch metrics: (column, metric, unit), in metric-name order, the
# order of a kernel's metric rows
_LAUNCH_METRICS = sorted([("Dispatch_Id", "dispatch_id", ""), ("Kernel_Id", "kernel_symbol_id", ""), ("LDS_Block_Size", "lds_block_size", "byte"),
                          ("Scratch_Size", "private_segment_size", "byte"), ("SGPR_Count", "sgpr_count", "register"),
                          ("VGPR_Count", "arch_vgpr_count", "register"), ("Accum_VGPR_Count", "accum_vgpr_count", "register")], key=lambda t: t[1])


def _launch_metrics(K: pl.DataFrame) -> pl.DataFrame | None:
    """The launch metrics of kernels `K` (whose kernel_id is its row number), sorted by kernel_id
    and metric.

    Gathered in that order rather than sorted: 7 metrics of a 2 M dispatch trace are 14 M rows,
    and sorting them (or exploding per-kernel lists) doubled a 200 MB trace's peak memory."""
    present = [(c, m, u) for c, m, u in _LAUNCH_METRICS if c in K.columns]
    if not present:
        return None
    n, h = len(present), K.height
    vals = pl.concat([K[c] for c, _, _ in present])  # column-major: metric i of kernel k is at i * h + k
    row = pl.int_range(0, n * h, dtype=I64, eager=True)
    kernel, which = row // n, row % n
    del row
    value = vals.gather(which * h + kernel)
    M = pl.DataFrame({"kernel_id": kernel, "metric": pl.Series([m for _, m, _ in present], dtype=STR).gather(which),
                      "unit": pl.Series([u for _, _, u in present], dtype=STR).gather(which), "value": value.cast(F64), "value_int": value})
    if value.null_count():  # a filter copies every column: only when a value is missing
        M = M.filter(pl.col("value_int").is_not_null())
    return M.with_columns(kind=pl.lit("launch"))


# agent_info.csv past this is not one rocprofv3 wrote (see Rocprofv3CsvParser._agents)
AGENT_INFO_LIMIT = 16 << 20


class Rocprofv3CsvParser:
    name = "rocprofv3-csv"
    source = "rocprof"
    suffixes = (".csv", ".csv.gz")
    description = "rocprofv3 CSV output (kernel_trace, hip/hsa/marker_api_trace, memory_copy_trace, counter_collection; agent_info beside them)"

    def sniff(self, probe: Probe) -> bool:
        return not probe.is_dir and _kind(_header(probe.text)) is not None

    def read(self, path: Path, options: ReadOptions):
        path = Path(path)
        lf, cols = self._scan(path)
        kind = _kind(cols)
        if kind is None:
            raise InputError(path, "not a rocprofv3 CSV trace (its header names none of kernel_trace, *_api_trace, memory_copy_trace, counter_collection)")
        agents = self._agents(path)
        # each builder reads the rows itself, so that no caller holds the cast frame while the
        # builder copies it (a 2 M dispatch kernel trace's frame is 350 MB)
        tables: dict[str, Any] = {}
        if kind == "kernel":
            tables["kernels"], tables["metrics"] = self._kernels(path, self._rows(path, kind, lf, cols), agents)
        elif kind == "counter":
            tables["kernels"], tables["metrics"] = self._counters(path, self._rows(path, kind, lf, cols), agents)
        elif kind == "copy":
            tables["transfers"] = self._copies(path, self._rows(path, kind, lf, cols), agents)
        else:
            tables["ranges"], _ = self._ranges(path, self._rows(path, kind, lf, cols))
        gpus = agents.filter(pl.col("type") == "GPU") if agents is not None else None
        names = gpus["product_name"].drop_nulls().unique(maintain_order=True).to_list() if gpus is not None else []
        md: dict[str, Any] = {"tool": "rocprofv3 (csv)", "time_origin": "relative", "record_kind": kind,
                              "device_name": names[0] if len(names) == 1 else None, "device_count": gpus.height if gpus is not None and gpus.height else None,
                              "agent_info": bool(agents is not None)}
        if len(names) > 1:
            md["notes"] = [f"{len(names)} GPU models in agent_info.csv: {', '.join(names)}"]
        if unterminated_last_line(path):
            mark_incomplete(md, CUT_LAST_LINE)
        info = path.with_name(_prefix(path) + "agent_info.csv")
        if agents is not None and unterminated_last_line(info):
            # its last agent cut: the device names may lack that agent (a cut there loaded as whole)
            mark_incomplete(md, f"{info.name}: {CUT_LAST_LINE}")
        elif agents is not None and not agents.height:
            # rocprofv3 lists every agent, the CPUs at least: a header alone was cut after it
            mark_incomplete(md, f"{info.name}: a header without any agent row (cut short?)")
        apply_device_option(tables, md, options.device)
        return new_profile(path, self, tables, md)

    # -- reading ------------------------------------------------------------------------------
    @staticmethod
    def _scan(path: Path) -> tuple[pl.LazyFrame, list[str]]:
        """The file as a lazy all-text frame with canonical column names, and those names.

        Lazy so that `_typed` reads it in batches: a real kernel trace of 2 M dispatches (200 MB)
        held whole as text is ~0.9 GB before a single integer is cast."""
        try:
            with open(path, "rb") as fh:
                gz = fh.read(2) == GZIP_MAGIC
            if gz:  # polars scans plain files only; the text of a gzip file is read whole
                with open_maybe_gzip(path) as fh:
                    src: Any = fh.read()
                size = len(src)
            else:
                # a name polars cannot take (not UTF-8) gives the bytes, read whole like a gzip's text
                src, size = polars_source(path), path.stat().st_size
            # under an address-space limit a read polars has no room for aborts the process
            # (textsafe.POLARS_CSV_SPACE_PER_BYTE): one line instead
            check_room(path, size, "rocprofv3 CSV trace", POLARS_CSV_SPACE_PER_BYTE, POLARS_CSV_SPACE_BASE)
            # glob=False: a file name's [ ] * ? are its own characters, not a pattern
            lf = pl.scan_csv(src, infer_schema=False, truncate_ragged_lines=False, glob=False)
            cols = lf.collect_schema().names()
        except (pl.exceptions.ComputeError, pl.exceptions.NoDataError, UnicodeDecodeError, EOFError, OSError) as exc:
            raise InputError(path, f"not a readable rocprofv3 CSV: {first_line(exc, type(exc).__name__)}") from None
        canon = _canon(cols)
        if canon != cols and len(set(canon)) == len(cols):
            return lf.rename(dict(zip(cols, canon))), canon
        return lf, cols

    def _rows(self, path: Path, kind: str, lf: pl.LazyFrame, cols: list[str]) -> pl.DataFrame:
        """The rows of a `kind` file, with the columns its builder reads, typed; checked for rows
        and for the columns that builder needs."""
        df = self._typed(path, lf, cols, **_COLUMNS[kind])
        if not df.height:
            raise InputError(path, f"rocprofv3 {kind} CSV has a header but no rows")
        missing = sorted(_REQUIRED[kind] - set(cols))
        if missing:
            raise InputError(path, f"rocprofv3 {kind} CSV without its {', '.join(missing)} column(s)")
        return df

    @staticmethod
    def _typed(path: Path, lf: pl.LazyFrame, cols: list[str], ints=(), floats=(), text=()) -> pl.DataFrame:
        """The named columns that the file has, `ints` cast to Int64 and `floats` to Float64 as the
        file is read in batches (the streaming engine: no whole-file text frame), the others as text.
        A non-numeric cell is an error naming its column, data row and text, ints before floats."""
        have = set(cols)
        checks = [(c, I64, "an integer") for c in ints if c in have] + [(c, F64, "a number") for c in floats if c in have]
        exprs = [pl.col(c) for c in text if c in have]
        for c, dtype, _ in checks:
            s = pl.col(c).str.strip_chars()
            v = s.cast(dtype, strict=False)
            # a flag per column (a bit a row) keeps which cell failed without keeping its text
            exprs += [v.alias(c), (v.is_null() & s.ne("").fill_null(False)).alias("_bad " + c)]
        try:
            # without projection pushdown: a pushed-down projection parses only the selected fields
            # of a line, and a line with more fields than the header then loads without a word
            df = lf.select(exprs).collect(engine="streaming", optimizations=pl.QueryOptFlags(projection_pushdown=False))
            for c, _, what in checks:
                bad = df["_bad " + c]
                if bad.any():
                    i = int(bad.arg_max())
                    cell = lf.select(c).slice(i, 1).collect()[c][0]
                    raise InputError(path, f"column {c}, data row {i + 1}: {cell!r} is not {what}")
        except (pl.exceptions.ComputeError, pl.exceptions.NoDataError, UnicodeDecodeError, EOFError, OSError) as exc:
            raise InputError(path, f"not a readable rocprofv3 CSV: {first_line(exc, type(exc).__name__)}") from None
        return df.drop([f"_bad {c}" for c, _, _ in checks])

    def _agents(self, path: Path) -> pl.DataFrame | None:
        p = path.with_name(_prefix(path) + "agent_info.csv")
        if not present(p):
            return None
        # one that is a folder or a looping link is one line, not a profile without its device names
        check_regular(path.parent, p)
        # one row per agent (each CPU core and GPU of the node: hundreds at most, kilobytes), read
        # again for every trace beside it: a 200 MB blow-up (1.94 M agent rows) grew a fuzz
        # worker by 1.26 GB (fuzz_long seed 3103, rocprofv3-csv-dir #145). Refused from its size
        # (a regular file, checked above) before it is read
        size = p.stat().st_size
        if size > AGENT_INFO_LIMIT:
            from profaudit.parsers.textsafe import size_text

            raise InputError(p, f"agent_info.csv of {size_text(size)}: rocprofv3 writes one row per CPU core and GPU of the node (kilobytes); refused over {size_text(AGENT_INFO_LIMIT)}")
        lf, cols = self._scan(p)
        if not {"Node_Id", "Agent_Type"} <= set(cols):
            raise InputError(p, "agent_info.csv without Node_Id and Agent_Type columns")
        a = self._typed(p, lf, cols, ints=("Node_Id", "Logical_Node_Id"), text=("Agent_Type", "Product_Name", "Model_Name", "Name"))
        name = pl.coalesce([pl.col(c).replace("", None) for c in ("Product_Name", "Model_Name", "Name") if c in a.columns]) if any(
            c in a.columns for c in ("Product_Name", "Model_Name", "Name")) else pl.lit(None, dtype=STR)
        return a.select(node=pl.col("Node_Id"), type=pl.col("Agent_Type"), product_name=name)

    @staticmethod
    def _device_names(df: pl.DataFrame, agents: pl.DataFrame | None) -> pl.DataFrame:
        """device_name from agent_info: the agent whose node id is the printed index ("Agent N",
        the default absolute indexing), else the one GPU model when every GPU is the same ("GPU N"
        counts GPUs only, so it is no node id)."""
        if agents is None:
            return df.with_columns(device_name=pl.lit(None, dtype=STR))
        gpus = agents.filter(pl.col("type") == "GPU")
        models = gpus["product_name"].drop_nulls().unique().to_list()
        by_node = agents.select(pl.col("node").alias("device_id"), pl.col("product_name").alias("_by_node")).unique("device_id")
        df = df.join(by_node, on="device_id", how="left")
        node_indexed = pl.col("Agent_Id").str.extract(r"^\s*([A-Za-z]*)", 1).is_in(["", "Agent"])
        one = pl.lit(models[0] if len(models) == 1 else None, dtype=STR)
        return df.with_columns(device_name=pl.when(node_indexed).then(pl.coalesce("_by_node", one)).otherwise(one)).drop("_by_node")

    # -- kernels -----------------------------------------------------------------------------
    def _kernels(self, path, df, agents):
        from profaudit.names import demangle, short_name

        K = df.with_columns(device_id=_agent_no("Agent_Id"))
        del df  # its text columns go before the sort below copies K
        K = self._device_names(K, agents)
        raw = map_unique(K["Kernel_Name"], _strip_kd)
        K = K.with_columns(_raw=raw, name=map_unique(raw, lambda n: demangle(n) if n.startswith("_Z") else n)).drop("Agent_Id", "Kernel_Name")
        K = K.sort(["Start_Timestamp", "Correlation_Id"], nulls_last=True)
        has = lambda c: pl.col(c) if c in K.columns else pl.lit(None, dtype=I64)  # noqa: E731
        K = K.with_columns(
            source=pl.lit("rocprof"), kernel_id=pl.int_range(0, K.height, dtype=I64), short_name=map_unique(K["name"], short_name),
            mangled_name=pl.when(pl.col("_raw").str.starts_with("_Z")).then(pl.col("_raw")), category=pl.lit("kernel_dispatch"),
            stream=has("Queue_Id"), correlation_id=has("Correlation_Id"), start_ns=pl.col("Start_Timestamp"), end_ns=pl.col("End_Timestamp"),
            duration_ns=(pl.col("End_Timestamp") - pl.col("Start_Timestamp")).cast(F64),
            **{f"block_{a.lower()}": pl.col(f"Workgroup_Size_{a}") for a in "XYZ"},
            **{f"grid_{a.lower()}": -(-pl.col(f"Grid_Size_{a}") // pl.col(f"Workgroup_Size_{a}")) for a in "XYZ"},
            registers_per_thread=pl.when(has("VGPR_Count").is_not_null()).then(has("VGPR_Count") + has("Accum_VGPR_Count").fill_null(0)),
        ).with_columns(grid_size=pl.col("grid_x") * pl.col("grid_y") * pl.col("grid_z"), block_size=pl.col("block_x") * pl.col("block_y") * pl.col("block_z"))
        metrics = _launch_metrics(K)
        keep = ["source", "device_name", "device_id", "kernel_id", "name", "short_name", "mangled_name", "category", "stream", "correlation_id",
                "start_ns", "end_ns", "duration_ns", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "grid_size", "block_size",
                "registers_per_thread"]
        K = K.select(keep)
        launch = self._launch(path, K)
        if launch is not None and launch.height:
            K = K.join(launch, on="correlation_id", how="left")  # correlation ids are unique in `launch`: no row is repeated
        return K, metrics

    def _launch(self, path: Path, K: pl.DataFrame) -> pl.DataFrame | None:
        """(correlation_id, nvtx_range) from the marker and HIP API traces beside the kernel trace."""
        pre = _prefix(path)
        parts = []
        for name in ("marker_api_trace.csv", "hip_api_trace.csv"):
            p = path.with_name(pre + name)
            if file_beside(p):
                lf, cols = self._scan(p)
                if _kind(cols) == "api":
                    d = self._typed(p, lf, cols, **_COLUMNS["api"])
                    if d.height:
                        parts.append(self._api_rows(p, d))
                    del d  # its Domain and Function text is not held while the ranges nest
        if len(parts) < 2:
            return None  # without both, no kernel can be placed inside a marker range
        _, launch = nest_api_ranges(pl.concat(parts), "rocprofv3", ranges=False)
        return launch

    def _api_rows(self, path: Path, df: pl.DataFrame) -> pl.DataFrame:
        from profaudit.parsers.chrome_trace import _clean_api

        A = df
        marker = pl.col("Domain").str.contains("MARKER")
        return A.select(
            kind=map_unique(A["Domain"], lambda d: _API_KIND.get(d, d.lower())),
            name=pl.when(marker).then(pl.col("Function")).otherwise(map_unique(A["Function"], _clean_api)),
            thread_id=pl.col("Thread_Id"), process_id=pl.col("Process_Id"), start_ns=pl.col("Start_Timestamp"), end_ns=pl.col("End_Timestamp"),
            correlation_id=pl.col("Correlation_Id"))

    def _ranges(self, path, df):
        R = self._api_rows(path, df)
        del df  # the typed rows (254 MB for 3.8 M marker rows) are not held while the ranges nest
        return nest_api_ranges(R, "rocprofv3")

    # -- counters ----------------------------------------------------------------------------
    def _counters(self, path, df, agents):
        from profaudit.names import demangle, short_name

        C = df  # Counter_Value is already a float (`_typed`)
        # columns older releases lack read as unknown
        C = C.with_columns([pl.lit(None, dtype=I64).alias(c) for c in ("Queue_Id", "Process_Id", "VGPR_Count", "Accum_VGPR_Count") if c not in C.columns])
        C = C.with_columns(value=pl.col("Counter_Value"), device_id=_agent_no("Agent_Id"))
        key = ["Dispatch_Id", "Correlation_Id"]
        K = C.unique(key, keep="first", maintain_order=True).sort(["Start_Timestamp", "Dispatch_Id"], nulls_last=True)
        K = self._device_names(K, agents)
        raw = map_unique(K["Kernel_Name"], _strip_kd)
        K = K.with_columns(_raw=raw, name=map_unique(raw, lambda n: demangle(n) if n.startswith("_Z") else n))
        K = K.with_columns(
            source=pl.lit("rocprof"), kernel_id=pl.int_range(0, K.height, dtype=I64), short_name=map_unique(K["name"], short_name),
            mangled_name=pl.when(pl.col("_raw").str.starts_with("_Z")).then(pl.col("_raw")), category=pl.lit("kernel_dispatch"),
            process_id=pl.col("Process_Id"), stream=pl.col("Queue_Id"), correlation_id=pl.col("Correlation_Id"),
            start_ns=pl.col("Start_Timestamp"), end_ns=pl.col("End_Timestamp"), duration_ns=(pl.col("End_Timestamp") - pl.col("Start_Timestamp")).cast(F64),
            block_size=pl.col("Workgroup_Size"), grid_size=-(-pl.col("Grid_Size") // pl.col("Workgroup_Size")),
            registers_per_thread=pl.when(pl.col("VGPR_Count").is_not_null()).then(pl.col("VGPR_Count") + pl.col("Accum_VGPR_Count").fill_null(0)),
        )
        M = C.join(K.select(*key, "kernel_id"), on=key, how="left").select("kernel_id", metric=pl.col("Counter_Name"), unit=pl.lit(""), value="value", kind=pl.lit("metric"))
        keep = ["source", "device_name", "device_id", "kernel_id", "name", "short_name", "mangled_name", "category", "process_id", "stream",
                "correlation_id", "start_ns", "end_ns", "duration_ns", "grid_size", "block_size", "registers_per_thread"]
        return K.select(keep), M.sort("kernel_id", maintain_order=True)

    # -- copies ------------------------------------------------------------------------------
    def _copies(self, path, df, agents):
        T = df.with_columns(src=_agent_no("Source_Agent_Id"), dst=_agent_no("Destination_Agent_Id"))
        types = agents.select("node", "type") if agents is not None else pl.DataFrame(schema={"node": I64, "type": STR})
        T = (T.join(types.rename({"node": "src", "type": "src_type"}), on="src", how="left")
              .join(types.rename({"node": "dst", "type": "dst_type"}), on="dst", how="left"))
        kind_of = {"CPU": "host", "GPU": "device"}
        T = T.sort("Start_Timestamp", nulls_last=True)
        return T.select(
            transfer_id=pl.int_range(0, T.height, dtype=I64), kind=pl.lit("memcpy"),
            direction=map_unique(T["Direction"], lambda n: _COPY_DIRECTION.get(n.replace("MEMORY_COPY_", ""), n.replace("MEMORY_COPY_", "") or None)),
            src_kind=pl.col("src_type").replace_strict(kind_of, default=None), dst_kind=pl.col("dst_type").replace_strict(kind_of, default=None),
            name=pl.col("Direction"), start_ns=pl.col("Start_Timestamp"), end_ns=pl.col("End_Timestamp"),
            duration_ns=(pl.col("End_Timestamp") - pl.col("Start_Timestamp")).cast(F64),
            # the GPU end of the copy: the destination unless it is the host
            device_id=pl.when(pl.col("dst_type") == "CPU").then(pl.col("src")).otherwise(pl.col("dst")),
            stream=pl.col("Stream_Id") if "Stream_Id" in T.columns else pl.lit(None, dtype=I64), correlation_id=pl.col("Correlation_Id"),
        )


PARSER = Rocprofv3CsvParser()
