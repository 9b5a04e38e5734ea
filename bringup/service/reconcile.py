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
(an operator may have cordoned it for reasons of their own).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from bringup.admission.labels import QUARANTINE_KEY
from bringup.errors import BringupError, ConfigError, KubeConflictError, KubeError, KubeTransientError
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
    def quarantine(self, name: str, reason: str) -> Any: ...
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

    def as_dict(self) -> dict[str, str]:
        return {"node": self.node, "netbox": self.netbox, "kubernetes before": self.before,
                "action": self.action, "kubernetes after": self.after, "error": self.error}


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


def _enforce(cluster: Cluster, name: str, want: str, reason: str) -> Any:
    """One attempt, then the node read back: Kubernetes confirms, or it does not."""
    if want == ISOLATED:
        cluster.quarantine(name, reason)
    else:
        cluster.cordon(name)
    return cluster.node_state(name)


def isolate(cluster: Cluster, name: str, reason: str, *, within: float = ISOLATE_WITHIN_S,
            sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> str:
    """Cordon and taint ``name`` with ``reason``, retried with backoff (API server down,
    update conflicts, a read-back that does not show it yet) until Kubernetes confirms it
    or ``within`` seconds pass; then the last error is raised (the reconcile step takes
    over). Credentials refused or a request refused are raised at once."""
    why: list[BringupError] = []

    def attempt() -> str | None:
        """The message once Kubernetes confirms; else None, with why not yet in ``why``."""
        try:
            state = _enforce(cluster, name, ISOLATED, reason)
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


def reconcile(cluster: Callable[[], Cluster], targets: Iterable[Target]) -> list[Row]:
    """Make the cluster agree with NetBox for every target it has out of service.
    ``cluster`` is a factory, called only when a target needs the cluster (a run whose
    nodes are all in service needs no kubeconfig)."""
    rows: list[Row] = []
    todo = []
    for t in targets:
        try:
            want = WANT.get(parse_state(t.stage))
        except LifecycleError as exc:
            log.warning("%s: not reconciled: %s", t.name, exc)
            continue
        if want:
            todo.append((t, want))
    if not todo:
        return rows
    try:
        kube = cluster()
    except BringupError as exc:  # no kubeconfig, say: every row says so
        return [Row(t.name, t.stage, "unknown", "none", error=str(exc)) for t, _ in todo]
    for t, want in todo:
        rows.append(_one(kube, t, want))
    return rows


def _one(kube: Any, t: Target, want: str) -> Row:
    try:
        before = kube.node_state(t.name)
    except BringupError as exc:
        return Row(t.name, t.stage, "unknown", "none", error=str(exc))
    if agrees(before, want):
        return Row(t.name, t.stage, seen(before), "none", seen(before))
    action = "cordon and taint" if want == ISOLATED else "cordon"
    try:
        after = _enforce(kube, t.name, want, t.reason or f"{t.stage} in NetBox")
    except BringupError as exc:
        return Row(t.name, t.stage, seen(before), action, error=str(exc))
    error = "" if agrees(after, want) else f"the API server still shows {seen(after)}"
    return Row(t.name, t.stage, seen(before), action, seen(after), error)


def reconcile_fleet(ctx: Any, *, site: str | None = None, rack: str | None = None, tag: str | None = None,
                    names: list[str] | None = None) -> list[Row]:
    """:func:`reconcile` for the nodes NetBox selects (by default the settings' site)."""
    site = site or (None if (rack or tag or names) else ctx.settings.site or None)
    if not any((site, rack, tag, names)):
        raise ConfigError("select nodes to reconcile by site, rack, tag or names", hint="e.g. site=lab-east")
    recs = ctx.netbox.nodes(site=site, rack=rack, tag=tag, names=names)
    targets = [Target(r.name, r.stage, str(r.custom_fields.get("bringup_reason") or "")) for r in recs]
    return reconcile(lambda: ctx.kube, targets)


def reconcile_targets(ctx: Any, targets: Iterable[Target]) -> list[Row]:
    """:func:`reconcile` for targets the caller already read (a flow's final reports)."""
    return reconcile(lambda: ctx.kube, targets)
