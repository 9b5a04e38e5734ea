"""The acceptance Job and Kueue queues rendered from the pool's data."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bringup.errors import ConfigError
from bringup.provision.image import load_manifest
from bringup.workload.manifests import image_of, render_job, render_queues, storage_from
from bringup.workload.policy import AcceptancePolicy

POLICY = AcceptancePolicy(gpus_per_worker=8, command=["python", "train.py"], env={"NCCL_DEBUG": "WARN"})
STORAGE = storage_from(SimpleNamespace(acceptance_data="/site/data.npz", acceptance_weights="/site/w.npz",
                                       acceptance_checkpoints="/site/ckpt"))


def test_the_job_is_indexed_suspended_queued_and_one_worker_per_node():
    job = render_job("train", "r1", ["n1", "n2", "n3"], "img:1", STORAGE, POLICY)
    assert job["metadata"]["name"] == "accept-train-r1"
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "train"
    spec = job["spec"]
    assert spec["suspend"] is True and spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == 3
    pod = spec["template"]["spec"]
    assert pod["nodeSelector"] == {"bringup.io/pool": "train"} and pod["restartPolicy"] == "Never"
    c = pod["containers"][0]
    assert c["image"] == "img:1" and c["command"] == ["python", "train.py"]
    assert c["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    env = {e["name"]: e["value"] for e in c["env"]}
    assert env["BRINGUP_ACCEPT_DATA"] == "/site/data.npz" and env["BRINGUP_ACCEPT_WORKERS"] == "3"
    assert env["NCCL_DEBUG"] == "WARN"
    anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti["topologyKey"] == "kubernetes.io/hostname"


def test_the_queues_cover_the_pools_gpus():
    cq, lq = render_queues("train", 3, POLICY)
    assert cq["kind"] == "ClusterQueue" and lq["kind"] == "LocalQueue"
    assert lq["spec"]["clusterQueue"] == "train" and lq["metadata"]["namespace"] == "bringup-system"
    flavor = cq["spec"]["resourceGroups"][0]["flavors"][0]
    assert flavor["name"] == "train" and flavor["resources"] == [{"name": "nvidia.com/gpu", "nominalQuota": 24}]


def test_no_command_leaves_the_images_entrypoint():
    job = render_job("train", "r1", ["n1"], "img:1", STORAGE, AcceptancePolicy())
    assert "command" not in job["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize("nodes, policy, says", [
    ([], POLICY, "no nodes"),
    (["n1"], POLICY.model_copy(update={"workers": 2}), "wants 2 workers but the pool has 1"),
])
def test_a_job_that_cannot_run_is_a_config_error(nodes, policy, says):
    with pytest.raises(ConfigError, match=says):
        render_job("train", "r1", nodes, "img", STORAGE, policy)


def test_storage_missing_from_the_settings_names_what_to_set():
    with pytest.raises(ConfigError, match="acceptance_weights, acceptance_checkpoints"):
        storage_from(SimpleNamespace(acceptance_data="/d", acceptance_weights="", acceptance_checkpoints=""))


def test_the_image_comes_from_the_manifest():
    m = load_manifest("ubuntu-2404-cuda128")
    assert image_of(m, "training").startswith("nvcr.io/")
    with pytest.raises(ConfigError, match="names no 'inference' container image"):
        image_of(m, "inference")
