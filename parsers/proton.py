"""Triton Proton profiles (`proton.finalize()` -> `<name>.hatchet`, a JSON array of two).

[0] is the call tree (`{frame: {name, type}, metrics: {...}, children: [...]}`, root `ROOT`),
[1] the device table (`{"CUDA"|"HIP": {"<id>": {clock_rate, memory_clock_rate (kHz), bus_width,
arch, num_sms}}}`). A kernel node carries `time (ns)` (the sum over its launches), `count`
(launches) and `device_id`/`device_type`; scope nodes sum their children.

Proton keeps no per-launch durations, so its kernels are NOT rows of `kernels` (one row per
execution): each kernel node becomes two summary rows in `samples` — statistic `total` (the
summed time) and `mean` (total / count), `sample_count` = count — with `benchmark` = the kernel
name, `params` = {"scope": "<enclosing scopes joined by '/'>"} so one kernel under two scopes
stays two benchmarks, `time_source` = proton. Device clocks are nominal properties, not
measurements, so they go to metadata (MHz), not `sm_clock_mhz`. Other kernel metrics (flops,
bytes, cycles, PC-sampling counts) are kept in metadata under `kernel_metrics`.
An empty profile (ROOT only) is an error naming the problem.

Key names follow the Proton version that wrote the file: releases up to mid-2024 capitalise them
(`Time (ns)`, `Count`, `DeviceId`, `DeviceType`, `StartTime (ns)`, `EndTime (ns)`; the earliest
write no device keys at all, and older ones write `DeviceType` as the integer of Proton's device
enum, 0 = ROCm/HIP, 1 = CUDA), later ones lower-case with underscores (`time (ns)`, `count`,
`device_id`, `device_type`, `start_time (ns)`). Keys are matched on their lower-cased form with
spaces and underscores dropped, so every spelling reaches the same column. A node is a kernel when
it names a device, or, in files without device keys, when it has a time and no child does (Proton
kernels are leaves; scopes above them sum them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


from profaudit import samples
from profaudit.errors import InputError
from profaudit.parsers import jsonshape
from profaudit.parsers.base import Probe, ReadOptions, new_profile
from profaudit.parsers.textsafe import load_clean_json
from profaudit.samples import canonical_params

# canonical key (lower case, no spaces or underscores) -> what it is, for every Proton spelling
_TIME = "time(ns)"
_KERNEL_KEYS = {_TIME, "count", "deviceid", "devicetype", "starttime(ns)", "endtime(ns)", "streamid"}
# Proton's device enum, as older releases wrote it in `DeviceType`; the device table's key for it
# was ROCM in some releases and HIP in others
_DEVICE_ENUM = {0: ("HIP", "ROCM"), 1: ("CUDA",)}


def _canon(key) -> str:
    return str(key).lower().replace(" ", "").replace("_", "")


def _num(v, where: str, path) -> float | None:
    """A metric's number; None when it is not a JSON number. An integer beyond any float is a
    damaged file, said in one line (not the loader's catch-all)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        return float(v)
    except OverflowError:
        raise InputError(path, f"{where}: the number {str(v)[:30]}... is beyond float range") from None


def _device_types(v) -> tuple[str, ...]:
    """Device-table keys a kernel's device type may be listed under."""
    if isinstance(v, int) and not isinstance(v, bool):
        return _DEVICE_ENUM.get(v, (str(v),))
    s = str(v)
    return (s, "ROCM" if s.upper() == "HIP" else "HIP") if s.upper() in ("HIP", "ROCM") else (s,)


class ProtonParser:
    name = "proton"
    source = "proton"
    suffixes = (".hatchet", ".json", ".hatchet.json")
    description = "Triton Proton .hatchet profiles (per-kernel total time and launch count)"

    def sniff(self, probe: Probe) -> bool:
        t = probe.text.lstrip()
        return t.startswith("[") and '"frame"' in t and '"children"' in t and ('"ROOT"' in t or probe.name_endswith(".hatchet"))

    def read(self, path: Path, options: ReadOptions):
        path = Path(path)
        doc = load_clean_json(path, "Proton JSON")
        if not isinstance(doc, list) or not doc or not isinstance(doc[0], dict) or "frame" not in doc[0]:
            raise InputError(path, "not a Proton hatchet profile (expected [call tree, device table])")
        devtab = doc[1] if len(doc) > 1 and isinstance(doc[1], dict) else {}
        devices: dict[tuple[str, str], dict] = {}
        for dtype, by_id in devtab.items():
            if isinstance(by_id, dict):
                for did, props in by_id.items():
                    if isinstance(props, dict):
                        p = dict(props)
                        for k in ("clock_rate", "memory_clock_rate"):
                            if isinstance(p.get(k), (int, float)) and not isinstance(p.get(k), bool):
                                p[k.replace("rate", "mhz")] = jsonshape.number(p[k], f"device {dtype}/{did}: {k}", path) / 1e3
                        devices[(str(dtype), str(did))] = p
        cols: dict[str, list] = {k: [] for k in ("benchmark", "params", "duration_ns", "statistic", "sample_count", "device_name")}
        extra_metrics: list[dict] = []
        zero_count = 0
        cycle_nodes = 0
        stack = [(doc[0], ())]
        while stack:
            node, scopes = stack.pop()
            frame = node.get("frame") or {}
            raw = node.get("metrics") or {}
            children = node.get("children") or []
            if not isinstance(frame, dict) or not isinstance(raw, dict) or not isinstance(children, list):
                where = "/".join(str(x) for x in scopes) or "the root"
                raise InputError(path, f"damaged Proton call tree under {where}: a node's frame, metrics or children has the wrong type")
            name = jsonshape.text(frame.get("name"), f"Proton call tree under {'/'.join(str(x) for x in scopes) or 'the root'}: frame.name", path, optional=False)
            metrics = {_canon(k): v for k, v in raw.items()}
            is_kernel = "deviceid" in metrics or "devicetype" in metrics
            if not is_kernel and _num(metrics.get(_TIME), f"Proton node {name}: Time (ns)", path) is not None:
                # files without device keys: a kernel is a timed node none of whose children is timed
                is_kernel = not any(isinstance(ch, dict) and isinstance(ch.get("metrics"), dict)
                                    and any(_canon(k) == _TIME for k in ch["metrics"]) for ch in children)
            if name != "ROOT" and any(k in ("cycles", "normalizedcycles") for k in metrics):
                cycle_nodes += 1
            if is_kernel and name != "ROOT":
                t = _num(metrics.get(_TIME), f"Proton kernel {name}: Time (ns)", path)
                count = metrics.get("count")
                count = int(count) if isinstance(count, float) and count.is_integer() else count
                if isinstance(count, int) and not isinstance(count, bool):
                    # a launch count beyond 64 bits (10**39): total / count raised OverflowError
                    count = jsonshape.int64(count, f"Proton kernel {name}: Count", path)
                dtypes = _device_types(metrics.get("devicetype"))
                props = next((devices[(d, str(metrics.get("deviceid")))] for d in dtypes if (d, str(metrics.get("deviceid"))) in devices), {})
                device = options.device or _device_name(dtypes[0], props)
                pj = canonical_params({"scope": "/".join(scopes)} if scopes else {})
                if t is not None:
                    rows = [("total", t)]
                    if isinstance(count, int) and count > 0:
                        rows.append(("mean", t / count))
                    else:
                        zero_count += 1
                    for stat, v in rows:
                        cols["benchmark"].append(name)
                        cols["params"].append(pj)
                        cols["duration_ns"].append(v)
                        cols["statistic"].append(stat)
                        cols["sample_count"].append(count if isinstance(count, int) else None)
                        cols["device_name"].append(device)
                other = {k: v for k, v in raw.items() if _canon(k) not in _KERNEL_KEYS}
                if other:
                    extra_metrics.append({"kernel": name, "scope": "/".join(scopes), **other})
            child_scopes = scopes if name == "ROOT" and not scopes else (*scopes, name)
            for ch in reversed(children):
                if isinstance(ch, dict):
                    stack.append((ch, child_scopes))
        if not cols["benchmark"] and cycle_nodes:
            # the instrumentation backend records cycles per scope, never a duration
            raise InputError(path, f"Proton profile holds cycle counts only ({cycle_nodes} scope(s) with 'cycles', as the instrumentation backend writes), no kernel times ('time (ns)'): nothing to load as timings")
        if not cols["benchmark"]:
            raise InputError(path, "Proton profile holds no kernel timings (an empty call tree: was the profiled code run between proton.start and proton.finalize?)")
        df = samples.frame(cols, iteration=0, phase="measure", cache_state="unknown", time_source="proton")
        names = [n for n in df.get_column("device_name").unique(maintain_order=True).to_list() if n]
        md: dict[str, Any] = {
            "tool": "proton",
            "device_name": names[0] if names else None,
            "device_count": len(devices) or None,
            "devices": [{"type": k[0], "id": k[1], **v} for k, v in devices.items()] or None,
            "kernel_metrics": extra_metrics or None,
        }
        if zero_count:
            md["notes"] = [f"{zero_count} kernel node(s) without a launch count: totals only"]
        return new_profile(path, self, {"samples": df}, md)


def _device_name(dtype, props: dict) -> str | None:
    arch = props.get("arch")
    if not arch:
        return None
    if str(dtype).upper() == "CUDA" and str(arch).isdigit():
        return f"CUDA sm_{arch}"
    return f"{dtype} {arch}"


PARSER = ProtonParser()
