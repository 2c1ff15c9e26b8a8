"""Every normalised table and column, declared once.

Parsers rename vendor fields into these columns and nowhere else. Column names carry their unit
(`duration_ns`, `dram_read_bytes`); the `unit` field repeats it in a form a renderer can print.
Missing values are null, never zero: `conform()` fills absent columns with typed nulls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

import polars as pl

SCHEMA_VERSION = "1.0"

# Precisions that FLOP columns and device peaks share. `_tensor` means the matrix/tensor-core
# pipe; the bare names are the vector (CUDA-core / SIMD) pipes.
PRECISIONS: tuple[str, ...] = (
    "fp64",
    "fp32",
    "fp16",
    "bf16",
    "fp64_tensor",
    "tf32_tensor",
    "fp16_tensor",
    "bf16_tensor",
    "fp8_tensor",
    "int8_tensor",
    "fp4_tensor",
)

# Memory levels, outermost first. Device specs publish bandwidth per level with the same keys.
MEMORY_LEVELS: tuple[str, ...] = ("dram", "l2", "l1")


@dataclass(frozen=True)
class Column:
    name: str
    dtype: pl.DataType
    unit: str
    meaning: str


_EMPTY: dict["Table", pl.DataFrame] = {}


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    meaning: str

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def polars_schema(self) -> dict[str, pl.DataType]:
        return {c.name: c.dtype for c in self.columns}

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"table {self.name!r} has no column {name!r}")

    def empty(self) -> pl.DataFrame:
        # Building a frame from the schema costs ~0.1 ms, and every profile asks for the empties of
        # all its absent tables (a fleet ingest: thousands of times). The frame is built once per
        # table; clear() hands out a new frame each time, so no caller can change the cached one.
        cached = _EMPTY.get(self)
        if cached is None:
            cached = _EMPTY[self] = pl.DataFrame(schema=self.polars_schema)
        return cached.clear()


S, I, F, B = pl.Utf8, pl.Int64, pl.Float64, pl.Boolean


def _c(name: str, dtype, unit: str, meaning: str) -> Column:
    return Column(name, dtype, unit, meaning)


_PROFILE = _c("profile_id", S, "", "key of the profile this row belongs to (same key in every table)")

KERNELS = Table(
    "kernels",
    (
        _PROFILE,
        _c("source", S, "", "tool the row came from: ncu, nsys, kineto, chrome, xla, neuron, proton, ..."),
        _c("device_name", S, "", "device name as the tool reported it"),
        _c("device_id", I, "", "device ordinal or id as the tool reported it"),
        _c("kernel_id", I, "", "row key, unique within the profile, in launch order"),
        _c("name", S, "", "full (demangled) kernel or device-op name"),
        _c("short_name", S, "", "base name: no return type, parameters or template arguments"),
        _c("mangled_name", S, "", "mangled name where the tool recorded it"),
        _c("op_name", S, "", "framework or compiler op that issued the kernel (HLO op, torch op, NKI instruction)"),
        _c("module", S, "", "program/module the kernel belongs to (HLO module, NEFF, process name)"),
        _c("category", S, "", "tool's category for the row (XLA category, Neuron engine, workload type)"),
        _c("process_id", I, "", "host process id"),
        _c("context_id", I, "", "GPU context id"),
        _c("stream", I, "", "stream id (queue id for other vendors)"),
        _c("correlation_id", I, "", "id linking the device execution to its host launch"),
        _c("start_ns", I, "ns", "start on the profile's time base"),
        _c("end_ns", I, "ns", "end on the profile's time base"),
        _c("duration_ns", F, "ns", "device execution time of this launch"),
        _c("grid_x", I, "block", "grid dimension x"),
        _c("grid_y", I, "block", "grid dimension y"),
        _c("grid_z", I, "block", "grid dimension z"),
        _c("block_x", I, "thread", "block dimension x"),
        _c("block_y", I, "thread", "block dimension y"),
        _c("block_z", I, "thread", "block dimension z"),
        _c("grid_size", I, "block", "blocks per grid"),
        _c("block_size", I, "thread", "threads per block"),
        _c("registers_per_thread", I, "register", "registers per thread"),
        _c("shared_mem_bytes", I, "byte", "shared memory per block, static + dynamic"),
        _c("static_shared_mem_bytes", I, "byte", "static shared memory per block"),
        _c("dynamic_shared_mem_bytes", I, "byte", "dynamic shared memory per block"),
        _c("dram_read_bytes", F, "byte", "bytes read from device memory (HBM/GDDR)"),
        _c("dram_write_bytes", F, "byte", "bytes written to device memory"),
        _c("dram_bytes", F, "byte", "device-memory traffic, read + write"),
        _c("dram_bytes_method", S, "", "how dram_bytes was obtained: sum, read+write, rate*duration, tool"),
        _c("l2_bytes", F, "byte", "L2 traffic (lts__t_bytes, or sectors x 32)"),
        _c("l1_bytes", F, "byte", "L1/TEX traffic (l1tex__t_bytes, or sectors x 32)"),
        _c("flops_fp64", F, "flop", "FP64 vector FLOPs (FMA counted as 2)"),
        _c("flops_fp32", F, "flop", "FP32 vector FLOPs (FMA counted as 2)"),
        _c("flops_fp16", F, "flop", "FP16 vector FLOPs (FMA counted as 2)"),
        _c("flops_bf16", F, "flop", "BF16 vector FLOPs (FMA counted as 2)"),
        _c("flops_fp64_tensor", F, "flop", "FP64 tensor-core FLOPs"),
        _c("flops_tf32_tensor", F, "flop", "TF32 tensor-core FLOPs"),
        _c("flops_fp16_tensor", F, "flop", "FP16 tensor-core FLOPs (FP16 and BF16 where the counter cannot tell them apart)"),
        _c("flops_bf16_tensor", F, "flop", "BF16 tensor-core FLOPs"),
        _c("flops_fp8_tensor", F, "flop", "FP8 tensor-core FLOPs"),
        _c("flops_int8_tensor", F, "op", "INT8 tensor-core operations"),
        _c("flops_fp4_tensor", F, "flop", "FP4 tensor-core FLOPs"),
        _c("flops_total", F, "flop", "all FLOPs: the sum of the per-precision columns, or a tool's untyped total (XLA, Neuron)"),
        _c("flops_method", S, "", "where the FLOP numbers came from: sass-counters, tensor-pipe, cost-analysis, tool"),
        _c("sm_clock_hz", F, "Hz", "SM (core) clock the kernel ran at, where measured"),
        _c("mem_clock_hz", F, "Hz", "memory clock the kernel ran at, where measured"),
        _c("achieved_occupancy_pct", F, "%", "achieved occupancy"),
        _c("theoretical_occupancy_pct", F, "%", "theoretical occupancy"),
        _c("nvtx_range", S, "", "innermost NVTX range (or annotation) enclosing the launch"),
    ),
    "one row per kernel or device-op execution",
)

METRICS = Table(
    "metrics",
    (
        _PROFILE,
        _c("kernel_id", I, "", "kernels.kernel_id of the row this metric belongs to"),
        _c("metric", S, "", "the tool's metric name, unchanged"),
        _c("unit", S, "", "the tool's unit string, unchanged"),
        _c("value", F, "", "numeric value in `unit` (null for strings)"),
        _c("value_str", S, "", "string value (null for numbers)"),
        _c("value_int", I, "", "exact integer where the tool stored an integer (`value` is its float64 rounding); above the int64 range null, and value_str holds the exact decimal"),
        _c("instance", I, "", "instance index for instanced metrics; null for the aggregate"),
        _c("instance_key", S, "", "the instance's correlation id (opcode, pc, block size...) where present"),
        _c("section", S, "", "report section the row belongs to (ncu section name or identifier), where the source says"),
        _c("kind", S, "", "row kind: metric, rule, device, launch, session, nvtx"),
    ),
    "long-form metrics, rule results and attributes, keyed by kernel",
)

RANGES = Table(
    "ranges",
    (
        _PROFILE,
        _c("range_id", I, "", "row key, unique within the profile"),
        _c("kind", S, "", "nvtx_push_pop, nvtx_start_end, cuda_runtime, cuda_driver, cpu_op, user_annotation, python_function, xla_module, step, host; on a device timeline: gpu_user_annotation, cuda_sync, mtia_sync, xla_op"),
        _c("name", S, "", "range or API name (API version suffixes removed)"),
        _c("domain", S, "", "NVTX domain or trace category"),
        _c("process_id", I, "", "host process id"),
        _c("thread_id", I, "", "host thread id"),
        _c("device_id", I, "", "device for device-side ranges"),
        _c("stream", I, "", "stream for device-side ranges"),
        _c("start_ns", I, "ns", "start on the profile's time base"),
        _c("end_ns", I, "ns", "end on the profile's time base (null if never closed)"),
        _c("duration_ns", F, "ns", "end - start"),
        _c("depth", I, "", "nesting depth on its thread, 0 = outermost"),
        _c("parent_range_id", I, "", "enclosing range on the same thread"),
        _c("correlation_id", I, "", "launch correlation id (API calls)"),
        _c("external_id", I, "", "framework op id linking CPU ops to launches (Kineto External id)"),
    ),
    "host and device ranges: NVTX, API calls, framework ops, annotations",
)

TRANSFERS = Table(
    "transfers",
    (
        _PROFILE,
        _c("transfer_id", I, "", "row key, unique within the profile"),
        _c("kind", S, "", "memcpy, memset, dma"),
        _c("direction", S, "", "HtoD, DtoH, DtoD, HtoH, PtoP, or the tool's label"),
        _c("src_kind", S, "", "source memory kind (pageable, pinned, device, ...)"),
        _c("dst_kind", S, "", "destination memory kind"),
        _c("name", S, "", "tool's label or DMA queue"),
        _c("bytes", F, "byte", "bytes moved or set"),
        _c("start_ns", I, "ns", "start on the profile's time base"),
        _c("end_ns", I, "ns", "end on the profile's time base"),
        _c("duration_ns", F, "ns", "duration"),
        _c("throughput_bytes_per_s", F, "byte/s", "bytes / duration"),
        _c("device_id", I, "", "device"),
        _c("stream", I, "", "stream or queue"),
        _c("correlation_id", I, "", "launch correlation id"),
    ),
    "memory copies, memsets and DMA transfers",
)

COUNTERS = Table(
    "counters",
    (
        _PROFILE,
        _c("counter", S, "", "canonical name where known (sm_clock_hz, mem_clock_hz, temperature_c, power_w, ...), else the tool's"),
        _c("raw_name", S, "", "the tool's own counter name"),
        _c("unit", S, "", "unit of `value`"),
        _c("timestamp_ns", I, "ns", "sample time on the profile's time base"),
        _c("value", F, "", "sample value in `unit`"),
        _c("device_id", I, "", "device the sample belongs to"),
    ),
    "sampled counters over time: clocks, temperature, power, utilisation, memory usage",
)

SAMPLES = Table(
    "samples",
    (
        _PROFILE,
        _c("benchmark", S, "", "benchmark or kernel name"),
        _c("variant", S, "", "implementation variant (baseline, candidate, ...) where the log names one"),
        _c("params", S, "", "parameters as canonical JSON (sorted keys)"),
        _c("run", I, "", "process-level repetition index"),
        _c("iteration", I, "", "iteration index within the run, in execution order"),
        _c("duration_ns", F, "ns", "time of one iteration (or the summary statistic, see `statistic`)"),
        _c("timestamp_ns", F, "ns", "when the iteration ran, on the log's own time base"),
        _c("statistic", S, "", "null for a raw sample; else the summary this row is (mean, median, min, max, p99, ...)"),
        _c("sample_count", I, "", "for summary rows: how many samples the statistic summarises"),
        _c("calls_per_sample", I, "call", "back-to-back calls one row's duration averages (Google Benchmark iterations, pytest-benchmark iterations, torch.utils.benchmark number_per_run); 1 = one call, null = unknown"),
        _c("sm_clock_mhz", F, "MHz", "SM clock during the iteration"),
        _c("mem_clock_mhz", F, "MHz", "memory clock during the iteration"),
        _c("temperature_c", F, "degC", "GPU temperature"),
        _c("power_w", F, "W", "board power"),
        _c("throttle_reasons", S, "", "throttle reasons active (names joined by '|', or 'none')"),
        _c("phase", S, "", "warmup or measure"),
        _c("cache_state", S, "", "cold, hot or unknown"),
        _c("time_source", S, "", "cuda_events, host, ncu, nsys, do_bench, nvbench_cold, nvbench_batch, ..."),
        _c("device_name", S, "", "device the sample ran on"),
    ),
    "timing samples from logs and benchmark harnesses (one row per iteration, or per summary statistic)",
)

# Run metadata: one row per profile. Keys not declared here go into `extra_json`.
METADATA = Table(
    "metadata",
    (
        _PROFILE,
        _c("source", S, "", "tool family: ncu, nsys, kineto, chrome, xla, neuron, timing, ..."),
        _c("format", S, "", "parser that read the file"),
        _c("path", S, "", "the input file as given"),
        _c("file_bytes", I, "byte", "input size"),
        _c("tool", S, "", "producing tool"),
        _c("tool_version", S, "", "producing tool's version"),
        _c("device_name", S, "", "primary device name"),
        _c("device_count", I, "", "devices seen in the profile"),
        _c("driver_version", S, "", "GPU driver version"),
        _c("cuda_version", S, "", "CUDA (or ROCm/Neuron runtime) version"),
        _c("host", S, "", "host name"),
        _c("command_line", S, "", "the recorded profiler or program command line"),
        _c("capture_time", S, "", "when the capture was made (ISO 8601 where known)"),
        _c("clock_control", S, "", "ncu --clock-control in effect: base, none, boost, ... (or null)"),
        _c("clock_control_origin", S, "", "recorded (command line says so) or default (tool default assumed)"),
        _c("cache_control", S, "", "ncu --cache-control in effect: all, none (or null)"),
        _c("cache_control_origin", S, "", "recorded or default"),
        _c("kernel_count", I, "", "rows in kernels"),
        _c("sample_count", I, "", "rows in samples"),
        _c("extra_json", S, "", "everything else the source recorded, as JSON"),
    ),
    "run metadata, one row per profile",
)

TABLES: dict[str, Table] = {
    t.name: t for t in (KERNELS, METRICS, RANGES, TRANSFERS, COUNTERS, SAMPLES)
}
DATA_TABLES: tuple[str, ...] = tuple(TABLES)
ALL_TABLES: dict[str, Table] = {**TABLES, "metadata": METADATA}

# Tables derived from a distributed run (`profaudit.ranks`), not stored per profile. Times are on
# the aligned clock: each rank's own clock minus its `clock_offset_ns`.
_RANK = _c("rank", I, "", "global rank (distributedInfo, the file name, or the process/device order; see rank_source)")
RANKS = Table(
    "ranks",
    (
        _PROFILE,
        _RANK,
        _c("world_size", I, "rank", "ranks in the job (the trace's distributedInfo, else the ranks loaded)"),
        _c("host", S, "", "host name the rank ran on"),
        _c("node", I, "", "node index: hosts numbered in order of their lowest rank"),
        _c("local_rank", I, "", "position of the rank among the ranks of its host"),
        _c("process_id", I, "", "host process of the rank (null when the profile is the rank)"),
        _c("device_id", I, "", "GPU the rank's kernels ran on"),
        _c("device_name", S, "", "GPU name"),
        _c("rank_source", S, "", "where the rank came from: distributed_info, file_name, process_order, device_order"),
        _c("clock_offset_ns", I, "ns", "the rank's clock minus the reference clock; subtracted from every time of the rank"),
        _c("clock_offset_error_ns", F, "ns", "largest residual of the alignment (null when unknown: separate clocks not checked)"),
        _c("clock_method", S, "", "trace_clock (times as recorded), shared_clock (one host or one capture), collective_end (ends of matched collectives)"),
        _c("kernel_count", I, "", "kernels of the rank"),
        _c("collective_count", I, "", "communication kernels of the rank"),
        _c("step_count", I, "", "steps found for the rank"),
    ),
    "one row per rank of a distributed run",
)
COLLECTIVES = Table(
    "collectives",
    (
        _PROFILE,
        _RANK,
        _c("kernel_id", I, "", "kernels.kernel_id of the communication kernel"),
        _c("process_group", S, "", "process group name (null where the trace does not say)"),
        _c("group_ranks", S, "", "ranks of the process group as recorded"),
        _c("call_index", I, "", "position of the call among the rank's calls on its process group within its step: the same call on every rank has the same (process group, step, index)"),
        _c("collective", S, "", "all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send, recv, send_recv, barrier, gather, scatter, unknown"),
        _c("kernel_name", S, "", "communication kernel's short name"),
        _c("algorithm", S, "", "NCCL algorithm from the kernel name (RING, TREE, NVLS, COLLNET_DIRECT, PAT, ...)"),
        _c("protocol", S, "", "NCCL protocol from the kernel name (LL, LL128, SIMPLE)"),
        _c("dtype", S, "", "element type as recorded (Float, BFloat16, ...)"),
        _c("in_msg_nelems", I, "element", "input elements as recorded"),
        _c("out_msg_nelems", I, "element", "output elements as recorded"),
        _c("group_size", I, "rank", "ranks taking part (the process group's size, else the world size)"),
        _c("msg_bytes", F, "byte", "the size nccl-tests reports: all_gather output, reduce_scatter input, else the buffer"),
        _c("args_source", S, "", "where the size came from: kernel (args on the kernel), cpu_op (record_param_comms), none"),
        _c("stream", I, "", "GPU stream of the kernel"),
        _c("start_ns", I, "ns", "kernel start, aligned clock"),
        _c("end_ns", I, "ns", "kernel end, aligned clock"),
        _c("duration_ns", F, "ns", "kernel duration on this rank (waiting for late peers included)"),
        _c("algbw_bytes_per_s", F, "byte/s", "msg_bytes / duration (nccl-tests algbw)"),
        _c("busbw_factor", F, "", "nccl-tests bus-bandwidth factor: all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n; else 1"),
        _c("busbw_bytes_per_s", F, "byte/s", "algbw x busbw_factor (nccl-tests busbw)"),
        _c("step", I, "", "step the kernel's launch was issued in (its start where no launch was recorded; null outside steps)"),
    ),
    "one row per communication kernel per rank",
)
CALLS = Table(
    "collective_calls",
    (
        _c("process_group", S, "", "process group name"),
        _c("group_ranks", S, "", "ranks of the process group as recorded"),
        _c("call_index", I, "", "position of the call on its process group within its step"),
        _c("collective", S, "", "collective kind (most common across the ranks)"),
        _c("consistent", B, "", "every rank recorded the same collective kind and size for this call"),
        _c("ranks", I, "rank", "ranks with this call"),
        _c("group_size", I, "rank", "ranks expected"),
        _c("msg_bytes", F, "byte", "nccl-tests size (median across ranks)"),
        _c("first_rank", I, "", "rank whose kernel started first"),
        _c("last_rank", I, "", "rank whose kernel started last: the one the others waited for"),
        _c("arrival_spread_ns", I, "ns", "last start - first start"),
        _c("wait_total_ns", I, "ns", "sum over ranks of (last start - own start): time spent waiting in the collective"),
        _c("end_spread_ns", I, "ns", "last end - first end (near zero once clocks are aligned)"),
        _c("sync_duration_ns", F, "ns", "first end - last start: the collective's time once every rank had arrived"),
        _c("sync_algbw_bytes_per_s", F, "byte/s", "msg_bytes / sync_duration_ns"),
        _c("sync_busbw_bytes_per_s", F, "byte/s", "sync algbw x busbw factor"),
        _c("start_ns", I, "ns", "first start, aligned clock"),
        _c("step", I, "", "step the call was launched in (part of the match: null outside steps)"),
    ),
    "one row per collective call matched across ranks",
)
STEP_BREAKDOWN = Table(
    "step_breakdown",
    (
        _PROFILE,
        _RANK,
        _c("step", I, "", "step number (ProfilerStep#N, XLA step) or null for the whole-trace row"),
        _c("step_name", S, "", "step range name, or `(trace)` for the span from the rank's first to last GPU activity"),
        _c("start_ns", I, "ns", "window start, aligned clock"),
        _c("end_ns", I, "ns", "window end, aligned clock"),
        _c("window_ns", I, "ns", "window length"),
        _c("busy_ns", I, "ns", "time any kernel or copy ran"),
        _c("compute_ns", I, "ns", "time a computation kernel ran"),
        _c("communication_ns", I, "ns", "time a communication kernel ran"),
        _c("memory_ns", I, "ns", "time a memcpy/memset ran"),
        _c("overlapped_communication_ns", I, "ns", "communication time with computation running"),
        _c("exposed_communication_ns", I, "ns", "communication time with no computation running"),
        _c("exposed_memory_ns", I, "ns", "copy time with neither computation nor communication running"),
        _c("idle_ns", I, "ns", "time nothing ran; compute + exposed communication + exposed memory + idle = window"),
        _c("overlap_pct", F, "%", "overlapped / all communication time"),
    ),
    "per rank and step: HTA's temporal breakdown (computation, communication, memory, idle) with overlap",
)
STEP_SKEW = Table(
    "step_skew",
    (
        _c("step", I, "", "step number"),
        _c("ranks", I, "rank", "ranks with this step"),
        _c("min_step_ns", I, "ns", "shortest step window among the ranks"),
        _c("max_step_ns", I, "ns", "longest step window"),
        _c("skew_ns", I, "ns", "max - min step window"),
        _c("job_step_ns", I, "ns", "the job's step: latest step end - earliest step start across ranks (aligned clock); one rank's window is not it"),
        _c("slowest_rank", I, "", "rank with the longest window"),
        _c("start_spread_ns", I, "ns", "latest - earliest step start, aligned clock"),
        _c("max_exposed_communication_ns", I, "ns", "largest exposed communication among the ranks"),
        _c("max_idle_ns", I, "ns", "largest idle time among the ranks"),
    ),
    "per step across ranks: how far the ranks' steps differ",
)
STRAGGLERS = Table(
    "stragglers",
    (
        _c("straggler_rank", I, "", "1 = the rank that cost the others the most waiting"),
        _RANK,
        _c("times_last", I, "call", "collective calls this rank arrived at last"),
        _c("calls", I, "call", "calls matched on more than one rank with a non-zero arrival spread"),
        _c("last_pct", F, "%", "times_last / calls"),
        _c("wait_caused_ns", I, "ns", "wait the other ranks spent in the calls this rank arrived at last"),
        _c("max_late_ns", I, "ns", "largest arrival spread of those calls"),
        _c("median_late_ns", F, "ns", "median arrival spread of those calls"),
    ),
    "ranks ranked by the collective waiting they caused",
)
COLLECTIVE_SIZES = Table(
    "collective_sizes",
    (
        _c("collective", S, "", "collective kind"),
        _c("msg_bytes", F, "byte", "nccl-tests size"),
        _c("group_size", I, "rank", "ranks taking part"),
        _c("calls", I, "call", "matched calls of this kind and size"),
        _c("median_sync_duration_ns", F, "ns", "median time once every rank had arrived"),
        _c("median_sync_algbw_bytes_per_s", F, "byte/s", "median algbw once every rank had arrived"),
        _c("median_sync_busbw_bytes_per_s", F, "byte/s", "median busbw once every rank had arrived"),
        _c("total_wait_ns", I, "ns", "waiting for late ranks, summed over ranks and calls"),
    ),
    "collectives per kind and message size, like one line of an nccl-tests table",
)
_SIDES = (("baseline", "the baseline run"), ("candidate", "the candidate run"))
RUN_COMPARE_STEPS = Table(
    "run_compare_steps",
    (
        _c("step", I, "", "step number (matched by number)"),
        *[_c(f"{side}_job_step_ns", I, "ns", f"job step time of {what}") for side, what in _SIDES],
        _c("job_step_diff_ns", I, "ns", "candidate - baseline job step time"),
        *[_c(f"{side}_max_exposed_communication_ns", I, "ns", f"largest exposed communication among the ranks of {what}") for side, what in _SIDES],
        *[_c(f"{side}_skew_ns", I, "ns", f"step skew of {what}") for side, what in _SIDES],
    ),
    "two distributed runs' steps side by side",
)
RUN_COMPARE_COLLECTIVES = Table(
    "run_compare_collectives",
    (
        _c("collective", S, "", "collective kind"),
        _c("msg_bytes", F, "byte", "nccl-tests size (null where not recorded)"),
        *[_c(f"{side}_calls", I, "call", f"matched calls in {what}") for side, what in _SIDES],
        *[_c(f"{side}_median_sync_duration_ns", F, "ns", f"median time once all ranks arrived, {what}") for side, what in _SIDES],
        _c("sync_duration_ratio", F, "", "candidate / baseline median sync duration"),
        *[_c(f"{side}_median_sync_busbw_bytes_per_s", F, "byte/s", f"median busbw once all ranks arrived, {what}") for side, what in _SIDES],
        *[_c(f"{side}_total_wait_ns", I, "ns", f"waiting for late ranks, {what}") for side, what in _SIDES],
    ),
    "two distributed runs' collectives matched by kind and size",
)
DERIVED_TABLES: dict[str, Table] = {t.name: t for t in (RANKS, COLLECTIVES, CALLS, STEP_BREAKDOWN, STEP_SKEW, STRAGGLERS, COLLECTIVE_SIZES,
                                                        RUN_COMPARE_STEPS, RUN_COMPARE_COLLECTIVES)}

# Batch results (`profaudit.batch`): one row per claim file audited, or per compare pair.
AUDIT_VERDICTS = Table(
    "audit_verdicts",
    (
        _c("claim", S, "", "the claim file"),
        _c("description", S, "", "what the claim says"),
        _c("verdict", S, "", "PASS, WARN, INCONCLUSIVE, FAIL, or ERROR (the claim could not be read; see error)"),
        _c("claimed_speedup_x", F, "x", "speedup the claim states (baseline time / candidate time)"),
        _c("supported_speedup_x", F, "x", "speedup the evidence supports (null when none holds)"),
        _c("supported_low_x", F, "x", "low end of its confidence interval"),
        _c("supported_high_x", F, "x", "high end of its confidence interval"),
        _c("confidence", F, "fraction", "confidence level of the interval"),
        _c("statistic", S, "", "statistic of the supported speedup (median, mean, ...)"),
        _c("rules_fired", S, "", "codes of the rules that flagged the claim, most severe first, joined by ','"),
        _c("error", S, "", "why the claim could not be audited (one line naming the file)"),
    ),
    "one row per audited claim (profaudit audit DIR|GLOB)",
)
COMPARE_VERDICTS = Table(
    "compare_verdicts",
    (
        _c("pair", S, "", "the pair's name (the CSV's name column, else its row number)"),
        _c("baseline", S, "", "baseline input as listed"),
        _c("candidate", S, "", "candidate input as listed"),
        _c("kind", S, "", "kernels (profiles) or samples (timing logs)"),
        _c("comparable", S, "", "yes, with-warnings, no, or error"),
        _c("verdict", S, "", "the comparison's one-line verdict"),
        _c("speedup_x", F, "x", "geometric-mean speedup over matched items (baseline / candidate)"),
        _c("speedup_low_x", F, "x", "low end of its confidence interval"),
        _c("speedup_high_x", F, "x", "high end of its confidence interval"),
        _c("gate", S, "", "pass, fail or not-comparable under --fail-on / --max-slowdown"),
        _c("rules_fired", S, "", "codes of the fairness findings that flagged the pair, joined by ','"),
        _c("error", S, "", "why the pair could not be compared (one line naming the file)"),
    ),
    "one row per compared pair (profaudit compare-pairs CSV)",
)
BATCH_TABLES: dict[str, Table] = {t.name: t for t in (AUDIT_VERDICTS, COMPARE_VERDICTS)}

_NUMERIC = (pl.Int64, pl.Float64)


def conform(table: str | Table, df: pl.DataFrame | None, profile_id: str | None = None) -> pl.DataFrame:
    """Return `df` with exactly the table's columns, in order, with the declared dtypes.

    Absent columns become typed nulls. Columns the schema does not declare are an error: a parser
    that invents a column has to declare it here first (house rule: units in names, declared once).
    """
    t = table if isinstance(table, Table) else ALL_TABLES[table]
    if df is None or not df.columns:
        return t.empty()
    # df.schema and t.polars_schema build a new mapping on every access: read each once. The
    # frame's from its names and dtypes: the same pairs, where df.schema cost ~45 us on a 53-column
    # kernels table (its Schema object checks every dtype again; ~7 us this way)
    declared = t.polars_schema
    have = dict(zip(df.columns, df.dtypes))
    extra = [c for c in have if c not in declared]
    if extra:
        raise ValueError(f"table {t.name!r} has no column(s) {extra}; declare them in profaudit.schema")
    same = _conform_by_insertion(t, df, have, profile_id)
    if same is not None:
        return same
    exprs = []
    for col in t.columns:
        if col.name == "profile_id" and profile_id is not None:
            exprs.append(pl.lit(profile_id, dtype=pl.Utf8).alias("profile_id"))
        elif col.name in have:
            src = have[col.name]
            if src == col.dtype:
                exprs.append(pl.col(col.name))
            elif col.dtype in _NUMERIC and src == pl.Utf8:
                exprs.append(pl.col(col.name).str.strip_chars().cast(col.dtype, strict=False))
            else:
                exprs.append(pl.col(col.name).cast(col.dtype, strict=False))
        else:
            exprs.append(pl.lit(None, dtype=col.dtype).alias(col.name))
    if not df.columns:
        return t.empty()
    return df.select(exprs)


# frames up to this many rows take conform's insertion path (_conform_by_insertion)
_INSERT_MAX_ROWS = 65_536


def _conform_by_insertion(t: Table, df: pl.DataFrame, have: dict, profile_id: str | None) -> pl.DataFrame | None:
    """conform's common case without the query engine, else None: every column `df` has is declared
    with its dtype and stands in declared order, so only the absent ones (the profile id, typed
    nulls) are missing. They are inserted at their places into a shallow copy (columns shared, the
    caller's frame untouched). Same frame as conform's select; that select's plan and expressions
    cost ~0.4 ms on a one-row, 53-column kernels table (per profile read: Profile conforms every
    table; benchmarks/bench_ncu_load.py's "parent" stage)."""
    n, j, inserts = df.height, 0, []
    if n > _INSERT_MAX_ROWS:
        # a big frame: the select's pl.lit nulls are literal columns that stay free when the frame
        # is gathered, joined or sorted later, where the inserted null Series are copied row by
        # row (`roofline` on a 200 MB rocprofv3 trace, 2 M launches: 2,349 MB peak inserted, 1,941 selected);
        # the plan's ~0.4 ms is nothing beside such a frame
        return None
    names = list(have)
    for i, col in enumerate(t.columns):
        if col.name == "profile_id" and profile_id is not None:
            if col.name in have or not isinstance(profile_id, str):
                return None  # replaced by the id, or cast to text: the select does that
            inserts.append((i, pl.Series(col.name, [profile_id], dtype=pl.Utf8).new_from_index(0, n)))
        elif col.name in have:
            dt = have[col.name]
            # `type(dt) is col.dtype` first: a frame's dtype is an instance of the declared class
            # (String() of pl.String), which == finds too, through polars' Python __eq__ (~1.5 us a
            # column, most of conforming a 53-column kernels row); else == decides, as before
            if names[j] != col.name or not (type(dt) is col.dtype or dt == col.dtype):
                return None  # out of order, or to be cast
            j += 1
        else:
            inserts.append((i, pl.Series(col.name, [None], dtype=col.dtype).new_from_index(0, n)))
    out = df.clone()
    for i, s in inserts:  # ascending: the columns before i are already in their final places
        out.insert_column(i, s)
    return out


def describe(tables: Iterable[str] | None = None) -> list[dict]:
    """Rows describing every column (for `profaudit schema` and the docs)."""
    rows = []
    for name in tables or ALL_TABLES:
        t = ALL_TABLES[name] if name in ALL_TABLES else DERIVED_TABLES[name]
        for c in t.columns:
            rows.append({"table": t.name, "column": c.name, "dtype": str(c.dtype), "unit": c.unit, "meaning": c.meaning})
    return rows


def metadata_keys() -> list[str]:
    return [c.name for c in METADATA.columns if c.name not in ("profile_id", "extra_json")]


def flops_columns() -> list[str]:
    return [f"flops_{p}" for p in PRECISIONS]


def from_records(table: str, records: list[Mapping] | None) -> pl.DataFrame:
    """Build a conformed table from dict rows (small tables only; large ones build columns)."""
    t = ALL_TABLES[table]
    if not records:
        return t.empty()
    keys = set().union(*records)
    unknown = keys.difference(t.polars_schema)
    if unknown:
        raise ValueError(f"table {t.name!r} has no column(s) {sorted(unknown)}; declare them in profaudit.schema")
    schema = {k: v for k, v in t.polars_schema.items() if k in keys}
    return conform(t, pl.DataFrame(records, schema=schema, strict=False))
