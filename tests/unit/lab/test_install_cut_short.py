"""An install a reset cut short leaves nothing behind (lab.nodes.install): the node's
state, sshd and host key are the business of the boot the reset started."""

from __future__ import annotations

from bringup.provision.image import load_manifest
from bringup.sku import load_skus, nic_counts
from lab.fleet import loads_fleet
from lab.nodes.install import install_from_media
from lab.nodes.sshd import NodeDir

FLEET = """
site: t
pools: {p: {}}
nodes:
  - {name: n1, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.0.0.9, address: 127.0.0.8}
"""


def test_an_installer_reset_under_it_writes_no_state_and_starts_no_sshd(tmp_path):
    node = loads_fleet(FLEET, nic_counts(load_skus())).nodes[0]
    url = load_manifest("ubuntu-2404-cuda128").iso.url
    state = install_from_media(node, url, tmp_path, "http://127.0.0.1:9/n1.iso", current=lambda: False)
    assert state["installed"] is False and "reset" in state["boot"]
    nd = NodeDir(tmp_path, node.name)
    assert not nd.state.exists() and not nd.host_key.exists() and not nd.pidfile.exists()
