"""The lifecycle's ``install`` step against the BMC simulator and real sshd nodes: the
"already installed" decision comes from the node, the key from the seed bringup made,
``force`` reinstalls. NetBox is a stand-in recording the fields the step writes."""

from __future__ import annotations

import getpass

import pytest
import yaml

from bringup.context import Context
from bringup.errors import ConfigError, HostKeyMismatch
from bringup.netbox.adapter import NodeRecord
from bringup.provision.hostkeys import FIELD, generate
from bringup.provision.install_step import install
from bringup.remote.access import expected_host_key
from bringup.settings import Settings
from bringup.sku import load_skus
from lab.nodes.install import node_status

pytestmark = pytest.mark.integration


class FakeNetBox:
    def __init__(self) -> None:
        self.writes: list[tuple[int, dict]] = []

    def update_node(self, node_id: int, *, fields=None, **kw) -> None:
        self.writes.append((node_id, dict(fields or {})))


@pytest.fixture
def step_lab(lab_factory):
    from lab.bmcsim.seedserver import SeedServer, seed_folder
    from lab.bmcsim.server import FleetSimulator
    lab = lab_factory(89, [("s1", "[]")], install=False)
    sim = FleetSimulator(lab.fleet, load_skus(), lab.home, power_delay=0.1).start()
    seeds = SeedServer(("127.0.0.1", 0), seed_folder(lab.home)).start()
    n = lab.fleet.node("s1")
    settings = Settings(netbox_url="http://netbox.invalid", netbox_token_file=lab.home / "none",
                        bmc_credentials_file=lab.home / "secrets" / "bmc.yaml", bmc_ca_bundle=sim.ca_bundle,
                        bmc_port=n.bmc_port, ssh_user=getpass.getuser(), ssh_port=n.ssh_port,
                        ssh_key_file=lab.access.key_file, ssh_known_hosts=lab.access.known_hosts,
                        seed_dir=seeds.folder, seed_url=seeds.url, install_wait_s=30)
    lab.nb = FakeNetBox()
    lab.ctx = Context(settings, netbox=lab.nb)
    lab.sim = sim
    yield lab
    seeds.stop()
    sim.stop()


def record(lab, **fields) -> NodeRecord:
    n = lab.fleet.node("s1")
    return NodeRecord(id=7, name="s1", site="t", rack="r1", status="planned", stage="discovered",
                      sku=load_skus()[n.sku], pool={}, macs={}, bmc_address=n.bmc_address, address=n.address,
                      serial="", custom_fields=dict(fields), url="", tags=[])


def test_install_then_skip_then_forced_reinstall(step_lab):
    lab = step_lab
    n = lab.fleet.node("s1")
    first = install(lab.ctx, record(lab), {})
    assert first.ok and not first.skipped, first.reasons
    assert "installed from its seed; SSH answers with the pinned host key" in first.summary
    key1 = lab.nb.writes[-1][1][FIELD]
    assert lab.nb.writes[-1][0] == 7 and key1.startswith("ssh-ed25519 ")
    assert expected_host_key(lab.access.known_hosts, n.address, n.ssh_port) == key1
    assert not list(lab.ctx.settings.seed_dir.glob("*.iso"))  # the private key is gone with the seed
    doc = first.evidence[0].document
    text = yaml.safe_dump(doc)
    assert "PRIVATE KEY" not in text and "<redacted" in doc["seed"]["user-data"]
    assert doc["host_key"] == key1 and doc["before"] is None

    # the same image on the node, not forced: the node says so, nothing is reinstalled
    again = install(lab.ctx, record(lab, **{FIELD: key1}), {})
    assert again.ok and again.skipped
    assert again.summary == "ubuntu-2404-cuda128 already installed (the node says so); not reinstalled"
    assert lab.sim.services["s1"].state.installs == [lab.manifest.iso.url]

    # forced: reinstalled, with a new key; the result says it already ran the image
    forced = install(lab.ctx, record(lab, **{FIELD: key1}), {"force": True})
    assert forced.ok and not forced.skipped
    assert "reinstalled (forced; it already ran ubuntu-2404-cuda128)" in forced.summary
    key2 = lab.nb.writes[-1][1][FIELD]
    assert key2 != key1 and expected_host_key(lab.access.known_hosts, n.address, n.ssh_port) == key2
    assert len(lab.sim.services["s1"].state.installs) == 2
    assert node_status(lab.home, "s1")["image"] == "ubuntu-2404-cuda128"


def test_a_node_answering_with_another_key_is_refused(step_lab):
    lab = step_lab
    first = install(lab.ctx, record(lab), {})
    assert first.ok
    wrong = generate("elsewhere").pinned
    with pytest.raises(HostKeyMismatch, match=r"node s1 \(.*\) presented host key .* refusing to connect"):
        install(lab.ctx, record(lab, **{FIELD: wrong}), {})
    assert len(lab.sim.services["s1"].state.installs) == 1  # nothing installed over it


def test_without_a_seed_location_nothing_is_installed(step_lab):
    lab = step_lab
    ctx = Context(lab.ctx.settings.model_copy(update={"seed_url": ""}), netbox=lab.nb)
    with pytest.raises(ConfigError, match="no seed_dir / seed_url"):
        install(ctx, record(lab), {})
    assert lab.sim.services["s1"].state.installs == [] and lab.nb.writes == []


def test_a_node_refusing_our_key_is_held_not_reinstalled(step_lab, tmp_path):
    import subprocess

    from bringup.provision.installed import NodeRefusedOurKey
    lab = step_lab
    first = install(lab.ctx, record(lab), {})
    key = lab.nb.writes[-1][1][FIELD]
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    ctx = Context(lab.ctx.settings.model_copy(update={"ssh_key_file": other}), netbox=lab.nb)
    with pytest.raises(NodeRefusedOurKey, match="refused our SSH key") as exc:
        install(ctx, record(lab, **{FIELD: key}), {})
    assert first.ok and exc.value.controller_fault           # the run holds the node: our side to fix
    assert len(lab.sim.services["s1"].state.installs) == 1
