"""Typed views of Kubernetes objects and of the adapter's results.

Only the fields bringup acts on are parsed; a missing or malformed one raises
:class:`~bringup.errors.ParseError` with its JSON path.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bringup.admission.labels import Taint
from bringup.errors import ParseError


class NodeState(BaseModel):
    """What the cluster says about one node. ``exists=False`` when it never registered."""

    model_config = ConfigDict(frozen=True)

    name: str
    exists: bool
    ready: bool = False
    ready_reason: str = ""
    unschedulable: bool = False
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)
    capacity: dict[str, str] = Field(default_factory=dict)
    #: what pods may ask for (the GPUs the device plugin offers); empty: not reported
    allocatable: dict[str, str] = Field(default_factory=dict)
    #: whether the node reports a Ready condition at all (``ready`` is False either way)
    has_ready: bool = False
    addresses: dict[str, str] = Field(default_factory=dict)
    resource_version: str = ""

    def has_taint(self, key: str) -> bool:
        return any(t.key == key for t in self.taints)


class _Meta(BaseModel):
    name: str
    namespace: str = ""
    uid: str = ""
    resourceVersion: str = ""
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    ownerReferences: list[dict[str, Any]] | None = None


class _Condition(BaseModel):
    type: str
    status: str
    reason: str = ""
    message: str = ""


class _NodeSpec(BaseModel):
    unschedulable: bool | None = None
    taints: list[Taint] | None = None


class _NodeStatus(BaseModel):
    conditions: list[_Condition] | None = None
    capacity: dict[str, str] | None = None
    allocatable: dict[str, str] | None = None
    addresses: list[dict[str, str]] | None = None


class _Node(BaseModel):
    metadata: _Meta
    spec: _NodeSpec = Field(default_factory=_NodeSpec)
    status: _NodeStatus = Field(default_factory=_NodeStatus)


def _parse(model: type[BaseModel], data: Any, source: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
        raise ParseError(first["msg"], path=path, source=source,
                         hint="the API server's answer is not a Kubernetes object we understand") from None


def parse_node(data: Any) -> NodeState:
    n: _Node = _parse(_Node, data, "Kubernetes Node")
    ready = next((c for c in n.status.conditions or [] if c.type == "Ready"), None)
    return NodeState(
        name=n.metadata.name, exists=True, ready=bool(ready and ready.status == "True"),
        ready_reason=(ready.reason or ready.message) if ready else "no Ready condition reported",
        unschedulable=bool(n.spec.unschedulable), labels=n.metadata.labels or {},
        annotations=n.metadata.annotations or {}, taints=n.spec.taints or [],
        capacity=n.status.capacity or {}, allocatable=n.status.allocatable or {}, has_ready=ready is not None,
        addresses={a.get("type", ""): a.get("address", "") for a in n.status.addresses or []},
        resource_version=n.metadata.resourceVersion)


class PodRef(BaseModel):
    """A pod on a node being drained."""

    model_config = ConfigDict(frozen=True)

    namespace: str
    name: str
    uid: str = ""
    owner_kind: str = ""
    mirror: bool = False
    phase: str = ""

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class _Pod(BaseModel):
    metadata: _Meta
    status: dict[str, Any] | None = None


def parse_pod(data: Any, source: str = "Kubernetes Pod") -> PodRef:
    p: _Pod = _parse(_Pod, data, source)
    owner = next((o for o in p.metadata.ownerReferences or [] if o.get("controller")), None)
    return PodRef(namespace=p.metadata.namespace, name=p.metadata.name, uid=p.metadata.uid,
                  owner_kind=str(owner.get("kind", "")) if owner else "",
                  mirror="kubernetes.io/config.mirror" in (p.metadata.annotations or {}),
                  phase=str((p.status or {}).get("phase", "")))


class JoinCommand(BaseModel):
    """What ``kubeadm join`` needs. The token is a credential: it is kept out of repr."""

    model_config = ConfigDict(frozen=True)

    endpoint: str                      # host:port of the API server
    token: str = Field(repr=False)
    ca_cert_hash: str                  # sha256:<hex>

    def argv(self, node_name: str | None = None) -> list[str]:
        out = ["kubeadm", "join", self.endpoint, "--token", self.token,
               "--discovery-token-ca-cert-hash", self.ca_cert_hash]
        if node_name:
            out += ["--node-name", node_name]
        return out


class QuarantineResult(BaseModel):
    """Outcome of :meth:`KubeAdapter.quarantine`; ``applied`` is False when the node never
    joined, which the caller records elsewhere (NetBox)."""

    model_config = ConfigDict(frozen=True)

    node: str
    applied: bool
    taint: Taint
    message: str


class DrainResult(BaseModel):
    """A drain that finished: every pod but DaemonSet-owned and mirror ones gone (one that
    did not finish raises :class:`~bringup.errors.DrainBlocked` instead)."""

    model_config = ConfigDict(frozen=True)

    node: str
    evicted: list[str] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)   # DaemonSet-owned and mirror pods
    seconds: float = 0.0                               # how long the whole drain took
