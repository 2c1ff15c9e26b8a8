"""Dashboard pages, one module each, in navigation order.

Each module defines NAME, PATH, DESCRIPTION, `layout(**query)` and `register(app)` (its
callbacks); `create_app` imports exactly these, so no other file in this folder becomes a page.
"""

PAGES: tuple[str, ...] = ("overview", "kernels", "timeline", "roofline", "timing", "ranks", "compare", "audit")
