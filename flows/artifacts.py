"""Publish a run's results as Prefect artifacts: a fleet table and per-node summaries.

A node's summary is published when that node finishes (inside its task), so the UI
shows finished nodes while the rest still run, and a fleet of hundreds does not end
with hundreds of artifact requests in a row; the fleet table comes last.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import httpx
from prefect import get_run_logger
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact

from bringup.insight.run_summary import fleet_rows, node_markdown, summary_text
from bringup.lifecycle.results import NodeReport, StepResult

from .orchestrator import is_unavailable

if TYPE_CHECKING:
    from .runtime import Runtime


def _key(text: str) -> str:
    # artifact keys: lower-case letters, digits and dashes
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")


def publish_plan(plan: list[dict], prefix: str = "commission") -> None:
    """What a dry run would do, one row per node."""
    create_table_artifact(key=_key(f"{prefix}-plan"), table=plan, description="What a real run would do")


def publish_node(report: NodeReport, outcomes: list[StepResult], prefix: str = "commission") -> None:
    """One node's markdown summary: verdict, reasons, and each stage's outcome. A failure
    to publish is logged, not raised: NetBox already holds the node's record, and the
    node's work must not be reported as failed for want of a summary."""
    try:
        create_markdown_artifact(key=_key(f"{prefix}-node-{report.node}"),
                                 markdown=node_markdown(report, outcomes),
                                 description=f"{report.node}: {report.verdict}")
    except Exception as exc:  # noqa: BLE001  (the server's trouble, not the node's)
        get_run_logger().warning("%s: could not publish the node summary: %s", report.node, exc)


def publish_fleet(reports: list[NodeReport], prefix: str = "commission") -> None:
    """The fleet table: node, verdict, reasons, key figures, NetBox link. A server that is
    down is logged, not raised: the run still goes on to reconcile Kubernetes with NetBox
    and returns (or fails with) the same rows."""
    try:
        create_table_artifact(key=_key(f"{prefix}-fleet"), table=fleet_rows(reports),
                              description=summary_text(reports).splitlines()[0] if reports else "no nodes")
    except httpx.HTTPError as exc:
        if not is_unavailable(exc):
            raise
        get_run_logger().warning("could not publish the fleet table (%d nodes): %s", len(reports), exc)


def publish_report(rt: Runtime, prefix: str = "commission") -> None:
    """The site's fleet report (HTML, CSV, Parquet), written where this run's process can
    write and linked from the run. Best effort: the run's verdicts are in NetBox and the
    fleet table either way; a report that cannot be made is a warning, not a failed run.
    A runtime that makes no report (the bench's) returns None: nothing is linked."""
    from prefect.runtime import flow_run
    name = f"{prefix}-{flow_run.id or 'local'}"
    try:
        index = rt.report(name)
        if index is None:
            return
        create_link_artifact(key=_key(f"{prefix}-report"), link=index.resolve().as_uri(),
                             link_text=f"fleet report ({index.parent})", description="Fleet report of this run's site")
    except Exception as exc:  # noqa: BLE001 - see the docstring
        get_run_logger().warning("could not write the fleet report: %s", exc)


def publish_requests(counts, nodes: int, prefix: str = "commission") -> None:
    """What the run cost NetBox: its requests by method and endpoint, per node (issue #25),
    as a table and one log line. Best effort, as the fleet table."""
    from bringup.netbox.request_count import rows, summary
    line = summary(counts, nodes)
    get_run_logger().info(line)
    try:
        create_table_artifact(key=_key(f"{prefix}-netbox-requests"), table=rows(counts, nodes) or [{"requests": 0}],
                              description=line)
    except httpx.HTTPError as exc:
        if not is_unavailable(exc):
            raise
        get_run_logger().warning("could not publish the NetBox request table: %s", exc)
