"""Headless Chromium for the dashboard's browser tests and benchmark: Debian's /usr/bin/chromium
driven by Playwright through `executable_path` (no `playwright install`)."""

from __future__ import annotations

import os

CHROMIUM = os.environ.get("PROFAUDIT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Software WebGL chatters about ReadPixels stalls; that is the renderer, not the page.
BENIGN_CONSOLE = ("GL Driver Message", "GPU stall due to ReadPixels", "Automatic fallback to software WebGL")


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the Python package playwright is not installed"
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium, or set PROFAUDIT_CHROMIUM)"
    return None


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
