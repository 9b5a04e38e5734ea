"""Batch Jobs and Kueue queues through the Kubernetes API: what the pool acceptance run
(:mod:`bringup.workload.run`) needs, as its :class:`~bringup.workload.run.Cluster` seam.

Uses the same client and error mapping as :class:`bringup.kube.adapter.KubeAdapter`
(``kube._call``). Answers are parsed into small models, so a surprising one is a
ParseError naming its path. Kueue objects are custom resources (``kueue.x-k8s.io``);
queues are created when missing and otherwise left as they are (an operator may hold a
ClusterQueue); a Job of the same name is an error (a run id is unique).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bringup.errors import KubeNotFoundError, ParseError
from bringup.kube.adapter import KubeAdapter
from bringup.kube.models import _Condition  # the same status condition a Node reports
from bringup.kube.pods import pod_log

INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"


@dataclass(frozen=True)
class JobView:
    """What the cluster says of the job: admitted (unsuspended by Kueue), finished how."""

    admitted: bool
    finished: str = ""   # "", "succeeded", "failed"
    message: str = ""


@dataclass(frozen=True)
class PodView:
    name: str
    uid: str
    index: int
    node: str = ""
    phase: str = ""


class _JobStatus(BaseModel):
    model_config = ConfigDict(extra="ignore")
    conditions: list[_Condition] = Field(default_factory=list)


class _JobSpec(BaseModel):
    model_config = ConfigDict(extra="ignore")
    suspend: bool = False


class _Job(BaseModel):
    model_config = ConfigDict(extra="ignore")
    spec: _JobSpec = Field(default_factory=_JobSpec)
    status: _JobStatus = Field(default_factory=_JobStatus)


class _PodMeta(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str
    uid: str
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class _Pod(BaseModel):
    model_config = ConfigDict(extra="ignore")
    metadata: _PodMeta
    spec: dict[str, Any] = Field(default_factory=dict)
    status: dict[str, Any] = Field(default_factory=dict)


def _parse(model: type[BaseModel], data: Any, what: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ParseError(f"{what}: {'.'.join(str(x) for x in err['loc'])}: {err['msg']}") from None


def job_view(data: Any) -> JobView:
    """A Job's admission (Kueue unsuspends what it admits) and how it finished."""
    job = _parse(_Job, data, "Kubernetes Job")
    conds = {c.type: c for c in job.status.conditions if c.status == "True"}
    if "Complete" in conds:
        return JobView(admitted=True, finished="succeeded")
    if "Failed" in conds:
        c = conds["Failed"]
        return JobView(admitted=True, finished="failed", message=f"{c.reason}: {c.message}".strip(": "))
    return JobView(admitted=not job.spec.suspend)


def pod_view(data: Any) -> PodView:
    pod = _parse(_Pod, data, "Kubernetes Pod")
    raw = pod.metadata.labels.get(INDEX_LABEL) or pod.metadata.annotations.get(INDEX_LABEL, "0")
    try:
        index = int(raw)
    except ValueError:
        raise ParseError(f"Kubernetes Pod {pod.metadata.name}: metadata.labels.{INDEX_LABEL}: "
                         f"{raw!r} is not an index") from None
    return PodView(name=pod.metadata.name, uid=pod.metadata.uid, index=index,
                   node=str(pod.spec.get("nodeName") or ""), phase=str(pod.status.get("phase") or ""))


class JobClient:
    """:class:`bringup.workload.run.Cluster` over the Kubernetes API."""

    def __init__(self, kube: KubeAdapter) -> None:
        self.kube = kube
        self.batch = k8s.BatchV1Api(kube.api_client)
        self.custom = k8s.CustomObjectsApi(kube.api_client)

    def _kueue(self, doc: dict[str, Any]) -> None:
        """Create a Kueue object that is missing; one that exists is left as it is (an
        operator may have held or resized the pool's ClusterQueue: that is theirs)."""
        group, version = doc["apiVersion"].split("/")
        plural = doc["kind"].lower() + "s"
        name, ns = doc["metadata"]["name"], doc["metadata"].get("namespace")
        what = f"{doc['kind']} {name}"
        if ns:
            get = (self.custom.get_namespaced_custom_object, group, version, ns, plural, name)
            create = (self.custom.create_namespaced_custom_object, group, version, ns, plural, doc)
        else:
            get = (self.custom.get_cluster_custom_object, group, version, plural, name)
            create = (self.custom.create_cluster_custom_object, group, version, plural, doc)
        try:
            self.kube._call(f"read {what}", *get)
        except KubeNotFoundError:
            self.kube._call(f"create {what}", *create)

    def submit(self, documents: list[dict[str, Any]]) -> None:
        for doc in documents:
            if doc["kind"] == "Job":
                ns = doc["metadata"]["namespace"]
                self.kube._call(f"create Job {ns}/{doc['metadata']['name']}",
                                self.batch.create_namespaced_job, ns, doc)
            else:
                self._kueue(doc)

    def job(self, namespace: str, name: str) -> JobView:
        return job_view(self.kube._call(f"read Job {namespace}/{name}", self.batch.read_namespaced_job,
                                        name, namespace))

    def pods(self, namespace: str, job: str) -> list[PodView]:
        data = self.kube._call(f"list pods of Job {namespace}/{job}", self.kube.core.list_namespaced_pod,
                               namespace, label_selector=f"{JOB_NAME_LABEL}={job}")
        return [pod_view(item) for item in (data or {}).get("items") or []]

    def log(self, namespace: str, pod: str) -> str:
        try:
            return pod_log(self.kube, namespace, pod)
        except KubeNotFoundError:
            return ""

    def delete_pod(self, namespace: str, pod: str) -> None:
        try:
            self.kube._call(f"delete pod {namespace}/{pod}", self.kube.core.delete_namespaced_pod, pod, namespace)
        except KubeNotFoundError:
            pass

    def delete_job(self, namespace: str, name: str) -> None:
        try:  # Background: the Job's pods go with it
            self.kube._call(f"delete Job {namespace}/{name}", self.batch.delete_namespaced_job, name, namespace,
                            propagation_policy="Background")
        except KubeNotFoundError:
            pass


__all__ = ["JobClient", "JobView", "PodView", "job_view", "pod_view"]
