"""Device specs: every shipped YAML validates and cites its sources, datasheet spot checks, clock
scaling, name matching on names tools really report, user spec files, and bad YAML."""

from __future__ import annotations

import json

import pytest
import yaml

from conftest import REPO, assert_one_line_error
from profaudit.errors import InputError, UsageError
from profaudit.schema import PRECISIONS
from profaudit.specs import (
    BANDWIDTH_LEVELS,
    explain_match,
    get_spec,
    load_specs,
    match_device,
    normalize_name,
    read_spec_file,
    resolve_device,
)

SPEC_DIR = REPO / "device_specs"
SPEC_FILES = sorted(SPEC_DIR.glob("*.yaml"))
T = 1e12

REQUIRED = [
    "h100-sxm", "h100-pcie", "h100-nvl", "h200", "b200", "gb200", "a100-sxm-40gb", "a100-sxm-80gb", "a100-pcie-80gb",
    "a10g", "a10", "a40", "l4", "l40s", "rtx-4090", "rtx-3090", "rtx-3080", "v100-sxm2-32gb", "t4", "gh200", "mi300x",
    "mi250x", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu7x", "trainium1", "trainium2", "inferentia2",
    # parts real public traces name (issue: H800, MI355X / MI350X, MI325X, MI300A)
    "h800-sxm", "h800-pcie", "mi355x", "mi350x", "mi325x", "mi300a",
]


def _walk_values(doc, path=""):
    """Yield (path, entry) for every number entry (a mapping with 'value') in a spec document."""
    if isinstance(doc, dict):
        if "value" in doc and path.split(".")[-1] != "values":
            yield path, doc
        for k, v in doc.items():
            if k in ("sources", "conflicts"):
                continue
            yield from _walk_values(v, f"{path}.{k}" if path else str(k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _walk_values(v, f"{path}[{i}]")


def test_required_devices_are_shipped():
    specs = load_specs()
    missing = [k for k in REQUIRED if k not in specs]
    assert not missing, missing


@pytest.mark.parametrize("path", SPEC_FILES, ids=[p.stem for p in SPEC_FILES])
def test_every_yaml_validates_and_cites(path):
    spec = read_spec_file(path)
    doc = yaml.safe_load(path.read_text())
    assert doc["schema_version"] == 1
    assert spec.key == path.stem, "file stem and key must agree"
    entries = list(_walk_values(doc))
    assert entries, "a spec without numbers"
    for where, e in entries:
        srcs = e["source"] if isinstance(e["source"], list) else [e["source"]]
        for s in srcs:
            assert s in doc["sources"], f"{where}: source {s!r} not declared"
            assert doc["sources"][s]["title"].strip()
    # every declared source is used, so the list of citations is exactly what the numbers rest on
    used = {s for _, e in entries for s in (e["source"] if isinstance(e["source"], list) else [e["source"]])}
    used |= {v["source"] for c in doc.get("conflicts", []) for v in c["values"]}
    assert used == set(doc["sources"]), set(doc["sources"]) ^ used
    assert set(spec.peaks_dense) <= set(PRECISIONS) and set(spec.peaks_sparse) <= set(PRECISIONS)
    assert set(spec.bandwidths) <= set(BANDWIDTH_LEVELS)
    assert "dram" in spec.bandwidths and spec.peaks_dense
    for p, s in spec.peaks_sparse.items():
        assert p in spec.peaks_dense, f"sparse {p} without a dense figure"
        assert spec.peaks_dense[p].value <= s.value, p
    for c in spec.conflicts:
        assert len(c.values) >= 2 and c.resolution


def test_dense_never_exceeds_sparse_across_all_specs():
    for spec in load_specs().values():
        for p in spec.precisions(sparse=True):
            assert spec.peak_flops_per_s(p) <= spec.peak_flops_per_s(p, sparse=True), (spec.key, p)


def test_on_chip_bandwidth_states_its_clock_and_dram_does_not_scale():
    for spec in load_specs().values():
        for lv, v in spec.bandwidths.items():
            if lv != "dram":
                assert v.clock_hz, (spec.key, lv)
        assert spec.bandwidth_bytes_per_s("dram", 1e8) == spec.bandwidth_bytes_per_s("dram")


# Spot checks: each number as the vendor prints it, with the document it comes from.
SPOT_CHECKS = [
    # NVIDIA H100 Tensor Core GPU Datasheet, H100 SXM column: FP16 Tensor Core 1,979 TFLOPS* (* with sparsity), 3.35 TB/s
    ("h100-sxm", "fp16_tensor", False, 1979 / 2 * T),
    ("h100-sxm", "fp16_tensor", True, 1979 * T),
    ("h100-sxm", "fp64", False, 34 * T),
    ("h100-sxm", "dram", None, 3.35e12),
    # same datasheet, H100 NVL column (per GPU): FP8 3,341 TFLOPS*, 3.9 TB/s
    ("h100-nvl", "fp8_tensor", True, 3341 * T),
    ("h100-nvl", "dram", None, 3.9e12),
    # same datasheet, H100 PCIe column: FP32 51 TFLOPS, TF32 756 TFLOPS*, 2 TB/s
    ("h100-pcie", "fp32", False, 51 * T),
    ("h100-pcie", "tf32_tensor", False, 378 * T),
    # NVIDIA H200 datasheet (SXM): FP8 3,958 TFLOPS*, 4.8 TB/s
    ("h200", "fp8_tensor", False, 1979 * T),
    ("h200", "dram", None, 4.8e12),
    # NVIDIA GH200 datasheet: FP8 1,979 TFLOPS (dense), HBM3 4 TB/s
    ("gh200", "fp8_tensor", False, 1979 * T),
    ("gh200", "tf32_tensor", True, 989 * T),
    ("gh200", "dram", None, 4.0e12),
    # NVIDIA Blackwell datasheet, HGX B200 per GPU: FP4 18 PFLOPS* (dense 9), 7.7 TB/s; GB200: FP4 20 PFLOPS*, 8 TB/s
    ("b200", "fp4_tensor", False, 9000 * T),
    ("b200", "dram", None, 7.7e12),
    ("gb200", "fp4_tensor", True, 20000 * T),
    ("gb200", "fp64", False, 40 * T),
    # NVIDIA A100 datasheet: TF32 156 | 312*, FP64 Tensor 19.5, 1,555 / 2,039 / 1,935 GB/s
    ("a100-sxm-40gb", "tf32_tensor", False, 156 * T),
    ("a100-sxm-40gb", "fp64_tensor", False, 19.5 * T),
    ("a100-sxm-40gb", "dram", None, 1555e9),
    ("a100-sxm-80gb", "dram", None, 2039e9),
    ("a100-pcie-80gb", "dram", None, 1935e9),
    # NVIDIA A10 datasheet: FP32 31.2 TF, BF16 125 | 250, 600 GB/s
    ("a10", "bf16_tensor", True, 250 * T),
    ("a10", "dram", None, 600e9),
    # NVIDIA A40 datasheet: FP32 37.4 TF, 696 GB/s
    ("a40", "fp32", False, 37.4 * T),
    ("a40", "bf16_tensor", True, 299.4 * T),
    ("a40", "dram", None, 696e9),
    # NVIDIA L4 datasheet: FP8 485 TFLOPS*, 300 GB/s;  L40S datasheet: FP32 91.6 TF, 864 GB/s
    ("l4", "fp8_tensor", False, 242.5 * T),
    ("l4", "dram", None, 300e9),
    ("l40s", "fp32", False, 91.6 * T),
    ("l40s", "fp16_tensor", False, 362.05 * T),  # printed dense figure (| 733* sparse)
    ("l40s", "fp8_tensor", True, 1466 * T),
    ("l40s", "dram", None, 864e9),
    # Ada whitepaper (RTX 4090): FP32 82.6 TF; FP16 tensor w/ FP32 accumulate 165.2; 1008 GB/s
    ("rtx-4090", "fp32", False, 82.6 * T),
    ("rtx-4090", "fp16_tensor", False, 165.2 * T),
    ("rtx-4090", "dram", None, 1008e9),
    # GA102 whitepaper (RTX 3090 / 3080): FP32 35.6 / 29.8 TF; 936 / 760 GB/s
    ("rtx-3090", "fp32", False, 35.6 * T),
    ("rtx-3080", "dram", None, 760e9),
    # V100 datasheet (SXM2): FP64 7.8, Tensor 125 TF, 900 GB/s;  T4 datasheet: mixed FP16/FP32 65 TF, 320 GB/s
    ("v100-sxm2-32gb", "fp16_tensor", False, 125 * T),
    ("v100-sxm2-32gb", "dram", None, 900e9),
    ("t4", "fp16_tensor", False, 65 * T),
    ("t4", "dram", None, 320e9),
    # AMD Instinct MI300X data sheet: FP8 2614.9 TF (5229.8 with sparsity), FP64 vector 81.7 TF, 5.3 TB/s
    ("mi300x", "fp8_tensor", False, 2614.9 * T),
    ("mi300x", "fp8_tensor", True, 5229.8 * T),
    ("mi300x", "fp64", False, 81.7 * T),
    ("mi300x", "dram", None, 5.3e12),
    # AMD Instinct MI250X data sheet (module = 2 GCDs): FP16 383 TF, 3.2 TB/s; per GCD = half
    ("mi250x", "fp16_tensor", False, 383 / 2 * T),
    ("mi250x", "dram", None, 3.2768e12 / 2),
    # Cloud TPU docs: v4 275 TF bf16 / 1200 GBps; v5e 197 TF / 819 GBps; v5p 459 TF / 2765 GBps; v6e 918 TF / 1638 GBps
    ("tpu-v4", "bf16_tensor", False, 275 * T),
    ("tpu-v4", "dram", None, 1200e9),
    ("tpu-v5e", "bf16_tensor", False, 197 * T),
    ("tpu-v5e", "dram", None, 819e9),
    ("tpu-v5p", "bf16_tensor", False, 459 * T),
    ("tpu-v5p", "dram", None, 2765e9),
    ("tpu-v6e", "bf16_tensor", False, 918 * T),
    ("tpu-v6e", "int8_tensor", False, 1836 * T),
    ("tpu-v6e", "dram", None, 1638e9),
    # Cloud TPU docs, TPU7x: 4614 TF FP8 per chip; per TensorCore (one JAX device) = half
    ("tpu7x", "fp8_tensor", False, 4614 / 2 * T),
    # AWS Neuron docs: Trainium 190 FP16/BF16/cFP8/TF32 TF, 47.5 FP32; Trainium2 1,299 FP8, 667 BF16, 2,563 sparse, 181 FP32
    ("trainium1", "bf16_tensor", False, 190 * T),
    ("trainium1", "fp32", False, 47.5 * T),
    ("trainium1", "dram", None, 820e9),
    ("trainium2", "fp8_tensor", False, 1299 * T),
    ("trainium2", "bf16_tensor", False, 667 * T),
    ("trainium2", "bf16_tensor", True, 2563 * T),
    ("trainium2", "fp32", False, 181 * T),
    ("trainium2", "dram", None, 2.9e12),
    # AWS Neuron docs: Inferentia2 380 INT8 TOPS, 190 FP16 TF, 32 GiB
    ("inferentia2", "int8_tensor", False, 380 * T),
    # ---- vendor-verification pass (issue 2): each figure re-read in the vendor text named on its line ----
    # NVIDIA A100 Tensor Core GPU Architecture whitepaper V1.0 (images.nvidia.com/aem-dam/en-zz/Solutions/data-center/
    # nvidia-ampere-architecture-whitepaper.pdf), read through a verbatim transcription: "The A100 Tensor Core GPU with 108
    # SMs delivers a peak FP64 throughput of 19.5 TFLOPS"; "up to 312 TFLOPS of dense mixed-precision FP16/FP32"; TF32 8x FP32
    ("a100-sxm-80gb", "fp64_tensor", False, 19.5 * T),
    ("a100-pcie-80gb", "fp16_tensor", False, 312 * T),
    ("a100-pcie-40gb", "tf32_tensor", True, 312 * T),
    ("a100-pcie-40gb", "dram", None, 1555e9),
    # Hopper whitepaper V1.04 Table 3 (as quoted with page numbers): H100 PCIe 756/1513 BF16, 1978.9/3957.8 SXM5 FP8,
    # 133.8 SXM5 FP16 non-tensor; H100 datasheet copies: PCIe FP8 3,026* TFLOPS, NVL 835* TF32, 60 FP32
    ("h100-pcie", "bf16_tensor", True, 1513 * T),
    ("h100-pcie", "fp8_tensor", True, 3026 * T),
    ("h100-sxm", "fp8_tensor", False, 1978.9 * T),
    ("h100-sxm", "fp16", False, 133.8 * T),
    ("h100-nvl", "tf32_tensor", True, 835 * T),
    ("h100-nvl", "fp32", False, 60 * T),
    # H200 product-page table (H200 SXM column, copy): FP64 34, FP64 Tensor 67, TF32 989*, INT8 3,958*
    ("h200", "fp64_tensor", False, 67 * T),
    ("h200", "tf32_tensor", True, 989 * T),
    ("h200", "int8_tensor", True, 3958 * T),
    # NVIDIA Blackwell datasheet, 'Individual Blackwell GPU Specifications' (copy citing nvdam.widen.net/s/wwnsxrhm2w/
    # blackwell-datasheet-3384703); footnote: all Tensor Core numbers except FP64 with sparsity
    ("b200", "fp64", False, 37 * T),
    ("b200", "fp32", False, 75 * T),
    ("b200", "tf32_tensor", True, 2200 * T),
    ("b200", "int8_tensor", True, 9000 * T),
    ("gb200", "fp32", False, 80 * T),
    ("gb200", "fp8_tensor", True, 10000 * T),
    ("gb200", "dram", None, 8e12),  # also the Blackwell technical brief V2.1: "8TB/s of HBM3e ... one GPU in GB200"
    # ROCm 'AMD Instinct MI300 microarchitecture' peak table: Vector FP32 163.4, Matrix TF32 653.7, FP16 1307.4, INT8 2614.9
    ("mi300x", "fp32", False, 163.4 * T),
    ("mi300x", "tf32_tensor", False, 653.7 * T),
    ("mi300x", "bf16_tensor", False, 1307.4 * T),
    ("mi300x", "int8_tensor", False, 2614.9 * T),
    # AMD CDNA 3 whitepaper: Infinity Cache peak 17.2 TB/s; L2 2 KB/clk per XCD, "up to 34.4 TB/s aggregate read bandwidth"
    ("mi300x", "llc", None, 17.2e12),
    ("mi300x", "l2", None, 34.4e12),
    # CDNA 3 whitepaper Table 1, MI250X column (per module, 2 GCDs): Vector FP64 47.9, Matrix FP64 95.7, Vector FP32 47.9
    ("mi250x", "fp64", False, 47.9 / 2 * T),
    ("mi250x", "fp64_tensor", False, 95.7 / 2 * T),
    ("mi250x", "fp32", False, 47.9 / 2 * T),
    ("mi250x", "int8_tensor", False, 383 / 2 * T),
    # Cloud TPU docs: v4 275 teraflops "bf16 or int8"; v5p FP8 459; TPU7x BF16 2307 per chip (two TensorCores)
    ("tpu-v4", "int8_tensor", False, 275 * T),
    ("tpu-v5p", "fp8_tensor", False, 459 * T),
    ("tpu-v6e", "fp8_tensor", False, 918 * T),
    ("tpu7x", "bf16_tensor", False, 2307 / 2 * T),
    # AWS Neuron docs: Trainium2 "2,563 FP8/FP16/BF16/TF32 sparse TFLOPS"; Inferentia2 190 FP16/BF16 TF, 47.5 FP32,
    # NKI Trainium/Inferentia2 guide: 820 GB/s
    ("trainium2", "fp8_tensor", True, 2563 * T),
    ("inferentia2", "bf16_tensor", False, 190 * T),
    ("inferentia2", "fp32", False, 47.5 * T),
    ("inferentia2", "dram", None, 820e9),
    # Ada whitepaper Appendix A (RTX 4090), quoted: FP8 with FP32 accumulate 330.3/660.6 (corrected in v2.02), INT8 660.6
    ("rtx-4090", "fp8_tensor", False, 330.3 * T),
    ("rtx-4090", "fp8_tensor", True, 660.6 * T),
    ("rtx-4090", "int8_tensor", False, 660.6 * T),
    ("rtx-4090", "bf16_tensor", False, 165.2 * T),
    # GA102 whitepaper Appendix A (RTX 3090), quoted: FP16 Tensor with FP32 accumulate 71/142, INT8 284/568 — the GeForce
    # FP32-accumulate rate is half the FP16-accumulate one
    ("rtx-3090", "fp16_tensor", False, 71 * T),
    ("rtx-3090", "int8_tensor", True, 568 * T),
    # A10 datasheet (copy): TF32 62.5, INT8 250 TOPS;  A40 (copy): TF32 74.8;  L4 datasheet: FP32 30.3, TF32 120*, FP16 242*
    ("a10", "tf32_tensor", False, 62.5 * T),
    ("a10", "int8_tensor", False, 250 * T),
    ("a40", "tf32_tensor", False, 74.8 * T),
    ("l4", "fp32", False, 30.3 * T),
    ("l4", "tf32_tensor", True, 120 * T),
    ("l4", "fp16_tensor", True, 242 * T),
    # L40S product page (quoted): TF32 366*, FP16 733*;  T4 datasheet (copies): 8.1 TFLOPS FP32, 130 INT8 TOPS
    ("l40s", "tf32_tensor", True, 366 * T),
    ("l40s", "fp16_tensor", True, 733 * T),
    ("t4", "fp32", False, 8.1 * T),
    ("t4", "int8_tensor", False, 130 * T),
    # V100 PCIe spec table (copies): 112 TFLOPS tensor, 900 GB/s
    ("v100-pcie-32gb", "fp16_tensor", False, 112 * T),
    ("v100-pcie-32gb", "dram", None, 900e9),
    # ---- parts named by real public traces; each line says how far its figure was checked ----
    # NVIDIA H800 datasheet (unverified: read only through agreeing public transcriptions): H800 SXM FP64 1, FP64 Tensor 1,
    # FP32 67, TF32 989*, FP16/BF16 1,979*, FP8/INT8 3,958*, 3.35 TB/s; H800 PCIe FP64 0.8, FP32 51, BF16 1,513*, FP8 3,026*,
    # 2 TB/s (* = with sparsity)
    ("h800-sxm", "fp64", False, 1 * T),
    ("h800-sxm", "fp64_tensor", False, 1 * T),
    ("h800-sxm", "fp32", False, 67 * T),
    ("h800-sxm", "tf32_tensor", True, 989 * T),
    ("h800-sxm", "bf16_tensor", False, 1979 / 2 * T),
    ("h800-sxm", "fp8_tensor", True, 3958 * T),
    ("h800-sxm", "dram", None, 3.35e12),
    ("h800-pcie", "fp64", False, 0.8 * T),
    ("h800-pcie", "fp64_tensor", False, 0.8 * T),
    ("h800-pcie", "fp32", False, 51 * T),
    ("h800-pcie", "bf16_tensor", True, 1513 * T),
    ("h800-pcie", "fp8_tensor", False, 3026 / 2 * T),
    ("h800-pcie", "dram", None, 2e12),
    # ROCm 'AMD Instinct MI350 Series microarchitecture' peak table (verified, ROCm/rocm-docs mi350.rst): MI355X FP64 78.6 TF,
    # FP32 157.3 TF, FP16 2.5 | 5.0 PF, OCP-FP8 5.0 | 10 PF, MXFP4 10 PF, INT8 5.0 | 10 POPs, 8 TB/s; MI350X 72.1 / 144.2 /
    # 2.3 | 4.6 / 4.6 | 9.2 / 9.2 / 4.6 | 9.2
    ("mi355x", "fp64", False, 78.6 * T),
    ("mi355x", "fp64_tensor", False, 78.6 * T),
    ("mi355x", "fp32", False, 157.3 * T),
    ("mi355x", "fp16", False, 157.3 * T),
    ("mi355x", "fp16_tensor", False, 2500 * T),
    ("mi355x", "bf16_tensor", True, 5000 * T),
    ("mi355x", "fp8_tensor", True, 10000 * T),
    ("mi355x", "fp4_tensor", False, 10000 * T),
    ("mi355x", "int8_tensor", False, 5000 * T),
    ("mi355x", "dram", None, 8e12),
    ("mi350x", "fp64", False, 72.1 * T),
    ("mi350x", "fp32", False, 144.2 * T),
    ("mi350x", "fp16_tensor", True, 4600 * T),
    ("mi350x", "fp8_tensor", False, 4600 * T),
    ("mi350x", "fp4_tensor", False, 9200 * T),
    ("mi350x", "dram", None, 8e12),
    # AMD CDNA 3 whitepaper (2025 edition), Table 2, read through a text copy: MI325X 81.7 / 163.4 / 163.4, TF32 653.7,
    # FP16 1,307.4 | 2,614.9, FP8 2,614.9 | 5,229.8, up to 6.0 TB/s; MI300A FP64 61.3, FP64 matrix 122.6, FP32 122.6,
    # TF32 490.3 | 980.6, FP16/BF16 980.6 | 1,961.2, FP8/INT8 1,961.2 | 3,922.3, up to 5.3 TB/s
    ("mi325x", "fp64", False, 81.7 * T),
    ("mi325x", "fp64_tensor", False, 163.4 * T),
    ("mi325x", "tf32_tensor", False, 653.7 * T),
    ("mi325x", "fp16_tensor", True, 2614.9 * T),
    ("mi325x", "fp8_tensor", True, 5229.8 * T),
    ("mi325x", "dram", None, 6e12),
    ("mi325x", "l2", None, 34.4e12),
    ("mi300a", "fp64", False, 61.3 * T),
    ("mi300a", "fp64_tensor", False, 122.6 * T),
    ("mi300a", "fp32", False, 122.6 * T),
    ("mi300a", "tf32_tensor", False, 490.3 * T),
    ("mi300a", "bf16_tensor", False, 980.6 * T),
    ("mi300a", "bf16_tensor", True, 1961.2 * T),
    ("mi300a", "int8_tensor", True, 3922.3 * T),
    ("mi300a", "dram", None, 5.3e12),
    ("mi300a", "llc", None, 17.2e12),
]


@pytest.mark.parametrize("key,what,sparse,expected", SPOT_CHECKS, ids=[f"{k}-{w}-{'sparse' if s else 'dense' if s is False else 'bw'}" for k, w, s, _ in SPOT_CHECKS])
def test_datasheet_spot_checks(key, what, sparse, expected):
    spec = get_spec(key)
    got = spec.bandwidth_bytes_per_s(what) if sparse is None else spec.peak_flops_per_s(what, sparse=sparse)
    assert got is not None
    assert abs(got / expected - 1) <= 0.01, (key, what, got, expected)


def test_memory_sizes_and_units():
    assert get_spec("h100-sxm").memory_bytes == 80 * 2**30
    assert get_spec("mi300x").memory_bytes == 192 * 2**30
    assert get_spec("trainium2").memory_bytes == 96 * 2**30
    assert get_spec("gh200").l2_cache_bytes == 60 * 2**20  # what the driver reports (corpus GH200 report)
    assert get_spec("a100-sxm-40gb").sm_count == 108 and get_spec("h100-pcie").sm_count == 114


# Sizes, counts and clocks re-read in vendor text (issue 2 verification pass); GiB because device-memory "GB" is binary.
VERIFIED_FACTS = [
    # ROCm docs/reference/gpu-specs.rst: MI300X 192 GiB, 304 CUs, L2 32 MiB; MI250X 128 GiB, 220 CUs (110 per GCD), L2 8 per GCD
    ("mi300x", "memory_bytes", 192 * 2**30), ("mi300x", "sm_count", 304), ("mi300x", "l2_cache_bytes", 32 * 2**20),
    ("mi250x", "memory_bytes", 64 * 2**30), ("mi250x", "sm_count", 110), ("mi250x", "l2_cache_bytes", 8 * 2**20),
    # ROCm MI250 microarchitecture page: peak clock 1.7 GHz
    ("mi250x", "boost_clock_hz", 1700e6),
    # Blackwell datasheet: 180 GB (HGX B200) / 186 GB (GB200) HBM3E per GPU
    ("b200", "memory_bytes", 180 * 2**30), ("gb200", "memory_bytes", 186 * 2**30),
    # H200 product page: 141 GB; Hopper whitepaper V1.04: 132 / 114 SMs, 50 MB L2, H100 PCIe boost 1755 MHz
    ("h200", "memory_bytes", 141 * 2**30), ("h100-sxm", "sm_count", 132), ("h100-pcie", "sm_count", 114),
    ("h100-sxm", "l2_cache_bytes", 50 * 2**20), ("h100-pcie", "boost_clock_hz", 1755e6),
    # A100 whitepaper text: 108 SMs, 40 MB L2
    ("a100-sxm-80gb", "sm_count", 108), ("a100-pcie-80gb", "l2_cache_bytes", 40 * 2**20),
    # Ada whitepaper Appendix A: RTX 4090 128 SMs, boost 2520 MHz, L2 73728 KB
    ("rtx-4090", "sm_count", 128), ("rtx-4090", "boost_clock_hz", 2520e6), ("rtx-4090", "l2_cache_bytes", 73728 * 1024),
    # Cloud TPU docs: v4 32 GiB per chip; v5p 95 GiB; v6e 32 GB; TPU7x 192 GiB per chip = 96 GiB per TensorCore
    ("tpu-v4", "memory_bytes", 32 * 2**30), ("tpu-v5p", "memory_bytes", 95 * 2**30), ("tpu-v6e", "memory_bytes", 32 * 2**30),
    ("tpu7x", "memory_bytes", 96 * 2**30),
    # AWS Neuron docs: Trainium 32 GiB / 2 NeuronCore-v2; Trainium2 96 GiB / 8 NeuronCore-v3
    ("trainium1", "memory_bytes", 32 * 2**30), ("trainium1", "sm_count", 2), ("trainium2", "sm_count", 8),
    # ROCm docs/reference/gpu-specs.rst: MI355X / MI350X 288 GiB, 256 CUs, L2 32 MiB; MI325X 256 GiB, 304 CUs; MI300A 128 GiB,
    # 228 CUs, L2 24 MiB. CDNA 3 whitepaper Table 2: 2,100 MHz max engine clock (MI300A, MI325X)
    ("mi355x", "memory_bytes", 288 * 2**30), ("mi355x", "sm_count", 256), ("mi355x", "l2_cache_bytes", 32 * 2**20),
    ("mi350x", "memory_bytes", 288 * 2**30), ("mi350x", "sm_count", 256), ("mi350x", "l2_cache_bytes", 32 * 2**20),
    ("mi325x", "memory_bytes", 256 * 2**30), ("mi325x", "sm_count", 304), ("mi325x", "l2_cache_bytes", 32 * 2**20),
    ("mi300a", "memory_bytes", 128 * 2**30), ("mi300a", "sm_count", 228), ("mi300a", "l2_cache_bytes", 24 * 2**20),
    ("mi325x", "boost_clock_hz", 2100e6), ("mi300a", "boost_clock_hz", 2100e6),
    # AMD product pages (unverified: read only through transcriptions; they reproduce ROCm's FP64/FP32 peaks): peak engine clock
    ("mi355x", "boost_clock_hz", 2400e6), ("mi350x", "boost_clock_hz", 2200e6),
    # nvidia-smi -q of a device named 'NVIDIA H800' (NVIDIA/DCGM issue 120): Max Clocks SM 1980 MHz; H800 datasheet: 80 GB
    ("h800-sxm", "boost_clock_hz", 1980e6), ("h800-sxm", "memory_bytes", 80 * 2**30), ("h800-pcie", "memory_bytes", 80 * 2**30),
    ("h800-sxm", "sm_count", 132), ("h800-pcie", "sm_count", 114),
]


@pytest.mark.parametrize("key,attr,expected", VERIFIED_FACTS, ids=[f"{k}-{a}" for k, a, _ in VERIFIED_FACTS])
def test_verified_sizes_counts_and_clocks(key, attr, expected):
    assert getattr(get_spec(key), attr) == pytest.approx(expected, rel=1e-9)


def test_hopper_clocks_per_path():
    # Hopper whitepaper V1.04 Table 3: tensor paths at 1830 (SXM5) / 1620 (PCIe) MHz, FP32/FP64 at 1980 / 1755 MHz
    assert get_spec("h100-pcie").peak_clock_hz("fp16_tensor") == pytest.approx(1620e6, rel=1e-3)
    assert get_spec("h100-pcie").peak_clock_hz("fp32") == pytest.approx(1755e6)
    assert get_spec("h100-sxm").peak_clock_hz("fp8_tensor", sparse=True) == pytest.approx(1830e6)


# FLOP (ops) per clock per SM, dense, per the vendors' architecture whitepapers: Volta/Turing/GA100/GA102/Ada/GH100. GeForce
# GA102/AD102 run FP16/BF16 (and FP8) tensor ops with FP32 accumulate at half the professional-card rate, TF32 likewise.
_PER_SM = {
    "sm70": dict(fp64=64, fp32=128, fp16=256, fp16_tensor=1024),
    "sm75": dict(fp32=128, fp16=256, fp16_tensor=1024, int8_tensor=2048, int4_tensor=4096),
    "sm80": dict(fp64=64, fp64_tensor=128, fp32=128, fp16=512, bf16=256, tf32_tensor=1024, fp16_tensor=2048, bf16_tensor=2048, int8_tensor=4096),
    "ga102_geforce": dict(fp32=256, fp16=256, tf32_tensor=256, fp16_tensor=512, bf16_tensor=512, int8_tensor=2048, int4_tensor=4096, fp16_tensor_fp16_accumulate=1024),
    "ga102_pro": dict(fp32=256, tf32_tensor=512, fp16_tensor=1024, bf16_tensor=1024, int8_tensor=2048, int4_tensor=4096),
    "ad102_geforce": dict(fp32=256, fp16=256, tf32_tensor=256, fp16_tensor=512, bf16_tensor=512, fp8_tensor=1024, int8_tensor=2048,
                          int4_tensor=4096, fp16_tensor_fp16_accumulate=1024, fp8_tensor_fp16_accumulate=2048),
    "ada_pro": dict(fp32=256, tf32_tensor=512, fp16_tensor=1024, bf16_tensor=1024, fp8_tensor=2048, int8_tensor=2048),
    "sm90": dict(fp64=128, fp64_tensor=256, fp32=256, fp16=512, bf16=512, tf32_tensor=2048, fp16_tensor=4096, bf16_tensor=4096, fp8_tensor=8192, int8_tensor=8192),
    # H800 (GH100, export-control variant): the H100 rates except FP64, whose per-SM rate NVIDIA does not publish (_UNRATED)
    "sm90_h800": dict(fp32=256, tf32_tensor=2048, fp16_tensor=4096, bf16_tensor=4096, fp8_tensor=8192, int8_tensor=8192),
}
_ARCH = {
    "v100-pcie-16gb": "sm70", "v100-pcie-32gb": "sm70", "v100-sxm2-16gb": "sm70", "v100-sxm2-32gb": "sm70", "t4": "sm75",
    "a100-pcie-40gb": "sm80", "a100-pcie-80gb": "sm80", "a100-sxm-40gb": "sm80", "a100-sxm-80gb": "sm80",
    "rtx-3080": "ga102_geforce", "rtx-3090": "ga102_geforce", "a10": "ga102_pro", "a10g": "ga102_pro", "a40": "ga102_pro",
    "rtx-4090": "ad102_geforce", "l4": "ada_pro", "l40s": "ada_pro",
    "h100-sxm": "sm90", "h100-pcie": "sm90", "h100-nvl": "sm90", "h200": "sm90", "gh200": "sm90", "gh200-144gb": "sm90",
    "h800-sxm": "sm90_h800", "h800-pcie": "sm90_h800",
}
# Printed datasheet figures that do not reproduce at the clock they are scaled from: the datasheet rounds the FP64
# peak up (34 for 33.45 at 1980 MHz, 26 for 25.6 at 1755 MHz); each entry's derivation says so.
_ROUNDED = {("h100-sxm", "fp64"), ("h200", "fp64"), ("gh200", "fp64"), ("gh200-144gb", "fp64"), ("h100-pcie", "fp64")}
# Printed figures with no published per-SM rate or clock (the H800's export-control FP64 cut): they must carry no clock_mhz,
# so a roofline never rescales them to a kernel's clock.
_UNRATED = {("h800-sxm", "fp64"), ("h800-sxm", "fp64_tensor"), ("h800-pcie", "fp64"), ("h800-pcie", "fp64_tensor")}


@pytest.mark.parametrize("key", sorted(_ARCH))
def test_nvidia_peaks_reproduce_at_their_stated_clock(key):
    """value = SMs x FLOP/clk/SM x clock_mhz within 1 %, so rescaling a peak to a kernel's clock is exact."""
    spec = get_spec(key)
    rates = _PER_SM[_ARCH[key]]
    checked = 0
    for table, factor in ((spec.peaks_dense, 1), (spec.peaks_sparse, 2), (spec.other_peaks, 1)):
        for prec, v in table.items():
            if (key, prec) in _UNRATED:
                assert v.clock_hz is None and prec not in rates, (key, prec)
                continue
            assert v.clock_hz, (key, prec)
            predicted = spec.sm_count * rates[prec] * factor * v.clock_hz
            tol = 0.02 if (key, prec) in _ROUNDED and factor == 1 else 0.01
            assert abs(v.value / predicted - 1) <= tol, (key, prec, v.value, predicted)
            checked += 1
    assert checked


# FLOP (ops) per clock per CU, dense. CDNA 3: the 'FLOPS/clock/CU' column of the CDNA 3 whitepaper Table 1 and of ROCm's MI300
# page (verified). CDNA 4: the CDNA 4 whitepaper Table 1 rates (unverified: not read in AMD's text; they reproduce ROCm's MI350
# peak table at 2200 / 2400 MHz, which is what this test checks).
_PER_CU = {
    "cdna3": dict(fp64=128, fp64_tensor=256, fp32=256, tf32_tensor=1024, fp16_tensor=2048, bf16_tensor=2048, fp8_tensor=4096,
                  int8_tensor=4096, fp32_matrix=256),
    "cdna4": dict(fp64=128, fp64_tensor=128, fp32=256, fp16=256, fp16_tensor=4096, bf16_tensor=4096, fp8_tensor=8192,
                  int8_tensor=8192, fp4_tensor=16384, fp32_matrix=256, mxfp8_matrix=8192, mxfp6_matrix=16384),
}
_AMD_ARCH = {"mi300x": "cdna3", "mi325x": "cdna3", "mi300a": "cdna3", "mi350x": "cdna4", "mi355x": "cdna4"}


@pytest.mark.parametrize("key", sorted(_AMD_ARCH))
def test_amd_peaks_reproduce_at_their_stated_clock(key):
    """CUs x FLOP/clk/CU x clock_mhz within 1 % (ROCm prints CDNA 4 peaks rounded to 2-3 digits: 2.5 PF for 2.517)."""
    spec = get_spec(key)
    rates = _PER_CU[_AMD_ARCH[key]]
    checked = 0
    for table, factor in ((spec.peaks_dense, 1), (spec.peaks_sparse, 2), (spec.other_peaks, 1)):
        for prec, v in table.items():
            assert v.clock_hz == pytest.approx(spec.boost_clock_hz), (key, prec)
            predicted = spec.sm_count * rates[prec] * factor * v.clock_hz
            assert abs(v.value / predicted - 1) <= 0.01, (key, prec, v.value, predicted)
            checked += 1
    assert checked >= 10


def test_h800_fp64_is_the_export_control_cut_and_never_rescaled():
    h100, h800, h800p = get_spec("h100-sxm"), get_spec("h800-sxm"), get_spec("h800-pcie")
    # every tensor and FP32 peak equals the H100's of the same form factor; FP64 is cut by more than 30x
    for p in ("fp32", "tf32_tensor", "fp16_tensor", "bf16_tensor", "fp8_tensor", "int8_tensor"):
        assert h800.peak_flops_per_s(p) == h100.peak_flops_per_s(p), p
        assert h800p.peak_flops_per_s(p) == get_spec("h100-pcie").peak_flops_per_s(p), p
    assert h800.peak_flops_per_s("fp64") * 30 < h100.peak_flops_per_s("fp64")
    assert h800p.peak_flops_per_s("fp64_tensor") == pytest.approx(0.8e12)
    # no published clock: the FP64 peaks cannot be moved to a kernel's clock, the others can
    assert h800.peak_flops_per_s("fp64", clock_hz=1.5e9) is None
    assert h800p.peak_flops_per_s("fp64_tensor", clock_hz=1.5e9) is None
    assert h800.peak_flops_per_s("fp32", clock_hz=990e6) == pytest.approx(33.5e12)
    assert h800.bandwidth_bytes_per_s("dram", 990e6) == 3.35e12


def test_sparse_peaks_are_twice_dense_at_the_same_clock():
    # a 2:4-sparse figure is the dense rate doubled; where the two assume different clocks (L40S prints 362.05 dense but
    # 733 sparse) the ratio of clocks must account for the rest
    for spec in load_specs().values():
        for p in spec.precisions(sparse=True):
            d, s = spec.peak(p), spec.peak(p, sparse=True)
            if not (d.clock_hz and s.clock_hz):
                continue
            assert s.value / d.value == pytest.approx(2 * s.clock_hz / d.clock_hz, rel=0.01), (spec.key, p)


def test_every_shipped_source_states_how_far_it_was_verified():
    for spec in load_specs().values():
        for s in spec.sources.values():
            status = (s.note or "").split(":")[0]
            assert status in ("verified", "verified via copy", "unverified") or (s.note or "").startswith("not a document"), (spec.key, s.key)


def test_source_notes_reach_json_and_the_detail_view(cli):
    d = get_spec("mi300x").to_dict()
    assert d["sources"]["rocm-mi300-arch"]["note"].startswith("verified:")
    res = cli("devices", "mi300x")
    assert res.code == 0 and "(verified: " in res.out


def test_clock_scaling_is_linear_from_the_clock_each_number_assumes():
    h = get_spec("h100-sxm")
    # tensor peaks assume 1830 MHz (989.4 TF / (132 SMs x 4096 FLOP/clk)), vector ones 1980 MHz
    assert h.peak_clock_hz("fp16_tensor") == pytest.approx(1830e6)
    assert h.peak_clock_hz("fp32") == pytest.approx(1980e6)
    assert h.peak_flops_per_s("fp16_tensor", clock_hz=915e6) == pytest.approx(989.5e12 / 2)
    assert h.peak_flops_per_s("fp32", clock_hz=990e6) == pytest.approx(33.5e12)
    a = get_spec("a100-sxm-40gb")
    assert a.peak_flops_per_s("fp16_tensor", clock_hz=1095e6) == pytest.approx(312e12 * 1095 / 1410)
    # on-chip bandwidth scales with the SM clock, DRAM does not
    assert a.bandwidth_bytes_per_s("l2", 705e6) == pytest.approx(5120 * 705e6)
    assert a.bandwidth_bytes_per_s("l1", 705e6) == pytest.approx(128 * 108 * 705e6)
    assert a.bandwidth_bytes_per_s("dram", 705e6) == 1555e9
    # no published clock: the figure cannot be moved to another clock
    b = get_spec("b200")
    assert b.peak_flops_per_s("fp8_tensor") == pytest.approx(4.5e15)
    assert b.peak_flops_per_s("fp8_tensor", clock_hz=1.5e9) is None
    assert b.bandwidth_bytes_per_s("l1") is None
    assert get_spec("tpu-v5e").peak_flops_per_s("bf16_tensor", clock_hz=1e9) is None


def test_unknown_precision_and_level_are_usage_errors():
    s = get_spec("t4")
    with pytest.raises(UsageError):
        s.peak_flops_per_s("fp12")
    with pytest.raises(UsageError):
        s.bandwidth_bytes_per_s("l3")
    assert s.peak_flops_per_s("fp8_tensor") is None  # a precision Turing lacks


def test_specs_are_immutable():
    s = get_spec("t4")
    with pytest.raises(Exception):
        s.key = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        s.peaks_dense["fp32"] = None  # type: ignore[index]


def test_scaled_to_cores():
    t2 = get_spec("trainium2")
    half = t2.scaled_to_cores(4)
    assert half.peak_flops_per_s("bf16_tensor") == pytest.approx(667e12 / 2)
    assert half.bandwidth_bytes_per_s("dram") == pytest.approx(2.9e12 / 2)
    assert t2.scaled_to_cores(8) is t2
    with pytest.raises(UsageError):
        t2.scaled_to_cores(9)
    with pytest.raises(UsageError):
        get_spec("h100-sxm").scaled_to_cores(1)


# ---------------------------------------------------------------------------------------------------
# Name matching. Names taken from the corpus: ncu device__attribute_display_name, chrome-trace
# deviceProperties, nsys TARGET_INFO_GPU / TARGET_INFO_CUDA_GPU, xplane device planes.

REPORTED = {
    "NVIDIA A100-SXM4-40GB": "a100-sxm-40gb",        # ncu-rep AlpriElse__cs599k
    "NVIDIA A10G": "a10g",                           # ncu-rep AveryClapp__ESMM-Research
    "NVIDIA GeForce RTX 4090": "rtx-4090",           # ncu-rep Lashi0812__*, nsys-sqlite Lashi0812__*
    "Tesla T4": "t4",                                # ncu-rep Syswea__*, armleth__*
    "NVIDIA GH200 120GB": "gh200",                   # ncu-rep bobschreiner__NuKEXC
    "NVIDIA A100-PCIE-40GB": "a100-pcie-40gb",       # ncu-rep ZSL98__*, chrome-trace harryjmoss__*
    "GeForce RTX 3080": "rtx-3080",                  # ncu-rep iamcoleman__monte-carlo-pi (2020 driver naming)
    "NVIDIA GeForce RTX 3080": "rtx-3080",           # ncu-rep piragi__fuzigrad
    "NVIDIA A100-PG509-200": "a100-sxm-40gb",        # chrome-trace HolisticTraceAnalysis (108 SMs, ~40 GiB)
    "Tesla V100-SXM2-32GB": "v100-sxm2-32gb",        # chrome-trace HolisticTraceAnalysis rank-0
    "Tesla V100-SXM2-16GB": "v100-sxm2-16gb",        # xplane openxla__xprof GPU demo
    "AMD Instinct MI300X": "mi300x",                 # chrome-trace TraceLens, xplane TraceLens
    "Tesla V100-PCIE-32GB": "v100-pcie-32gb",        # nsys-sqlite lockfuehrer__beast_ressoruces
    "NVIDIA GeForce RTX 3090": "rtx-3090",           # nsys-sqlite LeiWang1999__memfusion
    "NVIDIA GeForce RTX 3070": "rtx-3070",           # ncu-rep NVIDIA__nsight-training__manual_nvtx
    "NVIDIA GeForce RTX 4060 Ti": "rtx-4060-ti",     # nsys-sqlite 0x822a5b87__test-cuda
    "NVIDIA GeForce GTX 1080 Ti": "gtx-1080-ti",     # nsys-sqlite martisu1631998__kmeans-parallel
    "NVIDIA GeForce RTX 2060 SUPER": "rtx-2060-super",  # ncu-rep amitadate__GPU_Power_Model, cornflexxx__HomCmprsr
    "GeForce RTX 2070": "rtx-2070",                  # ncu-rep evozone96__matrixMul (2019 driver naming)
    "NVIDIA GeForce RTX 2070": "rtx-2070",
    "NVIDIA GeForce GTX 1660 Ti": "gtx-1660-ti",     # ncu-rep josiahls__cuda_learning_mojo
    "NVIDIA GeForce RTX 2080 Ti": "rtx-2080-ti",     # ncu-rep yzwang2000__cudaCode
    "TPU v6 Lite": "tpu-v6e",                        # xplane openxla__xprof tpu_inference (strings)
    "TPU v7x": "tpu7x",                              # xprof device_type_string for Ironwood
    "TPU v7": "tpu7x",
    # names other tools report (not in the corpus)
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA H100 PCIe": "h100-pcie",
    "NVIDIA H100 NVL": "h100-nvl",
    "NVIDIA H200": "h200",
    "NVIDIA GH200 480GB": "gh200",
    "NVIDIA GH200 144G HBM3e": "gh200-144gb",
    "NVIDIA B200": "b200",
    "NVIDIA GB200": "gb200",
    "NVIDIA A100-SXM4-80GB": "a100-sxm-80gb",
    "NVIDIA A100 80GB PCIe": "a100-pcie-80gb",
    "NVIDIA A10": "a10",
    "NVIDIA A40": "a40",
    "NVIDIA L4": "l4",
    "NVIDIA L40S": "l40s",
    "TPU v4": "tpu-v4",
    "TPU v5 lite": "tpu-v5e",
    "TPU v5e": "tpu-v5e",
    "TPU v5": "tpu-v5p",
    "TPU v5p": "tpu-v5p",
    "TPU v6e": "tpu-v6e",
    "TPU7x": "tpu7x",
    "AMD Instinct MI250X": "mi250x",
    "Trainium2": "trainium2",
    "trn1": "trainium1",
    "Trainium1": "trainium1",                        # what parsers/neuron_common.py derives from instance type trn1
    "Inferentia2": "inferentia2",
    # parts real public traces name; strings as nvidia-smi / torch / rocm-smi print them
    "NVIDIA H800": "h800-sxm",                       # nvidia-smi -q Product Name of an H800 SXM5 (NVIDIA/DCGM issue 120)
    "NVIDIA H800 80GB HBM3": "h800-sxm",
    "NVIDIA H800 PCIe": "h800-pcie",
    "H800 PCIe": "h800-pcie",
    "H800 SXM": "h800-sxm",
    "AMD Instinct MI355X": "mi355x",
    "MI355X": "mi355x",
    "AMD Instinct MI350X": "mi350x",
    "AMD Instinct MI325X": "mi325x",
    "AMD Instinct MI300A": "mi300a",
    "MI300A": "mi300a",
    "AMD Instinct MI300X VF": "mi300x",
    "Tesla V100-DGXS-32GB": "v100-sxm2-32gb",        # DGX Station V100 (chrome-trace pytorch__kineto gpu_metrics_expected)
}
UNMATCHED = [
    "NVIDIA H100",                   # chrome-trace pytorch__kineto after_fix: 96 GB SXM variant, no spec
    "AMD Instinct MI210",            # chrome-trace TraceLens mi210
    "AMD Radeon Graphics",           # chrome-trace HTA mi250 (gfx90a reported generically)
    "Quadro GP100",                  # chrome-trace HTA step_base
    "NVIDIA GeForce RTX 3050 Laptop GPU", "NVIDIA GeForce RTX 2060 with Max-Q Design",
    "NVIDIA GeForce GTX 1650",       # ncu-rep kprattis__*: GDDR5 and GDDR6 boards share the name, 4 GB and 14 SMs: ambiguous
    # look-alikes that must not be taken for a spec'd part
    "NVIDIA GeForce RTX 3090 Ti", "NVIDIA GeForce RTX 4090 D", "NVIDIA L40", "NVIDIA H200 NVL",
    "TPU v4 lite", "AMD Instinct MI250X / MI250", "Tesla V100S-PCIE-32GB", "NVIDIA A100", "NVIDIA GH200",
    "NVIDIA H800 NVL",               # the 94 GB PCIe H800: no spec, must not fall to h800-pcie / h800-sxm
    "gfx950", "gfx950:sramecc+:xnack-",  # LLVM target of MI350X, MI355X and MI350P: names no variant
    "AMD Instinct MI350P", "AMD Instinct MI300", "NVIDIA H20",
    "Trainium3", "Inferentia1",
    "", None, "cpu",
]


@pytest.mark.parametrize("name,key", sorted(REPORTED.items()))
def test_reported_names_match(name, key):
    spec = match_device(name)
    assert spec is not None and spec.key == key, explain_match(name)


@pytest.mark.parametrize("name", UNMATCHED, ids=[str(n) for n in UNMATCHED])
def test_unknown_or_ambiguous_names_give_none_with_a_reason(name):
    m = resolve_device(name)
    assert m.spec is None
    assert m.reason and "\n" not in m.reason


def test_match_reasons_say_why():
    assert "family" in explain_match("NVIDIA H100") and "h100-sxm" in explain_match("NVIDIA H100")
    assert "unknown device" in explain_match("Quadro GP100")
    assert "alias" in explain_match("NVIDIA H100 80GB HBM3")


def test_memory_hint_settles_a_family_but_never_guesses():
    # chrome-trace HolisticTraceAnalysis: 'NVIDIA A100-PG509-200', totalGlobalMem 42297524224
    assert resolve_device("NVIDIA GH200", memory_bytes=102_005_473_280).spec.key == "gh200"  # ncu total_memory of the corpus GH200
    # pytorch__kineto after_fix: 'NVIDIA H100' with 102 GB and 132 SMs fits no shipped H100 (80 / 94 GB)
    m = resolve_device("NVIDIA H100", memory_bytes=102_085_492_736, sm_count=132)
    assert m.spec is None and "none fits" in m.reason
    assert resolve_device("NVIDIA A100", memory_bytes=85_100_000_000, sm_count=108).spec is None  # SXM or PCIe 80GB: still two
    assert resolve_device("NVIDIA A10G", sm_count=72).spec is None  # the name fits, the SM count does not


def test_look_alike_families_stay_apart():
    # H100 vs H800, and the CDNA 3 / CDNA 4 parts: no name of one resolves to another
    pairs = {"NVIDIA H100 80GB HBM3": "h100-sxm", "NVIDIA H800 80GB HBM3": "h800-sxm", "NVIDIA H100 PCIe": "h100-pcie",
             "NVIDIA H800 PCIe": "h800-pcie", "AMD Instinct MI300X": "mi300x", "AMD Instinct MI300A": "mi300a",
             "AMD Instinct MI325X": "mi325x", "AMD Instinct MI350X": "mi350x", "AMD Instinct MI355X": "mi355x"}
    for name, key in pairs.items():
        m = resolve_device(name)
        assert m.spec is not None and m.spec.key == key and len(m.candidates) <= 1, (name, m.reason)
    assert resolve_device("NVIDIA H800").spec.key == "h800-sxm"
    assert resolve_device("NVIDIA H100").spec is None
    # gfx950 is two OAM parts that differ only in clock: never guessed, even with a fitting memory size and CU count
    for hint in ({}, {"memory_bytes": 288 * 2**30 * 0.99, "sm_count": 256}):
        m = resolve_device("gfx950", **hint)
        assert m.spec is None and set(m.candidates) == {"mi350x", "mi355x"}, m.reason


def test_h800_name_with_a_memory_size_that_does_not_fit_is_rejected():
    # 'NVIDIA H800' names the 80 GB SXM5 part; another variant reporting the same name must not borrow its ceilings
    m = resolve_device("NVIDIA H800", memory_bytes=150e9)
    assert m.spec is None and "does not fit" in m.reason
    assert resolve_device("NVIDIA H800", memory_bytes=81559 * 2**20, sm_count=132).spec.key == "h800-sxm"
    assert resolve_device("NVIDIA H800 PCIe", sm_count=132).spec is None


def test_dgx_station_v100_is_the_sxm2_32gb_part():
    # 'Tesla V100-DGXS-32GB' is the V100 SXM2 32 GB module of the DGX Station (NVLink, 300 W, 1530 MHz / 877 MHz max clocks as
    # nvidia-smi reports them): same ceilings, so it is an alias of v100-sxm2-32gb, not a separate spec
    s = resolve_device("Tesla V100-DGXS-32GB", memory_bytes=34084028416, sm_count=80).spec
    assert s is not None and s.key == "v100-sxm2-32gb"
    assert s.peak_flops_per_s("fp16_tensor") == pytest.approx(125e12, rel=0.01)


@pytest.mark.corpus
def test_dgx_station_device_properties_in_the_corpus_resolve():
    # chrome-trace pytorch__kineto gpu_metrics_expected.json: 'computeProperties' of four Tesla V100-DGXS-32GB, read as plain JSON
    from conftest import corpus_file

    doc = json.loads(corpus_file("chrome-trace", "gpu_metrics_expected").read_text())
    props = doc["computeProperties"]
    assert len(props) == 4
    for p in props:
        m = resolve_device(p["name"], memory_bytes=p["totalGlobalMem"], sm_count=p["multiProcessorCount"])
        assert m.spec is not None and m.spec.key == "v100-sxm2-32gb", m.reason


def test_aliases_are_unique_and_self_consistent():
    specs = load_specs()
    seen = {}
    for s in specs.values():
        for a in s.aliases:
            n = normalize_name(a)
            assert n not in seen, (a, s.key, seen.get(n))
            seen[n] = s.key
            assert match_device(a).key == s.key


def test_normalize_name():
    assert normalize_name("NVIDIA A100-SXM4-40GB") == "nvidia a100 sxm4 40gb"
    assert normalize_name("  TPU v5 lite ") == "tpu v5 lite"


def test_get_spec_unknown_is_a_usage_error():
    with pytest.raises(UsageError, match="Quadro GP100"):
        get_spec("Quadro GP100")
    assert get_spec("A100-SXM4-40GB").key == "a100-sxm-40gb"


# ---------------------------------------------------------------------------------------------------
# User spec files

USER_SPEC = """
schema_version: 1
key: my-gpu
name: My GPU 9000
vendor: Example
scope: device
aliases: [My GPU 9000]
compute_units: {value: 10, kind: SM, source: mine}
boost_clock_mhz: {value: 1000, source: mine}
bandwidth_bytes_per_s:
  dram: {value: 1e12, source: mine}
  l2: {value: 4.0e+12, clock_mhz: 1000, source: mine, derivation: 4 KB/clk x 1 GHz}
peak_flops_per_s_dense:
  fp32: {value: 1.0e+13, clock_mhz: 1000, source: mine}
  fp16_tensor: {value: 1.0e+14, clock_mhz: 1000, source: mine}
peak_flops_per_s_sparse:
  fp16_tensor: {value: 2.0e+14, clock_mhz: 1000, source: mine}
sources:
  mine: {title: my own measurement}
"""


def test_user_spec_works_like_a_shipped_one(tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text(USER_SPEC)
    specs = load_specs([f])
    assert "my-gpu" in specs and "h100-sxm" in specs
    s = match_device("My GPU 9000", extra_paths=[f])
    assert s.key == "my-gpu" and s.path == str(f)
    assert s.bandwidth_bytes_per_s("dram") == 1e12  # '1e12' (a YAML string) is accepted as a number
    assert s.peak_flops_per_s("fp32", clock_hz=500e6) == pytest.approx(5e12)
    assert match_device("My GPU 9000") is None
    # a folder of specs works too, and a user file can replace a shipped spec by key
    d = tmp_path / "dir"
    d.mkdir()
    (d / "t4.yaml").write_text(USER_SPEC.replace("key: my-gpu", "key: t4").replace("[My GPU 9000]", "[Tesla T4 custom]"))
    assert load_specs([d])["t4"].name == "My GPU 9000"


BAD_SPECS = [
    ("", "empty file"),
    ("key: [unclosed", "not valid YAML"),
    ("- a\n- b\n", "one mapping"),
    (USER_SPEC.replace("schema_version: 1", "schema_version: 2"), "schema_version"),
    (USER_SPEC.replace("fp32: {value: 1.0e+13, clock_mhz: 1000, source: mine}", "fp32: {value: 1.0e+13}"), "no 'source'"),
    (USER_SPEC.replace("fp32: {value", "fp12: {value"), "unknown precision"),
    (USER_SPEC.replace("l2: {value", "l3: {value"), "unknown memory level"),
    (USER_SPEC.replace("value: 2.0e+14", "value: 2.0e+13"), "exceeds"),
    (USER_SPEC.replace("source: mine}\npeak_flops", "source: theirs}\npeak_flops"), "not a key of 'sources'"),
    (USER_SPEC.replace("value: 1.0e+13,", "value: -5,"), "positive number"),
    (USER_SPEC.replace("vendor: Example", "vendor: Example\nbogus: 1"), "unknown key"),
    (USER_SPEC.replace("aliases: [My GPU 9000]", "aliases: [My GPU 9000]\nmatch_patterns: ['(']"), "regular expression"),
    (USER_SPEC.replace("key: my-gpu", "key: My GPU"), "lower-case"),
]


@pytest.mark.parametrize("text,needle", BAD_SPECS, ids=[n for _, n in BAD_SPECS])
def test_bad_user_yaml_is_one_line_input_error(tmp_path, text, needle, cli):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(InputError) as ei:
        load_specs([f])
    msg = str(ei.value)
    assert "\n" not in msg and str(f) in msg and needle in msg, msg
    res = cli("devices", "--spec", f)
    assert_one_line_error(res, needle)


def test_missing_spec_file(tmp_path, cli):
    assert_one_line_error(cli("devices", "--spec", tmp_path / "nope.yaml"), "no such file")


def test_duplicate_user_keys(tmp_path):
    for n in ("a.yaml", "b.yaml"):
        (tmp_path / n).write_text(USER_SPEC)
    with pytest.raises(InputError, match="also defined"):
        load_specs([tmp_path / "a.yaml", tmp_path / "b.yaml"])


# ---------------------------------------------------------------------------------------------------
# CLI


def test_cli_devices_lists_every_spec(cli):
    res = cli("devices", "--format", "csv")
    assert res.code == 0, res
    keys = [line.split(",")[0] for line in res.out.splitlines()[1:]]
    assert set(keys) == set(load_specs())


def test_cli_devices_shows_a_matched_name(cli):
    res = cli("devices", "NVIDIA H100 80GB HBM3")
    assert res.code == 0, res
    assert "h100-sxm" in res.out and "alias" in res.out and "NVIDIA H100 Tensor Core GPU Datasheet" in res.out
    assert "1830 MHz" in res.out  # tensor peaks state the clock they assume
    j = cli("devices", "tpu-v5e", "--format", "json")
    d = json.loads(j.out)
    assert d["key"] == "tpu-v5e" and d["peak_flops_per_s_dense"]["bf16_tensor"]["value"] == 197e12
    c = cli("devices", "a100-sxm-40gb", "--format", "csv")
    assert c.code == 0 and "l2," in c.out.replace("memory,l2", "l2,")


def test_cli_devices_unknown_name_exits_2(cli):
    assert_one_line_error(cli("devices", "NVIDIA H100"), "family")
    assert_one_line_error(cli("devices", "Quadro GP100"), "unknown device")


def test_cli_devices_user_spec(tmp_path, cli):
    f = tmp_path / "mine.yaml"
    f.write_text(USER_SPEC)
    res = cli("devices", "My GPU 9000", "--spec", f)
    assert res.code == 0 and "my-gpu" in res.out


def _corpus_device_names() -> dict[str, str]:
    """Every device name the corpus files report, read independently of profaudit's parsers."""
    import gzip
    import sqlite3

    from conftest import corpus_dir

    root = corpus_dir()
    names: dict[str, str] = {}
    try:
        import ncu_report
    except ImportError:  # pragma: no cover
        ncu_report = None
    if ncu_report is not None:
        for f in sorted((root / "ncu-rep").glob("*")):
            try:
                ctx = ncu_report.load_report(str(f))
                a = ctx.range_by_idx(0).action_by_idx(0)
                names.setdefault(a.metric_by_name("device__attribute_display_name").as_string(), f.name)
            except Exception:
                continue
    for f in sorted((root / "chrome-trace").glob("*")):
        opener = gzip.open if f.name.endswith(".gz") else open
        try:
            with opener(f, "rt") as fh:
                d = json.load(fh)
        except Exception:
            continue
        if isinstance(d, dict):
            for p in d.get("deviceProperties") or []:
                if p.get("name"):
                    names.setdefault(p["name"], f.name)
    for f in sorted((root / "nsys-sqlite").glob("*.sqlite")):
        try:
            con = sqlite3.connect(f"file:{f}?mode=ro", uri=True)
            for t in ("TARGET_INFO_GPU", "TARGET_INFO_CUDA_GPU"):
                try:
                    for (n,) in con.execute(f"select name from {t}"):
                        if n:
                            names.setdefault(n, f.name)
                except sqlite3.Error:
                    pass
            con.close()
        except sqlite3.Error:
            continue
    return names


@pytest.mark.corpus
def test_every_device_name_in_the_corpus_is_classified():
    names = _corpus_device_names()
    assert len(names) >= 15
    unclassified = {n: f for n, f in names.items() if n not in REPORTED and n not in UNMATCHED}
    assert not unclassified, f"add these corpus names to REPORTED or UNMATCHED: {unclassified}"
    for n in names:
        m = resolve_device(n)
        assert (m.spec.key if m.spec else None) == REPORTED.get(n), (n, m.reason)


# ===================================================================================================
# Consumer and workstation NVIDIA parts that public ncu / nsys reports name (GeForce RTX 30/40/50, RTX A5000 / A6000 /
# 6000 Ada, Quadro RTX 6000 / 8000, GTX 1080 Ti, Tesla P100). Self-contained block: its own rate table and name lists.

CONSUMER_KEYS = [
    "rtx-4080", "rtx-4070-ti", "rtx-4070-ti-super", "rtx-4060", "rtx-4060-ti", "rtx-3060", "rtx-3060-ti", "rtx-3070",
    "rtx-3070-ti", "rtx-3080-ti", "rtx-5090", "rtx-5080", "rtx-5060-ti", "rtx-a5000", "rtx-a6000", "rtx-6000-ada",
    "quadro-rtx-6000", "quadro-rtx-8000", "gtx-1080-ti", "p100-sxm2-16gb", "p100-pcie-16gb", "p100-pcie-12gb",
]

# Dense FLOP (ops) per clock per SM, read off the vendor tables named in each spec's derivations: GeForce parts run FP16/BF16
# (and FP8) MMA with FP32 accumulate at half the FP16-accumulate rate; workstation parts do not.
_CONSUMER_PER_SM = {
    "ad10x_geforce": dict(fp32=256, fp16=256, tf32_tensor=256, fp16_tensor=512, bf16_tensor=512, fp8_tensor=1024, int8_tensor=2048,
                          fp16_tensor_fp16_accumulate=1024, fp8_tensor_fp16_accumulate=2048, int4_tensor=4096),
    "ga10x_geforce": dict(fp32=256, fp16=256, tf32_tensor=256, fp16_tensor=512, bf16_tensor=512, int8_tensor=2048,
                          fp16_tensor_fp16_accumulate=1024, int4_tensor=4096),
    "gb20x_geforce": dict(fp32=256, tf32_tensor=256, fp16_tensor=512, bf16_tensor=512, fp8_tensor=1024, int8_tensor=2048, fp4_tensor=4096,
                          fp16_tensor_fp16_accumulate=1024, fp8_tensor_fp16_accumulate=2048),
    "ga102_pro": dict(fp32=256, tf32_tensor=512, fp16_tensor=1024, bf16_tensor=1024, int8_tensor=2048, int4_tensor=4096),
    "ad102_pro": dict(fp32=256, tf32_tensor=512, fp16_tensor=1024, bf16_tensor=1024, fp8_tensor=2048, int8_tensor=2048),
    "tu102_quadro": dict(fp32=128, fp16=256, fp16_tensor=1024, int8_tensor=2048, fp16_tensor_fp16_accumulate=1024, int4_tensor=4096),
    "gp102": dict(fp32=256),
    "gp100": dict(fp64=64, fp32=128, fp16=256),
}
_CONSUMER_ARCH = {
    "rtx-4080": "ad10x_geforce", "rtx-4070-ti": "ad10x_geforce", "rtx-4070-ti-super": "ad10x_geforce", "rtx-4060": "ad10x_geforce",
    "rtx-4060-ti": "ad10x_geforce", "rtx-3060": "ga10x_geforce", "rtx-3060-ti": "ga10x_geforce", "rtx-3070": "ga10x_geforce",
    "rtx-3070-ti": "ga10x_geforce", "rtx-3080-ti": "ga10x_geforce", "rtx-5090": "gb20x_geforce", "rtx-5080": "gb20x_geforce",
    "rtx-5060-ti": "gb20x_geforce", "rtx-a5000": "ga102_pro", "rtx-a6000": "ga102_pro", "rtx-6000-ada": "ad102_pro",
    "quadro-rtx-6000": "tu102_quadro", "quadro-rtx-8000": "tu102_quadro", "gtx-1080-ti": "gp102", "p100-sxm2-16gb": "gp100",
    "p100-pcie-16gb": "gp100", "p100-pcie-12gb": "gp100",
}


def test_consumer_parts_are_shipped_and_rated():
    specs = load_specs()
    assert [k for k in CONSUMER_KEYS if k not in specs] == []
    assert sorted(_CONSUMER_ARCH) == sorted(CONSUMER_KEYS)


@pytest.mark.parametrize("key", CONSUMER_KEYS)
def test_consumer_peaks_reproduce_at_their_stated_clock(key):
    """Printed or derived, every peak is SMs x FLOP/clk/SM x clock_mhz within 1 % (printed figures are rounded)."""
    spec = get_spec(key)
    rates = _CONSUMER_PER_SM[_CONSUMER_ARCH[key]]
    checked = 0
    for table, factor in ((spec.peaks_dense, 1), (spec.peaks_sparse, 2), (spec.other_peaks, 1)):
        for prec, v in table.items():
            assert v.clock_hz, (key, prec)
            predicted = spec.sm_count * rates[prec] * factor * v.clock_hz
            assert abs(v.value / predicted - 1) <= 0.01, (key, prec, v.value, predicted)
            checked += 1
    assert checked >= 1
    # the boost clock is the one every compute peak assumes, and L1 is 128 B/clk/SM at it
    assert {v.clock_hz for t in (spec.peaks_dense, spec.peaks_sparse, spec.other_peaks) for v in t.values()} == {spec.boost_clock_hz}
    assert spec.bandwidth_bytes_per_s("l1") == pytest.approx(128 * spec.sm_count * spec.boost_clock_hz)


def test_geforce_fp32_accumulate_is_half_rate_and_workstation_is_not():
    for key in CONSUMER_KEYS:
        spec = get_spec(key)
        acc16 = spec.other_peaks.get("fp16_tensor_fp16_accumulate")
        dense = spec.peak("fp16_tensor")
        if acc16 is None or dense is None:
            continue
        ratio = acc16.value / dense.value
        want = 2.0 if _CONSUMER_ARCH[key].endswith("geforce") else 1.0
        assert ratio == pytest.approx(want, rel=2e-3), (key, ratio)
    # a GeForce part's FP16 GEMM roof (FP32 accumulate, what cuBLAS uses) is half its tensor-FLOPS marketing figure
    assert get_spec("rtx-4080").peak_flops_per_s("fp16_tensor") == pytest.approx(76 * 512 * 2505e6, rel=1e-3)
    assert get_spec("rtx-a6000").peak_flops_per_s("fp16_tensor") == pytest.approx(84 * 1024 * 1800e6, rel=1e-3)


# Figures as the vendor (or, where marked, the driver) prints them; each source note says how far it was checked.
CONSUMER_SPOT_CHECKS = [
    # RTX Blackwell whitepaper Table 3 (quoted): RTX 5090 BF16 with FP32 accumulate 209.5/419, FP8 with FP32 accumulate 419/838,
    # FP4 1676/3352, INT8 838, TF32 104.8, FP16 with FP16 accumulate 419, 1792 GB/s
    ("rtx-5090", "bf16_tensor", False, 209.5 * T), ("rtx-5090", "bf16_tensor", True, 419 * T),
    ("rtx-5090", "fp8_tensor", False, 419 * T), ("rtx-5090", "fp8_tensor", True, 838 * T),
    ("rtx-5090", "fp4_tensor", False, 1676 * T), ("rtx-5090", "fp4_tensor", True, 3352 * T),
    ("rtx-5090", "int8_tensor", False, 838 * T), ("rtx-5090", "tf32_tensor", False, 104.8 * T), ("rtx-5090", "dram", None, 1792e9),
    # NVIDIA's RTX 5080 '1801 AI TOPS' (sparse FP4), 960 GB/s
    ("rtx-5080", "fp4_tensor", True, 1801 * T), ("rtx-5080", "dram", None, 960e9),
    # RTX PRO Blackwell whitepaper Table 4 (quoted): RTX 6000 Ada BF16 with FP32 accumulate 364 dense / 728 sparse; datasheet 91.1 FP32
    ("rtx-6000-ada", "bf16_tensor", False, 364 * T), ("rtx-6000-ada", "bf16_tensor", True, 728 * T),
    ("rtx-6000-ada", "fp32", False, 91.1 * T), ("rtx-6000-ada", "dram", None, 960e9),
    # GA102 whitepaper (quoted): RTX A6000 BF16 with FP32 accumulate 154.8/309.6; datasheets: A6000 38.7 FP32, A5000 27.8 FP32
    ("rtx-a6000", "bf16_tensor", False, 154.8 * T), ("rtx-a6000", "bf16_tensor", True, 309.6 * T),
    ("rtx-a6000", "fp32", False, 38.7 * T), ("rtx-a6000", "dram", None, 768e9),
    ("rtx-a5000", "fp32", False, 27.8 * T), ("rtx-a5000", "dram", None, 768e9),
    # NVIDIA Turing blog Table 1 (verbatim capture): Quadro RTX 6000 16.3 / 32.6 / 130.5 / 261.0, 672 GB/s; GTX 1080 Ti 11.3, 484 GB/s
    ("quadro-rtx-6000", "fp32", False, 16.3 * T), ("quadro-rtx-6000", "fp16", False, 32.6 * T),
    ("quadro-rtx-6000", "fp16_tensor", False, 130.5 * T), ("quadro-rtx-6000", "int8_tensor", False, 261.0 * T),
    ("quadro-rtx-6000", "dram", None, 672e9), ("quadro-rtx-8000", "fp16_tensor", False, 130.5 * T),
    ("gtx-1080-ti", "fp32", False, 11.3 * T), ("gtx-1080-ti", "dram", None, 484e9),
    # NVIDIA Ampere blog Table 3 (verbatim capture): Tesla P100 SXM 5.3 / 10.6 / 21.2; P100 datasheet: PCIe 4.7 / 9.3 / 18.7,
    # 732 GB/s (16 GB) and 549 GB/s (12 GB)
    ("p100-sxm2-16gb", "fp64", False, 5.3 * T), ("p100-sxm2-16gb", "fp32", False, 10.6 * T), ("p100-sxm2-16gb", "fp16", False, 21.2 * T),
    ("p100-pcie-16gb", "fp64", False, 4.7 * T), ("p100-pcie-16gb", "fp32", False, 9.3 * T), ("p100-pcie-16gb", "fp16", False, 18.7 * T),
    ("p100-pcie-16gb", "dram", None, 732e9), ("p100-pcie-12gb", "dram", None, 549e9), ("p100-sxm2-16gb", "dram", None, 732e9),
    # driver records in the corpus: RTX 3070 7001 MHz x 256 bit (448 GB/s); RTX 4060 Ti memoryBandwidth 288,032,000,000
    ("rtx-3070", "dram", None, 448e9), ("rtx-4060-ti", "dram", None, 288.032e9),
    # third-party copies of launch specifications (unverified): memory data rate x bus width
    ("rtx-4080", "dram", None, 716.8e9), ("rtx-4070-ti", "dram", None, 504e9), ("rtx-4070-ti-super", "dram", None, 672e9),
    ("rtx-4060", "dram", None, 272e9), ("rtx-3060", "dram", None, 360e9), ("rtx-3060-ti", "dram", None, 448e9),
    ("rtx-3070-ti", "dram", None, 608e9), ("rtx-3080-ti", "dram", None, 912e9), ("rtx-5060-ti", "dram", None, 448e9),
]


@pytest.mark.parametrize("key,what,sparse,expected", CONSUMER_SPOT_CHECKS,
                         ids=[f"{k}-{w}-{'sparse' if s else 'dense' if s is False else 'bw'}" for k, w, s, _ in CONSUMER_SPOT_CHECKS])
def test_consumer_spot_checks(key, what, sparse, expected):
    spec = get_spec(key)
    got = spec.bandwidth_bytes_per_s(what) if sparse is None else spec.peak_flops_per_s(what, sparse=sparse)
    assert got is not None and abs(got / expected - 1) <= 0.01, (key, what, got, expected)


def test_consumer_sizes_counts_and_clocks():
    g = get_spec
    assert (g("rtx-3070").sm_count, g("rtx-3070").boost_clock_hz, g("rtx-3070").l2_cache_bytes) == (46, 1725e6, 4 * 2**20)
    assert (g("rtx-4060-ti").sm_count, g("rtx-4060-ti").l2_cache_bytes, g("rtx-4060-ti").memory_bytes) == (34, 32 * 2**20, None)
    assert (g("rtx-5090").sm_count, g("rtx-5090").boost_clock_hz, g("rtx-5090").memory_bytes) == (170, 2407e6, 32 * 2**30)
    assert (g("gtx-1080-ti").sm_count, g("gtx-1080-ti").l2_cache_bytes, g("gtx-1080-ti").memory_bytes) == (28, 2816 * 1024, 11 * 2**30)
    assert (g("quadro-rtx-6000").memory_bytes, g("quadro-rtx-8000").memory_bytes) == (24 * 2**30, 48 * 2**30)
    assert g("p100-sxm2-16gb").boost_clock_hz == 1480e6 and g("p100-pcie-16gb").boost_clock_hz == 1303e6
    assert g("rtx-3080-ti").sm_count == 80 and g("rtx-3080").sm_count == 68
    # dual-capacity cards carry no memory size, so a 16 GB board is not rejected by the memory hint
    for key in ("rtx-4060-ti", "rtx-5060-ti"):
        assert g(key).memory_bytes is None


CONSUMER_NAMES = {
    # names the brief requires and names the corpus reports
    "NVIDIA GeForce RTX 3060": "rtx-3060", "NVIDIA GeForce RTX 3060 Ti": "rtx-3060-ti",
    "NVIDIA GeForce RTX 4070 Ti": "rtx-4070-ti", "NVIDIA GeForce RTX 4070 Ti SUPER": "rtx-4070-ti-super",
    "NVIDIA RTX A5000": "rtx-a5000", "NVIDIA RTX A6000": "rtx-a6000", "NVIDIA RTX 6000 Ada Generation": "rtx-6000-ada",
    "Quadro RTX 6000": "quadro-rtx-6000", "Quadro RTX 8000": "quadro-rtx-8000",
    "NVIDIA GeForce GTX 1080 Ti": "gtx-1080-ti", "GeForce GTX 1080 Ti": "gtx-1080-ti",
    "Tesla P100-PCIE-16GB": "p100-pcie-16gb", "Tesla P100-SXM2-16GB": "p100-sxm2-16gb", "Tesla P100-PCIE-12GB": "p100-pcie-12gb",
    "NVIDIA GeForce RTX 3070": "rtx-3070", "NVIDIA GeForce RTX 3070 Ti": "rtx-3070-ti",
    "NVIDIA GeForce RTX 3080": "rtx-3080", "GeForce RTX 3080": "rtx-3080", "NVIDIA GeForce RTX 3080 Ti": "rtx-3080-ti",
    "NVIDIA GeForce RTX 4060": "rtx-4060", "NVIDIA GeForce RTX 4060 Ti": "rtx-4060-ti", "NVIDIA GeForce RTX 4080": "rtx-4080",
    "NVIDIA GeForce RTX 4090": "rtx-4090", "NVIDIA GeForce RTX 3090": "rtx-3090",
    "NVIDIA GeForce RTX 5090": "rtx-5090", "NVIDIA GeForce RTX 5080": "rtx-5080", "NVIDIA GeForce RTX 5060 Ti": "rtx-5060-ti",
    # look-alikes: laptop parts (OEM clocks), SUPER / D / 12GB variants, other generations of a '6000' card, unspecified parts
    "NVIDIA GeForce RTX 3060 Laptop GPU": None, "NVIDIA GeForce RTX 4060 Laptop GPU": None, "NVIDIA GeForce RTX 3070 Laptop GPU": None,
    "NVIDIA GeForce RTX 3080 Laptop GPU": None, "NVIDIA GeForce RTX 3080 Ti Laptop GPU": None, "NVIDIA RTX A5000 Laptop GPU": None,
    "NVIDIA GeForce RTX 4080 SUPER": None, "NVIDIA GeForce RTX 4080 Laptop GPU": None, "NVIDIA GeForce RTX 5090 D": None,
    "NVIDIA GeForce RTX 4070": None, "NVIDIA GeForce RTX 4070 SUPER": None, "NVIDIA GeForce RTX 5060": None,
    "NVIDIA GeForce RTX 3090 Ti": None, "NVIDIA GeForce GTX 1080": "gtx-1080", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": None,
    "NVIDIA RTX 5000 Ada Generation": None, "Quadro GP100": None, "Tesla P100": None, "NVIDIA GeForce RTX 2080 Ti": "rtx-2080-ti",
}


@pytest.mark.parametrize("name,key", sorted(CONSUMER_NAMES.items()))
def test_consumer_names_match_only_their_part(name, key):
    m = resolve_device(name)
    assert (m.spec.key if m.spec else None) == key, m.reason
    if key is None:
        assert m.reason and "\n" not in m.reason


def test_consumer_family_names_say_which_specs_they_resemble():
    m = resolve_device("NVIDIA GeForce RTX 3060 Laptop GPU")
    assert m.spec is None and "family" in m.reason and "rtx-3060" in m.candidates
    m = resolve_device("NVIDIA GeForce RTX 4080 SUPER")
    assert m.spec is None and m.candidates == ("rtx-4080",)
    # 'Tesla P100' alone names no variant: three candidates, none chosen
    assert set(resolve_device("Tesla P100").candidates) == {"p100-sxm2-16gb", "p100-pcie-16gb", "p100-pcie-12gb"}


def test_consumer_memory_and_sm_hints_reject_other_variants():
    # the 8 GB RTX 3060 (128-bit, 240 GB/s) reports the same name: its memory size rejects the 12 GB spec
    assert resolve_device("NVIDIA GeForce RTX 3060", memory_bytes=8.3e9).spec is None
    assert resolve_device("NVIDIA GeForce RTX 3060", memory_bytes=12.6e9).spec.key == "rtx-3060"
    # the RTX 3080 12GB (70 SMs) reports 'NVIDIA GeForce RTX 3080': its SM count rejects the 68-SM spec
    assert resolve_device("NVIDIA GeForce RTX 3080", sm_count=70).spec is None
    assert resolve_device("NVIDIA GeForce RTX 3080 Ti", sm_count=80).spec.key == "rtx-3080-ti"
    # both RTX 4060 Ti boards fit the one spec
    assert resolve_device("NVIDIA GeForce RTX 4060 Ti", memory_bytes=17.1e9, sm_count=34).spec.key == "rtx-4060-ti"


def test_no_laptop_part_is_shipped():
    # laptop clocks are set by the OEM within a range NVIDIA publishes: no single roof exists, so none is given
    assert not [s.key for s in load_specs().values() if "laptop" in s.name.lower() or "mobile" in s.name.lower()]


@pytest.mark.corpus
def test_rtx_3070_spec_agrees_with_its_driver_record():
    """The corpus RTX 3070 report, read with NVIDIA's ncu_report (independent of profaudit's parser)."""
    ncu_report = pytest.importorskip("ncu_report")
    from conftest import corpus_dir

    f = corpus_dir() / "ncu-rep" / "NVIDIA__nsight-training__manual_nvtx.ncu-rep"
    if not f.exists():
        pytest.skip("corpus file absent")
    a = ncu_report.load_report(str(f)).range_by_idx(0).action_by_idx(0)
    attr = lambda n: a.metric_by_name(f"device__attribute_{n}").value()  # noqa: E731
    assert a.metric_by_name("device__attribute_display_name").as_string() == "NVIDIA GeForce RTX 3070"
    spec = match_device("NVIDIA GeForce RTX 3070")
    assert spec.sm_count == attr("multiprocessor_count")
    assert spec.boost_clock_hz == attr("clock_rate") * 1e3
    assert spec.l2_cache_bytes == attr("l2_cache_size")
    dram = attr("memory_clock_rate") * 1e3 * 2 * attr("global_memory_bus_width") / 8
    assert spec.bandwidth_bytes_per_s("dram") == pytest.approx(dram, rel=1e-3)
    assert 0.85 * spec.memory_bytes <= attr("total_memory") <= spec.memory_bytes


@pytest.mark.corpus
def test_rtx_4060_ti_spec_agrees_with_its_driver_record():
    """The corpus RTX 4060 Ti Nsight Systems export, read with sqlite3."""
    import sqlite3

    from conftest import corpus_dir

    f = corpus_dir() / "nsys-sqlite" / "0x822a5b87__test-cuda__report1.sqlite"
    if not f.exists():
        pytest.skip("corpus file absent")
    con = sqlite3.connect(f"file:{f}?mode=ro", uri=True)
    try:
        name, sms, l2, bw, total = con.execute("select name, smCount, l2CacheSize, memoryBandwidth, totalMemory from TARGET_INFO_GPU").fetchone()
    finally:
        con.close()
    spec = match_device(name, memory_bytes=total, sm_count=sms)
    assert spec is not None and spec.key == "rtx-4060-ti"
    assert (spec.sm_count, spec.l2_cache_bytes) == (sms, l2)
    assert spec.bandwidth_bytes_per_s("dram") == pytest.approx(bw, rel=1e-6)


# ===================================================================================================
# Older consumer NVIDIA parts public ncu / nsys / nvprof reports name: GeForce RTX 20 and GTX 16 (Turing), TITAN RTX, GTX 10 and
# TITAN Xp / X (Pascal), TITAN V (Volta), RTX 3050 (desktop 8 GB). Self-contained block: its own rate table and name lists.

OLDER_KEYS = [
    "rtx-2080-ti", "rtx-2080-super", "rtx-2080", "rtx-2070-super", "rtx-2070", "rtx-2060-super", "rtx-2060", "titan-rtx",
    "gtx-1660-ti", "gtx-1660-super", "gtx-1660", "gtx-1650-gddr5", "gtx-1650-gddr6",
    "gtx-1080", "gtx-1070-ti", "gtx-1070", "gtx-1060-6gb", "titan-xp", "titan-x-pascal", "titan-v", "rtx-3050",
]
# FLOP (ops) per clock per SM, dense. Turing: the RTX 2080 Ti column of NVIDIA's Turing Table 1 (GeForce: FP16 MMA with FP32
# accumulate at half the FP16-accumulate rate; TITAN RTX at the full rate) and TU102's FP64 at 1/32 of FP32. GTX 16 / Pascal / Volta
# non-tensor: the CUDA guide's results/clk/SM x 2 (cc 7.x: FP32 64, FP16 128, FP64 32 on 7.0; cc 6.1: FP32 128, FP16 2, FP64 4).
# GA10x: the RTX 3090 table of the GA102 whitepaper.
_OLDER_PER_SM = {
    "tu102_geforce": dict(fp64=4, fp32=128, fp16=256, fp16_tensor=512, int8_tensor=2048, fp16_tensor_fp16_accumulate=1024, int4_tensor=4096),
    "tu10x_geforce": dict(fp32=128, fp16=256, fp16_tensor=512, int8_tensor=2048, fp16_tensor_fp16_accumulate=1024, int4_tensor=4096),
    "tu102_titan": dict(fp64=4, fp32=128, fp16=256, fp16_tensor=1024, int8_tensor=2048, fp16_tensor_fp16_accumulate=1024, int4_tensor=4096),
    "tu11x": dict(fp32=128, fp16=256),
    "gp10x": dict(fp64=8, fp32=256, fp16=4),
    "gv100": dict(fp64=64, fp32=128, fp16=256, fp16_tensor=1024),
    "ga10x_geforce": dict(fp32=256, fp16=256, tf32_tensor=256, fp16_tensor=512, bf16_tensor=512, int8_tensor=2048,
                          fp16_tensor_fp16_accumulate=1024, int4_tensor=4096),
}
_OLDER_ARCH = {
    "rtx-2080-ti": "tu102_geforce", "rtx-2080-super": "tu10x_geforce", "rtx-2080": "tu10x_geforce", "rtx-2070-super": "tu10x_geforce",
    "rtx-2070": "tu10x_geforce", "rtx-2060-super": "tu10x_geforce", "rtx-2060": "tu10x_geforce", "titan-rtx": "tu102_titan",
    "gtx-1660-ti": "tu11x", "gtx-1660-super": "tu11x", "gtx-1660": "tu11x", "gtx-1650-gddr5": "tu11x", "gtx-1650-gddr6": "tu11x",
    "gtx-1080": "gp10x", "gtx-1070-ti": "gp10x", "gtx-1070": "gp10x", "gtx-1060-6gb": "gp10x", "titan-xp": "gp10x",
    "titan-x-pascal": "gp10x", "titan-v": "gv100", "rtx-3050": "ga10x_geforce",
}


def test_older_parts_are_shipped_and_rated():
    specs = load_specs()
    assert [k for k in OLDER_KEYS if k not in specs] == []
    assert sorted(_OLDER_ARCH) == sorted(OLDER_KEYS)
    # nothing here duplicates a key of the earlier consumer block
    assert not set(OLDER_KEYS) & set(CONSUMER_KEYS)


@pytest.mark.parametrize("key", OLDER_KEYS)
def test_older_peaks_reproduce_at_the_boost_clock(key):
    """Every peak, printed or derived, is SMs x FLOP/clk/SM x boost clock within 1 %, so rescaling to a kernel's clock is exact."""
    spec = get_spec(key)
    rates = _OLDER_PER_SM[_OLDER_ARCH[key]]
    seen = set()
    for table, factor in ((spec.peaks_dense, 1), (spec.peaks_sparse, 2), (spec.other_peaks, 1)):
        for prec, v in table.items():
            assert v.clock_hz == spec.boost_clock_hz, (key, prec)
            predicted = spec.sm_count * rates[prec] * factor * v.clock_hz
            assert abs(v.value / predicted - 1) <= 0.01, (key, prec, v.value, predicted)
            seen.add(prec)
    # every rate of the architecture is carried (nothing silently dropped) and nothing else is
    assert seen == set(rates), (key, set(rates) ^ seen)
    assert spec.bandwidth_bytes_per_s("l1") == pytest.approx(128 * spec.sm_count * spec.boost_clock_hz)
    assert spec.bandwidth("l2") is None  # NVIDIA publishes no L2 bytes/clk for these parts
    for p, v in {**spec.peaks_dense, **spec.other_peaks}.items():
        printed = not v.derivation
        # only the 2080 Ti's Table 1 figures are printed in the text read; its FP64 is derived from the stated 1/32 rate
        assert printed == (key == "rtx-2080-ti" and p != "fp64"), (key, p)


def test_older_precision_ratios():
    g = get_spec
    # Turing GeForce FP16 MMA with FP32 accumulate is half the FP16-accumulate rate (Turing Table 1: 53.8 vs 107.6); TITAN RTX is not
    for key in ("rtx-2080-ti", "rtx-2080-super", "rtx-2080", "rtx-2070-super", "rtx-2070", "rtx-2060-super", "rtx-2060", "rtx-3050"):
        s = g(key)
        assert s.other_peaks["fp16_tensor_fp16_accumulate"].value / s.peak_flops_per_s("fp16_tensor") == pytest.approx(2, rel=2e-3), key
    t = g("titan-rtx")
    assert t.other_peaks["fp16_tensor_fp16_accumulate"].value == pytest.approx(t.peak_flops_per_s("fp16_tensor"))
    # Pascal consumer: FP16 1/64 and FP64 1/32 of FP32; Volta TITAN V: FP64 1/2; TU102: FP64 1/32
    for key in ("gtx-1080", "gtx-1070-ti", "gtx-1070", "gtx-1060-6gb", "titan-xp", "titan-x-pascal"):
        s = g(key)
        assert s.peak_flops_per_s("fp16") / s.peak_flops_per_s("fp32") == pytest.approx(1 / 64, rel=2e-3), key
        assert s.peak_flops_per_s("fp64") / s.peak_flops_per_s("fp32") == pytest.approx(1 / 32, rel=2e-3), key
        assert not [p for p in s.peaks_dense if p.endswith("_tensor")], key
    assert g("titan-v").peak_flops_per_s("fp64") / g("titan-v").peak_flops_per_s("fp32") == pytest.approx(0.5, rel=2e-3)
    for key in ("rtx-2080-ti", "titan-rtx"):  # the 2080 Ti's FP32 is the printed 13.4 (13.45 unrounded)
        assert g(key).peak_flops_per_s("fp64") / g(key).peak_flops_per_s("fp32") == pytest.approx(1 / 32, rel=1e-2)
    # FP64 of the other Turing chips is not stated in the text read: absent rather than guessed
    for key in ("rtx-2080", "rtx-2070", "gtx-1660-ti", "gtx-1650-gddr6"):
        assert g(key).peak("fp64") is None
    # GTX 16 has no Tensor Cores; no part before Ampere has 2:4 sparsity; the RTX 3050 has it at twice its dense rate
    assert not [p for p in g("gtx-1660-ti").peaks_dense if p.endswith("_tensor")]
    assert [k for k in OLDER_KEYS if g(k).peaks_sparse and k != "rtx-3050"] == []
    s = g("rtx-3050")
    for p in s.precisions(sparse=True):
        assert s.peak_flops_per_s(p, sparse=True) == pytest.approx(2 * s.peak_flops_per_s(p), rel=1e-3), p


# Figures as printed; the comment says where, and each source note how far it was checked.
OLDER_SPOT_CHECKS = [
    # NVIDIA Turing blog Table 1 (verbatim capture, verified via copy), RTX 2080 Ti reference column
    ("rtx-2080-ti", "fp32", False, 13.4 * T), ("rtx-2080-ti", "fp16", False, 26.9 * T), ("rtx-2080-ti", "fp16_tensor", False, 53.8 * T),
    ("rtx-2080-ti", "int8_tensor", False, 215.2 * T), ("rtx-2080-ti", "dram", None, 616e9),
    # same table, Quadro RTX 6000 column: the full TU102 at 1770 MHz, which the TITAN RTX is (130.5 both accumulations)
    ("titan-rtx", "fp32", False, 16.3 * T), ("titan-rtx", "fp16", False, 32.6 * T), ("titan-rtx", "fp16_tensor", False, 130.5 * T),
    ("titan-rtx", "int8_tensor", False, 261.0 * T), ("titan-rtx", "dram", None, 672e9),
    # Tom's Hardware Titan RTX review (unverified): Titan V 119.2 TFLOPS FP16 with FP32 accumulate at its 1455 MHz boost
    ("titan-v", "fp16_tensor", False, 119.2 * T), ("titan-v", "dram", None, 652.8e9),
    # third-party copies of launch specifications (unverified): memory data rate x bus width
    ("rtx-2080", "dram", None, 448e9), ("rtx-2080-super", "dram", None, 496e9), ("rtx-2070-super", "dram", None, 448e9),
    ("rtx-2070", "dram", None, 448e9), ("rtx-2060-super", "dram", None, 448e9), ("rtx-2060", "dram", None, 336e9),
    ("gtx-1660-ti", "dram", None, 288e9), ("gtx-1660-super", "dram", None, 336e9), ("gtx-1660", "dram", None, 192e9),
    ("gtx-1650-gddr5", "dram", None, 128e9), ("gtx-1650-gddr6", "dram", None, 192e9),
    ("gtx-1080", "dram", None, 320e9), ("gtx-1070-ti", "dram", None, 256e9), ("gtx-1070", "dram", None, 256e9),
    ("gtx-1060-6gb", "dram", None, 192e9), ("titan-xp", "dram", None, 547.7e9), ("titan-x-pascal", "dram", None, 480e9),
    ("rtx-3050", "dram", None, 224e9),
    # CPUTronic (unverified): RTX 3050 8 GB 9.098 TFLOPS FP32 = 20 SMs x 256 x 1777 MHz
    ("rtx-3050", "fp32", False, 9.098 * T),
]


@pytest.mark.parametrize("key,what,sparse,expected", OLDER_SPOT_CHECKS,
                         ids=[f"{k}-{w}-{'sparse' if s else 'dense' if s is False else 'bw'}" for k, w, s, _ in OLDER_SPOT_CHECKS])
def test_older_spot_checks(key, what, sparse, expected):
    spec = get_spec(key)
    got = spec.bandwidth_bytes_per_s(what) if sparse is None else spec.peak_flops_per_s(what, sparse=sparse)
    assert got is not None and abs(got / expected - 1) <= 0.01, (key, what, got, expected)


def test_older_sizes_counts_and_clocks():
    g = get_spec
    # Turing Table 1: RTX 2080 Ti 68 SMs, 1350 / 1545 MHz reference, 11264 MB, 5632 KB L2
    s = g("rtx-2080-ti")
    assert (s.sm_count, s.base_clock_hz, s.boost_clock_hz, s.memory_bytes, s.l2_cache_bytes) == (68, 1350e6, 1545e6, 11264 * 2**20, 5632 * 1024)
    assert (g("titan-rtx").sm_count, g("titan-rtx").l2_cache_bytes, g("titan-rtx").memory_bytes) == (72, 6144 * 1024, 24 * 2**30)
    assert [g(k).sm_count for k in ("rtx-2080-super", "rtx-2080", "rtx-2070-super", "rtx-2070", "rtx-2060-super", "rtx-2060")] == [48, 46, 40, 36, 34, 30]
    assert [g(k).sm_count for k in ("gtx-1660-ti", "gtx-1660-super", "gtx-1660", "gtx-1650-gddr5", "gtx-1650-gddr6")] == [24, 22, 22, 14, 14]
    assert [g(k).sm_count for k in ("gtx-1080", "gtx-1070-ti", "gtx-1070", "gtx-1060-6gb", "titan-xp", "titan-x-pascal")] == [20, 19, 15, 10, 30, 28]
    assert (g("titan-v").sm_count, g("rtx-3050").sm_count) == (80, 20)
    assert [g(k).boost_clock_hz / 1e6 for k in ("gtx-1650-gddr5", "gtx-1650-gddr6", "gtx-1080", "titan-v", "rtx-3050")] == [1665, 1590, 1733, 1455, 1777]
    assert (g("gtx-1650-gddr5").memory_type, g("gtx-1650-gddr6").memory_type) == ("GDDR5", "GDDR6")
    # sizes no source read gives are absent rather than guessed
    assert g("rtx-2080-super").l2_cache_bytes is None and g("rtx-3050").l2_cache_bytes is None
    assert g("gtx-1660-super").memory_bytes is None
    assert {c.field for c in g("rtx-3050").conflicts} == {"l2_cache_bytes"}


OLDER_NAMES = {
    # the strings the tools print
    "NVIDIA GeForce RTX 2080 Ti": "rtx-2080-ti", "GeForce RTX 2080 Ti": "rtx-2080-ti", "GeForce GTX 1080": "gtx-1080",
    "NVIDIA GeForce GTX 1660 SUPER": "gtx-1660-super", "TITAN V": "titan-v", "NVIDIA TITAN V": "titan-v",
    "NVIDIA TITAN RTX": "titan-rtx", "TITAN RTX": "titan-rtx", "NVIDIA GeForce RTX 3050": "rtx-3050",
    "NVIDIA GeForce RTX 2080": "rtx-2080", "NVIDIA GeForce RTX 2080 SUPER": "rtx-2080-super", "GeForce RTX 2070": "rtx-2070",
    "NVIDIA GeForce RTX 2070 SUPER": "rtx-2070-super", "NVIDIA GeForce RTX 2060": "rtx-2060", "NVIDIA GeForce RTX 2060 SUPER": "rtx-2060-super",
    "NVIDIA GeForce GTX 1660 Ti": "gtx-1660-ti", "NVIDIA GeForce GTX 1660": "gtx-1660", "NVIDIA GeForce GTX 1080": "gtx-1080",
    "GeForce GTX 1070 Ti": "gtx-1070-ti", "GeForce GTX 1070": "gtx-1070", "GeForce GTX 1060 6GB": "gtx-1060-6gb",
    "NVIDIA TITAN Xp": "titan-xp", "TITAN Xp": "titan-xp", "TITAN Xp COLLECTORS EDITION": "titan-xp", "TITAN X (Pascal)": "titan-x-pascal",
    "GeForce RTX 2080 Ti (0)": "rtx-2080-ti",  # nvprof --print-gpu-trace appends the device index
    # the parts already shipped keep their match
    "NVIDIA GeForce GTX 1080 Ti": "gtx-1080-ti", "NVIDIA GeForce RTX 3060": "rtx-3060", "NVIDIA GeForce RTX 3060 Ti": "rtx-3060-ti",
    "Quadro RTX 6000": "quadro-rtx-6000", "Tesla T4": "t4",
    # look-alikes: laptop / Max-Q parts (OEM clocks), other variants, other generations of a name
    "NVIDIA GeForce GTX 1650": None, "NVIDIA GeForce GTX 1650 Ti": None, "NVIDIA GeForce GTX 1650 SUPER": None,
    "NVIDIA GeForce RTX 2060 with Max-Q Design": None, "GeForce RTX 2080 with Max-Q Design": None,
    "NVIDIA GeForce RTX 2080 Super with Max-Q Design": None, "NVIDIA GeForce GTX 1660 Ti with Max-Q design": None,
    "GeForce GTX 1080 with Max-Q Design": None, "NVIDIA GeForce RTX 2060 12GB": None, "GeForce GTX 1060 3GB": None,
    "GeForce GTX 1060": None, "GeForce GTX TITAN X": None, "NVIDIA TITAN V CEO Edition": None,
    "NVIDIA GeForce RTX 3050 Laptop GPU": None, "NVIDIA GeForce RTX 3050 Ti Laptop GPU": None, "NVIDIA GeForce RTX 3050 6GB": None,
    "NVIDIA GeForce RTX 3050 OEM": None, "NVIDIA GeForce RTX 3050 A Laptop GPU": None, "NVIDIA GeForce RTX 2070 Ti": None,
}


@pytest.mark.parametrize("name,key", sorted(OLDER_NAMES.items()))
def test_older_names_match_only_their_part(name, key):
    m = resolve_device(name)
    assert (m.spec.key if m.spec else None) == key, m.reason
    if key is None:
        assert m.reason and "\n" not in m.reason


def test_gtx_1650_memory_variants_stay_ambiguous_and_are_chosen_by_key():
    m = resolve_device("NVIDIA GeForce GTX 1650")
    assert m.spec is None and "ambiguous" in m.reason and set(m.candidates) == {"gtx-1650-gddr5", "gtx-1650-gddr6"}
    # the driver's memory size and SM count fit both boards: the hints cannot settle it either
    m = resolve_device("NVIDIA GeForce GTX 1650", memory_bytes=4.1e9, sm_count=14)
    assert m.spec is None and set(m.candidates) == {"gtx-1650-gddr5", "gtx-1650-gddr6"}
    assert get_spec("gtx-1650-gddr6").bandwidth_bytes_per_s("dram") == 1.5 * get_spec("gtx-1650-gddr5").bandwidth_bytes_per_s("dram")
    # the 16-SM laptop GTX 1650 reports the desktop name: its SM count rejects both
    assert resolve_device("NVIDIA GeForce GTX 1650", sm_count=16).spec is None


def test_older_memory_and_sm_hints_reject_other_variants():
    # RTX 2060 12GB (34 SMs) and the 6 GB / 18-SM RTX 3050, if reported under the plain name
    assert resolve_device("NVIDIA GeForce RTX 2060", memory_bytes=12.5e9).spec is None
    assert resolve_device("NVIDIA GeForce RTX 2060", sm_count=34).spec is None
    assert resolve_device("NVIDIA GeForce RTX 2060", memory_bytes=6.2e9, sm_count=30).spec.key == "rtx-2060"
    assert resolve_device("NVIDIA GeForce RTX 3050", memory_bytes=6.2e9).spec is None
    assert resolve_device("NVIDIA GeForce RTX 3050", sm_count=18).spec is None
    # the 32 GB TITAN V CEO Edition under the plain name
    assert resolve_device("NVIDIA TITAN V", memory_bytes=33.8e9).spec is None
    # laptop non-Max-Q parts that share the desktop name cannot be rejected when their SM count is the desktop one (noted in the spec)
    assert resolve_device("NVIDIA GeForce RTX 2070", sm_count=36).spec.key == "rtx-2070"


def test_older_families_name_their_look_alikes():
    assert resolve_device("GeForce RTX 2080 with Max-Q Design").candidates == ("rtx-2080",)
    assert resolve_device("NVIDIA GeForce RTX 3050 Laptop GPU").candidates == ("rtx-3050",)
    assert resolve_device("GeForce GTX 1060 3GB").candidates == ("gtx-1060-6gb",)
    # the Maxwell GTX TITAN X is no member of the Pascal TITAN X family
    assert resolve_device("GeForce GTX TITAN X").candidates == ()


_OLDER_CORPUS = [
    # (file under ncu-rep, key, whether the board runs the reference boost clock)
    ("yzwang2000__cudaCode__profile.ncu-rep", "rtx-2080-ti", False),
    ("evozone96__matrixMul__profile.nsight-cuprof-report", "rtx-2070", True),
    ("amitadate__GPU_Power_Model__PS1_100_profile.ncu-rep", "rtx-2060-super", True),
    ("cornflexxx__HomCmprsr__report.ncu-rep", "rtx-2060-super", False),
    ("josiahls__cuda_learning_mojo__profile.ncu-rep", "gtx-1660-ti", False),
    ("kprattis__parallel_programming_ex3__profile.ncu-rep", "gtx-1650-gddr6", False),
]


@pytest.mark.corpus
@pytest.mark.parametrize("fname,key,reference_clock", _OLDER_CORPUS, ids=[k for _, k, _ in _OLDER_CORPUS])
def test_older_specs_agree_with_their_driver_records(fname, key, reference_clock):
    """The corpus reports, read with NVIDIA's ncu_report (independent of profaudit's parser)."""
    ncu_report = pytest.importorskip("ncu_report")
    from conftest import corpus_dir

    f = corpus_dir() / "ncu-rep" / fname
    if not f.exists():
        pytest.skip("corpus file absent")
    a = ncu_report.load_report(str(f)).range_by_idx(0).action_by_idx(0)
    attr = lambda n: a.metric_by_name(f"device__attribute_{n}").value()  # noqa: E731
    name = a.metric_by_name("device__attribute_display_name").as_string()
    m = resolve_device(name, sm_count=attr("multiprocessor_count"))
    if key.startswith("gtx-1650"):
        assert m.spec is None and key in m.candidates  # ambiguous by name: the memory clock (GDDR6: 6001 MHz) says which
    else:
        assert m.spec is not None and m.spec.key == key, m.reason
    spec = get_spec(key)
    assert spec.sm_count == attr("multiprocessor_count")
    if spec.l2_cache_bytes is not None:
        assert spec.l2_cache_bytes == attr("l2_cache_size")
    dram = attr("memory_clock_rate") * 1e3 * 2 * attr("global_memory_bus_width") / 8
    assert spec.bandwidth_bytes_per_s("dram") == pytest.approx(dram, rel=2e-3)
    if reference_clock:
        assert spec.boost_clock_hz == attr("clock_rate") * 1e3


def test_a_device_name_too_long_for_any_device_is_refused_at_once():
    """Fuzz run-14 timeout: a KernelBench 'hardware' of 65,520 characters repeating a real name made
    the name patterns take quadratic time (compare ran > 60 s). Such a text matches nothing, with a
    reason that says why and quotes only its start."""
    import time

    from profaudit.specs import MAX_DEVICE_NAME_CHARS, resolve_device

    long_name = "NVIDIA A100-SXM4-80GB" * 3120
    t0 = time.process_time()
    m = resolve_device(long_name)
    assert time.process_time() - t0 < 1.0  # was tens of seconds
    assert m.spec is None and "not a device name" in m.reason and "65,520 characters" in m.reason
    assert len(m.name) < 100
    # a name at the limit is still matched as usual
    assert resolve_device("NVIDIA A100-SXM4-80GB" + " " * (MAX_DEVICE_NAME_CHARS - 21)).spec is not None
