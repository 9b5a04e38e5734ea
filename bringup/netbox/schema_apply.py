"""Apply the schema as code (:mod:`bringup.netbox.schema`) to NetBox, through the adapter.

:func:`plan_schema` lists every change without writing; :func:`apply_schema` checks the
whole schema for conflicts first (so a conflict means nothing was written), then walks it
again and writes. The walk goes in dependency order (choice sets before the custom fields
that use them, manufacturers before device types...), and each change is written at once,
so later objects find the ones earlier changes created. The adapter
(:class:`~bringup.netbox.adapter.NetBox`) only reads, creates and updates objects; what to
write, and whether it may be written, is decided here.
"""

from __future__ import annotations

from typing import Any, Protocol

from bringup.errors import ConflictError
from bringup.netbox.schema import MARK, Action, Change, Schema, diff, marked


class ObjectStore(Protocol):
    """What the schema needs of NetBox: objects by endpoint and natural key
    (:class:`bringup.netbox.adapter.NetBox` in production)."""

    def get_object(self, endpoint: str, **key: Any) -> dict[str, Any] | None: ...

    def create_object(self, endpoint: str, fields: dict[str, Any]) -> dict[str, Any]: ...

    def update_object(self, endpoint: str, obj_id: int, fields: dict[str, Any]) -> None: ...


def plan_schema(nb: ObjectStore, schema: Schema) -> list[Change]:
    """Every change :func:`apply_schema` would make, without writing."""
    return _walk(nb, schema, write=False)


def apply_schema(nb: ObjectStore, schema: Schema, *, dry_run: bool = False) -> list[Change]:
    """Create or update the schema's objects in NetBox; returns every change (NOOPs too).
    Raises :class:`~bringup.errors.ConflictError`, having written nothing, when NetBox holds
    objects that differ from the schema and are not bringup's."""
    plan = _walk(nb, schema, write=False)
    conflicts = [c for c in plan if c.action is Action.CONFLICT]
    if conflicts:
        raise ConflictError("NetBox already has objects that differ from the schema and were not "
                            "created by bringup:\n" + "\n".join("  " + c.describe() for c in conflicts),
                            hint="rename or delete them in NetBox, or end their description with "
                                 f"'{MARK}' to let bringup manage them")
    if dry_run:
        return plan
    return _walk(nb, schema, write=True)


def _walk(nb: ObjectStore, schema: Schema, *, write: bool) -> list[Change]:
    """One pass over the schema in dependency order; when ``write``, each change is applied
    at once."""
    changes: list[Change] = []

    def upsert(kind: str, endpoint: str, key: dict[str, Any], desired: dict[str, Any],
               label: str = "") -> dict[str, Any] | None:
        existing = nb.get_object(endpoint, **key)
        change = diff(kind, label or str(next(iter(key.values()))), desired, existing)
        changes.append(change)
        if write and change.action is Action.CREATE:
            return nb.create_object(endpoint, {**key, **desired})
        if write and change.action is Action.UPDATE:
            nb.update_object(endpoint, existing["id"], desired)  # type: ignore[index]
        return existing

    def ref(endpoint: str, **key: Any) -> int | None:
        obj = nb.get_object(endpoint, **key)
        return obj["id"] if obj else None

    for cs in schema.choice_sets:
        upsert("choice set", "extras.custom_field_choice_sets", {"name": cs["name"]}, {
            "description": marked(cs.get("description", "")),
            "extra_choices": [list(c) for c in cs["choices"]]})
    for cf in schema.custom_fields:
        desired = {"label": cf.get("label", ""), "type": cf["type"],
                   "object_types": cf.get("object_types", ["dcim.device"]),
                   "group_name": cf.get("group_name", ""), "weight": cf.get("weight", 100),
                   "required": False, "description": marked(cf.get("description", ""))}
        if cf.get("choice_set"):
            desired["choice_set"] = ref("extras.custom_field_choice_sets", name=cf["choice_set"])
        upsert("custom field", "extras.custom_fields", {"name": cf["name"]}, desired)
    for t in schema.tags:
        upsert("tag", "extras.tags", {"slug": t["slug"]}, {
            "name": t["name"], "color": t.get("color", "9e9e9e"), "description": marked(t.get("description", ""))})
    for m in schema.manufacturers:
        upsert("manufacturer", "dcim.manufacturers", {"slug": m["slug"]}, {
            "name": m["name"], "description": marked(m.get("description", ""))})
    for r in schema.device_roles:
        upsert("device role", "dcim.device_roles", {"slug": r["slug"]}, {
            "name": r["name"], "color": r.get("color", "9e9e9e"), "description": marked(r.get("description", ""))})
    for dt in schema.device_types:
        dtype = upsert("device type", "dcim.device_types", {"slug": dt["slug"]}, {
            "model": dt["model"], "manufacturer": ref("dcim.manufacturers", slug=dt["manufacturer"]),
            "part_number": dt.get("part_number", ""), "u_height": dt.get("u_height", 1),
            "description": marked(dt.get("description", ""))})
        for itf in dt["interfaces"]:
            desired = {"type": itf["type"], "mgmt_only": bool(itf.get("mgmt_only", False)),
                       "description": marked(itf.get("description", ""))}
            label = f"{dt['slug']}/{itf['name']}"
            if dtype is None:  # dry run of a type that does not exist yet
                changes.append(diff("interface template", label, desired, None))
                continue
            existing = nb.get_object("dcim.interface_templates", device_type_id=dtype["id"], name=itf["name"])
            change = diff("interface template", label, desired, existing)
            changes.append(change)
            if write and change.action is Action.CREATE:
                nb.create_object("dcim.interface_templates", {"device_type": dtype["id"], "name": itf["name"],
                                                              **desired})
            elif write and change.action is Action.UPDATE:
                nb.update_object("dcim.interface_templates", existing["id"], desired)  # type: ignore[index]
    for cc in schema.config_contexts:
        ids = [i for i in (ref("dcim.device_types", slug=s) for s in cc.get("device_types", [])) if i]
        upsert("config context", "extras.config_contexts", {"name": cc["name"]}, {
            "weight": cc.get("weight", 1000), "description": marked(cc.get("description", "")),
            "device_types": ids, "data": cc["data"]})
    return changes


__all__ = ["ObjectStore", "apply_schema", "plan_schema"]
