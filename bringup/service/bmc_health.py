"""The health watch's rules for what a node's BMC says (issue #27 item 4). Pure: a reading
(:class:`bringup.redfish.health.BmcHealth`) and the previous look's :class:`BmcLook` in,
signals and the new :class:`BmcLook` out; the policy is the ``bmc:`` section of
``bringup/data/healthwatch.yaml``.

- A **sensor** is past a threshold when its reading is above an ``Upper*`` or below a
  ``Lower*`` one (strictly: a reading *at* the threshold is still in range); past one of
  ``critical_thresholds`` is ``bmc_sensor_critical``, of ``warning_thresholds``
  ``bmc_sensor_warning``. The BMC's own ``Status.Health`` counts as well (a BMC may judge
  with thresholds it does not publish): the worse of the two wins.
- A **power supply** whose State or Health is in ``psu_lost`` is ``bmc_psu_lost``; one whose
  Health is Warning (a predicted failure) is ``bmc_psu_degraded``. A bay already ``Absent``
  at the first look is an empty bay (one ``bmc_psu_degraded`` warning, then known); one
  that empties later is lost.
- A **leak detector** whose DetectorState is in ``leak_states`` is ``bmc_leak``.
- A **SEL entry** counts once, at the first look that sees it: newer than the marker the
  last look kept (the newest ``Created`` and the ids at it; undated entries by id). Its
  Severity grades it (``sel_severity``): ``bmc_sel_critical`` / ``bmc_sel_warning``. On the
  first look (no marker yet) only entries of the last ``first_look_hours`` that grade
  critical count: the node's history before the watch is not news, a leak an hour ago is.
- ``overrides`` re-grade a finding (critical, warning or ignore) by fixed operators on its
  fields, the first whose conditions all hold: a Message Id that is routine, a sensor kind
  that only warns. An override never makes a finding of a healthy reading.
- What the BMC says in words bringup does not know (a Health, DetectorState or Severity
  outside the schema's values), and members that could not be read, are one
  ``bmc_unreadable`` warning: unknown, never OK, and never a reason to drain.

A finding that is critical is raised at every look while it lasts (the guard may have held
the node back last time); a warning only when it is new since the last look, so a sensor
sitting at its caution threshold is one journal entry, not one per look.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bringup.redfish.health import BmcHealth, SelEntry, SensorReading
from bringup.times import parse_time

if TYPE_CHECKING:
    from bringup.service.health import Signal, WatchPolicy

Level = Literal["critical", "warning", "ignore"]
Op = Literal["equals", "not_equals", "in", "matches", "contains", "above", "below"]
#: every signal code this module raises: healthwatch.yaml's signals must rate each
BMC_SIGNAL_CODES = ("bmc_sensor_critical", "bmc_sensor_warning", "bmc_psu_lost", "bmc_psu_degraded", "bmc_leak",
                    "bmc_sel_critical", "bmc_sel_warning", "bmc_unreadable")
#: the fields an override's condition may name, per kind of finding
FIELDS = {"sel": ("message_id", "message", "sensor_type", "severity", "entry_type"),
          "sensor": ("id", "name", "kind", "units", "chassis")}
#: how many undated SEL entry ids a look keeps to know them again
MAX_UNDATED = 500


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class When(_Strict):
    field: str
    op: Op
    value: Any

    @field_validator("value")
    @classmethod
    def _regex(cls, v: Any, info: Any) -> Any:
        if info.data.get("op") == "matches":
            try:
                re.compile(str(v))   # a bad pattern fails at load, not at the first SEL entry
            except re.error as exc:
                raise ValueError(f"{v!r} is not a regular expression: {exc}") from None
        return v

    def holds(self, fields: Mapping[str, Any]) -> bool:
        got = fields.get(self.field)
        if self.op in ("above", "below"):
            if not isinstance(got, (int, float)) or not isinstance(self.value, (int, float)):
                return False
            return got > self.value if self.op == "above" else got < self.value
        text = "" if got is None else str(got)
        if self.op == "equals":
            return text == str(self.value)
        if self.op == "not_equals":
            return text != str(self.value)
        if self.op == "in":
            return text in {str(v) for v in (self.value if isinstance(self.value, list) else [self.value])}
        if self.op == "contains":
            return str(self.value).lower() in text.lower()
        return re.search(str(self.value), text) is not None   # matches


def named_only(when: list[When], known: Sequence[str], noun: str, where: str) -> list[When]:
    """``when`` as a rule's validator returns it, when each condition names one of ``known``;
    else the ValueError that says which do not and what ``where`` may name."""
    bad = [w.field for w in when if w.field not in known]
    if bad:
        raise ValueError(f"unknown {noun}(s) {bad}; {where} may name {list(known)}")
    return when


class Override(_Strict):
    applies_to: Literal["sel", "sensor"]
    when: list[When] = Field(min_length=1)
    then: Level
    note: str = ""

    @field_validator("when")
    @classmethod
    def _fields(cls, v: list[When], info: Any) -> list[When]:
        return named_only(v, FIELDS.get(info.data.get("applies_to", ""), ()), "field",
                          f"a {info.data.get('applies_to')} override")


class BmcPolicy(_Strict):
    """``healthwatch.yaml``'s ``bmc:`` section."""

    timeout_seconds: float = Field(default=10.0, gt=0)
    first_look_hours: float = Field(default=24.0, ge=0)
    critical_thresholds: list[str] = ["UpperCritical", "UpperFatal", "LowerCritical", "LowerFatal"]
    warning_thresholds: list[str] = ["UpperCaution", "LowerCaution"]
    #: a power supply's Status.State or Status.Health that means it is lost
    psu_lost: list[str] = ["Absent", "UnavailableOffline", "Critical"]
    leak_states: list[str] = ["Warning", "Critical"]
    sel_severity: dict[str, Level] = {"Critical": "critical", "Warning": "warning", "OK": "ignore"}
    overrides: list[Override] = Field(default_factory=list)


@dataclass(frozen=True)
class BmcLook:
    """What a look keeps of the BMC for the next one (in the health snapshot)."""

    #: the newest ``Created`` among the SEL's entries, as the BMC wrote it, and the entry ids at it
    sel_newest: str | None = None
    sel_ids_at_newest: tuple[str, ...] = ()
    #: ids of entries without a date bringup can read (known again by id)
    sel_undated: tuple[str, ...] = ()
    sel_source: str | None = None
    #: finding key (``sensor:<chassis>/<id>``, ``psu:...``, ``leak:...``) -> its level now
    states: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"sel_newest": self.sel_newest, "sel_ids_at_newest": list(self.sel_ids_at_newest),
                "sel_undated": list(self.sel_undated), "sel_source": self.sel_source, "states": dict(self.states)}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> BmcLook:
        return cls(sel_newest=doc.get("sel_newest"), sel_ids_at_newest=tuple(map(str, doc.get("sel_ids_at_newest") or ())),
                   sel_undated=tuple(map(str, doc.get("sel_undated") or ())), sel_source=doc.get("sel_source"),
                   states={str(k): str(v) for k, v in (doc.get("states") or {}).items()})


def when(text: str | None) -> datetime | None:
    """A Redfish DateTime as an aware datetime (UTC where it gives no offset), or None."""
    return parse_time(text)


# --- grading ------------------------------------------------------------------------------------
def _override(policy: BmcPolicy, kind: str, fields: Mapping[str, Any], level: Level) -> Level:
    for o in policy.overrides:
        if o.applies_to == kind and all(w.holds(fields) for w in o.when):
            return o.then
    return level


def _past(name: str, reading: float, limit: float) -> bool:
    return reading > limit if name.startswith("Upper") else reading < limit


def sensor_level(policy: BmcPolicy, s: SensorReading) -> tuple[Level | None, str]:
    """(level, why) of one sensor; (None, "") when it is in range and the BMC says OK."""
    if s.state in ("Absent", "Disabled"):
        return None, ""
    level: Level | None = None
    why = ""
    if s.reading is not None:
        for names, lvl in ((policy.critical_thresholds, "critical"), (policy.warning_thresholds, "warning")):
            hit = next((n for n in names if n in s.thresholds and _past(n, s.reading, s.thresholds[n])), None)
            if hit:
                level, why = lvl, f"reads {s.reading:g} {s.units or ''}".rstrip() + f", past {hit} {s.thresholds[hit]:g}"
                break
    if s.health == "Critical" and level != "critical":
        level, why = "critical", why or "the BMC says its health is Critical"
    elif s.health == "Warning" and level is None:
        level, why = "warning", "the BMC says its health is Warning"
    if level is None:
        return None, ""
    fields = {"id": s.id, "name": s.name, "kind": s.kind, "units": s.units, "chassis": s.chassis}
    return _override(policy, "sensor", fields, level), why


def sel_level(policy: BmcPolicy, e: SelEntry) -> Level:
    level = policy.sel_severity.get(e.severity, "warning")   # a severity not understood is not OK
    fields = {"message_id": e.message_id, "message": e.message, "sensor_type": e.sensor_type,
              "severity": e.severity, "entry_type": e.entry_type}
    return _override(policy, "sel", fields, level)


def new_sel_entries(entries: list[SelEntry], prev: BmcLook | None, now: datetime,
                    first_look_hours: float) -> tuple[list[SelEntry], bool]:
    """(the entries this look counts, whether it is the first look). See the module's docstring."""
    first = prev is None or (prev.sel_newest is None and not prev.sel_undated and prev.sel_source is None)
    if first:
        since = now - timedelta(hours=first_look_hours)
        return [e for e in entries if (t := when(e.created)) is not None and t >= since], True
    assert prev is not None  # noqa: S101  (narrows the type: not the first look)
    newest = when(prev.sel_newest)
    out = []
    for e in entries:
        t = when(e.created)
        if t is None:
            if e.id not in prev.sel_undated:
                out.append(e)
        elif newest is None or t > newest or (t == newest and e.id not in prev.sel_ids_at_newest):
            out.append(e)
    return out, False


def _marker(entries: list[SelEntry], prev: BmcLook | None) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    dated = [(t, e) for e in entries if (t := when(e.created)) is not None]
    undated = tuple(e.id for e in entries if when(e.created) is None)[-MAX_UNDATED:]
    if not dated:
        # an empty (cleared) log keeps the old marker: entries of the old times are not news
        return (prev.sel_newest if prev else None), (prev.sel_ids_at_newest if prev else ()), undated
    top = max(t for t, _ in dated)
    prev_top = when(prev.sel_newest) if prev else None
    if prev_top is not None and prev_top > top:
        return prev.sel_newest, prev.sel_ids_at_newest, undated   # type: ignore[union-attr]
    text = next(e.created for t, e in dated if t == top)
    return text, tuple(sorted(e.id for t, e in dated if t == top)), undated


# --- signals -------------------------------------------------------------------------------------
def unreadable(policy: WatchPolicy, why: str, **evidence: Any) -> Signal:
    from bringup.service.health import Signal
    return Signal("bmc_unreadable", policy.rule("bmc_unreadable").severity, f"BMC: {why}", evidence)


def bmc_signals(policy: WatchPolicy, reading: BmcHealth, prev: BmcLook | None,
                now: datetime | None = None) -> tuple[list[Signal], BmcLook]:
    """The signals of one BMC reading and what the next look compares with."""
    from bringup.service.health import Signal
    bp = policy.bmc or BmcPolicy()
    now = now or datetime.now(UTC)
    before = prev.states if prev else {}
    out: list[Signal] = []
    states: dict[str, str] = {}
    odd: list[str] = []

    def raise_(code: str, key: str, level: str, message: str, **evidence: Any) -> None:
        states[key] = level
        # a critical finding at every look while it lasts; a warning only when it is new
        if level == "critical" or before.get(key) not in ("warning", "critical"):
            out.append(Signal(code, policy.rule(code).severity, f"BMC: {message}", evidence))

    for s in reading.sensors:
        level, why = sensor_level(bp, s)
        if s.health == "unknown":
            odd.append(f"sensor {s.chassis}/{s.id} Health not understood")
        if level in ("critical", "warning"):
            raise_(f"bmc_sensor_{level}", f"sensor:{s.chassis}/{s.id}", level, f"sensor {s.name or s.id} "
                   f"({s.chassis}) {why}", sensor=s.id, chassis=s.chassis, reading=s.reading, uri=s.uri)
    for p in reading.psus:
        key, name = f"psu:{p.chassis}/{p.id}", p.name or p.id
        if p.state == "Absent" and (prev is None or before.get(key) == "empty"):
            # an empty bay at the first look is how the server was built (or a loss before
            # the watch began): said once, then known; a bay that empties later is a loss
            states[key] = "empty"
            if prev is None:
                out.append(Signal("bmc_psu_degraded", policy.rule("bmc_psu_degraded").severity,
                                  f"BMC: power supply bay {name} ({p.chassis}) is empty at the first look",
                                  {"psu": p.id, "chassis": p.chassis, "uri": p.uri}))
            continue
        if p.state in bp.psu_lost or p.health in bp.psu_lost:
            raise_("bmc_psu_lost", key, "critical", f"power supply {name} ({p.chassis}) is lost (State {p.state}, "
                   f"Health {p.health})", psu=p.id, chassis=p.chassis, state=p.state, health=p.health, uri=p.uri)
        elif p.health == "Warning":
            raise_("bmc_psu_degraded", key, "warning", f"power supply {name} ({p.chassis}) reports Health Warning",
                   psu=p.id, chassis=p.chassis, uri=p.uri)
        elif p.health == "unknown":
            odd.append(f"power supply {p.chassis}/{p.id} Health not understood")
    for d in reading.leaks:
        if d.detector_state in bp.leak_states:
            raise_("bmc_leak", f"leak:{d.chassis}/{d.id}", "critical", f"leak detector {d.name or d.id} "
                   f"({d.chassis}) reads {d.detector_state}: a coolant leak", detector=d.id, chassis=d.chassis,
                   state=d.detector_state, uri=d.uri)
        elif d.detector_state in ("unknown", "Unavailable"):
            odd.append(f"leak detector {d.chassis}/{d.id} is {d.detector_state}: a leak would not be seen")
    entries, first = new_sel_entries(reading.sel, prev, now, bp.first_look_hours)
    for e in entries:
        level = sel_level(bp, e)
        if level == "ignore" or (first and level != "critical"):
            continue
        code = f"bmc_sel_{level}"
        out.append(Signal(code, policy.rule(code).severity, f"BMC SEL entry {e.id} ({e.created or 'undated'}, "
                          f"{e.severity}): {e.message or e.message_id}", {"entry": e.id, "created": e.created,
                          "message_id": e.message_id, "severity": e.severity, "sensor_type": e.sensor_type}))
    odd += [f"{u.uri}{' ' + u.path if u.path else ''}: {u.reason}" for u in reading.unavailable]
    if odd:
        out.append(unreadable(policy, f"{len(odd)} thing(s) not read or not understood: " + "; ".join(odd[:5])
                              + ("; ..." if len(odd) > 5 else ""), items=odd[:20]))
    newest, at_newest, undated = _marker(reading.sel, prev)
    look = BmcLook(sel_newest=newest, sel_ids_at_newest=at_newest, sel_undated=undated,
                   sel_source=reading.sel_source or (prev.sel_source if prev else None) or "", states=states)
    return sorted(out, key=lambda s: s.severity != "critical"), look
