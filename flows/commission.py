"""The ``commission`` flow: nodes from planned to admitted or quarantined.

Each node walks the stages it still needs (read from NetBox, so a rerun resumes and a
finished node is a no-op); nodes run side by side, queuing on the global concurrency
limits. At the end the run publishes a fleet table and one markdown summary per node.
"""

from __future__ import annotations

from prefect import flow, get_run_logger, task
from prefect.task_runners import ThreadPoolTaskRunner

from bringup.lifecycle import NodeReport, Outcome, interleave_by, remaining

from . import tasks
from .tasks import PLAIN
from .artifacts import publish_fleet, publish_node, publish_plan
from .limits import drain_releases

#: each stage's steps for node ``n`` of ``rack``; ``q`` is the node's place in the run,
#: which orders it in the queues for shared limits (see flows.limits.slot)
STAGE_TASKS = {
    "discovered": lambda n, rack, profile, q: [tasks.discover(n, q)],
    "provisioned": lambda n, rack, profile, q: _chain(
        lambda: tasks.bios(n, q), lambda: tasks.install(n, q), lambda: tasks.configure(n)),
    "burned_in": lambda n, rack, profile, q: [tasks.burn_in(n, rack, profile, q)],
    "judged": lambda n, rack, profile, q: [tasks.judge(n)],
    "recorded": lambda n, rack, profile, q: [tasks.record(n)],
    "admitted": lambda n, rack, profile, q: [tasks.admit(n)],
}


def _chain(*steps) -> list[Outcome]:
    """Run steps of one stage in order, stopping at the first that failed."""
    out = []
    for step in steps:
        o = step()
        out.append(o)
        if o.failed:
            break
    return out


@task(name="commission node", task_run_name="commission {node}", **PLAIN)
def commission_node(node: str, rack: str, stage: str, burnin_profile: str, force: bool,
                    until: str = "admitted", prefix: str = "commission",
                    order: int = 0) -> tuple[NodeReport, list[Outcome]]:
    log = get_run_logger()
    outcomes: list[Outcome] = []
    todo = remaining(stage, force=force, until=until)
    if not todo:
        log.info("%s is %s: nothing to do (force=True to redo)", node, stage)
    for st in todo:
        try:
            step = STAGE_TASKS[st](node, rack, burnin_profile, order)
        except Exception as exc:  # retries exhausted or a bug: the node stays where it was
            log.error("%s: stage %s did not finish: %s", node, st, exc)
            outcomes.append(Outcome(node=node, stage=st, ok=False, summary=f"error: {exc}",
                                    reasons=[f"{st} did not finish: {exc}"]))
            break
        outcomes.extend(step)
        if any(o.failed for o in step):
            break
    report = tasks.report(node)
    if outcomes and outcomes[-1].failed and report.verdict not in ("quarantined",):
        report.reasons = report.reasons or outcomes[-1].reasons
    publish_node(report, outcomes, prefix=prefix)
    return report, outcomes


def fan_out(selected, *, burnin_profile: str = "quick", force: bool = False, until: str = "admitted",
            prefix: str = "commission") -> list[dict]:
    """Walk each selected node through its remaining stages side by side, then publish.
    Nodes take turns rack by rack (in starting and in every queue for a shared limit),
    so every rack's burn-in slots fill early and stay busy."""
    futures = [commission_node.submit(s.name, s.rack, s.stage, burnin_profile, force, until=until, prefix=prefix,
                                      order=i)
               for i, s in enumerate(interleave_by(list(selected), key=lambda s: s.rack))]
    reports = [f.result()[0] for f in futures]
    publish_fleet(reports, prefix=prefix)
    drain_releases()  # the run ends with every slot it took back on the server
    return [r.model_dump() for r in reports]


@flow(name="commission", log_prints=True, task_runner=ThreadPoolTaskRunner(max_workers=64))
def commission(site: str | None = None, rack: str | None = None, tag: str | None = None,
               nodes: list[str] | None = None, burnin_profile: str = "quick", dry_run: bool = False,
               force: bool = False) -> list[dict]:
    """Discover, provision, burn in, judge, record and admit (or quarantine) nodes.

    Select by site, rack, NetBox tag or explicit node names. ``dry_run`` only shows
    what would run; ``force`` redoes finished and quarantined nodes.
    """
    selected = tasks.select(site, rack, tag, nodes)
    log = get_run_logger()
    if dry_run:
        rows = [{"node": s.name, "rack": s.rack, "stage": s.stage,
                 "would run": ", ".join(remaining(s.stage, force=force)) or "nothing"} for s in selected]
        publish_plan(rows)
        return rows
    log.info("commissioning %d node(s)", len(selected))
    return fan_out(selected, burnin_profile=burnin_profile, force=force)
