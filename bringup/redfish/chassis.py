"""The Chassis, for the inventory: network adapters and their ports (the NICs with their
physical position), and PCIe devices that are GPUs where no system lists a GPU Processor
(where neither does, vendor resources may: :mod:`.oem`).

- NIC identity is the MAC; where the BMC says where a port sits (adapter slot, port
  number) the NIC carries that ``position``, which is what NetBox's ``cx0..cxN`` order
  means whatever the BMC names its ports. A Fibre Channel port (a WWPN where a MAC
  belongs) or an address that is no MAC is an ``unavailable`` entry, not a crash.
- Is a PCIe device a GPU? A BMC's PCIeDevices list every function it sees, chipset parts
  included (Dell lists the Intel C620 SMBus; AMD servers list the SoC's own
  "MultiFunction" devices, made by "Advanced Micro Devices" like AMD's GPUs). The maker
  alone therefore decides nothing: a device is a GPU when one of its PCIe functions says
  so (``DeviceClass`` Display controller / Processing accelerator, or a GPU vendor id where
  no class is given). A device from a GPU maker that gives neither is *unclassified*:
  reported, never counted.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

from bringup.redfish.models import (
    ChassisDoc,
    LocationDoc,
    NetworkAdapterDoc,
    PCIeDeviceDoc,
    PCIeFunctionDoc,
    PortDoc,
    normalise_mac,
)
from bringup.redfish.quirks import Quirks
from bringup.redfish.reader import Reader, absent
from bringup.redfish.views import Gpu, Nic

if TYPE_CHECKING:
    from bringup.redfish.bmc import Bmc

Verdict = Literal["gpu", "not_gpu", "unclassified"]
#: link technologies whose addresses are not MACs (a WWPN is 8 bytes)
NOT_ETHERNET = {"fc", "fibrechannel", "fcoe"}


# --- PCIe devices: GPU or not ---------------------------------------------------------------
def maybe_gpu(device: PCIeDeviceDoc, quirks: Quirks) -> bool:
    """Worth reading the functions of: made by a GPU maker (cheap filter, not a verdict)."""
    return bool(device.Manufacturer and re.search(quirks.gpu_pcie_manufacturer, device.Manufacturer))


def classify(functions: list[PCIeFunctionDoc], quirks: Quirks) -> Verdict:
    classes = {c.lower() for c in quirks.gpu_device_classes}
    vendors = {v.lower() for v in quirks.gpu_vendor_ids}
    known = False
    for f in functions:
        if f.DeviceClass:
            known = True
            if f.DeviceClass.lower() in classes:
                return "gpu"
        elif f.VendorId:
            known = True
            if f.VendorId.lower() in vendors:
                return "gpu"
    return "not_gpu" if known else "unclassified"


def functions_ref(raw: dict[str, Any]) -> str | dict[str, Any] | None:
    """The device's PCIeFunctions collection as found in its document (maybe inlined)."""
    ref = raw.get("PCIeFunctions")
    return ref if isinstance(ref, (str, dict)) else None


# --- inventory -----------------------------------------------------------------------------
def read(bmc: Bmc, rd: Reader, uri: str) -> list[tuple[str, dict[str, Any]]]:
    """Every chassis' adapters; its PCIe GPUs only when the systems listed none. Returns
    the chassis documents (their vendor links may lead to GPUs: :mod:`.oem`)."""
    # chassis -> NetworkAdapters -> adapter -> Ports -> port is five levels: in one request
    # where the BMC expands that deep, else the adapters are read per chassis
    deep = bmc.session.max_expand_levels() >= 5
    devices: list[tuple[str, dict[str, Any]]] = []
    read_ok: list[tuple[str, dict[str, Any]]] = []
    for curi, doc in rd.members(uri, levels=5 if deep else 1):
        chassis = rd.parse(ChassisDoc, doc, curi)
        if chassis is None:
            continue
        read_ok.append((curi, doc))
        if chassis.NetworkAdapters:
            _adapters(bmc, rd, doc["NetworkAdapters"])
        if chassis.PCIeDevices:
            devices.append((curi, doc["PCIeDevices"]))
    if rd.inv.gpus:
        return read_ok   # the systems listed their GPUs: PCIe devices would only count them twice
    for _curi, ref in devices:
        _pcie_gpus(bmc, rd, ref)
    return read_ok


def _slot(bmc: Bmc, adapter: NetworkAdapterDoc) -> int | None:
    ordinal = _ordinal(adapter.Location)
    if ordinal is None and bmc.quirks.nic_slot_from_id:
        m = re.search(bmc.quirks.nic_slot_from_id, adapter.Id)
        ordinal = int(m.group(1)) if m else None
    return ordinal


def _ordinal(loc: LocationDoc | None) -> int | None:
    return loc.PartLocation.LocationOrdinalValue if loc and loc.PartLocation else None


def _port_number(port: PortDoc) -> int | None:
    found = _ordinal(port.Location)
    if found is not None:
        return found
    for value in (port.PortId, port.PhysicalPortNumber):
        if value and str(value).isdigit():
            return int(value)
    return None


def _adapters(bmc: Bmc, rd: Reader, coll: str | dict[str, Any]) -> None:
    inv = rd.inv
    seen = inv.nic_by_mac()
    # adapters, their Ports collections and the ports themselves in one request if possible
    for auri, doc in rd.members(coll, levels=3):
        adapter = rd.parse(NetworkAdapterDoc, doc, auri)
        if adapter is None or not (adapter.Ports or adapter.NetworkPorts):
            continue
        slot = _slot(bmc, adapter)
        for puri, pdoc in rd.members(doc["Ports"] if adapter.Ports else doc["NetworkPorts"]):
            port = rd.parse(PortDoc, pdoc, puri)
            if port is None:
                continue
            tech = (port.PortProtocol or port.ActiveLinkTechnology or port.LinkNetworkTechnology or "").lower()
            if tech in NOT_ETHERNET:
                inv.note(puri, "not_ethernet", f"a {tech} port: its addresses are WWNs, not MACs; not a NIC")
                continue
            field = "Ethernet.AssociatedMACAddresses" if port.Ethernet and port.Ethernet.AssociatedMACAddresses \
                else "AssociatedNetworkAddresses"
            addrs = (port.Ethernet.AssociatedMACAddresses if port.Ethernet else None) \
                or port.AssociatedNetworkAddresses or []
            number = _port_number(port)
            position = (slot, number) if slot is not None and number is not None else None
            speed = int(port.CurrentSpeedGbps * 1000) if port.CurrentSpeedGbps is not None else None
            for j, raw in enumerate(addrs):
                try:
                    mac = normalise_mac(raw)
                except ValueError:
                    inv.note(puri, "invalid", f"{raw!r} is not a MAC address", path=f"$.{field}[{j}]")
                    continue
                nic = seen.get(mac)
                if nic is not None:   # the host already reported it: keep its id, fill the gaps
                    nic.link = nic.link or port.LinkStatus
                    nic.speed_mbps = nic.speed_mbps or speed
                    nic.position = nic.position or position
                    continue
                nic = Nic(id=f"{adapter.Id}/{port.Id}", mac=mac, link=port.LinkStatus, speed_mbps=speed,
                          owner="adapter", uri=puri, position=position)
                inv.nics.append(nic)
                seen[mac] = nic


def _pcie_gpus(bmc: Bmc, rd: Reader, coll: str | dict[str, Any]) -> None:
    inv = rd.inv
    for uri, doc in rd.members(coll, levels=3):
        d = None if absent(doc) else rd.parse(PCIeDeviceDoc, doc, uri)
        if d is None or not maybe_gpu(d, bmc.quirks):
            continue
        ref = functions_ref(doc)
        functions = []
        if ref is not None:
            for furi, fdoc in rd.members(ref):
                f = rd.parse(PCIeFunctionDoc, fdoc, furi)
                if f is not None:
                    functions.append(f)
        verdict = classify(functions, bmc.quirks)
        if verdict == "unclassified":
            inv.note(uri, "unclassified", f"PCIe device {d.Name or d.Id} by {d.Manufacturer} gives no class or "
                                          "vendor data; not counted as a GPU")
            continue
        if verdict == "gpu":
            gpu = Gpu(id=d.Id, model=d.Model or d.Name, manufacturer=d.Manufacturer, serial=d.SerialNumber,
                      serial_placeholder=bmc.quirks.placeholder_serial(d.SerialNumber),
                      uuid=d.UUID, health=d.Status.Health if d.Status else None, source="PCIeDevices", uri=uri)
            if not inv.knows_gpu(gpu):
                inv.gpus.append(gpu)
