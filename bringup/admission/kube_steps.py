"""The cluster side of the lifecycle: step ``join`` (state validating: join, wait for
Ready, label, schedulable under the validation taint; the next step, ``gate``, admits),
step ``drain`` (state draining: one deadline, ``drain_timeout_s``, for the whole drain,
and the node's reason saying what holds it while it waits), and the isolation of a
quarantined node (cordon and taint with the reason, confirmed by reading it back)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from bringup.context import Context
from bringup.errors import DrainBlocked, KubeNotFoundError
from bringup.lifecycle.results import Evidence, StepResult
from bringup.netbox.adapter import NodeRecord

if TYPE_CHECKING:
    from bringup.kube.drain import DrainWait


def join(ctx: Context, rec: NodeRecord, params: Mapping[str, Any], ready_timeout: float = 120.0) -> StepResult:
    """Join and label a node whose recorded burn-in passed. The verdict is read back from
    NetBox, never assumed: anything but ``pass`` keeps the node out."""
    from bringup.admission.labels import node_labels
    from bringup.admission.pool import pool_of
    from bringup.admission.readiness import load_policy
    from bringup.remote.ansible import run_playbook

    status = rec.custom_fields.get("burnin_status")
    if status != "pass" or not rec.custom_fields.get("burnin_last"):
        return StepResult(node=rec.name, step="join", ok=False, summary="no passing burn-in recorded",
                          reasons=[f"burn-in status is {status or 'missing'} (a passing, dated verdict is needed)"])
    kube = ctx.kube
    if not kube.node_state(rec.name).exists:
        join_cmd = kube.join_command()
        res = run_playbook("kubeadm-join.yml", ctx.host(rec), {
            "kube_endpoint": join_cmd.endpoint, "kube_token": join_cmd.token,
            "kube_ca_cert_hash": join_cmd.ca_cert_hash, "kube_node_name": rec.name}, ctx.ssh_access(), timeout=300)
        if not res.ok:
            return StepResult(node=rec.name, step="join", ok=False, summary="kubeadm join failed",
                              reasons=[f"kubeadm join failed: {h.reason()}" for h in res.failed().values()])
    kube.wait_node_ready(rec.name, timeout=ready_timeout)
    pool_name, pool = pool_of(rec.pool)
    # rack and block (the rack's NetBox location): the levels of the pool's Kueue Topology
    block = ctx.netbox.rack_locations(rec.site).get((rec.site, rec.rack), "") if rec.rack else ""
    labels = node_labels(rec.sku, pool, {}, {"status": "pass", "date": rec.custom_fields.get("burnin_last")},
                         pool_name=pool_name, rack=rec.rack or "", block=block)
    # schedulable for the smoke pod only: the readiness gate (next step) lifts the taint
    state = kube.admit(rec.name, labels, annotations={"bringup.io/netbox": rec.url}, pending=load_policy().taint)
    text = ("Joined Kubernetes (tainted validation-pending until the readiness gate passes) with labels:\n\n"
            + "\n".join(f"- `{k}={v}`" for k, v in sorted(labels.items())))
    if getattr(state, "unschedulable", False):  # a cordon bringup did not place is kept (kube.ownership)
        from bringup.kube.ownership import state_holder
        text += f"\n\nThe node stays cordoned: held by {state_holder(state)}; bringup does not uncordon it."
    return StepResult(node=rec.name, step="join", ok=True, summary="joined, labelled, validation pending",
                      figures={"labels": len(labels)},
                      evidence=[Evidence(kind="admission", document={"labels": labels}, summary=text,
                                         style="success")])


#: how a drain says what holds it while it waits: (node name, reason) -> None. The real
#: one is the lifecycle's :meth:`~bringup.lifecycle.engine.Lifecycle.hold`, the one writer
#: of a node's stage and reason (wired in :func:`bringup.pipeline.lifecycle`).
Waiting = Callable[[str, str], None]


def drain(ctx: Context, rec: NodeRecord, params: Mapping[str, Any], waiting: Waiting | None = None) -> StepResult:
    """Cordon the node and evict its pods (PodDisruptionBudgets honoured) within the
    settings' ``drain_timeout_s``, the whole step's deadline. While pods hold it, the node's
    reason says which and why; a drain still blocked at the deadline raises DrainBlocked
    (the lifecycle holds the node with it and the run fails). Once drained, the reason the
    node had before the wait is put back (a health watch's, for one)."""
    before = str(rec.custom_fields.get("bringup_reason") or "")
    told: list[str] = []

    def say(wait: DrainWait) -> None:
        told.append(wait.text())
        if waiting is not None:
            waiting(rec.name, wait.text())
    summary = _drain(ctx, rec, say)
    # the wait's "held in draining" is over: back to what the node said before it
    fields = {"bringup_reason": "" if before.startswith("held in ") else before} if told else {}
    return StepResult(node=rec.name, step="drain", ok=True, summary=f"cordoned and drained: {summary}",
                      fields=fields, figures={"drain_waits": len(told)},
                      evidence=[Evidence(kind="drain", document={"summary": summary, "waits": told},
                                         summary=f"Cordoned and drained: {summary}")])


def drain_node(ctx: Context, rec: NodeRecord, waiting: Waiting | None = None) -> str:
    """The drain before a forced rerun (:attr:`~bringup.lifecycle.engine.Lifecycle.on_drain`):
    a drain still blocked at its deadline is raised, and stops the rerun, with the node held."""
    def say(wait: DrainWait) -> None:
        if waiting is not None:
            waiting(rec.name, f"forced rerun: {wait.text()}")
    try:
        return _drain(ctx, rec, say)
    except DrainBlocked as exc:
        if waiting is not None:  # no step holds it on the way out of a forced start
            waiting(rec.name, f"forced rerun: {exc}")
        raise


def _drain(ctx: Context, rec: NodeRecord, on_wait: Callable[[DrainWait], None]) -> str:
    try:
        res = ctx.kube.drain(rec.name, timeout=ctx.settings.drain_timeout_s, on_wait=on_wait)
    except KubeNotFoundError:
        return "not in the cluster"
    return (f"{len(res.evicted)} pod(s) evicted in {res.seconds:g} s"
            + (f", {len(res.skipped)} DaemonSet/mirror pod(s) left" if res.skipped else ""))


def isolate(ctx: Context, rec: NodeRecord, reason: str) -> str:
    """Cordon and taint a quarantined node, with the reason visible on it; retried until
    the API server confirms it (see :func:`bringup.service.reconcile.isolate`)."""
    from bringup.service.reconcile import isolate as isolate_confirmed
    from bringup.service.watch_step import taint_effect
    return isolate_confirmed(ctx.kube, rec.name, reason, effect=taint_effect(ctx, rec))


def cluster_labels(ctx: Context, name: str) -> dict[str, str]:
    """The labels node ``name`` carries in the cluster now: an admitted node's row of the
    fleet table shows them (the records port is handed this reader by ``bringup.pipeline``:
    NetBox's records read no cluster)."""
    return dict(ctx.kube.node_state(name).labels)
