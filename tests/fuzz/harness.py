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
import io
import os
import random
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz.mutators import Mutant, mutate

REPO = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("PROFAUDIT_CORPUS", REPO.parent / "shared" / "corpus"))
SEED_MAX_BYTES = 1_500_000
# the files of folder formats that hold profile data
_FOLDER_DATA_SUFFIXES = (".parquet", ".pb", ".json.gz", ".trace.json", ".ntff")


@dataclass(frozen=True)
class Seed:
    format: str
    path: Path  # a file, or a folder for directory formats

    @property
    def is_dir(self) -> bool:
        return self.path.is_dir()


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


def generated_seeds(workdir: Path) -> list[Path]:
    """Inputs built by the test suite's own fixture makers, for formats the corpus lacks."""
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
    for maker in (_rocpd_seed, _pyperf_seed, _asv_seed):
        try:
            out.append(maker(workdir))
        except Exception:
            pass
    try:
        from tests import nsys_synth

        f = workdir / "nsys_rich.sqlite"
        if not f.exists():
            nsys_synth.rich_db(f)
        out.append(f)
    except Exception:
        pass
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


def _asv_seed(workdir: Path) -> Path:
    from tests.test_asv import _tree

    d = workdir / "asv"
    if not d.exists():
        d.mkdir(parents=True)
        _tree(d)
    return next((d / "results").glob("*/*-*.json"))


def discover_seeds(workdir: Path, *, corpus: bool = True, max_bytes: int = SEED_MAX_BYTES, per_format: int | None = None) -> dict[str, list[Seed]]:
    """Seeds by the parser that reads them (corpus, sample_reports, generated fixtures).

    Small seeds keep runs fast: each format keeps its inputs up to `max_bytes` (its smallest one
    when none is that small), at most `per_format` of them, smallest first. A seed must load as it
    is, or its mutants prove nothing."""
    from profaudit.loader import read_one
    from profaudit.parsers import find_parser

    roots = [REPO / "sample_reports"]
    if corpus and CORPUS.is_dir():
        roots.insert(0, CORPUS)
    paths = _candidates(roots) + generated_seeds(workdir)
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
        for c in small:
            if per_format is not None and len(keep) >= per_format:
                break
            try:
                read_one(c)
            except Exception:
                continue
            keep.append(Seed(fmt, c))
        if keep:
            by_format[fmt] = keep
    return by_format


def _size(p: Path) -> int:
    if p.is_file():
        return p.stat().st_size
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


def write_mutant(seed: Seed, rng: random.Random, dest: Path) -> tuple[Path, Mutant]:
    """A mutant of `seed` under `dest` (which is emptied first), keeping the seed's file name."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    if seed.is_dir:
        out = dest / seed.path.name
        shutil.copytree(seed.path, out)
        files = sorted(f for f in out.rglob("*") if f.is_file())
        victim = rng.choice(files)
        m = mutate(victim.read_bytes(), victim.name, rng)
        victim.write_bytes(m.data)
        m.label = f"{victim.relative_to(out)}: {m.label}"
        # side files a folder format does not read (a sample's capture notes) lose nothing when cut
        m.cut_incomplete = m.cut_incomplete and victim.name.endswith(_FOLDER_DATA_SUFFIXES)
        if victim.name.endswith(".trace.json.gz") and any(victim.parent.glob("*.xplane.pb")):
            m.cut_incomplete = False  # a JAX run is read from its xplane.pb; the trace.json.gz is not read
        return out, m
    out = dest / seed.path.name
    m = mutate(seed.path.read_bytes(), seed.path.name, rng)
    out.write_bytes(m.data)
    return out, m


def verdict(path: Path, mutant: Mutant | None = None) -> tuple[str, str]:
    """(verdict, one line of detail) for reading `path` the way the CLI does."""
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
    if incomplete:
        return "incomplete", err.getvalue().strip().splitlines()[0] if err.getvalue().strip() else "complete: false"
    if mutant is not None and mutant.cut_incomplete:
        return "silent_partial", mutant.label
    return "ok", ""
