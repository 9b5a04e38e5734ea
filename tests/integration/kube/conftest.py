"""Fixtures: the lab Kubernetes API stand-in as a real process on loopback, and the
bringup adapter connected to it through the kubeconfig the stand-in writes; with
``node_kube``, also two installed lab nodes (real sshd) whose pods its kubelet runs."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import ports
import pytest
from kubeapi_process import KubeApiProcess, free_port
from kubernetes import client as k8s

from bringup.kube import KubeAdapter
from bringup.provision.image import load_manifest
from bringup.sku import load_skus, nic_counts
from lab.fleet import FleetProfile, loads_fleet
from lab.nodes.install import preinstall
from lab.nodes.sshd import client_key, stop_sshd

REPO = Path(__file__).resolve().parents[3]



@pytest.fixture(scope="module")
def kubeapi(tmp_path_factory):
    srv = KubeApiProcess(tmp_path_factory.mktemp("kubehome"), free_port())
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def fresh_kubeapi(tmp_path):
    """A server of its own, for tests that restart or stop it."""
    srv = KubeApiProcess(tmp_path, free_port())
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def kube(kubeapi):
    adapter = KubeAdapter.from_kubeconfig(kubeapi.kubeconfig)
    yield adapter
    adapter.api_client.close()


@dataclass
class NodeKube:
    home: Path
    fleet: FleetProfile
    api: KubeApiProcess
    kube: KubeAdapter

    def ssh_node(self, name: str) -> tuple[str, int]:
        n = self.fleet.node(name)
        return n.address, n.ssh_port

    def kubectl(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["kubectl", *args], capture_output=True, text=True, timeout=60, check=False,
                              env={**os.environ, "KUBECONFIG": str(self.api.kubeconfig)})


@pytest.fixture(scope="module")
def node_kube(tmp_path_factory):
    """The API stand-in started with a fleet of two installed nodes (sshd on loopback
    addresses of their own), sharing the lab home whose SSH key its kubelet uses; both
    nodes registered with 8 allocatable GPUs."""
    tmp = tmp_path_factory.mktemp("kubelet")
    home = tmp / "home"
    third = ports.third_octet()  # one per xdist worker (tests/ports.py)
    text = "site: t\npools: {p: {}}\nnodes:\n" + "".join(
        f"  - {{name: {name}, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.75.{third}.{i}, "
        f"address: 127.76.{third}.{i}, faults: []}}\n" for i, name in enumerate(["gpu-a", "gpu-b"], 1))
    fleet_file = tmp / "fleet.yaml"
    fleet_file.write_text(text)
    fleet = loads_fleet(text, nic_counts(load_skus()))
    client_key(home)
    manifest = load_manifest("ubuntu-2404-cuda128")
    for n in fleet.nodes:
        preinstall(n, home, manifest)
    api = KubeApiProcess(home, free_port(), fleet_file)
    api.start()
    kube = KubeAdapter.from_kubeconfig(api.kubeconfig)
    for n in fleet.nodes:
        k8s.CoreV1Api(kube.api_client).create_node(k8s.V1Node.from_dict({
            "metadata": {"name": n.name},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                       "capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"},
                       "addresses": [{"type": "InternalIP", "address": n.address}]}}))
    yield NodeKube(home, fleet, api, kube)
    kube.api_client.close()
    api.stop()
    for n in fleet.nodes:
        stop_sshd(home, n.name)
