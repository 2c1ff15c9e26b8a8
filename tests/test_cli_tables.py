"""Terminal tables fit 80-120 columns: one row per line, names shortened in the middle, the
profile column dropped for one profile, metric names whole; --wide and csv keep everything."""

from __future__ import annotations

import polars as pl
import pytest

from profaudit.cli.common import fit_cells, middle_ellipsis

LONG = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)"


def kernels_frame(n_profiles: int = 1) -> pl.DataFrame:
    rows = []
    for p in range(n_profiles):
        for i in range(3):
            rows.append({
                "profile_id": f"naive/run{p}-0123abcd", "kernel_id": i, "short_name": LONG if i == 0 else f"k{i}",
                "duration_ns": 431_648.0 + i, "grid_size": 4096, "block_size": 256, "registers_per_thread": 128,
                "dram_bytes": 134_243_200.0, "flops_total": None, "sm_clock_hz": 1.41e9, "device_name": "NVIDIA H100 80GB HBM3",
            })
    return pl.DataFrame(rows)


def test_middle_ellipsis():
    assert middle_ellipsis("ampere_sgemm_128x64_nn", 13) == "ampere…x64_nn"
    assert len(middle_ellipsis(LONG, 30)) == 30
    assert middle_ellipsis("short", 30) == "short"


@pytest.mark.parametrize("width", [80, 100, 120])
def test_kernels_table_fits_terminal(cli, tmp_path, monkeypatch, width):
    path = tmp_path / "k.parquet"
    monkeypatch.setenv("COLUMNS", str(width))
    from profaudit.cli.common import emit_frame
    import io
    from contextlib import redirect_stdout

    from profaudit.cli.kernels_cmd import DROP_ORDER

    buf = io.StringIO()
    with redirect_stdout(buf):
        emit_frame(kernels_frame(), "table", title="kernels", drop_order=DROP_ORDER["kernels"])
    lines = buf.getvalue().splitlines()
    table = lines[1:6]  # header, rule, three rows
    assert all(len(l) <= width for l in table), (width, table)
    assert lines[0].startswith("kernels: profile_id naive/run0-0123abcd, device_name NVIDIA H100 80GB HBM3")
    assert "profile_id" not in lines[1] and "k1" in lines[4]
    assert "…" in lines[3]  # the long name, shortened in the middle: both ends kept
    assert lines[3].split()[1].startswith("void") and "(Params)" in lines[3]
    assert "no values: flops_total" in buf.getvalue()


def test_wide_and_csv_keep_whole_names(cli, monkeypatch):
    import io
    from contextlib import redirect_stdout

    from profaudit.cli.common import emit_frame

    monkeypatch.setenv("COLUMNS", "80")
    buf = io.StringIO()
    with redirect_stdout(buf):
        emit_frame(kernels_frame(2), "table", wide=True)
    assert LONG in buf.getvalue() and "naive/run1-0123abcd" in buf.getvalue()
    assert all(l.count("\n") == 0 for l in buf.getvalue().splitlines())


def test_metric_names_are_never_broken(monkeypatch):
    names = ["smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", "dram__bytes_read.sum"]
    df = pl.DataFrame({"kernel_id": [0, 0], "metric": names, "unit": ["inst", "byte"], "value": [6.5, 1.0], "value_str": [None, None], "section": ["x" * 40, "y"]})
    cols, rows, hidden, empty = fit_cells(df, 60)
    j = cols.index("metric")
    assert [r[j] for r in rows] == names
    assert "value_str" in empty and hidden  # something else gave way


def test_kernels_without_kernels_points_at_samples(cli, tmp_path):
    log = tmp_path / "t.csv"
    log.write_text("benchmark,duration_ns\na,10\na,12\n")
    res = cli("kernels", log)
    assert res.code == 0
    assert "note: no kernels in these inputs; they hold 2 rows in `-t samples`" in res.err
