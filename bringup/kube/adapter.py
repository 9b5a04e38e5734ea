"""The one module that talks to the Kubernetes API (official ``kubernetes`` client).

It is handed an ``ApiClient`` (or a kubeconfig path) and offers what admission and
re-burn-in need: a bootstrap token and ``kubeadm join`` parameters, waiting for a node
to be Ready, admitting (labels, our taint off, our own cordon lifted), quarantining (cordon,
taint, reason annotation), draining through the Eviction API, and reading a node's state.
Every cordon it places carries who, why and when, and it lifts only its own
(:mod:`bringup.kube.ownership`): a hand cordon or another system's stays.

Responses are read raw (``_preload_content=False``) and parsed into bringup's own
models, so a surprising answer is a ParseError naming its JSON path. Client exceptions
become :mod:`bringup.errors`: 5xx, 429 and connection failures are transient, 4xx carry
the API server's own message. Node updates read, modify and patch with the
resourceVersion as precondition, retrying on 409, so concurrent writers are never
overwritten silently. Admission, cordon, quarantine and drain each leave a node Event
(:mod:`bringup.kube.events`) saying what bringup did and why, for ``kubectl describe node``.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import urllib3
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from bringup.admission.labels import (
    PREFIX,
    QUARANTINE_KEY,
    REASON_ANNOTATION,
    Taint,
    quarantine_taint,
    reason_code,
    validate_labels,
)
from bringup.errors import (
    ConfigError,
    KubeAuthError,
    KubeConflictError,
    KubeError,
    KubeNotFoundError,
    KubeTLSError,
    KubeTransientError,
)
from bringup.kube import ownership
from bringup.kube.models import (
    DrainResult,
    JoinCommand,
    NodeState,
    PodRef,
    QuarantineResult,
    parse_node,
    parse_pod,
)
from bringup.kube.tokens import TOKEN_NAMESPACE, ca_cert_hash, generate_token, token_secret
from bringup.retry import Backoff, Timeout, retry
from bringup.retry import poll as poll_until

if TYPE_CHECKING:
    from bringup.kube.drain import DrainWait

log = logging.getLogger(__name__)

SMP = "application/strategic-merge-patch+json"
_CONFLICT_RETRIES = 5


def _status_message(exc: ApiException) -> str:
    try:
        body = json.loads(exc.body or "")
        msg = str(body.get("message") or exc.reason)
        # an eviction refused by a PodDisruptionBudget names the budget in its causes
        causes = [c.get("message", "") for c in (body.get("details") or {}).get("causes") or []]
        return "; ".join([msg, *[c for c in causes if c]])
    except (ValueError, AttributeError):
        return str(exc.reason or "")


class KubeAdapter:
    def __init__(self, api_client: k8s.ApiClient, *, request_timeout: float = 15.0,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.api_client = api_client
        self.core = k8s.CoreV1Api(api_client)
        self.timeout = request_timeout
        self._sleep = sleep
        self._clock = clock

    @classmethod
    def from_kubeconfig(cls, path: str | Path, context: str | None = None, **kw: Any) -> KubeAdapter:
        try:
            api_client = k8s_config.new_client_from_config(config_file=str(path), context=context)
        except (k8s_config.ConfigException, OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot load kubeconfig {path}: {exc}",
                              hint="check the kubeconfig path in the settings (kubeconfig:)") from None
        return cls(api_client, **kw)

    # --- plumbing ---------------------------------------------------------------------
    def _call(self, what: str, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        """Call one API method and return the decoded JSON body, mapping errors."""
        try:
            resp = fn(*args, _preload_content=False, _request_timeout=self.timeout, **kw)
            return json.loads(resp.data or b"null")
        except ApiException as exc:
            msg = f"{what}: {exc.status} {_status_message(exc)}"
            if exc.status in (401, 403):
                raise KubeAuthError(msg, hint="check the kubeconfig credentials and deploy/rbac.yaml") from None
            if exc.status == 404:
                raise KubeNotFoundError(msg) from None
            if exc.status == 409:
                raise KubeConflictError(msg, hint="someone else changed the object; retry") from None
            if exc.status == 429:
                raise KubeTransientError(msg, hint="refused for now (disruption budget or rate limit); "
                                                   "retry later") from None
            if (exc.status or 0) >= 500:
                raise KubeTransientError(msg, hint="the API server is busy or failing; retry later") from None
            raise KubeError(msg) from None
        except urllib3.exceptions.MaxRetryError as exc:
            if isinstance(exc.reason, urllib3.exceptions.SSLError):
                raise KubeTLSError(f"{what}: TLS failed: {exc.reason}",
                                hint="check the cluster CA in the kubeconfig") from None
            raise KubeTransientError(f"{what}: API server unreachable: {exc.reason}",
                                     hint="check that the API server is up; retry later") from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise KubeTransientError(f"{what}: connection failed: {exc}",
                                     hint="check that the API server is up; retry later") from None
        except ValueError as exc:  # a body that is not JSON
            raise KubeError(f"{what}: the API server did not answer JSON: {exc}") from None

    def _read_node(self, name: str) -> dict[str, Any]:
        return self._call(f"read node {name}", self.core.read_node, name)

    def _patch_node(self, name: str, patch: dict[str, Any]) -> NodeState:
        return parse_node(self._call(f"patch node {name}", self.core.patch_node, name, patch,
                                     _content_type=SMP))

    def _update_node(self, name: str, change: Callable[[dict[str, Any]], dict[str, Any]]) -> NodeState:
        """Read the node, build a patch from it, apply it with the read resourceVersion as
        precondition; on 409 read again and retry."""
        def once() -> NodeState:
            node = self._read_node(name)
            patch = change(node)
            patch.setdefault("metadata", {})["resourceVersion"] = node["metadata"]["resourceVersion"]
            return self._patch_node(name, patch)

        def changed(exc: BaseException) -> bool:
            log.info("node %s changed while we updated it; retrying", name)
            return False
        try:  # read again at once: the other writer's change is there to build on
            return retry(once, attempts=_CONFLICT_RETRIES, retry_on=(KubeConflictError,),
                         backoff=Backoff(first=0.0, factor=1.0), give_up=changed, sleep=self._sleep, clock=self._clock)
        except KubeConflictError:
            raise KubeConflictError(f"node {name} kept changing; gave up after {_CONFLICT_RETRIES} attempts",
                                    hint="find the controller fighting over the node, then retry") from None

    def _note(self, name: str, reason: str, message: str, warning: bool = False) -> None:
        """Record a node Event; an Event that cannot be written never undoes the change."""
        from bringup.kube.events import NORMAL, WARNING, record_node_event  # events builds on this module
        try:
            record_node_event(self, name, reason, message, WARNING if warning else NORMAL)
        except KubeError as exc:
            log.warning("node %s: could not record event %s: %s", name, reason, exc)

    # --- bootstrap --------------------------------------------------------------------
    def create_bootstrap_token(self, ttl: dt.timedelta | float = dt.timedelta(hours=1)) -> str:
        """Create a bootstrap token Secret in kube-system; returns ``<id>.<secret>``."""
        if not isinstance(ttl, dt.timedelta):
            ttl = dt.timedelta(seconds=ttl)
        for _ in range(3):
            token = generate_token()
            body = token_secret(token, ttl)
            try:
                self._call("create bootstrap token", self.core.create_namespaced_secret, TOKEN_NAMESPACE,
                           k8s.V1Secret.from_dict(body))
                return token
            except KubeConflictError:
                continue  # token id collision: draw another
        raise KubeConflictError("could not create a bootstrap token with a fresh id after 3 attempts")

    def cluster_endpoint_and_ca(self) -> tuple[str, bytes]:
        """The API endpoint and CA that joining nodes will see: from the public
        ``kube-public/cluster-info`` ConfigMap, else from our own client configuration."""
        try:
            cm = self._call("read cluster-info", self.core.read_namespaced_config_map, "cluster-info",
                            "kube-public")
            kc = yaml.safe_load((cm.get("data") or {}).get("kubeconfig", "")) or {}
            cluster = kc["clusters"][0]["cluster"]
            return (cluster["server"].removeprefix("https://").rstrip("/"),
                    base64.b64decode(cluster["certificate-authority-data"]))
        except KubeNotFoundError:
            pass
        except (KeyError, IndexError, TypeError, yaml.YAMLError, ValueError):
            log.warning("kube-public/cluster-info is malformed; using the client's own endpoint and CA")
        conf = self.api_client.configuration
        ca_file = conf.ssl_ca_cert
        if not ca_file:
            raise ConfigError("no cluster CA: kube-public/cluster-info is missing and the kubeconfig names no CA",
                              hint="run `kubeadm init phase bootstrap-token` on the control plane")
        return conf.host.removeprefix("https://").rstrip("/"), Path(ca_file).read_bytes()

    def join_command(self, ttl: dt.timedelta | float = dt.timedelta(hours=1)) -> JoinCommand:
        """A fresh token plus the endpoint and CA pin: everything ``kubeadm join`` needs."""
        endpoint, ca_pem = self.cluster_endpoint_and_ca()
        return JoinCommand(endpoint=endpoint, token=self.create_bootstrap_token(ttl),
                           ca_cert_hash=ca_cert_hash(ca_pem))

    # --- node state ---------------------------------------------------------------------
    def node_state(self, name: str) -> NodeState:
        try:
            return parse_node(self._read_node(name))
        except KubeNotFoundError:
            return NodeState(name=name, exists=False)

    def wait_node_ready(self, name: str, timeout: float, poll: float = 2.0) -> NodeState:
        """The node once it is Ready. The API server unreachable meanwhile is waited out
        (it may be restarting); unreachable at the deadline, that is its error
        (:class:`~bringup.errors.KubeTransientError`), not the node's."""
        try:
            return poll_until(lambda: self.node_state(name), timeout=timeout, what=f"node {name} Ready",
                              done=lambda state: bool(state and state.ready), on_error=(KubeTransientError,),
                              backoff=Backoff(first=poll, factor=1.0), sleep=self._sleep, clock=self._clock)
        except Timeout as exc:
            last = exc.last
        if isinstance(last, KubeTransientError):  # we could not look: the API server's fault, not the node's
            raise KubeTransientError(f"node {name}: could not tell whether it is Ready within "
                                     f"{timeout:g}s: {last.args[0]}", hint=last.hint) from None
        seen = f"Ready is not True ({last.ready_reason})" if isinstance(last, NodeState) and last.exists \
            else "not registered"
        raise KubeError(f"node {name} did not become Ready within {timeout:g}s; last seen: {seen}",
                        hint="check kubeadm join output and the kubelet on the node")

    # --- admission / quarantine -----------------------------------------------------------
    def admit(self, name: str, labels: dict[str, str], annotations: dict[str, str] | None = None,
              pending: Taint | None = None) -> NodeState:
        """Apply labels and annotations, remove our quarantine taint, uncordon. With
        ``pending`` (the readiness gate's validation taint) the node is tainted with it, so
        only pods tolerating it land until :meth:`clear_taint` admits it for good.

        ``bringup.io/`` labels not in ``labels`` are removed (left from an earlier
        admission); other owners' labels and taints are kept."""
        validate_labels(labels)
        annotations = dict(annotations or {})
        drop = {QUARANTINE_KEY} | ({pending.key} if pending else set())
        kept: list[str] = []

        def change(node: dict[str, Any]) -> dict[str, Any]:
            taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") not in drop]
            if pending is not None:
                taints.append(pending.to_api())
            ann: dict[str, Any] = {REASON_ANNOTATION: None}  # the quarantine reason no longer holds
            ann.update(annotations)
            # our own labels from an earlier admission (another pool, say) must not linger
            stale = {k: None for k in (node["metadata"].get("labels") or {})
                     if k.startswith(f"{PREFIX}/") and k not in labels}
            spec: dict[str, Any] = {"taints": taints or None}
            lift = ownership.uncordon_patch(node)  # only a cordon bringup placed is lifted
            if lift:
                spec["unschedulable"] = None
                ann.update(lift["metadata"]["annotations"])
            else:
                kept.append(ownership.holder(node))
            return {"metadata": {"labels": {**stale, **labels}, "annotations": ann}, "spec": spec}

        try:
            state = self._update_node(name, change)
        except KubeNotFoundError:
            raise KubeNotFoundError(f"node {name} is not registered in the cluster; cannot admit it",
                                    hint="run kubeadm join on the node and wait_node_ready first") from None
        pool = labels.get(f"{PREFIX}/pool")
        if kept:
            self._note(name, "CordonKept", f"labelled by bringup; the cordon stays: held by {kept[-1]}", warning=True)
        elif pending is not None:
            self._note(name, "ValidationPending", f"labelled and uncordoned by bringup, tainted {pending}: "
                       "admission waits for the readiness gate" + (f", pool {pool}" if pool else ""))
        else:
            self._note(name, "Admitted", "admitted by bringup: quarantine taint removed, uncordoned"
                       + (f", pool {pool}" if pool else ""))
        return state

    def clear_taint(self, name: str, key: str, why: str = "readiness gate passed") -> NodeState:
        """Remove the taint ``key`` (the validation taint: the node is admitted)."""
        def change(node: dict[str, Any]) -> dict[str, Any]:
            taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") != key]
            return {"spec": {"taints": taints or None}}

        state = self._update_node(name, change)
        self._note(name, "Admitted", f"admitted by bringup: {why}; taint {key} removed")
        return state

    def cordon(self, name: str, why: str = "") -> NodeState:
        """Cordon with bringup's marks (who, why, when: :mod:`bringup.kube.ownership`); a node
        someone else already holds cordoned stays theirs."""
        held: list[str] = []

        def change(node: dict[str, Any]) -> dict[str, Any]:
            patch = ownership.cordon_patch(node, why or "cordoned by bringup")
            if not patch:
                held.append(ownership.holder(node))
            return patch
        state = self._update_node(name, change)
        if held:
            log.info("node %s: already cordoned, held by %s; left as it is", name, held[-1])
        else:
            self._note(name, "Cordoned", "cordoned by bringup" + (f": {why}" if why else ""))
        return state

    def uncordon(self, name: str, why: str = "") -> NodeState:
        """Lift bringup's own cordon; a cordon someone else placed is never lifted (the
        node's holder is said in its Event)."""
        held: list[str] = []

        def change(node: dict[str, Any]) -> dict[str, Any]:
            patch = ownership.uncordon_patch(node)
            if not patch:
                held.append(ownership.holder(node))
            return patch
        state = self._update_node(name, change)
        if held:
            self._note(name, "CordonKept", f"bringup did not uncordon: the cordon is held by {held[-1]}",
                       warning=True)
        else:
            self._note(name, "Uncordoned", "uncordoned by bringup" + (f": {why}" if why else ""))
        return state

    def quarantine(self, name: str, reason: str, code: str | None = None, effect: str = "NoSchedule") -> QuarantineResult:
        """Cordon (with bringup's marks, unless someone else holds the cordon already), taint
        ``bringup.io/quarantine=<code>:<effect>`` and annotate the full reason. ``effect``:
        ``NoSchedule`` lets running work finish, ``NoExecute`` evicts what does not tolerate
        it (the health policy chooses per finding class). A node that never joined cannot be
        cordoned: the result says so."""
        if effect not in ("NoSchedule", "NoExecute"):
            raise ConfigError(f"taint effect {effect!r} is not NoSchedule or NoExecute",
                              hint="fix taint_effects in bringup/data/healthwatch.yaml")
        taint = quarantine_taint(code or reason_code(reason)).model_copy(update={"effect": effect})

        def change(node: dict[str, Any]) -> dict[str, Any]:
            taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") != QUARANTINE_KEY]
            ann = (ownership.cordon_patch(node, reason).get("metadata") or {}).get("annotations") \
                or ownership.kept_mark(node)
            return {"metadata": {"annotations": {REASON_ANNOTATION: reason, **ann}},
                    "spec": {"unschedulable": True, "taints": [*taints, taint.to_api()]}}

        try:
            self._update_node(name, change)
        except KubeNotFoundError:
            return QuarantineResult(node=name, applied=False, taint=taint,
                                    message=f"node {name} never joined the cluster: nothing to cordon or taint")
        self._note(name, "Quarantined", f"quarantined by bringup (cordoned, tainted {taint}): {reason}",
                   warning=True)
        return QuarantineResult(node=name, applied=True, taint=taint,
                                message=f"node {name} cordoned and tainted {taint}")

    # --- drain ---------------------------------------------------------------------------
    def pods_on(self, name: str) -> list[PodRef]:
        data = self._call(f"list pods on {name}", self.core.list_pod_for_all_namespaces,
                          field_selector=f"spec.nodeName={name}")
        return [parse_pod(item, f"pod list of {name}") for item in (data or {}).get("items") or []]

    def _gone(self, pod: PodRef) -> bool:
        try:
            data = self._call(f"read pod {pod}", self.core.read_namespaced_pod, pod.name, pod.namespace)
        except KubeNotFoundError:
            return True
        # a pod recreated under the same name by its controller is a different pod
        return ((data or {}).get("metadata") or {}).get("uid") != pod.uid

    def _evict(self, pod: PodRef) -> None:
        body = k8s.V1Eviction(api_version="policy/v1", kind="Eviction",
                              metadata=k8s.V1ObjectMeta(name=pod.name, namespace=pod.namespace))
        self._call(f"evict pod {pod}", self.core.create_namespaced_pod_eviction, pod.name, pod.namespace, body)

    def drain(self, name: str, timeout: float, ignore_daemonsets: bool = True, poll: float = 1.0,
              on_wait: Callable[[DrainWait], None] | None = None) -> DrainResult:
        """Cordon, then evict every pod through the Eviction API, honouring
        PodDisruptionBudgets, all within ``timeout`` (the whole drain's deadline);
        ``on_wait`` hears what holds it while it waits. Raises DrainBlocked naming the pods
        left and the budgets (see :func:`bringup.kube.drain.drain`)."""
        from bringup.kube.drain import drain  # the drain builds on this module
        return drain(self, name, timeout, ignore_daemonsets=ignore_daemonsets, poll=poll, on_wait=on_wait)


__all__ = ["KubeAdapter"]
