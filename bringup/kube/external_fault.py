"""NVSentinel's ExternalFault objects on the cluster (issue #27, item 2): how bringup, when
NVSentinel owns the nodes' health, reports its own findings instead of cordoning.

An ExternalFault (EF; NVSentinel's ADR-049, ``docs/designs/049-external-fault.md``) is the
entry door into NVSentinel's ownership for a fault an external system found: group
``nvsentinel.dgxc.nvidia.com``, version ``v1``, cluster-scoped, ``spec.healthEvent`` the
same HealthEvent an ExternalRemediationRequest carries. NVSentinel's reconciler emits it as
a ``CUSTOM`` health event (quarantine, drain, and an ERR owned by the EF, which bringup's
hand-off then takes), and clears it (``FaultCleared=True``, ``status.completionTime``) once
that ERR reports the repair done. An EF is open until then; NVSentinel's webhook admits one
open EF per node, so bringup reports a node's fault only while none is open.

The object's model is here (:class:`Fault`, read by :func:`parse`; an odd object is a
:class:`~bringup.kube.remediation.Malformed` value naming its path); what goes into the
health event is :mod:`bringup.service.fault_report` (pure). Calls go through
:class:`~bringup.kube.adapter.KubeAdapter` (its client, timeout and error mapping).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s

from bringup.errors import KubeConflictError, KubeNotFoundError
from bringup.kube.adapter import KubeAdapter
from bringup.kube.remediation import Malformed, conditions_of, head

GROUP = "nvsentinel.dgxc.nvidia.com"
VERSION = "v1"
PLURAL = "externalfaults"
KIND = "ExternalFault"
REPORTED = "FaultReported"
CLEARED = "FaultCleared"
#: the label bringup's own EFs carry (an operator's or another system's EF is not bringup's)
MANAGED_BY = ("app.kubernetes.io/managed-by", "bringup")


@dataclass(frozen=True)
class Fault:
    """One ExternalFault as bringup reads it."""

    name: str
    node: str
    message: str = ""
    error_codes: tuple[str, ...] = ()
    #: FaultReported / FaultCleared: "True", "False", "Unknown" or "" (not written yet)
    reported: str = ""
    cleared: str = ""
    completed: bool = False
    deleting: bool = False
    #: created by bringup (its label), not by an operator or another system
    ours: bool = False

    @property
    def open(self) -> bool:
        """Not cleared, not completed, not being deleted: the node's fault stands."""
        return self.cleared != "True" and not self.completed and not self.deleting


def parse(obj: Any) -> Fault | Malformed:
    """One EF object (as the API server returns it) as a :class:`Fault`."""
    h = head(obj, KIND)
    if isinstance(h, Malformed):
        return h
    meta = h.meta
    status = obj.get("status") if isinstance(obj.get("status"), Mapping) else {}
    conds = conditions_of(status)
    labels = meta.get("labels") if isinstance(meta.get("labels"), Mapping) else {}
    return Fault(name=h.name, node=h.node, message=str(h.event.get("message") or ""), error_codes=tuple(h.codes),
                 reported=conds.get(REPORTED, ""), cleared=conds.get(CLEARED, ""),
                 completed=bool(status.get("completionTime")), deleting=bool(meta.get("deletionTimestamp")),
                 ours=labels.get(MANAGED_BY[0]) == MANAGED_BY[1])


def _custom(kube: KubeAdapter) -> k8s.CustomObjectsApi:
    return k8s.CustomObjectsApi(kube.api_client)


def faults(kube: KubeAdapter) -> list[Fault | Malformed]:
    """Every EF on the cluster, read; an odd one is a :class:`Malformed` in the list. The
    kind not served: NVSentinel's CRD is not installed, a
    :class:`~bringup.errors.KubeNotFoundError` saying so."""
    try:
        doc = kube._call(f"list {PLURAL}.{GROUP}", _custom(kube).list_cluster_custom_object, GROUP, VERSION, PLURAL)
    except KubeNotFoundError as exc:
        raise KubeNotFoundError(f"the cluster serves no {PLURAL}.{GROUP}/{VERSION} ({exc})",
                                hint="health_owner is nvsentinel: install NVSentinel's janitor CRDs (ExternalFault, "
                                     "ADR-049), or set health_owner: bringup") from None
    return [parse(item) for item in (doc or {}).get("items") or []]


def open_fault(kube: KubeAdapter, node: str) -> Fault | None:
    """The open EF of ``node`` (whoever created it), None when it has none."""
    return next((f for f in faults(kube) if isinstance(f, Fault) and f.node == node and f.open), None)


def create(kube: KubeAdapter, body: dict[str, Any]) -> str:
    """Create the EF ``body``; its name. One of that name already there (a retried run that
    created it before its answer was lost) is the same report: its name too."""
    name = body["metadata"]["name"]
    try:
        kube._call(f"create {PLURAL} {name}", _custom(kube).create_cluster_custom_object, GROUP, VERSION, PLURAL,
                   body)
    except KubeConflictError:
        pass    # AlreadyExists: the name is the node's and the finding's time, so it is this report
    return name
