"""Charts the pages draw from library results: the interactive roofline and the timing views.

The roofline chart sends its points as typed arrays (base64 buffers plotly.js reads directly) in
WebGL traces. Up to `MAX_EXACT_POINTS` points go as they are. Beyond that, points that would land
on the same spot of the chart are sent once (screen-space level of detail: the visible log-log
range is cut into `BINS_X` x `BINS_Y` cells, under half a marker across, and each occupied
cell keeps one kernel and the count of kernels in it), so 100k kernels x 3 memory levels cost
what their distinct positions cost; zooming asks the server for the zoomed range at the same
resolution, so detail comes back where the user looks. Ceilings come from `DeviceSpec` peaks, at
the datasheet clock and/or rescaled to the median clock the device's kernels were measured at.

The timing views take steady state and drift from `profaudit.audit.stats` (the same detectors the
audit rules use), so what the chart marks as warm-up or drift is what the audit judges.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import polars as pl

from profaudit.roofline import median_kernel_clock, roofs_at
from profaudit.roofline_plot import si
from profaudit.schema import MEMORY_LEVELS

LEVEL_STYLE = {"dram": ("circle", "DRAM"), "l2": ("square", "L2"), "l1": ("diamond", "L1"), "llc": ("x", "LLC"), "vmem": ("x", "VMEM"), "cmem": ("x", "CMEM"), "sbuf": ("x", "SBUF"), "psum": ("x", "PSUM"), "sram": ("x", "SRAM")}
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"]
# One group of points per level (one profile, or every profile merged): levels told apart by
# colour, every marker a circle. WebGL draws circles without a symbol texture; squares and diamonds
# make plotly rasterise a distance field per symbol on the page's main thread and the GPU process
# compile a second marker program (about 60 ms and 110 ms of CPU there on a first render).
# Several profiles keep colour per profile and a symbol per level.
LEVEL_COLOR = {"dram": "#1f77b4", "l2": "#ff7f0e", "l1": "#2ca02c"}
DEVICE_COLORS = ["#333333", "#7a3e9d", "#00707a", "#a0522d", "#4b6cb7"]
# Up to this many points every point is sent; beyond, one point per occupied screen cell.
MAX_EXACT_POINTS = 20_000
# Markers are MARKER_SIZE px across; the plotting area is at most about PLOT_PX at the chart's
# default size. A cell is under half a marker there (2.6 x 1.7 px), so kernels sharing a cell
# would draw as overlapping markers anyway: finer cells only add points for WebGL to draw (at 100k
# kernels x 3 levels, 1000 x 600 cells sent 13,406 points, these 3,855, each costing WebGL time).
MARKER_SIZE = 7
PLOT_PX = (1300, 520)
BINS_X, BINS_Y = 500, 300
MAX_PROFILE_TRACES = 10
CLOCK_LABEL = {"boost": "datasheet", "kernel": "measured clock"}


def typed(a: np.ndarray) -> dict:
    """A numpy array as plotly.js's typed-array spec (no per-element JSON)."""
    a = np.ascontiguousarray(a)
    return {"dtype": a.dtype.str.lstrip("<|="), "bdata": base64.b64encode(a.tobytes()).decode("ascii")}


def plain(text: object) -> str:
    """Text from a profile as plotly shows it literally: its labels are pseudo-HTML (a kernel name
    like `gemm<float, 128>` must not become a tag) and hover templates expand `%{...}`."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("%", "&#37;")


def _base_layout(trace_types: tuple[str, ...] = ("scatter", "scattergl"), **kw) -> dict:
    """plotly_white with its per-trace defaults only for `trace_types` (the template names every
    trace type plotly has; the browser would parse and merge them into a chart that uses two)."""
    import plotly.graph_objects as go

    layout = go.Figure(layout=dict(template="plotly_white", **kw)).to_plotly_json()["layout"]
    tdata = layout["template"].get("data", {})
    layout["template"]["data"] = {k: v for k, v in tdata.items() if k in trace_types}
    return layout


# -- roofline ---------------------------------------------------------------------------------------


@dataclass
class RooflineResult:
    figure: dict
    notes: list[str] = field(default_factory=list)
    points: int = 0  # kernel x level points in the data
    sent: int = 0  # points in the figure (fewer when cells merged them)
    # per trace (curveNumber) the rows of `rf` its points stand for, None for ceiling lines: a click
    # on a WebGL point may arrive without its customdata (typed arrays), never without its
    # curveNumber and pointIndex, so the server maps those back to the kernel
    rows: list = field(default_factory=list)


def _cells(lx: np.ndarray, ly: np.ndarray, view: tuple[float, float, float, float]) -> tuple[np.ndarray, np.ndarray]:
    """(index of one point per occupied cell, points in that cell) over the log10 `view`."""
    x0, x1, y0, y1 = view
    bx = np.clip(((lx - x0) / max(x1 - x0, 1e-12) * BINS_X).astype(np.int64), 0, BINS_X - 1)
    by = np.clip(((ly - y0) / max(y1 - y0, 1e-12) * BINS_Y).astype(np.int64), 0, BINS_Y - 1)
    _, first, counts = np.unique(bx * BINS_Y + by, return_index=True, return_counts=True)
    return first, counts


def _some(names: Sequence[str], most: int = 8) -> str:
    return ", ".join(names) if len(names) <= most else f"{', '.join(names[:most])} and {len(names) - most} more"


def roofline_figure(
    rf: pl.DataFrame,
    specs: Mapping[str, object],
    *,
    levels: Sequence[str],
    precisions: Sequence[str],
    clocks: Sequence[str] = ("boost",),
    sparse: bool = False,
    view: tuple[float, float, float, float] | None = None,
    max_exact: int = MAX_EXACT_POINTS,
    labels: Mapping[str, str] | None = None,
) -> RooflineResult:
    """A plotly figure (as a dict) for a `profaudit.roofline.roofline(..., clock="both")` frame.

    Points: one per kernel and selected memory level (x = arithmetic intensity at that level,
    y = achieved FLOP/s), customdata = the row's index in `rf`; beyond `max_exact` points, one per
    occupied screen cell of `view` (log10 x0, x1, y0, y1; default: all points). Ceilings: every
    selected precision and level of every device in `rf`, at each clock in `clocks` ('boost' =
    datasheet, 'kernel' = the median measured clock of that device's kernels).
    """
    notes: list[str] = []
    traces: list[dict] = []
    point_rows: list = []
    xs_min, xs_max, ys_min, ys_max = math.inf, 0.0, math.inf, 0.0
    pids = rf["profile_id"].unique(maintain_order=True).to_list() if rf.height else []
    by_profile = len(pids) <= MAX_PROFILE_TRACES
    point_levels = [lv for lv in levels if lv in MEMORY_LEVELS]
    ach = rf["achieved_flops_per_s"].to_numpy().astype(np.float64, copy=False) if rf.height else np.array([])
    names_all = rf["short_name"].fill_null(rf["name"]).fill_null("?").to_numpy() if rf.height else np.array([])
    level_pts = {}
    for lv in point_levels:
        ai = rf[f"ai_{lv}_flops_per_byte"].to_numpy().astype(np.float64, copy=False) if rf.height else np.array([])
        ok = np.isfinite(ai) & np.isfinite(ach) & (ai > 0) & (ach > 0)
        if ok.any():
            level_pts[lv] = (ai, ok)
    total = sum(int(ok.sum()) for _, ok in level_pts.values())
    if total:
        all_x = np.concatenate([ai[ok] for ai, ok in level_pts.values()])
        all_y = np.concatenate([ach[ok] for _, ok in level_pts.values()])
        xs_min, xs_max, ys_min, ys_max = float(all_x.min()), float(all_x.max()), float(all_y.min()), float(all_y.max())
    binned = total > max_exact
    if binned:
        if view is None:
            pad_x = max((math.log10(xs_max) - math.log10(xs_min)) * 0.01, 1e-6)
            pad_y = max((math.log10(ys_max) - math.log10(ys_min)) * 0.01, 1e-6)
            cells_view = (math.log10(xs_min) - pad_x, math.log10(xs_max) + pad_x, math.log10(ys_min) - pad_y, math.log10(ys_max) + pad_y)
        else:
            cells_view = view
    n_sent = 0
    groups = [(pid, (rf["profile_id"] == pid).to_numpy()) for pid in pids] if by_profile else [("all profiles", np.ones(rf.height, dtype=bool))]
    for lv, (ai, ok) in level_pts.items():
        symbol, label = LEVEL_STYLE[lv]
        if len(groups) == 1:
            symbol = "circle"
        for gi, (gname_raw, gmask) in enumerate(groups):
            gname = plain((labels or {}).get(gname_raw, gname_raw))
            idx = np.flatnonzero(ok & gmask).astype(np.int32)
            if idx.size == 0:
                continue
            x, y = ai[idx], ach[idx]
            counts = None
            if binned:
                lx, ly = np.log10(x), np.log10(y)
                if view is not None:
                    inside = (lx >= view[0]) & (lx <= view[1]) & (ly >= view[2]) & (ly <= view[3])
                    idx, x, y, lx, ly = idx[inside], x[inside], y[inside], lx[inside], ly[inside]
                    if idx.size == 0:
                        continue
                first, counts = _cells(lx, ly, cells_view)
                idx, x, y = idx[first], x[first], y[first]
            n_sent += int(idx.size)
            t = {
                "type": "scattergl",
                "mode": "markers",
                "name": f"{gname} · {label}",
                "legendgroup": f"pts-{lv}",
                "x": typed(x.astype(np.float64)),
                "y": typed(y.astype(np.float64)),
                "customdata": typed(idx),
                "marker": {"symbol": symbol, "size": MARKER_SIZE, "opacity": 0.7, "color": LEVEL_COLOR[lv] if len(groups) == 1 else PALETTE[gi % len(PALETTE)]},
                "hovertemplate": f"<b>%{{text}}</b><br>AI ({label}) %{{x:.3g}} FLOP/B<br>%{{y:.3s}}FLOP/s<extra>{gname}</extra>",
            }
            names = names_all[idx]
            if counts is None:
                t["text"] = [plain(str(n)[:120]) for n in names]
            else:
                t["text"] = [plain(str(n)[:80]) if c == 1 else f"{plain(str(n)[:80])} and {c - 1:,} more kernels here" for n, c in zip(names, counts, strict=True)]
            traces.append(t)
            point_rows.append(idx)
    if binned:
        notes.append(f"{total:,} points drawn as {n_sent:,} distinct positions (one per {BINS_X} x {BINS_Y} cell of the visible range); zoom in for detail, click a point for its kernel")
    if rf.height and total == 0:
        notes.append("no kernel has both FLOPs and bytes at the selected memory levels, so there are no points to place")

    ceilings: list[dict] = []
    keys = [k for k in rf["device_key"].unique(maintain_order=True).to_list() if k] if rf.height else []
    device_keys = rf["device_key"].to_numpy() if rf.height else np.array([])
    # Only a level that has points on a device lacks something when its spec has no bandwidth for
    # it; devices missing the same levels share one note (a mixed load lists a dozen devices).
    unceiled: dict[tuple[str, ...], list[str]] = {}
    pointed: list[str] = []
    for key in keys:
        on_device = device_keys == key
        if any((ok & on_device).any() for _, ok in level_pts.values()):
            pointed.append(key)
        missing = tuple(lv for lv, (_, ok) in level_pts.items() if lv not in specs[key].levels() and (ok & on_device).any())
        if missing:
            unceiled.setdefault(missing, []).append(key)
    if total and len(pointed) < len(keys):
        # Ceilings of devices none of whose kernels is a point only crowd the chart (a folder of
        # mixed profiles drew fifteen devices' roofs around three devices' points); with no
        # points at all, every device's roofs are drawn for reference.
        idle = [k for k in keys if k not in pointed]
        notes.append(f"no roofs drawn for {_some(idle)}: none of {'its' if len(idle) == 1 else 'their'} kernels has FLOPs and bytes to place")
        keys = pointed
    for missing, devs in unceiled.items():
        lv_names = " and ".join(LEVEL_STYLE[lv][1] for lv in missing)
        whose = f"{devs[0]}'s spec publishes" if len(devs) == 1 else f"the specs of {_some(devs)} publish"
        notes.append(f"{whose} no {lv_names} bandwidth, so {lv_names} points on {'it' if len(devs) == 1 else 'them'} have no memory ceiling")
    unclocked: list[str] = []
    for di, key in enumerate(keys):
        spec = specs[key]
        color = DEVICE_COLORS[di % len(DEVICE_COLORS)]
        for clock in clocks:
            clk = None
            if clock == "kernel":
                clk = median_kernel_clock(rf, key)
                if clk is None:
                    unclocked.append(key)
                    continue
            tag = "datasheet" if clock == "boost" else f"at {clk / 1e6:.0f} MHz measured"
            dash = "solid" if clock == "boost" else "dash"
            peaks, bws = roofs_at(spec, clk, sparse=sparse, precisions=precisions, levels=levels)
            missing = [p for p in precisions if p not in peaks and spec.peak(p, sparse=sparse) is not None]
            if missing and clock == "kernel":
                notes.append(f"{key}: the vendor states no clock for {', '.join(missing)}, so those peaks cannot be moved to the measured clock")
            ceilings.append({"key": key, "color": color, "dash": dash, "tag": tag, "peaks": peaks, "bws": bws})
            for v in peaks.values():
                ys_max = max(ys_max, v)
            for v in peaks.values():
                for w in bws.values():
                    xs_min, xs_max = min(xs_min, v / w), max(xs_max, v / w)
    if unclocked:
        notes.append(f"no measured kernel clock on {_some(unclocked)}, so {'it has' if len(unclocked) == 1 else 'they have'} no ceilings at the measured clock")
    if not math.isfinite(xs_min) or xs_max <= 0:
        xs_min, xs_max = 0.01, 1000.0
    lo, hi = xs_min / 4, xs_max * 4
    for c in ceilings:
        top = max(c["peaks"].values()) if c["peaks"] else None
        for p, v in c["peaks"].items():
            start = min((v / w for w in c["bws"].values()), default=lo)
            traces.append({
                "type": "scatter", "mode": "lines", "x": [max(start, lo), hi], "y": [v, v],
                "name": f"{c['key']}: {p} {si(v, 'FLOP/s')} ({c['tag']})", "legendgroup": f"{c['key']}-compute",
                "line": {"color": c["color"], "width": 2 if p.endswith("tensor") else 1.3, "dash": c["dash"] if c["dash"] != "solid" else ("solid" if p.endswith("tensor") else "dot")},
                "hoverinfo": "name",
            })
        for lv, w in c["bws"].items():
            end = (top / w) if top else hi
            ys_min = min(ys_min, w * lo)
            traces.append({
                "type": "scatter", "mode": "lines", "x": [lo, end], "y": [w * lo, w * end],
                "name": f"{c['key']}: {lv} {si(w, 'B/s')} ({c['tag']})", "legendgroup": f"{c['key']}-mem",
                "line": {"color": c["color"], "width": 2.2 if lv == "dram" else 1.3, "dash": c["dash"] if c["dash"] != "solid" else ("solid" if lv == "dram" else "dashdot")},
                "hoverinfo": "name",
            })
    if not math.isfinite(ys_min) or ys_max <= 0:
        ys_min, ys_max = 1e9, 1e15
    layout = _base_layout(
        # FLOP/s ticks with SI prefixes (plotly's default writes 1e9 as "1B"), as the hover text has
        # them; intensity keeps plain decimals (SI would write 0.001 FLOP/B as "1m")
        # automargin off (plotly_white turns it on): the fixed margins hold these short tick labels,
        # and a margin that grew after the first draw would draw the whole chart a second time
        xaxis={"type": "log", "title": {"text": "arithmetic intensity (FLOP / byte)"}, "range": [math.log10(lo), math.log10(hi)], "automargin": False},
        yaxis={"type": "log", "title": {"text": "performance (FLOP/s)"}, "range": [math.log10(max(ys_min, 1e-30)) - 0.3, math.log10(ys_max) + 0.3], "exponentformat": "SI", "automargin": False},
        legend={"font": {"size": 10}},
        hoverlabel={"align": "left"},
        margin={"l": 70, "r": 10, "t": 40, "b": 60},
        height=620,
        title={"text": f"Hierarchical roofline: {total:,} points, ceilings {' and '.join(CLOCK_LABEL[c] for c in clocks)}{' (2:4 sparse)' if sparse else ''}", "font": {"size": 15}},
        uirevision="roofline",
    )
    if view is not None:
        layout["xaxis"]["range"] = [view[0], view[1]]
        layout["yaxis"]["range"] = [view[2], view[3]]
    point_rows += [None] * (len(traces) - len(point_rows))  # the ceilings follow the points
    return RooflineResult({"data": traces, "layout": layout}, notes, total, n_sent, point_rows)


# -- timing ------------------------------------------------------------------------------------------

_UNITS = (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1.0))
MAX_SERIES = 12
DIST_POINTS = 4000


def time_unit(median_ns: float) -> tuple[str, float]:
    for unit, scale in _UNITS:
        if median_ns >= scale:
            return unit, scale
    return "ns", 1.0


def _throttled_reasons(reasons: np.ndarray) -> np.ndarray:
    # The audit's own reading of NVML throttle reasons (rule PA203), so chart and audit agree.
    from profaudit.samples import is_throttled

    return np.array([is_throttled(r) for r in reasons], dtype=bool)


@dataclass
class Series:
    label: str
    variant: str
    iteration: np.ndarray
    duration_ns: np.ndarray
    labelled_warmup: np.ndarray  # bool per sample: phase == warmup
    head: np.ndarray  # bool per sample: the warm-up head steady_state() detected
    throttled: np.ndarray  # bool per sample
    sm_clock_mhz: np.ndarray | None
    temperature_c: np.ndarray | None
    steady_state: object
    trend: object
    intercept_ns: float | None

    @property
    def steady(self) -> np.ndarray:
        return ~(self.labelled_warmup | self.head)


def build_series(samples: pl.DataFrame, reference_clock_mhz: float | None = None, labels: Mapping[str, str] | None = None) -> list[Series]:
    """Per-iteration series, one per (profile, variant, run), with warm-up, drift and throttling
    marked. `samples` holds raw rows of one benchmark case; `labels` names profiles (profile_id ->
    the label a person tells apart, see dashboards.labels)."""
    labels = labels or {}
    from profaudit.audit import stats

    out: list[Series] = []
    pids: list[str] = []
    keys = ["profile_id", "variant", "run"]
    ordered = samples.sort(["profile_id", "variant", "run", "iteration", "timestamp_ns"], nulls_last=True, maintain_order=True)
    groups = ordered.partition_by(keys, maintain_order=True, as_dict=True)
    for (pid, variant, run), g in groups.items():
        d = g["duration_ns"].to_numpy().astype(np.float64)
        ok = np.isfinite(d)
        g, d = g.filter(pl.Series(ok)), d[ok]
        if d.size == 0:
            continue
        it = g["iteration"].to_numpy() if g["iteration"].null_count() == 0 else np.arange(d.size)
        warm = (g["phase"] == "warmup").fill_null(False).to_numpy()
        meas_idx = np.flatnonzero(~warm)
        ss = stats.steady_state(d[meas_idx])
        head = np.zeros(d.size, dtype=bool)
        head[meas_idx[: ss.start]] = True
        steady_idx = meas_idx[ss.start:]
        tr = stats.trend(d[steady_idx])
        intercept = None
        if steady_idx.size >= 10 and math.isfinite(tr.slope_per_iteration):
            intercept = float(np.median(d[steady_idx] - tr.slope_per_iteration * it[steady_idx]))
        clocks = g["sm_clock_mhz"].to_numpy().astype(np.float64) if g["sm_clock_mhz"].null_count() < g.height else None
        temps = g["temperature_c"].to_numpy().astype(np.float64) if g["temperature_c"].null_count() < g.height else None
        thr = np.zeros(d.size, dtype=bool)
        if g["throttle_reasons"].null_count() < g.height:
            thr |= _throttled_reasons(g["throttle_reasons"].to_numpy())
        if clocks is not None:
            ref = reference_clock_mhz or (float(np.nanmax(clocks)) if np.isfinite(clocks).any() else None)
            if ref:
                thr |= np.nan_to_num(clocks, nan=np.inf) < 0.75 * ref
        vname = variant if variant is not None else labels.get(str(pid), str(pid))
        parts = [vname]
        if run is not None:
            parts.append(f"run {run}")
        out.append(Series(" · ".join(parts), vname, it.astype(np.float64), d, warm, head, thr, clocks, temps, ss, tr, intercept))
        pids.append(str(pid))
    # Variant and run name a series; the profile is added only where they leave two alike.
    seen: dict[str, int] = {}
    for s_ in out:
        seen[s_.label] = seen.get(s_.label, 0) + 1
    for s_, pid in zip(out, pids, strict=True):
        if seen[s_.label] > 1:
            s_.label = f"{s_.label} · {labels.get(pid, pid)}"
    return out


def _quantile_sample(x: np.ndarray, n: int = DIST_POINTS) -> np.ndarray:
    """At most n values with the same distribution shape (evenly spaced order statistics)."""
    if x.size <= n:
        return np.sort(x)
    return np.quantile(x, np.linspace(0, 1, n))


def timing_figures(series: Sequence[Series]):
    """(per-iteration figure, violin figure, ECDF figure, notes); figures are plotly Figures."""
    import plotly.graph_objects as go

    notes: list[str] = []
    if len(series) > MAX_SERIES:
        notes.append(f"{len(series)} series: the first {MAX_SERIES} are drawn")
        series = list(series)[:MAX_SERIES]
    allsteady = np.concatenate([s.duration_ns[s.steady] for s in series]) if series else np.array([])
    unit, scale = time_unit(float(np.median(allsteady)) if allsteady.size else 1.0)
    variants = list(dict.fromkeys(s.variant for s in series))
    color = {v: PALETTE[i % len(PALETTE)] for i, v in enumerate(variants)}
    fig = go.Figure()
    have_clock = have_temp = False
    shown: set[str] = set()

    def legend(kind: str) -> bool:
        # one legend entry per kind of mark (clicking it toggles that mark on every series)
        first = kind not in shown
        shown.add(kind)
        return first

    for s in series:
        c = color[s.variant]
        st = s.steady
        lab = plain(s.label)
        fig.add_trace(go.Scattergl(x=s.iteration[st], y=s.duration_ns[st] / scale, mode="markers", name=lab, legendgroup=lab, marker=dict(color=c, size=4, opacity=0.8),
                                   hovertemplate=f"{lab}<br>iteration %{{x}}<br>%{{y:.4g}} {unit}<extra>steady</extra>"))
        warm = s.labelled_warmup | s.head
        if warm.any():
            fig.add_trace(go.Scattergl(x=s.iteration[warm], y=s.duration_ns[warm] / scale, mode="markers", name="warm-up (labelled or detected)", legendgroup="warm-up", showlegend=legend("warm-up"),
                                       marker=dict(color="#f0a202", size=6, symbol="triangle-up", line=dict(color=c, width=1)),
                                       hovertemplate=f"{lab}<br>iteration %{{x}}<br>%{{y:.4g}} {unit}<extra>warm-up</extra>"))
        if s.throttled.any():
            fig.add_trace(go.Scattergl(x=s.iteration[s.throttled], y=s.duration_ns[s.throttled] / scale, mode="markers", name="throttled", legendgroup="throttled", showlegend=legend("throttled"),
                                       marker=dict(color="#d00000", size=8, symbol="x"),
                                       hovertemplate=f"{lab}<br>iteration %{{x}}<br>%{{y:.4g}} {unit}<extra>throttled</extra>"))
        tr = s.trend
        if s.intercept_ns is not None and st.any():
            xi = s.iteration[st]
            x0, x1 = float(xi.min()), float(xi.max())
            y0, y1 = s.intercept_ns + tr.slope_per_iteration * x0, s.intercept_ns + tr.slope_per_iteration * x1
            sig = "significant" if tr.drift_significant else "not significant"
            fig.add_trace(go.Scatter(x=[x0, x1], y=[y0 / scale, y1 / scale], mode="lines", name="drift (Theil-Sen; dashed = significant)", legendgroup="drift", showlegend=legend("drift"),
                                     line=dict(color=c, width=2, dash="dash" if tr.drift_significant else "dot"), hovertemplate=f"{lab}: drift {tr.drift_rel * 100:+.1f}% over the run ({sig})<extra></extra>"))
        if s.sm_clock_mhz is not None:
            have_clock = True
            fig.add_trace(go.Scattergl(x=s.iteration, y=s.sm_clock_mhz, mode="lines", name="SM clock (right axis)", legendgroup="clock", showlegend=legend("clock"), yaxis="y2", line=dict(color=c, width=1), opacity=0.45,
                                       hovertemplate=f"{lab}<br>%{{y:.0f}} MHz<extra>SM clock</extra>"))
        if s.temperature_c is not None:
            have_temp = True
            fig.add_trace(go.Scattergl(x=s.iteration, y=s.temperature_c, mode="lines", name="temperature (right axis)", legendgroup="temperature", showlegend=legend("temperature"), yaxis="y3", line=dict(color=c, width=1, dash="dot"), opacity=0.45,
                                       hovertemplate=f"{lab}<br>%{{y:.0f}} °C<extra>temperature</extra>"))
    right = 0.9 if (have_clock and have_temp) else 0.95 if (have_clock or have_temp) else 1.0
    layout = dict(template="plotly_white", height=560, margin=dict(l=60, r=20, t=40, b=40), title=dict(text="Per-iteration times", font=dict(size=15)),
                  xaxis=dict(title="iteration", domain=[0, right]), yaxis=dict(title=f"time ({unit})"),
                  legend=dict(font=dict(size=10), orientation="h", yanchor="top", y=-0.14, xanchor="left", x=0), uirevision="timing")
    if have_clock:
        layout["yaxis2"] = dict(title="SM clock (MHz)", overlaying="y", side="right", anchor="x", showgrid=False)
    if have_temp:
        layout["yaxis3"] = dict(title="temperature (°C)", overlaying="y", side="right", anchor="free" if have_clock else "x", position=1.0 if have_clock else None, showgrid=False)
    fig.update_layout(**layout)

    violin = go.Figure()
    ecdf = go.Figure()
    for v in variants:
        vals = np.concatenate([s.duration_ns[s.steady] for s in series if s.variant == v])
        if vals.size == 0:
            continue
        q = _quantile_sample(vals) / scale
        violin.add_trace(go.Violin(y=q, name=plain(v), box_visible=True, meanline_visible=True, points=False, line_color=color[v], spanmode="hard"))
        ecdf.add_trace(go.Scatter(x=q, y=np.linspace(0, 1, q.size) if q.size > 1 else np.array([1.0]), mode="lines", name=f"{plain(v)} (n={vals.size:,})", line=dict(color=color[v], shape="hv")))
    violin.update_layout(template="plotly_white", height=380, margin=dict(l=60, r=20, t=40, b=40), title=dict(text="Steady-state distribution per variant", font=dict(size=15)), yaxis_title=f"time ({unit})", showlegend=False)
    ecdf.update_layout(template="plotly_white", height=380, margin=dict(l=60, r=20, t=40, b=50), title=dict(text="ECDF of steady-state times", font=dict(size=15)), xaxis_title=f"time ({unit})", yaxis_title="fraction of samples ≤ x")
    # Figures, not dicts: Dash serialises a Figure's numpy arrays as typed arrays.
    return fig, violin, ecdf, notes


def series_rows(series: Sequence[Series]) -> tuple[list[str], list[list]]:
    from profaudit.fmt import fmt_ns

    hdr = ["series", "samples", "warm-up (labelled / detected)", "steady median", "MAD", "drift over run [95%]", "drift significant", "throttled"]
    rows = []
    for s in series:
        st = s.steady
        med = float(np.median(s.duration_ns[st])) if st.any() else None
        mad = float(np.median(np.abs(s.duration_ns[st] - med))) if med is not None else None
        tr = s.trend
        drift = "—" if not math.isfinite(tr.drift_rel) else f"{tr.drift_rel * 100:+.2f}%" + (f" [{tr.drift_low * 100:+.2f}, {tr.drift_high * 100:+.2f}]" if math.isfinite(tr.drift_low) else "")
        rows.append([s.label, f"{s.duration_ns.size:,}", f"{int(s.labelled_warmup.sum())} / {int(s.head.sum())} ({s.steady_state.method})", fmt_ns(med), fmt_ns(mad), drift,
                     "—" if not math.isfinite(tr.drift_rel) else ("yes" if tr.drift_significant else "no"), f"{int(s.throttled.sum())} ({s.throttled.mean() * 100:.1f}%)"])
    return hdr, rows


__all__ = ["roofline_figure", "RooflineResult", "build_series", "timing_figures", "series_rows", "typed", "time_unit"]
