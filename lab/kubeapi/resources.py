"""The resource types the stand-in serves, and the discovery documents built from them.

Only what the bringup adapter (and the pool acceptance run's Jobs and Kueue queues, and
GPU-level quarantine through DRA device taints), ``kubeadm join`` and ``kubectl`` (get /
label / taint / cordon / drain / logs / describe / get events / get -w) use. Field
selectors per resource are those the real server indexes.

A group may be served in several versions (``GROUPS``, the preferred one first), as
``resource.k8s.io`` is: ResourceSlices in ``v1`` and ``v1beta2``, DeviceTaintRules in
``v1beta2`` only (a v1.36 server's shape). One object is one object whichever version
wrote it (the store keys by group and plural), and it is answered in the version asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    fields: frozenset[str] = field(default_factory=frozenset)
    subresources: tuple[str, ...] = ()

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_version(self) -> str:
        return self.group_version


_META = {"metadata.name", "metadata.namespace"}

RESOURCES: list[Resource] = [
    Resource("", "v1", "namespaces", "Namespace", False, ("ns",), frozenset(_META | {"status.phase"})),
    Resource("", "v1", "nodes", "Node", False, ("no",), frozenset(_META | {"spec.unschedulable"}),
             ("status",)),
    Resource("", "v1", "pods", "Pod", True, ("po",),
             frozenset(_META | {"spec.nodeName", "status.phase", "spec.restartPolicy",
                                "spec.schedulerName", "spec.serviceAccountName", "status.podIP"}),
             ("eviction", "status", "log")),
    Resource("", "v1", "secrets", "Secret", True, (), frozenset(_META | {"type"})),
    Resource("", "v1", "configmaps", "ConfigMap", True, ("cm",), frozenset(_META)),
    Resource("", "v1", "events", "Event", True, ("ev",),
             frozenset(_META | {f"involvedObject.{f}" for f in ("name", "kind", "namespace", "uid", "apiVersion",
                                                                 "resourceVersion", "fieldPath")}
                       | {"reason", "type", "reportingComponent"})),
    Resource("apps", "v1", "daemonsets", "DaemonSet", True, ("ds",), frozenset(_META)),
    Resource("apps", "v1", "replicasets", "ReplicaSet", True, ("rs",), frozenset(_META)),
    Resource("coordination.k8s.io", "v1", "leases", "Lease", True, (), frozenset(_META)),
    Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",),
             frozenset(_META), ("status",)),
    # the pool acceptance job (jobs.py): batch Jobs and Kueue's queues and Workloads
    Resource("batch", "v1", "jobs", "Job", True, (), frozenset(_META | {"status.successful"}), ("status",)),
    Resource("kueue.x-k8s.io", "v1beta1", "clusterqueues", "ClusterQueue", False, ("cq",), frozenset(_META),
             ("status",)),
    Resource("kueue.x-k8s.io", "v1beta1", "localqueues", "LocalQueue", True, ("lq",), frozenset(_META),
             ("status",)),
    Resource("kueue.x-k8s.io", "v1beta1", "workloads", "Workload", True, ("wl",), frozenset(_META), ("status",)),
    Resource("kueue.x-k8s.io", "v1beta1", "resourceflavors", "ResourceFlavor", False, ("rf",), frozenset(_META)),
    # DRA (resource.k8s.io): the devices a DRA driver publishes per node, and the admin's
    # DeviceTaintRules over them (bringup/kube/device_taints.py); the real server indexes
    # ResourceSlices by node and driver (pkg/registry/resource/resourceslice, selectable fields)
    *(Resource("resource.k8s.io", v, "resourceslices", "ResourceSlice", False, (),
               frozenset(_META | {"spec.nodeName", "spec.driver"})) for v in ("v1", "v1beta2")),
    Resource("resource.k8s.io", "v1beta2", "devicetaintrules", "DeviceTaintRule", False, (), frozenset(_META),
             ("status",)),
]

#: each group's versions, the preferred one first
GROUPS: dict[str, tuple[str, ...]] = {
    "apps": ("v1",), "policy": ("v1",), "coordination.k8s.io": ("v1",), "batch": ("v1",),
    "kueue.x-k8s.io": ("v1beta1",), "resource.k8s.io": ("v1", "v1beta2")}


def find(group: str, version: str, plural: str) -> Resource | None:
    for r in RESOURCES:
        if (r.group, r.version, r.plural) == (group, version, plural):
            return r
    return None


def by_kind(api_version: str, kind: str) -> Resource | None:
    for r in RESOURCES:
        if r.api_version == api_version and r.kind == kind:
            return r
    return None


def resource_list(group: str, version: str) -> dict | None:
    """``APIResourceList`` of one group/version, including subresources."""
    items = []
    for r in RESOURCES:
        if (r.group, r.version) != (group, version):
            continue
        items.append({"name": r.plural, "singularName": r.kind.lower(), "namespaced": r.namespaced,
                      "kind": r.kind, "verbs": VERBS, "shortNames": list(r.short_names)})
        for sub in r.subresources:
            if sub == "eviction":
                # kubectl drain finds the Eviction API's group/version from this entry
                items.append({"name": f"{r.plural}/eviction", "singularName": "", "namespaced": True,
                              "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]})
            elif sub == "log":
                items.append({"name": f"{r.plural}/log", "singularName": "", "namespaced": True, "kind": "Pod",
                              "verbs": ["get"]})
            else:
                items.append({"name": f"{r.plural}/{sub}", "singularName": "", "namespaced": r.namespaced,
                              "kind": r.kind, "verbs": ["get", "patch", "update"]})
    if not items:
        return None
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": items}


def api_group(name: str) -> dict | None:
    """``APIGroup`` of one group: every version served, the preferred one first."""
    if name not in GROUPS:
        return None
    versions = [{"groupVersion": f"{name}/{v}", "version": v} for v in GROUPS[name]]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": name, "versions": versions,
            "preferredVersion": versions[0]}


def api_group_list() -> dict:
    groups = []
    for g in GROUPS:
        doc = api_group(g) or {}
        groups.append({k: doc[k] for k in ("name", "versions", "preferredVersion")})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
