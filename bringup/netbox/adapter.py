"""The NetBox adapter: the only module that talks to NetBox (through pynetbox).

It is handed a ``pynetbox.Api`` (see :func:`connect`) and offers what the rest of
bringup needs: apply the schema, seed a fleet, read what a node should look like, and
record what we found (stage, status, custom fields, journal entries with evidence).

NetBox 4.7 facts this relies on: choice custom fields read back as ``{value, label}``;
MAC addresses are objects of their own (``dcim.mac_addresses``) and an interface has a
``primary_mac_address``; devices have ``role``; v2 API tokens look like ``nbt_<key>.<secret>``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pynetbox
import requests
from requests.adapters import HTTPAdapter

from bringup.errors import (
    ConflictError,
    NetBoxAuthError,
    NetBoxError,
    NetBoxNotFound,
    NetBoxPreconditionFailed,
    NetBoxRequestError,
    NetBoxUnavailable,
    NotFoundError,
)
from bringup.netbox.http_retry import retry_policy
from bringup.netbox.schema import MARK, Action, Change, Schema, diff, marked
from bringup.sku import SkuSpec

DEVICE_ROLE = "gpu-server"


def connect(url: str, token: str, *, timeout: float = 30.0, retries: int = 3) -> pynetbox.api:
    """A pynetbox API with timeouts and retries (:func:`retry_policy`)."""
    api = pynetbox.api(url, token=token)
    session = requests.Session()
    retry = retry_policy(retries)
    session.mount("http://", HTTPAdapter(max_retries=retry, pool_maxsize=32))
    session.mount("https://", HTTPAdapter(max_retries=retry, pool_maxsize=32))
    original = session.request

    def request_with_timeout(method, url, **kw):
        kw.setdefault("timeout", timeout)
        return original(method, url, **kw)

    session.request = request_with_timeout  # type: ignore[method-assign]
    api.http_session = session
    return api


def raise_for_status(status: int, detail: str) -> None:
    """The one HTTP status -> exception map of the NetBox adapter."""
    if status in (401, 403):
        raise NetBoxAuthError(f"NetBox refused the API token ({status})",
                              hint="check netbox_token_file in the settings and the token's permissions")
    if status == 404:
        raise NetBoxNotFound(f"NetBox has no such object (404): {detail[:300]}")
    if status == 412:
        raise NetBoxPreconditionFailed(f"NetBox refused a conditional write: the object changed since it was read "
                                       f"(412): {detail[:300]}", hint="read it again and decide again")
    if status == 409:
        raise NetBoxError(f"NetBox reports a conflict (409): {detail[:300]}", hint="retry; someone else wrote it")
    if status == 429 or status >= 500:
        raise NetBoxUnavailable(f"NetBox answered {status}: {detail[:300]}", hint="retry later")
    raise NetBoxRequestError(f"NetBox rejected the request ({status}): {detail[:500]}",
                             hint="the message names the field NetBox did not accept")


def _guard(fn):
    """Translate pynetbox/requests failures into our error tree."""
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except pynetbox.RequestError as exc:
            raise_for_status(getattr(exc.req, "status_code", 0) or 0, str(exc.error))
        except requests.ConnectionError as exc:
            raise NetBoxUnavailable(f"cannot reach NetBox: {exc.__class__.__name__}",
                                    hint="is it running? `bringup lab status` shows the lab's") from None
        except requests.Timeout:
            raise NetBoxUnavailable("NetBox did not answer in time") from None
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


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
    macs: dict[str, str]
    bmc_address: str
    address: str
    serial: str
    custom_fields: dict[str, Any]
    url: str
    tags: list[str]


def _value(v: Any) -> Any:
    """A choice field's value, whether it came as ``{value, label}`` or a pynetbox object."""
    if isinstance(v, dict) and "value" in v:
        return v["value"]
    return getattr(v, "value", v)


class NetBox:
    def __init__(self, api: pynetbox.api) -> None:
        self.api = api

    # --- schema ---------------------------------------------------------------------
    @_guard
    def plan_schema(self, schema: Schema) -> list[Change]:
        """Every change ``apply_schema`` would make, without writing."""
        return self._schema_pass(schema, write=False)

    @_guard
    def apply_schema(self, schema: Schema, *, dry_run: bool = False) -> list[Change]:
        """Create or update the schema. Conflicts are checked for the whole schema first,
        so a conflict means nothing was written."""
        plan = self._schema_pass(schema, write=False)
        conflicts = [c for c in plan if c.action is Action.CONFLICT]
        if conflicts:
            raise ConflictError("NetBox already has objects that differ from the schema and were not "
                                "created by bringup:\n" + "\n".join("  " + c.describe() for c in conflicts),
                                hint="rename or delete them in NetBox, or end their description with "
                                     f"'{MARK}' to let bringup manage them")
        if dry_run:
            return plan
        return self._schema_pass(schema, write=True)

    def _schema_pass(self, schema: Schema, *, write: bool) -> list[Change]:
        """Walk the schema in dependency order; when ``write``, apply each change at once so
        later steps find the objects earlier ones created."""
        a = self.api
        changes: list[Change] = []

        def upsert(kind: str, endpoint, key: dict, desired: dict, label: str = ""):
            existing = endpoint.get(**key)
            change = diff(kind, label or str(next(iter(key.values()))), desired,
                          existing.serialize() if existing else None)
            changes.append(change)
            if write and change.action is Action.CREATE:
                return endpoint.create({**key, **desired})
            if write and change.action is Action.UPDATE:
                existing.update(desired)
            return existing

        def ref(endpoint, **key) -> int | None:
            obj = endpoint.get(**key)
            return obj.id if obj else None

        for cs in schema.choice_sets:
            upsert("choice set", a.extras.custom_field_choice_sets, {"name": cs["name"]}, {
                "description": marked(cs.get("description", "")),
                "extra_choices": [list(c) for c in cs["choices"]]})
        for cf in schema.custom_fields:
            desired = {"label": cf.get("label", ""), "type": cf["type"],
                       "object_types": cf.get("object_types", ["dcim.device"]),
                       "group_name": cf.get("group_name", ""), "weight": cf.get("weight", 100),
                       "required": False, "description": marked(cf.get("description", ""))}
            if cf.get("choice_set"):
                desired["choice_set"] = ref(a.extras.custom_field_choice_sets, name=cf["choice_set"])
            upsert("custom field", a.extras.custom_fields, {"name": cf["name"]}, desired)
        for t in schema.tags:
            upsert("tag", a.extras.tags, {"slug": t["slug"]}, {
                "name": t["name"], "color": t.get("color", "9e9e9e"), "description": marked(t.get("description", ""))})
        for m in schema.manufacturers:
            upsert("manufacturer", a.dcim.manufacturers, {"slug": m["slug"]}, {
                "name": m["name"], "description": marked(m.get("description", ""))})
        for r in schema.device_roles:
            upsert("device role", a.dcim.device_roles, {"slug": r["slug"]}, {
                "name": r["name"], "color": r.get("color", "9e9e9e"), "description": marked(r.get("description", ""))})
        for dt in schema.device_types:
            dtype = upsert("device type", a.dcim.device_types, {"slug": dt["slug"]}, {
                "model": dt["model"], "manufacturer": ref(a.dcim.manufacturers, slug=dt["manufacturer"]),
                "part_number": dt.get("part_number", ""), "u_height": dt.get("u_height", 1),
                "description": marked(dt.get("description", ""))})
            for itf in dt["interfaces"]:
                desired = {"type": itf["type"], "mgmt_only": bool(itf.get("mgmt_only", False)),
                           "description": marked(itf.get("description", ""))}
                label = f"{dt['slug']}/{itf['name']}"
                if dtype is None:  # dry run of a type that does not exist yet
                    changes.append(diff("interface template", label, desired, None))
                    continue
                existing = a.dcim.interface_templates.get(device_type_id=dtype.id, name=itf["name"])
                change = diff("interface template", label, desired, existing.serialize() if existing else None)
                changes.append(change)
                if write and change.action is Action.CREATE:
                    a.dcim.interface_templates.create({"device_type": dtype.id, "name": itf["name"], **desired})
                elif write and change.action is Action.UPDATE:
                    existing.update(desired)
        for cc in schema.config_contexts:
            ids = [i for i in (ref(a.dcim.device_types, slug=s) for s in cc.get("device_types", [])) if i]
            upsert("config context", a.extras.config_contexts, {"name": cc["name"]}, {
                "weight": cc.get("weight", 1000), "description": marked(cc.get("description", "")),
                "device_types": ids, "data": cc["data"]})
        return changes

    # --- reading what a node should be ----------------------------------------------------
    @_guard
    def nodes(self, *, site: str | None = None, rack: str | None = None, tag: str | None = None,
              names: list[str] | None = None, status: str | None = None) -> list[NodeRecord]:
        """The GPU servers matching the filters, with everything the pipeline needs."""
        from bringup.sku import sku_from_context  # local: keeps the import graph flat

        filters: dict[str, Any] = {"role": DEVICE_ROLE}
        if site:
            filters["site"] = site
        if tag:
            filters["tag"] = tag
        if names:
            filters["name"] = names
        if status:
            filters["status"] = status
        devices = list(self.api.dcim.devices.filter(**filters))
        if rack:  # rack names are unique per site only, so match the name on our side
            devices = [d for d in devices if d.rack and d.rack.name == rack]
        if names:
            missing = sorted(set(names) - {d.name for d in devices})
            if missing:
                raise NotFoundError(f"NetBox has no GPU server named {', '.join(missing)}",
                                    hint="check the names, or seed the fleet (`bringup lab seed`)")
        if not devices:
            return []
        ids = [d.id for d in devices]
        macs: dict[int, dict[str, str]] = {i: {} for i in ids}
        for itf in self.api.dcim.interfaces.filter(device_id=ids):
            if itf.primary_mac_address:
                macs[itf.device.id][itf.name] = str(itf.primary_mac_address.mac_address).lower()
        out = []
        for d in devices:
            ctx = d.config_context or {}
            cf = dict(d.custom_fields or {})
            out.append(NodeRecord(
                id=d.id, name=d.name, site=d.site.slug, rack=d.rack.name if d.rack else "",
                status=_value(d.status), stage=_value(cf.get("bringup_stage")) or "planned",
                sku=sku_from_context(ctx, d.name), pool=ctx.get("bringup_pool", {}), macs=macs[d.id],
                bmc_address=str(d.oob_ip.address).split("/")[0] if d.oob_ip else "",
                address=str(d.primary_ip4.address).split("/")[0] if d.primary_ip4 else "",
                serial=d.serial or "", custom_fields={k: _value(v) for k, v in cf.items()},
                url=str(d.url).replace("/api/", "/"), tags=[t.slug for t in d.tags]))
        return out

    @_guard
    def rack_locations(self, site: str | None = None) -> dict[tuple[str, str], str]:
        """(site slug, rack name) -> the slug of the rack's NetBox location, ``""`` when it has
        none: the block (pod, scalable unit) a rack belongs to, for the Kueue topology."""
        racks = self.api.dcim.racks.filter(site=site) if site else self.api.dcim.racks.all()
        return {(r.site.slug, r.name): (r.location.slug if r.location else "") for r in racks}

    # --- recording ------------------------------------------------------------------------
    @_guard
    def update_node(self, node_id: int, *, status: str | None = None, stage: str | None = None,
                    fields: dict[str, Any] | None = None, add_tags: list[str] = (), remove_tags: list[str] = ()) -> None:
        """Set status, the bring-up stage and other custom fields of one device."""
        dev = self.api.dcim.devices.get(node_id)
        if dev is None:
            raise NotFoundError(f"device #{node_id} is gone from NetBox")
        cf = dict(fields or {})
        if stage:
            cf["bringup_stage"] = stage
        body: dict[str, Any] = {}
        if cf:
            body["custom_fields"] = cf
        if status:
            body["status"] = status
        if add_tags or remove_tags:
            tags = {t.slug for t in dev.tags} | set(add_tags)
            tags -= set(remove_tags)
            body["tags"] = [{"slug": t} for t in sorted(tags)]
        if body:
            dev.update(body)

    # --- one device's custom fields with its version: compare-and-swap (node leases) ---------
    def _device(self, method: str, node_id: int, *, headers: dict[str, str] | None = None,
                body: dict[str, Any] | None = None) -> requests.Response:
        """A raw request on one device: pynetbox hides the ETag header and sends no If-Match."""
        token = self.api.token or ""
        auth = f"Bearer {token}" if token.startswith("nbt_") else f"Token {token}"
        resp = self.api.http_session.request(
            method, f"{self.api.base_url}/dcim/devices/{node_id}/", json=body,
            headers={"Accept": "application/json", "Authorization": auth, **(headers or {})})
        if not resp.ok:
            raise_for_status(resp.status_code, resp.text)
        return resp

    @_guard
    def device_fields(self, node_id: int) -> tuple[str, dict[str, Any]]:
        """One device's custom fields and its version (the ETag NetBox 4.6+ derives from
        ``last_updated``), for :meth:`set_fields_if_match`."""
        resp = self._device("GET", node_id)
        etag = resp.headers.get("ETag", "")
        if not etag:  # without it a conditional write would be a blind one
            raise NetBoxRequestError("NetBox sent no ETag for a device: node leases need NetBox 4.6 or later",
                                     hint="upgrade NetBox")
        return etag, {k: _value(v) for k, v in (resp.json().get("custom_fields") or {}).items()}

    @_guard
    def set_fields_if_match(self, node_id: int, fields: dict[str, Any], etag: str) -> str:
        """Set custom fields only if the device is still at version ``etag``; NetBox checks
        under a row lock. Raises :class:`~bringup.errors.NetBoxPreconditionFailed` (412)
        when someone wrote it since. Returns the new version."""
        resp = self._device("PATCH", node_id, headers={"If-Match": etag}, body={"custom_fields": fields})
        return resp.headers.get("ETag", "")

    @_guard
    def journal(self, node_id: int, comments: str, kind: str = "info") -> int:
        """A journal entry on the device: the evidence people read in NetBox's UI."""
        entry = self.api.extras.journal_entries.create({
            "assigned_object_type": "dcim.device", "assigned_object_id": node_id,
            "kind": kind, "comments": comments})
        return entry.id

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


def evidence_block(title: str, data: Any, limit: int = 60_000) -> str:
    """Markdown for a journal entry: a heading and the evidence as fenced JSON."""
    text = json.dumps(data, indent=2, sort_keys=True, default=str)
    if len(text) > limit:
        text = text[:limit] + "\n... (truncated; full document in the Prefect artifacts)"
    return f"### {title}\n\n```json\n{text}\n```\n"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
