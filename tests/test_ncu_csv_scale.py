"""Large Nsight Compute `--page raw` CSV exports (issue 13, size blow-ups): the column-by-column
reader gives exactly what the row-by-row one gives, its memory stays a small multiple of the
file, its Python work does not grow with the rows, and a file beyond the metric-value limit is
one line."""

from __future__ import annotations

import json
import random
from pathlib import Path

import polars as pl
import pytest

from profaudit.errors import InputError
from profaudit.parsers import ncu_common as nc
from profaudit.parsers import ncu_csv, ncu_vector
from profaudit.parsers.base import ReadOptions
from tests.conftest import corpus_files
from tests.read_cost import read_cost


_METRICS = [
    "gpu__time_duration.sum", "launch__grid_dim_x", "launch__grid_dim_y", "launch__grid_dim_z", "launch__block_dim_x",
    "launch__block_size", "launch__grid_size", "launch__registers_per_thread", "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic", "launch__shared_mem_per_block", "launch__device_id", "device__attribute_device_index",
    "launch__stream_id", "dram__bytes_read.sum", "dram__bytes_write.sum", "dram__bytes.sum", "dram__bytes.sum.per_second",
    "lts__t_sectors.sum", "l1tex__t_bytes.sum", "gpc__cycles_elapsed.avg.per_second", "gpc__cycles_elapsed.max",
    "sm__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.avg", "dram__cycles_elapsed.avg", "smsp__cycles_elapsed.avg",
    "sm__warps_active.avg.pct_of_peak_sustained_active", "device__attribute_display_name", "sm__inst_executed_pipe_tensor.sum",
    "gpu__time_duration", "gpc__frequency", "Duration", "Memory Throughput",
] + [
    f"smsp__sass_thread_inst_executed_op_{p}{op}_pred_on{r}" for p in "dfh" for op in ("add", "mul", "fma") for r in (".sum", ".sum.per_cycle_elapsed")
] + [
    f"sm__ops_path_tensor_{op}src_{src}{sp}.sum{r}"
    for src in ("fp16_dst_fp32", "tf32", "int8", "fp4_fp6_fp8", "int4") for sp in ("", "_sparsity_on", "_sparsity_off")
    for op in ("", "op_hmma_") for r in ("", ".per_cycle_elapsed")
]
_UNITS = ["", "-", "nsecond", "usecond", "msecond", "byte", "Kbyte", "cycle/second", "cycle/nsecond", "Ghz", "Gbyte/second", "%", "inst", "cycle"]
_FIXED = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size", "Grid Size", "Device", "CC",
          "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"]


def _cell(rng: random.Random, col: str) -> str:
    fixed = {
        "ID": str(rng.randint(0, 99)), "Process ID": rng.choice(["4242", "n/a", "1,234"]), "Process Name": rng.choice(["bench", ""]),
        "Host Name": rng.choice(["h1", "h2", ""]), "Kernel Name": rng.choice(["void k<float>(float*, int)", "_Z3fooPf", ""]),
        "Context": "1", "Stream": rng.choice(["7", "x"]), "Block Size": rng.choice(["(256, 1, 1)", "", "bad"]),
        "Grid Size": rng.choice(["(1024, 1, 1)", "(9999999999, 9999999999, 9999999999)"]), "Device": rng.choice(["0", "1"]),
        "CC": rng.choice(["8.0", "9.0"]),
    }
    if col in fixed:
        return fixed[col]
    if col in _FIXED:
        return rng.choice(['1 "d:outer:0:0:0:0:0:0" "d:inner:0:0:0:0:0:0"', ""])
    if col == "device__attribute_display_name":
        return rng.choice(["NVIDIA A100-SXM4-80GB", "", "n/a", "-"])
    k = rng.random()
    if k < 0.1:
        return rng.choice(["", "n/a", "-", "inf", "nan", "0", "1e400", "1_000", "x"])
    if k < 0.2:
        return f"{rng.randint(0, 10**9):,}"
    if k < 0.3:
        return str(rng.randint(0, 2**40))
    return f"{rng.uniform(0, 1e6):.{rng.randint(0, 4)}f}"


def _raw_export(rng: random.Random, rows: int) -> str:
    cols = ["ID", "Kernel Name"] + rng.sample(_FIXED[2:], rng.randint(0, 5)) + rng.sample(_METRICS, rng.randint(1, 25))
    rng.shuffle(cols)
    quote = rng.random() < 0.5

    def line(cells):
        return ",".join(f'"{c}"' if quote or "," in c else c for c in cells)

    out = [line(cols)]
    if rng.random() < 0.7:
        out.append(line(["" if c in _FIXED else rng.choice(_UNITS) for c in cols]))
    for _ in range(rows):
        if rng.random() < 0.05:
            out.append("the program's own output")
        out.append(line([_cell(rng, c) for c in cols]))
    return "\n".join(out) + "\n"


def _read(path: Path, fast: bool, options: ReadOptions | None = None):
    old = ncu_csv.FAST_RAW
    ncu_csv.FAST_RAW = fast
    try:
        p = ncu_csv.read_csv_export(path, options)
    except InputError as exc:
        return ("error", str(exc))
    finally:
        ncu_csv.FAST_RAW = old
    return ("ok", [(t, str(df.schema), df.write_ndjson()) for t, df in sorted(p.tables.items())], json.dumps(p.metadata, sort_keys=True, default=str))


def test_column_reader_matches_row_reader_on_random_raw_exports(tmp_path):
    rng = random.Random(13)
    for i in range(60):
        p = tmp_path / f"r{i}.csv"
        p.write_text(_raw_export(rng, rng.randint(0, 12)))
        opts = ReadOptions(device="GPU X") if i % 7 == 0 else None
        assert _read(p, True, opts) == _read(p, False, opts), p.read_text()[:2000]


def test_column_reader_matches_row_reader_on_odd_files(tmp_path):
    base = '"ID","Kernel Name","gpu__time_duration.sum","launch__grid_size"\n"","","nsecond",""\n'
    cases = {
        "ragged": base + '"0","k","1","2"\n"1","k","1"\n',
        "units only": base,
        "decimal comma": base + '"0","k","1,5","27.595.520"\n"1","k","65,77","2"\n',
        "stray quote": base + '"0","k","1","2"\nprogram said "hi", bye\n',
        "long cell": base + '"0","k","' + "9" * 140_000 + '","2"\n',
        "crlf": base.replace("\n", "\r\n") + '"0","k","1","2"\r\n',
        "tool lines": '==PROF== x\n' + base + '==PROF== y\n   \n"0","k","1","2"\n',
    }
    for name, text in cases.items():
        p = tmp_path / f"{name}.csv"
        p.write_text(text)
        assert _read(p, True) == _read(p, False), name


@pytest.mark.corpus
def test_column_reader_matches_row_reader_on_corpus_raw_exports():
    files = [p for p in corpus_files("ncu-csv") if "Metric Value" not in p.read_text(errors="replace")[:5000]]
    if not files:
        pytest.skip("no raw-page ncu CSV in the corpus")
    for p in files:
        assert _read(p, True) == _read(p, False), p.name


def test_vector_cells_match_scalar_rules():
    rng = random.Random(7)
    pool = ["", " ", "n/a", "N/A", "-", "na", " 12 ", "1_000", "inf", "nan", "1.2.3", "\u0661\u0662", "+5", "-0", ".5", "5.", "1e5",
            "\x1f7\x1f", "\xa09\xa0", "9223372036854775808", "-9223372036854775808", "1,23", "65,77", "1.234,5", "27.595.520", "1,234,567.5"]
    cells = [rng.choice(pool) if rng.random() < 0.3 else repr(rng.uniform(-1e9, 1e9)) if rng.random() < 0.5 else f"{rng.random()}e{rng.randint(-330, 330)}"
             for _ in range(20_000)]
    for dc in (False, True):
        got = ncu_vector.value_frame(pl.Series(cells, dtype=pl.String), dc).rows()
        want = [ncu_csv._value(c, dc) for c in cells]
        for c, g, w in zip(cells, got, want):
            assert g[1:] == (w[1], w[2]) and (g[0] == w[0] or (g[0] != g[0] and w[0] != w[0])), (c, g, w)
    for enough in (1, 5, 20000):
        sample = [rng.choice(cells + ["1,23", "1.5"]) for _ in range(3000)]
        chunks = [pl.Series(sample[i : i + 700], dtype=pl.String) for i in range(0, len(sample), 700)]
        assert ncu_vector.number_format(chunks, enough) == nc.number_format(sample, enough)


def test_unit_factors_match_to_base():
    units = _UNITS + ["usecond", "Mbyte/second", "byte/block", "Kbyte/block", "inst/cycle", "register/thread", "hz", "Mhz", "cycles/usecond", "x/nsecond"]
    for u in units:
        for v in (0.0, 1.5, 3e300, -2.25):
            e = ncu_vector.to_base(pl.lit(v, dtype=pl.Float64), u)
            assert pl.select(e).item() == nc.to_base(v, u)[0], u


def _blowup(rows: int) -> str:
    head = '"ID","Kernel Name","gpu__time_duration.sum","launch__grid_size","dram__bytes.sum","sm__warps_active.avg.pct_of_peak_sustained_active"\n'
    head += '"","","nsecond","","byte","%"\n'
    return head + '"0","void k(float*)","1,234","4096","1048576","61.03"\n' * rows


def _child(path: Path) -> dict:
    return read_cost(path, "ncu_csv", "metrics", call="read_csv_export(path, None)")


def test_raw_blowup_reads_in_bounded_memory_and_python_work(tmp_path):
    """A 4 MB blow-up (one row repeated): peak memory a small multiple of the file (the row-by-row
    reader took about 110 MB per MB), and Python calls that do not grow with the rows."""
    small, big = tmp_path / "small.csv", tmp_path / "big.csv"
    rows = 40_000
    small.write_text(_blowup(rows))
    big.write_text(_blowup(2 * rows))
    a, b = _child(small), _child(big)
    assert a["rows"] == 4 * rows and b["rows"] == 8 * rows
    mb = big.stat().st_size / 2**20
    assert mb > 3
    grown_mb = (b["peak_kb"] - b["base_kb"]) / 1024
    assert grown_mb < 150 + 40 * mb, (grown_mb, mb)
    # 2x rows: the Python calls grow per block of 65,536 rows (polars' own wrappers), never per
    # row or cell: under one per added row (the row-by-row reader made over a hundred)
    assert b["calls"] < 3 * a["calls"]
    assert b["calls"] - a["calls"] < rows, (a["calls"], b["calls"])


def test_metric_value_limit_is_one_line(tmp_path, monkeypatch):
    p = tmp_path / "wide.csv"
    p.write_text(_blowup(100))
    monkeypatch.setattr(ncu_csv, "METRIC_VALUE_LIMIT", 399)
    with pytest.raises(InputError, match=r"400 metric values: over the 399 one file may hold"):
        ncu_csv.read_csv_export(p, None)


def test_metric_value_limit_refuses_before_reading_the_cells(tmp_path, monkeypatch):
    p = tmp_path / "wide.csv"
    p.write_text(_blowup(100))
    monkeypatch.setattr(ncu_csv, "METRIC_VALUE_LIMIT", 300)
    monkeypatch.setattr(ncu_csv.pl, "read_csv", None)  # refused from the line counts alone
    with pytest.raises(InputError, match=r"at least 400 metric values: over the 300 one file may hold"):
        ncu_csv.read_csv_export(p, None)


def _details(path: Path, rows: int) -> Path:
    head = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'
    path.write_text(head + "".join(
        f'"{i // 20}","5253","app","127.0.0.1","readOffset(float *, float *, float *, unsigned long, int)","1","7","(512, 1, 1)","(32768, 1, 1)",'
        f'"0","8.9","Command line profiler metrics","metric_{i % 20}.sum","byte","{134221952 + i}"\n' for i in range(rows)))
    return path


def test_details_export_memory_per_mb(tmp_path):
    """A `--page details` export is split into cells line by line as it is read, not into a list
    of every row's cells first (~1 KB a row: a 200 MB blow-up of one metric line, 838,861 rows,
    peaked at 1.7 GB; 0.86 GB now). What doubling the rows adds to the peak, per MB added: 9.6x
    before, 4.8x now (deterministic here: the same both times)."""
    small, big = _details(tmp_path / "a.csv", 40_000), _details(tmp_path / "b.csv", 80_000)
    a, b = (read_cost(p, "ncu_csv", "metrics") for p in (small, big))
    assert a["rows"] == 40_000 and b["rows"] == 80_000
    added_mb = (big.stat().st_size - small.stat().st_size) / 2**20
    grown_mb = ((b["peak_kb"] - b["base_kb"]) - (a["peak_kb"] - a["base_kb"])) / 1024
    assert grown_mb < 7 * added_mb, (grown_mb, added_mb)


def test_a_malformed_details_line_after_good_ones_is_one_line(tmp_path, cli):
    # cells are split as the rows are walked: csv's refusal of a late line is still the one line
    p = _details(tmp_path / "d.csv", 50)
    with open(p, "a") as f:
        # a cell past the csv module's 128 KiB field limit
        f.write('"3","5253","app","h","k","1","7","(1, 1, 1)","(1, 1, 1)","0","8.9","S","m","byte","' + "1" * 140_000 + '"\n')
    from conftest import assert_one_line_error

    assert_one_line_error(cli("summary", p), "malformed ncu CSV")
