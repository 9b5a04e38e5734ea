"""The lab Kubernetes API stand-in's DRA resources (resource.k8s.io): discovery lists every
version it serves, ResourceSlices are one object in v1 and v1beta2 with the field selectors
the real server indexes, and a DeviceTaintRule's taint is checked and stamped as the real
server does. Pure parts only: no server is started."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from lab.kubeapi import controllers as ctl
from lab.kubeapi.resources import GROUPS, RESOURCES, api_group, api_group_list, find, resource_list
from lab.kubeapi.selectors import SelectorError, parse_field_selector
from lab.kubeapi.store import ApiStatus, Store
from lab.kubeapi.tables import to_table

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "kube"


def test_discovery_lists_every_version_of_resource_k8s_io_preferring_v1():
    group = api_group("resource.k8s.io")
    assert [v["groupVersion"] for v in group["versions"]] == ["resource.k8s.io/v1", "resource.k8s.io/v1beta2"]
    assert group["preferredVersion"]["version"] == "v1"
    listed = {g["name"]: g for g in api_group_list()["groups"]}
    assert listed["resource.k8s.io"]["versions"] == group["versions"]
    assert listed["apps"]["versions"] == [{"groupVersion": "apps/v1", "version": "v1"}]
    assert api_group("storage.k8s.io") is None


def test_every_served_group_version_is_in_discovery_and_back():
    served = {(r.group, r.version) for r in RESOURCES if r.group}
    assert served == {(g, v) for g, vs in GROUPS.items() for v in vs}
    for g, v in served:
        assert resource_list(g, v) is not None


def test_resource_lists_of_resource_k8s_io():
    names = {v: {r["name"]: r for r in resource_list("resource.k8s.io", v)["resources"]} for v in ("v1", "v1beta2")}
    assert set(names["v1"]) == {"resourceslices"}
    assert set(names["v1beta2"]) == {"resourceslices", "devicetaintrules", "devicetaintrules/status"}
    rule = names["v1beta2"]["devicetaintrules"]
    assert (rule["kind"], rule["namespaced"], rule["singularName"]) == ("DeviceTaintRule", False, "devicetaintrule")
    assert names["v1"]["resourceslices"]["namespaced"] is False
    assert resource_list("resource.k8s.io", "v1alpha3") is None


def test_resourceslices_are_one_object_in_both_versions():
    v1, v1beta2 = find("resource.k8s.io", "v1", "resourceslices"), find("resource.k8s.io", "v1beta2", "resourceslices")
    store = Store()
    doc = yaml.safe_load((FIX / "resourceslice-gpu.yaml").read_text())
    store.create(v1, "", doc)
    items, _ = store.list(v1beta2, None)
    assert [i["metadata"]["name"] for i in items] == ["gpu-dra-1-gpu.nvidia.com-jfrc8"]


@pytest.mark.parametrize("selector, matches", [
    ("spec.nodeName=gpu-dra-1", True), ("spec.driver=gpu.nvidia.com", True),
    ("spec.nodeName=gpu-dra-1,spec.driver!=gpu.nvidia.com", False), ("metadata.name=x", False)])
def test_resourceslices_are_selected_by_node_and_driver(selector, matches):
    res = find("resource.k8s.io", "v1", "resourceslices")
    doc = yaml.safe_load((FIX / "resourceslice-gpu.yaml").read_text())
    assert parse_field_selector(selector, set(res.fields))(doc) is matches
    with pytest.raises(SelectorError):  # a field the real server does not index
        parse_field_selector("spec.pool.name=gpu-dra-1", set(res.fields))


def test_resourceslice_table_is_kubectl_s_columns():
    doc = yaml.safe_load((FIX / "resourceslice-gpu.yaml").read_text())
    doc["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00+00:00"
    table = to_table("resourceslices", [doc], "1")
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Node", "Driver", "Pool", "Age"]
    assert table["rows"][0]["cells"][:4] == ["gpu-dra-1-gpu.nvidia.com-jfrc8", "gpu-dra-1", "gpu.nvidia.com",
                                             "gpu-dra-1"]


def rule() -> dict:
    doc = yaml.safe_load((FIX / "devicetaintrule-example.yaml").read_text())
    doc["spec"]["taint"].pop("timeAdded")
    return doc


def test_a_new_rule_gets_its_time_and_generation_and_no_status():
    obj = rule()
    ctl.admit("devicetaintrules", obj)
    assert obj["spec"]["taint"]["timeAdded"].endswith("Z") and obj["metadata"]["generation"] == 1
    assert "status" not in obj


def test_an_update_keeps_the_time_until_the_effect_changes_and_counts_spec_changes():
    old = rule()
    old["spec"]["taint"]["timeAdded"] = "2025-11-05T18:15:37Z"
    old["metadata"]["generation"] = 1
    same = rule()
    same["spec"]["taint"]["timeAdded"] = "2025-11-05T18:15:37Z"
    same["status"] = {"conditions": []}                  # status is not written through the object
    ctl.admit_update("devicetaintrules", same, old)
    assert same["spec"]["taint"]["timeAdded"] == "2025-11-05T18:15:37Z" and same["metadata"]["generation"] == 1
    assert same["status"] == old["status"]
    changed = rule()
    changed["spec"]["taint"].update(effect="NoSchedule", timeAdded="2025-11-05T18:15:37Z")
    ctl.admit_update("devicetaintrules", changed, old)
    assert changed["spec"]["taint"]["timeAdded"] != "2025-11-05T18:15:37Z"
    assert changed["metadata"]["generation"] == 2


@pytest.mark.parametrize("spec, says", [({}, "spec.taint: Required"), ({"taint": {"effect": "NoSchedule"}},
                                                                      "spec.taint.key: Required"),
                                        ({"taint": {"key": "k", "effect": "PreferNoSchedule"}}, "Unsupported value")])
def test_a_rule_without_a_valid_taint_is_refused_422(spec, says):
    with pytest.raises(ApiStatus) as err:
        ctl.admit("devicetaintrules", {"metadata": {"name": "r"}, "spec": spec})
    assert err.value.code == 422 and says in err.value.message
