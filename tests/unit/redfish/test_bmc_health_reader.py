"""The BMC health reader (bringup.redfish.health) on DMTF's public-rackmount1 mockup as
recorded (tests/fixtures/redfish/dmtf-rackmount1-health) and gofish's LeakDetector body:
sensors against thresholds, the legacy Thermal/Power, power supplies, the SEL; an odd
member is a finding about that member, a value not understood is "unknown"."""

from __future__ import annotations

import json
from pathlib import Path

from bringup.errors import RedfishNotFoundError
from bringup.redfish.health import SensorReading, read_health, sel_service
from bringup.redfish.models import ServiceRootDoc

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "redfish"
RACK = FIX / "dmtf-rackmount1-health"
SYS = "/redfish/v1/Systems/437XR1138R2"


def _docs() -> dict[str, dict]:
    docs = {}
    for f in RACK.glob("*.json"):
        doc = json.loads(f.read_text())
        docs[doc["@odata.id"]] = doc
    # scaffolding the recorded files link from (not fixtures: the least a service root,
    # the Chassis and Managers collections and the system must say)
    docs["/redfish/v1/Chassis"] = {"Members": [{"@odata.id": "/redfish/v1/Chassis/1U"}]}
    docs["/redfish/v1/Managers"] = {"Members": [{"@odata.id": "/redfish/v1/Managers/BMC"}]}
    docs["/redfish/v1/Managers/BMC"] = {"Id": "BMC", "LogServices": {"@odata.id": "/redfish/v1/Managers/BMC/LogServices"}}
    docs["/redfish/v1/Managers/BMC/LogServices"] = {"Members": [{"@odata.id": "/redfish/v1/Managers/BMC/LogServices/Log"}]}
    docs[SYS] = {"Id": "437XR1138R2", "PowerState": "On", "LogServices": {"@odata.id": f"{SYS}/LogServices"}}
    return docs


class FakeSession:
    name = "fixture"

    def __init__(self, docs: dict[str, dict]) -> None:
        self.docs = docs
        self.root = ServiceRootDoc.model_validate({"Systems": {"@odata.id": "/redfish/v1/Systems"},
                                                   "Chassis": {"@odata.id": "/redfish/v1/Chassis"},
                                                   "Managers": {"@odata.id": "/redfish/v1/Managers"}})

    def expand_args(self, levels: int = 1):
        return None

    def get(self, path: str, args=None) -> dict:
        if path not in self.docs:
            raise RedfishNotFoundError(f"{path}: 404")
        return self.docs[path]


class FakeBmc:
    def __init__(self, docs: dict[str, dict]) -> None:
        self.session = FakeSession(docs)
        self.system_uri = SYS


def _read(docs=None):
    return read_health(FakeBmc(docs or _docs()))  # type: ignore[arg-type]


def test_sensors_are_read_with_their_thresholds_and_health():
    h = _read()
    by_id = {s.id: s for s in h.sensors}
    cpu = by_id["CPU1Temp"]
    assert cpu.reading == 44 and cpu.units == "Cel" and cpu.health == "Warning"
    # the *User copies are an operator's, not the BMC's: not kept
    assert cpu.thresholds == {"UpperCaution": 42, "UpperCritical": 45, "UpperFatal": 50}
    assert by_id["FanBay1"].thresholds == {"LowerCaution": 5, "LowerCritical": 0} and by_id["FanBay1"].kind == "Percent"
    assert by_id["AmbientTemp"].thresholds == {}
    assert by_id["PS1InputPower"].reading == 374


def test_a_listed_sensor_that_answers_404_is_a_finding_about_it_and_the_rest_stands():
    h = _read()
    missing = {u.uri for u in h.unavailable if u.kind == "not_found"}
    assert "/redfish/v1/Chassis/1U/Sensors/CPUFan1" in missing
    assert len(h.sensors) == 4


def test_power_supplies_come_from_the_power_subsystem_not_again_from_power():
    h = _read()
    assert [(p.id, p.state, p.health) for p in h.psus] == [("Bay1", "Enabled", "Warning"), ("Bay2", "Absent", None)]


def test_an_air_cooled_chassis_has_no_leak_detectors():
    assert _read().leaks == []


def test_the_sel_is_the_system_log_service_with_sel_entries():
    h = _read()
    assert h.sel_source == f"{SYS}/LogServices/Log1"
    assert [(e.id, e.severity, e.message_id, e.sensor_type, e.created) for e in h.sel] == [
        ("1", "Critical", "0x592A28", "Temperature", "2012-03-07T14:44:00Z"),
        ("2", "Critical", "0x592E28", "Temperature", "2012-03-07T14:45:00Z")]


def test_without_a_sensors_collection_the_legacy_thermal_and_power_are_read():
    docs = _docs()
    chassis = dict(docs["/redfish/v1/Chassis/1U"])
    for k in ("Sensors", "PowerSubsystem"):
        chassis.pop(k)
    docs["/redfish/v1/Chassis/1U"] = chassis
    h = _read(docs)
    names = {s.name: s for s in h.sensors}
    cpu = names["CPU1 Temp"]
    assert cpu.reading == 41 and cpu.thresholds == {"UpperCaution": 42, "UpperCritical": 45, "UpperFatal": 48}
    assert names["CPU2 Temp"].state == "Disabled" and names["CPU2 Temp"].reading is None   # reported; the rules skip it
    assert names["BaseBoard System Fan"].reading == 2100 and names["BaseBoard System Fan"].kind == "Fan"
    assert [(p.id, p.health) for p in h.psus] == [("0", "Warning")]


def test_a_malformed_field_names_its_path_and_a_health_not_understood_is_unknown():
    docs = _docs()
    bad = dict(docs["/redfish/v1/Chassis/1U/Sensors/CPU1Temp"], Reading="hot")
    odd = dict(docs["/redfish/v1/Chassis/1U/Sensors/FanBay1"], Status={"State": "Enabled", "Health": "Degraded"})
    docs[bad["@odata.id"]], docs[odd["@odata.id"]] = bad, odd
    h = _read(docs)
    (inv,) = [u for u in h.unavailable if u.kind == "invalid"]
    assert inv.uri.endswith("/CPU1Temp") and inv.path == "$.Reading"
    assert {s.id: s.health for s in h.sensors}["FanBay1"] == "unknown"


def test_leak_detector_as_recorded_and_a_state_outside_the_schema():
    det = json.loads((FIX / "gofish-leak-detector" / "leak-detector-cdu-moisture.json").read_text())
    docs = _docs()
    base = "/redfish/v1/Chassis/1U/ThermalSubsystem"
    docs[base] = dict(docs[base], LeakDetection={"@odata.id": f"{base}/LeakDetection"})
    odd = dict(det, Id="Odd", DetectorState="LeakDetected")
    docs[f"{base}/LeakDetection"] = {"Id": "LeakDetection", "LeakDetectors": {"@odata.id": f"{base}/LeakDetection/LeakDetectors"}}
    # the collection inlines its members, as a BMC answering $expand does
    docs[f"{base}/LeakDetection/LeakDetectors"] = {"Members": [det, odd]}
    h = _read(docs)
    assert [(d.id, d.detector_state, d.health) for d in h.leaks] == [("Moisture", "OK", "OK"), ("Odd", "unknown", "OK")]


def test_sel_service_prefers_sel_by_id_then_by_entry_type_then_known_names():
    def svc(i, t=None):
        return (f"/x/{i}", {"Id": i, "LogEntryType": t, "Entries": {"@odata.id": f"/x/{i}/Entries"}})
    assert sel_service([svc("EventLog"), svc("Lclog", "SEL"), svc("Sel")])[0] == "/x/Sel"
    assert sel_service([svc("EventLog"), svc("Lclog", "SEL")])[0] == "/x/Lclog"
    assert sel_service([svc("FaultList"), svc("IML")])[0] == "/x/IML"
    assert sel_service([svc("FaultList"), ("/x/n", {"Id": "SEL"})]) is None   # no Entries


def test_sensor_reading_round_trips_as_json():
    s = SensorReading(chassis="1U", id="t", reading=1.5, thresholds={"UpperCritical": 2.0})
    assert SensorReading.model_validate_json(s.model_dump_json()) == s
