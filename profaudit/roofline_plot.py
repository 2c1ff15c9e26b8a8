"""Interactive roofline chart (plotly): log-log, one ceiling per memory level and precision, one point
per kernel and memory level, hover with the kernel's name and numbers.

Points use WebGL (`Scattergl`) so profiles with thousands of kernels stay responsive. The HTML embeds
plotly.js (works offline) and is written atomically; PNG export goes through kaleido, which needs a
Chrome/Chromium it can start: `write_png` returns the reason in one line when there is none.
"""

from __future__ import annotations

import glob
import math
import os
from pathlib import Path
from typing import Iterable, Mapping

import polars as pl

from profaudit.roofline import median_kernel_clock, roofs_at
from profaudit.schema import MEMORY_LEVELS
from profaudit.specs import DeviceSpec, get_spec

_LEVEL_STYLE = {"dram": ("circle", "DRAM"), "l2": ("square", "L2"), "l1": ("diamond", "L1/shared")}
_PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"]


_SI_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def si(v: float | None, unit: str) -> str:
    """A number as '1.23 TFLOP/s' text ('—' when missing or not finite): profaudit.fmt's rule."""
    from profaudit.fmt import fmt_si

    return fmt_si(v, unit)


def _scaled_text(c: pl.Expr, unit: str, prefixes) -> pl.Expr:
    """A column as '1.23 TFLOP/s' text with the first prefix it reaches (columnar, no per-row Python)."""
    c = c.cast(pl.Float64)
    expr = pl.when(c.is_null() | c.is_nan()).then(pl.lit("—"))
    for scale, prefix in prefixes:
        expr = expr.when(c.abs() >= scale).then((c / scale).round_sig_figs(3).cast(pl.Utf8) + pl.lit(f" {prefix}{unit}"))
    return expr.otherwise(c.round_sig_figs(3).cast(pl.Utf8) + pl.lit(f" {unit}"))


def _si(col: str, unit: str) -> pl.Expr:
    return _scaled_text(pl.col(col), unit, _SI_PREFIXES)


def _si_from(c: pl.Expr, unit: str) -> pl.Expr:
    """Seconds-like quantities: s, ms, µs, ns."""
    return _scaled_text(c, unit, ((1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n")))


def _hover(pts: pl.DataFrame, level: str, label: str, sfx: str) -> list[str]:
    pct = f"roof_pct_{sfx}"
    parts = [
        pl.lit("<b>"), pl.coalesce("short_name", "name", pl.lit("?")), pl.lit("</b><br>profile "), pl.col("profile_id").fill_null("?"),
        pl.lit(" · kernel "), pl.col("kernel_id").cast(pl.Utf8).fill_null("?"), pl.lit(" · "), pl.coalesce("device_key", "device_name", pl.lit("?")),
        pl.lit("<br>duration "), _si_from(pl.col("duration_ns") * 1e-9, "s"),
        pl.lit("<br>achieved "), _si("achieved_flops_per_s", "FLOP/s"), pl.lit(" ("), pl.col("flops_precisions").fill_null("unknown precision"), pl.lit(")"),
        pl.lit(f"<br>AI ({label}) "), pl.col(f"ai_{level}_flops_per_byte").round_sig_figs(3).cast(pl.Utf8), pl.lit(" FLOP/B"),
        pl.lit(f"<br>{label} traffic "), _si(f"achieved_{level}_bytes_per_s", "B/s"),
    ]
    if pct in pts.columns:
        parts += [pl.lit("<br>attainable "), _si(f"attainable_flops_per_s_{sfx}", "FLOP/s"), pl.lit(" · "),
                  pl.col(pct).round(1).cast(pl.Utf8).fill_null("—"), pl.lit(" % of roof · bound: "), pl.col(f"bound_{sfx}").fill_null("—")]
    return pts.select(pl.concat_str(parts).alias("h")).get_column("h").to_list()


def roofline_figure(rf: pl.DataFrame, specs: Mapping[str, DeviceSpec] | None = None, *, clock: str = "boost",
                    sparse: bool = False, title: str | None = None, extra_specs: Iterable = ()):
    """A plotly Figure for a `roofline()` frame. Ceilings are drawn for every device in the frame at
    the datasheet clock (`clock='boost'`); `clock='kernel'` draws them at the median kernel clock of
    that device's kernels. Precisions no kernel used start hidden (click the legend to show them)."""
    import plotly.graph_objects as go

    sfx = "at_kernel_clock" if clock == "kernel" else "at_boost"
    keys = [k for k in rf.get_column("device_key").unique(maintain_order=True).to_list() if k] if rf.height else []
    specs = dict(specs or {})
    for k in keys:
        if k not in specs:
            specs[k] = get_spec(k, extra_specs)
    used = set()
    for s in rf.get_column("flops_precisions").drop_nulls().to_list() if rf.height else []:
        used.update(s.split("+"))

    fig = go.Figure()
    xs: list[float] = []
    ys: list[float] = []
    for level in MEMORY_LEVELS:
        ai, ach = f"ai_{level}_flops_per_byte", "achieved_flops_per_s"
        pts = rf.filter(pl.col(ai).is_not_null() & (pl.col(ai) > 0) & pl.col(ach).is_not_null() & (pl.col(ach) > 0)) if rf.height else rf
        if not pts.height:
            continue
        symbol, label = _LEVEL_STYLE[level]
        hover = _hover(pts, level, label, sfx)
        x = pts.get_column(ai).to_list()
        y = pts.get_column(ach).to_list()
        xs += x
        ys += y
        fig.add_trace(go.Scattergl(x=x, y=y, mode="markers", name=f"kernels ({label} AI)", marker=dict(symbol=symbol, size=8, opacity=0.75),
                                   text=hover, hovertemplate="%{text}<extra></extra>", legendgroup=f"pts-{level}"))

    peaks_all = []
    for i, key in enumerate(keys):
        clk = median_kernel_clock(rf, key) if clock == "kernel" else None
        peaks, bws = roofs_at(specs[key], clk, sparse=sparse)
        peaks_all += list(peaks.values())
        top = max(peaks.values()) if peaks else None
        color = _PALETTE[i % len(_PALETTE)]
        xs_dev = [v for v in xs if v > 0]
        lo = min(xs_dev + [top / max(bws.values())] if top and bws else xs_dev or [0.01]) / 10
        hi = max(xs_dev + [top / min(bws.values())] if top and bws else xs_dev or [1000]) * 10
        clk_txt = f" @ {clk / 1e6:.0f} MHz" if clk else ""
        for p, v in peaks.items():
            fig.add_trace(go.Scatter(x=[lo, hi], y=[v, v], mode="lines", line=dict(color=color, width=1.5, dash="solid" if p.endswith("tensor") else "dot"),
                                     name=f"{key}: {p} {si(v, 'FLOP/s')}{clk_txt}", legendgroup=f"{key}-compute",
                                     visible=True if (p in used or not used) else "legendonly", hoverinfo="name"))
        for lv, w in bws.items():
            x_end = (top / w) if top else hi
            fig.add_trace(go.Scatter(x=[lo, x_end], y=[w * lo, w * x_end], mode="lines", line=dict(color=color, width=2 if lv == "dram" else 1.2, dash="solid" if lv == "dram" else "dash"),
                                     name=f"{key}: {lv} {si(w, 'B/s')}{'' if lv == 'dram' else clk_txt}", legendgroup=f"{key}-mem", hoverinfo="name"))
        xs += [lo, hi]
    ys += peaks_all
    fig.update_xaxes(type="log", title="arithmetic intensity (FLOP / byte)")
    fig.update_yaxes(type="log", title="performance (FLOP/s)")
    if ys:
        pos = [v for v in ys if v and v > 0]
        if pos:
            fig.update_yaxes(range=[math.log10(min(pos)) - 0.5, math.log10(max(pos)) + 0.3])
    clock_txt = "datasheet (boost) clock" if clock != "kernel" else "median kernel clock per device"
    fig.update_layout(title=title or f"Roofline ({rf.height} kernels; ceilings at the {clock_txt}{', 2:4 sparse' if sparse else ''})",
                      template="plotly_white", legend=dict(font=dict(size=10)), hoverlabel=dict(align="left"))
    return fig


def write_html(fig, path: str | os.PathLike, *, plotlyjs: str = "embed") -> Path:
    """Write the HTML chart atomically: plotly.js embedded by default (opens offline), or a CDN
    or shared-file reference (`profaudit.plotly_assets`)."""
    from profaudit.dataset import atomic_write_text
    from profaudit.plotly_assets import ensure_bundle, include_arg

    p = Path(path)
    atomic_write_text(p, fig.to_html(include_plotlyjs=include_arg(plotlyjs), full_html=True))
    ensure_bundle(plotlyjs, p)
    return p


def _chromium_candidates() -> list[str]:
    found = []
    for pattern in ("~/.cache/ms-playwright/chromium*/chrome-linux*/chrome", "~/.cache/ms-playwright/chromium_headless_shell*/chrome-linux*/headless_shell"):
        found += sorted(glob.glob(os.path.expanduser(pattern)))
    return found


def write_png(fig, path: str | os.PathLike, *, width: int = 1400, height: int = 900) -> str | None:
    """Write the chart as PNG through kaleido; returns None on success, else the reason in one line
    (no renderer, kaleido missing). Nothing is written when it fails."""
    from profaudit.dataset import atomic_write_bytes

    try:
        import kaleido  # noqa: F401
    except ImportError:
        return "PNG not written: the Python package 'kaleido' is not installed (pip install 'profaudit[png]')"
    tries = [None] + ([] if os.environ.get("BROWSER_PATH") else _chromium_candidates())
    last = ""
    for browser in tries:
        old = os.environ.get("BROWSER_PATH")
        try:
            if browser:
                os.environ["BROWSER_PATH"] = browser
            data = fig.to_image(format="png", width=width, height=height)
            atomic_write_bytes(Path(path), data)
            return None
        except Exception as exc:  # kaleido raises RuntimeError/ChromeNotFoundError/others by version
            last = " ".join(str(exc).split()) or type(exc).__name__
        finally:
            if browser:
                if old is None:
                    os.environ.pop("BROWSER_PATH", None)
                else:
                    os.environ["BROWSER_PATH"] = old
    if "chrome" in last.lower():
        return "PNG not written: kaleido found no Chrome/Chromium to render with (run plotly_get_chrome, or set BROWSER_PATH)"
    return f"PNG not written: kaleido failed: {last[:200]}"


__all__ = ["roofline_figure", "si", "write_html", "write_png"]
