"""FLOPs and minimum bytes recomputed from op + shape + dtype (profaudit.workload), and how the audit
uses them (PA302 accounting, the physics rules' floor)."""

from __future__ import annotations

import pytest

from audit_fixtures import claim, side
from profaudit.audit import audit
from profaudit.workload import from_shape


@pytest.mark.parametrize(
    "shape",
    [{"M": 4096, "N": 2048, "K": 1024}, {"m": 4096, "n": 2048, "k": 1024}, [[4096, 1024], [1024, 2048]], [4096, 2048, 1024], "4096x2048x1024", '{"K":1024,"M":4096,"N":2048}'],
)
def test_matmul_spellings(shape):
    wl, why = from_shape("matmul", shape, "bf16")
    assert why == "" and wl.flops == 2 * 4096 * 2048 * 1024
    assert wl.bytes == (4096 * 1024 + 1024 * 2048 + 4096 * 2048) * 2


def test_batched_matmul_and_operand_checks():
    wl, _ = from_shape("bmm", [[8, 128, 64], [8, 64, 256]], "fp32")
    assert wl.flops == 2 * 8 * 128 * 256 * 64 and wl.bytes == 8 * (128 * 64 + 64 * 256 + 128 * 256) * 4
    wl, _ = from_shape("gemm", {"B": 8, "M": 128, "N": 256, "K": 64}, "fp32")
    assert wl.flops == 2 * 8 * 128 * 256 * 64
    assert from_shape("matmul", [[128, 64], [32, 256]], "fp32") == (None, "matmul operands [128, 64] and [32, 256] do not share K (64 vs 32)")
    assert from_shape("matmul", {"M": 1, "N": 2}, "fp32")[0] is None
    assert "no dtype" in from_shape("matmul", [1, 2, 3], None)[1]
    assert "no element size" in from_shape("matmul", [1, 2, 3], "mixed")[1]
    assert "no FLOP/byte formula" in from_shape("conv3d_winograd", [1, 2, 3], "fp16")[1]


def test_attention_and_causal_half():
    shape = {"B": 2, "H": 16, "S": 4096, "D": 128}
    full, _ = from_shape("attention", shape, "fp16")
    causal, _ = from_shape("causal_attention", shape, "fp16")
    assert full.flops == 4 * 2 * 16 * 4096 * 4096 * 128
    assert causal.flops == full.flops / 2 and causal.bytes == full.bytes == 2 * 16 * 4 * 4096 * 128 * 2
    assert from_shape("flash-attention", [2, 16, 4096, 128], "fp16")[0].flops == full.flops


def test_memory_bound_ops_count_bytes_not_flops():
    wl, _ = from_shape("softmax", [4096, 8192], "fp32")
    assert wl.flops is None and wl.bytes == 2 * 4096 * 8192 * 4
    wl, _ = from_shape("add", [1 << 24], "fp16")
    assert wl.flops == 1 << 24 and wl.bytes == 3 * (1 << 24) * 2
    assert from_shape("softmax", [4096, -1], "fp32")[0] is None


def _matmul_meta(**kw):
    m = {"op": "matmul", "shape": {"M": 8192, "N": 8192, "K": 8192}, "dtype": "bf16", "batch_size": 1}
    m.update(kw)
    return m


def test_inflated_flop_count_is_flagged_and_the_recomputed_value_is_used():
    true_flops = 2 * 8192**3
    b = side("baseline", 2.0e6, seed=1, meta=_matmul_meta(flops=true_flops))
    c = side("candidate", 1.0e6, seed=2, meta=_matmul_meta(flops=2 * true_flops))  # counts each FMA as 4 FLOPs
    rep = audit(claim(b, c, workload={}))
    pa302 = [f for f in rep.findings if f.rule == "PA302"]
    flagged = [f for f in pa302 if f.side == "candidate"]
    assert len(flagged) == 1 and flagged[0].severity.label == "warn", [f.message for f in pa302]
    assert "2.00x" in flagged[0].message and "F = 2*B*M*N*K" in flagged[0].message
    # the two sides also disagree with each other: that is the existing cross-side check
    assert any("count different flops" in f.message for f in pa302)
    from profaudit.audit.evidence import gather

    ev = gather(claim(b, c, workload={}))
    v, src = ev.workload_value("flops", ev.candidate)
    assert v == true_flops and "F = 2*B*M*N*K" in src


def test_honest_count_passes_and_an_unreadable_shape_is_noted():
    flops = 2 * 8192**3
    b = side("baseline", 2.0e6, seed=1, meta=_matmul_meta(flops=flops))
    c = side("candidate", 1.0e6, seed=2, meta=_matmul_meta(flops=flops))
    f = next(f for f in audit(claim(b, c, workload={})).findings if f.rule == "PA302")
    assert f.status.value == "pass" and "recomputed from shape" in f.message
    odd = _matmul_meta(shape="huge")
    b = side("baseline", 2.0e6, seed=1, meta=odd)
    c = side("candidate", 1.0e6, seed=2, meta=odd)
    f = next(f for f in audit(claim(b, c, workload={})).findings if f.rule == "PA302")
    assert f.status.value == "pass" and "cannot be recomputed" in f.message
