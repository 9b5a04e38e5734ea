"""The node lifecycle: states, allowed transitions and each state's handler in one table,
and the one writer of a node's stage.

A node *is in* a state (NetBox's ``bringup_stage`` custom field). The handler of a state
is a short list of steps that move the node out of it: all steps pass, and the node
moves to the handler's ``success`` state; a step finds the node unfit, and it moves to
``quarantined``. Like metal3's host state machine (one handler map, one place that
changes the provisioning state), nothing else writes the stage: steps return
:class:`~bringup.lifecycle.results.StepResult` values and :class:`Lifecycle` records them.

The path is ``planned -> discovered -> provisioned -> burned_in -> fabric -> validating ->
active``; any state with a handler may fail to ``quarantined`` (then ``inspection``); ``active
-> draining -> provisioned`` is a re-burn-in, ``active -> inspection`` a hand-off's hardware
fault (the diagram: docs/architecture.md, "The lifecycle").

``firmware``, ``bios``, ``install`` and ``configure`` are steps of ``discovered``; ``judge`` (which also
records the verdict) is the step of ``burned_in``; ``fabric`` (recording the share of the
pool's fabric test a flow ran, flows.fabric) of ``fabric``; ``join`` of ``validating``; ``drain``
of ``draining``. A rerun resumes in the state NetBox records, skipping the steps of that
state whose evidence it already holds. ``force`` restarts a node from ``planned``,
draining it first if it serves.

One run holds a node at a time (its lease, :mod:`bringup.netbox.lease`): :meth:`Lifecycle.run_step`
reads it from NetBox before the step and again before recording, and refuses (``LeaseLost``)
once the run lost the node (:mod:`bringup.lifecycle.leasing`). Whatever stops a walk, the
node says why (``bringup_reason`` and its journal; :meth:`Lifecycle.stopped`).

Which errors are whose: a :class:`~bringup.errors.TransientError` is raised to the
orchestrator, which retries; a :class:`~bringup.errors.ControllerFault` (our settings,
credentials, services) holds the node where it is with the reason and is raised; any
other :class:`~bringup.errors.BringupError` of a step is about the node and quarantines it;
any other exception is a bug of ours (:class:`StepCrashed`): held, never quarantined.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bringup.errors import BringupError, ControllerFault, NetBoxUnavailable, TransientError
from bringup.lifecycle.leasing import UNREAD, Leasing
from bringup.lifecycle.ports import Records, StepFn
from bringup.lifecycle.results import NodeReport, StepResult
from bringup.lifecycle.service_exits import ServiceExits
from bringup.lifecycle.table import (
    ALLOWED,
    EXTRA_TRANSITIONS,
    LABELS,
    LEGACY,
    PATH,
    PROGRESS,
    QUARANTINE_TAG,
    REBURNIN_TAG,
    STEP_NAMES,
    TABLE,
    Handler,
    LifecycleError,
    State,
    Step,
    StepCrashed,
    check,
    choices,
    initial_fields,
    parse_state,
    path,
)
from bringup.netbox import lease as leases

log = logging.getLogger(__name__)


def _verdict(state: State) -> str:
    """A node's verdict in the fleet table, by the state it is in."""
    return {State.ACTIVE: "admitted", State.QUARANTINED: "quarantined",
            State.INSPECTION: "quarantined"}.get(state, "pending")


def _index(node: Any, fields: dict[str, Any]) -> dict[str, Any]:
    """The evidence index as it will be after this write: the one being written, else the node's."""
    return dict(fields.get("bringup_evidence") or node.custom_fields.get("bringup_evidence") or {})


@dataclass
class Lifecycle(Leasing, ServiceExits):
    """The engine over :data:`TABLE`: runs a state's steps through ``steps`` (step name ->
    function; the real ones are in :mod:`bringup.pipeline`) and records every outcome in
    ``records``. ``on_quarantine`` isolates a node in the cluster (cordon and taint)."""

    steps: Mapping[str, StepFn]
    records: Records
    on_quarantine: Callable[[Any, str], str] = lambda node, reason: "not in the cluster"
    on_drain: Callable[[Any], str] | None = None
    #: after a quarantine: the text saying why the node goes to hardware inspection (a repeat
    #: offender, by the guard's policy), or None for re-burn-in as usual
    repeat_offender: Callable[[Any], str | None] | None = None
    table: Mapping[State, Handler] = field(default_factory=lambda: TABLE)
    #: (node, holder) -> the node's record, for the renewals of a lease this process holds
    _leased: dict[tuple[str, str], Any] = field(default_factory=dict, init=False, repr=False)
    #: (node, holder) -> what this process knows of a lease it holds (bringup.lifecycle.leasing)
    _tenancy: dict[tuple[str, str], leases.Tenancy] = field(default_factory=dict, init=False, repr=False)
    #: node -> why this process last stopped a walk of it
    _why: dict[str, str] = field(default_factory=dict, init=False, repr=False)
    #: where a result NetBox could not take waits for the next run (:class:`bringup.netbox.spool.Spool`)
    spool: Any = None
    clock: Callable[[], float] = time.monotonic
    #: seconds between a held lease's renewals; the lease lives :func:`~bringup.netbox.lease.ttl_for` it
    renew_every: float = leases.RENEW_EVERY_S
    #: node -> (record, when): the record NetBox last answered a write of it with, whole
    _answered: dict[str, tuple[Any, float]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        missing = sorted(set(STEP_NAMES) - set(self.steps))
        if missing:
            raise ValueError(f"no function for lifecycle steps {missing}")

    # --- reading -------------------------------------------------------------------------------
    def state_of(self, name: str) -> State:
        return parse_state(self.records.node(name).stage)

    def handler(self, state: State) -> Handler | None:
        return self.table.get(state)

    def pending_steps(self, name: str, state: State, holder: str | None = None) -> list[Step]:
        """The steps of ``state`` still to run: a rerun skips those already done in it.
        ``holder``: the lease this run holds (its copy of the node is then current)."""
        handler = self.table.get(state)
        if handler is None:
            return []
        node = self._held(name, holder)
        done = self._progress(node or self.records.node(name)).get(state.value, [])
        return [st for st in handler.steps if st.name not in done]

    @staticmethod
    def _progress(node: Any) -> dict[str, list[str]]:
        index = node.custom_fields.get("bringup_evidence") or {}
        prog = index.get(PROGRESS) if isinstance(index, dict) else None
        return prog if isinstance(prog, dict) else {}

    # --- running a step ----------------------------------------------------------------------------
    def run_step(self, name: str, state: State | str, step: str, params: Mapping[str, Any] | None = None,
                 *, holder: str | None = None) -> StepResult:
        """Run ``step`` of ``state`` for one node and record its result. Returns the result
        with ``state`` set to where the node is now. ``holder``: the lease this run holds
        on the node; without one, the step runs only if no other run holds the node."""
        state = State(state)
        handler = self.table.get(state)
        if handler is None or step not in [s.name for s in handler.steps]:
            raise LifecycleError(f"{step!r} is not a step of state {state}")
        self._why.pop(name, None)   # this step has not stopped the walk (yet)
        # a walk that holds the node keeps the record it read when it took the lease, and
        # brings its changing part up to date with one small read, which the fence also
        # judges: a full read is several requests that each cost NetBox far more (issue #25)
        node = self._held(name, holder)
        if node is None:
            lease_now = UNREAD
        elif self._current(node):   # NetBox answered this run's last write with it moments ago
            lease_now = node.custom_fields.get(leases.FIELD)
        else:
            lease_now = self.records.refresh(node)
        node = node or self.records.node(name)
        current = parse_state(node.stage)
        if current != state:
            err = LifecycleError(f"{name} is {current}, not {state}: another run moved it",
                                 hint="look at the node's journal in NetBox; one run per node")
            if holder is not None:   # this run holds the node, so someone moved it by hand
                self.hold(name, str(err))
            raise err
        # the lease as NetBox holds it now: the copy in a full read may be minutes old already
        self._fence(node, holder, lease_now)
        kept = self.spool.find(name, state.value, step, device=device_of(node)) if self.spool is not None else None
        if kept is not None:  # a run that could not reach NetBox did this step: record it, do not redo it
            log.info("%s: recording the %s result spooled at %s instead of running it again", name, step, kept.at)
            result = self._keep(node, state, handler, step, kept.result, replay=True)
            self.spool.done(kept)
            return result
        try:
            result = self.steps[step](node, params or {})
        except TransientError:
            raise
        except ControllerFault as exc:
            self.hold(name, f"{step}: {exc}")
            raise
        except BringupError as exc:  # the node's own failure: a result, not a crash
            result = StepResult(node=name, step=step, ok=False, summary=f"{step} failed: {exc}",
                                reasons=[f"{step} did not finish: {exc}"])
        except Exception as exc:  # a bug of ours: never the node's fault
            why = f"{step} failed inside bringup: {type(exc).__name__}: {exc}"
            self.hold(name, why)
            raise StepCrashed(why, hint="a bug in bringup: report it with the run's log") from exc
        # the step may have taken long: record only if the node is still this run's
        try:
            self._fence(node, holder)
        except NetBoxUnavailable:
            pass  # NetBox is away: _keep cannot record either, and keeps the result for the next run
        result = self._keep(node, state, handler, step, result)
        self._why.pop(name, None)   # recorded: a hold the step made while it waited is over
        return result

    def _keep(self, node: Any, state: State, handler: Handler, step: str, result: StepResult,
              replay: bool = False) -> StepResult:
        """Record ``result``; when NetBox stays unreachable, keep it in the spool (the node
        stays where it is, and the next run records it instead of redoing the step)."""
        try:
            return self._record(node, state, handler, step, result)
        except NetBoxUnavailable as exc:
            if self.spool is None:
                raise
            from bringup.netbox.spool import ResultSpooled
            where = "" if replay else (
                f" in {self.spool.put(node.name, state.value, step, result, device=device_of(node), error=str(exc))}")
            raise ResultSpooled(f"{node.name}: NetBox is unreachable, so the {step} result is kept{where} "
                                f"for the next run ({exc})",
                                hint="bring NetBox back and run again: the result is recorded, not redone") from exc

    def _record(self, node: Any, state: State, handler: Handler, step: str, result: StepResult) -> StepResult:
        fields = dict(result.fields)
        if result.evidence:
            fields["bringup_evidence"] = self.records.put_evidence(node, result.evidence)
        names = [s.name for s in handler.steps]
        if not result.ok:
            if fields:
                self._write(node, fields=fields)
            self.quarantine(node.name, state, result.reasons or [result.summary or f"{step} failed"])
            result.state = State.QUARANTINED.value
            return result
        if step == names[-1]:
            self._transition(node, state, handler.success, status=handler.status, fields=fields)
            result.state = handler.success.value
        else:
            index = _index(node, fields)
            prog = dict(index.get(PROGRESS) or {})
            prog = {state.value: [*prog.get(state.value, []), step]}
            fields["bringup_evidence"] = {**index, PROGRESS: prog}
            self._write(node, fields=fields)
            result.state = state.value
        return result

    # --- transitions: the only writes of the stage ----------------------------------------------------
    def _transition(self, node: Any, src: State, dst: State, *, status: str | None = None,
                    fields: dict[str, Any] | None = None, add_tags: tuple[str, ...] = (),
                    remove_tags: tuple[str, ...] = ()) -> None:
        check(src, dst)
        fields = dict(fields or {})
        index = _index(node, fields)
        if index.get(PROGRESS):
            index[PROGRESS] = {}
            fields["bringup_evidence"] = index
        if str(node.custom_fields.get("bringup_reason") or "").startswith("held in "):
            fields.setdefault("bringup_reason", "")  # moved on: the hold no longer holds
        if dst == State.ACTIVE:
            fields["bringup_reason"] = ""
            remove_tags = (*remove_tags, QUARANTINE_TAG, REBURNIN_TAG)
        self._write(node, stage=dst.value, status=status, fields=fields, add_tags=add_tags,
                    remove_tags=remove_tags)
        log.info("%s: %s -> %s", node.name, src, dst)

    def quarantine(self, name: str, at: State, reasons: list[str]) -> None:
        """Take a node out of service: NetBox says why first (the truth the reconcile step
        reads), then the node is cordoned and tainted in the cluster (``on_quarantine``
        retries until the API server confirms it, for a bounded time)."""
        node = self.records.node(name)
        reason = "; ".join(reasons) or f"{at} failed"
        self._transition(node, parse_state(node.stage), State.QUARANTINED, status="failed",
                         fields={"bringup_reason": reason}, add_tags=(QUARANTINE_TAG,))
        try:
            cluster = self.on_quarantine(node, reason)
        except BringupError as exc:  # NetBox records it; the reconcile step cordons it later
            cluster = f"could not cordon and taint yet ({exc}); the reconcile step will"
        self.records.journal(node, f"## Quarantined in state {at}\n\n" + "\n".join(f"- {r}" for r in reasons)
                             + f"\n\nKubernetes: {cluster}\n", kind="danger")
        self._inspect_if_repeated(node, reason)

    def _inspect_if_repeated(self, node: Any, reason: str) -> None:
        """A node quarantined again within the repeat-offender window goes to hardware
        inspection instead of waiting for another re-burn-in; what cannot be read leaves it
        quarantined (an operator still sees it there)."""
        if self.repeat_offender is None:
            return
        try:
            why = self.repeat_offender(node)
            if why:
                self._transition(node, State.QUARANTINED, State.INSPECTION, status="failed",
                                 fields={"bringup_reason": f"{why}; last: {reason}"[:4000]})
                self.records.journal(node, f"## Marked for hardware inspection\n\n{why}\n", kind="danger")
        except BringupError as exc:
            log.warning("%s: could not check the repeat-offender rule: %s", node.name, exc)

    def hold(self, name: str, reason: str, evidence: list[Any] = ()) -> None:
        """The node stays where it is (not its fault, or not known yet); NetBox says why,
        with what was seen (``evidence``: an undecided fabric test's document) kept. The
        run's report says it too, should NetBox not take it."""
        self._why[name] = reason
        try:
            node = self.records.node(name)
            fields: dict[str, Any] = {"bringup_reason": f"held in {node.stage}: {reason}"[:4000]}
            if evidence:
                fields["bringup_evidence"] = self.records.put_evidence(node, list(evidence))
            self._write(node, fields=fields)
            self.records.journal(node, f"Held in state {node.stage}: {reason}", kind="warning")
        except BringupError as exc:  # NetBox itself may be what failed
            log.warning("%s: could not record why it is held (%s): %s", name, reason, exc)

    def start(self, name: str, *, force: bool = False, holder: str | None = None) -> State:
        """The state a run starts from. ``force`` restarts the node from planned, draining
        it first when it serves (a forced rerun never burns in a node under load).
        ``holder``: the lease this run just took (the record read with it is used)."""
        node = self._held(name, holder) or self.records.node(name)
        state = parse_state(node.stage)
        if not force or state == State.PLANNED:
            return state
        if state in (State.ACTIVE, State.VALIDATING, State.DRAINING) and self.on_drain is not None:
            self.records.journal(node, f"Forced rerun: drained first ({self.on_drain(node)})", kind="info")
        # what the rerun will write again is cleared now: a stale reason or verdict must not
        # show (or be acted on) while the node walks again
        self._transition(node, state, State.PLANNED, status="planned", remove_tags=(QUARANTINE_TAG,),
                         fields={"bringup_reason": "", "burnin_status": "pending", "burnin_summary": "",
                                 "burnin_last": None, "gpu_serials": None})
        # who asked: a forced re-test's outcome is not counted towards hardware inspection
        from bringup.settings import operator
        self.records.journal(node, f"## Forced re-test\n\nAsked by {operator()}, from {state}: the node walks again "
                             "from planned; a quarantine before it serves again does not count towards hardware "
                             "inspection.\n", kind="info")
        return State.PLANNED

    def begin_reburnin(self, name: str, holder: str | None = None) -> State:
        """An active node is due for re-burn-in: it enters draining (the drain is its step).
        ``holder``: the lease this run just took (the record read with it is used)."""
        node = self._held(name, holder) or self.records.node(name)
        state = parse_state(node.stage)
        if state != State.ACTIVE:
            return state
        # tagged as suspect() tags: a re-burn-in left blocked in draining (a PDB) is resumed
        # by the next reburnin run, which only takes tagged draining nodes
        self._transition(node, state, State.DRAINING, status="staged", add_tags=(REBURNIN_TAG,))
        return State.DRAINING

    def report(self, name: str, known: list[StepResult] | None = None, holder: str | None = None) -> NodeReport:
        """The node's row of the fleet table, from NetBox; when NetBox cannot be read, from
        what this run saw of it (``known``: its step results), marked as such. ``holder``:
        the lease this run holds; the record NetBox answered the run's last write of the
        node with moments ago is then the row's source instead of a new read."""
        held = self._held(name, holder)
        try:
            node = held if held is not None and self._current(held) else self.records.node(name)
        except BringupError as exc:
            if known is None:
                raise
            last = known[-1] if known else None
            return self._with_why(NodeReport(
                node=name, verdict="held", stage=(last.state if last else "") or "unknown",
                reasons=[f"NetBox could not be read ({exc}); this row is what the run saw",
                         *(last.reasons if last and not last.ok else [])],
                figures=dict(last.figures) if last else {}))
        verdict = _verdict(parse_state(node.stage))
        # the verdict's figures as this run's judge step recorded them: no need to read them back
        judged = next((r for r in reversed(known or []) if r.step == "judge" and r.state), None)
        return self._with_why(self.records.report(node, verdict, figures=judged.figures if judged else None))

    def reports(self, names: list[str]) -> list[NodeReport]:
        """The rows of many nodes (a run's table after its child runs): their records in one
        read and their verdicts' figures in a few, instead of two requests a node."""
        nodes = self.records.node_list(names)
        figures = self.records.verdict_figures(nodes)
        return [self._with_why(self.records.report(n, _verdict(parse_state(n.stage)), figures=figures.get(n.name, {})))
                for n in nodes]

#: the table's names, re-exported: callers import the lifecycle from one place
__all__ = ["ALLOWED", "EXTRA_TRANSITIONS", "LABELS", "LEGACY", "PATH", "PROGRESS", "QUARANTINE_TAG", "REBURNIN_TAG",
           "STEP_NAMES", "TABLE", "Handler", "Lifecycle", "LifecycleError", "State", "Step", "StepCrashed", "check",
           "choices", "initial_fields", "parse_state", "path"]


def device_of(node: Any) -> str:
    """The NetBox device ``node``'s record is, which a spooled result must name to be replayed
    (:mod:`bringup.netbox.spool`): its URL (the server and the device's id) and when NetBox
    created it (a NetBox built again, a lab's for one, gives its devices the same ids)."""
    url, created = str(getattr(node, "url", "") or ""), str(getattr(node, "created", "") or "")
    return f"{url} created {created}" if url and created else url
