"""The audit rule catalogue: one rule per module, listed once in `RULES`.

Codes: PA1xx measurement method, PA2xx environment parity, PA3xx workload parity, PA4xx
statistics, PA5xx physics. `select_rules("PA1,PA402", ignore="PA5")` picks rules by code
prefix, like linters do.
"""

from __future__ import annotations

from typing import Iterable

from profaudit.audit.findings import Rule
from profaudit.audit.rules import (
    pa101_warmup_in_timed_region,
    pa102_compile_in_timed_region,
    pa103_unsynchronized_host_timer,
    pa104_periodic_near_zero_calls,
    pa105_timed_below_kernel_time,
    pa106_mixed_time_sources,
    pa107_multi_stream_work,
    pa108_metadata_conflict,
    pa109_times_exceed_wall_clock,
    pa201_device_mismatch,
    pa202_version_mismatch,
    pa203_clock_throttling,
    pa204_clock_state_mismatch,
    pa205_drift_during_run,
    pa206_power_limit_mismatch,
    pa207_gpu_contention,
    pa208_host_governor,
    pa209_cache_control_mismatch,
    pa210_multi_gpu_parity,
    pa301_precision_mismatch,
    pa302_workload_mismatch,
    pa303_execution_mode_mismatch,
    pa304_correctness_unchecked,
    pa305_cached_results,
    pa306_weak_baseline,
    pa401_too_few_samples,
    pa402_high_noise,
    pa403_one_sided_outliers,
    pa404_mismatched_statistics,
    pa405_undersampled_tail_statistic,
    pa406_not_significant,
    pa407_claim_outside_interval,
    pa408_run_to_run_variation,
    pa501_above_physical_limit,
    pa502_hot_cache_working_set,
    pa503_launch_overhead_floor,
)

RULES: list[Rule] = [
    pa101_warmup_in_timed_region.RULE,
    pa102_compile_in_timed_region.RULE,
    pa103_unsynchronized_host_timer.RULE,
    pa104_periodic_near_zero_calls.RULE,
    pa105_timed_below_kernel_time.RULE,
    pa106_mixed_time_sources.RULE,
    pa107_multi_stream_work.RULE,
    pa108_metadata_conflict.RULE,
    pa109_times_exceed_wall_clock.RULE,
    pa201_device_mismatch.RULE,
    pa202_version_mismatch.RULE,
    pa203_clock_throttling.RULE,
    pa204_clock_state_mismatch.RULE,
    pa205_drift_during_run.RULE,
    pa206_power_limit_mismatch.RULE,
    pa207_gpu_contention.RULE,
    pa208_host_governor.RULE,
    pa209_cache_control_mismatch.RULE,
    pa210_multi_gpu_parity.RULE,
    pa301_precision_mismatch.RULE,
    pa302_workload_mismatch.RULE,
    pa303_execution_mode_mismatch.RULE,
    pa304_correctness_unchecked.RULE,
    pa305_cached_results.RULE,
    pa306_weak_baseline.RULE,
    pa401_too_few_samples.RULE,
    pa402_high_noise.RULE,
    pa403_one_sided_outliers.RULE,
    pa404_mismatched_statistics.RULE,
    pa405_undersampled_tail_statistic.RULE,
    pa406_not_significant.RULE,
    pa407_claim_outside_interval.RULE,
    pa408_run_to_run_variation.RULE,
    pa501_above_physical_limit.RULE,
    pa502_hot_cache_working_set.RULE,
    pa503_launch_overhead_floor.RULE,
]

BY_CODE: dict[str, Rule] = {r.code: r for r in RULES}


def _prefixes(spec: str | Iterable[str] | None) -> list[str]:
    if spec is None:
        return []
    items = spec.split(",") if isinstance(spec, str) else [p for s in spec for p in str(s).split(",")]
    return [p.strip().upper() for p in items if p.strip()]


def select_rules(select: str | Iterable[str] | None = None, ignore: str | Iterable[str] | None = None) -> list[Rule]:
    """Rules whose code starts with a `select` prefix (all when None), minus `ignore` prefixes.

    A prefix that matches no rule is an error (a typo must not silently audit nothing)."""
    from profaudit.errors import UsageError

    sel, ign = _prefixes(select), _prefixes(ignore)
    for p in sel + ign:
        if not any(r.code.startswith(p) for r in RULES):
            raise UsageError(f"no audit rule code starts with {p!r}; codes run PA101-{RULES[-1].code} (see `profaudit rules`)")
    chosen = [r for r in RULES if not sel or any(r.code.startswith(p) for p in sel)]
    return [r for r in chosen if not any(r.code.startswith(p) for p in ign)]


def catalogue() -> list[dict]:
    return [r.describe() for r in RULES]


__all__ = ["RULES", "BY_CODE", "Rule", "select_rules", "catalogue"]
