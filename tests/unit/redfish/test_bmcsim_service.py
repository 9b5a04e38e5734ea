"""The simulator's Redfish service without HTTP: auth, faults, BIOS timing, power, install."""

from __future__ import annotations

import base64
import json
import threading
import time

import pytest

from bringup.sku import load_skus, nic_counts
from lab.bmcsim import hardware
from lab.bmcsim.profile import load_profile
from lab.bmcsim.service import BmcService
from lab.bmcsim.state import BmcState
from lab.fleet import loads_fleet

SKUS = load_skus()
R = "/redfish/v1"
SYS = f"{R}/Systems/1"
POWER = 2.0          # power_delay of these tests; POST lasts the profile's post_delay x this


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(faults: str = "[]", installer=None, vendor: str = "bmcsim"):
    fleet = loads_fleet(f"""
site: t
pools: {{p: {{}}}}
nodes:
  - {{name: n1, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.0.0.9, address: 127.0.0.8,
     bmc_vendor: {vendor}, faults: {faults}}}
""", nic_counts(SKUS))
    node = fleet.nodes[0]
    clock = Clock()
    state = BmcState(node=node, sku=SKUS[node.sku], profile=load_profile(vendor), power_delay=POWER, clock=clock,
                     installer=installer)
    return BmcService(state, "admin", "pw"), clock


def basic(user="admin", pw="pw") -> dict[str, str]:
    return {"authorization": "Basic " + base64.b64encode(f"{user}:{pw}".encode()).decode()}


def call(svc, method, path, body=None, headers=None, query=""):
    raw = json.dumps(body).encode() if body is not None else b""
    return svc.handle(method, path, query, headers if headers is not None else basic(), raw)


def post_over(svc, clock):
    """Let the power transition and the whole POST pass."""
    clock.now += POWER * (1 + svc.profile.bios.post_delay) + 0.1
    svc.state.tick()


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
    adapter = call(svc, "GET", f"{R}/Chassis/1/NetworkAdapters/NIC5").body
    assert adapter["Location"]["PartLocation"]["LocationOrdinalValue"] == 6     # slots start at 1


def test_gpu_identity_comes_from_the_sku():
    svc, _ = make()
    gpu = call(svc, "GET", f"{SYS}/Processors/GPU3").body
    assert gpu["ProcessorType"] == "GPU" and gpu["Model"] == SKUS["hgx-h100-80gb"].gpu.model
    assert gpu["MemorySummary"]["TotalMemorySizeMiB"] == SKUS["hgx-h100-80gb"].gpu.memory_mib
    assert gpu["SerialNumber"] == hardware.gpu_serial(svc.node, 3) and gpu["UUID"] == hardware.gpu_uuid(svc.node, 3)


def test_expand_inlines_members_up_to_the_profile_levels():
    svc, _ = make()
    body = call(svc, "GET", f"{SYS}/Processors", query="$expand=.($levels=1)").body
    assert all("ProcessorType" in m for m in body["Members"])
    ami, _ = make(vendor="ami-megarac")      # advertises no $expand: the query is ignored
    body = call(ami, "GET", f"{R}/Systems/Self/Processors", query="$expand=.($levels=1)").body
    assert all(set(m) == {"@odata.id"} for m in body["Members"])


def test_bios_settings_apply_at_the_end_of_post_not_at_the_reset():
    svc, clock = make("[{kind: bios_not_applied, attribute: PowerProfile}]")
    assert call(svc, "PATCH", f"{SYS}/Bios/Settings",
                {"Attributes": {"IommuSupport": "Enabled", "PowerProfile": "MaxPerformance"}}).status == 204
    assert call(svc, "GET", f"{SYS}/Bios/Settings").body["Attributes"]["IommuSupport"] == "Enabled"
    assert call(svc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"}).status == 204
    clock.now += POWER + 0.1                          # powered on, POST running
    assert call(svc, "GET", SYS).body["BootProgress"]["LastState"] in {"MemoryInitializationStarted",
                                                                        "PCIResourceConfigStarted"}
    assert call(svc, "GET", f"{SYS}/Bios").body["Attributes"]["IommuSupport"] == "Disabled"
    post_over(svc, clock)
    assert call(svc, "GET", SYS).body["BootProgress"]["LastState"] == "SystemHardwareInitializationComplete"
    attrs = call(svc, "GET", f"{SYS}/Bios").body["Attributes"]
    assert attrs["IommuSupport"] == "Enabled"
    assert attrs["PowerProfile"] != "MaxPerformance"        # accepted, never applied
    assert call(svc, "GET", f"{SYS}/Bios/Settings").body["Attributes"] == {}
    assert call(svc, "PATCH", f"{SYS}/Bios/Settings", {"Attributes": {"Nope": 1}}).status == 400


def test_bios_second_reset_fault_keeps_settings_pending_over_the_first_post():
    svc, clock = make("[{kind: bios_second_reset}]")
    call(svc, "PATCH", f"{SYS}/Bios/Settings", {"Attributes": {"IommuSupport": "Enabled"}})
    for expected in ("Disabled", "Enabled"):
        call(svc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
        post_over(svc, clock)
        assert call(svc, "GET", f"{SYS}/Bios").body["Attributes"]["IommuSupport"] == expected


def test_dell_applies_bios_by_a_job_that_needs_the_apply_time_and_reboots_the_host():
    svc, clock = make(vendor="dell-idrac")
    sys = f"{R}/Systems/System.Embedded.1"
    assert call(svc, "PATCH", f"{sys}/Bios/Settings", {"Attributes": {"IommuSupport": "Enabled"}}).status == 204
    call(svc, "POST", f"{sys}/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
    post_over(svc, clock)
    assert call(svc, "GET", f"{sys}/Bios").body["Attributes"]["IommuSupport"] == "Disabled"   # no job, no apply
    r = call(svc, "PATCH", f"{sys}/Bios/Settings", {"Attributes": {"IommuSupport": "Enabled"},
                                                     "@Redfish.SettingsApplyTime": {"ApplyTime": "OnReset"}})
    assert r.status == 202 and r.headers["Location"].startswith(f"{R}/Managers/iDRAC.Embedded.1/Jobs/JID_")
    job = r.headers["Location"]
    assert call(svc, "GET", job).body["JobState"] == "Scheduled"
    clock.now += 60
    assert call(svc, "GET", job).body["JobState"] == "Scheduled"      # waits for a reset, however long
    call(svc, "POST", f"{sys}/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
    post_over(svc, clock)
    assert call(svc, "GET", job).body["JobState"] == "Running"
    clock.now += POWER * svc.profile.bios.job_delay + 0.1
    assert call(svc, "GET", job).body["JobState"] == "Completed"
    assert call(svc, "GET", f"{sys}/Bios").body["Attributes"]["IommuSupport"] == "Enabled"
    assert call(svc, "GET", sys).body["PowerState"] == "PoweringOn"     # the LC resets the host again


def test_hpe_bios_patch_says_a_reset_is_required_and_boot_mode_is_read_only():
    svc, _ = make(vendor="hpe-ilo")
    r = call(svc, "PATCH", f"{SYS}/Bios/Settings", {"Attributes": {"IommuSupport": "Enabled"}})
    assert r.status == 200
    assert r.body["error"]["@Message.ExtendedInfo"][0]["MessageId"].endswith("SystemResetRequired")
    settings = call(svc, "GET", f"{SYS}/Bios/Settings").body["Attributes"]
    assert settings["IommuSupport"] == "Enabled" and "SerialConsole" in settings   # the whole future BIOS
    boot = {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Once"}
    assert call(svc, "PATCH", SYS, {"Boot": {**boot, "BootSourceOverrideMode": "UEFI"}}).status == 400
    assert call(svc, "PATCH", SYS, {"Boot": boot}).status == 204
    assert call(svc, "GET", f"{R}/Managers/1/VirtualMedia/2").body["MediaTypes"] == ["CD", "DVD"]
    assert "VirtualMedia" not in call(svc, "GET", SYS).body


def test_ami_takes_boot_overrides_only_in_its_settings_object():
    svc, clock = make(vendor="ami-megarac")
    sys = f"{R}/Systems/Self"
    boot = {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}
    r = call(svc, "PATCH", sys, {"Boot": boot})
    assert r.status == 400
    assert r.body["error"]["@Message.ExtendedInfo"][0]["MessageId"] == "Ami.1.0.OperationSupportedInFutureStateURI"
    assert call(svc, "GET", sys).body["@Redfish.Settings"]["SettingsObject"]["@odata.id"] == f"{sys}/SD"
    assert call(svc, "PATCH", f"{sys}/SD", {"Boot": boot}).status == 204
    assert call(svc, "GET", f"{sys}/SD").body["Boot"]["BootSourceOverrideTarget"] == "Pxe"
    assert call(svc, "GET", sys).body["Boot"]["BootSourceOverrideTarget"] == "None"     # not before the boot
    call(svc, "POST", f"{sys}/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
    post_over(svc, clock)
    assert call(svc, "GET", sys).body["Boot"]["BootSourceOverrideEnabled"] == "Disabled"  # used, then consumed


def test_hgx_gpus_are_processors_of_a_baseboard_system_and_their_own_chassis():
    svc, _ = make(vendor="supermicro-hgx")
    systems = [m["@odata.id"] for m in call(svc, "GET", f"{R}/Systems").body["Members"]]
    assert systems == [SYS, f"{R}/Systems/HGX_Baseboard_0"]
    host = [m["@odata.id"] for m in call(svc, "GET", f"{SYS}/Processors").body["Members"]]
    assert all("CPU" in u for u in host)
    gpus = call(svc, "GET", f"{R}/Systems/HGX_Baseboard_0/Processors").body["Members"]
    assert len(gpus) == 8 and gpus[0]["@odata.id"].endswith("/GPU_SXM_1")
    chassis = [m["@odata.id"] for m in call(svc, "GET", f"{R}/Chassis").body["Members"]]
    assert f"{R}/Chassis/HGX_GPU_SXM_8" in chassis
    root = call(svc, "GET", f"{R}/").body
    assert root["ProtocolFeaturesSupported"]["ExpandQuery"]["MaxLevels"] == 2


def test_inventory_faults_shape_the_tree():
    svc, _ = make("[{kind: member_404, iface: cx3}, {kind: fc_port}, {kind: mac_not_available, iface: cx5},"
                  " {kind: chipset_function}]")
    listed = [m["@odata.id"] for m in call(svc, "GET", f"{SYS}/EthernetInterfaces").body["Members"]]
    assert f"{SYS}/EthernetInterfaces/cx3" in listed
    assert call(svc, "GET", f"{SYS}/EthernetInterfaces/cx3").status == 404
    assert call(svc, "GET", f"{SYS}/EthernetInterfaces/cx5").body["MACAddress"] == "Not Available"
    fc = call(svc, "GET", f"{R}/Chassis/1/NetworkAdapters/FC.Slot.1/Ports/FC.Slot.1-1").body
    assert fc["PortProtocol"] == "FC" and len(fc["FibreChannel"]["AssociatedWorldWideNames"][0].split(":")) == 8
    chipset = call(svc, "GET", f"{R}/Chassis/1/PCIeDevices/0-24").body
    assert chipset["DeviceType"] == "MultiFunction" and "Advanced Micro Devices" in chipset["Manufacturer"]
    fn = call(svc, "GET", f"{R}/Chassis/1/PCIeDevices/0-24/PCIeFunctions/0").body
    assert fn["DeviceClass"] == "Bridge" and fn["VendorId"] == "0x1022"


def _insert(svc, clock, image, media=f"{SYS}/VirtualMedia/Cd"):
    r = call(svc, "POST", f"{media}/Actions/VirtualMedia.InsertMedia", {"Image": image})
    assert r.status == 202
    monitor = r.headers["Location"]
    assert call(svc, "GET", monitor).status == 202
    clock.now += 1
    assert call(svc, "GET", monitor).status == 204
    assert call(svc, "GET", media).body["Inserted"] is True


def _cd_boot(svc, clock):
    boot = {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Once", "BootSourceOverrideMode": "UEFI"}
    assert call(svc, "PATCH", SYS, {"Boot": boot}).status == 204
    call(svc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
    post_over(svc, clock)


def test_reset_with_media_and_cd_override_installs_once():
    svc, clock = make(installer=lambda image, seed=None, current=None: {"installed": True})
    _insert(svc, clock, "http://img/os.iso")
    _cd_boot(svc, clock)
    assert svc.state.installs == ["http://img/os.iso"]
    assert call(svc, "GET", SYS).body["Boot"]["BootSourceOverrideEnabled"] == "Disabled"
    call(svc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
    post_over(svc, clock)
    assert svc.state.installs == ["http://img/os.iso"]       # the override was one-time


def test_a_reset_while_the_installer_runs_installs_again_after_it_never_beside_it():
    # a step retried mid-install resets the node again: two installers at once on one node
    # left it without an sshd (the older one stopped the newer one's)
    calls, first_running, release = [], threading.Event(), threading.Event()

    def installer(image, seed=None, current=None):
        n = len([c for c in calls if c[0] == "start"]) + 1
        calls.append(("start", n))
        if n == 1:
            first_running.set()
            release.wait(10)
        calls.append(("end", n))
        # the first install is told the node was reset under it: it leaves nothing behind
        return {"installed": True} if current() else {"installed": False, "cut": n}
    svc, clock = make(installer=installer)
    _insert(svc, clock, "http://img/os.iso")
    _cd_boot(svc, clock)
    assert first_running.wait(10)
    _cd_boot(svc, clock)                       # the retry's reset, the first install still running
    time.sleep(0.3)
    assert calls == [("start", 1)]             # the second boot's installer waits for the first
    release.set()
    deadline = time.monotonic() + 10
    while len(calls) < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert calls == [("start", 1), ("end", 1), ("start", 2), ("end", 2)]
    assert svc.state.installs == ["http://img/os.iso", "http://img/os.iso"]
    deadline = time.monotonic() + 10
    while svc.state.os_state != "running" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert svc.state.os_state == "running"     # the second boot's install decided it


def test_the_install_of_a_boot_that_a_reset_superseded_never_runs():
    svc, clock = make(installer=lambda image, seed=None, current=None: pytest.fail("a superseded boot must not install"))
    svc.state.boots = 3
    svc.state._install("http://img/os.iso", None, boot=2)   # the thread's work, run here
    assert svc.state.os_state == "none"


def _boot_log(svc):
    entries = call(svc, "GET", f"{SYS}/LogServices/EventLog/Entries").body["Members"]
    return [call(svc, "GET", e["@odata.id"]).body for e in entries]


def test_a_failed_media_boot_shows_on_the_bmc():
    svc, clock = make("[{kind: boot_fail}]", installer=lambda image, seed=None, current=None: pytest.fail("must not install"))
    _insert(svc, clock, "http://img/os.iso")
    _cd_boot(svc, clock)
    assert call(svc, "GET", SYS).body["BootProgress"]["LastState"] == "SystemHardwareInitializationComplete"
    [entry] = _boot_log(svc)
    assert entry["Severity"] == "Critical" and "No bootable device" in entry["Message"]


def test_an_install_that_raises_is_a_boot_failure_on_the_bmc():
    def broken(image, seed=None, current=None):
        raise RuntimeError("unknown ISO")
    svc, clock = make(installer=broken)
    _insert(svc, clock, "http://img/other.iso")
    _cd_boot(svc, clock)
    svc.state._install("http://img/other.iso")    # the thread's work, run here to be deterministic
    assert svc.state.os_state == "failed"
    assert any("unknown ISO" in e["Message"] for e in _boot_log(svc))


def test_boot_patch_without_mode_reverts_to_legacy_and_the_boot_fails_visibly():
    svc, clock = make(installer=lambda image, seed=None, current=None: pytest.fail("must not install"))
    _insert(svc, clock, "http://img/os.iso")
    call(svc, "PATCH", SYS, {"Boot": {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Once"}})
    assert call(svc, "GET", SYS).body["Boot"]["BootSourceOverrideMode"] == "Legacy"
    call(svc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
    post_over(svc, clock)
    assert svc.state.installs == [] and svc.state.legacy_boots == ["http://img/os.iso"]
    assert "UEFI mode only" in _boot_log(svc)[0]["Message"]


def test_a_task_location_answers_200_while_running():
    svc, clock = make(vendor="dell-idrac")
    media = f"{R}/Systems/System.Embedded.1/VirtualMedia/1"
    r = call(svc, "POST", f"{media}/Actions/VirtualMedia.InsertMedia", {"Image": "http://img/os.iso"})
    assert r.status == 202 and "/TaskService/Tasks/" in r.headers["Location"]
    running = call(svc, "GET", r.headers["Location"])
    assert (running.status, running.body["TaskState"]) == (200, "Running")
    clock.now += 1
    assert call(svc, "GET", r.headers["Location"]).body["TaskState"] == "Completed"


def test_power_transition_takes_the_configured_delay():
    svc, clock = make()
    call(svc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "ForceOff"})
    assert call(svc, "GET", SYS).body["PowerState"] == "PoweringOff"
    clock.now += POWER + 0.1
    assert call(svc, "GET", SYS).body["PowerState"] == "Off"
    assert call(svc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "Bogus"}).status == 400
