"""Rebuild the dashboard's own plotly.js bundle (dashboards/assets/plotly-charts.min.js).

plotly.js as Dash serves it registers every trace type plotly has (maps, 3-D, geo, sankey, ...):
4.8 MB whose start-up alone costs the browser's main thread about 0.9 s on every chart page. The
dashboard draws only the trace types in `profaudit.dashboards.plotly_preload.PLOTLY_TRACES`, so
its chart pages load a bundle of just those, built here from plotly.js's own sources the way
plotly.js builds its partial bundles (its `lib/` modules, esbuild, plotly's esbuild plugins):
1.6 MB, about 0.1 s to start. The bundle's first line names the plotly.js version and the trace
types; tests/test_dashboard_plotly_bundle.py checks it covers every trace type the dashboard draws.

Needs node and npm (the npm registry); not needed to install or run profaudit.

    .venv/bin/python tools/build_plotly_bundle.py [--version 4.1.1] [--out dashboards/assets/plotly-charts.min.js]

The default version is the plotly.js that the installed `plotly` Python package ships (the one
Dash would serve), so the dashboard draws with the same plotly.js either way.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# The build tools as plotly.js 4.x pins them (its package.json devDependencies).
BUILD_TOOLS = ("esbuild@0.28", "esbuild-plugin-glsl@1", "esbuild-plugin-environment@0.5", "esbuild-plugin-inline-css@0.0.1")

# plotly.js's own esbuild settings (its esbuild-config.js), with our entry and minified output.
_BUILD_JS = """
const esbuild = require('esbuild');
const { environmentPlugin } = require('esbuild-plugin-environment');
const { glsl } = require('esbuild-plugin-glsl');
const InlineCSSPlugin = require('esbuild-plugin-inline-css');
esbuild.build({
  entryPoints: ['./lib/index-profaudit.js'], outfile: './dist/plotly-profaudit.min.js',
  format: 'iife', globalName: 'Plotly', bundle: true, minify: true, sourcemap: false,
  plugins: [InlineCSSPlugin(), glsl({ minify: true }), environmentPlugin({ NODE_DEBUG: false })],
  alias: { regl: '@plotly/regl', stream: 'stream-browserify' },
  define: { global: 'window', 'define.amd': 'false' }, target: 'es2016', logLevel: 'warning',
  legalComments: 'eof',
});
"""


def shipped_version() -> str:
    """The plotly.js version in the installed plotly package's plotly.min.js header."""
    import plotly

    head = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text(encoding="utf-8", errors="replace")[:400]
    m = re.search(r"plotly\.js v(\d+\.\d+\.\d+)", head)
    if not m:
        raise SystemExit("build_plotly_bundle: cannot read the plotly.js version of the installed plotly package; pass --version")
    return m.group(1)


def run(cmd: list[str], cwd: Path) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=cwd, check=True)


def build(version: str, out: Path) -> None:
    from profaudit.dashboards.plotly_preload import PLOTLY_TRACES, bundle_header

    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise SystemExit(f"build_plotly_bundle: {tool} is not on PATH (install nodejs and npm)")
    with tempfile.TemporaryDirectory(prefix="plotly-bundle-") as tmp:
        work = Path(tmp)
        run(["npm", "pack", "--silent", f"plotly.js@{version}"], work)
        with tarfile.open(next(work.glob("plotly.js-*.tgz"))) as tar:
            tar.extractall(work, filter="data")
        src = work / "package"
        # --ignore-scripts: no install step of any dependency runs (esbuild ships its binary as a package)
        run(["npm", "install", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund"], src)
        run(["npm", "install", "--no-save", "--ignore-scripts", "--no-audit", "--no-fund", *BUILD_TOOLS], src)
        # scatter is in plotly's core; the others register as its partial bundles do (lib/index-*.js)
        others = [t for t in PLOTLY_TRACES if t != "scatter"]
        entry = "'use strict';\nvar Plotly = require('./core');\nPlotly.register([" + ", ".join(f"require('./{t}')" for t in others) + "]);\nmodule.exports = Plotly;\n"
        (src / "lib" / "index-profaudit.js").write_text(entry)
        (src / "build-profaudit.js").write_text(_BUILD_JS)
        run(["node", "build-profaudit.js"], src)
        body = (src / "dist" / "plotly-profaudit.min.js").read_text(encoding="utf-8")
        licence = (src / "LICENSE").read_text(encoding="utf-8").strip()
    text = bundle_header(version, PLOTLY_TRACES) + "\n/*\n" + licence.replace("*/", "* /") + "\n*/\n" + body
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out} ({len(text.encode()) / 1e6:.2f} MB): plotly.js v{version}, traces {', '.join(PLOTLY_TRACES)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", help="plotly.js version (default: the one the installed plotly package ships)")
    ap.add_argument("--out", type=Path, default=REPO / "dashboards" / "assets" / "plotly-charts.min.js")
    args = ap.parse_args()
    build(args.version or shipped_version(), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

