"""The lab's Prefect 3 server, UI included, on the lab's PostgreSQL by default.

PostgreSQL because that is what a fleet needs (a SQLite-backed server serialises every
write: slot requests of a large run wait seconds for its lock, measured) and what users
already run. ``database="sqlite"`` keeps the SQLite option (a file under the server's
home). The driver is always set explicitly, so clients can tell which database the
server uses from its settings (see :func:`flows.limits.server_database`).
"""

from __future__ import annotations

import sys
import urllib.request
from pathlib import Path

from . import procs
from .paths import HOST, PREFECT_PORT, LabPaths


def prefect_env(home: Path, port: int = PREFECT_PORT, database_url: str | None = None) -> dict[str, str]:
    """Environment for every Prefect client or server of the lab; ``database_url`` None
    means SQLite under ``home``."""
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
    url = database_url or f"sqlite+aiosqlite:///{home}/prefect.db"
    env["PREFECT_SERVER_DATABASE_CONNECTION_URL"] = url
    env["PREFECT_SERVER_DATABASE_DRIVER"] = url.split("://", 1)[0]
    if url.startswith("postgresql"):
        # a commission of 1,000 nodes keeps more than SQLAlchemy's default 5 (+10)
        # connections busy: requests then waited 30 s and failed with 500 (measured)
        env["PREFECT_SERVER_DATABASE_SQLALCHEMY_POOL_SIZE"] = "20"
        env["PREFECT_SERVER_DATABASE_SQLALCHEMY_MAX_OVERFLOW"] = "20"
    return env


class PrefectServer:
    def __init__(self, paths: LabPaths, *, name: str = "prefect", home: Path | None = None,
                 port: int = PREFECT_PORT, database: str = "postgresql", db_name: str | None = None) -> None:
        if database not in ("postgresql", "sqlite"):
            raise ValueError(f"Prefect database must be postgresql or sqlite, not {database!r}")
        self.paths = paths
        self.name = name
        self.home = home or paths.prefect
        self.port = port
        self.database = database
        self.db_name = db_name or name.replace("-", "_")

    def database_url(self) -> str | None:
        if self.database == "sqlite":
            return None
        from .paths import PG_PORT
        from .postgres import SUPERUSER, Postgres
        return f"postgresql+asyncpg://{SUPERUSER}:{Postgres(self.paths).password}@{HOST}:{PG_PORT}/{self.db_name}"

    def ensure_database(self) -> None:
        """The server's own PostgreSQL database on the lab cluster (started if needed)."""
        if self.database != "postgresql":
            return
        from .postgres import Postgres
        pg = Postgres(self.paths)
        pg.start()
        if not pg.exists(self.db_name):
            pg.create(self.db_name)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.url}/api"

    def env(self) -> dict[str, str]:
        return prefect_env(self.home, self.port, self.database_url())

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
        self.ensure_database()
        exe = Path(sys.executable).parent / "prefect"
        procs.start(self.name, [str(exe), "server", "start", "--host", HOST, "--port", str(self.port),
                                "--no-background"],
                    run_dir=self.paths.run, log_dir=self.paths.logs, env=self.env())
        procs.wait_until(self.healthy, timeout=180, what=f"Prefect server ({self.name})",
                         log=self.paths.logs / f"{self.name}.log",
                         alive=lambda: procs.pid_of(self.paths.run, self.name) is not None)

    def stop(self) -> bool:
        return procs.stop(self.name, self.paths.run)
