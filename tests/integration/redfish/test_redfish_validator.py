"""DMTF's Redfish Service Validator, offline, against one simulated BMC: no failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from bringup.sku import load_skus, nic_counts
from lab.bmcsim.check import run_validator
from lab.fleet import loads_fleet

pytestmark = pytest.mark.integration

FLEET = """
site: validator-test
pools: {p: {}}
nodes:
  - {name: v-1, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.61.2.1, address: 127.62.2.1}
"""


def test_simulated_bmc_passes_the_dmtf_validator(tmp_path):
    fleet = loads_fleet(FLEET, nic_counts(load_skus()))
    result = run_validator(fleet, tmp_path)
    assert result["fail"] == 0, f"validator failures; see {result['report']}"
    assert result["pass"] > 500        # the whole tree was walked, not just the service root
    assert Path(result["report"]).exists()
    assert result["node"] == "v-1"
