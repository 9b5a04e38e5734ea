"""The scheduled ``reburnin`` flow: active nodes due for it are cordoned, drained,
burned in again and judged; passing nodes are uncordoned, failing ones stay quarantined."""

from __future__ import annotations

from prefect import flow, get_run_logger, task
from prefect.task_runners import ThreadPoolTaskRunner

from bringup.lifecycle import NodeReport, Outcome

from . import tasks
from .tasks import PLAIN
from .artifacts import publish_fleet, publish_node, publish_plan
from .limits import drain_releases


@task(name="due for re-burn-in", **PLAIN)
def due(site: str | None, rack: str | None, tag: str | None, nodes: list[str] | None, max_age_days: int):
    from bringup import stages

    from .limits import ensure_rack_limits
    selected = stages.due_for_reburnin(tasks.ctx(), site=site, rack=rack, tag=tag, names=nodes,
                                       max_age_days=max_age_days)
    ensure_rack_limits([s.rack for s in selected])
    return selected


@task(name="re-burn-in node", task_run_name="re-burn-in {node}", **PLAIN)
def reburnin_node(node: str, rack: str, profile: str) -> tuple[NodeReport, list[Outcome]]:
    outcomes = []
    for step in (lambda: tasks.drain(node), lambda: tasks.burn_in(node, rack, profile),
                 lambda: tasks.judge(node), lambda: tasks.record(node), lambda: tasks.admit(node)):
        try:
            o = step()
        except Exception as exc:
            get_run_logger().error("%s: re-burn-in step failed: %s", node, exc)
            outcomes.append(Outcome(node=node, stage="reburnin", ok=False, reasons=[str(exc)]))
            break
        outcomes.append(o)
        if o.failed:
            break
    report = tasks.report(node)
    publish_node(report, outcomes, prefix="reburnin")
    return report, outcomes


@flow(name="reburnin", log_prints=True, task_runner=ThreadPoolTaskRunner(max_workers=32))
def reburnin(site: str | None = None, rack: str | None = None, tag: str | None = None,
             nodes: list[str] | None = None, burnin_profile: str = "quick", max_age_days: int = 30,
             dry_run: bool = False) -> list[dict]:
    """Re-burn-in active nodes whose last burn-in is older than ``max_age_days`` (or
    tagged ``bringup-reburnin``). A node is drained before its burn-in."""
    selected = due(site, rack, tag, nodes, max_age_days)
    if dry_run:
        rows = [{"node": s.name, "rack": s.rack, "last burn-in": s.last_burnin or "never"} for s in selected]
        publish_plan(rows, prefix="reburnin")
        return rows
    futures = [reburnin_node.submit(s.name, s.rack, burnin_profile) for s in selected]
    reports = [f.result()[0] for f in futures]
    publish_fleet(reports, prefix="reburnin")
    drain_releases()
    return [r.model_dump() for r in reports]
