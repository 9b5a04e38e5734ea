"""The GPU checks of discovery on recorded and documented layouts: GPUs that could not be
read hold the node (never "0 of 8" and quarantine), and GPUs that share a serial are all
counted, with the shared serial a finding.

Sources: tests/fixtures/redfish/hpe-ilo5-oem-devices/README.md (a recorded iLO 5 tree) and
tests/fixtures/redfish/gpu-serial-identity/README.md (built from the DMTF schema and
NVIDIA's documentation)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from recorded_tree import TreeSession, bmc_on, load_tree

from bringup import errors
from bringup.discovery import crawl
from bringup.discovery.discover_step import DiscoveryHeld, discover
from bringup.discovery.verify import ExpectedNode, verify
from bringup.netbox.adapter import NodeRecord
from bringup.redfish import Credentials, system
from bringup.redfish.quirks import quirks_for
from bringup.redfish.reader import Reader
from bringup.redfish.views import Inventory, SystemInfo
from bringup.sku import load_skus

SKU = load_skus()["hgx-h100-80gb"]
#: a Grace-Blackwell tray: four GPUs, two per board
TRAY = SKU.model_copy(update={"sku": "gb200-tray", "gpu": SKU.gpu.model_copy(update={"count": 4,
                                                                                      "model": "NVIDIA GB200"})})
DL325 = "hpe-ilo5-oem-devices/dl325-gen10plus-tree.json"


def unreadable_inventory() -> Inventory:
    """The recorded iLO 5 read as a BMC whose GPU resources bringup does not know."""
    return bmc_on(load_tree(DL325), quirks={"gpu_oem_sources": []}).inventory()


def tray(rel: str) -> Inventory:
    inv = Inventory(address="x", system=SystemInfo(id="1"))
    rd = Reader(TreeSession(load_tree(rel)), inv)
    system.read_processors(SimpleNamespace(quirks=quirks_for("NVIDIA", "GB200")), rd,
                           "/redfish/v1/Systems/HGX_Baseboard_0/Processors")
    return inv


def node(sku=SKU) -> ExpectedNode:
    return ExpectedNode(name="n1", sku=sku, bmc_address="10.0.0.5")


def test_gpus_that_could_not_be_read_hold_the_node_instead_of_0_of_8():
    findings = verify(node(), unreadable_inventory())
    by = {f.code: f for f in findings}
    assert "gpu_count" not in by
    held = by["gpus_unreadable"]
    assert held.severity == "hold" and held.message.startswith("GPUs could not be read from this BMC")
    assert held.evidence["expected"] == 8
    assert "inventory_incomplete" not in by or all(u["kind"] != "gpus_unreadable"
                                                   for u in by["inventory_incomplete"].evidence["unavailable"])
    d = crawl.NodeDiscovery(name="n1", bmc_address="10.0.0.5", inventory=unreadable_inventory(), findings=findings)
    assert not d.ok and d.held == [held] and "HELD" in d.to_markdown()


def test_a_gpu_less_sku_is_not_held_for_gpus_it_does_not_have():
    cpu_only = SKU.model_copy(update={"gpu": SKU.gpu.model_copy(update={"count": 0})})
    assert not [f for f in verify(node(cpu_only), unreadable_inventory()) if f.code.startswith("gpu")]


def test_the_discover_step_holds_the_node_with_the_reason(monkeypatch):
    inv = unreadable_inventory()

    def read(expected, credentials_for, **kw):
        return crawl.NodeDiscovery(name=expected.name, bmc_address=expected.bmc_address, inventory=inv,
                                   findings=verify(expected, inv))
    monkeypatch.setattr(crawl, "discover_one", read)
    rec = NodeRecord(id=1, name="n1", site="t", rack="r1", status="planned", stage="planned", sku=SKU,
                     pool={"name": "p"}, macs={}, bmc_address="10.0.0.5", address="10.0.1.5", serial="",
                     custom_fields={}, url="", tags=[])
    ctx = SimpleNamespace(settings=SimpleNamespace(bmc_port=443, bmc_ca_bundle=None, bmc_insecure=False),
                          credentials=lambda address: Credentials("admin", "pw"))
    with pytest.raises(DiscoveryHeld) as err:
        discover(ctx, rec, {})
    # a controller fault: the lifecycle holds the node with this reason, never quarantines it
    assert isinstance(err.value, errors.ControllerFault) and not err.value.transient
    assert "GPUs could not be read from this BMC" in str(err.value)


@pytest.mark.parametrize("rel,placeholder", [("gpu-serial-identity/built-board-serial-tray.json", False),
                                             ("gpu-serial-identity/built-placeholder-serials.json", True)])
def test_gpus_sharing_a_serial_are_all_counted_and_the_serial_is_a_finding(rel, placeholder):
    inv = tray(rel)
    findings = {f.code: f for f in verify(node(TRAY), inv)}
    assert "gpu_count" not in findings and len(inv.gpus) == 4
    same = findings["gpu_serial_identical"]
    assert same.severity == "warning"
    assert sorted(g for ids in same.evidence["serials"].values() for g in ids) == ["GPU_0", "GPU_1", "GPU_2", "GPU_3"]
    assert bool(same.evidence["placeholders"]) is placeholder
    doc = crawl.inventory_document(inv)
    assert doc["gpu_serials_identical"] == same.evidence["serials"] and len(doc["gpus"]) == 4
