"""The ``discover`` flow: inventory BMCs over Redfish and verify them against NetBox."""

from __future__ import annotations

from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner

from bringup.lifecycle.engine import State

from . import runtime
from .walk import fan_out


@flow(name="discover", log_prints=True, task_runner=ThreadPoolTaskRunner(max_workers=256))
def discover(site: str | None = None, rack: str | None = None, tag: str | None = None,
             nodes: list[str] | None = None, force: bool = False, config: str | None = None) -> list[dict]:
    """Discovery and verification of planned nodes; critical findings quarantine.
    Nodes past discovery are left alone (``force`` restarts them from planned)."""
    selected = runtime.get(config).select(site=site, rack=rack, tag=tag, names=nodes)
    return fan_out(selected, {}, config=config, force=force, until=State.DISCOVERED.value, prefix="discover")
