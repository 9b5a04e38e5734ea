"""The fabric stage of a walk: nodes walk to ``fabric`` one by one, then the pool's fabric
test runs once for all of them, then each node's share is recorded and the walk goes on.

The test is pool-level, so it cannot be one node's step: :func:`fabric_test` (a task) asks
the runtime to run every waiting node's pool (``rt.fabric_test``: pairs within a rack by
default, ``cross_rack`` or ``ring`` as the run's ``fabric_mode``; active nodes of the pool
as known-good partners), publishes the pair matrix (``<prefix>-fabric``) and records each
node's document through the lifecycle's ``fabric`` step (the engine stays the one writer
of the stage). A node the test could not decide is held in ``fabric`` with the reasons
and its document kept in NetBox, never passed. In a split run every child run tests its own racks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prefect import get_run_logger, task
from prefect.artifacts import create_table_artifact

from bringup.errors import BringupError
from bringup.lifecycle.engine import PATH, TABLE, State, parse_state
from bringup.lifecycle.results import StepResult

from . import kept_leases, runtime
from .artifacts import _key, publish_node

PLAIN: dict[str, Any] = {"persist_result": False}


def crosses_fabric(until: str) -> bool:
    """Whether a walk to ``until`` goes through the fabric state (and past it)."""
    target = State(until)
    return target in PATH and PATH.index(target) > PATH.index(State.FABRIC)


def held_reason(doc: dict[str, Any]) -> str:
    from bringup.fabric.fabric_step import held_reason as reason
    return reason(doc)


def held_evidence(doc: dict[str, Any]) -> Any:
    from bringup.fabric.fabric_step import held_evidence as evidence
    return evidence(doc)


@task(name="fabric", task_run_name="fabric test of {count} node(s)", **PLAIN)
def fabric_test(names: list[str], count: int, params: dict, config: str | None = None,
                prefix: str = "commission") -> tuple[dict[str, StepResult | str], list[str]]:
    """Run the pools' fabric test for ``names`` and record each node. Returns per node its
    recorded step result or why it is held, and the controller's errors (if the test could
    not run at all: every node held, and the run fails loudly)."""
    log = get_run_logger()
    rt = runtime.get(config)
    lc = rt.lifecycle()
    mode = str(params.get("fabric_mode") or "rack")
    out: dict[str, StepResult | str] = {}
    try:
        docs, rows = rt.fabric_test(names, mode=mode)
    except BringupError as exc:
        why = f"the fabric test could not run: {exc}"
        for n in names:
            lc.hold(n, why)
            out[n] = why
        return out, [why] if exc.controller_fault else []
    try:
        create_table_artifact(key=_key(f"{prefix}-fabric"), table=rows or [{"pair": "none", "outcome": "no pair"}],
                              description=f"fabric test ({mode} pairing) of {len(names)} node(s): pair matrix")
    except Exception as exc:  # noqa: BLE001 - the server's trouble: NetBox keeps every result
        log.warning("could not publish the fabric pair matrix: %s", exc)
    errors: list[str] = []
    from .walk import claimant
    me = claimant().holder
    for n in names:
        # recorded under the lease the node's walk kept for the test (flows.kept_leases)
        holder = me if kept_leases.holds(n, me) else None
        doc = docs.get(n) or {"verdict": "unknown", "reasons": [f"{n}: the fabric test returned nothing for it"]}
        if doc.get("verdict") not in ("pass", "fail"):
            lc.hold(n, held_reason(doc), evidence=[held_evidence(doc)])
            out[n] = held_reason(doc)
            log.warning("%s: %s", n, out[n])
            continue
        try:
            res = lc.run_step(n, State.FABRIC.value, "fabric", params={**params, "fabric": doc}, holder=holder)
        except BringupError as exc:
            lc.hold(n, f"fabric: {exc}")
            out[n] = f"fabric: {exc}"
            if exc.controller_fault:
                errors.append(f"{n}: {exc}")
            continue
        out[n] = res
        log.info("%s: fabric %s%s", n, "pass" if res.ok else "FAIL",
                 "" if res.ok else ": " + "; ".join(res.reasons))
    return out, errors


def through_fabric(selected: list, first: list, params: dict, *, config: str | None, prefix: str,
                   walk_rest: Callable[[list], list]) -> list:
    """After the walks to ``fabric`` (``first``, one per selected node, in order): the
    pools' test for the nodes waiting there, then ``walk_rest`` for the nodes past it.
    Returns one walk per selected node, in order."""
    from .walk import Walk

    lc = runtime.get(config).lifecycle()
    # walked by this run and now in fabric: a "held" verdict there is only the reason an
    # earlier run left (no partner then), and this run's test is the retry
    waiting = [w.report.node for w in first
               if w.report.stage == State.FABRIC.value and not w.skipped and not w.controller_error]
    recorded: dict[str, StepResult | str] = {}
    errors: list[str] = []
    if waiting:
        recorded, errors = fabric_test(waiting, len(waiting), params, config=config, prefix=prefix)
    nxt = TABLE[State.FABRIC].success  # where a node goes once its fabric share is recorded
    beyond = PATH[PATH.index(nxt):]
    again, keep = [], {}
    for s, w in zip(selected, first, strict=True):
        stage = w.report.stage
        res = recorded.get(s.name)
        if isinstance(res, StepResult) and res.state:   # where the recording moved it
            stage = res.state
        elif res is not None:
            stage = lc.state_of(s.name).value
        if parse_state(stage) in beyond and not w.controller_error and not w.skipped:
            again.append(s)
        else:
            keep[s.name] = w
    rest = {w.report.node: w for w in walk_rest(again)} if again else {}
    walks = []
    for s, w in zip(selected, first, strict=True):
        if s.name in rest:
            nxt = rest[s.name]
            res = recorded.get(s.name)
            nxt.results[:0] = w.results + ([res] if isinstance(res, StepResult) else [])
            walks.append(nxt)
            continue
        w = keep[s.name]
        res = recorded.get(s.name)
        if res is not None:  # recorded or held here: its row and summary as they are now
            report = lc.report(s.name)
            report.rack = report.rack or s.rack
            if isinstance(res, str):
                report = report.model_copy(update={"verdict": "held", "reasons": [res]})
            else:
                w.results.append(res)
            w = Walk(report, w.results, w.controller_error, skipped=w.skipped)
            publish_node(report, w.results, prefix=prefix)
        walks.append(w)
    if errors and walks:
        walks[0].controller_error = "; ".join(filter(None, [walks[0].controller_error, *errors]))
    return walks
