"""Session fixtures that start the lab's real services for integration tests.

Tests share the lab's PostgreSQL cluster and its pristine NetBox database (so they never
migrate), but run their own NetBox server on another port and database, and their own
Prefect server, so a developer's running lab is left alone.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bringup.netbox.adapter import NetBox, connect
from bringup.sku import load_skus, nic_counts
from lab.fleet import load_fleet

REPO = Path(__file__).resolve().parent.parent
TEST_NETBOX_PORT = 58081
TEST_NETBOX_DB = "netbox_test"
TEST_REDIS_DB = 4
TEST_PREFECT_PORT = 54201

# Prefect reads its settings once, when it is first imported (a test module importing
# flows.* at the top does that during collection): point it at this session's test
# server now, and forbid the temporary server it would otherwise start quietly (seen:
# in-process flow runs talking to one while the rest of the test used the real one).
os.environ["PREFECT_API_URL"] = f"http://127.0.0.1:{TEST_PREFECT_PORT}/api"
os.environ["PREFECT_SERVER_ALLOW_EPHEMERAL_MODE"] = "false"


@pytest.fixture(scope="session")
def lab_paths():
    from lab.paths import LabPaths
    paths = LabPaths.default()
    paths.ensure()
    return paths


@pytest.fixture(scope="session")
def postgres(lab_paths):
    """The lab's PostgreSQL and Redis; stopped at the end if this session started them."""
    from lab import procs
    from lab.paths import HOST, PG_PORT, REDIS_PORT
    from lab.postgres import Postgres
    from lab.redis import Redis
    pg, redis = Postgres(lab_paths), Redis(lab_paths)
    was_up = procs.port_open(HOST, PG_PORT), procs.port_open(HOST, REDIS_PORT)
    pg.start()
    redis.start()
    yield pg
    if not was_up[1]:
        redis.stop()
    if not was_up[0]:
        pg.stop()


@pytest.fixture(scope="session")
def netbox_server(lab_paths, postgres):
    """A real NetBox on its own port, over a clone of the pristine database."""
    from lab.netbox_server import PRISTINE_DB
    from lab.netbox_server import NetBox as NetBoxServer
    srv = NetBoxServer(lab_paths, postgres)
    srv.ensure_venv()
    srv.write_config()
    srv.ensure_pristine()
    postgres.clone(PRISTINE_DB, TEST_NETBOX_DB)
    srv.start(name="netbox-test", port=TEST_NETBOX_PORT, db=TEST_NETBOX_DB, redis_db=TEST_REDIS_DB, workers=2)
    yield srv
    srv.stop("netbox-test")


def _flush_redis(db: int) -> None:
    from lab.paths import HOST, REDIS_PORT
    for n in (db, db + 1):
        subprocess.run(["redis-cli", "-h", HOST, "-p", str(REDIS_PORT), "-n", str(n), "FLUSHDB"],
                       capture_output=True, check=False)


@pytest.fixture(scope="session")
def netbox_url(netbox_server):
    return netbox_server.url(TEST_NETBOX_PORT)


@pytest.fixture(scope="session")
def netbox_token(lab_paths):
    return (lab_paths.secrets / "netbox-token").read_text().strip()


@pytest.fixture
def netbox(netbox_server, postgres, netbox_url, netbox_token) -> NetBox:
    """A NetBox adapter on a fresh clone of the pristine database (about 0.2 s)."""
    from lab.netbox_server import PRISTINE_DB
    postgres.clone(PRISTINE_DB, TEST_NETBOX_DB)
    _flush_redis(TEST_REDIS_DB)
    return NetBox(connect(netbox_url, netbox_token))


@pytest.fixture(scope="session")
def skus():
    return load_skus()


@pytest.fixture(scope="session")
def lab_fleet(skus):
    return load_fleet(REPO / "lab" / "fleets" / "default.yaml", nic_counts(skus))


@pytest.fixture(scope="session")
def prefect_server(lab_paths, postgres):
    """A Prefect server of this session on the lab's PostgreSQL (as the lab runs it), on a
    fresh database unless a server of an earlier session still runs."""
    from lab.prefect_server import PrefectServer
    srv = PrefectServer(lab_paths, name="prefect-test", home=lab_paths.home / "prefect-test", port=TEST_PREFECT_PORT)
    if not srv.healthy():
        postgres.drop(srv.db_name)
    srv.start()
    yield srv
    srv.stop()
