"""An nvprof CSV is read only where an address-space limit (ulimit -v, RLIMIT_AS, strict
overcommit) leaves room for 16x its size plus 1.25 GiB; otherwise one InputError line names the
file. polars' CSV reader threads abort the process on a failed allocation with nothing on stderr
(exit 134, polars 2.1), so without the check a user saw nothing at all: s18 fuzz, seed 3114
nvprof-csv #977, a trace blown up to 210 MB aborted a fuzz worker under its 6 GB cap (the worker
had kept address space from the inputs before it). A 25 MB trace aborted with 0.7-1.2 GB of room."""

from __future__ import annotations

import sys

import pytest

from profaudit.errors import InputError
from profaudit.parsers import nvprof_csv, textsafe
from profaudit.parsers.base import ReadOptions
from tests.address_space import refused_line

_HEAD = (
    "==4242== NVPROF is profiling process 4242, command: ./app\n==4242== Profiling result:\n"
    '"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z","Registers Per Thread","Static SMem",'
    '"Dynamic SMem","Size","Throughput","SrcMemType","DstMemType","Device","Context","Stream","Name","Correlation_ID"\n'
    "us,us,,,,,,,,KB,KB,KB,GB/s,,,,,,,\n"
)
# an API call (no device) and a kernel, as the blown-up #977 held them
_API = '10.250000,3.200000,,,,,,,,,,,,,,,,,"cudaLaunchKernel",280\n'
_KERNEL = '14.000000,25.344000,64,1,1,128,1,1,40,0.500000,0.000000,,,,,"GeForce RTX 2080 Ti (0)","1","7","volta_sgemm_128x64_nn",281\n'


def _trace(path, mb: float):
    path.write_text(_HEAD + _API * int(mb * (1 << 20) / len(_API)) + _KERNEL)
    return path


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status are Linux's")
def test_a_trace_too_big_for_the_address_space_left_is_one_line_not_a_silent_abort(tmp_path, monkeypatch):
    # two polars threads in the child, as where the abort was measured (each thread's arena takes
    # address space, so more threads would only abort sooner without the check)
    monkeypatch.setenv("POLARS_MAX_THREADS", "2")
    trace = _trace(tmp_path / "trace.csv", 25)
    line = refused_line(trace, 1000)
    assert "a legacy nvprof CSV file of 26.2 MB needs up to 1.76 GB" in line and "memory limit (ulimit -v" in line


def test_the_room_needed_is_16_times_the_file_plus_1_25_gib(monkeypatch, tmp_path):
    trace = _trace(tmp_path / "trace.csv", 2)
    need = 16 * trace.stat().st_size + (5 << 28)
    monkeypatch.setattr(textsafe, "_address_space_left", lambda: need)
    ps = nvprof_csv.PARSER.read(trace, ReadOptions())
    assert ps.tables["ranges"].height == int(2 * (1 << 20) / len(_API)) and ps.tables["kernels"].height == 1
    monkeypatch.setattr(textsafe, "_address_space_left", lambda: need - 1)
    with pytest.raises(InputError, match=r"trace\.csv: a legacy nvprof CSV file of 2\.10 MB needs up to 1\.38 GB of memory to read"):
        nvprof_csv.PARSER.read(trace, ReadOptions())


def test_no_limit_no_check(monkeypatch, tmp_path):
    monkeypatch.setattr(textsafe, "_address_space_left", lambda: None)
    trace = _trace(tmp_path / "trace.csv", 2)
    assert nvprof_csv.PARSER.read(trace, ReadOptions()).tables["kernels"].height == 1
