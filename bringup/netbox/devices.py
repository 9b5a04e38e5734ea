"""What NetBox says a node is, in plain data: the records the adapter's reads return
(:class:`NodeRecord`, :class:`DeviceState`) and how a device view becomes one. Pure: no
I/O; the REST and the GraphQL reads (:mod:`bringup.netbox.graphql`) make the same views."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bringup.sku import SkuSpec, sku_from_context


@dataclass
class NodeRecord:
    """What NetBox says a node should be, in plain data."""

    id: int
    name: str
    site: str
    rack: str
    status: str
    stage: str
    sku: SkuSpec
    pool: dict[str, Any]
    #: interface -> MAC; ``None`` when read without them (:meth:`NetBox.nodes` ``macs=False``)
    macs: dict[str, str] | None
    bmc_address: str
    address: str
    serial: str
    custom_fields: dict[str, Any]
    url: str
    tags: list[str]


@dataclass
class DeviceState:
    """The part of a device a run changes, with the device's version (its ETag)."""

    etag: str
    status: str
    tags: list[str]
    custom_fields: dict[str, Any]


def choice_value(v: Any) -> Any:
    """A choice field's value, whether it came as ``{value, label}`` or a pynetbox object."""
    if isinstance(v, dict) and "value" in v:
        return v["value"]
    return getattr(v, "value", v)


def node_record(view: dict[str, Any]) -> NodeRecord:
    """A node record from a device view (the REST and the GraphQL reads make the same)."""
    ctx, cf = view["config_context"], view["custom_fields"]
    return NodeRecord(
        id=view["id"], name=view["name"], site=view["site"], rack=view["rack"], status=view["status"],
        stage=choice_value(cf.get("bringup_stage")) or "planned", sku=sku_from_context(ctx, view["name"]),
        pool=ctx.get("bringup_pool", {}), macs=view["macs"], bmc_address=view["bmc_address"],
        address=view["address"], serial=view["serial"], custom_fields={k: choice_value(v) for k, v in cf.items()},
        url=view["url"], tags=view["tags"])
