"""The whole provisioning path on simulated hardware: BIOS profile and OS install through
the real Redfish client against the BMC simulator, the installer ISO plus the node's
NoCloud seed (a real ``cidata`` ISO served over HTTP), the node booting its real sshd
with the host key bringup put in the seed, then pin.yml over Ansible."""

from __future__ import annotations

import functools

import pytest
import yaml

from bringup.errors import HostKeyMismatch, SSHError
from bringup.provision import hostkeys
from bringup.provision import install_seed as seed
from bringup.provision import seed_iso as seediso
from bringup.provision.ansible_steps import pin_versions
from bringup.provision.installed import read_installed
from bringup.provision.redfish_steps import apply_bios_profile, install_os
from bringup.redfish import Credentials, connect
from bringup.remote.access import SshAccess, Target
from bringup.remote.ssh import Ssh, wait_for_ssh
from bringup.sku import load_skus
from lab.nodes.install import node_status
from lab.nodes.sshd import NodeDir

pytestmark = pytest.mark.integration


@pytest.fixture
def sim_lab(lab_factory):
    from lab.bmcsim.seedserver import SeedServer, seed_folder
    from lab.bmcsim.server import FleetSimulator
    lab = lab_factory(87, [("fresh", "[]"), ("hung", "[{kind: never_returns}]"),
                           ("stuck", "[{kind: bios_not_applied, attribute: IommuSupport}]")], install=False)
    sim = FleetSimulator(lab.fleet, load_skus(), lab.home, power_delay=0.1).start()
    seeds = SeedServer(("127.0.0.1", 0), seed_folder(lab.home)).start()
    creds = yaml.safe_load((lab.home / "secrets" / "bmc.yaml").read_text())["default"]
    lab.creds = Credentials(creds["username"], creds["password"])
    lab.ca = str(sim.ca_bundle)
    lab.sim = sim
    lab.seeds = seeds
    yield lab
    seeds.stop()
    sim.stop()


def bmc_of(lab, name):
    n = lab.fleet.node(name)
    return connect(n.bmc_address, lab.creds, port=n.bmc_port, ca_bundle=lab.ca)


def make_seed(lab, name, *, drop: tuple[str, ...] = ()) -> tuple[hostkeys.HostKey, str]:
    """What the install step does: a fresh key, the rendered seed as a cidata ISO in the
    served folder, the key pinned. ``drop`` removes a section (a seed the lab must refuse)."""
    n = lab.fleet.node(name)
    key = hostkeys.generate(f"root@{name}")
    client = " ".join(lab.access.key_file.with_suffix(".pub").read_text().split()[:2])
    files = seed.render(lab.manifest, hostname=name, host_key=key, authorized_keys=[client])
    if drop:
        doc = yaml.safe_load(files["user-data"])
        del doc["autoinstall"][drop[0]]
        files["user-data"] = "#cloud-config\n" + yaml.safe_dump(doc)
    seediso.build(files, lab.seeds.folder / f"{name}.iso")
    hostkeys.pin(lab.access.known_hosts, n.address, n.ssh_port, key.public)
    return key, lab.seeds.url.format(node=name)


def target(lab, name) -> Target:
    n = lab.fleet.node(name)
    return Target(name, n.address, n.ssh_port)


def waiter(lab, name):
    """What the install step hands install_os: the seam's wait, against the pinned key."""
    return functools.partial(wait_for_ssh, Ssh(lab.access), target(lab, name), interval=0.25)


def test_a_node_installs_from_its_seed_and_answers_with_the_pinned_key(sim_lab, tmp_path):
    assert not node_status(sim_lab.home, "fresh")["installed"]
    key, url = make_seed(sim_lab, "fresh")
    with bmc_of(sim_lab, "fresh") as bmc:
        res = install_os(bmc, sim_lab.manifest, seed_url=url, ssh_wait=waiter(sim_lab, "fresh"),
                         wait_timeout=30, poll=5)
    assert res.ok and res.ejected and res.waited.startswith("SHA256:")
    state = sim_lab.sim.services["fresh"].state
    assert state.installs == [sim_lab.manifest.iso.url]
    assert state.media_image is None and state.seed_image is None          # both media out again
    # the node's sshd key is the one bringup made, and the node says what it runs
    assert hostkeys.public_of(NodeDir(sim_lab.home, "fresh").host_key.read_text()) == key.pinned
    n = sim_lab.fleet.node("fresh")
    there = read_installed(Ssh(sim_lab.access), target(sim_lab, "fresh"))
    assert there is not None and there.image == "ubuntu-2404-cuda128" and there.versions["driver"] == "570.133.20"
    steps = pin_versions({"fresh": sim_lab.host("fresh")}, sim_lab.manifest, sim_lab.access)
    assert steps["fresh"].ok, steps["fresh"].reason

    # a wrong key pinned is refused at once, by the wait and by the read of what is installed
    other = tmp_path / "known_hosts"
    hostkeys.pin(other, n.address, n.ssh_port, hostkeys.generate("intruder").public)
    wrong = Ssh(SshAccess(sim_lab.access.user, sim_lab.access.key_file, other))
    with pytest.raises(HostKeyMismatch, match="presented host key .* but we expect"):
        wait_for_ssh(wrong, target(sim_lab, "fresh"), 10)
    with pytest.raises(HostKeyMismatch, match="node fresh .*refusing to connect"):
        read_installed(wrong, target(sim_lab, "fresh"))


def test_a_seed_missing_a_section_leaves_the_node_at_the_installer(sim_lab):
    _, url = make_seed(sim_lab, "fresh", drop=("version",))
    with bmc_of(sim_lab, "fresh") as bmc, pytest.raises(SSHError, match="never came back"):
        install_os(bmc, sim_lab.manifest, seed_url=url, ssh_wait=waiter(sim_lab, "fresh"),
                   wait_timeout=3, poll=1)
    st = node_status(sim_lab.home, "fresh")
    assert not st["installed"] and st["sshd_pid"] is None
    assert st["boot"].startswith("at the installer: ")
    assert "autoinstall: 'version' is a required property" in st["boot"]
    assert sim_lab.sim.services["fresh"].state.seed_image is None


def test_without_a_seed_the_installer_waits_for_answers(sim_lab):
    n = sim_lab.fleet.node("fresh")
    # a key pinned as the install step would (it pins before the boot), but no seed carries it
    hostkeys.pin(sim_lab.access.known_hosts, n.address, n.ssh_port, hostkeys.generate("x").public)
    with bmc_of(sim_lab, "fresh") as bmc, pytest.raises(SSHError, match="never came back"):
        install_os(bmc, sim_lab.manifest, ssh_wait=waiter(sim_lab, "fresh"),
                   wait_timeout=2, poll=1)
    assert node_status(sim_lab.home, "fresh")["boot"].startswith("at the installer: no autoinstall seed")


def test_node_that_never_returns_fails_the_install_and_ejects(sim_lab):
    _, url = make_seed(sim_lab, "hung")
    with bmc_of(sim_lab, "hung") as bmc, pytest.raises(SSHError, match="node hung .* never came back"):
        install_os(bmc, sim_lab.manifest, seed_url=url, ssh_wait=waiter(sim_lab, "hung"),
                   wait_timeout=3, poll=1)
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
