"""The simulator's Redfish service without HTTP: auth, faults, BIOS pending, power, install."""

from __future__ import annotations

import base64
import json

import pytest

from bringup.sku import load_skus, nic_counts
from lab.bmcsim import hardware
from lab.bmcsim.service import SYS, BmcService
from lab.bmcsim.state import BmcState
from lab.fleet import loads_fleet

SKUS = load_skus()
R = "/redfish/v1"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(faults: str = "[]", installed: list | None = None):
    fleet = loads_fleet(f"""
site: t
pools: {{p: {{}}}}
nodes:
  - {{name: n1, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.0.0.9, address: 127.0.0.8,
     faults: {faults}}}
""", nic_counts(SKUS))
    node = fleet.nodes[0]
    clock = Clock()
    state = BmcState(node=node, sku=SKUS[node.sku], power_delay=2.0, clock=clock,
                     installer=(installed.append if installed is not None else None))
    return BmcService(state, "admin", "pw"), clock


def basic(user="admin", pw="pw") -> dict[str, str]:
    return {"authorization": "Basic " + base64.b64encode(f"{user}:{pw}".encode()).decode()}


def call(svc, method, path, body=None, headers=None, query=""):
    raw = json.dumps(body).encode() if body is not None else b""
    return svc.handle(method, path, query, headers if headers is not None else basic(), raw)


def test_service_root_is_public_but_resources_need_credentials():
    svc, _ = make()
    assert call(svc, "GET", f"{R}/", headers={}).status == 200
    assert call(svc, "GET", SYS, headers={}).status == 401
    assert call(svc, "GET", SYS, headers=basic(pw="wrong")).status == 401
    assert call(svc, "GET", SYS).status == 200


def test_session_login_token_and_logout():
    svc, _ = make()
    r = call(svc, "POST", f"{R}/SessionService/Sessions", {"UserName": "admin", "Password": "pw"}, headers={})
    assert r.status == 201
    token, loc = r.headers["X-Auth-Token"], r.headers["Location"]
    assert call(svc, "GET", SYS, headers={"x-auth-token": token}).status == 200
    assert call(svc, "DELETE", loc, headers={"x-auth-token": token}).status == 204
    assert call(svc, "GET", SYS, headers={"x-auth-token": token}).status == 401


@pytest.mark.parametrize("kind,status", [("bmc_401", 401), ("bmc_500", 500)])
def test_bmc_faults(kind, status):
    svc, _ = make(f"[{{kind: {kind}}}]")
    assert call(svc, "GET", SYS).status == status
    r = call(svc, "POST", f"{R}/SessionService/Sessions", {"UserName": "admin", "Password": "pw"}, headers={})
    assert r.status == status


def test_missing_gpu_and_mac_faults_shape_the_tree():
    svc, _ = make("[{kind: missing_gpu, gpu: 2}, {kind: nic_swapped, iface: cx0, other: cx5}]")
    members = [m["@odata.id"] for m in call(svc, "GET", f"{SYS}/Processors").body["Members"]]
    assert f"{SYS}/Processors/GPU2" not in members and len(members) == 2 + 7
    assert call(svc, "GET", f"{SYS}/Processors/GPU2").status == 404
    node = svc.node
    assert call(svc, "GET", f"{SYS}/EthernetInterfaces/cx0").body["MACAddress"] == node.mac_of("cx5")
    port = call(svc, "GET", f"{R}/Chassis/1/NetworkAdapters/NIC5/Ports/1").body
    assert port["Ethernet"]["AssociatedMACAddresses"] == [node.mac_of("cx0")]


def test_gpu_identity_comes_from_the_sku():
    svc, _ = make()
    gpu = call(svc, "GET", f"{SYS}/Processors/GPU3").body
    assert gpu["ProcessorType"] == "GPU" and gpu["Model"] == SKUS["hgx-h100-80gb"].gpu.model
    assert gpu["MemorySummary"]["TotalMemorySizeMiB"] == SKUS["hgx-h100-80gb"].gpu.memory_mib
    assert gpu["SerialNumber"] == hardware.gpu_serial(svc.node, 3) and gpu["UUID"] == hardware.gpu_uuid(svc.node, 3)


def test_expand_inlines_members():
    svc, _ = make()
    body = call(svc, "GET", f"{SYS}/Processors", query="$expand=.($levels=1)").body
    assert all("ProcessorType" in m for m in body["Members"])


def test_bios_settings_apply_only_on_reset_and_stuck_attribute_never():
    svc, _clock = make("[{kind: bios_not_applied, attribute: PowerProfile}]")
    assert call(svc, "PATCH", f"{SYS}/Bios/Settings",
                {"Attributes": {"IommuSupport": "Enabled", "PowerProfile": "MaxPerformance"}}).status == 204
    assert call(svc, "GET", f"{SYS}/Bios").body["Attributes"]["IommuSupport"] == "Disabled"
    assert call(svc, "GET", f"{SYS}/Bios/Settings").body["Attributes"]["IommuSupport"] == "Enabled"
    assert call(svc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"}).status == 204
    attrs = call(svc, "GET", f"{SYS}/Bios").body["Attributes"]
    assert attrs["IommuSupport"] == "Enabled"
    assert attrs["PowerProfile"] != "MaxPerformance"        # accepted, never applied
    assert call(svc, "PATCH", f"{SYS}/Bios/Settings", {"Attributes": {"Nope": 1}}).status == 400


def test_power_transition_takes_the_configured_delay():
    svc, clock = make()
    call(svc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "ForceOff"})
    assert call(svc, "GET", SYS).body["PowerState"] == "PoweringOff"
    clock.now += 2.1
    assert call(svc, "GET", SYS).body["PowerState"] == "Off"
    assert call(svc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "Bogus"}).status == 400


def _insert(svc, clock, image):
    r = call(svc, "POST", f"{SYS}/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia", {"Image": image})
    assert r.status == 202
    monitor = r.headers["Location"]
    assert call(svc, "GET", monitor).status == 202
    clock.now += 1
    assert call(svc, "GET", monitor).status == 204
    assert call(svc, "GET", f"{SYS}/VirtualMedia/Cd").body["Inserted"] is True


def test_reset_with_media_and_cd_override_installs_once():
    installed: list[str] = []
    svc, clock = make(installed=installed)
    _insert(svc, clock, "http://img/os.iso")
    boot = {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Once", "BootSourceOverrideMode": "UEFI"}
    assert call(svc, "PATCH", SYS, {"Boot": boot}).status == 204
    call(svc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
    assert svc.state.installs == ["http://img/os.iso"]
    assert call(svc, "GET", SYS).body["Boot"]["BootSourceOverrideEnabled"] == "Disabled"
    call(svc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
    assert svc.state.installs == ["http://img/os.iso"]       # the override was one-time


def test_boot_patch_without_mode_reverts_to_legacy_and_nothing_installs():
    svc, clock = make(installed=[])
    _insert(svc, clock, "http://img/os.iso")
    call(svc, "PATCH", SYS, {"Boot": {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Once"}})
    assert call(svc, "GET", SYS).body["Boot"]["BootSourceOverrideMode"] == "Legacy"
    call(svc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
    assert svc.state.installs == [] and svc.state.legacy_boots == ["http://img/os.iso"]
