"""The ``commission`` flow: nodes from planned to active (or quarantined), built from the
lifecycle's table (see :mod:`flows.walk`).

Over several racks, with more than one online batch worker, the run dispatches child
flow runs of whole racks (``commission-batch``) so that every worker takes a share;
otherwise it walks the nodes itself. Either way it ends with a fleet table artifact
and one markdown summary per node, then each pool that gained nodes runs its acceptance
job where the site names its acceptance storage (:func:`new_by_pool`).
"""

from __future__ import annotations

from prefect import flow, get_run_logger
from prefect.task_runners import ThreadPoolTaskRunner

from bringup.admission.labels import POOL_LABEL
from bringup.lifecycle.engine import State, parse_state, path

from . import runtime
from .artifacts import publish_fleet, publish_plan, publish_report
from .batches import BATCH_DEPLOYMENT, children_held, dispatch, online_workers, split
from .walk import RunFailed, fan_out


def _plan_rows(selected, force: bool, until: State = State.ACTIVE) -> list[dict]:
    rows = []
    for s in selected:
        start = State.PLANNED if force else parse_state(s.stage)
        steps = [st.name for state in path(start, until) for st in _steps(state)]
        rows.append({"node": s.name, "rack": s.rack, "stage": s.stage, "would run": ", ".join(steps) or "nothing"})
    return rows


def _steps(state: State):
    from bringup.lifecycle.engine import TABLE
    return TABLE[state].steps


@flow(name="commission", log_prints=True, task_runner=ThreadPoolTaskRunner(max_workers=1024))
def commission(site: str | None = None, rack: str | None = None, tag: str | None = None,
               nodes: list[str] | None = None, burnin_profile: str = "quick", dry_run: bool = False,
               force: bool = False, config: str | None = None, batches: int | None = None,
               batch_deployment: str = BATCH_DEPLOYMENT, fabric_mode: str = "rack") -> list[dict]:
    """Discover, provision, burn in, judge, fabric-test and admit (or quarantine) nodes.

    Select by site, rack, NetBox tag or explicit node names. ``dry_run`` only shows what
    would run; ``force`` redoes finished and quarantined nodes. ``config`` names the
    settings file. ``batches`` is the number of child runs of whole racks (default: one
    per online worker of the batch pool when there are two or more; 0 walks every node
    in this run). ``fabric_mode``: how the pool's fabric test pairs nodes first: ``rack``
    (disjoint pairs within a rack), ``cross_rack`` or ``ring`` (small pools); a split run's
    child runs each test their own racks."""
    rt = runtime.get(config)
    selected = rt.select(site=site, rack=rack, tag=tag, names=nodes)
    log = get_run_logger()
    if dry_run:
        rows = _plan_rows(selected, force)
        publish_plan(rows)
        return rows
    params = {"burnin_profile": burnin_profile, "fabric_mode": fabric_mode}
    if batches is None:  # as many shares as there are workers to take them
        n = online_workers()
        batches = n if n > 1 else 0
    groups = split(selected, batches) if batches > 0 else []
    if not groups:
        log.info("commissioning %d node(s) in this run", len(selected))
        rows = fan_out(selected, params, config=config, force=force)
        _accept_new(rt, selected, rows, config)
        return rows
    log.info("commissioning %d node(s) in %d child runs", len(selected), len(groups))
    child = {"burnin_profile": burnin_profile, "force": force, "config": config}
    if fabric_mode != "rack":  # only when asked: a batch deployment of older code lacks the parameter
        child["fabric_mode"] = fabric_mode
    runs = dispatch(groups, child,
                    deployment=batch_deployment)
    rows, failed = [], []
    lc = rt.lifecycle()
    held = children_held(runs)  # skipped by a child: NetBox shows the other run's walk
    rows_of = {r.node: r for r in lc.reports([s.name for g in groups for s in g])}   # a few reads, not 2 a node
    for run, group in zip(runs, groups, strict=True):
        if not (run.state and run.state.is_completed()):
            failed.append(f"{run.name}: {run.state.type.value if run.state else 'unknown'}")
        for s in group:
            report = rows_of[s.name]
            if s.name in held:
                report = report.model_copy(update={"verdict": "held", "reasons": held[s.name]})
            rows.append(report)
    publish_fleet(rows)
    publish_report(rt)
    if failed:
        raise RunFailed(f"child runs did not complete: {'; '.join(failed)}",
                        hint="open them in the Prefect UI; their nodes are held where they stopped")
    out = [r.model_dump() for r in rows]
    _accept_new(rt, selected, out, config)
    return out


def new_by_pool(selected, rows: list[dict]) -> dict[str, list[str]]:
    """pool -> the nodes this run admitted into it (admitted now, not active before)."""
    before = {s.name: s.stage for s in selected}
    new: dict[str, list[str]] = {}
    for r in rows:
        pool = (r.get("labels") or {}).get(POOL_LABEL)
        if r.get("verdict") == "admitted" and before.get(r["node"]) != State.ACTIVE.value and pool:
            new.setdefault(pool, []).append(r["node"])
    return {p: sorted(n) for p, n in sorted(new.items())}


def _accept_new(rt, selected, rows: list[dict], config: str | None, accept=None) -> None:
    """After the admission of a batch (issue #28): each pool that gained nodes runs its
    acceptance job (the ``pool-acceptance`` flow, as a child run), where the site names its
    acceptance storage (settings ``acceptance_data``; without it, ``bringup accept`` runs
    it on demand). A pool that does not pass holds and cordons the nodes this run admitted
    into it, and the run fails once every pool has had its turn."""
    from .pool_acceptance import pool_acceptance

    accept = accept or pool_acceptance
    new = new_by_pool(selected, rows)
    if not new:
        return
    if not rt.accepts_after_admission():
        print("pool acceptance not run after admission: the settings name no acceptance_data "
              f"(run `bringup accept --pool P` for {', '.join(new)})")
        return
    failed = []
    for pool, nodes in new.items():
        try:
            accept(pool, new_nodes=nodes, config=config)
        except RunFailed as exc:
            failed.append(f"pool {pool}: {exc}")
    if failed:
        raise RunFailed("pool acceptance did not pass: " + "; ".join(failed),
                        hint="the pools' new nodes are held with the reason; see the pool-acceptance runs")


@flow(name="commission-batch", log_prints=True, task_runner=ThreadPoolTaskRunner(max_workers=1024))
def commission_batch(nodes: list[str], burnin_profile: str = "quick", force: bool = False,
                     config: str | None = None, fabric_mode: str = "rack") -> list[dict]:
    """One share of a commission run: the named nodes (whole racks), walked in this run,
    the fabric test of its own racks included."""
    selected = runtime.get(config).select(names=nodes)
    return fan_out(selected, {"burnin_profile": burnin_profile, "fabric_mode": fabric_mode}, config=config,
                   force=force, prefix="commission", report=False)
