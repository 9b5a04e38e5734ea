"""A lab pool's acceptance end to end (issue #28): queued through Kueue, data and weights
fetched from the site storage, the comm benchmark, real training on the CPU, checkpoints,
one worker pod deleted and restored from its checkpoint, the verdict in NetBox; and one
test per injected fault, each a failed acceptance with its reason and the pool's nodes
held and cordoned."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest
from kubernetes import client as k8s

from bringup.context import Context
from bringup.pipeline import lifecycle
from bringup.settings import Settings
from bringup.workload.pool import accept_pool
from bringup.workload.record import CONTEXT_KEY

REPO = Path(__file__).resolve().parents[3]
TRAINER = REPO / "lab" / "workloads" / "trainer.py"
#: small and quick: 4 s of training (a checkpoint a second), polls every half second
BASE = {"command": [sys.executable, str(TRAINER)], "train_seconds": 4, "poll_s": 0.5,
        "max_queue_wait_s": 6, "max_data_s": 3, "max_restore_s": 15, "run_timeout_s": 50,
        # the trainer's paced steps give about 12,000 samples/s per worker
        "reference_samples_per_s": 12000, "min_throughput_ratio": 0.5, "backoff_limit": 3}


def _run(accept_lab, netbox, netbox_url, tmp_path, **acceptance):
    """Set pool p's acceptance section, and run its acceptance."""
    accept_lab.set_pool(netbox, {**BASE, **acceptance})
    for n in ("gpu-a", "gpu-b"):   # a test before may have cordoned them
        accept_lab.kube.uncordon(n, "test setup")
    token = tmp_path / "token"
    token.write_text(netbox.api.token)
    settings = Settings(netbox_url=netbox_url, netbox_token_file=token, kubeconfig=accept_lab.kubeconfig,
                        image="ubuntu-2404-cuda128", spool_dir=tmp_path / "spool",
                        acceptance_data=str(accept_lab.storage["data"]),
                        acceptance_weights=str(accept_lab.storage["weights"]),
                        acceptance_checkpoints=str(accept_lab.storage["checkpoints"]))
    ctx = Context(settings, netbox=netbox)
    said: list[str] = []
    result = accept_pool(ctx, "p", uuid.uuid4().hex[:8], hold=lifecycle(ctx).hold, progress=said.append)
    return result, said


def _context(netbox):
    return netbox.api.extras.config_contexts.get(name="pool-p-acceptance").data[CONTEXT_KEY]


def _cordoned(accept_lab, name):
    return bool(k8s.CoreV1Api(accept_lab.kube.api_client).read_node(name).spec.unschedulable)


def test_a_pool_trains_checkpoints_loses_a_worker_restores_and_passes(accept_lab, pool_netbox, netbox_url, tmp_path):
    result, said = _run(accept_lab, pool_netbox, netbox_url, tmp_path)
    netbox = pool_netbox
    v, obs = result.verdict, result.observation
    assert v.outcome == "pass", (v.summary(), said)
    assert obs.admitted and obs.queue_wait_s is not None and obs.queue_wait_s < 6
    assert obs.deleted_pod and obs.checkpoint_step and obs.restored_step >= obs.checkpoint_step
    assert 0 < obs.restore_s < 15
    assert v.figures["samples_per_s"] > 6000 and v.figures["busbw_gbps"] > 0
    assert v.figures["loss_last"] < v.figures["loss_first"] / 100       # it learned the function
    assert sorted(v.nodes) == ["gpu-a", "gpu-b"]
    doc = _context(netbox)
    assert doc["outcome"] == "pass" and doc["figures"]["restore_s"] == pytest.approx(obs.restore_s)
    for rec in netbox.nodes(tag="pool-p"):
        entries = [e for e in netbox.journal_entries(rec.id) if obs.job in e["comments"]]
        assert len(entries) == 1 and entries[0]["kind"] == "success" and "PASS" in entries[0]["comments"]
        assert rec.custom_fields.get("bringup_reason") in ("", None)
        assert not _cordoned(accept_lab, rec.name)
    assert result.held == []


def _failed(accept_lab, pool_netbox, netbox_url, tmp_path, says, **acceptance):
    result, said = _run(accept_lab, pool_netbox, netbox_url, tmp_path, **acceptance)
    netbox = pool_netbox
    v = result.verdict
    assert v.outcome == "fail", (v.summary(), said)
    assert any(says in r for r in v.reasons), v.reasons
    assert _context(netbox)["outcome"] == "fail"
    assert result.held == ["gpu-a", "gpu-b"]
    for rec in netbox.nodes(tag="pool-p"):
        assert rec.stage == "active"                                       # held, the stage not written
        assert says in rec.custom_fields["bringup_reason"] and "held in active" in rec.custom_fields["bringup_reason"]
        assert _cordoned(accept_lab, rec.name)
    return result


def test_slow_data_fails_the_acceptance(accept_lab, pool_netbox, netbox_url, tmp_path):
    _failed(accept_lab, pool_netbox, netbox_url, tmp_path, "data fetch", env={"LAB_ACCEPT_SLOW_DATA_S": "3.5"})


def test_a_checkpoint_that_cannot_be_read_back_fails_the_acceptance(accept_lab, pool_netbox, netbox_url, tmp_path):
    result = _failed(accept_lab, pool_netbox, netbox_url, tmp_path, "phase restore failed",
                     env={"LAB_ACCEPT_CORRUPT_CHECKPOINT": "1"})
    assert result.observation.restore_s is None


def test_throughput_below_the_reference_fails_the_acceptance(accept_lab, pool_netbox, netbox_url, tmp_path):
    _failed(accept_lab, pool_netbox, netbox_url, tmp_path, "of the reference", env={"LAB_ACCEPT_STEP_DELAY_S": "0.05"})


def test_a_job_never_admitted_fails_the_acceptance(accept_lab, pool_netbox, netbox_url, tmp_path):
    custom = k8s.CustomObjectsApi(accept_lab.kube.api_client)
    try:   # the pool's ClusterQueue held by an operator: Kueue admits nothing from it
        custom.delete_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "clusterqueues", "p")
    except k8s.ApiException:
        pass
    custom.create_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "clusterqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "p"},
        "spec": {"stopPolicy": "Hold", "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
            {"name": "p", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 16}]}]}]}})
    try:
        result = _failed(accept_lab, pool_netbox, netbox_url, tmp_path, "never admitted")
        assert result.observation.workers == []
        assert not k8s.CoreV1Api(accept_lab.kube.api_client).list_namespaced_pod(
            "bringup-system", label_selector="bringup.io/pool=p").items
    finally:
        custom.delete_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "clusterqueues", "p")
