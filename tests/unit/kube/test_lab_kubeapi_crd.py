"""CustomResourceDefinitions in the lab Kubernetes API stand-in (lab/kubeapi/crds.py), with
NVSentinel's ExternalRemediationRequest CRD as recorded in tests/fixtures/kube/nvsentinel/:
the resource a CRD registers (scope, subresources, names), discovery, the CRD's status,
custom objects' status and generation rules, finalizers, unregistering, and a restart from
the snapshot. The API is driven in-process (``KubeApi.handle``): no server, no socket."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from lab.kubeapi import openapi
from lab.kubeapi.crds import CRDS, Crds, crd_status, resources_of, validate
from lab.kubeapi.resources import BUILTIN, Catalog, find, version_priority
from lab.kubeapi.server import KubeApi
from lab.kubeapi.store import ApiStatus, Store
from lab.kubeapi.tables import to_table

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "kube" / "nvsentinel"
GROUP, PLURAL, NAME = "nvsentinel.nvidia.com", "externalremediationrequests", "gpu0-xid79-node-01"
ERR_CRD = f"{PLURAL}.{GROUP}"
BASE = f"/apis/{GROUP}/v1/{PLURAL}"
CRD_URL = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def load(name: str) -> dict:
    return yaml.safe_load((FIX / name).read_text())


def example_err() -> dict:
    """ADR-040's example, in the version the generated CRD serves (the ADR says v1alpha1)."""
    doc = load("err-example.yaml")
    doc["apiVersion"] = f"{GROUP}/v1"
    return doc


class Client:
    """Requests to an in-process KubeApi as the lab admin."""

    def __init__(self, api: KubeApi) -> None:
        self.api = api

    def __call__(self, method: str, path: str, body: object = None, ctype: str = "application/json",
                 accept: str = "application/json") -> tuple[int, dict]:
        headers = {"authorization": f"Bearer {self.api.admin_token}", "content-type": ctype, "accept": accept}
        data = b"" if body is None else json.dumps(body).encode()
        return self.api.handle(method, path, headers, data)

    def ok(self, method: str, path: str, body: object = None, **kw: str) -> dict:
        code, doc = self(method, path, body, **kw)
        assert code in (200, 201), doc
        return doc

    def status(self, method: str, path: str, body: object = None, **kw: str) -> ApiStatus:
        with pytest.raises(ApiStatus) as err:
            self(method, path, body, **kw)
        return err.value


@pytest.fixture
def kube(tmp_path) -> Client:
    return Client(KubeApi(tmp_path, "127.0.0.1", 26443, persist=False))


def test_the_err_crd_registers_a_cluster_scoped_resource_with_status_and_its_names():
    [res] = resources_of(load("external_remediation.crd.yaml"))
    assert (res.group, res.version, res.plural, res.kind) == (GROUP, "v1", PLURAL, "ExternalRemediationRequest")
    assert res.namespaced is False and res.subresources == ("status",)
    assert res.short_names == ("extrr",) and res.singular == "externalremediationrequest"
    assert res.categories == ("nvsentinel",) and res.crd == ERR_CRD and res.columns == ()
    assert res.fields == {"metadata.name", "metadata.namespace"}
    # the earlier generation differs in its short name only
    [older] = resources_of(load("external_remediation.crd.err.yaml"))
    assert older.short_names == ("err",) and older.namespaced is False and older.subresources == ("status",)


def test_discovery_lists_the_group_and_the_resource_once_registered():
    catalog = Catalog()
    assert catalog.api_group(GROUP) is None and catalog.resource_list(GROUP, "v1") is None
    catalog.register(ERR_CRD, resources_of(load("external_remediation.crd.yaml")))
    assert catalog.api_group(GROUP)["preferredVersion"] == {"groupVersion": f"{GROUP}/v1", "version": "v1"}
    assert GROUP in [g["name"] for g in catalog.api_group_list()["groups"]]
    entries = {r["name"]: r for r in catalog.resource_list(GROUP, "v1")["resources"]}
    assert set(entries) == {PLURAL, f"{PLURAL}/status"}
    main = entries[PLURAL]
    assert (main["kind"], main["namespaced"], main["shortNames"], main["categories"], main["singularName"]) == (
        "ExternalRemediationRequest", False, ["extrr"], ["nvsentinel"], "externalremediationrequest")
    assert entries[f"{PLURAL}/status"]["verbs"] == ["get", "patch", "update"]
    # the built-in catalog (another server's) never sees it
    assert BUILTIN.api_group(GROUP) is None
    catalog.unregister(ERR_CRD)
    assert catalog.api_group(GROUP) is None and catalog.find(GROUP, "v1", PLURAL) is None


def test_crds_themselves_are_served_cluster_scoped_with_short_names_crd_and_crds():
    entries = {r["name"]: r for r in BUILTIN.resource_list("apiextensions.k8s.io", "v1")["resources"]}
    assert entries["customresourcedefinitions"]["shortNames"] == ["crd", "crds"]
    assert entries["customresourcedefinitions"]["namespaced"] is False
    assert "customresourcedefinitions/status" in entries


def test_versions_are_preferred_by_kubernetes_version_priority():
    # the example list of the docs' "Version priority" section, in its order
    order = ["v10", "v2", "v1", "v11beta2", "v10beta3", "v3beta1", "v12alpha1", "v11alpha2", "foo1", "foo10"]
    shuffled = ["foo10", "v1", "v11alpha2", "v10beta3", "v2", "foo1", "v12alpha1", "v3beta1", "v10", "v11beta2"]
    assert sorted(shuffled, key=version_priority) == order
    crd = load("external_remediation.crd.yaml")
    v1 = crd["spec"]["versions"][0]
    crd["spec"]["versions"] = [{**v1, "name": "v1alpha1", "storage": False}, {**v1, "name": "v2beta1",
                               "storage": False}, v1, {**v1, "name": "v1beta1", "served": False, "storage": False}]
    catalog = Catalog()
    catalog.register(ERR_CRD, resources_of(crd))
    assert [v["version"] for v in catalog.api_group(GROUP)["versions"]] == ["v1", "v2beta1", "v1alpha1"]


def test_a_crd_gets_names_accepted_and_established_and_keeps_their_times():
    crd = load("external_remediation.crd.yaml")
    status = crd_status(crd, None)
    conds = {c["type"]: c for c in status["conditions"]}
    assert (conds["NamesAccepted"]["status"], conds["NamesAccepted"]["reason"]) == ("True", "NoConflicts")
    assert (conds["Established"]["status"], conds["Established"]["reason"]) == ("True", "InitialNamesAccepted")
    assert status["acceptedNames"] == {**crd["spec"]["names"]} and status["storedVersions"] == ["v1"]
    old = copy.deepcopy(status)
    for c in old["conditions"]:
        c["lastTransitionTime"] = "2026-01-01T00:00:00Z"
    again = crd_status(load("external_remediation.crd.err.yaml"), old)
    assert [c["lastTransitionTime"] for c in again["conditions"]] == ["2026-01-01T00:00:00Z"] * 2
    assert again["acceptedNames"]["shortNames"] == ["err"]


@pytest.mark.parametrize("change, says", [
    (lambda c: c["metadata"].update(name="errs.nvsentinel.nvidia.com"), 'must be spec.names.plural+"."+spec.group'),
    (lambda c: c["spec"].update(scope="Global"), "spec.scope: Unsupported value"),
    (lambda c: c["spec"]["versions"][0].update(storage=False), "exactly one version marked as storage"),
    (lambda c: c["spec"]["names"].pop("kind"), "spec.names.kind: Required value")])
def test_an_invalid_crd_is_refused_422(change, says):
    crd = load("external_remediation.crd.yaml")
    change(crd)
    with pytest.raises(ApiStatus) as err:
        validate(crd)
    assert err.value.code == 422 and says in err.value.message


def test_the_scope_of_a_crd_cannot_change():
    old, new = load("external_remediation.crd.yaml"), load("external_remediation.crd.yaml")
    new["spec"]["scope"] = "Namespaced"
    with pytest.raises(ApiStatus) as err:
        validate(new, old)
    assert err.value.code == 422 and "spec.scope: Invalid value: field is immutable" in err.value.message


def test_apply_the_crd_and_the_adr_example_then_status_labels_finalizer(kube):
    crd = kube.ok("POST", CRD_URL, load("external_remediation.crd.yaml"))
    assert {c["type"]: c["status"] for c in crd["status"]["conditions"]} == {"NamesAccepted": "True",
                                                                            "Established": "True"}
    assert crd["metadata"]["generation"] == 1
    assert GROUP in [g["name"] for g in kube.ok("GET", "/apis")["groups"]]
    assert kube.ok("GET", f"/apis/{GROUP}")["preferredVersion"]["version"] == "v1"
    assert PLURAL in [r["name"] for r in kube.ok("GET", f"/apis/{GROUP}/v1")["resources"]]

    # cluster-scoped: the example's namespace is dropped; with the status subresource on,
    # a create cannot set status; generation starts at 1
    err = kube.ok("POST", BASE, example_err())
    assert "namespace" not in err["metadata"] and "status" not in err
    assert err["metadata"]["generation"] == 1 and err["metadata"]["finalizers"] == [
        "nvsentinel.nvidia.com/external-remediation-cleanup"]
    assert kube.status("POST", f"/apis/{GROUP}/v1/namespaces/nvsentinel/{PLURAL}", example_err()).code == 404

    found = kube.ok("GET", f"{BASE}?labelSelector=nvsentinel.nvidia.com%2Fcomponent-class%3Dgpu")["items"]
    assert [o["metadata"]["name"] for o in found] == [NAME] and found[0]["kind"] == "ExternalRemediationRequest"
    assert kube.ok("GET", f"{BASE}?labelSelector=nvsentinel.nvidia.com%2Fcomponent-class%3Dnic")["items"] == []

    # the object's own writes: metadata does not count for generation, spec does; status stays
    patched = kube.ok("PATCH", f"{BASE}/{NAME}", {"metadata": {"labels": {"bringup.io/owner": "bringup"}},
                                                  "status": {"conditions": []}},
                      ctype="application/merge-patch+json")
    assert patched["metadata"]["generation"] == 1 and "status" not in patched
    patched = kube.ok("PATCH", f"{BASE}/{NAME}", {"spec": {"healthEvent": {"message": "changed"}}},
                      ctype="application/merge-patch+json")
    assert patched["metadata"]["generation"] == 2
    assert kube.status("PATCH", f"{BASE}/{NAME}", {"metadata": {"labels": {"a": "b"}}},
                       ctype="application/strategic-merge-patch+json").code == 415

    done = {"type": "ExternalRemediationComplete", "status": "True", "reason": "RepairSucceeded",
            "message": "bringup replaced the GPU", "lastTransitionTime": "2026-05-12T08:00:00Z"}
    after = kube.ok("PATCH", f"{BASE}/{NAME}/status", {"status": {"conditions": [done]},
                                                       "spec": {"healthEvent": {"message": "ignored"}}},
                    ctype="application/merge-patch+json")
    assert after["status"]["conditions"] == [done] and after["spec"]["healthEvent"]["message"] == "changed"
    assert after["metadata"]["generation"] == 2

    table = kube.ok("GET", BASE, accept="application/json;as=Table;v=v1;g=meta.k8s.io")
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
    assert table["rows"][0]["cells"][0] == NAME

    # the finalizer holds the object: DELETE only marks it, until the finalizer goes
    gone = kube.ok("DELETE", f"{BASE}/{NAME}")
    stamp = gone["metadata"]["deletionTimestamp"]
    held = kube.ok("GET", f"{BASE}/{NAME}")
    assert held["metadata"]["deletionTimestamp"] == stamp and held["metadata"]["finalizers"]
    assert kube.ok("DELETE", f"{BASE}/{NAME}")["metadata"]["deletionTimestamp"] == stamp
    refused = kube.status("PATCH", f"{BASE}/{NAME}", {"metadata": {"finalizers": ["x/y", *held["metadata"][
        "finalizers"]]}}, ctype="application/merge-patch+json")
    assert refused.code == 422 and "no new finalizers can be added" in refused.message
    kube.ok("PATCH", f"{BASE}/{NAME}", {"metadata": {"finalizers": None}}, ctype="application/merge-patch+json")
    assert kube.status("GET", f"{BASE}/{NAME}").code == 404


def test_deleting_the_crd_deletes_its_objects_and_unregisters_it(kube):
    kube.ok("POST", CRD_URL, load("external_remediation.crd.yaml"))
    kube.ok("POST", BASE, example_err())
    kube.ok("DELETE", f"{CRD_URL}/{ERR_CRD}")
    assert kube.status("GET", f"/apis/{GROUP}/v1").code == 404
    assert kube.status("GET", BASE).code == 404
    assert GROUP not in [g["name"] for g in kube.ok("GET", "/apis")["groups"]]
    assert kube.api.store.list(resources_of(load("external_remediation.crd.yaml"))[0], None)[0] == []
    # applied again: served again, with no object left over
    kube.ok("POST", CRD_URL, load("external_remediation.crd.yaml"))
    assert kube.ok("GET", BASE)["items"] == []


def test_updating_the_crd_changes_its_short_names_and_counts_a_generation(kube):
    kube.ok("POST", CRD_URL, load("external_remediation.crd.err.yaml"))
    cur = kube.ok("GET", f"{CRD_URL}/{ERR_CRD}")
    newer = load("external_remediation.crd.yaml")
    newer["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
    out = kube.ok("PUT", f"{CRD_URL}/{ERR_CRD}", newer)
    assert out["metadata"]["generation"] == 2 and out["status"]["acceptedNames"]["shortNames"] == ["extrr"]
    assert out["status"]["conditions"] == cur["status"]["conditions"]  # still established, same times
    [entry] = [r for r in kube.ok("GET", f"/apis/{GROUP}/v1")["resources"] if r["name"] == PLURAL]
    assert entry["shortNames"] == ["extrr"]


def test_registered_crds_and_their_objects_survive_a_restart(tmp_path):
    first = Client(KubeApi(tmp_path, "127.0.0.1", 26443, persist=True))
    first.ok("POST", CRD_URL, load("external_remediation.crd.yaml"))
    first.ok("POST", BASE, example_err())
    again = Client(KubeApi(tmp_path, "127.0.0.1", 26443, persist=True))
    assert again.ok("GET", f"{BASE}/{NAME}")["spec"]["healthEvent"]["checkName"] == "nvml-xid-79"
    assert PLURAL in [r["name"] for r in again.ok("GET", f"/apis/{GROUP}/v1")["resources"]]


def test_a_namespaced_crd_and_its_objects_in_a_namespace(kube):
    crd = load("external_remediation.crd.yaml")
    crd["spec"]["scope"] = "Namespaced"
    kube.ok("POST", CRD_URL, crd)
    path = f"/apis/{GROUP}/v1/namespaces/nvsentinel/{PLURAL}"
    assert kube.status("POST", path, example_err()).code == 404  # no such namespace yet
    kube.ok("POST", "/api/v1/namespaces", {"metadata": {"name": "nvsentinel"}})
    assert kube.ok("POST", path, example_err())["metadata"]["namespace"] == "nvsentinel"
    assert [o["metadata"]["name"] for o in kube.ok("GET", BASE)["items"]] == [NAME]  # across namespaces


def test_a_crd_for_a_built_in_resource_leaves_the_built_in_one():
    store = Store()
    crds = Crds(store)
    kueue = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
             "metadata": {"name": "clusterqueues.kueue.x-k8s.io"},
             "spec": {"group": "kueue.x-k8s.io", "scope": "Cluster",
                      "names": {"plural": "clusterqueues", "kind": "ClusterQueue"},
                      "versions": [{"name": "v1beta1", "served": True, "storage": True}]}}
    crds.admit(CRDS, kueue)
    store.create(CRDS, "", kueue)
    cq = find("kueue.x-k8s.io", "v1beta1", "clusterqueues")
    assert crds.catalog.find("kueue.x-k8s.io", "v1beta1", "clusterqueues") is cq
    store.create(cq, "", {"metadata": {"name": "cq"}})
    crds.deleting(CRDS, "clusterqueues.kueue.x-k8s.io")
    assert store.find(cq, "", "cq") is not None


def test_printer_columns_follow_the_crd():
    crd = load("external_remediation.crd.yaml")
    # columns of the form NVSentinel's later proto declares (Node, CheckName, CompletionTime)
    crd["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "Node", "type": "string", "jsonPath": ".spec.healthEvent.nodeName"},
        {"name": "Complete", "type": "string",
         "jsonPath": '.status.conditions[?(@.type=="ExternalRemediationComplete")].status'},
        {"name": "CompletionTime", "type": "date", "jsonPath": ".status.completionTime"}]
    [res] = resources_of(crd)
    obj = example_err()
    table = to_table(res, [obj], "7")
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Node", "Complete", "CompletionTime"]
    assert table["rows"][0]["cells"] == [NAME, "node-01.example-cluster.internal", "Unknown", None]


def test_openapi_names_the_custom_kind_so_kubectl_leaves_validation_to_the_server():
    catalog = Catalog()
    catalog.register(ERR_CRD, resources_of(load("external_remediation.crd.yaml")))
    root = openapi.lookup("/openapi/v3", catalog.resources())
    assert f"apis/{GROUP}/v1" in root["paths"]
    doc = openapi.lookup(f"/openapi/v3/apis/{GROUP}/v1", catalog.resources())
    [op] = [p["patch"] for p in doc["paths"].values()]
    assert op["x-kubernetes-group-version-kind"]["kind"] == "ExternalRemediationRequest"
    assert openapi.lookup(f"/openapi/v3/apis/{GROUP}/v1") is None  # a server without the CRD


def test_finalizers_hold_built_in_objects_too_and_watchers_see_modified_then_deleted():
    store = Store()
    seen: list[tuple[str, str | None]] = []
    store.hooks.append(lambda res, old, new: seen.append(
        ("DELETED" if new is None else "ADDED" if old is None else "MODIFIED",
         (new or {}).get("metadata", {}).get("deletionTimestamp"))))
    cm = find("", "v1", "configmaps")
    store.create(cm, "default", {"metadata": {"name": "c", "finalizers": ["example.com/keep"]}})
    marked = store.delete(cm, "default", "c")
    assert marked["metadata"]["deletionTimestamp"] and marked["metadata"]["deletionGracePeriodSeconds"] == 0
    obj = store.get(cm, "default", "c")
    obj["metadata"].pop("deletionTimestamp")  # a client cannot take it back
    obj["data"] = {"k": "v"}
    kept = store.replace(cm, "default", "c", obj)
    assert kept["metadata"]["deletionTimestamp"] == marked["metadata"]["deletionTimestamp"]
    kept["metadata"]["finalizers"] = []
    store.replace(cm, "default", "c", kept)
    assert store.find(cm, "default", "c") is None
    assert [e for e, _ in seen] == ["ADDED", "MODIFIED", "MODIFIED", "DELETED"]
    assert seen[1][1] is not None


def test_a_crd_adding_a_version_to_a_built_in_group_is_listed_after_the_built_in_ones():
    catalog = Catalog()
    crd = {"metadata": {"name": "cohorts.kueue.x-k8s.io"},
           "spec": {"group": "kueue.x-k8s.io", "scope": "Cluster", "names": {"plural": "cohorts", "kind": "Cohort"},
                    "versions": [{"name": "v1beta2", "served": True, "storage": True},
                                 {"name": "v1beta1", "served": True, "storage": False}]}}
    catalog.register("cohorts.kueue.x-k8s.io", resources_of(crd))
    assert [v["version"] for v in catalog.api_group("kueue.x-k8s.io")["versions"]] == ["v1beta1", "v1beta2"]
    assert [r["name"] for r in catalog.resource_list("kueue.x-k8s.io", "v1beta2")["resources"]] == ["cohorts"]
    assert "cohorts" in [r["name"] for r in catalog.resource_list("kueue.x-k8s.io", "v1beta1")["resources"]]
