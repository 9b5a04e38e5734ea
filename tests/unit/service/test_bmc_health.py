"""The BMC watch's rules (bringup.service.bmc_health): sensors past thresholds, lost power
supplies, leaks, new SEL entries against the last look's marker, overrides by fixed
operators, what is not understood as a warning; and the snapshot's BMC part, which an
old snapshot lacks."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from bringup.redfish.health import BmcHealth, LeakReading, PsuReading, SelEntry, SensorReading
from bringup.redfish.views import Unavailable
from bringup.service.bmc_health import BmcLook, Override, bmc_signals, new_sel_entries
from bringup.service.health import Snapshot, load_policy

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
POLICY = load_policy()


def temp(reading: float, health: str | None = "OK", **kw) -> SensorReading:
    return SensorReading(chassis="1", id=kw.pop("id", "Inlet_Temp"), kind="Temperature", units="Cel", reading=reading,
                         thresholds={"UpperCaution": 40.0, "UpperCritical": 45.0}, health=health, state="Enabled", **kw)


def codes(reading: BmcHealth, prev: BmcLook | None = None, policy=POLICY) -> list[str]:
    return [s.code for s in bmc_signals(policy, reading, prev, NOW)[0]]


def test_a_healthy_bmc_raises_nothing():
    assert codes(BmcHealth(sensors=[temp(24)], psus=[PsuReading(chassis="1", id="PSU0", state="Enabled", health="OK")],
                           leaks=[LeakReading(chassis="1", id="d", detector_state="OK", health="OK")])) == []


@pytest.mark.parametrize(("reading", "health", "want"), [
    (46, "OK", ["bmc_sensor_critical"]), (41, "OK", ["bmc_sensor_warning"]), (45, "OK", ["bmc_sensor_warning"]),
    (30, "Critical", ["bmc_sensor_critical"]), (30, "Warning", ["bmc_sensor_warning"]), (46, "Warning", ["bmc_sensor_critical"])])
def test_a_sensor_past_a_threshold_or_judged_by_its_bmc(reading, health, want):
    assert codes(BmcHealth(sensors=[temp(reading, health)])) == want


def test_lower_thresholds_and_disabled_sensors():
    fan = SensorReading(chassis="1", id="Fan_0", kind="Rotational", reading=900.0, health="OK",
                        thresholds={"LowerCritical": 1500.0, "LowerCaution": 2000.0})
    off = temp(99).model_copy(update={"state": "Disabled"})
    assert codes(BmcHealth(sensors=[fan, off])) == ["bmc_sensor_critical"]


def test_the_mockups_cpu_above_its_caution_threshold_is_a_warning():
    cpu = SensorReading(chassis="1U", id="CPU1Temp", reading=44, units="Cel", health="Warning",
                        thresholds={"UpperCaution": 42, "UpperCritical": 45, "UpperFatal": 50})
    sigs, _ = bmc_signals(POLICY, BmcHealth(sensors=[cpu]), None, NOW)
    assert [s.code for s in sigs] == ["bmc_sensor_warning"] and "past UpperCaution 42" in sigs[0].message


def test_a_lost_psu_and_a_leak_are_critical_at_every_look_while_they_last():
    reading = BmcHealth(psus=[PsuReading(chassis="1", id="PSU1", state="UnavailableOffline", health="Critical")],
                        leaks=[LeakReading(chassis="1", id="ColdPlate", detector_state="Critical", health="Critical")])
    sigs, look = bmc_signals(POLICY, reading, None, NOW)
    assert sorted(s.code for s in sigs) == ["bmc_leak", "bmc_psu_lost"] and all(s.severity == "critical" for s in sigs)
    assert sorted(s.code for s in bmc_signals(POLICY, reading, look, NOW)[0]) == ["bmc_leak", "bmc_psu_lost"]


def test_a_warning_is_raised_once_while_it_lasts():
    reading = BmcHealth(sensors=[temp(41)])
    sigs, look = bmc_signals(POLICY, reading, None, NOW)
    assert [s.code for s in sigs] == ["bmc_sensor_warning"] and look.states == {"sensor:1/Inlet_Temp": "warning"}
    assert codes(reading, look) == []
    assert codes(BmcHealth(sensors=[temp(46)]), look) == ["bmc_sensor_critical"]


def test_an_empty_bay_at_the_first_look_is_said_once_and_a_bay_that_empties_later_is_lost():
    empty = BmcHealth(psus=[PsuReading(chassis="1U", id="Bay2", state="Absent")])
    sigs, look = bmc_signals(POLICY, empty, None, NOW)
    assert [(s.code, s.severity) for s in sigs] == [("bmc_psu_degraded", "warning")]
    assert codes(empty, look) == []
    assert codes(empty, BmcLook(sel_source="x")) == ["bmc_psu_lost"]


def test_what_is_not_understood_is_one_warning_never_ok():
    reading = BmcHealth(sensors=[temp(24, "Degraded").model_copy(update={"health": "unknown"})],
                        leaks=[LeakReading(chassis="1", id="d", detector_state="unknown")],
                        unavailable=[Unavailable(uri="/redfish/v1/Chassis/1/Sensors/x", kind="invalid", reason="bad",
                                                 path="$.Reading")])
    sigs, _ = bmc_signals(POLICY, reading, None, NOW)
    assert [(s.code, s.severity) for s in sigs] == [("bmc_unreadable", "warning")]
    assert "3 thing(s)" in sigs[0].message and "$.Reading" in sigs[0].message


def entry(i: str, created: str | None, severity="Critical", **kw) -> SelEntry:
    return SelEntry(id=i, created=created, severity=severity, message=f"m{i}", **kw)


def test_the_first_look_counts_only_critical_entries_of_the_last_24_hours():
    sel = [entry("1", "2026-12-01T00:00:00Z"), entry("2", "2026-12-06T10:00:00+00:00"),
           entry("3", "2026-12-06T11:00:00Z", "Warning"), entry("4", None)]
    sigs, look = bmc_signals(POLICY, BmcHealth(sel=sel, sel_source="/s"), None, NOW)
    assert [(s.code, s.evidence["entry"]) for s in sigs] == [("bmc_sel_critical", "2")]
    assert look.sel_newest == "2026-12-06T11:00:00Z" and look.sel_ids_at_newest == ("3",) and look.sel_undated == ("4",)


def test_later_looks_count_only_entries_newer_than_the_marker():
    old = [entry("1", "2026-12-06T11:00:00Z"), entry("2", None)]
    _, look = bmc_signals(POLICY, BmcHealth(sel=old, sel_source="/s"), None, NOW)
    new = [*old, entry("3", "2026-12-06T11:00:00Z", "Warning"), entry("4", "2026-12-06T11:30:00Z", "OK"),
           entry("5", None, "Critical")]
    sigs, look2 = bmc_signals(POLICY, BmcHealth(sel=new, sel_source="/s"), look, NOW)
    assert sorted((s.code, s.evidence["entry"]) for s in sigs) == [("bmc_sel_critical", "5"), ("bmc_sel_warning", "3")]
    assert codes(BmcHealth(sel=new, sel_source="/s"), look2) == []
    # a cleared log keeps the marker: nothing of the old times counts again
    assert bmc_signals(POLICY, BmcHealth(sel=[], sel_source="/s"), look2, NOW)[1].sel_newest == look2.sel_newest


def test_overrides_regrade_by_fixed_operators_and_a_bad_one_fails_at_load():
    sel = [entry("7", "2026-12-06T11:59:00Z", "Critical", sensor_type="Physical Chassis Security")]
    prev = BmcLook(sel_source="/s", sel_newest="2026-12-06T00:00:00Z")
    assert codes(BmcHealth(sel=sel), prev) == ["bmc_sel_warning"]
    policy = POLICY.model_copy(update={"bmc": POLICY.bmc.model_copy(update={"overrides": [
        Override(applies_to="sel", when=[{"field": "message_id", "op": "matches", "value": "^0x59"}], then="ignore"),
        Override(applies_to="sensor", when=[{"field": "kind", "op": "equals", "value": "Temperature"},
                                            {"field": "chassis", "op": "in", "value": ["1"]}], then="warning")]})})
    assert codes(BmcHealth(sel=[entry("8", "2026-12-06T11:59:00Z", message_id="0x592A28")]), prev, policy) == []
    assert codes(BmcHealth(sensors=[temp(60)]), None, policy) == ["bmc_sensor_warning"]
    assert codes(BmcHealth(sensors=[temp(20)]), None, policy) == []   # never a finding of a healthy reading
    with pytest.raises(ValidationError):
        Override(applies_to="sel", when=[{"field": "reading", "op": "above", "value": 1}], then="critical")
    with pytest.raises(ValidationError):
        Override(applies_to="sel", when=[{"field": "message", "op": "matches", "value": "("}], then="critical")


def test_new_sel_entries_with_no_marker_is_the_first_look():
    got, first = new_sel_entries([entry("1", "2026-12-06T11:00:00Z")], None, NOW, 24)
    assert first and [e.id for e in got] == ["1"]


def test_an_old_snapshot_without_the_bmc_part_still_loads_and_the_part_round_trips():
    old = {"gpus": {}, "xids": [], "ib_ports": {}, "unreadable": {}}
    assert Snapshot.from_json(old).bmc is None and "bmc" not in Snapshot.from_json(old).to_json()
    look = BmcLook(sel_newest="2026-12-06T11:00:00Z", sel_ids_at_newest=("3",), sel_source="/s",
                   states={"psu:1/PSU1": "critical"})
    snap = Snapshot(bmc=look)
    assert Snapshot.from_json(snap.to_json()) == snap


def test_every_bmc_code_has_a_severity_and_a_hardware_or_software_class():
    from bringup.service.blastradius import load_policy as guard_policy
    from bringup.service.bmc_health import BMC_SIGNAL_CODES
    classes = guard_policy().finding_classes
    for code in BMC_SIGNAL_CODES:
        assert POLICY.rule(code).severity in ("critical", "warning")
        assert classes.classify([code]) == ("software" if code == "bmc_unreadable" else "hardware")
    assert POLICY.rule("bmc_unreadable").severity == "warning"
