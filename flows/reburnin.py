"""The scheduled ``reburnin`` flow: active nodes due for it enter draining (cordon and
drain), are burned in and judged again, and go back through validating to active, or
stay quarantined. Built from the lifecycle, like every flow."""

from __future__ import annotations

from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner

from bringup.service.blastradius import Request

from . import guarded, runtime
from .artifacts import publish_plan
from .walk import fan_out


@flow(name="reburnin", log_prints=True, task_runner=ThreadPoolTaskRunner(max_workers=256))
def reburnin(site: str | None = None, rack: str | None = None, tag: str | None = None,
             nodes: list[str] | None = None, burnin_profile: str = "full", max_age_days: int = 30,
             dry_run: bool = False, config: str | None = None) -> list[dict]:
    """Re-burn-in active nodes whose last burn-in is older than ``max_age_days`` (or
    tagged ``bringup-reburnin``). A node is drained before its burn-in. The blast-radius
    guard bounds how many nodes of a pool leave service at once: the nodes it refuses stay
    serving and are due again at the next run (their journal says so)."""
    selected = runtime.get(config).due_for_reburnin(site=site, rack=rack, tag=tag, names=nodes,
                                                    max_age_days=max_age_days)
    if dry_run:
        rows = [{"node": s.name, "rack": s.rack, "last burn-in": s.last_burnin or "never"} for s in selected]
        publish_plan(rows, prefix="reburnin")
        return rows
    decisions = guarded.ask([Request(s.name, "drain", "re-burn-in due") for s in selected], config=config,
                            prefix="reburnin")
    return fan_out(guarded.allowed(selected, decisions), {"burnin_profile": burnin_profile}, config=config,
                   prefix="reburnin", reburnin=True)
