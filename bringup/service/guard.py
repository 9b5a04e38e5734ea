"""The blast-radius guard (:mod:`bringup.service.blastradius`) asked with NetBox's facts.

Before a run takes serving nodes out of service (a re-burn-in drains them, the health
watch cordons and drains a suspect one) it asks :func:`ask`: the pools of the nodes
concerned and when their nodes left service come from NetBox (the devices' pool and the
change log of the stage field), the policy from ``bringup/data/guard.yaml``. Refused
nodes stay as they are; :func:`record_refusals` writes why in each one's journal, and the
caller fails its run with :func:`bringup.service.blastradius.refusals` so an operator looks.

What counts as *taken out of service*: entering ``draining`` (always from ``active``),
and entering ``quarantined`` while serving in this life of the node (it was ``active``
since it last entered ``planned``). A node quarantined at commissioning never served:
it takes nothing from the pool's budget, but it counts for the repeat-offender rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from bringup.context import Context
from bringup.lifecycle.engine import LifecycleError, State, parse_state
from bringup.service.blastradius import Decision, Event, GuardPolicy, Request, decide, load_policy


def _when(text: str) -> datetime:
    at = datetime.fromisoformat(text)
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def events_of(node: str, changes: Iterable[tuple[str, str]]) -> tuple[list[Event], list[Event]]:
    """(out-of-service events, all quarantines) of one node from its stage changes
    ``(time, stage)``, oldest first. A stage the lifecycle does not know is skipped."""
    service: list[Event] = []
    quarantines: list[Event] = []
    served = False
    for at, stage in changes:
        try:
            state = parse_state(stage)
        except LifecycleError:
            continue
        when = _when(at)
        if state == State.PLANNED:
            served = False  # a forced restart: a new life of the node
        elif state == State.ACTIVE:
            served = True
        elif state == State.DRAINING:
            service.append(Event(node, when, "drain", "entered draining (NetBox change log)"))
        elif state == State.QUARANTINED:
            q = Event(node, when, "quarantine", "entered quarantined (NetBox change log)")
            quarantines.append(q)
            if served:
                service.append(q)
    return service, quarantines


def _pool(rec) -> str:
    return str((rec.pool or {}).get("name") or "default")


def ask(ctx: Context, requests: Sequence[Request], *, at: datetime | None = None,
        policy: GuardPolicy | None = None) -> list[Decision]:
    """The guard's decisions on ``requests``, in order, from NetBox's pools and change log."""
    if not requests:
        return []
    nb = ctx.netbox
    wanted = nb.nodes(names=sorted({r.node for r in requests}))
    pools_wanted = {_pool(r) for r in wanted}
    pools: dict[str, str] = {}
    ids = []
    for site in sorted({r.site for r in wanted}):
        for rec in nb.nodes(site=site):
            if _pool(rec) in pools_wanted:
                pools[rec.name] = _pool(rec)
                ids.append((rec.id, rec.name))
    changes = nb.stage_changes([i for i, _ in ids])
    service: list[Event] = []
    history: list[Event] = []
    for node_id, name in ids:
        s, q = events_of(name, changes.get(node_id, []))
        service += s
        history += q
    return decide(pools, service, requests, at or datetime.now(UTC), policy or load_policy(), history=history)


def record_refusals(ctx: Context, decisions: Iterable[Decision]) -> list[str]:
    """Each refused node's journal says why it was left alone; returns their names."""
    refused = [d for d in decisions if not d.allowed]
    if not refused:
        return []
    recs = {r.name: r for r in ctx.netbox.nodes(names=[d.node for d in refused])}
    for d in refused:
        rec = recs.get(d.node)
        if rec is not None:
            ctx.netbox.journal(rec.id, f"## Blast-radius guard: {d.action} refused\n\n{d.message}"
                                    + (f"\n\nWanted because: {d.reason}" if d.reason else "")
                                    + f"\n\n{d.remediation}\n", kind="warning")
    return [d.node for d in refused]


def repeat_offender(ctx: Context, rec, *, at: datetime | None = None, policy: GuardPolicy | None = None) -> str | None:
    """After ``rec`` was quarantined: why it goes to hardware inspection (its quarantines in
    the repeat-offender window, this one included, reached the policy's count), else None."""
    from bringup.service.blastradius import followup
    changes = ctx.netbox.stage_changes([rec.id]).get(rec.id, [])
    _, quarantines = events_of(rec.name, changes)
    f = followup(rec.name, quarantines, at or datetime.now(UTC), policy or load_policy())
    return f.message if f.then == "inspection" else None
