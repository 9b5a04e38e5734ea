"""What the NetBox adapter sends for one device (issue #25): every request on NetBox's
device endpoints costs it a few hundred ms of CPU, so a write is one PATCH (no read
first), answers carry only the fields asked for, and a node's MACs are read only by the
step that compares them."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from bringup.errors import NotFoundError
from bringup.netbox.adapter import NetBox
from bringup.sku import load_skus


class Device:
    """One device behind a stand-in session, with NetBox's ``?fields=`` rule: it limits
    what is serialized *and* what a write accepts (a field left out is dropped silently)."""

    def __init__(self) -> None:
        self.doc = {"id": 7, "status": "planned", "tags": ["pool-a"], "custom_fields": {"bringup_stage": "planned"},
                    "last_updated": "2026-12-07T00:56:15.393642Z"}
        self.sent: list[tuple[str, dict | None, dict | None]] = []
        self.base_url, self.token, self.http_session = "http://nb.test/api", "nbt_abc.secret", self
        self.dcim = SimpleNamespace(devices=SimpleNamespace(get=self._get))

    def _get(self, node_id):   # pynetbox's devices.get: a full read
        self.sent.append(("GET(full)", None, None))
        return SimpleNamespace(tags=[SimpleNamespace(slug=t) for t in self.doc["tags"]])

    def request(self, method, url, json=None, headers=None, params=None):
        bulk = url.endswith("/dcim/devices/")
        self.sent.append((f"{method}(list)" if bulk else method, params, json))
        wanted = set((params or {}).get("fields", "").split(",")) - {""}
        if bulk:   # a bulk write: a list of objects, each naming its id
            json = dict(json[0])
            if json.pop("id") != self.doc["id"]:
                return SimpleNamespace(ok=False, status_code=400, headers={}, json=lambda: {},
                                       text='{"errors":[{"id":9,"errors":{"id":["Object with ID 9 does not exist"]}}]}')
        if method == "PATCH":
            for key, value in (json or {}).items():
                if wanted and key not in wanted:
                    continue
                if key == "custom_fields":
                    self.doc["custom_fields"].update(value)
                elif key == "tags":
                    self.doc["tags"] = [t["slug"] for t in value]
                else:
                    self.doc[key] = value
        out = {k: v for k, v in self.doc.items() if not wanted or k in wanted}
        out = {**out, "tags": [{"slug": t} for t in out.get("tags", [])]} if "tags" in out else out
        if bulk:   # NetBox answers a bulk write with the list of objects written
            answer = [out]
            return SimpleNamespace(ok=True, status_code=200, headers={}, text="", json=lambda: answer)
        return SimpleNamespace(ok=True, status_code=200, headers={"ETag": 'W/"v1"'}, text="", json=lambda: out)


def test_a_write_is_one_patch_that_netbox_takes_whole():
    dev = Device()
    NetBox(dev).update_node(7, stage="discovered", status="staged", fields={"bringup_reason": "x"},
                            add_tags=["reburnin"], tags=["pool-a"])
    # to the device list (a bulk write of one: no filter set built to find the device)
    assert [m for m, _, _ in dev.sent] == ["PATCH(list)"]
    (_, params, (body,)) = dev.sent[0]
    assert body["id"] == 7
    # every field sent is one NetBox accepts; and the device's new version comes back
    assert set(params["fields"].split(",")) == set(body) | {"last_updated"}
    assert dev.doc["status"] == "staged" and dev.doc["tags"] == ["pool-a", "reburnin"]
    assert dev.doc["custom_fields"] == {"bringup_stage": "discovered", "bringup_reason": "x"}


def test_a_change_of_tags_without_the_tags_known_reads_them_first():
    dev = Device()
    NetBox(dev).update_node(7, remove_tags=["pool-a"], add_tags=["quarantine"])
    assert [m for m, _, _ in dev.sent] == ["GET(full)", "PATCH(list)"]
    assert dev.doc["tags"] == ["quarantine"]


def test_a_write_to_a_device_netbox_no_longer_has_is_not_found():
    # NetBox answers a bulk write naming an unknown id with 400 "Object with ID 9 does not exist"
    with pytest.raises(NotFoundError, match="device #9 is gone"):
        NetBox(Device()).update_node(9, stage="discovered")


def test_a_conditional_write_stays_on_the_device_url_for_its_etag():
    dev = Device()
    assert NetBox(dev).set_fields_if_match(7, {"bringup_lease": "x"}, 'W/"v0"') == 'W/"v1"'
    assert [m for m, _, _ in dev.sent] == ["PATCH"]


def test_nothing_to_write_sends_nothing():
    dev = Device()
    NetBox(dev).update_node(7)
    assert dev.sent == []


def test_the_small_read_brings_status_tags_and_fields():
    dev = Device()
    state = NetBox(dev).device_state(7)
    assert dev.sent == [("GET", {"fields": "id,status,tags,custom_fields"}, None)]
    assert (state.etag, state.status, state.tags) == ('W/"v1"', "planned", ["pool-a"])
    assert state.custom_fields == {"bringup_stage": "planned"}


class Listing:
    """pynetbox's device and interface listings, counting the requests."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        dev = SimpleNamespace(id=7, name="n1", rack=SimpleNamespace(name="r1"), site=SimpleNamespace(slug="s"),
                              config_context={"bringup": load_skus()["hgx-h100-80gb"].model_dump()},
                              custom_fields={}, status="planned", oob_ip=None, primary_ip4=None,
                              serial="", url="http://nb.test/api/dcim/devices/7/", tags=[])
        itf = SimpleNamespace(name="cx0", device=SimpleNamespace(id=7),
                              primary_mac_address=SimpleNamespace(mac_address="02:00:00:00:00:0A"))
        self.dcim = SimpleNamespace(devices=SimpleNamespace(filter=lambda **kw: self._list("devices", [dev])),
                                    interfaces=SimpleNamespace(filter=lambda **kw: self._list("interfaces", [itf])))

    def _list(self, what, rows):
        self.calls.append(what)
        return rows


def test_a_node_read_without_macs_skips_the_interfaces_and_says_so():
    api = Listing()
    (rec,) = NetBox(api, graphql=False).nodes(names=["n1"], macs=False)
    assert api.calls == ["devices"] and rec.macs is None   # None: not read, never "no MACs"
    (rec,) = NetBox(api, graphql=False).nodes(names=["n1"], macs=True)
    assert rec.macs == {"cx0": "02:00:00:00:00:0a"}
    assert NetBox(api, graphql=False).macs(7) == {"cx0": "02:00:00:00:00:0a"}


FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "netbox" / "bulk-patch-netbox-4.7.json"


def test_a_write_returns_every_custom_field_as_netbox_answered():
    dev = Device()
    dev.doc["custom_fields"]["bringup_lease"] = {"holder": "run-a"}
    fields, version = NetBox(dev).update_node(7, stage="discovered", fields={"bringup_reason": "x"})
    assert fields == {"bringup_stage": "discovered", "bringup_reason": "x", "bringup_lease": {"holder": "run-a"}}
    assert version == 'W/"2026-12-07T00:56:15.393642+00:00"'   # NetBox's ETag of that last_updated


def test_a_write_of_no_custom_field_returns_none():
    assert NetBox(Device()).update_node(7, status="staged") is None


def test_netbox_47s_answer_is_read_with_its_choice_fields_flattened():
    """The answer as NetBox 4.7.3 gave it (select fields as value and label)."""
    doc = json.loads(FIXTURE.read_text())
    dev = Device()
    dev.request = lambda *a, **k: SimpleNamespace(ok=True, status_code=200, headers={}, text="",
                                                  json=lambda: doc["response"])
    after, version = NetBox(dev).update_node(3, fields={"bringup_reason": "held in planned: example"})
    assert after["bringup_stage"] == "planned" and after["burnin_status"] == "pending"
    assert after["bringup_reason"] == "held in planned: example" and "bringup_lease" in after
    stamp = doc["response"][0]["last_updated"]
    assert stamp.endswith("Z") and version == f'W/"{stamp[:-1]}+00:00"'


@pytest.mark.parametrize("answer", [{}, [], [{"id": 8, "custom_fields": {}}], [{"id": 3}], "ok", [1, 2]])
def test_an_answer_of_another_shape_is_unknown_not_current(answer):
    """Whatever NetBox answers that is not the device written, with its fields, tells
    nothing about what it holds: the caller reads as before."""
    dev = Device()
    dev.request = lambda *a, **k: SimpleNamespace(ok=True, status_code=200, headers={}, text="", json=lambda: answer)
    assert NetBox(dev).update_node(3, fields={"bringup_reason": "x"}) is None
