"""Register bringup with a Prefect server: work pools, global concurrency limits and the
deployments of prefect.yaml.

Run as ``python -m flows.deploy`` or through ``bringup deploy``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import WorkPoolCreate
from prefect.exceptions import ObjectNotFound

from bringup.resources import package_root, project_file

from .batches import BATCH_POOL
from .limits import DEFAULT_LIMITS, ensure_limits
from .zombies import ensure_automation

WORK_POOL = "bringup-process"
POOLS = {WORK_POOL: "bringup flows on this controller",
         BATCH_POOL: "child runs of large commission runs (one batch of racks per worker)"}


def ensure_work_pools() -> list[str]:
    created = []
    with get_client(sync_client=True) as client:
        for name, description in POOLS.items():
            try:
                client.read_work_pool(name)
            except ObjectNotFound:
                client.create_work_pool(WorkPoolCreate(name=name, type="process", description=description))
                created.append(name)
    return created


def deploy_all(env: dict[str, str] | None = None) -> None:
    # workers start flow runs from the folder that holds the flows package (a checkout,
    # or site-packages when bringup is installed as a wheel)
    root = package_root("flows").parent
    run_env = {**os.environ, **(env or {}), "BRINGUP_REPO": str(root)}
    exe = Path(sys.executable).parent / "prefect"
    r = subprocess.run([str(exe), "--no-prompt", "deploy", "--all", "--prefect-file", str(project_file())],
                       cwd=root, env=run_env, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"prefect deploy failed:\n{(r.stdout + r.stderr)[-3000:]}")


def register(limits: dict[str, int] | None = None) -> None:
    ensure_work_pools()
    ensure_limits({**DEFAULT_LIMITS, **(limits or {})}, overwrite=limits is not None)
    deploy_all()
    ensure_automation()  # deployments' runs whose process dies turn Crashed (flows/zombies.py)


if __name__ == "__main__":
    register()
    print(f"registered work pools {', '.join(POOLS)}, limits {DEFAULT_LIMITS} and the deployments of prefect.yaml")
