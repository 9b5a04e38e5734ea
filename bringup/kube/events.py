"""Kubernetes Events about nodes: what bringup tells an operator through
``kubectl get events`` and ``kubectl describe node`` (cordon, taint, quarantine,
admission, drain), and reading them back.

Events are core/v1 ``Event`` objects (what ``kubectl get events`` and ``describe`` list),
in the ``default`` namespace, referring to the Node with its name as UID: the kubelet and
the node controller refer to nodes that way, and ``kubectl describe node`` searches for
``involvedObject.uid=<node name>`` as well as the node's own UID. A repeat of the same
reason and message counts up the existing Event (``count``, ``lastTimestamp``) instead
of adding one, as client-go's event correlator does.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bringup.errors import KubeConflictError, KubeError
from bringup.kube.adapter import KubeAdapter
from bringup.kube.models import _parse

EVENT_NAMESPACE = "default"
COMPONENT = "bringup"
NORMAL, WARNING = "Normal", "Warning"


class EventRecord(BaseModel):
    """One Event as an operator reads it."""

    model_config = ConfigDict(frozen=True)

    name: str
    reason: str
    message: str
    type: str
    count: int
    first: str
    last: str
    source: str
    object_kind: str
    object_name: str


class _Ref(BaseModel):
    kind: str = ""
    name: str = ""


class _Src(BaseModel):
    component: str = ""


class _Meta(BaseModel):
    name: str


class _Event(BaseModel):
    metadata: _Meta
    involvedObject: _Ref
    reason: str = ""
    message: str = ""
    type: str = ""
    count: int | None = None
    firstTimestamp: str | None = None
    lastTimestamp: str | None = None
    eventTime: str | None = None
    source: _Src = Field(default_factory=_Src)
    reportingComponent: str | None = None


def parse_event(data: Any, source: str = "Kubernetes Event") -> EventRecord:
    e: _Event = _parse(_Event, data, source)
    first = e.firstTimestamp or e.eventTime or ""
    return EventRecord(name=e.metadata.name, reason=e.reason, message=e.message, type=e.type,
                       count=e.count or 1, first=first, last=e.lastTimestamp or first,
                       source=e.source.component or e.reportingComponent or "",
                       object_kind=e.involvedObject.kind, object_name=e.involvedObject.name)


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def event_name(node: str, reason: str, message: str, type_: str) -> str:
    """Deterministic, so a repeat finds the Event it repeats (names are DNS subdomains)."""
    digest = hashlib.sha256(f"{reason}|{message}|{type_}|{COMPONENT}".encode()).hexdigest()[:16]
    return f"{node}.{digest}"


def node_event_body(node: str, reason: str, message: str, type_: str = NORMAL, *, instance: str = "",
                    now: str | None = None) -> dict[str, Any]:
    """The core/v1 Event about node ``node`` (pure)."""
    if type_ not in (NORMAL, WARNING):
        raise ValueError(f"event type must be {NORMAL} or {WARNING}, not {type_!r}")
    ts = now or _now()
    message = message if len(message) <= 1024 else message[:1021] + "..."  # the API caps messages at 1 KiB
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": event_name(node, reason, message, type_), "namespace": EVENT_NAMESPACE},
            "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node},
            "reason": reason, "message": message, "type": type_,
            "source": {"component": COMPONENT, **({"host": instance} if instance else {})},
            "reportingComponent": COMPONENT, "reportingInstance": instance,
            "firstTimestamp": ts, "lastTimestamp": ts, "count": 1}


def record_node_event(kube: KubeAdapter, node: str, reason: str, message: str, type_: str = NORMAL, *,
                      instance: str = "") -> EventRecord:
    """Create the Event, or count up the same one recorded before."""
    body = node_event_body(node, reason, message, type_, instance=instance)
    name = body["metadata"]["name"]
    try:
        return parse_event(kube._call(f"record event {reason} on node {node}", kube.core.create_namespaced_event,
                                      EVENT_NAMESPACE, body))
    except KubeConflictError:
        pass  # recorded before: count it up
    for _ in range(3):
        cur = kube._call(f"read event {name}", kube.core.read_namespaced_event, name, EVENT_NAMESPACE)
        patch = {"metadata": {"resourceVersion": cur["metadata"]["resourceVersion"]},
                 "count": int(cur.get("count") or 1) + 1, "lastTimestamp": _now()}
        try:
            return parse_event(kube._call(f"update event {name}", kube.core.patch_namespaced_event, name,
                                          EVENT_NAMESPACE, patch, _content_type="application/merge-patch+json"))
        except KubeConflictError:
            continue
    raise KubeError(f"event {name} on node {node} kept changing; gave up counting it")


def node_events(kube: KubeAdapter, node: str) -> list[EventRecord]:
    """Every Event about the node (any recorder), oldest first."""
    data = kube._call(f"list events of node {node}", kube.core.list_event_for_all_namespaces,
                      field_selector=f"involvedObject.kind=Node,involvedObject.name={node}")
    out = [parse_event(item, f"event list of node {node}") for item in (data or {}).get("items") or []]
    return sorted(out, key=lambda e: (e.last, e.first))
