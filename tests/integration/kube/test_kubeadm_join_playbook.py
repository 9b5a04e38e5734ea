"""playbooks/kubeadm-join.yml run by real ansible-playbook (local connection) with the
kubeadm stand-in: the node joins, a second run is a no-op, the token never shows."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bringup.kube import KubeAdapter
from lab.kubeapi import install_kubeadm

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[3]
PLAYBOOK_BIN = Path(sys.executable).parent / "ansible-playbook"


def run_play(tmp_path: Path, extra: dict) -> subprocess.CompletedProcess:
    vars_file = tmp_path / "vars.json"
    vars_file.write_text(json.dumps(extra))
    vars_file.chmod(0o600)
    root = tmp_path / "root"
    install_kubeadm(root)  # as the lab's node install does: on the node's PATH
    # the session a simulated node's sshd would give: its root, its PATH, how it was reached
    env = {**os.environ, "BRINGUP_SYSROOT": str(root), "SSH_CONNECTION": "127.0.0.1 50000 127.20.9.9 2222",
           "PATH": f"{root / 'usr/local/bin'}:{os.environ['PATH']}",
           "ANSIBLE_LOCALHOST_WARNING": "False", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False"}
    return subprocess.run([str(PLAYBOOK_BIN), "-i", "node-inventory-name,", "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}",
                           "-e", f"@{vars_file}", str(REPO / "playbooks" / "kubeadm-join.yml")],
                          capture_output=True, text=True, env=env, timeout=120, check=False)


@pytest.mark.skipif(not PLAYBOOK_BIN.exists() and shutil.which("ansible-playbook") is None,
                    reason="ansible-playbook not installed")
def test_playbook_joins_once_and_hides_the_token(kube: KubeAdapter, tmp_path):
    cmd = kube.join_command(dt.timedelta(minutes=10))
    # the short alias names (kube_ca_hash, node_name) as the admission stage passes them
    extra = {"kube_endpoint": cmd.endpoint, "kube_token": cmd.token, "kube_ca_hash": cmd.ca_cert_hash,
             "node_name": "gpu-play-1"}
    r = run_play(tmp_path, extra)
    assert r.returncode == 0, r.stdout + r.stderr
    assert cmd.token not in r.stdout + r.stderr
    assert "This node has joined the cluster" in r.stdout
    assert kube.wait_node_ready("gpu-play-1", timeout=5, poll=0.2).addresses["InternalIP"] == "127.20.9.9"
    assert (tmp_path / "root" / "etc" / "kubernetes" / "kubelet.conf").exists()
    # joined already: kubelet.conf exists, so kubeadm is not run again (it would refuse)
    r = run_play(tmp_path, extra)
    assert r.returncode == 0, r.stdout + r.stderr


def test_playbook_fails_on_a_wrong_pin(kube: KubeAdapter, tmp_path):
    cmd = kube.join_command(dt.timedelta(minutes=10))
    r = run_play(tmp_path, {"kube_endpoint": cmd.endpoint, "kube_token": cmd.token,
                            "kube_ca_cert_hash": "sha256:" + "1" * 64, "kube_node_name": "gpu-play-2",
                            "kubeadm_bin": str(REPO / "lab" / "kubeapi" / "bin" / "kubeadm")})
    assert r.returncode != 0
    assert "are pinned" in r.stdout
    assert cmd.token not in r.stdout + r.stderr
    assert not kube.node_state("gpu-play-2").exists
