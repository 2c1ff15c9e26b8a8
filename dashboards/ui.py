"""What every page shares: the state accessor, the callback guard, messages, tables, numbers."""

from __future__ import annotations

import functools
import json
import logging
import math
from typing import Any, Callable, Collection, Sequence

import polars as pl
from dash import html, no_update
from dash.exceptions import PreventUpdate

from profaudit.errors import ProfauditError, first_line
from profaudit.fmt import fmt_num  # noqa: F401  (the one formatter, re-exported for the pages)

log = logging.getLogger("profaudit.dashboards")


def state():
    """The `DashboardState` of the app serving the current request."""
    from flask import current_app

    from profaudit.dashboards.state import STATE_KEY

    return current_app.config[STATE_KEY]


# -- messages -----------------------------------------------------------------------------------


def message(text: str, kind: str = "error") -> html.Div:
    """A message box; kind is error, warn, info or ok. Errors carry role=alert for screen readers."""
    return html.Div(text, className=f"msg msg-{kind}", role="alert" if kind == "error" else "status")


def error_text(exc: BaseException) -> str:
    if isinstance(exc, ProfauditError):
        return str(exc)
    first = first_line(exc)
    return f"internal error: {type(exc).__name__}{': ' + first if first else ''} (the server log has the traceback)"


def guarded(fallback: Sequence[Any] | None = None, msg_at: int = -1):
    """Turn any exception in a callback into a message in the page instead of a failed request.

    `fallback` holds what each output gets on error (default: no_update everywhere); the output at
    `msg_at` gets the message. Single-output callbacks pass fallback=None and get the message.
    """

    def deco(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except PreventUpdate:
                raise
            except Exception as exc:  # every failure becomes a message: a callback never crashes the page
                if not isinstance(exc, ProfauditError):
                    log.exception("dashboard callback %s failed", fn.__name__)
                msg = message(error_text(exc))
                if fallback is None:
                    return msg
                out = list(fallback)
                out[msg_at] = msg
                return out

        wrapper.__wrapped__ = fn
        return wrapper

    return deco


# -- tables ---------------------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, className: str = "tbl", id: str | None = None, numeric: Collection[int] = ()) -> html.Table:
    """A table; cells of the column indices in `numeric` get class "num" (right-aligned digits)."""
    head = html.Thead(html.Tr([html.Th(h) for h in headers]))
    # className only where set: a null prop on every cell would ride along in each page's layout JSON
    body = html.Tbody([html.Tr([html.Td(_cell(v), className="num") if j in numeric else html.Td(_cell(v)) for j, v in enumerate(r)]) for r in rows])
    kw = {"id": id} if id else {}
    return html.Table([head, body], className=className, **kw)


def kv_table(pairs: Sequence[tuple[str, Any]], *, className: str = "tbl kv") -> html.Table:
    return html.Table(html.Tbody([html.Tr([html.Th(k), html.Td(_cell(v))]) for k, v in pairs]), className=className)


# Text longer than this goes in a bounded, scrolling box (style.css .long-text): one kernel name of
# 4,000 characters made a kernel's detail table thousands of pixels tall.
LONG_TEXT = 300


def _cell(v: Any) -> Any:
    if v is None:
        return "—"
    if isinstance(v, float):
        return fmt_num(v)
    if isinstance(v, (html.Div, html.Span, html.A, html.Details, html.Code, html.B)):
        return v
    s = str(v)
    return html.Div(s, className="long-text") if len(s) > LONG_TEXT else s


def frame_rows(df: pl.DataFrame, columns: Sequence[str] | None = None) -> tuple[list[str], list[list[Any]]]:
    cols = list(columns or df.columns)
    return cols, [list(r) for r in df.select(cols).iter_rows()]


def pretty_json(obj: Any) -> str:
    return json.dumps(obj, indent=1, default=str, sort_keys=True)


def severity_badge(label: str) -> html.Span:
    return html.Span(label.upper(), className=f"badge badge-{label.lower()}")


def empty_figure(text: str) -> dict:
    """A blank chart carrying a centred note (a chart area never goes missing)."""
    return {
        "data": [],
        "layout": {
            "xaxis": {"visible": False},
            "yaxis": {"visible": False},
            "annotations": [{"text": text, "showarrow": False, "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5, "font": {"size": 14, "color": "#666"}}],
            "height": 320,
            "margin": {"l": 20, "r": 20, "t": 20, "b": 20},
            "paper_bgcolor": "white",
            "plot_bgcolor": "white",
        },
    }


# Dash's dropdown builds a search index over every option label in the browser; labels of a few
# thousand characters (C++ template kernel names) stall the tab for minutes, so labels that come
# from profiles are bounded. The option's value still names the full thing.
OPTION_LABEL_MAX = 160


def option_label(text: object, limit: int = OPTION_LABEL_MAX) -> str:
    """`text` cut in the middle to at most `limit` characters (head and tail keep what tells
    kernels apart: the name and the last template arguments or parameters)."""
    s = " ".join(str(text).split())
    if len(s) <= limit:
        return s
    tail = limit // 3
    return s[: limit - tail - 1] + "…" + s[-tail:]


def page_header(title: str, intro: str) -> html.Div:
    return html.Div([html.H2(title), html.P(intro, className="intro")], className="page-header")


def no_update_list(n: int) -> list:
    return [no_update] * n


__all__ = [
    "state",
    "message",
    "guarded",
    "table",
    "kv_table",
    "fmt_num",
    "frame_rows",
    "pretty_json",
    "severity_badge",
    "empty_figure",
    "page_header",
    "error_text",
    "option_label",
]
