from __future__ import annotations

import re

from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity


def _framework(v) -> tuple[str, str] | None:
    m = re.match(r"^\s*([A-Za-z][\w.\-]*)[\s=@/v]*([0-9][\w.+\-]*)?\s*$", str(v))
    if not m:
        return None
    return m.group(1).lower(), (m.group(2) or "")


def _norm(v) -> str:
    return str(v).strip().lower().lstrip("v")


class VersionMismatch(Rule):
    """Driver, CUDA or library versions differ between the sides.

    What it detects: different GPU driver versions, CUDA (or ROCm/Neuron runtime) versions,
    framework versions (same framework only: torch vs triton is the comparison itself) and
    versions of the same library in `meta.versions` / `<lib>_version`. Both sides timed in one run
    of one file (a wide log with a column per side) share every version, recorded or not.

    Why it matters: cuBLAS, cuDNN, compilers and drivers change kernel selection and performance
    between releases; a speedup measured across versions mixes the kernel's effect with the
    upgrade. It is a warning, not a failure: the comparison may still be what the author meant.

    Example: baseline driver 535.104 with torch 2.1, candidate driver 550.54 with torch 2.3: WARN.
    """

    code = "PA202"
    name = "version-mismatch"
    severity = Severity.WARN
    pitfalls = ("P3",)
    needs = ("driver / CUDA / library versions of both sides",)

    def check(self, ev: Evidence) -> list[Finding]:
        b, c = ev.baseline, ev.candidate
        diffs, compared = [], []
        for key in ("driver", "cuda_version"):
            fb, fc = b.fact(key), c.fact(key)
            if fb is not None and fc is not None:
                compared.append(key)
                if _norm(fb.value) != _norm(fc.value):
                    diffs.append({"key": key, "baseline": fb, "candidate": fc})
        fb, fc = b.fact("framework"), c.fact("framework")
        if fb is not None and fc is not None:
            pb, pc = _framework(fb.value), _framework(fc.value)
            if pb and pc and pb[0] == pc[0] and pb[1] and pc[1]:
                compared.append("framework")
                if _norm(pb[1]) != _norm(pc[1]):
                    diffs.append({"key": "framework", "baseline": fb, "candidate": fc})
        vb, vc = b.get("versions") or {}, c.get("versions") or {}
        # the same fact under another name (ncu's "Display Driver Version" is the driver) is said once
        said = {(_norm(getattr(d["baseline"], "value", d["baseline"])), _norm(getattr(d["candidate"], "value", d["candidate"]))) for d in diffs}
        for lib in sorted(set(vb) & set(vc)):
            compared.append(lib)
            if _norm(vb[lib]) != _norm(vc[lib]) and (_norm(vb[lib]), _norm(vc[lib])) not in said:
                said.add((_norm(vb[lib]), _norm(vc[lib])))
                diffs.append({"key": lib, "baseline": vb[lib], "candidate": vc[lib]})
        if diffs:
            text = "; ".join(f"{d['key']} {getattr(d['baseline'], 'value', d['baseline'])} vs {getattr(d['candidate'], 'value', d['candidate'])}" for d in diffs)
            return [self.flag(Severity.WARN, f"versions differ between the sides: {text}", "both", differences=diffs)]
        if not compared:
            sr = ev.shared_run
            if sr is not None and sr.not_one_device is None:
                # one process on one machine timed both sides: one driver, one runtime, one of each library
                return [self.ok(f"{sr.where}, so one driver, CUDA runtime and set of library versions", shared_files=list(sr.files))]
            return [self.cannot("no driver, CUDA or library version is recorded for both sides")]
        return [self.ok(f"same versions on both sides ({', '.join(compared)})")]


RULE = VersionMismatch()
