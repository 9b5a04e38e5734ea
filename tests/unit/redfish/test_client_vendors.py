"""The client on every simulated vendor layout, in-process: inventory, BIOS staging and its
timing, boot overrides, tasks, failed boots. (Over HTTPS: tests/integration/redfish.)"""

from __future__ import annotations

import pytest
from inproc import SKUS, client, sim

from bringup.errors import SSHError
from bringup.provision.image import load_manifest
from bringup.provision.redfish_steps import install_os
from lab.bmcsim import hardware

VENDORS = ["bmcsim", "supermicro-hgx", "dell-idrac", "hpe-ilo", "ami-megarac"]


@pytest.mark.parametrize("vendor", VENDORS)
def test_inventory_is_complete_on_every_layout(vendor, monkeypatch):
    svc, clock = sim(vendor)
    bmc = client(svc, clock, monkeypatch)
    inv = bmc.inventory()
    assert sorted(g.serial for g in inv.gpus) == sorted(hardware.gpu_serial(svc.node, i) for i in range(8))
    assert len(inv.cpus) == 2 and len(inv.memory) == 16 and not inv.unavailable
    macs = {n.mac: n for n in inv.nics}
    assert set(macs) == {svc.node.mac_of(i) for i in svc.node.interface_names(8)}
    positions = [macs[svc.node.mac_of(f"cx{i}")].position for i in range(8)]
    assert positions == sorted(positions) and None not in positions     # cx0..cx7 in slot order


def test_the_default_profile_stays_at_a_handful_of_requests(monkeypatch):
    svc, clock = sim()
    bmc = client(svc, clock, monkeypatch)
    bmc.inventory()
    bmc.close()
    # login, root, Systems (expanded), Managers, Chassis (5 levels), UpdateService, logout
    assert bmc.request_count == 7, bmc.session.calls


def test_chipset_function_is_not_a_gpu_on_a_pcie_only_layout(monkeypatch):
    svc, clock = sim("hpe-ilo", "[{kind: chipset_function}]")
    inv = client(svc, clock, monkeypatch).inventory()
    assert len(inv.gpus) == 8 and all(g.source == "PCIeDevices" for g in inv.gpus)
    assert "0-24" not in {g.id for g in inv.gpus}


def test_without_class_data_a_gpu_makers_device_is_reported_not_counted(monkeypatch):
    svc, clock = sim("hpe-ilo")
    bmc = client(svc, clock, monkeypatch, quirks={"gpu_device_classes": [], "gpu_vendor_ids": []})
    inv = bmc.inventory()
    assert inv.gpus == []     # NVIDIA-made, but the functions say "DisplayController" is not a GPU class here
    svc2, clock2 = sim("hpe-ilo")
    del svc2.tree.routes[svc2.tree.pcie_gpu_uri(0) + "/PCIeFunctions"]
    inv = client(svc2, clock2, monkeypatch).inventory()
    assert len(inv.gpus) == 7 and [u.kind for u in inv.unavailable].count("unclassified") == 1


def test_one_bad_member_of_each_kind_leaves_the_rest(monkeypatch):
    svc, clock = sim("dell-idrac", "[{kind: member_404, gpu: 4}, {kind: fc_port}, "
                                   "{kind: mac_not_available, iface: cx2}]")
    inv = client(svc, clock, monkeypatch).inventory()
    kinds = sorted((u.kind, u.uri.rsplit("/", 1)[1]) for u in inv.unavailable)
    assert kinds == [("invalid", "NIC.Slot.33-1-1"), ("not_ethernet", "FC.Slot.1-1"), ("not_found", "Video.Slot.15-1")]
    assert len(inv.gpus) == 7 and svc.node.mac_of("cx2") in {n.mac for n in inv.nics}


@pytest.mark.parametrize("vendor", VENDORS)
def test_bios_is_read_back_only_after_the_bmc_applied_it(vendor, monkeypatch):
    svc, clock = sim(vendor, sku="hgx-h200-141gb")
    bmc = client(svc, clock, monkeypatch)
    wanted = dict(SKUS["hgx-h200-141gb"].bios, IommuSupport="Enabled")
    result = bmc.apply_bios(wanted, timeout=120)
    assert result.ok and result.resets == 1 and not result.pending, result
    assert svc.state.bios["IommuSupport"] == "Enabled" and svc.state.power_state() == "On"
    assert bmc.system().BootProgress.LastState == "SystemHardwareInitializationComplete"   # past POST again


def test_a_second_reset_is_issued_when_settings_survive_a_post(monkeypatch):
    svc, clock = sim(faults="[{kind: bios_second_reset}]", sku="hgx-h200-141gb")
    result = client(svc, clock, monkeypatch).apply_bios({"IommuSupport": "Enabled"}, timeout=120)
    assert result.ok and result.resets == 2


def test_dell_job_is_followed_and_its_reboot_waited_for(monkeypatch):
    svc, clock = sim("dell-idrac", "[{kind: bios_not_applied, attribute: PowerProfile}]", sku="hgx-h200-141gb")
    bmc = client(svc, clock, monkeypatch)
    result = bmc.apply_bios({"IommuSupport": "Enabled", "PowerProfile": "MaxPerformance"}, timeout=120)
    assert result.job_state == "Completed" and result.resets == 1 and "/Jobs/JID_" in (result.job or "")
    assert list(result.not_applied) == ["PowerProfile"] and not result.pending


def test_bios_that_never_applies_is_a_result_after_bounded_resets(monkeypatch):
    svc, clock = sim("dell-idrac", sku="hgx-h200-141gb")
    bmc = client(svc, clock, monkeypatch, quirks={"bios_apply_time": False})
    start = clock.now
    result = bmc.apply_bios({"IommuSupport": "Enabled"}, timeout=120)
    assert not result.ok and result.resets == 2 and result.pending == {"IommuSupport": "Enabled"}
    assert clock.now - start < 120


def test_boot_override_goes_where_the_bmc_takes_it(monkeypatch):
    svc, clock = sim("ami-megarac")
    bmc = client(svc, clock, monkeypatch)
    bmc.set_boot_once("Cd")
    assert svc.state.boot_pending == {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Once"}
    assert ("PATCH", "/redfish/v1/Systems/Self") in bmc.session.calls   # tried, refused, then SD
    svc, clock = sim("ami-megarac")
    bmc = client(svc, clock, monkeypatch, quirks={"boot_override_target": "settings"})
    bmc.set_boot_once("Cd")
    assert ("PATCH", "/redfish/v1/Systems/Self") not in bmc.session.calls


def _install(vendor, faults, monkeypatch, installer=None, seed_url=None):
    svc, clock = sim(vendor, faults, installer=installer)
    bmc = client(svc, clock, monkeypatch, for_inventory=False)
    waits = []

    def ssh_wait(seconds):
        waits.append(seconds)
        clock.sleep(seconds)
        if svc.state.os_state == "running":
            return "SHA256:node"
        raise SSHError("no SSH answer yet")

    result = install_os(bmc, load_manifest("ubuntu-2404-cuda128"), "http://img/u.iso", seed_url=seed_url,
                        ssh_wait=ssh_wait, wait_timeout=600, poll=10)
    return result, waits, svc


def test_a_failed_media_boot_is_seen_on_the_bmc_at_the_first_check(monkeypatch):
    result, waits, svc = _install("hpe-ilo", "[{kind: boot_fail}]", monkeypatch)
    assert not result.ok and "No bootable device" in result.boot_failure and result.ejected
    assert len(waits) == 1 and svc.state.media_image is None


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_good_install_waits_for_ssh_and_ejects(vendor, monkeypatch):
    result, waits, svc = _install(vendor, "[]", monkeypatch, installer=lambda image, seed=None, current=None: {"installed": True})
    assert result.ok and result.waited == "SHA256:node" and svc.state.installs == ["http://img/u.iso"]
    assert len(waits) > 1 and result.ejected and svc.state.media_image is None   # waited for the OS, then ejected


def test_a_hung_node_is_still_a_timeout_because_the_bmc_cannot_tell(monkeypatch):
    with pytest.raises(SSHError):
        _install("bmcsim", "[]", monkeypatch, installer=lambda image, seed=None, current=None: {"installed": False})


@pytest.mark.parametrize("vendor", VENDORS)
def test_the_seed_goes_in_the_second_medium_and_both_are_ejected(vendor, monkeypatch):
    booted = []
    result, _, svc = _install(vendor, "[]", monkeypatch, seed_url="http://seeds/n1.iso",
                              installer=lambda image, seed=None, current=None: booted.append((image, seed)) or {"installed": True})
    assert result.ok and result.seed_url == "http://seeds/n1.iso"
    # the node booted the installer CD with the seed beside it, as the BMC held them at the reset
    assert booted == [("http://img/u.iso", "http://seeds/n1.iso")]
    assert svc.state.media_image is None and svc.state.seed_image is None
