"""The lifecycle's table: the states, each state's handler (its steps and where they
lead), the transitions allowed, and the checks of a transition and of a stage value.

:mod:`bringup.lifecycle.engine` is the engine over this table and the one writer of a node's
stage; flows, the NetBox schema (the stage choice set) and progress displays read the
table from here (re-exported by :mod:`bringup.lifecycle.engine`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bringup.errors import ConfigError, ControllerFault


class State(StrEnum):
    PLANNED = "planned"
    DISCOVERED = "discovered"
    PROVISIONED = "provisioned"
    BURNED_IN = "burned_in"
    FABRIC = "fabric"
    VALIDATING = "validating"
    ACTIVE = "active"
    DRAINING = "draining"
    QUARANTINED = "quarantined"
    INSPECTION = "inspection"


#: how NetBox shows each state (the ``bringup-stage`` choice set is built from this)
LABELS = {
    State.PLANNED: "Planned", State.DISCOVERED: "Discovered", State.PROVISIONED: "Provisioned",
    State.BURNED_IN: "Burned in", State.FABRIC: "Fabric test",
    State.VALIDATING: "Validating", State.ACTIVE: "Active",
    State.DRAINING: "Draining", State.QUARANTINED: "Quarantined", State.INSPECTION: "Hardware inspection",
}

#: stage values written by bringup before the lifecycle had one table
LEGACY = {"judged": State.BURNED_IN, "recorded": State.BURNED_IN, "admitted": State.ACTIVE}


@dataclass(frozen=True)
class Step:
    """One step of a handler. ``uses`` names the shared resources it holds while it runs
    (the orchestrator maps them to concurrency limits): ``bmc``, ``install``, ``burnin``."""

    name: str
    uses: tuple[str, ...] = ()


@dataclass(frozen=True)
class Handler:
    steps: tuple[Step, ...]
    success: State
    #: NetBox device status once the node reaches ``success`` (None: unchanged)
    status: str | None = None


#: THE table: the handler of each state that has one. States without a handler are where
#: a run stops (active: serving; quarantined and inspection: an operator decides).
TABLE: dict[State, Handler] = {
    State.PLANNED: Handler((Step("discover", ("bmc",)),), State.DISCOVERED),
    State.DISCOVERED: Handler((Step("firmware", ("bmc",)), Step("bios", ("bmc",)), Step("install", ("install", "bmc")),
                               Step("configure")), State.PROVISIONED, status="staged"),
    State.PROVISIONED: Handler((Step("burn_in", ("burnin",)),), State.BURNED_IN),
    State.BURNED_IN: Handler((Step("judge"),), State.FABRIC),
    # pool-level: a walk stops here, the flow runs the pool's fabric test once for every
    # waiting node (flows.fabric), and the step records each node's share of it
    State.FABRIC: Handler((Step("fabric"),), State.VALIDATING),
    # share: the pool's GPU sharing mode (MIG geometry, device plugin config), set after the
    # burn-in and fabric test that need whole GPUs, before the node joins and is judged
    State.VALIDATING: Handler((Step("share"), Step("join"), Step("gate")), State.ACTIVE, status="active"),
    State.DRAINING: Handler((Step("drain"),), State.PROVISIONED, status="staged"),
}

#: transitions that are not a handler's success: operator and schedule actions
EXTRA_TRANSITIONS = {
    (State.ACTIVE, State.DRAINING),          # re-burn-in or a health signal
    (State.ACTIVE, State.INSPECTION),        # a health system's hand-off: a part to replace, no re-test
    (State.QUARANTINED, State.INSPECTION),   # quarantined twice in 30 days
    (State.INSPECTION, State.PROVISIONED),   # repaired (an operator): re-burn-in and the gate follow
}
#: every state can be restarted (``force``) and every state with a handler can fail
ALLOWED = ({(s, h.success) for s, h in TABLE.items()} | EXTRA_TRANSITIONS
           | {(s, State.QUARANTINED) for s in TABLE} | {(s, State.PLANNED) for s in State})

STEP_NAMES = tuple(st.name for h in TABLE.values() for st in h.steps)
#: the order of the states on the commission path, for progress displays
PATH = (State.PLANNED, State.DISCOVERED, State.PROVISIONED, State.BURNED_IN, State.FABRIC, State.VALIDATING,
        State.ACTIVE)


class LifecycleError(ConfigError):
    """A transition the table does not allow, or a stage value NetBox should not hold."""


class StepCrashed(ControllerFault):
    """A step raised an error bringup does not know (a bug of ours): the node is held where
    it is with the error, never quarantined for it."""


def parse_state(value: Any) -> State:
    """A NetBox stage value as a state; the old names are mapped, anything else is an error."""
    if value in (None, ""):
        return State.PLANNED
    try:
        return State(value)
    except ValueError:
        if value in LEGACY:
            return LEGACY[value]
    raise LifecycleError(f"NetBox records bring-up stage {value!r}, which is not a state of the lifecycle "
                         f"({', '.join(State)})", hint="fix the device's bringup_stage in NetBox")


def check(src: State, dst: State) -> None:
    if (src, dst) not in ALLOWED:
        raise LifecycleError(f"the lifecycle does not allow {src} -> {dst}")


def choices() -> list[tuple[str, str]]:
    """The ``bringup-stage`` choice set of the NetBox schema."""
    return [(s.value, LABELS[s]) for s in State]


def initial_fields() -> dict[str, Any]:
    """Custom fields of a device that enters bringup (NetBox seeding)."""
    return {"bringup_stage": State.PLANNED.value, "burnin_status": "pending"}


def path(state: State, until: State = State.ACTIVE) -> list[State]:
    """The states a node in ``state`` still goes through (handlers run) to reach ``until``;
    none when ``until`` is not ahead of it (a provisioned node is past ``discovered``: a
    discover run must not burn it in on the way to a state it never reaches again)."""
    out: list[State] = []
    seen = set()
    while state != until and state in TABLE and state not in seen:
        seen.add(state)
        out.append(state)
        state = TABLE[state].success
    return out if state == until else []


QUARANTINE_TAG = "bringup-quarantine"
REBURNIN_TAG = "bringup-reburnin"
PROGRESS = "progress"
