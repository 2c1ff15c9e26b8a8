"""A time limit on the heavy work of one dashboard callback (audits, comparisons, loading uploads).

The work runs in a worker *thread*; the callback waits for it at most `timeout_s` seconds and then
answers with one line (`CallbackTimeout`: "stopped after N s: ..."). A thread, not a process: the
audit's inputs and results (claims holding ProfileSets, AuditReport objects) live in the
dashboard's memory and are not cheap or safe to pickle across a process boundary. So past the
limit the page stops *waiting*; the computation itself runs on to its end in the background (a
daemon thread, so it never holds up the server's exit). Callers cache the `Future` itself
(`DashboardState.cached_limited`), so a refresh of a slow or failed computation waits on the same
one again, or gets its stored result or error, instead of starting the work anew.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable

from profaudit.errors import ProfauditError

# Long enough for an audit with bootstrapped intervals over large timing logs on a slow machine;
# short enough that a page never appears to hang. `profaudit dashboard --callback-timeout`.
DEFAULT_CALLBACK_TIMEOUT_S = 60.0


class CallbackTimeout(ProfauditError):
    """The heavy work of a callback took longer than the dashboard's limit."""

    def __init__(self, what: str, timeout_s: float):
        self.what = what
        self.timeout_s = timeout_s
        super().__init__(
            f"stopped after {timeout_s:g} s: {what} took longer than the dashboard's limit "
            "(profaudit dashboard --callback-timeout); it goes on in the background, so a refresh later shows its result"
        )


def check_timeout(timeout_s: float) -> float:
    from profaudit.errors import UsageError

    t = float(timeout_s)
    if not t > 0 or t != t or t == float("inf"):
        raise UsageError(f"the callback time limit must be a positive number of seconds, got {timeout_s}")
    return t


def start(fn: Callable[[], Any], name: str = "profaudit-dashboard-work") -> Future:
    """Run `fn` in a daemon thread; its result or exception goes into the returned Future."""
    fut: Future = Future()

    def work() -> None:
        if not fut.set_running_or_notify_cancel():  # pragma: no cover - nothing cancels these
            return
        try:
            fut.set_result(fn())
        except Exception as exc:
            fut.set_exception(exc)
        except BaseException as exc:  # e.g. a polars PanicException: a BaseException that the
            # callback guard (which catches Exception) would let through as a failed request
            first = (str(exc).strip().splitlines() or [""])[0]
            fut.set_exception(RuntimeError(f"{type(exc).__name__}: {first}"))

    threading.Thread(target=work, name=name, daemon=True).start()
    return fut


def wait(fut: Future, what: str, timeout_s: float) -> Any:
    """`fut`'s result (or its exception raised), waiting at most `timeout_s` seconds; past that,
    `CallbackTimeout` naming `what`."""
    try:
        return fut.result(timeout=timeout_s)
    except FutureTimeout:
        if fut.done():  # finished exactly at the limit: its own outcome counts
            return fut.result()
        raise CallbackTimeout(what, timeout_s) from None


def run_limited(fn: Callable[[], Any], what: str, timeout_s: float) -> Any:
    """`fn()` with a time limit (not cached: for work whose late result is simply dropped)."""
    return wait(start(fn), what, timeout_s)


__all__ = ["CallbackTimeout", "DEFAULT_CALLBACK_TIMEOUT_S", "check_timeout", "start", "wait", "run_limited"]
