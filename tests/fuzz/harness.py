"""Seeds, mutant files and the verdict on one read, shared by the CI fuzz tests
(tests/test_fuzz_parsers.py) and the long run (tools/fuzz_long.py).

Verdicts:
  ok          loaded; every table and `ps.metadata` build
  incomplete  loaded, marked `complete: false` in metadata (and warned on stderr)
  rejected    a deliberate one-line InputError (or another ProfauditError) from the parser
  undeliberate  the loader's last-resort catch-all (UnexpectedReadError), or any other exception
                escaping `read_one` or raised while building the ProfileSet's tables/metadata
  silent_partial  a cut that removed content (mid-line for text, anything for binary) loaded
                as if whole
The long run adds crash, timeout and memory (outcomes of its worker process).
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import random
import shutil
import stat
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz.mutators import Mutant, mutate

REPO = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("PROFAUDIT_CORPUS", REPO.parent / "shared" / "corpus"))
SEED_MAX_BYTES = 1_500_000
# the files of folder formats that hold profile data
_FOLDER_DATA_SUFFIXES = (".parquet", ".pb", ".json.gz", ".trace.json", ".ntff")
# and the text files the CSV and JSON folder formats read (a cut one loses rows); their other files (the
# rocprofv3 *_stats.csv summaries, capture notes) are not read, so a cut there loses nothing.
# Before s15 no .csv cut in a folder was judged: a rocprofv3 agent_info.csv cut mid-line loaded
# as whole and no run could see it
_FOLDER_TEXT_READ = {
    "rocprofv3-csv-dir": ("kernel_trace.csv", "counter_collection.csv", "memory_copy_trace.csv", "hip_api_trace.csv", "hsa_api_trace.csv",
                          "marker_api_trace.csv", "rccl_api_trace.csv", "scratch_memory_trace.csv", "memory_allocation_trace.csv", "agent_info.csv"),
    "rocprof-compute": ("pmc_perf.csv", "sysinfo.csv", "roofline.csv"),
    "asv-results-dir": (".json",),  # results, benchmarks.json and machine.json: all read
}


@dataclass(frozen=True)
class Seed:
    format: str
    path: Path  # a file, or a folder for directory formats
    # unmutated files the parser pairs with the seed (an NTFF's NEFF), copied beside each mutant
    companions: tuple[Path, ...] = ()

    @property
    def is_dir(self) -> bool:
        return self.path.is_dir()


# Formats read only through a vendor tool that may be absent (nsys, neuron-explorer/neuron-profile).
# Without the tool their seeds cannot load, so what is fuzzed is what profaudit does before the
# tool: sniffing, the header check, NEFF pairing, tool discovery and the one-line refusal.
def _tool_missing(fmt: str) -> bool:
    if fmt == "nsys-rep":
        from profaudit.parsers.nsys_rep import find_nsys

        return find_nsys() is None
    if fmt == "neuron_ntff":
        from profaudit.parsers.neuron_ntff import find_tool

        return find_tool() is None
    return False


def _companions(fmt: str, path: Path) -> tuple[Path, ...]:
    if fmt == "neuron_ntff":
        from profaudit.parsers.neuron_ntff import find_neff

        neff = find_neff(path)
        return (neff,) if neff is not None else ()
    return ()


def _candidates(roots: list[Path]) -> list[Path]:
    from profaudit.loader import expand

    out = []
    for r in roots:
        if r.is_dir():
            try:
                out.extend(p for p, _ in expand(str(r)))
            except Exception:
                continue
    return out


def generated_seeds(workdir: Path, *, text_fixtures: bool = False) -> list[Path]:
    """Inputs built by the test suite's own fixture makers, for formats the corpus lacks (and with
    `text_fixtures`, small text exports of formats it has, for runs without the corpus)."""
    out = []
    # the fixture makers live in test modules, some of which import `conftest` as pytest does
    for p in (str(REPO), str(REPO / "tests")):
        if p not in sys.path:
            sys.path.append(p)
    try:
        from tests.test_neuron import make_explorer_profile

        d = workdir / "neuron_explorer"
        if not d.exists():
            d.mkdir(parents=True)
            make_explorer_profile(d)
        out.append(d)
    except Exception:
        pass
    try:
        import json

        from tests.test_neuron import _device_json

        f = workdir / "neuron_device.json"
        if not f.exists():
            f.write_text(json.dumps(_device_json()))
        out.append(f)
    except Exception:
        pass
    try:
        from tests import test_nvprof_csv as nv

        for name in ("TRACE_WITH_API", "METRICS_VOLTA", "SUMMARY_UNIT_CELLS", "EVENTS"):
            f = workdir / f"nvprof_{name.lower()}.csv"
            if not f.exists():
                f.write_text(getattr(nv, name))
            out.append(f)
    except Exception:
        pass
    f = workdir / "torch_measurements.json"
    if not f.exists():
        spec = {"stmt": "x * 2", "setup": "pass", "global_setup": "", "label": "scale", "sub_label": "64",
                "description": "eager", "env": None, "num_threads": 1}
        f.write_text(__import__("json").dumps([{"number_per_run": 100, "raw_times": [1.2e-4, 1.1e-4, 1.3e-4, 1.15e-4],
                                               "task_spec": spec, "metadata": None}]))
    out.append(f)
    try:
        from profaudit.dataset import write_dataset
        from profaudit.loader import load

        d = workdir / "dataset"
        src = workdir / "torch_measurements.json"
        if not d.exists():
            write_dataset(load(src), d)
        out.append(d)
    except Exception:
        pass
    for maker in (_rocpd_seed, _pyperf_seed, _asv_seeds, _rocprof_sdk_seed, _nsys_sqlite_seed, _rocprof_compute_seed, _rocprofv3_seeds,
                  _nsys_rep_seed, _ntff_seeds, *((_text_seeds,) if text_fixtures else ())):
        try:
            made = maker(workdir)
            out.extend(made if isinstance(made, list) else [made])
        except Exception:  # a fixture maker that cannot run here (an optional package) loses its seed only
            pass
    return out


def _text_seeds(workdir: Path) -> list[Path]:
    """Text exports the test suite writes out in full (ncu CSV, nsys stats CSV) and small JSON
    results of Google Benchmark and pytest-benchmark, so that a run without the corpus still
    fuzzes those formats."""
    import json

    from tests import test_ncu_csv as ncu
    from tests import test_nsys_stats_csv as stats

    d = workdir / "text"
    d.mkdir(parents=True, exist_ok=True)
    run = {"name": "BM_x/8", "run_name": "BM_x/8", "run_type": "iteration", "iterations": 10, "real_time": 1.5, "cpu_time": 1.4, "time_unit": "ns"}
    files = {
        "ncu_raw.csv": ncu._RAW, "ncu_details.csv": ncu._DETAILS_OLD,
        "cuda_gpu_kern_sum.csv": stats.KERN_SUM_NEW, "cuda_gpu_trace.csv": stats.GPU_TRACE_NEW,
        "gbench.json": json.dumps({"context": {"date": "2024-01-01", "num_cpus": 8, "mhz_per_cpu": 3000, "library_build_type": "release"},
                                   "benchmarks": [run, {**run, "name": "BM_x/64", "run_name": "BM_x/64", "real_time": 9.5}]}),
        "0001_pytest_benchmark.json": json.dumps({"machine_info": {"node": "n1"}, "commit_info": {}, "version": "4.0.0", "benchmarks": [
            {"group": None, "name": "test_a", "fullname": "t.py::test_a", "params": None,
             "stats": {"min": 1e-6, "max": 2e-6, "mean": 1.5e-6, "rounds": 3, "iterations": 1, "data": [1e-6, 1.5e-6, 2e-6]}}]}),
        "timings.csv": "kernel,size,time_ms\nsoftmax,1024,0.125\nsoftmax,2048,0.25\nmatmul,1024,1.5\n",
    }
    out = []
    for name, text in files.items():
        f = d / name
        if not f.exists():
            f.write_text(text)
        out.append(f)
    return out


def _nsys_sqlite_seed(workdir: Path) -> Path:
    from tests import nsys_synth

    f = workdir / "nsys_rich.sqlite"
    if not f.exists():
        nsys_synth.rich_db(f)
    return f


def _rocprof_compute_seed(workdir: Path) -> Path:
    from tests.test_rocprof_compute import make_workload

    root = workdir / "rocprof_compute"
    if not root.exists():
        root.mkdir(parents=True)
        return make_workload(root)
    return next(root.glob("workloads/*/*"))


def _rocprofv3_seeds(workdir: Path) -> list[Path]:
    """The rocprofv3 CSV folder, and its kernel trace and counter files read one by one."""
    from tests.test_rocprofv3_csv import make_output

    root = workdir / "rocprofv3"
    if not root.exists():
        root.mkdir(parents=True)
        d = make_output(root)
    else:
        d = next(root.glob("host/*"))
    return [d, d / f"{d.name}_kernel_trace.csv", d / f"{d.name}_counter_collection.csv"]


def _nsys_rep_seed(workdir: Path) -> Path:
    """A report header with a small body (as tests/test_nsys_rep.py builds), for runs without the
    corpus's real reports."""
    from profaudit.parsers.nsys_rep import REP_MAGIC

    f = workdir / "nsys_rep" / "run.nsys-rep"
    if not f.exists():
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(REP_MAGIC + b" 2024.5.1\n\x00\x01binary body" + bytes(range(256)))
    return f


def _ntff_seeds(workdir: Path) -> list[Path]:
    """NTFFs with a NEFF beside them (the 64-byte stand-in tests/test_neuron.py uses), so that
    mutants also reach tool discovery, not only the missing-NEFF refusal; a corpus NTFF is linked,
    never copied into the repository."""
    d = workdir / "ntff"
    d.mkdir(parents=True, exist_ok=True)
    out = []
    hashed = d / "123_instid_0_vnc_0.ntff"
    if not hashed.exists():
        hashed.write_bytes(b"\x05" + b"\0" * 63)
        (d / "neff_123.neff").write_bytes(b"\0" * 64)
    out.append(hashed)
    real = sorted(CORPUS.glob("neuron/*.ntff"), key=_size)[:1] if CORPUS.is_dir() else []
    for r in real:
        link = d / r.name
        if not link.exists():
            link.symlink_to(r)
            (d / f"{r.stem}.neff").write_bytes(b"\0" * 64)
        out.append(link)
    return out


def _rocpd_seed(workdir: Path) -> Path:
    from tests.rocpd_synth import build_app_db

    f = workdir / "rocpd_app.db"
    if not f.exists():
        build_app_db(f)
    return f


def _pyperf_seed(workdir: Path) -> Path:
    from tests.test_pyperf import _suite_file

    f = workdir / "pyperf" / "bench.json"
    if not f.exists():
        f.parent.mkdir(parents=True, exist_ok=True)
        _suite_file(f.parent)
    return f


def _asv_seeds(workdir: Path) -> list[Path]:
    """One asv result file, and the results/ folder that holds it (with benchmarks.json)."""
    from tests.test_asv import _tree

    d = workdir / "asv"
    if not d.exists():
        d.mkdir(parents=True)
        _tree(d)
    return [next((d / "results").glob("*/*-*.json")), d / "results"]


def _rocprof_sdk_seed(workdir: Path) -> Path:
    """A small rocprofv3 JSON (every record kind once): the corpus has one 1.6 MB report, whose
    mutants cost over a second each."""
    import json

    from tests.test_chrome_trace import _sdk_doc

    f = workdir / "rocprof_sdk" / "results.json"
    if not f.exists():
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(_sdk_doc(), indent=1))
    return f


def discover_seeds(workdir: Path, *, corpus: bool = True, max_bytes: int = SEED_MAX_BYTES, per_format: int | None = None) -> dict[str, list[Seed]]:
    """Seeds by the parser that reads them (corpus, sample_reports, generated fixtures).

    Small seeds keep runs fast: each format keeps its inputs up to `max_bytes` (its smallest one
    when none is that small), at most `per_format` of them, smallest first. A seed must load as it
    is, or its mutants prove nothing (except where the vendor tool a format needs is absent: then
    its seeds are those refused deliberately, see `_tool_missing`)."""
    from profaudit.errors import InputError
    from profaudit.loader import UnexpectedReadError, read_one
    from profaudit.parsers import find_parser

    roots = [REPO / "sample_reports"]
    with_corpus = corpus and CORPUS.is_dir()
    if with_corpus:
        roots.insert(0, CORPUS)
    # with the corpus, its real files stay the seeds of the formats it has (the smallest are kept)
    paths = _candidates(roots) + generated_seeds(workdir, text_fixtures=not with_corpus)
    by_parser: dict[str, list[Path]] = {}
    for p in paths:
        try:
            parser = find_parser(p)
        except Exception:
            continue
        if parser is not None:
            by_parser.setdefault(parser.name, []).append(p)
    by_format: dict[str, list[Seed]] = {}
    for fmt, cands in by_parser.items():
        cands.sort(key=_size)
        small = [c for c in cands if _size(c) <= max_bytes] or cands[:1]
        keep: list[Seed] = []
        tool_missing = _tool_missing(fmt)
        for c in small:
            if per_format is not None and len(keep) >= per_format:
                break
            try:
                read_one(c)
            except InputError as exc:
                # without the vendor tool a seed is refused, deliberately: its mutants still test
                # what profaudit does before the tool
                if not (tool_missing and not isinstance(exc, UnexpectedReadError)):
                    continue
            except Exception:
                continue
            keep.append(Seed(fmt, c, _companions(fmt, c)))
        if keep:
            by_format[fmt] = keep
    return by_format


def pick_seed(seeds: list[Seed], rng: random.Random) -> Seed:
    """One of a format's seeds, big ones less often (weight 1/size above 64 KB): a mutant's cost
    grows with its seed, and the small seeds carry the same structure."""
    weights = [1.0 / max(_size(s.path), 65536) for s in seeds]
    return rng.choices(seeds, weights=weights)[0]


@functools.lru_cache(maxsize=None)
def _size(p: Path) -> int:
    if p.is_file():
        return p.stat().st_size
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


# Seed bytes kept in memory (bounded): the long run makes thousands of mutants of each seed, and
# re-reading a 1.5 MB seed from disk for each of them showed up in profiles.
_SEED_BYTES: dict[Path, bytes] = {}
_SEED_BYTES_MAX = 256 << 20


def _seed_bytes(path: Path) -> bytes:
    data = _SEED_BYTES.get(path)
    if data is None:
        data = path.read_bytes()
        if sum(map(len, _SEED_BYTES.values())) + len(data) <= _SEED_BYTES_MAX:
            _SEED_BYTES[path] = data
    return data


class _FolderMirror:
    """The last folder seed copied under one `dest`: the next mutant of the same seed restores the
    one file the previous mutant changed instead of copying the whole folder again. The mirror is
    trusted only while it holds exactly the seed's files (a reader that wrote into it, or a
    mutation that left anything else, means a fresh copy)."""

    def __init__(self):
        self.seed: Path | None = None
        self.out: Path | None = None
        self.files: dict[Path, int] = {}  # relative path -> size, as in the seed
        self.victim: Path | None = None

    def ready(self, seed: Path, out: Path) -> bool:
        if self.seed != seed or self.out != out or self.victim is None or not out.is_dir():
            return False
        try:
            (out / self.victim).write_bytes(_seed_bytes(seed / self.victim))
            now = {f.relative_to(out): f.stat().st_size for f in out.rglob("*") if f.is_file()}
        except OSError:
            return False
        return now == self.files


_MIRRORS: dict[Path, _FolderMirror] = {}


def _donor(donors, rng: random.Random) -> bytes | None:
    """Another seed's bytes (of any format, this one's included) to splice with, or None: a file
    seed whole, a folder seed's data file."""
    if not donors:
        return None
    d = rng.choice(donors)
    if d.is_dir:
        files = sorted(f for f in d.path.rglob("*") if f.is_file() and f.name.endswith(_FOLDER_DATA_SUFFIXES))
        if not files:
            return None
        return _seed_bytes(rng.choice(files))
    return _seed_bytes(d.path)


def write_mutant(seed: Seed, rng: random.Random, dest: Path, donors=()) -> tuple[Path, Mutant]:
    """A mutant of `seed` in a folder of its format under `dest`, keeping the seed's file name; the
    seed's companions are copied beside it unchanged. That folder holds nothing else; it is reused
    from one mutant to the next, because removing and re-creating folders (and re-copying folder
    seeds) was the largest cost of making a mutant on a disk with discard."""
    d = dest / seed.format
    if seed.is_dir:
        out = d / seed.path.name
        mirror = _MIRRORS.setdefault(d, _FolderMirror())
        if not mirror.ready(seed.path, out):
            if d.exists():
                shutil.rmtree(d)
            d.mkdir(parents=True)
            shutil.copytree(seed.path, out)
            mirror.seed, mirror.out = seed.path, out
            mirror.files = {f.relative_to(out): f.stat().st_size for f in out.rglob("*") if f.is_file()}
        mirror.victim = None
        files = sorted(out / f for f in mirror.files)
        if rng.random() < FOLDER_OP_RATE:
            # the file set changes: the next mutant's mirror check sees it and copies afresh
            return out, _folder_op(out, files, rng)
        victim = rng.choice(files)
        rel = victim.relative_to(out)
        m = mutate(_seed_bytes(seed.path / rel), victim.name, rng, _donor(donors, rng))
        victim.write_bytes(m.data)
        mirror.victim = rel
        m.label = f"{rel}: {m.label}"
        # side files a folder format does not read (a sample's capture notes) lose nothing when cut
        m.cut_incomplete = m.cut_incomplete and victim.name.endswith(_FOLDER_DATA_SUFFIXES + _FOLDER_TEXT_READ.get(seed.format, ()))
        if victim.name.endswith(".trace.json.gz") and any(victim.parent.glob("*.xplane.pb")):
            m.cut_incomplete = False  # a JAX run is read from its xplane.pb; the trace.json.gz is not read
        return out, m
    _MIRRORS.pop(d, None)
    out = d / seed.path.name
    keep = {out.name, *(c.name for c in seed.companions)}
    if d.is_dir():
        for e in os.scandir(d):  # what an earlier mutant (or a reader) left
            if e.name not in keep or not e.is_file(follow_symlinks=False):
                shutil.rmtree(e.path) if e.is_dir(follow_symlinks=False) else os.unlink(e.path)
    else:
        if d.exists():
            d.unlink()
        d.mkdir(parents=True)
    m = mutate(_seed_bytes(seed.path), seed.path.name, rng, _donor(donors, rng))
    out.write_bytes(m.data)
    for c in seed.companions:
        shutil.copyfile(c, d / c.name)
    from tests.fuzz import hostile

    if rng.random() < hostile.FS_RATE:  # the file system's own damage (s19): odd names, FIFOs, SQLite logs ...
        out, label, left_out = hostile.fs_hostile(out, rng)
        cut = m.cut_incomplete and not _padded_back(_seed_bytes(seed.path), m.data, out)
        m = Mutant(m.data, f"{m.label}; fs: {label}", cut or left_out)
    return out, m


def _padded_back(seed: bytes, data: bytes, out: Path) -> bool:
    """Whether the file `out` is the tail cut `data` of the seed padded back to at least the seed's
    length with zeros (a sparse file's holes): then every byte position of the seed is there again,
    the cut ones as zeros. Where the dropped bytes were zeros nothing changed (s19 seed 3122, rocpd
    #924 and #1280: 56 and 35 zero bytes of a 100 KB database, then a 5 GiB / 1 GiB sparse file whose
    first 100 KB are the seed's bytes exactly); otherwise the tail was overwritten with zeros
    (nsys-sqlite #2338: 10 bytes of text in a database's last page), damage no reader can tell from
    content without a checksum, judged as the byte mutators' overwrites are, not as a cut. Only
    SQLite is concerned: the loader refuses any other file that ends in 1 MiB of zeros (027c4e2)."""
    if not (len(seed) > len(data) and seed.startswith(data)):
        return False
    try:
        # a regular file only: a FIFO's open would wait for a writer, a link to /dev/zero never ends
        if not stat.S_ISREG(out.stat().st_mode):
            return False
        with open(out, "rb") as fh:
            head = fh.read(len(seed))
    except OSError:
        return False
    return len(head) == len(seed) and head.startswith(data) and not head[len(data):].strip(b"\0")


# the share of a folder seed's mutants whose damage is to the folder, not inside a file
FOLDER_OP_RATE = 0.08


def _folder_op(out: Path, files: list[Path], rng: random.Random) -> Mutant:
    """Damage to a folder format's file set, as a sync or a copy leaves it: a file missing, one
    emptied to 0 bytes, one copied under a second name of the same kind (another process's, a
    second run's), one renamed out of the kind its reader looks for, a folder where the file was
    (a copy that went wrong), or a symbolic link to itself (a loop: every open fails). Never a cut:
    a folder has no signal of which files belong in it, so reading what is there is not a partial load."""
    victim = rng.choice(files)
    rel = victim.relative_to(out)
    op = rng.choice(["delete", "empty", "copy", "rename", "folder", "loop"])
    if op in ("folder", "loop"):
        victim.unlink()
        if op == "folder":
            victim.mkdir()
            (victim / "part-0").write_bytes(b"")
        else:
            victim.symlink_to(victim.name)
    elif op == "delete":
        victim.unlink()
    elif op == "empty":
        victim.write_bytes(b"")
    elif op == "copy":
        twin = victim.with_name("9" + victim.name)  # same suffix: `*_kernel_trace.csv`, `*.parquet` ...
        shutil.copyfile(victim, twin)
    else:
        victim.rename(victim.with_name(victim.name + ".bak"))
    return Mutant(b"", f"folder: {op} {rel}")


# unmutated seeds, loaded once each: the sibling a loaded mutant is compared against
_SEED_SETS: dict[Path, object] = {}


def _seed_set(seed: Seed):
    from profaudit.loader import read_one
    from profaudit.profile import ProfileSet

    if seed.path not in _SEED_SETS:
        try:
            _SEED_SETS[seed.path] = ProfileSet(read_one(seed.path, explicit=True))
        except Exception:  # a seed refused without its vendor tool: nothing to compare against
            _SEED_SETS[seed.path] = None
    return _SEED_SETS[seed.path]


def verdict(path: Path, mutant: Mutant | None = None, *, seed: Seed | None = None, after: Path | None = None, on_step=None) -> tuple[str, str]:
    """(verdict, one line of detail) for reading `path` the way the CLI does; with `after` (a
    scratch folder), an input that loads also goes through what a user runs next
    (tests/fuzz/downstream.py), compared against its unmutated `seed`, and an undeliberate failure
    there is an `undeliberate` verdict (`on_step`: see `downstream.after_load`)."""
    from profaudit import schema
    from profaudit.errors import ProfauditError
    from profaudit.loader import UnexpectedReadError, read_one
    from profaudit.profile import ProfileSet

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            profiles = read_one(path, explicit=True)
            ps = ProfileSet(profiles)
            for name in schema.DATA_TABLES:
                ps.table(name)
            ps.metadata
    except UnexpectedReadError as exc:
        return "undeliberate", str(exc)
    except ProfauditError as exc:
        return "rejected", str(exc)
    except RecursionError as exc:
        return "undeliberate", f"RecursionError: {exc}"
    except Exception as exc:
        return "undeliberate", f"{type(exc).__name__}: {str(exc)[:300]}"
    incomplete = any(p.metadata.get("complete") is False for p in profiles)
    if after is not None and not (mutant is not None and mutant.cut_incomplete and not incomplete):
        from tests.fuzz.downstream import after_load

        sibling = _seed_set(seed) if seed is not None else None
        with contextlib.redirect_stderr(io.StringIO()):
            # which compare the input runs: from its own bytes, so a rerun of the input picks the same
            pick = zlib.crc32(mutant.data) if mutant is not None else 0
            problem = after_load(path, ps, (seed.path, sibling) if sibling is not None else None, after, pick, on_step=on_step)
        if problem:
            return "undeliberate", f"after load: {problem}"
    if incomplete:
        return "incomplete", err.getvalue().strip().splitlines()[0] if err.getvalue().strip() else "complete: false"
    if mutant is not None and mutant.cut_incomplete:
        return "silent_partial", mutant.label
    return "ok", ""
