"""Publish a run's results as Prefect artifacts: a fleet table and per-node summaries."""

from __future__ import annotations

import re

from prefect.artifacts import create_markdown_artifact, create_table_artifact

from bringup.lifecycle import NodeReport, Outcome
from bringup.report import fleet_rows, node_markdown, summary_text


def _key(text: str) -> str:
    # artifact keys: lower-case letters, digits and dashes
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")


def publish(reports: list[NodeReport], outcomes: dict[str, list[Outcome]], plan: list[dict] | None = None,
            prefix: str = "commission") -> None:
    if plan is not None:
        create_table_artifact(key=_key(f"{prefix}-plan"), table=plan, description="What a real run would do")
        return
    create_table_artifact(key=_key(f"{prefix}-fleet"), table=fleet_rows(reports),
                          description=summary_text(reports).splitlines()[0] if reports else "no nodes")
    for r in reports:
        create_markdown_artifact(key=_key(f"{prefix}-node-{r.node}"), markdown=node_markdown(r, outcomes.get(r.node, [])),
                                 description=f"{r.node}: {r.verdict}")
