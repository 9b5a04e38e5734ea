"""Reading one BMC's hardware inventory: every system, every chassis, every member.

- All ComputerSystems are read: an HGX server's GPUs are Processors of a second system
  (``HGX_Baseboard_0``) next to the host's, and some BMCs list several partitions.
- All Chassis are read for network adapters and, when no system lists a GPU Processor,
  for PCIe devices that are GPUs (see :mod:`bringup.redfish.pcie`).
- A member that answers 404, fails or does not validate (a Fibre Channel port with a
  WWPN where a MAC belongs, a MAC "Not Available") is an ``unavailable`` entry about that
  member; the rest of the inventory stands.
- NIC identity is the MAC; where the BMC says where a port sits (adapter slot, port
  number) the NIC carries that ``position``, which is what NetBox's ``cx0..cxN`` order
  means whatever the BMC names its ports.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from bringup.redfish.models import (
    BiosDoc,
    ChassisDoc,
    ComputerSystemDoc,
    EthernetInterfaceDoc,
    LocationDoc,
    ManagerDoc,
    MemoryDoc,
    NetworkAdapterDoc,
    PCIeDeviceDoc,
    PCIeFunctionDoc,
    PortDoc,
    ProcessorDoc,
    SoftwareDoc,
    SystemDoc,
    normalise_mac,
)
from bringup.redfish.pcie import classify, functions_ref, maybe_gpu
from bringup.redfish.reader import Reader, split_ref
from bringup.redfish.views import Cpu, Dimm, Gpu, Inventory, Nic, Software, SystemInfo

if TYPE_CHECKING:
    from bringup.redfish.client import Bmc

#: link technologies whose addresses are not MACs (a WWPN is 8 bytes)
NOT_ETHERNET = {"fc", "fibrechannel", "fcoe"}


def _absent(doc: dict[str, Any]) -> bool:
    return (doc.get("Status") or {}).get("State") == "Absent"


def read(bmc: Bmc, host_raw: dict[str, Any], host: SystemDoc,
         systems: list[tuple[str, dict[str, Any]]]) -> Inventory:
    inv = Inventory(address=bmc.address, system=SystemInfo(
        id=host.Id, manufacturer=host.Manufacturer, model=host.Model, serial=host.SerialNumber, sku=host.SKU,
        uuid=host.UUID, bios_version=host.BiosVersion, power_state=host.PowerState))
    rd = Reader(bmc.session, inv)
    for uri, raw in systems:
        doc = host if uri == bmc.system_uri else rd.parse(ComputerSystemDoc, raw, uri)
        if doc is None:
            continue
        inv.systems.append(uri)
        raw = host_raw if uri == bmc.system_uri else raw
        if doc.Processors:
            _processors(bmc, rd, raw["Processors"])
        if doc.Memory:
            for muri, mdoc in rd.members(raw["Memory"]):
                m = None if _absent(mdoc) else rd.parse(MemoryDoc, mdoc, muri)
                if m is not None:
                    inv.memory.append(Dimm(id=m.Id, capacity_mib=m.CapacityMiB, ecc=m.ErrorCorrection))
        if doc.EthernetInterfaces:
            _interfaces(rd, raw["EthernetInterfaces"], "system")
    root = bmc.session.root
    if root and root.Managers:
        for uri, doc in rd.members(root.Managers.odata_id, levels=3):
            mgr = rd.parse(ManagerDoc, doc, uri)
            if mgr is not None and mgr.EthernetInterfaces:
                _interfaces(rd, doc["EthernetInterfaces"], "manager")
    if root and root.Chassis:
        _chassis(bmc, rd, root.Chassis.odata_id)
    if root and root.UpdateService:
        upd = rd.get(root.UpdateService.odata_id, levels=2) or {}
        fw = upd.get("FirmwareInventory")
        if isinstance(fw, dict) and "@odata.id" in fw:
            for uri, doc in rd.members(fw):
                s = rd.parse(SoftwareDoc, doc, uri)
                if s is not None:
                    inv.firmware.append((s.Name or s.Id, s.Version or ""))
                    inv.software.append(Software(id=s.Id, name=s.Name, version=s.Version, uri=uri,
                                                 updateable=s.Updateable))
    if host.Bios:
        uri, inlined = split_ref(host_raw["Bios"])
        bios_doc = inlined if inlined is not None else rd.get(uri)
        bios = rd.parse(BiosDoc, bios_doc, uri) if bios_doc is not None else None
        if bios is not None:
            inv.bios = bios.Attributes
    return inv


def _processors(bmc: Bmc, rd: Reader, coll: str | dict[str, Any]) -> None:
    inv = rd.inv
    gpu_types = {t.upper() for t in bmc.quirks.gpu_processor_types}
    for uri, doc in rd.members(coll):
        p = None if _absent(doc) else rd.parse(ProcessorDoc, doc, uri)
        if p is None:
            continue
        kind = (p.ProcessorType or "CPU").upper()
        if kind in gpu_types:
            mem = p.MemorySummary.TotalMemorySizeMiB if p.MemorySummary else None
            if mem is None and p.ProcessorMemory:
                mem = sum(int(m.get("CapacityMiB") or 0) for m in p.ProcessorMemory) or None
            gpu = Gpu(id=p.Id, model=p.Model, manufacturer=p.Manufacturer, serial=p.SerialNumber, uuid=p.UUID,
                      memory_mib=mem, ecc_enabled=p.MemorySummary.ECCModeEnabled if p.MemorySummary else None,
                      health=p.Status.Health if p.Status else None, uri=uri)
            if not _known_gpu(inv, gpu):
                inv.gpus.append(gpu)
        elif kind == "CPU":
            inv.cpus.append(Cpu(id=p.Id, model=p.Model, cores=p.TotalCores))


def _known_gpu(inv: Inventory, gpu: Gpu) -> bool:
    """The same board seen twice (through the host and through its baseboard)."""
    return any((gpu.serial and g.serial == gpu.serial) or (gpu.uuid and g.uuid == gpu.uuid) for g in inv.gpus)


def _interfaces(rd: Reader, coll: str | dict[str, Any], owner: str) -> None:
    inv = rd.inv
    seen = inv.nic_by_mac()
    for uri, doc in rd.members(coll):
        e = None if _absent(doc) else rd.parse(EthernetInterfaceDoc, doc, uri)
        if e is None or e.MACAddress in seen:
            continue
        nic = Nic(id=e.Id, mac=e.MACAddress, link=e.LinkStatus, speed_mbps=e.SpeedMbps, owner=owner, uri=uri)
        inv.nics.append(nic)
        seen[nic.mac] = nic


def _chassis(bmc: Bmc, rd: Reader, uri: str) -> None:
    # chassis -> NetworkAdapters -> adapter -> Ports -> port is five levels: in one request
    # where the BMC expands that deep, else the adapters are read per chassis
    deep = bmc.session.max_expand_levels() >= 5
    devices: list[tuple[str, dict[str, Any]]] = []
    for curi, doc in rd.members(uri, levels=5 if deep else 1):
        chassis = rd.parse(ChassisDoc, doc, curi)
        if chassis is None:
            continue
        if chassis.NetworkAdapters:
            _adapters(bmc, rd, doc["NetworkAdapters"])
        if chassis.PCIeDevices:
            devices.append((curi, doc["PCIeDevices"]))
    if rd.inv.gpus:
        return   # the systems listed their GPUs: PCIe devices would only count them twice
    for _curi, ref in devices:
        _pcie_gpus(bmc, rd, ref)


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
        d = None if _absent(doc) else rd.parse(PCIeDeviceDoc, doc, uri)
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
                      uuid=d.UUID, health=d.Status.Health if d.Status else None, source="PCIeDevices", uri=uri)
            if not _known_gpu(inv, gpu):
                inv.gpus.append(gpu)
