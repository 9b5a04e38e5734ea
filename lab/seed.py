"""Seed NetBox with a fleet profile: the lab's stand-in for the racking and cabling a
real site records in NetBox by hand or from its DCIM import.

Writes the site, racks, pools (tag + ``bringup_pool`` config context), and each node as a
``planned`` device with its interfaces' MACs and its BMC / management IPs. Safe to run
again: what exists is left as it is, a MAC or IP address already made for an interface
included (a create NetBox acted on but did not answer in time). A seed that meets a
transient NetBox error (a read timeout on a loaded machine) is run again from the top.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bringup.errors import NetBoxError, NotFoundError, TransientError
from bringup.lifecycle.engine import initial_fields
from bringup.netbox.adapter import DEVICE_ROLE, NetBox
from bringup.netbox.schema import marked
from bringup.netbox.status_map import guard as _guard
from bringup.retry import Backoff, retry
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
#: tries of a seed that meets a transient NetBox error, and the pauses between them (5 s,
#: then 15 s): seen in a fresh-clone suite run, NetBox took 30 s to PATCH 25 interfaces
#: while three fleets commissioned beside it on 2 cores, and the seed (and the scenario) failed
TRIES = 3
RETRY_BACKOFF = Backoff(first=5.0, factor=3.0, cap=15.0)
#: ids a filtered read carries (the URL stays short)
IDS_A_READ = 100

log = logging.getLogger(__name__)


@dataclass
class SeedReport:
    created: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)
    macs: int = 0


def seed(nb: NetBox, fleet: FleetProfile, skus: dict[str, SkuSpec], *,
         sleep: Callable[[float], None] = time.sleep) -> SeedReport:
    """Write a fleet profile to NetBox: site, racks, pools, devices in status planned,
    their interfaces' MACs and their BMC / management IPs. Safe to run again, and run
    again (:data:`TRIES` in all, :data:`RETRY_BACKOFF` between) when NetBox fails
    transiently part-way."""
    def once() -> SeedReport:
        try:
            return _seed_once(nb, fleet, skus)
        except TransientError as exc:
            log.warning("seeding %s: %s (what was written stays; a next try, if one is left, "
                        "goes on from it)", fleet.site, exc)
            raise
    return retry(once, attempts=TRIES, retry_on=(TransientError,), backoff=RETRY_BACKOFF, sleep=sleep)


@_guard
def _seed_once(nb: NetBox, fleet: FleetProfile, skus: dict[str, SkuSpec]) -> SeedReport:
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
    made_macs, made_ips = _assigned(a, nodes, ifaces)
    new_macs, new_ips, links = [], [], []
    updates: dict[int, dict[str, Any]] = {}
    for dev, node, sku in nodes:
        mine = ifaces.get(dev.id, {})
        names = node.interface_names(sku.nics.compute)
        missing = [n for n in names if n not in mine]
        if missing:
            raise NetBoxError(f"device {node.name} lacks interfaces {missing} of its device type",
                              hint="check the device type's interface templates (`bringup netbox apply`)")
        for n in names:
            if mine[n].primary_mac_address is not None:
                continue
            mac = made_macs.get((mine[n].id, node.mac_of(n).upper()))
            if mac is not None:     # made by a seed NetBox did not answer: only link it
                links.append({"id": mine[n].id, "primary_mac_address": mac})
            else:
                new_macs.append({"mac_address": node.mac_of(n), "assigned_object_type": "dcim.interface",
                                 "assigned_object_id": mine[n].id})
        for iface, addr, attr in ((BMC_IFACE, node.bmc_address, "oob_ip"), (MGMT_IFACE, node.address, "primary_ip4")):
            if getattr(dev, attr) is None:
                ip = made_ips.get((mine[iface].id, f"{addr}/32"))
                if ip is not None:
                    updates.setdefault(dev.id, {"id": dev.id})[attr] = ip
                    continue
                new_ips.append((dev.id, attr, {"address": f"{addr}/32", "status": "active",
                                               "assigned_object_type": "dcim.interface",
                                               "assigned_object_id": mine[iface].id,
                                               "description": f"{node.name} {iface}"}))
    for chunk in _chunks(links, OBJECTS_A_REQUEST):
        a.dcim.interfaces.update(chunk)
    for chunk in _chunks(new_macs, OBJECTS_A_REQUEST):
        made = a.dcim.mac_addresses.create(chunk)
        a.dcim.interfaces.update([{"id": m.assigned_object_id, "primary_mac_address": m.id} for m in made])
    for chunk in _chunks(new_ips, OBJECTS_A_REQUEST):
        made = a.ipam.ip_addresses.create([body for _, _, body in chunk])
        for (dev_id, attr, _), ip in zip(chunk, made, strict=True):
            updates.setdefault(dev_id, {"id": dev_id})[attr] = ip.id
    for chunk in _chunks(list(updates.values()), OBJECTS_A_REQUEST):
        a.dcim.devices.update(chunk)
    return len(new_macs) + len(links)


def _assigned(a: Any, nodes: list[tuple[Any, Any, SkuSpec]],
              ifaces: dict[int, dict[str, Any]]) -> tuple[dict[tuple[int, str], int], dict[tuple[int, str], int]]:
    """MAC and IP address objects already on the interfaces that lack theirs, by
    (interface id, value): what an earlier seed created before NetBox stopped answering."""
    lacking = sorted({dev.id for dev, _node, _sku in nodes
                      if any(itf.primary_mac_address is None for itf in ifaces.get(dev.id, {}).values())})
    macs: dict[tuple[int, str], int] = {}
    for ids in _chunks(lacking, IDS_A_READ):
        for m in a.dcim.mac_addresses.filter(device_id=ids, primary=False, limit=PAGE):
            macs[(m.assigned_object_id, str(m.mac_address).upper())] = m.id
    no_ip = sorted({dev.id for dev, _node, _sku in nodes if dev.oob_ip is None or dev.primary_ip4 is None})
    ips: dict[tuple[int, str], int] = {}
    for ids in _chunks(no_ip, IDS_A_READ):
        for ip in a.ipam.ip_addresses.filter(device_id=ids, limit=PAGE):
            ips[(ip.assigned_object_id, str(ip.address))] = ip.id
    return macs, ips
