"""What a simulated OS install writes: versions with faults, a dpkg database dpkg reads."""

from __future__ import annotations

from bringup.provision.image import load_manifest
from lab.fleet import loads_fleet
from lab.nodes.install import _apt_version, installed_versions
from lab.nodes.sshd import render_config

FLEET = """
site: t
pools: {p: {}}
nodes:
  - {name: ok, rack: r, sku: hgx-h100-80gb, pool: p, bmc_address: 127.0.0.1, address: 127.0.0.2}
  - name: drift
    rack: r
    sku: hgx-h100-80gb
    pool: p
    bmc_address: 127.0.0.3
    address: 127.0.0.4
    faults: [{kind: driver_drift, value: "570.86.15"}, {kind: nccl_drift, value: "2.21.5"}]
"""


def test_installed_versions_follow_manifest_or_fault():
    m = load_manifest("ubuntu-2404-cuda128")
    fleet = loads_fleet(FLEET)
    ok = installed_versions(fleet.node("ok"), m)
    assert ok["driver"] == "570.133.20" and ok["nccl"] == "2.26.2-1+cuda12.8"
    drift = installed_versions(fleet.node("drift"), m)
    assert drift["driver"] == "570.86.15" and drift["nccl"] == "2.21.5-1+cuda12.8"


def test_apt_version_keeps_packaging_and_epoch():
    assert _apt_version("570.133.20-0ubuntu0.24.04.1", "570.133.20", "570.86.15") == "570.86.15-0ubuntu0.24.04.1"
    assert _apt_version("1:4.2.3-1", "4.2.3-1", "4.1.1-1") == "1:4.1.1-1"
    assert _apt_version("12.8.1-1", "12.8", "12.8") == "12.8.1-1"




def test_sshd_config_is_key_only_and_sets_the_node_env(tmp_path):
    node = loads_fleet(FLEET).node("ok")
    cfg = render_config(tmp_path, node, {"BRINGUP_SYSROOT": "/x/root", "PATH": "/x/bin:/usr/bin"})
    assert "ListenAddress 127.0.0.2:2222" in cfg
    assert "PasswordAuthentication no" in cfg and "KbdInteractiveAuthentication no" in cfg
    assert f"AuthorizedKeysFile {tmp_path / 'secrets' / 'id_ed25519.pub'}" in cfg
    assert 'SetEnv BRINGUP_SYSROOT="/x/root" PATH="/x/bin:/usr/bin"' in cfg
