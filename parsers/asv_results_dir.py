"""airspeed velocity (asv) results folder: `results/` with `benchmarks.json` and one folder per
machine (`<machine>/machine.json`, `<machine>/<commit>-<env>.json`).

Read as a whole so that `benchmarks.json` and `machine.json` serve the result files beside them
(they hold no timings of their own); each result file becomes one profile, read by
`profaudit.parsers.asv_results`. A folder with benchmarks.json but no result file is an error.
"""

from __future__ import annotations

from pathlib import Path

from profaudit.errors import InputError
from profaudit.parsers.asv_results import PARSER as FILE_PARSER
from profaudit.parsers.base import Probe, ReadOptions

_SIDECARS = ("machine.json", "benchmarks.json")


def _result_files(root: Path) -> list[Path]:
    return sorted(f for d in root.iterdir() if d.is_dir() and not d.name.startswith(".")
                  for f in d.glob("*.json") if f.name not in _SIDECARS)


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
        return [FILE_PARSER.read(f, options) for f in files]


PARSER = AsvResultsDirParser()
