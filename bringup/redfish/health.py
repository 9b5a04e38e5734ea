"""What a node's BMC says about its health between burn-ins (issue #27 item 4): sensors
against their thresholds, power supplies, leak detectors, and the System Event Log.

:func:`read_health` reads, for every Chassis the BMC lists:

- the ``Sensors`` collection (``Reading`` against ``Thresholds``, ``Status.Health``), or
  where a chassis has none, the legacy ``Thermal`` (Temperatures, Fans) and ``Power``
  (PowerSupplies) resources;
- ``PowerSubsystem/PowerSupplies`` where present (then the legacy Power's supplies are
  not read again);
- ``ThermalSubsystem/LeakDetection/LeakDetectors`` where the chassis has them (liquid
  cooled);

and the SEL: among the system's and the managers' log services, the one :func:`sel_service`
picks (``SEL`` by Id, else one whose LogEntryType is SEL, else a known event log).

It reports facts, never verdicts (:mod:`bringup.service.bmc_health` judges them). A value
it does not understand (a Health or DetectorState outside the schema's enum) is
``"unknown"``, never OK. A member that answers 404, fails or does not parse is an
:class:`~bringup.redfish.views.Unavailable` entry about that member, with the JSON path of
a malformed field, and the rest of the read stands, as in the inventory
(:class:`~bringup.redfish.reader.Reader`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from bringup.redfish.models import Link, LogEntryDoc, StatusDoc, _Doc
from bringup.redfish.reader import Reader, absent
from bringup.redfish.views import Unavailable, UnavailableKind

if TYPE_CHECKING:
    from bringup.redfish.bmc import Bmc

HEALTH = {"OK", "Warning", "Critical"}
DETECTOR_STATES = {"OK", "Warning", "Critical", "Unavailable", "Absent"}
#: the Sensor schema's threshold names bringup compares a reading with (the *User ones are
#: an operator's copies; the BMC's own are these)
THRESHOLDS = ("UpperCaution", "UpperCritical", "UpperFatal", "LowerCaution", "LowerCritical", "LowerFatal")
#: log services that are the SEL, best first, where no service has Id SEL or LogEntryType SEL
#: (bmcweb's EventLog, HPE's IML, the DMTF mockups' and Supermicro's Log1)
SEL_NAMES = re.compile(r"(?i)^(sel|eventlog|iml|log1)$")
#: a very long SEL is read up to this many entries (a full SEL wraps at a few thousand)
MAX_ENTRIES = 4000


def _health(value: str | None) -> str | None:
    return None if value is None else (value if value in HEALTH else "unknown")


# --- documents as the BMC sends them --------------------------------------------------------
class ThresholdDoc(_Doc):
    Reading: float | None = None


class SensorDoc(_Doc):
    Id: str
    Name: str | None = None
    Reading: float | None = None
    ReadingType: str | None = None
    ReadingUnits: str | None = None
    PhysicalContext: str | None = None
    Thresholds: dict[str, ThresholdDoc | None] | None = None
    Status: StatusDoc | None = None


class LegacyTemperatureDoc(_Doc):
    """A member of the deprecated Thermal resource's Temperatures."""

    MemberId: str | None = None
    Name: str | None = None
    ReadingCelsius: float | None = None
    UpperThresholdNonCritical: float | None = None
    UpperThresholdCritical: float | None = None
    UpperThresholdFatal: float | None = None
    LowerThresholdNonCritical: float | None = None
    LowerThresholdCritical: float | None = None
    LowerThresholdFatal: float | None = None
    Status: StatusDoc | None = None


class LegacyFanDoc(LegacyTemperatureDoc):
    Reading: float | None = None
    ReadingUnits: str | None = None


class PowerSupplyDoc(_Doc):
    """A PowerSupply (PowerSubsystem) or a legacy Power.PowerSupplies member (MemberId)."""

    Id: str | None = None
    MemberId: str | None = None
    Name: str | None = None
    Status: StatusDoc | None = None


class LeakDetectorDoc(_Doc):
    Id: str
    Name: str | None = None
    DetectorState: str | None = None
    Status: StatusDoc | None = None


class HealthChassisDoc(_Doc):
    Id: str
    Sensors: Link | None = None
    Thermal: Link | None = None
    Power: Link | None = None
    PowerSubsystem: Link | None = None
    ThermalSubsystem: Link | None = None


class LogServiceDoc(_Doc):
    Id: str
    Name: str | None = None
    LogEntryType: str | None = None
    Entries: Link | None = None


class SelEntryDoc(LogEntryDoc):
    EntryType: str | None = None
    SensorType: str | None = None
    EntryCode: str | None = None


# --- what bringup works with ----------------------------------------------------------------
class SensorReading(BaseModel):
    chassis: str
    id: str
    name: str | None = None
    #: ReadingType (Temperature, Power, Percent...), else the legacy resource's kind
    kind: str | None = None
    units: str | None = None
    reading: float | None = None
    #: threshold name (THRESHOLDS) -> value, only those the BMC gave a number for
    thresholds: dict[str, float] = Field(default_factory=dict)
    #: OK / Warning / Critical / "unknown" (a value outside the schema) / None (not given)
    health: str | None = None
    state: str | None = None
    uri: str = ""


class PsuReading(BaseModel):
    chassis: str
    id: str
    name: str | None = None
    state: str | None = None
    health: str | None = None
    uri: str = ""


class LeakReading(BaseModel):
    chassis: str
    id: str
    name: str | None = None
    #: OK / Warning / Critical / Unavailable / Absent, "unknown" for anything else or nothing
    detector_state: str = "unknown"
    health: str | None = None
    uri: str = ""


class SelEntry(BaseModel):
    id: str
    created: str | None = None
    #: OK / Warning / Critical, "unknown" for anything else or nothing
    severity: str = "unknown"
    message: str | None = None
    message_id: str | None = None
    sensor_type: str | None = None
    entry_type: str | None = None
    uri: str = ""


class BmcHealth(BaseModel):
    """One reading of a BMC's health."""

    sensors: list[SensorReading] = Field(default_factory=list)
    psus: list[PsuReading] = Field(default_factory=list)
    leaks: list[LeakReading] = Field(default_factory=list)
    sel: list[SelEntry] = Field(default_factory=list)
    #: the log service the SEL was read from; None when the BMC has none bringup knows
    sel_source: str | None = None
    #: members the BMC links to that could not be read or understood
    unavailable: list[Unavailable] = Field(default_factory=list)

    def note(self, uri: str, kind: UnavailableKind, reason: str, path: str | None = None) -> None:
        self.unavailable.append(Unavailable(uri=uri, kind=kind, reason=reason, path=path))


# --- reading ----------------------------------------------------------------------------------
def read_health(bmc: Bmc, *, max_entries: int = MAX_ENTRIES) -> BmcHealth:
    """Everything :mod:`bringup.service.bmc_health` judges, from a logged-in ``bmc``."""
    out = BmcHealth()
    # the Reader only needs a ``note`` to record odd members on: this reading has one
    rd = Reader(bmc.session, out)  # type: ignore[arg-type]
    root = bmc.session.root
    if root is not None and root.Chassis is not None:
        for uri, doc in rd.members(root.Chassis.odata_id, levels=0):
            cha = rd.parse(HealthChassisDoc, doc, uri)
            if cha is not None:
                _chassis(rd, out, cha)
    _sel(bmc, rd, out, max_entries)
    return out


def _chassis(rd: Reader, out: BmcHealth, cha: HealthChassisDoc) -> None:
    if cha.Sensors is not None:
        for uri, doc in rd.members(cha.Sensors.odata_id):
            s = rd.parse(SensorDoc, doc, uri)
            if s is not None and not absent(doc):
                out.sensors.append(_sensor(cha.Id, s, uri))
    elif cha.Thermal is not None:
        _legacy_thermal(rd, out, cha)
    if cha.PowerSubsystem is not None:
        sub = rd.get(cha.PowerSubsystem.odata_id)
        psus = (sub or {}).get("PowerSupplies")
        if isinstance(psus, dict):
            for uri, doc in rd.members(psus):
                p = rd.parse(PowerSupplyDoc, doc, uri)
                if p is not None:
                    out.psus.append(_psu(cha.Id, p, uri))
    elif cha.Power is not None:
        doc = rd.get(cha.Power.odata_id)
        for i, member in enumerate((doc or {}).get("PowerSupplies") or []):
            uri = f"{cha.Power.odata_id}#/PowerSupplies/{i}"
            p = rd.parse(PowerSupplyDoc, member, uri)
            if p is not None:
                out.psus.append(_psu(cha.Id, p, uri))
    if cha.ThermalSubsystem is not None:
        _leaks(rd, out, cha)


def _sensor(chassis: str, s: SensorDoc, uri: str) -> SensorReading:
    limits = {k: t.Reading for k, t in (s.Thresholds or {}).items()
              if k in THRESHOLDS and t is not None and t.Reading is not None}
    return SensorReading(chassis=chassis, id=s.Id, name=s.Name, kind=s.ReadingType or s.PhysicalContext,
                         units=s.ReadingUnits, reading=s.Reading, thresholds=limits,  # type: ignore[arg-type]
                         health=_health(s.Status.Health if s.Status else None),
                         state=s.Status.State if s.Status else None, uri=uri)


def _legacy_thermal(rd: Reader, out: BmcHealth, cha: HealthChassisDoc) -> None:
    assert cha.Thermal is not None  # noqa: S101  (the caller checked)
    base = cha.Thermal.odata_id
    doc = rd.get(base) or {}
    for part, model, kind in (("Temperatures", LegacyTemperatureDoc, "Temperature"), ("Fans", LegacyFanDoc, "Fan")):
        for i, member in enumerate(doc.get(part) or []):
            uri = f"{base}#/{part}/{i}"
            t = rd.parse(model, member, uri)
            if t is None or absent(member):
                continue
            reading = t.ReadingCelsius if isinstance(t, LegacyTemperatureDoc) and kind == "Temperature" \
                else getattr(t, "Reading", None)
            limits = {"UpperCaution": t.UpperThresholdNonCritical, "UpperCritical": t.UpperThresholdCritical,
                      "UpperFatal": t.UpperThresholdFatal, "LowerCaution": t.LowerThresholdNonCritical,
                      "LowerCritical": t.LowerThresholdCritical, "LowerFatal": t.LowerThresholdFatal}
            out.sensors.append(SensorReading(
                chassis=cha.Id, id=t.MemberId or str(i), name=t.Name, kind=kind,
                units="Cel" if kind == "Temperature" else getattr(t, "ReadingUnits", None), reading=reading,
                thresholds={k: v for k, v in limits.items() if v is not None},
                health=_health(t.Status.Health if t.Status else None),
                state=t.Status.State if t.Status else None, uri=uri))


def _psu(chassis: str, p: PowerSupplyDoc, uri: str) -> PsuReading:
    return PsuReading(chassis=chassis, id=p.Id or p.MemberId or uri.rsplit("/", 1)[-1], name=p.Name,
                      state=p.Status.State if p.Status else None,
                      health=_health(p.Status.Health if p.Status else None), uri=uri)


def _leaks(rd: Reader, out: BmcHealth, cha: HealthChassisDoc) -> None:
    assert cha.ThermalSubsystem is not None  # noqa: S101  (the caller checked)
    sub = rd.get(cha.ThermalSubsystem.odata_id) or {}
    detection = sub.get("LeakDetection")
    if not isinstance(detection, dict) or "@odata.id" not in detection:
        return   # an air-cooled chassis: nothing to detect leaks with
    doc = rd.get(detection["@odata.id"]) or {}
    detectors = doc.get("LeakDetectors")
    if not isinstance(detectors, dict):
        return
    for uri, ddoc in rd.members(detectors):
        d = rd.parse(LeakDetectorDoc, ddoc, uri)
        if d is None:
            continue
        state = d.DetectorState if d.DetectorState in DETECTOR_STATES else "unknown"
        out.leaks.append(LeakReading(chassis=cha.Id, id=d.Id, name=d.Name, detector_state=state,
                                     health=_health(d.Status.Health if d.Status else None), uri=uri))


# --- the SEL ----------------------------------------------------------------------------------
def sel_service(services: list[tuple[str, dict[str, Any]]]) -> tuple[str, LogServiceDoc] | None:
    """The SEL among log services (uri, document), or None: Id SEL, else LogEntryType SEL,
    else a known event log's name (SEL_NAMES); each needs Entries."""
    parsed = []
    for uri, doc in services:
        try:
            svc = LogServiceDoc.model_validate(doc)
        except ValueError:
            continue
        if svc.Entries is not None:
            parsed.append((uri, svc))
    for pick in (lambda s: s.Id.upper() == "SEL", lambda s: (s.LogEntryType or "").upper() == "SEL",
                 lambda s: bool(SEL_NAMES.match(s.Id))):
        found = next(((u, s) for u, s in parsed if pick(s)), None)
        if found:
            return found
    return None


def _sel(bmc: Bmc, rd: Reader, out: BmcHealth, max_entries: int) -> None:
    owners: list[str] = []
    sysdoc = rd.get(bmc.system_uri) or {}
    if isinstance(sysdoc.get("LogServices"), dict):
        owners.append(sysdoc["LogServices"]["@odata.id"])
    root = bmc.session.root
    if root is not None and root.Managers is not None:
        for _uri, mdoc in rd.members(root.Managers.odata_id, levels=0):
            if isinstance(mdoc.get("LogServices"), dict):
                owners.append(mdoc["LogServices"]["@odata.id"])
    # the best candidate over all owners: a manager's Sel beats a system's EventLog
    services = [m for coll in owners for m in rd.members(coll, levels=0)]
    found = sel_service(services)
    if found is None:
        return
    uri, svc = found
    out.sel_source = uri
    assert svc.Entries is not None  # noqa: S101  (sel_service picks only services with Entries)
    out.sel = _entries(rd, svc.Entries.odata_id, max_entries)


def _entries(rd: Reader, uri: str, max_entries: int) -> list[SelEntry]:
    """The log's entries (expanded where the BMC allows), the first ``max_entries`` of them;
    an entry listed twice (pages that overlap while the log grows) is read once."""
    out: list[SelEntry] = []
    seen: set[str] = set()
    for euri, doc in rd.members(uri):
        if len(out) >= max_entries:
            break
        if euri in seen:
            continue
        seen.add(euri)
        e = rd.parse(SelEntryDoc, doc, euri)
        if e is None:
            continue
        out.append(SelEntry(id=e.Id, created=e.Created, severity=e.Severity if e.Severity in HEALTH else "unknown",
                            message=e.Message, message_id=e.MessageId, sensor_type=e.SensorType,
                            entry_type=e.EntryType, uri=euri))
    return out
