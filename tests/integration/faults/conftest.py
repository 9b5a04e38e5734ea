"""The fault suite's flow lab: a copy of flow8.yaml on loopback addresses of its own
(127.12/127.22), its own Kubernetes API and seed ports and its own NetBox server
(tests/ports.py, ``flow8b``), so these tests run on one worker while the flow tests
(tests/integration/flows, ``flow8``) run on another.

The fixtures a fault test uses by name (``flow_lab``, ``flow_fleet``, ``flow_netbox``,
``flow_fleet_path``, and through them ``flow_env``, ``seeded``, ``reseeded``) are
overridden here, each a session fixture of its own: pytest caches a session fixture per
definition, so the flow8 lab of tests/integration/flows is never handed to a fault test.
Every test here that uses them carries ``xdist_group("flow8b")`` (tests/conftest.py
checks it, by the ``flow8b_lab`` fixture below).
"""

from __future__ import annotations

import pytest

from bringup.sku import load_skus, nic_counts
from lab.fleet import load_fleet

GROUP = "flow8b"


@pytest.fixture(scope="session")
def flow_fleet_path(tmp_path_factory, flow_lab_tools):
    folder = tmp_path_factory.mktemp("fleets")
    return flow_lab_tools.shifted(flow_lab_tools.fleet, folder / "flow8b.yaml",
                                  {"127.11.": "127.12.", "127.21.": "127.22."})


@pytest.fixture(scope="session")
def flow_fleet(flow_fleet_path):
    return load_fleet(flow_fleet_path, nic_counts(load_skus()))


@pytest.fixture(scope="session")
def flow_netbox(scenario_netbox):
    return scenario_netbox(GROUP)


@pytest.fixture(scope="session")
def flow8b_lab(tmp_path_factory, flow_lab_tools, flow_fleet, flow_fleet_path, flow_netbox, prefect_server,
               lab_paths):
    """The simulators of the copy; yields its settings path."""
    path, stop = flow_lab_tools.start(GROUP, tmp_path_factory, flow_fleet, flow_fleet_path, flow_netbox,
                                      prefect_server, lab_paths)
    yield path
    stop()


@pytest.fixture(scope="session")
def flow_lab(flow8b_lab):
    return flow8b_lab
