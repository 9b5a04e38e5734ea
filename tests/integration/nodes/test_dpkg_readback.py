"""What a simulated OS install writes: versions with faults, a dpkg database dpkg reads."""

from __future__ import annotations

import subprocess

import pytest

from bringup.provision.image import load_manifest
from lab.fleet import loads_fleet
from lab.nodes.install import dpkg_status, installed_versions, write_root

pytestmark = pytest.mark.integration

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


def test_dpkg_database_reads_back_with_real_dpkg_query(tmp_path):
    m = load_manifest("ubuntu-2404-cuda128")
    node = loads_fleet(FLEET).node("drift")
    write_root(tmp_path, m, installed_versions(node, m))
    out = subprocess.run(["dpkg-query", f"--admindir={tmp_path}/var/lib/dpkg", "-W",
                          "-f=${Package} ${Version} ${db:Status-Abbrev}\n"],
                         capture_output=True, text=True, check=True).stdout
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()}
    assert rows["nvidia-driver-570-server"] == ["570.86.15-0ubuntu0.24.04.1", "hi"]
    assert rows["libnccl2"][0] == "2.21.5-1+cuda12.8"
    assert rows["datacenter-gpu-manager-4-core"][0] == "1:4.2.3-1"
    assert "570.86.15" in (tmp_path / "proc/driver/nvidia/version").read_text().splitlines()[0]
    assert (tmp_path / "opt/nccl-tests/VERSION").read_text().strip() == "2.14.1"
    assert set(dpkg_status(m, installed_versions(node, m)).split("\n\n")[0].splitlines()[0:2]) == {
        "Package: cuda-toolkit-12-8", "Status: hold ok installed"}
