"""polars aborts the process (Rust's allocation-error handler: exit 134 and a backtrace) when an
allocation fails, which happens under an address-space limit (ulimit -v, RLIMIT_AS) or strict
overcommit, and its allocator takes several times more address space than memory (a 200 MB
rocprofv3 kernel trace: 1.85 GB RSS, 6.9 GB of address space). A rocprofv3 CSV is therefore read
only when the room left covers 32x its size plus 1.25 GiB; otherwise one InputError line names the
file, its size and the limit (s18 fuzz seed 3111, rocprofv3-csv-dir crash-61: a kernel trace blown
up to 210 MB aborted the fuzz worker under its 6 GB cap)."""

from __future__ import annotations

import gzip
import sys

import pytest

from profaudit.errors import InputError
from profaudit.parsers import rocprofv3_csv, textsafe
from profaudit.parsers.base import ReadOptions
from tests.address_space import refused_line
from tests.test_rocprofv3_csv_scale import _HEAD, _LINE


def _trace(path, mb: float):
    path.write_text(_HEAD + _LINE * int(mb * (1 << 20) / len(_LINE)))
    return path


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status are Linux's")
def test_a_trace_too_big_for_the_address_space_left_is_one_line_not_an_abort(tmp_path, monkeypatch):
    # 26 MB of dispatches grows a process's address space by ~1.6 GB as polars reads it: with
    # 1.2 GB left the read aborted (exit -6, a Rust backtrace), with 1.6 GB left a rayon worker's
    # failed allocation came out as "damaged data: the native decoder failed", blaming the file.
    # Two polars threads in the child, as where this was measured: each thread's stack and malloc
    # arena take address space, and a machine with many cores would spend the room on them
    monkeypatch.setenv("POLARS_MAX_THREADS", "2")
    trace = _trace(tmp_path / "run_kernel_trace.csv", 25)
    line = refused_line(trace, 1200)
    assert "a rocprofv3 CSV trace of 26.2 MB needs up to 2.18 GB" in line and "memory limit (ulimit -v" in line


def test_the_room_needed_is_32_times_the_trace_plus_1_25_gib(monkeypatch, tmp_path):
    trace = _trace(tmp_path / "run_kernel_trace.csv", 2)
    need = 32 * trace.stat().st_size + (5 << 28)
    monkeypatch.setattr(textsafe, "_address_space_left", lambda: need)
    assert rocprofv3_csv.PARSER.read(trace, ReadOptions()).tables["kernels"].height > 20_000
    monkeypatch.setattr(textsafe, "_address_space_left", lambda: need - 1)
    with pytest.raises(InputError, match=r"run_kernel_trace\.csv: a rocprofv3 CSV trace of 2\.10 MB needs up to 1\.41 GB of memory"):
        rocprofv3_csv.PARSER.read(trace, ReadOptions())


def test_a_gzip_trace_is_judged_by_its_text(monkeypatch, tmp_path):
    # polars reads a gzip trace's decompressed text: 0.1 MB on disk is 21 MB to read
    plain = _trace(tmp_path / "plain_kernel_trace.csv", 20)
    gz = tmp_path / "run_kernel_trace.csv.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    assert gz.stat().st_size < 1 << 20
    monkeypatch.setattr(textsafe, "_address_space_left", lambda: 1 << 30)
    with pytest.raises(InputError, match=r"run_kernel_trace\.csv\.gz: a rocprofv3 CSV trace of 21\.0 MB needs up to"):
        rocprofv3_csv.PARSER.read(gz, ReadOptions())


def test_an_api_trace_beside_a_kernel_trace_is_checked_too(monkeypatch, tmp_path):
    # the kernel trace's read scans the marker and HIP API traces beside it (nvtx_range): a big
    # one is refused there as it would be read alone
    (tmp_path / "1_kernel_trace.csv").write_text(_HEAD + _LINE * 2)
    head = '"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"\n'
    (tmp_path / "1_marker_api_trace.csv").write_text(head + '"MARKER_CORE_RANGE_API","step",4242,9,5,100,1000\n')
    (tmp_path / "1_hip_api_trace.csv").write_text(head + '"HIP_RUNTIME_API_EXT","hipLaunchKernel",4242,9,6,200,300\n' * 40_000)
    monkeypatch.setattr(textsafe, "_address_space_left", lambda: 1 << 30)
    with pytest.raises(InputError, match=r"1_hip_api_trace\.csv: a rocprofv3 CSV trace of 2\.28 MB needs up to"):
        rocprofv3_csv.PARSER.read(tmp_path / "1_kernel_trace.csv", ReadOptions())


def test_no_limit_no_check(monkeypatch, tmp_path):
    monkeypatch.setattr(textsafe, "_address_space_left", lambda: None)
    trace = _trace(tmp_path / "run_kernel_trace.csv", 2)
    assert rocprofv3_csv.PARSER.read(trace, ReadOptions()).tables["kernels"].height > 20_000
