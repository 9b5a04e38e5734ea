"""The NetBox adapter: the only module that talks to NetBox (through pynetbox).

It is handed a ``pynetbox.Api`` (see :func:`connect`) and offers what the rest of
bringup needs: read, create and update objects by their natural key (the schema as code,
:mod:`bringup.netbox.schema_apply`, is built on these), read what a node should look like,
and record what we found (stage, status, custom fields, journal entries with evidence).

NetBox 4.7 facts this relies on: choice custom fields read back as ``{value, label}``;
MAC addresses are objects of their own (``dcim.mac_addresses``) and an interface has a
``primary_mac_address``; devices have ``role``; v2 API tokens look like ``nbt_<key>.<secret>``.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import pynetbox
import requests

from bringup.errors import (
    NetBoxNotFound,
    NetBoxRequestError,
    NetBoxUnavailable,
    NotFoundError,
)
from bringup.netbox import graphql
from bringup.netbox.devices import DeviceState, NodeRecord, version_of  # importers find them here too
from bringup.netbox.devices import choice_value as _value
from bringup.netbox.devices import node_record as _record
from bringup.netbox.http_retry import connect as connect  # importers find it here too
from bringup.netbox.journal_once import JournalOnce
from bringup.netbox.status_map import guard as _guard
from bringup.netbox.status_map import raise_for_status

DEVICE_ROLE = "gpu-server"
log = logging.getLogger(__name__)


class NetBox:
    def __init__(self, api: pynetbox.api, *, graphql: bool | None = None) -> None:
        """``graphql``: read devices through NetBox's GraphQL API (True), over REST only
        (False), or find out at the first read (None: GraphQL unless NetBox refuses it)."""
        self.api = api
        self._graphql = graphql
        self._journal = JournalOnce(self._post_journal, self._journal_since, self._delete_journal)

    def _authorization(self) -> str:
        """The Authorization header of a raw request (v2 tokens ``nbt_...`` are Bearer)."""
        token = self.api.token or ""
        return f"Bearer {token}" if token.startswith("nbt_") else f"Token {token}"

    @property
    def reads_through(self) -> str:
        """``graphql``, ``rest``, or ``unknown`` before the first node read."""
        return {True: "graphql", False: "rest"}.get(self._graphql, "unknown")

    # --- objects by natural key (the schema as code: bringup.netbox.schema_apply) -----------
    def _endpoint(self, endpoint: str):
        app, name = endpoint.split(".")
        return getattr(getattr(self.api, app), name)

    @_guard
    def get_object(self, endpoint: str, **key: Any) -> dict[str, Any] | None:
        """The one object of ``endpoint`` (``"dcim.device_types"``) matching ``key``, as
        NetBox serializes it (nested objects as their ids); ``None`` when there is none."""
        obj = self._endpoint(endpoint).get(**key)
        return obj.serialize() if obj else None

    @_guard
    def create_object(self, endpoint: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Create one object of ``endpoint``; returns it as :meth:`get_object` would."""
        return self._endpoint(endpoint).create(fields).serialize()

    @_guard
    def update_object(self, endpoint: str, obj_id: int, fields: dict[str, Any]) -> None:
        """Set ``fields`` of object ``obj_id`` of ``endpoint`` (only those that differ are sent)."""
        obj = self._endpoint(endpoint).get(obj_id)
        if obj is None:
            raise NetBoxNotFound(f"NetBox has no {endpoint} #{obj_id} any more", hint="run it again")
        obj.update(fields)

    # --- reading what a node should be ----------------------------------------------------
    @_guard
    def nodes(self, *, site: str | None = None, rack: str | None = None, tag: str | None = None,
              names: list[str] | None = None, status: str | None = None, macs: bool = False) -> list[NodeRecord]:
        """The GPU servers matching the filters, with everything the pipeline needs.
        Their interfaces are read only when asked (``macs=True``); otherwise
        ``NodeRecord.macs`` is ``None`` ("not read"): only discovery compares MACs. Read through GraphQL, one query, where NetBox serves it
        (:mod:`bringup.netbox.graphql`: a fraction of the REST reads' CPU), else over REST."""
        views = None
        if self._graphql is not False:
            views = self._graphql_pages(site=site, tag=tag, names=names, macs=macs)
        if views is None:
            views = self._rest_views(site=site, tag=tag, names=names, macs=macs)
        elif macs:   # a device whose interfaces NetBox may have cut: its MACs over REST
            for v in views:
                if v["macs"] is None:
                    v["macs"] = self._macs([v["id"]])[v["id"]]
        if rack:  # rack names are unique per site only, so match the name on our side
            views = [v for v in views if v["rack"] == rack]
        if status:
            views = [v for v in views if v["status"] == status]
        if names:
            missing = sorted(set(names) - {v["name"] for v in views})
            if missing:
                raise NotFoundError(f"NetBox has no GPU server named {', '.join(missing)}",
                                    hint="check the names, or seed the fleet (`bringup lab seed`)")
        return [_record(v) for v in views]

    def _graphql_pages(self, *, site: str | None, tag: str | None, names: list[str] | None,
                       macs: bool) -> list[dict[str, Any]] | None:
        """Every device the filters match, page by page (:func:`graphql.next_start`)."""
        views: list[dict[str, Any]] = []
        start: int | None = 0
        while start is not None:
            page = self._graphql_views(graphql.nodes_query(DEVICE_ROLE, site=site, tag=tag, names=names,
                                                           macs=macs, start=start))
            if page is None:
                return None
            views += page
            start = graphql.next_start(page, {v["name"] for v in views}, names)
        return sorted(views, key=graphql.natural_order)

    def _graphql_views(self, q: tuple[str, dict[str, Any]]) -> list[dict[str, Any]] | None:
        """The devices a GraphQL query returns, as views; ``None`` when this NetBox does not
        serve it (then, from now on, this adapter reads over REST)."""
        auth = self._authorization()
        web = self.api.base_url.rstrip("/").removesuffix("/api")
        resp = self.api.http_session.request(
            "POST", f"{web}/graphql/", json={"query": q[0], "variables": q[1]},
            headers={"Accept": "application/json", "Content-Type": "application/json", "Authorization": auth})
        if resp.status_code not in (200, 400, 404):
            raise_for_status(resp.status_code, resp.text)
        try:
            doc = resp.json()
        except ValueError:
            doc = None
        try:
            rows = graphql.answer(resp.status_code, doc, resp.text)
        except graphql.Unsupported as exc:
            if self._graphql:  # it answered this before: a refusal now is NetBox's state, not its version
                raise NetBoxUnavailable(str(exc), hint="NetBox's GraphQL answered this query before; try again") from None
            log.warning("%s; reading devices over REST (costs NetBox more CPU)", exc)
            self._graphql = False
            return None
        self._graphql = True
        return [graphql.device_view(r, web) for r in rows]

    def _rest_views(self, *, site: str | None, tag: str | None, names: list[str] | None,
                    macs: bool) -> list[dict[str, Any]]:
        filters: dict[str, Any] = {"role": DEVICE_ROLE}
        if site:
            filters["site"] = site
        if tag:
            filters["tag"] = tag
        if names:
            filters["name"] = names
        devices = list(self.api.dcim.devices.filter(**filters))
        by_device = self._macs([d.id for d in devices]) if (macs and devices) else {}
        return [{"id": d.id, "name": d.name, "site": d.site.slug, "rack": d.rack.name if d.rack else "",
                 "status": str(_value(d.status)), "custom_fields": dict(d.custom_fields or {}),
                 "config_context": d.config_context or {}, "serial": d.serial or "",
                 "tags": [t.slug for t in d.tags], "macs": by_device.get(d.id) if macs else None,
                 "bmc_address": str(d.oob_ip.address).split("/")[0] if d.oob_ip else "",
                 "address": str(d.primary_ip4.address).split("/")[0] if d.primary_ip4 else "",
                 "url": str(d.url).replace("/api/", "/"), "created": getattr(d, "created", None),
                 "last_updated": getattr(d, "last_updated", None)} for d in devices]

    def _macs(self, ids: list[int]) -> dict[int, dict[str, str]]:
        out: dict[int, dict[str, str]] = {i: {} for i in ids}
        for itf in self.api.dcim.interfaces.filter(device_id=ids):
            if itf.primary_mac_address:
                out[itf.device.id][itf.name] = str(itf.primary_mac_address.mac_address).lower()
        return out

    @_guard
    def macs(self, node_id: int) -> dict[str, str]:
        """One device's interfaces and their MACs (interface name -> MAC, lower case);
        through GraphQL where served, over REST where not or where its list may be cut."""
        views = None if self._graphql is False else self._graphql_views(graphql.macs_query(node_id))
        if views == []:
            raise NotFoundError(f"device #{node_id} is gone from NetBox")
        if views and views[0]["macs"] is not None:
            return views[0]["macs"]
        return self._macs([node_id])[node_id]

    @_guard
    def rack_locations(self, site: str | None = None) -> dict[tuple[str, str], str]:
        """(site slug, rack name) -> the slug of the rack's NetBox location, ``""`` when it has
        none: the block (pod, scalable unit) a rack belongs to, for the Kueue topology."""
        racks = self.api.dcim.racks.filter(site=site) if site else self.api.dcim.racks.all()
        return {(r.site.slug, r.name): (r.location.slug if r.location else "") for r in racks}

    # --- recording ------------------------------------------------------------------------
    @_guard
    def update_node(self, node_id: int, *, status: str | None = None, stage: str | None = None,
                    fields: dict[str, Any] | None = None, add_tags: list[str] = (), remove_tags: list[str] = (),
                    tags: list[str] | None = None) -> tuple[dict[str, Any], str] | None:
        """Set status, the bring-up stage and other custom fields of one device, in one PATCH
        (NetBox merges the custom fields sent into those it has). ``tags``: the device's
        tags as the caller knows them; without them a change of tags reads the device first.
        Returns every custom field of the device as NetBox holds it after the write and the
        device's new version (NetBox's answer; tests/fixtures/netbox/bulk-patch-netbox-4.7.json),
        or None when the write sent no custom field or the answer is not one NetBox 4.7 gives."""
        cf = dict(fields or {})
        if stage:
            cf["bringup_stage"] = stage
        body: dict[str, Any] = {}
        if cf:
            body["custom_fields"] = cf
        if status:
            body["status"] = status
        if add_tags or remove_tags:
            if tags is None:
                dev = self.api.dcim.devices.get(node_id)
                if dev is None:
                    raise NotFoundError(f"device #{node_id} is gone from NetBox")
                tags = [t.slug for t in dev.tags]
            now = (set(tags) | set(add_tags)) - set(remove_tags)
            body["tags"] = [{"slug": t} for t in sorted(now)]
        if not body:
            return None
        answer = self._write_device(node_id, body)
        fields = answer.get("custom_fields")
        if not cf or not isinstance(fields, dict):
            return None
        return {k: _value(v) for k, v in fields.items()}, version_of(answer.get("last_updated"))

    # --- one device's custom fields with its version: compare-and-swap (node leases) ---------
    def _raw(self, method: str, path: str, *, json: Any = None, params: dict[str, str] | None = None,
             headers: dict[str, str] | None = None, allow: tuple[int, ...] = ()) -> requests.Response:
        """A request pynetbox cannot make (it hides the ETag, sends no If-Match, writes no
        list) on ``path`` under the API. A refusal raises, but for the statuses in ``allow``,
        which the caller reads itself."""
        resp = self.api.http_session.request(
            method, f"{self.api.base_url}/{path}", json=json, params=params,
            headers={"Accept": "application/json", "Authorization": self._authorization(), **(headers or {})})
        if not resp.ok and resp.status_code not in allow:
            raise_for_status(resp.status_code, resp.text)
        return resp

    def _device(self, method: str, node_id: int, *, headers: dict[str, str] | None = None,
                body: dict[str, Any] | None = None, read: tuple[str, ...] = ()) -> requests.Response:
        """A raw request on one device: pynetbox hides the ETag header and sends no If-Match.
        NetBox serializes only ``read`` (a GET) or the fields written (a PATCH), and ``id``
        (its ``?fields=``): a device costs NetBox far less CPU that way. That list also limits
        the fields NetBox *accepts*, so a field written but left out of it would be dropped
        without a word: a PATCH's list is always its body's keys."""
        return self._raw(method, f"dcim/devices/{node_id}/", json=body, headers=headers,
                         params={"fields": ",".join(["id", *(body or read)])} if (body or read) else None)

    def _write_device(self, node_id: int, body: dict[str, Any]) -> dict[str, Any]:
        """A bulk PATCH of one: NetBox finds the device by id alone, where a detail URL builds the
        device filter set first (99 against 219 ms of its CPU, bench/netbox_requests.py). A
        conditional write stays on the detail URL, whose answer carries the new ETag. Returns
        the device as NetBox answered (the fields written), {} for an answer of another shape."""
        # last_updated: the device's new version (read-only; every field written is in the list)
        resp = self._raw("PATCH", "dcim/devices/", json=[{"id": node_id, **body}],
                         params={"fields": ",".join(["id", *body, "last_updated"])}, allow=(400,))
        if resp.status_code == 400 and "does not exist" in resp.text:
            # NetBox answers a bulk write naming a device it does not have with 400, not 404
            raise NotFoundError(f"device #{node_id} is gone from NetBox")
        if not resp.ok:
            raise_for_status(resp.status_code, resp.text)
        try:
            answer = resp.json()
        except ValueError:
            return {}
        ok = isinstance(answer, list) and len(answer) == 1 and isinstance(answer[0], dict) \
            and answer[0].get("id") == node_id
        return answer[0] if ok else {}

    @_guard
    def device_fields(self, node_id: int) -> tuple[str, dict[str, Any]]:
        """One device's custom fields and its version (the ETag NetBox 4.6+ derives from
        ``last_updated``), for :meth:`set_fields_if_match`."""
        state = self.device_state(node_id)
        return state.etag, state.custom_fields

    @_guard
    def device_state(self, node_id: int) -> DeviceState:
        """What a run changes on a device (status, tags, custom fields) and its version, in
        one small read: the rest of a node's record stays as it was read."""
        resp = self._device("GET", node_id, read=("status", "tags", "custom_fields"))
        etag = resp.headers.get("ETag", "")
        if not etag:  # without it a conditional write would be a blind one
            raise NetBoxRequestError("NetBox sent no ETag for a device: node leases need NetBox 4.6 or later",
                                     hint="upgrade NetBox")
        doc = resp.json()
        return DeviceState(etag=etag, status=str(_value(doc.get("status")) or ""),
                           tags=[str(t.get("slug")) for t in doc.get("tags") or [] if isinstance(t, dict)],
                           custom_fields={k: _value(v) for k, v in (doc.get("custom_fields") or {}).items()})

    @_guard
    def device_now(self, node_id: int) -> DeviceState:
        """What a run changes on a device, as NetBox holds it now, at the least cost to
        NetBox (GraphQL where served), with its version (from ``last_updated`` over GraphQL,
        :func:`~bringup.netbox.devices.version_of`; "" when NetBox gave none)."""
        views = None if self._graphql is False else self._graphql_views(graphql.state_query(node_id))
        if views is None:
            return self.device_state(node_id)
        if not views:
            raise NotFoundError(f"device #{node_id} is gone from NetBox")
        v = views[0]
        return DeviceState(etag=version_of(v.get("last_updated")), status=v["status"], tags=v["tags"],
                           custom_fields={k: _value(x) for k, x in v["custom_fields"].items()})

    @_guard
    def set_fields_if_match(self, node_id: int, fields: dict[str, Any], etag: str) -> str:
        """Set custom fields only if the device is still at version ``etag``; NetBox checks
        under a row lock. Raises :class:`~bringup.errors.NetBoxPreconditionFailed` (412)
        when someone wrote it since. Returns the new version."""
        resp = self._device("PATCH", node_id, headers={"If-Match": etag}, body={"custom_fields": fields})
        return resp.headers.get("ETag", "")

    @_guard
    def journal(self, node_id: int, comments: str, kind: str = "info") -> int:
        """A journal entry on the device: the evidence people read in NetBox's UI. Once, even
        when NetBox's answer to it is lost (:mod:`bringup.netbox.journal_once`)."""
        return self._journal.write(node_id, comments, kind)

    def _post_journal(self, node_id: int, comments: str, kind: str) -> int:
        return self.api.extras.journal_entries.create({"assigned_object_type": "dcim.device",
                                                       "assigned_object_id": node_id, "kind": kind,
                                                       "comments": comments}).id

    def _delete_journal(self, entry_id: int) -> None:
        self._raw("DELETE", f"extras/journal-entries/{entry_id}/", allow=(404,))   # gone already: as asked

    def _journal_since(self, node_id: int, since: datetime) -> list[tuple[int, str]]:
        return [(e.id, e.comments) for e in self.api.extras.journal_entries.filter(
            assigned_object_type="dcim.device", assigned_object_id=node_id, created_after=since.isoformat())]

    @_guard
    def journal_texts(self, entry_ids: list[int]) -> dict[int, str]:
        """The comments of the given journal entries, by id (missing ones are absent)."""
        if not entry_ids:
            return {}
        return {e.id: e.comments for e in self.api.extras.journal_entries.filter(id=list(entry_ids))}

    @_guard
    def journal_entries(self, node_id: int) -> list[dict[str, Any]]:
        return [{"kind": _value(e.kind), "comments": e.comments, "created": str(e.created)}
                for e in self.api.extras.journal_entries.filter(assigned_object_type="dcim.device",
                                                                assigned_object_id=node_id)]

    # --- a fleet's history in bulk (bringup.insight.fleetdata) --------------------------------------
    @_guard
    def journals(self, node_ids: list[int], chunk: int = 100) -> dict[int, list[dict[str, Any]]]:
        """Every journal entry of the given devices (id, created, kind, comments), by device
        id; ``chunk`` ids a request keeps the URL short."""
        out: dict[int, list[dict[str, Any]]] = {i: [] for i in node_ids}
        for n in range(0, len(node_ids), chunk):
            for e in self.api.extras.journal_entries.filter(assigned_object_type="dcim.device",
                                                            assigned_object_id=node_ids[n:n + chunk]):
                out.setdefault(int(e.assigned_object_id), []).append(
                    {"id": e.id, "created": str(e.created), "kind": _value(e.kind), "comments": e.comments})
        return out

    @_guard
    def stage_changes(self, node_ids: list[int], chunk: int = 100) -> dict[int, list[tuple[str, str]]]:
        """When each device entered each bring-up stage: (time, stage) from NetBox's change
        log, oldest first. The lifecycle's transitions are updates of ``bringup_stage``;
        other updates (evidence, leases) leave it unchanged and are skipped."""
        out: dict[int, list[tuple[str, str]]] = {i: [] for i in node_ids}
        for n in range(0, len(node_ids), chunk):
            for c in self.api.core.object_changes.filter(changed_object_type="dcim.device",
                                                         changed_object_id=node_ids[n:n + chunk]):
                after = _value(((c.postchange_data or {}).get("custom_fields") or {}).get("bringup_stage"))
                before = _value(((c.prechange_data or {}).get("custom_fields") or {}).get("bringup_stage"))
                if after and after != before:
                    out.setdefault(int(c.changed_object_id), []).append((str(c.time), str(after)))
        for changes in out.values():
            changes.sort()
        return out


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
