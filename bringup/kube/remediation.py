"""NVSentinel's ExternalRemediationRequests on the cluster (issue #27, item 2): listed,
marked accepted by bringup, and answered with ``ExternalRemediationComplete``.

The objects' model is here (:class:`Request`, read by :func:`parse`: a field of the wrong
shape is a :class:`Malformed` value naming its path, never an exception that ends the
list); what bringup does with them and what it answers is :mod:`bringup.service.handoff`
(pure). Calls go through :class:`~bringup.kube.adapter.KubeAdapter` (``kube._call``: its
client, timeout and error mapping). bringup's progress is an
annotation on the ERR (``bringup.io/handoff-accepted``: when it took the node); the
status is written through the ``status`` subresource, keeping every condition bringup does
not own (NVSentinel's ``NVSentinelOwnershipReleased``) as it is, and with the object's
``resourceVersion``, so a concurrent write is a conflict retried on the fresh object,
never a lost update.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes import client as k8s

from bringup.errors import KubeConflictError, KubeNotFoundError
from bringup.kube.adapter import KubeAdapter
from bringup.times import parse_time

#: the API groups NVSentinel serves the kind from, tried in this order: the released one
#: (its tutorial, docs/tutorials/integrating-external-remediation.md: nvsentinel.dgxc.nvidia.com/v1,
#: cluster-scoped, short name extrr) and the one its chart's generated CRD carried before
#: (charts/janitor/crds/external_remediation.crd.yaml: nvsentinel.nvidia.com/v1). ADR-040's
#: example, written before the release, says v1alpha1 and a namespace; no CRD serves that.
GROUPS = ("nvsentinel.dgxc.nvidia.com", "nvsentinel.nvidia.com")
VERSION = "v1"
PLURAL = "externalremediationrequests"
RELEASED = "NVSentinelOwnershipReleased"
COMPLETE = "ExternalRemediationComplete"
#: NVSentinel's release taint key (its value is the ERR's name)
RELEASE_TAINT = "nvsentinel.nvidia.com/external-remediation"
#: the annotation bringup keeps its progress in on the ERR (the status is NVSentinel's and
#: the external system's conditions only)
ACCEPTED = "bringup.io/handoff-accepted"


@dataclass(frozen=True)
class Request:
    """One ExternalRemediationRequest as bringup reads it."""

    name: str
    node: str
    #: the API group the cluster serves it from (one of :data:`GROUPS`)
    group: str = GROUPS[0]
    message: str = ""
    check: str = ""
    component: str = ""
    error_codes: tuple[str, ...] = ()
    recommended: str = ""
    custom_action: str = ""
    fatal: bool = False
    gpus: tuple[int, ...] = ()
    #: the two conditions' status: "True", "False", "Unknown" or "" (not written yet)
    released: str = ""
    complete: str = ""
    #: when bringup accepted it (its annotation), None before
    accepted_at: datetime | None = None
    deleting: bool = False
    #: the ExternalFault that owns it (ADR-049: the ERR of a fault an external system, such as
    #: bringup, reported), "" when NVSentinel found the fault itself
    raised_by: str = ""

    @property
    def open(self) -> bool:
        """NVSentinel released the node and nobody has said it is done."""
        return self.released == "True" and self.complete not in ("True", "False") and not self.deleting

    def facts(self) -> list[dict[str, Any]]:
        """The facts a policy rule is checked against: one set per error code (a rule on
        ``error_code`` matches when any of the event's codes does)."""
        # NVSentinel writes the class in either case (its label says "gpu", events "GPU")
        base = {"component": self.component.upper(), "check": self.check, "recommended": self.recommended,
                "custom_action": self.custom_action, "fatal": "true" if self.fatal else "false"}
        return [{**base, "error_code": c} for c in self.error_codes or ("",)]


@dataclass(frozen=True)
class Malformed:
    """An ERR bringup cannot read: which one and which field."""

    name: str
    path: str
    message: str


def conditions_of(status: Any) -> dict[str, str]:
    """type -> status of the object's conditions (none written yet: empty)."""
    listed = status.get("conditions") if isinstance(status, Mapping) else None
    return {str(c["type"]): str(c.get("status") or "") for c in listed or []
            if isinstance(c, Mapping) and isinstance(c.get("type"), str)}


@dataclass(frozen=True)
class Head:
    """What every NVSentinel object carrying a HealthEvent has: its metadata, the event,
    the event's node and error codes."""

    name: str
    meta: Mapping[str, Any]
    event: Mapping[str, Any]
    node: str
    codes: list[str]


def head(obj: Any, kind: str) -> Head | Malformed:
    """The :class:`Head` of an ERR or ExternalFault (``kind``), or the field that is wrong."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    name = str((meta or {}).get("name") or "?")
    if not isinstance(meta, Mapping) or not meta.get("name"):
        return Malformed(name, "metadata.name", f"an {kind} without a name")
    event = ((obj.get("spec") or {}) if isinstance(obj.get("spec"), Mapping) else {}).get("healthEvent")
    if not isinstance(event, Mapping):
        return Malformed(name, "spec.healthEvent", "missing or not an object")
    node = event.get("nodeName")
    if not isinstance(node, str) or not node:
        return Malformed(name, "spec.healthEvent.nodeName", f"{node!r} is not a node name")
    codes = event.get("errorCode") or []
    if isinstance(codes, str):
        codes = [codes]
    if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
        return Malformed(name, "spec.healthEvent.errorCode", f"{codes!r} is not a list of codes")
    return Head(name, meta, event, node, codes)


def parse(obj: Any) -> Request | Malformed:
    """One ERR object (as the API server returns it) as a :class:`Request` of the group its
    ``apiVersion`` names."""
    h = head(obj, "ExternalRemediationRequest")
    if isinstance(h, Malformed):
        return h
    name, meta, event, node, codes = h.name, h.meta, h.event, h.node, h.codes
    gpus = []
    for i, e in enumerate(event.get("entitiesImpacted") or []):
        if not isinstance(e, Mapping):
            return Malformed(name, f"spec.healthEvent.entitiesImpacted[{i}]", "not an object")
        value = str(e.get("entityValue", ""))
        if str(e.get("entityType", "")).upper() == "GPU" and value.isdigit():
            gpus.append(int(value))
    conds = conditions_of(obj.get("status"))
    annotations = meta.get("annotations") or {}
    group = str(obj.get("apiVersion") or "").partition("/")[0]
    owners = meta.get("ownerReferences") if isinstance(meta.get("ownerReferences"), list) else []
    raised_by = next((str(o.get("name") or "") for o in owners
                      if isinstance(o, Mapping) and o.get("kind") == "ExternalFault"), "")
    return Request(name=name, node=node, group=group if group in GROUPS else GROUPS[0],
                   message=str(event.get("message") or ""), check=str(event.get("checkName") or ""),
                   component=str(event.get("componentClass") or ""), error_codes=tuple(codes),
                   recommended=str(event.get("recommendedAction") or ""),
                   custom_action=str(event.get("customRecommendedAction") or ""),
                   fatal=event.get("isFatal") is True, gpus=tuple(sorted(set(gpus))),
                   released=conds.get(RELEASED, ""), complete=conds.get(COMPLETE, ""),
                   accepted_at=parse_time(annotations.get(ACCEPTED)) if isinstance(annotations, Mapping) else None,
                   deleting=bool(meta.get("deletionTimestamp")), raised_by=raised_by)


_CONFLICT_RETRIES = 5


def _custom(kube: KubeAdapter) -> k8s.CustomObjectsApi:
    return k8s.CustomObjectsApi(kube.api_client)


def requests(kube: KubeAdapter) -> list[Request | Malformed]:
    """Every ERR (cluster-scoped) of whichever of :data:`GROUPS` the cluster serves, read; an
    odd one is a :class:`Malformed` in the list. Neither served: NVSentinel's CRD is not
    installed, a :class:`~bringup.errors.KubeNotFoundError` saying so."""
    for group in GROUPS:
        try:
            doc = kube._call(f"list {PLURAL}.{group}", _custom(kube).list_cluster_custom_object, group, VERSION,
                             PLURAL)
        except KubeNotFoundError:
            continue
        return [parse(item) for item in (doc or {}).get("items") or []]
    raise KubeNotFoundError(f"the cluster serves no {PLURAL} (tried {', '.join(f'{g}/{VERSION}' for g in GROUPS)})",
                            hint="health_owner is nvsentinel: install NVSentinel's janitor CRDs, or set "
                                 "health_owner: bringup")


def accept(kube: KubeAdapter, req: Request, at: datetime | None = None) -> datetime:
    """Mark ``req`` accepted by bringup (its annotation; the first time wins); returns when."""
    if req.accepted_at is not None:
        return req.accepted_at
    when = (at or datetime.now(UTC)).replace(microsecond=0)
    body = {"metadata": {"annotations": {ACCEPTED: when.isoformat()}}}
    kube._call(f"annotate {PLURAL} {req.name}", _custom(kube).patch_cluster_custom_object,
               req.group, VERSION, PLURAL, req.name, body)
    return when


def _with_condition(obj: dict[str, Any], cond: dict[str, Any]) -> list[dict[str, Any]]:
    """The object's conditions with ``cond`` in place of its type's (others kept as read)."""
    kept = [c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") != cond["type"]]
    return [*kept, cond]


def condition(status: str, reason: str, message: str, generation: int, at: datetime) -> dict[str, Any]:
    """``ExternalRemediationComplete`` as written to the ERR's status (metav1.Condition's fields)."""
    return {"type": COMPLETE, "status": status, "observedGeneration": generation,
            "lastTransitionTime": at.strftime("%Y-%m-%dT%H:%M:%SZ"), "reason": reason, "message": message}


def complete(kube: KubeAdapter, req: Request, status: str, reason: str, message: str,
             at: datetime | None = None) -> dict[str, Any]:
    """Write ``ExternalRemediationComplete`` (``status`` True or False) on ``req``'s ERR;
    returns the condition as it stands."""
    custom = _custom(kube)
    where = f"{PLURAL} {req.name}"
    for attempt in range(_CONFLICT_RETRIES):
        obj = kube._call(f"get {where}", custom.get_cluster_custom_object, req.group, VERSION, PLURAL, req.name)
        cond = condition(status, reason, message, int((obj.get("metadata") or {}).get("generation") or 1),
                         at or datetime.now(UTC))
        old = next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == COMPLETE), {})
        if old.get("status") == cond["status"] and old.get("reason") == cond["reason"]:
            return old      # written already (a retried run): the transition time stays
        body = {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]},
                "status": {"conditions": _with_condition(obj, cond)}}
        try:
            kube._call(f"set {COMPLETE} on {where}", custom.patch_cluster_custom_object_status, req.group,
                       VERSION, PLURAL, req.name, body)
            return cond
        except KubeConflictError:
            if attempt == _CONFLICT_RETRIES - 1:
                raise
    raise AssertionError("unreachable")
