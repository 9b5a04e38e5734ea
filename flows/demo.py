"""The main job on the lab: commission the seeded fleet through the Prefect deployment
and print who joined Kubernetes with which labels, who was cordoned and why, and each
pool's acceptance run (trained, checkpointed, restored: its figures and verdict).

``make demo`` runs ``bringup lab up``, ``bringup lab seed`` and then this module.
"""

from __future__ import annotations

import os
import sys
import time

from bringup.insight.run_summary import acceptance_text, pool_acceptance_text, summary_text


def main(site: str | None = None, timeout: float = 3600.0) -> int:
    from bringup.context import Context
    from bringup.pipeline import lifecycle, select

    ctx = Context.from_settings()
    # the settings name the Prefect server; set it before Prefect is imported
    os.environ["PREFECT_API_URL"] = ctx.settings.prefect_api_url
    from prefect.deployments import run_deployment

    site = site or ctx.settings.site
    t0 = time.monotonic()
    print(f"commissioning site {site} through the Prefect deployment commission/commission ...", flush=True)
    run = run_deployment("commission/commission", parameters={"site": site}, timeout=0)
    print(f"flow run {run.name}: progress per node below (from NetBox)", flush=True)
    _watch(ctx, site, run.id, timeout)
    from prefect.client.orchestration import get_client
    with get_client(sync_client=True) as client:
        run = client.read_flow_run(run.id)
    state = run.state
    print(f"flow run {run.name}: {state.type.value if state else '?'} after {time.monotonic() - t0:.0f}s", flush=True)
    lc = lifecycle(ctx)
    reports = [lc.report(s.name) for s in select(ctx, site=site)]
    print()
    print(summary_text(reports))
    print()
    print(acceptance_text(_acceptance(ctx, [r.node for r in reports])))
    print()
    print(pool_acceptance_text(_pool_acceptances(ctx, site)))
    print()
    print(f"Prefect UI: {ctx.settings.prefect_api_url.removesuffix('/api')}/runs/flow-run/{run.id}")
    print(f"NetBox:     {ctx.settings.netbox_url}/dcim/devices/?site={site}")
    print(f"Report:     {_report(ctx, site)}")
    ok = state is not None and state.is_completed()
    return 0 if ok else 1


def _watch(ctx, site: str, run_id, timeout: float) -> None:
    from prefect.client.orchestration import get_client

    from .progress import watch

    def read_state():
        try:
            with get_client(sync_client=True) as client:
                st = client.read_flow_run(run_id).state
        except Exception:  # noqa: BLE001 - the server is busy: ask again at the next poll
            return "unknown", False
        return (st.type.value if st else "pending"), bool(st and st.is_final())
    watch(lambda: ctx.netbox.nodes(site=site), read_state, timeout=timeout)


def _acceptance(ctx, names: list[str]) -> list:
    """Each node's fabric and gate documents, as NetBox keeps them (None: never got there)."""
    rows = []
    for rec in ctx.netbox.nodes(names=names):
        docs = []
        for kind in ("fabric", "gate"):
            try:
                has = ctx.evidence.has(rec.custom_fields, kind)
                docs.append(ctx.evidence.get(rec.name, rec.custom_fields, kind) if has else None)
            except Exception as exc:  # noqa: BLE001 - one unreadable document is that node's line
                docs.append({"verdict": "unreadable", "reasons": [str(exc)], "checks": []})
        rows.append((rec.name, *docs))
    return rows


def _pool_acceptances(ctx, site: str) -> list:
    """Each pool of the site and its latest acceptance as NetBox holds it (None: never run)."""
    from bringup.workload.record import latest
    pools = sorted({str(rec.pool.get("name")) for rec in ctx.netbox.nodes(site=site) if rec.pool.get("name")})
    return [(pool, latest(ctx.netbox, pool)) for pool in pools]


def _report(ctx, site: str) -> str:
    """The fleet report (bringup report) of the site, next to the lab's other state."""
    from bringup.insight.fleetreport import write_site
    from bringup.settings import state_dir
    try:
        index = write_site(ctx.netbox, site, state_dir() / "reports" / f"demo-{site}",
                           gpu_hour_usd=ctx.settings.gpu_hour_usd)
    except Exception as exc:  # noqa: BLE001 - the demo's outcome is above; say why there is no page
        return f"could not be written: {exc}"
    return str(index.resolve())


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:2]))
