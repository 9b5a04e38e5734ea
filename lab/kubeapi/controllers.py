"""What the control plane and kubelets would do around the stored objects.

* pods bound to a node start Running and Ready at once (the nodes are simulated), except
  those naming a command, which the stand-in kubelet (``kubelet.py``) runs over SSH;
* PodDisruptionBudget status is computed from the pods it selects;
* the Eviction API honours PDBs: 429 when an eviction would leave fewer healthy pods
  than the budget allows, 500 when a pod is covered by more than one PDB;
* the bootstrap signer signs ``kube-public/cluster-info`` with every bootstrap token
  (detached JWS, HS256, ``jws-kubeconfig-<token-id>``) so ``kubeadm join`` can check it;
* bearer tokens: the lab admin token, or a valid bootstrap token (group
  ``system:bootstrappers``), which may only register nodes and read cluster-info;
* a DeviceTaintRule's taint is checked and stamped as the real server does (``timeAdded``
  set when absent, and anew when an update changes the effect but not the time;
  ``generation`` counts spec changes; status written only through ``/status``).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import math
from dataclasses import dataclass
from typing import Any

from .kubelet import runs_here
from .resources import find
from .selectors import labels_match, selector_from_label_selector_object
from .store import ApiStatus, Store, now_rfc3339

PODS = find("", "v1", "pods")
PDBS = find("policy", "v1", "poddisruptionbudgets")
SECRETS = find("", "v1", "secrets")
CONFIGMAPS = find("", "v1", "configmaps")
NAMESPACES = find("", "v1", "namespaces")
BOOTSTRAP_TYPE = "bootstrap.kubernetes.io/token"


def pod_defaults(pod: dict[str, Any]) -> None:
    """Give a new pod the status its (simulated) kubelet would report."""
    spec = pod.setdefault("spec", {})
    status = pod.setdefault("status", {})
    if status.get("phase"):
        return
    if runs_here(pod):  # the stand-in kubelet runs it and reports from here on
        ts = now_rfc3339()
        status.update({
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": ts}],
            "containerStatuses": [{"name": c.get("name", "c"), "ready": False, "restartCount": 0,
                                   "image": c.get("image", ""), "imageID": "", "started": False,
                                   "state": {"waiting": {"reason": "ContainerCreating"}}}
                                  for c in spec.get("containers") or []],
        })
    elif spec.get("nodeName"):
        ts = now_rfc3339()
        status.update({
            "phase": "Running", "startTime": ts,
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": ts}
                           for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "containerStatuses": [{"name": c.get("name", "c"), "ready": True, "restartCount": 0,
                                   "image": c.get("image", ""), "imageID": "", "started": True,
                                   "state": {"running": {"startedAt": ts}}}
                                  for c in spec.get("containers") or []],
        })
    else:
        status["phase"] = "Pending"


def admit(plural: str, obj: dict[str, Any]) -> None:
    """Defaults and normalisation the API server applies to a new object."""
    if plural == "pods":
        pod_defaults(obj)
    elif plural == "namespaces":
        obj.setdefault("status", {})["phase"] = "Active"
    elif plural == "poddisruptionbudgets":
        obj.setdefault("metadata", {}).setdefault("generation", 1)
    elif plural == "secrets":
        obj.setdefault("type", "Opaque")
        # stringData is write-only: the server folds it into data
        data = obj.setdefault("data", {})
        for k, v in (obj.pop("stringData", None) or {}).items():
            data[k] = base64.b64encode(str(v).encode()).decode()
    elif plural == "events":
        for k in ("firstTimestamp", "lastTimestamp"):  # the server stores RFC 3339 times in UTC, "Z"
            if isinstance(obj.get(k), str) and obj[k].endswith("+00:00"):
                obj[k] = obj[k][:-len("+00:00")] + "Z"
    elif plural == "devicetaintrules":
        taint_rule_defaults(obj, None)


def admit_update(plural: str, obj: dict[str, Any], old: dict[str, Any]) -> None:
    """What the API server applies to an object replaced or patched (not its status)."""
    if plural == "devicetaintrules":
        taint_rule_defaults(obj, old)


#: the effects a device taint may have (resource.k8s.io DeviceTaint.effect)
DEVICE_TAINT_EFFECTS = ("None", "NoSchedule", "NoExecute")


def taint_rule_defaults(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """Check a DeviceTaintRule's taint and stamp it (API reference of DeviceTaintRule and
    DeviceTaint, resource.k8s.io/v1beta2): ``timeAdded`` is set when absent, and replaced
    by now when an update changes the effect but sends the old time back."""
    name = (obj.get("metadata") or {}).get("name", "")
    taint = (obj.get("spec") or {}).get("taint")
    if not isinstance(taint, dict) or not taint.get("key"):
        bad = "spec.taint.key" if isinstance(taint, dict) else "spec.taint"
        raise ApiStatus(422, f'DeviceTaintRule.resource.k8s.io "{name}" is invalid: {bad}: Required value')
    if taint.get("effect") not in DEVICE_TAINT_EFFECTS:
        raise ApiStatus(422, f'DeviceTaintRule.resource.k8s.io "{name}" is invalid: spec.taint.effect: '
                             f'Unsupported value: "{taint.get("effect")}": supported values: '
                             + ", ".join(f'"{e}"' for e in DEVICE_TAINT_EFFECTS))
    meta = obj.setdefault("metadata", {})
    before = ((old or {}).get("spec") or {}).get("taint") or {}
    if not taint.get("timeAdded") or (old is not None and taint.get("effect") != before.get("effect")
                                       and taint.get("timeAdded") == before.get("timeAdded")):
        taint["timeAdded"] = now_rfc3339()
    obj.pop("status", None)  # status is the controllers' to write (the /status subresource)
    if old is None:
        meta["generation"] = 1
        return
    if "status" in old:
        obj["status"] = old["status"]
    gen = int((old.get("metadata") or {}).get("generation") or 1)
    meta["generation"] = gen + 1 if obj.get("spec") != old.get("spec") else gen


def _healthy(pod: dict[str, Any]) -> bool:
    st = pod.get("status") or {}
    if st.get("phase") != "Running" or pod["metadata"].get("deletionTimestamp"):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions") or [])


def _count(value: Any, total: int, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        frac = int(value[:-1]) * total / 100
        return math.ceil(frac) if round_up else math.floor(frac)
    return int(value)


def pdb_status(store: Store, pdb: dict[str, Any]) -> dict[str, Any]:
    ns = pdb["metadata"]["namespace"]
    reqs = selector_from_label_selector_object((pdb.get("spec") or {}).get("selector"))
    pods, _ = store.list(PODS, ns, lambda p: labels_match(reqs, p["metadata"].get("labels")))
    expected = len(pods)
    healthy = sum(1 for p in pods if _healthy(p))
    spec = pdb.get("spec") or {}
    if spec.get("minAvailable") is not None:
        desired = _count(spec["minAvailable"], expected, round_up=True)
    elif spec.get("maxUnavailable") is not None:
        desired = max(0, expected - _count(spec["maxUnavailable"], expected, round_up=True))
    else:
        desired = 0
    return {"observedGeneration": pdb["metadata"].get("generation", 1), "currentHealthy": healthy,
            "desiredHealthy": desired, "expectedPods": expected,
            "disruptionsAllowed": max(0, healthy - desired)}


def with_pdb_status(store: Store, pdb: dict[str, Any]) -> dict[str, Any]:
    pdb["status"] = pdb_status(store, pdb)
    return pdb


def evict(store: Store, namespace: str, name: str) -> dict[str, Any]:
    with store.lock:
        pod = store.get(PODS, namespace, name)
        labels = pod["metadata"].get("labels") or {}
        pdbs, _ = store.list(PDBS, namespace,
                             lambda b: labels_match(selector_from_label_selector_object(
                                 (b.get("spec") or {}).get("selector")), labels))
        # pods that are not running cannot be disrupted; the real server evicts them freely
        if pdbs and _healthy(pod):
            if len(pdbs) > 1:
                raise ApiStatus(500, "This pod has more than one PodDisruptionBudget, which the eviction "
                                     "subresource does not support.")
            st = pdb_status(store, pdbs[0])
            if st["disruptionsAllowed"] < 1:
                pdb_name = pdbs[0]["metadata"]["name"]
                raise ApiStatus(
                    429, "Cannot evict pod as it would violate the pod's disruption budget.",
                    details={"causes": [{"reason": "DisruptionBudget",
                                         "message": f"The disruption budget {pdb_name} needs "
                                                    f"{st['desiredHealthy']} healthy pods and has "
                                                    f"{st['currentHealthy']} currently"}]})
        store.delete(PODS, namespace, name)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


# --- bootstrap tokens ------------------------------------------------------------------
def _b64d(value: str) -> str:
    return base64.b64decode(value).decode()


def token_fields(secret: dict[str, Any]) -> dict[str, str]:
    """Decoded data of a bootstrap token Secret (``data`` base64, ``stringData`` plain)."""
    out = {k: _b64d(v) for k, v in (secret.get("data") or {}).items()}
    out.update(secret.get("stringData") or {})
    return out


def _expired(fields: dict[str, str]) -> bool:
    exp = fields.get("expiration")
    if not exp:
        return False
    try:
        when = dt.datetime.fromisoformat(exp)
    except ValueError:
        return True
    return when <= dt.datetime.now(dt.UTC)


def valid_bootstrap_tokens(store: Store, usage: str) -> dict[str, str]:
    """token-id -> token-secret of unexpired bootstrap tokens allowed for ``usage``."""
    secrets, _ = store.list(SECRETS, "kube-system", lambda s: s.get("type") == BOOTSTRAP_TYPE)
    out = {}
    for s in secrets:
        f = token_fields(s)
        tid, tsec = f.get("token-id", ""), f.get("token-secret", "")
        if s["metadata"]["name"] != f"bootstrap-token-{tid}" or _expired(f):
            continue
        if f.get(f"usage-bootstrap-{usage}") == "true":
            out[tid] = tsec
    return out


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def detached_jws(content: str, token_id: str, token_secret: str) -> str:
    """Compact JWS with a detached payload (``header..signature``), HS256 over the
    kubeconfig with the full token as key, as the bootstrap signer produces it."""
    header = _b64url(json.dumps({"alg": "HS256", "kid": token_id}, separators=(",", ":")).encode())
    payload = _b64url(content.encode())
    sig = hmac.new(f"{token_id}.{token_secret}".encode(), f"{header}.{payload}".encode(),
                   hashlib.sha256).digest()
    return f"{header}..{_b64url(sig)}"


def sign_cluster_info(store: Store) -> None:
    cm = store.find(CONFIGMAPS, "kube-public", "cluster-info")
    if cm is None:
        return
    data = {k: v for k, v in (cm.get("data") or {}).items() if not k.startswith("jws-kubeconfig-")}
    for tid, tsec in valid_bootstrap_tokens(store, "signing").items():
        data[f"jws-kubeconfig-{tid}"] = detached_jws(data.get("kubeconfig", ""), tid, tsec)
    if data != cm.get("data"):
        cm["data"] = data
        store.replace(CONFIGMAPS, "kube-public", "cluster-info", cm, check_rv=False)


# --- authentication / authorization --------------------------------------------------
@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...]


ANONYMOUS = User("system:anonymous", ("system:unauthenticated",))


def authenticate(store: Store, admin_token: str, header: str | None) -> User:
    if not header:
        return ANONYMOUS
    if not header.startswith("Bearer "):
        raise ApiStatus(401, "Unauthorized")
    token = header[len("Bearer "):].strip()
    if admin_token and hmac.compare_digest(token, admin_token):
        return User("lab-admin", ("system:masters", "system:authenticated"))
    tid, _, tsec = token.partition(".")
    valid = valid_bootstrap_tokens(store, "authentication")
    if tid in valid and hmac.compare_digest(valid[tid], tsec):
        return User(f"system:bootstrap:{tid}", ("system:bootstrappers", "system:authenticated"))
    raise ApiStatus(401, "Unauthorized")


def authorize(user: User, verb: str, plural: str, namespace: str, name: str) -> None:
    if "system:masters" in user.groups:
        return
    if plural == "configmaps" and namespace == "kube-public" and name == "cluster-info" and verb == "get":
        return  # kubeadm's discovery reads it anonymously
    if "system:bootstrappers" in user.groups and plural == "nodes" and verb in ("create", "get", "patch",
                                                                                "update"):
        return
    what = f'{verb} resource "{plural}"' + (f' in the namespace "{namespace}"' if namespace else
                                           " at the cluster scope")
    raise ApiStatus(403, f'{plural} is forbidden: User "{user.name}" cannot {what}')
