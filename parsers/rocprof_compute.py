"""rocprofiler-compute (formerly Omniperf) workload folders: `workloads/<name>/<arch>/` holding
`pmc_perf.csv` (one row per kernel dispatch, every counter it collected as a column), `sysinfo.csv`
(host and GPU) and, when its roofline benchmark ran, `roofline.csv` (measured ceilings).

pmc_perf.csv comes in two generations:
- Omniperf 1.x (rocprof v1): Index, KernelName, gpu-id, queue-id, queue-index, pid, tid, grd, wgr,
  lds, scr, vgpr, sgpr, fbar, sig, obj, <counters>, DispatchNs, BeginNs, EndNs, CompleteNs;
- rocprofiler-compute 2.x/3.x (rocprofv3): Dispatch_ID, Kernel_Name, GPU_ID, Queue_ID, PID, TID,
  Grid_Size, Workgroup_Size, LDS_Per_Workgroup, Scratch_Per_Workitem, Arch_VGPR, Accum_VGPR, SGPR,
  Wave_Size, Correlation_ID, Start_Timestamp, End_Timestamp, <counters>.
Grid sizes count work-items and workgroup sizes work-items per group (both as one total), so
`grid_size` (blocks) is ceil(grid / workgroup) and `block_size` the workgroup size. The LDS column
is the allocation per workgroup (rounded to the LDS granularity), scratch is per work-item: both
are `metrics` (kind `launch`) like the SGPR count; registers per thread are VGPRs + AGPRs.
Durations are end - begin of each dispatch as profiled: the tool replays the application once per
counter pass with dispatches serialised, so they include counter-collection overhead (metadata
says so). Every counter column becomes a `metrics` row of its kernel (kind `metric`); a `[n]`
suffix (TCC_HIT[3]) is the instance. On CDNA GPUs the kernels also get FLOPs per precision
from the VALU and MFMA instruction counters and, on gfx90a, DRAM/L2/L1 bytes from the request
counters, by the tool's own roofline conventions (see `_work`), so they can be placed on a
roofline. `sysinfo.csv` fills host, ROCm version and device (its
marketing name where recorded, else its short name such as `mi200`, which the device specs then
report as ambiguous rather than guess). `roofline.csv` is read by `profaudit.measured` and kept in
metadata under `measured_ceilings` (`profaudit roofline --ceilings FOLDER` draws against it).
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import polars as pl

from profaudit.errors import InputError, first_line
from profaudit.parsers.base import Probe, ReadOptions, apply_device_option, map_unique, new_profile
from profaudit.parsers.textsafe import polars_source
from profaudit.parsers.completeness import CUT_LAST_LINE, mark_incomplete, unterminated_last_line
from profaudit.parsers.folderfiles import check_regular, present
from profaudit.parsers.rocprof_sdk import _strip_kd

I64, F64, STR = pl.Int64, pl.Float64, pl.String
# the two generations' dispatch columns -> one name each
_ALIASES = {
    "dispatch": ("Dispatch_ID", "Index"), "kernel": ("Kernel_Name", "KernelName"), "gpu": ("GPU_ID", "gpu-id"),
    "queue": ("Queue_ID", "queue-id"), "pid": ("PID", "pid"), "tid": ("TID", "tid"), "grid": ("Grid_Size", "grd"),
    "wg": ("Workgroup_Size", "wgr"), "lds": ("LDS_Per_Workgroup", "lds"), "scratch": ("Scratch_Per_Workitem", "scr"),
    "vgpr": ("Arch_VGPR", "vgpr"), "agpr": ("Accum_VGPR", "accum_vgpr"), "sgpr": ("SGPR", "sgpr"), "wave": ("Wave_Size", "wave_size"),
    "corr": ("Correlation_ID", "Correlation_Id"), "start": ("Start_Timestamp", "BeginNs"), "end": ("End_Timestamp", "EndNs"),
}
# columns that describe the dispatch rather than count events
_NOT_COUNTERS = {c for names in _ALIASES.values() for c in names} | {
    "queue-index", "fbar", "sig", "obj", "DispatchNs", "CompleteNs", "Node", "Queue_Index", "Signal", "Object", "Kernel_ID", "Agent_ID"}
_NOT_COUNTERS |= {"XCC_Index", "wave_size"}
_INSTANCE = re.compile(r"^(?P<name>.+)\[(?P<i>\d+)\]$")
# merging the counter passes repeats the dispatch columns with a pass suffix (Wave_Size_3, obj_7)
_PASS_COPY = re.compile(r"^(?P<base>.+)_\d+$")


# hardware counter names are block-prefixed upper case (SQ_WAVES, TCC_HIT[3], TCP_TOTAL_READ_sum);
# descriptive columns (Kernel_Name, sig, obj) are not
_COUNTER_NAME = re.compile(r"^[A-Z][A-Z0-9]*_[A-Za-z0-9_]*(\[\d+\])?$")


def _is_counter(col: str) -> bool:
    m = _PASS_COPY.match(col)
    return (col not in _NOT_COUNTERS and not (m and m.group("base") in _NOT_COUNTERS)
            and bool(_COUNTER_NAME.match(col)) and col.split("_")[0].isupper())


# FLOPs and bytes from the counters, by rocprofiler-compute's own roofline conventions (CDNA, wave64):
# a VALU instruction does 64 lanes of work, FMA counting 2 and a transcendental 1; one MFMA "MOPS"
# unit is 512 operations. Bytes follow its gfx90a (MI200) formulas with 64-byte L1/L2 lines and
# 32/64-byte HBM requests; other architectures' request sizes differ, so their bytes stay null.
_VALU = {"fp16": "F16", "fp32": "F32", "fp64": "F64"}
_MFMA = {"fp16_tensor": "F16", "bf16_tensor": "BF16", "fp64_tensor": "F64", "int8_tensor": "I8", "fp8_tensor": "F8"}
_CDNA = re.compile(r"^gfx9(08|0a|4\d|50)$")


def _work(K: pl.DataFrame, arch: str | None) -> tuple[pl.DataFrame | None, list[str]]:
    """flops_* and *_bytes columns derived from the counters (None where they were not collected)."""
    num = lambda c: pl.col(c).cast(F64, strict=False)  # noqa: E731
    if not arch or not _CDNA.match(arch):
        return None, [f"no FLOPs or bytes derived: counter conventions known for CDNA (gfx908, gfx90a, gfx94x, gfx950), not {arch or 'an unnamed architecture'}"]
    exprs, why = [], []
    valu = lambda t: [f"SQ_INSTS_VALU_{op}_{t}" for op in ("ADD", "MUL", "FMA", "TRANS")]  # noqa: E731
    for prec, t in _VALU.items():
        a, m, f, tr = valu(t)
        if all(c in K.columns for c in (a, m, f, tr)):
            exprs.append((64 * (num(a) + num(m) + 2 * num(f) + num(tr))).alias(f"flops_{prec}"))
    for prec, t in _MFMA.items():
        c = f"SQ_INSTS_VALU_MFMA_MOPS_{t}"
        if c in K.columns:
            exprs.append((512 * num(c)).alias(f"flops_{prec}"))
    D = K.select(pl.int_range(0, K.height).alias("_n"))
    if exprs:
        D = K.select(exprs)
        typed = pl.sum_horizontal(D.columns)
        f32 = "SQ_INSTS_VALU_MFMA_MOPS_F32"
        mfma32 = (512 * K[f32].cast(F64, strict=False)) if f32 in K.columns else pl.Series([0.0] * K.height)
        D = D.with_columns(flops_total=typed + mfma32, flops_method=pl.lit("rocprof-compute counters"))
        # FP32 matrix FLOPs have no precision column: such kernels keep only the untyped total, so
        # no roofline mistakes a partial typed sum for their work
        D = D.with_columns([pl.when(mfma32 > 0).then(None).otherwise(pl.col(c)).alias(c) for c in D.columns if c.startswith("flops_") and c != "flops_total"])
        if (mfma32 > 0).any():
            why.append("kernels with FP32 MFMA work carry FLOPs as an untyped total (profaudit has no fp32 matrix precision)")
    else:
        why.append("no FLOPs derived: the VALU and MFMA instruction counters were not collected")
    if arch == "gfx90a":
        need = ["TCC_EA_RDREQ_32B_sum", "TCC_EA_RDREQ_sum", "TCC_EA_WRREQ_64B_sum", "TCC_EA_WRREQ_sum", "TCP_TCC_READ_REQ_sum", "TCP_TCC_WRITE_REQ_sum",
                "TCP_TCC_ATOMIC_WITH_RET_REQ_sum", "TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum", "TCP_TOTAL_CACHE_ACCESSES_sum"]
        if all(c in K.columns for c in need):
            b = K.select(
                dram_bytes=32 * num("TCC_EA_RDREQ_32B_sum") + 64 * (num("TCC_EA_RDREQ_sum") - num("TCC_EA_RDREQ_32B_sum"))
                + 64 * num("TCC_EA_WRREQ_64B_sum") + 32 * (num("TCC_EA_WRREQ_sum") - num("TCC_EA_WRREQ_64B_sum")),
                l2_bytes=64 * (num("TCP_TCC_READ_REQ_sum") + num("TCP_TCC_WRITE_REQ_sum") + num("TCP_TCC_ATOMIC_WITH_RET_REQ_sum")
                               + num("TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum")),
                l1_bytes=64 * num("TCP_TOTAL_CACHE_ACCESSES_sum"), dram_bytes_method=pl.lit("tool"))
            D = pl.concat([D, b], how="horizontal")
        else:
            why.append("no bytes derived: the TCC_EA / TCP_TCC request counters were not all collected")
    else:
        why.append(f"no bytes derived: rocprofiler-compute's request sizes are known here for gfx90a only, not {arch}")
    D = D.drop("_n", strict=False)
    return (D if D.width else None), why


# pmc_perf.csv size beyond which the read is refused (a 50 MB file peaked at 1.3 GB RSS, 200 MB at ~5 GB)
PMC_LIMIT = 64 << 20


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0  # missing or unreadable: `_csv` says so


def _col(df: pl.DataFrame, key: str) -> str | None:
    return next((c for c in _ALIASES[key] if c in df.columns), None)


class RocprofComputeParser:
    name = "rocprof-compute"
    source = "rocprof"
    suffixes = ("/",)
    description = "rocprofiler-compute / Omniperf workload folder (pmc_perf.csv, sysinfo.csv, roofline.csv): kernels, counters, measured ceilings"

    def sniff(self, probe: Probe) -> bool:
        if not probe.is_dir:
            return False
        return (probe.path / "pmc_perf.csv").is_file() and (probe.path / "sysinfo.csv").is_file()

    def read(self, path: Path, options: ReadOptions):
        from profaudit.names import demangle, short_name

        path = Path(path)
        size = _size(path / "pmc_perf.csv")
        if size > PMC_LIMIT:
            # every dispatch's every counter becomes a metrics row (~40 bytes of file each): a 200 MB
            # file is ~25 million rows and needed ~5 GB; up to the limit the read stays under ~1.7 GB
            raise InputError(path / "pmc_perf.csv", f"{size / (1 << 20):.0f} MiB: over the {PMC_LIMIT >> 20} MiB of counter table this "
                             "reader holds in memory; profile fewer dispatches (rocprof-compute --kernel / --dispatch)")
        pmc = self._csv(path / "pmc_perf.csv")
        need = {k: _col(pmc, k) for k in ("kernel", "grid", "wg", "start", "end")}
        missing = [k for k, c in need.items() if c is None]
        if missing:
            raise InputError(path / "pmc_perf.csv", f"not a rocprofiler-compute pmc_perf.csv: no {' / '.join(_ALIASES[missing[0]])} column")
        if not pmc.height:
            raise InputError(path / "pmc_perf.csv", "pmc_perf.csv has a header but no dispatches (nothing was profiled?)")
        cols = {k: _col(pmc, k) for k in _ALIASES}
        ints = [c for k, c in cols.items() if c is not None and k not in ("kernel",)]
        K = pmc.with_columns([pl.col(c).str.strip_chars().cast(I64, strict=False).alias(c) for c in ints])
        for c in ints:
            bad = K[c].is_null() & pmc[c].str.strip_chars().ne("").fill_null(False)
            if bad.any():
                i = int(bad.arg_max())
                raise InputError(path / "pmc_perf.csv", f"column {c}, dispatch row {i + 1}: {pmc[c][i]!r} is not an integer")
        c = lambda k: pl.col(cols[k]) if cols[k] is not None else pl.lit(None, dtype=I64)  # noqa: E731
        sys = self._sysinfo(path / "sysinfo.csv")
        device = sys.get("device_name")
        raw = map_unique(K[cols["kernel"]].str.strip_chars(), lambda n: _strip_kd(re.sub(r"\s*(\[clone \.kd\]|\(\.kd\))$", "", n)))
        K = K.with_columns(_raw=raw).with_columns(
            _row=pl.int_range(0, K.height, dtype=I64),
            name=map_unique(raw, lambda n: demangle(n) if n.startswith("_Z") else n),
            mangled_name=pl.when(pl.col("_raw").str.starts_with("_Z")).then(pl.col("_raw")),
        ).sort([cols["start"], "_row"], nulls_last=True)
        K = K.with_columns(kernel_id=pl.int_range(0, K.height, dtype=I64))
        kernels = K.select(
            source=pl.lit("rocprof-compute"), device_name=pl.lit(device, dtype=STR), device_id=c("gpu"), kernel_id="kernel_id", name="name",
            short_name=map_unique(K["name"], short_name), mangled_name="mangled_name", category=pl.lit("kernel_dispatch"),
            process_id=c("pid"), stream=c("queue"), correlation_id=c("corr"), start_ns=c("start"), end_ns=c("end"),
            duration_ns=(c("end") - c("start")).cast(F64), block_size=c("wg"),
            grid_size=pl.when(c("wg") > 0).then(-(-c("grid") // c("wg"))),
            registers_per_thread=pl.when(c("vgpr").is_not_null()).then(c("vgpr") + c("agpr").fill_null(0)),
        )
        metrics = self._metrics(path, pmc, K, cols)
        derived, why = _work(K, sys.get("gpu_arch"))
        kernels = pl.concat([kernels, derived], how="horizontal") if derived is not None else kernels
        measured = None
        # a roofline.csv that is a folder or a looping link is one line, not a run without ceilings
        if present(path / "roofline.csv") and check_regular(path, path / "roofline.csv"):
            from profaudit.measured import as_metadata, read_roofline_csv

            measured = as_metadata(read_roofline_csv(path / "roofline.csv"))
        md: dict[str, Any] = {
            "tool": "rocprofiler-compute", **{k: v for k, v in sys.items() if k != "device_name"}, "device_name": device,
            "workload": (sys.get("sysinfo") or {}).get("workload_name") or path.parent.name, "measured_ceilings": measured,
            "notes": ["kernel times are from the counter-collection passes (dispatches serialised, profiling overhead included), not an unperturbed run",
                      *why],
        }
        for f in ("pmc_perf.csv", "sysinfo.csv", "roofline.csv"):
            if (path / f).is_file() and unterminated_last_line(path / f):
                mark_incomplete(md, f"{f}: {CUT_LAST_LINE}")
        tables = {"kernels": kernels, "metrics": metrics}
        apply_device_option(tables, md, options.device)
        return new_profile(path, self, tables, md)

    @staticmethod
    def _csv(p: Path) -> pl.DataFrame:
        if not p.is_file():
            raise InputError(p, "missing from the workload folder")
        try:
            return pl.read_csv(polars_source(p), infer_schema=False)
        except (pl.exceptions.ComputeError, pl.exceptions.NoDataError, OSError) as exc:
            raise InputError(p, f"not a readable CSV: {first_line(exc, type(exc).__name__)}") from None

    def _sysinfo(self, p: Path) -> dict[str, Any]:
        s = self._csv(p)
        if not s.height:
            raise InputError(p, "sysinfo.csv has a header but no row")
        r = {k: (v.strip() if isinstance(v, str) else v) for k, v in s.row(0, named=True).items()}
        pick = lambda *ks: next((r[k] for k in ks if r.get(k)), None)  # noqa: E731
        # a plain decimal only: "[\d.]+" let "." and "1.2.3" through to float() (fuzzing: the catch-all)
        num = lambda *ks: (lambda v: float(v) if v is not None and re.fullmatch(r"\d+(?:\.\d*)?|\.\d+", v) else None)(pick(*ks))  # noqa: E731
        return {
            "device_name": pick("gpu_marketing_name", "product_name", "gpu_model", "name"),
            "gpu_arch": pick("gpu_arch", "gpu_soc"),
            "host": pick("hostname", "host_name"),
            "host_cpu": pick("cpu_model", "host_cpu"),
            "cuda_version": pick("rocm_version", "host_rocmver"),
            "capture_time": pick("date"),
            "command_line": pick("command"),
            "compute_units": num("cu_per_gpu", "numCU"),
            "max_sclk_mhz": num("max_sclk", "sclk"),
            "cur_sclk_mhz": num("cur_sclk"),
            "mclk_mhz": num("max_mclk", "mclk"),
            "sysinfo": r,
        }

    @staticmethod
    def _metrics(path: Path, pmc: pl.DataFrame, K: pl.DataFrame, cols: dict) -> pl.DataFrame | None:
        launch = {"lds": ("lds_per_workgroup", "byte"), "scratch": ("scratch_per_workitem", "byte"), "sgpr": ("sgpr_count", "register"),
                  "vgpr": ("arch_vgpr_count", "register"), "agpr": ("accum_vgpr_count", "register"), "wave": ("wave_size", "thread"),
                  "dispatch": ("dispatch_id", "")}
        frames = [K.filter(pl.col(cols[k]).is_not_null()).select("kernel_id", metric=pl.lit(m), unit=pl.lit(u), value=pl.col(cols[k]).cast(F64),
                                                                   value_int=pl.col(cols[k]), kind=pl.lit("launch"))
                  for k, (m, u) in launch.items() if cols.get(k)]
        counters = []
        for col in filter(_is_counter, pmc.columns):
            text = pmc[col].str.strip_chars()
            filled = text.ne("").fill_null(False)
            parsed = text.cast(F64, strict=False).is_not_null()
            if (filled & ~parsed).any():
                i = int((filled & ~parsed).arg_max())
                raise InputError(path / "pmc_perf.csv", f"counter {col}, dispatch row {i + 1}: {pmc[col][i]!r} is not a number")
            counters.append(col)
        # one counter at a time, its name and instance split once per column: unpivoting the text of
        # every counter first and splitting the column name on every row of that long table took
        # ~5 GB for a 200 MB pmc_perf.csv (fuzzing, a size blow-up); same rows, same order
        for col in counters:
            m = _INSTANCE.match(col)
            metric, instance = (m.group("name"), int(m.group("i"))) if m else (col, None)
            # every non-empty cell parses (checked above), so "non-empty" is "parsed"
            frames.append(K.select("kernel_id", value=pl.col(col).str.strip_chars().cast(F64, strict=False))
                          .filter(pl.col("value").is_not_null())
                          .select("kernel_id", pl.lit(metric).alias("metric"), pl.lit("").alias("unit"), "value",
                                  pl.lit(instance, dtype=I64).alias("instance"), pl.lit("metric").alias("kind")))
        return pl.concat(frames, how="diagonal_relaxed") if frames else None


PARSER = RocprofComputeParser()
