"""Every corpus file in the timing folders loads or fails with one clear line, through the CLI.

Files named in EXPECT must give that parser and row count, or that error; any other file (the
corpus may grow) must either load or fail with a one-line error.
"""

from __future__ import annotations

import pytest

from conftest import assert_one_line_error, corpus_files, corpus_ids
from profaudit.errors import ProfauditError
from profaudit.loader import load

FOLDERS = ("nvbench", "pytest-benchmark", "google-benchmark", "timing-csv", "proton", "other")
FILES = [f for d in FOLDERS for f in corpus_files(d)]

# file name -> (parser, sample rows) when it loads, or ("error", text the one-line message holds)
EXPECT = {
    "NVIDIA__nvbench__nvbench.example.auto_throughput.csv": ("nvbench", 20),
    "NVIDIA__nvbench__nvbench.example.axes.csv": ("nvbench", 440),
    "NVIDIA__nvbench__nvbench.example.enums.csv": ("nvbench", 130),
    "NVIDIA__nvbench__nvbench.example.exec_tag_sync.csv": ("nvbench", 8),
    "NVIDIA__nvbench__nvbench.example.throughput.csv": ("nvbench", 10),
    "R100001__Programming-Massively-Parallel-Processors__array_add__BenchResults3060l.csv": ("nvbench", 130),
    "R100001__Programming-Massively-Parallel-Processors__array_add__BenchResults3080.csv": ("nvbench", 130),
    "R100001__Programming-Massively-Parallel-Processors__array_add__BenchResults3080.md": ("nvbench", 130),
    "ionelmc__pytest-benchmark__0001_b692275e28a23b5d4aae70f453079ba593e60290_20150811_052350.json": ("pytest-benchmark", 8),
    "ionelmc__pytest-benchmark__0004_98a371badf8daa50eb83ecfd889eac2143c9cf8d_fooobar_blabla_0004.json": ("error", "not a recognised"),
    "sk413025__git-worktree-example__pytest_benchmark.json": ("pytest-benchmark", 2175),
    "ZigRazor__CXXGraph__bellmanford.json": ("google-benchmark", 38),
    "ZigRazor__CXXGraph__bellmanford_imp.txt": ("google-benchmark", 38),
    "google__benchmark__test1_run1.json": ("google-benchmark", 28),
    "google__benchmark__test3_run0.json": ("google-benchmark", 14),
    "google__benchmark__test4_run.json": ("error", "no timed runs"),
    "aws-neuron__aws-neuron-sdk__inf2__latency_data_decoder.csv": ("error", "4 candidate time columns"),
    "aws-neuron__aws-neuron-sdk__trn1__training_data_decoder.csv": ("error", "no time column among"),
    "lockfuehrer__beast_ressoruces__rocprof_rome_mm_hsa_results.csv": ("timing-table", 3),
    "lockfuehrer__beast_ressoruces__rocprof_rome_mm_hsa_results.stats.csv": ("timing-table", 4),
    "owensgroup__BGHT__A100-PCIE-40GB__bcht_rates_fixed_keys.csv": ("error", "no time column among"),
    "owensgroup__BGHT__RX7900XT__bcht_rates_fixed_keys.csv": ("error", "no time column among"),
    "CRobeck__triton__proton.hatchet": ("proton", 2),
    "zleoss__Shannon__proton.hatchet": ("error", "no kernel timings"),
    "ScalingIntelligence__KernelBench__A100-80GB_modal__baseline_time_torch.json": ("kernelbench", 1000),
    "ScalingIntelligence__KernelBench__A10G_modal__baseline_time_torch.json": ("kernelbench", 400),
    "ScalingIntelligence__KernelBench__L40S_babel__baseline_time_torch_compile_inductor_default.json": ("kernelbench", 432),
}
TIMING_PARSERS = {"nvbench", "pytest-benchmark", "google-benchmark", "timing-table", "proton", "kernelbench", "torch-benchmark", "profaudit-timing"}


@pytest.mark.corpus
@pytest.mark.parametrize("path", FILES, ids=corpus_ids(FILES))
def test_corpus_file_loads_or_fails_cleanly(path, cli):
    want = EXPECT.get(path.name)
    res = cli("kernels", "-t", "samples", "-f", "csv", path)
    if want and want[0] == "error":
        assert_one_line_error(res, want[1])
        return
    if res.code != 0:
        assert want is None, res  # an expected-to-load file must load
        assert_one_line_error(res)
        return
    assert "Traceback" not in res.err
    if want:
        ps = load(path)
        assert ps.metadata["format"].to_list() == [want[0]]
        assert ps.samples.height == want[1]
        assert ps.samples["duration_ns"].null_count() == 0 and (ps.samples["duration_ns"] >= 0).all()


@pytest.mark.corpus
@pytest.mark.parametrize("path", [f for f in FILES if f.name in EXPECT and EXPECT[f.name][0] != "error"], ids=lambda p: p.name)
def test_timing_corpus_rows_are_well_formed(path):
    ps = load(path)
    s = ps.samples
    assert s["params"].null_count() == 0
    assert set(s["statistic"].drop_nulls().unique().to_list()) <= {"mean", "median", "min", "max", "stdev", "total", "q1", "q3", "iqr", "p99", "aggregate"}
    assert set(s["cache_state"].drop_nulls().unique().to_list()) <= {"cold", "hot", "unknown"}
    assert set(s["phase"].drop_nulls().unique().to_list()) <= {"warmup", "measure"}
    summaries = s.filter(s["statistic"].is_not_null())
    if ps.metadata["format"][0] not in ("google-benchmark",):
        assert summaries["sample_count"].null_count() == 0 or ps.metadata["format"][0] == "timing-table"


def test_folder_of_timing_logs_loads_with_skip_bad(tmp_path):
    d = FILES[0].parent.parent if FILES else None
    if d is None:
        pytest.skip("corpus absent")
    ps = load([str(d / "nvbench"), str(d / "proton")], skip_bad=True)
    assert len(ps) == 9 and len(ps.skipped) == 1
    with pytest.raises(ProfauditError):
        load(str(d / "proton"))
