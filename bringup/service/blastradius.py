"""The blast-radius guard: how much of a pool bringup may take out of service on its own,
and when a node that keeps failing goes to hardware inspection (issue #15, item 3).

A bad driver push or a monitoring fault makes every node look broken at once; a
controller that quarantines whatever looks broken then drains the cluster by itself.
So before it quarantines or drains a node, the caller asks :func:`decide`, which allows
at most ``limit`` nodes of a pool out of service per sliding window and refuses the rest,
in the order asked. The policy is ``bringup/data/guard.yaml`` (:func:`load_policy`):

- **limit** of a pool of N nodes: ``max(floor(share_percent% of N), min_nodes)``, by
  default ``max(floor(10 % of N), 2)``. The larger of the two allowances: the share
  bounds a large pool (rounded down, since it is a ceiling), the minimum keeps a small
  pool workable (10 % of an 8-node pool is 0, and a guard that refuses every quarantine
  leaves broken nodes serving). 20 nodes: 2; 100 nodes: 10.
- **what counts**: nodes of the pool that entered ``quarantined`` or ``draining``
  within ``(at - window, at]``; a node counts once however many times it was acted on,
  and acting again on a node already counted takes nothing more from the budget.
- **repeat offenders**: a quarantine that is the node's ``count``-th within
  ``window_days`` (this one included) is followed by hardware inspection, not re-burn-in.

Everything here is pure: plain typed data in (the pool of each node, the events so far,
the requests), :class:`Decision` values out; a refusal is a value the caller records in
NetBox and the run's artifact and then fails the run with (:func:`refusals`), never an
exception. :func:`events_from_stages` derives the events from the ``stages`` frame of
:mod:`bringup.insight.fleetdata` (NetBox's change log).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from bringup.lifecycle.engine import LifecycleError, State, parse_state
from bringup.resources import data_file
from bringup.service.findings import FindingClasses
from bringup.yamlio import load_model

Action = Literal["quarantine", "drain"]
FollowUp = Literal["reburnin", "inspection"]

#: the lifecycle states whose entry takes a node out of service, and the action it was
STAGE_ACTIONS: dict[State, Action] = {State.QUARANTINED: "quarantine", State.DRAINING: "drain"}

#: the fields the texts may use; a text naming another is refused when the file loads
TEXT_FIELDS = ("node", "action", "pool", "size", "acted", "limit", "window", "quarantines", "days")


class BlastRadius(BaseModel):
    model_config = ConfigDict(extra="forbid")
    share_percent: float = Field(gt=0, le=100)
    min_nodes: int = Field(ge=0)
    window_minutes: int = Field(gt=0)

    @property
    def window(self) -> timedelta:
        return timedelta(minutes=self.window_minutes)

    def limit(self, size: int) -> int:
        """At most this many nodes of a pool of ``size`` out of service per window."""
        # Fraction of the decimal text: 29 % of 100 is 29, where the float product is 28.999...
        share = math.floor(Fraction(str(self.share_percent)) * size / 100)
        return max(share, self.min_nodes)


class RepeatOffender(BaseModel):
    model_config = ConfigDict(extra="forbid")
    count: int = Field(ge=1)
    window_days: int = Field(gt=0)

    @property
    def window(self) -> timedelta:
        return timedelta(days=self.window_days)


class Texts(BaseModel):
    model_config = ConfigDict(extra="forbid")
    allowed: str
    already_counted: str
    refused: str
    remediation: str
    unknown_node: str
    inspection: str
    reburnin: str

    @field_validator("*")
    @classmethod
    def _known_fields(cls, text: str) -> str:
        # a typo in a field must fail when the file loads, not the first time a pool overflows
        try:
            text.format(**{f: f for f in TEXT_FIELDS})
        except KeyError as exc:
            raise ValueError(f"unknown field {{{exc.args[0]}}}; known: {', '.join(TEXT_FIELDS)}") from None
        except (IndexError, ValueError) as exc:
            raise ValueError(f"not a valid text template: {exc}") from None
        return " ".join(text.split())


class GuardPolicy(BaseModel):
    """``bringup/data/guard.yaml``."""

    model_config = ConfigDict(extra="forbid")
    blast_radius: BlastRadius
    repeat_offender: RepeatOffender
    texts: Texts
    #: the class of each finding code: only the counted classes make a repeat offender
    finding_classes: FindingClasses = Field(default_factory=FindingClasses)


def load_policy(path: Path | None = None) -> GuardPolicy:
    """The guard's policy; an unknown key or a bad value is a ConfigError naming it (file:line)."""
    return load_model(path or data_file("guard.yaml"), GuardPolicy, "guard policy")


def _aware(at: datetime, what: str) -> datetime:
    if at.tzinfo is None:
        raise ValueError(f"{what} {at} has no time zone: the guard compares instants")
    return at


@dataclass(frozen=True)
class Event:
    """``node`` was taken out of service (``action``) at ``at`` (tz-aware)."""

    node: str
    at: datetime
    action: Action
    reason: str = ""

    def __post_init__(self) -> None:
        _aware(self.at, f"event of {self.node}:")


@dataclass(frozen=True)
class Request:
    """The caller wants to take ``node`` out of service now."""

    node: str
    action: Action
    reason: str = ""


@dataclass(frozen=True)
class Decision:
    """The guard's answer to one :class:`Request`. ``acted`` and ``limit`` are the pool's
    count of nodes out of service within the window before this request, and its limit.
    ``then`` (quarantines allowed only): re-burn-in or hardware inspection next;
    ``quarantines``: the node's quarantines in the repeat-offender window, this one included."""

    node: str
    action: Action
    allowed: bool
    pool: str
    size: int
    acted: int
    limit: int
    window: timedelta
    message: str
    remediation: str = ""
    then: FollowUp | None = None
    quarantines: int = 0
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        """A row for the run's artifact and the NetBox journal."""
        return {"node": self.node, "action": self.action, "allowed": self.allowed, "pool": self.pool,
                "pool size": self.size, "already out": self.acted, "limit": self.limit,
                "window min": int(self.window.total_seconds() // 60), "then": self.then or "",
                "message": self.message, "remediation": self.remediation}


@dataclass(frozen=True)
class Followup:
    """What follows a node's quarantine: re-burn-in, or hardware inspection."""

    node: str
    then: FollowUp
    quarantines: int
    message: str


def _quarantines(node: str, events: Iterable[Event], at: datetime, policy: GuardPolicy) -> int:
    since = at - policy.repeat_offender.window
    return sum(1 for e in events if e.node == node and e.action == "quarantine" and since < e.at <= at)


def _followup(node: str, quarantines: int, policy: GuardPolicy) -> Followup:
    ro = policy.repeat_offender
    then: FollowUp = "inspection" if quarantines >= ro.count else "reburnin"
    text = policy.texts.inspection if then == "inspection" else policy.texts.reburnin
    return Followup(node, then, quarantines, _say(text, node=node, quarantines=quarantines, days=ro.window_days))


def followup(node: str, events: Iterable[Event], at: datetime, policy: GuardPolicy) -> Followup:
    """For a node already quarantined (its quarantine among ``events``): inspection when
    it is its ``count``-th quarantine within ``window_days`` of ``at``, else re-burn-in."""
    return _followup(node, _quarantines(node, events, _aware(at, "at"), policy), policy)


def _say(text: str, **fields: Any) -> str:
    return text.format(**dict.fromkeys(TEXT_FIELDS, "") | fields)


def _window_text(window: timedelta) -> str:
    return f"{int(window.total_seconds() // 60)} min"


def decide(pools: Mapping[str, str], events: Iterable[Event], requests: Iterable[Request], at: datetime,
           policy: GuardPolicy, history: Iterable[Event] | None = None) -> list[Decision]:
    """One decision per request, in order: each allowed one takes a node of its pool's
    budget, so later requests see it.

    ``pools``: node -> pool for every node of the pools concerned, whatever its stage (the
    pool's size is its count here). ``events``: the nodes taken out of service so far
    (older ones are fine: only ``(at - window, at]`` counts; events after ``at`` do not,
    so a decision can be replayed). Ask *before* acting: the requests must not be among
    the events yet. A node missing from ``pools`` is refused (its limit cannot be known).
    ``history``: the quarantines the repeat-offender rule counts, where they differ from
    ``events`` (a quarantine at commissioning took nothing out of service, yet is a failure
    of the node).
    """
    _aware(at, "at")
    events = list(events)
    history = events if history is None else list(history)
    br = policy.blast_radius
    window, texts = br.window, policy.texts
    since = at - window
    sizes = Counter(pools.values())
    out_now: dict[str, set[str]] = {p: set() for p in sizes}
    for e in events:
        if e.node in pools and since < e.at <= at:
            out_now[pools[e.node]].add(e.node)
    decisions = []
    for r in requests:
        pool = pools.get(r.node)
        common = {"node": r.node, "action": r.action, "window": _window_text(window)}
        if pool is None:
            decisions.append(Decision(r.node, r.action, False, "", 0, 0, 0, window,
                                      _say(texts.unknown_node, **common), texts.remediation, reason=r.reason))
            continue
        out, size, lim = out_now[pool], sizes[pool], br.limit(sizes[pool])
        fields = common | {"pool": pool, "size": size, "acted": len(out), "limit": lim}
        if r.node in out:
            allowed, text = True, texts.already_counted
        elif len(out) < lim:
            allowed, text = True, texts.allowed
        else:
            decisions.append(Decision(r.node, r.action, False, pool, size, len(out), lim, window,
                                      _say(texts.refused, **fields), texts.remediation, reason=r.reason))
            continue
        then, count = None, _quarantines(r.node, history, at, policy)
        if r.action == "quarantine":
            count += 1  # this one
            then = _followup(r.node, count, policy).then
        decisions.append(Decision(r.node, r.action, allowed, pool, size, len(out), lim, window,
                                  _say(text, **fields), then=then, quarantines=count, reason=r.reason))
        out.add(r.node)
    return decisions


def refusals(decisions: Iterable[Decision]) -> str:
    """The text to fail a run with, naming every refusal; "" when all were allowed."""
    refused = [d for d in decisions if not d.allowed]
    if not refused:
        return ""
    lines = [f"the blast-radius guard refused {len(refused)} action(s):", *(f"- {d.message}" for d in refused)]
    return "\n".join([*lines, refused[0].remediation])


def events_from_stages(stages: pd.DataFrame) -> list[Event]:
    """The events in :class:`~bringup.insight.fleetdata.FleetData`'s ``stages`` frame (node, stage,
    start): every entry into ``quarantined`` or ``draining``. A row with no start, or a
    stage the lifecycle does not know (a hand edit in NetBox), is no event."""
    out = []
    for node, stage, start in stages[["node", "stage", "start"]].itertuples(index=False):
        if pd.isna(start):
            continue
        try:
            action = STAGE_ACTIONS.get(parse_state(stage))
        except LifecycleError:
            continue
        if action:
            out.append(Event(str(node), pd.Timestamp(start).to_pydatetime(), action,
                             f"entered {stage} (NetBox change log)"))
    return out


def pools_of(nodes: pd.DataFrame) -> dict[str, str]:
    """node -> pool from FleetData's ``nodes`` frame (node, pool), for :func:`decide`."""
    return {str(n): str(p) for n, p in nodes[["node", "pool"]].itertuples(index=False)}
