"""Seed NetBox with a fleet profile: the lab's stand-in for the racking and cabling a
real site records in NetBox by hand or from its DCIM import.

Writes the site, racks, pools (tag + ``bringup_pool`` config context), and each node as a
``planned`` device with its interfaces' MACs and its BMC / management IPs. Safe to run
again: what exists is left as it is.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from bringup.errors import NetBoxError, NotFoundError
from bringup.lifecycle.engine import initial_fields
from bringup.netbox.adapter import DEVICE_ROLE, NetBox, _guard
from bringup.netbox.schema import marked
from bringup.sku import SkuSpec

from .fleet import BMC_IFACE, MGMT_IFACE, FleetProfile

TRAINER = Path(__file__).resolve().parent / "workloads" / "trainer.py"


@dataclass
class SeedReport:
    created: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)
    macs: int = 0


@_guard
def seed(nb: NetBox, fleet: FleetProfile, skus: dict[str, SkuSpec]) -> SeedReport:
    """Write a fleet profile to NetBox: site, racks, pools, devices in status planned,
    their interfaces' MACs and their BMC / management IPs. Safe to run again."""
    a = nb.api
    report = SeedReport()
    role = a.dcim.device_roles.get(slug=DEVICE_ROLE)
    if role is None:
        raise NotFoundError(f"NetBox has no device role {DEVICE_ROLE!r}",
                            hint="run `bringup netbox apply` first")
    site = a.dcim.sites.get(slug=fleet.site) or a.dcim.sites.create(
        {"name": fleet.site, "slug": fleet.site, "status": "active", "description": marked("")})
    racks = {}
    for rack in fleet.racks:
        racks[rack] = a.dcim.racks.get(site_id=site.id, name=rack) or a.dcim.racks.create(
            {"name": rack, "site": site.id, "status": "active"})
    pool_tags = {}
    for name, pool in fleet.pools.items():
        slug = f"pool-{name}"
        tag = a.extras.tags.get(slug=slug) or a.extras.tags.create(
            {"name": slug, "slug": slug, "color": "607d8b", "description": marked(f"node pool {name}")})
        pool_tags[name] = tag
        data = {"bringup_pool": {"name": name, **pool.model_dump()}}
        acceptance = data["bringup_pool"]["acceptance"]
        if acceptance and "command" not in acceptance:
            # the lab's "production image" is the CPU trainer, run by the node's kubelet
            # with this Python (numpy); a real site's pool names its image's entrypoint
            acceptance["command"] = [sys.executable, str(TRAINER)]
        cc = a.extras.config_contexts.get(name=slug)
        if cc is None:
            a.extras.config_contexts.create({"name": slug, "weight": 2000, "tags": [slug], "data": data,
                                             "description": marked(f"node pool {name}")})
        elif cc.data != data:
            cc.update({"data": data})
    dtypes = {dt.slug: dt for dt in a.dcim.device_types.filter(slug=sorted({n.sku for n in fleet.nodes}))}
    for node in fleet.nodes:
        dt = dtypes.get(node.sku)
        if dt is None:
            raise NotFoundError(f"NetBox has no device type {node.sku!r} (node {node.name})",
                                hint="run `bringup netbox apply` first")
        sku = skus[node.sku]
        dev = a.dcim.devices.get(name=node.name, site_id=site.id)
        if dev is None:
            dev = a.dcim.devices.create({
                "name": node.name, "device_type": dt.id, "role": role.id, "site": site.id,
                "rack": racks[node.rack].id, "status": "planned", "serial": node.serial,
                "tags": [{"slug": pool_tags[node.pool].slug}],
                # the node enters the lifecycle; nothing about it is known or done yet
                "custom_fields": initial_fields()})
            report.created.append(node.name)
        else:
            report.existing.append(node.name)
        report.macs += _seed_interfaces(nb, dev, node, sku)
    return report


def _seed_interfaces(nb: NetBox, dev, node, sku: SkuSpec) -> int:
    a = nb.api
    ifaces = {i.name: i for i in a.dcim.interfaces.filter(device_id=dev.id)}
    missing = [n for n in node.interface_names(sku.nics.compute) if n not in ifaces]
    if missing:
        raise NetBoxError(f"device {node.name} lacks interfaces {missing} of its device type",
                          hint="check the device type's interface templates (`bringup netbox apply`)")
    new_macs = []
    for name in node.interface_names(sku.nics.compute):
        itf = ifaces[name]
        if itf.primary_mac_address is None:
            new_macs.append({"mac_address": node.mac_of(name), "assigned_object_type": "dcim.interface",
                             "assigned_object_id": itf.id})
    if new_macs:
        created = a.dcim.mac_addresses.create(new_macs)
        a.dcim.interfaces.update([{"id": m.assigned_object_id, "primary_mac_address": m.id} for m in created])
    updates: dict[str, int] = {}
    for iface, addr, attr in ((BMC_IFACE, node.bmc_address, "oob_ip"), (MGMT_IFACE, node.address, "primary_ip4")):
        if getattr(dev, attr) is not None:
            continue
        ip = a.ipam.ip_addresses.create({"address": f"{addr}/32", "status": "active",
                                         "assigned_object_type": "dcim.interface",
                                         "assigned_object_id": ifaces[iface].id,
                                         "description": f"{node.name} {iface}"})
        updates[attr] = ip.id
    if updates:
        dev.update(updates)
    return len(new_macs)
