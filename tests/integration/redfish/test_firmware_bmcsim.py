"""Firmware policy end to end over HTTPS against the BMC simulator: drift found, the image
applied with SimpleUpdate, its Task followed, the staged image activated by a reset, the
inventory read back and the policy met."""

from __future__ import annotations

import pytest

from bringup.firmware import Member, check
from bringup.redfish import connect

pytestmark = pytest.mark.integration


def bmc(bmcsim, name):
    return connect(bmcsim.node(name).bmc_address, bmcsim.creds, port=8443, ca_bundle=bmcsim.ca, timeout=5.0)


def members(b):
    return [Member(id=s.id, name=s.name, version=s.version, uri=s.uri) for s in b.firmware()]


@pytest.mark.parametrize(("name", "component", "member"), [("fw-drift", "GPU VBIOS", "GPU5_VBIOS"),
                                                           ("fw-drift-dell", "BIOS", "BIOS")])
def test_drift_is_found_and_a_simulated_update_fixes_it(bmcsim, name, component, member):
    rules = bmcsim.skus[bmcsim.node(name).sku].firmware
    with bmc(bmcsim, name) as b:
        before = [f for f in check(members(b), rules) if not f.passed]
        [drift] = [f for f in before if f.blocking]
        assert (drift.component, drift.member, drift.status) == (component, member, "drift")
        out = b.update_firmware(drift.image, [drift.uri], timeout=60)
        assert out.task_state == "Completed" and out.staged and out.resets == 1, out
        assert out.after[drift.uri] != drift.found
        after = check(members(b), rules)
        assert not [f for f in after if not f.passed], [f for f in after if not f.passed]
        assert b.system().PowerState == "On"


def test_a_healthy_node_of_every_layout_meets_the_policy(bmcsim):
    for name in ("ok-1", "hgx", "dell", "hpe", "ami"):
        with bmc(bmcsim, name) as b:
            found = check(members(b), bmcsim.skus[bmcsim.node(name).sku].firmware)
            assert found and all(f.passed for f in found), (name, [f for f in found if not f.passed])
