"""Scale-out: a run over many racks is split into child flow runs of whole racks, one
per online worker of the batch work pool, dispatched through the ``commission-batch``
deployment so that every worker takes a share.

Batch workers take one batch at a time (``prefect worker start --limit 1``), so a pool
of N workers runs N batches side by side; the global concurrency limits (installs, BMC
sessions, per-rack burn-ins) hold across all of them because every slot is a lease on
the one Prefect server.
"""

from __future__ import annotations

import json
import math
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
from prefect import get_run_logger
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterKey,
    FlowRunFilter,
    FlowRunFilterId,
    WorkerFilter,
    WorkerFilterStatus,
)
from prefect.deployments import run_deployment
from prefect.exceptions import ObjectNotFound, PrefectHTTPStatusError

from bringup.retry import Backoff
from bringup.retry import poll as poll_until

from .orchestrator import is_unavailable
from .walk import RunFailed

BATCH_POOL = "bringup-batch"
BATCH_DEPLOYMENT = "commission-batch/commission-batch"
#: a child run still waiting for a worker this long, while the pool has no online worker
#: at all, will never start: a worker stopped after it was counted (the server reports a
#: stopped worker ONLINE until it has missed its heartbeats, about 90 s)
PICKUP_S = 180.0


class BatchNotPickedUp(RunFailed):
    """A child run that no worker of the batch pool will take."""


def online_workers(pool: str = BATCH_POOL) -> int:
    """Workers of ``pool`` that sent a heartbeat recently (0 when there is no such pool)."""
    try:
        with get_client(sync_client=True) as client:
            workers = client.read_workers_for_work_pool(
                pool, worker_filter=WorkerFilter(status=WorkerFilterStatus(any_=["ONLINE"])))
    except ObjectNotFound:
        return 0
    except PrefectHTTPStatusError as exc:
        if exc.response.status_code == 404:  # no such pool on this server
            return 0
        raise
    return len(workers)


def split(selected: list, n: int) -> list[list]:
    """Whole racks into at most ``n`` groups of similar node counts (largest rack first,
    each to the lightest group): a rack's burn-in limit stays within one batch."""
    racks: dict[str, list] = {}
    for s in selected:
        racks.setdefault(s.rack, []).append(s)
    groups: list[list] = [[] for _ in range(max(1, min(n, len(racks))))]
    for _rack, nodes in sorted(racks.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        min(groups, key=len).extend(nodes)
    return [g for g in groups if g]


def dispatch(batches: list[list], parameters: dict, deployment: str = BATCH_DEPLOYMENT) -> list:
    """Run each batch as a child flow run of this one through ``deployment``; wait for all.
    Returns the finished flow runs, in batch order."""
    log = get_run_logger()

    def one(i_batch):
        i, batch = i_batch
        params = {**parameters, "nodes": [s.name for s in batch]}
        log.info("batch %d: %d node(s) in rack(s) %s", i + 1, len(batch), ", ".join(sorted({s.rack for s in batch})))
        run = run_deployment(deployment, parameters=params, timeout=0, as_subflow=True,
                             flow_run_name=f"batch {i + 1} of {len(batches)}")
        return wait_for(run.id)

    with ThreadPoolExecutor(max_workers=len(batches)) as pool:
        return list(pool.map(one, enumerate(batches)))


def wait_for(run_id, poll: float = 2.0, *, pickup_s: float = PICKUP_S, clock=time.monotonic,
             workers=None):
    """The child run once it is final. A busy server's 5xx or a dropped connection while
    polling is waited out (``run_deployment``'s own wait gave up on one 500 at 1,000
    nodes, measured), anything else is raised. A run that no worker has taken after
    ``pickup_s`` while the pool has no online worker is cancelled and raised
    (:class:`BatchNotPickedUp`): waiting on would be forever. Busy workers are waited for."""
    began, workers = clock(), workers or online_workers

    def read():
        try:
            with get_client(sync_client=True) as client:
                run = client.read_flow_run(run_id)
                if (run.state is not None and run.state.is_scheduled() and clock() - began > pickup_s
                        and workers() == 0):
                    _cancel(client, run_id)
                    raise BatchNotPickedUp(
                        f"child run {run.name} ({run_id}) waited {clock() - began:.0f} s and no worker of "
                        f"pool {BATCH_POOL} is online to take it: cancelled",
                        hint=f"start the batch workers (`prefect worker start --pool {BATCH_POOL}`), or run "
                             "with batches=0 to walk every node in this run")
                return run
        except httpx.HTTPError as exc:
            if not is_unavailable(exc):
                raise
            return None
    # no deadline here: the parent waits as long as its child run takes
    return poll_until(read, timeout=math.inf, what=f"flow run {run_id}", backoff=Backoff(first=poll, factor=1.0),
                      done=lambda run: run is not None and run.state is not None and run.state.is_final(),
                      sleep=time.sleep)


def _cancel(client, run_id) -> None:
    """Best effort: a worker that comes back later must not start a batch nobody awaits."""
    from prefect.states import Cancelled
    try:
        client.set_flow_run_state(run_id, Cancelled(message="no batch worker took it"), force=True)
    except Exception:  # noqa: BLE001, S110  (the caller reports the run as failed either way)
        pass


def held_reasons(table) -> dict[str, list[str]]:
    """The nodes a child run's fleet table (an artifact's ``data``: rows, or their JSON)
    reports as held by another run, with the child's reason. NetBox cannot tell the
    parent this: the node's record is the other run's walk, mid-way."""
    rows = json.loads(table) if isinstance(table, str) else table
    return {row["node"]: [row["reasons"]] for row in rows or []
            if isinstance(row, dict) and row.get("verdict") == "held" and "node" in row}


def children_held(runs, key: str = "commission-fleet") -> dict[str, list[str]]:
    """:func:`held_reasons` over the fleet tables the child ``runs`` published."""
    held: dict[str, list[str]] = {}
    with get_client(sync_client=True) as client:
        for run in runs:
            found = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])),
                                          flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run.id])),
                                          limit=1)
            if found:
                held.update(held_reasons(found[0].data))
    return held
