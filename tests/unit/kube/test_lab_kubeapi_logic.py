"""Pure parts of the lab Kubernetes API stand-in: patches, selectors, store rules,
PodDisruptionBudget arithmetic and the eviction decision."""

from __future__ import annotations

import pytest

from lab.kubeapi import controllers as ctl
from lab.kubeapi.patch import PatchError, json_patch, merge_patch, strategic_merge_patch
from lab.kubeapi.resources import find, resource_list
from lab.kubeapi.selectors import SelectorError, labels_match, parse_field_selector, parse_label_selector
from lab.kubeapi.store import ApiStatus, Store

NODE = {"metadata": {"name": "n", "labels": {"a": "1", "b": "2"}},
        "spec": {"taints": [{"key": "t1", "effect": "NoSchedule"}]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "DiskPressure", "status": "False"}]}}


def test_merge_patch_sets_and_removes():
    out = merge_patch(NODE, {"metadata": {"labels": {"a": None, "c": "3"}}, "spec": {"unschedulable": True}})
    assert out["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert out["spec"] == {"taints": [{"key": "t1", "effect": "NoSchedule"}], "unschedulable": True}
    assert NODE["metadata"]["labels"] == {"a": "1", "b": "2"}  # input untouched


def test_strategic_merge_patch_merges_keyed_lists_and_replaces_taints():
    out = strategic_merge_patch(NODE, {
        "spec": {"taints": [{"key": "t2", "effect": "NoExecute"}]},
        "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "PIDPressure", "status": "False"}],
                   "$setElementOrder/conditions": [{"type": "Ready"}]}})
    assert out["spec"]["taints"] == [{"key": "t2", "effect": "NoExecute"}]
    conds = {c["type"]: c["status"] for c in out["status"]["conditions"]}
    assert conds == {"Ready": "False", "DiskPressure": "False", "PIDPressure": "False"}
    out = strategic_merge_patch(NODE, {"status": {"conditions": [{"type": "DiskPressure", "$patch": "delete"}]}})
    assert [c["type"] for c in out["status"]["conditions"]] == ["Ready"]
    assert strategic_merge_patch(NODE, {"spec": {"taints": None}})["spec"] == {}


def test_json_patch_operations():
    out = json_patch(NODE, [{"op": "add", "path": "/metadata/labels/x~1y", "value": "z"},
                            {"op": "remove", "path": "/metadata/labels/a"},
                            {"op": "replace", "path": "/spec/taints/0/effect", "value": "NoExecute"},
                            {"op": "add", "path": "/spec/taints/-", "value": {"key": "t3", "effect": "NoSchedule"}},
                            {"op": "test", "path": "/metadata/name", "value": "n"}])
    assert out["metadata"]["labels"] == {"b": "2", "x/y": "z"}
    assert [t["key"] for t in out["spec"]["taints"]] == ["t1", "t3"]
    assert out["spec"]["taints"][0]["effect"] == "NoExecute"
    with pytest.raises(PatchError):
        json_patch(NODE, [{"op": "test", "path": "/metadata/name", "value": "other"}])
    with pytest.raises(PatchError):
        json_patch(NODE, [{"op": "remove", "path": "/metadata/nothing"}])
    with pytest.raises(PatchError):
        json_patch(NODE, {"op": "add"})


@pytest.mark.parametrize(("selector", "labels", "match"), [
    ("a=1", {"a": "1"}, True), ("a==1,b!=3", {"a": "1", "b": "2"}, True), ("a!=1", {"a": "1"}, False),
    ("a in (1, 2)", {"a": "2"}, True), ("a notin (1,2)", {"a": "2"}, False), ("a notin (1)", {}, True),
    ("a", {"a": ""}, True), ("!a", {"a": "x"}, False), ("bringup.io/pool=train,!x", {"bringup.io/pool": "train"},
                                                       True),
    ("", {}, True),
])
def test_label_selectors(selector, labels, match):
    assert labels_match(parse_label_selector(selector), labels) is match


def test_field_selectors():
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1"}}
    allowed = {"metadata.name", "spec.nodeName"}
    assert parse_field_selector("spec.nodeName=n1", allowed)(pod)
    assert not parse_field_selector("spec.nodeName=n1,metadata.name!=p", allowed)(pod)
    with pytest.raises(SelectorError, match="not supported"):
        parse_field_selector("spec.bogus=1", allowed)
    with pytest.raises(SelectorError):
        parse_label_selector("a in (")


def test_store_resource_versions_and_conflicts(tmp_path):
    nodes = find("", "v1", "nodes")
    store = Store(tmp_path / "state.json")
    a = store.create(nodes, "", {"metadata": {"name": "a"}})
    b = store.create(nodes, "", {"metadata": {"name": "b"}})
    assert int(b["metadata"]["resourceVersion"]) > int(a["metadata"]["resourceVersion"])
    with pytest.raises(ApiStatus) as err:
        store.create(nodes, "", {"metadata": {"name": "a"}})
    assert err.value.code == 409 and err.value.reason == "AlreadyExists"
    a2 = store.replace(nodes, "", "a", {**a, "spec": {"unschedulable": True}})
    with pytest.raises(ApiStatus) as err:
        store.replace(nodes, "", "a", a)  # a's resourceVersion is stale now
    assert err.value.code == 409 and "modified" in err.value.message
    assert a2["metadata"]["uid"] == a["metadata"]["uid"]
    # the snapshot brings everything back, including the counter
    again = Store(tmp_path / "state.json")
    assert again.get(nodes, "", "a")["spec"] == {"unschedulable": True}
    assert again.rv == store.rv
    with pytest.raises(ApiStatus) as err:
        again.get(nodes, "", "zz")
    assert err.value.code == 404 and err.value.body()["reason"] == "NotFound"


def _pod(store: Store, name: str, labels: dict, running: bool = True) -> None:
    pod = {"metadata": {"name": name, "labels": labels}, "spec": {"containers": [{"name": "c"}]}}
    if running:
        pod["spec"]["nodeName"] = "n1"
    ctl.pod_defaults(pod)
    store.create(ctl.PODS, "default", pod)


@pytest.mark.parametrize(("spec", "desired", "allowed"), [
    ({"minAvailable": 2}, 2, 1), ({"minAvailable": "50%"}, 2, 1), ({"maxUnavailable": 1}, 2, 1),
    ({"maxUnavailable": "0%"}, 3, 0), ({"minAvailable": 3}, 3, 0),
])
def test_pdb_arithmetic(spec, desired, allowed):
    store = Store()
    for i in range(3):
        _pod(store, f"w{i}", {"app": "w"})
    _pod(store, "other", {"app": "x"})
    pdb = {"metadata": {"name": "b", "namespace": "default"},
           "spec": {**spec, "selector": {"matchLabels": {"app": "w"}}}}
    st = ctl.pdb_status(store, pdb)
    assert (st["expectedPods"], st["currentHealthy"], st["desiredHealthy"], st["disruptionsAllowed"]) == \
        (3, 3, desired, allowed)


def test_eviction_respects_the_budget():
    store = Store()
    _pod(store, "w1", {"app": "w"})
    _pod(store, "w2", {"app": "w"})
    _pod(store, "pending", {"app": "w"}, running=False)
    store.create(ctl.PDBS, "default", {"metadata": {"name": "b"},
                                       "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "w"}}}})
    assert ctl.evict(store, "default", "w1")["status"] == "Success"
    with pytest.raises(ApiStatus) as err:
        ctl.evict(store, "default", "w2")
    assert err.value.code == 429
    assert "The disruption budget b needs 1 healthy pods and has 1 currently" in str(err.value.body())
    ctl.evict(store, "default", "pending")  # not running: never blocked
    store.create(ctl.PDBS, "default", {"metadata": {"name": "b2"},
                                       "spec": {"minAvailable": 0, "selector": {"matchLabels": {"app": "w"}}}})
    with pytest.raises(ApiStatus) as err:
        ctl.evict(store, "default", "w2")
    assert err.value.code == 500 and "more than one PodDisruptionBudget" in err.value.message


def test_bootstrap_signer_and_token_auth():
    store = Store()
    store.create(ctl.NAMESPACES, "", {"metadata": {"name": "kube-system"}})
    store.create(ctl.CONFIGMAPS, "kube-public", {"metadata": {"name": "cluster-info"},
                                                 "data": {"kubeconfig": "{}"}})
    secret = {"metadata": {"name": "bootstrap-token-abcdef"}, "type": ctl.BOOTSTRAP_TYPE,
              "data": {k: __import__("base64").b64encode(v.encode()).decode() for k, v in {
                  "token-id": "abcdef", "token-secret": "0123456789abcdef",
                  "usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true"}.items()}}
    store.create(ctl.SECRETS, "kube-system", secret)
    ctl.sign_cluster_info(store)
    data = store.get(ctl.CONFIGMAPS, "kube-public", "cluster-info")["data"]
    assert data["jws-kubeconfig-abcdef"] == ctl.detached_jws("{}", "abcdef", "0123456789abcdef")
    assert data["jws-kubeconfig-abcdef"].count("..") == 1
    user = ctl.authenticate(store, "admin", "Bearer abcdef.0123456789abcdef")
    assert "system:bootstrappers" in user.groups
    ctl.authorize(user, "create", "nodes", "", "n1")
    with pytest.raises(ApiStatus) as err:
        ctl.authorize(user, "list", "secrets", "kube-system", "")
    assert err.value.code == 403
    with pytest.raises(ApiStatus) as err:
        ctl.authenticate(store, "admin", "Bearer abcdef.ffffffffffffffff")
    assert err.value.code == 401


def test_discovery_advertises_the_eviction_subresource():
    doc = resource_list("", "v1")
    ev = next(r for r in doc["resources"] if r["name"] == "pods/eviction")
    assert (ev["group"], ev["version"], ev["kind"]) == ("policy", "v1", "Eviction")
    assert resource_list("storage.k8s.io", "v1") is None  # a group the stand-in does not serve
