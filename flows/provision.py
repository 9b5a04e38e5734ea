"""The ``provision`` flow: BIOS profile, OS install over virtual media, Ansible pinning."""

from __future__ import annotations

from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner

from . import tasks
from .artifacts import publish
from .commission import commission_node


@flow(name="provision", log_prints=True, task_runner=ThreadPoolTaskRunner(max_workers=64))
def provision(site: str | None = None, rack: str | None = None, tag: str | None = None,
              nodes: list[str] | None = None, force: bool = False) -> list[dict]:
    """Discover (if not yet) and provision; stops before burn-in."""
    selected = tasks.select(site, rack, tag, nodes)
    futures = [commission_node.submit(s.name, s.rack, s.stage, "quick", force, until="provisioned") for s in selected]
    results = [f.result() for f in futures]
    publish([r for r, _ in results], {r.node: o for r, o in results}, prefix="provision")
    return [r.model_dump() for r, _ in results]
