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
from flow_copies import flow_lab_copy

flow_fleet_path, flow_fleet, flow_netbox, flow8b_lab = flow_lab_copy(
    "flow8b", {"127.11.": "127.12.", "127.21.": "127.22."})


@pytest.fixture(scope="session")
def flow_lab(flow8b_lab):
    return flow8b_lab
