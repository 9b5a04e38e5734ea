"""Render what a commission run did: a fleet table and one markdown summary per node.

Pure functions over :class:`~bringup.lifecycle.results.NodeReport`; the flows publish them as
Prefect artifacts and the CLI prints them with rich.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from bringup.fabric.models import best_busbw
from bringup.lifecycle.results import NodeReport, StepResult

#: figures shown as fleet-table columns, in this order, when any node has them
KEY_FIGURES = ("gpus", "busbw_gbps", "max_temp_c", "driver")


def fleet_rows(reports: Iterable[NodeReport]) -> list[dict[str, str]]:
    reports = list(reports)
    figures = [f for f in KEY_FIGURES if any(f in r.figures for r in reports)]
    rows = []
    for r in sorted(reports, key=lambda r: (r.verdict != "quarantined", r.node)):
        row = {"node": r.node, "rack": r.rack, "verdict": r.verdict, "stage": r.stage,
               "reasons": "; ".join(r.reasons) or "-"}
        for f in figures:
            v = r.figures.get(f)
            row[f] = "-" if v is None else (f"{v:.1f}" if isinstance(v, float) else str(v))
        row["netbox"] = r.netbox_url
        rows.append(row)
    return rows


def node_markdown(report: NodeReport, outcomes: Iterable[StepResult] = ()) -> str:
    lines = [f"# {report.node}: {report.verdict}", "",
             f"- stage: **{report.stage}**",
             f"- NetBox: {report.netbox_url or '-'}"]
    if report.reasons:
        lines += ["", "## Reasons", ""] + [f"- {r}" for r in report.reasons]
    if report.labels:
        lines += ["", "## Kubernetes labels", "", "| label | value |", "|---|---|"]
        lines += [f"| `{k}` | `{v}` |" for k, v in sorted(report.labels.items())]
    if report.figures:
        lines += ["", "## Figures", "", "| figure | value |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in sorted(report.figures.items())]
    outcomes = list(outcomes)
    if outcomes:
        lines += ["", "## Steps", "", "| step | result | summary |", "|---|---|---|"]
        for o in outcomes:
            result = "skipped (done before)" if o.skipped else ("ok" if o.ok else "**failed**")
            lines.append(f"| {o.step} | {result} | {o.summary or '; '.join(o.reasons)} |")
    return "\n".join(lines) + "\n"


def summary_text(reports: Iterable[NodeReport]) -> str:
    """The plain-text summary the main job prints at the end."""
    reports = sorted(reports, key=lambda r: r.node)
    admitted = [r for r in reports if r.verdict == "admitted"]
    quarantined = [r for r in reports if r.verdict == "quarantined"]
    other = [r for r in reports if r.verdict not in ("admitted", "quarantined")]
    out = [f"{len(admitted)} joined Kubernetes, {len(quarantined)} cordoned/quarantined, {len(other)} other"]
    for r in admitted:
        labels = ", ".join(f"{k.split('/')[-1]}={v}" for k, v in sorted(r.labels.items()) if k.startswith("bringup.io/"))
        out.append(f"  JOINED      {r.node}: {labels}")
    for r in quarantined:
        out.append(f"  QUARANTINED {r.node}: {'; '.join(r.reasons) or 'no reason recorded'}")
    for r in other:
        # a walk that stopped always carries its reason; a row without one still says so
        out.append(f"  {r.verdict.upper():11} {r.node}: stage {r.stage}; {'; '.join(r.reasons) or 'no reason recorded'}")
    return "\n".join(out)


def _fabric_cell(doc: Mapping[str, Any] | None) -> str:
    if not doc:
        return "-"
    verdict = str(doc.get("verdict", "?"))
    partners = ", ".join(doc.get("partners") or []) or "no partner"
    best = best_busbw(doc)
    cell = f"{verdict} with {partners}" + (f" ({best:.1f} GB/s)" if best is not None else "")
    links = [str(link.get("message")) for link in doc.get("links") or []]
    if verdict != "pass":
        cell += ": " + "; ".join(str(r) for r in doc.get("reasons") or [])
    elif links:
        cell += "; bad link: " + "; ".join(links)
    return cell


def _gate_cell(doc: Mapping[str, Any] | None) -> str:
    if not doc:
        return "-"
    checks = doc.get("checks") or []
    # the gate keeps each check as {name, outcome, detail} (bringup.admission.readiness.Check)
    bad = [f"{c.get('name')}: {c.get('outcome')}: {c.get('detail')}" for c in checks if c.get("outcome") != "pass"]
    return (f"refused: {'; '.join(bad)}" if bad else f"passed {len(checks)}/{len(checks)} checks")


def acceptance_text(rows: Iterable[tuple[str, Mapping[str, Any] | None, Mapping[str, Any] | None]]) -> str:
    """Per node (name, fabric document, gate document): what the pool's fabric test and
    the readiness gate said, for the main job's printout; ``-`` where a node never got there."""
    rows = sorted(rows, key=lambda r: r[0])
    out = ["Fabric test and readiness gate:"]
    width = max((len(n) for n, *_ in rows), default=4)
    for name, fabric, gate in rows:
        out.append(f"  {name:{width}}  fabric: {_fabric_cell(fabric)}")
        out.append(f"  {'':{width}}  gate:   {_gate_cell(gate)}")
    return "\n".join(out)


_ACCEPT_ORDER = ("queue_wait_s", "data_fetch_s", "busbw_gbps", "samples_per_s", "reference_samples_per_s",
                 "throughput_ratio", "mfu", "loss_first", "loss_last", "checkpoint_step", "restored_step", "restore_s")


def pool_acceptance_text(rows: Iterable[tuple[str, Mapping[str, Any] | None]]) -> str:
    """Per pool (name, its latest acceptance as NetBox holds it): the outcome, the run, the
    figures and the reasons, for the main job's printout; a pool never accepted says so."""
    from bringup.workload.record import figure_text
    out = ["Pool acceptance (train, checkpoint, delete a worker, restore):"]
    for pool, doc in sorted(rows, key=lambda r: r[0]):
        if not doc:
            out.append(f"  {pool}: not run (no node admitted into it, or no acceptance storage in the settings)")
            continue
        nodes = ", ".join(doc.get("nodes") or []) or "-"
        out.append(f"  {pool}: {str(doc.get('outcome', 'unknown')).upper()}  run {doc.get('run', '?')}  on {nodes}")
        figures = doc.get("figures") or {}
        # in the order of the run: queue, data, comm, training, checkpoint, restore
        order = {k: i for i, k in enumerate(_ACCEPT_ORDER)}
        for key, value in sorted(figures.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])):
            shown = figure_text(key, value) if value is None or isinstance(value, int | float) else value
            out.append(f"    {key:24} {shown}")
        out += [f"    reason: {r}" for r in doc.get("reasons") or []]
        out += [f"    unknown: {u}" for u in doc.get("unknown") or []]
    return "\n".join(out)
