"""`nsys stats` CSV output names each report it runs in a `Processing [...]` line: the profile's
metadata lists each report and input once, in the order first met. A 200 MB blow-up of one such
line (1.27 M times, fuzz_long seed 3102 nsys-stats-csv #292) kept 1.27 M copies of one name in the
metadata and parsed the same script path each time: 16 CPU-s and 1 GB, now 6.6 CPU-s and 0.8 GB."""

from __future__ import annotations

from profaudit.parsers import nsys_stats_csv
from profaudit.parsers.base import ReadOptions

_PROC = ("Processing [run.sqlite] with [/opt/nsight-systems/2025.1.1/host-linux-x64/reports/{}.py]... \n")
_SKIP = "SKIPPED: run.sqlite does not contain CUDA trace data.\n"


def test_a_report_processed_many_times_is_listed_once(tmp_path):
    p = tmp_path / "cuda_api_sum.csv"
    p.write_text("\n" + _PROC.format("cuda_api_sum") * 20_000 + _SKIP + "\n")
    prof = nsys_stats_csv.PARSER.read(p, ReadOptions())
    assert prof.metadata["nsys_stats_reports"] == ["cuda_api_sum"]
    assert prof.metadata["nsys_stats_input"] == "run.sqlite"


def test_reports_keep_the_order_they_were_first_run_in(tmp_path):
    p = tmp_path / "stats.csv"
    p.write_text("\n" + "".join(_PROC.format(r) for r in ("cuda_gpu_kern_sum", "cuda_api_sum", "cuda_gpu_kern_sum", "nvtx_sum", "cuda_api_sum"))
                 + _SKIP + "\n")
    prof = nsys_stats_csv.PARSER.read(p, ReadOptions())
    assert prof.metadata["nsys_stats_reports"] == ["cuda_gpu_kern_sum", "cuda_api_sum", "nvtx_sum"]
