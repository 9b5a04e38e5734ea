"""The ``discover`` flow: inventory BMCs over Redfish and verify them against NetBox."""

from __future__ import annotations

from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner

from . import tasks
from .commission import fan_out


@flow(name="discover", log_prints=True, task_runner=ThreadPoolTaskRunner(max_workers=64))
def discover(site: str | None = None, rack: str | None = None, tag: str | None = None,
             nodes: list[str] | None = None, force: bool = False) -> list[dict]:
    """Discovery and verification only; nodes with critical findings are quarantined."""
    return fan_out(tasks.select(site, rack, tag, nodes), force=force, until="discovered", prefix="discover")
