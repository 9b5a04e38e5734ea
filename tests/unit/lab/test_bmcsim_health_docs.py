"""The simulated BMC's health documents (lab/bmcsim/health_docs.py): sensors, PSUs, leak
detectors where the vendor profile or SKU says liquid cooled, the SEL, and what each
health fault changes; runtime faults read from the node's injected.json."""

from __future__ import annotations

import json

from bringup.sku import load_skus
from lab.bmcsim.profile import load_profile, profile_names
from lab.bmcsim.server import load_injected
from lab.bmcsim.service import BmcService
from lab.bmcsim.state import BmcState
from lab.fleet import Fault, FaultKind, NodeSpec

SKUS = load_skus()


def tree(vendor="bmcsim", faults=(), sku="hgx-h100-80gb"):
    node = NodeSpec(name="n1", rack="r1", sku=sku, pool="p", bmc_address="127.0.0.9", address="127.0.0.8",
                    bmc_vendor=vendor, faults=list(faults))
    return BmcService(BmcState(node=node, sku=SKUS[sku], profile=load_profile(vendor)), "u", "p").tree


def test_every_vendor_serves_sensors_psus_and_a_sel():
    for vendor in profile_names():
        t = tree(vendor)
        cha = t.resource(t.cha)
        assert cha["Sensors"]["@odata.id"].endswith("/Sensors") and "PowerSubsystem" in cha
        psus = t.resource(f"{t.cha}/PowerSubsystem/PowerSupplies")["Members"]
        assert len(psus) >= 2, vendor
        sensor = t.resource(f"{t.cha}/Sensors/Inlet_Temp")
        assert sensor["Thresholds"]["UpperCritical"]["Reading"] > sensor["Reading"]
        entries = t.resource(f"{t.sel_uri}/Entries")["Members"]
        assert entries and t.resource(entries[0]["@odata.id"])["EntryType"] == "SEL"


def test_liquid_cooling_is_the_profiles_or_the_skus():
    assert tree("bmcsim").liquid_cooled and tree("board-serial-tray").liquid_cooled
    assert not tree("dell-idrac").liquid_cooled
    assert not tree("hpe-ilo").liquid_cooled and tree("hpe-ilo", sku="hgx-h200-141gb").liquid_cooled
    assert "LeakDetection" not in tree("dell-idrac").resource(f"{tree('dell-idrac').cha}/ThermalSubsystem")


def test_each_fault_changes_its_document():
    t = tree(faults=[Fault(kind=FaultKind.PSU_LOST, value=1), Fault(kind=FaultKind.LEAK),
                     Fault(kind=FaultKind.SENSOR_OVER, value="CPU0_Temp"), Fault(kind=FaultKind.SEL_ENTRY, value="IERR")])
    psu = t.resource(f"{t.cha}/PowerSubsystem/PowerSupplies/PSU1")
    assert psu["Status"] == {"State": "UnavailableOffline", "Health": "Critical"} and psu["LineInputStatus"] == "LossOfInput"
    assert t.resource(f"{t.cha}/Sensors/PSU1_Input_Power")["Reading"] == 0
    det = t.profile.health.leak_detectors[0]
    assert t.resource(f"{t.cha}/ThermalSubsystem/LeakDetection/LeakDetectors/{det}")["DetectorState"] == "Critical"
    cpu = t.resource(f"{t.cha}/Sensors/CPU0_Temp")
    assert cpu["Reading"] > cpu["Thresholds"]["UpperCritical"]["Reading"] and cpu["Status"]["Health"] == "Critical"
    last = t.resource(t.resource(f"{t.sel_uri}/Entries")["Members"][-1]["@odata.id"])
    assert last["Severity"] == "Critical" and last["Message"] == "IERR"


def test_injected_faults_are_read_again_when_the_file_changes(tmp_path):
    node = NodeSpec(name="n1", rack="r1", sku="hgx-h100-80gb", pool="p", bmc_address="127.0.0.9", address="127.0.0.8")
    read = load_injected(node, tmp_path)
    assert read() == []
    path = tmp_path / "nodes" / "n1" / "injected.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps([{"kind": "leak"}]))
    assert [f.kind for f in read()] == ["leak"]
    path.write_text("[{")   # caught half-written: the last good reading stands
    assert [f.kind for f in read()] == ["leak"]
