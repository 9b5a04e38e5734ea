"""The whole provisioning path on simulated hardware: BIOS profile and OS install through
the real Redfish client against the BMC simulator, the node booting its real sshd, the
pinned host key, then pin.yml over Ansible."""

from __future__ import annotations

import functools

import pytest
import yaml

from bringup.errors import SSHError
from bringup.provision import apply_bios_profile, install_os, pin_versions
from bringup.redfish import Credentials, connect
from bringup.sku import load_skus
from bringup.ssh import expected_host_key, wait_for_ssh
from lab.nodes.install import node_status

pytestmark = pytest.mark.integration


@pytest.fixture
def sim_lab(lab_factory):
    from lab.bmcsim.server import FleetSimulator
    lab = lab_factory(87, [("fresh", "[]"), ("hung", "[{kind: never_returns}]"),
                           ("stuck", "[{kind: bios_not_applied, attribute: IommuSupport}]")], install=False)
    sim = FleetSimulator(lab.fleet, load_skus(), lab.home, power_delay=0.1).start()
    creds = yaml.safe_load((lab.home / "secrets" / "bmc.yaml").read_text())["default"]
    lab.creds = Credentials(creds["username"], creds["password"])
    lab.ca = str(sim.ca_bundle)
    lab.sim = sim
    yield lab
    sim.stop()


def bmc_of(lab, name):
    n = lab.fleet.node(name)
    return connect(n.bmc_address, lab.creds, port=n.bmc_port, ca_bundle=lab.ca)


def waiter(lab, name, timeout):
    n = lab.fleet.node(name)
    key = expected_host_key(lab.access.known_hosts, n.address, n.ssh_port)
    return functools.partial(wait_for_ssh, n.address, n.ssh_port, key, timeout, node=name, interval=0.25)


def test_install_over_virtual_media_then_pin(sim_lab):
    assert not node_status(sim_lab.home, "fresh")["installed"]
    with bmc_of(sim_lab, "fresh") as bmc:
        res = install_os(bmc, sim_lab.manifest, wait=waiter(sim_lab, "fresh", 30))
        assert res.ejected and res.waited.startswith("SHA256:")
    state = sim_lab.sim.services["fresh"].state
    assert state.installs == [sim_lab.manifest.iso.url] and state.media_image is None
    assert node_status(sim_lab.home, "fresh")["image"] == "ubuntu-2404-cuda128"
    steps = pin_versions({"fresh": sim_lab.host("fresh")}, sim_lab.manifest, sim_lab.access)
    assert steps["fresh"].ok, steps["fresh"].reason


def test_node_that_never_returns_fails_the_install_and_ejects(sim_lab):
    with bmc_of(sim_lab, "hung") as bmc, pytest.raises(SSHError, match="node hung .* never came back"):
        install_os(bmc, sim_lab.manifest, wait=waiter(sim_lab, "hung", 3))
    state = sim_lab.sim.services["hung"].state
    assert state.installs == [sim_lab.manifest.iso.url] and state.media_image is None
    assert node_status(sim_lab.home, "hung")["boot"] == "hung after install"


def test_bios_profile_through_redfish(sim_lab):
    wanted = load_skus()["hgx-h100-80gb"].bios
    with bmc_of(sim_lab, "fresh") as bmc:
        assert apply_bios_profile(bmc, wanted).ok
    with bmc_of(sim_lab, "stuck") as bmc:
        result = apply_bios_profile(bmc, wanted)
    # a setting that did not take is a result naming it, not an exception
    assert not result.ok and result.not_applied["IommuSupport"][0] == "Disabled"
