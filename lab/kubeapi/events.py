"""Events the stand-in's own components (the kubelet stand-in) record, shaped as the
real kubelet records them: core/v1 ``Event`` in the object's namespace (``default`` for
a Node, whose reference carries the node name as UID, as the kubelet's does), with
``source`` and ``reportingComponent``/``reportingInstance`` set. A repeat of the same
reason and message on the same object counts up instead of adding a new Event, as
client-go's event correlator does. Names are ``<object>.<time in hex>``, as the real
recorder makes them, so a list comes back oldest first.
"""

from __future__ import annotations

import time
from typing import Any

from .resources import find
from .store import Store, now_rfc3339

EVENTS = find("", "v1", "events")


def reference(obj: dict[str, Any], field_path: str = "") -> dict[str, Any]:
    meta = obj["metadata"]
    ref = {"kind": obj.get("kind", ""), "apiVersion": obj.get("apiVersion", "v1"), "name": meta["name"],
           "uid": meta.get("uid", ""), "resourceVersion": meta.get("resourceVersion", "")}
    if meta.get("namespace"):
        ref["namespace"] = meta["namespace"]
    if obj.get("kind") == "Node":
        ref["uid"] = meta["name"]  # the kubelet's node reference: UID is the node name
        ref.pop("resourceVersion", None)
    if field_path:
        ref["fieldPath"] = field_path
    return ref


def record(store: Store, obj: dict[str, Any], reason: str, message: str, *, type_: str = "Normal",
           component: str = "kubelet", host: str = "", field_path: str = "") -> dict[str, Any]:
    ref = reference(obj, field_path)
    ns = ref.get("namespace") or "default"
    now = now_rfc3339()

    def same(e: dict[str, Any]) -> bool:
        return ((e.get("involvedObject") or {}).get("uid"), (e.get("involvedObject") or {}).get("fieldPath", ""),
                e.get("reason"), e.get("message"), e.get("type"), (e.get("source") or {}).get("component")) == (
                ref["uid"], field_path, reason, message, type_, component)
    with store.lock:
        found, _ = store.list(EVENTS, ns, same)
        if found:
            cur = found[0]
            cur["count"] = int(cur.get("count") or 1) + 1
            cur["lastTimestamp"] = now
            return store.replace(EVENTS, ns, cur["metadata"]["name"], cur, check_rv=False)
        source = {"component": component, **({"host": host} if host else {})}
        # named as the real recorder names them: the object, then the time in hex
        return store.create(EVENTS, ns, {
            "metadata": {"name": f"{ref['name']}.{time.time_ns():x}"}, "involvedObject": ref, "reason": reason,
            "message": message, "type": type_, "source": source, "firstTimestamp": now, "lastTimestamp": now,
            "count": 1, "reportingComponent": component, "reportingInstance": host})
