"""Fairness of a pair, from the audit rules: no fairness logic lives here.

The two sides become an audit `Claim` without a claimed speedup (`compare` claims nothing), the
audit gathers its evidence from the profiles' metadata (device, driver, CUDA, clock and cache
control with their origin, tool), and this module adds the facts the tables record but profile
metadata does not carry:

    time_source   the tool whose timestamps the kernel durations are (ncu, nsys, kineto, ...),
                  or the timing log's time_source column
    device        the device named on kernel or sample rows
    cache_state   the timing log's cache_state column (cold/hot)
    params        a timing log's problem parameters, when it holds one problem
    sm_clock_mhz  the duration-weighted median SM clock the kernels ran at (ncu measures it)
    dtype, tf32   the precision that holds >= 95 % of the counted FLOPs (ncu counters), and
                  tf32=false when the TF32 tensor pipe was counted and did no work

Then the pair-parity rules run (`PAIR_RULES`: method, environment and workload rules that compare
the two sides). Rules that judge one side's timing series (warm-up, drift, throttling, periodic
calls) or a claimed timed region do not apply to a comparison of whole profiles and are not run.
"""

from __future__ import annotations

from typing import Any, Iterable

import polars as pl

from profaudit import schema

# Pair-parity rules, in report order.
PAIR_RULES: tuple[str, ...] = (
    "PA201",  # device mismatch
    "PA106",  # mixed time sources
    "PA204",  # clock state mismatch
    "PA209",  # cache control mismatch
    "PA301",  # precision mismatch
    "PA302",  # workload mismatch
    "PA303",  # execution mode mismatch
    "PA202",  # driver / CUDA / library versions
    "PA206",  # power limit mismatch
    "PA207",  # GPU contention (from recorded facts)
    "PA208",  # host governor
    "PA108",  # metadata conflicts between sources
)

# FLOP column -> dtype the audit understands (fp16_tensor is left out: its counter cannot tell
# fp16 from bf16).
_FLOP_DTYPE = {
    "flops_fp64": "fp64", "flops_fp64_tensor": "fp64", "flops_fp32": "fp32", "flops_tf32_tensor": "tf32",
    "flops_fp16": "fp16", "flops_bf16": "bf16", "flops_bf16_tensor": "bf16", "flops_fp8_tensor": "fp8",
    "flops_int8_tensor": "int8", "flops_fp4_tensor": "fp4",
}
_DOMINANT = 0.95


def finding_to_dict(f: Any) -> dict:
    return f.as_dict() if hasattr(f, "as_dict") else dict(f)


def blocking_messages(findings: list) -> list[str]:
    """Messages of the findings that make the pair not comparable."""
    from profaudit.audit.findings import Severity, Status

    return [f.message for f in findings if f.status is Status.FAIL and f.severity >= Severity.FAIL]


def _rules(codes: Iterable[str]) -> list:
    from profaudit.audit.rules import BY_CODE

    return [BY_CODE[c] for c in codes]


def _claim_side(side, role: str):
    from profaudit.audit.claim import Side as ClaimSide

    paths = tuple(str(p) for p in side.describe()["paths"])
    return ClaimSide(
        role=role,
        label=side.label,
        samples=schema.SAMPLES.empty(),
        meta={},
        profiles=side.ps,
        timing_profiles=None,
        timing_paths=(),
        profile_paths=paths,
        meta_origin=f"{role} (compare)",
    )


def _one(values: list) -> Any:
    vals = sorted({v for v in values if v is not None and str(v).strip() and str(v).lower() != "unknown"}, key=str)
    if len(vals) == 1:
        return vals[0]
    if len(vals) > 1:
        return "mixed:" + ",".join(map(str, vals))
    return None


def _add_table_facts(se, side, kind: str) -> None:
    """Facts the tables record (see the module docstring), as recorded or derived facts."""
    shown = side.label
    if kind == "kernels":
        k = side.kernels.filter(pl.col("duration_ns").is_not_null())
        src = _one(k["source"].to_list())
        if src is None:
            src = _one(side.ps.metadata["source"].to_list())
        if src is not None:
            se.add("time_source", str(src).lower(), f"{shown}: kernel durations from {src}", "recorded")
        dev = _one(k["device_name"].to_list())
        if dev is not None and not se.has("device"):
            se.add("device", dev, f"{shown}: kernels.device_name", "recorded")
        clk = k.filter(pl.col("sm_clock_hz").is_not_null())
        if clk.height:
            # duration-weighted median: the clock most of the GPU time ran at
            c = clk.sort("sm_clock_hz").with_columns((pl.col("duration_ns").cum_sum() / pl.col("duration_ns").sum()).alias("_w"))
            mhz = float(c.filter(pl.col("_w") >= 0.5)["sm_clock_hz"][0]) / 1e6
            se.add("sm_clock_mhz", mhz, f"{shown}: duration-weighted median of kernels.sm_clock_hz ({clk.height} kernels)", "recorded")
        _precision_facts(se, k, shown)
    else:
        s = side.samples
        from profaudit.samples import preferred

        s = preferred(s)
        ts = _one(s["time_source"].to_list())
        if ts is not None:
            se.add("time_source", str(ts).lower(), f"{shown}: samples.time_source", "recorded")
        dev = _one(s["device_name"].to_list())
        if dev is not None and not se.has("device"):
            se.add("device", dev, f"{shown}: samples.device_name", "recorded")
        cs = _one(s["cache_state"].to_list())
        if cs is not None and cs in ("cold", "hot"):
            se.add("cache_state", cs, f"{shown}: samples.cache_state", "recorded")
        # one problem on the side: its parameters are the side's workload (with several, cases
        # pair on identical parameters anyway)
        params = [v for v in s["params"].unique().to_list() if v is not None]
        if len(params) == 1 and params[0] != "{}":
            se.add("params", params[0], f"{shown}: samples.params", "recorded")


def _precision_facts(se, k: pl.DataFrame, shown: str) -> None:
    cols = [c for c in _FLOP_DTYPE if k[c].is_not_null().any()]
    if not cols:
        return
    sums = {c: float(k[c].sum()) for c in cols}
    total = sum(sums.values())
    if total > 0:
        top = max(sums, key=sums.get)
        if sums[top] / total >= _DOMINANT and not se.has("dtype"):
            se.add("dtype", _FLOP_DTYPE[top], f"{shown}: {100 * sums[top] / total:.0f}% of counted FLOPs in {top}", "derived")
    if "flops_tf32_tensor" in cols and sums["flops_tf32_tensor"] == 0 and not se.has("tf32"):
        se.add("tf32", False, f"{shown}: TF32 tensor pipe counted, no TF32 FLOPs", "derived")


def check_pair(b, c, *, kind: str = "kernels", intended: Iterable[str] = ()) -> tuple[list, str]:
    """Run the pair-parity audit rules on two sides.

    `intended`: facts the comparison is about (the audit's meta keys: device, dtype, ...), which
    the rules then report as warnings. Returns (findings, comparable). Findings keep every status
    (pass, fail, unknown), triggered first;
    `comparable` is 'no' when a triggered finding is FAIL severity, 'with-warnings' when one is
    WARN or INCONCLUSIVE or when a fact that decides comparability could not be checked, else
    'yes'.
    """
    from profaudit.audit.claim import META_KEYS, Claim
    from profaudit.audit.evidence import gather
    from profaudit.audit.findings import Finding, Severity, Status
    from profaudit.errors import UsageError

    intended = tuple(intended)
    unknown = [k for k in intended if k not in META_KEYS]
    if unknown:
        raise UsageError(f"--intended {','.join(unknown)}: not a fact the audit knows; use one of {', '.join(sorted(META_KEYS))}")
    claim = Claim(_claim_side(b, "baseline"), _claim_side(c, "candidate"), intended_differences=tuple(intended))
    ev = gather(claim)
    for se, side in ((ev.baseline, b), (ev.candidate, c)):
        _add_table_facts(se, side, kind)
    findings: list = []
    for rule in _rules(PAIR_RULES):
        try:
            findings.extend(rule.check(ev))
        except Exception as exc:  # a rule's bug must show, not abort the comparison
            findings.append(
                Finding(rule.code, rule.name, Severity.WARN, Status.UNKNOWN, rule.pitfalls, f"cannot check: the rule failed ({type(exc).__name__}: {exc})")
            )
    order = {Status.FAIL: 0, Status.UNKNOWN: 1, Status.PASS: 2}
    findings.sort(key=lambda f: (order[f.status], -int(f.severity)))
    triggered = [f for f in findings if f.status is Status.FAIL]
    if any(f.severity >= Severity.FAIL for f in triggered):
        comparable = "no"
    elif any(f.severity >= Severity.WARN for f in triggered) or any(f.status is Status.UNKNOWN and f.severity >= Severity.WARN for f in findings):
        comparable = "with-warnings"
    else:
        comparable = "yes"
    return findings, comparable
