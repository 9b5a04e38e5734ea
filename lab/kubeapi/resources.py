"""The resource types the stand-in serves, and the discovery documents built from them.

Only what the bringup adapter (and the pool acceptance run's Jobs and Kueue queues, and
GPU-level quarantine through DRA device taints), ``kubeadm join`` and ``kubectl`` (get /
label / taint / cordon / drain / logs / describe / get events / get -w) use. Field
selectors per resource are those the real server indexes.

A group may be served in several versions (``GROUPS``, the preferred one first), as
``resource.k8s.io`` is: ResourceSlices in ``v1`` and ``v1beta2``, DeviceTaintRules in
``v1beta2`` only (a v1.36 server's shape). One object is one object whichever version
wrote it (the store keys by group and plural), and it is answered in the version asked.

CustomResourceDefinitions add resources at run time (``crds.py``): a :class:`Catalog` is
what one server serves, the built-in resources and those its CRDs registered.
"""

from __future__ import annotations

import re
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
    #: the rest is what a CustomResourceDefinition says (built-in resources leave it empty):
    #: its name, the resource's singular name and categories, and its printer columns as
    #: (name, type, format, description, priority, jsonPath)
    crd: str = ""
    singular: str = ""
    categories: tuple[str, ...] = ()
    columns: tuple[tuple[str, str, str, str, int, str], ...] = ()

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
    # the definitions of custom resources (crds.py registers what each one defines)
    Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
             ("crd", "crds"), frozenset(_META), ("status",)),
]

#: each group's versions, the preferred one first
GROUPS: dict[str, tuple[str, ...]] = {
    "apps": ("v1",), "policy": ("v1",), "coordination.k8s.io": ("v1",), "batch": ("v1",),
    "kueue.x-k8s.io": ("v1beta1",), "resource.k8s.io": ("v1", "v1beta2"), "apiextensions.k8s.io": ("v1",)}


def version_priority(version: str) -> tuple:
    """Sort key of the Kubernetes version priority (CRD versioning docs, "Version
    priority"): GA before beta before alpha, a higher major and then a higher minor
    number first; versions not of that form last, alphabetically."""
    m = re.fullmatch(r"v([1-9][0-9]*)(?:(alpha|beta)([1-9][0-9]*))?", version)
    if not m:
        return (3, 0, 0, version)
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (stage, -int(m.group(1)), -int(m.group(3) or 0), "")


class Catalog:
    """The resources one server serves: the built-in ones, then those registered by
    CustomResourceDefinitions (keyed by the CRD's name), and discovery built from them."""

    def __init__(self) -> None:
        self.custom: dict[str, list[Resource]] = {}

    def register(self, crd: str, resources: list[Resource]) -> None:
        """Serve ``resources`` for the CRD ``crd`` (replacing what it served before). A
        group/version/plural the stand-in serves built in stays the built-in one."""
        self.custom[crd] = [r for r in resources if _builtin(r.group, r.version, r.plural) is None]

    def unregister(self, crd: str) -> list[Resource]:
        return self.custom.pop(crd, [])

    def resources(self) -> list[Resource]:
        return RESOURCES + [r for rs in self.custom.values() for r in rs]

    def groups(self) -> dict[str, tuple[str, ...]]:
        """Each group's versions, the preferred one first: a built-in group's as ``GROUPS``
        says (versions CRDs add to it after them), the rest by version priority."""
        extra: dict[str, set[str]] = {}
        for rs in self.custom.values():
            for r in rs:
                if r.version not in GROUPS.get(r.group, ()):
                    extra.setdefault(r.group, set()).add(r.version)
        out = dict(GROUPS)
        for group in sorted(extra):
            out[group] = out.get(group, ()) + tuple(sorted(extra[group], key=version_priority))
        return out

    def find(self, group: str, version: str, plural: str) -> Resource | None:
        for r in self.resources():
            if (r.group, r.version, r.plural) == (group, version, plural):
                return r
        return None

    def by_kind(self, api_version: str, kind: str) -> Resource | None:
        for r in self.resources():
            if r.api_version == api_version and r.kind == kind:
                return r
        return None

    def resource_list(self, group: str, version: str) -> dict | None:
        """``APIResourceList`` of one group/version, including subresources."""
        items = []
        for r in self.resources():
            if (r.group, r.version) != (group, version):
                continue
            entry = {"name": r.plural, "singularName": r.singular or r.kind.lower(), "namespaced": r.namespaced,
                     "kind": r.kind, "verbs": VERBS, "shortNames": list(r.short_names)}
            if r.categories:
                entry["categories"] = list(r.categories)
            items.append(entry)
            for sub in r.subresources:
                if sub == "eviction":
                    # kubectl drain finds the Eviction API's group/version from this entry
                    items.append({"name": f"{r.plural}/eviction", "singularName": "", "namespaced": True,
                                  "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]})
                elif sub == "log":
                    items.append({"name": f"{r.plural}/log", "singularName": "", "namespaced": True,
                                  "kind": "Pod", "verbs": ["get"]})
                else:
                    items.append({"name": f"{r.plural}/{sub}", "singularName": "", "namespaced": r.namespaced,
                                  "kind": r.kind, "verbs": ["get", "patch", "update"]})
        if not items:
            return None
        gv = f"{group}/{version}" if group else version
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": items}

    def api_group(self, name: str) -> dict | None:
        """``APIGroup`` of one group: every version served, the preferred one first."""
        groups = self.groups()
        if name not in groups:
            return None
        versions = [{"groupVersion": f"{name}/{v}", "version": v} for v in groups[name]]
        return {"kind": "APIGroup", "apiVersion": "v1", "name": name, "versions": versions,
                "preferredVersion": versions[0]}

    def api_group_list(self) -> dict:
        groups = []
        for g in self.groups():
            doc = self.api_group(g) or {}
            groups.append({k: doc[k] for k in ("name", "versions", "preferredVersion")})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _builtin(group: str, version: str, plural: str) -> Resource | None:
    for r in RESOURCES:
        if (r.group, r.version, r.plural) == (group, version, plural):
            return r
    return None


#: the built-in resources alone (what the module-level functions below answer from)
BUILTIN = Catalog()
find = _builtin
by_kind = BUILTIN.by_kind
resource_list = BUILTIN.resource_list
api_group = BUILTIN.api_group
api_group_list = BUILTIN.api_group_list
