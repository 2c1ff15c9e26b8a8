"""Findings of the session-19 hostile-input fuzz kinds (tests/fuzz/hostile.py), each a test that
fails before its fix, and checks that the new kinds make what their labels say."""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
from pathlib import Path

import pytest

import profaudit
from profaudit.errors import InputError
from tests.conftest import assert_one_line_error
from tests.fuzz import hostile
from tests.nsys_synth import rich_db
from tests.rocpd_synth import build_app_db

MAKERS = {"nsys": rich_db, "rocpd": build_app_db}


@pytest.fixture(scope="module")
def dbs(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("dbs")
    return {k: make(d / f"{k}.sqlite") for k, make in MAKERS.items()}


def _kernels(path: Path) -> int:
    return profaudit.load(path).table("kernels").height


def _copy(src: Path, dst_dir: Path) -> Path:
    dst_dir.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(src, dst_dir / "run.sqlite"))


def _first_table_with_rows(path: Path) -> str:
    con = sqlite3.connect(path)
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        # the kernel launch table (nsys CUPTI_ACTIVITY_KIND_KERNEL, rocpd rocpd_kernel_dispatch_*)
        return max((t for t in names if "KERNEL" in t.upper()), key=lambda t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0])
    finally:
        con.close()


def _wal_copy(src: Path, dst_dir: Path) -> Path:
    """A copy taken while a writer had it open in WAL mode: half the kernel rows deleted, the
    deletion committed to the log but not yet checkpointed into the file."""
    db = _copy(src, dst_dir / "live")
    table = _first_table_with_rows(db)
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute(f'DELETE FROM "{table}" WHERE rowid % 2 = 0')
    out = _copy(db, dst_dir / "copy")
    shutil.copy(f"{db}-wal", f"{out}-wal")
    con.close()
    return out


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_wal_beside_the_database_is_refused(dbs, tmp_path, cli, kind):
    """s19: a WAL copy loaded the stale database file as whole (nsys 4 kernels, rocpd 2, where
    sqlite3 reading the same two files sees 2 and 1)."""
    db = _wal_copy(dbs[kind], tmp_path)
    # sqlite3's own view of the copy (read from a copy of it: opening folds the log in)
    view = _copy(db, tmp_path / "view")
    shutil.copy(f"{db}-wal", f"{view}-wal")
    with sqlite3.connect(view) as c:
        t = _first_table_with_rows(dbs[kind])
        assert c.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] < sqlite3.connect(dbs[kind]).execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]
    res = cli("summary", db)
    assert_one_line_error(res, "run.sqlite-wal")
    with pytest.raises(InputError, match="write-ahead log"):
        profaudit.load(db)
    # without the log the same file loads: it is the log that is refused, not the WAL-mode header
    Path(f"{db}-wal").unlink()
    assert _kernels(db) == _kernels(dbs[kind])


def test_wal_of_an_earlier_generation_is_ignored(dbs, tmp_path):
    """A log whose frames' salts do not match its header (left after a checkpoint reset it) holds
    nothing the file lacks: the database loads."""
    db = _wal_copy(dbs["nsys"], tmp_path)
    wal = bytearray(Path(f"{db}-wal").read_bytes())
    wal[16:24] = bytes(b ^ 0xFF for b in wal[16:24])  # header salts changed: every frame is old
    Path(f"{db}-wal").write_bytes(bytes(wal))
    assert _kernels(db) == _kernels(dbs["nsys"])


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_hot_rollback_journal_is_refused(dbs, tmp_path, cli, kind):
    """A writer killed mid-transaction: the file holds half the changed pages, the journal the
    old ones. sqlite3 itself rolls it back (integrity ok, every row back); profaudit read the torn
    file as whole."""
    db = _copy(dbs[kind], tmp_path)
    before = db.read_bytes()
    con = sqlite3.connect(db, isolation_level=None)
    t = _first_table_with_rows(db)
    con.execute(f'DELETE FROM "{t}" WHERE rowid % 2 = 0')
    con.close()
    torn, journal = hostile._torn_with_journal(before, db.read_bytes())
    assert journal[:8] == hostile.JOURNAL_MAGIC and torn != before
    db.write_bytes(torn)
    Path(f"{db}-journal").write_bytes(journal)
    assert_one_line_error(cli("summary", db), "run.sqlite-journal")
    # the journal is one sqlite3 rolls back: the made-up file is what a killed writer leaves
    rolled = _copy(db, tmp_path / "rolled")
    shutil.copy(f"{db}-journal", f"{rolled}-journal")
    with sqlite3.connect(rolled) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert rolled.read_bytes() == before


def test_journal_with_a_cleared_header_is_not_hot(dbs, tmp_path):
    """SQLite zeroes a journal's header at commit in PERSIST mode: such a file beside the database
    says nothing, and the database loads."""
    db = _copy(dbs["nsys"], tmp_path)
    Path(f"{db}-journal").write_bytes(b"\0" * 4096)
    assert _kernels(db) == _kernels(dbs["nsys"])


def test_a_newline_in_a_file_name_stays_one_line(tmp_path, cli):
    """s19: the error for 'bad\\nname.json' was two lines on stderr, the second looking like a
    line of its own (and a load warning the same): line breaks and terminal escapes in a path
    are written as escapes."""
    bad = tmp_path / "bad\nname\u2028x\x1b[2K.json"
    bad.write_text("not a profile")
    res = cli("summary", bad)
    assert_one_line_error(res, "bad\\nname\\u2028x\\x1b[2K.json")
    assert str(InputError(bad, "why")).count("\n") == 0


def test_a_load_warning_about_a_path_with_a_newline_stays_one_line(tmp_path, cli):
    """The incomplete-load warning names the file: one line too."""
    csv = tmp_path / "cut\nname.csv"
    csv.write_text("kernel,size,time_ms\nsoftmax,1024,0.125\nsoftmax,2048,0.25\nmatmul,1024,1.5")  # no newline at the end
    res = cli("summary", csv)
    warnings = [l for l in res.err.splitlines() if l.startswith("warning:")]
    assert warnings and all("cut\\nname.csv" in l for l in warnings), res.err
    assert not [l for l in res.err.splitlines() if l.startswith("name.csv")], res.err  # the line the newline made before


# ------------------------------------------------------------------------------------------
# the kinds make what their labels say
# ------------------------------------------------------------------------------------------
TEXT = b"name,start_ns,end_ns,value\nk1,100,200,1.5\nk2,300,450,2.5\nk3,500,650,3.5\n"


def _all_labels(fn, data: bytes, n: int = 200) -> dict[str, bytes]:
    out = {}
    for s in range(n):
        m = fn(data, random.Random(s))
        if m is not None:
            out.setdefault(m.label.split(" at ")[0].split(" (")[0], m.data)
    return out


def test_encodings_round_trip():
    made = _all_labels(hostile.encode_hostile, TEXT)
    for label, data in made.items():
        if label.startswith("encode utf-32") or label.startswith("encode utf-16"):
            enc = label.split()[1]
            text = data.decode(enc if "without" not in label or enc != "utf-32" else "utf-32-le")
            assert text.lstrip("\ufeff") == TEXT.decode(), label
            assert data[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff") or data[:2] in (b"\xff\xfe", b"\xfe\xff") or "without" in label, label
    assert {"no newline", "JSON on one line"} & {l.split(" at")[0] for l in made} or "no newline at the end" in made
    assert any("compressed under the plain name" in l for l in made)


def test_numbers_everywhere_replaces_every_number():
    for s in range(30):
        m = hostile.numbers_everywhere(TEXT, random.Random(s))
        value = m.label.split(" = ")[1].strip("'")
        rows = [r.split(",") for r in m.data.decode().splitlines()[1:]]
        # every numeric cell (9 of them) now holds the value (a value with a comma is quoted)
        assert m.data.decode().count(value) >= 9, m.label
        assert not any(c in ("100", "200", "1.5") for r in rows for c in r), m.label
    doc = {"a": [1, 2.5, {"b": -3}], "c": "4", "d": True}
    m = hostile.numbers_everywhere(json.dumps(doc).encode(), random.Random(1))
    assert '"4"' in m.data.decode() and "true" in m.data.decode() and "2.5" not in m.data.decode()


def test_records_hostile_swaps_start_and_end():
    seen = set()
    for s in range(40):
        m = hostile.records_hostile(TEXT, random.Random(s))
        if m is None:
            continue
        seen.add(m.label.split()[0] + m.label.split()[-1])
        if "swapped" in m.label:
            rows = [r.split(",") for r in m.data.decode().splitlines()[1:]]
            assert all(int(r[1]) > int(r[2]) for r in rows), m.label
    assert len(seen) == 3, seen


def test_cross_format_and_fs_kinds(tmp_path):
    donor = b'{"benchmarks": []}'
    labels = {hostile.cross_format(TEXT, donor, random.Random(s)).label.split(":")[0] for s in range(40)}
    assert labels == {"another format's file under this name", "polyglot"}
    kinds = set()
    for s in range(60):
        f = tmp_path / str(s) / "t.csv"
        f.parent.mkdir()
        f.write_bytes(TEXT)
        path, label, _ = hostile.fs_hostile(f, random.Random(s))
        kinds.add(label.split(" (")[0])
        assert path.name.endswith(".csv") and path.parent == f.parent, (path, label)
    assert {"a FIFO under the file's name", "a link to itself", "name with a newline", "a folder under the file's name"} <= kinds


TIMING_CSV = b"kernel,size,time_ms\nsoftmax,1024,0.125\nsoftmax,2048,0.25\nmatmul,1024,1.5\n"
GBENCH_JSON = json.dumps({"context": {"date": "2024-01-01", "num_cpus": 8, "mhz_per_cpu": 3000, "library_build_type": "release"},
                          "benchmarks": [{"name": "BM_x/8", "run_name": "BM_x/8", "run_type": "iteration", "iterations": 10,
                                          "real_time": 1.5, "cpu_time": 1.4, "time_unit": "ns"}]}).encode()


@pytest.mark.parametrize("name,text", [("t.csv", TIMING_CSV), ("bench.json", GBENCH_JSON)], ids=["csv", "json"])
@pytest.mark.parametrize("how", ["written", "sparse"])
def test_text_with_a_zero_filled_tail_is_refused_before_reading(tmp_path, cli, name, text, how):
    """s19: text followed by zeros (a preallocated file, or one a crash zero-filled) was read
    whole: a 1 GiB sparse copy peaked at 2.15 GB in the ncu-csv and KernelBench readers before
    their refusal, 6 GiB of ncu CSV took 86 s and 6.4 GB, a 6 GiB Chrome trace ran past 120 s;
    with 64 KiB of zeros the timing table loaded (as incomplete) and the JSON said 'invalid JSON'.
    Now the loader looks at the last 4 KiB first."""
    f = tmp_path / name
    f.write_bytes(text)
    if how == "written":
        with open(f, "ab") as fh:
            fh.write(b"\0" * 65536)
    else:
        os.truncate(f, 64 << 20)  # a hole: no disk used
    assert_one_line_error(cli("summary", f), "ends in 4,096 or more zero bytes")


def test_a_short_zero_tail_is_left_to_the_reader(tmp_path):
    """A NUL or a few (a C string's terminator written with the text) is not the damage above:
    the reader judges it as before."""
    f = tmp_path / "t.csv"
    f.write_bytes(TIMING_CSV + b"\0" * 4095)
    with pytest.raises(InputError) as exc:
        profaudit.load(f)
    assert "zero bytes (NUL): the file was preallocated" not in str(exc.value)
    f.write_bytes(TIMING_CSV)
    assert profaudit.load(f).table("samples").height == 3


def test_a_skipped_input_with_a_newline_in_its_name_is_named_once(tmp_path, cli):
    """Review F19-3: the skip warning compared the escaped message with the raw path and printed
    the name twice."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "ok.csv").write_bytes(TIMING_CSV)
    (tmp_path / "in" / "bad\nname.json").write_bytes(GBENCH_JSON[:-20])  # a Google Benchmark JSON cut short
    res = cli("ingest", tmp_path / "in", "-o", tmp_path / "ds", "--skip-bad")
    lines = [l for l in res.err.splitlines() if l.startswith("warning: skipped")]
    assert len(lines) == 1 and lines[0].count("bad\\nname.json") == 1, res.err


def test_copy_input_keeps_what_shutil_copy_cannot(tmp_path):
    """fuzz_long's reproducers: a FIFO, links (a loop, /dev/zero) copied as they are, a sparse
    file with its holes, an SQLite log beside the file with it."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir(), dst.mkdir()
    (src / "big.csv").write_bytes(TIMING_CSV)
    os.truncate(src / "big.csv", 1 << 30)
    os.mkfifo(src / "fifo.json")
    os.symlink("/dev/zero", src / "zero.json")
    os.symlink("loop.json", src / "loop.json")
    (src / "db.sqlite").write_bytes(b"db")
    (src / "db.sqlite-wal").write_bytes(b"log")
    for name in ("big.csv", "fifo.json", "zero.json", "loop.json", "db.sqlite", "gone.json"):
        hostile.copy_input(src / name, dst / name)
    big = os.stat(dst / "big.csv")
    assert big.st_size == 1 << 30 and big.st_blocks * 512 < 1 << 20
    assert (dst / "big.csv").open("rb").read(len(TIMING_CSV)) == TIMING_CSV
    assert (dst / "fifo.json").is_fifo()
    assert os.readlink(dst / "zero.json") == "/dev/zero" and os.readlink(dst / "loop.json") == "loop.json"
    assert (dst / "db.sqlite-wal").read_bytes() == b"log"
    assert not (dst / "gone.json").exists()


def _frames_equal(a, b) -> None:
    from profaudit import schema

    for t in schema.DATA_TABLES:
        assert a.table(t).drop("profile_id").equals(b.table(t).drop("profile_id")), t


@pytest.mark.parametrize("fmt", ["rocprofv3-csv", "rocprofv3-csv-dir", "rocprof-compute"])
def test_a_name_that_is_not_utf8_loads_like_any_other(tmp_path, fmt):
    """s19 hostile fuzz (rocprofv3-csv #50): polars takes paths as UTF-8 text only, and a file
    named b'caf\\xe9\\xff.csv' made it raise "TypeError: Object does not have a .read() method"
    (the catch-all) in the rocprofv3 CSV readers; rocprof-compute's folder then failed building its
    profile id. Such a name now loads the same tables as a plain one."""
    from tests.test_rocprof_compute import make_workload
    from tests.test_rocprofv3_csv import make_output

    odd = Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9\xff"))
    plain = tmp_path / "plain"
    for root in (odd, plain):
        root.mkdir()
        made = make_workload(root) if fmt == "rocprof-compute" else make_output(root)
        if fmt == "rocprofv3-csv":
            made = next(made.glob("*_kernel_trace.csv"))  # its folder's name is the odd one
        if root == odd:
            odd_input = made
        else:
            plain_input = made
    _frames_equal(profaudit.load(odd_input), profaudit.load(plain_input))


def test_other_data_with_a_zero_filled_tail_is_refused_but_not_sqlite(tmp_path, cli, dbs):
    """The same for a binary file past 1 MiB of zeros (s19: a 5 GiB sparse .xplane.pb peaked at
    5.2 GB before its refusal; a gzip's text is not looked at, so its zeros count as data), but
    not for an SQLite database, whose free pages may be zeros and whose reader reads only the
    pages it needs (a sparse 3 GiB copy of a database loads)."""
    import gzip

    gz = tmp_path / "t.csv.gz"
    gz.write_bytes(gzip.compress(TIMING_CSV))
    os.truncate(gz, 64 << 20)
    assert_one_line_error(cli("summary", gz), "data that ends in 1,048,576 or more zero bytes")
    # short of it (the gzip trailer ends in its length's zero high bytes): the reader judges
    gz.write_bytes(gzip.compress(TIMING_CSV) + b"\0" * ((1 << 20) - 16))
    assert "or more zero bytes" not in cli("summary", gz).err
    db = _copy(dbs["nsys"], tmp_path)
    os.truncate(db, 3 << 30)
    assert _kernels(db) == _kernels(dbs["nsys"])


def test_kernels_whose_name_ids_stringids_lacks_load_as_incomplete(dbs, tmp_path, cli):
    """s19: rows of StringIds deleted (a foreign key to a lost row) gave those kernels no name,
    exit 0, nothing on stderr. Now the profile says how many are unnamed (complete: false); a kernel
    whose mangled name still resolves keeps its name and counts as whole."""
    db = _copy(dbs["nsys"], tmp_path)
    with sqlite3.connect(db) as con:
        rows = con.execute('SELECT demangledName, shortName, mangledName FROM CUPTI_ACTIVITY_KIND_KERNEL').fetchall()
        gone = [r for r in rows if r[2] is None][0]  # a kernel named by ids only, no mangled name
        con.execute("DELETE FROM StringIds WHERE id IN (?, ?)", gone[:2])
    unnamed = sum(1 for r in rows if r[:2] == gone[:2])
    (p,) = list(profaudit.load(db))
    assert p.metadata.get("complete") is False
    assert p.metadata["incomplete_reason"] == f"{unnamed} kernel records in CUPTI_ACTIVITY_KIND_KERNEL name only string ids that StringIds lacks: their names are unknown"
    assert p.tables["kernels"]["name"].null_count() == unnamed
    assert f"warning: {db}: loaded as incomplete: {unnamed} kernel records" in cli("summary", db).err
    whole = _copy(dbs["nsys"], tmp_path / "whole")
    with sqlite3.connect(whole) as con:
        named = [r for r in rows if r[2] is not None][0]
        con.execute("DELETE FROM StringIds WHERE id IN (?, ?)", named[:2])
    (p,) = list(profaudit.load(whole))
    assert p.metadata.get("complete") is not False and p.tables["kernels"]["name"].null_count() == 0


def test_rocpd_dispatches_of_a_lost_kernel_symbol_load_as_incomplete(dbs, tmp_path, cli):
    """The same class in rocpd (s19): a dispatch whose kernel_id no rocpd_info_kernel_symbol row
    holds loaded with no name and no registers, exit 0, nothing said."""
    db = _copy(dbs["rocpd"], tmp_path)
    with sqlite3.connect(db) as con:
        sym = next(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_info_kernel_symbol%'"))
        disp = next(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_kernel_dispatch%'"))
        gone = con.execute(f'SELECT min(id) FROM "{sym}"').fetchone()[0]
        con.execute(f'DELETE FROM "{sym}" WHERE id = ?', (gone,))
        lost = con.execute(f'SELECT count(*) FROM "{disp}" WHERE kernel_id = ?', (gone,)).fetchone()[0]
        total = con.execute(f'SELECT count(*) FROM "{disp}"').fetchone()[0]
    assert lost
    (p,) = list(profaudit.load(db))
    assert p.metadata.get("complete") is False
    assert p.metadata["incomplete_reason"].startswith(f"{lost} of {total} kernel dispatches name a kernel symbol the database lacks")
    assert p.tables["kernels"]["name"].null_count() == lost
    assert "loaded as incomplete" in cli("summary", db).err
    (whole,) = list(profaudit.load(dbs["rocpd"]))
    assert whole.metadata.get("complete") is not False


def test_api_calls_and_nvtx_ranges_whose_name_ids_are_lost_load_as_incomplete(dbs, tmp_path):
    """The same for the CUDA API tables' nameId and NVTX's textId (an NVTX row with inline text
    needs no id)."""
    db = _copy(dbs["nsys"], tmp_path)
    with sqlite3.connect(db) as con:
        api = con.execute("SELECT nameId, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY nameId ORDER BY nameId LIMIT 1").fetchone()
        nvtx = con.execute('SELECT textId, count(*) FROM NVTX_EVENTS WHERE textId IS NOT NULL AND "text" IS NULL GROUP BY textId ORDER BY textId LIMIT 1').fetchone()
        con.execute("DELETE FROM StringIds WHERE id IN (?, ?)", (api[0], nvtx[0]))
    (p,) = list(profaudit.load(db))
    reason = p.metadata["incomplete_reason"]
    assert f"{api[1]} CUDA API calls in CUPTI_ACTIVITY_KIND_RUNTIME name only string ids" in reason
    assert f"{nvtx[1]} NVTX events in NVTX_EVENTS name only string ids" in reason
    assert "kernel records" not in reason


def test_dialect_kinds_make_what_they_say():
    import csv as _csv
    import io as _io

    doc = b'{"a": [1, 2, {"b": null, "c": true}],\n "d": "x"}\n'
    labels = {}
    for s in range(80):
        for fn, data in ((hostile.json_dialect, doc), (hostile.csv_dialect, TEXT)):
            m = fn(data, random.Random(s))
            if m is not None:
                labels.setdefault(m.label, m.data)
    assert len(labels) >= 12, sorted(labels)
    semi = labels["CSV with ';' and decimal commas"].decode()
    rows = list(_csv.reader(_io.StringIO(semi), delimiter=";"))
    assert rows[0] == TEXT.decode().splitlines()[0].split(",") and rows[1][3] == "1,5"
    assert labels["JSON with Python's True/False/None"] == doc.replace(b"null", b"None").replace(b"true", b"True")
    with pytest.raises(ValueError):
        json.loads(labels["JSON with unquoted keys"])


def test_a_kernel_trace_whose_name_leaves_no_room_for_its_companions_loads(tmp_path):
    """s19 hostile fuzz (xplane #382): a rocprofv3 kernel trace named with 250 bytes looked for
    '<name>marker_api_trace.csv' beside it, a name longer than any file's, and is_file's OSError
    (ENAMETOOLONG) reached the catch-all. No such companion can exist: the trace loads alone."""
    from tests.test_rocprofv3_csv import make_output

    trace = next(make_output(tmp_path / "src").glob("*_kernel_trace.csv"))
    long = tmp_path / ("k" * 246 + ".csv")
    long.write_bytes(trace.read_bytes())
    alone = tmp_path / "alone" / "k.csv"
    alone.parent.mkdir()
    alone.write_bytes(trace.read_bytes())
    _frames_equal(profaudit.load(long), profaudit.load(alone))


def test_an_sqlite_database_under_another_formats_name_is_not_spared(dbs, tmp_path, cli):
    """s19 hostile fuzz (xplane #212, seed 1903): an SQLite database under an .xplane.pb name,
    made a 5 GiB sparse file, was spared the zero-tail check for being SQLite, then read whole by
    the xplane reader (5.2 GB) to be refused at its first byte. Only a database read as one is
    spared."""
    f = tmp_path / "run.xplane.pb"
    f.write_bytes(dbs["nsys"].read_bytes())
    os.truncate(f, 64 << 20)
    assert_one_line_error(cli("summary", f), "data that ends in 1,048,576 or more zero bytes")
