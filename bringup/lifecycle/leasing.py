"""The lifecycle's side of node leases (:mod:`bringup.netbox.lease`) and of why a walk stopped.

A run takes a node's lease (:meth:`Leasing.acquire`), renews it on a thread while it walks
(:meth:`Leasing.renewer`) and gives it back (:meth:`Leasing.release`). What this process
knows of each lease it holds is a :class:`~bringup.netbox.lease.Tenancy`: the expiry of its
last successful renewal, and whether its renewer stopped.

The fence (:meth:`Leasing._fence`) runs before a step and before its result is recorded. It
decides on the lease as NetBox holds it *now*, read just before, with the run's own last
successful renewal counting too, never on the copy read with the node: that copy comes from
a read of several requests (the device, then its interfaces), and with NetBox slow it was
minutes old, so a lease the run had renewed looked as if it ran out (issue #24). A walk
whose lease runs out, was cleared or is no longer renewed is *held* with that reason; a node
another run took over gets only a journal line (the node is that run's to write).

Whatever stops a walk, NetBox says why (:meth:`Leasing.stopped`), and so does the run's
report of the node, even when NetBox could not take the reason.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from bringup.errors import BringupError, held_reason
from bringup.lifecycle.ports import Records
from bringup.netbox import lease as leases
from bringup.netbox.lease_renewer import Renewer

log = logging.getLogger(__name__)
#: how long a record NetBox answered this run's own write with counts as read now: the
#: check before a step takes it instead of reading again (the check before a result is
#: recorded always reads). A step that first waited longer for a slot reads.
FRESH_S = 10.0
#: the lease has not been read yet (``None`` is a lease NetBox holds as empty)
UNREAD = object()

HINTS = {
    "taken": "the run now holding the node carries on with it; see its bringup_lease in NetBox",
    "cleared": "someone cleared the node's bringup_lease in NetBox while this run walked it; run again",
    "runs out": "NetBox did not take this run's lease renewals in time (the run's log names each failed "
                "renewal); run again once NetBox answers",
    "renewed": "this run's lease renewer stopped (its log says why); run again",
}


def _hint(why: str) -> str:
    return next((h for key, h in HINTS.items() if key in why), HINTS["renewed"])


class Leasing:
    """A mixin of :class:`~bringup.lifecycle.engine.Lifecycle`: its lease handling."""

    records: Records
    #: (node, holder) -> the node's record, for the renewals of a lease this process holds
    _leased: dict[tuple[str, str], Any]
    #: (node, holder) -> what this process knows of that lease
    _tenancy: dict[tuple[str, str], leases.Tenancy]
    #: node -> why this process last stopped a walk of it (also when NetBox could not take it)
    _why: dict[str, str]
    #: node -> (record, when): the record NetBox last answered a write of it with, whole
    _answered: dict[str, tuple[Any, float]]
    clock: Callable[[], float]
    #: seconds between a held lease's renewals (the site's ``lease_renew_every_s``)
    renew_every: float

    def hold(self, name: str, reason: str, evidence: list[Any] = ()) -> None:  # the engine's
        raise NotImplementedError

    # --- the record a walk holds -------------------------------------------------------------------
    def _held(self, name: str, holder: str | None) -> Any:
        """The record this run read when it took the node's lease (None without one): kept
        up to date by the run's own reads and writes, it spares a full read per step."""
        return self._leased.get((name, holder)) if holder is not None else None

    def _write(self, node: Any, **change: Any) -> None:
        """One write of the node's record; remembers when NetBox answered it with the whole
        record (:data:`FRESH_S`)."""
        if self.records.write(node, **change):
            self._answered[node.name] = (node, self.clock())
        else:
            self._answered.pop(node.name, None)

    def _current(self, node: Any) -> bool:
        """Whether ``node`` (this object) is the record NetBox answered a write with, less
        than :data:`FRESH_S` ago."""
        seen = self._answered.get(node.name)
        return seen is not None and seen[0] is node and self.clock() - seen[1] < FRESH_S

    # --- taking, renewing, giving back ------------------------------------------------------------
    def _ttl(self) -> float:
        return leases.ttl_for(self.renew_every)

    def acquire(self, name: str, me: leases.Claimant, ttl: float | None = None,
                ended: Callable[[str], bool] | None = None) -> leases.LeaseHeld | None:
        """Take the node's lease for ``me``; who holds it instead, when another live run does.
        ``ended(run)`` tells whether a holding run is over (its lease is then free). ``ttl``:
        the lease's lifetime (by default the one of this engine's renewal cadence)."""
        ttl = self._ttl() if ttl is None else ttl
        self._why.pop(name, None)   # a new walk: nothing has stopped it yet
        node = self.records.node(name)
        asked = leases.utcnow()   # the claim sets the expiry later than this: a lower bound
        held = self.records.claim(node, me, ttl, ended=ended)
        if held is None:  # renewals reuse this record: a full node read costs several requests
            self._leased[(name, me.holder)] = node
            self._tenancy[(name, me.holder)] = leases.Tenancy(name, me.holder, until=asked + timedelta(seconds=ttl))
        return held

    def renew(self, name: str, holder: str, ttl: float | None = None) -> str | None:
        """Push the lease's expiry on; why it was lost, when it no longer is ``holder``'s."""
        ttl = self._ttl() if ttl is None else ttl
        tenancy = self._tenancy.get((name, holder))
        asked = leases.utcnow()
        try:
            node = self._leased.get((name, holder)) or self.records.node(name)
            lost = self.records.renew(node, holder, ttl)
        except Exception as exc:
            if tenancy is not None:
                tenancy.last_error = f"{type(exc).__name__}: {exc}"
            raise
        if tenancy is not None:
            if lost:
                tenancy.stopped = lost
            else:
                tenancy.renewed(asked + timedelta(seconds=ttl))
        return lost

    def release(self, name: str, holder: str) -> None:
        self._tenancy.pop((name, holder), None)
        node = self._leased.pop((name, holder), None) or self.records.node(name)
        self.records.release(node, holder)

    def renewer(self, name: str, holder: str, *, ttl: float | None = None, every: float | None = None,
                logger: Any = None) -> Renewer:
        """The renewer of a lease taken with :meth:`acquire` (a context manager: renews on a
        thread while the block runs, then gives the lease back). If it stops early, the
        walk's next fence stops the walk at once. By default it renews at this engine's
        cadence (:attr:`renew_every`) to the matching lifetime."""
        every = self.renew_every if every is None else every
        ttl = leases.ttl_for(every) if ttl is None else ttl
        def stopped(why: str) -> None:
            tenancy = self._tenancy.get((name, holder))
            if tenancy is not None:
                tenancy.stopped = why
        return Renewer(lambda: self.renew(name, holder, ttl), lambda: self.release(name, holder),
                       every=every, logger=logger, node=name, on_stop=stopped)

    # --- the fence -----------------------------------------------------------------------------------
    def _fence(self, node: Any, holder: str | None, current: Any = UNREAD) -> None:
        """Raise :class:`~bringup.netbox.lease.LeaseLost` unless this run may record for
        ``node`` now, having made NetBox say why (a hold, or a journal line when another
        run holds the node). Decides on the lease read from NetBox now: ``current`` when
        the caller has just read it, else read here (which also brings ``node``'s stage and
        custom fields up to date, for the record that follows)."""
        name = node.name
        tenancy = self._tenancy.get((name, holder)) if holder is not None else None
        if current is UNREAD:   # as NetBox holds it now: never the copy read with the node
            current = self.records.refresh(node)
        now = leases.utcnow()
        why = leases.fence(name, current, holder, now, known_until=tenancy.until if tenancy else None)
        if not why and tenancy is not None and tenancy.stopped:
            why = f"{tenancy.stopped}: the lease of {name} is no longer renewed"
        if not why:
            return
        if tenancy is not None and tenancy.last_error and "runs out" in why:
            why += f"; the last renewal failed: {tenancy.last_error}"
        if leases.taken(current, holder, now):   # another run's node now: not ours to write
            self._why[name] = why
            if holder is not None:
                self._journal(node, f"Run {holder} stopped walking this node: {why}")
        else:   # nobody else holds it (ours running out, expired or cleared): held, saying why
            self.hold(name, f"{why}; this run stopped before recording")
        raise leases.LeaseLost(f"{why}: this run records nothing for {name}", hint=_hint(why))

    def _journal(self, node: Any, text: str) -> None:
        try:
            self.records.journal(node, text, kind="warning")
        except BringupError as exc:  # NetBox itself may be what failed; the run's report says it
            log.warning("%s: could not write to its journal (%s): %s", node.name, text, exc)

    # --- why a walk stopped ---------------------------------------------------------------------------
    def stopped(self, name: str, exc: BaseException) -> str:
        """Make sure NetBox says why ``exc`` stopped the walk of ``name``: the node is held
        with the reason, unless this walk already said why (the step's hold, the fence's).
        Returns the reason, never empty."""
        if self._why.get(name):
            return self._why[name]
        if isinstance(exc, BringupError) and exc.transient:
            reason = held_reason(exc)
        else:
            reason = str(exc) or type(exc).__name__
        self.hold(name, reason)
        return reason

    def _with_why(self, report: Any) -> Any:
        """The node's report with the reason this process stopped its walk, when the report
        (from NetBox, which may not have taken the reason) does not say it already."""
        why = self._why.get(report.node)
        if not why or report.verdict in ("admitted", "quarantined") or why in "; ".join(report.reasons):
            return report
        return report.model_copy(update={"verdict": "held", "reasons": [why, *report.reasons]})

