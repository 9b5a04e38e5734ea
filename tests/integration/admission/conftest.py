"""Fixtures of the sharing-mode tests: three installed lab nodes (real sshd, the NVML
stand-in with MIG), the lab's Kubernetes API stand-in whose kubelet runs the smoke pods
on them, and NetBox (a clone of the pristine database) with the nodes seeded into a MIG
pool and a time-sliced pool, their burn-in passed and recorded, at stage validating: what
the fabric test leaves. No commission: the claim is about the validating handler
(``share``, ``join``, ``gate``), so the nodes start where it starts."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import ports
import pytest
from kubeapi_process import KubeApiProcess
from schema_db import fresh_with_schema

from bringup.context import Context
from bringup.kube import KubeAdapter
from bringup.netbox.adapter import NetBox, connect
from bringup.provision.image import load_manifest
from bringup.settings import Settings
from bringup.sku import load_skus, nic_counts
from lab.fleet import FleetProfile, loads_fleet
from lab.nodes.install import preinstall
from lab.nodes.sshd import client_key, known_hosts_path, stop_sshd
from lab.seed import seed

#: node -> (SKU, pool, faults): a MIG node that takes its geometry, one whose MIG mode
#: stays pending (a reset it cannot have now), a time-sliced node whose device plugin
#: finds 7 of its 8 GPUs healthy
NODES = {
    "sm-mig": ("hgx-h200-141gb", "mig-h200", "[]"),
    "sm-pending": ("hgx-h200-141gb", "mig-h200", "[{kind: mig_pending}]"),
    "sm-short": ("hgx-h100-80gb", "ts-h100", "[{kind: device_plugin_short, value: 7}]"),
}


def fleet_text() -> str:
    third = ports.third_octet()
    return ("site: t\npools:\n"
            "  mig-h200: {workload: inference, sharing: mig, mig: {geometry: all-balanced, strategy: mixed}}\n"
            "  ts-h100: {workload: inference, sharing: time-slicing, time_slicing: {replicas: 2}}\n"
            "nodes:\n" + "".join(
                f"  - {{name: {name}, rack: r1, sku: {sku}, pool: {pool}, bmc_address: 127.79.{third}.{i}, "
                f"address: 127.80.{third}.{i}, faults: {faults}}}\n"
                for i, (name, (sku, pool, faults)) in enumerate(NODES.items(), 1)))


@dataclass
class ShareLab:
    home: Path
    fleet: FleetProfile
    kube: KubeAdapter
    ctx: Context
    netbox: NetBox


@pytest.fixture(scope="module")
def share_lab(tmp_path_factory, netbox_server, postgres, netbox_url, netbox_token):
    tmp = tmp_path_factory.mktemp("share")
    home = tmp / "home"
    text = fleet_text()
    fleet_file = tmp / "fleet.yaml"
    fleet_file.write_text(text)
    fleet = loads_fleet(text, nic_counts(load_skus()))
    key = client_key(home)
    manifest = load_manifest("ubuntu-2404-cuda128")
    for n in fleet.nodes:
        preinstall(n, home, manifest)
    api = KubeApiProcess(home, ports.sharing_kube_port(), fleet_file)
    api.start()
    kube = KubeAdapter.from_kubeconfig(api.kubeconfig)
    try:
        nb = fresh_with_schema(postgres, ports.netbox_db("test"), lambda: NetBox(connect(netbox_url, netbox_token)))
        seed(nb, fleet, load_skus())
        today = dt.date.today().isoformat()
        for rec in nb.nodes(names=list(NODES)):
            nb.update_node(rec.id, stage="validating", fields={"burnin_status": "pass", "burnin_last": today})
        token_file = tmp / "netbox-token"
        token_file.write_text(netbox_token)
        token_file.chmod(0o600)
        settings = Settings(site="t", netbox_url=netbox_url, netbox_token_file=token_file, ssh_port=2222,
                            ssh_key_file=key, ssh_known_hosts=known_hosts_path(home),
                            kubeconfig=api.kubeconfig, spool_dir=tmp / "spool")
        yield ShareLab(home, fleet, kube, Context(settings, netbox=nb), nb)
    finally:
        kube.api_client.close()
        api.stop()
        for n in fleet.nodes:
            stop_sshd(home, n.name)
