"""The fleet report's plots, as PNG bytes, from :class:`~bringup.insight.fleetreport.ReportTables`.

Why matplotlib, drawn with its Agg rasteriser: the page must be static and dependable, viewed
offline, mailed, attached to a ticket, opened years later. Agg needs no display, no browser
and no JavaScript runtime (plotly, bokeh and altair hand the drawing to JS in the viewer, or
need a headless browser such as kaleido to make a static image); its PNG output depends only
on the package and the fonts it ships (DejaVu), so the same tables give the same picture on
a CI runner and a laptop; and a PNG embedded as base64 is one ``<img>`` whatever the size of
the fleet, where an inline SVG of 10 000 points would weigh megabytes. Figures are made with
:class:`matplotlib.figure.Figure`, never ``pyplot``: no global figure state and no backend
selection, so importing this module changes nothing for anyone else.

Node names are user data: mathtext is off (``text.parse_math``), so a name with ``$`` is
drawn as written and cannot break the rendering. Faulty nodes are red crosses, red rows and
red labels in every plot; large fleets drop per-node labels (unreadable beyond ~60).
"""

from __future__ import annotations

import io

import matplotlib
import pandas as pd
from matplotlib.collections import PatchCollection
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator

LABELS_UP_TO = 60
NAME_CHARS = 28
OK_COLOUR, FAULT_COLOUR = "#1f77b4", "#d62728"
VERDICT_COLOURS = {"pass": "#2ca02c", "fail": FAULT_COLOUR, "incomplete": "#ff7f0e", "unreadable": "#9467bd",
                   "pending": "#7f7f7f"}
RC = {"text.parse_math": False, "font.size": 9, "svg.fonttype": "none"}


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return buf.getvalue()


def _label_nodes(ax, axis: str, names: list[str], faulty: list[bool]) -> None:
    """Per-node tick labels (faulty ones red and marked) for a small fleet; none for a large one."""
    set_ticks = ax.set_xticks if axis == "x" else ax.set_yticks
    if len(names) > LABELS_UP_TO:
        set_ticks([])
        return
    # a long name would squeeze the axes to nothing: cut it (the page's tables have it whole)
    short = [n if len(n) <= NAME_CHARS else n[:NAME_CHARS - 1] + "…" for n in names]
    set_ticks(range(len(names)), [f"✖ {n}" if f else n for n, f in zip(short, faulty, strict=True)],
              rotation=90 if axis == "x" else 0)
    for label, f in zip(ax.get_xticklabels() if axis == "x" else ax.get_yticklabels(), faulty, strict=True):
        if f:
            label.set_color(FAULT_COLOUR)
            label.set_fontweight("bold")


def busbw_plot(busbw: pd.DataFrame, bands: pd.DataFrame) -> bytes | None:
    """One panel per SKU: each node's latest busbw, the SKU's threshold and the peer band."""
    if busbw.empty:
        return None
    skus = list(bands["sku"])
    fig = Figure(figsize=(12, 3.6 * len(skus)), layout="constrained")
    axes = fig.subplots(len(skus), 1, squeeze=False)[:, 0]
    for ax, (_, band) in zip(axes, bands.iterrows(), strict=True):
        df = busbw[busbw["sku"] == band["sku"]].reset_index(drop=True)
        x = range(len(df))
        ok = ~df["faulty"]
        ax.scatter([i for i in x if ok[i]], df.loc[ok, "busbw_gbps"], color=OK_COLOUR, s=22, label="node", zorder=3)
        ax.scatter([i for i in x if not ok[i]], df.loc[~ok, "busbw_gbps"], color=FAULT_COLOUR, marker="X", s=70,
                   label="faulty / quarantined", zorder=4)
        if pd.notna(band["threshold_gbps"]):
            ax.axhline(band["threshold_gbps"], color=FAULT_COLOUR, linestyle="--",
                       label=f"threshold {band['threshold_gbps']:g} GB/s")
        if pd.notna(band["band_lo_gbps"]):
            ax.axhspan(band["band_lo_gbps"], band["band_hi_gbps"], color="#999999", alpha=0.25,
                       label=f"peer band ({band['note']})")
            ax.axhline(band["median_gbps"], color="#555555", linewidth=1, label=f"peer median {band['median_gbps']:g}")
            how = f"peer band {band['band_lo_gbps']:.1f}-{band['band_hi_gbps']:.1f} GB/s"
        else:
            how = str(band["note"])
        ax.set_title(f"{band['sku']}: NCCL all_reduce busbw, latest burn-in of {len(df)} nodes ({how})", loc="left")
        ax.set_ylabel("busbw GB/s")
        ax.set_xlim(-1, max(len(df), 1))
        _label_nodes(ax, "x", list(df["node"]), list(df["faulty"]))
        ax.grid(axis="y", alpha=0.3)
        ax.legend(loc="lower left", fontsize=8)
    return _png(fig)


def heatmap_plot(gpus: pd.DataFrame) -> bytes | None:
    """Per-GPU temperature and gpu-burn throughput of each node's latest burn-in."""
    if gpus.empty:
        return None
    nodes = sorted(gpus["node"].unique())
    faulty = gpus.groupby("node")["faulty"].any().reindex(nodes).fillna(False).astype(bool)
    height = min(max(3.0, 0.28 * len(nodes) + 1.5), 40.0)
    fig = Figure(figsize=(12, height), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, (col, title, cmap) in zip(axes, (("max_temp_c", "max temperature (C)", "inferno"),
                                              ("gflops", "gpu-burn Gflop/s", "viridis")), strict=True):
        grid = gpus.pivot_table(index="node", columns="gpu", values=col, aggfunc="max").reindex(nodes)
        shown = grid.to_numpy(dtype=float)
        im = ax.imshow(shown, aspect="auto", cmap=cmap, interpolation="nearest")
        fig.colorbar(im, ax=ax, shrink=0.8)
        ax.set_title(title, loc="left")
        ax.set_xlabel("GPU")
        ax.set_xticks(range(len(grid.columns)), [str(c) for c in grid.columns])
        _label_nodes(ax, "y", nodes, list(faulty))
        # a red frame round each faulty node's row, as one collection (thousands of single
        # patches in a large fleet take seconds to draw)
        ax.add_collection(PatchCollection(
            [Rectangle((-0.5, i - 0.5), len(grid.columns), 1) for i, f in enumerate(faulty) if f],
            facecolor="none", edgecolor=FAULT_COLOUR, linewidth=2 if len(nodes) <= LABELS_UP_TO else 0.8))
    return _png(fig)


def _period(times: pd.Series) -> tuple[str, str]:
    """The bar width for the span of ``times`` (hours, days or weeks) and its label format."""
    span = times.max() - times.min() if times.notna().any() else pd.Timedelta(0)
    if span <= pd.Timedelta(days=2):
        return "h", "%m-%d %H:00"
    return ("D", "%Y-%m-%d") if span <= pd.Timedelta(days=120) else ("7D", "%Y-%m-%d")


def _stacked(ax, counts: pd.DataFrame, fmt: str, colours: dict[str, str] | None = None) -> None:
    bottom = pd.Series(0.0, index=counts.index)
    for col in counts.columns:
        ax.bar(range(len(counts)), counts[col], bottom=bottom, label=str(col),
               color=(colours or {}).get(str(col)))
        bottom += counts[col]
    step = max(1, len(counts) // 30)
    ax.set_xticks(range(0, len(counts), step), [t.strftime(fmt) for t in counts.index[::step]], rotation=60)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts
    ax.legend(fontsize=8, ncols=2)
    ax.grid(axis="y", alpha=0.3)


def verdicts_plot(verdicts: pd.DataFrame, reasons: pd.DataFrame) -> bytes | None:
    """Verdicts per period, and the failure reasons (by code) per period."""
    if verdicts.empty:
        return None
    when = verdicts["judged_at"].fillna(verdicts["burnin_at"])
    if when.isna().all():
        return None
    freq, fmt = _period(when)
    bucket = when.dt.floor(freq)
    fig = Figure(figsize=(12, 7), layout="constrained")
    top, bottom = fig.subplots(2, 1)
    counts = pd.crosstab(bucket, verdicts["verdict"])
    _stacked(top, counts[[c for c in VERDICT_COLOURS if c in counts] + [c for c in counts if c not in VERDICT_COLOURS]],
             fmt, VERDICT_COLOURS)
    top.set_title("burn-in verdicts over time", loc="left")
    top.set_ylabel("runs")
    failing = reasons[reasons["judged_at"].notna()]
    if failing.empty:
        bottom.text(0.5, 0.5, "no failure reasons on record", ha="center", va="center", transform=bottom.transAxes)
        bottom.set_axis_off()
    else:
        _stacked(bottom, pd.crosstab(failing["judged_at"].dt.floor(freq), failing["code"]), fmt)
        bottom.set_title("failure reasons over time (by code)", loc="left")
        bottom.set_ylabel("reasons")
    return _png(fig)


def serving_plot(nodes: pd.DataFrame) -> bytes | None:
    """Hours from planned to first serving, per node (a histogram for a large fleet)."""
    served = nodes[nodes["planned_to_serving_h"].notna()].sort_values("node")
    if nodes.empty:
        return None
    waiting = len(nodes) - len(served)
    fig = Figure(figsize=(12, min(max(2.5, 0.25 * len(served) + 1.5), 20.0)), layout="constrained")
    ax = fig.subplots()
    title = f"hours from planned to serving ({len(served)} nodes serving, {waiting} not yet)"
    if served.empty:
        ax.text(0.5, 0.5, "no node has reached serving", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
    elif len(served) > LABELS_UP_TO:
        ax.hist(served["planned_to_serving_h"], bins=40, color=OK_COLOUR)
        ax.set_xlabel("hours")
        ax.set_ylabel("nodes")
    else:
        colours = [FAULT_COLOUR if f else OK_COLOUR for f in served["faulty"]]
        ax.barh(range(len(served)), served["planned_to_serving_h"], color=colours)
        _label_nodes(ax, "y", list(served["node"]), list(served["faulty"]))
        ax.invert_yaxis()
        ax.set_xlabel("hours")
    ax.set_title(title, loc="left")
    return _png(fig)


def plots(t) -> dict[str, bytes | None]:
    """Every plot of the page by name (None: nothing to draw)."""
    with matplotlib.rc_context(RC):
        return {"busbw": busbw_plot(t.busbw, t.bands), "heatmap": heatmap_plot(t.gpus),
                "verdicts": verdicts_plot(t.verdicts, t.reasons), "serving": serving_plot(t.nodes)}
