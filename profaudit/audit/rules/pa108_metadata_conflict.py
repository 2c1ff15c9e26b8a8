from __future__ import annotations

from profaudit.audit.claim import normalise_dtype, normalise_shape
from profaudit.audit.evidence import Evidence, Fact, device_relation
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import clock_state, time_family

# Facts that decide comparability: a contradiction here means the claim describes another run.
CRITICAL = ("device", "dtype", "time_source", "clock_control", "cache_control", "shape", "compile_mode", "cuda_graphs")
_EAGER = {"", "eager", "none", "no", "false", "off", "disabled"}
_TRUE = {"true", "1", "yes", "on"}
OTHER = ("driver", "cuda_version", "batch_size", "tf32", "l2_flush", "mig_profile", "power_limit_w")


def _same(key: str, a, b) -> bool:
    if key == "device":
        return device_relation(str(a), str(b)) != "different"
    if key == "dtype":
        return normalise_dtype(a) == normalise_dtype(b)
    if key == "shape":
        return normalise_shape(a) == normalise_shape(b)
    if key == "clock_control":
        return clock_state(a) == clock_state(b)
    if key == "time_source":
        return str(a).lower() == str(b).lower() or time_family(a) == time_family(b)
    if key == "compile_mode":
        # spellings of one compiler differ between a harness and a person; eager vs compiled does not
        return (str(a).strip().lower() in _EAGER) == (str(b).strip().lower() in _EAGER)
    if key == "cuda_graphs":
        return (str(a).strip().lower() in _TRUE) == (str(b).strip().lower() in _TRUE)
    if key in ("driver", "cuda_version"):
        return str(a).strip().lstrip("v") == str(b).strip().lstrip("v")
    if isinstance(a, float) or isinstance(b, float):
        try:
            return abs(float(a) - float(b)) <= 1e-6 * max(abs(float(a)), abs(float(b)), 1.0)
        except (TypeError, ValueError):
            return False
    return str(a).strip().lower() == str(b).strip().lower()


class MetadataConflict(Rule):
    """The claim's metadata contradicts what the attached evidence recorded.

    What it detects: for each side, a fact given by two sources that disagree: the claim's
    `meta` against profile metadata, sample columns or the benchmark harness's own metadata
    (device, dtype, time source, clock and cache control, shape, eager vs compiled, CUDA graphs ->
    FAIL; driver, CUDA version,
    batch size, TF32, L2 flush, MIG profile, power limit -> WARN). Tool defaults that nobody
    recorded (ncu's assumed clock control) do not count as evidence against the claim.

    Why it matters: every other rule trusts these facts. A claim that says H100 over a profile
    recorded on an A100, or fp16 over a log of fp32 runs, describes a different experiment.

    Example: candidate `meta.device: H100` while its ncu report says "NVIDIA A100-SXM4-80GB": FAIL.
    """

    code = "PA108"
    name = "metadata-conflict"
    severity = Severity.FAIL
    pitfalls = ("P3", "P13")
    needs = ("a fact recorded by more than one source (claim meta, profile metadata, sample columns)",)

    def check(self, ev: Evidence) -> list[Finding]:
        out: list[Finding] = []
        compared = 0
        for se in ev.sides:
            for key in CRITICAL + OTHER:
                facts = [f for f in se.all(key) if f.kind != "default" and not str(f.value).startswith("mixed:")]
                if len(facts) < 2:
                    continue
                compared += 1
                first = facts[0]
                bad: list[Fact] = [f for f in facts[1:] if not _same(key, first.value, f.value)]
                if bad:
                    sev = Severity.FAIL if key in CRITICAL else Severity.WARN
                    out.append(
                        self.flag(
                            sev,
                            f"{se.role} {key}: {first.value!r} ({first.source}) contradicts {bad[0].value!r} ({bad[0].source})",
                            se.role,
                            non_comparable=key in CRITICAL,
                            key=key,
                            facts=[first, *bad],
                        )
                    )
        if out:
            return out
        if not compared:
            return [self.cannot("no fact is recorded by more than one source")]
        from profaudit.fmt import plural

        return [self.ok(f"{plural(compared, 'fact')} recorded by several sources {'agrees' if compared == 1 else 'agree'}")]


RULE = MetadataConflict()
