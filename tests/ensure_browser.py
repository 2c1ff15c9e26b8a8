"""Make a headless Chromium available for the browser tests, if that can be done here.

`make test` runs this before pytest. It never fails the build: where Chromium cannot be had (no
root, no network, no apt), it says so and the tests marked `browser` skip. It installs nothing
when Chromium is already there; it never runs `playwright install` (the tests drive Debian's
/usr/bin/chromium through Playwright's `executable_path`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

CHROMIUM = os.environ.get("PROFAUDIT_CHROMIUM", "/usr/bin/chromium")


def have_chromium() -> bool:
    return os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)


def have_playwright() -> bool:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return False
    return True


def _run(cmd: list[str], timeout: int) -> bool:
    try:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout, env=env).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def main() -> int:
    if not have_playwright():
        print("ensure_browser: the Python package 'playwright' is missing (pip install 'profaudit[test]'); browser tests will skip")
    if have_chromium():
        print(f"ensure_browser: {CHROMIUM} is present")
        return 0
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("apt-get") is None:
        print("ensure_browser: no Chromium and no root apt-get to install it (apt-get install chromium); browser tests will skip")
        return 0
    print("ensure_browser: installing chromium with apt-get (a few minutes)")
    ok = _run(["apt-get", "install", "-y", "-qq", "chromium"], 900) or (_run(["apt-get", "update", "-qq"], 600) and _run(["apt-get", "install", "-y", "-qq", "chromium"], 900))
    print("ensure_browser: chromium installed" if ok and have_chromium() else "ensure_browser: chromium could not be installed; browser tests will skip")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as exc:  # never fail the build over the browser
        print(f"ensure_browser: {type(exc).__name__}: {exc}; browser tests will skip")
        sys.exit(0)
