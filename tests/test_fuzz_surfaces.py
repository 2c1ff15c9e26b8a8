"""tools/fuzz_surfaces.py: a short seeded sweep over every non-parser surface (claim files, batch
audits, compare-pairs CSVs, damaged datasets, device-spec files, dashboard uploads) never sees an
undeliberate failure, a crash, a timeout or a blow-up; and the tool's judge tells those apart."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.tool_module import load

fs = load("fuzz_surfaces")
REPO = Path(__file__).resolve().parents[1]
BAD = ("undeliberate", "crash", "timeout", "memory", "generator_error")


def _tool(out: Path, seeds_dir: Path, *args: str) -> dict:
    """The tool in a fresh process: its inputs run in forked children, which hang if forked from
    a process that has already run polars (as this test process may have)."""
    summary = out / "summary.json"
    res = subprocess.run([sys.executable, str(REPO / "tools" / "fuzz_surfaces.py"), "--out", str(out), "--seeds-dir", str(seeds_dir),
                          "--summary-json", str(summary), "--workers", "2", *args], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert summary.exists(), res.stderr[-2000:]
    return json.loads(summary.read_text())


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    # one short seeded sweep; its seeds (claims audited alone, datasets) are reused by the tests below
    base = tmp_path_factory.mktemp("fuzz_surfaces")
    return base, _tool(base / "sweep", base / "seeds", "--per-surface", "2", "--seed", "13")


def test_short_seeded_sweep_over_every_surface_is_clean(sweep):
    base, counts = sweep
    surfaces = set(fs.SURFACES)
    try:
        import dash  # noqa: F401
    except ImportError:  # the upload surface needs dash
        surfaces.discard("upload")
    assert set(counts) == surfaces
    for s, c in counts.items():
        assert sum(c.values()) == 2, (s, c)
        found = {v: c[v] for v in BAD if c.get(v)}
        # each finding is kept with its input: findings.jsonl names it
        assert not found, (s, found, (base / "sweep" / "findings.jsonl").read_text() if found else "")


def test_same_seed_same_inputs(tmp_path):
    seeds = {"claim_docs": fs.claim_seeds()}
    made = []
    for k in range(2):
        d = tmp_path / f"c{k}"
        d.mkdir()
        import random

        made.append((fs.make_claim(d, random.Random("7/claim/3"), seeds), (d / "claim.yaml").read_bytes()))
    assert made[0] == made[1]


# -- the judge ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "rc, err, want",
    [
        (0, "", "ok"),
        (1, "note: 3 samples\n", "ok"),
        (2, "profaudit: error: c.yaml: speedup: expected a number\n", "deliberate"),
        (2, "profaudit: error: a\nprofaudit: error: b\n", "undeliberate"),
        (2, "", "undeliberate"),
        (3, "profaudit: internal error: TypeError: x (PROFAUDIT_DEBUG=1 shows the traceback)\n", "undeliberate"),
        (0, "Traceback (most recent call last):\n  File x\nValueError: y\n", "undeliberate"),
        (130, "profaudit: interrupted\n", "undeliberate"),
    ],
)
def test_cli_verdict(rc, err, want):
    assert fs._cli_verdict(rc, err)[0] == want


def test_half_written_and_unexpected_outputs_are_found(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    case = {"out_dir": str(out), "outputs": [str(out / "r.json")]}
    assert fs._stray_files(case, 0, "ok") == "exit 0 but r.json was not written"
    (out / "r.json").write_text("{}")
    assert fs._stray_files(case, 0, "ok") == ""
    assert fs._stray_files(case, 2, "deliberate") == "exit 2 but r.json was written"
    (out / ".r.json.abc.tmp").write_text("{")
    assert fs._stray_files(case, 0, "ok").startswith("left over: .r.json")


def test_batch_table_is_checked_against_the_claims_alone(tmp_path):
    table = tmp_path / "t.json"
    good = {"/c/a.yaml": {"verdict": "PASS", "supported_speedup_x": 2.0}}
    case = {"table": str(table), "good": good}
    table.write_text('[{"claim": "/c/a.yaml", "verdict": "PASS", "supported_speedup_x": 2.0}, {"claim": "/c/b.yaml", "verdict": "ERROR", "error": "b.yaml: bad"}]')
    assert fs._check_batch(case, 2) == ""
    assert fs._check_batch(case, 0) == "exit 0 but the worst row says 2"
    table.write_text('[{"claim": "/c/a.yaml", "verdict": "PASS", "supported_speedup_x": 2.5}]')
    assert "supported speedup 2.5 in the batch, 2.0 alone" in fs._check_batch(case, 0)
    table.write_text('[{"claim": "/c/a.yaml", "verdict": "FAIL", "supported_speedup_x": 2.0}]')
    assert "FAIL in the batch, PASS alone" in fs._check_batch(case, 1)


# -- the child's fate: a planted fault in the code under test is judged as what it is -----------------
PLANT = """
import os, signal, time
from pathlib import Path
import profaudit.batch

def fault(path):
    # which fault follows from the input's own folder (pairs_<i>): one run plants all three
    i = int(Path(path).parent.name.rsplit("_", 1)[1])
    if i == 0:
        raise TypeError("planted")
    if i == 1:
        os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(60)

profaudit.batch.read_pairs = fault
"""


def test_a_planted_fault_is_judged_as_what_it_is(sweep, tmp_path):
    # `profaudit.batch.read_pairs` replaced in the tool's parent (the children inherit it): an
    # exception is undeliberate, a signal a crash, a sleep a timeout (blocked, with --stall-s 1)
    base, _ = sweep
    plant = tmp_path / "plant.py"
    plant.write_text(PLANT)
    c = _tool(tmp_path / "fs", base / "seeds", "--surfaces", "pairs", "--per-surface", "3", "--preload", str(plant), "--stall-s", "1")["pairs"]
    assert c == {"undeliberate": 1, "crash": 1, "timeout": 1}, c
    findings = [json.loads(line) for line in (tmp_path / "fs" / "findings.jsonl").read_text().splitlines()]
    assert {(f["i"], f["verdict"]) for f in findings} == {(0, "undeliberate"), (1, "crash"), (2, "timeout")}
    assert "planted" in next(f["detail"] for f in findings if f["i"] == 0)
    assert (tmp_path / "fs" / "repro" / "pairs_0" / "pairs.csv").exists()


# -- session 16: verdicts and mutators ----------------------------------------------------------------
def test_exit_4_is_ok_only_where_the_gate_may_give_it():
    # compare-pairs --fail-on regression|any-significant: 4 is the gate's "not comparable"
    assert fs._cli_verdict(4, "", (0, 1, 4))[0] == "ok"
    assert fs._cli_verdict(4, "")[0] == "undeliberate"


def test_json_output_with_nan_or_infinity_is_a_finding(tmp_path):
    out = tmp_path / "r.json"
    case = {"argv": ["audit", "c.yaml", "-f", "json", "-o", str(out)]}
    out.write_text('{"speedup": 2.0, "low": null}')
    assert fs._json_output(case, "") == ""
    out.write_text('{"speedup": NaN}')
    assert "not JSON" in fs._json_output(case, "")
    stdout_case = {"argv": ["devices", "--spec", "s.yaml", "-f", "json"]}
    assert "not JSON" in fs._json_output(stdout_case, '[{"dram_tb_per_s": Infinity}]')
    assert fs._json_output({"argv": ["devices", "-f", "table"]}, "NaN") == ""  # only JSON is held to JSON


def test_a_busy_child_is_not_a_stall_and_a_sleeping_one_is_not_runnable():
    import os
    import signal
    import time

    busy = os.fork()
    if busy == 0:
        while True:
            pass
    r, w = os.pipe()
    asleep = os.fork()
    if asleep == 0:
        os.write(w, b"u")
        time.sleep(60)
        os._exit(0)
    os.close(w)
    try:
        deadline = time.monotonic() + 10
        seen = False
        while time.monotonic() < deadline and not seen:
            seen = fs._cpu_s(busy)[1]  # R: running or waiting for a core, never "blocked"
            time.sleep(0.01)
        assert seen
        # the sleeper is judged once it has run up to its sleep, and given 10 s to be seen asleep:
        # a fixed 0.2 s could pass on a loaded machine before the forked child got a core at all
        assert os.read(r, 1) == b"u"
        deadline = time.monotonic() + 10
        while fs._cpu_s(asleep)[1] is not False and time.monotonic() < deadline:
            time.sleep(0.01)
        assert fs._cpu_s(asleep)[1] is False
    finally:
        os.close(r)
        for pid in (busy, asleep):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def test_hostile_claim_values_reach_every_kind_of_field():
    import random

    from profaudit.audit.claim import META_KEYS

    seeds = fs.claim_seeds()
    where = set()
    for k in range(400):
        import copy

        doc = copy.deepcopy(seeds[k % len(seeds)]["doc"])
        label = fs._hostile_claim_value(doc, random.Random(f"h/{k}"))
        # everything but the one field stays as it was: both sides are still there to load
        assert isinstance(doc["baseline"], dict) and isinstance(doc["candidate"], dict), label
        field = label.split(" = ", 1)[0].split(" ", 1)[1]
        where.add("meta" if ".meta." in field else "workload" if field.startswith("workload.") else "side" if "." in field else "top")
        if ".meta." in field:
            assert field.rsplit(".", 1)[1] in META_KEYS
    assert where == {"top", "workload", "side", "meta"}


def test_manifest_lies_keep_the_manifest_json_and_cover_the_lies(tmp_path):
    import json
    import random
    import shutil

    from profaudit.dataset import write_dataset
    from profaudit.profile import ProfileSet
    from tests.test_dataset_v2 import _profile

    src = tmp_path / "src"
    write_dataset(ProfileSet([_profile("a", 3)]), src)
    write_dataset(ProfileSet([_profile("b", 2)]), src)
    ops = set()
    for k in range(120):
        ds = tmp_path / f"c{k}" / "ds"
        shutil.copytree(src, ds)
        label = fs._lie_in_manifest(ds, random.Random(f"m/{k}"))
        ops.add(label.rsplit(": ", 1)[1])
        for m in (ds / "_manifests").glob("*.json"):
            json.loads(m.read_text())  # a lie that parses: the reader must judge what it says
    assert {"rows", "path_up", "path_link_out", "dup_profile", "dup_profile_other", "replaces_self", "profile_rows"} <= ops, ops


def test_absurd_peaks_land_on_published_numbers():
    import random

    import yaml

    spec = yaml.safe_load((REPO / "device_specs" / "h100-sxm.yaml").read_text())
    changed = 0
    for k in range(50):
        doc = yaml.safe_load(yaml.safe_dump(spec))
        label = fs._absurd_peak(doc, random.Random(f"p/{k}"))
        assert label.startswith("absurd ") and label.split(" = ")[0].rsplit(".", 1)[1] in ("value", "clock_mhz", "capacity_bytes"), label
        changed += doc != spec
    assert changed >= 45  # only a draw of the number already there leaves the spec as it was


@pytest.mark.parametrize("text, found", [("speedup nan× (median)", True), ("inf% of the roof", True), ("-inf x", True), ("2.00× faster", False),
                                         ("label: nan", False), ("share 12.5%", False), ("infinite loop 3x", False), ("banana%", False)])
def test_a_computed_figure_printed_as_nan_or_inf_is_a_finding(text, found):
    assert bool(fs._nonsense_figure({}, text)) is found


def test_dataset_damage_reads_and_copies_only_regular_files_never_links(tmp_path):
    # the generator's own bugs: a second damage read a file an earlier one had made a link to
    # /dev/zero and grew the fuzzer to 24 GB (s16 final runs, seeds 4601/4602); the layout-1 "twin"
    # copied such a link's target for ever (61 GB, the disk full, session 17). Here every file is a
    # link to a folder instead: a read or a followed copy of one fails at once, and nothing can grow
    import os
    import random

    from profaudit.dataset import write_dataset
    from profaudit.dataset_v2 import MARKER
    from profaudit.profile import ProfileSet
    from tests.test_dataset_v2 import _profile, _write_layout_1

    f = tmp_path / "f.json"
    f.write_text("{}")
    os.symlink(f, tmp_path / "link.json")
    os.mkfifo(tmp_path / "fifo.json")
    got = {p: fs._plain_file(tmp_path / p) for p in ("f.json", "link.json", "fifo.json", "missing.json", ".")}
    assert got == {"f.json": True, "link.json": False, "fifo.json": False, "missing.json": False, ".": False}
    assert not fs._plain_file(Path("/dev/zero"))

    poison = tmp_path / "poison"
    poison.mkdir()
    ds2 = tmp_path / "ds2"
    write_dataset(ProfileSet([_profile("a", 3)]), ds2)
    ds1 = _write_layout_1(ProfileSet([_profile("a", 3), _profile("b", 2)]), tmp_path / "ds1")
    for ds in (ds1, ds2):
        for p in [p for p in ds.rglob("*") if p.is_file()]:
            p.unlink()
            os.symlink(poison, p)
    assert fs._lie_in_manifest(ds2, random.Random(0)) == "no manifest to lie in"
    labels = {fs._lie_in_layout_1(ds1, random.Random(k)) for k in range(40)}
    assert "no layout-1 marker to lie in" in labels and any(" twin " in x for x in labels), labels
    # the twins hold links, as the folders they copy do (a followed link came out a folder)
    assert all(p.is_symlink() for p in ds1.rglob("*") if p.name.endswith((".parquet", ".json")))
    for k in range(20):  # no file the damage may read: it says so rather than read a link (or fail)
        assert fs._damage_dataset(ds2, random.Random(f"d/{k}")) in ("no manifest to lie in", "no regular file left to damage")
    assert all(p.is_symlink() for p in ds2.rglob("*") if p.name.endswith((".parquet", ".json")))


def test_a_file_written_past_the_cap_is_a_blow_up_not_a_full_disk(tmp_path, monkeypatch):
    # an input's child may write at most FILE_CAP_MB to any file (RLIMIT_FSIZE): past it, SIGXFSZ
    # ends the child and the input is a blow-up, the disk the machine shares untouched
    import time

    big = tmp_path / "big.bin"
    monkeypatch.setattr(fs, "FILE_CAP_MB", 1)
    monkeypatch.setattr(fs, "judge", lambda case: (big.write_bytes(b"x" * (3 << 20)), ("ok", ""))[1])
    case_dir = tmp_path / "case"
    case_dir.mkdir()
    r = fs.Running("dataset", 0, case_dir, {"label": "writes 3 MB"}, 4096)
    while (got := r.poll(30.0, 20.0, 2048)) is None:
        time.sleep(0.01)
    assert got[0] == "memory" and "SIGXFSZ" in got[1], got
    assert big.stat().st_size <= 1 << 20


def test_a_second_damage_of_json_nested_past_the_interpreters_depth_is_made():
    # s17 final surfaces run (seed 4703): a dataset's JSON file an earlier damage had nested
    # thousands deep was damaged again; json.loads raised RecursionError in the generator (a
    # generator error, the input never made). Now its bytes are mutated instead
    import random

    from tests.fuzz import mutators

    deep = b'{"a": ' * 5000 + b"1" + b"}" * 5000
    for k in range(60):
        m = mutators.mutate(deep, "json", random.Random(f"deep/{k}"))
        assert isinstance(m.data, bytes) and m.label


def test_batches_weigh_seed_claims_by_cost_and_still_draw_every_one(tmp_path):
    """A batch draws each seed claim with a weight of 1 / its audit's cost (the costly claims made
    batches most of a run's CPU), yet every seed, and so every verdict, still reaches batches."""
    import random

    docs = fs.claim_seeds()
    cheap = docs[0]["name"]
    seeds = {"claim_docs": docs, "claims": {d["name"]: {"verdict": "PASS", "cpu_s": 0.05 if d["name"] == cheap else 0.5} for d in docs}}
    picked = []
    for i in range(200):
        case_dir = tmp_path / str(i)
        case_dir.mkdir()
        case = fs.gen_batch(case_dir, random.Random(i), seeds)
        picked += [Path(p).name.split("_", 1)[1] for p in case["good"]]
    share = picked.count(cheap) / len(picked)
    # weights 20 against 2 for each of the others: the cheap one's expected share is 20 / (20 + 2 (n - 1))
    want = 20 / (20 + 2 * (len(docs) - 1))
    assert abs(share - want) < 0.1, (share, want)
    assert set(picked) == {d["name"] for d in docs}


@pytest.mark.parametrize("how", ["sigterm", "ctrl-c"])
def test_a_run_stopped_by_sigterm_finishes_what_runs_and_prints_whole_counts(sweep, tmp_path, how):
    """A deadline stops a long run with SIGTERM: it starts nothing more, judges the inputs running
    and prints the table (and the summary), instead of dying with only its last periodic table.
    A terminal's ^C (SIGINT to the whole process group, the inputs' children too) stops it the same
    way, and the inputs it reaches are not crashes (review F18-10: they were, 'signal 2')."""
    import os
    import signal
    import time

    base, _ = sweep
    out = tmp_path / "run"
    summary = tmp_path / "summary.json"
    # its own process group, as a command started from a shell is (^C reaches that group only)
    proc = subprocess.Popen([sys.executable, str(REPO / "tools" / "fuzz_surfaces.py"), "--out", str(out), "--seeds-dir", str(base / "seeds"),
                             "--summary-json", str(summary), "--workers", "2", "--surfaces", "spec", "--per-surface", "100000", "--seed", "7"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        # the first input's folder: the run's loop (and its stop handler) has begun
        while not (out / "work" / "spec_0").exists() and not list((out / "work").glob("spec_*")) and proc.poll() is None:
            assert time.monotonic() < deadline, "the run never started an input"
            time.sleep(0.05)
        time.sleep(1.0)
        if how == "sigterm":
            proc.send_signal(signal.SIGTERM)
        else:
            os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr[-2000:]
    assert f"stopped by signal {signal.SIGTERM if how == 'sigterm' else signal.SIGINT:d}" in stderr
    counts = json.loads(summary.read_text())
    assert "crash" not in counts["spec"], counts
    n = sum(counts["spec"].values())
    assert 0 < n < 100000
    # the printed table has the same count, with nothing left unjudged
    assert any(line.split()[:2] == ["spec", str(n)] for line in stdout.splitlines()), stdout[-2000:]


def test_a_layout_1_twin_of_a_folder_holding_a_fifo_is_made(tmp_path):
    """An earlier damage may leave a FIFO in a profile's folder; the twin lie copies that folder,
    and copying a FIFO is shutil's "is a named pipe" error: a generator error (s18 r4 dataset #803)
    until the twin made the FIFO again."""
    import os
    import random
    import stat

    part = tmp_path / "samples" / "profile_id=a"
    part.mkdir(parents=True)
    os.mkfifo(part / "part-0.parquet")
    (part / "part-1.parquet").write_bytes(b"PAR1")

    class Pick(random.Random):
        def choice(self, seq):  # the twin lie, of the first folder, named profile_id=other
            return "twin" if "twin" in seq else seq[0]

    label = fs._lie_in_layout_1(tmp_path, Pick())
    assert label.startswith("layout 1 lies: twin"), label
    twin = tmp_path / "samples" / "profile_id=other"
    assert stat.S_ISFIFO(os.lstat(twin / "part-0.parquet").st_mode)
    assert (twin / "part-1.parquet").read_bytes() == b"PAR1"
