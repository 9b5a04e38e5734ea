"""Scale-out: one commission over two racks runs as two child flow runs on two batch
workers; each worker does one share, and the global limits hold across both."""

from __future__ import annotations

import itertools
import os
import sys
import time
from pathlib import Path

import httpx
import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("flow8")]

REPO = Path(__file__).resolve().parents[3]
HEALTHY = {"ft-r01-n01", "ft-r01-n05", "ft-r02-n01", "ft-r02-n02"}
#: two racks, each with its healthy pair (the fabric test's partners) and one faulty node:
#: ft-r01-n02 stops at discovery (a GPU missing), ft-r02-n04 installs and fails burn-in
NODES = sorted(HEALTHY | {"ft-r01-n02", "ft-r02-n04"})


@pytest.fixture
def two_batch_workers(flow_env, prefect_server, lab_paths, tmp_path):
    from flows.deploy import register
    from flows.limits import ensure_limits
    from lab import procs
    register()
    ensure_limits({"os-installs": 1})   # installs one at a time, whichever worker asks
    run, logs = tmp_path / "run", tmp_path / "logs"
    names = ["worker-a", "worker-b"]
    exe = Path(sys.executable).parent / "prefect"
    env = {**prefect_server.env(), "BRINGUP_CONFIG": str(flow_env), "PREFECT_WORKER_QUERY_SECONDS": "1",
           "PREFECT_WORKER_PREFETCH_SECONDS": "2"}
    for name in names:
        procs.start(name, [str(exe), "worker", "start", "--pool", "bringup-batch", "--type", "process",
                           "--name", name, "--limit", "1"], run_dir=run, log_dir=logs, env=env, cwd=REPO)
    from flows.batches import online_workers
    procs.wait_until(lambda: online_workers() == 2, timeout=90, what="two batch workers", log=logs / "worker-a.log")
    yield {n: logs / f"{n}.log" for n in names}
    for name in names:
        procs.stop(name, run)
        # the server reports a stopped worker ONLINE until it has missed its heartbeats
        # (about 90 s): a commission of a later test on this Prefect server would count it
        # and hand it a batch; removed from the pool, it is not counted
        httpx.delete(f"{prefect_server.api_url}/work_pools/bringup-batch/workers/{name}", timeout=30)
    assert online_workers() == 0
    ensure_limits({"os-installs": 8})


# more than 120 s (3-5 minutes): six nodes of two racks, their installs one at a time
# across both workers (the install limit of 1 is the claim), then burn-in and fabric
def test_two_workers_share_one_commission_and_the_limits_hold_across_them(reseeded, two_batch_workers):
    from prefect.client.orchestration import get_client

    from bringup.context import Context
    from flows import runtime
    from flows.commission import commission
    runtime.forget()
    t0 = time.time()
    rows = commission(nodes=NODES, batches=2)
    assert {r["node"] for r in rows if r["verdict"] == "admitted"} == HEALTHY
    assert {r["node"]: r["verdict"] for r in rows if r["node"] not in HEALTHY} == {
        "ft-r01-n02": "quarantined", "ft-r02-n04": "quarantined"}

    # each worker ran exactly one of the two child runs
    with get_client(sync_client=True) as client:
        children = [r for r in client.read_flow_runs() if r.name.startswith("batch ") and r.start_time
                    and r.start_time.timestamp() >= t0 - 5]
    assert len(children) == 2 and all(c.state.is_completed() for c in children)
    # a run a worker ran logs its own "View at .../flow-run/<id>" line there; both workers
    # may try to submit the same run, and the server aborts the second (seen: "Aborted
    # submission of flow run ...": that worker did not run it)
    ran = {name: [str(c.id) for c in children if f"/flow-run/{c.id}" in log.read_text(errors="replace")]
           for name, log in two_batch_workers.items()}
    assert sorted(len(v) for v in ran.values()) == [1, 1], ran

    # the install limit (1) held across both workers: no two installs overlapped
    ctx = Context.from_settings(os.environ["BRINGUP_CONFIG"])
    spans = []
    for rec in ctx.netbox.nodes(names=NODES):
        if ctx.evidence.has(rec.custom_fields, "install"):
            doc = ctx.evidence.get(rec.name, rec.custom_fields, "install")
            spans.append((doc["started"], doc["finished"], rec.rack))
    spans.sort()
    assert len(spans) >= 5 and {rack for *_t, rack in spans} == {"r01", "r02"}
    for (_a0, a1, _), (b0, _b1, _) in itertools.pairwise(spans):
        assert b0 >= a1 - 0.5, ("installs overlapped", spans)
