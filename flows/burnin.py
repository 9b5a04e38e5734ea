"""The ``burnin`` flow: burn in, judge, record and admit nodes that are provisioned."""

from __future__ import annotations

from prefect import flow, get_run_logger
from prefect.task_runners import ThreadPoolTaskRunner

from . import tasks
from .commission import fan_out


@flow(name="burnin", log_prints=True, task_runner=ThreadPoolTaskRunner(max_workers=64))
def burnin(site: str | None = None, rack: str | None = None, tag: str | None = None,
           nodes: list[str] | None = None, burnin_profile: str = "quick") -> list[dict]:
    """Burn in the selected provisioned nodes (others are listed and left alone)."""
    log = get_run_logger()
    selected = tasks.select(site, rack, tag, nodes)
    ready = [s for s in selected if s.stage == "provisioned"]
    for s in selected:
        if s.stage != "provisioned":
            log.info("%s is %s, not provisioned: skipped (use commission)", s.name, s.stage)
    return fan_out(ready, burnin_profile=burnin_profile, prefix="burnin")
