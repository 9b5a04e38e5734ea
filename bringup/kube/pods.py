"""Pods bringup runs itself (the readiness gate's smoke pod) and watching pods and nodes.

``pinned_pod`` builds a pod for one node: bound with ``nodeName`` (no scheduler in the
way), tolerating the validation-pending taint, asking for the node's GPUs, never
restarted. The adapter calls create it, read its phase, exit code and log, wait for it
to finish, delete it, and follow pods or nodes through the watch API. Answers are parsed
into :class:`PodStatus` / :class:`~bringup.kube.models.NodeState`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from kubernetes import watch as k8s_watch
from pydantic import BaseModel, ConfigDict, Field

from bringup.errors import KubeError, KubeNotFoundError
from bringup.kube.adapter import KubeAdapter
from bringup.kube.models import NodeState, _parse, parse_node
from bringup.retry import Backoff, Timeout
from bringup.retry import poll as poll_until

GPU = "nvidia.com/gpu"
VALIDATION_TAINT = "bringup.io/validation-pending"
FINISHED = ("Succeeded", "Failed")


class ContainerResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    state: str                      # waiting | running | terminated | unknown
    reason: str = ""
    exit_code: int | None = None


class PodStatus(BaseModel):
    model_config = ConfigDict(frozen=True)

    namespace: str
    name: str
    uid: str = ""
    node: str = ""
    phase: str = ""
    reason: str = ""
    message: str = ""
    containers: list[ContainerResult] = Field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED

    @property
    def succeeded(self) -> bool:
        return self.phase == "Succeeded"

    @property
    def exit_code(self) -> int | None:
        """The first non-zero exit code, else 0 once every container ended, else None."""
        codes = [c.exit_code for c in self.containers if c.exit_code is not None]
        if not codes or len(codes) < len(self.containers):
            return next((c for c in codes if c), None)
        return next((c for c in codes if c), 0)


class _State(BaseModel):
    waiting: dict[str, Any] | None = None
    running: dict[str, Any] | None = None
    terminated: dict[str, Any] | None = None


class _CS(BaseModel):
    name: str
    state: _State = Field(default_factory=_State)


class _Status(BaseModel):
    phase: str = ""
    reason: str = ""
    message: str = ""
    containerStatuses: list[_CS] | None = None


class _Meta(BaseModel):
    name: str
    namespace: str = ""
    uid: str = ""


class _Spec(BaseModel):
    nodeName: str = ""


class _Pod(BaseModel):
    metadata: _Meta
    spec: _Spec = Field(default_factory=_Spec)
    status: _Status = Field(default_factory=_Status)


def parse_pod_status(data: Any, source: str = "Kubernetes Pod") -> PodStatus:
    p: _Pod = _parse(_Pod, data, source)
    containers = []
    for cs in p.status.containerStatuses or []:
        st = cs.state
        if st.terminated is not None:
            code = st.terminated.get("exitCode")
            containers.append(ContainerResult(name=cs.name, state="terminated",
                                              reason=str(st.terminated.get("reason") or ""),
                                              exit_code=int(code) if code is not None else None))
        elif st.running is not None:
            containers.append(ContainerResult(name=cs.name, state="running"))
        elif st.waiting is not None:
            containers.append(ContainerResult(name=cs.name, state="waiting",
                                              reason=str(st.waiting.get("reason") or "")))
        else:
            containers.append(ContainerResult(name=cs.name, state="unknown"))
    return PodStatus(namespace=p.metadata.namespace, name=p.metadata.name, uid=p.metadata.uid,
                     node=p.spec.nodeName, phase=p.status.phase, reason=p.status.reason,
                     message=p.status.message, containers=containers)


def pinned_pod(name: str, node: str, image: str, command: list[str], *, gpus: int = 0,
               namespace: str = "default", labels: dict[str, str] | None = None,
               deadline_s: int | None = None) -> dict[str, Any]:
    """A one-shot pod bound to ``node`` that tolerates the validation-pending taint (pure)."""
    container: dict[str, Any] = {"name": "main", "image": image, "command": list(command)}
    if gpus:
        container["resources"] = {"limits": {GPU: str(gpus)}}
    spec: dict[str, Any] = {"nodeName": node, "restartPolicy": "Never", "containers": [container],
                            "tolerations": [{"key": VALIDATION_TAINT, "operator": "Exists",
                                             "effect": "NoSchedule"}]}
    if deadline_s:
        spec["activeDeadlineSeconds"] = int(deadline_s)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})}, "spec": spec}


def create_pod(kube: KubeAdapter, manifest: dict[str, Any]) -> PodStatus:
    ns = manifest["metadata"].get("namespace", "default")
    return parse_pod_status(kube._call(f"create pod {ns}/{manifest['metadata']['name']}",
                                       kube.core.create_namespaced_pod, ns, manifest))


def read_pod(kube: KubeAdapter, namespace: str, name: str) -> PodStatus:
    return parse_pod_status(kube._call(f"read pod {namespace}/{name}", kube.core.read_namespaced_pod,
                                       name, namespace))


def wait_pod(kube: KubeAdapter, namespace: str, name: str, timeout: float, poll: float = 1.0) -> PodStatus:
    """The pod's status once it finished, or as it stands when ``timeout`` runs out
    (``finished`` False: the caller decides what a pod that never ended means)."""
    try:
        return poll_until(lambda: read_pod(kube, namespace, name), timeout=timeout, what=f"pod {namespace}/{name}",
                          done=lambda st: bool(st and st.finished), backoff=Backoff(first=poll, factor=1.0),
                          sleep=kube._sleep, clock=kube._clock)
    except Timeout as exc:
        return exc.last  # type: ignore[return-value]  # read right at the deadline


def delete_pod(kube: KubeAdapter, namespace: str, name: str) -> bool:
    """Delete the pod; False if it was already gone."""
    try:
        kube._call(f"delete pod {namespace}/{name}", kube.core.delete_namespaced_pod, name, namespace)
    except KubeNotFoundError:
        return False
    return True


class _Text:
    """Makes a text answer (a pod log) pass through the adapter's JSON plumbing."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __call__(self, *args: Any, **kw: Any) -> Any:
        resp = self.fn(*args, **kw)
        resp_text = (resp.data or b"").decode(errors="replace")
        return type("Raw", (), {"data": json.dumps(resp_text).encode()})()


def pod_log(kube: KubeAdapter, namespace: str, name: str, container: str | None = None,
            tail_lines: int | None = None) -> str:
    kw: dict[str, Any] = {}
    if container:
        kw["container"] = container
    if tail_lines is not None:
        kw["tail_lines"] = tail_lines
    return kube._call(f"read log of pod {namespace}/{name}", _Text(kube.core.read_namespaced_pod_log),
                      name, namespace, **kw)


def watch_pods(kube: KubeAdapter, namespace: str, *, field_selector: str = "", label_selector: str = "",
               timeout_s: int = 60, resource_version: str = "") -> Iterator[tuple[str, PodStatus]]:
    """``(ADDED|MODIFIED|DELETED, PodStatus)`` as the API server reports changes."""
    for kind, obj in _watch(kube, kube.core.list_namespaced_pod, f"watch pods in {namespace}", timeout_s,
                            resource_version, namespace, field_selector=field_selector,
                            label_selector=label_selector):
        yield kind, parse_pod_status(obj, "Pod watch event")


def watch_nodes(kube: KubeAdapter, *, label_selector: str = "", timeout_s: int = 60,
                resource_version: str = "") -> Iterator[tuple[str, NodeState]]:
    for kind, obj in _watch(kube, kube.core.list_node, "watch nodes", timeout_s, resource_version,
                            label_selector=label_selector):
        yield kind, parse_node(obj)


def _watch(kube: KubeAdapter, fn: Callable[..., Any], what: str, timeout_s: int, resource_version: str,
           *args: Any, **kw: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    kw = {k: v for k, v in kw.items() if v}
    if resource_version:
        kw["resource_version"] = resource_version
    w = k8s_watch.Watch()
    stream = w.stream(fn, *args, timeout_seconds=timeout_s, _request_timeout=timeout_s + 5, **kw)
    try:
        while True:
            try:
                ev = kube._call(what, lambda **_: _Event(next(stream)))
            except StopIteration:
                return
            if ev["type"] == "ERROR":
                raise KubeError(f"{what}: {ev['raw_object'].get('message', 'watch failed')}",
                                hint="list again and watch from the list's resourceVersion")
            yield ev["type"], ev["raw_object"]
    finally:
        w.stop()


class _Event:
    """One watch event, passed through the adapter's error mapping as a response."""

    def __init__(self, event: dict[str, Any]) -> None:
        self.data = json.dumps({"type": event["type"], "raw_object": event["raw_object"]}).encode()
