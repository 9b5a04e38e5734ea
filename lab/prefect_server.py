"""The lab's Prefect 3 server (SQLite under the lab home by default), UI included.

``BRINGUP_PREFECT_DATABASE_URL`` may name a PostgreSQL database instead
(``postgresql+asyncpg://...``), e.g. one on the lab's own PostgreSQL.
"""

from __future__ import annotations

import os
import sys
import urllib.request
from pathlib import Path

from . import procs
from .paths import HOST, PREFECT_PORT, LabPaths


def prefect_env(home: Path, port: int = PREFECT_PORT) -> dict[str, str]:
    """Environment for every Prefect client or server of the lab."""
    env = {
        "PREFECT_HOME": str(home),
        "PREFECT_API_URL": f"http://{HOST}:{port}/api",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_API_HOST": HOST,
        "PREFECT_SERVER_API_PORT": str(port),
        "PREFECT_UI_API_URL": f"http://{HOST}:{port}/api",
        "PREFECT_LOGGING_LEVEL": "INFO",
        # a task waiting on a full global concurrency limit polls again after at most
        # this many seconds (default 30): burn-in and install slots free up every few
        # minutes and a queued node should take one promptly, not half a minute later
        "PREFECT_SERVER_CONCURRENCY_MAXIMUM_CONCURRENCY_SLOT_WAIT_SECONDS": "2",
    }
    db = os.environ.get("BRINGUP_PREFECT_DATABASE_URL")
    env["PREFECT_SERVER_DATABASE_CONNECTION_URL"] = db or f"sqlite+aiosqlite:///{home}/prefect.db"
    return env


class PrefectServer:
    def __init__(self, paths: LabPaths, *, name: str = "prefect", home: Path | None = None,
                 port: int = PREFECT_PORT) -> None:
        self.paths = paths
        self.name = name
        self.home = home or paths.prefect
        self.port = port

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.url}/api"

    def env(self) -> dict[str, str]:
        return prefect_env(self.home, self.port)

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.api_url}/health", timeout=3) as r:
                return r.status == 200
        except Exception:
            return False

    def ui_answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/", timeout=5) as r:
                return r.status == 200 and b"<html" in r.read(4096).lower()
        except Exception:
            return False

    def start(self) -> None:
        if self.healthy():
            return
        self.home.mkdir(parents=True, exist_ok=True)
        exe = Path(sys.executable).parent / "prefect"
        procs.start(self.name, [str(exe), "server", "start", "--host", HOST, "--port", str(self.port),
                                "--no-background"],
                    run_dir=self.paths.run, log_dir=self.paths.logs, env=self.env())
        procs.wait_until(self.healthy, timeout=180, what=f"Prefect server ({self.name})",
                         log=self.paths.logs / f"{self.name}.log",
                         alive=lambda: procs.pid_of(self.paths.run, self.name) is not None)

    def stop(self) -> bool:
        return procs.stop(self.name, self.paths.run)
