"""Tool-specific timing formats: nvbench (JSON + jsonbin, CSV, Markdown), pytest-benchmark, Google
Benchmark, KernelBench, Triton Proton, torch.utils.benchmark. Every number is checked against a
plain json/csv read of the same file (or, for torch, against the Measurement object itself)."""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import polars as pl
import pytest

from conftest import assert_one_line_error, corpus_dir
from profaudit.loader import load
from profaudit.samples import select


def _one(path, **kw):
    ps = load(path, **kw)
    assert len(ps) == 1
    return ps.samples, next(iter(ps)).metadata


# --- nvbench JSON ----------------------------------------------------------------------------------
# Files are built here with the structure nvbench's json_printer writes (every value a string in
# `data`, hidden summaries included, `--jsonbin` sidecars as little-endian float32 next to the JSON).


def _summ(tag, name, hint, value, typ="float64", hide=False, **extra):
    s = {"tag": tag, "name": name, "description": name, "hint": hint}
    if hide:
        s["hide"] = "Hidden by default."
    data = [{"name": "value", "type": typ, "value": str(value)}] if value is not None else []
    for k, (t, v) in extra.items():
        data.append({"name": k, "type": t, "value": str(v)})
    s["data"] = data
    return s


def _nvbench_doc(tmp_path, json_name, rng, *, jsonbin=True, freqs=True, old=False):
    bin_dir = tmp_path / f"{json_name}-bin"
    freq_dir = tmp_path / f"{json_name}-freqs-bin"
    states, expect = [], {}
    nbin = 0
    for n in (1024, 4096):
        for dtype in ("F32", "F64"):
            times = (1e-5 * (n / 1024) * (1.0 + 0.05 * rng.random(200))).astype(np.float32)
            clocks = (1.98e9 - 1e7 * rng.random(200)).astype(np.float32)
            t64 = times.astype(np.float64)
            mean, std = float(t64.mean()), float(t64.std(ddof=1))
            summ = [_summ("nv/element_count/Elements", "Elements", None, n, "int64")]
            summ.append(_summ("nv/cold/sample_size", "Samples", "sample_size", len(times), "int64"))
            summ.append(_summ("nv/cold/time/cpu/mean", "CPU Time", "duration", mean + 4e-6))
            summ.append(_summ("nv/cold/time/cpu/stdev/relative", "Noise", "percentage", 0.02))
            if not old:
                summ.append(_summ("nv/cold/time/gpu/min", "Min GPU Time", "duration", float(t64.min()), hide=True))
                summ.append(_summ("nv/cold/time/gpu/max", "Max GPU Time", "duration", float(t64.max()), hide=True))
                summ.append(_summ("nv/cold/time/gpu/median", "Median GPU Time", "duration", float(np.median(t64)), hide=True))
                summ.append(_summ("nv/cold/time/gpu/stdev/absolute", "Noise", "duration", std, hide=True))
            summ.append(_summ("nv/cold/time/gpu/mean", "GPU Time", "duration", mean))
            summ.append(_summ("nv/cold/time/gpu/stdev/relative", "Noise", "percentage", std / mean))
            if not old:
                summ.append(_summ("nv/cold/sm_clock_rate/mean", "Clock Rate", "frequency", float(clocks.astype(np.float64).mean()), hide=True))
            summ.append(_summ("nv/batch/sample_size", "Samples", "sample_size", 5000, "int64"))
            summ.append(_summ("nv/batch/time/gpu/mean", "Batch GPU", "duration", mean * 0.8))
            if jsonbin:
                bin_dir.mkdir(exist_ok=True)
                times.astype("<f4").tofile(bin_dir / f"{nbin}.bin")
                summ.append({"tag": "nv/json/bin:nv/cold/sample_times", "name": "Sample Times File", "hint": "file/sample_times", "description": "x", "hide": "Not needed in table.",
                             "data": [{"name": "filename", "type": "string", "value": f"{json_name}-bin/{nbin}.bin"}, {"name": "size", "type": "int64", "value": str(len(times))}]})
                if freqs:
                    freq_dir.mkdir(exist_ok=True)
                    clocks.astype("<f4").tofile(freq_dir / f"{nbin}.bin")
                    summ.append({"tag": "nv/json/freqs-bin:nv/cold/sample_freqs", "name": "Sample Frequencies File", "hint": "file/sample_freqs", "description": "x", "hide": "Not needed in table.",
                                 "data": [{"name": "filename", "type": "string", "value": f"{json_name}-freqs-bin/{nbin}.bin"}, {"name": "size", "type": "int64", "value": str(len(clocks))}]})
                nbin += 1
            st = {"name": f"Device=0 N={n} T={dtype}", "min_samples": 10, "device": 0, "type_config_index": 0,
                  "axis_values": [{"name": "N", "type": "int64", "value": str(n)}, {"name": "T", "type": "string", "value": dtype}],
                  "summaries": summ, "is_skipped": False}
            states.append(st)
            expect[(n, dtype)] = (times, clocks, mean, std)
    states.append({"name": "Device=0 N=16 T=F16", "device": 0, "type_config_index": 0, "axis_values": [{"name": "N", "type": "int64", "value": "16"}, {"name": "T", "type": "string", "value": "F16"}],
                   "summaries": [], "is_skipped": True, "skip_reason": "unsupported type"})
    bench = {"name": "copy", "index": 0, "min_samples": 10, "devices": [0], "axes": [
        {"name": "N", "type": "int64", "flags": "", "values": [{"input_string": "1024", "description": "", "value": 1024}]},
        {"name": "T", "type": "string", "flags": "", "values": [{"input_string": "F32", "description": "", "value": "F32"}]}], "states": states}
    if old:
        bench["min_time"], bench["max_noise"] = 0.5, 0.005
    doc = {"meta": {"argv": ["./bench", "--json", json_name], "version": {"json": {"major": 1, "minor": 0, "patch": 0, "string": "1.0.0"},
                                                                                   "nvbench": {"major": 0, "minor": 1, "patch": 0, "string": "0.1.0", "git_sha": "x"}}},
           "devices": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "sm_version": 900, "sm_default_clock_rate": 1980000000, "number_of_sms": 132,
                        "global_memory_bus_bandwidth": 3352320000000, "l2_cache_size": 52428800}],
           "benchmarks": [bench]}
    p = tmp_path / json_name
    p.write_text(json.dumps(doc, indent=2))
    return p, expect


def test_nvbench_json_with_jsonbin(tmp_path):
    rng = np.random.default_rng(0)
    p, expect = _nvbench_doc(tmp_path, "res.json", rng)
    s, md = _one(p)
    assert md["format"] == "nvbench" and md["device_name"] == "NVIDIA H100 80GB HBM3"
    assert md["sm_default_clock_mhz"] == 1980.0
    assert md["skipped_states"][0]["reason"] == "unsupported type"
    doc = json.loads(p.read_text())
    for st in doc["benchmarks"][0]["states"]:
        if st["is_skipped"]:
            continue
        n = int(st["axis_values"][0]["value"])
        dtype = st["axis_values"][1]["value"]
        summ = {x["tag"]: float(x["data"][0]["value"]) for x in st["summaries"] if x["data"] and x["data"][0]["name"] == "value"}
        rows = select(s, benchmark="copy", params={"N": n, "T": dtype, "Elements": n})
        cold = rows.filter(pl.col("time_source") == "nvbench_cold")
        stats = dict(zip(cold["statistic"].to_list(), cold["duration_ns"].to_list()))
        assert stats["mean"] == pytest.approx(summ["nv/cold/time/gpu/mean"] * 1e9, rel=1e-12)
        assert stats["stdev"] == pytest.approx(summ["nv/cold/time/gpu/stdev/absolute"] * 1e9, rel=1e-12)
        assert stats["median"] == pytest.approx(summ["nv/cold/time/gpu/median"] * 1e9, rel=1e-12)
        assert cold.filter(pl.col("statistic") == "mean")["sample_count"].item() == int(summ["nv/cold/sample_size"])
        batch = rows.filter(pl.col("time_source") == "nvbench_batch")
        assert batch["duration_ns"].item() == pytest.approx(summ["nv/batch/time/gpu/mean"] * 1e9)
        assert batch["sample_count"].item() == 5000 and batch["cache_state"].item() == "hot"
        raw = cold.filter(pl.col("statistic").is_null()).sort("iteration")
        times, clocks, _, _ = expect[(n, dtype)]
        on_disk = np.fromfile(tmp_path / "res.json-bin" / f"{list(expect).index((n, dtype))}.bin", dtype="<f4")
        assert raw["duration_ns"].to_list() == pytest.approx((on_disk.astype(np.float64) * 1e9).tolist(), rel=1e-12)
        assert raw["sm_clock_mhz"].to_list() == pytest.approx((clocks.astype(np.float64) / 1e6).tolist(), rel=1e-12)
        assert raw["cache_state"].unique().to_list() == ["cold"]
        # the raw samples reproduce the tool's own summary
        assert np.mean(raw["duration_ns"].to_numpy()) == pytest.approx(stats["mean"], rel=1e-9)


def test_nvbench_json_missing_and_truncated_bins(tmp_path, cli):
    rng = np.random.default_rng(1)
    p, _ = _nvbench_doc(tmp_path, "a.json", rng, freqs=False)
    for f in (tmp_path / "a.json-bin").iterdir():
        f.unlink()
    s, md = _one(p)
    assert s.filter(pl.col("statistic").is_null()).height == 0
    assert any("missing" in n for n in md["notes"])
    p2, _ = _nvbench_doc(tmp_path, "b.json", rng, freqs=False)
    b0 = tmp_path / "b.json-bin" / "0.bin"
    b0.write_bytes(b0.read_bytes()[:-8])
    assert_one_line_error(cli("kernels", "-t", "samples", p2), "truncated")


def test_nvbench_json_old_schema_derives_stdev(tmp_path):
    rng = np.random.default_rng(2)
    p, expect = _nvbench_doc(tmp_path, "old.json", rng, jsonbin=False, old=True)
    doc = json.loads(p.read_text())
    doc["benchmarks"][0]["axes"] = None
    p.write_text(json.dumps(doc))
    s, md = _one(p)
    for (n, dtype), (_, _, mean, std) in expect.items():
        cold = select(s, params={"N": n, "T": dtype}, time_source="nvbench_cold")
        got = dict(zip(cold["statistic"], cold["duration_ns"]))
        assert got["mean"] == pytest.approx(mean * 1e9) and got["stdev"] == pytest.approx(std * 1e9, rel=1e-9)
    assert any("derived" in n for n in md["notes"])


def _nvbench_csv_plain(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


@pytest.mark.parametrize("name", ["NVIDIA__nvbench__nvbench.example.axes.csv", "NVIDIA__nvbench__nvbench.example.throughput.csv", "R100001__Programming-Massively-Parallel-Processors__array_add__BenchResults3080.csv", "NVIDIA__nvbench__nvbench.example.auto_throughput.csv"])
def test_nvbench_csv_cross_checked(name):
    p = corpus_dir("nvbench") / name
    s, md = _one(p)
    header, rows = _nvbench_csv_plain(p)
    gi, ci, si = header.index("GPU Time (sec)"), header.index("CPU Time (sec)"), header.index("Samples")
    bi = header.index("Batch GPU (sec)") if "Batch GPU (sec)" in header else None
    measured = [r for r in rows if r[header.index("Skipped")] == "No"]
    cold = s.filter((pl.col("time_source") == "nvbench_cold") & (pl.col("statistic") == "mean"))
    assert cold["duration_ns"].to_list() == pytest.approx([float(r[gi]) * 1e9 for r in measured], rel=1e-12)
    assert cold["sample_count"].to_list() == [int(r[si]) for r in measured]
    assert cold["benchmark"].to_list() == [r[0] for r in measured]
    cpu = s.filter((pl.col("time_source") == "nvbench_cold_cpu") & (pl.col("statistic") == "mean"))
    assert cpu["duration_ns"].to_list() == pytest.approx([float(r[ci]) * 1e9 for r in measured], rel=1e-12)
    noise = s.filter((pl.col("time_source") == "nvbench_cold") & (pl.col("statistic") == "stdev"))
    assert noise["duration_ns"].to_list() == pytest.approx([float(r[gi + 1]) * float(r[gi]) * 1e9 for r in measured], rel=1e-12)
    if bi is not None:
        batch = s.filter(pl.col("time_source") == "nvbench_batch")
        assert batch["duration_ns"].to_list() == pytest.approx([float(r[bi]) * 1e9 for r in measured if r[bi]], rel=1e-12)
    assert md["skipped_states"] if len(measured) < len(rows) else "skipped_states" not in md


def test_nvbench_csv_params_are_axes_not_measurements():
    s, _ = _one(corpus_dir("nvbench") / "NVIDIA__nvbench__nvbench.example.axes.csv")
    keys = set()
    for t in s["params"].unique().to_list():
        keys |= set(json.loads(t))
    assert {"Duration", "BlockSize", "NumBlocks", "T", "In", "Out"} <= keys
    assert not keys & {"Elem/s", "GlobalMem BW", "BWPeak", "InSize", "OutSize", "InSize (bytes)", "BlockSize (pow2)", "Samples", "Noise"}
    pow2 = select(s, benchmark="copy_sweep_grid_shape", params={"BlockSize": 64, "NumBlocks": 64})
    assert pow2.height > 0


def test_nvbench_markdown_matches_its_csv_sibling():
    d = corpus_dir("nvbench")
    md_s, md_meta = _one(d / "R100001__Programming-Massively-Parallel-Processors__array_add__BenchResults3080.md")
    csv_s, _ = _one(d / "R100001__Programming-Massively-Parallel-Processors__array_add__BenchResults3080.csv")
    key = ["benchmark", "params", "time_source", "statistic"]
    j = md_s.join(csv_s, on=key, how="full", suffix="_csv", coalesce=True)
    assert j.height == csv_s.height == md_s.height
    means = j.filter(pl.col("statistic") == "mean")
    rel = (means["duration_ns"] - means["duration_ns_csv"]).abs() / means["duration_ns_csv"]
    assert rel.max() < 1e-3  # Markdown shows 4 significant digits
    assert (means["sample_count"] == means["sample_count_csv"]).all()
    assert md_meta["device_name"] == "NVIDIA GeForce RTX 3080"
    assert md_meta["sm_default_clock_mhz"] == 1725.0
    assert any("rounded" in n for n in md_meta["notes"])


# --- pytest-benchmark --------------------------------------------------------------------------------


def test_pytest_benchmark_new_schema_raw_data():
    p = corpus_dir("pytest-benchmark") / "sk413025__git-worktree-example__pytest_benchmark.json"
    s, md = _one(p)
    doc = json.loads(p.read_text())
    for b in doc["benchmarks"]:
        raw = s.filter((pl.col("benchmark") == b["name"]) & pl.col("statistic").is_null()).sort("iteration")
        assert raw["duration_ns"].to_list() == pytest.approx([x * 1e9 for x in b["stats"]["data"]], rel=1e-12)
        assert raw["calls_per_sample"].unique().to_list() == [b["stats"]["iterations"]]
        summ = s.filter((pl.col("benchmark") == b["name"]) & pl.col("statistic").is_not_null())
        got = dict(zip(summ["statistic"], summ["duration_ns"]))
        assert got["mean"] == pytest.approx(b["stats"]["mean"] * 1e9) and got["stdev"] == pytest.approx(b["stats"]["stddev"] * 1e9)
        assert summ["sample_count"].unique().to_list() == [b["stats"]["rounds"]]
        assert np.mean(raw["duration_ns"].to_numpy()) == pytest.approx(got["mean"], rel=1e-9)
    assert md["host"] == doc["machine_info"]["node"] and md["tool_version"] == doc["version"]
    assert s["time_source"].unique().to_list() == ["host"]


def test_pytest_benchmark_old_schema_summaries_only():
    p = corpus_dir("pytest-benchmark") / "ionelmc__pytest-benchmark__0001_b692275e28a23b5d4aae70f453079ba593e60290_20150811_052350.json"
    s, md = _one(p)
    st = json.loads(p.read_text())["benchmarks"][0]["stats"]
    got = dict(zip(s["statistic"], s["duration_ns"]))
    assert got == pytest.approx({"min": st["min"] * 1e9, "max": st["max"] * 1e9, "mean": st["mean"] * 1e9, "stdev": st["stddev"] * 1e9, "median": st["median"] * 1e9, "q1": st["q1"] * 1e9, "q3": st["q3"] * 1e9, "iqr": st["iqr"] * 1e9})
    assert "summaries only" in md["notes"][0]


def test_pytest_benchmark_not_json_fixture_fails_cleanly(cli):
    p = corpus_dir("pytest-benchmark") / "ionelmc__pytest-benchmark__0004_98a371badf8daa50eb83ecfd889eac2143c9cf8d_fooobar_blabla_0004.json"
    assert_one_line_error(cli("kernels", "-t", "samples", p), "not a recognised")


# --- Google Benchmark --------------------------------------------------------------------------------

_UNIT = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def test_google_benchmark_json_real_time_times_unit():
    p = corpus_dir("google-benchmark") / "ZigRazor__CXXGraph__bellmanford.json"
    s, md = _one(p)
    runs = [r for r in json.loads(p.read_text())["benchmarks"] if r["run_type"] == "iteration"]
    real = s.filter(pl.col("time_source") == "host")
    assert real["duration_ns"].to_list() == pytest.approx([r["real_time"] * _UNIT[r["time_unit"]] for r in runs], rel=1e-12)
    assert real["calls_per_sample"].to_list() == [r["iterations"] for r in runs]
    cpu = s.filter(pl.col("time_source") == "host_cpu")
    assert cpu["duration_ns"].to_list() == pytest.approx([r["cpu_time"] * _UNIT[r["time_unit"]] for r in runs], rel=1e-12)
    assert json.loads(real["params"][3]) == {"arg0": 8} and real["benchmark"].unique().to_list() == ["BellmanFord_X"]
    assert md["not_time_aggregates"] == ["BellmanFord_X_BigO", "BellmanFord_X_RMS"]
    assert md["cpu_scaling_enabled"] is True


def test_google_benchmark_bare_nan_repetitions_aggregates_errors(tmp_path):
    text = """{"context": {"date": "2024-01-01", "num_cpus": 8, "mhz_per_cpu": 3000, "cpu_scaling_enabled": false, "library_build_type": "release"},
 "benchmarks": [
  {"name": "BM_k/n:64/manual_time", "run_name": "BM_k/n:64/manual_time", "run_type": "iteration", "repetitions": 3, "repetition_index": 0, "threads": 1, "iterations": 100, "real_time": 1.5e+00, "cpu_time": 9.0e+00, "time_unit": "us"},
  {"name": "BM_k/n:64/manual_time", "run_name": "BM_k/n:64/manual_time", "run_type": "iteration", "repetitions": 3, "repetition_index": 1, "threads": 1, "iterations": 100, "real_time": 1.6e+00, "cpu_time": NaN, "time_unit": "us"},
  {"name": "BM_k/n:64/manual_time", "run_name": "BM_k/n:64/manual_time", "run_type": "iteration", "repetitions": 3, "repetition_index": 2, "threads": 1, "iterations": 100, "real_time": 1.7e+00, "cpu_time": -nan, "time_unit": "us"},
  {"name": "BM_k/n:64/manual_time_mean", "run_name": "BM_k/n:64/manual_time", "run_type": "aggregate", "repetitions": 3, "threads": 1, "aggregate_name": "mean", "aggregate_unit": "time", "iterations": 3, "real_time": 1.6e+00, "cpu_time": 9.0e+00, "time_unit": "us"},
  {"name": "BM_k/n:64/manual_time_cv", "run_name": "BM_k/n:64/manual_time", "run_type": "aggregate", "repetitions": 3, "threads": 1, "aggregate_name": "cv", "aggregate_unit": "percentage", "iterations": 3, "real_time": 0.05, "cpu_time": inf, "time_unit": "us"},
  {"name": "BM_bad/1", "run_name": "BM_bad/1", "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1, "error_occurred": true, "error_message": "CUDA OOM", "iterations": 0, "real_time": 0, "cpu_time": 0, "time_unit": "ns"}
 ]}"""
    p = tmp_path / "gb.json"
    p.write_text(text)
    s, md = _one(p)
    raw = s.filter(pl.col("statistic").is_null() & (pl.col("time_source") == "manual")).sort("run")
    assert raw["duration_ns"].to_list() == pytest.approx([1500.0, 1600.0, 1700.0])
    assert raw["run"].to_list() == [0, 1, 2]
    assert raw["params"].unique().to_list() == ['{"n":64}']
    mean = s.filter(pl.col("statistic") == "mean")
    assert mean.filter(pl.col("time_source") == "manual")["duration_ns"].item() == pytest.approx(1600.0)
    assert mean["sample_count"].unique().to_list() == [3]
    assert s.filter(pl.col("time_source") == "host_cpu").height == 2  # NaN cpu times are not samples
    assert md["errored_runs"] == ["BM_bad/1: CUDA OOM"]
    assert md["not_time_aggregates"] == ["BM_k/n:64/manual_time_cv"]


def test_google_benchmark_untimed_fixture_fails_cleanly(cli):
    p = corpus_dir("google-benchmark") / "google__benchmark__test4_run.json"
    assert_one_line_error(cli("kernels", "-t", "samples", p), "no timed runs")


def test_google_benchmark_old_schema_and_time_units():
    p = corpus_dir("google-benchmark") / "google__benchmark__test1_run1.json"
    s, _ = _one(p)
    runs = [r for r in json.loads(p.read_text())["benchmarks"] if "real_time" in r]
    real = s.filter(pl.col("time_source") == "host")
    assert real["duration_ns"].to_list() == pytest.approx([r["real_time"] * _UNIT[r.get("time_unit", "ns")] for r in runs])
    assert real.filter(pl.col("benchmark") == "BM_NotBadTimeUnit")["duration_ns"].item() == pytest.approx(0.4e9)


def test_google_benchmark_console_text():
    p = corpus_dir("google-benchmark") / "ZigRazor__CXXGraph__bellmanford_imp.txt"
    s, md = _one(p)
    plain = []
    for line in p.read_text().splitlines():
        parts = line.split()
        if len(parts) == 6 and parts[2] in _UNIT and parts[0].startswith("BellmanFord_X/"):
            plain.append((parts[0], float(parts[1]) * _UNIT[parts[2]], float(parts[3]) * _UNIT[parts[4]], int(parts[5])))
    real = s.filter(pl.col("time_source") == "host")
    assert real["duration_ns"].to_list() == [x[1] for x in plain]
    assert s.filter(pl.col("time_source") == "host_cpu")["duration_ns"].to_list() == [x[2] for x in plain]
    assert real["calls_per_sample"].to_list() == [x[3] for x in plain]
    assert md["layout"] == "console" and len(md["not_time_aggregates"]) == 2


# --- KernelBench -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ScalingIntelligence__KernelBench__A100-80GB_modal__baseline_time_torch.json", "ScalingIntelligence__KernelBench__L40S_babel__baseline_time_torch_compile_inductor_default.json"])
def test_kernelbench_baseline_cross_checked(name):
    p = corpus_dir("other") / name
    s, md = _one(p)
    doc = json.loads(p.read_text())
    n_null = 0
    for level, problems in doc.items():
        for fname, st in problems.items():
            bench = f"{level}/{fname[:-3]}"
            rows = s.filter(pl.col("benchmark") == bench)
            if st is None:
                n_null += 1
                assert rows.height == 0
                continue
            got = dict(zip(rows["statistic"], rows["duration_ns"]))
            assert got == pytest.approx({"mean": st["mean"] * 1e6, "stdev": st["std"] * 1e6, "min": st["min"] * 1e6, "max": st["max"] * 1e6})
            assert rows["sample_count"].unique().to_list() == [st["num_trials"]]
            assert json.loads(rows["params"][0]) == {"level": int(level[5:]), "problem_id": int(fname.split("_")[0])}
    assert len(md.get("failed_problems") or []) == n_null
    assert s["variant"].unique().to_list() == [re.search(r"baseline_time_(.+)\.json$", name).group(1)]


def test_kernelbench_eval_results(tmp_path):
    doc = {
        "1": [{"sample_id": 0, "compiled": True, "correctness": True, "metadata": {"hardware": "NVIDIA L40S", "correctness_trials": "(5 / 5)"}, "runtime": 0.5,
               "runtime_stats": {"mean": 0.5, "std": 0.01, "min": 0.48, "max": 0.6, "num_trials": 100, "hardware": "NVIDIA L40S", "device": "cuda:0"}},
              {"sample_id": 1, "compiled": True, "correctness": False, "metadata": {"hardware": "NVIDIA L40S"}, "runtime": -1.0, "runtime_stats": {}}],
        "2": {"sample_id": 0, "compiled": False, "correctness": False, "metadata": {}, "runtime": -1.0, "runtime_stats": {}},
    }
    p = tmp_path / "eval_results.json"
    p.write_text(json.dumps(doc))
    s, md = _one(p)
    assert s.height == 4 and s["variant"].unique().to_list() == ["sample_0"]
    assert dict(zip(s["statistic"], s["duration_ns"]))["mean"] == pytest.approx(0.5e6)
    assert md["correctness"]["problem_1/sample_1"]["correctness"] is False
    assert len(md["untimed_samples"]) == 2


# --- Proton ----------------------------------------------------------------------------------------


def test_proton_hatchet_cross_checked():
    p = corpus_dir("proton") / "CRobeck__triton__proton.hatchet"
    s, md = _one(p)
    tree, devs = json.loads(p.read_text())
    k = tree["children"][0]["children"][0]
    got = dict(zip(s["statistic"], s["duration_ns"]))
    assert got == {"total": float(k["metrics"]["time (ns)"]), "mean": k["metrics"]["time (ns)"] / k["metrics"]["count"]}
    assert s["benchmark"].unique().to_list() == [k["frame"]["name"]]
    assert json.loads(s["params"][0]) == {"scope": tree["children"][0]["frame"]["name"]}
    assert md["devices"][0]["clock_mhz"] == devs["HIP"]["0"]["clock_rate"] / 1e3
    assert s["sm_clock_mhz"].null_count() == s.height  # nominal clocks are not measurements


def test_proton_empty_profile_fails_cleanly(cli):
    p = corpus_dir("proton") / "zleoss__Shannon__proton.hatchet"
    assert_one_line_error(cli("kernels", "-t", "samples", p), "no kernel timings")


def test_proton_nested_scopes_and_counts(tmp_path):
    node = lambda name, metrics, children=(): {"frame": {"name": name, "type": "function"}, "metrics": metrics, "children": list(children)}
    kern = lambda t, c: node("matmul_kernel", {"time (ns)": t, "count": c, "device_id": "0", "device_type": "CUDA", "flops16": 1e9})
    tree = node("ROOT", {"count": 0, "time (ns)": 0}, [node("fwd", {}, [node("layer1", {}, [kern(3000, 3)]), node("layer2", {}, [kern(8000, 4)])])])
    p = tmp_path / "p.hatchet"
    p.write_text(json.dumps([tree, {"CUDA": {"0": {"arch": "90", "clock_rate": 1980000, "memory_clock_rate": 2619000, "bus_width": 5120, "num_sms": 132}}}]))
    s, md = _one(p)
    means = s.filter(pl.col("statistic") == "mean").sort("params")
    assert means["params"].to_list() == ['{"scope":"fwd/layer1"}', '{"scope":"fwd/layer2"}']
    assert means["duration_ns"].to_list() == [1000.0, 2000.0]
    assert means["sample_count"].to_list() == [3, 4]
    assert md["device_name"] == "CUDA sm_90" and md["kernel_metrics"][0]["flops16"] == 1e9


# --- torch.utils.benchmark ---------------------------------------------------------------------------


def test_torch_benchmark_measurements_from_real_runs(tmp_path):
    torch = pytest.importorskip("torch")
    import dataclasses

    from torch.utils import benchmark as tb

    x = torch.ones(64)
    m1 = tb.Timer("x * 2", globals={"x": x}, label="scale", sub_label="64", description="eager", num_threads=1).timeit(200)
    m2 = tb.Timer("x.mul(2)", globals={"x": x}, label="scale", sub_label="64", description="method", num_threads=1).blocked_autorange(min_run_time=0.02)
    ms = [m1, m2]
    p = tmp_path / "measurements.json"
    p.write_text(json.dumps([dataclasses.asdict(m) for m in ms], default=str))
    s, md = _one(p)
    for m in ms:
        rows = select(s, benchmark="scale", variant=m.task_spec.description).sort("iteration")
        assert rows["duration_ns"].to_list() == pytest.approx([t * 1e9 for t in m.times], rel=1e-12)
        assert rows["calls_per_sample"].unique().to_list() == [m.number_per_run]
        assert float(np.median(rows["duration_ns"].to_numpy())) == pytest.approx(m.median * 1e9, rel=1e-9)
        assert json.loads(rows["params"][0]) == {"num_threads": 1, "sub_label": 64}
    single = tmp_path / "one.json"
    single.write_text(json.dumps({"device": "cpu", "measurements": [dataclasses.asdict(m1)]}, default=str))
    s1, md1 = _one(single)
    assert s1.height == len(m1.raw_times) and md1["device_name"] == "cpu"


def test_torch_benchmark_bad_measurement(tmp_path, cli):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps([{"raw_times": [1e-6], "number_per_run": 0, "task_spec": {}}]))
    assert_one_line_error(cli("kernels", "-t", "samples", p), "number_per_run 0")
