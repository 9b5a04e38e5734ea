"""The NVSentinel hand-off's I/O on one node (issue #27, item 2), both ways: bringup, the
site's external remediation system, takes the node NVSentinel released through its
lifecycle and answers the request (:func:`take`); and reports its own findings to NVSentinel
as an ExternalFault instead of cordoning (:func:`report_fault`).

An open request (NVSentinel released the node, nobody answered) not accepted yet is planned
(:func:`bringup.service.handoff.plan`), acted on through the lifecycle (``reburnin``: the
node enters draining with NVSentinel's words as its reason, tagged for re-burn-in, cordoned
and tainted by bringup; ``reinstall``: a forced walk from planned, drained first;
``inspection``: active -> inspection, cordoned and drained, no re-test), marked accepted on
the ERR and journaled in NetBox. An accepted one is answered once the node's lifecycle says
so (:func:`bringup.service.handoff.completion`): ``True`` when it serves again, ``False``
when bringup quarantined it, nothing while it is in inspection; the answer is journaled
too. The caller holds the node's lease.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from bringup.context import Context
from bringup.kube.external_fault import create, open_fault
from bringup.kube.remediation import Request, accept, complete
from bringup.lifecycle.engine import Lifecycle, State, parse_state
from bringup.service.fault_report import external_fault
from bringup.service.handoff import HandoffPolicy, completion, load_policy, plan
from bringup.service.health import Signal
from bringup.times import strict_time

#: who takes the node out, as the lifecycle's reason and journal say it
BY = "NVSentinel hand-off"


def take(ctx: Context, lc: Lifecycle, req: Request, policy: HandoffPolicy | None = None) -> dict[str, Any]:
    """One pass on open request ``req``: the row the run's table shows."""
    policy = policy or load_policy()
    row: dict[str, Any] = {"request": req.name, "node": req.node, "action": "", "outcome": ""}
    found = ctx.netbox.nodes(names=[req.node])
    if not found:
        row["outcome"] = "not a node NetBox knows: left to NVSentinel and an operator"
        return row
    (rec,) = found
    if req.accepted_at is None:
        p = plan(policy, req)
        row["action"] = p.action
        if p.action == "reinstall":
            state = lc.start(req.node, force=True)
        elif p.action == "inspection":
            state = lc.inspect(req.node, p.reasons, by=BY)
        else:   # reburnin
            state = lc.suspect(req.node, p.reasons, by=BY)
        if state not in (State.DRAINING, State.PLANNED, State.INSPECTION):
            row["outcome"] = f"not taken: the node is {state} (another run has it); asked again next pass"
            return row
        at = accept(ctx.kube, req)
        raised = f" (the fault bringup reported: ExternalFault {req.raised_by})" if req.raised_by else ""
        ctx.netbox.journal(rec.id, f"## NVSentinel hand-off: {req.name} accepted\n\nNVSentinel released the node to "
                                   f"bringup at {at.isoformat()}{raised}: {p.action} ({p.why}).\n\n"
                                   + "\n".join(f"- {r}" for r in p.reasons) + "\n", kind="warning")
        row["outcome"] = f"accepted: {state}"
        return row
    changes = [(strict_time(at), stage) for at, stage in ctx.netbox.stage_changes([rec.id]).get(rec.id, [])]
    row["action"] = "answer"
    done = completion(req, parse_state(rec.stage).value, changes)
    if done is None:
        row["outcome"] = f"in progress: {rec.stage}" + (" (answered once repaired and re-tested)"
                                                       if rec.stage == State.INSPECTION.value else "")
        return row
    complete(ctx.kube, req, done.status, done.reason, done.message)
    ctx.netbox.journal(rec.id, f"## NVSentinel hand-off: {req.name} answered {done.status}\n\n{done.message}\n",
                       kind="success" if done.status == "True" else "danger")
    row["outcome"] = f"ExternalRemediationComplete={done.status} ({done.reason})"
    return row


def report_fault(ctx: Context, rec: Any, signals: Sequence[Signal], policy: HandoffPolicy | None = None,
                 now: datetime | None = None) -> str:
    """NVSentinel owns the nodes' health: the node's critical ``signals`` become an
    ExternalFault (NVSentinel quarantines, drains and hands the node back through a request
    this module takes), journaled in NetBox; bringup cordons nothing. A node with an open
    ExternalFault (bringup's or anyone's: NVSentinel admits one per node) is not reported
    again. The caller holds the node's lease. Returns what was done, for the run's table."""
    policy = policy or load_policy()
    held = open_fault(ctx.kube, rec.name)
    if held is not None:
        return f"reported to NVSentinel already: ExternalFault {held.name} is open"
    body = external_fault(policy.report, rec.name, signals, (now or datetime.now(UTC)).replace(microsecond=0))
    name = create(ctx.kube, body)
    event = body["spec"]["healthEvent"]
    ctx.netbox.journal(rec.id, f"## Reported to NVSentinel: ExternalFault {name}\n\nNVSentinel owns this node's "
                               "health (settings: health_owner): bringup reported its finding instead of cordoning. "
                               "NVSentinel quarantines and drains the node and hands it back to bringup "
                               "(an ExternalRemediationRequest).\n\n"
                        f"- errorCode: {', '.join(event['errorCode'])}\n- componentClass: {event['componentClass']}\n"
                       + "".join(f"- {s.message}\n" for s in signals), kind="warning")
    return f"reported to NVSentinel: ExternalFault {name}"
