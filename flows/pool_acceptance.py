"""The ``pool-acceptance`` flow: a pool's acceptance run (issue #28) as a Prefect
deployment, after the admission of a batch or on demand. The logic is
:func:`bringup.workload.pool.accept_pool`; this flow hands it the runtime's context and the
lifecycle's ``hold`` (the runtime's), publishes the verdict's figures as an artifact, and fails the run
when the pool did not pass (its new nodes are then held and cordoned with the reason)."""

from __future__ import annotations

import datetime as dt

from prefect import flow
from prefect.artifacts import create_table_artifact

from . import runtime


@flow(name="pool-acceptance", log_prints=True)
def pool_acceptance(pool: str, run_id: str = "", new_nodes: list[str] | None = None,
                    config: str | None = None) -> dict:
    """Run ``pool``'s acceptance job; ``new_nodes``: the nodes a failed acceptance keeps out
    of service (default: the pool's nodes in the cluster)."""
    from bringup.context import Context
    from bringup.workload.pool import accept_pool
    rt = runtime.get(config)
    ctx = Context.from_settings(config)   # the cluster and NetBox the settings name
    run_id = run_id or dt.datetime.now(dt.UTC).strftime("%Y%m%d%H%M%S")
    result = accept_pool(ctx, pool, run_id, hold=rt.lifecycle().hold, progress=print, new_nodes=new_nodes)
    v = result.verdict
    create_table_artifact(key=f"pool-acceptance-{pool}",
                          table=[{"figure": k, "value": v} for k, v in v.figures.items()],
                          description=v.summary())
    print(v.summary())
    if not v.passed:
        from .walk import RunFailed
        raise RunFailed(v.summary() + (f"; held: {', '.join(result.held)}" if result.held else ""))
    return {"pool": pool, "outcome": v.outcome, "figures": v.figures}
