"""Parsing documents recorded from real BMCs (see each tests/fixtures/redfish/*/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bringup.errors import ParseError
from bringup.redfish.chassis import classify, maybe_gpu
from bringup.redfish.models import (
    EthernetInterfaceDoc,
    PCIeDeviceDoc,
    PCIeFunctionDoc,
    PortDoc,
    ProcessorDoc,
    ServiceRootDoc,
    TaskDoc,
    parse,
)
from bringup.redfish.quirks import quirks_for
from bringup.redfish.session import Credentials, Session
from bringup.redfish.task import settled, state_of

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "redfish"


def load(rel: str) -> dict:
    return json.loads((FIX / rel).read_text())


def test_dell_networkport_of_the_deprecated_schema():
    port = parse(PortDoc, load("dell-idrac9-libredfish/networkport-infiniband-slot7-1.json"), "/p")
    assert port.AssociatedNetworkAddresses == ["B8:3F:D2:A4:1B:D2"] and port.PhysicalPortNumber == "1"
    assert port.ActiveLinkTechnology == "InfiniBand"


def test_dell_fc_port_is_recognisably_not_ethernet():
    port = parse(PortDoc, load("dell-idrac-fc-iserver/networkport-fc-slot1-1.json"), "/p")
    assert port.ActiveLinkTechnology == "FibreChannel"
    assert len(port.AssociatedNetworkAddresses[0].split(":")) == 8          # a WWPN


def test_dell_slot_comes_from_the_adapter_id_by_quirk():
    q = quirks_for("Dell Inc.", "PowerEdge R760")
    import re
    assert int(re.search(q.nic_slot_from_id, "InfiniBand.Slot.7").group(1)) == 7
    assert re.search(q.nic_slot_from_id, "NIC.Integrated.1") is None


def test_chipset_device_is_not_a_gpu_by_its_function_class():
    device = parse(PCIeDeviceDoc, load("dell-idrac9-libredfish/pciedevice-chipset-0-31.json"), "/d")
    fn = parse(PCIeFunctionDoc, load("dell-idrac9-libredfish/pciefunction-chipset-0-31-0.json"), "/f")
    q = quirks_for(None, None)
    assert fn.DeviceClass == "Bridge" and classify([fn], q) == "not_gpu"
    assert not maybe_gpu(device, q)          # Intel-made: not even read further
    amd = device.model_copy(update={"Manufacturer": "Advanced Micro Devices, Inc. [AMD]"})
    assert maybe_gpu(amd, q) and classify([], q) == "unclassified"


def test_hpe_cray_mac_not_available_names_the_path():
    entry = load("hpe-cray-hms/ethernet-nic-info-not-available.json")["EthernetNICInfo"][0]
    doc = {"Id": entry["RedfishId"], "MACAddress": entry["MACAddress"]}
    with pytest.raises(ParseError) as err:
        parse(EthernetInterfaceDoc, doc, entry["@odata.id"])
    assert err.value.path == "$.MACAddress" and err.value.source.endswith("HPCNet0")


def test_lenovo_gpu_processor_gives_its_serial():
    gpu = parse(ProcessorDoc, load("lenovo-xcc/gpu-processor.json"), "/g")
    assert gpu.ProcessorType == "GPU" and gpu.SerialNumber == "WTPV22000136" and gpu.Model is None


def test_supermicro_expand_is_capped_at_two_levels():
    root = parse(ServiceRootDoc, load("supermicro-libredfish/service-root.json"), "/redfish/v1")
    session = Session("sm", Credentials("a", "b"), insecure=True)
    session.root = root
    assert session.max_expand_levels() == 2 and session.expand_args(5) == {"$expand": ".($levels=2)"}


def test_dell_job_and_task_monitor_states():
    job = load("dell-openmanage-docs/job-scheduled.json")
    state, msgs = state_of(job, "/redfish/v1/Managers/iDRAC.Embedded.1/Jobs/JID_XXXXXXXXX")
    assert state == "Scheduled" and msgs == ["Task successfully scheduled."]
    assert not settled(state) and settled(state, reset_pending=True)
    task = parse(TaskDoc, load("dmtf-task-monitor/task-monitor-202.json"), "/t")
    assert task.TaskState == "Running" and not settled(task.TaskState)
    assert settled("Completed") and settled("Exception") and settled(None)
