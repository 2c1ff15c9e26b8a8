"""ncu collection: the generated command (flags, quoting, NVTX filter, cache/clock choices), the
missing-ncu message, and a full `bench ncu` run against a stand-in ncu that runs the target."""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import assert_one_line_error

BENCH = """
import numpy as np
from profaudit import bench

def inputs(p, gen):
    return (gen.randn((p["n"],), "float32"), gen.randn((p["n"],), "float32"))

ADD = bench.Benchmark("vadd", backend="fake", inputs=inputs, reference=lambda x, y: x + y,
    output=lambda p, ins: np.empty_like(ins[0]),
    variants={"base": bench.Variant(lambda x, y, out: np.add(x, y, out=out), model_ns=lambda p: 4e4),
              "fast": bench.Variant(lambda x, y, out: np.add(x, y, out=out), model_ns=lambda p: 2e4)},
    params=bench.grid(n=[1024, 4096]))
"""


@pytest.fixture
def bench_file(tmp_path):
    p = tmp_path / "bench_add.py"
    p.write_text(textwrap.dedent(BENCH))
    return p


def _flag(argv, name):
    return argv[argv.index(name) + 1]


def test_plan_flags(bench_file, tmp_path):
    from profaudit.bench import ncu_plan
    from profaudit.bench.ncu import DEFAULT_METRICS

    plans = ncu_plan(bench_file, tmp_path / "out", pattern="n=4096", variants=["fast"], ncu="ncu", python="/usr/bin/python3")
    assert len(plans) == 1
    p = plans[0]
    a = p.argv
    assert a[0] == "ncu"
    assert _flag(a, "--clock-control") == "none"  # never change the GPU's clocks
    assert _flag(a, "--cache-control") == "all"  # no timing run recorded: the default cold mode
    # a start/end range (no trailing '/': that form matches push/pop ranges, which belong to one
    # thread and miss kernels launched from others, such as autograd's backward)
    assert "--nvtx" in a and _flag(a, "--nvtx-include") == p.range_name
    assert p.range_name == "profaudit.vadd.n-4096.fast"
    assert _flag(a, "--replay-mode") == "kernel"
    assert "--launch-skip" not in a  # the NVTX range fences the profiled calls
    metrics = _flag(a, "--metrics").split(",")
    for m in ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum", "l1tex__t_bytes.sum", "gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second", "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "sm__inst_executed_pipe_tensor.sum"):
        assert m in metrics
    assert tuple(metrics) == DEFAULT_METRICS
    sections = [a[i + 1] for i, x in enumerate(a) if x == "--section"]
    assert "SpeedOfLight_HierarchicalDoubleRooflineChart" in sections and "MemoryWorkloadAnalysis" in sections
    assert Path(_flag(a, "--export")) == (tmp_path / "out" / "ncu" / "vadd__fast__n-4096").resolve()
    assert p.report.name == "vadd__fast__n-4096.ncu-rep"
    # the profiled process: this file, this case, this variant
    i = a.index("/usr/bin/python3")
    assert a[i : i + 4] == ["/usr/bin/python3", "-m", "profaudit.bench.child", "target"]
    assert _flag(a, "--case") == "vadd[n=4096]" and _flag(a, "--variant") == "fast" and _flag(a, "--range") == p.range_name
    assert a[-1] == "--require-nvtx"  # the target refuses to run when it cannot emit the range
    # the printed command is one shell line that splits back into exactly these arguments
    assert shlex.split(p.command) == a
    assert "'vadd[n=4096]'" in p.command
    d = p.as_dict(tmp_path / "out")
    assert d["clock_control"] == "none" and "never changes GPU clocks" in d["clock_control_reason"]
    assert d["report"] == "ncu/vadd__fast__n-4096.ncu-rep"
    assert d["nvtx_filter"] == p.range_name and d["nvtx_range_kind"].startswith("start/end (process-wide")
    # cold caches for every kernel under --cache-control all: said, for multi-kernel variants
    assert "every profiled kernel starts with cold caches" in d["cache_control_reason"]


def test_cache_control_follows_the_timing_run(bench_file, tmp_path):
    from profaudit import bench

    out = tmp_path / "out"
    bench.run_file(bench_file, out, pattern="n=1024", options=bench.RunOptions(cache="hot", min_samples=10, max_time_s=0.01, max_warmup_s=0.01, min_warmup_s=0.001, min_time_s=0.001, block_target_s=0.001))
    hot = bench.ncu_plan(bench_file, out, pattern="n=1024", variants=["base"])[0]
    assert _flag(hot.argv, "--cache-control") == "none" and "'hot'" in hot.cache_reason
    forced = bench.ncu_plan(bench_file, out, pattern="n=1024", variants=["base"], options=bench.NcuOptions(cache_control="all"))[0]
    assert _flag(forced.argv, "--cache-control") == "all" and forced.cache_reason.startswith("requested explicitly")


def test_cache_control_ignores_another_files_run_and_follows_a_declaration(bench_file, tmp_path):
    from profaudit import bench

    out = tmp_path / "out"
    o = bench.RunOptions(cache="hot", min_samples=10, max_time_s=0.01, max_warmup_s=0.01, min_warmup_s=0.001, min_time_s=0.001, block_target_s=0.001)
    bench.run_file(bench_file, out, pattern="n=1024", options=o)
    # the same benchmarks in another file (or this file edited since): its run says nothing
    other = tmp_path / "copy" / "bench_add.py"
    other.parent.mkdir()
    other.write_text(bench_file.read_text() + "\n# edited\n")
    p = bench.ncu_plan(other, out, pattern="n=1024", variants=["base"])[0]
    assert _flag(p.argv, "--cache-control") == "all" and "default cache mode on a GPU" in p.cache_reason
    # a declared cache mode wins over whatever run sits in the folder
    declared = tmp_path / "declared" / "bench_add.py"
    declared.parent.mkdir()
    declared.write_text(bench_file.read_text().replace("params=bench.grid", 'cache="cold", params=bench.grid'))
    bench.run_file(declared, tmp_path / "o2", pattern="n=1024", options=o)
    p2 = bench.ncu_plan(declared, tmp_path / "o2", pattern="n=1024", variants=["base"])[0]
    assert _flag(p2.argv, "--cache-control") == "all" and p2.cache_reason.startswith("follows the timing cache mode 'cold' (the benchmark's declared cache mode)")


def test_kernel_name_filter_mode(bench_file, tmp_path):
    from profaudit import bench

    o = bench.NcuOptions(filter="kernel", kernel_name="add_kernel", warmup=7, calls=3)
    a = bench.ncu_plan(bench_file, tmp_path, pattern="n=1024", variants=["fast"], options=o)[0].argv
    assert "--nvtx" not in a
    assert _flag(a, "--kernel-name") == "regex:add_kernel"
    # 7 warm-up calls + 1 checked call + the harness's own launches (2 inputs x 2, 1 output x 3)
    assert _flag(a, "--launch-skip") == "15"
    assert _flag(a, "--launch-count") == "3"
    # the target runs 7 more calls after the 3 profiled: a skip that overcounts (harness kernels
    # that do not match the regex) still profiles the variant
    assert _flag(a, "--calls") == "10"
    o2 = bench.NcuOptions(filter="kernel", kernel_name="add_kernel", warmup=7, calls=3, launches_per_call=2)
    p2 = bench.ncu_plan(bench_file, tmp_path, pattern="n=1024", variants=["fast"], options=o2)[0]
    assert _flag(p2.argv, "--launch-skip") == "23" and _flag(p2.argv, "--launch-count") == "6" and _flag(p2.argv, "--calls") == "7"
    assert p2.as_dict()["launch_skip_breakdown"] == {"warmup_calls": 7, "check_calls": 1, "launches_per_call": 2, "harness_launches_max": 7}
    with pytest.raises(Exception, match="--kernel-name"):
        bench.NcuOptions(filter="kernel").validate()


def test_ncu_command_cli_and_set(bench_file, tmp_path, cli):
    r = cli("ncu-command", bench_file, "-o", tmp_path, "-k", "n=1024", "--set", "roofline", "--metrics", "", "--clock-control", "base")
    assert r.code == 0, r
    lines = r.out.strip().splitlines()
    assert len(lines) == 2  # base and fast
    a = shlex.split(lines[0])
    assert _flag(a, "--set") == "roofline" and "--section" not in a and "--metrics" not in a
    assert _flag(a, "--clock-control") == "base"
    assert_one_line_error(cli("ncu-command", bench_file, "--clock-control", "boost"), "--clock-control")
    assert_one_line_error(cli("ncu-command", bench_file, "--filter", "kernel"), "--kernel-name")


def test_missing_ncu_is_one_line(bench_file, tmp_path, cli, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.delenv("NCU", raising=False)
    r = cli("bench", "ncu", bench_file, "-o", tmp_path / "out")
    assert_one_line_error(r, "ncu (Nsight Compute CLI) is not on PATH")
    assert_one_line_error(cli("bench", "ncu", bench_file, "-o", tmp_path / "out", "--ncu", str(tmp_path / "nope")), "is not an executable")


STUB = r'''#!{python}
"""Stands in for ncu: answers --version/--list-sections, runs the target, writes the report."""
import subprocess, sys
argv = sys.argv[1:]
if argv == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2099.1.0.0 (stub)")
    sys.exit(0)
if argv == ["--list-sections"]:
    print("Identifier                Display Name\n-----\nSpeedOfLight              GPU Speed Of Light Throughput\nMemoryWorkloadAnalysis    Memory Workload Analysis\nLaunchStats               Launch Statistics")
    sys.exit(0)
if argv == ["--query-metrics"]:
    print("Device GA100\n----- -----\nMetric Name   Metric Description\n----- -----\n"
          "dram__bytes   # of bytes accessed in DRAM\n"
          "sm__ops_path_tensor_src_fp16_dst_fp32   # of tensor ops\n"
          "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_on   # of sparse tensor ops\n"
          "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32   # of HMMA ops")
    sys.exit(0)
export = argv[argv.index("--export") + 1]
target = argv[argv.index("--force-overwrite") + 1:]
open("{log}", "a").write(" ".join(argv) + "\n")
rc = subprocess.call(target)
if rc == 0:
    open(export + ".ncu-rep", "wb").write(b"stub report")
sys.exit(rc)
'''


def _stub_ncu(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    stub = bindir / "ncu"
    stub.write_text(STUB.replace("{python}", sys.executable).replace("{log}", str(tmp_path / "ncu-calls.txt")))
    stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("NCU", raising=False)


def test_multi_kernel_variant_under_cold_caches_is_noted(bench_file, tmp_path, cli, monkeypatch):
    from profaudit.bench import ncu

    _stub_ncu(tmp_path, monkeypatch)
    monkeypatch.setattr(ncu, "_count_kernels", lambda report: 3)  # an unfused chain: 3 kernels per call
    out = tmp_path / "out"
    r = cli("bench", "ncu", bench_file, "-o", out, "-k", "n=1024", "--variant", "fast", "--warmup", "1", "--calls", "1")
    assert r.code == 0, r
    rec = json.loads((out / "manifest.json").read_text())["ncu"][0]
    assert rec["cache_control"] == "all" and rec["cache_note"].startswith("3 kernels for 1 call: under --cache-control all each started with cold caches")
    assert "note: 3 kernels for 1 call:" in r.err


def test_bench_ncu_runs_the_target_and_records_it(bench_file, tmp_path, cli, monkeypatch):
    _stub_ncu(tmp_path, monkeypatch)
    stub, calls = tmp_path / "bin" / "ncu", tmp_path / "ncu-calls.txt"
    out = tmp_path / "out"
    r = cli("bench", "ncu", bench_file, "-o", out, "-k", "n=1024", "--variant", "fast", "--warmup", "2", "--calls", "2")
    assert r.code == 0, r
    assert r.out.strip().startswith(str(stub))  # the exact command is printed
    report = out / "ncu" / "vadd__fast__n-1024.ncu-rep"
    assert report.read_bytes() == b"stub report"
    doc = json.loads((out / "manifest.json").read_text())
    rec = doc["ncu"][0]
    assert rec["returncode"] == 0 and rec["report_exists"] is True
    assert rec["ncu_version"].startswith("Version 2099")
    # sections this ncu does not know were dropped before running, and listed
    assert "SpeedOfLight_HierarchicalTensorRooflineChart" in rec["sections_dropped"]
    assert rec["sections"] == ["SpeedOfLight", "MemoryWorkloadAnalysis", "LaunchStats"]
    assert "--section SpeedOfLight_RooflineChart" not in calls.read_text()
    # tensor FLOP counters are asked of ncu (chip-dependent names), all-instruction ones only
    assert rec["tensor_flop_metrics"] == ["sm__ops_path_tensor_src_fp16_dst_fp32.sum", "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_on.sum"]
    assert "sm__ops_path_tensor_src_fp16_dst_fp32.sum" in calls.read_text() and "_op_hmma_" not in calls.read_text()
    t = rec["target"]
    assert t["correctness"]["ok"] is True and t["profiled_calls"] == 2 and t["warmup_calls"] == 2
    assert t["range"] == "profaudit.vadd.n-1024.fast"
    assert t["call_method"] == "plain call" and t["nvtx_domain"] is None  # bound as the timing run binds it
    assert (out / "ncu" / "vadd__fast__n-1024.log").read_text().startswith("$ ")


def test_target_refuses_a_wrong_kernel(tmp_path):
    from profaudit.bench.ncu import run_target
    from profaudit.errors import UsageError

    p = tmp_path / "bad.py"
    p.write_text(textwrap.dedent(BENCH).replace("lambda x, y, out: np.add(x, y, out=out), model_ns=lambda p: 2e4", "lambda x, y, out: np.subtract(x, y, out=out), model_ns=lambda p: 2e4"))
    with pytest.raises(UsageError, match="wrong result before profiling"):
        run_target(str(p), "vadd[n=1024]", "fast", warmup=0, calls=1, range_name="r")


def test_target_without_nvtx_is_refused(tmp_path):
    pytest.importorskip("torch")
    from profaudit.bench.ncu import run_target
    from profaudit.errors import UsageError

    p = tmp_path / "t.py"
    p.write_text(textwrap.dedent(BENCH).replace('backend="fake"', 'backend="torch"').replace("np.empty_like(ins[0])", "ins[0].clone()").replace("np.add(x, y, out=out)", "__import__('torch').add(x, y, out=out)"))
    with pytest.raises(UsageError, match="no NVTX API"):
        run_target(str(p), "vadd[n=1024]", "fast", warmup=0, calls=1, range_name="r", device="cpu", require_nvtx=True)
    # without the NVTX filter (kernel-name mode) the same target runs
    res = run_target(str(p), "vadd[n=1024]", "fast", warmup=1, calls=1, range_name="r", device="cpu")
    assert res["correctness"]["ok"] is True


GATHER = """
import numpy as np
from profaudit import bench

def inputs(p, gen):
    return (gen.randint((p["n"],), 0, p["n"], "int32"), gen.randn((p["n"],), "float32"))

SCALE = bench.Benchmark("gather_scale", backend="fake", inputs=inputs, reference=lambda i, x: x[i] / 3.0,
    variants={"f32": bench.Variant(lambda i, x: x[i] / np.float32(3.0), model_ns=lambda p: 2e4)},
    params=bench.grid(n=[1024]))
"""


def test_target_checks_like_the_timing_run(tmp_path):
    """The profiled process checks a variant with the timing run's dtype and tolerance: here the
    float32 data input, not the int32 index that comes first (which would demand exact equality)."""
    from profaudit.bench import RunOptions, run_file
    from profaudit.bench.ncu import run_target

    p = tmp_path / "gather.py"
    p.write_text(textwrap.dedent(GATHER))
    timed = run_file(p, tmp_path / "out", options=RunOptions(max_time_s=0.05, telemetry=False))
    assert timed["cases"][0]["variants"]["f32"]["status"] == "ok"
    res = run_target(str(p), "gather_scale[n=1024]", "f32", warmup=0, calls=1, range_name="r")
    assert res["correctness"]["ok"] is True and "rtol=0.0001" in res["correctness"]["message"]


def test_ranges_are_process_wide_and_the_filter_names_their_domain(monkeypatch):
    """torch: start/end ranges in the default domain (a push/pop range would miss kernels that
    autograd launches from its own threads); jax through the `nvtx` package: its own named domain,
    and the ncu filter names the same one."""
    import importlib.util
    import types

    pytest.importorskip("torch")
    from profaudit.bench import backend_jax
    from profaudit.bench.backend_torch import TorchBackend
    from profaudit.bench.ncu import nvtx_filter_for

    log = []
    nv = types.SimpleNamespace(range_start=lambda name: log.append(("start", name)) or 7, range_end=lambda rid: log.append(("end", rid)),
                               range_push=lambda name: log.append("push"), range_pop=lambda: log.append("pop"))
    b = TorchBackend.__new__(TorchBackend)
    b.device_kind, b.torch = "cuda", types.SimpleNamespace(cuda=types.SimpleNamespace(nvtx=nv))
    with b.nvtx_range("profaudit.r"):
        log.append("call")
    assert log == [("start", "profaudit.r"), "call", ("end", 7)]
    assert nvtx_filter_for("torch", "profaudit.r") == "profaudit.r"
    # jax with the nvtx package installed: domain "profaudit" in both the range and the filter
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "nvtx" else real(name, *a))
    assert backend_jax.nvtx_api() == ("nvtx", "profaudit")
    assert nvtx_filter_for("jax", "profaudit.r") == "profaudit@profaudit.r"
    fake_nvtx = types.SimpleNamespace(start_range=lambda message, domain: log.append(("nvtx-start", message, domain)) or 9, end_range=lambda rid: log.append(("nvtx-end", rid)))
    monkeypatch.setitem(sys.modules, "nvtx", fake_nvtx)
    jb = backend_jax.JaxBackend.__new__(backend_jax.JaxBackend)
    log.clear()
    with jb.nvtx_range("profaudit.r"):
        pass
    assert log == [("nvtx-start", "profaudit.r", "profaudit"), ("nvtx-end", 9)] and jb.nvtx_domain == "profaudit"
