"""Loopback ports, process names and databases of the services the integration tests
start: the one place their arithmetic lives, so pytest-xdist workers never share one.

A session without xdist is slot 0 and keeps the names and ports the suite always had
(``netbox-test`` on 28081 over ``netbox_test``, Redis db 4, ``prefect-test`` on 24201);
xdist worker ``gwN`` is slot N+1, with names ending in ``-gwN`` and a block of ports of
its own. Shared by all: the lab's PostgreSQL and Redis servers and the pristine NetBox
database (a template that is only read).

A fleet lab (tests/fixtures/fleets/*.yaml) has fixed loopback addresses, and here a fixed
Kubernetes API and seed server port: its tests run on one worker (``xdist_group`` with the
fleet's name, ``--dist loadgroup``), so its ports need no worker offset. Its NetBox server
is one of the worker's (role ``flow8``, ``flow8b``, ``flow8c``, ``faults``, ``watch`` below).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

#: "" without xdist, else gw0, gw1, ... (set by xdist before any conftest is imported)
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
SLOT = int(WORKER[2:]) + 1 if WORKER.startswith("gw") else 0
SUFFIX = f"-{WORKER}" if WORKER else ""

HOST = "127.0.0.1"

#: the NetBox servers a slot may start: the ``netbox`` fixture's, one per fleet scenario,
#: and the one the NetBox-outage test kills (tests/integration/faults/degraded/test_netbox_down.py)
NETBOX_ROLES = ("test", "flow8", "faults", "watch", "outage", "flow8b", "flow8c")
#: slot 0 keeps the historical 28081 (test) and 28082 (outage); slots 1.. get 28100 + 10*N
_SLOT0_NETBOX = {"test": 28081, "outage": 28082, "flow8": 28083, "faults": 28084, "watch": 28085,
                 "flow8b": 28086, "flow8c": 28087}

#: Redis has 16 databases; the lab's NetBox uses 0 and 1. Each slot's NetBox servers
#: share one pair (tasks, cache): NetBox caches only its configuration revision there,
#: the same for every clone of the pristine database, and the tests run no RQ worker,
#: so servers of one slot cannot see each other's state through it. 7 pairs: 6 workers.
_REDIS_PAIRS = (4, 2, 6, 8, 10, 12, 14)

PREFECT_BASE = 24201                 # the lab's own is 24200
PREFECT_PORT = PREFECT_BASE + SLOT
PREFECT_NAME = f"prefect-test{SUFFIX}"


def _check_slot() -> None:
    if len(_REDIS_PAIRS) <= SLOT:
        raise RuntimeError(f"xdist worker {WORKER}: the tests have Redis databases for at most "
                           f"{len(_REDIS_PAIRS) - 1} workers; run with fewer (-n)")


_check_slot()
REDIS_DB = _REDIS_PAIRS[SLOT]


def netbox_port(role: str = "test") -> int:
    if role not in NETBOX_ROLES:
        raise ValueError(f"unknown NetBox role {role!r}; one of {NETBOX_ROLES}")
    if SLOT == 0:
        return _SLOT0_NETBOX[role]
    return 28100 + 10 * SLOT + NETBOX_ROLES.index(role)


def netbox_name(role: str = "test") -> str:
    """The server's process name (pid file and log in the lab's run and logs folders)."""
    return f"netbox-{role}{SUFFIX}"


def netbox_db(role: str = "test") -> str:
    return f"netbox_{role}{SUFFIX.replace('-', '_')}"


@dataclass(frozen=True)
class FleetPorts:
    kube_listen: str
    seed_listen: str


#: per fleet lab: its Kubernetes API stand-in and the BMC simulator's seed server
FLEETS = {
    "flow8": FleetPorts(f"{HOST}:26453", f"{HOST}:28092"),
    "faults": FleetPorts(f"{HOST}:26455", f"{HOST}:28093"),
    "watch": FleetPorts(f"{HOST}:26457", f"{HOST}:28094"),
    "flow8b": FleetPorts(f"{HOST}:26459", f"{HOST}:28095"),
    "flow8c": FleetPorts(f"{HOST}:26461", f"{HOST}:28096"),
}


#: the pool acceptance tests' Kubernetes API stand-in (tests/integration/workload), one per slot
WORKLOAD_KUBE_BASE = 26470


def workload_kube_port() -> int:
    return WORKLOAD_KUBE_BASE + SLOT


#: the sharing-mode tests' Kubernetes API stand-in (tests/integration/admission), one per slot
SHARING_KUBE_BASE = 26490


def sharing_kube_port() -> int:
    return SHARING_KUBE_BASE + SLOT


def third_octet() -> int:
    """The third octet of the small loopback node labs (tests/integration/nodes, fabric,
    kube): from the pid without xdist (20..219, as before), one per worker with it
    (220..), so two workers never draw the same addresses."""
    return 219 + SLOT if SLOT else os.getpid() % 200 + 20


def flush_redis() -> None:
    """Empty this slot's Redis pair (NetBox's tasks and cache), as after a database reset."""
    import subprocess

    from lab.paths import REDIS_PORT
    for n in (REDIS_DB, REDIS_DB + 1):
        subprocess.run(["redis-cli", "-h", HOST, "-p", str(REDIS_PORT), "-n", str(n), "FLUSHDB"],
                       capture_output=True, check=False)
