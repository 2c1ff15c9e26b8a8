"""Distributed runs: many ranks loaded as one, their clocks aligned, collectives with nccl-tests
bandwidths matched across ranks, per-step temporal breakdown with communication overlap, and
stragglers.

    import profaudit.ranks as pr
    run = pr.load_run("traces/")           # a folder of rank-N Kineto traces, or one nsys capture
    run.ranks                              # rank, world_size, host, node, local_rank, clock offset
    run.collectives                        # one row per NCCL/RCCL kernel per rank, algbw/busbw
    run.calls                              # each call matched across ranks: last rank, wait
    run.step_breakdown                     # per rank and step: compute/communication/memory/idle
    run.stragglers, run.step_skew
    pr.interconnect_peaks(run.ranks)       # NVLink/PCIe/InfiniBand ceilings of the ranks' devices
    pr.compare_runs(run, other_run)        # steps (job step time) and collectives (kind, size) side by side

Every frame's columns are declared in `profaudit.schema` (`DERIVED_TABLES`).
"""

from profaudit.ranks.compare import compare_runs
from profaudit.ranks.kinds import busbw_factor, collective_kind
from profaudit.ranks.links import interconnect_peaks
from profaudit.ranks.run import ALIGN_METHODS, DistributedRun, identify_ranks, load_run

__all__ = ["ALIGN_METHODS", "DistributedRun", "busbw_factor", "collective_kind", "compare_runs", "identify_ranks", "interconnect_peaks",
           "load_run"]
