"""JAX / TensorBoard profile log directories: `<log_dir>/plugins/profile/<run>/<host>.xplane.pb`.

`jax.profiler.trace(log_dir)` writes one run folder per capture (named by its timestamp) holding
`<host>.xplane.pb` and `<host>.trace.json.gz`; multi-host captures write one pair per host into the
same run folder. This parser accepts the log directory, its `plugins/profile` folder, or one run
folder, and returns one profile per host per run. The xplane.pb is preferred: the trace.json.gz is
derived from it and drops the cost stats (flops, bytes accessed) and some events. A host that only
has a trace.json.gz is read by whichever registered parser claims that file (the Chrome-trace
reader), so there is one trace.json reader in the project, not two.
"""

from __future__ import annotations

from pathlib import Path

from profaudit.errors import InputError
from profaudit.parsers.base import Probe, ReadOptions
from profaudit.parsers.folderfiles import check_regular

_XPLANE = ".xplane.pb"
_TRACE = ".trace.json.gz"
_DERIVED = ("perfetto_trace.json.gz",)


def _run_dirs(path: Path) -> list[Path]:
    path = Path(path)
    if (path / "plugins" / "profile").is_dir():
        root = path / "plugins" / "profile"
    elif path.name == "profile" and path.parent.name == "plugins":
        root = path
    elif path.parent.name == "profile" and path.parent.parent.name == "plugins":
        return [path]
    else:
        return []
    try:
        return sorted(d for d in root.iterdir() if d.is_dir() and not d.name.startswith("."))
    except OSError as exc:
        raise InputError(root, f"cannot list folder: {exc.strerror or exc}") from None


def _host_files(run: Path, strict: bool = False) -> dict[str, dict[str, Path]]:
    """The <host>.xplane.pb / <host>.trace.json.gz of a run folder; `strict` (reading, not
    sniffing): one named like them that is a folder or a looping link is one line, not a host
    read from its other file or left out (parsers/folderfiles.py)."""
    hosts: dict[str, dict[str, Path]] = {}
    for f in sorted(run.iterdir()):
        if f.name.startswith(".") or f.name in _DERIVED:
            continue
        if not f.is_file():
            if strict and f.name.endswith((_XPLANE, _TRACE)):
                check_regular(run, f)
            continue
        n = f.name
        if n.endswith(_XPLANE):
            hosts.setdefault(n[: -len(_XPLANE)], {})["xplane"] = f
        elif n.endswith(_TRACE):
            hosts.setdefault(n[: -len(_TRACE)], {})["trace"] = f
    return hosts


class XlaLogDirParser:
    name = "xla_logdir"
    source = "xla"
    suffixes = ("/",)
    description = "JAX/TensorBoard profile log directory (plugins/profile/<run>/<host>.xplane.pb, one profile per host per run)"

    def sniff(self, probe: Probe) -> bool:
        if not probe.is_dir:
            return False
        try:
            return any(_host_files(r) for r in _run_dirs(probe.path))
        except (OSError, InputError):
            return False

    def read(self, path: Path, options: ReadOptions):
        from profaudit.parsers import find_parser, probe
        from profaudit.parsers.xplane import PARSER as XPLANE

        path = Path(path)
        runs = _run_dirs(path)
        profiles = []
        for run in runs:
            for host, files in _host_files(run, strict=True).items():
                if "xplane" in files:
                    p = XPLANE.read(files["xplane"], options)
                    if "trace" in files:
                        p.metadata["trace_json_skipped"] = str(files["trace"])
                else:
                    trace = files["trace"]
                    parser = find_parser(trace, probe(trace))
                    if parser is None or parser.name == self.name:
                        raise InputError(trace, "run holds only a trace.json.gz and no installed parser reads it; capture with jax.profiler to get the .xplane.pb")
                    got = parser.read(trace, options)
                    got = got if isinstance(got, list) else [got]
                    if len(got) != 1:
                        profiles.extend(got)
                        continue
                    p = got[0]
                    p.metadata["xplane_missing"] = True
                p.metadata.setdefault("host", host)
                p.metadata["run"] = run.name
                p.metadata["log_dir"] = str(path)
                profiles.append(p)
        if not profiles:
            raise InputError(path, "no <host>.xplane.pb or <host>.trace.json.gz under plugins/profile/<run>/")
        return profiles


PARSER = XlaLogDirParser()
