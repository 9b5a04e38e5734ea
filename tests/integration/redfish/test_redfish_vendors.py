"""The client against every vendor profile of the simulator: inventory on real layouts,
members that fail alone, swaps by position, staged BIOS, boot overrides, failed boots."""

from __future__ import annotations

import time

import pytest

from bringup.discovery.crawl import discover
from bringup.errors import RedfishRequestError, SSHError
from bringup.provision.image import load_manifest
from bringup.provision.redfish_steps import install_os
from bringup.redfish import connect
from lab.bmcsim import hardware
from lab.bmcsim.expect import expected_nodes

# the session's BMC simulator (redfish/conftest.py) answers on fixed addresses: one worker runs its tests
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("bmcsim")]
VENDORS = {"ok-1": "bmcsim", "hgx": "supermicro-hgx", "dell": "dell-idrac", "hpe": "hpe-ilo", "ami": "ami-megarac"}


@pytest.fixture(scope="module")
def found(bmcsim):
    names = set(VENDORS) | {"member-404", "fc-port", "mac-na", "chipset", "dell-swapped"}
    nodes = [n for n in expected_nodes(bmcsim.fleet, bmcsim.skus) if n.name in names]
    return {r.name: r for r in discover(nodes, lambda _a: bmcsim.creds, port=8443, ca_bundle=bmcsim.ca,
                                        timeout=5.0, retries=1, concurrency=8)}


def codes(r, severity=None):
    return sorted(f.code for f in r.findings if severity is None or f.severity == severity)


def bmc(bmcsim, name, **kw):
    return connect(bmcsim.node(name).bmc_address, bmcsim.creds, port=8443, ca_bundle=bmcsim.ca, **kw)


@pytest.mark.parametrize("name", sorted(VENDORS))
def test_every_vendor_layout_gives_the_whole_inventory(found, bmcsim, name):
    r = found[name]
    assert r.ok, r.findings
    node = bmcsim.node(name)
    assert len(r.inventory.gpus) == 8
    assert sorted(g.serial for g in r.inventory.gpus) == sorted(hardware.gpu_serial(node, i) for i in range(8))
    assert len(r.inventory.nics) == 10 and not r.inventory.unavailable
    assert set(codes(r)) <= {"firmware", "gpu_memory_not_exposed"}
    assert all(n.position is not None for n in r.inventory.nics if n.mac != node.mac_of("bmc")
               and n.mac != node.mac_of("mgmt0"))


def test_hgx_gpus_come_from_the_baseboard_system(found):
    inv = found["hgx"].inventory
    assert inv.systems == ["/redfish/v1/Systems/1", "/redfish/v1/Systems/HGX_Baseboard_0"]
    assert all(g.uri.startswith("/redfish/v1/Systems/HGX_Baseboard_0/Processors/GPU_SXM_") for g in inv.gpus)


def test_pcie_only_gpus_are_judged_by_their_functions_not_their_maker(found):
    inv = found["chipset"].inventory
    assert len(inv.gpus) == 8 and {g.source for g in inv.gpus} == {"PCIeDevices"}
    assert not any(g.id == "0-24" for g in inv.gpus)        # the AMD chipset device is no GPU
    assert found["chipset"].ok


def test_a_member_answering_404_is_a_finding_about_that_member(found):
    r = found["member-404"]
    gone = {u.uri: u.kind for u in r.inventory.unavailable}
    assert gone == {"/redfish/v1/Systems/1/EthernetInterfaces/cx3": "not_found",
                    "/redfish/v1/Chassis/1/NetworkAdapters/NIC3/Ports/1": "not_found",
                    "/redfish/v1/Systems/1/Processors/GPU4": "not_found"}
    assert len(r.inventory.gpus) == 7 and len(r.inventory.cpus) == 2 and len(r.inventory.memory) == 16
    assert {"gpu_count", "nic_missing"} <= set(codes(r, "critical"))
    assert "inventory_incomplete" in codes(r, "warning")


def test_an_fc_port_with_a_wwpn_is_noted_not_fatal(found, bmcsim):
    r = found["fc-port"]
    [fc] = r.inventory.unavailable
    assert fc.kind == "not_ethernet" and fc.uri.endswith("FC.Slot.1/NetworkPorts/FC.Slot.1-1")
    assert r.ok and hardware.fc_wwpn(bmcsim.node("fc-port")).lower() not in {n.mac for n in r.inventory.nics}


def test_a_mac_not_available_names_the_member_and_the_path(found):
    r = found["mac-na"]
    [bad] = r.inventory.unavailable
    assert (bad.kind, bad.path) == ("invalid", "$.MACAddress") and bad.uri.endswith("/EthernetInterfaces/7")
    assert "'Not Available' is not a MAC" in bad.reason
    assert r.ok and "inventory_incomplete" in codes(r, "warning")   # the adapter port still gave its MAC


def test_a_swap_is_found_by_slot_on_a_bmc_with_fqdd_port_names(found):
    r = found["dell-swapped"]
    swaps = {f.evidence["interface"]: f.evidence["mac_belongs_to"] for f in r.findings if f.code == "nic_swapped"}
    assert swaps == {"cx4": "cx6", "cx6": "cx4"}
    assert not r.ok and all(n.id.startswith("NIC.") for n in r.inventory.nics if n.owner != "manager")


@pytest.mark.parametrize("name", ["dell", "hpe", "ami", "hgx"])
def test_bios_is_read_back_only_once_the_bmc_applied_it(bmcsim, name):
    wanted = dict(bmcsim.skus[bmcsim.node(name).sku].bios, IommuSupport="Enabled")
    with bmc(bmcsim, name) as b:
        result = b.apply_bios(wanted, timeout=60)
        assert result.ok and result.resets == 1 and not result.pending, result
        assert b.bios_attributes()["IommuSupport"] == "Enabled"
        assert b.system().PowerState == "On"
    if name == "dell":
        assert result.job and "/Jobs/JID_" in result.job and result.job_state == "Completed"


def test_dell_without_the_apply_time_never_applies_and_says_pending(bmcsim):
    wanted = {"SriovGlobalEnable": "Disabled"}
    with bmc(bmcsim, "dell", quirks={"bios_apply_time": False, "bios_post_seconds": 3}) as b:
        result = b.apply_bios(wanted, timeout=60)
    assert not result.ok and result.resets == 2 and result.job is None
    assert result.pending == {"SriovGlobalEnable": "Disabled"}


def test_settings_that_need_a_second_reset_get_it(bmcsim):
    wanted = dict(bmcsim.skus["hgx-h200-141gb"].bios, IommuSupport="Enabled")
    with bmc(bmcsim, "second-reset") as b:
        result = b.apply_bios(wanted, timeout=60)
    assert result.ok and result.resets == 2


def test_a_dell_job_that_applies_all_but_one_reports_that_one(bmcsim):
    sku = bmcsim.skus["hgx-h200-141gb"]
    with bmc(bmcsim, "dell-stuck") as b:
        result = b.apply_bios(sku.bios, timeout=60)
    assert result.job_state == "Completed" and list(result.not_applied) == ["NumaNodesPerSocket"]


def test_ami_boot_override_goes_to_the_settings_object(bmcsim):
    with bmc(bmcsim, "ami") as b:
        b.set_boot_once("Pxe")
        assert b.get("/redfish/v1/Systems/Self/SD")["Boot"]["BootSourceOverrideTarget"] == "Pxe"
    with bmc(bmcsim, "ami", quirks={"boot_override_target": "system"}) as b, \
            pytest.raises(RedfishRequestError, match=r"moved to FutureState URI\(/redfish/v1/Systems/Self/SD\)"):
        b.set_boot_once("Pxe")


def test_hpe_boot_override_without_the_read_only_mode(bmcsim):
    with bmc(bmcsim, "hpe") as b:
        assert "hpe-boot-override-mode-read-only" in b.quirks.applied
        b.set_boot_once("Cd")
        assert b.system().Boot.BootSourceOverrideTarget == "Cd"


def test_a_task_answered_200_while_running_is_followed(bmcsim, image_server):
    with bmc(bmcsim, "dell") as b:
        b.insert_media(image_server)           # Location names the Task: 200 + Running, then Completed
        assert b._cd_media()[1].Inserted
        b.eject_media()


def test_a_boot_the_bmc_reports_failed_ends_the_install_wait_early(bmcsim, image_server):
    def ssh_never(seconds):
        raise SSHError("node boot-fail never came back")      # at once: the loop must still pace itself

    with bmc(bmcsim, "boot-fail") as b:
        started = time.monotonic()
        result = install_os(b, load_manifest("ubuntu-2404-cuda128"), image_server, ssh_wait=ssh_never,
                            wait_timeout=60, poll=0.5)
        took = time.monotonic() - started
        requests = b.request_count
    assert not result.ok and "No bootable device" in result.boot_failure and result.ejected
    assert took < 20                 # far from the 60 s SSH timeout
    assert requests < 120            # paced: not a tight loop on the BMC while POST runs
