"""Device-spec plausibility ranges (profaudit.specs._LIMITS, 9c2caf5) admit real edge parts: a spec
for a USB 2.0 or PCIe Gen3 x1 accelerator, or a microcontroller NPU, must load, while the nonsense
the ranges exist for (1e-320, 1e308) stays refused (review G2, session 16)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import assert_one_line_error

SPEC = Path(__file__).resolve().parents[1] / "device_specs" / "a100-sxm-40gb.yaml"


def _spec(tmp_path: Path, edits: dict[tuple[str, str], float]) -> Path:
    doc = yaml.safe_load(SPEC.read_text())
    for (section, key), value in edits.items():
        doc[section][key]["value"] = value
    p = tmp_path / "edge.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


@pytest.mark.parametrize("edits", [
    {("interconnect_bytes_per_s", "pcie"): 9.85e8},  # PCIe Gen3 x1, one direction (Hailo-8L on a Raspberry Pi)
    {("interconnect_bytes_per_s", "pcie"): 5e8},  # PCIe Gen2 x1 (Coral M.2)
    {("interconnect_bytes_per_s", "pcie"): 6e7},  # USB 2.0 (Coral USB on a USB 2 port)
    {("bandwidth_bytes_per_s", "dram"): 1e8},  # a microcontroller NPU's external RAM
    {("peak_flops_per_s_dense", "fp32"): 1e8},  # a Cortex-M core's FPU
])
def test_an_edge_device_figure_loads(tmp_path, edits):
    from profaudit.specs import read_spec_file

    spec = read_spec_file(_spec(tmp_path, edits))
    (section, key), value = next(iter(edits.items()))
    got = {"interconnect_bytes_per_s": spec.interconnects, "bandwidth_bytes_per_s": spec.bandwidths,
           "peak_flops_per_s_dense": spec.peaks_dense}[section][key].value
    assert got == value


@pytest.mark.parametrize("section, key, value", [
    ("interconnect_bytes_per_s", "pcie", 1e6),
    ("bandwidth_bytes_per_s", "dram", 1e-320),
    ("peak_flops_per_s_dense", "fp32", 1e6),
])
def test_below_the_floor_is_still_one_line(tmp_path, cli, section, key, value):
    res = cli("devices", "--spec", _spec(tmp_path, {(section, key): value}))
    assert_one_line_error(res, "is not a plausible figure for one device")
