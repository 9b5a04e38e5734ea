"""The lifecycle's ways out of service and back (a mixin of
:class:`~bringup.lifecycle.engine.Lifecycle`): a serving node taken out for re-burn-in
(:meth:`ServiceExits.suspect`) or sent to hardware inspection (:meth:`ServiceExits.inspect`),
and a repaired node let back in (:meth:`ServiceExits.repaired`). Each is a transition of the
lifecycle's table, written by the engine's one writer (``_transition``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from bringup.errors import BringupError
from bringup.lifecycle.ports import Records
from bringup.lifecycle.table import QUARANTINE_TAG, REBURNIN_TAG, LifecycleError, State, parse_state


class ServiceExits:
    """A mixin of the lifecycle engine: its out-of-service transitions."""

    records: Records
    on_quarantine: Callable[[Any, str], str]
    on_drain: Callable[[Any], str] | None

    def _transition(self, node: Any, src: State, dst: State, **change: Any) -> None:  # the engine's
        raise NotImplementedError

    def _fence(self, node: Any, holder: str | None, current: Any = ...) -> None:  # the lease mixin's
        raise NotImplementedError

    def repaired(self, name: str, note: str, by: str) -> State:
        """An operator repaired a node in hardware inspection (``by`` who, ``note`` what): the
        journal says so, the hardware verdict and the reason are cleared (the journal keeps
        the old failure) and the node enters provisioned, from where a walk burns it in again
        and runs the gate. Only a node in inspection, and one no other run holds."""
        node = self.records.node(name)
        state = parse_state(node.stage)
        if state != State.INSPECTION:
            raise LifecycleError(f"{name} is {state}, not inspection: only a node in hardware inspection is "
                                 "marked repaired", hint="see the node's journal in NetBox for where it stands")
        if not note.strip():
            raise LifecycleError(f"say what was repaired on {name}", hint="e.g. --note 'GPU 3 replaced, RMA 1234'")
        self._fence(node, None)
        self.records.journal(node, f"## Repaired\n\nBy {by}: {note}\n\nThe hardware verdict is cleared; "
                             "re-burn-in and the readiness gate follow (a failure returns the node to "
                             "inspection).\n", kind="success")
        self._transition(node, state, State.PROVISIONED, status="staged", remove_tags=(QUARANTINE_TAG,),
                         fields={"bringup_reason": f"repaired by {by}: {note}; re-burn-in and gate next"[:4000],
                                 "burnin_status": "pending", "burnin_summary": "", "burnin_last": None})
        return State.PROVISIONED

    def suspect(self, name: str, reasons: list[str], evidence: list[Any] = (), *, by: str = "health watch") -> State:
        """A serving node showed a critical health signal (``by``: the health watch or a health
        system that handed it over): draining with the reason, tagged for re-burn-in, evidence
        journaled, cordoned and tainted (``on_quarantine``). A node not active is left as it is."""
        return self._take_out(name, reasons, evidence, by, State.DRAINING, "taken out of service for re-burn-in")

    def inspect(self, name: str, reasons: list[str], *, by: str) -> State:
        """A serving node goes to hardware inspection without a re-test (``by``: a health system
        that handed it over for a part to replace): cordoned, tainted and drained, NetBox failed;
        :meth:`repaired` is the way out. A node not active is left as it is."""
        return self._take_out(name, reasons, (), by, State.INSPECTION, "sent to hardware inspection")

    def _take_out(self, name: str, reasons: list[str], evidence: Sequence[Any], by: str, dst: State,
                  what: str) -> State:
        node = self.records.node(name)
        state = parse_state(node.stage)
        if state != State.ACTIVE:
            return state
        reason = f"{by}: " + "; ".join(reasons)
        fields: dict[str, Any] = {"bringup_reason": reason[:4000]}
        if evidence:
            fields["bringup_evidence"] = self.records.put_evidence(node, list(evidence))
        inspection = dst == State.INSPECTION
        self._transition(node, state, dst, status="failed" if inspection else "staged", fields=fields,
                         add_tags=(QUARANTINE_TAG,) if inspection else (REBURNIN_TAG,))
        try:
            cluster = self.on_quarantine(node, reason)
            if inspection and self.on_drain is not None:   # nothing runs on a node in inspection
                cluster += f"; {self.on_drain(node)}"
        except BringupError as exc:  # reconcile (inspection) or the drain step cordons it anyway
            cluster = f"could not cordon and taint yet ({exc}); {'reconcile' if inspection else 'the drain step'} will"
        self.records.journal(node, f"## {by[:1].upper()}{by[1:]}: {what}\n\n"
                             + "\n".join(f"- {r}" for r in reasons) + f"\n\nKubernetes: {cluster}\n", kind="danger")
        return dst
