"""Reading one BMC's hardware inventory: every system, every manager, every chassis, the
FirmwareInventory and the host's BIOS, each read by its resource's module.

- All ComputerSystems are read (:mod:`.system`): an HGX server's GPUs are Processors of a
  second system (``HGX_Baseboard_0``) next to the host's, and some BMCs list several partitions.
- All Chassis are read (:mod:`.chassis`) for network adapters and, when no system lists
  a GPU Processor, for PCIe devices that are GPUs; when none is a GPU either, the vendor's
  own resources the quirks name (:mod:`.oem`), and when those give none, an ``unavailable``
  entry says GPUs could not be read from this BMC (0 GPUs and no word is never the answer).
- A GPU is its resource (URI, or UUID): GPUs that report one serial (a board's, or a
  placeholder) are all kept, and :meth:`~.views.Inventory.identical_serials` reports them.
- A member that answers 404, fails or does not validate (a Fibre Channel port with a
  WWPN where a MAC belongs, a MAC "Not Available") is an ``unavailable`` entry about that
  member (:class:`~bringup.redfish.reader.Reader`); the rest of the inventory stands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bringup.redfish import chassis, manager, oem, system, update_service
from bringup.redfish.models import BiosDoc, ComputerSystemDoc, SystemDoc
from bringup.redfish.reader import Reader, split_ref
from bringup.redfish.views import Inventory, SystemInfo

if TYPE_CHECKING:
    from bringup.redfish.bmc import Bmc


def read(bmc: Bmc, host_raw: dict[str, Any], host: SystemDoc,
         systems: list[tuple[str, dict[str, Any]]]) -> Inventory:
    inv = Inventory(address=bmc.address, system=SystemInfo(
        id=host.Id, manufacturer=host.Manufacturer, model=host.Model, serial=host.SerialNumber, sku=host.SKU,
        uuid=host.UUID, bios_version=host.BiosVersion, power_state=host.PowerState))
    rd = Reader(bmc.session, inv)
    read_systems: list[tuple[str, dict[str, Any]]] = []
    for uri, raw in systems:
        doc = host if uri == bmc.system_uri else rd.parse(ComputerSystemDoc, raw, uri)
        if doc is None:
            continue
        inv.systems.append(uri)
        raw = host_raw if uri == bmc.system_uri else raw
        read_systems.append((uri, raw))
        if doc.Processors:
            system.read_processors(bmc, rd, raw["Processors"])
        if doc.Memory:
            system.read_memory(rd, raw["Memory"])
        if doc.EthernetInterfaces:
            system.read_interfaces(rd, raw["EthernetInterfaces"], "system")
    root = bmc.session.root
    if root and root.Managers:
        manager.read_nics(rd, root.Managers.odata_id)
    chassis_docs = chassis.read(bmc, rd, root.Chassis.odata_id) if root and root.Chassis else []
    if not inv.gpus:
        looked = oem.read_gpus(bmc, rd, chassis_docs, read_systems)
        if not inv.gpus:
            oem.note_unreadable(rd, bmc.system_uri, looked, bmc.quirks)
    if root and root.UpdateService:
        update_service.read_firmware(rd, root.UpdateService.odata_id)
    if host.Bios:
        uri, inlined = split_ref(host_raw["Bios"])
        bios_doc = inlined if inlined is not None else rd.get(uri)
        bios = rd.parse(BiosDoc, bios_doc, uri) if bios_doc is not None else None
        if bios is not None:
            inv.bios = bios.Attributes
    return inv
