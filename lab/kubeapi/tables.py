"""Server-side printing: ``meta.k8s.io/v1`` Table responses as ``kubectl get`` asks for
them (``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``). Each row carries the
object's metadata (``PartialObjectMetadata``) so ``kubectl get -L label`` can add columns.
"""

from __future__ import annotations

import datetime as dt
from typing import Any


def age(ts: str | None) -> str:
    if not ts:
        return "<unknown>"
    secs = int((dt.datetime.now(dt.UTC) - dt.datetime.fromisoformat(ts)).total_seconds())
    secs = max(secs, 0)
    if secs < 120:
        return f"{secs}s"
    if secs < 7200:
        return f"{secs // 60}m"
    if secs < 172800:
        return f"{secs // 3600}h"
    return f"{secs // 86400}d"


def _node_row(o: dict[str, Any]) -> list[Any]:
    ready = next((c for c in (o.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), None)
    status = "Ready" if ready and ready.get("status") == "True" else ("NotReady" if ready else "Unknown")
    if (o.get("spec") or {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    roles = sorted(k.split("/", 1)[1] for k in (o["metadata"].get("labels") or {})
                   if k.startswith("node-role.kubernetes.io/"))
    st = o.get("status") or {}
    info = st.get("nodeInfo") or {}
    addr = {a.get("type"): a.get("address") for a in st.get("addresses") or []}
    return [o["metadata"]["name"], status, ",".join(roles) or "<none>",
            age(o["metadata"].get("creationTimestamp")), info.get("kubeletVersion", ""),
            addr.get("InternalIP") or "<none>", addr.get("ExternalIP") or "<none>",
            info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>"]


def _pod_row(o: dict[str, Any]) -> list[Any]:
    st = o.get("status") or {}
    cs = st.get("containerStatuses") or []
    total = len((o.get("spec") or {}).get("containers") or [])
    ready = sum(1 for c in cs if c.get("ready"))
    restarts = sum(int(c.get("restartCount", 0)) for c in cs)
    phase = st.get("reason") or st.get("phase", "Unknown")
    for c in reversed(cs):  # as the real printer: a container's waiting/terminated reason says more
        state = c.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            phase = state["waiting"]["reason"]
        elif "terminated" in state:
            t = state["terminated"]
            phase = t.get("reason") or (f"Signal:{t['signal']}" if t.get("signal") else
                                        f"ExitCode:{t.get('exitCode', 0)}")
    if o["metadata"].get("deletionTimestamp"):
        phase = "Terminating"
    return [o["metadata"]["name"], f"{ready}/{total}", phase, restarts,
            age(o["metadata"].get("creationTimestamp")), st.get("podIP") or "<none>",
            (o.get("spec") or {}).get("nodeName") or "<none>", "<none>", "<none>"]


def _event_row(o: dict[str, Any]) -> list[Any]:
    ref = o.get("involvedObject") or {}
    kind = (ref.get("kind") or "").lower()
    target = f"{kind}/{ref['name']}" if ref.get("name") else kind
    src = o.get("source") or {}
    source = ", ".join(x for x in (src.get("component") or o.get("reportingComponent"),
                                   src.get("host") or o.get("reportingInstance")) if x)
    first = age(o.get("firstTimestamp") or o.get("eventTime"))
    last = age(o["lastTimestamp"]) if o.get("lastTimestamp") else first
    return [last, o.get("type", ""), o.get("reason", ""), target, ref.get("fieldPath", ""), source,
            (o.get("message") or "").strip(), first, int(o.get("count") or 1), o["metadata"]["name"]]


def _pdb_row(o: dict[str, Any]) -> list[Any]:
    spec, st = o.get("spec") or {}, o.get("status") or {}
    return [o["metadata"]["name"], str(spec.get("minAvailable", "N/A")), str(spec.get("maxUnavailable", "N/A")),
            int(st.get("disruptionsAllowed", 0)), age(o["metadata"].get("creationTimestamp"))]


def _col(name: str, typ: str = "string", fmt: str = "", priority: int = 0) -> dict[str, Any]:
    return {"name": name, "type": typ, "format": fmt, "description": name, "priority": priority}


COLUMNS = {
    # priority-1 columns are the extra ones ``-o wide`` shows
    "nodes": ([_col("Name", fmt="name"), _col("Status"), _col("Roles"), _col("Age"), _col("Version"),
               _col("Internal-IP", priority=1), _col("External-IP", priority=1), _col("OS-Image", priority=1),
               _col("Kernel-Version", priority=1), _col("Container-Runtime", priority=1)], _node_row),
    "pods": ([_col("Name", fmt="name"), _col("Ready"), _col("Status"), _col("Restarts", "integer"),
              _col("Age"), _col("IP", priority=1), _col("Node", priority=1), _col("Nominated Node", priority=1),
              _col("Readiness Gates", priority=1)], _pod_row),
    "leases": ([_col("Name", fmt="name"), _col("Holder"), _col("Age")],
               lambda o: [o["metadata"]["name"], (o.get("spec") or {}).get("holderIdentity", ""),
                          age(o["metadata"].get("creationTimestamp"))]),
    "poddisruptionbudgets": ([_col("Name", fmt="name"), _col("Min Available"), _col("Max Unavailable"),
                              _col("Allowed Disruptions", "integer"), _col("Age")], _pdb_row),
    # kubernetes/kubernetes pkg/printers/internalversion/printers.go, nodeResourceSliceColumnDefinitions
    "resourceslices": ([_col("Name", fmt="name"), _col("Node"), _col("Driver"), _col("Pool"), _col("Age")],
                       lambda o: [o["metadata"]["name"], (o.get("spec") or {}).get("nodeName") or "<none>",
                                  (o.get("spec") or {}).get("driver", ""),
                                  ((o.get("spec") or {}).get("pool") or {}).get("name", ""),
                                  age(o["metadata"].get("creationTimestamp"))]),
    # the server always prints the wide columns; kubectl hides the priority-1 ones
    "events": ([_col("Last Seen"), _col("Type"), _col("Reason"), _col("Object"), _col("Subobject", priority=1),
                _col("Source", priority=1), _col("Message"), _col("First Seen", priority=1),
                _col("Count", priority=1), _col("Name", fmt="name", priority=1)], _event_row),
}


def to_table(plural: str, items: list[dict[str, Any]], resource_version: str) -> dict[str, Any]:
    cols, row_of = COLUMNS.get(plural, ([_col("Name", fmt="name"), _col("Age")],
                                        lambda o: [o["metadata"]["name"],
                                                   age(o["metadata"].get("creationTimestamp"))]))
    rows = [{"cells": row_of(o),
             "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                        "metadata": o["metadata"]}} for o in items]
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": resource_version}, "columnDefinitions": cols, "rows": rows}
