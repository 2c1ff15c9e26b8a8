"""The profaudit dashboard (Dash): profiles, kernels, rooflines, timing, comparisons and audits in a
browser. Needs the `dashboard` extra (dash, dash-ag-grid).

    from profaudit.dashboards import create_app, serve
    serve(["report.ncu-rep", "claims/"], port=8050)      # 127.0.0.1 unless told otherwise
"""

from profaudit.errors import require

require("dash", "dashboard", "the dashboard")
require("dash_ag_grid", "dashboard", "the dashboard's kernel grid")

from profaudit.dashboards.app import create_app, serve  # noqa: E402

__all__ = ["create_app", "serve"]
