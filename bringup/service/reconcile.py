"""Kubernetes made to agree with NetBox for the nodes taken out of service.

NetBox is the source of truth: a node it records as ``quarantined`` or ``inspection``
must be cordoned and carry the quarantine taint; a ``draining`` one must be cordoned.
The lifecycle writes NetBox first and then isolates the node (:func:`isolate`: cordon
and taint, retried with backoff and confirmed by reading the node back). When the API
server stays down past that, NetBox and the cluster disagree; :func:`reconcile`, run at
the end of every flow and on a schedule (the ``reconcile`` flow), finds and fixes every
such disagreement. A node that never registered in the cluster agrees by definition:
there is nothing to cordon.

The result is a value: one :class:`Row` per node that NetBox has out of service, with
what the cluster said before, what was done and what it says after (or the error).
Only these states are enforced; a node NetBox has in service is never uncordoned here
(an operator may have cordoned it for reasons of their own). bringup never uncordons or
untaints what it did not place (:mod:`bringup.kube.ownership`): each row says who holds the
node's cordon, and with ``held`` a node NetBox has in service that someone else holds
cordoned gets a row too (action ``none``, the holder named), and its NetBox reason and
journal say who holds it (:func:`reconcile_fleet`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from bringup.admission.labels import QUARANTINE_KEY
from bringup.errors import BringupError, ConfigError, KubeConflictError, KubeError, KubeTransientError
from bringup.kube.ownership import OWNER, state_holder
from bringup.lifecycle.engine import LifecycleError, State, parse_state
from bringup.retry import Backoff, Timeout, poll

log = logging.getLogger(__name__)

ISOLATED = "cordoned, tainted"
CORDONED = "cordoned"
#: what the cluster must show for each state NetBox records (states not listed: nothing)
WANT = {State.QUARANTINED: ISOLATED, State.INSPECTION: ISOLATED, State.DRAINING: CORDONED}
#: how long a quarantine keeps retrying the cordon and taint before leaving it to reconcile
ISOLATE_WITHIN_S = 60.0


class Cluster(Protocol):
    """What reconciling needs of the cluster (:class:`bringup.kube.KubeAdapter` has it)."""

    def node_state(self, name: str) -> Any: ...
    def quarantine(self, name: str, reason: str, effect: str = "NoSchedule") -> Any: ...
    def cordon(self, name: str) -> Any: ...


@dataclass(frozen=True)
class Target:
    """A node as NetBox records it: name, stage and the recorded reason."""

    name: str
    stage: str
    reason: str = ""


@dataclass(frozen=True)
class Row:
    node: str
    netbox: str
    before: str
    action: str
    after: str = ""
    error: str = ""
    #: who holds the node's cordon (``bringup``, another system or a person; "" when uncordoned)
    holder: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"node": self.node, "netbox": self.netbox, "kubernetes before": self.before,
                "action": self.action, "kubernetes after": self.after, "held by": self.holder,
                "error": self.error}


def seen(state: Any) -> str:
    """The cluster's view of a node in the words of the table."""
    if not state.exists:
        return "not registered"
    return ", ".join(["cordoned" if state.unschedulable else "schedulable",
                      "tainted" if state.has_taint(QUARANTINE_KEY) else "untainted"])


def agrees(state: Any, want: str) -> bool:
    if not state.exists:
        return True  # never joined: nothing to cordon
    if want == ISOLATED:
        return bool(state.unschedulable and state.has_taint(QUARANTINE_KEY))
    return bool(state.unschedulable)


def _enforce(cluster: Cluster, name: str, want: str, reason: str, effect: str = "NoSchedule") -> Any:
    """One attempt, then the node read back: Kubernetes confirms, or it does not."""
    if want == ISOLATED:
        cluster.quarantine(name, reason, effect=effect)
    else:
        cluster.cordon(name)
    return cluster.node_state(name)


def isolate(cluster: Cluster, name: str, reason: str, *, effect: str = "NoSchedule", within: float = ISOLATE_WITHIN_S,
            sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> str:
    """Cordon and taint ``name`` with ``reason``, retried with backoff (API server down,
    update conflicts, a read-back that does not show it yet) until Kubernetes confirms it
    or ``within`` seconds pass; then the last error is raised (the reconcile step takes
    over). Credentials refused or a request refused are raised at once."""
    why: list[BringupError] = []

    def attempt() -> str | None:
        """The message once Kubernetes confirms; else None, with why not yet in ``why``."""
        try:
            state = _enforce(cluster, name, ISOLATED, reason, effect)
        except (KubeTransientError, KubeConflictError) as exc:
            why[:] = [exc]
            return None
        if not state.exists:
            return f"node {name} never joined the cluster: nothing to cordon or taint"
        if agrees(state, ISOLATED):
            return f"node {name} cordoned and tainted (read back from the API server)"
        why[:] = [KubeError(f"node {name} reads back {seen(state)} after the quarantine patch")]
        return None

    def pause(seconds: float) -> None:
        log.info("%s: not isolated yet (%s); again in %.0f s", name, why[0], seconds)
        sleep(seconds)
    try:
        return poll(attempt, timeout=within, what=f"isolating node {name}",
                    backoff=Backoff(first=1.0, factor=2.0, cap=15.0), sleep=pause, clock=clock)
    except Timeout:
        raise why[0] from None  # the last error, transient: the reconcile step takes over


#: the states NetBox counts as in service: a cordon someone else holds there is reported
IN_SERVICE = (State.VALIDATING, State.ACTIVE)


def reconcile(cluster: Callable[[], Cluster], targets: Iterable[Target], *, held: bool = False) -> list[Row]:
    """Make the cluster agree with NetBox for every target it has out of service.
    ``cluster`` is a factory, called only when a target needs the cluster (a run whose
    nodes are all in service needs no kubeconfig, unless ``held``). ``held``: also read the
    nodes NetBox has in service, and give a row to each that someone else holds cordoned
    (kept as it is: bringup lifts only its own cordons)."""
    rows: list[Row] = []
    todo = []
    for t in targets:
        try:
            state = parse_state(t.stage)
        except LifecycleError as exc:
            log.warning("%s: not reconciled: %s", t.name, exc)
            continue
        want = WANT.get(state)
        if want or (held and state in IN_SERVICE):
            todo.append((t, want or ""))
    if not todo:
        return rows
    try:
        kube = cluster()
    except BringupError as exc:  # no kubeconfig, say: every row says so
        return [Row(t.name, t.stage, "unknown", "none", error=str(exc)) for t, want in todo if want]
    for t, want in todo:
        row = _one(kube, t, want) if want else _held(kube, t)
        if row is not None:
            rows.append(row)
    return rows


def _held(kube: Any, t: Target) -> Row | None:
    """A node in service: a row only when someone other than bringup holds it cordoned."""
    try:
        state = kube.node_state(t.name)
    except BringupError as exc:
        return Row(t.name, t.stage, "unknown", "none", error=str(exc))
    who = state_holder(state)
    if who in ("", OWNER):
        return None
    return Row(t.name, t.stage, seen(state), "none (cordon kept: not bringup's)", seen(state), holder=who)


def _one(kube: Any, t: Target, want: str) -> Row:
    try:
        before = kube.node_state(t.name)
    except BringupError as exc:
        return Row(t.name, t.stage, "unknown", "none", error=str(exc))
    if agrees(before, want):
        return Row(t.name, t.stage, seen(before), "none", seen(before), holder=state_holder(before))
    action = "cordon and taint" if want == ISOLATED else "cordon"
    try:
        after = _enforce(kube, t.name, want, t.reason or f"{t.stage} in NetBox")
    except BringupError as exc:
        return Row(t.name, t.stage, seen(before), action, error=str(exc), holder=state_holder(before))
    error = "" if agrees(after, want) else f"the API server still shows {seen(after)}"
    return Row(t.name, t.stage, seen(before), action, seen(after), error, holder=state_holder(after))


def reconcile_fleet(ctx: Any, *, site: str | None = None, rack: str | None = None, tag: str | None = None,
                    names: list[str] | None = None) -> list[Row]:
    """:func:`reconcile` for the nodes NetBox selects (by default the settings' site)."""
    site = site or (None if (rack or tag or names) else ctx.settings.site or None)
    if not any((site, rack, tag, names)):
        raise ConfigError("select nodes to reconcile by site, rack, tag or names", hint="e.g. site=lab-east")
    recs = ctx.netbox.nodes(site=site, rack=rack, tag=tag, names=names)
    targets = [Target(r.name, r.stage, str(r.custom_fields.get("bringup_reason") or "")) for r in recs]
    rows = reconcile(lambda: ctx.kube, targets, held=True)
    record_holders(ctx, recs, rows)
    return rows


#: how a node's NetBox reason says that someone else holds it cordoned
HELD_BY = "cordoned outside bringup, held by "


def holder_notes(recs: Iterable[Any], rows: Iterable[Row]) -> list[tuple[Any, str]]:
    """(record, new reason) for each node in service whose reason must change: it says who
    holds the node when someone else does, and stops saying it once nobody does. Pure."""
    held = {r.node: r.holder for r in rows if r.holder and r.holder != OWNER}
    out = []
    for rec in recs:
        try:
            if parse_state(rec.stage) not in IN_SERVICE:
                continue
        except LifecycleError:
            continue
        reason = str(rec.custom_fields.get("bringup_reason") or "")
        if rec.name in held and reason != HELD_BY + held[rec.name]:
            out.append((rec, HELD_BY + held[rec.name]))
        elif rec.name not in held and reason.startswith(HELD_BY):
            out.append((rec, ""))
    return out


def record_holders(ctx: Any, recs: Iterable[Any], rows: Iterable[Row]) -> None:
    """Say in NetBox (reason and journal) who holds a node in service cordoned, once per
    change; the node's stage is not touched."""
    from bringup.netbox.records import NetBoxRecords
    records = NetBoxRecords(ctx)
    for rec, reason in holder_notes(recs, rows):
        records.write(rec, fields={"bringup_reason": reason})
        text = (f"Kubernetes: the node is {reason}; bringup keeps the cordon and will not uncordon it"
                if reason else "Kubernetes: the cordon bringup did not place was lifted")
        records.journal(rec, text, kind="warning" if reason else "info")


def reconcile_targets(ctx: Any, targets: Iterable[Target]) -> list[Row]:
    """:func:`reconcile` for targets the caller already read (a flow's final reports)."""
    return reconcile(lambda: ctx.kube, targets)
