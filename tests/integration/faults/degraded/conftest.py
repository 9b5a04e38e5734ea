"""A second copy of the flow lab for the fault scenarios that degrade a service the whole
run leans on (NetBox killed, stalled or slow; every core hogged): flow8.yaml on loopback
addresses of its own (127.15/127.25), its own Kubernetes API and seed ports and its own
NetBox server (tests/ports.py, ``flow8c``).

Why a copy of its own: the fault scenarios of one copy run one after another on one
worker (several stop or reset a service the others use), and on the one copy they were
the suite's longest chain, about 26 minutes on 2 cores (issue #23). On two copies the
two halves run on two workers at once. The fixtures by name (``flow_lab``,
``flow_fleet``, ``flow_netbox``, ``flow_fleet_path``) override those of
tests/integration/faults/conftest.py for the modules here, as that file's override those
of tests/integration/conftest.py; every test here carries ``xdist_group("flow8c")``
(tests/conftest.py checks it, by the ``flow8c_lab`` fixture below).
"""

from __future__ import annotations

import pytest

from bringup.sku import load_skus, nic_counts
from lab.fleet import load_fleet

GROUP = "flow8c"


@pytest.fixture(scope="session")
def flow_fleet_path(tmp_path_factory, flow_lab_tools):
    folder = tmp_path_factory.mktemp("fleets")
    return flow_lab_tools.shifted(flow_lab_tools.fleet, folder / "flow8c.yaml",
                                  {"127.11.": "127.15.", "127.21.": "127.25."})


@pytest.fixture(scope="session")
def flow_fleet(flow_fleet_path):
    return load_fleet(flow_fleet_path, nic_counts(load_skus()))


@pytest.fixture(scope="session")
def flow_netbox(scenario_netbox):
    return scenario_netbox(GROUP)


@pytest.fixture(scope="session")
def flow8c_lab(tmp_path_factory, flow_lab_tools, flow_fleet, flow_fleet_path, flow_netbox, prefect_server,
               lab_paths):
    """The simulators of the copy; yields its settings path."""
    path, stop = flow_lab_tools.start(GROUP, tmp_path_factory, flow_fleet, flow_fleet_path, flow_netbox,
                                      prefect_server, lab_paths)
    yield path
    stop()


@pytest.fixture(scope="session")
def flow_lab(flow8c_lab):
    return flow8c_lab
