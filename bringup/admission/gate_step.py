"""Step ``gate`` (state validating, after ``join``): the readiness gate.

``join`` leaves the node in the cluster labelled and schedulable but tainted
``bringup.io/validation-pending:NoSchedule``, so nothing lands on it yet. This step admits
it (taint removed; the lifecycle then makes NetBox say active) only when the cluster shows
it can give out its GPUs: Ready, ``nvidia.com/gpu`` allocatable equal to NetBox's count,
GPU labels in agreement (:mod:`bringup.admission.readiness`), and a smoke pod pinned to the node,
tolerating the taint and asking for every GPU, run to success (:mod:`bringup.admission.smoke`).
A MIG or time-sliced pool's node must advertise exactly its mode's resources and GPU
Feature Discovery labels instead (:func:`bringup.admission.sharing.judge_sharing`, e.g.
``nvidia.com/mig-1g.18gb``: 56 and nothing else), and its smoke pod asks for one share.
Any failure quarantines the node with the reasons; the pod's log is kept as evidence.
Events on the node say what happened (``kubectl describe node`` shows them).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, replace
from typing import Any

from bringup.admission.readiness import (
    Check,
    Expected,
    NodeFacts,
    ReadinessPolicy,
    failures,
    load_policy,
    node_checks,
)
from bringup.admission.share_step import pool_mode
from bringup.admission.sharing import GPU, Exclusive, judge_sharing
from bringup.admission.sharing import expected as expected_sharing
from bringup.admission.smoke import PodOutcome, assess, pod_manifest
from bringup.context import Context
from bringup.errors import ConfigError, KubeError, KubeNotFoundError, ParseError
from bringup.lifecycle.results import Evidence, StepResult
from bringup.netbox.adapter import NodeRecord
from bringup.provision.configure_steps import manifest_of
from bringup.retry import Backoff, Timeout
from bringup.retry import poll as poll_until


def expected_of(rec: NodeRecord) -> Expected:
    gpu = rec.sku.gpu
    return Expected(gpu_count=gpu.count, gpu_model=gpu.model, gpu_memory_mib=gpu.memory_mib,
                    driver=manifest_of(rec).packages.driver)


def facts_of(kube: Any, name: str) -> NodeFacts:
    try:
        st = kube.node_state(name)
    except KubeNotFoundError:
        return NodeFacts(registered=False)
    if not st.exists:
        return NodeFacts(registered=False)
    return NodeFacts(registered=True, ready=st.ready if st.has_ready else None, ready_reason=st.ready_reason,
                     allocatable=dict(st.allocatable or {}), labels=dict(st.labels))


def run_smoke(kube: Any, policy: ReadinessPolicy, node: str, gpus: int, resource: str | None = None, *,
              poll: float = 1.0) -> PodOutcome:
    """Create the smoke pod (replacing one left by an earlier try), wait for its end within
    the policy's timeout, keep its log, delete it."""
    from bringup.kube.pods import create_pod, delete_pod, pod_log, read_pod, wait_pod

    manifest = pod_manifest(policy, node, gpus, resource)
    ns, name = manifest["metadata"]["namespace"], manifest["metadata"]["name"]
    if delete_pod(kube, ns, name):
        _wait_gone(kube, ns, name, read_pod)
    create_pod(kube, manifest)
    st = wait_pod(kube, ns, name, policy.smoke.timeout_s, poll=poll)
    try:
        log = pod_log(kube, ns, name)
    except KubeError as exc:  # a pod that never started has no log; say so in the evidence
        log = f"(no log: {exc})"
    outcome = PodOutcome(name=name, phase=st.phase or "Unknown", exit_code=st.exit_code if st.finished else None,
                         reason=st.reason or st.message, log=log[-policy.smoke.log_limit:],
                         timed_out=not st.finished)
    delete_pod(kube, ns, name)
    return outcome


def _wait_gone(kube: Any, ns: str, name: str, read_pod: Any, timeout: float = 30.0) -> None:
    """Wait (at most ``timeout`` seconds) for a deleted pod to be gone, so the new one
    can take its name; a pod still terminating then is left to the create to report."""
    def gone() -> bool | None:
        try:
            read_pod(kube, ns, name)
        except KubeNotFoundError:
            return True
        return None
    try:
        poll_until(gone, timeout=timeout, what=f"pod {ns}/{name} gone", backoff=Backoff(first=0.5, factor=1.0),
                   sleep=time.sleep, clock=time.monotonic)
    except Timeout:
        pass


def _event(kube: Any, node: str, reason: str, message: str, warning: bool = False) -> None:
    from bringup.kube.events import NORMAL, WARNING, record_node_event
    try:
        record_node_event(kube, node, reason, message, WARNING if warning else NORMAL)
    except KubeError:
        pass  # an Event is a courtesy to the operator; NetBox holds the record


def sharing_checks(rec: NodeRecord, facts: NodeFacts) -> tuple[list[Check] | None, list[Check], str | None]:
    """The pool's sharing mode judged on what the node advertises: (checks replacing the
    whole-GPU ones for a MIG or time-sliced pool, else None; checks added for an exclusive
    pool: no MIG or shared resource left on it; the resource the smoke pod asks one share
    of, None for whole GPUs). A pool NetBox holds wrong is one failing check."""
    try:
        _, mode = pool_mode(rec)
    except (ConfigError, ParseError) as exc:
        return None, [Check("sharing mode", "fail", str(exc))], None
    want = expected_sharing(mode, rec.sku)
    judged = judge_sharing(want, facts.allocatable, facts.labels)
    if isinstance(mode, Exclusive):
        # the whole-GPU checks cover nvidia.com/gpu; any other GPU resource is a mode that stuck
        return None, [c for c in judged if c.name.startswith("sharing resource ")
                      and c.name != f"sharing resource {GPU}"], None
    return judged, [], next(iter(want.resources))


def gate(ctx: Context, rec: NodeRecord, params: Mapping[str, Any]) -> StepResult:
    from bringup.service.gpu_quarantine import release_passed
    policy = load_policy()
    # GPUs quarantined one by one: back in service after the burn-in that led here, or
    # (gpu_quarantine.yaml says so) kept out, and the node is admitted on the others
    expected = replace(expected_of(rec), gpus_out=release_passed(ctx, rec))
    kube = ctx.kube
    facts = facts_of(kube, rec.name)
    shared, extra, share_resource = sharing_checks(rec, facts) if facts.registered else (None, [], None)
    checks = node_checks(policy, facts, expected, shared) + extra
    pod: PodOutcome | None = None
    if not failures(checks):  # a node that cannot hand out its GPUs gets no pod
        pod = run_smoke(kube, policy, rec.name, 1 if share_resource else expected.serving_gpus, share_resource)
        checks += assess(pod, expected, share=share_resource is not None)
    reasons = failures(checks)
    doc = {"checks": [asdict(c) for c in checks], "expected": asdict(expected),
           "pod": None if pod is None else {k: v for k, v in asdict(pod).items() if k != "events"}}
    table = "\n".join(f"- {'ok' if c.ok else c.outcome.upper()}: {c.name}: {c.detail}" for c in checks)
    log = f"\n\nSmoke pod log (last lines):\n\n```\n{pod.log[-3000:]}\n```\n" if pod is not None else ""
    if reasons:
        _event(kube, rec.name, "ValidationFailed", "; ".join(reasons), warning=True)
        return StepResult(node=rec.name, step="gate", ok=False, summary="readiness gate refused the node",
                          reasons=[f"readiness gate: {r}" for r in reasons],
                          evidence=[Evidence(kind="gate", document=doc, style="danger",
                                             summary=f"## Readiness gate: refused\n\n{table}{log}")])
    kube.clear_taint(rec.name, policy.taint.key, f"readiness gate passed ({len(checks)} checks)")
    return StepResult(node=rec.name, step="gate", ok=True, summary="readiness gate passed; validation taint removed",
                      figures={"gate_checks": len(checks)},
                      evidence=[Evidence(kind="gate", document=doc, style="success",
                                         summary=f"## Readiness gate: passed\n\n{table}{log}")])
