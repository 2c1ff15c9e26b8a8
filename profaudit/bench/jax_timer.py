"""Device time for JAX on a GPU, read from the JAX profiler's trace (FAIRNESS P6: no host clock
around asynchronous device work).

JAX exposes no CUDA events, so `JaxTraceTimer` runs each block of calls under
`jax.profiler.start_trace`, wraps each call in a `TraceAnnotation` (host side), and afterwards
reads the trace (`jax.profiler.ProfileData`): every device event (kernels, copies: the lines of
the `/device:GPU:N` planes) is assigned to the call whose host annotation contains its start
(each call ends with `block_until_ready` inside its annotation, and the cold-cache flush is
blocked on before it), and a call's time is its device span: first event start to last event
end. The trace overhead falls between calls, outside every span.

When a block's trace has no device events for some call (a profiler without the GPU plugin,
a trace format it cannot read), the block is timed with the annotations' host spans instead and
the timer switches to `time_source = "host"` for the rest of the run, with the reason in
`fallback_reason`: the log then says host, never device time it did not measure.
"""

from __future__ import annotations

import glob
import os
import tempfile
from typing import Any, Callable, Sequence

_PREFIX = "profaudit_call_"


def device_spans(data: Any, n: int) -> tuple[list[float], list[float], list[float], list[float], str | None]:
    """(device starts, device durations, host starts, host durations, problem) for calls 0..n-1
    of a trace: device figures empty when `problem` says why they cannot be had."""
    ann: dict[int, tuple[float, float]] = {}
    device: list[tuple[float, float]] = []
    for plane in data.planes:
        pname = str(plane.name)
        for line in plane.lines:
            for ev in line.events:
                name = str(ev.name)
                if pname.startswith("/host") and name.startswith(_PREFIX):
                    try:
                        i = int(name[len(_PREFIX) :])
                    except ValueError:
                        continue
                    ann[i] = (float(ev.start_ns), float(ev.start_ns) + float(ev.duration_ns))
                elif pname.startswith("/device:GPU"):
                    device.append((float(ev.start_ns), float(ev.start_ns) + float(ev.duration_ns)))
    if len(ann) != n or sorted(ann) != list(range(n)):
        return [], [], [], [], f"the trace holds {len(ann)} of the {n} call annotations"
    hs = [ann[i][0] for i in range(n)]
    hd = [ann[i][1] - ann[i][0] for i in range(n)]
    if not device:
        return [], [], hs, hd, "the trace holds no device events (no GPU profiler plugin?)"
    spans: list[list[float]] = [[] for _ in range(n)]
    order = sorted(range(n), key=lambda i: ann[i][0])
    for s, e in device:
        for i in order:
            a0, a1 = ann[i]
            if a0 <= s < a1:
                spans[i].append(s)
                spans[i].append(e)
                break
    empty = [i for i in range(n) if not spans[i]]
    if empty:
        return [], [], hs, hd, f"{len(empty)} of {n} calls have no device event inside their annotation (first: call {empty[0]})"
    return [min(x) for x in spans], [max(x) - min(x) for x in spans], hs, hd, None


class JaxTraceTimer:
    """See the module docstring."""

    synchronized = True
    method = "per_call"

    def __init__(self, profiler: Any):
        self.profiler = profiler
        self.time_source = "device_trace"
        self.fallback_reason: str | None = None
        # the budget clock (profaudit.bench.runner._Clock): measured device time plus the host
        # time between calls, not the trace's own start/stop overhead
        self.clock_ns = 0.0

    def run(self, calls: Sequence[Callable[[], Any]], flush: Callable[[], None] | None) -> tuple[list[float], list[float]]:
        prof = self.profiler
        with tempfile.TemporaryDirectory(prefix="profaudit-jax-trace-") as d:
            prof.start_trace(d)
            try:
                for i, c in enumerate(calls):
                    if flush is not None:
                        flush()
                    with prof.TraceAnnotation(f"{_PREFIX}{i}"):
                        c()
            finally:
                prof.stop_trace()
            files = glob.glob(os.path.join(d, "**", "*.xplane.pb"), recursive=True)
            data = prof.ProfileData.from_file(files[0]) if files else None
        if data is None:
            raise RuntimeError("jax.profiler wrote no trace file")
        ds, dd, hs, hd, problem = device_spans(data, len(calls))
        if problem is None and self.time_source == "device_trace":
            starts, durs = ds, dd
        else:
            if not hs:
                raise RuntimeError(f"cannot time the block from the JAX trace: {problem}")
            if self.time_source != "host":
                self.fallback_reason = problem
                self.time_source = "host"
            starts, durs = hs, hd
        if hs:
            self.clock_ns += (hs[-1] + hd[-1]) - hs[0]
        return starts, durs
