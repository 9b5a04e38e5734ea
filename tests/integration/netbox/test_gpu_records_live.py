"""A quarantined GPU as an inventory item of its node, on a real NetBox 4.7
(bringup.netbox.gpu_records): marked once however often it is asked, listed for several
devices in one request, released, and every change in NetBox's change log."""

import pytest

from bringup.netbox import gpu_records as g
from bringup.netbox.schema import load_schema
from bringup.netbox.schema_apply import apply_schema
from lab.seed import seed

pytestmark = pytest.mark.integration


@pytest.fixture
def two_nodes(netbox, lab_fleet, skus):
    apply_schema(netbox, load_schema())
    seed(netbox, lab_fleet, skus)
    return netbox.nodes(site="lab-east")[:2]


def _changes(netbox, item_id):
    return sorted(netbox.api.core.object_changes.filter(changed_object_type="dcim.inventoryitem",
                                                        changed_object_id=item_id), key=lambda c: c.id)


def test_a_gpu_marked_failed_listed_and_released(netbox, two_nodes):
    a, b = two_nodes
    rec = g.mark_gpu_failed(netbox, a.id, a.name, 3, reason="XID 79 on GPU 3: fell off the bus", code="xid-79",
                            serial="1654922000003")
    assert (rec.device_id, rec.node, rec.index, rec.status, rec.code) == (a.id, a.name, 3, "failed", "xid-79")
    item = netbox.api.dcim.inventory_items.get(rec.item_id)
    assert (item.name, item.status.value, item.serial, item.device.id) == ("GPU 3", "failed", "1654922000003", a.id)
    assert [t.slug for t in item.tags] == [g.TAG] and item.custom_fields[g.FINDING_FIELD] == "xid-79"

    # asked again (the watch sees the same XID on its next look): the one item, nothing written
    again = g.mark_gpu_failed(netbox, a.id, a.name, 3, reason="XID 79 on GPU 3: fell off the bus", code="xid-79")
    assert again == rec
    assert len(list(netbox.api.dcim.inventory_items.filter(device_id=a.id, name="GPU 3"))) == 1
    assert [c.action.value for c in _changes(netbox, rec.item_id)] == ["create"]

    other = g.mark_gpu_failed(netbox, b.id, b.name, 0, reason="row remap failure", code="row-remap")
    failed = g.failed_gpus(netbox, [a.id, b.id])
    assert set(failed) == {a.id, b.id}
    assert [(r.index, r.node, r.code, r.serial) for r in failed[a.id]] == [(3, a.name, "xid-79", "1654922000003")]
    assert [r.item_id for r in failed[b.id]] == [other.item_id]
    assert set(g.failed_gpus(netbox)) == {a.id, b.id}

    assert g.release_gpu(netbox, a.id, 3, note="reseated; re-test passed") is True
    assert g.release_gpu(netbox, a.id, 3, note="twice") is False
    assert g.release_gpu(netbox, a.id, 5, note="never quarantined") is False
    assert g.failed_gpus(netbox, [a.id, b.id]) == {a.id: [], b.id: failed[b.id]}
    item = netbox.api.dcim.inventory_items.get(rec.item_id)    # kept, as hardware still in the node
    assert (item.status.value, [t.slug for t in item.tags], item.description) == (
        "active", [], "released: reseated; re-test passed")

    changes = _changes(netbox, rec.item_id)
    assert [c.action.value for c in changes] == ["create", "update"]
    release = changes[-1]
    assert (release.prechange_data["status"], release.postchange_data["status"]) == ("failed", "active")
    assert release.prechange_data["custom_fields"][g.FINDING_FIELD] == "xid-79"
    # logged with the device as related object (not serialized, a filter): the device's
    # change log in NetBox's UI shows the GPU's history
    of_device = netbox.api.core.object_changes.filter(related_object_type="dcim.device", related_object_id=a.id,
                                                      changed_object_type="dcim.inventoryitem")
    assert {c.id for c in of_device} == {c.id for c in changes}


def test_a_malformed_item_is_a_finding_not_a_crash(netbox, two_nodes):
    a, _ = two_nodes
    g.mark_gpu_failed(netbox, a.id, a.name, 1, reason="XID 48", code="xid-48")
    netbox.api.dcim.inventory_items.create({"device": a.id, "name": "GPU three", "status": "failed",
                                            "tags": [{"slug": g.TAG}]})
    findings: list[str] = []
    out = g.failed_gpus(netbox, [a.id], findings=findings)
    assert [r.index for r in out[a.id]] == [1]
    assert len(findings) == 1 and "'GPU three'" in findings[0]
