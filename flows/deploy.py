"""Register bringup with a Prefect server: work pool, global concurrency limits,
the deployments of prefect.yaml, and (for the lab) a process worker.

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

from .limits import DEFAULT_LIMITS, ensure_limits

REPO = Path(__file__).resolve().parent.parent
WORK_POOL = "bringup-process"


def ensure_work_pool(name: str = WORK_POOL) -> bool:
    with get_client(sync_client=True) as client:
        try:
            client.read_work_pool(name)
            return False
        except ObjectNotFound:
            client.create_work_pool(WorkPoolCreate(name=name, type="process",
                                                   description="bringup flows on this controller"))
            return True


def deploy_all(env: dict[str, str] | None = None) -> None:
    run_env = {**os.environ, **(env or {}), "BRINGUP_REPO": str(REPO)}
    exe = Path(sys.executable).parent / "prefect"
    r = subprocess.run([str(exe), "--no-prompt", "deploy", "--all", "--prefect-file", str(REPO / "prefect.yaml")],
                       cwd=REPO, env=run_env, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"prefect deploy failed:\n{(r.stdout + r.stderr)[-3000:]}")


def register(limits: dict[str, int] | None = None) -> None:
    ensure_work_pool()
    ensure_limits({**DEFAULT_LIMITS, **(limits or {})}, overwrite=limits is not None)
    deploy_all()


if __name__ == "__main__":
    register()
    print(f"registered work pool {WORK_POOL}, limits {DEFAULT_LIMITS} and the deployments of prefect.yaml")
