"""NVSentinel's ExternalRemediationRequest CRD on the lab Kubernetes API stand-in (a real
HTTPS process), applied and used with the real kubectl and the official Python client:
the CRD becomes Established, ADR-040's example ERR is applied (in the version the CRD
serves), ``kubectl get err -A`` shows it, its status is written through ``/status`` and read
back, a label selector finds it, its cleanup finalizer holds a DELETE until removed; the
later CRD generation renames the short name to ``extrr``; CRDs and objects survive a
restart; deleting the CRD takes the resource away."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from bringup.kube import KubeAdapter

pytestmark = pytest.mark.integration

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "kube" / "nvsentinel"
GROUP, VERSION, PLURAL = "nvsentinel.nvidia.com", "v1", "externalremediationrequests"
CRD = f"{PLURAL}.{GROUP}"
NAME = "gpu0-xid79-node-01"
FINALIZER = "nvsentinel.nvidia.com/external-remediation-cleanup"


def kubectl(api, cache: Path, *args: str) -> subprocess.CompletedProcess:
    # a discovery cache of the test's own: one left by an earlier server on the same port
    # would answer for this one
    return subprocess.run(["kubectl", "--cache-dir", str(cache), *args], capture_output=True, text=True,
                          timeout=60, check=False, env={**os.environ, "KUBECONFIG": str(api.kubeconfig)})


def served_example(tmp_path: Path) -> Path:
    """ADR-040's example ERR with the apiVersion the generated CRD serves (v1, not the
    ADR's v1alpha1)."""
    doc = yaml.safe_load((FIX / "err-example.yaml").read_text())
    doc["apiVersion"] = f"{GROUP}/{VERSION}"
    out = tmp_path / "err-v1.yaml"
    out.write_text(yaml.safe_dump(doc))
    return out


def test_apply_the_err_crd_and_the_adr_example_then_status_selector_finalizer(kubeapi, kube, tmp_path):
    cache = tmp_path / "kcache"
    made = kubectl(kubeapi, cache, "apply", "-f", str(FIX / "external_remediation.crd.err.yaml"))
    assert made.returncode == 0 and f"customresourcedefinition.apiextensions.k8s.io/{CRD} created" in made.stdout, \
        made.stderr
    ready = kubectl(kubeapi, cache, "wait", "--for=condition=Established", "--timeout=30s", f"crd/{CRD}")
    assert ready.returncode == 0 and "condition met" in ready.stdout, ready.stderr
    # NVSentinel's namespace, applied (``kubectl create namespace`` sends protobuf, which the
    # stand-in does not speak)
    ns_file = tmp_path / "ns.yaml"
    ns_file.write_text("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: nvsentinel\n")
    ns = kubectl(kubeapi, cache, "apply", "-f", str(ns_file))
    assert ns.returncode == 0, ns.stderr

    # the ADR's example as written names v1alpha1, which no CRD generation serves
    as_written = kubectl(kubeapi, cache, "apply", "-f", str(FIX / "err-example.yaml"))
    assert as_written.returncode != 0
    assert f'no matches for kind "ExternalRemediationRequest" in version "{GROUP}/v1alpha1"' in as_written.stderr
    applied = kubectl(kubeapi, cache, "apply", "-f", str(served_example(tmp_path)))
    assert applied.returncode == 0 and f"externalremediationrequest.{GROUP}/{NAME} created" in applied.stdout, \
        applied.stderr

    listed = kubectl(kubeapi, cache, "get", "err", "-A")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0].split() == ["NAME", "AGE"] and NAME in listed.stdout
    assert NAME in kubectl(kubeapi, cache, "get", "nvsentinel").stdout  # the CRD's category

    custom = k8s.CustomObjectsApi(kube.api_client)
    err = custom.get_cluster_custom_object(GROUP, VERSION, PLURAL, NAME)
    assert err["metadata"]["finalizers"] == [FINALIZER] and "namespace" not in err["metadata"]
    assert "status" not in err  # a create cannot set status when the status subresource is on

    # NVSentinel's janitor releases the node, then the external system (bringup) reports
    # its repair: it reads the conditions, replaces its own and keeps the janitor's
    example = yaml.safe_load((FIX / "err-example.yaml").read_text())
    custom.patch_cluster_custom_object_status(GROUP, VERSION, PLURAL, NAME, {"status": example["status"]})
    cur = custom.get_cluster_custom_object_status(GROUP, VERSION, PLURAL, NAME)
    done = {"type": "ExternalRemediationComplete", "status": "True", "observedGeneration": 1,
            "lastTransitionTime": "2026-05-12T08:00:00Z", "reason": "RepairSucceeded",
            "message": "bringup replaced GPU 0 and the node passed its burn-in"}
    conditions = [done if c["type"] == done["type"] else c for c in cur["status"]["conditions"]]
    custom.patch_cluster_custom_object_status(GROUP, VERSION, PLURAL, NAME, {"status": {"conditions": conditions}})
    back = {c["type"]: c for c in custom.get_cluster_custom_object(GROUP, VERSION, PLURAL, NAME)["status"][
        "conditions"]}
    assert back["ExternalRemediationComplete"] == done
    assert back["NVSentinelOwnershipReleased"]["reason"] == "ReleaseTaintApplied"

    by_node = custom.list_cluster_custom_object(
        GROUP, VERSION, PLURAL, label_selector="nvsentinel.nvidia.com/node=node-01.example-cluster.internal")
    assert [o["metadata"]["name"] for o in by_node["items"]] == [NAME]
    assert custom.list_cluster_custom_object(GROUP, VERSION, PLURAL,
                                             label_selector="nvsentinel.nvidia.com/component-class=nic")["items"] == []

    # kubectl delete err: the cleanup finalizer holds the object until NVSentinel removes it
    custom.delete_cluster_custom_object(GROUP, VERSION, PLURAL, NAME)
    held = custom.get_cluster_custom_object(GROUP, VERSION, PLURAL, NAME)
    assert held["metadata"]["deletionTimestamp"] and held["metadata"]["finalizers"] == [FINALIZER]
    shown = kubectl(kubeapi, cache, "get", "err", NAME, "-o", "jsonpath={.metadata.deletionTimestamp}")
    assert shown.stdout == held["metadata"]["deletionTimestamp"], shown.stderr
    custom.patch_cluster_custom_object(GROUP, VERSION, PLURAL, NAME, {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as gone:
        custom.get_cluster_custom_object(GROUP, VERSION, PLURAL, NAME)
    assert gone.value.status == 404

    # the later generation of the CRD renames the short name
    newer = kubectl(kubeapi, cache, "apply", "-f", str(FIX / "external_remediation.crd.yaml"))
    assert newer.returncode == 0 and f"customresourcedefinition.apiextensions.k8s.io/{CRD} configured" in \
        newer.stdout, newer.stderr
    fresh = tmp_path / "kcache-2"
    assert kubectl(kubeapi, fresh, "get", "extrr").returncode == 0
    old_name = kubectl(kubeapi, fresh, "get", "err")
    assert old_name.returncode != 0 and 'the server doesn\'t have a resource type "err"' in old_name.stderr

    # deleting the CRD takes the resource away
    dropped = kubectl(kubeapi, fresh, "delete", "crd", CRD)
    assert dropped.returncode == 0, dropped.stderr
    assert kubectl(kubeapi, tmp_path / "kcache-3", "get", "extrr").returncode != 0
    assert GROUP not in [g.name for g in k8s.ApisApi(kube.api_client).get_api_versions().groups]


def test_crds_and_their_objects_survive_a_restart(fresh_kubeapi, tmp_path):
    cache = tmp_path / "kcache"
    assert kubectl(fresh_kubeapi, cache, "apply", "-f", str(FIX / "external_remediation.crd.yaml")).returncode == 0
    assert kubectl(fresh_kubeapi, cache, "apply", "-f", str(served_example(tmp_path))).returncode == 0
    fresh_kubeapi.stop()
    fresh_kubeapi.start()
    listed = kubectl(fresh_kubeapi, tmp_path / "kcache-2", "get", "extrr")
    assert listed.returncode == 0 and NAME in listed.stdout, listed.stderr
    adapter = KubeAdapter.from_kubeconfig(fresh_kubeapi.kubeconfig)
    try:
        crd = k8s.ApiextensionsV1Api(adapter.api_client).read_custom_resource_definition(CRD)
        assert {c.type: c.status for c in crd.status.conditions} == {"NamesAccepted": "True", "Established": "True"}
        err = k8s.CustomObjectsApi(adapter.api_client).get_cluster_custom_object(GROUP, VERSION, PLURAL, NAME)
        assert err["spec"]["healthEvent"]["nodeName"] == "node-01.example-cluster.internal"
    finally:
        adapter.api_client.close()
