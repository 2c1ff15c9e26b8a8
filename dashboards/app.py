"""`create_app(paths)` builds the Dash app; `serve(paths)` runs it on 127.0.0.1.

Pages are modules listed in `profaudit.dashboards.pages.PAGES`, imported explicitly (Dash's
folder auto-discovery is off), each registered with `dash.register_page` and wired with its own
`register(app)`. The app holds one `DashboardState` in its Flask config; callbacks reach it through
`profaudit.dashboards.ui.state()`.
"""

from __future__ import annotations

import errno
import importlib
import ipaddress
import logging
import os
import re
import socket
import sys
import threading
import webbrowser
from pathlib import Path
from typing import Sequence

from profaudit.dashboards import first_paint
from profaudit.dashboards.plotly_preload import PLOTLY_BUNDLE
from profaudit.dashboards.plotly_preload import index_string as plotly_index
from profaudit.dashboards.limits import DEFAULT_CALLBACK_TIMEOUT_S
from profaudit.dashboards.state import DEFAULT_MAX_UPLOAD_BYTES, STATE_KEY, DashboardState
from profaudit.dashboards.uploads import request_limit
from profaudit.errors import UsageError

ASSETS = Path(__file__).resolve().parent / "assets"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8050
# the pages that draw plotly charts (the others, e.g. the kernel grid, never need plotly.js)
CHART_PAGES = ("timeline", "roofline", "timing", "ranks", "compare")
# the pages that show dash-ag-grid grids (the others leave its bundle out, see first_paint.py)
GRID_PAGES = ("kernels",)


def create_app(
    paths: Sequence[str | os.PathLike] = (),
    *,
    upload_dir: str | os.PathLike | None = None,
    max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES,
    specs: Sequence[str | os.PathLike] = (),
    title: str = "profaudit",
    warm: bool = True,
    callback_timeout_s: float = DEFAULT_CALLBACK_TIMEOUT_S,
    **load_options,
):
    """A Dash app over the profiles, timing logs and claim files in `paths`.

    `upload_dir`: where uploads are stored (default: a private temporary folder removed at exit).
    `max_upload_bytes`: the most one upload (all files dropped at once) may hold; larger requests
    are refused before they are read. `specs`: extra device-spec YAML files for the roofline.
    `warm`: compute the kernel grid's table and the roofline in a background thread at once, so
    the first visit to those pages does not wait for them.
    `callback_timeout_s`: the most one callback waits for its audit, comparison or upload load
    before the page says "stopped after N s" (see `profaudit.dashboards.limits`).
    `load_options` (device=, time_column=, ...) go to `profaudit.load`. Unreadable inputs are
    listed on the Overview page; a path that does not exist raises `InputError`.
    """
    import dash

    from profaudit.dashboards import pages as pages_pkg

    st = DashboardState(paths, upload_dir=upload_dir, max_upload_bytes=max_upload_bytes, specs=specs, load_options=load_options, callback_timeout_s=callback_timeout_s)
    app = dash.Dash(
        __name__,
        use_pages=True,
        pages_folder="",  # no auto-discovery: the pages below are imported explicitly
        assets_folder=str(ASSETS),
        # served to the plotly.js loader (plotly_preload.py), never put in an index by Dash: a
        # second plotly.js in every page would undo what loading one lean build saves
        assets_ignore=re.escape(PLOTLY_BUNDLE),
        title=title,
        suppress_callback_exceptions=True,
        update_title=None,
    )
    server = app.server
    server.config[STATE_KEY] = st
    # Fence 2 of the uploads (see uploads.py): bodies larger than an upload can need are refused
    # before they are read.
    server.config["MAX_CONTENT_LENGTH"] = request_limit(st.max_upload_bytes)

    modules = [importlib.import_module(f"{pages_pkg.__name__}.{name}") for name in pages_pkg.PAGES]
    for order, mod in enumerate(modules):
        dash.register_page(mod.__name__, path=mod.PATH, name=mod.NAME, title=f"{mod.NAME} · {title}", order=order, layout=safe_layout(mod.layout, mod.NAME), description=mod.DESCRIPTION)
        mod.register(app)

    chart_paths = [m.PATH for m in modules if m.__name__.rsplit(".", 1)[-1] in CHART_PAGES]
    # the requested page comes inside the app layout, with per-page scripts (first_paint.py)
    first_paint.install(app, lambda container: _shell(modules, title, container), chart_paths, [m.PATH for m in modules if m.__name__.rsplit(".", 1)[-1] in GRID_PAGES])
    # chart pages opened directly fetch plotly.js while the server builds them (plotly_preload.py)
    app.index_string = plotly_index(app, chart_paths, head=first_paint.index_hook())
    app._profaudit_state = st  # for tests and callers holding the app
    if warm:
        threading.Thread(target=st.warm, name="profaudit-dashboard-warm", daemon=True).start()
    return app


def safe_layout(layout, name: str):
    """A page layout that shows a message instead of failing the page when building it fails."""
    import functools

    @functools.wraps(layout)
    def build(**query):
        from dash import html

        from profaudit.dashboards.ui import error_text, log, message

        try:
            return layout(**query)
        except Exception as exc:  # the page still opens, saying what went wrong
            log.exception("dashboard page %s failed to build", name)
            return html.Div([html.H2(name), message(error_text(exc))], className="page")

    return build


def _shell(modules, title: str, container):
    from dash import dcc, html

    nav = [dcc.Link(m.NAME, href=m.PATH, className="nav-link", id=f"nav-{m.NAME.lower()}") for m in modules]
    return html.Div(
        [
            html.Header(
                [
                    html.Div([html.Span(title, className="brand"), html.Span("kernel profiles, rooflines and fair speedup claims", className="tagline")], className="brand-box"),
                    html.Nav(nav, className="nav"),
                ],
                className="top",
            ),
            html.Main(container, className="content"),
        ],
        className="shell",
    )


# -- serving ---------------------------------------------------------------------------------------


def check_port(host: str, port: int) -> None:
    """UsageError in one line when `host:port` cannot be listened on (taken, not ours, bad host)."""
    if not (1 <= int(port) <= 65535):
        raise UsageError(f"--port {port}: choose a port between 1 and 65535")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise UsageError(f"--host {host!r}: cannot resolve it ({exc.strerror})") from None
    family, _, _, _, addr = infos[0]
    s = socket.socket(family, socket.SOCK_STREAM)
    try:
        # SO_REUSEADDR as the server sets it: a port in TIME_WAIT is free, a listening one is not.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(addr)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(f"port {port} on {host} is already in use: stop what is using it or pass --port") from None
        if exc.errno == errno.EACCES:
            raise UsageError(f"port {port} on {host}: permission denied (ports below 1024 need privileges): pass --port") from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise UsageError(f"--host {host}: not an address of this machine") from None
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    finally:
        s.close()


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(
    paths: Sequence[str | os.PathLike] = (),
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    open_browser: bool = False,
    max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES,
    upload_dir: str | os.PathLike | None = None,
    specs: Sequence[str | os.PathLike] = (),
    log=None,
    callback_timeout_s: float = DEFAULT_CALLBACK_TIMEOUT_S,
    **load_options,
) -> None:
    """Serve the dashboard until interrupted. The port is checked before anything is loaded, so a
    taken port fails at once with a one-line UsageError (the CLI prints it and exits 2)."""
    check_port(host, port)
    say = log or (lambda msg: print(msg, file=sys.stderr))
    app = create_app(paths, upload_dir=upload_dir, max_upload_bytes=max_upload_bytes, specs=specs, callback_timeout_s=callback_timeout_s, **load_options)
    st = app._profaudit_state
    url = f"http://{'localhost' if is_loopback(host) else host}:{port}/"
    if not is_loopback(host):
        say(f"warning: serving on {host}: anyone who can reach this address can read the loaded profiles and upload files (there is no login)")
    from profaudit.fmt import plural

    say(f"profaudit dashboard: {plural(st.summary().profiles, 'profile')}, {plural(len(st.claims), 'claim')}; open {url} (Ctrl-C stops it)")
    if open_browser:
        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    try:
        app.run(host=host, port=port, debug=False)
    except OSError as exc:  # lost the race for the port between the check and the bind
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


class ServerThread:
    """The app served from a background thread (tests, benchmarks, notebooks): `.url`, `.stop()`.

    Port 0 picks a free port; the socket is bound before `start()` returns, so there is no race."""

    def __init__(self, app, host: str = DEFAULT_HOST, port: int = 0):
        from werkzeug.serving import make_server

        self.server = make_server(host, port, app.server, threaded=True)
        self.port = self.server.server_port
        self.url = f"http://{host}:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, name=f"profaudit-dashboard-{self.port}", daemon=True)

    def start(self) -> "ServerThread":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self._thread.join(timeout=10)
        self.server.server_close()

    def __enter__(self) -> "ServerThread":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


__all__ = ["create_app", "serve", "check_port", "ServerThread", "DEFAULT_HOST", "DEFAULT_PORT"]
