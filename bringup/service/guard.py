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
from bringup.times import strict_time


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
        when = strict_time(at)
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


#: the head of the journal entry that gives a quarantine its finding class
CLASS_HEAD = "## Quarantine finding class: "
#: a class entry belongs to the quarantine it follows within this long
_CLASS_WITHIN_S = 900.0


def quarantine_codes(ctx: Context, rec) -> list[str]:
    """The finding codes of the quarantine ``rec`` just entered: the burn-in verdict's
    reasons that its recorded reason names (a quarantine by another step has none)."""
    fields = getattr(rec, "custom_fields", None) or {}
    reason = str(fields.get("bringup_reason") or "")
    if not reason or not ctx.evidence.has(fields, "verdict"):
        return []
    doc = ctx.evidence.get(rec.name, fields, "verdict")
    return [str(r.get("code")) for r in doc.get("reasons") or []
            if isinstance(r, dict) and r.get("message") and str(r["message"]) in reason]


def lives(changes: Iterable[tuple[str, str]]) -> list[tuple[datetime, str]]:
    """Each quarantine as (when, the life it ended): ``forced`` when it came before the node
    served again after an operator's forced re-test (entering ``planned`` after the node's
    first stage), ``repair`` when it came before the node served again after a repair
    (``inspection -> provisioned``), else ``""``. A forced re-test's outcome does not count
    towards inspection; a repaired node that fails goes back to inspection."""
    out: list[tuple[datetime, str]] = []
    life, previous = "", None
    for i, (at, stage) in enumerate(changes):
        try:
            state = parse_state(stage)
        except LifecycleError:
            continue
        if state == State.PLANNED:
            life = "forced" if i > 0 else ""
        elif state == State.PROVISIONED and previous == State.INSPECTION:
            life = "repair"
        elif state == State.ACTIVE:
            life = ""
        elif state == State.QUARANTINED:
            out.append((strict_time(at), life))
        previous = state
    return out


def class_marks(entries: Iterable[dict]) -> list[tuple[datetime, bool]]:
    """(when, counted) of each quarantine's class entry in a node's journal."""
    out = []
    for e in entries:
        text = str(e.get("comments") or "")
        if text.startswith(CLASS_HEAD) and e.get("created"):
            out.append((strict_time(str(e["created"])), "(counted" in text.splitlines()[0]))
    return out


def _counted(at: datetime, marks: list[tuple[datetime, bool]]) -> bool:
    """A past quarantine counts unless its class entry says it does not (one from before
    the classes were recorded counts, as it always did)."""
    for when, counted in marks:
        if 0 <= (when - at).total_seconds() <= _CLASS_WITHIN_S:
            return counted
    return True


def repeat_offender(ctx: Context, rec, *, at: datetime | None = None, policy: GuardPolicy | None = None) -> str | None:
    """After ``rec`` was quarantined: why it goes to hardware inspection (its counted
    quarantines in the repeat-offender window, this one included, reached the policy's
    count), else None. Counted: quarantines whose findings are of a counted class
    (hardware), outside a forced re-test. A repaired node that fails its re-test goes back
    to inspection whatever the count. The quarantine's class is journaled."""
    from bringup.service.blastradius import followup
    policy = policy or load_policy()
    classes = policy.finding_classes
    changes = ctx.netbox.stage_changes([rec.id]).get(rec.id, [])
    ended = lives(changes)
    codes = quarantine_codes(ctx, rec)
    cls = classes.classify(codes)
    life = ended[-1][1] if ended else ""
    counted = classes.counted(cls) and life != "forced"
    why = {"forced": "an operator's forced re-test: its outcome is the operator's to judge",
           "repair": "the re-test after a repair failed: back to hardware inspection"}.get(life) or (
        "counts towards hardware inspection" if counted else f"a {cls} finding: fix it, no hardware inspection")
    marks = class_marks(ctx.netbox.journal_entries(rec.id))
    ctx.netbox.journal(rec.id, f"{CLASS_HEAD}{cls} ({'counted' if counted else 'not counted'})\n\n"
                               f"Findings: {', '.join(codes) or 'none named'}; {why}.\n", kind="info")
    if life == "repair":
        return f"{rec.name} failed its re-test after a repair: back to hardware inspection"
    if not counted:
        return None
    quarantines = [Event(rec.name, when, "quarantine") for when, lived in ended[:-1]
                   if lived != "forced" and _counted(when, marks)]
    quarantines.append(Event(rec.name, ended[-1][0] if ended else (at or datetime.now(UTC)), "quarantine"))
    f = followup(rec.name, quarantines, at or datetime.now(UTC), policy)
    return f.message if f.then == "inspection" else None
