"""Simulated nodes for the provisioning tests: real sshd per node on loopback addresses
of their own (so a developer's running lab is left alone), stopped after the module."""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from pathlib import Path

import ports
import pytest

from bringup.provision.image import ImageManifest, load_manifest
from bringup.remote.access import SshAccess
from bringup.sku import load_skus, nic_counts
from lab.fleet import FleetProfile, loads_fleet
from lab.nodes.install import preinstall
from lab.nodes.sshd import client_key, known_hosts_path, stop_sshd


def fleet_text(second_octet: int, nodes: list[tuple[str, str]]) -> str:
    """A fleet of ``(name, faults-yaml)`` nodes on 127.<second_octet>.<ports.third_octet()>.<i>."""
    third = ports.third_octet()  # one per xdist worker (tests/ports.py)
    lines = ["site: t", "pools: {p: {}}", "nodes:"]
    for i, (name, faults) in enumerate(nodes, 1):
        lines.append(f"  - {{name: {name}, rack: r1, sku: hgx-h100-80gb, pool: p, "
                     f"bmc_address: 127.{second_octet - 1}.{third}.{i}, address: 127.{second_octet}.{third}.{i}, "
                     f"faults: {faults}}}")
    return "\n".join(lines) + "\n"


@dataclass
class NodeLab:
    home: Path
    fleet: FleetProfile
    manifest: ImageManifest
    access: SshAccess
    fleet_file: Path

    def host(self, name: str) -> dict:
        n = self.fleet.node(name)
        return {"address": n.address, "port": n.ssh_port}


def make_lab(tmp: Path, second_octet: int, nodes: list[tuple[str, str]], install: bool = True) -> NodeLab:
    home = tmp / "home"
    text = fleet_text(second_octet, nodes)
    tmp.mkdir(parents=True, exist_ok=True)
    fleet_file = tmp / "fleet.yaml"
    fleet_file.write_text(text)
    fleet = loads_fleet(text, nic_counts(load_skus()))
    manifest = load_manifest("ubuntu-2404-cuda128")
    client_key(home)
    if install:  # as bringup installs them: a seed with a fresh host key, pinned in known_hosts
        for n in fleet.nodes:
            preinstall(n, home, manifest)
    access = SshAccess(getpass.getuser(), home / "secrets" / "id_ed25519", known_hosts_path(home))
    return NodeLab(home, fleet, manifest, access, fleet_file)


def stop_all(lab: NodeLab) -> None:
    for n in lab.fleet.nodes:
        stop_sshd(lab.home, n.name)


@pytest.fixture(scope="module")
def node_lab(tmp_path_factory):
    """Three installed nodes: healthy, driver drift, never returns after the install."""
    lab = make_lab(tmp_path_factory.mktemp("nodes"), 81, [
        ("ok", "[]"),
        ("drift", '[{kind: driver_drift, value: "570.86.15"}]'),
        ("never", "[{kind: never_returns}]"),
    ])
    yield lab
    stop_all(lab)


@pytest.fixture
def lab_factory(tmp_path):
    """``make(second_octet, nodes, install=True) -> NodeLab``; every lab made is stopped after."""
    made: list[NodeLab] = []

    def make(second_octet: int, nodes: list[tuple[str, str]], install: bool = True) -> NodeLab:
        lab = make_lab(tmp_path / f"lab{len(made)}", second_octet, nodes, install)
        made.append(lab)
        return lab

    yield make
    for lab in made:
        stop_all(lab)
