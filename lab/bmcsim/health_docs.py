"""Documents of a simulated BMC's health (issue #27 item 4): the chassis ``Sensors``,
``PowerSubsystem/PowerSupplies``, ``ThermalSubsystem/LeakDetection/LeakDetectors`` where
the chassis is liquid cooled, and the SEL LogService with its entries.

Shapes follow the DMTF public-rackmount1 mockup (Sensor, PowerSupply, the SEL's LogEntry
with ``EntryType`` SEL, ``SensorType``, ``EntryCode``) and the LeakDetector bodies recorded
under tests/fixtures/redfish/gofish-leak-detector. Where things are (how many PSUs, liquid
cooling, whose SEL) is the vendor profile's ``health`` (:class:`.profile.HealthSpec`).

The faults ``psu_lost``, ``leak``, ``sensor_over`` and ``sel_entry`` change these documents
(:meth:`.state.BmcState.health_faults`: the fleet profile's and those injected at runtime).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from lab.fleet import FaultKind

from .common import collection, ref, status

if TYPE_CHECKING:
    from .tree import Tree

    _Base = Tree
else:
    _Base = object

#: (Id, Name, ReadingType, ReadingUnits, normal reading, thresholds): a server's usual few
SENSORS: list[tuple[str, str, str, str, float, dict[str, float]]] = [
    ("Inlet_Temp", "Inlet Temperature", "Temperature", "Cel", 24.0, {"UpperCaution": 40.0, "UpperCritical": 45.0}),
    ("Exhaust_Temp", "Exhaust Temperature", "Temperature", "Cel", 48.0, {"UpperCaution": 70.0, "UpperCritical": 75.0}),
    ("CPU0_Temp", "CPU 0 Temperature", "Temperature", "Cel", 52.0, {"UpperCaution": 85.0, "UpperCritical": 95.0}),
    ("CPU1_Temp", "CPU 1 Temperature", "Temperature", "Cel", 54.0, {"UpperCaution": 85.0, "UpperCritical": 95.0}),
    *[(f"Fan_{i}", f"System Fan {i}", "Rotational", "RPM", 9800.0,
       {"LowerCritical": 1500.0, "LowerCaution": 2000.0, "UpperCritical": 21000.0}) for i in range(4)],
]
#: a PSU's input power sensor (one per PSU)
PSU_POWER = ("Power", "W", 1350.0, {"UpperCaution": 2900.0, "UpperCritical": 3000.0})
#: the SEL's usual entries: (hours ago, SensorType, EntryCode, Message); both are the
#: LogEntry schema's enums (the Service Validator checks them)
NORMAL_SEL = [
    (72.0, "SystemBoot/Restart", "Assert", "System boot initiated by power up."),
    (71.9, "Power Supply / Converter", "Device Inserted / Device Present", "Power supply presence detected."),
    (48.0, "PowerUnit", "Fully Redundant", "Power supplies are fully redundant."),
]


class HealthDocs(_Base):
    # --- where ------------------------------------------------------------------------------
    @property
    def liquid_cooled(self) -> bool:
        h = self.profile.health
        return h.liquid_cooled or re.search(h.liquid_skus, self.sku.sku) is not None

    def psu_ids(self) -> list[str]:
        h = self.profile.health
        return [h.psu_id.format(n=n) for n in range(h.psus)]

    def sensor_table(self) -> dict[str, tuple[str, str, str, float, dict[str, float]]]:
        table = {sid: (name, kind, units, reading, limits) for sid, name, kind, units, reading, limits in SENSORS}
        for pid in self.psu_ids():
            kind, units, reading, limits = PSU_POWER
            table[f"{pid}_Input_Power"] = (f"{pid} Input Power", kind, units, reading, limits)
        return table

    @property
    def sel_uri(self) -> str:
        h = self.profile.health
        return f"{self.sys if h.sel_owner == 'system' else self.mgr}/LogServices/{h.sel_id}"

    def _build_health(self) -> None:
        cha = self.cha
        table = self.sensor_table()
        self._coll(f"{cha}/Sensors", "Sensor", "Sensors", [f"{cha}/Sensors/{s}" for s in table])
        for sid in table:
            self._add(f"{cha}/Sensors/{sid}", lambda sid=sid: self.sensor(sid))
        self._add(f"{cha}/PowerSubsystem", self.power_subsystem)
        psus = f"{cha}/PowerSubsystem/PowerSupplies"
        self._coll(psus, "PowerSupply", "Power Supplies", [f"{psus}/{p}" for p in self.psu_ids()])
        for n, pid in enumerate(self.psu_ids()):
            self._add(f"{psus}/{pid}", lambda n=n, pid=pid: self.power_supply(n, pid))
        self._add(f"{cha}/ThermalSubsystem", self.thermal_subsystem)
        if self.liquid_cooled:
            leak = f"{cha}/ThermalSubsystem/LeakDetection"
            self._add(leak, self.leak_detection)
            ids = self.profile.health.leak_detectors
            self._coll(f"{leak}/LeakDetectors", "LeakDetector", "Leak Detectors", [f"{leak}/LeakDetectors/{d}" for d in ids])
            for d in ids:
                self._add(f"{leak}/LeakDetectors/{d}", lambda d=d: self.leak_detector(d))
        self._add(self.sel_uri, self.sel_service)
        self._add(f"{self.sel_uri}/Entries", self.sel_entries_doc)

    def sel_entries_doc(self) -> dict[str, Any]:
        """The entries inlined, as LogEntryCollection's Members are (OData.AutoExpand; the
        DMTF mockup's Log1/Entries too)."""
        doc = collection(f"{self.sel_uri}/Entries", "LogEntry", "SEL Entries", [])
        doc["Members"] = [self.sel_entry_doc(e["Id"]) for e in self.state.sel_entries()]
        doc["Members@odata.count"] = len(doc["Members"])
        return doc

    def sel_entry_doc(self, leaf: str) -> dict[str, Any] | None:
        entry = next((e for e in self.state.sel_entries() if e["Id"] == leaf), None)
        if entry is None:
            return None
        return {"@odata.id": f"{self.sel_uri}/Entries/{leaf}", "@odata.type": "#LogEntry.v1_15_0.LogEntry",
                "Name": f"SEL Entry {leaf}", "EntryType": "SEL", **entry}

    # --- faults -------------------------------------------------------------------------------
    def _over(self) -> str | None:
        """The sensor a ``sensor_over`` fault puts past its upper critical threshold."""
        faults = self.state.health_faults(FaultKind.SENSOR_OVER)
        if not faults:
            return None
        want = str(faults[-1].value or "Inlet_Temp").lower()
        table = self.sensor_table()
        return next((s for s in table if s.lower() == want), None) or next(
            (s for s, (_, kind, *_rest) in table.items() if kind.lower() == want), "Inlet_Temp")

    def _lost_psus(self) -> set[int]:
        return {int(f.value or 0) for f in self.state.health_faults(FaultKind.PSU_LOST)}

    def _leaking(self) -> set[str]:
        ids = self.profile.health.leak_detectors
        return {str(f.value) if f.value in ids else ids[0] for f in self.state.health_faults(FaultKind.LEAK)}

    # --- documents ----------------------------------------------------------------------------
    def sensor(self, sid: str) -> dict[str, Any]:
        name, kind, units, reading, limits = self.sensor_table()[sid]
        health = "OK"
        psu = sid.removesuffix("_Input_Power")
        if psu in self.psu_ids() and self.psu_ids().index(psu) in self._lost_psus():
            reading = 0.0   # a PSU without input draws nothing
        if sid == self._over():
            reading, health = limits["UpperCritical"] + (5.0 if kind == "Temperature" else limits["UpperCritical"] / 10), \
                "Critical"
        uri = f"{self.cha}/Sensors/{sid}"
        return {"@odata.id": uri, "@odata.type": "#Sensor.v1_9_0.Sensor", "Id": sid, "Name": name,
                "ReadingType": kind, "ReadingUnits": units, "Reading": reading,
                "PhysicalContext": {"Temperature": "Chassis", "Rotational": "Fan"}.get(kind, "PowerSupply"),
                "Thresholds": {k: {"Reading": v} for k, v in limits.items()}, "Status": status(health=health)}

    def power_subsystem(self) -> dict[str, Any]:
        uri = f"{self.cha}/PowerSubsystem"
        lost = bool(self._lost_psus())
        return {"@odata.id": uri, "@odata.type": "#PowerSubsystem.v1_1_0.PowerSubsystem", "Id": "PowerSubsystem",
                "Name": "Power Subsystem", "Status": status(health="Warning" if lost else "OK"),
                "PowerSupplies": ref(f"{uri}/PowerSupplies")}

    def power_supply(self, n: int, pid: str) -> dict[str, Any]:
        lost = n in self._lost_psus()
        return {"@odata.id": f"{self.cha}/PowerSubsystem/PowerSupplies/{pid}",
                "@odata.type": "#PowerSupply.v1_5_0.PowerSupply", "Id": pid, "Name": f"Power Supply {n}",
                "Manufacturer": "Delta", "Model": "ECD16010092", "SerialNumber": f"{self.node.serial}-P{n}",
                "PowerCapacityWatts": 3000, "LineInputStatus": "LossOfInput" if lost else "Normal",
                "Status": status("UnavailableOffline", "Critical") if lost else status()}

    def thermal_subsystem(self) -> dict[str, Any]:
        uri = f"{self.cha}/ThermalSubsystem"
        doc = {"@odata.id": uri, "@odata.type": "#ThermalSubsystem.v1_3_0.ThermalSubsystem", "Id": "ThermalSubsystem",
               "Name": "Thermal Subsystem", "Status": status()}
        if self.liquid_cooled:
            doc["LeakDetection"] = ref(f"{uri}/LeakDetection")
        return doc

    def leak_detection(self) -> dict[str, Any]:
        uri = f"{self.cha}/ThermalSubsystem/LeakDetection"
        return {"@odata.id": uri, "@odata.type": "#LeakDetection.v1_1_0.LeakDetection", "Id": "LeakDetection",
                "Name": "Leak Detection", "Status": status(health="Critical" if self._leaking() else "OK"),
                "LeakDetectors": ref(f"{uri}/LeakDetectors")}

    def leak_detector(self, did: str) -> dict[str, Any]:
        leaking = did in self._leaking()
        state = "Critical" if leaking else "OK"
        return {"@odata.id": f"{self.cha}/ThermalSubsystem/LeakDetection/LeakDetectors/{did}",
                "@odata.type": "#LeakDetector.v1_3_0.LeakDetector", "Id": did, "Name": did.replace("_", " "),
                "LeakDetectorType": "Moisture", "DetectorState": state, "Status": status(health=state)}

    def sel_service(self) -> dict[str, Any]:
        h = self.profile.health
        return {"@odata.id": self.sel_uri, "@odata.type": "#LogService.v1_5_0.LogService", "Id": h.sel_id,
                "Name": "System Event Log", "ServiceEnabled": True, "LogEntryType": "SEL",
                "OverWritePolicy": "WrapsWhenFull", "Status": status(), "Entries": ref(f"{self.sel_uri}/Entries")}
