"""A pool's acceptance from end to end: the pool's nodes and policy from NetBox, the
manifests rendered, the run observed and judged, the verdict recorded, and the pool's
new nodes kept out of service unless it passed. What the CLI (``bringup accept``) and the
flow (``flows/pool_acceptance.py``) call; the lifecycle's ``hold`` is handed in (the
wiring, ``bringup.pipeline``, is not imported by the library)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bringup.errors import ConfigError
from bringup.provision.image import load_manifest
from bringup.workload.manifests import image_of, render_job, render_queues, storage_from
from bringup.workload.policy import AcceptancePolicy, Observation, Verdict, judge, load_policy
from bringup.workload.record import keep_out, record_verdict
from bringup.workload.run import Clock, Cluster, accept

#: stages whose nodes a pool acceptance run may hold: joined and not yet proven by one
NEW_STAGES = ("validating", "active")


@dataclass
class PoolAcceptance:
    verdict: Verdict
    observation: Observation
    policy: AcceptancePolicy
    held: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def pool_policy(records: list[Any], pool: str) -> AcceptancePolicy:
    """The policy of the pool: the repo's defaults with the pool's ``acceptance`` section."""
    sections = {repr(r.pool.get("acceptance") or {}) for r in records}
    if len(sections) > 1:  # one tag, one context: nodes disagreeing means a stray context
        raise ConfigError(f"pool {pool!r}: its nodes render different acceptance sections",
                          hint="check the config contexts of the pool's tag in NetBox")
    return load_policy(records[0].pool.get("acceptance") or {} if records else {})


def accept_pool(ctx: Any, pool: str, run_id: str, *, hold: Callable[[str, str], None],
                cluster: Cluster | None = None, clock: Clock | None = None,
                progress: Callable[[str], None] = lambda _m: None,
                new_nodes: list[str] | None = None) -> PoolAcceptance:
    """Run pool ``pool``'s acceptance as run ``run_id``. ``new_nodes``: the nodes a failed
    acceptance keeps out of service (default: the pool's nodes in ``NEW_STAGES``)."""
    records = ctx.netbox.nodes(tag=f"pool-{pool}")
    if not records:
        raise ConfigError(f"pool {pool!r} has no nodes in NetBox",
                          hint=f"check the pool name, and that its nodes carry the tag pool-{pool}")
    policy = pool_policy(records, pool)
    if not ctx.settings.image:
        raise ConfigError("the settings name no image manifest (image:)",
                          hint="set image: to the manifest whose containers: the pool runs")
    image = image_of(load_manifest(ctx.settings.image), policy.image_role)
    storage = storage_from(ctx.settings)
    candidates = sorted(r.name for r in records if r.stage in NEW_STAGES)
    if not candidates:
        raise ConfigError(f"pool {pool!r} has no node in the cluster (stages {', '.join(NEW_STAGES)})",
                          hint="admit the pool's nodes first (commission)")
    docs = render_queues(pool, len(candidates), policy) + [
        render_job(pool, run_id, candidates, image, storage, policy)]
    if cluster is None:
        from bringup.kube.jobs import JobClient
        cluster = JobClient(ctx.kube)
    obs = accept(cluster, pool, docs, policy, clock=clock, progress=progress)
    verdict = judge(obs, policy)
    at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    record_verdict(ctx.netbox, verdict, docs[-1]["metadata"]["name"], at, {r.name: r.id for r in records})
    out = PoolAcceptance(verdict=verdict, observation=obs, policy=policy)
    if not verdict.passed:
        out.held = sorted(new_nodes if new_nodes is not None else candidates)
        out.problems = keep_out(verdict, out.held, hold, lambda n, why: ctx.kube.cordon(n, why))
    return out


__all__ = ["NEW_STAGES", "PoolAcceptance", "accept_pool", "pool_policy"]
