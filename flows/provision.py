"""The ``provision`` flow: BIOS profile, OS install over virtual media, Ansible pinning."""

from __future__ import annotations

from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner

from bringup.lifecycle.engine import State

from . import runtime
from .walk import fan_out


@flow(name="provision", log_prints=True, task_runner=ThreadPoolTaskRunner(max_workers=256))
def provision(site: str | None = None, rack: str | None = None, tag: str | None = None,
              nodes: list[str] | None = None, force: bool = False, config: str | None = None) -> list[dict]:
    """Discover (if not yet) and provision; stops before burn-in."""
    selected = runtime.get(config).select(site=site, rack=rack, tag=tag, names=nodes)
    return fan_out(selected, {}, config=config, force=force, until=State.PROVISIONED.value, prefix="provision")
