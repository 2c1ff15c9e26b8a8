from __future__ import annotations

from profaudit.audit.evidence import Evidence, device_relation
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import differ_text, unrecorded
from profaudit.audit.shared_run import settled_text


def _mig(v) -> str:
    s = str(v or "").strip().lower()
    return "none" if s in ("", "none", "no", "false", "disabled", "off") else s


class DeviceMismatch(Rule):
    """The sides ran on different devices, MIG slices or boards.

    What it detects: device names that name different products (FAIL), different MIG profiles
    (FAIL), and, for the same product, different device UUIDs (WARN: another board of the same
    model). Device names come from the claim, profile metadata and sample columns. Both sides timed
    in one run of one file (a wide log with a column per side) ran on one device, named or not:
    that passes, unless the file records several devices or hosts or its columns are named after
    different devices (WARN).

    Why it matters: a speedup across devices measures the hardware. Even two boards of one SKU
    differ: one "14 % speedup" turned out to be a different B200 instance (dogacel blog), and MIG
    slices share memory bandwidth and cannot lock clocks (CUPTI docs).

    Example: baseline on "NVIDIA A100-SXM4-80GB", candidate on "NVIDIA H100 80GB HBM3": FAIL.
    """

    code = "PA201"
    name = "device-mismatch"
    severity = Severity.FAIL
    pitfalls = ("P3", "P13")
    needs = ("the device of each side (claim, profile metadata or sample column)",)
    unknown_severity = Severity.WARN

    def check(self, ev: Evidence) -> list[Finding]:
        b, c = ev.baseline, ev.candidate
        db, dc = b.fact("device"), c.fact("device")
        missing = unrecorded(ev, db, dc)
        sr = ev.shared_run
        if sr is not None and sr.column_devices is not None and (missing or device_relation(str(db.value), str(dc.value)) != "different"):
            # one file, but the columns say two machines: never a pass
            return [self.flag(Severity.WARN, f"{sr.origin}, but {sr.not_one_device}; the devices cannot be confirmed equal", "both", device_baseline=db, device_candidate=dc, shared_files=list(sr.files))]
        if missing:
            if sr is not None and sr.not_one_device is None:
                return [self.ok(settled_text(ev), device_baseline=db, device_candidate=dc, shared_files=list(sr.files))]
            why = f" ({sr.origin}, but {sr.not_one_device})" if sr is not None else ""
            return [self.cannot(f"the device of the {missing} is not recorded{why}", device_baseline=db, device_candidate=dc)]
        evid = {"device_baseline": db, "device_candidate": dc}
        rel = device_relation(str(db.value), str(dc.value))
        if rel == "different":
            sev = Severity.WARN if ev.intended("device") else Severity.FAIL
            return [self.flag(sev, "different devices: " + differ_text("device", db, dc) + (" (declared as intended)" if sev is Severity.WARN else ""), "both", non_comparable=True, **evid)]
        out: list[Finding] = []
        if rel == "compatible":
            out.append(self.flag(Severity.WARN, f"device names differ in detail and no device spec tells them apart: {db.value!r} vs {dc.value!r}", "both", **evid))
        mb, mc = b.fact("mig_profile"), c.fact("mig_profile")
        if mb is not None and mc is not None and _mig(mb.value) != _mig(mc.value):
            out.append(self.flag(Severity.FAIL, "different MIG configurations: " + differ_text("mig_profile", mb, mc), "both", non_comparable=True, mig_baseline=mb, mig_candidate=mc, **evid))
        ub, uc = b.fact("device_uuid"), c.fact("device_uuid")
        if ub is not None and uc is not None and str(ub.value).lower() != str(uc.value).lower():
            out.append(self.flag(Severity.WARN, f"same model but different boards (UUID {ub.value} vs {uc.value}): board-to-board variation is part of the difference", "both", uuid_baseline=ub, uuid_candidate=uc, **evid))
        if out:
            return out
        same_board = ub is not None and uc is not None
        if sr is not None and sr.not_one_device is None and rel == "same":
            return [self.ok(settled_text(ev), shared_files=list(sr.files), **evid)]
        return [self.ok(f"both sides ran on {db.value}" + (" (same board)" if same_board else ""), **evid)]


RULE = DeviceMismatch()
