"""The checks at the end of benchmarks/gpu_capture.sh: did each GPU path do what the CPU tests
(with fakes) say it does? Writes OUTDIR/checks.json (one entry per check: name, ok, detail) and
exits 1 when one failed, so a GPU session sees at once what to fix.

    python benchmarks/gpu_capture_checks.py OUTDIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _header(path: Path) -> dict:
    with open(path, "rb") as fh:
        return json.loads(fh.readline())["meta"]


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:] if line.strip()]


# a measured ceiling over the datasheet peak (at boost) means the bytes or FLOPs are overcounted;
# under 30 % of it, that the kernel does not reach the roof it claims to measure
CEILING_VS_DATASHEET = (0.3, 1.05)


def _ceiling_checks(out: Path, check) -> None:
    """bench ceilings on the GPU: every microbenchmark ran on CUDA events, every roof is there and
    sits between 30 % and 105 % of the datasheet peak of the GPU it names."""
    try:
        doc = json.loads((out / "ceilings.json").read_text())
    except (OSError, ValueError) as exc:
        check("ceilings file readable", False, str(exc))
        return
    for rec in doc.get("measurements", []):
        who = f"ceilings {rec['name']}"
        check(f"{who}: ok on CUDA events", rec.get("status") == "ok" and rec.get("time_source") == "cuda_events", f"{rec.get('status')} {rec.get('error') or rec.get('time_source')}")
    roofs = doc.get("roofs", {})
    have = set(roofs.get("bandwidth_bytes_per_s", {})) | set(roofs.get("peak_flops_per_s", {}))
    want = {"dram", "fp32", "fp16_tensor", "bf16_tensor", "tf32_tensor"}
    check("ceilings: every roof measured", want <= have, f"{sorted(have)}")
    from profaudit.specs import match_device

    spec = match_device(doc.get("device_name"))
    if spec is None:
        check("ceilings: device has a datasheet spec", False, str(doc.get("device_name")))
        return
    lo, hi = CEILING_VS_DATASHEET
    for key, entry in roofs.get("bandwidth_bytes_per_s", {}).items():
        sheet = spec.bandwidth_bytes_per_s(key)
        check(f"ceilings {key} bandwidth within {lo:.0%}-{hi:.0%} of the datasheet", bool(sheet) and lo <= entry["value"] / sheet <= hi, f"{entry['value']:.4g} vs {sheet}")
    for key, entry in roofs.get("peak_flops_per_s", {}).items():
        sheet = spec.peak_flops_per_s(key)
        check(f"ceilings {key} peak within {lo:.0%}-{hi:.0%} of the datasheet", bool(sheet) and lo <= entry["value"] / sheet <= hi, f"{entry['value']:.4g} vs {sheet}")
    if (out / "ceilings_roofline.csv").exists():
        text = (out / "ceilings_roofline.csv").read_text()
        check("roofline --ceilings drew the ncu kernels against the measured roofs", "@measured" in text, text[:200])


def main(out: Path) -> int:
    checks: list[dict] = []

    def check(name: str, ok: bool, detail: str = "") -> None:
        checks.append({"check": name, "ok": bool(ok), "detail": detail})

    timing = out / "timing"
    try:
        doc = json.loads((timing / "manifest.json").read_text())
    except (OSError, ValueError) as exc:
        check("timing manifest readable", False, str(exc))
        doc = {"cases": []}
    check("timing run has cases", bool(doc["cases"]), f"{len(doc['cases'])} cases")
    medians: dict[tuple[str, str], list] = {}
    for c in doc["cases"]:
        for v, ve in c["variants"].items():
            who = f"{c['id']} {v}"
            check(f"{who}: ok", ve.get("status") == "ok", str(ve.get("error")))
            logs = ve.get("logs") or ([ve["log"]] if ve.get("log") else [])
            medians[(c["benchmark"], v)] = ve.get("median_ns")
            for log in logs[:1]:
                meta = _header(timing / log)
                rows = _rows(timing / log)
                backend = c.get("backend")
                if backend in ("torch", "triton"):
                    check(f"{who}: CUDA events", meta.get("time_source") == "cuda_events", str(meta.get("time_source")))
                    want = "cuda_graph" if v.endswith("_graph") else "per_call_behind_blocking_kernel"
                    if (meta.get("calls_per_sample") or 1) > 1:  # a tiny variant, hot cache: batched
                        want = "back_to_back_batch_of_graph_replays" if v.endswith("_graph") else "back_to_back_batch_behind_blocking_kernel"
                    check(f"{who}: timing method {want}", meta.get("timing_method") == want, f"{meta.get('timing_method')} ({meta.get('calls_per_sample')} calls per sample)")
                check(f"{who}: telemetry during blocks", "background thread" in str(meta.get("telemetry_sampling")) and any(r.get("sm_clock_mhz") for r in rows), str(meta.get("telemetry_sampling")))
                check(f"{who}: thermal cool-down recorded", isinstance(meta.get("thermal_cooldown"), dict), str(meta.get("thermal_cooldown")))
                check(f"{who}: spot checks on the device", meta.get("spot_checks") == 8 and meta.get("correctness_checked") == "both", f"{meta.get('spot_checks')} / {meta.get('correctness_checked')}")
                if meta.get("bench", {}).get("cache", {}).get("cache_mode") == "cold":
                    check(f"{who}: L2 flush", meta.get("l2_flush") is True and (meta["bench"]["cache"].get("flush_bytes") or 0) >= 2 * (meta["bench"]["cache"].get("cache_bytes") or 1), str(meta["bench"]["cache"]))
                if backend == "jax":
                    check(f"{who}: JAX timed on the device", meta.get("time_source") == "device_trace", f"{meta.get('time_source')}; {meta.get('timer_fallback')}")
                if v == "jax_eager":
                    check(f"{who}: really eager", meta.get("compile_mode") == "eager" and "xla_cost_analysis" not in meta, str(meta.get("compile_mode")))
    tiny = medians.get(("gpu_tiny_add", "torch")), medians.get(("gpu_tiny_add", "torch_graph"))
    check("gpu_tiny_add medians recorded (eager, graph)", all(t is not None for t in tiny), str(tiny))
    claims = sorted((timing / "claims").glob("*.audit.json")) if (timing / "claims").is_dir() else []
    check("claims audited", len(claims) >= 4, f"{len(claims)} audits: {[p.name for p in claims]}")

    from gpu_sabotage import EXPECTED

    try:
        sab = json.loads((out / "sabotage" / "manifest.json").read_text())
        got = {v: ve.get("status") for v, ve in sab["cases"][0]["variants"].items()}
    except (OSError, ValueError, IndexError, KeyError) as exc:
        got = {"error": str(exc)}
    check("sabotaged candidates caught, honest one passed", got == EXPECTED, json.dumps(got))

    _ceiling_checks(out, check)

    ncu = doc.get("ncu") or []
    if ncu:
        for rec in ncu:
            who = f"ncu {rec['case']} {rec['variant']}"
            check(f"{who}: report written", rec.get("returncode") == 0 and rec.get("report_exists"), f"rc {rec.get('returncode')}; {rec.get('ncu_errors')}")
            k = rec.get("kernels_profiled")
            if rec["case"].startswith("gpu_autograd"):
                # forward matmul + square/sum + the backward's kernels (autograd's own thread)
                check(f"{who}: backward kernels inside the NVTX range", (k or 0) >= 3, f"{k} kernels")
            elif rec.get("filter") == "kernel":
                check(f"{who}: kernel filter profiled the launch count", k == 2, f"{k} kernels; skip {rec.get('launch_skip_breakdown')}")
            else:
                check(f"{who}: NVTX filter {rec.get('nvtx_filter')} matched kernels", (k or 0) >= 1, f"{k} kernels")
    else:
        check("ncu reports", False, "no ncu records (ncu missing?)")

    (out / "checks.json").write_text(json.dumps(checks, indent=1) + "\n")
    bad = [c for c in checks if not c["ok"]]
    for c in checks:
        print(("ok   " if c["ok"] else "FAIL ") + c["check"] + (f" ({c['detail']})" if c["detail"] and not c["ok"] else ""))
    print(f"{len(checks) - len(bad)}/{len(checks)} checks passed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "sample_reports/bench_gpu")))
