"""NetBox schema as code: the desired objects, and the pure diff against what exists.

The desired state is read from the repository's ``netbox/`` folder. Each object is
compared field by field with the existing NetBox object of the same natural key
(``name`` or ``slug``): missing objects are created; objects we manage (their
description carries :data:`MARK`) are updated when they drifted; an existing object that
differs and is *not* ours is a conflict, reported and never overwritten.
:mod:`bringup.netbox.schema_apply` walks the schema and writes it through the adapter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from bringup.errors import ConfigError
from bringup.lifecycle.engine import choices as lifecycle_choices
from bringup.sku import SCHEMA_DIR
from bringup.yamlio import load_file

MARK = "[managed by bringup]"


def marked(description: str) -> str:
    description = (description or "").strip()
    return f"{description} {MARK}".strip() if not description.endswith(MARK) else description


class Action(StrEnum):
    CREATE = "create"
    UPDATE = "update"
    NOOP = "noop"
    CONFLICT = "conflict"


@dataclass
class Change:
    kind: str              # "custom field", "device type"...
    key: str               # its natural key
    action: Action
    fields: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # name -> (existing, desired)

    def describe(self) -> str:
        diff = ", ".join(f"{k}: {old!r} -> {new!r}" for k, new_old in self.fields.items()
                         for old, new in [new_old])
        return f"{self.action.value:8} {self.kind} {self.key}" + (f" ({diff})" if diff else "")


def _norm(value: Any) -> Any:
    """Bring an existing NetBox value and a desired value to comparable form."""
    if isinstance(value, dict):
        if set(value) >= {"value", "label"}:
            return value["value"]            # choice fields read back as {value, label}
        if "id" in value and len(value) > 1 and ("url" in value or "display" in value):
            return value["id"]               # nested object
        return {k: _norm(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_norm(v) for v in value]
        if all(isinstance(i, (int, str)) for i in items):
            return sorted(items, key=str)
        return items
    return value


def diff(kind: str, key: str, desired: dict[str, Any], existing: dict[str, Any] | None) -> Change:
    """Compare only the fields we set; NetBox adds many of its own."""
    if existing is None:
        return Change(kind, key, Action.CREATE, {k: (None, v) for k, v in desired.items()})
    changed = {}
    for name, want in desired.items():
        have = existing.get(name)
        if _norm(have) != _norm(want) and not (have in (None, "", [], {}) and want in (None, "", [], {})):
            changed[name] = (_norm(have), _norm(want))
    if not changed:
        return Change(kind, key, Action.NOOP)
    ours = str(existing.get("description") or "").endswith(MARK)
    return Change(kind, key, Action.UPDATE if ours else Action.CONFLICT, changed)


@dataclass
class Schema:
    choice_sets: list[dict]
    custom_fields: list[dict]
    tags: list[dict]
    manufacturers: list[dict]
    device_roles: list[dict]
    device_types: list[dict]
    config_contexts: list[dict]


REQUIRED = {
    "choice_sets": ("name", "choices"),
    "custom_fields": ("name", "type"),
    "tags": ("name", "slug"),
    "manufacturers": ("name", "slug"),
    "device_roles": ("name", "slug"),
}


def load_schema(schema_dir: Path = SCHEMA_DIR) -> Schema:
    doc = load_file(schema_dir / "schema.yaml")
    data = doc.data or {}
    for section, keys in REQUIRED.items():
        items = data.get(section, [])
        if not isinstance(items, list):
            raise ConfigError(f"{doc.where((section,))}: {section} must be a list")
        for i, item in enumerate(items):
            for k in keys:
                if not isinstance(item, dict) or k not in item:
                    raise ConfigError(f"{doc.where((section, i))}: {section}[{i}] needs {k!r}")
    for cs in data.get("choice_sets", []):
        if cs["choices"] == "lifecycle":
            cs["choices"] = [list(c) for c in lifecycle_choices()]
    choice_names = {c["name"] for c in data.get("choice_sets", [])}
    for i, cf in enumerate(data.get("custom_fields", [])):
        if cf.get("choice_set") and cf["choice_set"] not in choice_names:
            raise ConfigError(f"{doc.where(('custom_fields', i, 'choice_set'))}: custom field {cf['name']} "
                              f"uses unknown choice set {cf['choice_set']!r}")
    device_types = []
    for path in sorted((schema_dir / "device-types").glob("*.yaml")):
        dt = load_file(path)
        for k in ("manufacturer", "model", "slug", "interfaces"):
            if k not in (dt.data or {}):
                raise ConfigError(f"{path}: device type needs {k!r}")
        device_types.append(dt.data)
    contexts = []
    for path in sorted((schema_dir / "config-contexts").glob("*.yaml")):
        cc = load_file(path)
        for k in ("name", "data"):
            if k not in (cc.data or {}):
                raise ConfigError(f"{path}: config context needs {k!r}")
        contexts.append(cc.data)
    return Schema(data.get("choice_sets", []), data.get("custom_fields", []), data.get("tags", []),
                  data.get("manufacturers", []), data.get("device_roles", []), device_types, contexts)
