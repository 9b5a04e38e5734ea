"""Fixtures of the pool acceptance tests: the lab's Kubernetes API stand-in (a real
process) whose kubelet runs the acceptance job's pods on two installed lab nodes (real
sshd), the site storage folder, and NetBox (a fresh clone per test) with the two nodes
seeded into pool ``p`` and marked active, as admission leaves them. No fleet commission."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import ports
import pytest
from kubeapi_process import KubeApiProcess
from kubernetes import client as k8s
from schema_db import fresh_with_schema

from bringup.kube import KubeAdapter
from bringup.netbox.adapter import NetBox, connect
from bringup.provision.image import load_manifest
from bringup.sku import load_skus, nic_counts
from lab.fleet import FleetProfile, loads_fleet
from lab.nodes.install import preinstall
from lab.nodes.sshd import client_key, stop_sshd
from lab.seed import seed
from lab.workloads.prepare import prepare_storage

REPO = Path(__file__).resolve().parents[3]
NODES = ("gpu-a", "gpu-b")


def fleet_text(pool_yaml: str = "{}") -> str:
    third = ports.third_octet()
    return f"site: t\npools: {{p: {pool_yaml}}}\nnodes:\n" + "".join(
        f"  - {{name: {name}, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.77.{third}.{i}, "
        f"address: 127.78.{third}.{i}, faults: []}}\n" for i, name in enumerate(NODES, 1))


@dataclass
class AcceptLab:
    home: Path
    fleet: FleetProfile
    kube: KubeAdapter
    kubeconfig: Path
    storage: dict[str, Path]

    @staticmethod
    def set_pool(nb: NetBox, acceptance: dict) -> None:
        set_pool(nb, acceptance)


@pytest.fixture(scope="module")
def accept_lab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("accept")
    home = tmp / "home"
    text = fleet_text()
    fleet_file = tmp / "fleet.yaml"
    fleet_file.write_text(text)
    fleet = loads_fleet(text, nic_counts(load_skus()))
    client_key(home)
    manifest = load_manifest("ubuntu-2404-cuda128")
    for n in fleet.nodes:
        preinstall(n, home, manifest)
    api = KubeApiProcess(home, ports.workload_kube_port(), fleet_file)
    api.start()
    kubeconfig = home / "kube" / "kubeconfig"
    kube = KubeAdapter.from_kubeconfig(kubeconfig)
    for n in fleet.nodes:
        k8s.CoreV1Api(kube.api_client).create_node(k8s.V1Node.from_dict({
            "metadata": {"name": n.name, "labels": {"bringup.io/pool": "p", "kubernetes.io/hostname": n.name}},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                       "capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"},
                       "addresses": [{"type": "InternalIP", "address": n.address}]}}))
    try:
        yield AcceptLab(home, fleet, kube, kubeconfig, prepare_storage(tmp / "site-storage"))
    finally:
        kube.api_client.close()
        api.stop()
        for n in fleet.nodes:
            stop_sshd(home, n.name)


@pytest.fixture(scope="module")
def pool_netbox(netbox_server, postgres, netbox_url, netbox_token) -> NetBox:
    """NetBox with the schema and pool p's two nodes, active, once for the module (the
    schema and the seed take most of a minute on a busy machine); each test sets the pool's
    acceptance section and clears the nodes' reasons (:func:`set_pool`)."""
    nb = fresh_with_schema(postgres, ports.netbox_db("test"), lambda: NetBox(connect(netbox_url, netbox_token)))
    seed(nb, loads_fleet(fleet_text(), nic_counts(load_skus())), load_skus())
    for rec in nb.nodes(tag="pool-p"):
        nb.update_node(rec.id, stage="active", status="active")
    return nb


def set_pool(nb: NetBox, acceptance: dict) -> None:
    """Pool p's acceptance section (its ``bringup_pool`` config context), as an operator
    edits it; the nodes' reasons from a test before cleared."""
    cc = nb.api.extras.config_contexts.get(name="pool-p")
    data = dict(cc.data)
    data["bringup_pool"] = {**data["bringup_pool"], "acceptance": acceptance}
    cc.update({"data": data})
    for rec in nb.nodes(tag="pool-p"):
        nb.update_node(rec.id, fields={"bringup_reason": ""})
