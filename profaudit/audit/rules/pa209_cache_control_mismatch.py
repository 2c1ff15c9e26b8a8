from __future__ import annotations

from profaudit.audit.evidence import Evidence
from profaudit.audit.findings import Finding, Rule, Severity
from profaudit.audit.rules._common import cache_state, unrecorded


class CacheControlMismatch(Rule):
    """Caches flushed before each call on one side only.

    What it detects: the cache state of each side, from meta.l2_flush, the samples'
    cache_state column, ncu --cache-control (all = flushed, none = hot) or the harness
    (nvbench cold, do_bench flush; nvbench batch, do_bench_cudagraph hot). Cold on one side and
    hot on the other -> FAIL.

    Why it matters: a hot-L2 side reads from cache what the cold side reads from DRAM; on small
    working sets the difference alone is up to 1.6x (TileGym PR #118), and helion PR #2986 saw a
    speedup drop below 1x once cold-L2 timing was added.

    Example: baseline timed with nvbench cold samples, candidate with a back-to-back loop: FAIL.
    """

    code = "PA209"
    name = "cache-control-mismatch"
    severity = Severity.FAIL
    pitfalls = ("P2", "P5")
    needs = ("cache state of both sides (l2_flush, cache_state column, ncu cache control or harness)",)

    def check(self, ev: Evidence) -> list[Finding]:
        sb, fb = cache_state(ev.baseline)
        sc, fc = cache_state(ev.candidate)
        missing = unrecorded(ev, sb, sc)
        if missing:
            return [self.cannot(f"the cache state of the {missing} is not recorded (meta.l2_flush, cache_control or a cache_state column)", cache_baseline=fb, cache_candidate=fc)]
        evid = {"cache_baseline": fb, "cache_candidate": fc}
        if sb != sc:
            sev = Severity.WARN if ev.intended("l2_flush") or ev.intended("cache_control") else Severity.FAIL
            return [self.flag(sev, f"caches are flushed on one side only: baseline {sb} ({fb.source}), candidate {sc} ({fc.source})", "both", non_comparable=True, **evid)]
        return [self.ok(f"both sides timed with {sb} caches", **evid)]


RULE = CacheControlMismatch()
