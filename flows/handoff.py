"""The scheduled ``nvsentinel-handoff`` flow: bringup as NVIDIA NVSentinel's external
remediation system (issue #27, item 2; NVSentinel ADR-040).

With ``health_owner: nvsentinel`` in the settings, NVSentinel owns the nodes' health: it
cordons and taints, and releases a node it cannot fix itself with an
``ExternalRemediationRequest``. Each run reads the open requests (released, not answered)
and takes each one under its node's lease (:mod:`bringup.service.handoff_step`): a request
not accepted yet is acted on through the lifecycle by ``bringup/data/nvsentinel.yaml`` (a
re-burn-in, which the ``reburnin`` deployment is asked to run, or a reinstall) and marked
accepted; an accepted one is answered ``ExternalRemediationComplete`` True or False once
the node serves again or bringup quarantined it. A request bringup cannot read fails the
run, after the table, naming its field.
"""

from __future__ import annotations

from prefect import flow, task
from prefect.artifacts import create_table_artifact

from bringup.kube.remediation import Malformed, Request

from . import runtime
from .artifacts import _key
from .walk import RETRY, RunFailed, claimant, run_ended


@task(name="take-request", **RETRY)
def take_request(req: Request, config: str | None = None) -> dict:
    """One open request under its node's lease; a node another run holds waits for the next run."""
    rt = runtime.get(config)
    lc = rt.lifecycle()
    me = claimant()
    held = lc.acquire(req.node, me, ended=run_ended)
    if held is not None:
        return {"request": req.name, "node": req.node, "action": "",
                "outcome": f"node held by {held.holder}; asked again next run"}
    try:
        return rt.handoff(req)
    finally:
        lc.release(req.node, me.holder)


def _queue_reburnin(nodes: list[str], config: str | None) -> str:
    from prefect.deployments import run_deployment
    try:
        run = run_deployment("reburnin/reburnin", parameters={"nodes": nodes, "config": config,
                                                              "max_age_days": 0}, timeout=0)
    except Exception as exc:  # noqa: BLE001 - no deployment (a bare run): the tag is the queue
        return f"tagged for the next scheduled re-burn-in ({exc.__class__.__name__}: {exc})"
    return f"re-burn-in run {run.name} queued"


@flow(name="nvsentinel-handoff", log_prints=True)
def nvsentinel_handoff(queue_reburnin: bool = True, config: str | None = None) -> list[dict]:
    """Take NVSentinel's open ExternalRemediationRequests; answer those whose node is done."""
    rt = runtime.get(config)
    found = rt.handoff_requests()
    bad = [r for r in found if isinstance(r, Malformed)]
    rows = [{"request": r.name, "node": "", "action": "", "outcome": f"unreadable: {r.path}: {r.message}"} for r in bad]
    rows += [take_request(r, config) for r in found if isinstance(r, Request) and r.open]
    accepted = sorted({r["node"] for r in rows if r["action"] == "reburnin" and r["outcome"].startswith("accepted")})
    if accepted and queue_reburnin:
        note = _queue_reburnin(accepted, config)
        print(note)
    create_table_artifact(key=_key("nvsentinel-handoff"), table=rows or [{"request": "", "outcome": "none open"}],
                          description=f"{len(rows)} open ExternalRemediationRequest(s)")
    if bad:
        raise RunFailed(f"{len(bad)} ExternalRemediationRequest(s) could not be read: "
                        + "; ".join(f"{r.name} ({r.path}: {r.message})" for r in bad),
                        hint="look at the request with kubectl; NVSentinel keeps the node released meanwhile")
    return rows
