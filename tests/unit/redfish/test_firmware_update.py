"""The firmware update client (bringup.redfish.update_service) on every simulated vendor layout,
in-process: SimpleUpdate, the Task followed, staged images activated by a reset, versions
read back; a failed image; a BMC that only takes a multipart push."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inproc import client, sim

from bringup.errors import RedfishError
from bringup.redfish.task import state_of
from lab.bmcsim.profile import UpdateSpec

FW = "/redfish/v1/UpdateService/FirmwareInventory"
VENDORS = ["bmcsim", "supermicro-hgx", "dell-idrac", "hpe-ilo", "ami-megarac"]
FIX = Path(__file__).resolve().parents[2] / "fixtures" / "redfish"


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_staged_gpu_image_shows_only_after_the_reset_the_client_issues(vendor, monkeypatch):
    svc, clock = sim(vendor, "[{kind: firmware_drift, attribute: GPU3_VBIOS, value: 96.00.61.00.01}]")
    bmc = client(svc, clock, monkeypatch)
    members = {s.id: s for s in bmc.firmware()}
    assert members["GPU3_VBIOS"].version == "96.00.61.00.01" and members["GPU3_VBIOS"].updateable
    out = bmc.update_firmware("http://fw/gpu-vbios-96.00.99.00.01.fwpkg", [f"{FW}/GPU3_VBIOS"], timeout=120,
                              fetch=lambda url: b"package")      # the push-only BMC (AMI) gets the bytes
    assert out.task_state == "Completed" and out.staged and out.resets == 1, out
    assert out.method == ("multipart" if vendor == "ami-megarac" else "simple")
    assert "Update.1.0.AwaitToActivate" in out.message_ids
    assert out.before == {f"{FW}/GPU3_VBIOS": "96.00.61.00.01"}
    assert out.after == {f"{FW}/GPU3_VBIOS": "96.00.99.00.01"} and svc.state.power_state() == "On"
    sent = [c for c in bmc.session.calls if c[0] == "POST" and ("SimpleUpdate" in c[1] or "upload" in c[1])]
    assert len(sent) == 1


def test_the_task_reads_new_then_running_then_completed(monkeypatch):
    svc, clock = sim("dell-idrac")     # Location names the Task itself: 200 + TaskState
    bmc = client(svc, clock, monkeypatch)
    r = bmc.session.call("POST", "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate",
                         body={"ImageURI": "http://fw/bmc-2.19.0.bin", "Targets": [f"{FW}/BMC"]})
    assert r.status == 202
    seen = []
    for _ in range(6):
        seen.append(bmc.session.call("GET", r.headers["location"]).doc["TaskState"])
        clock.now += 0.4
    assert seen[0] == "New" and "Running" in seen and seen[-1] == "Completed", seen
    assert svc.state.firmware["BMC"] == "2.19.0"        # not staged: active when the task ends


def test_an_unstaged_image_needs_no_reset(monkeypatch):
    svc, clock = sim()
    bmc = client(svc, clock, monkeypatch)
    out = bmc.update_firmware("https://fw/nic-28.43.1000.bin", [f"{FW}/NIC0", f"{FW}/NIC1"], timeout=60)
    assert (out.staged, out.resets) == (False, 0) and set(out.after.values()) == {"28.43.1000"}


def test_an_image_that_does_not_verify_fails_the_update(monkeypatch):
    svc, clock = sim("supermicro-hgx")
    bmc = client(svc, clock, monkeypatch)
    with pytest.raises(RedfishError, match="Exception.*did not verify|Verification"):
        bmc.update_firmware("http://fw/not-a-package.txt", [f"{FW}/BIOS"], timeout=60)
    assert svc.state.firmware["BIOS"] == "1.9.2" and not svc.state.firmware_staged


def push_only(vendor="ami-megarac", **kw):
    svc, clock = sim(vendor, **kw)
    profile = svc.profile.model_copy(update={"update": UpdateSpec(simple_update=False, multipart_push=True)})
    svc.profile = svc.state.profile = svc.tree.profile = profile
    return svc, clock


def test_a_bmc_with_only_a_push_uri_gets_the_image_in_a_multipart_form(monkeypatch):
    svc, clock = push_only()
    bmc = client(svc, clock, monkeypatch)
    fetched = []

    def fetch(url):
        fetched.append(url)
        return b"\x7fFWPKG" + bytes(4096)

    out = bmc.update_firmware("http://fw/repo/bios-1.9.3.bin?sig=1", [f"{FW}/BIOS"], timeout=60, fetch=fetch)
    assert fetched == ["http://fw/repo/bios-1.9.3.bin?sig=1"] and out.method == "multipart"
    assert ("POST", "/redfish/v1/UpdateService/upload") in bmc.session.calls
    assert out.after == {f"{FW}/BIOS": "1.9.3"} and out.resets == 1


def test_the_simulated_push_uri_wants_both_parts(monkeypatch):
    svc, clock = push_only()
    bmc = client(svc, clock, monkeypatch)
    r = bmc.session.call("POST", "/redfish/v1/UpdateService/upload", body={"UpdateFile": ("a-1.0.bin", b"x")},
                         headers={"Content-Type": "multipart/form-data"})
    assert r.status == 400
    r = bmc.session.call("POST", "/redfish/v1/UpdateService/upload", body={"x": 1})
    assert r.status == 415


def test_a_bmc_offering_no_way_is_refused_by_name(monkeypatch):
    svc, clock = sim("ami-megarac")
    profile = svc.profile.model_copy(update={"update": UpdateSpec(simple_update=False)})
    svc.profile = svc.state.profile = svc.tree.profile = profile
    bmc = client(svc, clock, monkeypatch)
    with pytest.raises(RedfishError, match="no SimpleUpdate action, no MultipartHttpPushUri"):
        bmc.update_firmware("http://fw/bios-1.9.3.bin", [f"{FW}/BIOS"])


def test_the_recorded_update_task_reads_as_completed_with_its_message_ids():
    doc = json.loads((FIX / "nvidia-nvfwupd" / "task-update-completed.json").read_text())
    state, msgs = state_of(doc, doc["@odata.id"])
    assert state == "Completed" and "Device 'PCIeRetimer_1' successfully updated with image '2.07.19'." in msgs


def test_the_simulator_keeps_a_staged_image_out_of_the_inventory_until_a_post(monkeypatch):
    svc, clock = sim("hpe-ilo")
    bmc = client(svc, clock, monkeypatch)
    r = bmc.session.call("POST", "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate",
                         body={"ImageURI": "http://fw/bios-2.0.0.bin", "Targets": [f"{FW}/BIOS"]})
    clock.now += 10
    assert bmc.session.call("GET", f"{FW}/BIOS").doc["Version"] == "1.9.2"
    assert svc.state.firmware_staged == {"BIOS": "2.0.0"} and r.status == 202
    bmc.power("ForceRestart")
    clock.now += 10
    assert bmc.session.call("GET", f"{FW}/BIOS").doc["Version"] == "2.0.0"
    assert bmc.system().BiosVersion == "2.0.0"


def test_a_push_answer_naming_its_task_only_in_a_message_is_followed(monkeypatch):
    """The recorded DGX answer: 202, no Location, the Task in a Task.1.0.New message."""
    accepted = json.loads((FIX / "nvidia-nvfwupd" / "multipart-push-accepted.json").read_text())
    done = json.loads((FIX / "nvidia-nvfwupd" / "task-update-completed.json").read_text())
    running = {**done, "TaskState": "Running", "PercentComplete": 40}
    svc, clock = push_only()
    bmc = client(svc, clock, monkeypatch)
    real = bmc.session.call
    polls = []

    def call(method, path, **kw):
        from bringup.redfish.session import Reply
        if path == "/redfish/v1/UpdateService/upload":
            bmc.session.calls.append((method, path))
            return Reply(202, accepted, {})
        if path == "/redfish/v1/TaskService/Tasks/2":
            polls.append(path)
            return Reply(200, running if len(polls) < 3 else done, {})
        return real(method, path, **kw)

    monkeypatch.setattr(bmc.session, "call", call)
    out = bmc.update_firmware("http://fw/retimer-2.07.19.fwpkg", [f"{FW}/BIOS"], timeout=60, fetch=lambda u: b"x")
    assert out.task == "/redfish/v1/TaskService/Tasks/2" and out.task_state == "Completed" and len(polls) >= 3
    assert "Update.1.0.UpdateSuccessful" in out.message_ids and not out.staged
    assert out.resets == 1      # the member still read its old version: reset once, then read again
