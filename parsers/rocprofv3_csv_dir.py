"""A rocprofv3 CSV output folder (`rocprofv3 --output-format csv -d DIR`): `<prefix>agent_info.csv`
beside the trace files of one process.

Read as a whole so that agent_info.csv names the devices of the traces beside it instead of being
offered to the generic table; each trace file (kernel, API, marker, copy, counter) becomes one
profile, read by `profaudit.parsers.rocprofv3_csv`. The `*_stats.csv` summaries are left out: they
summarise the traces already read.
"""

from __future__ import annotations

from pathlib import Path

from profaudit.errors import InputError
from profaudit.parsers.base import Probe, ReadOptions
from profaudit.parsers.folderfiles import regular_files
from profaudit.parsers.rocprofv3_csv import _SUFFIXES, PARSER as FILE_PARSER


def _traces(d: Path) -> list[Path]:
    # a trace that is a folder or a looping link is one line naming it, not left out unsaid
    return regular_files(d, sorted(f for f in d.iterdir() if f.name.endswith(_SUFFIXES)))


class Rocprofv3CsvDirParser:
    name = "rocprofv3-csv-dir"
    source = "rocprof"
    suffixes = ("/",)
    description = "rocprofv3 CSV output folder (agent_info.csv with its kernel/API/copy/counter traces)"

    def sniff(self, probe: Probe) -> bool:
        if not probe.is_dir:
            return False
        try:
            names = [f.name for f in probe.path.iterdir()]
        except OSError:
            return False
        return any(n.endswith("agent_info.csv") for n in names) and any(n.endswith(_SUFFIXES) for n in names)

    def read(self, path: Path, options: ReadOptions):
        path = Path(path)
        files = _traces(path)
        if not files:
            raise InputError(path, "rocprofv3 output folder without trace files")
        return [FILE_PARSER.read(f, options) for f in files]


PARSER = Rocprofv3CsvDirParser()
