"""The scheduled ``healthwatch`` flow: every active node looked at between re-burn-ins.

Each active node gets a look (:mod:`bringup.service.watch_step`: the agent's short run over
SSH, its Kubernetes conditions, compared with the last look in NetBox) while the run
holds its lease, so a re-burn-in in progress is never watched at the same time. A node
with a critical signal is taken out of service through the lifecycle, if the
blast-radius guard allows it: draining with the reason (cordoned and tainted), drained
(PodDisruptionBudgets honoured, up to the drain step's deadline), and left tagged for
re-burn-in, which the reburnin deployment is asked to run at once (and would pick up at
its next schedule anyway). Warnings are recorded, not acted on. Past the guard's limit
the run acts on none of the refused nodes and fails loudly, after publishing the table.

Where NVSentinel owns the nodes' health (``health_owner: nvsentinel``) bringup cordons
nothing for a finding: it reports the node's critical findings to NVSentinel as an
ExternalFault (:func:`bringup.service.handoff_step.report_fault`), which hands the node back
through the hand-off flow; a report that cannot be made fails the run at its end.
"""

from __future__ import annotations

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.task_runners import ThreadPoolTaskRunner

from bringup.errors import BringupError, TransientError
from bringup.lifecycle.engine import State
from bringup.service.blastradius import Request, refusals

from . import guarded, runtime
from .artifacts import _key
from .walk import RETRY, RunFailed, claimant, run_ended


# a transient error (NetBox or the API restarting) is looked at again after a pause
@task(name="look", **RETRY)
def look_node(node: str, config: str | None = None, act: bool = True) -> dict:
    """One look at ``node`` under its lease; a node another run holds is skipped. A GPU
    the look takes out of service (one GPU's fault; the node keeps serving) is quarantined
    here, under the same lease, when the run acts."""
    rt = runtime.get(config)
    lc = rt.lifecycle()
    me = claimant()
    held = lc.acquire(node, me, ended=run_ended)
    if held is not None:
        return {"node": node, "skipped": f"held by {held.holder}", "signals": [], "critical": []}
    gpu_action = unreported = ""
    try:
        look = rt.watch(node)
        if act and look.deferred_to and (look.critical or look.gpus):
            try:
                gpu_action = rt.report_fault(node, look)     # NVSentinel acts on it, not bringup
            except BringupError as exc:
                if isinstance(exc, TransientError):
                    raise       # the task's retries
                # the finding stays in NetBox; the run fails at its end, saying why
                gpu_action = unreported = f"{node}: not reported to NVSentinel ({exc})"
        elif act and look.gpus and not look.critical:     # one GPU's fault, bringup the owner
            gpu_action = rt.quarantine_gpus(node, look)
    finally:
        lc.release(node, me.holder)
    # what a look costs: the operator's figure for sizing the watch's interval
    print(f"{node}: look took {look.seconds:.1f} s (agent exit {look.agent_rc}), {len(look.signals)} signal(s), "
          f"{'recorded' if look.changed or look.signals else 'nothing new, nothing written'}")
    # a site whose health owner is another system (NVSentinel): recorded in NetBox, not acted on
    deferred = bool(look.deferred_to)
    return {"node": node, "skipped": "", "seconds": round(look.seconds, 2), "error": look.error,
            "signals": [f"{s.severity}: {s.message}" for s in look.signals],
            "critical": [] if deferred else look.node_reasons,
            "deferred_to": look.deferred_to, "gpu_action": gpu_action, "unreported": unreported,
            "evidence": look.evidence() if look.critical and not deferred else None}


@task(name="take-out-of-service", retries=0)
def take_out(node: str, reasons: list[str], evidence, config: str | None = None) -> str:
    """Draining with the reason, then the drain step: where the node is afterwards."""
    lc = runtime.get(config).lifecycle()
    me = claimant()
    held = lc.acquire(node, me, ended=run_ended)
    if held is not None:
        return f"left alone: held by {held.holder}"
    try:
        if lc.suspect(node, reasons, [evidence] if evidence is not None else []) != State.DRAINING:
            return f"left alone: no longer active ({lc.state_of(node)})"
        result = lc.run_step(node, State.DRAINING, "drain", {}, holder=me.holder)
        return f"{result.state}: {result.summary}"
    finally:
        lc.release(node, me.holder)


def _queue_reburnin(nodes: list[str], config: str | None) -> str:
    from prefect.deployments import run_deployment
    try:
        run = run_deployment("reburnin/reburnin", parameters={"nodes": nodes, "config": config}, timeout=0)
    except Exception as exc:  # noqa: BLE001 - no deployment (a bare run): the tag is the queue
        return f"tagged for the next scheduled re-burn-in ({exc.__class__.__name__}: {exc})"
    return f"re-burn-in run {run.name} queued"


@flow(name="healthwatch", log_prints=True, task_runner=ThreadPoolTaskRunner(max_workers=32))
def healthwatch(site: str | None = None, rack: str | None = None, tag: str | None = None,
                nodes: list[str] | None = None, act: bool = True, queue_reburnin: bool = True,
                config: str | None = None) -> list[dict]:
    """Look at every active node selected; act on critical signals (``act``)."""
    log = get_run_logger()
    rt = runtime.get(config)
    active = [s for s in rt.select(site=site, rack=rack, tag=tag, names=nodes) if s.stage == State.ACTIVE.value]
    futures = [(s.name, look_node.submit(s.name, config, act)) for s in active]
    looks = [outcome(name, f.result(raise_on_failure=False)) for name, f in futures]
    suspects = [lk for lk in looks if lk["critical"]]
    decisions = []
    acted: dict[str, str] = {}
    if act and suspects:
        decisions = guarded.ask([Request(lk["node"], "drain", "; ".join(lk["critical"])) for lk in suspects],
                                config=config, prefix="healthwatch")
        refused = {d.node for d in decisions if not d.allowed}
        for lk in suspects:
            if lk["node"] not in refused:
                acted[lk["node"]] = take_out.submit(lk["node"], lk["critical"], lk["evidence"], config).result()
        if acted and queue_reburnin:
            note = _queue_reburnin(sorted(acted), config)
            log.info(note)
            acted = {n: f"{v}; {note}" for n, v in acted.items()}
    rows = [{"node": lk["node"], "signals": "; ".join(lk["signals"]) or _quiet(lk),
             "critical": len(lk["critical"]), "look s": lk.get("seconds", ""),
             "action": acted.get(lk["node"], "") or lk.get("gpu_action", "")
             or (f"recorded only: the health owner is {lk['deferred_to']}" if lk.get("deferred_to") else "")}
            for lk in looks]
    create_table_artifact(key=_key("healthwatch-looks"), table=rows or [{"node": "", "signals": "no active nodes"}],
                          description=f"{len(looks)} active node(s) looked at, {len(suspects)} with critical signals")
    unreported = "; ".join(lk["unreported"] for lk in looks if lk.get("unreported"))
    text = "; ".join(t for t in (refusals(decisions), blind(looks), unreported) if t)
    if text:
        raise RunFailed(text, hint="an operator must look before more nodes leave service, or at why "
                                   "a node could not be looked at")
    return rows


def _quiet(look: dict) -> str:
    if look.get("failed"):
        return "look failed, health unknown: " + look["failed"]
    return "skipped: " + look["skipped"] if look["skipped"] else "quiet"


def outcome(node: str, result) -> dict:
    """A look's row; a look that failed (after its retries) is one with nothing known about
    the node: no signal, so no action, and the run fails at its end (:func:`blind`)."""
    if not isinstance(result, BaseException):
        return result
    return {"node": node, "skipped": "", "failed": f"{result.__class__.__name__}: {result}",
            "signals": [], "critical": []}


def blind(looks: list[dict]) -> str:
    """What the run could not see: the nodes whose look failed, with why."""
    failed = [f"{lk['node']} ({lk['failed']})" for lk in looks if lk.get("failed")]
    return f"{len(failed)} node(s) could not be looked at, their health is unknown: {', '.join(failed)}" \
        if failed else ""
