"""The fleet report's HTML page: one self-contained file.

Self-contained means the page works from a mail attachment or an air-gapped laptop: plots are
PNG embedded as ``data:`` URIs, the style sheet is inline, there is no script and nothing is
fetched (the only links are relative ones to the CSV/Parquet files next to the page, followed
only when clicked). Every string that comes from the fleet (node names, reasons, findings,
filters) goes through :func:`html.escape`; faulty nodes are marked by words as well as
colour (a "quarantined" or "failed" cell), so the marking survives printing in grey.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import pandas as pd

STYLE = """
body { font-family: DejaVu Sans, Helvetica, Arial, sans-serif; margin: 1.5em; color: #222; }
h1 { margin-bottom: 0.2em; } .meta { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; } td.num { text-align: right; }
tr.faulty td { background: #fde2e2; } tr.faulty td.mark { color: #b00; font-weight: bold; }
.empty { font-size: 1.2em; padding: 1em; background: #fff6d5; border: 1px solid #e6c200; }
.none { color: #555; font-style: italic; }
figure { margin: 0 0 1.5em; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { color: #555; font-size: 0.9em; }
"""

NODE_COLUMNS = ["node", "mark", "site", "rack", "pool", "sku", "gpus", "gpus_healthy", "stage", "held_by", "runs",
                "last_verdict", "last_judged_at", "busbw_gbps", "max_temp_c", "planned_to_serving_h", "incidents", "mtbi_h",
                "last_reasons"]
FAULT_COLUMNS = ["node", "mark", "stage", "last_verdict", "last_judged_at", "last_reasons"]
BAND_COLUMNS = ["sku", "nodes", "peers", "threshold_gbps", "min_peers", "k", "min_relative", "median_gbps",
                "scaled_mad_gbps", "band_lo_gbps", "band_hi_gbps", "note"]
CAPTIONS = {
    "busbw": ("NCCL busbw per node by SKU", ("Each node's latest all_reduce bus bandwidth; dashed red: the SKU's "
              "threshold; grey: the peer band from thresholds.yaml's peers section; red crosses: faulty nodes.")),
    "heatmap": ("Per-GPU temperature and throughput", "Latest burn-in of each node; faulty nodes framed in red."),
    "verdicts": ("Verdicts and failure reasons over time", "Runs by the time they were judged."),
    "serving": ("Time from planned to serving", ("From the first stage on record to the first hour serving; "
                "red: nodes faulty now.")),
}


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def cell(value: Any) -> tuple[str, bool]:
    """A value as table text, and whether it is a number (right-aligned)."""
    if value is None or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
        return "-", False
    if isinstance(value, pd.Timestamp):
        return value.strftime("%Y-%m-%d %H:%M"), False
    if isinstance(value, bool):
        return ("yes" if value else "no"), False
    if isinstance(value, float):
        # one decimal reads well for GB/s, C and hours; a share (0.05) would show as 0.1
        return (f"{value:.3g}" if 0 < abs(value) < 1 else f"{value:,.1f}"), True
    if isinstance(value, int):
        return str(value), True
    return str(value), False


def table(df: pd.DataFrame, columns: Sequence[str], *, faulty: str | None = None) -> str:
    """An HTML table of ``columns`` of ``df``, every cell escaped; rows where the boolean
    column ``faulty`` is true get the ``faulty`` class."""
    cols = [c for c in columns if c in df.columns]
    out = ["<table>", "<tr>" + "".join(f"<th>{esc(c)}</th>" for c in cols) + "</tr>"]
    for row in df.to_dict("records"):
        cls = ' class="faulty"' if faulty and bool(row.get(faulty)) else ""
        tds = []
        for c in cols:
            text, num = cell(row[c])
            klass = "num" if num else "mark" if c == "mark" else ""
            tds.append(f'<td class="{klass}">{esc(text)}</td>' if klass else f"<td>{esc(text)}</td>")
        out.append(f"<tr{cls}>" + "".join(tds) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def figure(name: str, png: bytes | None) -> str:
    title, caption = CAPTIONS[name]
    if png is None:
        return f'<h2>{esc(title)}</h2>\n<p class="none">Nothing to plot: no data for this view.</p>'
    data = base64.b64encode(png).decode("ascii")
    return (f'<h2>{esc(title)}</h2>\n<figure><img alt="{esc(title)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{esc(caption)}</figcaption></figure>")


def _filters(filters: dict[str, str | None]) -> str:
    shown = [f"{k} {v}" for k, v in filters.items() if v]
    return ", ".join(shown) if shown else "whole fleet"


def render(t, pngs: dict[str, bytes | None], *, filters: dict[str, str | None], at: pd.Timestamp,
           files: Iterable[str] = (), generated: datetime | None = None) -> str:
    """The page for the report tables ``t`` (:class:`~bringup.insight.fleetreport.ReportTables`)."""
    generated = generated or datetime.now(UTC)
    nodes = t.nodes
    faulty = nodes[nodes["faulty"]]
    head = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Fleet report: {esc(_filters(filters))}</title>", f"<style>{STYLE}</style></head><body>",
        f"<h1>Fleet report: {esc(_filters(filters))}</h1>",
        (f'<p class="meta">Ledger until {esc(cell(at)[0])} UTC; generated {esc(generated.strftime("%Y-%m-%d %H:%M"))} '
        f"UTC. {len(nodes)} nodes, {len(faulty)} faulty or quarantined, {len(t.verdicts)} burn-in runs, "
        f"{len(t.findings)} unreadable documents.</p>"),
    ]
    body: list[str] = []
    if nodes.empty:
        body.append(f'<p class="empty">No nodes in {esc(_filters(filters))}: there is nothing to report. '
                    "Check the site, rack and pool, or whether the nodes are in NetBox yet.</p>")
    else:
        body.append("<h2>Faulty and quarantined nodes</h2>")
        body.append(table(faulty, FAULT_COLUMNS, faulty="faulty") if not faulty.empty
                    else '<p class="none">None: no node is quarantined and no last verdict is a fail.</p>')
        for name in ("busbw", "heatmap", "verdicts", "serving"):
            body.append(figure(name, pngs.get(name)))
            if name == "busbw" and not t.bands.empty:
                body.append(table(t.bands, BAND_COLUMNS))
        body.append("<h2>Nodes</h2>")
        body.append(table(nodes, NODE_COLUMNS, faulty="faulty"))
    if not t.unitcost.empty:  # the guide's normalised cost (bringup.insight.unitcost), each term's source
        body.append("<h2>Normalised cost per pool</h2>")
        body.append(table(t.unitcost, ["pool", "term", "value", "source"]))
        body.append('<p class="meta">(compute + network + storage + support + idle + failed runs + operations) / '
                    "accepted workload units: samples, from the pool's latest passed acceptance (none: "
                    "unknown).</p>")
    body.append("<h2>Findings: evidence that could not be read</h2>")
    body.append(table(t.findings, ["node", "path", "error"]) if not t.findings.empty
                else '<p class="none">None: every evidence document was read.</p>')
    links = [f'<li><a href="{esc(f)}">{esc(f)}</a></li>' for f in files]
    if links:
        body.append("<h2>Data</h2>\n<p>The tables above and behind the plots, as CSV and Parquet:</p>\n<ul>"
                    + "\n".join(links) + "</ul>")
    return "\n".join([*head, *body, "</body></html>", ""])
