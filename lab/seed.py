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
from typing import Any

from bringup.errors import NetBoxError, NotFoundError
from bringup.lifecycle.engine import initial_fields
from bringup.netbox.adapter import DEVICE_ROLE, NetBox, _guard
from bringup.netbox.schema import marked
from bringup.sku import SkuSpec

from .fleet import BMC_IFACE, MGMT_IFACE, FleetProfile

TRAINER = Path(__file__).resolve().parent / "workloads" / "trainer.py"
#: objects a list read asks for a page (NetBox serializes 250 interfaces in a few seconds)
PAGE = 250
#: objects a bulk write carries. A bulk POST is not sent again after a read timeout (it
#: may have been acted on), so each must end well inside the adapter's 30 s on a loaded
#: machine: in a fresh-clone suite run NetBox took 21 s to create 10 devices with their
#: interfaces and 25 s for 100 MACs, and the client gave up on the MACs
DEVICES_A_REQUEST = 5
OBJECTS_A_REQUEST = 25


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
        if node.sku not in dtypes:
            raise NotFoundError(f"NetBox has no device type {node.sku!r} (node {node.name})",
                                hint="run `bringup netbox apply` first")
    # in bulk: a request to the device or interface endpoints costs NetBox its filter set
    # (150-250 ms) whatever it carries, so a thousand nodes are a few dozen requests, not 8,000
    have = {d.name: d for d in a.dcim.devices.filter(site_id=site.id, limit=PAGE)}
    new = [n for n in fleet.nodes if n.name not in have]
    for chunk in _chunks(new, DEVICES_A_REQUEST):
        made = a.dcim.devices.create([{
            "name": node.name, "device_type": dtypes[node.sku].id, "role": role.id, "site": site.id,
            "rack": racks[node.rack].id, "status": "planned", "serial": node.serial,
            "tags": [{"slug": pool_tags[node.pool].slug}],
            # the node enters the lifecycle; nothing about it is known or done yet
            "custom_fields": initial_fields()} for node in chunk])
        have.update({d.name: d for d in made})
    report.created = [n.name for n in new]
    created = set(report.created)
    report.existing = [n.name for n in fleet.nodes if n.name not in created]
    report.macs = _seed_interfaces(nb, site.id, [(have[n.name], n, skus[n.sku]) for n in fleet.nodes])
    return report


def _chunks(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def _seed_interfaces(nb: NetBox, site_id: int, nodes: list[tuple[Any, Any, SkuSpec]]) -> int:
    """The nodes' MACs and BMC / management IPs, where NetBox lacks them: a few bulk
    requests for the whole fleet. Returns how many MACs were written."""
    a = nb.api
    ifaces: dict[int, dict[str, Any]] = {}
    for itf in a.dcim.interfaces.filter(site_id=site_id, limit=PAGE):
        ifaces.setdefault(itf.device.id, {})[itf.name] = itf
    new_macs, new_ips = [], []
    for dev, node, sku in nodes:
        mine = ifaces.get(dev.id, {})
        names = node.interface_names(sku.nics.compute)
        missing = [n for n in names if n not in mine]
        if missing:
            raise NetBoxError(f"device {node.name} lacks interfaces {missing} of its device type",
                              hint="check the device type's interface templates (`bringup netbox apply`)")
        new_macs += [{"mac_address": node.mac_of(n), "assigned_object_type": "dcim.interface",
                      "assigned_object_id": mine[n].id} for n in names if mine[n].primary_mac_address is None]
        for iface, addr, attr in ((BMC_IFACE, node.bmc_address, "oob_ip"), (MGMT_IFACE, node.address, "primary_ip4")):
            if getattr(dev, attr) is None:
                new_ips.append((dev.id, attr, {"address": f"{addr}/32", "status": "active",
                                               "assigned_object_type": "dcim.interface",
                                               "assigned_object_id": mine[iface].id,
                                               "description": f"{node.name} {iface}"}))
    for chunk in _chunks(new_macs, OBJECTS_A_REQUEST):
        made = a.dcim.mac_addresses.create(chunk)
        a.dcim.interfaces.update([{"id": m.assigned_object_id, "primary_mac_address": m.id} for m in made])
    updates: dict[int, dict[str, Any]] = {}
    for chunk in _chunks(new_ips, OBJECTS_A_REQUEST):
        made = a.ipam.ip_addresses.create([body for _, _, body in chunk])
        for (dev_id, attr, _), ip in zip(chunk, made, strict=True):
            updates.setdefault(dev_id, {"id": dev_id})[attr] = ip.id
    for chunk in _chunks(list(updates.values()), OBJECTS_A_REQUEST):
        a.dcim.devices.update(chunk)
    return len(new_macs)
