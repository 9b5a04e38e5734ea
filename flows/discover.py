"""The ``discover`` flow: inventory BMCs over Redfish and verify them against NetBox."""

from __future__ import annotations

from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner

from . import tasks
from .artifacts import publish
from .commission import commission_node


@flow(name="discover", log_prints=True, task_runner=ThreadPoolTaskRunner(max_workers=64))
def discover(site: str | None = None, rack: str | None = None, tag: str | None = None,
             nodes: list[str] | None = None, force: bool = False) -> list[dict]:
    """Discovery and verification only; nodes with critical findings are quarantined."""
    selected = tasks.select(site, rack, tag, nodes)
    futures = [commission_node.submit(s.name, s.rack, s.stage, "quick", force, until="discovered") for s in selected]
    results = [f.result() for f in futures]
    publish([r for r, _ in results], {r.node: o for r, o in results}, prefix="discover")
    return [r.model_dump() for r, _ in results]
