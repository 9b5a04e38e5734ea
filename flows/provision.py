"""The ``provision`` flow: BIOS profile, OS install over virtual media, Ansible pinning."""

from __future__ import annotations

from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner

from . import tasks
from .commission import fan_out


@flow(name="provision", log_prints=True, task_runner=ThreadPoolTaskRunner(max_workers=64))
def provision(site: str | None = None, rack: str | None = None, tag: str | None = None,
              nodes: list[str] | None = None, force: bool = False) -> list[dict]:
    """Discover (if not yet) and provision; stops before burn-in."""
    return fan_out(tasks.select(site, rack, tag, nodes), force=force, until="provisioned", prefix="provision")
