"""The bringup Kubernetes adapter against the lab API stand-in (a real HTTPS process)."""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from kubernetes import client as k8s

from bringup.admission.labels import QUARANTINE_KEY, REASON_ANNOTATION, node_labels
from bringup.admission.pool import Pool
from bringup.errors import (
    DrainBlocked,
    KubeAuthError,
    KubeConflictError,
    KubeTransientError,
)
from bringup.kube import KubeAdapter
from bringup.sku import load_skus

KUBEADM = Path(__file__).resolve().parents[3] / "lab" / "kubeapi" / "bin" / "kubeadm"

pytestmark = pytest.mark.integration


def kubeadm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(KUBEADM), *args], capture_output=True, text=True, timeout=30,
                          env={"PATH": os.environ["PATH"], **(env or {})}, check=False)


def join(kube: KubeAdapter, name: str, ip: str = "127.20.9.1") -> None:
    cmd = kube.join_command(dt.timedelta(minutes=10))
    r = kubeadm(*cmd.argv(name)[1:], env={"BRINGUP_NODE_IP": ip, "BRINGUP_GPU_COUNT": "8"})
    assert r.returncode == 0, r.stderr


def make_node(kube: KubeAdapter, name: str) -> None:
    k8s.CoreV1Api(kube.api_client).create_node(k8s.V1Node.from_dict({
        "metadata": {"name": name},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}}))


def make_pod(kube: KubeAdapter, name: str, node: str, labels: dict[str, str], owner: str = "ReplicaSet",
             namespace: str = "default") -> None:
    k8s.CoreV1Api(kube.api_client).create_namespaced_pod(namespace, k8s.V1Pod.from_dict({
        "metadata": {"name": name, "labels": labels,
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": owner, "name": f"{name}-owner",
                                          "uid": f"uid-{name}", "controller": True}]},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}}))


# --- join -------------------------------------------------------------------------------
def test_bootstrap_token_and_kubeadm_join_register_a_ready_node(kube):
    cmd = kube.join_command(dt.timedelta(minutes=10))
    assert re.fullmatch(r"[a-z0-9]{6}\.[a-z0-9]{16}", cmd.token)
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", cmd.ca_cert_hash)
    assert cmd.token not in repr(cmd)
    secret = k8s.CoreV1Api(kube.api_client).read_namespaced_secret(
        f"bootstrap-token-{cmd.token[:6]}", "kube-system")
    assert secret.type == "bootstrap.kubernetes.io/token"

    assert not kube.node_state("gpu-join-1").exists
    r = kubeadm(*cmd.argv("gpu-join-1")[1:], env={"BRINGUP_NODE_IP": "127.20.9.1", "BRINGUP_GPU_COUNT": "8"})
    assert r.returncode == 0, r.stderr
    assert "This node has joined the cluster" in r.stdout
    state = kube.wait_node_ready("gpu-join-1", timeout=10, poll=0.2)
    assert state.ready and state.capacity["nvidia.com/gpu"] == "8"
    assert state.addresses["InternalIP"] == "127.20.9.1"


def test_wrong_token_or_ca_hash_is_refused(kube):
    cmd = kube.join_command(dt.timedelta(minutes=10))
    wrong_secret = cmd.token[:7] + ("a" if cmd.token[7] != "a" else "b") + cmd.token[8:]
    r = kubeadm("join", cmd.endpoint, "--token", wrong_secret, "--discovery-token-ca-cert-hash",
                cmd.ca_cert_hash, "--node-name", "gpu-bad-1")
    assert r.returncode != 0
    assert "failed to verify JWS signature" in r.stderr
    r = kubeadm("join", cmd.endpoint, "--token", "zzzzzz.0123456789abcdef", "--discovery-token-ca-cert-hash",
                cmd.ca_cert_hash, "--node-name", "gpu-bad-1")
    assert r.returncode != 0 and 'for token ID "zzzzzz"' in r.stderr
    r = kubeadm("join", cmd.endpoint, "--token", cmd.token, "--discovery-token-ca-cert-hash",
                "sha256:" + "0" * 64, "--node-name", "gpu-bad-1")
    assert r.returncode != 0 and "are pinned" in r.stderr
    assert cmd.token not in r.stderr
    assert not kube.node_state("gpu-bad-1").exists


def test_expired_token_is_refused(kube):
    cmd = kube.join_command(dt.timedelta(seconds=1))
    time.sleep(1.2)
    r = kubeadm(*cmd.argv("gpu-late-1")[1:])
    assert r.returncode != 0 and "could not find a JWS signature" in r.stderr


# --- quarantine / admit -------------------------------------------------------------------
def test_quarantine_then_admit(kube):
    join(kube, "gpu-adm-1")
    # a taint somebody else owns must survive both operations
    k8s.CoreV1Api(kube.api_client).patch_node(
        "gpu-adm-1", {"spec": {"taints": [{"key": "example.com/maintenance", "effect": "NoExecute"}]}},
        _content_type="application/merge-patch+json")

    res = kube.quarantine("gpu-adm-1", "XID 79 on GPU 2: fell off the bus under load")
    assert res.applied and str(res.taint) == "bringup.io/quarantine=xid-79-on-gpu-2:NoSchedule"
    st = kube.node_state("gpu-adm-1")
    assert st.unschedulable
    assert st.annotations[REASON_ANNOTATION] == "XID 79 on GPU 2: fell off the bus under load"
    assert {t.key for t in st.taints} == {QUARANTINE_KEY, "example.com/maintenance"}

    k8s.CoreV1Api(kube.api_client).patch_node(
        "gpu-adm-1", {"metadata": {"labels": {"bringup.io/old-pool-label": "x", "team": "ml"}}},
        _content_type="application/merge-patch+json")
    sku = load_skus()["hgx-h100-80gb"]
    labels = node_labels(sku, Pool(), {}, {"status": "passed", "date": "2026-11-30"}, pool_name="train-h100")
    st = kube.admit("gpu-adm-1", labels, {"bringup.io/burnin-run": "run-42"})
    assert not st.unschedulable
    assert [t.key for t in st.taints] == ["example.com/maintenance"]
    assert REASON_ANNOTATION not in st.annotations and st.annotations["bringup.io/burnin-run"] == "run-42"
    for k, v in labels.items():
        assert st.labels[k] == v
    assert st.labels["kubernetes.io/hostname"] == "gpu-adm-1"  # other owners' labels kept
    assert st.labels["team"] == "ml" and "bringup.io/old-pool-label" not in st.labels


def test_quarantine_of_a_node_that_never_joined(kube):
    res = kube.quarantine("gpu-ghost-1", "never returned after the OS install", code="never-returns")
    assert not res.applied and "never joined" in res.message
    assert not kube.node_state("gpu-ghost-1").exists


def test_stale_resource_version_is_a_conflict_and_updates_retry(kube):
    make_node(kube, "gpu-rv-1")
    st = kube.node_state("gpu-rv-1")
    kube.cordon("gpu-rv-1")
    with pytest.raises(KubeConflictError):
        kube._patch_node("gpu-rv-1", {"metadata": {"resourceVersion": st.resource_version,
                                                   "labels": {"x": "y"}}})
    calls = []

    def change(node):
        calls.append(node["metadata"]["resourceVersion"])
        if len(calls) == 1:  # another writer slips in between our read and our patch
            kube.uncordon("gpu-rv-1")
        return {"metadata": {"labels": {"won": "yes"}}}

    st = kube._update_node("gpu-rv-1", change)
    assert len(calls) == 2 and calls[0] != calls[1]
    assert st.labels["won"] == "yes" and not st.unschedulable


# --- drain --------------------------------------------------------------------------------
def test_drain_honours_pdb_until_timeout_and_skips_daemonsets(kube):
    make_node(kube, "gpu-drain-1")
    make_pod(kube, "agent-x", "gpu-drain-1", {"app": "agent"}, owner="DaemonSet")
    make_pod(kube, "web-1", "gpu-drain-1", {"app": "web"})
    make_pod(kube, "web-2", "gpu-drain-1", {"app": "web"})
    make_pod(kube, "batch-1", "gpu-drain-1", {"app": "batch"})
    policy = k8s.PolicyV1Api(kube.api_client)
    policy.create_namespaced_pod_disruption_budget("default", k8s.V1PodDisruptionBudget.from_dict({
        "metadata": {"name": "web-pdb"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}))

    start = time.monotonic()
    waits = []
    with pytest.raises(DrainBlocked) as err:
        kube.drain("gpu-drain-1", timeout=2.5, poll=0.2, on_wait=waits.append)
    took = time.monotonic() - start
    # one deadline for the whole drain (plus at most one request's time past it)
    assert 2.5 <= took < 2.5 + kube.timeout, took
    assert len(err.value.pods) == 1 and err.value.pods[0] in ("default/web-1", "default/web-2")
    assert err.value.budgets == ["default/web-pdb"] and "default/web-pdb" in str(err.value)
    assert not err.value.transient and err.value.controller_fault   # not retried, not the node's fault
    assert "drain_timeout_s" in err.value.hint
    # told while it waited: the pod and the budget holding it
    assert waits and waits[0].pods == err.value.pods and waits[0].budgets == ["default/web-pdb"]

    left = {p.name for p in kube.pods_on("gpu-drain-1")}
    assert left == {"agent-x", err.value.pods[0].split("/")[1]}
    assert kube.node_state("gpu-drain-1").unschedulable

    policy.delete_namespaced_pod_disruption_budget("web-pdb", "default")
    res = kube.drain("gpu-drain-1", timeout=5, poll=0.2)
    assert res.evicted == [err.value.pods[0]] and res.skipped == ["default/agent-x"]
    assert {p.name for p in kube.pods_on("gpu-drain-1")} == {"agent-x"}


# --- errors and persistence ------------------------------------------------------------------
def test_refused_credentials_and_dead_server(fresh_kubeapi):
    good = KubeAdapter.from_kubeconfig(fresh_kubeapi.kubeconfig, request_timeout=3)
    make_node(good, "gpu-persist-1")
    good.cordon("gpu-persist-1")
    rv = good.node_state("gpu-persist-1").resource_version

    bad_conf = fresh_kubeapi.home / "bad-kubeconfig"
    bad_conf.write_text(fresh_kubeapi.kubeconfig.read_text().replace(
        (fresh_kubeapi.home / "secrets" / "kube-token").read_text().strip(), "not-the-token"))
    with pytest.raises(KubeAuthError) as err:
        KubeAdapter.from_kubeconfig(bad_conf).node_state("gpu-persist-1")
    assert not err.value.transient and "401" in str(err.value)

    # state survives a restart, and resourceVersions keep growing
    fresh_kubeapi.stop()
    good.api_client.configuration.retries = 0
    with pytest.raises(KubeTransientError) as err:
        good.node_state("gpu-persist-1")
    assert err.value.transient
    fresh_kubeapi.start()
    again = KubeAdapter.from_kubeconfig(fresh_kubeapi.kubeconfig)
    st = again.node_state("gpu-persist-1")
    assert st.exists and st.unschedulable
    assert int(again.uncordon("gpu-persist-1").resource_version) > int(rv)
