"""`profaudit.compare` on real pairs from ../shared/corpus (skipped when it is absent).

Totals are cross-checked against readers independent of the parsers and of compare: hand SQL on
the nsys SQLite, `ncu_report` on the .ncu-rep, the csv module on ncu and nvbench CSV exports.
"""

from __future__ import annotations

import csv
import json
import sqlite3

import polars as pl
import pytest

from profaudit.compare import compare
from conftest import CORPUS, corpus_dir

NCU_REP = "ncu-rep/Lashi0812__CudaProgramming__readWriteOffset_ca.ncu-rep"
NCU_CSV = "ncu-csv/Lashi0812__CudaProgramming__ncu_readWriteOffset_ca.csv"
NSYS_TRUE = "nsys-sqlite/lockfuehrer__beast_ressoruces__report1.sqlite"
NSYS_MISMATCHED = "nsys-sqlite/lockfuehrer__beast_ressoruces__report1__overwritten_later.sqlite"
NVB_3060 = "nvbench/R100001__Programming-Massively-Parallel-Processors__array_add__BenchResults3060l.csv"
NVB_3080 = "nvbench/R100001__Programming-Massively-Parallel-Processors__array_add__BenchResults3080.csv"

pytestmark = pytest.mark.corpus


def corpus(rel: str):
    corpus_dir()
    p = CORPUS / rel
    if not p.exists():
        pytest.skip(f"{rel} not in the corpus")
    return p


def _sql_kernels(path):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        total, n, lo, hi = con.execute("select sum(end - start), count(*), min(start), max(end) from CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
        names = dict(con.execute("select s.value, count(*) from CUPTI_ACTIVITY_KIND_KERNEL k join StringIds s on s.id = k.demangledName group by 1").fetchall())
    finally:
        con.close()
    return float(total), n, float(hi - lo), names


def test_nsys_mismatched_pair():
    a, b = corpus(NSYS_TRUE), corpus(NSYS_MISMATCHED)
    cmp = compare(a, b)
    ta, na, span_a, names_a = _sql_kernels(a)
    tb, nb, span_b, names_b = _sql_kernels(b)
    t = cmp.totals
    assert t["baseline"]["gpu_time_ns"] == pytest.approx(ta) and t["candidate"]["gpu_time_ns"] == pytest.approx(tb)
    assert t["baseline"]["kernels"] == na == 2254 and t["candidate"]["kernels"] == nb == 22
    assert t["baseline"]["wall_time_ns"] == pytest.approx(span_a) and t["candidate"]["wall_time_ns"] == pytest.approx(span_b)
    # the OpenMP offload kernel of the rebuilt program carries another file id: a family match
    m = cmp.matched.row(0, named=True)
    assert cmp.matched.height == 1 and m["method"] == "family" and m["label"] == "__omp_offloading__Z_1..."
    assert m["count_b"] == names_a["__omp_offloading_31_18a80a1__Z_1..."] and m["count_c"] == names_b["__omp_offloading_31_18a8104__Z_1..."]
    assert set(cmp.removed["name"]) == {"__omp_offloading_31_18a80a1__Z_2...", "__omp_offloading_31_18a80a1__Z_3..."}
    assert cmp.added.height == 0
    assert cmp.contributions["diff_ns"].sum() == pytest.approx(tb - ta)
    # nothing in common but one small kernel: the report says the programs differ
    assert any("may not run the same program" in n for n in cmp.notes)
    assert "slower" in cmp.verdict
    # same V100, both nsys: fair as far as the recorded facts go
    passed = {f.rule for f in cmp.findings if f.status.value == "pass"}
    assert {"PA201", "PA106"} <= passed and cmp.comparable == "with-warnings"


def test_nsys_pair_is_stable_and_antisymmetric():
    a, b = corpus(NSYS_TRUE), corpus(NSYS_MISMATCHED)
    one, two = compare(a, b), compare(a, b)
    assert json.dumps(one.to_dict(), sort_keys=True) == json.dumps(two.to_dict(), sort_keys=True)
    rev = compare(b, a)
    assert rev.totals["gpu_time_diff_ns"] == pytest.approx(-one.totals["gpu_time_diff_ns"])
    assert set(rev.added["name"]) == set(one.removed["name"])


def test_nsys_against_itself_is_all_exact_and_zero():
    a = corpus(NSYS_TRUE)
    cmp = compare(a, a)
    assert set(cmp.matched["method"]) == {"exact"} and cmp.added.height == 0 and cmp.removed.height == 0
    assert cmp.totals["gpu_time_diff_ns"] == 0
    assert (cmp.pairs["baseline_kernel_id"] == cmp.pairs["candidate_kernel_id"]).all()
    big = cmp.matched.filter(pl.col("count_b") == 2250).row(0, named=True)
    # the launches drift together (lag-1 autocorrelation ~0.99): the interval is widened so much
    # that even identical data is only "not different", never "faster" or "slower"
    assert big["significance"] in ("same", "inconclusive") and big["p_value"] == pytest.approx(1.0)
    assert big["speedup_ci_low"] < 1.0 < big["speedup_ci_high"]
    assert cmp.matched.filter(pl.col("count_b") == 2)["significance"].to_list() == ["unknown", "unknown"]


def _ncu_rep_durations(path):
    ncu_report = pytest.importorskip("ncu_report")
    ctx = ncu_report.load_report(str(path))
    out = []
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for i in range(rng.num_actions()):
            a = rng.action_by_idx(i)
            out.append((a.name(), a["gpu__time_duration.sum"].as_double()))
    return out


def _ncu_csv_durations(path):
    rows = []
    with open(path, newline="") as f:
        lines = [l for l in f if not l.startswith("==")]
    for r in csv.DictReader(lines):
        if r["Metric Name"] == "gpu__time_duration.sum":
            assert r["Metric Unit"] == "nsecond"
            rows.append((r["Kernel Name"], float(r["Metric Value"].replace(",", ""))))
    return rows


def test_ncu_report_against_ncu_csv_of_another_run():
    a, b = corpus(NCU_REP), corpus(NCU_CSV)
    rep, csv_rows = _ncu_rep_durations(a), _ncu_csv_durations(b)
    cmp = compare(a, b)
    t = cmp.totals
    assert t["baseline"]["gpu_time_ns"] == pytest.approx(sum(d for _, d in rep))
    assert t["candidate"]["gpu_time_ns"] == pytest.approx(sum(d for _, d in csv_rows))
    # the report has readOffset once and readOnlyCache; the CSV has readOffset three times
    m = cmp.matched.row(0, named=True)
    assert cmp.matched.height == 1 and m["method"] == "exact" and m["label"].startswith("readOffset(")
    assert (m["count_b"], m["count_c"], m["aligned"]) == (1, 3, 1)
    ro = [d for n, d in rep if n == "readOffset"][0]
    assert m["total_b_ns"] == pytest.approx(ro)
    # two extra launches explain the difference, not a slower kernel
    assert m["diff_from_count_ns"] == pytest.approx(2 * sum(d for _, d in csv_rows) / 3)
    assert cmp.removed["name"].to_list() == ["readOnlyCache(float *, float *, float *, unsigned long, int)"]
    assert m["significance"] == "unknown"  # one launch on the baseline side: no repetition
    # both ncu; the CSV export names no device, so device parity is a fact that could not be checked
    assert "PA106" in {f.rule for f in cmp.findings if f.status.value == "pass"}
    assert "PA201" in {f.rule for f in cmp.findings if f.status.value == "unknown"}
    assert cmp.comparable == "with-warnings"
    # ncu counters on both sides: the DRAM bytes of readOffset are compared
    mm = cmp.metrics_moved
    assert mm.filter(pl.col("metric").str.contains("dram")).height == 0  # equal within 1 %: not "moved"


def _nvbench_means(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return rows


def test_nvbench_runs_on_two_gpus():
    a, b = corpus(NVB_3060), corpus(NVB_3080)
    cmp = compare(a, b)
    assert cmp.kind == "samples"
    ra, rb = _nvbench_means(a), _nvbench_means(b)
    assert cmp.matched.height == len(ra) == len(rb) == 26
    assert set(cmp.matched["method"]) == {"exact"} and cmp.added.height == 0 and cmp.removed.height == 0
    # medians are the reported cold GPU means (nvbench CSV "GPU Time" in seconds)
    col = next(c for c in ra[0] if c.strip().lower().startswith("gpu time"))
    total_a = sum(float(r[col]) for r in ra) * 1e9
    total_b = sum(float(r[col]) for r in rb) * 1e9
    assert cmp.totals["baseline"]["time_ns"] == pytest.approx(total_a, rel=1e-6)
    assert cmp.totals["candidate"]["time_ns"] == pytest.approx(total_b, rel=1e-6)
    assert cmp.contributions["diff_ns"].sum() == pytest.approx(total_b - total_a, rel=1e-9)
    assert set(cmp.matched["significance_basis"]) == {"reported mean, sd and n (delta method; independent samples assumed)"}
    # an RTX 3060 Laptop against an RTX 3080: a hardware comparison, not an implementation one
    pa201 = [f for f in cmp.findings if f.rule == "PA201"][0]
    assert pa201.status.value == "fail" and "3060" in pa201.message and "3080" in pa201.message
    assert cmp.comparable == "no" and cmp.verdict.startswith("not comparable")
    hw = compare(a, b, intended=("device",))
    assert hw.comparable == "with-warnings" and hw.verdict.startswith("candidate faster")
    assert hw.totals["case_significance"] == {"faster": 26}


# --- Kineto / Chrome traces ---------------------------------------------------------------------

KINETO_V100 = "chrome-trace/facebookresearch__HolisticTraceAnalysis__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
KINETO_RESNET = "chrome-trace/pytorch__kineto__resnet50_num_workers_0__worker0.pt.trace.json.gz"
KINETO_H100 = "chrome-trace/pytorch__kineto__after_fix_trace.json"
KINETO_MI300 = "chrome-trace/AMD-AGI__TraceLens__torch_compile_triton__trace.json.gz"
NSYS_TRT = "nsys-sqlite/LeiWang1999__memfusion_artifact__report1.sqlite"


_LOADED: dict = {}


def kineto(rel: str):
    """The trace loaded once per test session (the 2021 ResNet-50 trace takes seconds)."""
    import profaudit
    from profaudit.parsers import REGISTRY

    p = corpus(rel)
    if "chrome-trace" not in [x.name for x in REGISTRY]:
        pytest.skip("the chrome-trace parser is not registered")
    if rel not in _LOADED:
        _LOADED[rel] = profaudit.load(p)
    return _LOADED[rel]


def _json_kernels(path):
    """Independent reader: the trace's complete kernel events, durations in ns."""
    import gzip

    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        d = json.load(f)
    ev = d["traceEvents"] if isinstance(d, dict) else d
    # the 2021 schema spells the category "Kernel"
    ks = [e for e in ev if str(e.get("cat", "")).lower() == "kernel" and e.get("ph") == "X"]
    return sum(float(e["dur"]) for e in ks) * 1e3, len(ks)


def test_kineto_traces_of_different_runs():
    a, b = kineto(KINETO_V100), kineto(KINETO_RESNET)
    cmp = compare(a, b)
    (ta, na), (tb, nb) = _json_kernels(CORPUS / KINETO_V100), _json_kernels(CORPUS / KINETO_RESNET)
    t = cmp.totals
    assert t["baseline"]["gpu_time_ns"] == pytest.approx(ta, rel=1e-9) and t["baseline"]["kernels"] == na
    assert t["candidate"]["gpu_time_ns"] == pytest.approx(tb, rel=1e-9) and t["candidate"]["kernels"] == nb
    assert cmp.contributions["diff_ns"].sum() == pytest.approx(tb - ta, rel=1e-9)
    # cuDNN 8 renamed its kernels (cudnn_train_ / cudnn_infer_ prefixes): same kernels, another version
    groups = {r["label"]: r for r in cmp.matched.iter_rows(named=True)}
    g = groups["conv:fprop:scudnn_stridedb_xregs_large_nn"]
    assert g["method"] == "library-variant"
    assert g["names_b"] == ["cudnn_train_volta_scudnn_128x64_stridedB_splitK_xregs_large_nn_v1"]
    assert g["names_c"] == ["volta_scudnn_128x64_stridedB_splitK_xregs_large_nn_v1"]
    # kernels launched by the same torch op but renamed beyond recognition pair through the op
    assert any(m == "op" for m in cmp.matched["method"].to_list())
    # both Kineto; the older trace names no device, so device parity could not be checked
    status = {f.rule: f.status.value for f in cmp.findings}
    assert status["PA106"] == "pass" and status["PA201"] == "unknown"
    assert cmp.comparable == "with-warnings"
    again = compare(a, b)
    assert json.dumps(again.to_dict(), sort_keys=True) == json.dumps(cmp.to_dict(), sort_keys=True)


def test_kineto_h100_against_mi300():
    a, b = kineto(KINETO_H100), kineto(KINETO_MI300)
    cmp = compare(a, b)
    assert cmp.comparable == "no" and "different devices" in cmp.verdict and "no winner" in cmp.verdict
    assert cmp.removed["name"].to_list() == ["Kernel"]
    assert "attn_fwd" in cmp.added["name"].to_list()
    # comparing the GPUs is allowed when declared, but these two traces share no kernel at all
    hw = compare(a, b, intended=("device",))
    assert hw.comparable in ("yes", "with-warnings") and "nothing to compare" in hw.verdict


def test_nsys_export_against_kineto_trace():
    a, b = corpus(NSYS_TRT), kineto(KINETO_RESNET)
    cmp = compare(a, b)
    # both are CUPTI activity traces: the same family of time source
    assert {f.rule: f.status.value for f in cmp.findings}["PA106"] == "pass"
    # TensorRT convolutions against cuDNN ones: only the operation classes line up
    assert set(cmp.matched["method"]) == {"op-class"} and "conv:fprop" in cmp.matched["label"].to_list()
    assert any("may not run the same program" in n for n in cmp.notes)
    assert cmp.contributions["diff_ns"].sum() == pytest.approx(cmp.totals["gpu_time_diff_ns"])
