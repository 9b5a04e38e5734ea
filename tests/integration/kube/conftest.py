"""Fixtures: the lab Kubernetes API stand-in as a real process on loopback, and the
bringup adapter connected to it through the kubeconfig the stand-in writes; with
``node_kube``, also two installed lab nodes (real sshd) whose pods its kubelet runs."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import ports
import pytest
from kubernetes import client as k8s

from bringup.kube import KubeAdapter
from bringup.provision.image import load_manifest
from bringup.sku import load_skus, nic_counts
from lab.fleet import FleetProfile, loads_fleet
from lab.nodes.install import preinstall
from lab.nodes.sshd import client_key, stop_sshd

REPO = Path(__file__).resolve().parents[3]


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class KubeApiProcess:
    def __init__(self, home: Path, port: int, fleet: Path | None = None) -> None:
        self.home, self.port, self.fleet = home, port, fleet
        self.proc: subprocess.Popen | None = None

    @property
    def kubeconfig(self) -> Path:
        return self.home / "kube" / "kubeconfig"

    def start(self) -> None:
        self.log = open(self.home / "kubeapi.log", "ab")  # noqa: SIM115 - closed in stop()
        fleet = ["--fleet", str(self.fleet)] if self.fleet else []
        self.proc = subprocess.Popen([sys.executable, "-m", "lab.kubeapi", "serve", "--home", str(self.home),
                                      "--listen", f"127.0.0.1:{self.port}", *fleet], cwd=REPO, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kubeapi exited: {(self.home / 'kubeapi.log').read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as raw, \
                        ctx.wrap_socket(raw):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("kubeapi did not answer within 20s")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


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
