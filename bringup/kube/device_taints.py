"""GPU-level quarantine through DRA device taints (issue #27, item 3: the Kubernetes part).

When one GPU of a serving node is bad (a fatal XID on one device, a row-remap failure),
bringup takes that GPU out of scheduling instead of draining the node. On a site that
allocates GPUs with NVIDIA's DRA driver (driver ``gpu.nvidia.com``, one ResourceSlice pool
per node named after the node, devices ``gpu-0`` ... ``gpu-7``), that is a
``DeviceTaintRule`` (KEP-5055; ``resource.k8s.io/v1beta2``, cluster-scoped): its
``spec.deviceSelector`` names driver, pool and device, its ``spec.taint`` the key, value
and effect (``NoSchedule``: nothing new lands on the GPU; ``NoExecute``: what runs there
without a toleration is evicted too). The API server stamps ``taint.timeAdded``.

The key is the caller's: bringup's own (``bringup.io/quarantine``, as on nodes), or the
DRA driver's, ``gpu.nvidia.com/xid`` with the XID code as value, which the driver itself
places on a device after a fatal XID (its guide ``gpu-health-checking.md``), so
tolerations written for the driver's taints apply to bringup's too.

Every rule bringup places carries its marks (:mod:`bringup.kube.ownership`): the
``cordon-by`` / ``cordon-reason`` / ``cordon-timestamp`` annotations say who placed it, why
and when, and labels name it as bringup's, with its node and GPU, so a list by label
selector finds bringup's rules only. bringup changes or deletes only rules carrying its
label; a rule anyone else placed is never touched, even under a name bringup would use.
Calls go through :class:`~bringup.kube.adapter.KubeAdapter` (``kube._call``: its client,
timeout and error mapping); the builders and the parse back are pure.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s

from bringup.admission.labels import PREFIX, label_key_problem, label_value_problem
from bringup.errors import ConfigError, KubeConflictError, KubeNotFoundError
from bringup.kube import ownership
from bringup.kube.adapter import KubeAdapter

log = logging.getLogger(__name__)

TAINT_API = "resource.k8s.io/v1beta2"
DRA_DRIVER = "gpu.nvidia.com"
KIND = "DeviceTaintRule"
PLURAL = "devicetaintrules"
EFFECTS = ("NoSchedule", "NoExecute")

#: the label that makes a rule bringup's (its value is :data:`ownership.OWNER`)
OWNER_LABEL = f"{PREFIX}/gpu-taint-by"
#: the node whose GPU the rule taints; absent when the node's name is no label value
#: (over 63 characters): the rule's pool still names it
NODE_LABEL = f"{PREFIX}/gpu-taint-node"
GPU_LABEL = f"{PREFIX}/gpu-taint-index"

_DEVICE_RE = re.compile(r"^gpu-(\d+)$")
_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$")
_CONFLICT_RETRIES = 5


@dataclass(frozen=True)
class GpuTaint:
    """One GPU of a node taken out of scheduling, as bringup placed it."""

    node: str
    gpu: int                # NVML index; the DRA driver's device name is f"gpu-{gpu}"
    key: str
    value: str
    effect: str             # NoSchedule | NoExecute
    reason: str
    placed_by: str = ownership.OWNER
    placed_at: str = ""     # RFC 3339; empty: now, when the rule is built

    @property
    def device(self) -> str:
        return f"gpu-{self.gpu}"


def rule_name(node: str, gpu: int) -> str:
    """The rule's name for GPU ``gpu`` of ``node``: ``bringup-gpu-<node>-gpu-<gpu>``, a
    DNS-1123 subdomain of at most 253 characters. A node name that would not fit (or is no
    subdomain once lower-cased) is cut and a hash of it added, so two nodes never share one."""
    if not node:
        raise ConfigError("a GPU taint needs a node name", hint="name the node whose GPU to quarantine")
    if isinstance(gpu, bool) or not isinstance(gpu, int) or gpu < 0:
        raise ConfigError(f"node {node}: GPU index {gpu!r} is not an index >= 0",
                          hint="give the GPU's NVML index (0..7 on an HGX board)")
    tail = f"-gpu-{gpu}"
    lowered = node.lower()
    name = f"bringup-gpu-{lowered}{tail}"
    if len(name) <= 253 and _SUBDOMAIN_RE.match(name) and lowered == node:
        return name
    digest = hashlib.sha256(node.encode()).hexdigest()[:10]
    room = 253 - len(f"bringup-gpu--{digest}{tail}")
    head = re.sub(r"[^a-z0-9-]+", "-", lowered)[:room].strip("-")
    name = f"bringup-gpu-{head}-{digest}{tail}" if head else f"bringup-gpu-{digest}{tail}"
    return name if _SUBDOMAIN_RE.match(name) else f"bringup-gpu-{digest}{tail}"


def _check(t: GpuTaint) -> None:
    problems = []
    if t.effect not in EFFECTS:
        problems.append(f"effect {t.effect!r} is not NoSchedule or NoExecute")
    if (p := label_key_problem(t.key)) is not None:
        problems.append(f"key {t.key!r}: {p}")
    if (p := label_value_problem(t.value)) is not None:
        problems.append(f"value {t.value!r} {p}")
    if problems:
        raise ConfigError(f"GPU {t.gpu} of node {t.node}: the device taint is invalid: " + "; ".join(problems),
                          hint="a device taint's key is a label name, its value a label value "
                               "(e.g. gpu.nvidia.com/xid=79:NoSchedule)")


def rule_labels(node: str, gpu: int) -> dict[str, str]:
    labels = {OWNER_LABEL: ownership.OWNER, GPU_LABEL: str(gpu)}
    if label_value_problem(node) is None:
        labels[NODE_LABEL] = node
    return labels


def rule_manifest(t: GpuTaint, *, driver: str = DRA_DRIVER, api_version: str = TAINT_API) -> dict[str, Any]:
    """The DeviceTaintRule that taints GPU ``t.gpu`` of ``t.node`` (the DRA driver's pool is
    the node's name, its device ``gpu-N``), with bringup's marks."""
    name = rule_name(t.node, t.gpu)
    _check(t)
    marks = ownership.marks(t.reason)  # who, why, when: the marks of every cordon bringup places
    marks[ownership.CORDON_BY] = t.placed_by or ownership.OWNER
    if t.placed_at:
        marks[ownership.CORDON_TIMESTAMP] = t.placed_at
    return {"apiVersion": api_version, "kind": KIND,
            "metadata": {"name": name, "labels": rule_labels(t.node, t.gpu), "annotations": marks},
            "spec": {"deviceSelector": {"driver": driver, "pool": t.node, "device": t.device},
                     "taint": {"key": t.key, "value": t.value, "effect": t.effect}}}


def is_ours(rule: dict[str, Any]) -> bool:
    """The rule carries bringup's label: bringup placed it and may change or delete it."""
    return ((rule.get("metadata") or {}).get("labels") or {}).get(OWNER_LABEL) == ownership.OWNER


def parse_rule(rule: Any) -> GpuTaint | None:
    """A rule of bringup's read back; None for anyone else's, and for one that no longer
    says which GPU of which node it taints (edited by hand, say)."""
    if not isinstance(rule, dict) or not is_ours(rule):
        return None
    meta, spec = rule.get("metadata") or {}, rule.get("spec") or {}
    sel, taint = spec.get("deviceSelector") or {}, spec.get("taint") or {}
    ann = meta.get("annotations") or {}
    m = _DEVICE_RE.match(str(sel.get("device") or ""))
    node = sel.get("pool")
    if not m or not isinstance(node, str) or not node or not isinstance(taint, dict):
        return None
    key, effect = taint.get("key"), taint.get("effect")
    if not isinstance(key, str) or not key or not isinstance(effect, str):
        return None
    return GpuTaint(node=node, gpu=int(m.group(1)), key=key, value=str(taint.get("value") or ""), effect=effect,
                    reason=str(ann.get(ownership.CORDON_REASON, "")),
                    placed_by=str(ann.get(ownership.CORDON_BY, "")),
                    placed_at=str(ann.get(ownership.CORDON_TIMESTAMP, "")))


# --- through the API ----------------------------------------------------------------------
def _gv(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.partition("/")
    if not version:
        raise ConfigError(f"{api_version!r} is no group/version of DeviceTaintRules",
                          hint=f"use {TAINT_API}")
    return group, version


def _missing_api(exc: KubeNotFoundError, api_version: str) -> KubeNotFoundError:
    return KubeNotFoundError(f"{exc.args[0]} (does the cluster serve {api_version} {PLURAL}?)",
                             hint="DeviceTaintRules need the DRADeviceTaintRules feature gate and the "
                                  f"{api_version} API enabled on the API server")


def taint_gpu(kube: KubeAdapter, t: GpuTaint, *, driver: str = DRA_DRIVER, api_version: str = TAINT_API) -> str:
    """Taint GPU ``t.gpu`` of ``t.node``: create bringup's rule, or replace bringup's own rule
    of that name (idempotent: the same taint again changes nothing the scheduler sees, its
    ``timeAdded`` is kept unless the effect changes). A rule of that name someone else placed
    is a :class:`~bringup.errors.KubeConflictError`, left as it is. Returns the rule's name."""
    body = rule_manifest(t, driver=driver, api_version=api_version)
    name = body["metadata"]["name"]
    group, version = _gv(api_version)
    custom = k8s.CustomObjectsApi(kube.api_client)
    try:
        kube._call(f"create {KIND} {name}", custom.create_cluster_custom_object, group, version, PLURAL, body)
    except KubeNotFoundError as exc:
        raise _missing_api(exc, api_version) from None
    except KubeConflictError:  # it exists already: replaced if it is bringup's
        _replace_ours(kube, custom, body, t, (group, version))
    kube._note(t.node, "GpuTainted", f"GPU {t.gpu} ({t.device}) tainted by bringup, {t.key}={t.value}:{t.effect} "
               f"({KIND} {name}): {t.reason}", warning=True)
    return name


def _replace_ours(kube: KubeAdapter, custom: k8s.CustomObjectsApi, body: dict[str, Any], t: GpuTaint,
                  gv: tuple[str, str]) -> None:
    """Replace bringup's rule of ``body``'s name with ``body``, with the read resourceVersion
    as precondition, reading again on 409; a rule not bringup's is never replaced."""
    name = body["metadata"]["name"]
    for _ in range(_CONFLICT_RETRIES):
        cur = kube._call(f"read {KIND} {name}", custom.get_cluster_custom_object, *gv, PLURAL, name)
        if not is_ours(cur):
            raise KubeConflictError(
                f"{KIND} {name} exists and is not bringup's (no {OWNER_LABEL}={ownership.OWNER} label): "
                f"left as it is, GPU {t.gpu} of node {t.node} not tainted by bringup",
                hint=f"find who placed it (kubectl get {PLURAL} {name} -o yaml); bringup never changes it")
        new = {**body, "metadata": {**body["metadata"], "resourceVersion": cur["metadata"]["resourceVersion"]}}
        old = (cur.get("spec") or {}).get("taint") or {}
        if old.get("effect") == t.effect and old.get("timeAdded"):
            # tolerationSeconds count from timeAdded: the same taint placed again must not
            # restart them (the server stamps the time anew when the field is left out)
            new["spec"] = {**body["spec"], "taint": {**body["spec"]["taint"], "timeAdded": old["timeAdded"]}}
        try:
            kube._call(f"replace {KIND} {name}", custom.replace_cluster_custom_object, *gv, PLURAL, name, new)
            return
        except KubeConflictError:
            log.info("%s %s changed while we replaced it; reading it again", KIND, name)
    raise KubeConflictError(f"{KIND} {name} kept changing; gave up after {_CONFLICT_RETRIES} attempts",
                            hint="find the controller fighting over the rule, then retry")


def gpu_taints(kube: KubeAdapter, node: str | None = None, *, api_version: str = TAINT_API) -> list[GpuTaint]:
    """bringup's GPU taints (of ``node``, or of every node), read back from its rules; a rule
    that no longer says which GPU it taints is skipped with a warning."""
    group, version = _gv(api_version)
    selector = f"{OWNER_LABEL}={ownership.OWNER}"
    if node and label_value_problem(node) is None:
        selector += f",{NODE_LABEL}={node}"
    custom = k8s.CustomObjectsApi(kube.api_client)
    try:
        data = kube._call(f"list {PLURAL}", custom.list_cluster_custom_object, group, version, PLURAL,
                          label_selector=selector)
    except KubeNotFoundError as exc:
        raise _missing_api(exc, api_version) from None
    out = []
    for item in (data or {}).get("items") or []:
        t = parse_rule(item)
        if t is None:
            log.warning("%s %s carries bringup's label but says no GPU of a node: skipped", KIND,
                        ((item or {}).get("metadata") or {}).get("name", "?") if isinstance(item, dict) else "?")
        elif node is None or t.node == node:
            out.append(t)
    return sorted(out, key=lambda t: (t.node, t.gpu, t.key))


def untaint_gpu(kube: KubeAdapter, node: str, gpu: int, *, api_version: str = TAINT_API) -> bool:
    """Delete bringup's rule on GPU ``gpu`` of ``node``. False when there is none of
    bringup's: a rule of that name someone else placed stays (and is logged)."""
    name = rule_name(node, gpu)
    group, version = _gv(api_version)
    custom = k8s.CustomObjectsApi(kube.api_client)
    try:
        cur = kube._call(f"read {KIND} {name}", custom.get_cluster_custom_object, group, version, PLURAL, name)
    except KubeNotFoundError:
        return False
    if not is_ours(cur):
        log.warning("%s %s is not bringup's: left in place (GPU %s of node %s stays tainted by its owner)",
                    KIND, name, gpu, node)
        return False
    meta = cur.get("metadata") or {}
    # the rule read is the rule deleted: one replaced meanwhile (by anyone) is a 409, not gone
    body = k8s.V1DeleteOptions(preconditions=k8s.V1Preconditions(uid=meta.get("uid"),
                                                                  resource_version=meta.get("resourceVersion")))
    try:
        kube._call(f"delete {KIND} {name}", custom.delete_cluster_custom_object, group, version, PLURAL, name,
                   body=body)
    except KubeNotFoundError:
        return False
    kube._note(node, "GpuUntainted", f"GPU {gpu} (gpu-{gpu}) no longer tainted by bringup ({KIND} {name} deleted)")
    return True


__all__ = ["DRA_DRIVER", "GPU_LABEL", "NODE_LABEL", "OWNER_LABEL", "TAINT_API", "GpuTaint", "gpu_taints",
           "is_ours", "parse_rule", "rule_labels", "rule_manifest", "rule_name", "taint_gpu", "untaint_gpu"]
