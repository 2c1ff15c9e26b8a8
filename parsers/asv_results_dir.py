"""airspeed velocity (asv) results folder: `results/` with `benchmarks.json` and one folder per
machine (`<machine>/machine.json`, `<machine>/<commit>-<env>.json`).

Read as a whole so that `benchmarks.json` and `machine.json` serve the result files beside them
(they hold no timings of their own); each result file becomes one profile, read by
`profaudit.parsers.asv_results`; result files in which every benchmark failed, and result files that are not valid JSON (asv
skips those too), are listed in each profile's metadata (`results_without_timings`,
`results_unreadable` with the problem) rather than failing the folder. A folder with
benchmarks.json but no result file, or none with a timing, is an error.
"""

from __future__ import annotations

from pathlib import Path

from profaudit.errors import InputError
from profaudit.parsers.asv_results import PARSER as FILE_PARSER
from profaudit.parsers.base import Probe, ReadOptions
from profaudit.parsers.completeness import mark_incomplete
from profaudit.parsers.folderfiles import regular_files

_SIDECARS = ("machine.json", "benchmarks.json")


def _result_files(root: Path) -> list[Path]:
    # a result file that is a folder or a looping link is one line naming it (parsers/folderfiles.py)
    return regular_files(root, sorted(f for d in root.iterdir() if d.is_dir() and not d.name.startswith(".")
                                      for f in d.glob("*.json") if f.name not in _SIDECARS))


class AsvResultsDirParser:
    name = "asv-results-dir"
    source = "timing"
    suffixes = ("/",)
    description = "airspeed velocity (asv) results/ folder: every <machine>/<commit>-<env>.json with benchmarks.json"

    def sniff(self, probe: Probe) -> bool:
        if not probe.is_dir or not (probe.path / "benchmarks.json").is_file():
            return False
        return any((d / "machine.json").is_file() for d in probe.path.iterdir() if d.is_dir())

    def read(self, path: Path, options: ReadOptions):
        path = Path(path)
        files = _result_files(path)
        if not files:
            raise InputError(path, "asv results folder without result files (<machine>/<commit>-<env>.json): has `asv run` finished?")
        profiles, empty, unreadable = [], [], {}
        for f in files:
            try:
                profiles.append(FILE_PARSER.read(f, options))
            except InputError as exc:
                # a commit whose every benchmark failed is part of the history, not a broken folder;
                # a result file asv itself cannot parse is one asv skips too (named, not hidden)
                if "hold no timings" in exc.problem:
                    empty.append(f"{f.parent.name}/{f.name}")
                else:
                    unreadable[f"{f.parent.name}/{f.name}"] = exc.problem
        if not profiles:
            why = next(iter(unreadable.items()), None)
            raise InputError(path, f"asv results folder: none of its {len(files)} result files holds a timing"
                             + (f" ({why[0]}: {why[1]})" if why else " (every benchmark failed or was skipped)"))
        for pr in profiles:
            if empty:
                pr.metadata["results_without_timings"] = empty
            if unreadable:
                pr.metadata["results_unreadable"] = unreadable
                # asv skips them too, but the folder's history is then not whole (a cut result
                # file, the others loaded): said in `complete`, not only in this list
                mark_incomplete(pr.metadata, f"{len(unreadable)} unreadable result file(s), e.g. {next(iter(unreadable))}")
        return profiles


PARSER = AsvResultsDirParser()
