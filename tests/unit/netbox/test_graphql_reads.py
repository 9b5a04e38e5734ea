"""The adapter's GraphQL reads (bringup/netbox/graphql.py) on NetBox 4.7's recorded
answers: the same node records as the REST reads, one request instead of two, and REST
again where a NetBox does not serve the query."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from bringup.errors import NetBoxRequestError, NetBoxUnavailable, NotFoundError
from bringup.netbox import graphql
from bringup.netbox.adapter import NetBox
from bringup.netbox.devices import version_of
from bringup.sku import load_skus

REC = json.loads((Path(__file__).parents[2] / "fixtures" / "netbox" / "graphql-netbox-4.7.json").read_text())


class Api:
    """A pynetbox-like API whose session answers POST /graphql/ from ``answers`` (in
    turn) and whose REST listing counts its calls."""

    def __init__(self, *answers: tuple[int, object]) -> None:
        self.answers, self.posts, self.rest = list(answers), [], 0
        self.base_url, self.token, self.http_session = "http://nb.test/api", "nbt_abc.secret", self
        dev = SimpleNamespace(id=7, name="n1", rack=SimpleNamespace(name="r1"), site=SimpleNamespace(slug="s"),
                              config_context={"bringup": load_skus()["hgx-h100-80gb"].model_dump()}, custom_fields={"bringup_stage": "planned"}, status="planned",
                              oob_ip=None, primary_ip4=None, serial="", url="http://nb.test/api/dcim/devices/7/", tags=[])
        self.dcim = SimpleNamespace(devices=SimpleNamespace(filter=lambda **kw: self._rest([dev])),
                                    interfaces=SimpleNamespace(filter=lambda **kw: []))

    def _rest(self, rows):
        self.rest += 1
        return rows

    def request(self, method, url, json=None, headers=None, params=None):
        assert (method, url) == ("POST", "http://nb.test/graphql/")
        self.posts.append(json)
        status, doc = self.answers.pop(0)
        return SimpleNamespace(status_code=status, ok=status < 400, text=str(doc), json=lambda: doc)


def test_a_node_is_one_query_and_the_record_is_what_netbox_holds():
    rec = REC["nodes_query"]
    api = Api((rec["status"], rec["answer"]))
    (node,) = NetBox(api).nodes(site="lab-east", names=["gpu-r02-n01"], macs=True)
    # one page: every named node found (the recorded answer is NetBox's to the same query
    # before it asked for a page; the page clause does not change an answer's shape)
    assert len(api.posts) == 1 and api.rest == 0
    assert api.posts[0]["variables"] == rec["variables"]
    assert "pagination: {start: 0, limit: 500}" in api.posts[0]["query"]
    doc = rec["answer"]["data"]["device_list"][0]
    assert (node.id, node.name, node.site, node.rack) == (int(doc["id"]), "gpu-r02-n01", "lab-east", "r02")
    assert node.sku.sku == doc["config_context"]["bringup"]["sku"]
    assert node.pool == doc["config_context"]["bringup_pool"]
    assert node.bmc_address == doc["oob_ip"]["address"].split("/")[0]
    assert node.stage == doc["custom_fields"]["bringup_stage"]["value"]
    assert node.url == f"http://nb.test/dcim/devices/{doc['id']}/"
    # MACs lower case, interface by interface, the BMC's included
    assert node.macs and all(m == m.lower() for m in node.macs.values())
    assert len(node.macs) == len([i for i in doc["interfaces"] if i["primary_mac_address"]])


def test_without_macs_the_query_asks_for_no_interfaces_and_says_so():
    query, _ = graphql.nodes_query("gpu-server", names=["n1"], macs=False)
    assert "interfaces" not in query
    doc = {k: v for k, v in REC["nodes_query"]["answer"]["data"]["device_list"][0].items() if k != "interfaces"}
    (node,) = NetBox(Api((200, {"data": {"device_list": [doc]}}))).nodes(names=["gpu-r02-n01"], macs=False)
    assert node.macs is None   # not read, never "no MACs"


def test_status_and_rack_are_matched_here_and_missing_names_are_named():
    rec, end = REC["nodes_query"]["answer"], (200, {"data": {"device_list": []}})
    assert NetBox(Api((200, rec), end)).nodes(status="planned") == []   # the recorded node is not planned
    assert NetBox(Api((200, rec), end)).nodes(rack="r01") == []
    with pytest.raises(NotFoundError, match="gpu-x"):
        NetBox(Api((200, rec), end)).nodes(names=["gpu-r02-n01", "gpu-x"])


def test_a_netbox_with_graphql_off_is_read_over_rest_from_then_on():
    api = Api((404, {"detail": "Not found."}))
    nb = NetBox(api)
    assert nb.reads_through == "unknown"
    assert [n.name for n in nb.nodes()] == ["n1"] and api.rest == 1
    assert nb.reads_through == "rest"
    nb.nodes()
    assert len(api.posts) == 1 and api.rest == 2   # asked once


def test_a_query_this_netbox_refuses_falls_back_to_rest_once_but_is_transient_after_it_answered():
    refused = (REC["refused_filter"]["status"], REC["refused_filter"]["answer"])
    api = Api(refused)
    assert [n.name for n in NetBox(api).nodes()] == ["n1"] and api.rest == 1
    api = Api((200, REC["nodes_query"]["answer"]), (200, {"data": {"device_list": []}}), refused)
    nb = NetBox(api)
    nb.nodes()
    with pytest.raises(NetBoxUnavailable, match="cannot represent"):   # retried by the callers' outage budget
        nb.nodes()


def test_a_device_now_is_one_small_query_with_its_version():
    rec = REC["state_query"]
    api = Api((rec["status"], rec["answer"]))
    state = NetBox(api).device_now(7)
    doc = rec["answer"]["data"]["device_list"][0]
    assert api.posts == [{"query": rec["query"], "variables": rec["variables"]}]
    assert state.etag == f'W/"{doc["last_updated"]}"'   # NetBox's ETag of it (etag-netbox-4.7.json)
    assert state.status == doc["status"] and state.tags == [t["slug"] for t in doc["tags"]]
    assert state.custom_fields["bringup_stage"] == doc["custom_fields"]["bringup_stage"]["value"]


def test_a_device_gone_is_not_found():
    rec = REC["state_query_unknown_id"]
    with pytest.raises(NotFoundError, match="#99999"):
        NetBox(Api((rec["status"], rec["answer"]))).device_now(99999)


@pytest.mark.parametrize("doc", [{"data": {"device_list": None}}, {"data": {}}, ["not", "json"]])
def test_an_answer_without_a_device_list_is_a_clear_error(doc):
    with pytest.raises(NetBoxRequestError, match="device_list"):
        graphql.answer(200, doc, "")


def _dev(i: int, **kw) -> dict:
    doc = json.loads(json.dumps(REC["nodes_query"]["answer"]["data"]["device_list"][0]))
    return {**doc, "id": str(i), "name": f"n{i}", **kw}


def test_a_site_is_read_page_by_page_until_an_empty_page():
    """NetBox caps a page at its MAX_PAGE_SIZE without a word (here: 2 devices), so a
    short page is no end: the list ends with an empty page."""
    pages = [(200, {"data": {"device_list": [_dev(3), _dev(5)]}}),
             (200, {"data": {"device_list": [_dev(9)]}}), (200, {"data": {"device_list": []}})]
    api = Api(*pages)
    assert [n.name for n in NetBox(api).nodes(site="lab-east")] == ["n3", "n5", "n9"]
    assert [p["query"].split("pagination: ")[1].split("}")[0] for p in api.posts] == [
        "{start: 0, limit: 500", "{start: 6, limit: 500", "{start: 10, limit: 500"]


def test_named_nodes_need_no_empty_page_once_all_are_found():
    api = Api((200, {"data": {"device_list": [_dev(3)]}}), (200, {"data": {"device_list": [_dev(5)]}}))
    assert [n.name for n in NetBox(api).nodes(names=["n3", "n5"])] == ["n3", "n5"]
    assert len(api.posts) == 2


def test_a_device_with_a_full_page_of_interfaces_has_its_macs_read_over_rest():
    """A nested list is cut at strawberry-django's default limit (100): such a device's
    MACs come from the REST interface list, never from a list that may be cut."""
    many = [{"name": f"eth{i}", "primary_mac_address": {"mac_address": "02:00:00:00:00:01"}}
            for i in range(graphql.INTERFACES_PAGE)]
    api = Api((200, {"data": {"device_list": [_dev(7, interfaces=many)]}}))
    api.dcim.interfaces = SimpleNamespace(filter=lambda **kw: [SimpleNamespace(
        name="cx0", device=SimpleNamespace(id=7), primary_mac_address=SimpleNamespace(mac_address="02:00:00:00:00:0A"))])
    (node,) = NetBox(api).nodes(names=["n7"], macs=True)
    assert node.macs == {"cx0": "02:00:00:00:00:0a"}


def test_one_devices_macs_are_one_query_and_what_netbox_holds():
    """Discovery's MAC read: NetBox's recorded device with its interfaces (the nodes query
    asks for the same interface fields), as interface name -> MAC, lower case; no REST."""
    doc = REC["nodes_query"]["answer"]["data"]["device_list"][0]
    api = Api((200, {"data": {"device_list": [{"id": doc["id"], "name": doc["name"],
                                               "interfaces": doc["interfaces"]}]}}))
    macs = NetBox(api).macs(int(doc["id"]))
    assert api.rest == 0 and len(api.posts) == 1
    assert api.posts[0]["variables"] == {"id": str(doc["id"])}
    assert graphql.INTERFACE_FIELDS in api.posts[0]["query"]
    assert macs == {i["name"]: i["primary_mac_address"]["mac_address"].lower()
                    for i in doc["interfaces"] if i["primary_mac_address"]}


def test_macs_of_a_device_gone_from_netbox_say_so_and_a_cut_list_is_read_over_rest():
    with pytest.raises(NotFoundError, match="#7 is gone"):
        NetBox(Api((200, {"data": {"device_list": []}}))).macs(7)
    many = [{"name": f"eth{i}", "primary_mac_address": {"mac_address": "02:00:00:00:00:01"}}
            for i in range(graphql.INTERFACES_PAGE)]
    api = Api((200, {"data": {"device_list": [_dev(7, interfaces=many)]}}))
    api.dcim.interfaces = SimpleNamespace(filter=lambda **kw: [SimpleNamespace(
        name="cx0", device=SimpleNamespace(id=7), primary_mac_address=SimpleNamespace(mac_address="02:00:00:00:00:0A"))])
    assert NetBox(api).macs(7) == {"cx0": "02:00:00:00:00:0a"}


def test_nodes_come_in_the_order_the_rest_api_lists_them():
    """GraphQL pages are in id order; NetBox's REST lists devices by naturalized name, and
    callers (selection, batches, tables) must not see the order change with the API."""
    page = [_dev(1, name="gpu-r01-n10"), _dev(2, name="gpu-r02-n01"), _dev(3, name="gpu-r01-n9")]
    api = Api((200, {"data": {"device_list": page}}), (200, {"data": {"device_list": []}}))
    assert [n.name for n in NetBox(api).nodes()] == ["gpu-r01-n9", "gpu-r01-n10", "gpu-r02-n01"]


ETAGS = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "netbox" / "etag-netbox-4.7.json").read_text())


def test_the_version_is_netboxs_etag_from_either_answer():
    """NetBox 4.7 gave this ETag header for the device whose last_updated REST and GraphQL
    gave as recorded: the version made from either is the header."""
    (row,) = ETAGS["graphql_answer"]["data"]["device_list"]
    assert version_of(row["last_updated"]) == ETAGS["etag_header"]
    assert version_of(ETAGS["rest_body"]["last_updated"]) == ETAGS["etag_header"]


@pytest.mark.parametrize("stamp", [None, "", "  ", 17, {"x": 1}])
def test_no_usable_last_updated_is_no_version(stamp):
    assert version_of(stamp) == ""


def test_a_node_read_carries_its_version():
    rec = REC["nodes_query"]
    (node,) = NetBox(Api((rec["status"], rec["answer"]))).nodes(site="lab-east", names=["gpu-r02-n01"], macs=True)
    assert node.version == f'W/"{rec["answer"]["data"]["device_list"][0]["last_updated"]}"'


def test_when_netbox_created_a_device_reads_the_same_from_either_api():
    from bringup.netbox.devices import instant
    assert "created" in graphql.DEVICE_FIELDS.split()
    assert instant("2026-12-07T07:32:20.123456Z") == instant("2026-12-07T07:32:20.123456+00:00") \
        == "2026-12-07T07:32:20.123456+00:00"
    assert instant(None) == ""
