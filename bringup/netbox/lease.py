"""Node leases: one run holds a node at a time.

A run takes a node's lease before it walks it, renews it while it works, and gives it
back at the end. The lease lives with the node (NetBox's ``bringup_lease`` custom field):

    {"holder": "<run>@<host>:<pid>", "run": ..., "host": ..., "pid": ..., "pidns": ...,
     "since": iso, "expires": iso}

Taking, renewing and giving back are compare-and-swap writes (read the node with its
version, write only if it is unchanged, else read again and decide again), so two runs
that race for a node cannot both win. A holder that dies stops renewing: its lease
expires after :data:`TTL_S` (sized from NetBox's worst case) and the next run takes the node; on the holder's own host
(same PID namespace), a dead process is seen at once.

A run whose lease expired or was taken over must not record anything more for the node:
the lifecycle checks the lease again before recording (:func:`fence`), so a run never
records a burn-in document it did not produce.

Everything here is pure except :meth:`Claimant.here` and :func:`pid_alive` (they read
this process's identity); the thread that renews a lease is
:class:`bringup.netbox.lease_renewer.Renewer`. A node held by another run is
a value (:class:`LeaseHeld`), not an exception; :class:`LeaseLost` is raised when a run
finds out too late that the node is no longer its own.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from bringup.errors import ControllerFault, PreconditionFailed
from bringup.localfiles import pid_alive
from bringup.netbox.http_retry import CALL_WORST_S, WORST_CASE_S
from bringup.retry import Backoff, retry
from bringup.times import strict_time

FIELD = "bringup_lease"
# The lease's numbers come from the NetBox client's worst case (bringup.netbox.http_retry),
# not beside it: a live holder must never see its lease run out because NetBox was slow.
#: one renewal at its worst: its read and its conditional write, each riding out an outage
RENEW_WORST_S = 2 * WORST_CASE_S
#: a run renews its leases this often, counted from the end of the last renewal. Any cadence
#: is safe (the lifetime grows with it, :func:`ttl_for`); this one is a quarter of the lease's
#: life: each renewal is a conditional write of a device detail URL, one of the dearest
#: requests NetBox serves (220-430 ms of its CPU). Renewing every 71.5 s (half of one call's
#: sends at their worst, the cadence before) made the lease's writes a quarter of NetBox's
#: CPU in the flow tests and most of it once walks last hours (docs/capacity.md), for a
#: lifetime only a fifth shorter (1,123.5 s against 1,352 s): how long a controller that
#: vanished on another host keeps its nodes
RENEW_EVERY_S = 300.0
#: a run records a result only while its lease has at least this long to go: the recording
#: writes land (one HTTP call's worst case) before anyone else may take the node
FENCE_MARGIN_S = CALL_WORST_S


def ttl_for(every: float) -> float:
    """The lease's lifetime when it is renewed every ``every`` seconds: the last renewal's
    write may land WORST_CASE_S after it set the expiry, then the pause, then the next
    renewal at its worst, and the fence's margin is still left, whatever the cadence
    (:data:`TTL_S` at the default one). A site raises the cadence to
    send NetBox fewer renewals (each a conditional write of every node a run holds); a
    controller that vanished then keeps its nodes that much longer."""
    return WORST_CASE_S + every + RENEW_WORST_S + FENCE_MARGIN_S


#: a lease lasts this long unless renewed, at the default cadence
TTL_S = ttl_for(RENEW_EVERY_S)
#: compare-and-swap attempts before giving up (each loss means someone else wrote the node)
CAS_ATTEMPTS = 5

Decision = Literal["free", "mine", "held"]
#: a compare-and-swap change that writes nothing
KEEP = object()

log = logging.getLogger(__name__)


class LeaseLost(ControllerFault):
    """This run no longer holds the node's lease (expired, taken over or cleared): it
    records nothing more for the node. Neither the node's fault nor one a retry cures:
    the run stops for this node and says so; the holder of the lease carries on."""


@dataclass(frozen=True)
class Claimant:
    """Who asks for a lease: a run, in a process on a host."""

    run: str
    host: str
    pid: int
    #: the PID namespace: a PID says whether a process lives only within its namespace
    pidns: str = ""

    @property
    def holder(self) -> str:
        return f"{self.run}@{self.host}:{self.pid}"

    @classmethod
    def here(cls, run: str) -> Claimant:
        """The claimant for run ``run`` in this process."""
        try:
            pidns = os.readlink("/proc/self/ns/pid")
        except OSError:  # not Linux: no same-host shortcut, leases expire by time only
            pidns = ""
        return cls(run=run, host=socket.gethostname(), pid=os.getpid(), pidns=pidns)


@dataclass(frozen=True)
class Lease:
    holder: str
    run: str
    host: str
    since: datetime
    expires: datetime
    pid: int = 0
    pidns: str = ""

    @classmethod
    def parse(cls, value: Any) -> Lease | None:
        """The lease a field holds; None when empty. A malformed value (edited by hand)
        counts as no lease: it names no holder that could still be working."""
        if not isinstance(value, dict) or not value.get("holder"):
            return None
        try:
            return cls(holder=str(value["holder"]), run=str(value.get("run", "")), host=str(value.get("host", "")),
                       since=strict_time(value["since"]), expires=strict_time(value["expires"]),
                       pid=int(value.get("pid") or 0), pidns=str(value.get("pidns") or ""))
        except (KeyError, TypeError, ValueError):
            return None

    def field(self) -> dict[str, Any]:
        return {"holder": self.holder, "run": self.run, "host": self.host, "pid": self.pid, "pidns": self.pidns,
                "since": self.since.isoformat(timespec="seconds"),
                "expires": self.expires.isoformat(timespec="seconds")}


@dataclass(frozen=True)
class LeaseHeld:
    """The node is another run's: who holds it, since when, until when (unless renewed)."""

    node: str
    holder: str
    run: str
    host: str
    since: datetime
    until: datetime

    def message(self) -> str:
        return (f"node {self.node} is held by run {self.run} on {self.host} "
                f"(since {self.since.isoformat(timespec='seconds')}, until {self.until.isoformat(timespec='seconds')})")


def utcnow() -> datetime:
    return datetime.now(UTC)


def dead_here(me: Claimant, alive: Callable[[int], bool] = pid_alive) -> Callable[[Lease], bool]:
    """A predicate: the lease's holder ran on this host, in this PID namespace, and is
    gone. Elsewhere nothing is known, and the lease runs out by time."""
    def dead(lease: Lease) -> bool:
        return (bool(lease.pidns) and lease.host == me.host and lease.pidns == me.pidns
                and lease.pid != me.pid and not alive(lease.pid))
    return dead


def holder_gone(me: Claimant, ended: Callable[[str], bool] | None = None,
                alive: Callable[[int], bool] = pid_alive) -> Callable[[Lease], bool]:
    """A predicate: the lease's holder is known to be gone, because its process on this
    host is (:func:`dead_here`) or because ``ended(run)`` says its run is over (the
    orchestrator knows: a run that ended while NetBox was away could not give its leases
    back). A failing ``ended`` knows nothing, and the lease runs out by time."""
    here = dead_here(me, alive)

    def gone(lease: Lease) -> bool:
        if here(lease):
            return True
        if ended is None or not lease.run or lease.holder == me.holder:
            return False
        try:
            return bool(ended(lease.run))
        except (OSError, ValueError, RuntimeError) as exc:
            log.debug("could not tell whether run %s ended: %s", lease.run, exc)
            return False
    return gone


def decide(current: Any, me: str, now: datetime, dead: Callable[[Lease], bool] | None = None) -> Decision:
    """Whose node it is, for holder ``me`` at ``now``: ``free`` (no lease, expired, or its
    holder is known dead), ``mine`` (my lease, not expired) or ``held`` (someone else's)."""
    lease = Lease.parse(current)
    if lease is None or lease.expires <= now:
        return "free"
    if lease.holder == me:
        return "mine"
    if dead is not None and dead(lease):
        return "free"
    return "held"


def held_by(node: str, current: Any) -> LeaseHeld:
    lease = Lease.parse(current)
    assert lease is not None, "held_by is only asked about a held lease"  # noqa: S101  (an invariant of ours, not a check of input)
    return LeaseHeld(node=node, holder=lease.holder, run=lease.run, host=lease.host, since=lease.since,
                     until=lease.expires)


# --- the changes a compare-and-swap writes: (new field value or KEEP, result) -------------------
def claim_change(node: str, current: Any, me: Claimant, now: datetime, ttl: float = TTL_S,
                 dead: Callable[[Lease], bool] | None = None) -> tuple[Any, LeaseHeld | None]:
    """Take the lease (or renew it, when it is already mine); another live holder keeps it."""
    verdict = decide(current, me.holder, now, dead)
    if verdict == "held":
        return KEEP, held_by(node, current)
    since = Lease.parse(current).since if verdict == "mine" else now  # type: ignore[union-attr]
    lease = Lease(holder=me.holder, run=me.run, host=me.host, pid=me.pid, pidns=me.pidns, since=since,
                  expires=now + timedelta(seconds=ttl))
    return lease.field(), None


def renew_change(node: str, current: Any, holder: str, now: datetime, ttl: float = TTL_S) -> tuple[Any, str | None]:
    """Push my lease's expiry forward. A lease that is no longer mine is not taken back:
    the result then says why it was lost."""
    lease = Lease.parse(current)
    if lease is None:
        return KEEP, f"the lease of {node} was cleared"
    if lease.holder != holder:
        return KEEP, f"the lease of {node} was taken by run {lease.run} on {lease.host}"
    return Lease(**{**lease.__dict__, "expires": now + timedelta(seconds=ttl)}).field(), None


def release_change(current: Any, holder: str) -> tuple[Any, None]:
    """Give the lease back: cleared when it is mine, else left to its holder."""
    lease = Lease.parse(current)
    return (None if lease is not None and lease.holder == holder else KEEP), None


def cas(read: Callable[[], tuple[str, Any]], write: Callable[[str, Any], None],
        change: Callable[[Any], tuple[Any, Any]], attempts: int = CAS_ATTEMPTS) -> Any:
    """Compare-and-swap: ``read()`` gives (version, current value); ``change(current)``
    gives (new value or KEEP, result); ``write(version, new)`` raises
    :class:`~bringup.errors.PreconditionFailed` when the version is stale, and the
    change is decided again on a fresh read. Losing ``attempts`` races in a row raises
    the last loss."""
    def once() -> Any:
        version, current = read()
        new, result = change(current)
        if new is not KEEP:
            write(version, new)
        return result

    def lost(exc: BaseException) -> bool:
        log.debug("lost a compare-and-swap race (%s): reading again", exc)
        return False
    # a lost race is decided again at once: the winner's write is already there to read
    return retry(once, attempts=attempts, retry_on=(PreconditionFailed,), backoff=Backoff(first=0.0, factor=1.0),
                 give_up=lost)


def fence(node: str, current: Any, holder: str | None, now: datetime, margin: float = FENCE_MARGIN_S,
          known_until: datetime | None = None) -> str:
    """Why a result may NOT be recorded now ("" when it may). A run holding leases
    (``holder``) records only under its own lease with ``margin`` seconds to go; a use
    without leases (a one-off CLI command) records unless another run holds the node.

    ``current`` must be the lease as NetBox holds it now (read just before), never a copy
    read earlier: renewals only push the expiry on, so an old copy makes a live lease look
    as if it ran out. ``known_until`` is the expiry of this run's own last successful
    renewal (a lower bound of what NetBox holds): a read that came back slowly does not
    count against a lease the holder knows it renewed."""
    lease = Lease.parse(current)
    if holder is None:
        if decide(current, "", now) == "held":
            return held_by(node, current).message()
        return ""
    if lease is None:
        return f"the lease of {node} was cleared"
    if lease.holder != holder:
        return f"the lease of {node} was taken by run {lease.run} on {lease.host}"
    expires = max(lease.expires, known_until) if known_until is not None else lease.expires
    if expires - now <= timedelta(seconds=margin):
        return f"the lease of {node} runs out at {expires.isoformat(timespec='seconds')} (not renewed)"
    return ""


def taken(current: Any, holder: str | None, now: datetime) -> bool:
    """Whether another run holds the lease now (not expired): the node is that run's to
    record on, and a run that lost it writes nothing there but a journal line."""
    return decide(current, holder or "", now) == "held"


@dataclass
class Tenancy:
    """What this process knows of a lease it holds: ``until``, the expiry of its last
    successful claim or renewal (NetBox holds at least that, unless someone cleared or
    took the lease); ``stopped``, why its renewer stopped ("" while it runs); and the
    last renewal error, which a hold's reason names."""

    node: str
    holder: str
    until: datetime | None = None
    stopped: str = ""
    last_error: str = ""

    def renewed(self, at_least: datetime) -> None:
        self.until = at_least if self.until is None else max(self.until, at_least)
        self.last_error = ""


class LeaseOps:
    """``claim``, ``renew`` and ``release`` of a :class:`~bringup.lifecycle.ports.Records`
    implementation, each one compare-and-swap through its ``_cas(node, change)``
    (``change``: the field's current value -> (new value or KEEP, result))."""

    def _cas(self, node: Any, change: Callable[[Any], tuple[Any, Any]]) -> Any:
        raise NotImplementedError

    def claim(self, node: Any, me: Claimant, ttl: float,
              ended: Callable[[str], bool] | None = None) -> LeaseHeld | None:
        dead = holder_gone(me, ended)
        return self._cas(node, lambda cur: claim_change(node.name, cur, me, utcnow(), ttl, dead))

    def renew(self, node: Any, holder: str, ttl: float) -> str | None:
        return self._cas(node, lambda cur: renew_change(node.name, cur, holder, utcnow(), ttl))

    def release(self, node: Any, holder: str) -> None:
        self._cas(node, lambda cur: release_change(cur, holder))
