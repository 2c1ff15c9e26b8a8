"""Attaching `jax.stages.Compiled.cost_analysis()` to XLA profiles, with real jitted functions on the CPU."""

from __future__ import annotations

import json

import polars as pl
import pytest

from tests.conftest import assert_one_line_error

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import profaudit  # noqa: E402
import profaudit.xla as X  # noqa: E402
from profaudit.errors import InputError, UsageError  # noqa: E402

N_STEPS = 3


def _f(x, w):
    return jnp.tanh(x @ w).sum()


def _g(x):
    return (x * 2.0 + 1.0).sum()


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """A profile running two modules (jit__f three times, jit__g once) and both compiled objects."""
    f, g = jax.jit(_f), jax.jit(_g)
    x = jnp.ones((128, 128))
    w = jnp.ones((128, 128))
    f(x, w).block_until_ready()
    g(x).block_until_ready()
    d = tmp_path_factory.mktemp("cost") / "log"
    jax.profiler.start_trace(str(d))
    try:
        for _ in range(N_STEPS):
            f(x, w).block_until_ready()
        g(x).block_until_ready()
    finally:
        jax.profiler.stop_trace()
    return d, f.lower(x, w).compile(), g.lower(x).compile()


def test_cost_normalised_from_compiled(captured):
    _, cf, _ = captured
    c = X.normalise_cost(cf)
    # 128x128 @ 128x128: 2*128^3 multiply-adds counted as flops by XLA, plus tanh and the sum
    assert c["flops"] >= 2 * 128**3
    assert c["bytes accessed"] >= 2 * 128 * 128 * 4
    assert X.module_name_of(cf) == "jit__f"
    assert X.normalise_cost([{"flops": 1.0}, {"flops": 2.0, "bytes accessed": 3.0}]) == {"flops": 3.0, "bytes accessed": 3.0}


def test_per_module_distribution(captured):
    d, cf, cg = captured
    ps = profaudit.load(d)
    before = ps.kernels
    assert set(before["module"]) >= {"jit__f", "jit__g"}
    with pytest.raises(UsageError, match="HLO modules"):
        X.attach_cost_analysis(ps, X.normalise_cost(cf))  # two modules, no module named
    ps2 = X.attach_cost_analysis(ps, cf)  # module taken from the Compiled
    k = ps2.kernels
    fk = k.filter(pl.col("module") == "jit__f")
    cost = X.normalise_cost(cf)
    # total = per-execution cost x executions (distinct run_ids)
    assert fk["flops_total"].sum() == pytest.approx(cost["flops"] * N_STEPS, rel=1e-12)
    assert fk["dram_bytes"].sum() == pytest.approx(cost["bytes accessed"] * N_STEPS, rel=1e-12)
    # each execution (run_id) carries the module's whole cost, spread over its own rows by device time
    m = next(iter(ps)).tables["metrics"].filter(pl.col("metric") == "run_id")
    runs = m.select("kernel_id", pl.coalesce(pl.col("value_str"), pl.col("value").cast(pl.Utf8)).alias("run")).unique("kernel_id")
    per = fk.join(runs, on="kernel_id").with_columns((pl.col("duration_ns") / pl.col("duration_ns").sum().over("run")).alias("share"))
    assert per.group_by("run").agg(pl.col("flops_total").sum())["flops_total"].to_list() == pytest.approx([cost["flops"]] * N_STEPS, rel=1e-12)
    assert (per["flops_total"] / cost["flops"] - per["share"]).abs().max() < 1e-12
    assert set(fk["flops_method"]) == {"cost-analysis:module-execution"}
    assert k.filter(pl.col("module") == "jit__g")["flops_total"].null_count() == k.filter(pl.col("module") == "jit__g").height
    rec = next(iter(ps2)).metadata["xla_cost_analysis"][0]
    assert rec["executions"] == N_STEPS and rec["executions_from"] == "distinct run_id"
    # input untouched
    assert ps.kernels["flops_total"].null_count() == ps.kernels.height


def test_per_op_and_overwrite(captured):
    d, _, cg = captured
    ps = profaudit.load(d)
    op = ps.kernels.filter(pl.col("module") == "jit__g")["op_name"][0]
    c = X.normalise_cost(cg)
    ps2 = X.attach_cost_analysis(ps, cg, op=op)
    rows = ps2.kernels.filter((pl.col("module") == "jit__g") & (pl.col("op_name") == op))
    assert (rows["flops_total"] == c["flops"]).all() and set(rows["flops_method"]) == {"cost-analysis:op"}
    ps3 = X.attach_cost_analysis(ps2, {"flops": 7.0, "bytes accessed": 8.0}, module="jit__g", op=op)
    assert (ps3.kernels.filter(pl.col("op_name") == op)["flops_total"] == c["flops"]).all()  # kept
    ps4 = X.attach_cost_analysis(ps2, {"flops": 7.0, "bytes accessed": 8.0}, module="jit__g", op=op, overwrite=True)
    assert (ps4.kernels.filter((pl.col("module") == "jit__g") & (pl.col("op_name") == op))["flops_total"] == 7.0).all()


def test_cost_file_round_trip_and_cli(captured, tmp_path, cli):
    d, cf, _ = captured
    f = X.save_cost_analysis(cf, tmp_path / "cost.json")
    doc = json.loads(f.read_text())
    assert doc["format"] == "profaudit-xla-cost" and doc["entries"][0]["module"] == "jit__f"
    entries = X.load_cost_file(f)
    assert entries[0]["cost"]["flops"] == X.normalise_cost(cf)["flops"]
    out = tmp_path / "ds"
    res = cli("xla-cost", str(d), "--cost", str(f), "-o", str(out))
    assert res.code == 0, res
    ps = profaudit.load(out)
    fk = ps.kernels.filter(pl.col("module") == "jit__f")
    assert fk["flops_total"].sum() == pytest.approx(X.normalise_cost(cf)["flops"] * N_STEPS)
    # the bare json.dump of cost_analysis() works with --module
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(cf.cost_analysis()))
    res = cli("xla-cost", str(d), "--cost", str(bare), "--module", "jit__f", "-o", str(tmp_path / "ds2"))
    assert res.code == 0, res


def test_timing_profile_without_ops_gets_metadata():
    from profaudit.profile import Profile

    p = Profile("bench", {"source": "timing"}, {})
    q = X.attach_cost_analysis(p, {"flops": 10.0, "bytes accessed": 20.0}, module="jit_f")
    rec = q.metadata["xla_cost_analysis"][0]
    assert rec["flops"] == 10.0 and rec["per"] == "call"


def test_bad_cost_files(tmp_path, cli, captured):
    d, _, _ = captured
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert_one_line_error(cli("xla-cost", str(d), "--cost", str(bad), "-o", str(tmp_path / "o")), "not valid JSON")
    nokeys = tmp_path / "nokeys.json"
    nokeys.write_text(json.dumps({"utilization": 1.0}))
    with pytest.raises(InputError, match="no 'flops'"):
        X.load_cost_file(nokeys)
    assert_one_line_error(cli("xla-cost", str(d), "--cost", str(tmp_path / "missing.json"), "-o", str(tmp_path / "o")), "cannot read")
    assert not (tmp_path / "o").exists()
    with pytest.raises(UsageError):
        X.normalise_cost("flops=3")


def test_committed_sample_profile_and_cost():
    from tests.conftest import SAMPLES

    d = SAMPLES / "jax_cpu"
    if not d.is_dir():
        pytest.skip("sample_reports/jax_cpu not present")
    ps = profaudit.load(d)
    k = ps.kernels
    assert len(ps) == 1 and k.height == 5 and set(k["module"]) == {"jit_mlp"}
    assert ps.ranges.filter(pl.col("kind") == "step").height == 5
    cost = X.load_cost_file(d / "cost_analysis.json")[0]
    ps2 = X.attach_cost_file(ps, d / "cost_analysis.json")
    assert ps2.kernels["flops_total"].sum() == pytest.approx(cost["cost"]["flops"] * 5)
    # five executions as five rows: each row is one execution and carries the module's FLOPs
    assert ps2.kernels["flops_total"].to_list() == pytest.approx([cost["cost"]["flops"]] * 5, rel=1e-12)
    # 2*256*512*512 + 2*256*512*256 multiply-add flops at least
    assert cost["cost"]["flops"] >= 2 * 256 * 512 * (512 + 256)
