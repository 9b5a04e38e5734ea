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
from flow_copies import flow_lab_copy

flow_fleet_path, flow_fleet, flow_netbox, flow8c_lab = flow_lab_copy(
    "flow8c", {"127.11.": "127.15.", "127.21.": "127.25."})


@pytest.fixture(scope="session")
def flow_lab(flow8c_lab):
    return flow8c_lab
