"""AWS Neuron device traces (`.ntff`), converted through AWS's own tool.

An NTFF is a raw NeuronCore trace whose layout only AWS's tools decode, and only together with the
compiled program (`.neff`) that ran. When `neuron-explorer` (or the retired `neuron-profile`) is
available -- `ReadOptions.neuron_profile`, `$PROFAUDIT_NEURON_PROFILE`, or on PATH -- the NTFF is
converted to Parquet (explorer) or JSON (neuron-profile) in a temporary folder and read by the
matching profaudit reader. Otherwise the error says how to convert it by hand.

Finding the NEFF beside the NTFF follows the documented naming:
`<hash>_instid_0_vnc_0.ntff` pairs with `neff_<hash>.neff` (or `neff_<hash>_vnc_<n>.neff`);
`profile_nc_0_session_0.ntff` with the `neff_*.neff` files of its folder; anything else
(`stream.ntff`, `profile_rank_3.ntff`, `profile.ntff`) with `<stem>.neff`, `file.neff` (the
capture default), or the only `.neff` in the folder.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from profaudit.errors import InputError
from profaudit.parsers.base import Probe, ReadOptions, new_profile

_TOOLS = ("neuron-explorer", "neuron-profile")
_TIMEOUT_S = 1800
_HASHED = re.compile(r"^(\d+)_instid_\d+_vnc_\d+\.ntff$")
_RANK = re.compile(r"^(.*?)(?:_rank_\d+|_exec_\d+)?\.ntff$")


def find_tool(options: ReadOptions | None = None) -> str | None:
    explicit = (options.neuron_profile if options else None) or os.environ.get("PROFAUDIT_NEURON_PROFILE")
    if explicit:
        return explicit
    for t in _TOOLS:
        found = shutil.which(t)
        if found:
            return found
    return None


def neff_candidates(ntff: Path) -> list[Path]:
    """Where the matching NEFF would be, most specific first (existing or not)."""
    d = ntff.parent
    name = ntff.name
    m = _HASHED.match(name)
    if m:
        h = m.group(1)
        return [d / f"neff_{h}.neff", *sorted(d.glob(f"neff_{h}_vnc_*.neff"))] or [d / f"neff_{h}.neff"]
    if name.startswith("profile_nc_") and "_session_" in name:
        return sorted(d.glob("neff_*.neff")) or [d / "neff_<hash>_vnc_0.neff"]
    stem = _RANK.match(name).group(1) if _RANK.match(name) else ntff.stem
    cands = [d / f"{ntff.stem}.neff"]
    if stem != ntff.stem:
        cands.append(d / f"{stem}.neff")
    cands.append(d / "file.neff")
    neffs = sorted(d.glob("*.neff"))
    if len(neffs) == 1 and neffs[0] not in cands:
        cands.append(neffs[0])
    return cands


def find_neff(ntff: Path) -> Path | None:
    for c in neff_candidates(ntff):
        if c.is_file():
            return c
    return None


def _how_to(ntff: Path, neff: str) -> str:
    return (
        f"run `neuron-explorer view -n {neff} -s {ntff.name} --output-file <dir>` (Parquet, the default) "
        f"or `neuron-profile view -n {neff} -s {ntff.name} --output-format json --output-file profile.json` "
        "and load the result, or install aws-neuronx-tools and pass --neuron-profile / set PROFAUDIT_NEURON_PROFILE"
    )


class NeuronNtffParser:
    name = "neuron_ntff"
    source = "neuron"
    suffixes = (".ntff",)
    description = "AWS Neuron device trace (.ntff + its .neff), converted through neuron-explorer / neuron-profile"

    def sniff(self, probe: Probe) -> bool:
        return not probe.is_dir and probe.name_endswith(".ntff") and len(probe.raw_head) >= 16

    def read(self, path: Path, options: ReadOptions):
        path = Path(path)
        neff = find_neff(path)
        tool = find_tool(options)
        if neff is None:
            looked = ", ".join(c.name for c in neff_candidates(path)[:4])
            extra = "" if tool else "; then " + _how_to(path, "<the .neff>")
            raise InputError(path, f"an NTFF is decoded only together with the NEFF that produced it: put it beside the .ntff (looked for {looked}){extra}")
        if tool is None:
            raise InputError(path, "NTFF device traces are readable only through AWS's neuron-explorer/neuron-profile, which is not installed: " + _how_to(path, neff.name))
        return convert_and_read(path, neff, tool, options)


def convert_and_read(ntff: Path, neff: Path, tool: str, options: ReadOptions):
    """Run the AWS tool into a temporary folder and read its output with profaudit's readers."""
    from profaudit.parsers.neuron_json import PARSER as JSON_PARSER
    from profaudit.parsers.neuron_parquet import PARSER as PARQUET_PARSER

    explorer = "explorer" in Path(tool).name
    with tempfile.TemporaryDirectory(prefix="profaudit-ntff-") as tmp:
        out = Path(tmp) / ("parquet" if explorer else "profile.json")
        if explorer:
            cmd = [tool, "view", "-n", str(neff), "-s", str(ntff), "--output-file", str(out)]
        else:
            cmd = [tool, "view", "--output-format", "json", "--output-file", str(out), "-n", str(neff), "-s", str(ntff)]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT_S)
        except FileNotFoundError:
            raise InputError(ntff, f"cannot run {tool}: no such executable") from None
        except subprocess.TimeoutExpired:
            raise InputError(ntff, f"{Path(tool).name} did not finish within {_TIMEOUT_S} s") from None
        if res.returncode != 0:
            last = next((l.strip() for l in reversed((res.stderr or res.stdout or "").splitlines()) if l.strip()), "")
            raise InputError(ntff, f"{Path(tool).name} failed (exit {res.returncode}){': ' + last if last else ''}")
        if explorer:
            target = out
            if not target.is_dir() or not any(target.glob("*.parquet")):
                found = sorted({p.parent for p in Path(tmp).rglob("*.parquet")})
                if not found:
                    raise InputError(ntff, f"{Path(tool).name} wrote no Parquet tables")
                target = found[0]
            prof = PARQUET_PARSER.read(target, options)
        else:
            if not out.is_file():
                raise InputError(ntff, f"{Path(tool).name} wrote no JSON output")
            prof = JSON_PARSER.read(out, options)
        profiles = []
        for i, p0 in enumerate(prof if isinstance(prof, list) else [prof]):
            # the profile is the NTFF's: new_profile names it (path, format, size, id), not the
            # temporary output it was read from
            md = {k: v for k, v in p0.metadata.items() if k not in ("path", "format", "file_bytes")}
            md.update(neff_path=str(neff), converted_with=" ".join([Path(tool).name, *cmd[1:2]]), **_capture_from_name(ntff))
            profiles.append(new_profile(ntff, PARSER, dict(p0.tables), md, id_suffix=str(i) if i else ""))
        return profiles


def _capture_from_name(ntff: Path) -> dict:
    from profaudit.parsers.neuron_common import capture_evidence

    ev = capture_evidence(ntff.name, None)
    return {k: v for k, v in ev.items() if k.startswith("capture_")}


PARSER = NeuronNtffParser()
