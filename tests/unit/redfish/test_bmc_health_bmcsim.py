"""The BMC watch end to end in-process: the lab's simulated BMC with each health fault
(psu_lost, leak, sel_entry, sensor_over), read by bringup's reader through the real client,
judged by the watch's rules. No socket (tests/unit/redfish/inproc.py)."""

from __future__ import annotations

import pytest
from inproc import client, sim

from bringup.redfish.health import read_health
from bringup.service.bmc_health import bmc_signals
from bringup.service.health import load_policy
from lab.fleet import Fault

POLICY = load_policy()


def look(monkeypatch, vendor="bmcsim", faults="[]", prev=None):
    service, clock = sim(vendor, faults)
    bmc = client(service, clock, monkeypatch, for_inventory=False)
    reading = read_health(bmc)
    sigs, kept = bmc_signals(POLICY, reading, prev)
    return reading, sigs, kept, service


@pytest.mark.parametrize("vendor", ["bmcsim", "dell-idrac", "hpe-ilo", "supermicro-hgx", "board-serial-tray"])
def test_a_healthy_simulated_bmc_reads_clean(monkeypatch, vendor):
    reading, sigs, kept, _ = look(monkeypatch, vendor)
    assert len(reading.psus) >= 2 and {s.kind for s in reading.sensors} >= {"Temperature", "Rotational", "Power"}
    assert reading.sel and all(e.severity == "OK" for e in reading.sel) and reading.sel_source
    assert reading.unavailable == [] and sigs == [] and kept.sel_newest


def test_sel_is_where_each_vendor_keeps_it(monkeypatch):
    assert look(monkeypatch, "dell-idrac")[0].sel_source.endswith("/Managers/iDRAC.Embedded.1/LogServices/Sel")
    assert look(monkeypatch, "hpe-ilo")[0].sel_source.endswith("/Systems/1/LogServices/IML")


@pytest.mark.parametrize(("faults", "code"), [
    ("[{kind: psu_lost, value: 1}]", "bmc_psu_lost"), ("[{kind: leak}]", "bmc_leak"),
    ("[{kind: sel_entry, value: 'CPU 1 IERR'}]", "bmc_sel_critical"),
    ("[{kind: sensor_over, value: Exhaust_Temp}]", "bmc_sensor_critical"),
    ("[{kind: sensor_over, value: rotational}]", "bmc_sensor_critical")])
def test_each_fault_is_a_critical_signal(monkeypatch, faults, code):
    _, sigs, _, _ = look(monkeypatch, faults=faults)
    assert [s.code for s in sigs] == [code] and sigs[0].severity == "critical"


def test_an_air_cooled_vendor_shows_no_leak_detectors(monkeypatch):
    reading, sigs, _, _ = look(monkeypatch, "dell-idrac", "[{kind: leak}]")
    assert reading.leaks == [] and sigs == []


def test_a_fault_injected_at_runtime_shows_and_its_sel_entry_counts_once(monkeypatch):
    injected: list[Fault] = []
    service, clock = sim()
    service.state.injected = lambda: injected
    bmc = client(service, clock, monkeypatch, for_inventory=False)
    _, kept = bmc_signals(POLICY, read_health(bmc), None)
    injected += [Fault(kind="sel_entry", value="Coolant leak detected"), Fault(kind="psu_lost", value=0)]
    sigs, kept = bmc_signals(POLICY, read_health(bmc), kept)
    assert sorted(s.code for s in sigs) == ["bmc_psu_lost", "bmc_sel_critical"]
    injected.clear()   # `bringup lab clear`: the PSU is back, the log keeps its entry
    sigs, kept = bmc_signals(POLICY, read_health(bmc), kept)
    assert sigs == [] and any(e.message == "Coolant leak detected" for e in read_health(bmc).sel)
