"""Nsight Systems SQLite exports: every corpus file against hand-written SQL on the same file, the
paths the corpus lacks on hand-built files, and bad input (one line, exit 2)."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import polars as pl
import pytest

import profaudit
from conftest import assert_one_line_error, corpus_files, corpus_ids, run_cli
from nsys_synth import PID_A, PID_B, make_db, rich_db
from profaudit.errors import InputError
from profaudit.parsers import find_parser, nsys_sqlite, probe

SQLITES = corpus_files("nsys-sqlite", "*.sqlite")
CORRUPT_NAME = "Zyyeric__mini-aegaeon__nsys_qwen3_local.sqlite"
GOOD = [p for p in SQLITES if p.name != CORRUPT_NAME]
CORRUPT = [p for p in SQLITES if p.name == CORRUPT_NAME]

K, RT, MC, MS, NV = "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET", "NVTX_EVENTS"


def q(path: Path, sql: str, params=()) -> list[tuple]:
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def tables_of(path: Path) -> set[str]:
    return {r[0] for r in q(path, "SELECT name FROM sqlite_master WHERE type='table'")}


def load_one(path: Path):
    ps = profaudit.load(path, parallel=False)
    assert len(ps) == 1
    return next(iter(ps))


@pytest.mark.corpus
@pytest.mark.parametrize("path", GOOD, ids=corpus_ids(GOOD))
def test_corpus_kernels_match_hand_sql(path):
    p = load_one(path)
    k = p.kernels
    assert p.metadata["source"] == "nsys" and p.metadata["format"] == "nsys-sqlite"
    if K not in tables_of(path):
        assert k.height == 0
        return
    n, total, lo, hi = q(path, f"SELECT count(*), sum(end - start), min(end - start), max(end - start) FROM {K}")[0]
    assert k.height == n
    assert k["duration_ns"].sum() == total
    assert k["duration_ns"].min() == lo and k["duration_ns"].max() == hi
    # every launch, by its identity, with the name StringIds gives it
    want = sorted(q(path, f"""SELECT k.start, k.end, k.correlationId, k.streamId, k.gridX * k.gridY * k.gridZ, k.blockX * k.blockY * k.blockZ,
                                      k.registersPerThread, k.staticSharedMemory + k.dynamicSharedMemory, d.value, s.value
                               FROM {K} k LEFT JOIN StringIds d ON d.id = k.demangledName LEFT JOIN StringIds s ON s.id = k.shortName"""))
    got = sorted(k.select("start_ns", "end_ns", "correlation_id", "stream", "grid_size", "block_size", "registers_per_thread", "shared_mem_bytes", "name", "short_name").iter_rows())
    assert got == want
    pids = {r[0] for r in q(path, f"SELECT DISTINCT (globalPid >> 24) & 16777215 FROM {K}")}
    assert set(k["process_id"].unique().to_list()) == pids
    assert k["kernel_id"].to_list() == list(range(k.height))
    assert k["start_ns"].is_sorted()
    if "mangledName" in {r[1] for r in q(path, f"PRAGMA table_info({K})")}:
        mangled = sorted((r[0] or "") for r in q(path, f"SELECT s.value FROM {K} k LEFT JOIN StringIds s ON s.id = k.mangledName"))
        assert sorted(x or "" for x in k["mangled_name"].to_list()) == mangled
    else:
        assert k["mangled_name"].null_count() == k.height  # never invented


@pytest.mark.corpus
@pytest.mark.parametrize("path", GOOD, ids=corpus_ids(GOOD))
def test_corpus_device_names_match_hand_sql(path):
    p = load_one(path)
    t = tables_of(path)
    if "TARGET_INFO_GPU" in t:
        names = {r[0] for r in q(path, "SELECT name FROM TARGET_INFO_GPU") if r[0]}
    elif "TARGET_INFO_CUDA_GPU" in t:
        names = {r[0] for r in q(path, "SELECT name FROM TARGET_INFO_CUDA_GPU") if r[0]}
    else:
        names = set()
    assert set(g["name"] for g in p.metadata.get("gpus", []) if g.get("name")) == names
    if p.kernels.height:
        assert set(p.kernels["device_name"].drop_nulls().unique().to_list()) <= names
        assert p.metadata["device_name"] in names
    if not names:
        assert p.metadata.get("device_name") is None


@pytest.mark.corpus
@pytest.mark.parametrize("path", GOOD, ids=corpus_ids(GOOD))
def test_corpus_transfers_match_hand_sql(path):
    p = load_one(path)
    tr = p.transfers
    t = tables_of(path)
    expected = 0
    if MC in t:
        rows = q(path, f"SELECT copyKind, count(*), sum(bytes), sum(end - start) FROM {MC} GROUP BY copyKind")
        expected += sum(r[1] for r in rows)
        labels = dict(q(path, "SELECT id, name FROM ENUM_CUDA_MEMCPY_OPER")) if "ENUM_CUDA_MEMCPY_OPER" in t else {1: "CUDA_MEMCPY_KIND_HTOD", 2: "CUDA_MEMCPY_KIND_DTOH", 8: "CUDA_MEMCPY_KIND_DTOD"}
        mem = tr.filter(pl.col("kind") == "memcpy")
        for kind, n, nbytes, dur in rows:
            short = re.sub(r"^CUDA_MEMCPY_KIND_", "", labels[kind])  # e.g. HTOD
            want = f"{short[0]}to{short[-1]}"
            sel = mem.filter(pl.col("direction") == want)
            assert sel.height == n and sel["bytes"].sum() == nbytes and sel["duration_ns"].sum() == dur
        # throughput is bytes over duration
        ok = mem.filter(pl.col("duration_ns") > 0)
        assert ((ok["throughput_bytes_per_s"] - ok["bytes"] * 1e9 / ok["duration_ns"]).abs() < 1e-6).all()
    if MS in t:
        expected += q(path, f"SELECT count(*) FROM {MS}")[0][0]
    assert tr.height == expected


@pytest.mark.corpus
@pytest.mark.parametrize("path", GOOD, ids=corpus_ids(GOOD))
def test_corpus_ranges_match_hand_sql(path):
    p = load_one(path)
    r = p.ranges
    t = tables_of(path)
    nvtx = r.filter(pl.col("kind").str.starts_with("nvtx"))
    if NV in t:
        want = q(path, f"SELECT count(*) FROM {NV} WHERE eventType IN (59, 60, 70, 71)")[0][0]
        assert nvtx.height == want
        names = sorted(x[0] for x in q(path, f"SELECT coalesce(s.value, n.text) FROM {NV} n LEFT JOIN StringIds s ON s.id = n.textId WHERE eventType IN (59, 60, 70, 71)"))
        assert sorted(nvtx["name"].to_list()) == names
    else:
        assert nvtx.height == 0
    api = r.filter(pl.col("kind").is_in(["cuda_runtime", "cuda_driver"]))
    if RT in t:
        raw = q(path, f"SELECT s.value, count(*) FROM {RT} r JOIN StringIds s ON s.id = r.nameId GROUP BY s.value")
        want: dict[str, int] = {}
        for name, n in raw:
            clean = re.sub(r"_v\d{4,5}$", "", name)
            want[clean] = want.get(clean, 0) + n
        assert dict(api.group_by("name").len().iter_rows()) == want
        assert api.height == q(path, f"SELECT count(*) FROM {RT}")[0][0]
        assert not api["name"].str.contains(r"_v\d{4,5}$").any()
        runtime = api.filter(pl.col("kind") == "cuda_runtime")["name"]
        assert runtime.str.starts_with("cuda").all()
    else:
        assert api.height == 0
    assert r["range_id"].n_unique() == r.height
    assert (r["depth"] >= 0).all()


@pytest.mark.corpus
def test_corpus_nvtx_domains_and_nesting():
    path = next((p for p in GOOD if p.name.startswith("LeiWang1999")), None)
    if path is None:
        pytest.skip("LeiWang1999 export not in corpus")
    p = load_one(path)
    nv = p.ranges.filter(pl.col("kind") == "nvtx_push_pop")
    # the TensorRT domain is created in the same process (eventType 75)
    assert set(nv["domain"].unique().to_list()) == {"TensorRT"}
    outer = nv.filter(pl.col("name") == "ExecutionContext::execute")
    assert outer.height == 1 and outer["depth"][0] == 0
    inner = nv.filter(pl.col("name") != "ExecutionContext::execute")
    assert (inner["depth"] == 1).all() and (inner["parent_range_id"] == outer["range_id"][0]).all()


@pytest.mark.corpus
@pytest.mark.parametrize("path", GOOD, ids=corpus_ids(GOOD))
def test_corpus_metadata(path):
    p = load_one(path)
    md = p.metadata
    t = tables_of(path)
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if table in t:
            assert md["tool_version"] == dict(q(path, f"SELECT name, value FROM {table}"))["EXPORT_PRODUCT_VERSION"]
            break
    if "TARGET_INFO_SESSION_START_TIME" in t:
        assert md["session_start_utc_ns"] == q(path, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME")[0][0]
        assert md["capture_time"].startswith(q(path, "SELECT utcTime FROM TARGET_INFO_SESSION_START_TIME")[0][0])
    if "TARGET_INFO_SYSTEM_ENV" in t:
        env = dict(q(path, "SELECT name, value FROM TARGET_INFO_SYSTEM_ENV"))
        assert md["driver_version"] == env.get("NvDriverVersion")
    if "META_DATA_CAPTURE" in t:
        cmd = dict(q(path, "SELECT name, value FROM META_DATA_CAPTURE")).get("PROCESS_0:COMMAND")
        if cmd:
            assert md["command_line"].startswith(cmd)


def test_corpus_mismatched_pair_is_a_different_run():
    a = next((p for p in GOOD if p.name == "lockfuehrer__beast_ressoruces__report1.sqlite"), None)
    b = next((p for p in GOOD if p.name == "lockfuehrer__beast_ressoruces__report1__overwritten_later.sqlite"), None)
    if a is None or b is None:
        pytest.skip("lockfuehrer pair not in corpus")
    pa, pb = load_one(a), load_one(b)
    assert pa.profile_id != pb.profile_id
    assert (pa.kernels.height, pb.kernels.height) == (2254, 22)


# ---------------------------------------------------------------------------------------- hand-built files

@pytest.fixture
def rich(tmp_path):
    return load_one(rich_db(tmp_path / "rich.sqlite"))


def test_devices_follow_cuda_visible_devices_renumbering(rich):
    k = rich.kernels
    a = k.filter(pl.col("process_id") == PID_A)
    b = k.filter(pl.col("process_id") == PID_B)
    # CUDA ordinal 0 is GPU 1 (H100) in process a, GPU 0 (A100) in process b
    assert set(a["device_id"]) == {1} and set(a["device_name"]) == {"NVIDIA H100 80GB HBM3"}
    assert set(b["device_id"]) == {0} and set(b["device_name"]) == {"NVIDIA A100-SXM4-80GB"}
    assert rich.metadata["device_count"] == 2
    assert set(rich.transfers["device_id"]) == {1}


def test_names_sizes_and_process_names(rich):
    k = rich.kernels.sort("kernel_id")
    first = k.row(0, named=True)
    assert first["name"] == "void gemm<float>(float *, int)" and first["short_name"] == "gemm" and first["mangled_name"] == "_Z4gemmIfEvPfi"
    assert first["grid_size"] == 8 and first["block_size"] == 128 and first["shared_mem_bytes"] == 3072
    assert first["module"] == "python" and first["duration_ns"] == 500.0
    assert k.filter(pl.col("name") == "relu_kernel(float *)")["mangled_name"].null_count() == 2


def test_nvtx_domains_are_per_process_and_ranges_nest(rich):
    r = rich.ranges
    nv = r.filter(pl.col("kind") == "nvtx_push_pop")
    dom = {(row["process_id"], row["name"], row["start_ns"]): row["domain"] for row in nv.iter_rows(named=True)}
    assert dom[(PID_A, "step", 800)] == "dom_a"
    assert dom[(PID_B, "step", 4000)] == "dom_b"  # same domainId 1, other process, other name
    assert dom[(PID_A, "layer", 880)] is None  # default domain
    by = {row["name"] + str(row["process_id"]): row for row in nv.iter_rows(named=True)}
    assert by[f"step{PID_A}"]["depth"] == 1  # inside the start/end range "epoch" on the same thread
    assert by[f"forward{PID_A}"]["parent_range_id"] == by[f"step{PID_A}"]["range_id"]
    assert by[f"layer{PID_A}"]["depth"] == 3 and by[f"layer{PID_A}"]["parent_range_id"] == by[f"forward{PID_A}"]["range_id"]
    assert by[f"step{PID_B}"]["end_ns"] is None and by[f"step{PID_B}"]["duration_ns"] is None  # never closed
    assert r.filter(pl.col("kind") == "nvtx_start_end")["name"].to_list() == ["epoch"]
    assert "mark" not in r["name"].to_list()


def test_api_kinds_and_kernel_nvtx_attribution(rich):
    r = rich.ranges
    api = r.filter(pl.col("kind").is_in(["cuda_runtime", "cuda_driver"]))
    assert dict(api.group_by("kind").len().iter_rows()) == {"cuda_runtime": 4, "cuda_driver": 1}
    assert set(api["name"]) == {"cudaLaunchKernel", "cuLaunchKernel"}
    k = rich.kernels
    got = {(row["process_id"], row["correlation_id"]): row["nvtx_range"] for row in k.iter_rows(named=True)}
    assert got == {(PID_A, 101): "layer", (PID_A, 103): "forward", (PID_A, 105): None, (PID_B, 101): "step"}


def test_transfers_without_enum_tables(rich):
    tr = rich.transfers.sort("start_ns")
    assert tr["kind"].to_list() == ["memcpy", "memcpy", "memset"]
    assert tr["direction"].to_list() == ["HtoD", "DtoH", None]
    assert tr["src_kind"].to_list() == ["Pageable", "Device", None]
    assert tr["dst_kind"].to_list() == ["Device", "Pinned", "Device"]
    assert tr["bytes"].to_list() == [4096.0, 2048.0, 1024.0]
    assert tr["throughput_bytes_per_s"].to_list() == [4096 / 200e-9, 2048 / 100e-9, 1024 / 50e-9]


def test_gpu_metrics_units_and_signed_bug(rich):
    c = rich.counters
    sm = c.filter(pl.col("counter") == "sm_clock_hz").sort("timestamp_ns")
    # stored as Hz under an MHz label, one sample wrapped negative: read back as unsigned 32-bit
    assert sm["value"].to_list() == [1.41e9, 2.52e9, 1.98e9] and set(sm["unit"]) == {"Hz"}
    sys_clk = c.filter(pl.col("counter") == "sys_clock_hz").sort("timestamp_ns")
    assert sys_clk["value"].to_list() == [1.5e9, 1.512e9, None]  # MHz scaled; the garbage negative dropped
    assert c.filter(pl.col("counter") == "sm_active_pct")["value"].to_list() == [0.0, 87.0, 100.0]
    assert c.filter(pl.col("raw_name") == "PCIe RX Throughput [Throughput %]")["counter"].to_list() == ["PCIe RX Throughput [Throughput %]"]
    notes = " ".join(rich.metadata["notes"])
    assert "signed/unsigned" in notes and "already Hz" in notes


def test_metadata_of_hand_built_file(rich):
    md = rich.metadata
    assert md["tool_version"] == "2024.5.1.113" and md["nsys_export_schema_version"] == "3.11.1"
    assert md["driver_version"] == "550.54.15" and md["cuda_version"] == "12.4" and md["host"] == "node7"
    assert md["command_line"] == "python train.py --steps 3"
    assert md["capture_time"] == "2023-11-14T22:13:20.123456789Z"


def test_missing_columns_read_as_null(tmp_path):
    """A 2020-style kernel table: no correlation, no names table, no mangled or dynamic-smem column."""
    db = make_db(tmp_path / "old.sqlite", {
        "StringIds": ("id INTEGER, value TEXT", [(1, "void k<1>(int)")]),
        K: ("start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, demangledName INTEGER, gridX INTEGER", [(10, 30, 0, 7, 1, 2), (40, 45, 0, 7, 1, 3)]),
    })
    p = load_one(db)
    k = p.kernels
    assert k.height == 2 and k["short_name"].to_list() == ["k", "k"]  # computed from the demangled name
    assert k["correlation_id"].null_count() == 2 and k["grid_size"].null_count() == 2 and k["block_x"].null_count() == 2
    assert k["device_name"].null_count() == 2 and p.metadata.get("device_name") is None


def test_text_in_integer_column_falls_back(tmp_path):
    db = make_db(tmp_path / "odd.sqlite", {
        "StringIds": ("id INTEGER, value TEXT", [(1, "kern")]),
        K: ("start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, demangledName INTEGER, shortName INTEGER", [(10, 30, 0, 7, 1, 1), (40, 45, "zero", 7, 1, 1)]),
    })
    k = load_one(db).kernels.sort("start_ns")
    assert k["device_id"].to_list() == [0, None] and k["duration_ns"].to_list() == [20.0, 5.0]


def test_many_chunks_keep_every_row(tmp_path, monkeypatch):
    monkeypatch.setattr(nsys_sqlite, "_CHUNK_ROWS", 7)
    rows = [(i * 10, i * 10 + 5, 0, 1, 7, i, 0, 1, 1, None, 8, 1, 1, 1, 32, 1, 1, 0, 0) for i in range(100)]
    db = make_db(tmp_path / "chunks.sqlite", {"StringIds": ("id INTEGER, value TEXT", [(1, "k")]), K: (__import__("nsys_synth").KERNEL_DDL, rows)})
    con = sqlite3.connect(db)
    con.execute(f"DELETE FROM {K} WHERE correlationId % 9 = 0")  # holes in the rowid range
    con.commit()
    con.close()
    k = load_one(db).kernels
    assert sorted(k["correlation_id"].to_list()) == [i for i in range(100) if i % 9]


# ---------------------------------------------------------------------------------------- bad input

@pytest.mark.corpus
@pytest.mark.parametrize("path", CORRUPT, ids=corpus_ids(CORRUPT))
def test_corpus_corrupt_sqlite_is_one_line(path):
    res = run_cli("kernels", path)
    assert_one_line_error(res, "header page is all zeros")
    with pytest.raises(InputError):
        profaudit.load(path)


def _copy_truncated(src: Path, dst: Path, size: int) -> Path:
    dst.write_bytes(src.read_bytes()[:size])
    return dst


@pytest.mark.parametrize("cut", ["half", "partial_page", "header_only"])
def test_truncated_sqlite_is_one_line(tmp_path, cut):
    src = rich_db(tmp_path / "whole.sqlite")
    size = src.stat().st_size
    n = {"half": size // 2 // 4096 * 4096, "partial_page": size - 100, "header_only": 60}[cut]
    bad = _copy_truncated(src, tmp_path / f"cut_{cut}.sqlite", n)
    res = run_cli("kernels", bad)
    assert_one_line_error(res, "truncated SQLite database")


@pytest.mark.corpus
@pytest.mark.parametrize("path", GOOD[:3], ids=corpus_ids(GOOD[:3]))
def test_truncated_corpus_copy_is_one_line(tmp_path, path):
    bad = _copy_truncated(path, tmp_path / path.name, path.stat().st_size // 3)
    assert_one_line_error(run_cli("kernels", bad), "truncated")


def test_damaged_page_inside_is_one_line(tmp_path):
    src = rich_db(tmp_path / "whole.sqlite")
    data = bytearray(src.read_bytes())
    for off in range(4096, len(data)):  # every page after the schema page
        data[off] = 0xA5
    bad = tmp_path / "scribbled.sqlite"
    bad.write_bytes(bytes(data))
    res = run_cli("kernels", bad)
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1 and "Traceback" not in res.err


def test_text_file_named_sqlite_is_one_line(tmp_path):
    bad = tmp_path / "notes.sqlite"
    bad.write_text("these are my notes about the profile\n")
    assert_one_line_error(run_cli("kernels", bad), "not an SQLite database: it starts with text")


def test_other_sqlite_database_is_one_line(tmp_path):
    # Not claimed (a folder may hold unrelated SQLite files), so the loader says it is unrecognised;
    # read directly, the parser says what is missing.
    db = make_db(tmp_path / "app.sqlite", {"users": ("id INTEGER, name TEXT", [(1, "ann")])})
    assert_one_line_error(run_cli("kernels", db), "not a recognised profile")
    with pytest.raises(InputError, match="without Nsight Systems tables"):
        nsys_sqlite.PARSER.read(db, nsys_sqlite.ReadOptions())


def test_sniff_claims_nsys_exports_only(tmp_path):
    good = rich_db(tmp_path / "r.db")
    assert find_parser(good) is nsys_sqlite.PARSER
    other = make_db(tmp_path / "other.db", {"users": ("id INTEGER", [(1,)])})
    assert not nsys_sqlite.PARSER.sniff(probe(other))
    renamed = tmp_path / "capture.bin"
    shutil.copy(good, renamed)
    assert find_parser(renamed) is nsys_sqlite.PARSER  # content, not suffix


def test_input_is_never_written(tmp_path):
    src = rich_db(tmp_path / "ro.sqlite")
    src.chmod(0o444)
    before = src.read_bytes()
    load_one(src)
    assert src.read_bytes() == before
    assert sorted(x.name for x in tmp_path.iterdir()) == ["ro.sqlite"]  # no journal or -wal/-shm files
