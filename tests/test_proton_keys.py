"""Triton Proton profiles from older releases: capitalised metric keys (`Time (ns)`, `Count`,
`DeviceId`, `DeviceType`), integer device types, and the earliest files with no device keys.
Files are built here with the key names each Proton version's KernelMetric writes; every number is
checked against a plain json read of the same file."""

from __future__ import annotations

import json

import polars as pl
import pytest

from conftest import assert_one_line_error
from profaudit.loader import load


def _node(name, metrics, children=()):
    return {"frame": {"name": name, "type": "function"}, "metrics": metrics, "children": list(children)}


def _write(tmp_path, tree, devices, name="old.hatchet"):
    p = tmp_path / name
    p.write_text(json.dumps([tree, devices]))
    return p


def _plain_kernels(tree, is_kernel):
    """(scope, name, time, count) for every kernel node, read without profaudit."""
    out, stack = [], [(tree, ())]
    while stack:
        n, scopes = stack.pop()
        if n["frame"]["name"] != "ROOT" and is_kernel(n):
            m = n["metrics"]
            out.append(("/".join(scopes), n["frame"]["name"], m["Time (ns)"], m["Count"]))
        nxt = scopes if n["frame"]["name"] == "ROOT" else (*scopes, n["frame"]["name"])
        stack.extend((c, nxt) for c in n["children"])
    return sorted(out)


def _loaded(p):
    ps = load(p)
    assert len(ps) == 1
    return ps.samples, next(iter(ps)).metadata


def test_capitalised_keys_with_integer_device_type(tmp_path):
    # 2024 releases: StartTime/EndTime/Count/Time/DeviceId/DeviceType, DeviceType = enum (1 = CUDA)
    kern = lambda t, c, extra=None: {"StartTime (ns)": 100, "EndTime (ns)": 100 + t, "Count": c, "Time (ns)": t, "DeviceId": 0, "DeviceType": 1, **(extra or {})}
    tree = _node("ROOT", {}, [
        _node("fwd", {}, [_node("matmul_kernel", kern(9000, 3, {"flops16": 2.5e9}))]),
        _node("softmax_kernel", kern(1234, 1)),
    ])
    p = _write(tmp_path, tree, {"CUDA": {"0": {"arch": "90", "clock_rate": 1980000, "memory_clock_rate": 2619000, "bus_width": 5120, "num_sms": 132}}})
    s, md = _loaded(p)
    want = _plain_kernels(json.loads(p.read_text())[0], lambda n: "DeviceId" in n["metrics"])
    totals = s.filter(pl.col("statistic") == "total").sort("benchmark")
    got = sorted(zip([json.loads(x).get("scope", "") for x in totals["params"]], totals["benchmark"], totals["duration_ns"], totals["sample_count"]))
    assert got == [(sc, n, float(t), c) for sc, n, t, c in want]
    means = dict(zip(s.filter(pl.col("statistic") == "mean")["benchmark"], s.filter(pl.col("statistic") == "mean")["duration_ns"]))
    assert means == {"matmul_kernel": 3000.0, "softmax_kernel": 1234.0}
    assert md["device_name"] == "CUDA sm_90" and s["device_name"].unique().to_list() == ["CUDA sm_90"]
    # timestamps and device keys are kernel keys, not extra metrics; other metrics are kept
    assert md["kernel_metrics"] == [{"kernel": "matmul_kernel", "scope": "fwd", "flops16": 2.5e9}]


def test_capitalised_rocm_device_table(tmp_path):
    # the enum's 0 is ROCm; the device table named it ROCM in these releases
    tree = _node("ROOT", {}, [_node("add_kernel", {"Count": 4, "Time (ns)": 8000, "DeviceId": 0, "DeviceType": 0})])
    p = _write(tmp_path, tree, {"ROCM": {"0": {"arch": "gfx942", "clock_rate": 2100000, "memory_clock_rate": 1300000, "bus_width": 8192, "num_sms": 304}}})
    s, md = _loaded(p)
    assert dict(zip(s["statistic"], s["duration_ns"])) == {"total": 8000.0, "mean": 2000.0}
    assert md["device_name"] == "HIP gfx942"


def test_earliest_files_without_device_keys(tmp_path):
    # the first releases wrote only StartTime/EndTime/Count/Time: kernels are the timed leaves
    k = lambda t, c: {"StartTime (ns)": 0, "EndTime (ns)": t, "Count": c, "Time (ns)": t}
    tree = _node("ROOT", {"Count": 0, "Time (ns)": 0}, [
        _node("layer1", {"Count": 5, "Time (ns)": 700}, [_node("k_a", k(500, 2)), _node("k_b", k(200, 3))]),
        _node("k_c", k(90, 1)),
    ])
    p = _write(tmp_path, tree, {})
    s, md = _loaded(p)
    want = _plain_kernels(json.loads(p.read_text())[0], lambda n: not n["children"] and "Time (ns)" in n["metrics"])
    totals = s.filter(pl.col("statistic") == "total")
    got = sorted(zip([json.loads(x).get("scope", "") for x in totals["params"]], totals["benchmark"], totals["duration_ns"], totals["sample_count"]))
    assert got == [(sc, n, float(t), c) for sc, n, t, c in want]
    # the scope that sums its kernels is not a kernel itself
    assert "layer1" not in s["benchmark"].to_list()
    assert md.get("device_name") is None


def test_current_lower_case_keys_unchanged(tmp_path):
    tree = _node("ROOT", {"count": 0, "time (ns)": 0}, [_node("k", {"count": 2, "time (ns)": 50, "device_id": "0", "device_type": "HIP", "start_time (ns)": 1, "end_time (ns)": 51})])
    p = _write(tmp_path, tree, {"HIP": {"0": {"arch": "gfx90a"}}})
    s, md = _loaded(p)
    assert dict(zip(s["statistic"], s["duration_ns"])) == {"total": 50.0, "mean": 25.0}
    assert md["device_name"] == "HIP gfx90a" and md.get("kernel_metrics") is None


@pytest.mark.parametrize("text, needle", [
    ('[{"frame": {"name": "ROOT"}, "children": [{"frame": {"name": "k"}, "metrics": {"Count": 1, "Time (ns', "not valid Proton JSON"),
    ('[{"frame": {"name": "ROOT", "type": "function"}, "metrics": {}, "children": []}, {}]', "no kernel timings"),
])
def test_bad_old_proton_files_fail_in_one_line(tmp_path, cli, text, needle):
    p = tmp_path / "bad.hatchet"
    p.write_text(text)
    assert_one_line_error(cli("kernels", "-t", "samples", p), needle)


def test_damaged_call_tree_fails_in_one_line(tmp_path, cli):
    tree = _node("ROOT", {}, [_node("fwd", {}, [{"frame": ["k"], "metrics": {"Count": 1, "Time (ns)": 5}, "children": []}])])
    p = _write(tmp_path, tree, {})
    assert_one_line_error(cli("kernels", "-t", "samples", p), "damaged Proton call tree under fwd")
