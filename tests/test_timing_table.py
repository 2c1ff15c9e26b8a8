"""Generic per-iteration timing logs (parsers/timing_table.py): layouts, messy files, column roles,
ambiguity errors, and the CLI's --time-column/--time-unit."""

from __future__ import annotations

import csv
import gzip
import json

import polars as pl
import pytest

from conftest import assert_one_line_error, corpus_dir
from profaudit.errors import InputError
from profaudit.loader import load
from profaudit.parsers import find_parser, probe
from profaudit.parsers import timing_table as tt


def _load(path, **kw):
    ps = load(path, **kw)
    assert len(ps) == 1
    return ps.samples, next(iter(ps)).metadata


def _write(tmp_path, name, text, encoding="utf-8"):
    p = tmp_path / name
    p.write_bytes(text.encode(encoding))
    return p


# --- column-name analysis ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, unit",
    [
        ("time_ms", "ms"), ("latency_us", "us"), ("duration_ns", "ns"), ("elapsed_s", "s"), ("ms", "ms"),
        ("Time (us)", "us"), ("runtime_ms", "ms"), ("runtime [ms]", "ms"), ("DurationNs", "ns"), ("AverageNs", "ns"),
        ("kernel_time_usec", "usec"), ("GPU Time (sec)", "sec"), ("p99_ms", "ms"), ("Latency(µs)", "µs"),
        ("elem/s", None), ("items_per_s", None), ("tokens/sec", None), ("s", None), ("samples", None), ("num_s", None),
        ("throughput_ms", None), ("Output Token Throughput (tokens/sec)", None), ("Performance [seq/sec]", None),
    ],
)
def test_time_unit_in_name(name, unit):
    assert tt.time_unit_in_name(name) == unit


@pytest.mark.parametrize("name", ["timestamp_s", "ts", "ts_ns", "start_time", "wall_clock", "wall_clock_s", "BeginNs", "EndNs", "DispatchNs", "end_ms", "time_since_start_s", "Timestamp (ms)"])
def test_timestamps_are_never_times(name):
    assert tt.is_timestamp(name)


@pytest.mark.parametrize("name", ["time_ms", "latency_us", "DurationNs", "elapsed_s", "walltime_s"])
def test_durations_are_not_timestamps(name):
    assert not tt.is_timestamp(name)


def test_throttle_mask_decoding():
    assert tt.decode_throttle("0x0000000000000000") == "none"
    assert tt.decode_throttle("0x0000000000000004") == "sw_power_cap"
    assert tt.decode_throttle("0x0000000000000044") == "sw_power_cap|hw_thermal_slowdown"
    assert tt.decode_throttle("Not Active") == "Not Active"
    assert tt.decode_throttle("N/A") is None


# --- layouts -------------------------------------------------------------------------------------


def test_plain_csv_cross_checked_against_csv_module(tmp_path):
    rows = [("gemm", "torch", 1024, "fp16", i, 1.0 + 0.01 * i) for i in range(50)] + [("gemm", "triton", 1024, "fp16", i, 0.5 + 0.02 * i) for i in range(50)]
    p = tmp_path / "log.csv"
    with open(p, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["benchmark", "variant", "N", "dtype", "iter", "time_ms"])
        w.writerows(rows)
    s, md = _load(p)
    assert md["format"] == "timing-table" and md["time_columns"] == ["time_ms"]
    with open(p, newline="") as f:
        plain = list(csv.DictReader(f))
    assert s.height == len(plain)
    assert s["duration_ns"].to_list() == pytest.approx([float(r["time_ms"]) * 1e6 for r in plain], rel=1e-12)
    assert s["iteration"].to_list() == [int(r["iter"]) for r in plain]
    assert s["variant"].to_list() == [r["variant"] for r in plain]
    assert set(s["params"].unique().to_list()) == {'{"N":1024,"dtype":"fp16"}'}
    assert s["statistic"].null_count() == s.height


def test_messy_csv_bom_comments_blank_lines_units_row_trailing_commas(tmp_path):
    text = (
        "\ufeff# produced by my_bench.py v3\n"
        "# device: H100\n"
        "\n"
        "iteration,latency,sm_clock,power,temp,\n"
        ",ms,MHz,W,C,\n"
        "0,1.50,1980,301.5,61,\n"
        "\n"
        "1,1.25,1980,299.0,62,\n"
        "# a comment in the middle\n"
        "2,1.00,1755,280.0,70,\n"
    )
    p = _write(tmp_path, "messy.csv", text)
    s, md = _load(p)
    assert s["duration_ns"].to_list() == pytest.approx([1.5e6, 1.25e6, 1.0e6])
    assert s["iteration"].to_list() == [0, 1, 2]
    assert s["sm_clock_mhz"].to_list() == [1980.0, 1980.0, 1755.0]
    assert s["power_w"].to_list() == [301.5, 299.0, 280.0]
    assert s["temperature_c"].to_list() == [61.0, 62.0, 70.0]
    assert "units row under the header" in md["notes"]


def test_units_in_cells_and_mixed_units(tmp_path):
    p = _write(tmp_path, "cells.csv", "run,latency\n0,1.5 ms\n0,900 us\n0,2 s\n")
    s, _ = _load(p)
    assert s["duration_ns"].to_list() == pytest.approx([1.5e6, 9.0e5, 2.0e9])


def test_tsv_and_semicolon(tmp_path):
    s1, _ = _load(_write(tmp_path, "a.tsv", "step\telapsed_us\n0\t10\n1\t12\n"))
    s2, _ = _load(_write(tmp_path, "b.csv", "step;elapsed_us\n0;10\n1;12\n"))
    assert s1["duration_ns"].to_list() == s2["duration_ns"].to_list() == [10e3, 12e3]


def test_nvidia_smi_style_columns(tmp_path):
    text = (
        "timestamp, kernel_ms, clocks.current.sm [MHz], clocks.current.memory [MHz], power.draw [W], temperature.gpu, clocks_throttle_reasons.active\n"
        "2024/01/15 10:23:45.100, 2.0, 1410 MHz, 1593 MHz, 250.00 W, 65, 0x0000000000000000\n"
        "2024/01/15 10:23:45.200, 2.5, 1200 MHz, 1593 MHz, 300.00 W, 83, 0x0000000000000020\n"
    )
    s, md = _load(_write(tmp_path, "smi.csv", text))
    assert s["duration_ns"].to_list() == [2.0e6, 2.5e6]
    assert s["sm_clock_mhz"].to_list() == [1410.0, 1200.0]
    assert s["mem_clock_mhz"].to_list() == [1593.0, 1593.0]
    assert s["power_w"].to_list() == [250.0, 300.0]
    assert s["temperature_c"].to_list() == [65.0, 83.0]
    assert s["throttle_reasons"].to_list() == ["none", "sw_thermal_slowdown"]
    ts = s["timestamp_ns"].to_list()
    assert ts[1] - ts[0] == pytest.approx(100e6)


def test_timestamp_column_is_not_taken_for_the_time(tmp_path):
    s, md = _load(_write(tmp_path, "t.csv", "timestamp_s,time_ms\n100.0,1.0\n100.5,2.0\n"))
    assert s["duration_ns"].to_list() == [1e6, 2e6]
    assert s["timestamp_ns"].to_list() == [100e9, 100.5e9]
    with pytest.raises(InputError, match="no time column"):
        load(_write(tmp_path, "only_ts.csv", "timestamp_s,count\n100.0,1\n100.5,2\n"))


def test_phase_cache_source_and_device_columns(tmp_path):
    text = "iter,phase,l2_flush,timer,gpu,dur_ms\n0,warmup,true,cuda_events,H100,5\n1,measure,true,cuda_events,H100,1\n2,measure,false,cuda_events,H100,1\n"
    s, md = _load(_write(tmp_path, "p.csv", text))
    assert s["phase"].to_list() == ["warmup", "measure", "measure"]
    assert s["cache_state"].to_list() == ["cold", "cold", "hot"]
    assert s["time_source"].to_list() == ["cuda_events"] * 3
    assert md["device_name"] == "H100"


def test_statistic_family_with_counts(tmp_path):
    s, _ = _load(_write(tmp_path, "stats.csv", "name,calls,mean_us,p99_us,min_us\nk,10,5,9,4\n"))
    got = {r["statistic"]: (r["duration_ns"], r["sample_count"]) for r in s.iter_rows(named=True)}
    assert got == {"mean": (5e3, 10), "p99": (9e3, 10), "min": (4e3, 10)}


def test_statistic_named_column_beside_an_iteration_column_is_raw(tmp_path):
    s, md = _load(_write(tmp_path, "avg.csv", "iter,avg_ms\n0,1.0\n1,1.1\n2,0.9\n"))
    assert s["statistic"].null_count() == 3 and s["iteration"].to_list() == [0, 1, 2]
    assert "per-iteration samples" in md["notes"][0]


def test_json_array_object_and_jsonl(tmp_path):
    recs = [{"name": "k", "shape": [128, 256], "dtype": "bf16", "latency_us": 10.0 + i} for i in range(5)]
    a = tmp_path / "a.json"
    a.write_text(json.dumps(recs))
    b = tmp_path / "b.json"
    b.write_text(json.dumps({"device": "NVIDIA H100 80GB HBM3", "time_source": "cuda_events", "samples": recs}))
    c = tmp_path / "c.jsonl"
    c.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    d = tmp_path / "d.jsonl.gz"
    d.write_bytes(gzip.compress(c.read_bytes()))
    outs = [_load(x)[0] for x in (a, b, c, d)]
    for s in outs:
        assert s["duration_ns"].to_list() == [(10.0 + i) * 1e3 for i in range(5)]
        assert s["params"].unique().to_list() == ['{"dtype":"bf16","shape":[128,256]}']
    assert outs[1]["device_name"].unique().to_list() == ["NVIDIA H100 80GB HBM3"]
    assert outs[1]["time_source"].unique().to_list() == ["cuda_events"]


def test_json_meta_time_unit_and_params_object(tmp_path):
    p = tmp_path / "m.json"
    p.write_text(json.dumps({"time_unit": "us", "records": [{"latency": 3, "params": {"M": 64, "N": 64.0}}, {"latency": 4, "params": {"M": 64, "N": 64}}]}))
    s, _ = _load(p)
    assert s["duration_ns"].to_list() == [3e3, 4e3]
    assert s["params"].unique().to_list() == ['{"M":64,"N":64}']


def test_dropped_rows_are_counted(tmp_path):
    s, md = _load(_write(tmp_path, "d.csv", "iter,time_ms\n0,1.0\n1,NA\n2,-50\n3,oops\n4,2.0\n"))
    assert s["duration_ns"].to_list() == [1e6, 2e6]
    assert md["rows_dropped"] == 3


def test_late_na_and_non_utf8_bytes(tmp_path):
    lines = ["iter,time_us,name"] + [f"{i},{1 + i % 7},k" for i in range(20000)]
    lines[15001] = "15000,NA,k"
    p = _write(tmp_path, "late.csv", "\n".join(lines) + "\n")
    s, md = _load(p)
    assert s.height == 19999 and md["rows_dropped"] == 1
    q = tmp_path / "latin.csv"
    q.write_bytes("name,time_ms\nk\xe9rnel,1.5\n".encode("latin-1"))
    s2, _ = _load(q)
    assert s2["duration_ns"].to_list() == [1.5e6]


def test_params_match_across_csv_and_json(tmp_path):
    c = _write(tmp_path, "c.csv", "M,N,dtype,time_us\n1024,1024.0,fp16,3\n")
    j = tmp_path / "j.json"
    j.write_text(json.dumps([{"M": 1024, "N": 1024, "dtype": "fp16", "time_us": 3}]))
    assert _load(c)[0]["params"].to_list() == _load(j)[0]["params"].to_list()


# --- errors --------------------------------------------------------------------------------------


def test_two_candidates_is_ambiguous_and_time_column_resolves(tmp_path, cli):
    p = _write(tmp_path, "amb.csv", "fwd_ms,bwd_ms\n1,2\n1.5,2.5\n")
    with pytest.raises(InputError) as e:
        load(p)
    msg = str(e.value)
    assert "'fwd_ms' (ms)" in msg and "'bwd_ms' (ms)" in msg and "--time-column" in msg and "\n" not in msg
    s, _ = _load(p, time_column="bwd_ms")
    assert s["duration_ns"].to_list() == [2e6, 2.5e6]
    assert_one_line_error(cli("kernels", "-t", "samples", p), "--time-column")
    res = cli("kernels", "-t", "samples", "-f", "csv", "--time-column", "fwd_ms", p)
    assert res.code == 0, res
    assert pl.read_csv(res.out.encode())["duration_ns"].to_list() == [1e6, 1.5e6]


def test_unitless_time_needs_time_unit(tmp_path, cli):
    p = _write(tmp_path, "nounit.csv", "iter,latency\n0,1.5\n1,2.5\n")
    with pytest.raises(InputError, match="has no unit.*--time-unit"):
        load(p)
    s, _ = _load(p, time_unit="us")
    assert s["duration_ns"].to_list() == [1.5e3, 2.5e3]
    res = cli("ingest", "-o", tmp_path / "ds", "--time-unit", "us", p)
    assert res.code == 0, res
    assert_one_line_error(cli("kernels", "-t", "samples", "--time-unit", "parsec", p), "not a time unit")
    assert_one_line_error(cli("kernels", "-t", "samples", "--time-column", "nope", p), "no column 'nope'")


def test_contradicting_time_unit_is_refused(tmp_path):
    p = _write(tmp_path, "c.csv", "time_ms\n1\n")
    with pytest.raises(InputError, match="contradicts"):
        load(p, time_unit="us")


def test_no_time_column_names_the_columns(tmp_path, cli):
    p = _write(tmp_path, "none.csv", "num_keys,load_factor,insert_1\n5,0.6,3056.7\n")
    res = cli("kernels", "-t", "samples", p)
    assert_one_line_error(res, "no time column among 'num_keys', 'load_factor', 'insert_1'")
    res = cli("kernels", "-t", "samples", "-f", "csv", "--time-column", "insert_1", "--time-unit", "ms", p)
    assert res.code == 0, res


@pytest.mark.parametrize(
    "content, needle",
    [
        ("time_ms\n", "no rows"),
        ('[{"time_ms": 1}, 5]', "must be JSON objects"),
        ('{"samples": [{"time_ms": 1}', "not valid JSON"),
        ("time_ms\nabc\n", "holds no usable durations"),
    ],
)
def test_bad_tables_fail_with_one_line(tmp_path, cli, content, needle):
    suffix = ".json" if content.startswith(("[", "{")) else ".csv"
    p = _write(tmp_path, "bad" + suffix, content)
    assert_one_line_error(cli("kernels", "-t", "samples", p), needle)


# --- sniffing ------------------------------------------------------------------------------------


def test_sniff_leaves_other_formats_alone(tmp_path):
    ncu = _write(tmp_path, "ncu.csv", '"ID","Process ID","Process Name","Host Name","Kernel Name","Metric Name","Metric Unit","Metric Value"\n"0","1","a","h","k","gpu__time_duration.sum","msecond","1.0"\n')
    ncu_raw = _write(tmp_path, "raw.csv", "gpu__time_duration.sum,launch__block_size\nmsecond,-\n17.61,1024\n")
    nsys = _write(tmp_path, "nsys.csv", "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n50.0,100,2,50,50,40,60,10,k\n")
    nvb = _write(tmp_path, "nvb.csv", "Benchmark,Device,Device Name,Skipped,Samples,GPU Time (sec)\nb,0,X,No,10,0.001\n")
    for p in (ncu, ncu_raw, nsys, nvb):
        assert not tt.sniff_table(probe(p)), p
        parser = find_parser(p)
        assert parser is None or parser.name != "timing-table", (p, parser and parser.name)


def test_sniff_on_corpus_profile_csvs():
    for sub in ("ncu-csv", "nsys-stats-csv"):
        d = corpus_dir(sub)
        for p in sorted(d.iterdir()):
            assert not tt.sniff_table(probe(p)), p


# --- corpus: timing-csv ----------------------------------------------------------------------------


def test_rocprof_dispatch_csv_cross_checked():
    p = corpus_dir("timing-csv") / "lockfuehrer__beast_ressoruces__rocprof_rome_mm_hsa_results.csv"
    s, md = _load(p)
    with open(p, newline="") as f:
        plain = list(csv.DictReader(f))
    assert s["duration_ns"].to_list() == [float(r["DurationNs"]) for r in plain]
    assert s["benchmark"].to_list() == [r["KernelName"] for r in plain]
    assert s["timestamp_ns"].to_list() == [float(r["BeginNs"]) for r in plain]
    assert "EndNs" in md["ignored_columns"]


def test_rocprof_stats_csv_gives_statistics():
    p = corpus_dir("timing-csv") / "lockfuehrer__beast_ressoruces__rocprof_rome_mm_hsa_results.stats.csv"
    s, _ = _load(p)
    with open(p, newline="") as f:
        plain = list(csv.DictReader(f))
    for r in plain:
        rows = s.filter(pl.col("benchmark") == r["Name"])
        got = dict(zip(rows["statistic"], rows["duration_ns"]))
        assert got == {"mean": float(r["AverageNs"]), "total": float(r["TotalDurationNs"])}
        assert rows["sample_count"].unique().to_list() == [int(r["Calls"])]


def test_neuron_latency_csv_needs_a_time_column_choice():
    p = corpus_dir("timing-csv") / "aws-neuron__aws-neuron-sdk__inf2__latency_data_decoder.csv"
    with pytest.raises(InputError, match="4 candidate time columns"):
        load(p)
    s, md = _load(p, time_column="TTFT Latency P50 (ms)")
    with open(p, newline="") as f:
        plain = list(csv.DictReader(f))
    med = s.filter(pl.col("statistic") == "median")
    p99 = s.filter(pl.col("statistic") == "p99")
    assert med["duration_ns"].to_list() == pytest.approx([float(r["TTFT Latency P50 (ms)"]) * 1e6 for r in plain])
    assert p99["duration_ns"].to_list() == pytest.approx([float(r["TTFT Latency P99 (ms)"]) * 1e6 for r in plain])
    assert json.loads(med["params"][0])["Batch Size"] == int(plain[0]["Batch Size"])
    assert med["benchmark"].to_list() == [r["Model"] for r in plain]


def test_wide_provider_table_with_listed_time_columns(tmp_path):
    # triton.testing.perf_report's CSV: the x column, then one column per provider (do_bench ms)
    p = tmp_path / "vector-add-performance.csv"
    p.write_text("N,Triton,Torch\n4096.0,0.0061,0.0072\n65536.0,0.0085,0.0101\n1048576.0,0.0312,0.0405\n")
    s, md = _load(p, time_column="Triton, Torch", time_unit="ms")
    with open(p, newline="") as f:
        rows = list(csv.DictReader(f))
    assert s.height == 2 * len(rows)
    for prov in ("Triton", "Torch"):
        got = s.filter(pl.col("variant") == prov).sort("iteration")
        assert got["duration_ns"].to_list() == pytest.approx([float(r[prov]) * 1e6 for r in rows], rel=1e-12)
        assert [json.loads(x)["N"] for x in got["params"].to_list()] == [int(float(r["N"])) for r in rows]
    assert "read as variants" in " ".join(md.get("notes", []))
    # units in the names need no --time-unit; contradictions and gaps are one line
    q = tmp_path / "named.csv"
    q.write_text("size,triton_us,torch_us\n1024,6.1,7.2\n")
    s2, _ = _load(q, time_column="triton_us,torch_us")
    assert sorted(s2["duration_ns"].to_list()) == pytest.approx([6100.0, 7200.0])
    for kw, needle in (
        ({"time_column": "Triton,Torch"}, "no unit in its name"),
        ({"time_column": "Triton,Nope", "time_unit": "ms"}, "no column 'Nope'"),
        ({"time_column": "Triton,Triton", "time_unit": "ms"}, "listed twice"),
        ({"time_column": "Triton,", "time_unit": "ms"}, "two or more columns"),
    ):
        with pytest.raises(InputError, match=needle):
            _load(p, **kw)
    with pytest.raises(InputError, match="contradicts"):
        _load(q, time_column="triton_us,torch_us", time_unit="ms")
    v = tmp_path / "with_variant.csv"
    v.write_text("variant,a_ms,b_ms\nx,1,2\n")
    with pytest.raises(InputError, match="already has a variant column"):
        _load(v, time_column="a_ms,b_ms")


def test_one_log_with_a_column_per_side_audits_as_two_variants(tmp_path):
    import numpy as np

    from profaudit.audit import audit, load_claim

    rng = np.random.default_rng(3)
    b, c = np.round(rng.normal(2.0, 0.02, 120), 5), np.round(rng.normal(1.0, 0.01, 120), 5)
    (tmp_path / "ab.csv").write_text("iteration,baseline_ms,candidate_ms\n" + "".join(f"{i},{x:.5f},{y:.5f}\n" for i, (x, y) in enumerate(zip(b, c))))
    with pytest.raises(InputError, match=r"--time-column A,B"):
        load(tmp_path / "ab.csv")
    side = '{{timings: ab.csv, time_column: "baseline_ms,candidate_ms", variant: {}}}'
    (tmp_path / "claim.yaml").write_text(f"speedup: 2.0\nstatistic: median\nbaseline: {side.format('baseline_ms')}\ncandidate: {side.format('candidate_ms')}\n")
    rep = audit(load_claim(tmp_path / "claim.yaml"))
    iv = rep.supported.interval
    assert iv.low <= iv.estimate <= iv.high
    assert iv.estimate == pytest.approx(float(np.median(b) / np.median(c)), rel=1e-9)


def test_rounds_is_the_sample_count_of_summary_rows(tmp_path):
    p = tmp_path / "summary.csv"
    p.write_text("name,mean_ms,stddev_ms,median_ms,rounds\nk1,1.5,0.05,1.49,120\n")
    s, _ = _load(p)
    assert dict(zip(s["statistic"].to_list(), s["sample_count"].to_list())) == {"mean": 120, "stdev": 120, "median": 120}
