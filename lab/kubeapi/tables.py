"""Server-side printing: ``meta.k8s.io/v1`` Table responses as ``kubectl get`` asks for
them (``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``). Each row carries the
object's metadata (``PartialObjectMetadata``) so ``kubectl get -L label`` can add columns.

A custom resource is printed as its CRD says: Name, then the version's
``additionalPrinterColumns`` (their ``jsonPath`` taken as the real server takes it: the
first result; the forms handled are ``.a.b``, ``[n]`` and ``[?(@.k=="v")]``), or Name and
Age when it names none; a ``date`` column shows the time as an age.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

from .resources import Resource


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


_STEP = re.compile(r"""\.([^.\[]+)|\[(\d+)\]|\[\?\(@\.([\w.]+)\s*==\s*["']([^"']*)["']\)\]""")


def jsonpath_first(obj: Any, path: str) -> Any:
    """The first value ``path`` (a CRD printer column's ``jsonPath``) finds, or None."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    found: list[Any] = [obj]
    pos = 0
    while pos < len(path) and found:
        m = _STEP.match(path, pos)
        if not m:
            return None
        field, index, key, value = m.groups()
        nxt: list[Any] = []
        for cur in found:
            if field is not None and isinstance(cur, dict) and field in cur:
                nxt.append(cur[field])
            elif index is not None and isinstance(cur, list) and int(index) < len(cur):
                nxt.append(cur[int(index)])
            elif key is not None and isinstance(cur, list):
                nxt += [e for e in cur if isinstance(e, dict) and str(jsonpath_first(e, "." + key)) == value]
        found, pos = nxt, m.end()
    return found[0] if found else None


def _cell(col: tuple[str, str, str, str, int, str], obj: dict[str, Any]) -> Any:
    value = jsonpath_first(obj, col[5])
    if value is None:
        return None  # kubectl prints <none>
    if col[1] == "date":
        return age(str(value))
    if col[1] == "string" and not isinstance(value, str):
        return value if isinstance(value, int | float | bool) else json.dumps(value)
    return value


def custom_columns(res: Resource) -> tuple[list[dict[str, Any]], Any]:
    """A custom resource's columns and row function."""
    name = _col("Name", fmt="name")
    if not res.columns:
        return [name, _col("Age", "date")], lambda o: [o["metadata"]["name"],
                                                      age(o["metadata"].get("creationTimestamp"))]
    cols = [name] + [{"name": c[0], "type": c[1], "format": c[2], "description": c[3] or c[0], "priority": c[4]}
                     for c in res.columns]
    return cols, lambda o: [o["metadata"]["name"], *(_cell(c, o) for c in res.columns)]


def to_table(what: Resource | str, items: list[dict[str, Any]], resource_version: str) -> dict[str, Any]:
    """The Table of ``items`` of a resource (or of a built-in resource's plural)."""
    if isinstance(what, Resource) and what.crd:
        cols, row_of = custom_columns(what)
    else:
        plural = what.plural if isinstance(what, Resource) else what
        cols, row_of = COLUMNS.get(plural, ([_col("Name", fmt="name"), _col("Age")],
                                            lambda o: [o["metadata"]["name"],
                                                       age(o["metadata"].get("creationTimestamp"))]))
    rows = [{"cells": row_of(o),
             "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                        "metadata": o["metadata"]}} for o in items]
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": resource_version}, "columnDefinitions": cols, "rows": rows}
