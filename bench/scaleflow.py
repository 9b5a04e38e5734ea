"""The scale bench's batch flow: the real ``commission-batch`` body, run by a worker
against the bench's runtime (real NetBox, stand-in step bodies; bench/scaleruntime.py),
built from the deployment's ``scale`` parameter."""

from __future__ import annotations

import sys
from pathlib import Path

from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scaleruntime import ScaleRuntime
from flows import runtime
from flows.commission import commission_batch


@flow(name="scale-batch", log_prints=True, task_runner=ThreadPoolTaskRunner(max_workers=1024))
def scale_batch(nodes: list[str], burnin_profile: str = "quick", force: bool = False, config: str | None = None,
                scale: dict | None = None, fabric_mode: str = "rack") -> list[dict]:
    runtime.use(ScaleRuntime(**(scale or {})))
    return commission_batch.fn(nodes=nodes, burnin_profile=burnin_profile, force=force, config=config,
                               fabric_mode=fabric_mode)
