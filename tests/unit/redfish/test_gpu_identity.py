"""GPUs on recorded and documented layouts: a GPU is its resource, never its serial, and a
BMC that lists GPUs only in its own resources is read there, or says it could not be.

Sources: tests/fixtures/redfish/hpe-ilo5-oem-devices/README.md (recorded iLO 5 trees, one
member built from HPE's schema) and tests/fixtures/redfish/gpu-serial-identity/README.md
(built from the DMTF schema and NVIDIA's documentation; no public recording exists)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from inproc import client, sim
from recorded_tree import FIX, TreeSession, bmc_on, load_tree

from bringup.redfish import oem, system
from bringup.redfish.quirks import quirks_for
from bringup.redfish.reader import Reader
from bringup.redfish.views import Gpu, Inventory, SystemInfo

DL325 = "hpe-ilo5-oem-devices/dl325-gen10plus-tree.json"
BASEBOARD = "/redfish/v1/Systems/HGX_Baseboard_0/Processors"


def processors(rel: str) -> Inventory:
    """The GPUs ``system.read_processors`` reads from a recorded Processors collection."""
    inv = Inventory(address="x", system=SystemInfo(id="1"))
    rd = Reader(TreeSession(load_tree(rel)), inv)
    system.read_processors(SimpleNamespace(quirks=quirks_for("NVIDIA", "GB200")), rd, BASEBOARD)
    return inv


def test_ilo5_gpu_listed_only_in_hpe_devices_is_read_from_there():
    inv = bmc_on(load_tree(DL325)).inventory()
    [gpu] = inv.gpus
    assert (gpu.model, gpu.serial, gpu.manufacturer) == ("NVIDIA Tesla V100 32GB PCIE", "0322818009821", "NVIDIA")
    assert gpu.uri == "/redfish/v1/Chassis/1/Devices/3" and gpu.source == "Oem.Hpe.Links.Devices"
    assert gpu.id == "PCI-E Slot 2" and inv.gpus_unreadable is None
    assert [c.id for c in inv.cpus] == ["1"]          # the CPU is still the system's


def test_a_bmc_whose_gpu_resources_are_unknown_says_so_instead_of_0_gpus():
    inv = bmc_on(load_tree(DL325), quirks={"gpu_oem_sources": []}).inventory()
    assert inv.gpus == []
    gap = inv.gpus_unreadable
    assert gap is not None and gap.uri == "/redfish/v1/Systems/1"
    assert gap.reason.startswith("GPUs could not be read from this BMC")
    assert "gpu_oem_sources" in gap.reason


def test_hpe_pci_devices_are_gpus_by_class_and_maker_not_by_class_alone():
    src = next(s for s in quirks_for("HPE", "ProLiant DL360 Gen10 Plus").gpu_oem_sources if s.where == "system")
    q = quirks_for("HPE", "ProLiant DL360 Gen10 Plus")
    recorded = json.loads((FIX / "hpe-ilo5-oem-devices/dl360-gen10plus-pcidevices.json").read_text())
    verdicts = {uri: oem.classify(src, doc, q)[0] for uri, doc in recorded.items() if "Members" not in doc}
    assert verdicts == {f"/redfish/v1/Systems/1/PCIDevices/{n}": "not_gpu" for n in range(1, 5)}
    video = recorded["/redfish/v1/Systems/1/PCIDevices/1"]
    assert video["ClassCode"] == 3 and video["VendorID"] == 4139      # display class, made by Matrox
    built = json.loads((FIX / "hpe-ilo5-oem-devices/built-pcidevice-2-nvidia-gpu.json").read_text())
    assert oem.classify(src, built, q) == ("gpu", None)
    assert oem.classify(src, {**built, "ClassCode": "three"}, q) == ("invalid", "$.ClassCode")


def test_two_gpus_of_one_board_are_two_gpus():
    inv = processors("gpu-serial-identity/built-board-serial-tray.json")
    assert [g.id for g in inv.gpus] == ["GPU_0", "GPU_1", "GPU_2", "GPU_3"]
    assert inv.identical_serials() == {"1654824000131": ["GPU_0", "GPU_1"], "1654824000178": ["GPU_2", "GPU_3"]}
    assert not any(g.serial_placeholder for g in inv.gpus)


def test_placeholder_serials_do_not_merge_gpus():
    inv = processors("gpu-serial-identity/built-placeholder-serials.json")
    assert len(inv.gpus) == 4 and all(g.serial_placeholder for g in inv.gpus)
    assert inv.identical_serials() == {"0000000000000": ["GPU_0", "GPU_1", "GPU_2", "GPU_3"]}


def test_one_gpu_seen_through_two_resources_is_one_by_its_uuid():
    inv = Inventory(address="x", system=SystemInfo(id="1"))
    inv.gpus.append(Gpu(id="GPU0", uuid="4b1c6a4e-2f71-4f39-9d7e-0c55d1a2b001", uri="/redfish/v1/Systems/1/Processors/GPU0"))
    assert inv.knows_gpu(Gpu(id="GPU_SXM_1", uuid="4b1c6a4e-2f71-4f39-9d7e-0c55d1a2b001",
                             uri="/redfish/v1/Systems/HGX_Baseboard_0/Processors/GPU_SXM_1"))
    zero = "00000000-0000-0000-0000-000000000000"
    inv.gpus.append(Gpu(id="a", uuid=zero, uri="/a"))
    assert not inv.knows_gpu(Gpu(id="b", uuid=zero, uri="/b"))      # a placeholder UUID is no identity


def test_the_pci_device_list_is_read_when_it_is_the_only_vendor_source(monkeypatch):
    pci_only = [s.model_dump() for s in quirks_for("HPE", "x").gpu_oem_sources if s.where == "system"]
    service, clock = sim("hpe-ilo5-oem")
    inv = client(service, clock, monkeypatch, quirks={"gpu_oem_sources": pci_only}).inventory()
    assert len(inv.gpus) == 8 and {g.source for g in inv.gpus} == {"Oem.Hpe.Links.PCIDevices"}
    assert all(g.uri.startswith("/redfish/v1/Systems/1/PCIDevices/") for g in inv.gpus)   # NICs are not GPUs
    assert inv.gpus_unreadable is None
