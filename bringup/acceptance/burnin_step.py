"""Step ``burn_in`` (state provisioned): the agent runs on the node and its result
document becomes evidence in NetBox. Judging is the next state's step, so a run killed
after the burn-in resumes from the stored document on any worker, without burning in
again. The agent runs under the plan's own time budget; a run stopped at the budget
leaves a partial document, stored like any other (the judge makes it incomplete)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bringup.acceptance.digest import with_digest
from bringup.context import Context
from bringup.lifecycle.results import Evidence, StepResult
from bringup.netbox.adapter import NodeRecord
from bringup.provision.configure_steps import manifest_of


def burn_in(ctx: Context, rec: NodeRecord, params: Mapping[str, Any]) -> StepResult:
    from bringup.acceptance.plan import make_plan
    from bringup.acceptance.thresholds import thresholds_for
    from bringup.provision.ansible_steps import run_burnin

    profile = str(params.get("burnin_profile") or "quick")
    m = manifest_of(rec)
    versions = {"driver": m.packages.driver, "cuda": m.packages.cuda, "nccl": m.packages.nccl, "kernel": m.os.kernel}
    plan = make_plan(rec.sku, thresholds_for(rec.sku), versions, profile=profile, node=rec.name)
    run = run_burnin(rec.name, ctx.host(rec)[rec.name], plan, ctx.ssh_access())
    checks = run.document.get("checks") if isinstance(run.document, dict) else None
    stopped = "; not JSON (kept as text)" if "unparsed" in run.document else ""
    if run.partial:
        unfinished = run.document.get("running") or (run.document.get("pending") or ["?"])[0]
        stopped = f"; stopped at its {run.timeout_s} s budget during {unfinished}"
    summary = (f"## Burn-in document ({profile} profile)\n\nagent exit {run.rc}, "
               f"{len(checks) if isinstance(checks, list) else '?'} checks{stopped}; judged in the next step")
    stored = {"plan": plan, "rc": run.rc, "document": run.document}
    # not judged yet: a verdict of an earlier burn-in must not stand for this document
    return StepResult(node=rec.name, step="burn_in", ok=True, fields={"burnin_status": "pending"},
                      summary=f"burn-in document collected (agent exit {run.rc}{', partial' if run.partial else ''})",
                      evidence=[Evidence(kind="burnin", document=stored, summary=with_digest("burnin", stored, summary))])
