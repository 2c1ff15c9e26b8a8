"""One test per finding of tools/fuzz_surfaces.py (the user inputs around profiles: claim files,
batch audits, compare-pairs CSVs, datasets, device-spec files, dashboard uploads). Each failed
before its fix: the input reached the internal-error catch-all, or a message showed the server's
upload folder."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from tests.conftest import assert_one_line_error

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "device_specs" / "rtx-a6000.yaml"


# -- compare-pairs CSV -------------------------------------------------------------------------------
def test_pairs_row_with_more_cells_than_the_header_is_one_line(tmp_path, cli):
    # fuzz_surfaces pairs #1 (seed 0): a comma inserted into an unquoted path; csv.DictReader keeps
    # the extra cells as a list under the key None and `.strip()` on it was an AttributeError
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("name,baseline,candidate\npair0,/data/a,b.jsonl,/data/c.jsonl\n")
    res = cli("compare-pairs", pairs)
    assert_one_line_error(res, "row 1: 4 fields, the header has 3")
    assert str(pairs) in res.err


# -- device-spec files --------------------------------------------------------------------------------
def _spec_with(tmp_path: Path, **changes) -> Path:
    doc = yaml.safe_load(SPEC.read_text())
    doc.update(changes)
    p = tmp_path / "spec.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


@pytest.mark.parametrize("value", [-1, 3.5, {"a": "b"}])
def test_spec_match_patterns_not_a_list_is_one_line(tmp_path, cli, value):
    # fuzz_surfaces spec #1 (seed 0): match_patterns = -1 -> "TypeError: 'int' object is not iterable"
    res = cli("devices", "--spec", _spec_with(tmp_path, match_patterns=value))
    assert_one_line_error(res, "match_patterns must be a list")


def test_spec_match_patterns_string_is_not_taken_letter_by_letter(tmp_path, cli):
    # a bare string used to iterate into one-letter patterns ('r', 't', 'x', ...) that match
    # almost any device name: now refused like any other non-list
    res = cli("devices", "--spec", _spec_with(tmp_path, match_patterns="rtx"))
    assert_one_line_error(res, "match_patterns must be a list")


def test_spec_regex_nested_thousands_deep_is_one_line(tmp_path, cli):
    # re.compile raises RecursionError (not re.error) on 5,000 nested groups
    res = cli("devices", "--spec", _spec_with(tmp_path, match_patterns=["(" * 5000 + "x" + ")" * 5000]))
    assert_one_line_error(res, "match_patterns[0] is not a usable regular expression")


# -- dashboard uploads ----------------------------------------------------------------------------
def test_uploaded_claims_audit_error_does_not_show_the_upload_folder(tmp_path):
    # fuzz_surfaces upload #2 (seed 0): the Audit page shows str(exc) of the audit's InputError,
    # which named <upload folder>/claim.yml and the evidence inside it
    pytest.importorskip("dash")
    from profaudit.dashboards.state import DashboardState
    from profaudit.dashboards.uploads import store_uploads
    from profaudit.errors import InputError

    up = tmp_path / "srv" / "uploads"
    st = DashboardState(upload_dir=up)
    claim = b"baseline: {timings: base.jsonl}\ncandidate: {timings: cand.jsonl}\nspeedup: 2\n"
    url = "data:application/x-yaml;base64," + base64.b64encode(claim).decode()
    res = store_uploads(st, [url], ["claim.yml"])
    assert res[0].ok, res
    (cid,) = list(st.claims)
    with pytest.raises(InputError) as info:
        st.audit(cid, None, None)
    text = str(info.value)
    assert "claim.yml" in text and "base.jsonl" in text  # the visitor's own names stay
    assert str(up) not in text and str(tmp_path) not in text
    # the cached failure says the same the second time
    with pytest.raises(InputError) as again:
        st.audit(cid, None, None)
    assert str(again.value) == text


# -- paths and URLs read from files -------------------------------------------------------------------
def test_pairs_path_with_a_nul_is_the_rows_error_not_the_catch_all(tmp_path, cli):
    # fuzz_surfaces pairs #2/#3 (seed 13): a NUL in a listed path reached os.stat, whose ValueError
    # ("embedded null byte") was the internal-error catch-all for the whole batch
    pairs = tmp_path / "pairs.csv"
    pairs.write_bytes(b'baseline,candidate\n"a\x00b",/dev/null\n')
    out = tmp_path / "v.json"
    res = cli("compare-pairs", pairs, "-f", "json", "-o", out)
    assert res.code == 2 and "internal error" not in res.err, res
    import json

    (row,) = json.loads(out.read_text())
    assert row["comparable"] == "error" and "a path cannot hold a NUL character" in row["error"]


def test_load_of_a_path_with_a_nul_is_an_input_error():
    from profaudit.errors import InputError
    from profaudit.loader import load

    with pytest.raises(InputError, match="cannot hold a NUL"):
        load(["/tmp/a\x00b.jsonl"])


@pytest.mark.parametrize("url, needle", [
    ("zip://x::{tmp}", "cannot open: Is a directory"),
    ("zip://x::{tmp}/not.zip", "cannot open: BadZipFile"),
    ("ftp://127.0.0.1:1/ds", "cannot open: Connection refused"),
])
def test_dataset_url_that_fsspec_cannot_open_is_one_line(tmp_path, cli, url, needle):
    # found by hand beside fuzz_surfaces' dataset URLs: fsspec file systems that open or connect in
    # their constructor raised IsADirectoryError / BadZipFile / ConnectionRefusedError (exit 3)
    pytest.importorskip("fsspec")
    (tmp_path / "not.zip").write_text("not a zip")
    url = url.format(tmp=tmp_path)
    for args in (("dataset", "info", url), ("kernels", url)):
        assert_one_line_error(cli(*args), needle)


# -- damaged layout-1 datasets ----------------------------------------------------------------------
@pytest.fixture
def layout_1(tmp_path):
    from profaudit.profile import ProfileSet
    from tests.test_dataset_v2 import _profile, _write_layout_1

    return _write_layout_1(ProfileSet([_profile("a", 3), _profile("b", 2)]), tmp_path / "old")


def test_layout_1_info_of_a_part_cut_or_replaced_by_a_folder_is_one_line(layout_1, cli):
    # fuzz_surfaces dataset #1 and #14 (seed 2026): `dataset info` read each part's footer through
    # pyarrow, whose OSError ("is a directory", "Couldn't deserialize thrift") was the catch-all
    part = layout_1 / "kernels" / "profile_id=a" / "part-0.parquet"
    data = part.read_bytes()
    part.write_bytes(data[: len(data) - 40] + b"\x0f" * 40)
    assert_one_line_error(cli("dataset", "info", layout_1), "part-0.parquet: unreadable Parquet part")
    part.unlink()
    part.mkdir()
    assert_one_line_error(cli("dataset", "info", layout_1), "part-0.parquet: unreadable Parquet part")


def test_layout_1_metadata_json_of_the_wrong_shape_is_one_line(layout_1, cli):
    # found by a metadata/marker type sweep beside fuzz_surfaces: dict() of a list was a TypeError
    # at the catch-all
    (layout_1 / "metadata.json").write_text('{"a": [1, 2], "b": 3}')
    assert_one_line_error(cli("kernels", layout_1), "the metadata of 'a' is not a mapping")
    (layout_1 / "metadata.json").write_text("[1]")
    assert_one_line_error(cli("kernels", layout_1), "expected a mapping of profile id to metadata")


# -- dashboard .zip uploads -----------------------------------------------------------------------------
@pytest.mark.parametrize("members, needle", [
    ([("d/" + "a" * 300 + ".jsonl", b"x")], "(File name too long)"),
    ([("d/x.jsonl", b"x"), ("d/x.jsonl/", b"")], "the archive holds 'd/x.jsonl/' twice, or as both a file and a folder"),
    ([("d/x", b"x"), ("d/x/y.jsonl", b"x")], "the archive holds 'd/x/y.jsonl' twice, or as both a file and a folder"),
])
def test_zip_upload_whose_members_cannot_be_unpacked_is_a_refusal_line(tmp_path, members, needle):
    # found by hand beside fuzz_surfaces' uploads: a member name over 255 bytes (ENAMETOOLONG), a
    # folder member where a file was unpacked (FileExistsError from mkdir, outside the try) were
    # shown as "cannot load: OSError: ..." / "FileExistsError: ..." (the upload's catch-all)
    pytest.importorskip("dash")
    import io
    import zipfile

    from profaudit.dashboards.state import DashboardState
    from profaudit.dashboards.uploads import store_uploads

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members:
            zf.writestr(name, data)
    up = tmp_path / "srv" / "uploads"
    st = DashboardState(upload_dir=up)
    (res,) = store_uploads(st, ["data:application/zip;base64," + base64.b64encode(buf.getvalue()).decode()], ["run.zip"])
    assert not res.ok and res.text.startswith("run.zip: not stored: ") and needle in res.text, res.text
    assert "Error" not in res.text and str(tmp_path) not in res.text
    assert [p.name for p in up.iterdir()] == []  # nothing half-unpacked is left


# -- damaged layout-2 datasets ----------------------------------------------------------------------
def test_compact_of_a_part_holding_another_tables_rows_is_one_line(tmp_path, cli):
    # fuzz_surfaces dataset #24 (seed 2026): a batch's samples and metadata parts swapped; reading
    # said "damaged dataset", but `dataset compact` reached schema.conform's ValueError (exit 3)
    from profaudit.dataset import write_dataset
    from profaudit.profile import ProfileSet
    from tests.test_dataset_v2 import _profile

    ds = tmp_path / "ds"
    write_dataset(ProfileSet([_profile("a", 3)]), ds)
    write_dataset(ProfileSet([_profile("b", 2)]), ds)
    k = sorted(ds.glob("kernels/batch=*/*.parquet"))[0]
    m = sorted(ds.glob("metadata/batch=*/*.parquet"))[0]
    kb, mb = k.read_bytes(), m.read_bytes()
    k.write_bytes(mb)
    m.write_bytes(kb)
    res = cli("dataset", "compact", ds)
    assert_one_line_error(res, "part file does not hold the")
    assert k.name in res.err or m.name in res.err


@pytest.mark.parametrize("field, value, cmd", [
    ("rows", None, "info"), ("rows", "12", "info"), ("rows", -5, "info"),
    ("bytes", None, "compact"), ("bytes", {}, "compact"),
])
def test_manifest_file_counts_of_the_wrong_type_are_one_line(tmp_path, cli, field, value, cmd):
    # a manifest type sweep beside fuzz_surfaces: `dataset info` summed files[].rows, compaction
    # files[].bytes, unchecked: "TypeError: unsupported operand type(s) for +=: 'int' and 'NoneType'"
    import json

    from profaudit.dataset import write_dataset
    from profaudit.profile import ProfileSet
    from tests.test_dataset_v2 import _profile

    ds = tmp_path / "ds"
    write_dataset(ProfileSet([_profile("a", 3)]), ds)
    write_dataset(ProfileSet([_profile("b", 2)]), ds)
    man = sorted((ds / "_manifests").glob("*.json"))[0]
    doc = json.loads(man.read_text())
    doc["files"][0][field] = value
    man.write_text(json.dumps(doc))
    assert_one_line_error(cli("dataset", cmd, ds), f"broken batch manifest: files[0].{field}: expected a whole number >= 0")


def test_spec_file_that_is_a_fifo_is_refused_without_blocking(tmp_path, cli):
    # fuzz_surfaces spec #37 (seed 2026): a FIFO named spec.yaml; `devices --spec` blocked in open()
    import os

    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    assert_one_line_error(cli("devices", "--spec", fifo), "not a regular file")


def test_spec_nested_1500_deep_is_one_line(tmp_path, cli):
    # fuzz_surfaces spec #31 (seed 2026): JSON nested 1,500 deep in a field: RecursionError (exit 3)
    p = tmp_path / "spec.yaml"
    p.write_text(SPEC.read_text().replace("schema_version: 1", "schema_version: 1\nnotes: " + "[" * 1500 + "1" + "]" * 1500, 1))
    assert_one_line_error(cli("devices", "--spec", p), "nested more than 100 levels deep")


# -- claim files and batch audits ---------------------------------------------------------------------
LOGS = REPO / "sample_reports" / "claims" / "logs" / "softmax"


def test_claim_evidence_name_over_255_bytes_is_one_line(tmp_path, cli):
    # fuzz_surfaces batch #37 (seed 2026): Path.exists() raised OSError ENAMETOOLONG (exit 3)
    claim = tmp_path / "c.yaml"
    claim.write_text(f"baseline: {{timings: {'a' * 300}.jsonl}}\ncandidate: {{timings: {'b' * 300}.jsonl}}\n")
    assert_one_line_error(cli("audit", claim), "cannot be a file (File name too long)")


def test_batch_with_a_lone_surrogate_in_a_claim_still_writes_its_table(tmp_path, cli):
    # fuzz_surfaces batch #34 (seed 2026): a claim's text or path holding JSON's "\ud800" (YAML
    # keeps it) made the verdict table's UTF-8 encoding fail: the whole batch was the catch-all
    import json

    d = tmp_path / "claims"
    d.mkdir()
    b, c = LOGS / "naive" / "cols-1024_dtype-float32_rows-1024.run0.jsonl", LOGS / "torch" / "cols-1024_dtype-float32_rows-1024.run0.jsonl"
    (d / "a.yaml").write_text(f'claim: "x\\ud800"\nbaseline: {{timings: "{b}"}}\ncandidate: {{timings: "{c}"}}\nspeedup: 2\n')
    (d / "b.yaml").write_text('baseline: {timings: "x\\ud800.jsonl"}\ncandidate: {timings: "y.jsonl"}\n')
    out = tmp_path / "v.json"
    res = cli("audit", d, "--engine", "local", "-f", "json", "-o", out)
    assert res.code == 2 and "internal error" not in res.err, res
    rows = {Path(r["claim"]).name: r for r in json.loads(out.read_text())}
    assert rows["a.yaml"]["verdict"] != "ERROR" and rows["a.yaml"]["description"] == "x\\ud800"
    assert rows["b.yaml"]["verdict"] == "ERROR" and "not a valid file name" in rows["b.yaml"]["error"]


def test_spec_conflicts_not_a_list_is_one_line(tmp_path, cli):
    # fuzz_surfaces spec #59 (seed 2027): conflicts = 2**63 -> "TypeError: 'int' object is not iterable"
    assert_one_line_error(cli("devices", "--spec", _spec_with(tmp_path, conflicts=2**63)), "conflicts must be a list")


@pytest.mark.parametrize("values", [float("-inf"), 3, "x"])
def test_spec_conflict_values_not_a_list_is_one_line(tmp_path, cli, values):
    # s16 final surfaces run (seed 4603, spec #24): conflicts[0].values = -inf -> "TypeError: 'float'
    # object is not iterable" at the catch-all
    conflicts = [{"field": "hbm_bytes_per_s", "values": values, "resolution": "r"}]
    assert_one_line_error(cli("devices", "--spec", _spec_with(tmp_path, conflicts=conflicts)), "conflicts[0].values must be a list")


# -- left open by the fuzz_surfaces run on the fixed tree (seed 2027), fixed by the integrator -----
def test_layout_1_part_that_is_a_fifo_is_refused_without_blocking(layout_1, cli):
    # dataset #.. (seed 2027): a FIFO where a layout-1 Parquet part belongs blocked pyarrow's open
    # for ever (two timeouts); a path is now checked to be a regular file before it is read
    import os

    part = layout_1 / "kernels" / "profile_id=a" / "part-0.parquet"
    part.unlink()
    os.mkfifo(part)
    assert_one_line_error(cli("dataset", "info", layout_1), "part-0.parquet: unreadable Parquet part: not a regular file")
    assert_one_line_error(cli("kernels", layout_1), "part-0.parquet: unreadable Parquet part: not a regular file")


@pytest.mark.parametrize("what, needle", [
    ("manifest", "not a regular file"), ("part", "not a regular file"),
    # a marker that is no regular file does not make the folder a dataset: it is searched for profiles
    ("marker", "no profile or timing log found"),
])
def test_layout_2_file_that_is_a_fifo_is_refused_without_blocking(tmp_path, cli, what, needle):
    # the same damage in a layout-2 dataset: a manifest is read whole (read_bytes blocked on a
    # FIFO), a part through pyarrow
    import os

    from profaudit.dataset import write_dataset
    from profaudit.dataset_v2 import MARKER
    from profaudit.profile import ProfileSet
    from tests.test_dataset_v2 import _profile

    ds = tmp_path / "ds"
    write_dataset(ProfileSet([_profile("a", 3)]), ds)
    f = {"manifest": lambda: sorted((ds / "_manifests").glob("*.json"))[0],
         "part": lambda: sorted(ds.glob("kernels/batch=*/*.parquet"))[0],
         "marker": lambda: ds / MARKER}[what]()
    f.unlink()
    os.mkfifo(f)
    assert_one_line_error(cli("kernels", ds), needle)


@pytest.mark.parametrize("layout", [1, 2])
def test_marker_nested_thousands_deep_is_one_line(tmp_path, layout_1, cli, layout):
    # dataset (seed 2027): a marker nested 5,000 deep made json.loads raise RecursionError, which
    # the readers' `except ValueError` did not catch (the catch-all, exit 3)
    from profaudit.dataset import write_dataset
    from profaudit.dataset_v2 import MARKER
    from profaudit.profile import ProfileSet
    from tests.test_dataset_v2 import _profile

    if layout == 1:
        ds = layout_1
    else:
        ds = tmp_path / "ds"
        write_dataset(ProfileSet([_profile("a", 3)]), ds)
    (ds / MARKER).write_text("[" * 5000 + "]" * 5000)
    assert_one_line_error(cli("kernels", ds), "JSON nested too deep")


def test_malformed_http_urls_are_one_line(tmp_path, cli):
    # pairs #69, #84, #131 (seed 2027): 'http://[::1' reached fsspec's HTTP glob (the '[' taken for
    # a pattern), which passes an option aiohttp refuses: TypeError at the catch-all. Only an
    # http(s) URL's path can be a pattern now, and a backend's TypeError is one line
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("baseline,candidate\nhttp://[::1,http://[::1\n")
    res = cli("compare-pairs", pairs)
    assert "internal error" not in res.err and "Traceback" not in res.err
    assert "http://[::1: cannot reach" in res.out
    assert_one_line_error(cli("kernels", "http://[::1"), "http://[::1: cannot reach")
    assert_one_line_error(cli("kernels", "http://[::1]:9/x[0].json"), "cannot reach")


# -- session 16 (engineer D): volume runs --------------------------------------------------------------
_COLD = REPO / "sample_reports" / "bench_cpu" / "softmax_cold" / "softmax_rows" / "unfused" / "cols-1024_dtype-float32_rows-256.jsonl"
_HOT = REPO / "sample_reports" / "bench_cpu" / "softmax" / "softmax_rows" / "fused" / "cols-1024_dtype-float32_rows-256.jsonl"


def test_pairs_unreadable_pair_exits_2_even_beside_a_not_comparable_one(tmp_path, cli):
    # fuzz_surfaces pairs #3 (seed 5): a cold-cache baseline against a hot candidate is "not
    # comparable" under --fail-on (gate exit 4); the exit code was the max of the rows', so 4 hid the
    # row of a pair whose file is missing, which the help promises exits 2
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(f"name,baseline,candidate\ncold_hot,{_COLD},{_HOT}\n")
    res = cli("compare-pairs", pairs, "--fail-on", "regression", "-f", "csv")
    assert res.code == 4, res  # the gate's own code, as `profaudit compare` gives it
    pairs.write_text(f"name,baseline,candidate\ncold_hot,{_COLD},{_HOT}\nbroken,0x10,{_HOT}\n")
    res = cli("compare-pairs", pairs, "--fail-on", "regression", "-f", "csv")
    assert res.code == 2, res
    assert "0x10" in res.out and "cold_hot" in res.out  # both rows are in the table


def _spec_value(tmp_path: Path, section: str, key: str | None, value) -> Path:
    doc = yaml.safe_load(SPEC.read_text())
    entry = doc[section] if key is None else doc[section][key]
    entry["value"] = value
    p = tmp_path / "spec.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


@pytest.mark.parametrize(
    "section, key, value",
    [
        ("bandwidth_bytes_per_s", "dram", 1e308),  # printed as a 300-digit GB/s figure
        ("bandwidth_bytes_per_s", "dram", 1e-320),  # printed as "0 GB/s"
        ("bandwidth_bytes_per_s", "dram", 2**64),
        ("peak_flops_per_s_dense", "fp32", 1e300),
        ("boost_clock_mhz", None, 1e9),
        ("memory_bytes", None, 2**70),
    ],
)
def test_spec_peak_beyond_any_device_is_one_line(tmp_path, cli, section, key, value):
    # deep spec mutator (session 16): a peak that is positive and finite but absurd passed
    # validation and came out as nonsense numbers in `devices KEY` and every roofline built on it
    res = cli("devices", "rtx-a6000", "--spec", _spec_value(tmp_path, section, key, value))
    assert_one_line_error(res, "is not a plausible figure for one device")


def test_spec_integer_past_the_float_range_is_one_line(tmp_path, cli):
    # YAML reads a 1 with 400 zeros as an int: math.isfinite raised OverflowError (internal error)
    res = cli("devices", "--spec", _spec_value(tmp_path, "compute_units", None, 10**400))
    assert_one_line_error(res, "compute_units.value must be a finite number, got an integer of 401 digits")


@pytest.mark.parametrize("path", ["../outside/part.parquet", "kernels/../../outside/part.parquet", "/etc/passwd", "file:///etc/passwd"])
@pytest.mark.parametrize("cmd", [("dataset", "info"), ("kernels",)])
def test_manifest_part_path_outside_the_dataset_is_refused(tmp_path, cli, path, cmd):
    # deep dataset mutator (session 16): a manifest naming '../outside/part.parquet' made every
    # reader open it; a copy of a real part there was counted and served as the dataset's rows
    import json
    import shutil

    from profaudit.dataset import write_dataset
    from profaudit.profile import ProfileSet
    from tests.test_dataset_v2 import _profile

    ds = tmp_path / "ds"
    write_dataset(ProfileSet([_profile("a", 3)]), ds)
    man = sorted((ds / "_manifests").glob("*.json"))[0]
    doc = json.loads(man.read_text())
    (tmp_path / "outside").mkdir()
    shutil.copyfile(ds / doc["files"][0]["path"], tmp_path / "outside" / "part.parquet")
    doc["files"][0]["path"] = path
    man.write_text(json.dumps(doc))
    assert_one_line_error(cli(*cmd, ds), "not a path inside the dataset")


@pytest.mark.parametrize("rows, needle", [
    ([1], "profiles[0].rows: expected a mapping of table name to a whole number >= 0 (at most 2^63-1), found a list"),
    ({"samples": "x"}, "profiles[0].rows: expected a mapping"),
    ({"nonsense": 3}, "profiles[0].rows: expected a mapping"),
    (5, "profiles[0].rows: expected a mapping"),
    ({"kernels": 99_999_999_999}, "has 99,999,999,999 kernels rows but the batch's files hold 3"),
])
def test_manifest_profile_rows_that_lie_are_one_line(tmp_path, cli, rows, needle):
    # deep manifest mutator (session 16): a profile ingested twice (the later batch supersedes the
    # earlier copy) whose earlier entry's `rows` is of the wrong shape: AttributeError, TypeError or
    # KeyError at the catch-all in `dataset info`; a count beyond the batch's files printed a
    # negative row count (-99,999,999,038)
    import json

    from profaudit.dataset import write_dataset
    from profaudit.profile import ProfileSet
    from tests.test_dataset_v2 import _profile

    ds = tmp_path / "ds"
    write_dataset(ProfileSet([_profile("a", 3)]), ds)
    write_dataset(ProfileSet([_profile("a", 3)]), ds)  # the same profile again: the first copy is superseded
    first = sorted((ds / "_manifests").glob("*.json"))[0]
    doc = json.loads(first.read_text())
    doc["profiles"][0]["rows"] = rows
    first.write_text(json.dumps(doc))
    assert_one_line_error(cli("dataset", "info", ds), needle)


# -- claim files: hostile values (session 16) -----------------------------------------------------------
_HONEST = REPO / "sample_reports" / "claims" / "harness_softmax_honest.yaml"


def _honest_claim(tmp_path: Path, name: str = "claim.yaml", **meta) -> Path:
    doc = yaml.safe_load(_HONEST.read_text())
    for role in ("baseline", "candidate"):
        side = doc[role]
        for key in ("timings", "profile"):  # evidence made absolute: the copy lives elsewhere
            v = side.get(key)
            if isinstance(v, str):
                side[key] = str((_HONEST.parent / v).resolve())
            elif isinstance(v, list):
                side[key] = [str((_HONEST.parent / x).resolve()) for x in v]
    doc["baseline"].setdefault("meta", {}).update(meta)
    p = tmp_path / name
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


@pytest.mark.parametrize("key", ["best_of", "noise_target", "sm_clock_mhz"])
def test_claim_meta_integer_past_the_float_range_is_one_line(tmp_path, cli, key):
    # fuzz_surfaces batch #14, #17 (seed 4201): meta best_of / noise_target = 10^400, a YAML int;
    # float() raised OverflowError at the catch-all
    res = cli("audit", _honest_claim(tmp_path, **{key: 10**400}))
    assert_one_line_error(res, f"baseline.meta.{key}: expected a finite number >= 0, got an integer of 401 digits")


def test_claim_confidence_integer_past_the_float_range_is_one_line(tmp_path, cli):
    p = _honest_claim(tmp_path)
    p.write_text(p.read_text() + f"confidence: {10**400}\n")
    assert_one_line_error(cli("audit", p), "confidence: expected a number, got 1000")


def test_claim_file_named_like_a_glob_is_that_file(tmp_path, cli):
    # fuzz_surfaces batch #17 (seed 4201): `profaudit audit 'c0[1].yaml'` took the name for a glob
    # pattern that matched nothing: "no claim files (*.yaml, *.yml) found" for a file that exists
    p = _honest_claim(tmp_path, "c0[1].yaml")
    res = cli("audit", p, "-f", "json")
    assert res.code in (0, 1), res
    assert '"verdict"' in res.out


@pytest.mark.parametrize("cmd", [("dataset", "convert"), ("kernels",)])
def test_layout_1_part_holding_another_tables_rows_is_one_line(tmp_path, cli, cmd):
    # fuzz_surfaces dataset #14 (seed 4201): a layout-1 profile's metadata and samples parts
    # swapped: schema.conform's ValueError at the catch-all when the profile was built
    from profaudit.profile import ProfileSet
    from tests.test_dataset_v2 import _profile, _write_layout_1

    ds = tmp_path / "ds"
    ds.mkdir()
    _write_layout_1(ProfileSet([_profile("a", 3)]), ds)
    k = ds / "kernels" / "profile_id=a" / "part-0.parquet"
    m = ds / "metadata" / "profile_id=a" / "part-0.parquet"
    kb, mb = k.read_bytes(), m.read_bytes()
    k.write_bytes(mb)
    m.write_bytes(kb)
    args = [*cmd, ds] + (["-o", tmp_path / "v2"] if cmd[0] == "dataset" else [])
    res = cli(*args)
    assert_one_line_error(res, "part file does not hold the 'kernels' table its folder says")
    assert "profile_id=a" in res.err


def test_reading_by_profile_equals_partition_by():
    # dataset_v2._by_profile skips partition_by's copy for a frame of one profile: the same groups
    import polars as pl

    from profaudit.dataset_v2 import _by_profile

    one = pl.DataFrame({"profile_id": ["a"] * 4, "x": [3, 1, 2, None]})
    two = pl.DataFrame({"profile_id": ["b", "a", "b", "a"], "x": [1, 2, 3, 4]})
    for df in (one, two, one.clear()):
        got = _by_profile(df)
        want = df.partition_by("profile_id", as_dict=True, maintain_order=True) if df.height else {}
        assert list(got) == list(want)
        assert all(got[k].equals(want[k]) for k in want)


def test_claim_holding_a_list_of_200000_items_is_refused_before_it_is_composed(tmp_path, cli):
    # fuzz_surfaces probe (seed 502, claim #4): intended_differences of 200,000 items (1.6 MB) was
    # composed node by node (7 CPU-s on a loaded machine) before the alias budget refused it; the
    # composer now stops at safe_yaml.MAX_NODES. Counted, not timed: the loader is asked no further
    from profaudit import safe_yaml

    calls = []
    Loader = safe_yaml._counting_loader(yaml)
    compose = Loader.compose_node

    def counted(self, parent, index):
        calls.append(1)
        return compose(self, parent, index)

    p = _honest_claim(tmp_path)
    p.write_text(p.read_text() + "intended_differences: [" + ", ".join(["device"] * 200_000) + "]\n")
    Loader.compose_node = counted
    try:
        with pytest.raises(Exception) as info:
            loader = Loader(p.read_text())
            loader.get_single_node()
    finally:
        Loader.compose_node = compose
    assert type(info.value).__name__ == "_TooManyNodes"
    assert len(calls) == safe_yaml.MAX_NODES + 1
    assert_one_line_error(cli("audit", p), f"YAML holds more than {safe_yaml.MAX_NODES:,} values: refused")


def test_pairs_csv_beyond_a_terminal_table_is_one_line_and_files_take_any_number(tmp_path, cli):
    # fuzz_surfaces pairs #115 (seed 4401): 200,000 rows of 'a,b' ran past 30 CPU-s, drawing the
    # table. Refused before any comparison as a table; a file format takes every row (a
    # leaderboard of more than 10,000 pairs is what batch compare is for: review G10)
    import polars as pl

    from profaudit.cli.batch_cmd import MAX_TABLE_ROWS

    pairs = tmp_path / "pairs.csv"
    n = MAX_TABLE_ROWS + 1
    pairs.write_text("baseline,candidate\n" + "".join(f"a{i},b{i}\n" for i in range(n)))
    assert_one_line_error(cli("compare-pairs", pairs, "-f", "table"), f"{n:,} pairs: a verdict table of more than {MAX_TABLE_ROWS:,} rows is not drawn")
    out = tmp_path / "v.csv"
    res = cli("compare-pairs", pairs, "-o", out)
    assert res.code == 2, res.err  # every pair names missing files
    got = pl.read_csv(out)
    assert got.height == n and got["error"].null_count() == 0 and got["pair"].cast(pl.Utf8).to_list() == [str(i) for i in range(1, n + 1)]
    pairs.write_text("baseline,candidate\n" + "a,b\n" * 3)
    res = cli("compare-pairs", pairs, "-f", "csv")
    assert res.code == 2 and res.out.count("\n") == 4  # three error rows and the header


def test_report_of_a_claim_with_a_lone_surrogate_is_written(tmp_path, cli):
    # fuzz_surfaces claim #80 (seed 4501): `claim: "\ud800"` in a JSON claim file; writing the HTML
    # report raised UnicodeEncodeError at the catch-all (atomic_write_text encoded strict UTF-8)
    import json

    doc = yaml.safe_load(_honest_claim(tmp_path).read_text())
    doc["claim"] = "speedup \ud800"
    p = tmp_path / "c.json.yaml"
    p.write_text(json.dumps(doc))  # ensure_ascii: the surrogate travels as the escape \ud800
    res = cli("audit", p, "-f", "html", "-o", tmp_path / "r.html")
    assert res.code in (0, 1), res
    assert "\\ud800" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_pairs_listed_again_are_compared_once(tmp_path, monkeypatch):
    # fuzz_surfaces pairs #59 (seed 4501): one row repeated 1,000 times ran past 30 CPU-s
    from profaudit import batch

    calls = []
    real = batch.compare_row

    def counted(*args):
        calls.append(args[1:3])
        return real(*args)

    monkeypatch.setattr(batch, "compare_row", counted)
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(f"name,baseline,candidate\nx,{_COLD},{_HOT}\ny,{_COLD},{_HOT}\nz,{_HOT},{_COLD}\nw,{_COLD},{_HOT}\n")
    table, code = batch.compare_many(pairs)
    assert len(calls) == 2
    assert table["pair"].to_list() == ["x", "y", "z", "w"]
    rows = table.to_dicts()
    assert {k: v for k, v in rows[0].items() if k != "pair"} == {k: v for k, v in rows[3].items() if k != "pair"}


def test_claim_kernel_regex_nested_thousands_deep_is_one_line(tmp_path, cli):
    # fuzz_surfaces claim #373 (seed 4501): baseline.kernel of 5,000 nested groups: re.compile
    # raised RecursionError (not re.error) at the catch-all
    doc = yaml.safe_load(_honest_claim(tmp_path).read_text())
    doc["baseline"]["kernel"] = "(" * 5000 + "x" + ")" * 5000
    p = tmp_path / "k.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert_one_line_error(cli("audit", p), "baseline.kernel: not a usable regular expression: nested too deeply")


@pytest.mark.parametrize("target", ["itself", "nowhere"])
def test_layout_2_part_that_is_a_broken_link_is_one_line(tmp_path, cli, target):
    # s16 final surfaces run (seed 4601, dataset #238): a part replaced by a link to itself made
    # `dataset info` stat it while listing the parts: OSError ELOOP at the catch-all (exit 3)
    import os

    from profaudit.dataset import write_dataset
    from profaudit.profile import ProfileSet
    from tests.test_dataset_v2 import _profile

    ds = tmp_path / "ds"
    write_dataset(ProfileSet([_profile("a", 3)]), ds)
    part = sorted(ds.glob("kernels/batch=*/*.parquet"))[0]
    part.unlink()
    os.symlink(part.name if target == "itself" else "nowhere.parquet", part)
    for argv in (("dataset", "info", ds), ("dataset", "compact", ds)):
        assert_one_line_error(cli(*argv), f"{part.name}: cannot read this dataset file: ")


# -- session 17 (engineer A): the s16 final surfaces run's open findings (seed 4603) -------------------
@pytest.mark.parametrize("counts, where, needle", [
    # dataset #211: 2^63 rows reached `dataset info`'s Int64 table as an i128: ComputeError at the catch-all
    ({"rows": 2**63}, 0, "files[0].rows: expected a whole number >= 0 (at most 2^63-1), found the number 9223372036854775808"),
    ({"bytes": 2**64}, 0, "files[0].bytes: expected a whole number >= 0 (at most 2^63-1)"),
    # each count in range, their sum not: 2^63-1 rows beside the other batch's 3
    ({"rows": 2**63 - 1}, 1, "files[0].rows: the 'kernels' table's rows add up past 2^63-1"),
    ({"bytes": 2**63 - 1}, 1, "files[0].bytes: the dataset's bytes add up past 2^63-1"),
])
@pytest.mark.parametrize("fmt", ["table", "json"])
def test_manifest_counts_past_a_64_bit_integer_are_one_line(tmp_path, cli, counts, where, needle, fmt):
    import json

    from profaudit.dataset import write_dataset
    from profaudit.profile import ProfileSet
    from tests.test_dataset_v2 import _profile

    ds = tmp_path / "ds"
    write_dataset(ProfileSet([_profile("a", 3)]), ds)
    write_dataset(ProfileSet([_profile("b", 3)]), ds)
    mans = sorted((ds / "_manifests").glob("*.json"))
    man = mans[where]
    doc = json.loads(man.read_text())
    assert doc["files"][0]["table"] == "kernels"
    doc["files"][0].update(counts)
    man.write_text(json.dumps(doc))
    res = cli("dataset", "info", ds, "-f", fmt)
    assert_one_line_error(res, needle)
    assert man.name in res.err  # the manifest that lies, named


def test_layout_1_dataset_at_a_url_is_one_line_in_dataset_info(layout_1, cli):
    # dataset #341 (seed 4603): `dataset info simplecache::file://<layout-1 folder>`: the store's
    # root is text for a URL, and `root / MARKER` was "TypeError: unsupported operand type(s) for
    # /: 'str' and 'str'" at the catch-all; now the line every other layout-1 reader gives
    url = f"simplecache::file://{layout_1}"
    for argv in (("dataset", "info", url), ("kernels", url)):
        assert_one_line_error(cli(*argv), "a layout-1 dataset is read from a local folder only")
    assert cli("dataset", "info", layout_1).code == 0


def test_uploaded_claim_whose_evidence_name_is_past_path_max_is_one_line(tmp_path):
    # upload #172 (seed 4603): an uploaded claim naming evidence of 100,000 characters (each
    # component under 255 bytes would be ENAMETOOLONG elsewhere; this one is one component past
    # PATH_MAX): the dashboard's access check called Path.exists(), which raises ENAMETOOLONG, and
    # the audit showed an OSError with the server's upload folder in it
    pytest.importorskip("dash")
    from profaudit.dashboards.state import DashboardState
    from profaudit.dashboards.uploads import store_uploads
    from profaudit.errors import InputError

    up = tmp_path / "srv" / "uploads"
    st = DashboardState(upload_dir=up)
    for k, name in enumerate(("a" * 100_000, "/".join(["b" * 200] * 30))):
        claim = yaml.safe_dump({"baseline": {"timings": name}, "candidate": {"timings": "c.jsonl"}, "speedup": 2}).encode()
        url = "data:application/x-yaml;base64," + base64.b64encode(claim).decode()
        res = store_uploads(st, [url], [f"claim{k}.yml"])
        assert res[0].ok, res
    assert len(st.claims) == 2
    for cid in list(st.claims):
        with pytest.raises(InputError) as info:
            st.audit(cid, None, None)
        text = str(info.value)
        assert "\n" not in text and "baseline.timings" in text
        assert str(up) not in text and str(tmp_path) not in text


# -- batch #379 (seed 4501): evidence linking to /proc/self walked the whole machine (30 CPU-s) ---------
def test_claim_evidence_linking_to_proc_is_one_line(tmp_path, cli):
    # the claim's timings named a link to /proc/self; the loader walked it, and through
    # /proc/self/root (a link to /) every folder of the machine
    import os

    link = tmp_path / "dir.jsonl"
    os.symlink("/proc/self", link)
    doc = yaml.safe_load(_honest_claim(tmp_path).read_text())
    doc["baseline"]["timings"] = str(link)
    p = tmp_path / "proc.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert_one_line_error(cli("audit", p), "dir.jsonl: a folder of the kernel's /proc or /sys: it holds no profiles or timing logs (from baseline.timings")
    assert_one_line_error(cli("summary", "/sys/kernel"), "a folder of the kernel's /proc or /sys")


def test_walk_follows_links_to_folders_once_and_reads_linked_datasets(tmp_path):
    # the cause of batch #379: a walk followed every link to a folder (a link to an ancestor went
    # round until ELOOP; one to / walked the machine). Each folder is walked once now, however it
    # is reached, so the link back to runs/ ends there; a link to another folder is still walked
    # (not walking them dropped the profiles behind them without a word: review E17-3), and a
    # link to a dataset folder is read as that one input
    import os
    import shutil

    from profaudit.dataset import write_dataset
    from profaudit.loader import expand
    from profaudit.profile import ProfileSet
    from tests.test_dataset_v2 import _profile

    runs, other = tmp_path / "runs", tmp_path / "other"
    runs.mkdir()
    other.mkdir()
    shutil.copyfile(_COLD, runs / "a.jsonl")
    shutil.copyfile(_HOT, other / "b.jsonl")
    write_dataset(ProfileSet([_profile("a", 3)]), tmp_path / "ds")
    os.symlink(".", runs / "loop")
    os.symlink(other, runs / "elsewhere")
    os.symlink(tmp_path / "ds", runs / "ds")
    got = [(p.relative_to(tmp_path).as_posix(), explicit) for p, explicit in expand([str(runs)])]
    assert got == [("runs/a.jsonl", False), ("runs/ds", False), ("runs/elsewhere/b.jsonl", False)]
    # named, a link to a folder is followed
    assert [p.name for p, _ in expand([str(runs / "elsewhere")])] == ["b.jsonl"]


def test_claim_evidence_folder_of_too_many_entries_is_refused(tmp_path, cli, monkeypatch):
    # evidence naming a link to / (the generator's folder link when the side had no file) listed
    # the machine's folders before anything was read; a claim's evidence folder is capped in entries
    import os
    import shutil

    from profaudit.audit import claim

    monkeypatch.setattr(claim, "EVIDENCE_MAX_ENTRIES", 40)
    logs = tmp_path / "logs"
    (logs / "sub").mkdir(parents=True)
    for k in range(30):
        (logs / "sub" / f"note{k}.txt").write_text("x")
    for k in range(3):
        shutil.copyfile(_COLD, logs / f"run{k}.jsonl")
    doc = yaml.safe_load(_honest_claim(tmp_path).read_text())
    doc["baseline"]["timings"] = str(logs)
    p = tmp_path / "many.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert cli("audit", p).code in (0, 1)  # 34 entries: read
    for k in range(30, 40):
        (logs / "sub" / f"note{k}.txt").write_text("x")
    assert_one_line_error(cli("audit", p), "logs: more than 40 entries in the folders under it: name the files, or a folder holding only them (from baseline.timings")
    os.symlink("/", tmp_path / "root.jsonl")
    doc["baseline"]["timings"] = str(tmp_path / "root.jsonl")
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert_one_line_error(cli("audit", p), "root.jsonl: more than 40 entries in the folders under it")


def test_claimed_speedup_of_the_smallest_float_is_judged_not_a_math_error(tmp_path, cli):
    # s17 final surfaces run (seed 4703, batch #837): speedup 5e-324 (a subnormal); PA407 took
    # log(claimed / lo), which underflowed to log(0): "ValueError: math domain error" at the catch-all
    doc = yaml.safe_load(_honest_claim(tmp_path).read_text())
    doc["speedup"] = 5e-324
    p = tmp_path / "tiny.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    res = cli("audit", p, "-f", "json")
    assert res.code in (0, 1), res.err
    assert "evidence supports more than claimed" in res.out
