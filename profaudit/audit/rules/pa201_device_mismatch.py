from __future__ import annotations

from profaudit.audit.evidence import Evidence, device_relation
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import differ_text, unrecorded
from profaudit.audit.shared_run import settled_text


def _mig(v) -> str:
    s = str(v or "").strip().lower()
    return "none" if s in ("", "none", "no", "false", "disabled", "off") else s


def _traced_devices(ev: Evidence, role: str) -> list[dict]:
    """The devices the side's attached traces say its kernels ran on, one entry per profile and
    device: {"name", "sms", "memory", "where"}. A trace records the device it saw (Kineto
    deviceProperties, nsys TARGET_INFO_GPU): the same product name with fewer SMs is a MIG slice
    or a restricted part, whatever the claim says. Only devices that ran the profile's kernels
    count where the kernels name their device."""
    side = ev.claim.baseline if role == "baseline" else ev.claim.candidate
    ps = side.profiles
    out: list[dict] = []
    if ps is None:
        return out
    import polars as pl

    for prof in ps:
        md = prof.metadata
        where = str(md.get("path") or prof.profile_id).rsplit("/", 1)[-1]
        k = prof.tables.get("kernels") if hasattr(prof, "tables") else None
        used = None
        if k is not None and "device_id" in k.columns and k.height:
            used = set(k.get_column("device_id").drop_nulls().cast(pl.Int64).unique().to_list()) or None
        props = [(d.get("id"), d.get("name"), d.get("numSms"), d.get("totalGlobalMem")) for d in md.get("device_properties") or [] if isinstance(d, dict)]
        # nsys kernels carry the GPU's own id (the parser maps CUDA ordinals to it)
        props += [(g.get("id"), g.get("name"), g.get("sm_count"), g.get("memory_bytes")) for g in md.get("gpus") or [] if isinstance(g, dict)]
        if len(props) > 1:
            # a machine's other GPUs (a display card, idle boards) are not the side's: only the
            # ones its kernels name count, and none when the kernels name no device
            props = [d for d in props if used is not None and d[0] in used]
        for dev_id, name, sms, mem in props:
            out.append({"name": name or md.get("device_name"), "sms": sms, "memory": mem, "where": where})
        if not props and md.get("device_name"):
            out.append({"name": md.get("device_name"), "sms": None, "memory": None, "where": where})
    return out


def _shape(d: dict) -> str:
    parts = [str(d["name"])] if d.get("name") else []
    if d.get("sms"):
        parts.append(f"{d['sms']} SMs")
    if d.get("memory"):
        from profaudit.fmt import fmt_bytes

        parts.append(fmt_bytes(float(d["memory"])))
    return ", ".join(parts)


def _traced_findings(rule: "DeviceMismatch", ev: Evidence) -> list[Finding]:
    """Devices the traces record against each other: several different devices on one side (a
    job whose ranks ran on different GPUs), or the same name on both sides with different SM
    counts or memory (FAIL / WARN)."""
    out: list[Finding] = []
    seen = {se.role: _traced_devices(ev, se.role) for se in ev.sides}
    one: dict[str, dict] = {}
    for role, devs in seen.items():
        names = {str(d["name"]) for d in devs if d.get("name")}
        rep = [next(d for d in devs if str(d.get("name")) == n) for n in sorted(names)]
        differ = [d for d in rep[1:] if device_relation(str(rep[0]["name"]), str(d["name"])) == "different"]
        sms = {d["sms"] for d in devs if d.get("sms")}
        if differ:
            out.append(rule.flag(Severity.FAIL, f"the {role}'s traces record different devices: {rep[0]['name']} ({rep[0]['where']}) and {differ[0]['name']} ({differ[0]['where']}); its time is set by the slowest", role, non_comparable=True, traced_devices=devs))
        elif len(sms) > 1:
            lo = min(devs, key=lambda d: d.get("sms") or 1 << 30)
            hi = max(devs, key=lambda d: d.get("sms") or 0)
            out.append(rule.flag(Severity.FAIL, f"the {role}'s traces record devices with {hi['sms']} and {lo['sms']} SMs ({hi['where']}, {lo['where']}): a MIG slice or a restricted part on some of them", role, non_comparable=True, traced_devices=devs))
        elif devs:
            one[role] = devs[0]
    if out or len(one) < 2:
        return out
    b, c = one["baseline"], one["candidate"]
    if b.get("name") and c.get("name") and device_relation(str(b["name"]), str(c["name"])) == "different":
        return out  # names that differ are the main check's
    if b.get("sms") and c.get("sms") and b["sms"] != c["sms"]:
        out.append(rule.flag(Severity.FAIL, f"same device name but the traces record different SM counts: baseline {_shape(b)} ({b['where']}) vs candidate {_shape(c)} ({c['where']}): a MIG slice or another configuration of the part", "both", non_comparable=True, traced_baseline=b, traced_candidate=c))
    elif b.get("memory") and c.get("memory") and abs(float(b["memory"]) - float(c["memory"])) > 0.02 * max(float(b["memory"]), float(c["memory"])):
        out.append(rule.flag(Severity.WARN, f"same device name but the traces record different memory sizes: baseline {_shape(b)} ({b['where']}) vs candidate {_shape(c)} ({c['where']}): another variant or partition of the part", "both", traced_baseline=b, traced_candidate=c))
    return out


class DeviceMismatch(Rule):
    """The sides ran on different devices, MIG slices or boards.

    What it detects: device names that name different products (FAIL), different MIG profiles
    (FAIL), and, for the same product, different device UUIDs (WARN: another board of the same
    model). Device names come from the claim, profile metadata and sample columns. Both sides timed
    in one run of one file (a wide log with a column per side) ran on one device, named or not:
    that passes, unless the file records several devices or hosts or its columns are named after
    different devices (WARN). The attached traces are read too: a side whose traces record different
    devices (ranks on different GPUs), or the same name with different SM counts on the two sides
    (a MIG slice reports its parent's name with fewer SMs) -> FAIL; different memory sizes -> WARN.

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
        out: list[Finding] = [f for f in _traced_findings(self, ev) if not ev.intended("device")]
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
