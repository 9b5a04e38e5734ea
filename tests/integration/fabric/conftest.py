"""Simulated nodes for the fabric tests: real sshd per node on loopback addresses of their
own, the nodes' tool stand-ins, and the real OpenMPI ``mpirun`` launched on a node."""

from __future__ import annotations

import getpass
import shutil
from dataclasses import dataclass
from pathlib import Path

import ports
import pytest

from bringup.fabric.mpirun import NodeSsh
from bringup.fabric.runner import GroupNode
from bringup.provision.image import load_manifest
from bringup.remote.access import SshAccess, Target
from bringup.remote.ssh import Ssh
from bringup.sku import load_skus, nic_counts
from lab.fleet import FleetProfile, loads_fleet
from lab.nodes.install import preinstall
from lab.nodes.sshd import client_key, known_hosts_path, stop_sshd

#: the fabric lab: two healthy nodes, one with a degraded rail and a flapping port, a bad
#: cable between c1 and c2, a slow node whose third NIC sits on the other socket
NODES = [
    ("ok1", "[]"),
    ("ok2", "[]"),
    ("rail", "[{kind: degraded_rail, iface: cx3, value: 180}, {kind: flapping_port, iface: cx1, value: 30}]"),
    ("c1", "[{kind: bad_cable, other: c2, value: 60}]"),
    ("c2", "[]"),
    ("slow", "[{kind: slow_node, value: 200}, {kind: nic_numa, iface: cx2}]"),
]


@dataclass
class FabricLab:
    home: Path
    fleet: FleetProfile
    access: SshAccess
    fs: Ssh
    node_ssh: NodeSsh

    def group_node(self, name: str) -> GroupNode:
        n = self.fleet.node(name)
        return GroupNode(name, Target(name, n.address, n.ssh_port), n.address, gpus=8)


def make_fabric_lab(tmp: Path, second_octet: int) -> FabricLab:
    if not shutil.which("mpirun"):
        pytest.fail("OpenMPI's mpirun is missing: apt-get install -y openmpi-bin (scripts/bootstrap)")
    third = ports.third_octet()  # one per xdist worker (tests/ports.py)
    lines = ["site: t", "pools: {p: {}}", "nodes:"]
    for i, (name, faults) in enumerate(NODES, 1):
        lines.append(f"  - {{name: {name}, rack: r1, sku: hgx-h100-80gb, pool: p, "
                     f"bmc_address: 127.{second_octet - 1}.{third}.{i}, address: 127.{second_octet}.{third}.{i}, "
                     f"faults: {faults}}}")
    fleet = loads_fleet("\n".join(lines) + "\n", nic_counts(load_skus()))
    home = tmp / "home"
    client_key(home)
    manifest = load_manifest("ubuntu-2404-cuda128")
    for n in fleet.nodes:  # as bringup installs them: a seed with a fresh host key, pinned in known_hosts
        preinstall(n, home, manifest)
    access = SshAccess(getpass.getuser(), home / "secrets" / "id_ed25519", known_hosts_path(home),
                       port=fleet.nodes[0].ssh_port)
    # the nodes share this machine: the key and known_hosts OpenMPI's ssh uses on the
    # launching node are the lab's own files
    node_ssh = NodeSsh(str(access.key_file), str(access.known_hosts), port=fleet.nodes[0].ssh_port)
    return FabricLab(home, fleet, access, Ssh(access), node_ssh)


@pytest.fixture(scope="module")
def fabric_lab(tmp_path_factory):
    lab = make_fabric_lab(tmp_path_factory.mktemp("fabric"), 95)
    yield lab
    for n in lab.fleet.nodes:
        stop_sshd(lab.home, n.name)
