"""The schema applied through the adapter's object calls (bringup.netbox.schema_apply):
created in dependency order, drift on our objects updated, a foreign conflict refused
before anything is written, a dry run writing nothing, a second apply changing nothing."""

from __future__ import annotations

import itertools

import pytest

from bringup.errors import ConflictError
from bringup.netbox.schema import MARK, Action, Schema, load_schema
from bringup.netbox.schema_apply import apply_schema, plan_schema


class Objects:
    """NetBox's objects by endpoint, behind the adapter's get/create/update calls."""

    def __init__(self) -> None:
        self.by_endpoint: dict[str, list[dict]] = {}
        self.writes: list[tuple[str, str, dict]] = []
        self.ids = itertools.count(1)

    def get_object(self, endpoint, **key):
        found = [o for o in self.by_endpoint.get(endpoint, []) if all(o.get(k) == v for k, v in key.items())]
        assert len(found) <= 1
        return dict(found[0]) if found else None

    def create_object(self, endpoint, fields):
        obj = {"id": next(self.ids), **fields}
        if endpoint == "dcim.interface_templates":
            obj["device_type_id"] = fields["device_type"]
        self.by_endpoint.setdefault(endpoint, []).append(obj)
        self.writes.append(("create", endpoint, fields))
        return dict(obj)

    def update_object(self, endpoint, obj_id, fields):
        obj = next(o for o in self.by_endpoint[endpoint] if o["id"] == obj_id)
        obj.update(fields)
        self.writes.append(("update", endpoint, fields))


def small_schema() -> Schema:
    return Schema(
        choice_sets=[{"name": "stages", "choices": [["planned", "Planned"]]}],
        custom_fields=[{"name": "bringup_stage", "type": "select", "choice_set": "stages"}],
        tags=[{"name": "quarantine", "slug": "quarantine"}],
        manufacturers=[{"name": "Acme", "slug": "acme"}],
        device_roles=[{"name": "GPU server", "slug": "gpu-server"}],
        device_types=[{"manufacturer": "acme", "model": "X1", "slug": "x1",
                       "interfaces": [{"name": "eth0", "type": "100gbase-x-qsfp28"}]}],
        config_contexts=[{"name": "x1", "device_types": ["x1"], "data": {"gpus": 8}}])


def test_a_first_apply_creates_everything_in_dependency_order_and_a_second_changes_nothing():
    nb = Objects()
    changes = apply_schema(nb, small_schema())
    assert {c.action for c in changes} == {Action.CREATE}
    order = [endpoint for _w, endpoint, _f in nb.writes]
    assert order == ["extras.custom_field_choice_sets", "extras.custom_fields", "extras.tags", "dcim.manufacturers",
                     "dcim.device_roles", "dcim.device_types", "dcim.interface_templates", "extras.config_contexts"]
    stages = nb.get_object("extras.custom_field_choice_sets", name="stages")
    assert nb.get_object("extras.custom_fields", name="bringup_stage")["choice_set"] == stages["id"]
    x1 = nb.get_object("dcim.device_types", slug="x1")
    assert nb.get_object("extras.config_contexts", name="x1")["device_types"] == [x1["id"]]
    assert nb.get_object("dcim.interface_templates", device_type_id=x1["id"], name="eth0")
    nb.writes.clear()
    assert {c.action for c in apply_schema(nb, small_schema())} == {Action.NOOP}
    assert nb.writes == []


def test_drift_on_our_object_is_updated_with_only_its_object_touched():
    nb = Objects()
    apply_schema(nb, small_schema())
    nb.by_endpoint["extras.tags"][0]["color"] = "00ff00"     # someone recoloured our tag
    nb.writes.clear()
    changes = [c for c in apply_schema(nb, small_schema()) if c.action is not Action.NOOP]
    assert [(c.action, c.kind, c.key) for c in changes] == [(Action.UPDATE, "tag", "quarantine")]
    assert [(w, e) for w, e, _f in nb.writes] == [("update", "extras.tags")]
    assert nb.get_object("extras.tags", slug="quarantine")["color"] == "9e9e9e"


def test_a_foreign_object_in_the_way_is_a_conflict_and_nothing_is_written():
    nb = Objects()
    nb.by_endpoint["extras.tags"] = [{"id": 99, "slug": "quarantine", "name": "quarantine", "color": "ff0000",
                                      "description": "made by hand"}]
    with pytest.raises(ConflictError, match="tag quarantine") as err:
        apply_schema(nb, small_schema())
    assert nb.writes == [] and MARK in err.value.hint


def test_a_dry_run_and_a_plan_write_nothing():
    nb = Objects()
    planned = plan_schema(nb, small_schema())
    assert apply_schema(nb, small_schema(), dry_run=True) == planned
    assert nb.writes == []
    # a device type that does not exist yet still lists its interface templates
    assert ("interface template", "x1/eth0") in {(c.kind, c.key) for c in planned}


def test_the_repositorys_schema_applies_and_then_stands():
    nb = Objects()
    first = apply_schema(nb, load_schema())
    assert first and all(c.action is Action.CREATE for c in first)
    assert all(c.action is Action.NOOP for c in apply_schema(nb, load_schema()))
