"""Reads of GPU servers through NetBox's GraphQL API (``POST /graphql/``).

Why a second way in: every request on NetBox's REST device and interface endpoints builds
their filter sets (several hundred filters, and an empty model filter compiles its SQL)
before it reads a row: 150-250 ms of NetBox CPU per request, whatever it asks for. The
same read through GraphQL skips that: measured on NetBox 4.7 (docs/benchmarks.md,
``bench/netbox_requests.py``), one device's status, tags and custom fields cost NetBox
about 25 ms instead of 160 ms, and two nodes with their interfaces one query of about
85 ms instead of a device list and an interface list of about 220 ms each. A walk reads
its node before every step, so this is most of what a commission costs NetBox.

Only reads come this way (GraphQL in NetBox is read-only), and only the two the pipeline
repeats: :func:`nodes_query` (what :meth:`NetBox.nodes` returns) and :func:`state_query`
(a held walk's refresh). The answers are turned into the same plain values as the REST
reads (:func:`device_view`), so nothing downstream knows which API answered.

NetBox pages GraphQL lists too: a list without ``pagination`` gets strawberry-django's
default limit (100 in NetBox 4.7's settings) and no page is longer than ``MAX_PAGE_SIZE``
(a site's setting, 1,000 by default), silently. So device lists are read page by page
with a cursor (``pagination: {start: <id>, limit: ...}``, NetBox orders by id then), until
a page comes back empty or every named device was found (:func:`next_start`); a device
with as many interfaces as a page may hold has its MACs read over REST instead
(:data:`INTERFACES_PAGE`).

The query syntax is NetBox 4.3+'s (strawberry filters: ``{slug: {exact: ...}}``,
``{in_list: [...]}``); bringup already needs 4.6+ for ETags. A NetBox with GraphQL
turned off (``GRAPHQL_ENABLED = False``) answers 404, and one whose schema refuses the
query answers with ``errors``: the adapter then reads over REST (:class:`Unsupported`).
"""

from __future__ import annotations

import re
from typing import Any

from bringup.errors import NetBoxRequestError

DEVICE_FIELDS = ("id name serial status custom_fields config_context created last_updated site { slug } rack { name } "
                 "tags { slug } oob_ip { address } primary_ip4 { address }")
INTERFACE_FIELDS = "interfaces { name primary_mac_address { mac_address } }"
#: devices asked for per page (NetBox may answer fewer: its MAX_PAGE_SIZE caps it)
PAGE = 500
#: a nested list is cut at strawberry-django's default limit: this many interfaces may be more
INTERFACES_PAGE = 100


class Unsupported(Exception):
    """This NetBox does not answer the query (GraphQL off, or a schema without these
    fields or filters): read over REST instead."""


def nodes_query(role: str, *, site: str | None = None, tag: str | None = None,
                names: list[str] | None = None, macs: bool = True, start: int = 0,
                limit: int = PAGE) -> tuple[str, dict[str, Any]]:
    """The query and variables for one page of the devices of ``role`` matching the
    filters, from id ``start`` on. Status and rack are matched by the caller (a status
    filter wants NetBox's enum names)."""
    decl, filters, variables = ["$role: String!"], ["role: {slug: {exact: $role}}"], {"role": role}
    if site:
        decl.append("$site: String!")
        filters.append("site: {slug: {exact: $site}}")
        variables["site"] = site
    if tag:
        decl.append("$tag: String!")
        filters.append("tags: {slug: {exact: $tag}}")
        variables["tag"] = tag
    if names:
        decl.append("$names: [String!]!")
        filters.append("name: {in_list: $names}")
        variables["names"] = list(names)
    fields = DEVICE_FIELDS + (" " + INTERFACE_FIELDS if macs else "")
    page = f"pagination: {{start: {int(start)}, limit: {int(limit)}}}"
    query = f"query({', '.join(decl)}) {{ device_list(filters: {{{', '.join(filters)}}}, {page}) {{ {fields} }} }}"
    return query, variables


def next_start(page: list[dict[str, Any]], seen: set[str], names: list[str] | None) -> int | None:
    """Where the next page starts, or None when the list is complete: an empty page, or
    every named device found (the common case, a single page). A page shorter than asked
    proves nothing: NetBox caps it at its MAX_PAGE_SIZE without saying so."""
    if not page or (names and set(names) <= seen):
        return None
    return max(int(r["id"]) for r in page) + 1


def state_query(node_id: int) -> tuple[str, dict[str, Any]]:
    """One device's status, tags and custom fields, with ``last_updated`` (its version)."""
    query = ("query($id: ID!) { device_list(filters: {id: {exact: $id}}) "
             "{ id status custom_fields last_updated tags { slug } } }")
    return query, {"id": str(node_id)}


def macs_query(node_id: int) -> tuple[str, dict[str, Any]]:
    """One device's interfaces and their primary MACs (discovery's comparison): over REST
    the interface list costs NetBox 250-1,200 ms of CPU, its filter set built for each read."""
    query = f"query($id: ID!) {{ device_list(filters: {{id: {{exact: $id}}}}) {{ id name {INTERFACE_FIELDS} }} }}"
    return query, {"id": str(node_id)}


def answer(status: int, doc: Any, text: str) -> list[dict[str, Any]]:
    """The ``device_list`` of a GraphQL answer. Raises :class:`Unsupported` when this
    NetBox does not serve the query; other HTTP failures are the caller's to map."""
    if status == 404:
        raise Unsupported("NetBox's GraphQL API is turned off (404 at /graphql/)")
    if status == 400 or (isinstance(doc, dict) and doc.get("errors") and not doc.get("data")):
        errors = doc.get("errors") if isinstance(doc, dict) else None
        message = "; ".join(str(e.get("message", e)) for e in errors or [] if isinstance(e, dict)) or text[:300]
        raise Unsupported(f"NetBox's GraphQL API refused the query: {message}")
    try:
        rows = doc["data"]["device_list"]
    except (KeyError, TypeError):
        raise NetBoxRequestError("NetBox's GraphQL answer has no data.device_list",
                                 hint="is the address NetBox's? its /graphql/ answered something else") from None
    if not isinstance(rows, list):
        raise NetBoxRequestError("NetBox's GraphQL answer: data.device_list is not a list")
    return rows


def natural_order(view: dict[str, Any]) -> tuple:
    """The order NetBox's REST API lists devices in (its naturalized name, then id: "n9"
    before "n10"); a GraphQL page is in id order, and callers see one order either way."""
    parts = re.split(r"(\d+)", view["name"])
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts if p), view["id"]


def _address(obj: Any) -> str:
    return str(obj.get("address") or "").split("/")[0] if isinstance(obj, dict) else ""


def device_view(doc: dict[str, Any], web_base: str) -> dict[str, Any]:
    """A GraphQL device as the plain values a node record is built from (the shape the
    REST read produces too): ids as ints, MACs lower case, ``macs`` ``None`` when the
    query did not ask for interfaces or NetBox may have cut their list."""
    try:
        node_id = int(doc["id"])
    except (KeyError, TypeError, ValueError):
        raise NetBoxRequestError(f"NetBox's GraphQL answer: a device without a usable id ({doc.get('id')!r})") from None
    macs = None
    if "interfaces" in doc and len(doc.get("interfaces") or []) < INTERFACES_PAGE:   # else: maybe cut, read over REST
        macs = {}
        for itf in doc.get("interfaces") or []:
            mac = (itf.get("primary_mac_address") or {}).get("mac_address") if isinstance(itf, dict) else None
            if mac:
                macs[str(itf.get("name"))] = str(mac).lower()
    return {"id": node_id, "name": str(doc.get("name") or ""),
            "site": str((doc.get("site") or {}).get("slug") or ""),
            "rack": str((doc.get("rack") or {}).get("name") or ""),
            "status": str(doc.get("status") or "").lower(),
            "custom_fields": dict(doc.get("custom_fields") or {}),
            "config_context": dict(doc.get("config_context") or {}),
            "serial": str(doc.get("serial") or ""),
            "tags": [str(t.get("slug")) for t in doc.get("tags") or [] if isinstance(t, dict)],
            "bmc_address": _address(doc.get("oob_ip")), "address": _address(doc.get("primary_ip4")),
            "url": f"{web_base.rstrip('/')}/dcim/devices/{node_id}/", "macs": macs,
            "last_updated": doc.get("last_updated"), "created": doc.get("created")}
