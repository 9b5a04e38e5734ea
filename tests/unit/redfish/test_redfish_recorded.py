"""Parsing recorded responses of sushy-tools 2.2.0 (see tests/fixtures/redfish/.../README.md)."""

from __future__ import annotations

import json
from pathlib import Path

from bringup.redfish.models import EthernetInterfaceDoc, ServiceRootDoc, SystemDoc, VirtualMediaDoc, parse
from bringup.redfish.quirks import quirks_for

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "redfish" / "sushy-tools-2.2.0"


def load(name: str) -> dict:
    return json.loads((FIX / name).read_text())


def test_service_root_without_session_service_still_parses():
    root = parse(ServiceRootDoc, load("service-root.json"), "/redfish/v1/")
    assert root.Systems.odata_id == "/redfish/v1/Systems"


def test_system_and_its_quirk():
    raw = load("system.json")
    system = parse(SystemDoc, raw, raw["@odata.id"])
    assert system.PowerState in {"On", "Off"}
    assert system.Boot is not None and system.Boot.BootSourceOverrideEnabled == raw["Boot"]["BootSourceOverrideEnabled"]
    assert system.VirtualMedia is not None
    assert quirks_for(system.Manufacturer, system.Model).boot_once_may_read_continuous


def test_virtual_media_cd():
    cd = parse(VirtualMediaDoc, load("virtual-media-cd.json"), "/cd")
    assert "CD" in cd.MediaTypes and cd.Inserted is False
    assert "#VirtualMedia.InsertMedia" in cd.Actions


def test_ethernet_interface_id_is_the_mac():
    raw = load("ethernet-interface.json")
    nic = parse(EthernetInterfaceDoc, raw, raw["@odata.id"])
    assert nic.MACAddress == raw["MACAddress"].lower() and nic.Id == raw["Id"]
