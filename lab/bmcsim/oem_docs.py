"""HPE's own device resources, for a profile whose GPUs are only there (``gpus.placement:
hpe_oem``), as iLO 5 on Gen10 / Gen10 Plus lists them: ``Chassis/1/Devices`` members
(HpeServerDevice: DeviceType "GPU", the card's SerialNumber, Location a string) linked from
the chassis' ``Oem.Hpe.Links.Devices``, and ``Systems/1/PCIDevices`` members
(HpeServerPciDevice: integer ClassCode, VendorID, DeviceID) linked from the system's
``Oem.Hpe.Links.PCIDevices``; no GPU Processor and no PCIe device in the standard places.
Shapes from tests/fixtures/redfish/hpe-ilo5-oem-devices (recorded iLO 5 trees)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import hardware
from .common import ref, status

if TYPE_CHECKING:
    from .tree import Tree

    _Base = Tree
else:
    _Base = object

#: PCI ids as iLO gives them: decimal integers (NVIDIA 0x10de, Mellanox 0x15b3)
NVIDIA, MELLANOX = 0x10DE, 0x15B3
#: H100 SXM5's PCI device id (0x2330); class 3 subclass 2 is a 3D controller
GPU_DEVICE_ID, NIC_DEVICE_ID = 0x2330, 0x1021


class OemDocs(_Base):
    @property
    def hpe_oem(self) -> bool:
        return self.profile.gpus.placement == "hpe_oem"

    def oem_devices_uri(self) -> str:
        return f"{self.cha}/Devices"

    def oem_pci_uri(self) -> str:
        return f"{self.sys}/PCIDevices"

    def system_oem(self) -> dict[str, Any]:
        return {"Hpe": {"Links": {"PCIDevices": ref(self.oem_pci_uri())}}}

    def chassis_oem(self) -> dict[str, Any]:
        return {"Hpe": {"Links": {"Devices": ref(self.oem_devices_uri())}}}

    def build_oem(self) -> None:
        """Routes of the HPE device lists: GPUs first (slots from gpus.first_slot), then NICs."""
        gpus = [i for i in self.gpus if f"gpu:{i}" not in self.missing]
        devices = [f"{self.oem_devices_uri()}/{n + 1}" for n in range(len(self.gpus) + len(self.nics))]
        pcis = [f"{self.oem_pci_uri()}/{n + 1}" for n in range(len(self.gpus) + len(self.nics))]
        self._add(self.oem_devices_uri(), lambda: self._oem_collection(
            self.oem_devices_uri(), "HpeServerDeviceCollection", "Devices", "Devices View", devices))
        self._add(self.oem_pci_uri(), lambda: self._oem_collection(
            self.oem_pci_uri(), "HpeServerPciDeviceCollection", "PciDevices", " PciDevices view", pcis))
        for n, i in enumerate(self.gpus):
            if i in gpus:
                self._add(devices[n], lambda n=n, i=i: self.hpe_device(devices[n], pcis[n], i, None))
                self._add(pcis[n], lambda n=n, i=i: self.hpe_pci_device(pcis[n], i, None))
        for k, i in enumerate(self.nics, start=len(self.gpus)):
            self._add(devices[k], lambda k=k, i=i: self.hpe_device(devices[k], pcis[k], None, i))
            self._add(pcis[k], lambda k=k, i=i: self.hpe_pci_device(pcis[k], None, i))

    @staticmethod
    def _oem_collection(uri: str, kind: str, name: str, description: str, members: list[str]) -> dict[str, Any]:
        return {"@odata.id": uri, "@odata.type": f"#{kind}.{kind}", "Description": description, "Name": name,
                "Members": [ref(m) for m in members], "Members@odata.count": len(members)}

    def hpe_device(self, uri: str, pci: str, gpu: int | None, nic: int | None) -> dict[str, Any]:
        """An HpeServerDevice: a GPU (DeviceType "GPU") or a NIC ("LOM/NIC")."""
        if gpu is not None:
            slot = self.profile.gpus.first_slot + gpu
            kind, maker, name = "GPU", "NVIDIA", self.sku.gpu.model
            serial = self.bmc_gpu_serial(gpu)
            version = self.firmware.get(f"GPU{gpu}_VBIOS")
        else:
            assert nic is not None
            slot = self.nic_slot(nic)
            kind, maker, name = "LOM/NIC", hardware.NIC_VENDOR, self.sku.nics.compute_model
            serial, version = f"MT{self.node.serial[2:]}{nic}", self.firmware.get(f"NIC{nic}")
        return {"@odata.id": uri, "@odata.type": "#HpeServerDevice.v2_0_0.HpeServerDevice",
                "Id": uri.rsplit("/", 1)[1], "DeviceInstances": [ref(pci)], "DeviceType": kind,
                "FirmwareVersion": {"Current": {"VersionString": version}}, "Location": f"PCI-E Slot {slot}",
                "MCTPProtocolDisabled": False, "Manufacturer": maker, "Name": name, "SerialNumber": serial,
                "Status": status()}

    def hpe_pci_device(self, uri: str, gpu: int | None, nic: int | None) -> dict[str, Any]:
        """An HpeServerPciDevice: PCI class 3 (display) by NVIDIA, or class 2 (network) by Mellanox."""
        if gpu is not None:
            slot, cls, sub, vendor, device = self.profile.gpus.first_slot + gpu, 3, 2, NVIDIA, GPU_DEVICE_ID
            name, kind = self.sku.gpu.model, "Other PCI Device"
        else:
            assert nic is not None
            slot, cls, sub, vendor, device = self.nic_slot(nic), 2, 0, MELLANOX, NIC_DEVICE_ID
            name, kind = self.sku.nics.compute_model, "NIC"
        n = uri.rsplit("/", 1)[1]
        return {"@odata.id": uri, "@odata.type": "#HpeServerPciDevice.v2_0_0.HpeServerPciDevice", "Id": n,
                "BusNumber": 16 + int(n), "ClassCode": cls, "SubclassCode": sub, "DeviceID": device,
                "DeviceInstance": slot, "DeviceLocation": f"PCI-E Slot {slot}", "DeviceNumber": 0,
                "DeviceSubInstance": 1, "DeviceType": kind, "FunctionNumber": 0, "LocationString": f"Slot {slot}",
                "Name": name, "SegmentNumber": 0, "StructuredName": f"PCI.Slot.{slot}.1",
                "SubsystemVendorID": vendor, "VendorID": vendor}
