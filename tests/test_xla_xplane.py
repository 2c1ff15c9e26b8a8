"""XSpace (`*.xplane.pb`) reader: cross-checked against jax's own C++ reader (`jax.profiler.ProfileData`)
on profiles captured here with JAX on the CPU, on every usable corpus file, and on hand-written
XSpaces serialised by jax (`ProfileData.text_proto_to_serialized_xspace`), so the encoder is not ours."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tests.conftest import assert_one_line_error, corpus_files, corpus_ids

jax = pytest.importorskip("jax")
from jax.profiler import ProfileData  # noqa: E402

from profaudit.parsers.base import ReadOptions  # noqa: E402
from profaudit.parsers import xspace  # noqa: E402
from profaudit.parsers.protowire import WireError  # noqa: E402
from profaudit.parsers.xplane import PARSER, _nest, _nest_lines, read_xspace, space_to_tables  # noqa: E402
from profaudit.parsers.xspace import decode_xspace, span_texts  # noqa: E402

MANGLED = "openxla__xprof__tpu_inference_2.xplane.pb"
USABLE = [p for p in corpus_files("xplane", "*.xplane.pb") if p.name != MANGLED]


def _capture(log_dir: Path, steps: int = 3) -> Path:
    import jax.numpy as jnp

    @jax.jit
    def step(x, w):
        return jnp.tanh(x @ w).sum()

    x = jnp.ones((128, 128))
    w = jnp.ones((128, 128))
    step(x, w).block_until_ready()
    jax.profiler.start_trace(str(log_dir))
    try:
        for i in range(steps):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                step(x, w).block_until_ready()
    finally:
        jax.profiler.stop_trace()
    files = sorted(log_dir.glob("plugins/profile/*/*.xplane.pb"))
    assert files, "jax.profiler wrote no xplane.pb"
    return files[-1]


@pytest.fixture(scope="module")
def captured(tmp_path_factory) -> Path:
    return _capture(tmp_path_factory.mktemp("jaxlog"))


def _compare_with_profiledata(path: Path) -> int:
    """Every plane, line and event: names, counts, start/duration and per-event stats agree."""
    buf = path.read_bytes()
    ours = decode_xspace(buf)
    theirs = ProfileData.from_serialized_xspace(buf)
    tplanes = list(theirs.planes)
    assert [p.name for p in ours.planes] == [p.name for p in tplanes]
    n = 0
    for op, tp in zip(ours.planes, tplanes):
        assert op.stats == {k: v for k, v in tp.stats} or _stats_equal(op.stats, dict(tp.stats))
        tlines = list(tp.lines)
        assert [l.name for l in op.lines] == [l.name for l in tlines]
        for ol, tl in zip(op.lines, tlines):
            tev = list(tl.events)
            assert len(ol) == len(tev)
            for mid, off, dur, raw, te in zip(ol.metadata_ids, ol.offsets_ps, ol.durations_ps, ol.stats, tev):
                md = op.event_metadata.get(mid)
                assert (md.name if md else "") == te.name
                if off is not None:
                    start_ps = ol.timestamp_ns * 1000 + off
                    if abs(te.start_ns) < 2**52:
                        assert start_ps // 1000 == int(te.start_ns), (te.name, start_ps, te.start_ns)
                    else:
                        assert start_ps / 1000 == pytest.approx(te.start_ns, rel=1e-15)
                    assert dur // 1000 == int(te.duration_ns)
                assert _stats_equal(op.named(raw), dict(te.stats))
                n += 1
    return n


def _stats_equal(ours: dict, theirs: dict) -> bool:
    if set(ours) != set(theirs):
        return False
    for k, v in ours.items():
        t = theirs[k]
        if isinstance(v, bytes):
            # ProfileData hands bytes back as str (latin-1-ish); compare lengths only
            continue
        if isinstance(v, float) or isinstance(t, float):
            if float(v) != pytest.approx(float(t), rel=1e-12):
                return False
        elif str(v) != str(t):
            return False
    return True


# ---------------------------------------------------------------------------------------------
# captured here, on the CPU


def test_captured_cpu_profile_matches_profiledata(captured):
    assert _compare_with_profiledata(captured) > 10


def test_captured_cpu_profile_tables(captured):
    p = PARSER.read(captured, ReadOptions())
    k = p.kernels
    assert k.height >= 3
    # XLA:CPU ops run on host threads and carry hlo_op / hlo_module: they are the kernels
    assert set(k["device_name"]) == {"CPU"}
    assert set(k["module"]) == {"jit_step"}
    assert k["op_name"].null_count() == 0
    assert (k["duration_ns"] > 0).all()
    assert k["kernel_id"].to_list() == list(range(k.height))
    assert k["start_ns"].is_sorted()
    steps = p.ranges.filter(pl.col("kind") == "step")
    assert steps["name"].to_list() == ["train"] * 3
    assert p.metadata["tool"] == "jax"
    assert p.metadata["tool_version"] == jax.__version__
    assert p.metadata["time_base"] == "profile_start"
    assert p.metadata["profile_start_time_ns"] > 10**18
    assert p.metadata["capture_time"].endswith("Z")
    # independent count of the kernels: ProfileData events with hlo_op and no correlation id
    pd = ProfileData.from_file(str(captured))
    want = [(e.name, e.duration_ns) for pl_ in pd.planes if pl_.name == "/host:CPU" for ln in pl_.lines for e in ln.events
            if any(n == "hlo_op" for n, _ in e.stats) and not any(n == "correlation_id" for n, _ in e.stats)]
    assert sorted(want) == sorted(zip(k["name"].to_list(), [int(d) for d in k["duration_ns"].to_list()]))


def test_captured_ranges_nest(captured):
    p = PARSER.read(captured, ReadOptions())
    r = p.ranges
    assert r["range_id"].to_list() == list(range(r.height))
    child = r.filter(pl.col("parent_range_id").is_not_null()).join(
        r.select(pl.col("range_id").alias("parent_range_id"), pl.col("start_ns").alias("ps"), pl.col("end_ns").alias("pe"), pl.col("depth").alias("pd")),
        on="parent_range_id")
    assert child.height > 0
    assert (child["start_ns"] >= child["ps"]).all() and (child["end_ns"] <= child["pe"]).all()
    assert (child["depth"] == child["pd"] + 1).all()


# ---------------------------------------------------------------------------------------------
# corpus


@pytest.mark.corpus
@pytest.mark.parametrize("path", USABLE, ids=corpus_ids(USABLE))
def test_corpus_matches_profiledata(path):
    assert _compare_with_profiledata(path) > 100


@pytest.mark.corpus
@pytest.mark.parametrize("path", USABLE, ids=corpus_ids(USABLE))
def test_corpus_kernels_cross_check(path):
    """Kernel and transfer rows == the device-stream events ProfileData sees, split by memcpy."""
    p = PARSER.read(path, ReadOptions())
    pd = ProfileData.from_file(str(path))
    kern, xfer = [], []
    for plane in pd.planes:
        if not plane.name.startswith("/device:"):
            continue
        for line in plane.lines:
            if not line.name.startswith("Stream #"):
                continue
            for e in line.events:
                st = dict(e.stats)
                is_copy = "memcpy_details" in st or e.name.startswith(("Memcpy", "Memset", "CopyDeviceTo", "CopyHostTo"))
                (xfer if is_copy else kern).append((e.name, int(e.duration_ns), int(e.start_ns)))
    assert p.kernels.height == len(kern) > 0
    got = sorted(zip(p.kernels["name"].to_list(), [int(d) for d in p.kernels["duration_ns"]], p.kernels["start_ns"].to_list()))
    assert got == sorted(kern)
    assert p.transfers.height == len(xfer)
    assert p.metadata["device_name"]
    assert p.metadata["device_clock_rate_hz"] > 1e9  # the file stores kHz


@pytest.mark.corpus
def test_corpus_mi300x_details():
    path = next((p for p in USABLE if "jax08_attention" in p.name), None)
    if path is None:
        pytest.skip("corpus file missing")
    p = PARSER.read(path, ReadOptions())
    k = p.kernels
    assert p.metadata["device_name"] == "AMD Instinct MI300X"
    assert p.metadata["device_clock_rate_hz"] == 2.1e9
    gemm = k.filter(pl.col("op_name") == "custom-call.1").row(0, named=True)
    # kernel_details " grid:4,64,1 block:256,1,1 private_mem:0 group_mem:8704"
    assert (gemm["grid_x"], gemm["grid_y"], gemm["grid_z"], gemm["block_x"]) == (4, 64, 1, 256)
    assert gemm["grid_size"] == 256 and gemm["shared_mem_bytes"] == 8704
    assert gemm["module"] == "jit_matmul" and gemm["category"] == "custom-call"
    assert gemm["correlation_id"] == 6 and gemm["stream"] == 16
    pid = p.metrics.filter((pl.col("kernel_id") == gemm["kernel_id"]) & (pl.col("metric") == "program_id")).row(0, named=True)
    assert pid["value"] == 19.0
    if "value_int" in pid:
        assert pid["value_int"] == 19


@pytest.mark.corpus
def test_corpus_tensorflow_gpu_details():
    path = next((p for p in USABLE if "34.83.195.179" in p.name), None)
    if path is None:
        pytest.skip("corpus file missing")
    p = PARSER.read(path, ReadOptions())
    assert p.metadata["tool"] == "tensorflow"
    assert p.metadata["device_name"].startswith("Tesla V100")
    k = p.kernels
    assert set(k["device_id"].unique()) == {4, 6}
    assert k["registers_per_thread"].null_count() == 0 and k["context_id"].null_count() == 0
    assert k["nvtx_range"].null_count() < k.height  # TF annotation -> innermost range
    h2d = p.transfers.filter(pl.col("direction") == "HtoD")
    assert h2d.height > 0 and h2d["bytes"].null_count() == 0
    steps = p.ranges.filter(pl.col("kind") == "step")
    assert steps.height == 2 and set(steps["device_id"]) == {4, 6}
    assert p.counters.filter(pl.col("counter") == "memory_used_bytes").height > 0


@pytest.mark.corpus
def test_corpus_legacy_rocm_implausible_details_dropped():
    path = next((p for p in USABLE if "legacy" in p.name), None)
    if path is None:
        pytest.skip("corpus file missing")
    p = PARSER.read(path, ReadOptions())
    # regs:2191500840 in this file is uninitialised memory, not a register count
    assert p.kernels["registers_per_thread"].null_count() == p.kernels.height
    assert p.metadata["implausible_kernel_details_dropped"] > 0
    assert p.transfers.filter(pl.col("direction") == "DtoD").height == p.transfers.height > 0


@pytest.mark.corpus
def test_mangled_corpus_file_one_line(cli):
    d = corpus_files("xplane", MANGLED)
    if not d:
        pytest.skip("mangled corpus file missing")
    res = cli("kernels", str(d[0]))
    assert_one_line_error(res, "corrupt or truncated XSpace protobuf")
    assert "text conversion" in res.err


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["openxla__xprof__localhost.overview_page.pb", "openxla__xprof__localhost.input_pipeline.pb",
                                  "openxla__xprof__10.240.1.50.tensorflow_stats.pb"])
def test_xprof_tool_files_are_not_xplanes(cli, name):
    files = corpus_files("other", name)
    if not files:
        pytest.skip("corpus file missing")
    from profaudit.parsers import find_parser

    assert find_parser(files[0]) is None or find_parser(files[0]).name != "xplane"
    assert_one_line_error(cli("kernels", str(files[0])), "profile-plugin tool file")


# ---------------------------------------------------------------------------------------------
# hand-written XSpaces, serialised by jax (not by us)

TPU_TEXT = """
hostnames: "tpu-host-0"
planes { id: 3 name: "/device:TPU:0"
  stats { metadata_id: 1 str_value: "TPU v5 lite" }
  stats { metadata_id: 2 double_value: 197.0 }
  lines { id: 1 name: "XLA Modules" timestamp_ns: 1000
    events { metadata_id: 10 offset_ps: 0 duration_ps: 9000000 }
  }
  lines { id: 2 name: "XLA Ops" timestamp_ns: 1000
    events { metadata_id: 11 offset_ps: 1500 duration_ps: 2501 stats { metadata_id: 5 ref_value: 6 } }
    events { metadata_id: 12 offset_ps: 4000999 duration_ps: 1000001 }
    events { metadata_id: 11 num_occurrences: 7 duration_ps: 10 }
  }
  lines { id: 3 name: "Steps" timestamp_ns: 1000
    events { metadata_id: 13 offset_ps: 0 duration_ps: 9000000 }
  }
  event_metadata { key: 10 value { id: 10 name: "jit_train_step(42)" } }
  event_metadata { key: 11 value { id: 11 name: "fusion.1"
     stats { metadata_id: 3 double_value: 1000000.0 }
     stats { metadata_id: 4 uint64_value: 4096 }
     stats { metadata_id: 5 str_value: "loop fusion" } } }
  event_metadata { key: 12 value { id: 12 name: "convolution.2"
     stats { metadata_id: 3 int64_value: 5000000 }
     stats { metadata_id: 7 bytes_value: "BREAKDOWN" } } }
  event_metadata { key: 13 value { id: 13 name: "0" } }
  stat_metadata { key: 1 value { id: 1 name: "device_type_string" } }
  stat_metadata { key: 2 value { id: 2 name: "peak_teraflops_per_second" } }
  stat_metadata { key: 3 value { id: 3 name: "flops" } }
  stat_metadata { key: 4 value { id: 4 name: "bytes_accessed" } }
  stat_metadata { key: 5 value { id: 5 name: "hlo_category" } }
  stat_metadata { key: 6 value { id: 6 name: "convolution fusion" } }
  stat_metadata { key: 7 value { id: 7 name: "memory_access_breakdown" } }
}
planes { id: 4 name: "/host:CPU"
  lines { id: 77 name: "main" timestamp_ns: 500
    events { metadata_id: 1 offset_ps: 0 duration_ps: 10000 stats { metadata_id: 1 int64_value: 3 } }
    events { metadata_id: 2 offset_ps: 1000 duration_ps: 2000 }
  }
  event_metadata { key: 1 value { id: 1 name: "train" } }
  event_metadata { key: 2 value { id: 2 name: "fusion.1" } }
  stat_metadata { key: 1 value { id: 1 name: "step_num" } }
}
planes { name: "Task Environment"
  stats { metadata_id: 1 uint64_value: 1700000000000000000 }
  stats { metadata_id: 2 uint64_value: 1700000000009000000 }
  stat_metadata { key: 1 value { id: 1 name: "profile_start_time" } }
  stat_metadata { key: 2 value { id: 2 name: "profile_stop_time" } }
}
"""


def _breakdown() -> bytes:
    """MemoryAccessBreakdown: HBM read 3000, HBM write 1000, on-chip (space 2) read 555."""

    def varint(v):
        out = bytearray()
        while True:
            b = v & 0x7F
            v >>= 7
            out.append(b | (0x80 if v else 0))
            if not v:
                return bytes(out)

    def entry(op, space, n):
        body = b"\x08" + varint(op) + b"\x10" + varint(space) + b"\x18" + varint(n)
        return b"\x0a" + varint(len(body)) + body

    return entry(1, 1, 3000) + entry(2, 1, 1000) + entry(1, 2, 555)


def _tpu_file(tmp_path: Path) -> Path:
    text = TPU_TEXT.replace('"BREAKDOWN"', '"' + "".join(f"\\{b:03o}" for b in _breakdown()) + '"')
    buf = ProfileData.text_proto_to_serialized_xspace(text)
    f = tmp_path / "tpu-host-0.xplane.pb"
    f.write_bytes(buf)
    return f


def test_handwritten_tpu_space(tmp_path):
    f = _tpu_file(tmp_path)
    assert _compare_with_profiledata(f) == 7
    p = PARSER.read(f, ReadOptions())
    k = p.kernels.sort("kernel_id")
    assert k.height == 2  # the aggregated (num_occurrences) event is not an execution
    a, b = k.row(0, named=True), k.row(1, named=True)
    # ps offsets on a ns base, exactly: 1000 ns + 1500 ps -> 1001.5 ns (floor 1001), 2501 ps
    assert a["start_ns"] == 1001 and a["duration_ns"] == 2.501 and a["end_ns"] == (1000 * 1000 + 1500 + 2501) // 1000
    assert b["start_ns"] == 1000 + 4000 and b["duration_ns"] == 1000.001
    assert a["device_name"] == "TPU v5 lite" and p.metadata["device_name"] == "TPU v5 lite"
    # event stat (ref_value -> name of stat metadata 6) overrides the metadata stat "loop fusion"
    assert a["category"] == "convolution fusion"
    assert a["flops_total"] == 1e6 and a["dram_bytes"] == 4096 and a["dram_bytes_method"] == "cost-analysis"
    assert b["flops_total"] == 5e6
    assert (b["dram_read_bytes"], b["dram_write_bytes"], b["dram_bytes"]) == (3000.0, 1000.0, 4000.0)
    assert b["dram_bytes_method"] == "cost-analysis:hbm-breakdown"
    # no hlo_module stat on TPU: the enclosing "XLA Modules" event names the module
    assert a["module"] == b["module"] == "jit_train_step"
    assert a["op_name"] == "fusion.1"
    assert p.metadata["aggregated_events_skipped"] == 1
    assert p.metadata["host"] == "tpu-host-0"
    assert p.metadata["profile_duration_ns"] == 9_000_000
    # per-plane id spaces: host plane ids 1/2 name other things than the TPU plane's
    host = p.ranges.filter(pl.col("domain") == "/host:CPU").sort("start_ns")
    assert host["name"].to_list() == ["train", "fusion.1"]
    assert host["kind"].to_list() == ["step", "host"] and host["depth"].to_list() == [0, 1]
    steps = p.ranges.filter((pl.col("kind") == "step") & (pl.col("domain") == "Steps"))
    assert steps["device_id"].to_list() == [0]


def test_epoch_time_base_kept_exact(tmp_path):
    text = """
planes { id: 1 name: "/device:GPU:0"
  stats { metadata_id: 1 int64_value: 1410000 }
  stats { metadata_id: 2 int64_value: 8 } stats { metadata_id: 3 int64_value: 0 } stats { metadata_id: 4 int64_value: 108 }
  stats { metadata_id: 5 uint64_value: 85899345920 } stats { metadata_id: 11 uint64_value: 2039000000000 }
  lines { id: 7 name: "Stream #7(Kernel)" timestamp_ns: 1700000000123456789
    events { metadata_id: 1 offset_ps: 999 duration_ps: 1234567
      stats { metadata_id: 6 ref_value: 9 } stats { metadata_id: 7 uint64_value: 55 } stats { metadata_id: 8 str_value: "$$3" } }
    events { metadata_id: 2 offset_ps: 5000000 duration_ps: 1000
      stats { metadata_id: 10 str_value: "kind_src:pinned kind_dst:device size:4096 dest:0 async:1" } }
  }
  event_metadata { key: 1 value { id: 1 name: "void gemm<float>(float*, int)" } }
  event_metadata { key: 2 value { id: 2 name: "MemcpyH2D" } }
  stat_metadata { key: 1 value { id: 1 name: "clock_rate" } }
  stat_metadata { key: 2 value { id: 2 name: "compute_cap_major" } }
  stat_metadata { key: 3 value { id: 3 name: "compute_cap_minor" } }
  stat_metadata { key: 4 value { id: 4 name: "core_count" } }
  stat_metadata { key: 5 value { id: 5 name: "memory_size" } }
  stat_metadata { key: 6 value { id: 6 name: "kernel_details" } }
  stat_metadata { key: 7 value { id: 7 name: "correlation_id" } }
  stat_metadata { key: 8 value { id: 8 name: "context_id" } }
  stat_metadata { key: 9 value { id: 9 name: "regs:32 static_shared:1024 dynamic_shared:2048 grid:10,2,1 block:128,1,1" } }
  stat_metadata { key: 10 value { id: 10 name: "memcpy_details" } }
  stat_metadata { key: 11 value { id: 11 name: "memory_bandwidth" } }
}
"""
    f = tmp_path / "gpu.xplane.pb"
    f.write_bytes(ProfileData.text_proto_to_serialized_xspace(text))
    assert _compare_with_profiledata(f) == 2
    p = PARSER.read(f, ReadOptions())
    k = p.kernels.row(0, named=True)
    base_ps = 1700000000123456789 * 1000
    assert k["start_ns"] == (base_ps + 999) // 1000 == 1700000000123456789  # exact int64, no float rounding
    assert k["end_ns"] == (base_ps + 999 + 1234567) // 1000
    assert k["duration_ns"] == 1234.567
    assert (k["registers_per_thread"], k["static_shared_mem_bytes"], k["dynamic_shared_mem_bytes"], k["shared_mem_bytes"]) == (32, 1024, 2048, 3072)
    assert (k["grid_size"], k["block_size"], k["correlation_id"], k["context_id"], k["stream"]) == (20, 128, 55, 3, 7)
    assert k["short_name"] == "gemm"
    assert p.metadata["device_name"] == "NVIDIA A100-SXM4-80GB"  # HBM2e bandwidth tells SXM4 from PCIe
    assert p.metadata["device_clock_rate_hz"] == 1.41e9
    assert p.metadata["time_base"] == "unix_epoch"
    t = p.transfers.row(0, named=True)
    assert (t["kind"], t["direction"], t["src_kind"], t["dst_kind"], t["bytes"]) == ("memcpy", "HtoD", "pinned", "device", 4096.0)
    assert t["throughput_bytes_per_s"] == pytest.approx(4096 / 1e-9)


# ---------------------------------------------------------------------------------------------
# bad input


def test_truncated_capture_one_line(cli, captured, tmp_path):
    buf = captured.read_bytes()
    f = tmp_path / "cut.xplane.pb"
    f.write_bytes(buf[: len(buf) // 2])
    assert_one_line_error(cli("kernels", str(f)), "corrupt or truncated XSpace")


def test_gzipped_xplane_one_line(cli, captured, tmp_path):
    f = tmp_path / "z.xplane.pb"
    f.write_bytes(gzip.compress(captured.read_bytes()))
    assert_one_line_error(cli("kernels", str(f)), "gzip")


def test_garbage_and_empty(cli, tmp_path):
    g = tmp_path / "g.xplane.pb"
    g.write_bytes(bytes(range(256)) * 4)
    assert_one_line_error(cli("kernels", str(g)), "XSpace")
    e = tmp_path / "e.xplane.pb"
    e.write_bytes(b"")
    assert_one_line_error(cli("kernels", str(e)), "empty")
    only_host = tmp_path / "h.xplane.pb"
    only_host.write_bytes(b"\x22\x03abc")  # an XSpace with a hostname and no planes
    assert_one_line_error(cli("kernels", str(only_host)), "no planes")


def test_space_to_tables_on_empty_planes():
    from profaudit.parsers.xspace import Plane, XSpace

    tables, md = space_to_tables(XSpace(planes=[Plane(name="/device:GPU:0")]))
    assert tables["kernels"] is None and md["device_count"] == 1


HOST_ONLY_TEXT = """
planes { id: 4 name: "/host:CPU"
  lines { id: 77 name: "main" timestamp_ns: 500
    events { metadata_id: 1 offset_ps: 0 duration_ps: 10000 }
  }
  event_metadata { key: 1 value { id: 1 name: "train" } }
}
"""


def test_device_option_on_a_profile_without_kernels(tmp_path):
    f = tmp_path / "host.xplane.pb"
    f.write_bytes(ProfileData.text_proto_to_serialized_xspace(HOST_ONLY_TEXT))
    p = PARSER.read(f, ReadOptions(device="NVIDIA H100 80GB HBM3"))
    assert p.metadata["device_name"] == "NVIDIA H100 80GB HBM3" and p.kernels.height == 0
    assert p.ranges["name"].to_list() == ["train"]


def test_read_xspace_keeps_hostnames(captured):
    assert read_xspace(captured).hostnames


# ---------------------------------------------------------------------------------------------
# rooflines from these profiles (device names the spec registry maps, flops_total + dram_bytes)


def test_tpu_profile_roofline(tmp_path):
    from profaudit.roofline import roofline
    from profaudit.specs import match_device

    p = PARSER.read(_tpu_file(tmp_path), ReadOptions())
    spec = match_device(p.metadata["device_name"])
    assert spec is not None and spec.key == "tpu-v5e"
    r = roofline(p.kernels, flops_precision="bf16_tensor", clock="boost").sort("kernel_id")
    peak = spec.peak_flops_per_s("bf16_tensor")
    bw = spec.bandwidth_bytes_per_s("dram")
    conv = r.row(1, named=True)
    k = p.kernels.sort("kernel_id").row(1, named=True)
    assert conv["device_key"] == "tpu-v5e"
    assert conv["achieved_flops_per_s"] == pytest.approx(k["flops_total"] / (k["duration_ns"] * 1e-9))
    assert conv["ai_dram_flops_per_byte"] == pytest.approx(k["flops_total"] / k["dram_bytes"])
    assert conv["attainable_flops_per_s_at_boost"] == pytest.approx(min(peak, conv["ai_dram_flops_per_byte"] * bw))
    assert conv["bound_at_boost"] == ("compute" if k["flops_total"] / peak >= k["dram_bytes"] / bw else "dram")


@pytest.mark.corpus
def test_mi300x_roofline_after_cost_attach():
    from profaudit.roofline import roofline
    import profaudit.xla as X

    path = next((p for p in USABLE if "jax08_attention" in p.name), None)
    if path is None:
        pytest.skip("corpus file missing")
    p = PARSER.read(path, ReadOptions())
    # 4096x... matmul: the cost the module would report, given by hand here (no MI300X to compile on)
    # jit_matmul ran as five compiled programs (shapes); a cost analysis is one program's
    p2 = X.attach_cost_analysis(p, {"flops": 2 * 1024**3, "bytes accessed": 3 * 1024 * 1024 * 2}, module="jit_matmul(19)")
    r = roofline(p2.kernels.filter(pl.col("flops_total").is_not_null()), flops_precision="bf16_tensor", clock="boost")
    assert r.height == 12
    assert set(r["device_key"]) == {"mi300x"}
    assert r["attainable_flops_per_s_at_boost"].null_count() == 0 and (r["roof_pct_at_boost"] > 0).all()



# ---------------------------------------------------------------------------------------------
# the column-wise decoder on long lines, its run finder and its nesting, against references


def _long_line_text(n: int, seed: int = 7) -> str:
    """A GPU plane with one stream line of n kernels (str, ref, uint, negative int and double
    stats, some on the event metadata) and a host line of n nested TraceMe events."""
    rng = random.Random(seed)
    ev, host = [], []
    t = 0
    for i in range(n):
        mid = 1 + i % 5
        stats = [f"stats {{ metadata_id: 2 uint64_value: {1000 + i} }}"]
        if i % 3 == 0:
            stats.append(f"stats {{ metadata_id: 3 int64_value: {-rng.randrange(1, 1 << 40)} }}")
        if i % 4 == 0:
            stats.append(f'stats {{ metadata_id: 4 str_value: "grid:{rng.randrange(1, 99)},1,1 block:128,1,1 regs:{rng.randrange(8, 64)}" }}')
        if i % 7 == 0:
            stats.append("stats { metadata_id: 5 ref_value: 6 }")
        ev.append(f"events {{ metadata_id: {mid} offset_ps: {t} duration_ps: {rng.randrange(0, 5000)} {' '.join(stats)} }}")
        t += rng.randrange(1000, 9000)
    # host: a parent every 10 events with 9 children (and an instant one) inside it
    t = 0
    for i in range(n // 10):
        host.append(f"events {{ metadata_id: 1 offset_ps: {t} duration_ps: 100000 stats {{ metadata_id: 1 int64_value: {i} }} }}")
        for j in range(9):
            host.append(f"events {{ metadata_id: 2 offset_ps: {t + 1000 + j * 10000} duration_ps: {0 if j == 4 else 9000} }}")
        t += 200000
    md = "".join(f'event_metadata {{ key: {k} value {{ id: {k} name: "kernel_{k}" stats {{ metadata_id: 7 double_value: {k * 1.5} }} }} }}\n'
                 for k in range(1, 6))
    return f"""
planes {{ id: 1 name: "/device:GPU:0"
  lines {{ id: 1 name: "Stream #1(Kernel)" timestamp_ns: 1000 {' '.join(ev)} }}
  {md}
  stat_metadata {{ key: 2 value {{ id: 2 name: "correlation_id" }} }}
  stat_metadata {{ key: 3 value {{ id: 3 name: "some_offset" }} }}
  stat_metadata {{ key: 4 value {{ id: 4 name: "kernel_details" }} }}
  stat_metadata {{ key: 5 value {{ id: 5 name: "hlo_category" }} }}
  stat_metadata {{ key: 6 value {{ id: 6 name: "convolution" }} }}
  stat_metadata {{ key: 7 value {{ id: 7 name: "flops" }} }}
}}
planes {{ id: 2 name: "/host:CPU"
  lines {{ id: 42 name: "python" timestamp_ns: 500 {' '.join(host)} }}
  event_metadata {{ key: 1 value {{ id: 1 name: "train" }} }}
  event_metadata {{ key: 2 value {{ id: 2 name: "step_part" }} }}
  stat_metadata {{ key: 1 value {{ id: 1 name: "step_num" }} }}
}}
"""


@pytest.fixture(scope="module")
def long_line(tmp_path_factory) -> Path:
    f = tmp_path_factory.mktemp("long") / "long.xplane.pb"
    f.write_bytes(ProfileData.text_proto_to_serialized_xspace(_long_line_text(2000)))
    return f


def test_long_line_matches_profiledata(long_line):
    assert _compare_with_profiledata(long_line) == 2000 + 2000
    p = PARSER.read(long_line, ReadOptions())
    assert p.kernels.height == 2000
    k = p.kernels.sort("kernel_id")
    # metadata stat (flops) under event stats; ref_value resolved to the stat metadata's name
    assert k["flops_total"].null_count() == 0
    assert set(k["category"].drop_nulls()) == {"convolution"}
    assert k["grid_x"].null_count() == 1500
    assert p.metrics.filter(pl.col("metric") == "some_offset")["value_int"].max() < 0
    r = p.ranges.filter(pl.col("domain") == "/host:CPU")
    assert r.height == 2000 and r["depth"].max() == 1
    assert r.filter(pl.col("depth") == 1)["parent_range_id"].null_count() == 0


def test_run_finder_window_and_stride_do_not_change_the_decode(long_line, captured, monkeypatch):
    """Runs found in small windows, with short strides, from the first repeat: same columns."""
    for f in (long_line, captured):
        buf = f.read_bytes()
        ref = decode_xspace(buf)
        monkeypatch.setattr(xspace, "_WINDOW", 97)
        monkeypatch.setattr(xspace, "_STRIDE", 2)
        monkeypatch.setattr(xspace, "_RUN", 1)
        monkeypatch.setattr(xspace, "_CHUNK", 64)
        got = decode_xspace(buf)
        monkeypatch.undo()
        for name in ("line", "metadata_id", "offset_ps", "duration_ps", "aggregated"):
            assert np.array_equal(getattr(ref.events, name), getattr(got.events, name))
        assert [l.stats for l in ref.lines] == [l.stats for l in got.lines]
        assert [p.event_metadata for p in ref.planes] == [p.event_metadata for p in got.planes]


def test_damage_inside_a_long_line_one_line(cli, long_line, tmp_path):
    buf = bytearray(long_line.read_bytes())
    # an event in the middle of the stream line claims more bytes than its line holds
    at = buf.index(b'"', len(buf) // 3)
    while not (buf[at] == 0x22 and buf[at + 2] == 0x08):
        at += 1
    buf[at + 1] = 0x7F
    f = tmp_path / "hole.xplane.pb"
    f.write_bytes(bytes(buf))
    assert_one_line_error(cli("kernels", str(f)), "corrupt or truncated XSpace")
    # a stat with wire type 7
    buf = bytearray(long_line.read_bytes())
    at = buf.index(bytes([0x22]), len(buf) // 2)
    buf[at] = 0x27
    f.write_bytes(bytes(buf))
    assert_one_line_error(cli("kernels", str(f)), "corrupt or truncated XSpace")


def test_mutated_files_decode_or_fail_cleanly(captured, tmp_path):
    """Random byte damage: a WireError, or an XSpace the conversion reads; nothing else."""
    rng = random.Random(3)
    sources = [captured.read_bytes(), _tpu_file(tmp_path).read_bytes()]
    outcomes = {"error": 0, "read": 0}
    for _ in range(150):
        b = bytearray(rng.choice(sources))
        if rng.random() < 0.3:
            b = b[: rng.randrange(1, len(b))]
        else:
            for _ in range(rng.randint(1, 3)):
                b[rng.randrange(len(b))] = rng.randrange(256)
        try:
            space = decode_xspace(bytes(b))
        except WireError:
            outcomes["error"] += 1
            continue
        space_to_tables(space)
        outcomes["read"] += 1
    assert outcomes["error"] > 10 and outcomes["read"] > 10


def test_nest_lines_matches_the_stack():
    """The column-wise nesting equals the stack walk on random timelines: nested, touching,
    zero-length (also on a parent's end), tied, crossing and negative intervals, interleaved."""
    rng = random.Random(5)

    def nested(span: int) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []

        def fill(a: int, b: int, depth: int) -> None:
            cur = a
            for _ in range(rng.randint(0, 3)):
                if depth > 4 or cur > b:
                    return
                s = rng.randint(cur, b)
                e = s if rng.random() < 0.15 else rng.randint(s, b)
                out.append((s, e))
                fill(s, e, depth + 1)
                cur = e if rng.random() < 0.7 else s

        fill(0, span, 0)
        return out

    for _ in range(400):
        group, starts, ends = [], [], []
        for g in rng.sample(range(50), rng.randint(1, 4)):
            iv = nested(rng.choice([6, 30, 10**6]))
            if rng.random() < 0.2:
                iv += [(s, s + rng.randint(-3, 40)) for s in (rng.randint(0, 30) for _ in range(2))]
            if rng.random() < 0.5:
                iv.sort(key=lambda x: (x[0], -x[1]))
            group += [g] * len(iv)
            starts += [s for s, _ in iv]
            ends += [e for _, e in iv]
        if rng.random() < 0.3:
            rows = list(zip(group, starts, ends))
            rng.shuffle(rows)
            group, starts, ends = (list(x) for x in zip(*rows)) if rows else ([], [], [])
        depth, parent = _nest_lines(np.array(group, np.int64), np.array(starts, np.int64), np.array(ends, np.int64))
        for g in set(group):
            rows = [i for i, x in enumerate(group) if x == g]
            d, p = _nest([starts[i] for i in rows], [ends[i] for i in rows])
            assert depth[rows].tolist() == d
            assert parent[rows].tolist() == [-1 if x is None else rows[x] for x in p]


def test_span_texts():
    b = b"hello\xffworld\xc3\xa9abc"
    # unordered, repeated and empty spans; invalid UTF-8 replaced as bytes.decode does
    got = span_texts(b, np.array([11, 0, 11, 5, 3, 3]), np.array([15, 5, 15, 11, 3, 3])).to_list()
    assert got == ["éab", "hello", "éab", b[5:11].decode("utf-8", "replace"), "", ""]
    # overlapping spans (never fields of one message) are still cut right
    assert span_texts(b, np.array([0, 2]), np.array([5, 4])).to_list() == ["hello", "ll"]
    assert span_texts(b, np.array([], np.int64), np.array([], np.int64)).to_list() == []
