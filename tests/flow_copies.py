"""The fixtures of a copy of the flow lab (tests/integration/conftest.py's flow8.yaml) on
loopback addresses of its own, for a fault suite that runs beside the flow tests on
another worker (tests/integration/faults/conftest.py: flow8b;
tests/integration/faults/degraded/conftest.py: flow8c).

:func:`flow_lab_copy` makes them for one copy: ``flow_fleet_path``, ``flow_fleet``,
``flow_netbox`` and ``<group>_lab`` (the simulators; tests/conftest.py's FLEET_FIXTURES
knows each by that name). The conftest that takes them also defines ``flow_lab`` as
``<group>_lab`` itself: the fleet check reads a test's fixture names, so the dependency
is written out, not looked up. Each is a session fixture of its own: pytest caches a
session fixture per definition, so one copy's lab is never handed to another's test.
"""

from __future__ import annotations

import pytest

from bringup.sku import load_skus, nic_counts
from lab.fleet import load_fleet


def flow_lab_copy(group: str, octets: dict[str, str]) -> tuple:
    """(flow_fleet_path, flow_fleet, flow_netbox, <group>_lab) for the copy ``group``
    (its ports in tests/ports.py) with ``octets`` moved (``{"127.11.": "127.12.", ...}``)."""

    @pytest.fixture(scope="session", name="flow_fleet_path")
    def fleet_path(tmp_path_factory, flow_lab_tools):
        folder = tmp_path_factory.mktemp("fleets")
        return flow_lab_tools.shifted(flow_lab_tools.fleet, folder / f"{group}.yaml", octets)

    @pytest.fixture(scope="session", name="flow_fleet")
    def fleet(flow_fleet_path):
        return load_fleet(flow_fleet_path, nic_counts(load_skus()))

    @pytest.fixture(scope="session", name="flow_netbox")
    def netbox(scenario_netbox):
        return scenario_netbox(group)

    @pytest.fixture(scope="session", name=f"{group}_lab")
    def copy_lab(tmp_path_factory, flow_lab_tools, flow_fleet, flow_fleet_path, flow_netbox, prefect_server,
                 lab_paths):
        """The simulators of the copy; yields its settings path."""
        path, stop = flow_lab_tools.start(group, tmp_path_factory, flow_fleet, flow_fleet_path, flow_netbox,
                                          prefect_server, lab_paths)
        yield path
        stop()

    return fleet_path, fleet, netbox, copy_lab
