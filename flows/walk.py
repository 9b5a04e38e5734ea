"""Walking nodes through the lifecycle: the Prefect tasks every flow is built from.

A node's walk reads its state, runs the pending steps of that state's handler (one
Prefect task per step, holding the concurrency slots the step ``uses``), and repeats in
the state the lifecycle moved it to, until the run's target state or a state without a
handler. The walk never decides a transition: :class:`bringup.lifecycle.engine.Lifecycle` does.

Retries are for transient errors only (timeouts, 5xx, dropped connections): a wrong MAC
or a failed burn-in never gets better by trying again. A node whose step kept failing
transiently is *held* where it is with the reason in NetBox; an error on our side
(credentials, settings, our services) holds it too and fails the run loudly.

One run walks a node at a time: the walk takes the node's lease first (NetBox, see
:mod:`bringup.netbox.lease`), renews it on a thread while it works and gives it back at the end.
A node another live run holds is skipped, and its report says by whom.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, field

import httpx
from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from bringup.errors import BringupError
from bringup.lifecycle.engine import Lifecycle, State, parse_state, path
from bringup.lifecycle.results import NodeReport, StepResult, interleave_by
from bringup.netbox.lease import Claimant, LeaseHeld
from bringup.netbox.request_count import COUNT, since

from . import kept_leases, runtime, step_errors
from .artifacts import publish_fleet, publish_node, publish_report, publish_requests
from .limits import BMC_LIMIT, INSTALL_LIMIT, burnin_limit, drain_releases, ensure_rack_limits, slot
from .orchestrator import talking_to_prefect, translated
from .reconcile import converge


def transient_only(task, task_run, state) -> bool:
    """Prefect retry condition: retry only errors whose class is transient."""
    try:
        state.result()
    except BringupError as exc:
        return exc.transient
    except Exception:  # noqa: BLE001  (any other error is the node's: never retried)
        return False
    return False


#: every step has side effects and reads live state: never serve it from a cache, and
#: keep results in memory (hashing inputs and persisting results per task run cost more
#: than the orchestration itself at a few hundred nodes)
PLAIN = {"cache_policy": NO_CACHE, "persist_result": False}
RETRY = dict(retries=3, retry_delay_seconds=[2, 10, 30], retry_condition_fn=transient_only, **PLAIN)

#: who gets a free BMC session first when several wait in this process: a node further
#: along (its install keeps the scarce install slot busy; its BIOS step feeds the
#: install queue) before a node that has not been discovered yet. Within a step, the
#: node's place in the run (``order``) decides.
PRIORITY = {"install": 3, "bios": 2, "firmware": 2, "discover": 1}


def limits_for(uses: tuple[str, ...], rack: str) -> list[str]:
    """The concurrency limits behind a step's shared resources."""
    names = {"bmc": BMC_LIMIT, "install": INSTALL_LIMIT, "burnin": burnin_limit(rack)}
    return [names[u] for u in uses]


@task(name="step", task_run_name="{step} {node}", **RETRY)
def run_step(node: str, rack: str, state: str, step: str, params: dict, config: str | None = None,
             order: int = 0, holder: str | None = None) -> StepResult:
    lc = runtime.get(config).lifecycle()
    uses = next(s.uses for s in lc.handler(State(state)).steps if s.name == step)
    key = (holder or "", node, step)
    try:
        with talking_to_prefect(f"{node}: {step}: holding concurrency slots"), \
                slot(limits_for(uses, rack), priority=PRIORITY.get(step, 0), order=order):
            result = lc.run_step(node, state, step, params, holder=holder)
    except BringupError as exc:
        # the node's own failure on an earlier try stays in the reason (flows.step_errors)
        raised = step_errors.failed(key, exc)
        if raised is exc:
            raise
        raise raised from exc
    step_errors.succeeded(key)
    return result


def claimant() -> Claimant:
    """This run, as a lease holder: its flow run id, host and process."""
    from uuid import uuid4

    from prefect.runtime import flow_run
    return Claimant.here(str(flow_run.id or f"local-{uuid4().hex[:12]}"))


def run_ended(run: str) -> bool:
    """Whether the Prefect flow run ``run`` (a lease's holder) is over: a run that ended
    while NetBox was away could not give its leases back, and must not keep its nodes
    until the leases run out."""
    from uuid import UUID

    from prefect.client.orchestration import get_client
    try:
        run_id = UUID(run)
    except ValueError:  # not a flow run's id (a one-off use of the lifecycle)
        return False
    try:
        with get_client(sync_client=True) as client:
            state = client.read_flow_run(run_id).state
    except Exception as exc:
        raise RuntimeError(f"could not read flow run {run}: {exc}") from exc
    return bool(state and state.is_final())


def skipped(lc: Lifecycle, node: str, held: LeaseHeld, force: bool) -> NodeReport:
    """The report of a node another run holds: verdict ``held``, and by whom."""
    why = f"{held.message()}: skipped"
    if force:
        why += " (force does not take a node from a live run; clear its bringup_lease in NetBox for that)"
    return lc.report(node).model_copy(update={"verdict": "held", "reasons": [why]})


@dataclass
class Walk:
    """One node's run: what each step returned and whether the controller failed it."""

    report: NodeReport
    results: list[StepResult] = field(default_factory=list)
    controller_error: str = ""
    #: another run holds the node: this run did not walk it (its report says by whom)
    skipped: bool = False


@task(name="node", task_run_name="{node}", **PLAIN)
def walk_node(node: str, rack: str, params: dict, *, config: str | None = None, force: bool = False,
              until: str = State.ACTIVE.value, prefix: str = "commission", order: int = 0,
              reburnin: bool = False, keep: bool = False) -> Walk:
    """``keep``: a walk that ends in ``fabric`` keeps the node's lease for the run's fabric
    test and the walk after it (flows.kept_leases); a walk takes over a lease kept for it."""
    log = get_run_logger()
    lc = runtime.get(config).lifecycle()
    target = State(until)
    results: list[StepResult] = []
    controller_error = ""
    me = claimant()
    keep = keep and not me.run.startswith("local-")   # only a flow run's holder is the same next leg
    # the node's lease: renewed while the node walks, given back at the end (or kept)
    taken = kept_leases.take(node, me.holder)
    lease = taken or ExitStack()
    kept = False
    try:
        try:
            if taken is None:
                held = lc.acquire(node, me, ended=run_ended)
                if held is not None:
                    report = skipped(lc, node, held, force)
                    log.warning("%s", report.reasons[0])
                    publish_node(report, results, prefix=prefix)
                    return Walk(report, results, skipped=True)
                lease.enter_context(lc.renewer(node, me.holder, logger=log))
            state = (lc.begin_reburnin(node, me.holder) if reburnin
                     else lc.start(node, force=force, holder=me.holder))
            # a forced walk redoes destructive steps too (install reinstalls what the node runs)
            params = {**params, "force": True} if force else params
            if not path(state, target):
                log.info("%s is %s: nothing to do%s", node, state, "" if force else " (force=True to redo)")
            while path(state, target):   # never past the target, never towards one behind the node
                before = state
                for st in lc.pending_steps(node, state, holder=me.holder):
                    res = run_step(node, rack, state.value, st.name, params, config=config, order=order,
                                   holder=me.holder)
                    results.append(res)
                    state = parse_state(res.state)
                    if state != before:   # the handler finished: moved on, or quarantined
                        break
                if state == before:
                    break
        except httpx.HTTPError as exc:  # the engine's own calls to a lost Prefect server
            controller_error = stopped(lc, node, translated(exc, f"{node}: orchestrating its steps"), log)
        except BringupError as exc:
            controller_error = stopped(lc, node, exc, log)
        # NetBox down: what this walk saw, marked as such
        report = lc.report(node, known=results, holder=me.holder)
        if keep and report.stage == State.FABRIC.value and not controller_error:
            kept_leases.keep(node, me.holder, lease)   # the fabric test and the next leg are this run's
            kept = True
    finally:
        step_errors.forget(me.holder, node)
        if not kept:
            lease.close()
    report.rack = report.rack or rack
    publish_node(report, results, prefix=prefix)
    return Walk(report, results, controller_error)


def stopped(lc: Lifecycle, node: str, exc: BringupError, log) -> str:
    """Hold ``node`` where an error stopped its walk, with the reason (unless the step or
    the lease fence already said why); returns the run's controller error ("" when the
    node's side failed)."""
    why = lc.stopped(node, exc)
    if exc.controller_fault:
        log.error("%s: stopped by an error on the controller's side: %s", node, why)
        return f"{node}: {exc}"
    # retries exhausted: the node stays where it is, with the reason
    log.error("%s: held after retries: %s", node, why)
    return ""


class RunFailed(BringupError):
    """The run could not do its work for reasons on the controller's side."""


def fan_out(selected, params: dict, *, config: str | None = None, force: bool = False,
            until: str = State.ACTIVE.value, prefix: str = "commission", reburnin: bool = False,
            report: bool = True) -> list[dict]:
    """Walk each selected node side by side, then publish the fleet table. Nodes take turns
    rack by rack (in starting and in every queue for a shared limit), so every rack's
    burn-in slots fill early and stay busy. Ends by making Kubernetes agree with NetBox for
    the nodes it left out of service (flows.reconcile). Fails loudly, after publishing,
    when an error on the controller's side stopped any node or left one unreconciled."""
    from .fabric import crosses_fabric, through_fabric

    selected = list(interleave_by(list(selected), key=lambda s: s.rack))
    ensure_rack_limits([s.rack for s in selected])
    sent_before = COUNT.snapshot()

    def walk(nodes: list, to: str, first: bool) -> list[Walk]:
        # force and re-burn-in start a node's walk over: only the first leg of a run does;
        # the first leg of a walk through the fabric test keeps each waiting node's lease
        keep = first and to == State.FABRIC.value
        futures = [walk_node.submit(s.name, s.rack, params, config=config, force=force and first, until=to,
                                    prefix=prefix, order=i, reburnin=reburnin and first, keep=keep)
                   for i, s in enumerate(nodes)]
        return [f.result() for f in futures]

    if crosses_fabric(until):
        # the fabric test is the pool's: every node walks to it, the pools test, then on
        try:
            first = walk(selected, State.FABRIC.value, True)
            walks = through_fabric(selected, first, params, config=config, prefix=prefix,
                                   walk_rest=lambda nodes: walk(nodes, until, False))
        finally:   # the leases of nodes that did not walk on (failed or held in the test)
            kept_leases.release([s.name for s in selected])
    else:
        walks = walk(selected, until, True)
    reports = [w.report for w in walks]
    publish_fleet(reports, prefix=prefix)
    publish_requests(since(sent_before), len(selected), prefix=prefix)
    if report:  # a split run's parent writes it once, after its children
        publish_report(runtime.get(config), prefix=prefix)
    drain_releases()  # the run ends with every slot it took back on the server
    errors = [w.controller_error for w in walks if w.controller_error]
    errors += converge(reports, config=config, prefix=prefix)  # the cluster agrees with NetBox, or the run fails
    if errors:
        raise RunFailed(f"{len(errors)} node(s) stopped by errors on the controller's side:\n  "
                        + "\n  ".join(errors[:20]),
                        hint="fix the settings, credentials or services named above, then run again")
    return [r.model_dump() for r in reports]
