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
    #: the device's version as read with it (NetBox's ETag, :func:`version_of`); "" unknown.
    #: A lease's compare-and-swap tries it before reading the version again
    version: str = ""
    #: when NetBox created the device (ISO 8601, UTC, "+00:00"); "" unknown. With the URL it
    #: names this device and no other: a NetBox built again gives its devices the same ids
    created: str = ""


@dataclass
class DeviceState:
    """The part of a device a run changes, with the device's version (its ETag)."""

    etag: str
    status: str
    tags: list[str]
    custom_fields: dict[str, Any]


def version_of(last_updated: Any) -> str:
    """NetBox's ETag of an object from its ``last_updated`` as an answer gives it: NetBox
    4.6+ derives the weak ETag from it (``W/"<isoformat>"``; GraphQL gives the isoformat,
    REST the same with ``Z`` for ``+00:00``; tests/fixtures/netbox/etag-netbox-4.7.json).
    "" when there is none. A wrong guess costs one refused write (412) and a read."""
    if not isinstance(last_updated, str) or not last_updated.strip():
        return ""
    ts = last_updated.strip()
    return f'W/"{ts[:-1] + "+00:00" if ts.endswith("Z") else ts}"'


def instant(ts: Any) -> str:
    """A NetBox timestamp as one text whichever API gave it (REST ends in "Z", GraphQL in
    "+00:00"); "" for none."""
    text = str(ts or "").strip()
    return text[:-1] + "+00:00" if text.endswith("Z") else text


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
        url=view["url"], tags=view["tags"], version=version_of(view.get("last_updated")),
        created=instant(view.get("created")))
