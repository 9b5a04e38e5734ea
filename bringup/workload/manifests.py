"""The acceptance job of a pool and the Kueue queues it goes through (pure: pool data in,
Kubernetes documents out), as :mod:`bringup.admission.kueue` renders the pool's topology.

- ``ClusterQueue`` ``<pool>``: the pool's GPUs (nodes x GPUs per node) of the pool's
  ``ResourceFlavor`` (``bringup kueue render``);
- ``LocalQueue`` ``<pool>`` in the acceptance namespace, pointing at it;
- an Indexed ``Job`` (one pod per worker, ``JOB_COMPLETION_INDEX`` set by Kubernetes),
  created suspended with the ``kueue.x-k8s.io/queue-name`` label: Kueue unsuspends it when
  it admits its Workload (https://kueue.sigs.k8s.io/docs/tasks/run/jobs/).

The container's environment says where the site's storage is (settings
``acceptance_data``, ``acceptance_weights``, ``acceptance_checkpoints``); the phase lines
it prints are in ``docs/pool-acceptance.md``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from bringup.admission.labels import POOL_LABEL
from bringup.errors import ConfigError
from bringup.workload.policy import AcceptancePolicy

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_API = "kueue.x-k8s.io/v1beta1"
RUN_LABEL = "bringup.io/acceptance-run"
GPU = "nvidia.com/gpu"


class Storage(BaseModel):
    """Where the job reads its dataset sample and base weights and writes its checkpoints."""

    model_config = ConfigDict(frozen=True)
    data: str
    weights: str
    checkpoints: str


def storage_from(settings: Any) -> Storage:
    """The site's storage locations from the settings; one line naming what is missing."""
    missing = [k for k in ("acceptance_data", "acceptance_weights", "acceptance_checkpoints")
               if not getattr(settings, k, "")]
    if missing:
        raise ConfigError(f"the settings do not say where the acceptance job's storage is: {', '.join(missing)}",
                          hint="set them in the settings file (the dataset sample, the base weights, "
                               "a folder for checkpoints, as the job's pods see them)")
    return Storage(data=settings.acceptance_data, weights=settings.acceptance_weights,
                   checkpoints=settings.acceptance_checkpoints)


def image_of(manifest: Any, role: str) -> str:
    """The container image the manifest names for ``role`` (``containers:`` of images/*.yaml)."""
    image = (getattr(manifest, "containers", None) or {}).get(role, "")
    if not image:
        raise ConfigError(f"image manifest {manifest.name} names no {role!r} container image",
                          hint=f"add containers: {{{role}: <registry/image:tag>}} to images/{manifest.name}.yaml")
    return image


def job_name(pool: str, run_id: str) -> str:
    name = f"accept-{pool}-{run_id}".lower()
    if len(name) > 63:  # a label value and the pods' name prefix
        raise ConfigError(f"acceptance job name {name!r} is longer than 63 characters", hint="use a shorter run id")
    return name


def render_queues(pool: str, nodes: int, policy: AcceptancePolicy) -> list[dict[str, Any]]:
    """The pool's ClusterQueue and the acceptance namespace's LocalQueue."""
    labels = {"app.kubernetes.io/managed-by": "bringup", POOL_LABEL: pool}
    cq = {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": pool, "labels": labels},
          "spec": {"namespaceSelector": {},
                   "resourceGroups": [{"coveredResources": [GPU], "flavors": [
                       {"name": pool, "resources": [{"name": GPU,
                                                     "nominalQuota": nodes * policy.gpus_per_worker}]}]}]}}
    lq = {"apiVersion": KUEUE_API, "kind": "LocalQueue",
          "metadata": {"name": pool, "namespace": policy.namespace, "labels": labels},
          "spec": {"clusterQueue": pool}}
    return [cq, lq]


def render_job(pool: str, run_id: str, nodes: list[str], image: str, storage: Storage,
               policy: AcceptancePolicy) -> dict[str, Any]:
    """The acceptance Job: one worker per node (or ``policy.workers``), each on its own node."""
    if not nodes:
        raise ConfigError(f"pool {pool!r} has no nodes to accept", hint=f"check that its nodes carry the tag pool-{pool}")
    workers = policy.workers or len(nodes)
    if workers > len(nodes):
        raise ConfigError(f"pool {pool!r}: acceptance wants {workers} workers but the pool has {len(nodes)} nodes",
                          hint="lower acceptance.workers of the pool")
    name = job_name(pool, run_id)
    labels = {"app.kubernetes.io/managed-by": "bringup", POOL_LABEL: pool, RUN_LABEL: run_id}
    env = {"BRINGUP_ACCEPT_RUN": name, "BRINGUP_ACCEPT_WORKERS": str(workers),
           "BRINGUP_ACCEPT_DATA": storage.data, "BRINGUP_ACCEPT_WEIGHTS": storage.weights,
           "BRINGUP_ACCEPT_CHECKPOINTS": storage.checkpoints,
           "BRINGUP_ACCEPT_TRAIN_SECONDS": f"{policy.train_seconds:g}", **policy.env}
    container: dict[str, Any] = {"name": "trainer", "image": image,
                                 "env": [{"name": k, "value": v} for k, v in env.items()]}
    if policy.command:
        container["command"] = list(policy.command)
    if policy.gpus_per_worker:
        container["resources"] = {"limits": {GPU: str(policy.gpus_per_worker)}}
    pod_spec = {"restartPolicy": "Never", "nodeSelector": {POOL_LABEL: pool}, "containers": [container],
                # one worker per node: a pool node is the unit being accepted
                "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {RUN_LABEL: run_id}},
                     "topologyKey": "kubernetes.io/hostname"}]}}}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": policy.namespace, "labels": {**labels, QUEUE_LABEL: pool}},
            "spec": {"suspend": True, "completionMode": "Indexed", "completions": workers, "parallelism": workers,
                     "backoffLimit": policy.backoff_limit,
                     "activeDeadlineSeconds": int(policy.run_timeout_s),
                     "template": {"metadata": {"labels": labels}, "spec": pod_spec}}}


__all__ = ["GPU", "QUEUE_LABEL", "RUN_LABEL", "Storage", "image_of", "job_name", "render_job", "render_queues",
           "storage_from"]
