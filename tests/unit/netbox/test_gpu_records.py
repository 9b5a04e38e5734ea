"""A quarantined GPU's inventory item (bringup.netbox.gpu_records): its name and index, the
bodies sent, the records read back, and how many requests a call costs, against an
in-memory stand-in for NetBox's inventory item list (no socket)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bringup.errors import NetBoxRequestError
from bringup.netbox import gpu_records as g


# --- names ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name, index", [("GPU 3", 3), ("GPU 0", 0), ("gpu3", 3), (" GPU  12 ", 12)])
def test_an_items_name_gives_its_nvml_index(name, index):
    assert g.gpu_index(name) == index


@pytest.mark.parametrize("name", ["GPU x", "GPU", "GPU -1", "GPU 3a", "NIC 3", "", None, "GPU 1.5"])
def test_a_name_without_an_index_gives_none(name):
    assert g.gpu_index(name) is None


def test_item_name_round_trips_and_refuses_what_is_no_index():
    assert [g.gpu_index(g.item_name(i)) for i in (0, 3, 7)] == [0, 3, 7]
    assert g.item_name(3) == "GPU 3"
    for bad in (-1, True, "3", 3.0):
        with pytest.raises(ValueError):
            g.item_name(bad)


# --- bodies ---------------------------------------------------------------------------------
def test_a_new_quarantined_gpu_is_one_post_with_everything():
    body = g.create_body(7, 3, reason="XID 79: fell off the bus", code="xid-79", serial="1654922000123")
    assert body == {"device": 7, "name": "GPU 3", "status": "failed", "description": "XID 79: fell off the bus",
                    "tags": [{"slug": g.TAG}], "custom_fields": {g.FINDING_FIELD: "xid-79"},
                    "serial": "1654922000123"}
    assert "serial" not in g.create_body(7, 3, reason="r", code="c")   # unknown: left empty


def test_a_long_reason_is_cut_to_netboxs_column_and_a_long_serial_left_out():
    body = g.create_body(7, 0, reason="x " * 300, code="c", serial="S" * 51)
    assert len(body["description"]) == g.DESCRIPTION_MAX and body["description"].endswith("…")
    assert "serial" not in body        # cut short it would name another GPU
    assert g.short("a\nb   c") == "a b c"


def test_an_item_already_quarantined_as_asked_needs_no_write():
    item = {"id": 5, "name": "GPU 3", "status": {"value": "failed", "label": "Failed"}, "description": "r",
            "serial": "S1", "tags": [{"slug": g.TAG}, {"slug": "mine"}], "custom_fields": {g.FINDING_FIELD: "xid-79"}}
    assert g.failed_changes(item, reason="r", code="xid-79", serial="S1") == {}
    assert g.failed_changes(item, reason="r", code="xid-79") == {}    # a serial not known keeps the one there
    assert g.failed_changes(item, reason="r2", code="xid-48") == {"description": "r2",
                                                                 "custom_fields": {g.FINDING_FIELD: "xid-48"}}


def test_an_operators_item_becomes_quarantined_keeping_its_tags():
    item = {"id": 5, "name": "GPU 3", "status": {"value": "active"}, "description": "", "serial": "",
            "tags": [{"slug": "mine"}], "custom_fields": {}}
    assert g.failed_changes(item, reason="r", code="c", serial="S9") == {
        "status": "failed", "description": "r", "custom_fields": {g.FINDING_FIELD: "c"},
        "tags": [{"slug": g.TAG}, {"slug": "mine"}], "serial": "S9"}


def test_release_goes_active_untagged_with_the_note():
    item = {"id": 5, "name": "GPU 3", "status": "failed", "serial": "S1", "tags": [{"slug": g.TAG}, {"slug": "mine"}]}
    assert g.quarantined(item)
    assert g.release_changes(item, note="reseated, re-test passed") == {
        "status": "active", "description": "released: reseated, re-test passed",
        "custom_fields": {g.FINDING_FIELD: None}, "tags": [{"slug": "mine"}]}
    assert g.release_changes(item, note="RMA", serial="S2")["serial"] == "S2"
    assert not g.quarantined({**item, "tags": []})           # an operator's failed item is theirs
    assert not g.quarantined({**item, "status": "active"})


# --- records --------------------------------------------------------------------------------
def _item(i, device, name, *, node="n", status="failed"):
    return {"id": i, "device": {"id": device, "name": f"{node}{device}"}, "name": name, "status": {"value": status},
            "serial": f"S{i}", "description": "why", "tags": [{"slug": g.TAG}],
            "custom_fields": {g.FINDING_FIELD: "xid-79"}}


def test_records_by_device_skip_a_malformed_item_as_a_finding():
    items = [_item(3, 1, "GPU 5"), _item(1, 1, "GPU 2"), _item(2, 2, "GPU x")]
    out, findings = g.records_by_device(items, [1, 2, 9])
    assert set(out) == {1, 2, 9} and out[2] == [] and out[9] == []
    assert [(r.index, r.item_id, r.node, r.code, r.serial) for r in out[1]] == [
        (2, 1, "n1", "xid-79", "S1"), (5, 3, "n1", "xid-79", "S3")]
    assert len(findings) == 1 and "#2" in findings[0] and "'GPU x'" in findings[0]


def test_a_gpu_held_by_two_items_counts_once():
    out, findings = g.records_by_device([_item(8, 1, "GPU 2"), _item(4, 1, "gpu2")])
    assert [r.item_id for r in out[1]] == [4]
    assert "several" in findings[0]


def test_chunks_and_next_start():
    assert list(g.chunks(None)) == [None]
    assert list(g.chunks([3, 1, 3, 2], size=2)) == [[3, 1], [2]]
    assert g.next_start({"next": "http://nb/api/dcim/inventory-items/?start=41&limit=20"}, 0) == 41
    assert g.next_start({"next": None}, 0) is None
    assert g.next_start({"next": "http://nb/api/x/?start=5"}, 5) is None   # no progress: stop


# --- requests, against a stand-in list ------------------------------------------------------
class Items:
    """NetBox's inventory item list with its cursor paging (a page of at most ``cap``, as
    MAX_PAGE_SIZE does), filters and ``?fields=`` (which limits what a write accepts)."""

    def __init__(self, cap: int = 1000) -> None:
        self.rows: dict[int, dict] = {}
        self.sent: list[tuple[str, str, dict]] = []
        self.cap, self.next_id = cap, 1

    def _raw(self, method, path, *, json=None, params=None, headers=None, allow=()):
        params = dict(params or {})
        self.sent.append((method, path, dict(params)))
        wanted = set(params.pop("fields", "").split(",")) - {""}
        if method == "GET":
            return self._list(params)
        body = {k: v for k, v in json.items() if k in wanted}
        if method == "POST":
            if "custom_fields" in body and set(body["custom_fields"]) - {g.FINDING_FIELD}:
                return self._refuse("Unknown field name in custom field data")
            row = {"id": self.next_id, "device": {"id": body["device"], "name": f"node{body['device']}"},
                   "status": {"value": "active"}, "serial": "", "description": "", "tags": [], "custom_fields": {}}
            self.next_id += 1
        else:
            row = self.rows[int(path.rstrip("/").rsplit("/", 1)[1])]
        for k, v in body.items():
            if k == "status":
                row[k] = {"value": v, "label": v.title()}
            elif k == "custom_fields":
                row[k] = {**row[k], **v}
            elif k != "device":
                row[k] = v
        self.rows[row["id"]] = row
        return SimpleNamespace(json=lambda: dict(row))

    @staticmethod
    def _refuse(text):
        raise NetBoxRequestError(f"NetBox rejected the request (400): {text}")

    def _list(self, q):
        def match(r):
            ids = q.get("device_id")
            return ((ids is None or r["device"]["id"] in (ids if isinstance(ids, list) else [ids]))
                    and q.get("name", r["name"]) == r["name"]
                    and q.get("status", r["status"]["value"]) == r["status"]["value"]
                    and ("tag" not in q or q["tag"] in [t["slug"] for t in r["tags"]]))
        limit = min(int(q["limit"]), self.cap)
        page = [r for i, r in sorted(self.rows.items()) if i >= int(q["start"]) and match(r)][:limit]
        nxt = f"http://nb/api/dcim/inventory-items/?start={page[-1]['id'] + 1}" if len(page) == limit else None
        return SimpleNamespace(json=lambda: {"count": None, "next": nxt, "results": page})

    def methods(self):
        return [m for m, _, _ in self.sent]


def test_mark_is_idempotent_one_item_and_no_write_for_a_repeat():
    nb = Items()
    rec = g.mark_gpu_failed(nb, 7, "gpu-r01-n01", 3, reason="XID 79", code="xid-79", serial="S3")
    assert nb.methods() == ["GET", "POST"]
    assert rec == g.GpuRecord(7, "gpu-r01-n01", 3, "S3", "failed", "XID 79", "xid-79", item_id=1)
    # every field written is one ?fields= lets NetBox accept
    _, _, params = nb.sent[1]
    assert {"device", "name", "status", "tags", "custom_fields", "serial"} <= set(params["fields"].split(","))
    again = g.mark_gpu_failed(nb, 7, "gpu-r01-n01", 3, reason="XID 79", code="xid-79")
    assert again == rec and nb.methods() == ["GET", "POST", "GET"] and len(nb.rows) == 1
    newer = g.mark_gpu_failed(nb, 7, "gpu-r01-n01", 3, reason="row remap failed", code="row-remap")
    assert nb.methods()[-1] == "PATCH" and len(nb.rows) == 1
    assert (newer.reason, newer.code, newer.serial, newer.item_id) == ("row remap failed", "row-remap", "S3", 1)


def test_failed_gpus_is_one_request_per_page_and_chunk():
    nb = Items(cap=2)
    for dev in (7, 8):
        for idx in (1, 3):
            g.mark_gpu_failed(nb, dev, f"node{dev}", idx, reason="r", code="c")
    nb.sent.clear()
    out = g.failed_gpus(nb, [7, 8, 9])
    assert {d: [r.index for r in rs] for d, rs in out.items()} == {7: [1, 3], 8: [1, 3], 9: []}
    assert out[8][0].node == "node8"
    gets = [p for m, _, p in nb.sent]
    assert len(gets) == 3        # 4 items in pages of at most 2 (the cap), the last one empty
    assert all(p["tag"] == g.TAG and p["status"] == "failed" and p["device_id"] == [7, 8, 9] for p in gets)
    nb.sent.clear()
    g.failed_gpus(nb, list(range(100, 350)))   # none of them has an item: one page a chunk
    assert [len(p["device_id"]) for _, _, p in nb.sent] == [100, 100, 50]
    nb.sent.clear()
    assert set(g.failed_gpus(nb)) == {7, 8} and "device_id" not in nb.sent[0][2]
    assert g.failed_gpus(nb, []) == {}


def test_release_then_a_second_release_is_false():
    nb = Items()
    g.mark_gpu_failed(nb, 7, "n", 3, reason="r", code="c")
    assert g.release_gpu(nb, 7, 3, note="reseated") is True
    row = nb.rows[1]
    assert row["status"]["value"] == "active" and row["tags"] == [] and row["description"] == "released: reseated"
    assert row["custom_fields"][g.FINDING_FIELD] is None
    assert g.failed_gpus(nb, [7]) == {7: []}
    assert g.release_gpu(nb, 7, 3, note="again") is False
    assert g.release_gpu(nb, 7, 5, note="never quarantined") is False
    # quarantined again later: the same item, not a second one
    assert g.mark_gpu_failed(nb, 7, "n", 3, reason="r", code="c").item_id == 1 and len(nb.rows) == 1


def test_a_malformed_item_is_skipped_and_reported():
    nb = Items()
    g.mark_gpu_failed(nb, 7, "n", 3, reason="r", code="c")
    nb.rows[2] = {**nb.rows[1], "id": 2, "name": "GPU three"}
    findings: list[str] = []
    out = g.failed_gpus(nb, [7], findings=findings)
    assert [r.index for r in out[7]] == [3] and len(findings) == 1 and "GPU three" in findings[0]


def test_a_netbox_without_the_schema_says_to_apply_it():
    class Unschemed(Items):
        def _raw(self, method, path, **kw):
            if method == "POST":
                raise NetBoxRequestError(f"NetBox rejected the request (400): unknown field {g.FINDING_FIELD}")
            return super()._raw(method, path, **kw)
    with pytest.raises(NetBoxRequestError, match="bringup netbox apply"):
        g.mark_gpu_failed(Unschemed(), 7, "n", 3, reason="r", code="c")
