"""The ``burnin`` flow: burn in, judge and admit nodes that are provisioned."""

from __future__ import annotations

from prefect import flow, get_run_logger
from prefect.task_runners import ThreadPoolTaskRunner

from bringup.lifecycle.engine import State, parse_state

from . import runtime
from .walk import fan_out


@flow(name="burnin", log_prints=True, task_runner=ThreadPoolTaskRunner(max_workers=256))
def burnin(site: str | None = None, rack: str | None = None, tag: str | None = None,
           nodes: list[str] | None = None, burnin_profile: str = "quick", config: str | None = None) -> list[dict]:
    """Burn in the selected provisioned nodes (others are listed and left alone)."""
    log = get_run_logger()
    selected = runtime.get(config).select(site=site, rack=rack, tag=tag, names=nodes)
    ready = [s for s in selected if parse_state(s.stage) == State.PROVISIONED]
    for s in selected:
        if s not in ready:
            log.info("%s is %s, not provisioned: skipped (use commission)", s.name, s.stage)
    return fan_out(ready, {"burnin_profile": burnin_profile}, config=config, prefix="burnin")
