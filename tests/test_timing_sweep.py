"""Patterns met in real, public timing files during the robustness sweep (session 10). Each test
writes a small synthetic file with the pattern and checks the numbers against a plain json/csv read."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest

from profaudit.loader import load


def _one(path, **kw):
    ps = load(path, **kw)
    assert len(ps) == 1
    return ps.samples, next(iter(ps)).metadata


# --- Google Benchmark: aggregates-only reports -----------------------------------------------------


def _gb_agg(name, agg, real, unit="ms", reps=5, aggregate_unit="time"):
    return {"name": f"{name}_{agg}", "family_index": 0, "per_family_instance_index": 0, "run_name": name, "run_type": "aggregate",
            "repetitions": reps, "threads": 1, "aggregate_name": agg, "aggregate_unit": aggregate_unit, "iterations": reps,
            "real_time": real, "cpu_time": real, "time_unit": unit}


def test_google_benchmark_aggregate_iterations_are_repetitions_not_calls(tmp_path):
    # --benchmark_report_aggregates_only: the library writes the repetition count into an
    # aggregate's `iterations`; the per-repetition iteration count is not in the file.
    doc = {"context": {"num_cpus": 12, "library_build_type": "release", "library_version": "v1.9.4"},
           "benchmarks": [_gb_agg("BM_x", "mean", 35.01), _gb_agg("BM_x", "median", 35.0), _gb_agg("BM_x", "stddev", 0.035),
                          _gb_agg("BM_x", "cv", 0.001, aggregate_unit="percentage")]}
    p = tmp_path / "agg.json"
    p.write_text(json.dumps(doc))
    s, md = _one(p)
    real = s.filter(pl.col("time_source") == "host")
    runs = {r["aggregate_name"]: r for r in doc["benchmarks"]}
    assert dict(zip(real["statistic"], real["duration_ns"])) == pytest.approx({"mean": runs["mean"]["real_time"] * 1e6, "median": runs["median"]["real_time"] * 1e6, "stdev": runs["stddev"]["real_time"] * 1e6})
    assert real["sample_count"].unique().to_list() == [5]
    assert real["calls_per_sample"].null_count() == real.height
    assert md["not_time_aggregates"] == ["BM_x_cv"]


def test_google_benchmark_old_aggregates_take_count_from_iterations(tmp_path):
    # 2016-era files have no `repetitions` field: the aggregate's `iterations` is its count.
    doc = {"context": {"num_cpus": 4, "mhz_per_cpu": 2000, "library_build_type": "release"},
           "benchmarks": [{"name": "BM_y/8", "iterations": 1000, "real_time": 10 + i, "cpu_time": 10 + i, "time_unit": "ns"} for i in range(3)]
           + [{"name": "BM_y/8_mean", "iterations": 3, "real_time": 11, "cpu_time": 11, "time_unit": "ns"}]}
    p = tmp_path / "old.json"
    p.write_text(json.dumps(doc))
    s, _ = _one(p)
    mean = s.filter((pl.col("statistic") == "mean") & (pl.col("time_source") == "host"))
    assert mean["sample_count"].item() == 3 and mean["calls_per_sample"].item() is None
    raw = s.filter(pl.col("statistic").is_null() & (pl.col("time_source") == "host"))
    assert raw["calls_per_sample"].to_list() == [1000] * 3 and raw["run"].to_list() == [0, 1, 2]


def test_google_benchmark_console_aggregates(tmp_path):
    text = """2025-01-01T00:00:00+00:00
Running ./bench
Run on (8 X 3000 MHz CPU s)
-----------------------------------------------------------------
Benchmark                       Time             CPU   Iterations
-----------------------------------------------------------------
BM_k/64/manual_time_mean     1.60 us         9.00 us            3
BM_k/64/manual_time_median   1.59 us         8.90 us            3
BM_k/64/manual_time_stddev  0.020 us        0.100 us            3
BM_k/64/manual_time_cv       1.25 %          1.11 %             3
"""
    p = tmp_path / "console.txt"
    p.write_text(text)
    s, md = _one(p)
    manual = s.filter(pl.col("time_source") == "manual")
    assert dict(zip(manual["statistic"], manual["duration_ns"])) == pytest.approx({"mean": 1600.0, "median": 1590.0, "stdev": 20.0})
    assert manual["sample_count"].unique().to_list() == [3]
    assert manual["calls_per_sample"].null_count() == manual.height
    assert md["not_time_aggregates"] == ["BM_k/64/manual_time_cv"]


# --- pytest-benchmark: trimmed JSON and the terminal table -----------------------------------------


def test_pytest_benchmark_json_without_machine_info_is_read(tmp_path):
    stats = {"min": 5.412e-06, "max": 0.00158, "mean": 7.2e-06, "stddev": 8.26e-06, "rounds": 118850, "median": 6.485e-06, "iqr": 5.86e-07,
             "q1": 6.171e-06, "q3": 6.757e-06, "iqr_outliers": 18677, "stddev_outliers": 1373, "outliers": "1373;18677",
             "ld15iqr": 5.412e-06, "hd15iqr": 7.637e-06, "ops": 138887.49, "total": 0.8557, "iterations": 1}
    doc = {"benchmarks": [{"group": None, "name": "test_fib_10", "fullname": "t.py::test_fib_10", "params": None, "options": {"timer": "perf_counter"}, "stats": stats}],
           "datetime": "2026-10-07T15:55:43+00:00", "version": "5.3.0"}
    p = tmp_path / "bench.json"
    p.write_text(json.dumps(doc, indent=2))
    s, md = _one(p)
    assert md["tool"] == "pytest-benchmark"
    got = dict(zip(s["statistic"], s["duration_ns"]))
    assert got["mean"] == pytest.approx(stats["mean"] * 1e9) and got["stdev"] == pytest.approx(stats["stddev"] * 1e9)
    assert s["sample_count"].unique().to_list() == [stats["rounds"]]


_PYB_TABLE = """..                                                                       [100%]

---------------------------------------------------------------------------------- benchmark 'sort': 2 tests ----------------------------------------------------------------------------------
Name (time in us)               Min                   Max              Mean             StdDev            Median               IQR            Outliers  OPS (Kops/s)            Rounds  Iterations
---------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------
test_sorted (0001_abc)       3.9520 (1.0)      4,037.1760 (2.54)     5.0020 (1.0)      17.8714 (2.16)     4.6690 (1.0)      0.2210 (1.0)      138;8154      199.9189 (1.0)      102523           1
test_sorted (NOW)            5.4120 (1.37)     1,586.3540 (1.0)      7.2001 (1.44)      8.2615 (1.0)      6.4850 (1.39)     0.5860 (2.65)   1373;18677      138.8875 (0.69)     118850           1
---------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------

---------------------------------------------- benchmark 'io': 1 tests ----------------------------------------------
Name (time in ms)          Min       Max      Mean    Median     Rounds  Iterations
---------------------------------------------------------------------------------------------------------------------
test_read[big file]     12.5000   14.0000   13.0000   12.9000          20          10
---------------------------------------------------------------------------------------------------------------------

Legend:
  Outliers: 1 Standard Deviation from Mean; 1.5 IQR (InterQuartile Range) from 1st Quartile and 3rd Quartile.
"""


def _plain_table(text):
    """Independent read: header words and whitespace-split cells, ratios and separators removed."""
    out, unit, head = [], None, None
    for line in text.splitlines():
        if line.startswith("Name (time in "):
            unit = line.split("(time in ")[1].split(")")[0]
            head = [w for w in line.split(")", 1)[1].split() if not w.startswith("(")]
            continue
        if head and line[:1].isalpha() and not line.startswith("Legend"):
            name, rest = re.split(r"\s{2,}", line, maxsplit=1)
            cells = [c for c in re.sub(r"\([^)]*\)", " ", rest).split()]
            out.append((name, unit, dict(zip(head, cells))))
    return out


def test_pytest_benchmark_terminal_table(tmp_path):
    p = tmp_path / "bench.txt"
    p.write_text(_PYB_TABLE)
    s, md = _one(p)
    factor = {"us": 1e3, "ms": 1e6}
    for name, unit, cells in _plain_table(_PYB_TABLE):
        test, _, label = name.partition(" (")
        sel = s.filter(pl.col("benchmark") == test)
        sel = sel.filter(pl.col("variant") == label.rstrip(")")) if label else sel.filter(pl.col("variant").is_null())
        got = dict(zip(sel["statistic"], sel["duration_ns"]))
        want = {st: float(cells[col].replace(",", "")) * factor[unit] for col, st in (("Min", "min"), ("Max", "max"), ("Mean", "mean"), ("StdDev", "stdev"), ("Median", "median"), ("IQR", "iqr")) if col in cells}
        assert got == pytest.approx(want)
        assert sel["sample_count"].unique().to_list() == [int(cells["Rounds"])]
        assert sel["calls_per_sample"].unique().to_list() == [int(cells["Iterations"])]
    assert md["layout"] == "console" and md["groups"] == ["sort", "io"]


# --- Proton: instrumentation-mode capture (cycles, no time) ----------------------------------------


def test_proton_cycles_only_capture_says_so(tmp_path, cli):
    from conftest import assert_one_line_error

    tree = [{"children": [{"children": [
        {"children": [], "frame": {"name": "cheap", "type": "function"}, "metrics": {"cycles": 152040, "normalized_cycles": 593.9, "device_id": "0", "device_type": "0"}},
        {"children": [], "frame": {"name": "expensive", "type": "function"}, "metrics": {"cycles": 8463028, "normalized_cycles": 33058.7, "device_id": "0", "device_type": "0"}}],
        "frame": {"name": "k", "type": "function"}, "metrics": {}}], "frame": {"name": "ROOT", "type": "function"}, "metrics": {"cycles": 0}},
        {"HIP": {"0": {"arch": "gfx950", "num_sms": 256}}}]
    p = tmp_path / "inst.hatchet"
    p.write_text(json.dumps(tree))
    assert_one_line_error(cli("kernels", "-t", "samples", p), "cycle counts only")


# --- KernelBench: the configuration in the file name is the execution mode -------------------------


def _kb_file(path, mean, std):
    path.write_text(json.dumps({"level1": {"1_Square_matrix_multiplication_.py": {"mean": mean, "std": std, "min": mean * 0.99, "max": mean * 1.1, "num_trials": 100, "hardware": "NVIDIA H100 80GB HBM3", "device": "cuda:0"}}}))
    return path


@pytest.mark.parametrize("config, mode, graphs", [
    ("torch", "eager", False),
    ("torch_compile_inductor_default", "torch.compile inductor default", False),
    ("torch_compile_inductor_max-autotune", "torch.compile inductor max-autotune", True),
    ("torch_compile_inductor_max-autotune-no-cudagraphs", "torch.compile inductor max-autotune-no-cudagraphs", False),
    ("torch_compile_cudagraphs", "torch.compile cudagraphs", True),
])
def test_kernelbench_execution_mode_from_config(tmp_path, config, mode, graphs):
    p = _kb_file(tmp_path / f"baseline_time_{config}.json", 2.66, 0.02)
    _, md = _one(p)
    assert (md["compile_mode"], md["cuda_graphs"]) == (mode, graphs)


def test_kernelbench_eager_vs_compile_claim_is_flagged(tmp_path):
    import profaudit

    _kb_file(tmp_path / "baseline_time_torch.json", 2.66, 0.0199)
    _kb_file(tmp_path / "baseline_time_torch_compile_inductor_reduce-overhead.json", 2.40, 0.0200)
    claim = tmp_path / "claim.yaml"
    claim.write_text("claim: compiled is 1.1x faster\nspeedup: 1.1\nstatistic: mean\n"
                     "baseline: {timings: baseline_time_torch.json}\n"
                     "candidate: {timings: baseline_time_torch_compile_inductor_reduce-overhead.json}\n")
    rep = profaudit.audit(str(claim))
    pa303 = [f for f in rep.findings if f.rule == "PA303"]
    assert pa303 and all(f.severity.name == "FAIL" for f in pa303)
    assert {k for f in pa303 for k in f.evidence} >= {"compile_mode_baseline", "cuda_graphs_candidate"}


# --- torch.utils.benchmark: pickles, printed Measurements, Compare tables -------------------------


def _measurements():
    torch = pytest.importorskip("torch")
    from torch.utils import benchmark as tb

    x = torch.ones(32)
    return [tb.Timer("x * 2", globals={"x": x}, label="scale", sub_label=str(n), description=d, num_threads=1).blocked_autorange(min_run_time=0.01)
            for n in (64, 128) for d in ("eager", "method")]


def test_torch_benchmark_pickle_read_without_running_code(tmp_path, cli):
    import pickle

    from conftest import assert_one_line_error
    from profaudit.samples import select

    ms = _measurements()
    p = tmp_path / "ms.pkl"
    p.write_bytes(pickle.dumps(ms))
    s, _ = _one(p)
    for m in ms:
        rows = select(s, benchmark="scale", variant=m.task_spec.description, params={"sub_label": int(m.task_spec.sub_label)}).sort("iteration")
        assert rows["duration_ns"].to_list() == pytest.approx([t * 1e9 for t in m.times], rel=1e-12)
        assert rows["calls_per_sample"].unique().to_list() == [m.number_per_run]
    evil = tmp_path / "evil.pkl"
    # a pickle naming the Measurement module but calling os.system: refused, never run
    evil.write_bytes(b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00\x8c\x22torch.utils.benchmark.utils.common\x94\x8c\x02os\x8c\x06system\x93\x8c\x04true\x85R.")
    assert_one_line_error(cli("kernels", "-t", "samples", evil), "refusing to build os.system")


def test_torch_benchmark_printed_repr_and_compare(tmp_path):
    from torch.utils import benchmark as tb

    from profaudit.samples import select

    ms = _measurements()
    p = tmp_path / "log.txt"
    p.write_text("some log line\n" + "\n".join(repr(m) for m in ms) + "\n")
    s, md = _one(p)
    assert md["layout"] == "printed"
    for m in ms:
        rows = select(s, benchmark="scale", variant=m.task_spec.description, params={"sub_label": int(m.task_spec.sub_label), "num_threads": 1})
        got = dict(zip(rows["statistic"], rows["duration_ns"]))
        # printed at 4 significant figures (torch's trim): compare at that precision
        if len(m.times) > 1:
            assert got["median"] == pytest.approx(m.median * 1e9, rel=5e-3)
            # torch prints the IQR line only from 4 measurements on
            if len(m.times) >= 4:
                assert got["q1"] <= got["median"] <= got["q3"]
            else:
                assert "q1" not in got and "q3" not in got
        else:
            assert got["mean"] == pytest.approx(m.mean * 1e9, rel=5e-3)
        assert rows["sample_count"].unique().to_list() == [len(m.times)]
        assert rows["calls_per_sample"].unique().to_list() == [m.number_per_run]
    cmp = tmp_path / "compare.txt"
    cmp.write_text(str(tb.Compare(ms)))
    s2, _ = _one(cmp)
    text = cmp.read_text()
    factor = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[re.search(r"Times are in \w+ \((\w+)\)", text).group(1)]
    plain = {}
    for line in text.splitlines():
        parts = [c.strip() for c in line.split("|")]
        if len(parts) == 3 and parts[0].isdigit():
            plain[int(parts[0])] = (float(parts[1]), float(parts[2]))
    for sub, (eager, method) in plain.items():
        for variant, v in (("eager", eager), ("method", method)):
            row = select(s2, benchmark="scale", variant=variant, params={"sub_label": sub, "num_threads": 1})
            assert row["statistic"].item() == "median" and row["duration_ns"].item() == pytest.approx(v * factor)
